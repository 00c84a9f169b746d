/* section_aba.c: the report's "A/B/A" section: A, B and A again with the difference B - A
 * judged against the A-to-A drift, as a table and a bar chart. */
#include <stdio.h>

#include "report/section.h"
#include "report/svg.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *sec = json_object_get(sum, "aba");
    if (!sec) return;
    char title[200];
    snprintf(title, sizeof title, "%s: %s, %s, %s", s->title, rf_sum_str(sec, "a"),
             rf_sum_str(sec, "b"), rf_sum_str(sec, "a"));
    static const char *cols[] = {"metric",    "A",     "B",       "A again",      "A drift",
                                 "A drift %", "B - A", "B - A %", "exceeds drift"};
    rf_table *t = rf_table_new(
        ts, s->id, title, "A difference counts only when it exceeds the A-to-A drift.", 9, cols);
    if (json_object_get(sec, "error")) {
        rf_table_foot(t, "%s", rf_sum_str(sec, "error"));
        return;
    }
    const char *keys[] = {"decode_tok_s", "output_tok_s_top_level"};
    for (int k = 0; k < 2; k++) {
        const json_t *o = json_object_get(sec, keys[k]);
        if (!o) continue;
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", keys[k]);
        rf_cell_num(&r[1], "%.2f", rf_sum_num(o, "a1", NULL));
        rf_cell_num(&r[2], "%.2f", rf_sum_num(o, "b", NULL));
        rf_cell_num(&r[3], "%.2f", rf_sum_num(o, "a2", NULL));
        rf_cell_num(&r[4], "%.2f", rf_sum_num(o, "a_drift", NULL));
        rf_cell_num(&r[5], "%.1f", rf_sum_num(o, "a_drift_pct", NULL));
        rf_cell_num(&r[6], "%+.2f", rf_sum_num(o, "b_minus_a", NULL));
        rf_cell_num(&r[7], "%+.1f", rf_sum_num(o, "b_minus_a_pct", NULL));
        rf_cell_text(&r[8], "%s",
                     json_is_true(json_object_get(o, "difference_exceeds_drift")) ? "yes" : "no");
    }
}

/* A, B and A again, for decode tok/s and the top level's output tok/s. */
static rf_status charts(rf_buf *o, const json_t *sum) {
    const json_t *aba = json_object_get(sum, "aba");
    if (!aba || !json_object_get(aba, "decode_tok_s")) return RF_OK;
    const char *groups[2] = {"decode tok/s", "top-level output tok/s"};
    const char *keys[2] = {"decode_tok_s", "output_tok_s_top_level"};
    double v[6];
    int ng = 0;
    for (int k = 0; k < 2; k++) {
        const json_t *m = json_object_get(aba, keys[k]);
        if (!m) continue;
        groups[ng] = groups[k];
        v[ng * 3] = rf_sum_num(m, "a1", NULL);
        v[ng * 3 + 1] = rf_sum_num(m, "b", NULL);
        v[ng * 3 + 2] = rf_sum_num(m, "a2", NULL);
        ng++;
    }
    static const char *bars[3] = {"A", "B", "A again"};
    rf_svg_bar_chart bc = {"c-aba", "A/B/A: the difference against the A-to-A drift",
                           "tok/s", groups,
                           ng,      bars,
                           3,       v,
                           "%.1f",  0};
    return rf_svg_bars(o, &bc);
}

const rf_report_section rf_section_aba = {
    .id = "aba", .title = "A/B/A", .tables = tables, .charts = charts, .chart_rank = 5};
