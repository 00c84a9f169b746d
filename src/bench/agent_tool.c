/* agent_tool.c: the task's tool (count_ids) run deterministically on a model's call: the call
 * analysed (agent_call.c), the ids that satisfy its condition counted, and the tool message for
 * the model written as JSON (rules in agent_task.h). */
#include <stdio.h>
#include <string.h>

#include "bench/agent_call.h"
#include "bench/agent_task.h"
#include "util/file.h"

static void tool_content(rf_tool_result *out, json_t *obj) {
    size_t n = obj ? json_dumpb(obj, out->content, sizeof out->content - 1, 0) : 0;
    if (n == 0 || n >= sizeof out->content)
        snprintf(out->content, sizeof out->content, "%s", "{\"error\": \"internal error\"}");
    else
        out->content[n] = 0;
    json_decref(obj);
}

static void tool_error(rf_tool_result *out, const char *msg) {
    out->ok = false;
    tool_content(out, json_pack("{s:s}", "error", msg));
}

void rf_agent_execute(const rf_agent_task *t, const char *name, const char *args, size_t args_len,
                      rf_tool_result *out) {
    memset(out, 0, sizeof *out);
    char msg[256], pbuf[48];
    if (!name || strcmp(name, t->function) != 0) {
        snprintf(msg, sizeof msg, "unknown tool '%s' (available: %s)",
                 name ? rf_printable(name, strlen(name), pbuf, sizeof pbuf) : "", t->function);
        tool_error(out, msg);
        return;
    }
    rf_agent_call_info ci;
    rf_agent_call_analyse(t, name, args, args_len, &ci);
    if (ci.v != RF_CALL_OK) {
        tool_error(out, ci.detail);
        json_decref(ci.args);
        return;
    }
    const json_t *ids = json_object_get(ci.args, "ids");
    int64_t count = 0;
    if (ids) { /* type-checked: an array of integers (or numbers, if the schema says so) */
        for (size_t k = 0; k < json_array_size(ids); k++)
            count += rf_cond_eval(&ci.cond, json_number_value(json_array_get(ids, k)));
    } else { /* optional in the schema: the task's ids */
        count = rf_cond_count(&ci.cond, t->ids, t->n_ids);
    }
    json_decref(ci.args);
    out->ok = true;
    out->count = count;
    out->cond = ci.cond;
    tool_content(out, json_pack("{s:I, s:s}", "count", (json_int_t)count, "filter", ci.filter));
}
