/* section_probe.c: the report's "Probe" section: each backend's answer to the probe question. */
#include "report/section.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *sec = json_object_get(sum, "probe");
    if (!sec) return;
    static const char *cols[] = {"backend", "answer", "latency s", "tok/s"};
    rf_table *t = rf_table_new(ts, s->id, s->title, NULL, 4, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        rf_cell_text(&r[1], "%s",
                     json_is_true(json_object_get(o, "ok")) ? rf_sum_str(o, "answer")
                                                            : rf_sum_str(o, "error"));
        rf_cell_num(&r[2], "%.3f", rf_sum_num(o, "latency_s", NULL));
        rf_cell_num(&r[3], "%.1f", rf_sum_num(o, "tok_s", NULL));
    }
}

const rf_report_section rf_section_probe = {.id = "probe", .title = "Probe", .tables = tables};
