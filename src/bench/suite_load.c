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
 * Each request is a record; the level's figures (duration, tok/s, TTFT, TPOT, gaps, lag, errors
 * by class) are computed from the records by the report (rf_report_load_section in
 * src/report/analyze.c). The level itself goes into the run log with the client's own
 * punctuality while it ran (loop lag, CPU).
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

static rf_status run_level(rf_bench *b, rf_bench_backend *bb, int level_index, int level,
                           double rate, rf_error *err) {
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
        s->level_index = level_index;
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
    /* the client's own punctuality during the level: in the run log, for the report */
    json_t *ev = json_object();
    json_object_set_new(ev, "kind", json_string("level"));
    json_object_set_new(ev, "backend", json_string(bb->cfg.name));
    json_object_set_new(ev, "level_index", json_integer(level_index));
    json_object_set_new(ev, "concurrency", json_integer(level));
    if (rate > 0) json_object_set_new(ev, "rate", json_real(rate));
    json_object_set_new(ev, "loop_timed", json_boolean(bb->b && bb->b->vt->loop_timed));
    json_object_set_new(ev, "lag_samples", json_integer(lag.samples));
    json_object_set_new(ev, "lag_p50_ms", json_real(lag.p50_ms));
    json_object_set_new(ev, "lag_p90_ms", json_real(lag.p90_ms));
    json_object_set_new(ev, "lag_p99_ms", json_real(lag.p99_ms));
    json_object_set_new(ev, "lag_max_ms", json_real(lag.max_ms));
    json_object_set_new(ev, "cpu_s", json_real(lag.cpu_s));
    json_object_set_new(ev, "wall_s", json_real(lag.wall_s));
    rf_bench_log_event(b, ev);
    for (int i = 0; i < lr.total; i++) rf_send_free(&lr.sends[i]);
    free(lr.sends);
    free(lr.pending);
    return st;
}

rf_status rf_suite_load(rf_bench *b, rf_bench_backend *bb, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    if (d->rate > 0) return run_level(b, bb, 0, 0, d->rate, err);
    for (int i = 0; i < d->n_levels && !rf_bench_stopped(b); i++) {
        rf_status st = run_level(b, bb, i, d->levels[i], 0, err);
        if (st) return st;
    }
    return RF_OK;
}
