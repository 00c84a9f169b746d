/* series.h: the points of a line chart's series (svg.h), gathered from the summary by a
 * section's chart: up to RF_SERIES_MAX series of up to RF_SERIES_POINTS points each, names up
 * to 95 bytes. A series or point past those limits is left out.
 *
 * Ownership: the caller allocates the set (it is large: allocate it, do not put it on the
 * stack) and frees it; the rf_svg_series in it point into the set.
 */
#ifndef RF_REPORT_SERIES_H
#define RF_REPORT_SERIES_H

#include <stdbool.h>

#include "report/svg.h"

#define RF_SERIES_MAX    48
#define RF_SERIES_POINTS 64

typedef struct rf_series_set {
    rf_svg_series s[RF_SERIES_MAX];
    char names[RF_SERIES_MAX][96];
    double x[RF_SERIES_MAX][RF_SERIES_POINTS], y[RF_SERIES_MAX][RF_SERIES_POINTS];
    int n;
} rf_series_set;

/* A new empty series named name + suffix (suffix may be NULL); NULL when the set is full. */
rf_svg_series *rf_series_add(rf_series_set *ss, const char *name, const char *suffix, bool dashed);
/* Adds (x, y) to s; nothing when s is NULL or full. */
void rf_series_point(rf_svg_series *s, double x, double y);

#endif
