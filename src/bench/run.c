/* run.c: the run as a whole: the suites' preflights, then every configured suite (the suite
 * table, suites.c) over every backend, then the A/B/A sequence (A, then B, then A again, each
 * phase's requests keyed by its phase), then the precision study. The figures, the
 * cross-backend comparisons and the A/B/A drift are the report's (src/report/). */
#include <string.h>

#include "bench/bench.h"

static rf_status run_suite(rf_bench *b, int k, rf_suite_fn fn, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    for (int i = 0; i < d->n_backends && !rf_bench_stopped(b); i++) {
        rf_bench_backend *bb = &d->backends[i];
        if (!bb->b || bb->variant || !rf_bench_backend_runs(bb, k)) continue;
        rf_status st = fn(b, bb, err);
        if (st) return st;
    }
    return RF_OK;
}

static rf_bench_backend *find_backend(rf_run_desc *d, const char *name) {
    for (int i = 0; name && i < d->n_backends; i++)
        if (!strcmp(d->backends[i].cfg.name, name)) return &d->backends[i];
    return NULL;
}

static rf_status run_aba(rf_bench *b, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    rf_bench_backend *a = find_backend(d, d->aba_a), *bk = find_backend(d, d->aba_b);
    if (!a || !bk || !a->b || !bk->b) {
        rf_bench_log(b, "aba: skipped: %s could not be opened", a && a->b ? d->aba_b : d->aba_a);
        return RF_OK;
    }
    static const char *const phase_names[3] = {"aba 1", "aba 2", "aba 3"};
    rf_bench_backend *order[3] = {a, bk, a};
    rf_status st = RF_OK;
    for (int p = 0; p < 3 && !rf_bench_stopped(b) && !st; p++) {
        rf_bench_set_phase(b, phase_names[p]); /* phases 1 and 3 run the same requests */
        if (d->aba_speed || !d->aba_load) st = rf_suite_speed(b, order[p], err);
        if (!st && d->aba_load) st = rf_suite_load(b, order[p], err);
    }
    rf_bench_set_phase(b, NULL);
    return st;
}

rf_status rf_bench_preflight(const rf_run_desc *d, rf_error *err) {
    const rf_suite_def *t = rf_suite_table();
    for (int k = 0; k < RF_SUITE_COUNT; k++) {
        if (!t[k].preflight || !rf_suite_on(&t[k], d)) continue;
        rf_status st = t[k].preflight(d, err);
        if (st) return st;
    }
    return RF_OK;
}

/* Closes the run's own backends: nothing sends to them after their suites, and an open local
 * engine keeps its model, KV cache and scratch resident, under the precision study's engines
 * and its bandwidth samples (each a 512 MiB buffer) and the last one at the end. */
static void close_run_backends(rf_run_desc *d) {
    for (int i = 0; i < d->n_backends; i++) {
        rf_bench_backend *bb = &d->backends[i];
        if (bb->variant || !bb->b) continue;
        rf_backend_close(bb->b);
        bb->b = NULL;
    }
}

rf_status rf_bench_run_all(rf_bench *b, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    const rf_suite_def *t = rf_suite_table();
    rf_status st = RF_OK;
    for (int k = 0; k < RF_SUITE_COUNT && !st; k++)
        if (rf_suite_on(&t[k], d)) st = run_suite(b, t[k].id, t[k].run, err);
    if (!st && d->aba) st = run_aba(b, err);
    close_run_backends(d);
    if (!st && d->precision) st = rf_suite_precision(b, err);
    return st;
}
