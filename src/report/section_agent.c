/* section_agent.c: the report's "Agent (tool calling)" section: the agent runs' lines and the
 * scores per backend. */
#include "report/section.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *sec = json_object_get(sum, "agent");
    if (!sec) return;
    static const char *lcols[] = {"line"};
    rf_table *tl = rf_table_new(ts, "agent_runs", s->title,
                                "Graded on the quoted number and, separately, on the filter "
                                "condition the model sent.",
                                1, lcols);
    if (tl) tl->pre = true;
    static const char *cols[] = {"backend", "runs", "number correct", "filter correct"};
    rf_table *t = rf_table_new(ts, "agent", "Agent scores", NULL, 4, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        size_t i;
        const json_t *l;
        json_array_foreach(json_object_get(o, "lines"), i, l) {
            rf_cell *r = rf_table_row(tl);
            if (!r) return;
            rf_cell_text(&r[0], "%s", json_string_value(l));
        }
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        if (json_object_get(o, "error")) {
            rf_cell_text(&r[1], "%s", rf_sum_str(o, "error"));
            continue;
        }
        rf_cell_text(&r[1], "%d", (int)rf_sum_num(o, "runs", NULL));
        rf_cell_text(&r[2], "%d", (int)rf_sum_num(o, "quoted_ok", NULL));
        rf_cell_text(&r[3], "%d", (int)rf_sum_num(o, "filter_ok", NULL));
    }
}

const rf_report_section rf_section_agent = {
    .id = "agent", .title = "Agent (tool calling)", .tables = tables};
