/* cmd_prices.c: `roofline prices`: on-demand prices from the AWS Price List API into the prices
 * file the cost analysis reads (aws/prices.h, report/catalog.h), or, offline, from it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aws/cred.h"
#include "cli.h"
#include "aws/prices.h"
#include "report/catalog.h"

#define MAX_QUERIES 64

/* The prices asked for, in the order given. */
typedef struct price_list {
    rf_price_query qs[MAX_QUERIES];
    char names[MAX_QUERIES][128];
    int n;
} price_list;

static const char *kind_word(rf_price_kind k) {
    return k == RF_PRICE_EC2         ? "EC2 instance"
           : k == RF_PRICE_SAGEMAKER ? "SageMaker instance"
                                     : "Bedrock model";
}

static void default_prices_path(char *out, size_t cap) {
    const char *dir = getenv("ROOFLINE_DATA");
    snprintf(out, cap, "%s/prices.json", dir && *dir ? dir : ROOFLINE_DATA_DIR);
}

static void print_entry(const char *key, const json_t *e, bool per_token) {
    const char *src = json_string_value(json_object_get(e, "source"));
    const char *date = json_string_value(json_object_get(e, "date"));
    if (per_token)
        printf("%-28s %10.6g $/M input %10.6g $/M output  (%s, %s)\n", key,
               json_number_value(json_object_get(e, "usd_per_m_input")),
               json_number_value(json_object_get(e, "usd_per_m_output")), src ? src : "no source",
               date ? date : "no date");
    else
        printf("%-28s %10.6g $/hour  (%s, %s)\n", key,
               json_number_value(json_object_get(e, "usd_per_hour")), src ? src : "no source",
               date ? date : "no date");
}

static int offline(const char *path, const rf_price_query *qs, int n) {
    json_t *prices = NULL;
    rf_error err = {0};
    if (rf_prices_load(path, false, &prices, &err)) {
        cli_errorf("prices", "%s", err.msg);
        return RF_EXIT_BAD_INPUT;
    }
    const json_t *inst = json_object_get(prices, "instances");
    const json_t *tok = json_object_get(prices, "per_token");
    if (!n) {
        const char *k;
        const json_t *e;
        json_object_foreach((json_t *)inst, k, e) print_entry(k, e, false);
        json_object_foreach((json_t *)tok, k, e) print_entry(k, e, true);
        json_decref(prices);
        return RF_EXIT_OK;
    }
    char missing[1024] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        bool pt = qs[i].kind == RF_PRICE_BEDROCK;
        const json_t *e = json_object_get(pt ? tok : inst, qs[i].name);
        if (json_is_object(e) &&
            json_number_value(json_object_get(e, pt ? "usd_per_m_output" : "usd_per_hour")) > 0) {
            print_entry(qs[i].name, e, pt);
            continue;
        }
        int w = snprintf(missing + used, sizeof missing - used, "%s%s %s", used ? ", " : "",
                         kind_word(qs[i].kind), qs[i].name);
        if (w > 0 && (size_t)w < sizeof missing - used) used += (size_t)w;
    }
    json_decref(prices);
    if (used) {
        cli_errorf("prices",
                   "%s has no price for %s (run roofline prices without --offline to fetch "
                   "them, or add them to the file by hand with their source and date)",
                   path, missing);
        return RF_EXIT_FAIL;
    }
    return RF_EXIT_OK;
}

/* The prices of l: fetched and written, or read from the file (off). */
static int prices(price_list *l, bool off, const char *region_arg, const char *api_region,
                  const char *out_path) {
    rf_price_query *qs = l->qs;
    int n = l->n;
    char path[4096];
    if (out_path)
        snprintf(path, sizeof path, "%s", out_path);
    else
        default_prices_path(path, sizeof path);
    if (off) return offline(path, qs, n);
    if (!n) {
        cli_errorf("prices", "name at least one --instance, --sagemaker-instance or "
                             "--bedrock-model (or --offline to list the file)");
        return RF_EXIT_BAD_INPUT;
    }
    rf_error err = {0};
    char region[RF_AWS_REGION_MAX], apir[RF_AWS_REGION_MAX];
    if (rf_aws_region(region_arg, region, &err) || rf_aws_region(api_region, apir, &err)) {
        cli_errorf("prices", "%s", err.msg);
        return RF_EXIT_BAD_INPUT;
    }
    json_t *prices = NULL;
    if (rf_prices_load(path, true, &prices, &err)) {
        cli_errorf("prices", "%s", err.msg);
        return RF_EXIT_BAD_INPUT;
    }
    rf_aws_creds creds;
    if (rf_aws_creds_load(&creds, &err)) {
        cli_errorf("prices", "%s", err.msg);
        json_decref(prices);
        return RF_EXIT_BAD_INPUT;
    }
    char date[16];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(date, sizeof date, "%Y-%m-%d", &tmv);
    int failed = 0, written = 0;
    for (int i = 0; i < n; i++) {
        rf_price_query *q = &qs[i];
        q->region = region;
        rf_price_found f;
        rf_status st = rf_aws_prices_fetch(q, &creds, apir, &f, &err);
        if (!st) {
            char src[400];
            snprintf(src, sizeof src,
                     "aws-pricing-api GetProducts %s (%s, regionCode %s, OnDemand effective %s)",
                     apir,
                     q->kind == RF_PRICE_EC2         ? "AmazonEC2"
                     : q->kind == RF_PRICE_SAGEMAKER ? "AmazonSageMaker"
                                                     : "AmazonBedrock",
                     region, f.effective[0] ? f.effective : "unknown");
            st = q->kind == RF_PRICE_BEDROCK
                     ? rf_prices_set_per_token(
                           prices, q->name, f.usd_per_m_input, f.usd_per_m_output,
                           q->model_name ? q->model_name : rf_aws_prices_model_name(q->name), src,
                           date, region, &err)
                     : rf_prices_set_instance(prices, q->name, f.usd_per_hour, src, date, region,
                                              &err);
        }
        if (st) {
            cli_errorf("prices", "%s", err.msg);
            failed++;
            continue;
        }
        written++;
        const json_t *sec =
            json_object_get(prices, q->kind == RF_PRICE_BEDROCK ? "per_token" : "instances");
        print_entry(q->name, json_object_get(sec, q->name), q->kind == RF_PRICE_BEDROCK);
    }
    rf_aws_creds_free(&creds);
    if (written && rf_prices_save(prices, path, &err)) {
        cli_errorf("prices", "%s", err.msg);
        json_decref(prices);
        return RF_EXIT_FAIL;
    }
    json_decref(prices);
    if (written) fprintf(stderr, "roofline prices: %d price(s) written to %s\n", written, path);
    return failed ? RF_EXIT_FAIL : RF_EXIT_OK;
}

/* --instance, --sagemaker-instance, --bedrock-model ID[=NAME]: one more query */
static rf_status add_query(void *dest, const char *opt, const char *v, rf_error *err) {
    price_list *l = dest;
    if (l->n == MAX_QUERIES)
        return rf_error_set(err, RF_ERR_ARG, "more than %d prices asked for", MAX_QUERIES);
    int n = l->n;
    rf_price_query *q = &l->qs[n];
    memset(q, 0, sizeof *q);
    q->kind = opt[2] == 'i' ? RF_PRICE_EC2 : opt[2] == 's' ? RF_PRICE_SAGEMAKER : RF_PRICE_BEDROCK;
    if (!*v || strlen(v) >= sizeof l->names[n])
        return rf_error_set(err, RF_ERR_ARG, "%s: expected a name of at most %zu bytes", opt,
                            sizeof l->names[n] - 1);
    snprintf(l->names[n], sizeof l->names[n], "%s", v);
    char *eq = q->kind == RF_PRICE_BEDROCK ? strchr(l->names[n], '=') : NULL;
    if (eq) {
        *eq = 0;
        q->model_name = eq + 1;
    }
    q->name = l->names[n];
    if (q->kind == RF_PRICE_SAGEMAKER && strncmp(q->name, "ml.", 3))
        return rf_error_set(err, RF_ERR_ARG,
                            "%s '%s': SageMaker instance types start with 'ml.' (e.g. "
                            "ml.g6.xlarge)",
                            opt, q->name);
    l->n++;
    return RF_OK;
}

int cli_prices(int argc, char **argv) {
    price_list *l = calloc(1, sizeof *l);
    if (!l) return RF_EXIT_FAIL;
    bool off = false;
    const char *region_arg = NULL, *api_region = "us-east-1", *out_path = NULL;
    const rf_opt opts[] = {
        {"--instance", NULL, RF_OPT_LIST, .dest = l, .fn = add_query, .metavar = "TYPE",
         .help = "an EC2 instance type (Linux, shared tenancy, $/hour)"},
        {"--sagemaker-instance", NULL, RF_OPT_LIST, .dest = l, .fn = add_query,
         .metavar = "ml.TYPE", .help = "a SageMaker hosting instance type ($/hour)"},
        {"--bedrock-model", NULL, RF_OPT_LIST, .dest = l, .fn = add_query, .metavar = "ID[=NAME]",
         .help = "a Bedrock model ($ per million input and output tokens); NAME: the Price "
                 "List's model name"},
        {"--region", NULL, RF_OPT_STRING, RF_OPT_DEST(region_arg), .metavar = "R",
         .help = "whose prices (default AWS_REGION, AWS_DEFAULT_REGION)"},
        {"--api-region", NULL, RF_OPT_STRING, RF_OPT_DEST(api_region), .metavar = "R",
         .help = "the Price List API's region (us-east-1; also eu-central-1, ap-south-1)"},
        {"--prices", "-o", RF_OPT_STRING, RF_OPT_DEST(out_path), .metavar = "FILE",
         .help = "the prices file to update (default data/prices.json)"},
        {"--offline", NULL, RF_OPT_TRUE, RF_OPT_DEST(off),
         .help = "fetch nothing: print the named prices from the file, and fail naming each one "
                 "it lacks (with no names: every price in it)"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline prices",
        .about =
            "Fetches on-demand prices from the AWS Price List Query API (GetProducts, every page)\n"
            "and writes them into the prices file the cost analysis reads (default\n"
            "data/prices.json), each with its source and date: EC2 instance types (Linux, shared\n"
            "tenancy, $/hour), SageMaker hosting instance types ($/hour) and Bedrock models ($ "
            "per\n"
            "million input and output tokens, where the Price List carries them; NAME is the\n"
            "Price List's model name, e.g. \"Nova Micro\", known for the Nova models). Other\n"
            "entries of the file are kept. Credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY\n"
            "(+AWS_SESSION_TOKEN) or the profile (AWS_PROFILE, ~/.aws/credentials); the endpoint:\n"
            "AWS_ENDPOINT_URL_PRICING, AWS_ENDPOINT_URL, else api.pricing.API-REGION.amazonaws.com."
            "\n",
        .epilog =
            "Example: roofline prices --instance g6.xlarge --sagemaker-instance ml.g6.xlarge \\\n"
            "           --bedrock-model amazon.nova-micro-v1:0 --region us-east-1\n"
            "Exit status: 0 ok; 1 a price could not be fetched (the others are written) or, "
            "with\n--offline, is not in the file; 2 bad input.\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
    };
    int rc = cli_opts("prices", &spec, argc, argv);
    if (rc < 0) rc = prices(l, off, region_arg, api_region, out_path);
    free(l);
    return rc;
}
