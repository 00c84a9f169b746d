/* opts.c: the report's options (see opts.h). */
#include "report/opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void rf_report_opts_default(rf_report_opts *o) {
    memset(o, 0, sizeof *o);
    o->ratio = 5;
    o->slo.attainment = 0.9;
    o->mem_util = 0.9;
    o->kv_ctx = 4096;
}

rf_status rf_slo_parse(const char *s, rf_slo *out, rf_error *err) {
    double att = out->attainment > 0 ? out->attainment : 0.9;
    memset(out, 0, sizeof *out);
    out->attainment = att;
    const char *p = s;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char part[64];
        if (n >= sizeof part)
            return rf_error_set(err, RF_ERR_ARG, "--slo: '%.*s' is too long", 40, p);
        memcpy(part, p, n);
        part[n] = 0;
        char *colon = strchr(part, ':'), *num_end = NULL;
        double v = colon ? strtod(colon + 1, &num_end) : 0;
        if (!colon || !num_end || *num_end || num_end == colon + 1 || !(v > 0) || !isfinite(v))
            return rf_error_set(err, RF_ERR_ARG,
                                "--slo: '%s' is not NAME:MS with a time > 0 (names: ttft, tpot, "
                                "e2e)",
                                part);
        *colon = 0;
        if (!strcmp(part, "ttft"))
            out->ttft_ms = v;
        else if (!strcmp(part, "tpot"))
            out->tpot_ms = v;
        else if (!strcmp(part, "e2e") || !strcmp(part, "e2el"))
            out->e2e_ms = v;
        else
            return rf_error_set(err, RF_ERR_ARG, "--slo: unknown metric '%s' (ttft, tpot, e2e)",
                                part);
        p = end ? end + 1 : NULL;
    }
    return RF_OK;
}

bool rf_slo_given(const rf_slo *s) {
    return s->ttft_ms > 0 || s->tpot_ms > 0 || s->e2e_ms > 0;
}
