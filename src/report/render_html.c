/* render_html.c: report.html, one self-contained page: inline CSS and SVG, no script, no font
 * or anything else fetched, readable without JavaScript. The page is the sections' (section.h):
 * a strip of their charts, drawn from the summary, then each section's tables (the same table
 * definitions the Markdown report renders, tables.c) and its own HTML. */
#include <limits.h>
#include <string.h>

#include "report/report.h"
#include "report/section.h"
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

/* ---------------------------------------------------------------- the page */

/* The chart strip: every section's charts, by their chart rank (registry order among equals). */
static rf_status chart_strip(rf_buf *o, const json_t *sum) {
    int n = 0;
    const rf_report_section *const *sec = rf_report_sections(&n);
    rf_status st = rf_buf_append_str(o, "<h2 id=\"s-charts\">Charts</h2><div class=\"charts\">\n");
    int rank = INT_MIN; /* the ranks drawn so far: <= rank */
    while (!st) {
        int next = INT_MAX;
        for (int i = 0; i < n; i++)
            if (sec[i]->charts && sec[i]->chart_rank > rank && sec[i]->chart_rank < next)
                next = sec[i]->chart_rank;
        if (next == INT_MAX) break;
        for (int i = 0; !st && i < n; i++)
            if (sec[i]->charts && sec[i]->chart_rank == next) st = sec[i]->charts(o, sum);
        rank = next;
    }
    return st ? st : rf_buf_append_str(o, "</div>\n");
}

/* Each section in the registry's order: its tables, then its own HTML. */
static rf_status sections(rf_buf *o, const json_t *sum, const rf_tables *ts) {
    int n = 0;
    const rf_report_section *const *sec = rf_report_sections(&n);
    rf_status st = RF_OK;
    for (int i = 0; !st && i < n; i++) {
        for (int t = 0; !st && t < ts->n; t++)
            if (ts->t[t].section == i) st = table_html(o, &ts->t[t]);
        if (!st && sec[i]->html) st = sec[i]->html(sec[i], o, sum);
    }
    return st;
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
    if (!st) st = chart_strip(o, sum);
    if (!st) st = sections(o, sum, ts);
    if (!st) st = rf_buf_append_str(o, "</body></html>\n");
    return st;
}
