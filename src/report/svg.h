/* svg.h: the report's charts as inline SVG (no scripts, no fonts, no network): line charts
 * (optionally a log2 x axis, horizontal reference lines) and grouped bar charts. Every point and
 * bar carries its value as text (a <title> tooltip and a data-value attribute), so the numbers
 * are in the page, not only in the picture. Text is XML-escaped.
 *
 * Nothing is kept: each call appends one <figure> with its <svg> to the caller's buffer.
 */
#ifndef RF_REPORT_SVG_H
#define RF_REPORT_SVG_H

#include <stdbool.h>

#include "util/buf.h"

typedef struct rf_svg_series {
    const char *name;
    int n;
    const double *x, *y; /* NaN y: no point */
    bool dashed;
} rf_svg_series;

typedef struct rf_svg_hline {
    const char *name;
    double y;
} rf_svg_hline;

typedef struct rf_svg_line_chart {
    const char *id, *title, *xlabel, *ylabel;
    const rf_svg_series *series;
    int n_series;
    const rf_svg_hline *hlines;
    int n_hlines;
    bool log2_x; /* concurrency axes */
    bool y_from_zero;
} rf_svg_line_chart;

rf_status rf_svg_line(rf_buf *out, const rf_svg_line_chart *c);

typedef struct rf_svg_bar_chart {
    const char *id, *title, *ylabel;
    const char *const *groups; /* x positions (categories) */
    int n_groups;
    const char *const *bars; /* one bar per group and name (legend) */
    int n_bars;
    const double *v; /* n_groups x n_bars, NaN: no bar */
    const char *value_fmt;
    double y_max; /* the axis reaches at least this (100 for a percentage); 0: the data's */
} rf_svg_bar_chart;

rf_status rf_svg_bars(rf_buf *out, const rf_svg_bar_chart *c);

/* Appends s XML-escaped (&, <, >, ", '), invalid UTF-8 bytes as U+FFFD. */
rf_status rf_xml_text(rf_buf *out, const char *s);

#endif
