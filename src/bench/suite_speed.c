/* suite_speed.c: the seeds' single-stream measurement and the one-question probe.
 *
 * speed: N runs (default 3), one at a time, of a fixed prompt generating exactly 512 tokens
 * (ignore_eos). probe: one short question. Both only send and record; their figures (TTFT,
 * decode tok/s, n/E2E tok/s, the answer) are computed from the records by the report
 * (src/report/analyze.c).
 */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

rf_status rf_suite_speed(rf_bench *b, rf_bench_backend *bb, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    int n = d->speed_runs;
    rf_status st = RF_OK;
    char what[96];
    snprintf(what, sizeof what, "speed %s", bb->cfg.name);
    for (int i = 0; i < n && !rf_bench_stopped(b) && !st; i++) {
        rf_bench_progress(b, what, i, n);
        rf_send s;
        rf_send_init(&s, b, bb, "speed", d->speed_prompt, d->speed_tokens);
        s.req.ignore_eos = true;
        s.index = i;
        snprintf(s.item, sizeof s.item, "run %d", i + 1);
        st = rf_send_one(&s, err);
        rf_send_free(&s);
    }
    rf_bench_progress(b, what, n, n);
    return st;
}

rf_status rf_suite_probe(rf_bench *b, rf_bench_backend *bb, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    rf_send s;
    rf_send_init(&s, b, bb, "probe", d->probe_question, 32);
    snprintf(s.item, sizeof s.item, "probe");
    rf_status st = rf_send_one(&s, err);
    rf_send_free(&s);
    return st;
}
