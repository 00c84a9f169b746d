/* svg.c: inline SVG charts (see svg.h). */
#include "report/svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/utf8.h"

#define W      620
#define H      330
#define LEFT   66
#define RIGHT  200 /* the legend: names up to about 26 characters */
#define TOP    36
#define BOTTOM 52
#define PLOT_W (W - LEFT - RIGHT)
#define PLOT_H (H - TOP - BOTTOM)

static const char *const k_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                       "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
#define N_COLORS (int)(sizeof k_colors / sizeof k_colors[0])

rf_status rf_xml_text(rf_buf *out, const char *s) {
    size_t len = s ? strlen(s) : 0;
    rf_status st = RF_OK;
    for (size_t i = 0; !st && i < len;) {
        size_t k = rf_utf8_seq(s + i, len - i);
        unsigned char c = (unsigned char)s[i];
        if (!k) {
            st = rf_buf_append(out, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        if (k == 1) {
            switch (c) {
            case '&':
                st = rf_buf_append_str(out, "&amp;");
                break;
            case '<':
                st = rf_buf_append_str(out, "&lt;");
                break;
            case '>':
                st = rf_buf_append_str(out, "&gt;");
                break;
            case '"':
                st = rf_buf_append_str(out, "&quot;");
                break;
            case '\'':
                st = rf_buf_append_str(out, "&#39;");
                break;
            default:
                st = c < 0x20 && c != '\n' && c != '\t' ? rf_buf_append(out, " ", 1)
                                                        : rf_buf_append(out, s + i, 1);
            }
        } else {
            st = rf_buf_append(out, s + i, k);
        }
        i += k;
    }
    return st;
}

/* A round step near span/5: 1, 2 or 5 times a power of ten. */
static double nice_step(double span) {
    if (!(span > 0)) return 1;
    double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void fmt_num(char *b, size_t cap, double v) {
    double a = fabs(v);
    if (a >= 1e6)
        snprintf(b, cap, "%.3gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(b, cap, "%.0fk", v / 1e3);
    else if (a >= 100 || v == floor(v))
        snprintf(b, cap, "%.0f", v);
    else if (a >= 1)
        snprintf(b, cap, "%.2g", v);
    else
        snprintf(b, cap, "%.3g", v);
}

static rf_status head(rf_buf *o, const char *id, const char *title) {
    rf_status st = rf_buf_printf(o, "<figure class=\"chart\" id=\"");
    if (!st) st = rf_xml_text(o, id);
    if (!st)
        st = rf_buf_printf(o,
                           "\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
                           "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"",
                           W, H, W, H);
    if (!st) st = rf_xml_text(o, title);
    if (!st)
        st = rf_buf_printf(o,
                           "\"><rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>"
                           "<text x=\"%d\" y=\"22\" class=\"t\">",
                           W, H, LEFT);
    if (!st) st = rf_xml_text(o, title);
    if (!st) st = rf_buf_append_str(o, "</text>");
    return st;
}

static rf_status axes(rf_buf *o, double y0, double y1, double step, const char *xlabel,
                      const char *ylabel) {
    rf_status st = RF_OK;
    for (double v = y0; !st && v <= y1 + step * 1e-9; v += step) {
        double y = TOP + PLOT_H - (v - y0) / (y1 - y0) * PLOT_H;
        char b[32];
        fmt_num(b, sizeof b, v);
        st = rf_buf_printf(o,
                           "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"g\"/>"
                           "<text x=\"%d\" y=\"%.1f\" class=\"yt\">%s</text>",
                           LEFT, y, LEFT + PLOT_W, y, LEFT - 6, y + 4, b);
    }
    if (!st)
        st = rf_buf_printf(o,
                           "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"a\"/>"
                           "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"a\"/>",
                           LEFT, TOP, LEFT, TOP + PLOT_H, LEFT, TOP + PLOT_H, LEFT + PLOT_W,
                           TOP + PLOT_H);
    if (!st && xlabel) {
        st = rf_buf_printf(o, "<text x=\"%d\" y=\"%d\" class=\"xl\">", LEFT + PLOT_W / 2, H - 10);
        if (!st) st = rf_xml_text(o, xlabel);
        if (!st) st = rf_buf_append_str(o, "</text>");
    }
    if (!st && ylabel) {
        st = rf_buf_printf(o,
                           "<text x=\"14\" y=\"%d\" class=\"yl\" transform=\"rotate(-90 14 %d)\">",
                           TOP + PLOT_H / 2, TOP + PLOT_H / 2);
        if (!st) st = rf_xml_text(o, ylabel);
        if (!st) st = rf_buf_append_str(o, "</text>");
    }
    return st;
}

/* Legend row `row` in the colour of series/bar i. */
static rf_status legend(rf_buf *o, int row, int i, const char *name, bool dashed) {
    int y = TOP + 6 + row * 18;
    rf_status st = rf_buf_printf(
        o,
        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"%s/>"
        "<text x=\"%d\" y=\"%d\" class=\"lg\">",
        W - RIGHT + 14, y, W - RIGHT + 34, y, k_colors[i % N_COLORS],
        dashed ? " stroke-dasharray=\"6 4\"" : "", W - RIGHT + 40, y + 4);
    if (!st) st = rf_xml_text(o, name);
    return st ? st : rf_buf_append_str(o, "</text>");
}

rf_status rf_svg_line(rf_buf *o, const rf_svg_line_chart *c) {
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int s = 0; s < c->n_series; s++)
        for (int i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i], y = c->series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (c->log2_x && x <= 0)) continue;
            double lx = c->log2_x ? log2(x) : x;
            if (lx < xmin) xmin = lx;
            if (lx > xmax) xmax = lx;
            if (y < ymin) ymin = y;
            if (y > ymax) ymax = y;
        }
    for (int h = 0; h < c->n_hlines; h++)
        if (isfinite(c->hlines[h].y)) {
            if (c->hlines[h].y > ymax) ymax = c->hlines[h].y;
            if (c->hlines[h].y < ymin) ymin = c->hlines[h].y;
        }
    rf_status st = head(o, c->id, c->title);
    if (st) return st;
    if (!isfinite(xmin) || !isfinite(ymin)) { /* nothing measured */
        st = rf_buf_printf(o,
                           "<text x=\"%d\" y=\"%d\" class=\"none\">unknown: nothing measured</text>"
                           "</svg></figure>\n",
                           LEFT + 20, TOP + PLOT_H / 2);
        return st;
    }
    if (c->y_from_zero && ymin > 0) ymin = 0;
    double step = nice_step(ymax - ymin > 0 ? ymax - ymin : fabs(ymax) + 1);
    double y0 = floor(ymin / step) * step, y1 = ceil(ymax / step) * step;
    if (y1 <= y0) y1 = y0 + step;
    if (xmax <= xmin) xmax = xmin + 1, xmin -= 1;
    st = axes(o, y0, y1, step, c->xlabel, c->ylabel);
#define PX(x) (LEFT + ((c->log2_x ? log2(x) : (x)) - xmin) / (xmax - xmin) * PLOT_W)
#define PY(y) (TOP + PLOT_H - ((y)-y0) / (y1 - y0) * PLOT_H)
    /* x ticks at the points' x values (concurrency levels) */
    double seen[64];
    int n_seen = 0;
    for (int s = 0; !st && s < c->n_series; s++)
        for (int i = 0; !st && i < c->series[s].n; i++) {
            double x = c->series[s].x[i];
            bool dup = !isfinite(x) || (c->log2_x && x <= 0);
            for (int k = 0; k < n_seen && !dup; k++) dup = seen[k] == x;
            if (dup || n_seen >= 64) continue;
            seen[n_seen++] = x;
            char b[32];
            fmt_num(b, sizeof b, x);
            st = rf_buf_printf(o, "<text x=\"%.1f\" y=\"%d\" class=\"xt\">%s</text>", PX(x),
                               TOP + PLOT_H + 16, b);
        }
    for (int h = 0; !st && h < c->n_hlines; h++) {
        if (!isfinite(c->hlines[h].y)) continue;
        char b[32];
        fmt_num(b, sizeof b, c->hlines[h].y);
        st = rf_buf_printf(o,
                           "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"h\" "
                           "data-value=\"%.6g\"><title>",
                           LEFT, PY(c->hlines[h].y), LEFT + PLOT_W, PY(c->hlines[h].y),
                           c->hlines[h].y);
        if (!st) st = rf_xml_text(o, c->hlines[h].name);
        if (!st)
            st = rf_buf_printf(o, ": %s</title></line><text x=\"%d\" y=\"%.1f\" class=\"hl\">", b,
                               LEFT + 4, PY(c->hlines[h].y) - 4);
        if (!st) st = rf_xml_text(o, c->hlines[h].name);
        if (!st) st = rf_buf_printf(o, " %s</text>", b);
    }
    int row = 0;
    for (int s = 0; !st && s < c->n_series; s++) {
        const rf_svg_series *se = &c->series[s];
        const char *col = k_colors[s % N_COLORS];
        int n_shown = 0; /* a series without a point is left out, legend too (colour kept) */
        for (int i = 0; i < se->n; i++)
            n_shown += isfinite(se->x[i]) && isfinite(se->y[i]) && !(c->log2_x && se->x[i] <= 0);
        if (!n_shown) continue;
        st =
            rf_buf_printf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
                          col, se->dashed ? " stroke-dasharray=\"6 4\"" : "");
        for (int i = 0; !st && i < se->n; i++)
            if (isfinite(se->x[i]) && isfinite(se->y[i]) && !(c->log2_x && se->x[i] <= 0))
                st = rf_buf_printf(o, "%.1f,%.1f ", PX(se->x[i]), PY(se->y[i]));
        if (!st) st = rf_buf_append_str(o, "\"/>");
        for (int i = 0; !st && i < se->n; i++) {
            if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (c->log2_x && se->x[i] <= 0))
                continue;
            char bx[32], by[32];
            fmt_num(bx, sizeof bx, se->x[i]);
            snprintf(by, sizeof by, "%.4g", se->y[i]);
            st = rf_buf_printf(o,
                               "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" "
                               "data-value=\"%.6g\"><title>",
                               PX(se->x[i]), PY(se->y[i]), col, se->y[i]);
            if (!st) st = rf_xml_text(o, se->name);
            if (!st) st = rf_buf_printf(o, ": %s at %s</title></circle>", by, bx);
        }
        if (!st) st = legend(o, row++, s, se->name, se->dashed);
    }
#undef PX
#undef PY
    return st ? st : rf_buf_append_str(o, "</svg></figure>\n");
}

rf_status rf_svg_bars(rf_buf *o, const rf_svg_bar_chart *c) {
    double ymax = 0;
    bool any = false;
    for (int i = 0; i < c->n_groups * c->n_bars; i++)
        if (isfinite(c->v[i])) {
            any = true;
            if (c->v[i] > ymax) ymax = c->v[i];
        }
    rf_status st = head(o, c->id, c->title);
    if (st) return st;
    if (!any)
        return rf_buf_printf(
            o,
            "<text x=\"%d\" y=\"%d\" class=\"none\">unknown: nothing measured</text>"
            "</svg></figure>\n",
            LEFT + 20, TOP + PLOT_H / 2);
    if (c->y_max > ymax) ymax = c->y_max;
    double step = nice_step(ymax > 0 ? ymax : 1), y1 = ceil(ymax / step) * step;
    if (y1 <= 0) y1 = step;
    st = axes(o, 0, y1, step, NULL, c->ylabel);
    double gw = (double)PLOT_W / c->n_groups, bw = gw * 0.8 / (c->n_bars ? c->n_bars : 1);
    for (int g = 0; !st && g < c->n_groups; g++) {
        st = rf_buf_printf(o, "<text x=\"%.1f\" y=\"%d\" class=\"xt\">", LEFT + gw * (g + 0.5),
                           TOP + PLOT_H + 16);
        if (!st) st = rf_xml_text(o, c->groups[g]);
        if (!st) st = rf_buf_append_str(o, "</text>");
        for (int b = 0; !st && b < c->n_bars; b++) {
            double v = c->v[g * c->n_bars + b];
            if (!isfinite(v)) continue;
            double x = LEFT + gw * g + gw * 0.1 + bw * b, h = v / y1 * PLOT_H;
            char lab[32];
            snprintf(lab, sizeof lab, c->value_fmt ? c->value_fmt : "%.3g", v);
            st = rf_buf_printf(o,
                               "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                               "fill=\"%s\" data-value=\"%.6g\"><title>",
                               x, TOP + PLOT_H - h, bw * 0.92, h, k_colors[b % N_COLORS], v);
            if (!st) st = rf_xml_text(o, c->bars[b]);
            if (!st) st = rf_buf_printf(o, ", ");
            if (!st) st = rf_xml_text(o, c->groups[g]);
            if (!st)
                st = rf_buf_printf(o,
                                   ": %s</title></rect><text x=\"%.1f\" y=\"%.1f\" "
                                   "class=\"bv\">%s</text>",
                                   lab, x + bw * 0.46, TOP + PLOT_H - h - 4, lab);
        }
    }
    for (int b = 0; !st && b < c->n_bars; b++) st = legend(o, b, b, c->bars[b], false);
    return st ? st : rf_buf_append_str(o, "</svg></figure>\n");
}
