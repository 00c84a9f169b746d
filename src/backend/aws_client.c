/* aws_client.c: URI, credentials, endpoint, URLs and signing of the AWS backends
 * (aws_client.h). */
#include "backend/aws_client.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/sign.h"
#include "util/file.h"

rf_status rf_bk_aws_uri_parse(const char *uri, const char *scheme, char region[RF_AWS_REGION_MAX],
                              char **name, rf_error *err) {
    if (name) *name = NULL;
    size_t sn = strlen(scheme);
    char shown[120];
    const char *want =
        !strcmp(scheme, "bedrock") ? "bedrock:REGION/MODEL_ID" : "sagemaker:REGION/ENDPOINT_NAME";
    if (!uri || strncmp(uri, scheme, sn) || uri[sn] != ':')
        return rf_error_set(err, RF_ERR_ARG, "%s: '%s' is not %s", scheme,
                            uri ? rf_printable(uri, strlen(uri), shown, sizeof shown) : "", want);
    const char *r = uri + sn + 1, *slash = strchr(r, '/');
    if (!slash || !slash[1])
        return rf_error_set(err, RF_ERR_ARG, "%s: '%s' has no name after the region (%s)", scheme,
                            rf_printable(uri, strlen(uri), shown, sizeof shown), want);
    for (const char *p = slash + 1; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return rf_error_set(err, RF_ERR_ARG,
                                "%s: the name in '%s' has a space or control "
                                "character",
                                scheme, rf_printable(uri, strlen(uri), shown, sizeof shown));
    char given[RF_AWS_REGION_MAX + 1];
    size_t rn = (size_t)(slash - r);
    if (rn >= sizeof given)
        return rf_error_set(err, RF_ERR_ARG, "%s: the region in '%s' is too long (%s)", scheme,
                            rf_printable(uri, strlen(uri), shown, sizeof shown), want);
    memcpy(given, r, rn);
    given[rn] = 0;
    char reg[RF_AWS_REGION_MAX];
    rf_status st = rf_aws_region(given, reg, err);
    if (st) {
        rf_error_prefix(err, "%s: %s (%s)", scheme,
                        rf_printable(uri, strlen(uri), shown, sizeof shown), want);
        return st;
    }
    if (region) memcpy(region, reg, sizeof reg);
    if (name) {
        *name = strdup(slash + 1);
        if (!*name) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    }
    return RF_OK;
}

rf_status rf_bk_aws_validate(const rf_backend_cfg *cfg, const char *scheme, rf_error *err) {
    rf_status st = rf_bk_aws_uri_parse(cfg->uri, scheme, NULL, NULL, err);
    if (st || !cfg->extra_body) return st;
    json_t *x = json_loads(cfg->extra_body, JSON_REJECT_DUPLICATES, NULL);
    bool ok = json_is_object(x);
    json_decref(x);
    return ok ? RF_OK
              : rf_error_set(err, RF_ERR_ARG, "%s: extra_body is not a JSON object", scheme);
}

static char *url_of(const char *base, const char *prefix, const char *esc, const char *suffix) {
    char *u = NULL;
    return asprintf(&u, "%s%s%s%s", base, prefix, esc, suffix) < 0 ? NULL : u;
}

rf_status rf_bk_aws_client_open(rf_bk_aws_client *c, rf_aws_service service, const char *uri,
                                const char *scheme, const char *prefix, const char *plain_suffix,
                                const char *stream_suffix, rf_error *err) {
    memset(c, 0, sizeof *c);
    c->service = service;
    char *esc = NULL;
    rf_status st = rf_bk_aws_uri_parse(uri, scheme, c->region, &c->name, err);
    if (!st) st = rf_aws_endpoint(service, c->region, c->base, err);
    if (!st) {
        size_t cap = strlen(c->name) * 3 + 1;
        esc = malloc(cap);
        if (!esc || rf_aws_escape_segment(c->name, esc, cap) < 0)
            st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    }
    if (!st) {
        c->url_plain = url_of(c->base, prefix, esc, plain_suffix);
        c->url_stream = url_of(c->base, prefix, esc, stream_suffix);
        if (!c->url_plain || !c->url_stream)
            st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    }
    if (!st) {
        st = rf_aws_creds_load(&c->creds, err);
        if (st) rf_error_prefix(err, "%s", scheme);
    }
    free(esc);
    if (st) rf_bk_aws_client_close(c);
    return st;
}

void rf_bk_aws_client_close(rf_bk_aws_client *c) {
    rf_aws_creds_free(&c->creds);
    free(c->name);
    free(c->url_plain);
    free(c->url_stream);
    memset(c, 0, sizeof *c);
}

rf_status rf_bk_aws_client_prepare(const rf_bk_aws_client *c, CURL *easy, bool stream,
                                   const char *accept_line, const rf_buf *body,
                                   struct curl_slist **headers, rf_error *err) {
    const char *url = stream ? c->url_stream : c->url_plain;
    curl_easy_setopt(easy, CURLOPT_URL, url);
    struct curl_slist *h = curl_slist_append(*headers, "Content-Type: application/json");
    if (h) *headers = h, h = curl_slist_append(h, accept_line);
    if (!h) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    *headers = h;
    return rf_aws_sign_curl(easy, &c->creds, c->region, rf_aws_signing_name(c->service), "POST",
                            url, body->data, body->len, RF_AWS_SIGNER_AUTO, headers, err);
}

bool rf_bk_aws_es_feed(rf_es *d, rf_bk_result *res, const void *p, size_t n) {
    rf_es_status st = rf_es_feed(d, p, n);
    if (st == RF_ES_OK || st == RF_ES_STOPPED) return st == RF_ES_OK;
    rf_bk_fail(res, st == RF_ES_NOMEM ? RF_BK_INTERNAL : RF_BK_INVALID, "%s", rf_es_error(d));
    return false;
}

void rf_bk_aws_es_end(rf_es *d, rf_bk_result *res) {
    if (rf_es_finish(d) == RF_ES_PARTIAL) rf_bk_fail(res, RF_BK_TRUNCATED, "%s", rf_es_error(d));
}
