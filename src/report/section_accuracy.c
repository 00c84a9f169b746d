/* section_accuracy.c: the report's "Accuracy" section: questions answered correctly per
 * backend and category, the agreement of the replies pair by pair, and a bar chart of the
 * accuracy per category. (The agreement matrix, at the end of report.html, is its own section:
 * section_agreement_matrix.c.) */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/section.h"
#include "report/svg.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *sec = json_object_get(sum, "accuracy");
    if (!sec) return;
    const json_t *agree = json_object_get(sum, "agreement");
    static const char *cols[] = {"backend", "correct", "categories", "errors"};
    rf_table *t = rf_table_new(ts, s->id, s->title, NULL, 4, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        rf_cell_text(&r[1], "%d/%d", (int)rf_sum_num(o, "correct", NULL),
                     (int)rf_sum_num(o, "total", NULL));
        char cats[512] = "";
        size_t w = 0;
        const char *cat;
        const json_t *c;
        json_object_foreach(json_object_get(o, "by_category"), cat, c) if (w < sizeof cats) w +=
            (size_t)snprintf(cats + w, sizeof cats - w, "%s%s %d/%d", w ? "; " : "", cat,
                             (int)rf_sum_num(c, "correct", NULL),
                             (int)rf_sum_num(c, "total", NULL));
        rf_cell_text(&r[2], "%s", cats);
        rf_cell_text(&r[3], "%d", (int)rf_sum_num(o, "errors", NULL));
    }
    if (!json_array_size(agree)) return;
    static const char *acols[] = {"pair", "identical", "differing items"};
    rf_table *ta = rf_table_new(ts, "agreement", "Reply agreement",
                                "Character-for-character agreement of the replies.", 3, acols);
    size_t i;
    const json_t *a;
    json_array_foreach((json_t *)agree, i, a) {
        rf_cell *r = rf_table_row(ta);
        if (!r) return;
        rf_cell_text(&r[0], "%s vs %s", rf_sum_str(a, "a"), rf_sum_str(a, "b"));
        rf_cell_text(&r[1], "%d/%d", (int)rf_sum_num(a, "identical", NULL),
                     (int)rf_sum_num(a, "total", NULL));
        char ids[1024] = "";
        size_t w = 0, j;
        const json_t *id;
        json_array_foreach(json_object_get(a, "differing"), j, id) if (w < sizeof ids) w +=
            (size_t)snprintf(ids + w, sizeof ids - w, "%s%s", j ? ", " : "", json_string_value(id));
        rf_cell_text(&r[2], "%s", ids);
    }
}

/* Accuracy per category: one group per category, one bar per backend. */
static rf_status charts(rf_buf *o, const json_t *sum) {
    const json_t *acc = json_object_get(sum, "accuracy");
    if (!json_object_size((json_t *)acc)) return RF_OK;
    const char *cats[32];
    int nc = 0;
    const char *name;
    const json_t *a;
    json_object_foreach((json_t *)acc, name, a) {
        const char *cat;
        const json_t *x;
        json_object_foreach(json_object_get(a, "by_category"), cat, x) {
            bool have = false;
            for (int k = 0; k < nc && !have; k++) have = !strcmp(cats[k], cat);
            if (!have && nc < 32) cats[nc++] = cat;
        }
    }
    size_t nb = json_object_size((json_t *)acc);
    const char **bars = calloc(nb, sizeof *bars);
    double *v = calloc((size_t)nc * nb + 1, sizeof *v);
    rf_status st = RF_OK;
    if (bars && v) {
        size_t b = 0;
        json_object_foreach((json_t *)acc, name, a) {
            bars[b] = name;
            for (int k = 0; k < nc; k++) {
                const json_t *x = json_object_get(json_object_get(a, "by_category"), cats[k]);
                double tot = rf_sum_num(x, "total", NULL);
                v[(size_t)k * nb + b] = tot > 0 ? 100 * rf_sum_num(x, "correct", NULL) / tot : NAN;
            }
            b++;
        }
        rf_svg_bar_chart bc = {
            "c-accuracy", "Accuracy per category", "% correct", cats, nc, bars, (int)nb, v, "%.0f",
            100};
        st = rf_svg_bars(o, &bc);
    }
    free(bars);
    free(v);
    return st;
}

const rf_report_section rf_section_accuracy = {
    .id = "accuracy", .title = "Accuracy", .tables = tables, .charts = charts, .chart_rank = 4};
