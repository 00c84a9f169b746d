/* run.c: the run as a whole: every configured suite over every backend, the cross-backend
 * comparisons (answer agreement, A/B/A drift), then summary.json and the scoreboard. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/report.h"

typedef rf_status (*suite_fn)(rf_bench *, rf_bench_backend *, json_t *, rf_error *);

static json_t *section(rf_bench *b, const char *name) {
    json_t *s = json_object_get(rf_bench_summary(b), name);
    if (!s) {
        s = json_object();
        json_object_set_new(rf_bench_summary(b), name, s);
    }
    return s;
}

static rf_status run_suite(rf_bench *b, const char *name, suite_fn fn, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    json_t *sec = section(b, name);
    for (int i = 0; i < d->n_backends && !rf_bench_stopped(b); i++) {
        rf_bench_backend *bb = &d->backends[i];
        if (!bb->b) continue;
        json_t *o = json_object();
        json_object_set_new(sec, bb->cfg.name, o);
        rf_status st = fn(b, bb, o, err);
        if (st) return st;
    }
    return RF_OK;
}

static rf_bench_backend *find_backend(rf_run_desc *d, const char *name) {
    for (int i = 0; name && i < d->n_backends; i++)
        if (!strcmp(d->backends[i].cfg.name, name)) return &d->backends[i];
    return NULL;
}

static double get_real(json_t *o, const char *a, const char *b) {
    json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

/* A, then B, then A again, on the chosen suites; the B-A difference counts only when it exceeds
 * the A-to-A drift. */
static rf_status run_aba(rf_bench *b, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    rf_bench_backend *a = find_backend(d, d->aba_a), *bk = find_backend(d, d->aba_b);
    json_t *out = section(b, "aba");
    if (!a || !bk || !a->b || !bk->b) {
        json_object_set_new(out, "error",
                            json_string("aba needs two opened backends (aba_a, aba_b)"));
        return RF_OK;
    }
    json_object_set_new(out, "a", json_string(a->cfg.name));
    json_object_set_new(out, "b", json_string(bk->cfg.name));
    json_t *phases = json_array();
    json_object_set_new(out, "phases", phases);
    rf_bench_backend *order[3] = {a, bk, a};
    double dec[3], tput[3];
    static const char *const phase_names[3] = {"aba 1", "aba 2", "aba 3"};
    for (int p = 0; p < 3 && !rf_bench_stopped(b); p++) {
        rf_bench_set_phase(b, phase_names[p]); /* phase 1 and 3 run the same requests */
        json_t *ph = json_object();
        json_array_append_new(phases, ph);
        json_object_set_new(ph, "backend", json_string(order[p]->cfg.name));
        dec[p] = tput[p] = NAN;
        if (d->aba_speed || !d->aba_load) {
            json_t *sp = json_object();
            json_object_set_new(ph, "speed", sp);
            rf_status st = rf_suite_speed(b, order[p], sp, err);
            if (st) return st;
            dec[p] = get_real(sp, "decode_tok_s", "median");
        }
        if (d->aba_load) {
            json_t *ld = json_object();
            json_object_set_new(ph, "load", ld);
            rf_status st = rf_suite_load(b, order[p], ld, err);
            if (st) return st;
            json_t *lv = json_object_get(ld, "levels");
            tput[p] = get_real(json_array_get(lv, json_array_size(lv) - 1), "output_tok_s", NULL);
        }
    }
    rf_bench_set_phase(b, NULL);
    const char *keys[2] = {"decode_tok_s", "output_tok_s_top_level"};
    double *vals[2] = {dec, tput};
    for (int k = 0; k < 2; k++) {
        double *v = vals[k];
        if (isnan(v[0]) || isnan(v[1]) || isnan(v[2])) continue;
        double drift = fabs(v[2] - v[0]), base = 0.5 * (v[0] + v[2]), diff = v[1] - base;
        json_t *o = json_object();
        json_object_set_new(o, "a1", json_real(v[0]));
        json_object_set_new(o, "b", json_real(v[1]));
        json_object_set_new(o, "a2", json_real(v[2]));
        json_object_set_new(o, "a_drift", json_real(drift));
        json_object_set_new(o, "a_drift_pct", json_real(base > 0 ? 100 * drift / base : 0));
        json_object_set_new(o, "b_minus_a", json_real(diff));
        json_object_set_new(o, "b_minus_a_pct", json_real(base > 0 ? 100 * diff / base : 0));
        json_object_set_new(o, "difference_exceeds_drift", json_boolean(fabs(diff) > drift));
        json_object_set_new(out, keys[k], o);
    }
    return RF_OK;
}

rf_status rf_bench_run_all(rf_bench *b, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    json_t *sum = rf_bench_summary(b);
    json_t *backends = json_object();
    json_object_set_new(sum, "backends", backends);
    for (int i = 0; i < d->n_backends; i++) {
        rf_bench_backend *bb = &d->backends[i];
        json_t *o = json_object();
        json_object_set_new(o, "uri", json_string(bb->cfg.uri));
        json_object_set_new(o, "model", json_string(bb->b ? bb->b->vt->model(bb->b) : ""));
        if (bb->hardware) json_object_set_new(o, "hardware", json_string(bb->hardware));
        json_object_set_new(o, "usd_per_hour", json_real(bb->usd_per_hour));
        json_object_set_new(o, "usd_per_m_input", json_real(bb->usd_per_m_input));
        json_object_set_new(o, "usd_per_m_output", json_real(bb->usd_per_m_output));
        json_object_set_new(o, "mem_bw_gbs", json_real(bb->mem_bw_gbs));
        if (!bb->b) json_object_set_new(o, "error", json_string(bb->open_error));
        json_object_set_new(backends, bb->cfg.name, o);
    }
    rf_status st = RF_OK;
    if (!st && d->speed) st = run_suite(b, "speed", rf_suite_speed, err);
    if (!st && d->load) st = run_suite(b, "load", rf_suite_load, err);
    if (!st && d->accuracy) {
        st = run_suite(b, "accuracy", rf_suite_accuracy, err);
        if (!st) rf_accuracy_agreement(b);
    }
    if (!st && d->agent) st = run_suite(b, "agent", rf_suite_agent, err);
    if (!st && d->probe) st = run_suite(b, "probe", rf_suite_probe, err);
    if (!st && d->aba) st = run_aba(b, err);
    json_object_set_new(sum, "interrupted", json_boolean(rf_bench_stopped(b)));
    return st;
}
