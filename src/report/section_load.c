/* section_load.c: the report's "Load" section: per backend and load level the throughput,
 * TTFT, TPOT, per-user tok/s, token gaps, queue latency and schedule lag, and goodput under the
 * SLOs; charts of throughput, TTFT and TPOT against concurrency and the per-user/aggregate
 * Pareto view. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/section.h"
#include "report/series.h"

static const char *level_name(const json_t *lv, char *buf, size_t cap) {
    if (!strcmp(rf_sum_str(lv, "mode"), "rate"))
        snprintf(buf, cap, "%.2f req/s", rf_sum_num(lv, "rate", NULL));
    else
        snprintf(buf, cap, "c=%d", (int)rf_sum_num(lv, "concurrency", NULL));
    return buf;
}

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *sec = json_object_get(sum, "load");
    if (!sec) return;
    const json_t *slo = json_object_get(sum, "slo");
    static const char *cols[] = {
        "backend",       "level",  "ok",           "errors",     "output tok/s",  "req/s",
        "TTFT p50",      "p90",    "p99 ms",       "TPOT p50",   "p99 ms",        "tok/s/user p50",
        "token gap p50", "p99 ms", "queue p99 ms", "lag p99 ms", "goodput req/s", "good %"};
    int nc = slo ? 18 : 16;
    rf_table *t = rf_table_new(ts, s->id, s->title,
                               "TPOT = (E2E - TTFT) / (tokens - 1) (vLLM); tok/s/user = 1 / TPOT; "
                               "per-token gap = gap between content events / tokens in the later "
                               "one; queue latency = intended send to last content; lag = actual - "
                               "intended send.",
                               nc, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(o, "levels"), i, lv) {
            rf_cell *r = rf_table_row(t);
            if (!r) return;
            char level[48];
            bool bound = json_is_true(json_object_get(json_object_get(lv, "client"), "bound"));
            rf_cell_text(&r[0], "%s", name);
            rf_cell_text(&r[1], "%s%s", level_name(lv, level, sizeof level),
                         bound ? " (client-bound)" : "");
            rf_cell_text(&r[2], "%d", (int)rf_sum_num(lv, "ok", NULL));
            double rs = rf_sum_num(lv, "resends", NULL),
                   rt = rf_sum_num(lv, "retries", NULL); /* NaN: absent */
            int resent = rs > 0 ? (int)rs : 0, retried = rt > 0 ? (int)rt : 0;
            if (resent > 0 && retried > 0)
                rf_cell_text(&r[3], "%d (+%d resent, +%d retried)",
                             (int)rf_sum_num(lv, "errors", NULL), resent, retried);
            else if (resent > 0)
                rf_cell_text(&r[3], "%d (+%d resent)", (int)rf_sum_num(lv, "errors", NULL), resent);
            else if (retried > 0)
                rf_cell_text(&r[3], "%d (+%d retried)", (int)rf_sum_num(lv, "errors", NULL),
                             retried);
            else
                rf_cell_text(&r[3], "%d", (int)rf_sum_num(lv, "errors", NULL));
            rf_cell_num(&r[4], "%.1f", rf_sum_num(lv, "output_tok_s", NULL));
            rf_cell_num(&r[5], "%.2f", rf_sum_num(lv, "request_rate", NULL));
            rf_cell_num(&r[6], "%.1f", rf_sum_num(lv, "ttft_ms", "p50"));
            rf_cell_num(&r[7], "%.1f", rf_sum_num(lv, "ttft_ms", "p90"));
            rf_cell_num(&r[8], "%.1f", rf_sum_num(lv, "ttft_ms", "p99"));
            rf_cell_num(&r[9], "%.2f", rf_sum_num(lv, "tpot_ms", "p50"));
            rf_cell_num(&r[10], "%.2f", rf_sum_num(lv, "tpot_ms", "p99"));
            rf_cell_num(&r[11], "%.1f", rf_sum_num(lv, "tok_s_per_user", "p50"));
            rf_cell_num(&r[12], "%.2f", rf_sum_num(lv, "per_token_gap_ms", "p50"));
            rf_cell_num(&r[13], "%.2f", rf_sum_num(lv, "per_token_gap_ms", "p99"));
            rf_cell_num(&r[14], "%.1f", rf_sum_num(lv, "queue_latency_ms", "p99"));
            rf_cell_num(&r[15], "%.2f", rf_sum_num(lv, "schedule_lag_ms", "p99"));
            if (slo) {
                rf_cell_num(&r[16], "%.2f", rf_sum_num(lv, "goodput", "goodput_req_s"));
                rf_cell_num(&r[17], "%.0f", 100 * rf_sum_num(lv, "goodput", "good_fraction"));
            }
            const json_t *c = json_object_get(lv, "client");
            if (bound)
                rf_table_foot(
                    t,
                    "**client-bound**: %s %s: %s; the times at this level measure the bench, "
                    "not the server.",
                    name, level, rf_sum_str(c, "warning"));
        }
        if (slo) {
            double best = rf_sum_num(o, "largest_level_meeting_slo", NULL);
            if (isfinite(best))
                rf_table_foot(t, "%s: the largest level meeting the SLOs is c=%d.", name,
                              (int)best);
            else
                rf_table_foot(t, "%s: no level meets the SLOs.", name);
        }
    }
    if (slo) {
        char sl[160] = "";
        size_t w = 0;
        if (rf_sum_num(slo, "ttft_ms", NULL) > 0)
            w += (size_t)snprintf(sl + w, sizeof sl - w, "TTFT <= %g ms ",
                                  rf_sum_num(slo, "ttft_ms", NULL));
        if (rf_sum_num(slo, "tpot_ms", NULL) > 0)
            w += (size_t)snprintf(sl + w, sizeof sl - w, "TPOT <= %g ms ",
                                  rf_sum_num(slo, "tpot_ms", NULL));
        if (rf_sum_num(slo, "e2e_ms", NULL) > 0)
            snprintf(sl + w, sizeof sl - w, "E2E <= %g ms ", rf_sum_num(slo, "e2e_ms", NULL));
        rf_table_foot(
            t,
            "Goodput (vLLM): requests meeting every SLO (%s) per second of the level; a level "
            "meets the SLOs when at least %.0f%% of its requests do.",
            sl, 100 * rf_sum_num(slo, "attainment", NULL));
    }
}

/* ---------------------------------------------------------------- charts */

/* Per backend, over its fixed-concurrency levels: y = key(.q) against the concurrency. */
static void level_series(rf_series_set *ss, const json_t *load, const char *key, const char *q,
                         const char *suffix, bool dashed) {
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)load, name, o) {
        rf_svg_series *s = rf_series_add(ss, name, suffix, dashed);
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(o, "levels"), i, lv) {
            if (strcmp(json_string_value(json_object_get(lv, "mode")), "concurrency")) continue;
            rf_series_point(s, rf_sum_num(lv, "concurrency", NULL), rf_sum_num(lv, key, q));
        }
    }
}

static rf_status throughput_chart(rf_buf *o, rf_series_set *ss, const json_t *load) {
    ss->n = 0;
    level_series(ss, load, "output_tok_s", NULL, NULL, false);
    rf_svg_line_chart c = {"c-throughput",
                           "Output tok/s against concurrency",
                           "concurrent requests",
                           "output tok/s (aggregate)",
                           ss->s,
                           ss->n,
                           NULL,
                           0,
                           true,
                           true};
    return rf_svg_line(o, &c);
}

/* p50 (solid), p90 and p99 (dashed) of key per level: the TTFT and TPOT charts. */
static rf_status quantiles_chart(rf_buf *o, rf_series_set *ss, const json_t *load, const char *key,
                                 const char *id, const char *title, const char *ylabel) {
    static const char *const qs[3] = {"p50", "p90", "p99"};
    static const char *const sfx[3] = {" p50", " p90", " p99"};
    ss->n = 0;
    for (int q = 0; q < 3; q++) level_series(ss, load, key, qs[q], sfx[q], q > 0);
    rf_svg_line_chart c = {id,   title, "concurrent requests", ylabel, ss->s, ss->n, NULL, 0,
                           true, true};
    return rf_svg_line(o, &c);
}

/* The Pareto view: what one user gets against what the server delivers. */
static rf_status pareto_chart(rf_buf *o, rf_series_set *ss, const json_t *load) {
    ss->n = 0;
    const char *name;
    const json_t *b;
    json_object_foreach((json_t *)load, name, b) {
        rf_svg_series *s = rf_series_add(ss, name, NULL, false);
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(b, "levels"), i, lv) rf_series_point(
            s, rf_sum_num(lv, "output_tok_s", NULL), rf_sum_num(lv, "tok_s_per_user", "p50"));
    }
    rf_svg_line_chart c = {"c-pareto",
                           "tok/s per user against aggregate tok/s",
                           "output tok/s (aggregate)",
                           "tok/s per user (1 / TPOT, p50)",
                           ss->s,
                           ss->n,
                           NULL,
                           0,
                           false,
                           true};
    return rf_svg_line(o, &c);
}

static rf_status charts(rf_buf *o, const json_t *sum) {
    const json_t *load = json_object_get(sum, "load");
    if (!json_object_size((json_t *)load)) return RF_OK;
    rf_series_set *ss = calloc(1, sizeof *ss);
    if (!ss) return RF_ERR_NOMEM;
    rf_status st = throughput_chart(o, ss, load);
    if (!st)
        st = quantiles_chart(o, ss, load, "ttft_ms", "c-ttft", "TTFT p50 / p90 / p99 per level",
                             "TTFT ms");
    if (!st)
        st = quantiles_chart(o, ss, load, "tpot_ms", "c-tpot", "TPOT p50 / p90 / p99 per level",
                             "TPOT ms");
    if (!st) st = pareto_chart(o, ss, load);
    free(ss);
    return st;
}

const rf_report_section rf_section_load = {
    .id = "load", .title = "Load", .tables = tables, .charts = charts, .chart_rank = 1};
