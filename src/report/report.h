/* report.h: the report of one or more run directories, recomputed from their files (runset.h,
 * analyze.h, econ.h) and written as summary.json, report.md (the scoreboard), report.html (one
 * self-contained page with charts) and csv/<table>.csv (one file per table), every rendering
 * from the same table definitions (tables.h), which the report's sections build (section.h).
 *
 * `roofline bench` builds it into the run directory at the end of a run; `roofline report DIR
 * [DIR...]` builds it again, from any number of runs (merged side by side) into the one run's
 * directory or --out DIR.
 *
 * Ownership: rf_report_build returns the summary (caller decrefs) when summary_out is not NULL.
 */
#ifndef RF_REPORT_REPORT_H
#define RF_REPORT_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "report/analyze.h"
#include "report/section.h"
#include "report/tables.h"
#include "util/buf.h"

rf_status rf_report_build(const char *const *dirs, int n, const rf_report_opts *o,
                          const char *out_dir, json_t **summary_out, rf_error *err);

/* The renderings (render_md.c, render_html.c, render_csv.c). */
void rf_report_markdown(const rf_tables *ts, FILE *f);
rf_status rf_report_html(const json_t *summary, const rf_tables *ts, rf_buf *out);
rf_status rf_report_csv(const rf_table *t, rf_buf *out);

#endif
