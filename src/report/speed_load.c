/* speed_load.c: the speed and load suites' figures of one backend (see speed_load.h). */
#include "report/speed_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/records.h"
#include "util/stats.h"

/* ---------------------------------------------------------------- helpers */

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *rf_stats_json_of(double *v, size_t n) {
    rf_stats st;
    rf_stats_compute(v, n, &st);
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    const struct {
        const char *k;
        double v;
    } f[] = {{"min", st.min}, {"p50", st.p50}, {"p90", st.p90},   {"p95", st.p95},
             {"p99", st.p99}, {"max", st.max}, {"mean", st.mean}, {"std", st.std}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        json_object_set_new(o, f[i].k, n ? num(f[i].v) : json_null());
    return o;
}

/* min / median / max over v[0..n), nulls when n == 0 */
static json_t *minmedmax(double *v, size_t n) {
    rf_stats st;
    rf_stats_compute(v, n, &st);
    json_t *o = json_object();
    json_object_set_new(o, "min", n ? num(st.min) : json_null());
    json_object_set_new(o, "median", n ? num(st.p50) : json_null());
    json_object_set_new(o, "max", n ? num(st.max) : json_null());
    return o;
}

/* A record's result as a send (the bench's own metric definitions apply). */
typedef struct restored {
    rf_send s;
    rf_bench_backend bb;
    bool ok; /* restored */
} restored;

static void restore_all(json_t *recs, restored *out) {
    size_t i;
    json_t *rec;
    json_array_foreach(recs, i, rec) {
        restored *x = &out[i];
        memset(x, 0, sizeof *x);
        rf_bk_result_init(&x->s.req.res);
        x->s.bb = &x->bb;
        x->s.req.max_tokens = (int32_t)json_integer_value(json_object_get(rec, "max_tokens"));
        rf_error e = {0};
        x->ok = rf_record_restore(rec, &x->s, 0, &e) == RF_OK;
        x->s.session = (int)json_integer_value(json_object_get(rec, "session"));
        x->s.finished = 1;
    }
}

static void free_restored(restored *v, size_t n) {
    for (size_t i = 0; i < n; i++) rf_bk_result_free(&v[i].s.req.res);
    free(v);
}

static const char *str_of(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* ---------------------------------------------------------------- speed */

json_t *rf_report_speed_section(const rf_run *r, const char *phase, const rf_bench_backend *bb) {
    const rf_run_desc *d = &r->rf.desc;
    json_t *recs = rf_run_records(r, phase, "speed", bb->cfg.name, -1);
    size_t n = json_array_size(recs);
    restored *v = calloc(n + 1, sizeof *v);
    double *ttft = calloc(n + 1, sizeof *ttft), *dec = calloc(n + 1, sizeof *dec);
    double *e2e = calloc(n + 1, sizeof *e2e), *ne2e = calloc(n + 1, sizeof *ne2e);
    json_t *out = json_object();
    if (!v || !ttft || !dec || !e2e || !ne2e) goto done;
    restore_all(recs, v);
    size_t ok = 0, errors = 0, short_of = 0, np = 0;
    double *prompt = calloc(n + 1, sizeof *prompt);
    for (size_t i = 0; i < n; i++) {
        if (prompt && v[i].s.req.res.prompt_tokens >= 0)
            prompt[np++] = v[i].s.req.res.prompt_tokens;
        rf_send_metrics m;
        rf_send_metrics_of(&v[i].s, &m);
        if (!m.ok || !v[i].ok) {
            errors++;
            continue;
        }
        short_of += m.tokens < d->speed_tokens;
        ttft[ok] = m.ttft_ms;
        dec[ok] = m.decode_tok_s;
        e2e[ok] = m.e2e_ms / 1e3;
        ne2e[ok] = m.e2e_tok_s;
        ok++;
    }
    json_object_set_new(out, "runs", json_integer(d->speed_runs));
    json_object_set_new(out, "recorded", json_integer((json_int_t)n));
    json_object_set_new(out, "ok", json_integer((json_int_t)ok));
    json_object_set_new(out, "errors", json_integer((json_int_t)errors));
    json_object_set_new(out, "requested_tokens", json_integer(d->speed_tokens));
    json_object_set_new(out, "runs_short_of_tokens", json_integer((json_int_t)short_of));
    json_object_set_new(out, "ttft_ms", minmedmax(ttft, ok));
    json_object_set_new(out, "decode_tok_s", minmedmax(dec, ok));
    json_object_set_new(out, "e2e_s", minmedmax(e2e, ok));
    json_object_set_new(out, "e2e_tok_s", minmedmax(ne2e, ok));
    rf_stats pst;
    rf_stats_compute(prompt, np, &pst);
    json_object_set_new(out, "prompt_tokens", np ? json_real(pst.p50) : json_null());
    free(prompt);
done:
    free_restored(v, v ? n : 0);
    free(ttft), free(dec), free(e2e), free(ne2e);
    json_decref(recs);
    return out;
}

/* ---------------------------------------------------------------- load */

static const json_t *level_events(const rf_run *r, const char *phase, const char *backend,
                                  int level_index, double *lag_p99, double *lag_max,
                                  double *lag_p50, int64_t *samples, double *cpu, double *wall,
                                  bool *loop_timed) {
    const json_t *last = NULL;
    size_t i;
    json_t *ev;
    *lag_p99 = *lag_max = *lag_p50 = *cpu = *wall = 0;
    *samples = 0;
    *loop_timed = false;
    json_array_foreach(r->log, i, ev) {
        if (strcmp(str_of(ev, "kind"), "level") || strcmp(str_of(ev, "backend"), backend) ||
            strcmp(str_of(ev, "phase"), phase ? phase : "") ||
            json_integer_value(json_object_get(ev, "level_index")) != level_index)
            continue;
        /* a level split by a resume has one entry per session: the worst lag, the sum of CPU */
        double p99 = json_number_value(json_object_get(ev, "lag_p99_ms"));
        double mx = json_number_value(json_object_get(ev, "lag_max_ms"));
        double p50 = json_number_value(json_object_get(ev, "lag_p50_ms"));
        if (p99 > *lag_p99) *lag_p99 = p99;
        if (mx > *lag_max) *lag_max = mx;
        if (p50 > *lag_p50) *lag_p50 = p50;
        *samples += json_integer_value(json_object_get(ev, "lag_samples"));
        *cpu += json_number_value(json_object_get(ev, "cpu_s"));
        *wall += json_number_value(json_object_get(ev, "wall_s"));
        *loop_timed |= json_is_true(json_object_get(ev, "loop_timed"));
        last = ev;
    }
    return last;
}

/* The client's own state during the level: when its loop ran late by more than the figures can
 * take (a quarter of the TTFT or TPOT median, at least 1 ms), or its thread used nearly a whole
 * core, on a backend whose times are taken on the loop, the level is client-bound. */
static void client_section(const rf_run *r, const char *phase, const char *backend, int level_index,
                           json_t *out) {
    double p99, mx, p50, cpu, wall;
    int64_t samples;
    bool loop_timed;
    if (!level_events(r, phase, backend, level_index, &p99, &mx, &p50, &samples, &cpu, &wall,
                      &loop_timed))
        return; /* not in the run log (killed before the level ended) */
    json_t *c = json_object();
    json_t *l = json_object();
    json_object_set_new(l, "samples", json_integer(samples));
    json_object_set_new(l, "p50", samples ? json_real(p50) : json_null());
    json_object_set_new(l, "p99", samples ? json_real(p99) : json_null());
    json_object_set_new(l, "max", samples ? json_real(mx) : json_null());
    json_object_set_new(c, "loop_lag_ms", l);
    double util = wall > 0 ? cpu / wall : NAN;
    json_object_set_new(c, "cpu_s", json_real(cpu));
    json_object_set_new(c, "cpu_util", num(util));
    double ttft = json_number_value(json_object_get(json_object_get(out, "ttft_ms"), "p50"));
    double tpot = json_number_value(json_object_get(json_object_get(out, "tpot_ms"), "p50"));
    double scale = ttft > 0 && (tpot <= 0 || ttft < tpot) ? ttft : tpot;
    double bound_ms = 0.25 * scale > 1.0 ? 0.25 * scale : 1.0;
    json_object_set_new(c, "lag_bound_ms", json_real(bound_ms));
    char why[200] = "";
    if (!loop_timed)
        snprintf(why, sizeof why, "event times are taken by the backend's own thread");
    else if (samples && p99 > bound_ms)
        snprintf(why, sizeof why,
                 "client loop lag p99 %.1f ms exceeds %.1f ms: times are late by as much", p99,
                 bound_ms);
    else if (util > 0.9)
        snprintf(why, sizeof why,
                 "client thread used %.0f%% of a core: it read the streams in bursts", 100 * util);
    bool bound = loop_timed && why[0];
    json_object_set_new(c, "bound", json_boolean(bound));
    if (why[0]) json_object_set_new(c, bound ? "warning" : "note", json_string(why));
    json_object_set_new(out, "client", c);
}

/* Is the request good under the SLOs (vLLM's goodput: every given metric within its bound; TPOT
 * is 0 for n <= 1)? */
static bool good(const rf_send_metrics *m, const rf_slo *slo) {
    if (!m->ok) return false;
    if (slo->ttft_ms > 0 && !(m->ttft_ms >= 0 && m->ttft_ms <= slo->ttft_ms)) return false;
    double tpot = m->tokens <= 1 ? 0 : m->tpot_ms;
    if (slo->tpot_ms > 0 && !(tpot >= 0 && tpot <= slo->tpot_ms)) return false;
    if (slo->e2e_ms > 0 && !(m->e2e_ms >= 0 && m->e2e_ms <= slo->e2e_ms)) return false;
    return true;
}

static json_t *level_section(const rf_run *r, const char *phase, const rf_bench_backend *bb,
                             int level_index, int level, double rate, const rf_slo *slo) {
    const rf_run_desc *d = &r->rf.desc;
    json_t *out = json_object();
    json_object_set_new(out, "mode", json_string(rate > 0 ? "rate" : "concurrency"));
    if (rate > 0) {
        json_object_set_new(out, "rate", json_real(rate));
        json_object_set_new(out, "max_concurrency", json_integer(d->rate_max_concurrency));
    } else {
        json_object_set_new(out, "concurrency", json_integer(level));
    }
    int warmup_n = rate > 0 ? 0 : d->load_warmup;
    int planned = rate > 0
                      ? d->rate_requests
                      : (d->load_requests ? d->load_requests : (2 * level > 8 ? 2 * level : 8));
    json_t *recs = rf_run_records(r, phase, "load", bb->cfg.name, level_index);
    size_t n = json_array_size(recs);
    restored *v = calloc(n + 1, sizeof *v);
    size_t gaps_cap = 0;
    if (v) restore_all(recs, v);
    for (size_t i = 0; v && i < n; i++) gaps_cap += (size_t)v[i].s.req.res.n_ev;
    double *ttft = calloc(n + 1, sizeof(double)), *tpot = calloc(n + 1, sizeof(double));
    double *qlat = calloc(n + 1, sizeof(double)), *lag = calloc(n + 1, sizeof(double));
    double *e2e = calloc(n + 1, sizeof(double)), *per_user = calloc(n + 1, sizeof(double));
    double *cgap = calloc(gaps_cap + 1, sizeof(double)),
           *tgap = calloc(gaps_cap + 1, sizeof(double));
    int max_session = 0;
    for (size_t i = 0; v && i < n; i++)
        if (v[i].s.session > max_session) max_session = v[i].s.session;
    int64_t *t_start = calloc((size_t)max_session + 1, sizeof *t_start),
            *t_end = calloc((size_t)max_session + 1, sizeof *t_end);
    if (!v || !ttft || !tpot || !qlat || !lag || !e2e || !per_user || !cgap || !tgap || !t_start ||
        !t_end)
        goto done;
    size_t nt = 0, np = 0, nq = 0, nl = 0, ng = 0, ne = 0, nu = 0, measured = 0;
    int ok = 0, good_n = 0, errs[RF_BK_ERROR_COUNT] = {0};
    long long tokens = 0, requested = 0, short_of = 0, resends = 0, retries = 0;
    for (size_t i = 0; i < n; i++) {
        rf_send *s = &v[i].s;
        if (s->warmup || !v[i].ok) continue;
        measured++;
        const rf_bk_result *r2 = &s->req.res;
        int ses = s->session >= 0 ? s->session : 0;
        int64_t t_begin = s->t_intended ? s->t_intended : r2->t_sent;
        if (t_begin && (!t_start[ses] || t_begin < t_start[ses])) t_start[ses] = t_begin;
        int64_t t_fin = r2->t_done ? r2->t_done : r2->t_last_content;
        if (t_fin > t_end[ses]) t_end[ses] = t_fin;
        rf_send_metrics m;
        rf_send_metrics_of(s, &m);
        resends += r2->resends;
        retries += r2->retries;
        if (!m.ok) {
            errs[r2->err]++;
            continue;
        }
        ok++;
        good_n += good(&m, slo);
        tokens += m.tokens;
        requested += s->req.max_tokens;
        short_of += m.tokens < s->req.max_tokens;
        if (m.ttft_ms >= 0) ttft[nt++] = m.ttft_ms;
        if (m.tpot_ms >= 0) tpot[np++] = m.tpot_ms;
        if (m.tpot_ms > 0) per_user[nu++] = 1e3 / m.tpot_ms; /* AIPerf: 1 / TPOT per user */
        if (m.e2e_ms >= 0) e2e[ne++] = m.e2e_ms;
        if (m.queue_e2e_ms >= 0) qlat[nq++] = m.queue_e2e_ms;
        if (m.lag_ms >= 0) lag[nl++] = m.lag_ms;
        /* tokens per event: the backend's count when it knows it (local), else the request's
         * tokens spread evenly over its events (an SSE chunk may carry several tokens) */
        double even = r2->n_ev > 0 && m.tokens > r2->n_ev ? (double)m.tokens / r2->n_ev : 1.0;
        for (int32_t k = 1; k < r2->n_ev; k++) {
            double g = (double)(r2->ev_t[k] - r2->ev_t[k - 1]) / 1e6;
            cgap[ng] = g;
            tgap[ng++] = g / (r2->ev_tokens[k] > 0 ? (double)r2->ev_tokens[k] : even);
        }
    }
    double dur = 0;
    int sessions = 0;
    for (int k = 0; k <= max_session; k++)
        if (t_end[k] > t_start[k]) {
            dur += (double)(t_end[k] - t_start[k]) / 1e9;
            sessions++;
        }
    json_object_set_new(out, "requests", json_integer(planned));
    json_object_set_new(out, "recorded", json_integer((json_int_t)measured));
    if (sessions > 1) json_object_set_new(out, "sessions", json_integer(sessions));
    json_object_set_new(out, "warmup", json_integer(warmup_n));
    json_object_set_new(out, "ok", json_integer(ok));
    json_t *e = json_object();
    int n_err = 0;
    for (int k = 1; k < RF_BK_ERROR_COUNT; k++)
        if (errs[k]) {
            json_object_set_new(e, rf_bk_error_name((rf_bk_error)k), json_integer(errs[k]));
            n_err += errs[k];
        }
    json_object_set_new(out, "errors", json_integer(n_err));
    json_object_set_new(out, "errors_by_class", e);
    json_object_set_new(out, "resends", json_integer(resends));
    json_object_set_new(out, "retries", json_integer(retries));
    json_object_set_new(out, "duration_s", dur > 0 ? json_real(dur) : json_null());
    json_object_set_new(out, "output_tokens", json_integer(tokens));
    json_object_set_new(out, "requested_tokens", json_integer(requested));
    json_object_set_new(out, "requests_short_of_tokens", json_integer(short_of));
    json_object_set_new(out, "output_tok_s",
                        dur > 0 && ok ? json_real((double)tokens / dur) : json_null());
    json_object_set_new(out, "request_rate", dur > 0 && ok ? json_real(ok / dur) : json_null());
    json_object_set_new(out, "ttft_ms", rf_stats_json_of(ttft, nt));
    json_object_set_new(out, "tpot_ms", rf_stats_json_of(tpot, np));
    json_object_set_new(out, "e2e_ms", rf_stats_json_of(e2e, ne));
    json_object_set_new(out, "tok_s_per_user", rf_stats_json_of(per_user, nu));
    json_object_set_new(out, "per_token_gap_ms", rf_stats_json_of(tgap, ng));
    json_object_set_new(out, "chunk_gap_ms", rf_stats_json_of(cgap, ng));
    json_object_set_new(out, "queue_latency_ms", rf_stats_json_of(qlat, nq));
    json_object_set_new(out, "schedule_lag_ms", rf_stats_json_of(lag, nl));
    if (rf_slo_given(slo)) {
        json_t *g = json_object();
        json_object_set_new(g, "good", json_integer(good_n));
        json_object_set_new(g, "goodput_req_s", dur > 0 ? json_real(good_n / dur) : json_null());
        double frac = measured ? (double)good_n / (double)measured : NAN;
        json_object_set_new(g, "good_fraction", num(frac));
        json_object_set_new(g, "meets", json_boolean(frac >= slo->attainment));
        json_object_set_new(out, "goodput", g);
    }
    client_section(r, phase, bb->cfg.name, level_index, out);
done:
    free_restored(v, v ? n : 0);
    free(ttft), free(tpot), free(qlat), free(lag), free(e2e), free(per_user), free(cgap),
        free(tgap), free(t_start), free(t_end);
    json_decref(recs);
    return out;
}

json_t *rf_report_load_section(const rf_run *r, const char *phase, const rf_bench_backend *bb,
                               const rf_slo *slo) {
    const rf_run_desc *d = &r->rf.desc;
    json_t *out = json_object(), *levels = json_array();
    json_object_set_new(out, "levels", levels);
    if (d->rate > 0) {
        json_array_append_new(levels, level_section(r, phase, bb, 0, 0, d->rate, slo));
        return out;
    }
    int best = 0;
    for (int i = 0; i < d->n_levels; i++) {
        json_t *lv = level_section(r, phase, bb, i, d->levels[i], 0, slo);
        if (json_is_true(json_object_get(json_object_get(lv, "goodput"), "meets")) &&
            d->levels[i] > best)
            best = d->levels[i];
        json_array_append_new(levels, lv);
    }
    if (rf_slo_given(slo))
        json_object_set_new(out, "largest_level_meeting_slo",
                            best ? json_integer(best) : json_null());
    return out;
}
