/* section_cost.c: the report's "Cost" section: each backend's price, $/month and $/M output
 * tokens single-stream, the cost per load level, the break-even against per-token prices, and a
 * chart of $/M output tokens against concurrency. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/section.h"
#include "report/series.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *cost = json_object_get(sum, "cost");
    const json_t *per = json_object_get(cost, "backends");
    if (!json_object_size((json_t *)per)) return;
    static const char *cols[] = {
        "backend", "price", "24x7 $/month", "1 stream tok/s", "$/M out (1 stream)", "source"};
    char note[256];
    snprintf(note, sizeof note,
             "$/M output tokens = ($/hour) / (output tok/s x 3600) x 1e6 (1 stream: n/E2E tok/s, "
             "median of the speed runs); $/month = $/hour x 730; per-token prices blended at %g "
             "input tokens per output token.",
             rf_sum_num(cost, "ratio", NULL));
    rf_table *t = rf_table_new(ts, s->id, s->title, note, 6, cols);
    static const char *lcols[] = {"backend", "level", "output tok/s", "$/M out"};
    rf_table *tl =
        rf_table_new(ts, "cost_levels", "Cost per load level",
                     "$/M output tokens at each level's aggregate output tok/s.", 4, lcols);
    static const char *bcols[] = {"instance", "per-token backend", "blended $/M out",
                                  "break-even output tok/s (24x7)"};
    rf_table *tb =
        rf_table_new(ts, "break_even", "Break-even against per-token prices",
                     "The sustained output rate at which the instance's 24x7 month costs "
                     "what the per-token backend would bill: $/month / (blended $/M x "
                     "1e-6) / (730 x 3600).",
                     4, bcols);
    const char *name;
    const json_t *c;
    json_object_foreach((json_t *)per, name, c) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        const char *kind = rf_sum_str(c, "kind");
        if (!strcmp(kind, "instance")) {
            rf_cell_text(&r[1], "$%.4f/hour%s", rf_sum_num(c, "usd_per_hour", NULL),
                         json_is_true(json_object_get(c, "assumption")) ? " (assumed)" : "");
            rf_cell_num(&r[2], "%.0f", rf_sum_num(c, "usd_per_month", NULL));
            rf_cell_num(&r[3], "%.1f", rf_sum_num(c, "single_stream", "tok_s"));
            rf_cell_num(&r[4], "%.2f", rf_sum_num(c, "single_stream", "usd_per_m_output"));
        } else if (!strcmp(kind, "per_token")) {
            rf_cell_text(&r[1], "$%.3f/M in, $%.3f/M out", rf_sum_num(c, "usd_per_m_input", NULL),
                         rf_sum_num(c, "usd_per_m_output", NULL));
            rf_cell_text(&r[2], "$0 idle");
            rf_cell_text(&r[3], "-");
            rf_cell_num(&r[4], "%.3f", rf_sum_num(c, "blended_usd_per_m_output", NULL));
        }
        rf_cell_text(&r[5], "%s", rf_sum_str(c, "source"));
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(c, "levels"), i, lv) {
            rf_cell *x = rf_table_row(tl);
            if (!x) return;
            rf_cell_text(&x[0], "%s", name);
            if (json_object_get(lv, "rate"))
                rf_cell_text(&x[1], "%.2f req/s", rf_sum_num(lv, "rate", NULL));
            else
                rf_cell_text(&x[1], "c=%d", (int)rf_sum_num(lv, "concurrency", NULL));
            rf_cell_num(&x[2], "%.1f", rf_sum_num(lv, "tok_s", NULL));
            rf_cell_num(&x[3], "%.3f", rf_sum_num(lv, "usd_per_m_output", NULL));
        }
        json_array_foreach(json_object_get(c, "break_even"), i, lv) {
            rf_cell *x = rf_table_row(tb);
            if (!x) return;
            rf_cell_text(&x[0], "%s", name);
            rf_cell_text(&x[1], "%s", rf_sum_str(lv, "against"));
            rf_cell_num(&x[2], "%.3f", rf_sum_num(lv, "blended_usd_per_m_output", NULL));
            rf_cell_num(&x[3], "%.1f", rf_sum_num(lv, "break_even_tok_s", NULL));
        }
    }
}

/* $/M output tokens per backend and level, per-token prices as horizontal lines. */
static rf_status charts(rf_buf *o, const json_t *sum) {
    const json_t *cost = json_object_get(json_object_get(sum, "cost"), "backends");
    if (!json_object_size((json_t *)cost)) return RF_OK;
    rf_series_set *ss = calloc(1, sizeof *ss);
    if (!ss) return RF_ERR_NOMEM;
    rf_svg_hline hl[16];
    char hn[16][96];
    int nh = 0;
    const char *name;
    const json_t *c;
    json_object_foreach((json_t *)cost, name, c) {
        const char *kind = json_string_value(json_object_get(c, "kind"));
        if (kind && !strcmp(kind, "per_token") && nh < 16) {
            snprintf(hn[nh], sizeof hn[nh], "%s (per token)", name);
            hl[nh] = (rf_svg_hline){hn[nh], rf_sum_num(c, "blended_usd_per_m_output", NULL)};
            nh++;
            continue;
        }
        if (!kind || strcmp(kind, "instance")) continue;
        rf_svg_series *s = rf_series_add(ss, name, NULL, false);
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(c, "levels"), i, lv) rf_series_point(
            s, rf_sum_num(lv, "concurrency", NULL), rf_sum_num(lv, "usd_per_m_output", NULL));
    }
    rf_svg_line_chart cc = {"c-cost",
                            "$ per million output tokens",
                            "concurrent requests",
                            "$/M output tokens",
                            ss->s,
                            ss->n,
                            hl,
                            nh,
                            true,
                            true};
    rf_status st = ss->n || nh ? rf_svg_line(o, &cc) : RF_OK;
    free(ss);
    return st;
}

const rf_report_section rf_section_cost = {
    .id = "cost", .title = "Cost", .tables = tables, .charts = charts, .chart_rank = 3};
