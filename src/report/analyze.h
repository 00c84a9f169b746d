/* analyze.h: the run's figures, computed from its records (runset.h), never from live state:
 * the same numbers whether the bench just finished or `roofline report` reads the directory a
 * month later. The summary object has one section per suite keyed by backend (speed, load with
 * its levels, accuracy, agreement, agent, probe, aba), the backends with their prices and
 * hardware, the runs (sessions, interruptions, what was left out), and, from econ.h, cost and
 * roofline sections. Every figure that could not be measured is JSON null ("unknown"), never 0.
 *
 * Definitions (docs/bench.md has them in full): TTFT = sent -> first content event; E2E = sent
 * -> last content event; TPOT = (E2E - TTFT) / (n - 1) (vLLM); decode tok/s = (n - 1) / (last -
 * first content event); n/E2E tok/s = n / E2E; a load level's duration is the span from its
 * first intended send to its last completion, added per session when a resume split it; output
 * tok/s = output tokens of its successful measured requests / duration; goodput (vLLM) = good
 * requests / duration, a request being good when every given SLO holds (TPOT counts as 0 when
 * n <= 1).
 *
 * Ownership: rf_analyze returns a new object (caller decrefs); the runset is only read.
 */
#ifndef RF_REPORT_ANALYZE_H
#define RF_REPORT_ANALYZE_H

#include <jansson.h>

#include "report/runset.h"

/* Service-level objectives for goodput; 0: not given. */
typedef struct rf_slo {
    double ttft_ms, tpot_ms, e2e_ms;
    double attainment; /* a level meets the SLOs when at least this share is good (0.9) */
} rf_slo;

typedef struct rf_report_opts {
    const char *prices_path; /* NULL: the data directory's prices.json */
    const char *accel_path;  /* NULL: the data directory's accelerators.json */
    double ratio;            /* input tokens per output token for per-token prices (5) */
    rf_slo slo;
    double mem_util; /* share of memory for weights + KV (vLLM's gpu_memory_utilization, 0.9) */
    int32_t kv_ctx;  /* tokens per request for the KV-capacity figure (0: 4096) */
} rf_report_opts;

void rf_report_opts_default(rf_report_opts *o);
/* "ttft:MS,tpot:MS,e2e:MS" (any subset, any order). RF_ERR_ARG names the bad part. */
rf_status rf_slo_parse(const char *s, rf_slo *out, rf_error *err);

json_t *rf_analyze(const rf_runset *rs, const rf_report_opts *o, rf_error *err);

/* The speed suite's figures of backend bb in one A/B/A phase ("" outside one), and the load
 * suite's per level (for the A/B/A and precision sections). */
json_t *rf_report_speed_section(const rf_run *r, const char *phase, const rf_bench_backend *bb);
json_t *rf_report_load_section(const rf_run *r, const char *phase, const rf_bench_backend *bb,
                               const rf_slo *slo);

/* A {n, min, p50, p90, p95, p99, max, mean, std} object over v[0..n) (sorted in place); every
 * field but n is null when n == 0. */
json_t *rf_stats_json_of(double *v, size_t n);

#endif
