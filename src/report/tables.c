/* tables.c: the report's tables from the summary (see tables.h). */
#include "report/tables.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- building blocks */

rf_table *rf_table_new(rf_tables *ts, const char *id, const char *title, const char *note,
                       int n_cols, const char *const *cols) {
    if (ts->n == ts->cap) {
        int cap = ts->cap ? ts->cap * 2 : 16;
        rf_table *t = realloc(ts->t, (size_t)cap * sizeof *t);
        if (!t) return NULL;
        ts->t = t;
        ts->cap = cap;
    }
    rf_table *t = &ts->t[ts->n++];
    memset(t, 0, sizeof *t);
    t->section = ts->section;
    t->id = strdup(id);
    t->title = strdup(title);
    t->note = note ? strdup(note) : NULL;
    t->n_cols = n_cols;
    t->cols = calloc((size_t)n_cols, sizeof *t->cols);
    for (int i = 0; t->cols && i < n_cols; i++) t->cols[i] = strdup(cols[i]);
    return t;
}

rf_cell *rf_table_row(rf_table *t) {
    if (!t) return NULL;
    if (t->n_rows == t->cap_rows) {
        int cap = t->cap_rows ? t->cap_rows * 2 : 8;
        rf_cell *c = realloc(t->cells, (size_t)cap * (size_t)t->n_cols * sizeof *c);
        if (!c) return NULL;
        t->cells = c;
        t->cap_rows = cap;
    }
    rf_cell *r = &t->cells[(size_t)t->n_rows++ * (size_t)t->n_cols];
    memset(r, 0, (size_t)t->n_cols * sizeof *r);
    return r;
}

void rf_cell_text(rf_cell *c, const char *fmt, ...) {
    if (!c) return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    free(c->text);
    c->text = s;
    c->kind = s ? RF_CELL_TEXT : RF_CELL_UNKNOWN;
}

void rf_cell_num(rf_cell *c, const char *fmt, double v) {
    if (!c) return;
    if (!isfinite(v)) {
        c->kind = RF_CELL_UNKNOWN;
        return;
    }
    c->kind = RF_CELL_NUM;
    c->fmt = fmt;
    c->v = v;
}

double rf_sum_num(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

const char *rf_sum_str(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

void rf_table_foot(rf_table *t, const char *fmt, ...) {
    if (!t) return;
    char **f = realloc(t->foot, (size_t)(t->n_foot + 1) * sizeof *f);
    if (!f) return;
    t->foot = f;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&t->foot[t->n_foot], fmt, ap) >= 0) t->n_foot++;
    va_end(ap);
}

/* ---------------------------------------------------------------- the set */

static void table_free(rf_table *t) {
    for (int r = 0; r < t->n_rows * t->n_cols; r++) free(t->cells[r].text);
    for (int c = 0; c < t->n_cols; c++) free(t->cols[c]);
    for (int f = 0; f < t->n_foot; f++) free(t->foot[f]);
    free(t->cells), free(t->cols), free(t->foot), free(t->id), free(t->title), free(t->note);
}

void rf_tables_drop_empty(rf_tables *ts) {
    int w = 0;
    for (int i = 0; i < ts->n; i++) {
        if (ts->t[i].n_rows || ts->t[i].n_foot)
            ts->t[w++] = ts->t[i];
        else
            table_free(&ts->t[i]);
    }
    ts->n = w;
}

void rf_tables_free(rf_tables *ts) {
    for (int i = 0; i < ts->n; i++) table_free(&ts->t[i]);
    free(ts->t);
    free(ts->heading);
    memset(ts, 0, sizeof *ts);
}

const char *rf_cell_str(const rf_cell *c, char *buf, size_t cap) {
    switch (c->kind) {
    case RF_CELL_NUM:
        snprintf(buf, cap, c->fmt, c->v);
        return buf;
    case RF_CELL_TEXT:
        return c->text ? c->text : "";
    case RF_CELL_UNKNOWN:
        break;
    }
    return "unknown";
}

const rf_table *rf_tables_find(const rf_tables *ts, const char *id) {
    for (int i = 0; i < ts->n; i++)
        if (!strcmp(ts->t[i].id, id)) return &ts->t[i];
    return NULL;
}
