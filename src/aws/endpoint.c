/* endpoint.c: service base URLs from the region or the AWS_ENDPOINT_URL* variables, and
 * path-segment escaping (endpoint.h). */
#include "aws/endpoint.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

static const struct {
    const char *signing, *env, *host_fmt;
} g_services[RF_AWS_SERVICE_COUNT] = {
    [RF_AWS_BEDROCK_RUNTIME] = {"bedrock", "BEDROCK_RUNTIME", "bedrock-runtime.%s.amazonaws.com"},
    [RF_AWS_SAGEMAKER_RUNTIME] = {"sagemaker", "SAGEMAKER_RUNTIME",
                                  "runtime.sagemaker.%s.amazonaws.com"},
    [RF_AWS_PRICING] = {"pricing", "PRICING", "api.pricing.%s.amazonaws.com"},
};

const char *rf_aws_signing_name(rf_aws_service s) {
    return s < RF_AWS_SERVICE_COUNT ? g_services[s].signing : "?";
}

const char *rf_aws_env_suffix(rf_aws_service s) {
    return s < RF_AWS_SERVICE_COUNT ? g_services[s].env : "?";
}

/* An endpoint variable's value: http(s)://host[:port][/path], no spaces or controls. */
static rf_status check_url(const char *var, const char *v, rf_error *err) {
    char shown[120];
    const char *auth = !strncmp(v, "http://", 7)    ? v + 7
                       : !strncmp(v, "https://", 8) ? v + 8
                                                    : NULL;
    bool ok = auth && *auth && *auth != '/' && *auth != '?' && *auth != '#';
    for (const char *p = v; ok && *p; p++)
        ok = (unsigned char)*p > 0x20 && *p != 0x7f && *p != '?' && *p != '#';
    if (!ok)
        return rf_error_set(err, RF_ERR_ARG,
                            "aws: %s='%s' is not an http(s)://HOST[:PORT][/PATH] URL", var,
                            rf_printable(v, strlen(v), shown, sizeof shown));
    return RF_OK;
}

rf_status rf_aws_endpoint(rf_aws_service s, const char *region, char out[RF_AWS_URL_MAX],
                          rf_error *err) {
    out[0] = 0;
    if (s >= RF_AWS_SERVICE_COUNT) return rf_error_set(err, RF_ERR_ARG, "aws: unknown service");
    char var[64];
    snprintf(var, sizeof var, "AWS_ENDPOINT_URL_%s", g_services[s].env);
    const char *v = getenv(var);
    if (!v || !*v) {
        snprintf(var, sizeof var, "AWS_ENDPOINT_URL");
        v = getenv(var);
    }
    if (v && *v) {
        rf_status st = check_url(var, v, err);
        if (st) return st;
        size_t n = strlen(v);
        while (n && v[n - 1] == '/') n--;
        if (n >= RF_AWS_URL_MAX)
            return rf_error_set(err, RF_ERR_ARG, "aws: %s is longer than %d bytes", var,
                                RF_AWS_URL_MAX - 1);
        memcpy(out, v, n);
        out[n] = 0;
        return RF_OK;
    }
    if (!region || !*region)
        return rf_error_set(err, RF_ERR_ARG, "aws: no region for the %s endpoint",
                            g_services[s].signing);
    int n = snprintf(out, RF_AWS_URL_MAX, "https://");
    int m = snprintf(out + n, RF_AWS_URL_MAX - (size_t)n, g_services[s].host_fmt, region);
    if (m < 0 || (size_t)(n + m) >= RF_AWS_URL_MAX) {
        out[0] = 0;
        return rf_error_set(err, RF_ERR_ARG, "aws: region name too long");
    }
    return RF_OK;
}

long rf_aws_escape_segment(const char *seg, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)seg; *p; p++) {
        bool keep = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        size_t need = keep ? 1 : 3;
        if (o + need >= cap) {
            if (cap) out[0] = 0;
            return -1;
        }
        if (keep) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (!cap) return -1;
    out[o] = 0;
    return (long)o;
}
