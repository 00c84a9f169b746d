/* section_roofline.c: the report's "Roofline" section: each backend's ceiling tok/s (memory
 * bandwidth / bytes read per decoded token) against its measured decode tok/s, as a table and a
 * bar chart. */
#include <stdlib.h>

#include "report/section.h"
#include "report/svg.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *roof = json_object_get(sum, "roofline");
    if (!json_object_size((json_t *)roof)) return;
    static const char *cols[] = {"backend",        "bandwidth GB/s", "bytes/token MB",
                                 "ceiling tok/s",  "decode tok/s",   "efficiency %",
                                 "bandwidth from", "bytes from"};
    rf_table *t = rf_table_new(ts, s->id, s->title,
                               "Ceiling tok/s = memory bandwidth / bytes read per decoded token "
                               "(weights read in full, one embedding row, the KV cache at the "
                               "context); efficiency = measured single-stream decode tok/s / "
                               "ceiling. GB and MB are 1e9 and 1e6 bytes.",
                               8, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)roof, name, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        rf_cell_num(&r[1], "%.2f", rf_sum_num(o, "bandwidth_gbs", NULL));
        rf_cell_num(&r[2], "%.1f", rf_sum_num(o, "bytes_per_token", NULL) / 1e6);
        rf_cell_num(&r[3], "%.1f", rf_sum_num(o, "ceiling_tok_s", NULL));
        rf_cell_num(&r[4], "%.1f", rf_sum_num(o, "decode_tok_s", NULL));
        rf_cell_num(&r[5], "%.1f", 100 * rf_sum_num(o, "efficiency", NULL));
        rf_cell_text(&r[6], "%s", rf_sum_str(o, "bandwidth_source"));
        rf_cell_text(&r[7], "%s", rf_sum_str(o, "bytes_per_token_source"));
        if (rf_sum_num(o, "efficiency", NULL) > 1)
            rf_table_foot(
                t,
                "%s: the measured decode rate is above the ceiling: the bandwidth or the bytes "
                "per token are wrong for it, or its tokens are not all read from memory "
                "(speculative decoding, a cache, batching inside the server).",
                name);
    }
}

/* Achieved decode against the ceiling. */
static rf_status charts(rf_buf *o, const json_t *sum) {
    const json_t *roof = json_object_get(sum, "roofline");
    if (!json_object_size((json_t *)roof)) return RF_OK;
    size_t n = json_object_size((json_t *)roof);
    const char **groups = calloc(n, sizeof *groups);
    double *v = calloc(n * 2, sizeof *v);
    rf_status st = RF_OK;
    if (groups && v) {
        size_t g = 0;
        const char *name;
        const json_t *r;
        json_object_foreach((json_t *)roof, name, r) {
            groups[g] = name;
            v[g * 2] = rf_sum_num(r, "ceiling_tok_s", NULL);
            v[g * 2 + 1] = rf_sum_num(r, "decode_tok_s", NULL);
            g++;
        }
        static const char *bars[2] = {"ceiling", "measured decode"};
        rf_svg_bar_chart bc = {"c-roofline",
                               "Decode tok/s against the ceiling (bandwidth / bytes per token)",
                               "tok/s",
                               groups,
                               (int)n,
                               bars,
                               2,
                               v,
                               "%.1f",
                               0};
        st = rf_svg_bars(o, &bc);
    }
    free(groups);
    free(v);
    return st;
}

const rf_report_section rf_section_roofline = {
    .id = "roofline", .title = "Roofline", .tables = tables, .charts = charts, .chart_rank = 2};
