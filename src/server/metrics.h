/* metrics.h: the server's Prometheus metrics (GET /metrics, text exposition format 0.0.4).
 *
 * Counters and histograms are fed by the server: rf_metrics_token for every generated token (the
 * weight-bytes counter and its recent rate), rf_metrics_request once per request at its final
 * event (tokens, finish reason, the latency histograms, and its inter-token latencies, gathered
 * per request in an rf_metrics_itl without any shared lock). Gauges (requests running and
 * waiting, KV positions, prefix-cache counts) are read from rf_engine_get_stats when rendered.
 * Names and their vLLM equivalents: docs/server.md.
 *
 * Threads: every function may be called from any thread (a mutex guards the counters);
 * rf_metrics_itl_add touches only its own record. No global state: the object belongs to the
 * server (rf_metrics_new / rf_metrics_free).
 */
#ifndef RF_SERVER_METRICS_H
#define RF_SERVER_METRICS_H

#include <stdint.h>

#include "roofline/engine.h"
#include "roofline/status.h"
#include "util/buf.h"

#define RF_METRICS_ITL_BUCKETS 22

typedef struct rf_metrics rf_metrics;

/* One request's inter-token latencies, bucketed (bounds: the ITL histogram's). */
typedef struct rf_metrics_itl {
    uint64_t counts[RF_METRICS_ITL_BUCKETS + 1]; /* per bucket (not cumulative); last: +Inf */
    uint64_t n;
    double sum; /* seconds */
    int64_t last_ns;
} rf_metrics_itl;

/* Records a token made at t_ns (the gap from the previous token of the same request). */
void rf_metrics_itl_add(rf_metrics_itl *itl, int64_t t_ns);

/* What the server knows about a request when its final event arrives (times: CLOCK_MONOTONIC
 * ns; 0 when it never happened). */
typedef struct rf_metrics_req {
    rf_finish finish;
    int32_t n_prompt, n_gen;
    int64_t t_arrival; /* the HTTP request's headers came in */
    int64_t t_submit, t_admit, t_first, t_end;
    const rf_metrics_itl *itl; /* may be NULL */
} rf_metrics_req;

rf_metrics *rf_metrics_new(void); /* NULL: out of memory */
void rf_metrics_free(rf_metrics *m);

void rf_metrics_token(rf_metrics *m, int64_t t_ns);
void rf_metrics_request(rf_metrics *m, const rf_metrics_req *r);

/* Appends the exposition text; st (may be NULL: no engine yet) gives the gauges;
 * bytes_per_token (rf_engine_info's estimate of bytes read per decoded token) scales the token
 * count into the weight-bytes counter and its recent rate. */
rf_status rf_metrics_render(rf_metrics *m, const rf_engine_stats *st, uint64_t bytes_per_token,
                            int64_t now_ns, rf_buf *out);

#endif
