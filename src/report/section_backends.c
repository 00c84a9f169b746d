/* section_backends.c: the report's "Backends" section: each backend with its URI, model, hardware,
 * price and whether it could be opened. */
#include <string.h>

#include "report/section.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    static const char *cols[] = {"backend", "uri", "model", "hardware", "price", "status"};
    rf_table *t = rf_table_new(ts, s->id, s->title, NULL, 6, cols);
    const json_t *cost = json_object_get(json_object_get(sum, "cost"), "backends");
    const char *name;
    const json_t *o;
    json_object_foreach(json_object_get(sum, "backends"), name, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        rf_cell_text(&r[1], "%s", rf_sum_str(o, "uri"));
        if (*rf_sum_str(o, "model")) rf_cell_text(&r[2], "%s", rf_sum_str(o, "model"));
        rf_cell_text(&r[3], "%s", *rf_sum_str(o, "hardware") ? rf_sum_str(o, "hardware") : "-");
        const json_t *c = json_object_get(cost, name);
        if (!strcmp(rf_sum_str(c, "kind"), "instance"))
            rf_cell_text(&r[4], "$%.4f/hour%s", rf_sum_num(c, "usd_per_hour", NULL),
                         json_is_true(json_object_get(c, "assumption")) ? " (assumed)" : "");
        else if (!strcmp(rf_sum_str(c, "kind"), "per_token"))
            rf_cell_text(&r[4], "$%.3f/M in, $%.3f/M out", rf_sum_num(c, "usd_per_m_input", NULL),
                         rf_sum_num(c, "usd_per_m_output", NULL));
        rf_cell_text(&r[5], "%s", *rf_sum_str(o, "error") ? rf_sum_str(o, "error") : "ok");
    }
}

const rf_report_section rf_section_backends = {
    .id = "backends", .title = "Backends", .tables = tables};
