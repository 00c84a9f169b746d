/* analyze.c: the summary from the records (see analyze.h). */
#include "report/analyze.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/agent_task.h"
#include "bench/bench.h"
#include "bench/graders.h"
#include "bench/questions.h"
#include "bench/records.h"
#include "report/drift.h"
#include "report/econ.h"
#include "report/precision.h"
#include "util/stats.h"

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

static bool slo_given(const rf_slo *s) {
    return s->ttft_ms > 0 || s->tpot_ms > 0 || s->e2e_ms > 0;
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
    if (slo_given(slo)) {
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
    if (slo_given(slo))
        json_object_set_new(out, "largest_level_meeting_slo",
                            best ? json_integer(best) : json_null());
    return out;
}

/* ---------------------------------------------------------------- accuracy */

static json_t *accuracy_section(const rf_run *r, const rf_bench_backend *bb) {
    const rf_run_desc *d = &r->rf.desc;
    char pbuf[RF_BENCH_PATH_MAX];
    const char *path =
        rf_bench_data_path(d->questions, "accuracy/seed40.jsonl", pbuf, sizeof pbuf, NULL);
    rf_question *qs = NULL;
    int32_t nq = 0;
    rf_error qerr = {0};
    bool have_qs = path && rf_questions_load(path, NULL, &qs, &nq, &qerr) == RF_OK;
    json_t *recs = rf_run_records(r, "", "accuracy", bb->cfg.name, -1);
    size_t n = json_array_size(recs);
    int32_t total = have_qs ? nq : (int32_t)n;
    int correct = 0, errors = 0, missing = 0;
    json_t *cats = json_object(), *replies = json_object(), *items = json_array();
    for (int32_t i = 0; i < total; i++) {
        const json_t *rec = rf_run_record(r, "", "accuracy", bb->cfg.name, 0, i);
        if (!have_qs) rec = json_array_get(recs, (size_t)i);
        const char *id = have_qs ? qs[i].id : str_of(rec, "item");
        const char *cat = have_qs ? qs[i].category : str_of(rec, "category");
        if (!rec) missing++;
        bool ok_rec = rec && !strcmp(str_of(rec, "status"), "ok");
        int ok = rec && json_is_true(json_object_get(rec, "correct"));
        correct += ok;
        errors += rec && !ok_rec;
        json_t *c = json_object_get(cats, cat);
        if (!c) {
            c = json_pack("{s:i,s:i}", "correct", 0, "total", 0);
            json_object_set_new(cats, cat, c);
        }
        json_object_set_new(c, "correct",
                            json_integer(json_integer_value(json_object_get(c, "correct")) + ok));
        json_object_set_new(c, "total",
                            json_integer(json_integer_value(json_object_get(c, "total")) + 1));
        if (ok_rec) json_object_set(replies, id, json_object_get(rec, "reply"));
        json_t *it = json_object();
        json_object_set_new(it, "id", json_string(id));
        json_object_set_new(it, "correct", json_boolean(ok));
        json_t *ex = rec ? json_object_get(rec, "extracted") : NULL;
        json_object_set(it, "extracted", ex ? ex : json_null());
        if (!rec) json_object_set_new(it, "missing", json_true());
        json_array_append_new(items, it);
    }
    json_t *out = json_object();
    json_object_set_new(out, "questions", json_string(path ? path : ""));
    if (!have_qs) json_object_set_new(out, "questions_error", json_string(qerr.msg));
    json_object_set_new(out, "total", json_integer(total));
    json_object_set_new(out, "correct", json_integer(correct));
    json_object_set_new(out, "errors", json_integer(errors));
    if (missing) json_object_set_new(out, "missing", json_integer(missing));
    json_object_set_new(out, "by_category", cats);
    json_object_set_new(out, "items", items);
    json_object_set_new(out, "replies", replies);
    json_decref(recs);
    rf_questions_free(qs, nq);
    return out;
}

/* Every pair of backends that ran the suite: identical replies, and the ids that differ. */
static json_t *agreement(json_t *acc) {
    json_t *pairs = json_array();
    void *it = json_object_iter(acc);
    for (; it; it = json_object_iter_next(acc, it)) {
        const char *na = json_object_iter_key(it);
        json_t *a = json_object_iter_value(it);
        for (void *it2 = json_object_iter_next(acc, it); it2;
             it2 = json_object_iter_next(acc, it2)) {
            const char *nb = json_object_iter_key(it2);
            json_t *bo = json_object_iter_value(it2);
            json_t *ia = json_object_get(a, "items");
            size_t n = json_array_size(ia);
            const char **ids = calloc(n + 1, sizeof *ids);
            rf_reply_ref *ra = calloc(n + 1, sizeof *ra), *rb = calloc(n + 1, sizeof *rb);
            if (!ids || !ra || !rb) {
                free(ids), free(ra), free(rb);
                continue;
            }
            for (size_t i = 0; i < n; i++) {
                const char *id = json_string_value(json_object_get(json_array_get(ia, i), "id"));
                ids[i] = id;
                json_t *x = json_object_get(json_object_get(a, "replies"), id);
                json_t *y = json_object_get(json_object_get(bo, "replies"), id);
                if (x) ra[i] = (rf_reply_ref){json_string_value(x), json_string_length(x)};
                if (y) rb[i] = (rf_reply_ref){json_string_value(y), json_string_length(y)};
            }
            rf_agreement ag;
            rf_error err = {0};
            if (rf_agreement_compare(ids, ra, rb, (int32_t)n, &ag, &err) == RF_OK) {
                json_t *p = json_object();
                json_object_set_new(p, "a", json_string(na));
                json_object_set_new(p, "b", json_string(nb));
                json_object_set_new(p, "total", json_integer(ag.n_items));
                json_object_set_new(p, "identical", json_integer(ag.n_identical));
                json_t *diff = json_array();
                for (int32_t k = 0; k < ag.n_diff; k++)
                    json_array_append_new(diff, json_string(ag.diff_ids[k]));
                json_object_set_new(p, "differing", diff);
                json_array_append_new(pairs, p);
                rf_agreement_free(&ag);
            }
            free(ids), free(ra), free(rb);
        }
    }
    return pairs;
}

/* ---------------------------------------------------------------- agent */

/* Grades each run again from its turns' records: every call of every turn, and the text of the
 * last turn that made no call (the final answer). */
static json_t *agent_section(const rf_run *r, const rf_bench_backend *bb, const char *label,
                             int name_w) {
    const rf_run_desc *d = &r->rf.desc;
    json_t *out = json_object();
    char buf[RF_BENCH_PATH_MAX];
    const char *path =
        rf_bench_data_path(d->agent_task, "agent/count_ids.json", buf, sizeof buf, NULL);
    rf_agent_task t;
    rf_error err = {0};
    if (!path || rf_agent_task_load(path, &t, &err)) {
        json_object_set_new(out, "error",
                            json_string(path ? err.msg : "the agent task's path is too long"));
        return out;
    }
    int runs = d->agent_runs ? d->agent_runs : t.runs;
    json_t *lines = json_array(), *details = json_array();
    int quoted_ok = 0, filter_ok = 0, ok = 0, recorded = 0;
    for (int run = 1; run <= runs; run++) {
        rf_agent_call calls[64];
        int32_t n_calls = 0;
        const char *final = "", *status = NULL;
        double secs = 0;
        int turns = 0;
        for (int k = 0; k < t.max_turns; k++) {
            const json_t *rec =
                rf_run_record(r, "", "agent", bb->cfg.name, 0, (run - 1) * t.max_turns + k);
            if (!rec) break;
            turns++;
            double sent = json_number_value(json_object_get(rec, "t_sent_ms"));
            double done = json_number_value(json_object_get(rec, "t_done_ms"));
            if (done > sent) secs += (done - sent) / 1e3;
            if (strcmp(str_of(rec, "status"), "ok")) {
                status = str_of(rec, "error_class");
                break;
            }
            final = str_of(rec, "reply");
            json_t *tc = json_object_get(rec, "tool_calls");
            if (!json_array_size(tc)) break;
            size_t i;
            json_t *c;
            json_array_foreach(tc, i, c) {
                if (n_calls >= 64) break;
                const char *args = str_of(c, "arguments");
                calls[n_calls++] = (rf_agent_call){str_of(c, "name"), args, strlen(args)};
            }
            final = "";
        }
        if (!turns) continue; /* not run (interrupted) */
        recorded++;
        rf_agent_grade g;
        rf_agent_grade_run(&t, calls, n_calls, final, strlen(final), &g);
        quoted_ok += g.quoted_ok;
        filter_ok += g.filters_ok;
        ok += g.ok && !status;
        rf_buf line;
        rf_buf_init(&line, 0);
        rf_agent_format_run(label, run, runs, &g, status, secs, name_w, 4, &line);
        rf_buf_terminate(&line);
        json_array_append_new(lines, json_string(line.data ? (const char *)line.data : ""));
        rf_buf_free(&line);
        json_t *dj = json_object();
        json_object_set_new(dj, "run", json_integer(run));
        json_object_set_new(dj, "ok", json_boolean(g.ok && !status));
        json_object_set_new(dj, "quoted", json_string(g.quoted));
        json_object_set_new(dj, "quoted_ok", json_boolean(g.quoted_ok));
        json_object_set_new(dj, "filters_ok", json_boolean(g.filters_ok));
        json_object_set_new(dj, "calls", json_integer(g.n_calls));
        json_t *fl = json_array();
        for (int32_t i = 0; i < g.n_calls && i < RF_AGENT_GRADED_CALLS; i++)
            json_array_append_new(fl, json_string(g.calls[i].filter));
        json_object_set_new(dj, "filters", fl);
        if (status) json_object_set_new(dj, "error", json_string(status));
        if (g.reason[0]) json_object_set_new(dj, "reason", json_string(g.reason));
        json_object_set_new(dj, "seconds", json_real(secs));
        json_array_append_new(details, dj);
    }
    json_object_set_new(out, "task", json_string(t.name));
    json_object_set_new(out, "runs", json_integer(runs));
    json_object_set_new(out, "recorded", json_integer(recorded));
    json_object_set_new(out, "ok", json_integer(ok));
    json_object_set_new(out, "quoted_ok", json_integer(quoted_ok));
    json_object_set_new(out, "filter_ok", json_integer(filter_ok));
    json_object_set_new(out, "lines", lines);
    json_object_set_new(out, "details", details);
    rf_agent_task_free(&t);
    return out;
}

/* ---------------------------------------------------------------- probe */

static json_t *probe_section(const rf_run *r, const rf_bench_backend *bb) {
    json_t *out = json_object();
    const json_t *rec = rf_run_record(r, "", "probe", bb->cfg.name, 0, 0);
    if (!rec) {
        json_object_set_new(out, "ok", json_false());
        json_object_set_new(out, "error", json_string("not run"));
        return out;
    }
    restored x;
    memset(&x, 0, sizeof x);
    rf_bk_result_init(&x.s.req.res);
    x.s.bb = &x.bb;
    rf_error e = {0};
    rf_record_restore(rec, &x.s, 0, &e);
    rf_send_metrics m;
    rf_send_metrics_of(&x.s, &m);
    json_object_set_new(out, "ok", json_boolean(m.ok));
    if (!m.ok) json_object_set_new(out, "error", json_string(str_of(rec, "error_class")));
    json_object_set(out, "answer", json_object_get(rec, "reply"));
    json_object_set_new(out, "latency_s", m.e2e_ms >= 0 ? json_real(m.e2e_ms / 1e3) : json_null());
    json_object_set_new(out, "tokens", json_integer(m.tokens));
    json_object_set_new(out, "tok_s", m.e2e_tok_s >= 0 ? json_real(m.e2e_tok_s) : json_null());
    rf_bk_result_free(&x.s.req.res);
    return out;
}

/* ---------------------------------------------------------------- A/B/A */

static const rf_bench_backend *find_backend(const rf_run_desc *d, const char *name) {
    for (int i = 0; name && i < d->n_backends; i++)
        if (!strcmp(d->backends[i].cfg.name, name)) return &d->backends[i];
    return NULL;
}

static double get_real(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

static json_t *aba_section(const rf_run *r, const rf_slo *slo, const char *const *names) {
    const rf_run_desc *d = &r->rf.desc;
    const rf_bench_backend *a = find_backend(d, d->aba_a), *bk = find_backend(d, d->aba_b);
    json_t *out = json_object();
    if (!a || !bk) {
        json_object_set_new(out, "error", json_string("aba needs two backends (aba.a, aba.b)"));
        return out;
    }
    json_object_set_new(out, "a", json_string(names[a - d->backends]));
    json_object_set_new(out, "b", json_string(names[bk - d->backends]));
    json_t *phases = json_array();
    json_object_set_new(out, "phases", phases);
    static const char *const phase_names[3] = {"aba 1", "aba 2", "aba 3"};
    const rf_bench_backend *order[3] = {a, bk, a};
    double dec[3], tput[3];
    for (int p = 0; p < 3; p++) {
        json_t *ph = json_object();
        json_array_append_new(phases, ph);
        json_object_set_new(ph, "backend", json_string(names[order[p] - d->backends]));
        dec[p] = tput[p] = NAN;
        if (d->aba_speed || !d->aba_load) {
            json_t *sp = rf_report_speed_section(r, phase_names[p], order[p]);
            dec[p] = get_real(sp, "decode_tok_s", "median");
            json_object_set_new(ph, "speed", sp);
        }
        if (d->aba_load) {
            json_t *ld = rf_report_load_section(r, phase_names[p], order[p], slo);
            json_t *lv = json_object_get(ld, "levels");
            tput[p] = get_real(json_array_get(lv, json_array_size(lv) - 1), "output_tok_s", NULL);
            json_object_set_new(ph, "load", ld);
        }
    }
    const char *keys[2] = {"decode_tok_s", "output_tok_s_top_level"};
    double *vals[2] = {dec, tput};
    for (int k = 0; k < 2; k++) {
        rf_drift j = rf_drift_judge(vals[k][0], vals[k][1], vals[k][2]);
        if (j.verdict != RF_DRIFT_UNKNOWN) json_object_set_new(out, keys[k], rf_drift_json(&j));
    }
    return out;
}

/* ---------------------------------------------------------------- the whole */

static const char *model_of(const rf_run *r, const char *backend) {
    size_t i;
    json_t *rec;
    json_array_foreach(r->recs, i, rec) {
        if (!strcmp(str_of(rec, "backend"), backend) && *str_of(rec, "model"))
            return str_of(rec, "model");
    }
    return NULL;
}

static bool ran(const rf_run *r, const char *suite, const char *backend) {
    size_t i;
    json_t *rec;
    json_array_foreach(r->recs, i, rec) {
        if (!strcmp(str_of(rec, "suite"), suite) && !strcmp(str_of(rec, "backend"), backend) &&
            !json_object_get(rec, "phase"))
            return true;
    }
    return false;
}

static json_t *section(json_t *sum, const char *name) {
    json_t *s = json_object_get(sum, name);
    if (!s) {
        s = json_object();
        json_object_set_new(sum, name, s);
    }
    return s;
}

json_t *rf_analyze(const rf_runset *rs, const rf_report_opts *opts, rf_error *err) {
    /* the SLOs given to the report, else the first run's */
    rf_report_opts eff = *opts;
    const rf_report_opts *o = &eff;
    if (!slo_given(&eff.slo) && rs->n) {
        const rf_run_desc *d0 = &rs->runs[0].rf.desc;
        eff.slo.ttft_ms = d0->slo_ttft_ms;
        eff.slo.tpot_ms = d0->slo_tpot_ms;
        eff.slo.e2e_ms = d0->slo_e2e_ms;
        if (d0->slo_attainment > 0) eff.slo.attainment = d0->slo_attainment;
    }
    if (!(eff.slo.attainment > 0)) eff.slo.attainment = 0.9;
    json_t *sum = json_object(), *runs = json_array(), *backends = json_object();
    json_t *notes = json_array();
    if (!sum || !runs || !backends || !notes) {
        json_decref(sum), json_decref(runs), json_decref(backends), json_decref(notes);
        rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    json_object_set_new(sum, "schema", json_integer(RF_RECORD_SCHEMA));
    json_object_set_new(sum, "runs", runs);
    json_object_set_new(sum, "backends", backends);
    bool interrupted = false;
    int name_w = 4;
    for (int i = 0; i < rs->n; i++)
        for (int b = 0; b < rs->runs[i].rf.desc.n_backends; b++) {
            int w = (int)strlen(rs->runs[i].names[b]);
            if (w > name_w) name_w = w;
        }
    for (int i = 0; i < rs->n; i++) {
        const rf_run *r = &rs->runs[i];
        const rf_run_desc *d = &r->rf.desc;
        json_t *ro = json_object();
        json_object_set_new(ro, "dir", json_string(r->dir));
        json_object_set_new(ro, "run_id", json_string(r->run_id));
        json_object_set_new(ro, "sessions", json_integer(r->sessions));
        json_object_set_new(ro, "resumed", json_boolean(r->sessions > 1));
        json_object_set_new(ro, "ended", json_boolean(r->ended));
        json_object_set_new(ro, "interrupted", json_boolean(!r->ended || r->interrupted));
        if (r->error) json_object_set_new(ro, "error", json_string(r->error));
        json_object_set_new(ro, "records", json_integer(r->lines));
        json_object_set_new(ro, "requests", json_integer((json_int_t)json_array_size(r->recs)));
        json_object_set_new(ro, "superseded", json_integer(r->superseded));
        json_object_set_new(ro, "skipped", json_integer(r->skipped));
        json_object_set_new(ro, "torn_last_line", json_boolean(r->torn));
        if (r->machine) json_object_set(ro, "machine", r->machine);
        const json_t *start = NULL;
        size_t k;
        json_t *ev;
        json_array_foreach(r->log, k, ev) if (!strcmp(str_of(ev, "kind"), "session") && !start)
            start = ev;
        if (start) json_object_set(ro, "date", json_object_get(start, "started"));
        const json_t *end = NULL; /* the last session's end, with what its resume reused */
        json_array_foreach(r->log, k, ev) if (!strcmp(str_of(ev, "kind"), "session_end")) end = ev;
        static const char *const carried[] = {"records_reused", "records_superseded",
                                              "torn_bytes_cut", "duration_s"};
        for (size_t c = 0; end && c < sizeof carried / sizeof carried[0]; c++)
            if (json_object_get(end, carried[c]))
                json_object_set(ro, carried[c], json_object_get(end, carried[c]));
        if (r->warning[0]) {
            json_object_set_new(ro, "warning", json_string(r->warning));
            json_array_append_new(notes, json_string(r->warning));
        }
        json_array_append_new(runs, ro);
        interrupted |= !r->ended || r->interrupted;
        for (int b = 0; b < d->n_backends; b++) {
            const rf_bench_backend *bb = &d->backends[b];
            const char *label = r->names[b];
            json_t *bo = json_object();
            json_object_set_new(bo, "name", json_string(bb->cfg.name));
            json_object_set_new(bo, "run", json_string(r->dir));
            json_object_set_new(bo, "uri", json_string(bb->cfg.uri));
            const char *model = model_of(r, bb->cfg.name);
            json_object_set_new(bo, "model", model ? json_string(model) : json_null());
            if (bb->hardware) json_object_set_new(bo, "hardware", json_string(bb->hardware));
            json_object_set_new(bo, "usd_per_hour",
                                bb->usd_per_hour > 0 ? json_real(bb->usd_per_hour) : json_null());
            json_object_set_new(bo, "usd_per_m_input",
                                bb->usd_per_m_input > 0 ? json_real(bb->usd_per_m_input)
                                                        : json_null());
            json_object_set_new(bo, "usd_per_m_output",
                                bb->usd_per_m_output > 0 ? json_real(bb->usd_per_m_output)
                                                         : json_null());
            json_object_set_new(bo, "mem_bw_gbs",
                                bb->mem_bw_gbs > 0 ? json_real(bb->mem_bw_gbs) : json_null());
            if (!model && json_array_size(r->recs))
                json_object_set_new(bo, "error",
                                    json_string("no request was recorded (the backend "
                                                "could not be opened?)"));
            json_object_set_new(backends, label, bo);
            const bool pv = bb->variant != NULL; /* precision variants: the suites it ran */
            if ((d->speed || pv) && ran(r, "speed", bb->cfg.name))
                json_object_set_new(section(sum, "speed"), label,
                                    rf_report_speed_section(r, "", bb));
            if ((d->load || pv) && ran(r, "load", bb->cfg.name))
                json_object_set_new(section(sum, "load"), label,
                                    rf_report_load_section(r, "", bb, &o->slo));
            if ((d->accuracy || pv) && ran(r, "accuracy", bb->cfg.name))
                json_object_set_new(section(sum, "accuracy"), label, accuracy_section(r, bb));
            if ((d->agent || pv) && ran(r, "agent", bb->cfg.name))
                json_object_set_new(section(sum, "agent"), label,
                                    agent_section(r, bb, label, name_w));
            if (d->probe && ran(r, "probe", bb->cfg.name))
                json_object_set_new(section(sum, "probe"), label, probe_section(r, bb));
        }
        if (d->aba && !json_object_get(sum, "aba"))
            json_object_set_new(sum, "aba", aba_section(r, &o->slo, (const char *const *)r->names));
    }
    if (json_object_get(sum, "accuracy"))
        json_object_set_new(sum, "agreement", agreement(json_object_get(sum, "accuracy")));
    if (slo_given(&o->slo)) {
        json_t *s = json_object();
        if (o->slo.ttft_ms > 0) json_object_set_new(s, "ttft_ms", json_real(o->slo.ttft_ms));
        if (o->slo.tpot_ms > 0) json_object_set_new(s, "tpot_ms", json_real(o->slo.tpot_ms));
        if (o->slo.e2e_ms > 0) json_object_set_new(s, "e2e_ms", json_real(o->slo.e2e_ms));
        json_object_set_new(s, "attainment", json_real(o->slo.attainment));
        json_object_set_new(sum, "slo", s);
    }
    json_object_set_new(sum, "interrupted", json_boolean(interrupted));
    /* the first run, as the scoreboard's heading (all runs are in "runs") */
    json_object_set_new(sum, "run", json_deep_copy(json_array_get(runs, 0)));
    json_object_set_new(sum, "notes", notes);
    rf_status st = rf_econ_add(rs, o, sum, err);
    if (!st) st = rf_precision_add(rs, o, sum, err);
    if (st) {
        json_decref(sum);
        return NULL;
    }
    return sum;
}
