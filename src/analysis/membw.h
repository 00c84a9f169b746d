/* membw.h: the machine's memory read bandwidth, measured the way decode reads weights: a
 * streaming read of a buffer much larger than the caches, split across threads, repeated;
 * the figure is the median of the repeats.
 *
 * rf_membw_measure allocates and touches the buffer, runs, and frees it; nothing is kept.
 */
#ifndef RF_ANALYSIS_MEMBW_H
#define RF_ANALYSIS_MEMBW_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "roofline/status.h"

#define RF_MEMBW_MAX_REPEATS 64

typedef struct rf_membw_params {
    size_t bytes;        /* buffer size; 0: 1 GiB */
    int repeats;         /* 0: 7 */
    int n_threads;       /* 0: physical cores */
    const rf_kernels *k; /* read kernel; NULL: the best this CPU runs */
} rf_membw_params;

typedef struct rf_membw_result {
    double median_gbs; /* GB/s (1e9 bytes per second) */
    double min_gbs, max_gbs;
    double runs_gbs[RF_MEMBW_MAX_REPEATS];
    int repeats;
    int n_threads;
    size_t bytes;
    const char *kernel; /* ISA name of the read kernel */
} rf_membw_result;

rf_status rf_membw_measure(const rf_membw_params *p, rf_membw_result *out, rf_error *err);

#endif
