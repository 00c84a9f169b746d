/* section_speed.c: the report's "Single-stream speed" section: TTFT, decode tok/s and E2E per
 * backend. */
#include "report/section.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *sec = json_object_get(sum, "speed");
    if (!sec) return;
    static const char *cols[] = {"backend",          "runs ok", "TTFT ms (median)",
                                 "decode tok/s min", "median",  "max",
                                 "E2E s min",        "max",     "n/E2E tok/s median"};
    rf_table *t = rf_table_new(ts, s->id, s->title,
                               "Decode tok/s = (tokens - 1) / (last - first content event); n/E2E "
                               "tok/s = tokens / (send to last content).",
                               9, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        rf_cell_text(&r[1], "%d/%d", (int)rf_sum_num(o, "ok", NULL),
                     (int)rf_sum_num(o, "runs", NULL));
        rf_cell_num(&r[2], "%.1f", rf_sum_num(o, "ttft_ms", "median"));
        rf_cell_num(&r[3], "%.1f", rf_sum_num(o, "decode_tok_s", "min"));
        rf_cell_num(&r[4], "%.1f", rf_sum_num(o, "decode_tok_s", "median"));
        rf_cell_num(&r[5], "%.1f", rf_sum_num(o, "decode_tok_s", "max"));
        rf_cell_num(&r[6], "%.2f", rf_sum_num(o, "e2e_s", "min"));
        rf_cell_num(&r[7], "%.2f", rf_sum_num(o, "e2e_s", "max"));
        rf_cell_num(&r[8], "%.1f", rf_sum_num(o, "e2e_tok_s", "median"));
    }
}

const rf_report_section rf_section_speed = {
    .id = "speed", .title = "Single-stream speed", .tables = tables};
