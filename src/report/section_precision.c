/* section_precision.c: the report's precision study section (precision.h computes it): one row
 * per variant of one model, the as-shipped file first, and a chart of decode tok/s against the
 * bytes read per token with the roofline ceiling. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/section.h"
#include "report/series.h"

/* The precision study (report/precision.h): one row per variant, the as-shipped file first. */
static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *sec = json_object_get(sum, "precision");
    if (!sec) return;
    static const char *cols[] = {"variant",         "file MB",           "bytes/token MB",
                                 "decode tok/s",    "ceiling tok/s",     "efficiency %",
                                 "eff. vs shipped", "decode vs shipped", "tok/s at top level",
                                 "accuracy",        "same answers",      "agent",
                                 "KV tokens"};
    rf_table *t = rf_table_new(
        ts, s->id, s->title,
        "Run A B1 A B2 ... A: each variant between two turns of the as-shipped file (A). A "
        "variant is faster or slower only when its difference from A exceeds A's drift across "
        "those two turns; otherwise \"within drift\". Ceiling = measured bandwidth / bytes "
        "read per token; efficiency = decode / ceiling (A: the mean over its turns). The widened "
        "variant reads the as-shipped file's bytes but decodes every weight to floats per call. "
        "MB = 1e6 bytes.",
        13, cols);
    if (json_object_get(sec, "error")) {
        rf_table_foot(t, "%s", rf_sum_str(sec, "error"));
        return;
    }
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(sec, "rows"), i, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s%s", rf_sum_str(o, "variant"),
                     json_is_true(json_object_get(o, "widened")) ? " (widened matmuls)" : "");
        rf_cell_num(&r[1], "%.1f", rf_sum_num(o, "file_bytes", NULL) / 1e6);
        rf_cell_num(&r[2], "%.1f", rf_sum_num(o, "bytes_per_token", NULL) / 1e6);
        rf_cell_num(&r[3], "%.2f", rf_sum_num(o, "decode_tok_s", NULL));
        rf_cell_num(&r[4], "%.1f", rf_sum_num(o, "ceiling_tok_s", NULL));
        rf_cell_num(&r[5], "%.1f", 100 * rf_sum_num(o, "efficiency", NULL));
        rf_cell_num(&r[6], "%.2f", rf_sum_num(o, "efficiency_vs_shipped", NULL));
        const json_t *dv = json_object_get(o, "decode_vs_shipped");
        if (dv)
            rf_cell_text(&r[7], "%+.1f%% (drift %.1f%%): %s", rf_sum_num(dv, "b_minus_a_pct", NULL),
                         rf_sum_num(dv, "a_drift_pct", NULL), rf_sum_str(dv, "verdict"));
        else
            rf_cell_text(&r[7], "A");
        const json_t *lv = json_object_get(o, "output_tok_s_top_vs_shipped");
        if (lv && isfinite(rf_sum_num(o, "output_tok_s_top", NULL)))
            rf_cell_text(&r[8], "%.1f at %d (%s)", rf_sum_num(o, "output_tok_s_top", NULL),
                         (int)rf_sum_num(o, "top_level", NULL), rf_sum_str(lv, "verdict"));
        else if (isfinite(rf_sum_num(o, "output_tok_s_top", NULL)))
            rf_cell_text(&r[8], "%.1f at %d", rf_sum_num(o, "output_tok_s_top", NULL),
                         (int)rf_sum_num(o, "top_level", NULL));
        char cats[256] = "";
        size_t w = 0;
        const char *cat;
        const json_t *c;
        json_object_foreach(json_object_get(o, "accuracy_by_category"), cat, c) if (w < sizeof cats)
            w += (size_t)snprintf(cats + w, sizeof cats - w, "%s%s %d/%d", w ? "; " : "", cat,
                                  (int)rf_sum_num(c, "correct", NULL),
                                  (int)rf_sum_num(c, "total", NULL));
        if (isfinite(rf_sum_num(o, "accuracy_total", NULL)))
            rf_cell_text(&r[9], "%d/%d (%s)", (int)rf_sum_num(o, "accuracy_correct", NULL),
                         (int)rf_sum_num(o, "accuracy_total", NULL), cats);
        if (isfinite(rf_sum_num(o, "identical_of", NULL)))
            rf_cell_text(&r[10], "%d/%d", (int)rf_sum_num(o, "identical_to_shipped", NULL),
                         (int)rf_sum_num(o, "identical_of", NULL));
        else if (!dv)
            rf_cell_text(&r[10], "-");
        if (isfinite(rf_sum_num(o, "agent_runs", NULL)))
            rf_cell_text(&r[11], "%d/%d", (int)rf_sum_num(o, "agent_ok", NULL),
                         (int)rf_sum_num(o, "agent_runs", NULL));
        rf_cell_num(&r[12], "%.0f", rf_sum_num(o, "kv_tokens", NULL));
    }
    const json_t *tr = json_object_get(sec, "tracking");
    if (isfinite(rf_sum_num(tr, "worst_efficiency_deviation", NULL)))
        rf_table_foot(
            t,
            "native variants: efficiency within %.0f%% of the as-shipped file's: %s (worst %.1f%%)",
            100 * rf_sum_num(tr, "tolerance", NULL),
            json_is_true(json_object_get(tr, "native_track_bytes_per_token")) ? "yes" : "no",
            100 * rf_sum_num(tr, "worst_efficiency_deviation", NULL));
    if (isfinite(rf_sum_num(tr, "widened_over_shipped_decode", NULL)))
        rf_table_foot(
            t,
            "widened matmuls: %.2fx the as-shipped decode tok/s on the same file (same bytes "
            "read; the decode of every weight per call is the difference)",
            rf_sum_num(tr, "widened_over_shipped_decode", NULL));
    size_t k;
    const json_t *turn;
    json_array_foreach(json_object_get(sec, "shipped_turns"), k, turn) {
        char top[64] = "";
        if (isfinite(rf_sum_num(turn, "output_tok_s_top", NULL)))
            snprintf(top, sizeof top, ", top level %.1f tok/s",
                     rf_sum_num(turn, "output_tok_s_top", NULL));
        rf_table_foot(t, "A turn %zu: decode %.2f tok/s%s", k + 1,
                      rf_sum_num(turn, "decode_tok_s", NULL), top);
    }
}

/* Decode tok/s against bytes read per token, with the roofline ceiling as a dashed curve. */
static rf_status charts(rf_buf *o, const json_t *sum) {
    const json_t *prec = json_object_get(sum, "precision");
    if (!json_array_size(json_object_get(prec, "rows"))) return RF_OK;
    rf_series_set *ss = calloc(1, sizeof *ss);
    if (!ss) return RF_ERR_NOMEM;
    double bw = rf_sum_num(prec, "bandwidth_gbs", NULL), lo = INFINITY, hi = 0;
    size_t i;
    const json_t *row;
    json_array_foreach(json_object_get(prec, "rows"), i, row) {
        double mb = rf_sum_num(row, "bytes_per_token", NULL) / 1e6;
        bool wide = json_is_true(json_object_get(row, "widened"));
        char nm[96];
        snprintf(nm, sizeof nm, "%s%s", json_string_value(json_object_get(row, "variant")),
                 wide ? " (widened: same bytes, off the line)" : "");
        rf_series_point(rf_series_add(ss, nm, NULL, false), mb,
                        rf_sum_num(row, "decode_tok_s", NULL));
        if (isfinite(mb)) lo = mb < lo ? mb : lo, hi = mb > hi ? mb : hi;
    }
    if (isfinite(bw) && hi > 0) {
        rf_svg_series *c = rf_series_add(ss, "ceiling: bandwidth / bytes per token", NULL, true);
        for (int k = 0; k <= 24; k++) {
            double mb = 0.8 * lo + (1.2 * hi - 0.8 * lo) * k / 24;
            rf_series_point(c, mb, bw * 1e3 / mb);
        }
    }
    rf_svg_line_chart pc = {"c-precision",
                            "Precision: decode tok/s against bytes read per token",
                            "MB read per decoded token",
                            "decode tok/s",
                            ss->s,
                            ss->n,
                            NULL,
                            0,
                            false,
                            true};
    rf_status st = rf_svg_line(o, &pc);
    free(ss);
    return st;
}

const rf_report_section rf_section_precision = {.id = "precision",
                                                .title = "Precision: one model, its variants",
                                                .tables = tables,
                                                .charts = charts,
                                                .chart_rank = 6};
