/* render_csv.c: one table as CSV (RFC 4180: a header row, fields quoted when they hold a comma,
 * quote or line break, quotes doubled). Numbers are written with full precision (%.15g: the
 * value, not its rounded display), unknown values as empty fields. */
#include <stdio.h>
#include <string.h>

#include "report/report.h"

static rf_status field(rf_buf *b, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) return rf_buf_append_str(b, s);
    rf_status st = rf_buf_append(b, "\"", 1);
    for (const char *p = s; !st && *p; p++)
        st = *p == '"' ? rf_buf_append(b, "\"\"", 2) : rf_buf_append(b, p, 1);
    return st ? st : rf_buf_append(b, "\"", 1);
}

rf_status rf_report_csv(const rf_table *t, rf_buf *out) {
    rf_status st = RF_OK;
    for (int c = 0; !st && c < t->n_cols; c++) {
        if (c) st = rf_buf_append(out, ",", 1);
        if (!st) st = field(out, t->cols[c]);
    }
    if (!st) st = rf_buf_append(out, "\r\n", 2);
    for (int r = 0; !st && r < t->n_rows; r++) {
        for (int c = 0; !st && c < t->n_cols; c++) {
            const rf_cell *x = &t->cells[(size_t)r * (size_t)t->n_cols + c];
            if (c) st = rf_buf_append(out, ",", 1);
            if (st) break;
            if (x->kind == RF_CELL_NUM)
                st = rf_buf_printf(out, "%.15g", x->v);
            else if (x->kind == RF_CELL_TEXT)
                st = field(out, x->text ? x->text : "");
        }
        if (!st) st = rf_buf_append(out, "\r\n", 2);
    }
    return st;
}
