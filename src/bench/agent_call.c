/* agent_call.c: one tool call analysed against its task (agent_call.h): the arguments parsed,
 * checked against the expected function's parameter schema, and the condition read from them
 * (best effort, for display even when the call is otherwise wrong). */
#include "bench/agent_call.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/agent_schema.h"
#include "util/file.h"
#include "util/json_dump.h"
#include "util/json_kind.h"

static void copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src);
}

void rf_agent_call_verdict(rf_agent_call_info *ci, rf_call_verdict v, const char *fmt, ...) {
    if (ci->v != RF_CALL_OK) return;
    ci->v = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ci->detail, sizeof ci->detail, fmt, ap);
    va_end(ap);
}

/* Reads the condition from the arguments (best effort, for display even when the call is
 * otherwise wrong). */
static void read_condition(const rf_agent_task *t, rf_agent_call_info *ci) {
    copy_str(ci->filter, sizeof ci->filter, "?");
    if (!ci->args) {
        copy_str(ci->cond_err, sizeof ci->cond_err, "arguments are not a JSON object");
        return;
    }
    char pbuf[48];
    if (t->form == RF_TOOL_FORM_FILTER) {
        const json_t *f = json_object_get(ci->args, "filter");
        if (!json_is_string(f)) {
            copy_str(ci->cond_err, sizeof ci->cond_err,
                     f ? "'filter' is not a string" : "no 'filter'");
            return;
        }
        const char *s = json_string_value(f);
        size_t n = json_string_length(f);
        rf_error e;
        if (rf_cond_parse(s, n, &ci->cond, &e) == RF_OK) {
            ci->has_cond = true;
        } else {
            snprintf(ci->cond_err, sizeof ci->cond_err, "filter: %.140s", e.msg);
            rf_printable(s, n, ci->filter, sizeof ci->filter);
            return;
        }
    } else {
        const json_t *op = json_object_get(ci->args, "op");
        const json_t *th = json_object_get(ci->args, "threshold");
        const char *ops = json_is_string(op) ? json_string_value(op) : NULL;
        bool op_ok = ops && rf_cond_op_parse(ops, json_string_length(op), &ci->cond.op);
        if (op_ok && json_is_number(th) && isfinite(json_number_value(th))) {
            ci->has_cond = true;
            ci->cond.threshold = json_number_value(th) == 0 ? 0.0 : json_number_value(th);
        } else {
            char thbuf[32] = "?";
            if (th) {
                char *d = rf_json_dumps(th, JSON_ENCODE_ANY | JSON_COMPACT);
                if (d) rf_printable(d, strlen(d), thbuf, sizeof thbuf);
                free(d);
            }
            snprintf(ci->filter, sizeof ci->filter, "id %s %s",
                     ops ? rf_printable(ops, strlen(ops), pbuf, 16) : "?", thbuf);
            if (!ops)
                copy_str(ci->cond_err, sizeof ci->cond_err,
                         op ? "'op' is not a string" : "no 'op'");
            else if (!op_ok)
                snprintf(ci->cond_err, sizeof ci->cond_err, "unknown operator '%s'",
                         rf_printable(ops, strlen(ops), pbuf, sizeof pbuf));
            else
                copy_str(ci->cond_err, sizeof ci->cond_err,
                         th ? "'threshold' is not a number" : "no 'threshold'");
            return;
        }
    }
    rf_cond_format(&ci->cond, ci->filter, sizeof ci->filter);
}

void rf_agent_call_analyse(const rf_agent_task *t, const char *name, const char *args,
                           size_t args_len, rf_agent_call_info *ci) {
    memset(ci, 0, sizeof *ci);
    char pbuf[48];
    if (!name || strcmp(name, t->function) != 0)
        rf_agent_call_verdict(ci, RF_CALL_WRONG_FUNCTION, "called '%s', expected '%s'",
                              name ? rf_printable(name, strlen(name), pbuf, sizeof pbuf) : "(none)",
                              t->function);
    if (!args) {
        args = "";
        args_len = 0;
    }
    if (args_len > RF_AGENT_ARGS_MAX) {
        rf_agent_call_verdict(ci, RF_CALL_INVALID_JSON, "arguments longer than %u bytes",
                              RF_AGENT_ARGS_MAX);
    } else {
        json_error_t je;
        ci->args = json_loadb(args, args_len, JSON_REJECT_DUPLICATES, &je);
        if (!ci->args) {
            rf_agent_call_verdict(ci, RF_CALL_INVALID_JSON,
                                  "arguments are not valid JSON: %s (column %d)", je.text,
                                  je.column);
        } else if (!json_is_object(ci->args)) {
            rf_agent_call_verdict(ci, RF_CALL_INVALID_JSON,
                                  "arguments are a JSON %s, not an object",
                                  rf_json_type_name(ci->args));
            json_decref(ci->args);
            ci->args = NULL;
        }
    }
    read_condition(t, ci);
    if (!ci->args) return;
    const json_t *params = rf_agent_task_params(t);
    const json_t *props = json_object_get(params, "properties");
    const json_t *req = json_object_get(params, "required");
    for (size_t k = 0; k < json_array_size(req); k++) {
        const char *r = json_string_value(json_array_get(req, k));
        if (!json_object_get(ci->args, r))
            rf_agent_call_verdict(ci, RF_CALL_MISSING_PARAM, "missing required parameter '%s'", r);
    }
    const char *key;
    json_t *val;
    json_object_foreach(ci->args, key, val) {
        if (!json_object_get(props, key))
            rf_agent_call_verdict(ci, RF_CALL_UNEXPECTED_PARAM, "unexpected parameter '%s'",
                                  rf_printable(key, strlen(key), pbuf, sizeof pbuf));
    }
    json_object_foreach(ci->args, key, val) {
        const json_t *s = json_object_get(props, key);
        if (s && !rf_agent_schema_accepts(s, val)) {
            char td[64];
            rf_agent_schema_describe(s, td, sizeof td);
            rf_agent_call_verdict(ci, RF_CALL_WRONG_TYPE, "parameter '%s' should be %s, got %s",
                                  key, td, rf_json_type_name(val));
        }
    }
    if (!ci->has_cond) rf_agent_call_verdict(ci, RF_CALL_BAD_FILTER, "%s", ci->cond_err);
}
