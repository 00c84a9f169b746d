/* agent_line.c: the seed's line for one agent run, printed the way the Python seed prints it
 * (a Python list of repr'd strings, seconds as round(x, 2)); the format in agent_task.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/agent_task.h"
#include "util/buf.h"

/* Python's repr of a str (for filters=[...]). */
static rf_status py_repr(rf_buf *b, const char *s) {
    char quote = (strchr(s, '\'') && !strchr(s, '"')) ? '"' : '\'';
    rf_status st = rf_buf_append(b, &quote, 1);
    for (; !st && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == (unsigned char)quote)
            st = rf_buf_printf(b, "\\%c", c);
        else if (c == '\n')
            st = rf_buf_append_str(b, "\\n");
        else if (c == '\r')
            st = rf_buf_append_str(b, "\\r");
        else if (c == '\t')
            st = rf_buf_append_str(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            st = rf_buf_printf(b, "\\x%02x", c);
        else
            st = rf_buf_append(b, &c, 1);
    }
    return st ? st : rf_buf_append(b, &quote, 1);
}

/* Seconds as Python prints round(x, 2): "0.4", "1.19", "2.0". */
static void fmt_seconds(double s, char *out, size_t cap) {
    if (!isfinite(s)) {
        snprintf(out, cap, "%s", isnan(s) ? "nan" : (s > 0 ? "inf" : "-inf"));
        return;
    }
    snprintf(out, cap, "%.2f", s);
    char *dot = strchr(out, '.');
    if (!dot) return;
    size_t n = strlen(out);
    while (n > (size_t)(dot - out) + 2 && out[n - 1] == '0') out[--n] = 0;
}

rf_status rf_agent_format_line(const rf_agent_line *l, int name_width, int status_width,
                               rf_buf *out) {
    int sw = status_width > 0 ? status_width : 4;
    const char *quoted = l->quoted && l->quoted[0] ? l->quoted : "None";
    rf_status st = rf_buf_printf(out, "%-*s  run %d/%d  %-*s quoted=%s  filters=[",
                                 name_width > 0 ? name_width : 0, l->name ? l->name : "",
                                 (int)l->run, (int)l->runs, sw, l->status ? l->status : "", quoted);
    for (int32_t k = 0; !st && k < l->n_filters; k++) {
        if (k) st = rf_buf_append_str(out, ", ");
        if (!st) st = py_repr(out, l->filters[k] ? l->filters[k] : "");
    }
    char secs[48];
    fmt_seconds(l->seconds, secs, sizeof secs);
    if (!st) st = rf_buf_printf(out, "]  %ss", secs);
    if (!st) st = rf_buf_terminate(out);
    return st;
}

rf_status rf_agent_format_run(const char *name, int32_t run, int32_t runs, const rf_agent_grade *g,
                              const char *error_class, double seconds, int name_width,
                              int status_width, rf_buf *out) {
    const char *filters[RF_AGENT_GRADED_CALLS];
    int32_t nf = g->n_calls < RF_AGENT_GRADED_CALLS ? g->n_calls : RF_AGENT_GRADED_CALLS;
    for (int32_t k = 0; k < nf; k++) filters[k] = g->calls[k].filter;
    rf_agent_line l = {
        .name = name,
        .run = run,
        .runs = runs,
        .status = error_class ? error_class : (g->ok ? "ok" : "FAIL"),
        .quoted = g->quoted_found ? g->quoted : NULL,
        .filters = filters,
        .n_filters = nf,
        .seconds = seconds,
    };
    return rf_agent_format_line(&l, name_width, status_width, out);
}
