/* opts.h: the report's options: the prices and accelerator files, the input/output token ratio
 * for per-token prices, the SLOs for goodput, and the memory share and request length for the
 * KV-capacity figure. Read by analyze.c and by the sections it computes with (speed_load.h,
 * econ.h, precision.h).
 *
 * Ownership: plain values; the paths are borrowed from the caller.
 */
#ifndef RF_REPORT_OPTS_H
#define RF_REPORT_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "roofline/status.h"

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
/* Is any SLO given (ttft, tpot or e2e > 0)? */
bool rf_slo_given(const rf_slo *s);

#endif
