/* stats.c: sorting and interpolated percentiles. */
#include "util/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rf_quantile_sorted(const double *v, size_t n, double q) {
    if (n == 0) return 0;
    if (q <= 0) return v[0];
    if (q >= 1) return v[n - 1];
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double frac = pos - (double)i;
    return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * frac : v[i];
}

void rf_stats_compute(double *v, size_t n, rf_stats *s) {
    memset(s, 0, sizeof *s);
    if (n == 0) return;
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    s->n = n;
    s->min = v[0];
    s->max = v[n - 1];
    s->mean = sum / (double)n;
    double var = 0;
    for (size_t i = 0; i < n; i++) var += (v[i] - s->mean) * (v[i] - s->mean);
    s->std = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
    s->p50 = rf_quantile_sorted(v, n, 0.50);
    s->p90 = rf_quantile_sorted(v, n, 0.90);
    s->p95 = rf_quantile_sorted(v, n, 0.95);
    s->p99 = rf_quantile_sorted(v, n, 0.99);
}

double rf_median(const double *v, size_t n) {
    double s[64];
    if (n == 0) return 0;
    if (n > 64) n = 64;
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_double);
    return rf_quantile_sorted(s, n, 0.5);
}
