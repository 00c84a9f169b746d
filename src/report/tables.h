/* tables.h: the report's tables, defined once from the summary (analyze.h) and rendered by
 * every renderer (render_md.c, render_html.c, render_csv.c): Markdown and HTML are two
 * renderings of the same table definitions, CSV a third.
 *
 * A cell is text, a number with the printf format it is shown with (CSV writes the number with
 * full precision), or unknown (shown "unknown"; an empty CSV field). A table has an id (its CSV
 * file name), a title, a note under the title (definitions, sources), columns, rows, and
 * footnotes. Preformatted blocks (the agent's lines) are tables of one text column with
 * `pre` set.
 *
 * Ownership: rf_tables_build fills a set the caller frees with rf_tables_free; every string is
 * owned by it.
 */
#ifndef RF_REPORT_TABLES_H
#define RF_REPORT_TABLES_H

#include <jansson.h>
#include <stdbool.h>

#include "roofline/status.h"

typedef enum rf_cell_kind { RF_CELL_UNKNOWN = 0, RF_CELL_TEXT, RF_CELL_NUM } rf_cell_kind;

typedef struct rf_cell {
    rf_cell_kind kind;
    double v;
    const char *fmt; /* static, e.g. "%.2f" */
    char *text;      /* owned */
} rf_cell;

typedef struct rf_table {
    char *id, *title, *note;
    int n_cols, n_rows, cap_rows;
    char **cols;
    rf_cell *cells; /* n_rows x n_cols */
    char **foot;
    int n_foot;
    bool pre;
} rf_table;

typedef struct rf_tables {
    rf_table *t;
    int n, cap;
    char *heading; /* "run DIR, DATE" */
} rf_tables;

rf_status rf_tables_build(const json_t *summary, rf_tables *out, rf_error *err);
void rf_tables_free(rf_tables *ts);

/* A cell's shown text into buf (cap >= 32): the formatted number, the text, or "unknown". */
const char *rf_cell_str(const rf_cell *c, char *buf, size_t cap);
const rf_table *rf_tables_find(const rf_tables *ts, const char *id);

#endif
