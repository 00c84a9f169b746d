/* prices.c: the Price List Query API's GetProducts (see prices.h). */
#include "aws/prices.h"

#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aws/endpoint.h"
#include "aws/sign.h"
#include "util/buf.h"
#include "util/json_dump.h"

#define PAGE_MAX    ((size_t)32 << 20) /* one GetProducts response's bytes */
#define MAX_PAGES   200
#define MAX_RESULTS 100

static const struct {
    const char *id, *name;
} k_models[] = {
    {"amazon.nova-micro-v1:0", "Nova Micro"},
    {"amazon.nova-lite-v1:0", "Nova Lite"},
    {"amazon.nova-pro-v1:0", "Nova Pro"},
};

const char *rf_aws_prices_model_name(const char *id) {
    if (!id) return NULL;
    /* an inference profile ("us.", "eu.", "apac.", "global.") names the same model */
    static const char *const geo[] = {"us.", "eu.", "apac.", "global."};
    for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++)
        if (!strncmp(id, geo[g], strlen(geo[g]))) {
            id += strlen(geo[g]);
            break;
        }
    for (size_t i = 0; i < sizeof k_models / sizeof k_models[0]; i++)
        if (!strcmp(id, k_models[i].id)) return k_models[i].name;
    return NULL;
}

static const char *service_code(rf_price_kind k) {
    return k == RF_PRICE_EC2         ? "AmazonEC2"
           : k == RF_PRICE_SAGEMAKER ? "AmazonSageMaker"
                                     : "AmazonBedrock";
}

static int add_filter(json_t *fs, const char *field, const char *value) {
    json_t *f = json_pack("{s:s, s:s, s:s}", "Type", "TERM_MATCH", "Field", field, "Value", value);
    return f ? json_array_append_new(fs, f) : -1;
}

json_t *rf_aws_prices_request(const rf_price_query *q, const char *next_token, rf_error *err) {
    const char *model = NULL;
    if (q->kind == RF_PRICE_BEDROCK) {
        model = q->model_name ? q->model_name : rf_aws_prices_model_name(q->name);
        if (!model) {
            rf_error_set(err, RF_ERR_ARG,
                         "Bedrock model '%s': its Price List model name is not known; give it "
                         "as --bedrock-model '%s=NAME' (e.g. \"Nova Micro\")",
                         q->name, q->name);
            return NULL;
        }
    }
    json_t *body = json_object(), *fs = json_array();
    int bad = !body || !fs || json_object_set_new(body, "Filters", fs);
    if (!bad) {
        if (q->kind == RF_PRICE_EC2) {
            bad |= add_filter(fs, "instanceType", q->name);
            bad |= add_filter(fs, "regionCode", q->region);
            bad |= add_filter(fs, "operatingSystem", "Linux");
            bad |= add_filter(fs, "tenancy", "Shared");
            bad |= add_filter(fs, "preInstalledSw", "NA");
            bad |= add_filter(fs, "capacitystatus", "Used");
        } else if (q->kind == RF_PRICE_SAGEMAKER) {
            bad |= add_filter(fs, "instanceName", q->name);
            bad |= add_filter(fs, "regionCode", q->region);
            bad |= add_filter(fs, "component", "Hosting");
        } else {
            bad |= add_filter(fs, "regionCode", q->region);
            bad |= add_filter(fs, "model", model);
            bad |= add_filter(fs, "feature", "On-demand Inference");
        }
        bad |= json_object_set_new(body, "ServiceCode", json_string(service_code(q->kind)));
        bad |= json_object_set_new(body, "FormatVersion", json_string("aws_v1"));
        bad |= json_object_set_new(body, "MaxResults", json_integer(MAX_RESULTS));
        if (next_token && *next_token)
            bad |= json_object_set_new(body, "NextToken", json_string(next_token));
    } else if (fs && !body) {
        json_decref(fs);
    }
    if (bad) {
        json_decref(body);
        rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return body;
}

static const char *what(const rf_price_query *q) {
    return q->kind == RF_PRICE_EC2         ? "EC2 instance"
           : q->kind == RF_PRICE_SAGEMAKER ? "SageMaker instance"
                                           : "Bedrock model";
}

/* Sets *slot to v, or fails when it already holds a different price. */
static rf_status set_price(const rf_price_query *q, const char *which, double *slot, double v,
                           rf_error *err) {
    if (*slot > 0 && fabs(*slot - v) > 1e-12 * v)
        return rf_error_set(err, RF_ERR_FORMAT,
                            "%s %s in %s: two products with different on-demand %s prices (%.10g "
                            "and %.10g $): the filters did not pin one product",
                            what(q), q->name, q->region, which, *slot, v);
    *slot = v;
    return RF_OK;
}

/* The OnDemand USD price of one product, with its unit. */
static rf_status product_price(const rf_price_query *q, const json_t *prod, rf_price_found *acc,
                               rf_error *err) {
    const json_t *od = json_object_get(json_object_get(prod, "terms"), "OnDemand");
    if (!od) return RF_OK; /* only reserved terms: not an on-demand price */
    if (!json_is_object(od))
        return rf_error_set(err, RF_ERR_FORMAT, "%s %s: terms.OnDemand is not an object", what(q),
                            q->name);
    const char *tk;
    const json_t *term;
    json_object_foreach((json_t *)od, tk, term) {
        const char *dk;
        const json_t *dim;
        const char *eff = json_string_value(json_object_get(term, "effectiveDate"));
        json_object_foreach(json_object_get(term, "priceDimensions"), dk, dim) {
            const char *usd =
                json_string_value(json_object_get(json_object_get(dim, "pricePerUnit"), "USD"));
            const char *unit = json_string_value(json_object_get(dim, "unit"));
            char *end = NULL;
            double v = usd ? strtod(usd, &end) : NAN;
            if (!usd || end == usd || *end || !isfinite(v) || v < 0)
                return rf_error_set(err, RF_ERR_FORMAT,
                                    "%s %s: price dimension %s: pricePerUnit.USD is not a "
                                    "number",
                                    what(q), q->name, dk);
            if (v == 0) continue; /* a free tier or a placeholder row is no price */
            rf_status st = RF_OK;
            if (q->kind != RF_PRICE_BEDROCK) {
                if (!unit || (strcasecmp(unit, "Hrs") && strcasecmp(unit, "Hours")))
                    return rf_error_set(err, RF_ERR_FORMAT,
                                        "%s %s: on-demand unit '%s' is not hours", what(q), q->name,
                                        unit ? unit : "(none)");
                st = set_price(q, "hourly", &acc->usd_per_hour, v, err);
            } else {
                double per_m;
                if (unit && !strcasecmp(unit, "1K tokens"))
                    per_m = v * 1000;
                else if (unit && !strcasecmp(unit, "1M tokens"))
                    per_m = v;
                else
                    return rf_error_set(err, RF_ERR_FORMAT,
                                        "Bedrock model %s: unit '%s' is not 1K or 1M tokens",
                                        q->name, unit ? unit : "(none)");
                const json_t *attrs =
                    json_object_get(json_object_get(prod, "product"), "attributes");
                const char *it = json_string_value(json_object_get(attrs, "inferenceType"));
                if (it && strcasestr(it, "input"))
                    st = set_price(q, "input-token", &acc->usd_per_m_input, per_m, err);
                else if (it && strcasestr(it, "output"))
                    st = set_price(q, "output-token", &acc->usd_per_m_output, per_m, err);
                else
                    continue; /* another kind of Bedrock charge (images, cache writes) */
            }
            if (st) return st;
            if (eff) snprintf(acc->effective, sizeof acc->effective, "%.39s", eff);
            const char *d = json_string_value(json_object_get(dim, "description"));
            if (d) snprintf(acc->description, sizeof acc->description, "%.199s", d);
        }
    }
    return RF_OK;
}

rf_status rf_aws_prices_page(const rf_price_query *q, const char *body, size_t len,
                             rf_price_found *acc, char next_token[RF_PRICE_TOKEN_MAX],
                             rf_error *err) {
    next_token[0] = 0;
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    rf_status st = RF_OK;
    if (!json_is_object(root)) {
        st = rf_error_set(err, RF_ERR_FORMAT, "GetProducts: the response is not a JSON object%s%s",
                          root ? "" : ": ", root ? "" : je.text);
        goto out;
    }
    const json_t *list = json_object_get(root, "PriceList");
    if (!json_is_array(list)) {
        st = rf_error_set(err, RF_ERR_FORMAT, "GetProducts: no PriceList array in the response");
        goto out;
    }
    size_t i;
    const json_t *s;
    json_array_foreach(list, i, s) {
        if (!json_is_string(s)) {
            st = rf_error_set(err, RF_ERR_FORMAT, "GetProducts: PriceList[%zu] is not a string", i);
            goto out;
        }
        json_t *prod = json_loadb(json_string_value(s), json_string_length(s), 0, &je);
        if (!json_is_object(prod)) {
            json_decref(prod);
            st =
                rf_error_set(err, RF_ERR_FORMAT,
                             "GetProducts: PriceList[%zu] is not a product's JSON: %s", i, je.text);
            goto out;
        }
        acc->products++;
        st = product_price(q, prod, acc, err);
        json_decref(prod);
        if (st) goto out;
    }
    const char *tok = json_string_value(json_object_get(root, "NextToken"));
    if (tok && strlen(tok) >= RF_PRICE_TOKEN_MAX) {
        st = rf_error_set(err, RF_ERR_FORMAT, "GetProducts: NextToken longer than %d bytes",
                          RF_PRICE_TOKEN_MAX - 1);
        goto out;
    }
    if (tok) snprintf(next_token, RF_PRICE_TOKEN_MAX, "%s", tok);
out:
    json_decref(root);
    return st;
}

rf_status rf_aws_prices_complete(const rf_price_query *q, const rf_price_found *acc,
                                 rf_error *err) {
    const char *sc = service_code(q->kind);
    if (q->kind != RF_PRICE_BEDROCK && !(acc->usd_per_hour > 0))
        return rf_error_set(err, RF_ERR_IO,
                            "%s %s in %s: the Price List (%s) has no on-demand hourly price "
                            "(%d products matched)",
                            what(q), q->name, q->region, sc, acc->products);
    if (q->kind == RF_PRICE_BEDROCK && !(acc->usd_per_m_input > 0 && acc->usd_per_m_output > 0))
        return rf_error_set(err, RF_ERR_IO,
                            "Bedrock model %s in %s: the Price List (%s) has no on-demand %s "
                            "token price (%d products matched); Bedrock prices that the Price "
                            "List does not carry must be entered in the prices file by hand",
                            q->name, q->region, sc, acc->usd_per_m_input > 0 ? "output" : "input",
                            acc->products);
    return RF_OK;
}

static size_t on_data(char *p, size_t size, size_t n, void *user) {
    rf_buf *b = user;
    return rf_buf_append(b, p, size * n) ? 0 : size * n;
}

/* One signed POST of body to url; the response into resp. */
static rf_status post_page(const rf_aws_creds *creds, const char *region, const char *url,
                           const char *body, rf_buf *resp, rf_error *err) {
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = NULL;
    rf_status st = RF_OK;
    if (!h) return rf_error_set(err, RF_ERR_NOMEM, "GetProducts: out of memory");
    hdr = curl_slist_append(hdr, "Content-Type: application/x-amz-json-1.1");
    struct curl_slist *h2 = hdr ? curl_slist_append(hdr, "X-Amz-Target: "
                                                         "AWSPriceListService.GetProducts")
                                : NULL;
    if (!h2) {
        st = rf_error_set(err, RF_ERR_NOMEM, "GetProducts: out of memory");
        goto out;
    }
    hdr = h2;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    st = rf_aws_sign_curl(h, creds, region, "pricing", "POST", url, body, strlen(body),
                          RF_AWS_SIGNER_AUTO, &hdr, err);
    if (st) goto out;
    CURLcode rc = curl_easy_perform(h);
    if (rc) {
        st = rf_error_set(err, RF_ERR_IO, "GetProducts at %s: %s", url, curl_easy_strerror(rc));
        goto out;
    }
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) {
        /* AWS's JSON error: {"__type": ..., "message": ...}; shown cut, never a credential
         * (the response holds none) */
        json_t *e = json_loadb((const char *)resp->data, resp->len, 0, NULL);
        const char *type = json_string_value(json_object_get(e, "__type"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        if (!msg) msg = json_string_value(json_object_get(e, "Message"));
        /* the first line only: AWS's signature errors go on to quote the canonical request,
         * which holds the session token when it was signed */
        int line = msg ? (int)strcspn(msg, "\r\n") : 0;
        st = rf_error_set(err, RF_ERR_IO, "GetProducts at %s: HTTP %ld %s: %.*s", url, code,
                          type ? type : "", msg ? (line > 200 ? 200 : line) : 12,
                          msg ? msg : "(no message)");
        json_decref(e);
    }
out:
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return st;
}

rf_status rf_aws_prices_fetch(const rf_price_query *q, const rf_aws_creds *creds,
                              const char *api_region, rf_price_found *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    const char *region = api_region && *api_region ? api_region : "us-east-1";
    char base[RF_AWS_URL_MAX], url[RF_AWS_URL_MAX + 2];
    rf_status st = rf_aws_endpoint(RF_AWS_PRICING, region, base, err);
    if (st) return st;
    snprintf(url, sizeof url, "%s/", base);
    char *token = calloc(1, RF_PRICE_TOKEN_MAX);
    rf_buf resp;
    rf_buf_init(&resp, PAGE_MAX);
    if (!token) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    for (int page = 0;; page++) {
        if (page == MAX_PAGES) {
            st = rf_error_set(err, RF_ERR_IO, "%s %s: more than %d GetProducts pages", what(q),
                              q->name, MAX_PAGES);
            goto out;
        }
        json_t *req = rf_aws_prices_request(q, token, err);
        char *body = req ? rf_json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        if (!body) {
            st = req || !err ? rf_error_set(err, RF_ERR_NOMEM, "out of memory") : err->code;
            goto out;
        }
        rf_buf_reset(&resp);
        st = post_page(creds, region, url, body, &resp, err);
        free(body);
        if (!st) st = rf_aws_prices_page(q, (const char *)resp.data, resp.len, out, token, err);
        if (st) goto out;
        if (!token[0]) break;
    }
    st = rf_aws_prices_complete(q, out, err);
out:
    rf_buf_free(&resp);
    free(token);
    return st;
}
