/* report.h: the scoreboard: the run's summary (summary.json's object) rendered as Markdown
 * tables, one per suite, every backend side by side. Reads the summary only, so a saved
 * summary.json can be re-rendered. Writes to a caller's FILE; allocates nothing it keeps. */
#ifndef RF_BENCH_REPORT_H
#define RF_BENCH_REPORT_H

#include <jansson.h>
#include <stdio.h>

void rf_report_markdown(const json_t *summary, FILE *f);

#endif
