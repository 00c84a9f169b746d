/* render_html.c: report.html, one self-contained page: inline CSS and SVG, no script, no font
 * or anything else fetched, readable without JavaScript. The charts are drawn from the summary;
 * the tables are the same table definitions the Markdown report renders (tables.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/svg.h"

static const char k_css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;"
    "max-width:1180px;color:#222;padding:0 16px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid "
    "#ddd;padding-bottom:4px}p.note{color:#555;margin:4px 0 8px}"
    "table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}"
    "th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{background:#f4f6f8}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "td.u{color:#999;font-style:italic}pre{background:#f6f8fa;padding:8px;overflow:auto}"
    ".charts{display:flex;flex-wrap:wrap;gap:8px}figure.chart{margin:0;flex:0 1 calc(50% - 4px);"
    "min-width:420px}figure.chart svg{width:100%;height:auto}"
    "svg text{font:12px system-ui,sans-serif;fill:#333}svg .t{font-size:14px;font-weight:600}"
    "svg .g{stroke:#eee}svg .a{stroke:#888}svg .yt{text-anchor:end}svg .xt{text-anchor:middle}"
    "svg .xl{text-anchor:middle}svg .yl{text-anchor:middle}svg .h{stroke:#555;"
    "stroke-dasharray:2 3}svg .hl{font-size:11px;fill:#555}svg .bv{font-size:10px;"
    "text-anchor:middle}svg .none{fill:#999}"
    ".warn{background:#fff4e5;border-left:4px solid #f0a020;padding:6px 10px;margin:6px 0}"
    "td.m0{background:#fbe9e7}td.m1{background:#fff8e1}td.m2{background:#e8f5e9}";

static double at(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

/* ---------------------------------------------------------------- tables */

static rf_status table_html(rf_buf *o, const rf_table *t) {
    rf_status st = rf_buf_printf(o, "<h2 id=\"s-%s\">", t->id);
    if (!st) st = rf_xml_text(o, t->title);
    if (!st) st = rf_buf_append_str(o, "</h2>\n");
    if (!st && t->note) {
        st = rf_buf_append_str(o, "<p class=\"note\">");
        if (!st) st = rf_xml_text(o, t->note);
        if (!st) st = rf_buf_append_str(o, "</p>\n");
    }
    if (!st && t->pre) {
        st = rf_buf_printf(o, "<pre id=\"t-%s\">", t->id);
        for (int r = 0; !st && r < t->n_rows; r++) {
            char buf[64];
            st = rf_xml_text(
                o, rf_cell_str(&t->cells[(size_t)r * (size_t)t->n_cols], buf, sizeof buf));
            if (!st) st = rf_buf_append_str(o, "\n");
        }
        if (!st) st = rf_buf_append_str(o, "</pre>\n");
    } else if (!st && t->n_rows) {
        st = rf_buf_printf(o, "<table id=\"t-%s\"><thead><tr>", t->id);
        for (int c = 0; !st && c < t->n_cols; c++) {
            st = rf_buf_append_str(o, "<th>");
            if (!st) st = rf_xml_text(o, t->cols[c]);
            if (!st) st = rf_buf_append_str(o, "</th>");
        }
        if (!st) st = rf_buf_append_str(o, "</tr></thead><tbody>\n");
        for (int r = 0; !st && r < t->n_rows; r++) {
            st = rf_buf_append_str(o, "<tr>");
            for (int c = 0; !st && c < t->n_cols; c++) {
                const rf_cell *x = &t->cells[(size_t)r * (size_t)t->n_cols + c];
                char buf[64];
                st = rf_buf_append_str(o, x->kind == RF_CELL_NUM       ? "<td class=\"n\">"
                                          : x->kind == RF_CELL_UNKNOWN ? "<td class=\"u\">"
                                                                       : "<td>");
                if (!st) st = rf_xml_text(o, rf_cell_str(x, buf, sizeof buf));
                if (!st) st = rf_buf_append_str(o, "</td>");
            }
            if (!st) st = rf_buf_append_str(o, "</tr>\n");
        }
        if (!st) st = rf_buf_append_str(o, "</tbody></table>\n");
    }
    for (int k = 0; !st && k < t->n_foot; k++) {
        bool warn = strstr(t->foot[k], "client-bound") != NULL;
        st = rf_buf_append_str(o, warn ? "<p class=\"warn\">" : "<p class=\"note\">");
        if (!st) st = rf_xml_text(o, t->foot[k]);
        if (!st) st = rf_buf_append_str(o, "</p>\n");
    }
    return st;
}

/* ---------------------------------------------------------------- charts */

#define MAX_SERIES 48
#define MAX_POINTS 64

typedef struct series_set {
    rf_svg_series s[MAX_SERIES];
    char names[MAX_SERIES][96];
    double x[MAX_SERIES][MAX_POINTS], y[MAX_SERIES][MAX_POINTS];
    int n;
} series_set;

static rf_svg_series *add_series(series_set *ss, const char *name, const char *suffix,
                                 bool dashed) {
    if (ss->n >= MAX_SERIES) return NULL;
    int i = ss->n++;
    snprintf(ss->names[i], sizeof ss->names[i], "%s%s", name, suffix ? suffix : "");
    ss->s[i] = (rf_svg_series){ss->names[i], 0, ss->x[i], ss->y[i], dashed};
    return &ss->s[i];
}

static void add_point(rf_svg_series *s, double x, double y) {
    if (!s || s->n >= MAX_POINTS) return;
    ((double *)s->x)[s->n] = x;
    ((double *)s->y)[s->n] = y;
    s->n++;
}

/* Per backend, over its fixed-concurrency levels: y = key(.q) against the concurrency. */
static void level_series(series_set *ss, const json_t *load, const char *key, const char *q,
                         const char *suffix, bool dashed) {
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)load, name, o) {
        rf_svg_series *s = add_series(ss, name, suffix, dashed);
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(o, "levels"), i, lv) {
            if (strcmp(json_string_value(json_object_get(lv, "mode")), "concurrency")) continue;
            add_point(s, at(lv, "concurrency", NULL), at(lv, key, q));
        }
    }
}

static rf_status charts(rf_buf *o, const json_t *sum) {
    rf_status st = rf_buf_append_str(o, "<h2 id=\"s-charts\">Charts</h2><div class=\"charts\">\n");
    series_set *ss = calloc(1, sizeof *ss);
    if (!ss) return RF_ERR_NOMEM;
    const json_t *load = json_object_get(sum, "load");
    if (!st && json_object_size((json_t *)load)) {
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
        st = rf_svg_line(o, &c);
        const char *qs[3] = {"p50", "p90", "p99"};
        const char *sfx[3] = {" p50", " p90", " p99"};
        for (int m = 0; !st && m < 2; m++) {
            ss->n = 0;
            for (int q = 0; q < 3; q++)
                level_series(ss, load, m ? "tpot_ms" : "ttft_ms", qs[q], sfx[q], q > 0);
            rf_svg_line_chart lc = {m ? "c-tpot" : "c-ttft",
                                    m ? "TPOT p50 / p90 / p99 per level"
                                      : "TTFT p50 / p90 / p99 per level",
                                    "concurrent requests",
                                    m ? "TPOT ms" : "TTFT ms",
                                    ss->s,
                                    ss->n,
                                    NULL,
                                    0,
                                    true,
                                    true};
            st = rf_svg_line(o, &lc);
        }
        /* the Pareto view: what one user gets against what the server delivers */
        ss->n = 0;
        const char *name;
        const json_t *b;
        json_object_foreach((json_t *)load, name, b) {
            rf_svg_series *s = add_series(ss, name, NULL, false);
            size_t i;
            const json_t *lv;
            json_array_foreach(json_object_get(b, "levels"), i, lv)
                add_point(s, at(lv, "output_tok_s", NULL), at(lv, "tok_s_per_user", "p50"));
        }
        rf_svg_line_chart pc = {"c-pareto",
                                "tok/s per user against aggregate tok/s",
                                "output tok/s (aggregate)",
                                "tok/s per user (1 / TPOT, p50)",
                                ss->s,
                                ss->n,
                                NULL,
                                0,
                                false,
                                true};
        if (!st) st = rf_svg_line(o, &pc);
    }
    /* achieved decode against the ceiling */
    const json_t *roof = json_object_get(sum, "roofline");
    if (!st && json_object_size((json_t *)roof)) {
        size_t n = json_object_size((json_t *)roof);
        const char **groups = calloc(n, sizeof *groups);
        double *v = calloc(n * 2, sizeof *v);
        if (groups && v) {
            size_t g = 0;
            const char *name;
            const json_t *r;
            json_object_foreach((json_t *)roof, name, r) {
                groups[g] = name;
                v[g * 2] = at(r, "ceiling_tok_s", NULL);
                v[g * 2 + 1] = at(r, "decode_tok_s", NULL);
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
    }
    /* $/M output tokens per backend and level, per-token prices as lines */
    const json_t *cost = json_object_get(json_object_get(sum, "cost"), "backends");
    if (!st && json_object_size((json_t *)cost)) {
        ss->n = 0;
        rf_svg_hline hl[16];
        char hn[16][96];
        int nh = 0;
        const char *name;
        const json_t *c;
        json_object_foreach((json_t *)cost, name, c) {
            const char *kind = json_string_value(json_object_get(c, "kind"));
            if (kind && !strcmp(kind, "per_token") && nh < 16) {
                snprintf(hn[nh], sizeof hn[nh], "%s (per token)", name);
                hl[nh] = (rf_svg_hline){hn[nh], at(c, "blended_usd_per_m_output", NULL)};
                nh++;
                continue;
            }
            if (!kind || strcmp(kind, "instance")) continue;
            rf_svg_series *s = add_series(ss, name, NULL, false);
            size_t i;
            const json_t *lv;
            json_array_foreach(json_object_get(c, "levels"), i, lv)
                add_point(s, at(lv, "concurrency", NULL), at(lv, "usd_per_m_output", NULL));
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
        if (ss->n || nh) st = rf_svg_line(o, &cc);
    }
    /* accuracy per category */
    const json_t *acc = json_object_get(sum, "accuracy");
    if (!st && json_object_size((json_t *)acc)) {
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
        if (bars && v) {
            size_t b = 0;
            json_object_foreach((json_t *)acc, name, a) {
                bars[b] = name;
                for (int k = 0; k < nc; k++) {
                    const json_t *x = json_object_get(json_object_get(a, "by_category"), cats[k]);
                    double tot = at(x, "total", NULL);
                    v[(size_t)k * nb + b] = tot > 0 ? 100 * at(x, "correct", NULL) / tot : NAN;
                }
                b++;
            }
            rf_svg_bar_chart bc = {"c-accuracy", "Accuracy per category",
                                   "% correct",  cats,
                                   nc,           bars,
                                   (int)nb,      v,
                                   "%.0f",       100};
            st = rf_svg_bars(o, &bc);
        }
        free(bars);
        free(v);
    }
    /* A/B/A */
    const json_t *aba = json_object_get(sum, "aba");
    if (!st && aba && json_object_get(aba, "decode_tok_s")) {
        const char *groups[2] = {"decode tok/s", "top-level output tok/s"};
        const char *keys[2] = {"decode_tok_s", "output_tok_s_top_level"};
        double v[6];
        int ng = 0;
        for (int k = 0; k < 2; k++) {
            const json_t *m = json_object_get(aba, keys[k]);
            if (!m) continue;
            groups[ng] = groups[k];
            v[ng * 3] = at(m, "a1", NULL);
            v[ng * 3 + 1] = at(m, "b", NULL);
            v[ng * 3 + 2] = at(m, "a2", NULL);
            ng++;
        }
        static const char *bars[3] = {"A", "B", "A again"};
        rf_svg_bar_chart bc = {"c-aba", "A/B/A: the difference against the A-to-A drift",
                               "tok/s", groups,
                               ng,      bars,
                               3,       v,
                               "%.1f",  0};
        st = rf_svg_bars(o, &bc);
    }
    /* precision: decode against bytes per token, with the roofline ceiling */
    const json_t *prec = json_object_get(sum, "precision");
    if (!st && json_array_size(json_object_get(prec, "rows"))) {
        ss->n = 0;
        double bw = at(prec, "bandwidth_gbs", NULL), lo = INFINITY, hi = 0;
        size_t i;
        const json_t *row;
        json_array_foreach(json_object_get(prec, "rows"), i, row) {
            double mb = at(row, "bytes_per_token", NULL) / 1e6;
            bool wide = json_is_true(json_object_get(row, "widened"));
            char nm[96];
            snprintf(nm, sizeof nm, "%s%s", json_string_value(json_object_get(row, "variant")),
                     wide ? " (widened: same bytes, off the line)" : "");
            add_point(add_series(ss, nm, NULL, false), mb, at(row, "decode_tok_s", NULL));
            if (isfinite(mb)) lo = mb < lo ? mb : lo, hi = mb > hi ? mb : hi;
        }
        if (isfinite(bw) && hi > 0) {
            rf_svg_series *c = add_series(ss, "ceiling: bandwidth / bytes per token", NULL, true);
            for (int k = 0; k <= 24; k++) {
                double mb = 0.8 * lo + (1.2 * hi - 0.8 * lo) * k / 24;
                add_point(c, mb, bw * 1e3 / mb);
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
        st = rf_svg_line(o, &pc);
    }
    free(ss);
    return st ? st : rf_buf_append_str(o, "</div>\n");
}

/* The agreement pairs as a matrix: identical replies of every pair, shaded by the share. */
static rf_status agreement_matrix(rf_buf *o, const json_t *sum) {
    const json_t *pairs = json_object_get(sum, "agreement");
    const json_t *acc = json_object_get(sum, "accuracy");
    if (json_object_size((json_t *)acc) < 2) return RF_OK;
    rf_status st = rf_buf_append_str(
        o, "<h2 id=\"s-agreement-matrix\">Agreement matrix</h2><p class=\"note\">Replies "
           "identical character for character, of the questions both answered.</p>"
           "<table id=\"t-agreement-matrix\"><thead><tr><th></th>");
    const char *na, *nb;
    const json_t *x, *y;
    json_object_foreach((json_t *)acc, nb, y) {
        if (st) break;
        st = rf_buf_append_str(o, "<th>");
        if (!st) st = rf_xml_text(o, nb);
        if (!st) st = rf_buf_append_str(o, "</th>");
    }
    if (!st) st = rf_buf_append_str(o, "</tr></thead><tbody>");
    json_object_foreach((json_t *)acc, na, x) {
        if (st) break;
        st = rf_buf_append_str(o, "<tr><th>");
        if (!st) st = rf_xml_text(o, na);
        if (!st) st = rf_buf_append_str(o, "</th>");
        json_object_foreach((json_t *)acc, nb, y) {
            if (st) break;
            if (!strcmp(na, nb)) {
                st = rf_buf_append_str(o, "<td class=\"u\">-</td>");
                continue;
            }
            const json_t *p = NULL;
            size_t i;
            const json_t *q;
            json_array_foreach((json_t *)pairs, i, q) {
                const char *a = json_string_value(json_object_get(q, "a"));
                const char *b = json_string_value(json_object_get(q, "b"));
                if (a && b &&
                    ((!strcmp(a, na) && !strcmp(b, nb)) || (!strcmp(a, nb) && !strcmp(b, na))))
                    p = q;
            }
            double same = at(p, "identical", NULL), tot = at(p, "total", NULL);
            if (!p || !(tot > 0)) {
                st = rf_buf_append_str(o, "<td class=\"u\">unknown</td>");
                continue;
            }
            double share = same / tot;
            st = rf_buf_printf(o, "<td class=\"n m%d\">%d/%d</td>",
                               share < 0.5   ? 0
                               : share < 0.9 ? 1
                                             : 2,
                               (int)same, (int)tot);
        }
        if (!st) st = rf_buf_append_str(o, "</tr>");
    }
    return st ? st : rf_buf_append_str(o, "</tbody></table>\n");
}

rf_status rf_report_html(const json_t *sum, const rf_tables *ts, rf_buf *o) {
    rf_status st = rf_buf_printf(o,
                                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                                 "<meta name=\"viewport\" content=\"width=device-width\">"
                                 "<title>roofline report</title><style>%s</style></head><body>\n"
                                 "<h1>roofline report</h1><p class=\"note\">",
                                 k_css);
    if (!st) st = rf_xml_text(o, ts->heading);
    if (!st) st = rf_buf_append_str(o, "</p>\n");
    size_t i;
    const json_t *n;
    json_array_foreach(json_object_get(sum, "notes"), i, n) {
        if (st) break;
        st = rf_buf_append_str(o, "<p class=\"warn\">");
        if (!st) st = rf_xml_text(o, json_string_value(n));
        if (!st) st = rf_buf_append_str(o, "</p>\n");
    }
    if (!st) st = charts(o, sum);
    for (int t = 0; !st && t < ts->n; t++) st = table_html(o, &ts->t[t]);
    if (!st) st = agreement_matrix(o, sum);
    if (!st) st = rf_buf_append_str(o, "</body></html>\n");
    return st;
}
