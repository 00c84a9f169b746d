/* tables.h: the report's tables, defined once from the summary (analyze.h) and rendered by
 * every renderer (render_md.c, render_html.c, render_csv.c): Markdown and HTML are two
 * renderings of the same table definitions, CSV a third. The tables are built by the report's
 * sections (section.h), in the registry's order; this file has the table model and the
 * building blocks a section uses (a table, a row, a cell, a footnote).
 *
 * A cell is text, a number with the printf format it is shown with (CSV writes the number with
 * full precision), or unknown (shown "unknown"; an empty CSV field). A table has an id (its CSV
 * file name), a title, a note under the title (definitions, sources), columns, rows, and
 * footnotes. Preformatted blocks (the agent's lines) are tables of one text column with
 * `pre` set.
 *
 * Ownership: rf_tables_build (section.h) fills a set the caller frees with rf_tables_free;
 * every string is owned by it.
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
    int section; /* the index in the section registry (section.h) of the section that built it */
} rf_table;

typedef struct rf_tables {
    rf_table *t;
    int n, cap;
    char *heading; /* "run DIR, DATE" */
    int section;   /* the section now building (rf_table_new stamps its tables with it) */
} rf_tables;

/* Drops the tables without rows or footnotes (a section with nothing measured). */
void rf_tables_drop_empty(rf_tables *ts);
void rf_tables_free(rf_tables *ts);

/* The building blocks of a section's tables. Out of memory, a table, row or footnote is left
 * out (NULL), and a NULL table or cell is ignored by the calls below, so a builder writes
 * straight through and stops at the first NULL row. */
rf_table *rf_table_new(rf_tables *ts, const char *id, const char *title, const char *note,
                       int n_cols, const char *const *cols);
/* A new row of unknown cells; returns its first cell (NULL when out of memory). */
rf_cell *rf_table_row(rf_table *t);
void rf_table_foot(rf_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rf_cell_text(rf_cell *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A number shown with fmt (static); unknown when not finite. */
void rf_cell_num(rf_cell *c, const char *fmt, double v);

/* Figures read back from the summary: the number at o.a(.b), or NaN (null, absent); the string
 * at o.k, or "". */
double rf_sum_num(const json_t *o, const char *a, const char *b);
const char *rf_sum_str(const json_t *o, const char *k);

/* A cell's shown text into buf (cap >= 32): the formatted number, the text, or "unknown". */
const char *rf_cell_str(const rf_cell *c, char *buf, size_t cap);
const rf_table *rf_tables_find(const rf_tables *ts, const char *id);

#endif
