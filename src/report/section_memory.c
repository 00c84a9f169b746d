/* section_memory.c: the report's "Memory and KV capacity" section: weights, memory and the KV cache
 * capacity per backend. */
#include <math.h>

#include "report/section.h"

static void tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    const json_t *mem = json_object_get(sum, "memory");
    if (!json_object_size((json_t *)mem)) return;
    static const char *cols[] = {"backend",         "weights GB",      "memory GB",
                                 "KV per token KB", "KV cache tokens", "max concurrency",
                                 "per request",     "memory from"};
    rf_table *t =
        rf_table_new(ts, s->id, s->title,
                     "KV budget = memory x utilisation - weights (vLLM's rule); tokens = "
                     "budget / KV bytes per token (f16); concurrency = budget / the KV of one "
                     "request (sliding-window layers at their window). GB = 1e9 bytes, KB = "
                     "1e3.",
                     8, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)mem, name, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        rf_cell_num(&r[1], "%.3f", rf_sum_num(o, "weights_bytes", NULL) / 1e9);
        rf_cell_num(&r[2], "%.1f", rf_sum_num(o, "mem_bytes", NULL) / 1e9);
        rf_cell_num(&r[3], "%.1f", rf_sum_num(o, "kv_per_token_bytes", NULL) / 1e3);
        rf_cell_num(&r[4], "%.0f", rf_sum_num(o, "kv_tokens", NULL));
        rf_cell_num(&r[5], "%.2f", rf_sum_num(o, "max_concurrency", NULL));
        if (isfinite(rf_sum_num(o, "request_tokens", NULL)))
            rf_cell_text(&r[6], "%d tokens", (int)rf_sum_num(o, "request_tokens", NULL));
        rf_cell_text(&r[7], "%s",
                     *rf_sum_str(o, "note") ? rf_sum_str(o, "note") : rf_sum_str(o, "mem_source"));
        if (*rf_sum_str(o, "vllm_line"))
            rf_table_foot(t, "%s: %s", name, rf_sum_str(o, "vllm_line"));
    }
}

const rf_report_section rf_section_memory = {
    .id = "memory", .title = "Memory and KV capacity", .tables = tables};
