/* suite_speed.c: the seeds' single-stream measurement and the one-question probe.
 *
 * speed: N runs (default 3), one at a time, of a fixed prompt generating exactly 512 tokens
 * (ignore_eos); per run TTFT, decode tok/s = (tokens - 1) / (last - first content event), n/E2E
 * tok/s and E2E, reported min / median / max.
 * probe: one short question; answer, latency and tok/s (tokens / E2E, the seeds' scoreboard).
 */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

static json_t *minmedmax(double *v, int n) {
    rf_stats st;
    rf_stats_compute(v, (size_t)n, &st);
    json_t *o = json_object();
    json_object_set_new(o, "min", json_real(st.min));
    json_object_set_new(o, "median", json_real(st.p50));
    json_object_set_new(o, "max", json_real(st.max));
    return o;
}

rf_status rf_suite_speed(rf_bench *b, rf_bench_backend *bb, json_t *out, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    int n = d->speed_runs;
    rf_send *sends = calloc((size_t)n, sizeof *sends);
    double *ttft = calloc((size_t)n, sizeof *ttft), *dec = calloc((size_t)n, sizeof *dec);
    double *e2e = calloc((size_t)n, sizeof *e2e), *ne2e = calloc((size_t)n, sizeof *ne2e);
    if (!sends || !ttft || !dec || !e2e || !ne2e) {
        free(sends), free(ttft), free(dec), free(e2e), free(ne2e);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    int ok = 0, errors = 0, tokens_short = 0;
    rf_status st = RF_OK;
    char what[96];
    snprintf(what, sizeof what, "speed %s", bb->cfg.name);
    for (int i = 0; i < n && !rf_bench_stopped(b); i++) {
        rf_bench_progress(b, what, i, n);
        rf_send *s = &sends[i];
        rf_send_init(s, b, bb, "speed", d->speed_prompt, d->speed_tokens);
        s->req.ignore_eos = true;
        s->index = i;
        snprintf(s->item, sizeof s->item, "run %d", i + 1);
        st = rf_send_one(s, err);
        if (st) break;
        rf_send_metrics m;
        rf_send_metrics_of(s, &m);
        if (!m.ok) {
            errors++;
            continue;
        }
        tokens_short += m.tokens < d->speed_tokens;
        ttft[ok] = m.ttft_ms;
        dec[ok] = m.decode_tok_s;
        e2e[ok] = m.e2e_ms / 1e3;
        ne2e[ok] = m.e2e_tok_s;
        ok++;
    }
    rf_bench_progress(b, what, n, n);
    json_object_set_new(out, "runs", json_integer(n));
    json_object_set_new(out, "ok", json_integer(ok));
    json_object_set_new(out, "errors", json_integer(errors));
    json_object_set_new(out, "requested_tokens", json_integer(d->speed_tokens));
    json_object_set_new(out, "runs_short_of_tokens", json_integer(tokens_short));
    if (ok) {
        json_object_set_new(out, "ttft_ms", minmedmax(ttft, ok));
        json_object_set_new(out, "decode_tok_s", minmedmax(dec, ok));
        json_object_set_new(out, "e2e_s", minmedmax(e2e, ok));
        json_object_set_new(out, "e2e_tok_s", minmedmax(ne2e, ok));
    }
    for (int i = 0; i < n; i++) rf_send_free(&sends[i]);
    free(sends), free(ttft), free(dec), free(e2e), free(ne2e);
    return st;
}

rf_status rf_suite_probe(rf_bench *b, rf_bench_backend *bb, json_t *out, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    rf_send s;
    rf_send_init(&s, b, bb, "probe", d->probe_question, 32);
    snprintf(s.item, sizeof s.item, "probe");
    rf_status st = rf_send_one(&s, err);
    rf_send_metrics m;
    rf_send_metrics_of(&s, &m);
    const rf_bk_result *r = &s.req.res;
    json_object_set_new(out, "ok", json_boolean(m.ok));
    if (!m.ok) json_object_set_new(out, "error", json_string(rf_bk_error_name(r->err)));
    json_object_set_new(out, "answer", rf_json_text((const char *)r->text.data, r->text.len));
    json_object_set_new(out, "latency_s", json_real(m.e2e_ms / 1e3));
    json_object_set_new(out, "tokens", json_integer(m.tokens));
    json_object_set_new(out, "tok_s", json_real(m.e2e_tok_s));
    rf_send_free(&s);
    return st;
}
