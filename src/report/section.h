/* section.h: the report's sections behind one registry. A section is one file, section_NAME.c,
 * that defines `const rf_report_section rf_section_NAME` (its id, title and renderers), plus
 * one line in sections.c's list, which gives the sections' order in report.md, in report.html
 * and in csv/. Nothing else names a section: the Markdown report, the CSV files and the HTML
 * tables are rendered from the tables a section builds (tables.h); report.html adds a
 * section's charts to the page's chart strip and its own HTML after its tables.
 *
 * A section reads the summary (analyze.h) only: it computes nothing from the records.
 *
 * Ownership: the registry and the sections are static and constant; a renderer appends to the
 * caller's tables or buffer and keeps nothing; rf_tables_build fills a set the caller frees with
 * rf_tables_free.
 */
#ifndef RF_REPORT_SECTION_H
#define RF_REPORT_SECTION_H

#include <jansson.h>

#include "report/tables.h"
#include "roofline/status.h"
#include "util/buf.h"

typedef struct rf_report_section rf_report_section;

struct rf_report_section {
    const char *id;    /* its anchor and its main table's id (a CSV file name) */
    const char *title; /* its main heading */
    /* Its tables: report.md, csv/<id>.csv and report.html's tables render them. NULL: none. */
    void (*tables)(const rf_report_section *s, rf_tables *ts, const json_t *summary);
    /* Its charts (svg.h), appended to report.html's chart strip. NULL: none. */
    rf_status (*charts)(rf_buf *out, const json_t *summary);
    /* Where its charts go in the strip: after those of every section of a lower rank (the
     * registry's order among equal ranks). */
    int chart_rank;
    /* HTML of its own, after its tables in report.html. NULL: none. */
    rf_status (*html)(const rf_report_section *s, rf_buf *out, const json_t *summary);
};

/* The registry (sections.c): n_out sections in the report's order. */
const rf_report_section *const *rf_report_sections(int *n_out);

/* The report's tables: the heading ("run DIR, DATE"), then every section's tables in the
 * registry's order, less the tables left without rows or footnotes. */
rf_status rf_tables_build(const json_t *summary, rf_tables *out, rf_error *err);

#endif
