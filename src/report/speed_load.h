/* speed_load.h: the speed and load suites' figures of one backend, recomputed from a run's
 * records (runset.h) with the bench's own metric definitions (analyze.h has them in full):
 * single-stream TTFT, decode tok/s and E2E (min, median, max); per load level the output tok/s,
 * TTFT, TPOT, per-user tok/s, token gaps, queue latency, schedule lag, goodput under the SLOs
 * and whether the client, not the server, bound the level. analyze.c calls it for the summary's
 * speed, load and A/B/A sections, precision.c for the as-shipped turns.
 *
 * Ownership: every function returns a new object (caller decrefs); the run is only read.
 */
#ifndef RF_REPORT_SPEED_LOAD_H
#define RF_REPORT_SPEED_LOAD_H

#include <jansson.h>
#include <stddef.h>

#include "report/opts.h"
#include "report/runset.h"

/* The speed suite's figures of backend bb in one phase ("" outside A/B/A and precision turns). */
json_t *rf_report_speed_section(const rf_run *r, const char *phase, const rf_bench_backend *bb);
/* The load suite's figures of backend bb in one phase, per level. */
json_t *rf_report_load_section(const rf_run *r, const char *phase, const rf_bench_backend *bb,
                               const rf_slo *slo);

/* A {n, min, p50, p90, p95, p99, max, mean, std} object over v[0..n) (sorted in place); every
 * field but n is null when n == 0. */
json_t *rf_stats_json_of(double *v, size_t n);

#endif
