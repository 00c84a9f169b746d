/* stats.h: summary statistics over samples (latencies, rates, repeated measurements): count, min,
 * max, mean, std and percentiles by linear interpolation between closest ranks (numpy's
 * default), so p50 of {1, 2} is 1.5 (the median of an even count is the mean of the middle two).
 * The one place the project computes them (bench, report, membw, roofline speed). Works on a
 * caller's array (sorted in place); allocates nothing. */
#ifndef RF_UTIL_STATS_H
#define RF_UTIL_STATS_H

#include <stddef.h>

typedef struct rf_stats {
    size_t n;
    double min, max, mean, std, p50, p90, p95, p99;
} rf_stats;

/* Sorts v[0..n) and fills s; all fields 0 when n == 0. */
void rf_stats_compute(double *v, size_t n, rf_stats *s);
/* The q-quantile (0..1) of sorted v[0..n). */
double rf_quantile_sorted(const double *v, size_t n, double q);
/* The median of v[0..n) without reordering it (copies at most 64 values; n <= 64), 0 when n == 0.
 */
double rf_median(const double *v, size_t n);

#endif
