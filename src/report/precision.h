/* precision.h: the precision study's section of the summary (the bench's suite_precision.c
 * measures it). For the first run of the set that has a precision study: one row per variant
 * (the as-shipped file first) with the file's size, bytes read per decoded token, the roofline
 * ceiling and the decode tok/s against it (efficiency, and that efficiency relative to the
 * as-shipped file's), the aggregate output tok/s at the top load level, accuracy per category,
 * answers identical to the as-shipped file's, agent runs correct and the KV capacity; each
 * variant's decode and top-level tok/s judged against the as-shipped turns before and after it
 * (drift.h). The as-shipped row's speed figures are the mean over its turns. The roofline, memory,
 * accuracy, agreement and agent figures are the other sections' (econ.h, analyze.h), read back
 * from the summary, so this section is built after them.
 *
 * Ownership: adds "precision" to the caller's summary; nothing else is kept.
 */
#ifndef RF_REPORT_PRECISION_H
#define RF_REPORT_PRECISION_H

#include <jansson.h>

#include "report/opts.h"
#include "report/runset.h"

/* Efficiency relative to the as-shipped file's within which a native variant "tracks its bytes
 * per token" (the study's acceptance: 15%). */
#define RF_PRECISION_TRACK_TOL 0.15

rf_status rf_precision_add(const rf_runset *rs, const rf_report_opts *o, json_t *summary,
                           rf_error *err);

#endif
