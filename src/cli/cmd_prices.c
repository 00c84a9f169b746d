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

static void help(FILE *f) {
    fputs("usage: roofline prices [--instance TYPE]... [--sagemaker-instance ml.TYPE]...\n"
          "                       [--bedrock-model ID[=NAME]]... [--region R] [--api-region R]\n"
          "                       [-o FILE] [--offline]\n"
          "\n"
          "Fetches on-demand prices from the AWS Price List Query API (GetProducts, every page)\n"
          "and writes them into the prices file the cost analysis reads (default\n"
          "data/prices.json), each with its source and date: EC2 instance types (Linux, shared\n"
          "tenancy, $/hour), SageMaker hosting instance types ($/hour) and Bedrock models ($ per\n"
          "million input and output tokens, where the Price List carries them; NAME is the\n"
          "Price List's model name, e.g. \"Nova Micro\", known for the Nova models). Other\n"
          "entries of the file are kept. Credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY\n"
          "(+AWS_SESSION_TOKEN) or the profile (AWS_PROFILE, ~/.aws/credentials); the endpoint:\n"
          "AWS_ENDPOINT_URL_PRICING, AWS_ENDPOINT_URL, else api.pricing.API-REGION.amazonaws.com.\n"
          "\n"
          "  --region R       whose prices (default AWS_REGION, AWS_DEFAULT_REGION)\n"
          "  --api-region R   the Price List API's region (us-east-1; also eu-central-1,\n"
          "                   ap-south-1)\n"
          "  -o, --prices F   the prices file to update (default data/prices.json)\n"
          "  --offline        fetch nothing: print the named prices from the file, and fail\n"
          "                   naming each one it lacks (with no names: every price in it)\n"
          "\n"
          "Example: roofline prices --instance g6.xlarge --sagemaker-instance ml.g6.xlarge \\\n"
          "           --bedrock-model amazon.nova-micro-v1:0 --region us-east-1\n"
          "Exit status: 0 ok; 1 a price could not be fetched (the others are written) or, with\n"
          "--offline, is not in the file; 2 bad input.\n",
          f);
}

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

int cli_prices(int argc, char **argv) {
    rf_price_query qs[MAX_QUERIES];
    char names[MAX_QUERIES][128];
    int n = 0;
    bool off = false;
    const char *region_arg = NULL, *api_region = "us-east-1", *out_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return RF_EXIT_OK;
        }
        if (!strcmp(a, "--offline")) {
            off = true;
            continue;
        }
        if (!v) {
            cli_errorf("prices", "unknown option or missing value '%s' (roofline prices --help)",
                       a);
            return RF_EXIT_BAD_INPUT;
        }
        i++;
        if (!strcmp(a, "--region"))
            region_arg = v;
        else if (!strcmp(a, "--api-region"))
            api_region = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--prices"))
            out_path = v;
        else if (!strcmp(a, "--instance") || !strcmp(a, "--sagemaker-instance") ||
                 !strcmp(a, "--bedrock-model")) {
            if (n == MAX_QUERIES) {
                cli_errorf("prices", "more than %d prices asked for", MAX_QUERIES);
                return RF_EXIT_BAD_INPUT;
            }
            rf_price_query *q = &qs[n];
            memset(q, 0, sizeof *q);
            q->kind = a[2] == 'i'   ? RF_PRICE_EC2
                      : a[2] == 's' ? RF_PRICE_SAGEMAKER
                                    : RF_PRICE_BEDROCK;
            if (!*v || strlen(v) >= sizeof names[n]) {
                cli_errorf("prices", "%s: expected a name of at most %zu bytes", a,
                           sizeof names[n] - 1);
                return RF_EXIT_BAD_INPUT;
            }
            snprintf(names[n], sizeof names[n], "%s", v);
            char *eq = q->kind == RF_PRICE_BEDROCK ? strchr(names[n], '=') : NULL;
            if (eq) {
                *eq = 0;
                q->model_name = eq + 1;
            }
            q->name = names[n];
            if (q->kind == RF_PRICE_SAGEMAKER && strncmp(q->name, "ml.", 3)) {
                cli_errorf("prices",
                           "--sagemaker-instance '%s': SageMaker instance types start with "
                           "'ml.' (e.g. ml.g6.xlarge)",
                           q->name);
                return RF_EXIT_BAD_INPUT;
            }
            n++;
        } else {
            cli_errorf("prices", "unknown option '%s' (roofline prices --help)", a);
            return RF_EXIT_BAD_INPUT;
        }
    }
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
