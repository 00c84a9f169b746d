/* suite_load.c: throughput and latency under load.
 *
 * Fixed concurrency (the seeds' 1, 4, 16): a closed loop keeps `level` requests in flight until
 * warm-up + N requests are done; the first `warmup` requests are left out of the statistics.
 * Request rate (Poisson): send times are drawn up front as absolute times (exponential gaps from
 * a seeded generator, rescaled so the last send falls at N / rate, as vLLM does) and kept even
 * when the loop runs late, so queueing shows as schedule lag and queue-inclusive latency instead
 * of disappearing (coordinated omission); an optional concurrency cap queues sends that find
 * every slot busy.
 *
 * Per level: duration (first measured send to last completion), aggregate output tok/s and
 * request rate over successful requests, p50/p90/p99 of TTFT, TPOT (vLLM's: (E2E - TTFT) /
 * (n - 1)), per-token gap (gap between content events / tokens in the later event), chunk gap,
 * queue-inclusive latency and schedule lag; errors by class, never dropped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "util/clock.h"

typedef struct load_run {
    rf_bench *b;
    rf_bench_backend *bb;
    rf_send *sends;
    int total, next, outstanding, in_flight, max_in_flight, done;
    int *pending; /* Poisson with a cap: sends waiting for a slot */
    int n_pending, pending_head;
    char what[96];
} load_run;

static void start_next(load_run *lr);

static void closed_done(rf_send *s) {
    load_run *lr = s->user;
    lr->outstanding--;
    lr->in_flight--;
    lr->done++;
    rf_bench_progress(lr->b, lr->what, lr->done, lr->total);
    start_next(lr);
}

/* Closed loop: keep max_in_flight requests going. */
static void start_next(load_run *lr) {
    if (rf_bench_stopped(lr->b)) { /* what was never sent is not waited for */
        lr->outstanding -= lr->total - lr->next;
        lr->next = lr->total;
        return;
    }
    while (lr->next < lr->total && lr->in_flight < lr->max_in_flight) {
        rf_send *s = &lr->sends[lr->next++];
        lr->in_flight++;
        rf_send_at(s, 0);
    }
}

/* Poisson: a timer fired for send i. */
typedef struct timed {
    load_run *lr;
    int i;
} timed;

static void rate_done(rf_send *s);

static void rate_fire(load_run *lr, int i) {
    rf_send *s = &lr->sends[i];
    if (lr->max_in_flight && lr->in_flight >= lr->max_in_flight) {
        lr->pending[lr->n_pending++] = i; /* it keeps its intended time: the wait is lag */
        return;
    }
    lr->in_flight++;
    int64_t intended = s->t_intended;
    rf_send_at(s, 0);
    if (!s->reused) s->t_intended = intended; /* a restored one keeps its recorded time */
}

static void rate_done(rf_send *s) {
    load_run *lr = s->user;
    lr->outstanding--;
    lr->in_flight--;
    lr->done++;
    rf_bench_progress(lr->b, lr->what, lr->done, lr->total);
    if (lr->pending_head < lr->n_pending) rate_fire(lr, lr->pending[lr->pending_head++]);
}

static void rate_timer(void *user) {
    rf_send *s = user;
    rate_fire(s->user, (int)(s - ((load_run *)s->user)->sends));
}

static void add_stats(json_t *o, const char *key, double *v, size_t n) {
    rf_stats st;
    rf_stats_compute(v, n, &st);
    json_object_set_new(o, key, rf_stats_json(&st));
}

/* Statistics over the measured (non-warm-up) sends of one level. */
static void summarise(load_run *lr, int warmup, json_t *out) {
    int n = lr->total;
    double *ttft = calloc((size_t)n, sizeof(double)), *tpot = calloc((size_t)n, sizeof(double));
    double *qlat = calloc((size_t)n, sizeof(double)), *lag = calloc((size_t)n, sizeof(double));
    size_t gaps_cap = 0;
    for (int i = warmup; i < n; i++) gaps_cap += (size_t)lr->sends[i].req.res.n_ev;
    double *cgap = calloc(gaps_cap + 1, sizeof(double)),
           *tgap = calloc(gaps_cap + 1, sizeof(double));
    size_t nt = 0, np = 0, nq = 0, nl = 0, ng = 0;
    int ok = 0, errs[RF_BK_ERROR_COUNT] = {0};
    long long tokens = 0, requested = 0, short_of = 0, resends = 0;
    /* the duration per session: a resumed level's requests ran on two clocks, with the time
     * the run was down between them, which belongs to no measurement */
    int n_sessions = 1, reused = 0;
    for (int i = warmup; i < n; i++)
        if (lr->sends[i].session >= n_sessions) n_sessions = lr->sends[i].session + 1;
    int64_t *t_start = calloc((size_t)n_sessions, sizeof *t_start),
            *t_end = calloc((size_t)n_sessions, sizeof *t_end);
    for (int i = warmup; i < n && t_start && t_end; i++) {
        rf_send *s = &lr->sends[i];
        const rf_bk_result *r = &s->req.res;
        if (!s->started && !s->finished) continue;
        reused += s->reused;
        int ses = s->session >= 0 ? s->session : 0;
        int64_t t_begin = s->t_intended ? s->t_intended : r->t_sent;
        if (t_begin && (!t_start[ses] || t_begin < t_start[ses])) t_start[ses] = t_begin;
        int64_t t_fin = r->t_done ? r->t_done : r->t_last_content;
        if (t_fin > t_end[ses]) t_end[ses] = t_fin;
        rf_send_metrics m;
        rf_send_metrics_of(s, &m);
        resends += r->resends;
        if (!m.ok) {
            errs[r->err]++;
            continue;
        }
        ok++;
        tokens += m.tokens;
        requested += s->req.max_tokens;
        short_of += m.tokens < s->req.max_tokens;
        if (m.ttft_ms >= 0) ttft[nt++] = m.ttft_ms;
        if (m.tpot_ms >= 0) tpot[np++] = m.tpot_ms;
        if (m.queue_e2e_ms >= 0) qlat[nq++] = m.queue_e2e_ms;
        if (m.lag_ms >= 0) lag[nl++] = m.lag_ms;
        /* tokens per event: the backend's count when it knows it (local), else the request's
         * tokens spread evenly over its events (an SSE chunk may carry several tokens) */
        double even = r->n_ev > 0 && m.tokens > r->n_ev ? (double)m.tokens / r->n_ev : 1.0;
        for (int32_t k = 1; k < r->n_ev; k++) {
            double g = (double)(r->ev_t[k] - r->ev_t[k - 1]) / 1e6;
            cgap[ng] = g;
            tgap[ng++] = g / (r->ev_tokens[k] > 0 ? (double)r->ev_tokens[k] : even);
        }
    }
    double dur = 0;
    int sessions_used = 0;
    for (int k = 0; k < n_sessions && t_start && t_end; k++)
        if (t_end[k] > t_start[k]) {
            dur += (double)(t_end[k] - t_start[k]) / 1e9;
            sessions_used++;
        }
    free(t_start);
    free(t_end);
    json_object_set_new(out, "requests", json_integer(n - warmup));
    if (reused) {
        json_object_set_new(out, "restored_from_records", json_integer(reused));
        json_object_set_new(out, "sessions", json_integer(sessions_used));
    }
    json_object_set_new(out, "warmup", json_integer(warmup));
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
    json_object_set_new(out, "duration_s", json_real(dur));
    json_object_set_new(out, "output_tokens", json_integer(tokens));
    json_object_set_new(out, "requested_tokens", json_integer(requested));
    json_object_set_new(out, "requests_short_of_tokens", json_integer(short_of));
    json_object_set_new(out, "output_tok_s", json_real(dur > 0 ? (double)tokens / dur : 0));
    json_object_set_new(out, "request_rate", json_real(dur > 0 ? ok / dur : 0));
    add_stats(out, "ttft_ms", ttft, nt);
    add_stats(out, "tpot_ms", tpot, np);
    add_stats(out, "per_token_gap_ms", tgap, ng);
    add_stats(out, "chunk_gap_ms", cgap, ng);
    add_stats(out, "queue_latency_ms", qlat, nq);
    add_stats(out, "schedule_lag_ms", lag, nl);
    free(ttft), free(tpot), free(qlat), free(lag), free(cgap), free(tgap);
}

/* The client's own state during the level: when its loop ran late by more than the figures can
 * take (a quarter of the TTFT or TPOT median, at least 1 ms), or its thread used nearly a whole
 * core, the level's times are the client's, not the server's, and the summary says so. */
static void client_section(const rf_loop_lag *lag, bool loop_timed, json_t *out) {
    json_t *c = json_object();
    json_t *l = json_object();
    json_object_set_new(l, "samples", json_integer(lag->samples));
    json_object_set_new(l, "p50", json_real(lag->p50_ms));
    json_object_set_new(l, "p90", json_real(lag->p90_ms));
    json_object_set_new(l, "p99", json_real(lag->p99_ms));
    json_object_set_new(l, "max", json_real(lag->max_ms));
    json_object_set_new(c, "loop_lag_ms", l);
    double util = lag->wall_s > 0 ? lag->cpu_s / lag->wall_s : 0;
    json_object_set_new(c, "cpu_s", json_real(lag->cpu_s));
    json_object_set_new(c, "cpu_util", json_real(util));
    double ttft = json_number_value(json_object_get(json_object_get(out, "ttft_ms"), "p50"));
    double tpot = json_number_value(json_object_get(json_object_get(out, "tpot_ms"), "p50"));
    double scale = ttft > 0 && (tpot <= 0 || ttft < tpot) ? ttft : tpot;
    double bound_ms = 0.25 * scale > 1.0 ? 0.25 * scale : 1.0;
    json_object_set_new(c, "lag_bound_ms", json_real(bound_ms));
    char why[200] = "";
    if (!loop_timed)
        snprintf(why, sizeof why, "event times are taken by the backend's own thread");
    else if (lag->samples && lag->p99_ms > bound_ms)
        snprintf(why, sizeof why,
                 "client loop lag p99 %.1f ms exceeds %.1f ms: times are late by as much",
                 lag->p99_ms, bound_ms);
    else if (util > 0.9)
        snprintf(why, sizeof why,
                 "client thread used %.0f%% of a core: it read the streams in bursts", 100 * util);
    bool bound = loop_timed && why[0];
    json_object_set_new(c, "bound", json_boolean(bound));
    if (why[0]) json_object_set_new(c, bound ? "warning" : "note", json_string(why));
    json_object_set_new(out, "client", c);
}

static rf_status run_level(rf_bench *b, rf_bench_backend *bb, int level, double rate, json_t *out,
                           rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    int warmup = rate > 0 ? 0 : d->load_warmup;
    int n = rate > 0 ? d->rate_requests
                     : (d->load_requests ? d->load_requests : (2 * level > 8 ? 2 * level : 8));
    load_run lr = {0};
    lr.b = b;
    lr.bb = bb;
    lr.total = n + warmup;
    lr.sends = calloc((size_t)lr.total, sizeof *lr.sends);
    lr.pending = calloc((size_t)lr.total, sizeof *lr.pending);
    if (!lr.sends || !lr.pending) {
        free(lr.sends);
        free(lr.pending);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    static const char *prompts[] = {
        "Write a story about a robot learning to paint.",
        "Explain how tides work, in detail.",
        "Describe a walk through a busy market in the morning.",
        "Write a letter to a friend about a long train journey.",
    };
    for (int i = 0; i < lr.total; i++) {
        rf_send *s = &lr.sends[i];
        rf_send_init(s, b, bb, "load", prompts[i % 4], d->load_tokens);
        s->req.ignore_eos = true;
        s->level = level;
        s->index = i;
        s->warmup = i < warmup;
        s->user = &lr;
        snprintf(s->item, sizeof s->item, "%s %d", rate > 0 ? "rate" : "c", i);
    }
    rf_status st = RF_OK;
    if (rate > 0) {
        snprintf(lr.what, sizeof lr.what, "load %s rate %.2f/s", bb->cfg.name, rate);
        lr.max_in_flight = d->rate_max_concurrency;
        /* absolute send times: exponential gaps, rescaled so the last is at n / rate */
        uint64_t x = d->rate_seed * 0x9E3779B97F4A7C15ull + 1;
        double *gap = calloc((size_t)n, sizeof *gap), sum = 0;
        for (int i = 0; i < n && gap; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double u = ((double)(x >> 11) + 0.5) * 0x1.0p-53;
            gap[i] = -log(u) / rate;
            sum += gap[i];
        }
        double scale = sum > 0 ? ((double)n / rate) / sum : 1, t = 0;
        int64_t t0 = rf_now_ns() + 20000000; /* 20 ms to get the loop going */
        for (int i = 0; i < n; i++) {
            t += gap ? gap[i] * scale : 1.0 / rate;
            rf_send *s = &lr.sends[i];
            s->on_done = rate_done;
            s->t_intended = t0 + (int64_t)(t * 1e9) - (int64_t)(gap ? gap[0] * scale * 1e9 : 0);
        }
        free(gap);
        lr.outstanding = n;
        for (int i = 0; i < n; i++) {
            rf_send *s = &lr.sends[i];
            rf_error e = {0};
            /* a request already recorded (--resume) completes now, not at its time */
            if (rf_send_recorded(s) || rf_bench_loop_at(b, s->t_intended, rate_timer, s, &e))
                rate_fire(&lr, i);
        }
        rf_bench_progress(b, lr.what, 0, lr.total);
    } else {
        snprintf(lr.what, sizeof lr.what, "load %s c=%d", bb->cfg.name, level);
        lr.max_in_flight = level;
        lr.outstanding = lr.total;
        for (int i = 0; i < lr.total; i++) lr.sends[i].on_done = closed_done;
        rf_bench_progress(b, lr.what, 0, lr.total);
        start_next(&lr);
    }
    rf_loop_probe_start(rf_bench_loop(b), 5000000);
    st = rf_bench_wait(b, &lr.outstanding, err);
    rf_loop_lag lag;
    rf_loop_probe_stop(rf_bench_loop(b), &lag);
    json_object_set_new(out, "mode", json_string(rate > 0 ? "rate" : "concurrency"));
    if (rate > 0) {
        json_object_set_new(out, "rate", json_real(rate));
        json_object_set_new(out, "max_concurrency", json_integer(d->rate_max_concurrency));
    } else {
        json_object_set_new(out, "concurrency", json_integer(level));
    }
    summarise(&lr, warmup, out);
    client_section(&lag, bb->b && bb->b->vt->loop_timed, out);
    json_t *cl = json_object_get(out, "client");
    if (json_is_true(json_object_get(cl, "bound")))
        rf_bench_log(b, "warning: %s: %s", lr.what,
                     json_string_value(json_object_get(cl, "warning")));
    for (int i = 0; i < lr.total; i++) rf_send_free(&lr.sends[i]);
    free(lr.sends);
    free(lr.pending);
    return st;
}

rf_status rf_suite_load(rf_bench *b, rf_bench_backend *bb, json_t *out, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    json_t *levels = json_array();
    json_object_set_new(out, "levels", levels);
    if (d->rate > 0) {
        json_t *o = json_object();
        json_array_append_new(levels, o);
        return run_level(b, bb, 0, d->rate, o, err);
    }
    for (int i = 0; i < d->n_levels && !rf_bench_stopped(b); i++) {
        json_t *o = json_object();
        json_array_append_new(levels, o);
        rf_status st = run_level(b, bb, d->levels[i], 0, o, err);
        if (st) return st;
    }
    return RF_OK;
}
