/* agent_grade.c: the grading of an agent run (rules in agent_task.h): each tool call checked as
 * BFCL's AST checker does (agent_call.c), its condition against the acceptable ones and its ids
 * against the task's; the number the final answer quotes against the expected answer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/agent_call.h"
#include "bench/agent_task.h"
#include "bench/graders.h"

static void copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src);
}

const char *rf_call_verdict_name(rf_call_verdict v) {
    switch (v) {
    case RF_CALL_OK:
        return "ok";
    case RF_CALL_WRONG_FUNCTION:
        return "wrong_function";
    case RF_CALL_INVALID_JSON:
        return "invalid_json";
    case RF_CALL_MISSING_PARAM:
        return "missing_param";
    case RF_CALL_UNEXPECTED_PARAM:
        return "unexpected_param";
    case RF_CALL_WRONG_TYPE:
        return "wrong_type";
    case RF_CALL_BAD_FILTER:
        return "bad_filter";
    case RF_CALL_WRONG_FILTER:
        return "wrong_filter";
    case RF_CALL_WRONG_VALUE:
        return "wrong_value";
    }
    return "?";
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Are the call's ids the task's ids as a multiset? (false on allocation failure) */
static bool same_ids(const rf_agent_task *t, const json_t *ids) {
    size_t n = json_array_size(ids);
    if (n != (size_t)t->n_ids) return false;
    int64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    bool same = a && b;
    for (size_t k = 0; same && k < n; k++) {
        const json_t *e = json_array_get(ids, k);
        double d = json_number_value(e);
        if (json_is_integer(e))
            a[k] = (int64_t)json_integer_value(e);
        else if (d == floor(d) && fabs(d) <= (double)RF_AGENT_MAX_ID)
            a[k] = (int64_t)d;
        else
            same = false;
        b[k] = t->ids[k];
    }
    if (same) {
        qsort(a, n, sizeof *a, cmp_i64);
        qsort(b, n, sizeof *b, cmp_i64);
        same = memcmp(a, b, n * sizeof *a) == 0;
    }
    free(a);
    free(b);
    return same;
}

void rf_agent_grade_call(const rf_agent_task *t, const char *name, const char *args,
                         size_t args_len, rf_call_grade *out) {
    memset(out, 0, sizeof *out);
    rf_agent_call_info ci;
    rf_agent_call_analyse(t, name, args, args_len, &ci);
    if (ci.v == RF_CALL_OK) {
        bool acceptable = false;
        for (int32_t k = 0; k < t->n_filters && !acceptable; k++)
            acceptable = rf_cond_equal(&ci.cond, &t->filters[k]);
        if (!acceptable) {
            char want[RF_COND_TEXT_MAX];
            rf_cond_format(&t->filters[0], want, sizeof want);
            rf_agent_call_verdict(&ci, RF_CALL_WRONG_FILTER, "filter %s, expected %s", ci.filter,
                                  want);
        }
        const json_t *ids = json_object_get(ci.args, "ids");
        if (ids && !same_ids(t, ids))
            rf_agent_call_verdict(&ci, RF_CALL_WRONG_VALUE,
                                  "'ids' are not the %d ids of the question", (int)t->n_ids);
    }
    json_decref(ci.args);
    out->verdict = ci.v;
    out->has_filter = ci.has_cond;
    copy_str(out->filter, sizeof out->filter, ci.filter);
    copy_str(out->detail, sizeof out->detail, ci.detail);
}

void rf_agent_grade_run(const rf_agent_task *t, const rf_agent_call *calls, int32_t n_calls,
                        const char *final_text, size_t final_len, rf_agent_grade *out) {
    memset(out, 0, sizeof *out);
    if (!final_text) final_len = 0;
    char q[sizeof out->quoted];
    if (final_text && rf_quoted_number(final_text, final_len, q, sizeof q)) {
        out->quoted_found = true;
        copy_str(out->quoted, sizeof out->quoted, q);
        out->quoted_ok = strlen(q) < sizeof q - 1 && rf_numbers_equal(q, t->answer);
    }
    out->n_calls = n_calls > 0 ? n_calls : 0;
    char first_bad[192] = "";
    for (int32_t k = 0; k < out->n_calls; k++) {
        rf_call_grade g;
        rf_agent_grade_call(t, calls[k].name, calls[k].arguments, calls[k].arguments_len, &g);
        if (k < RF_AGENT_GRADED_CALLS) out->calls[k] = g;
        if (g.verdict == RF_CALL_OK)
            out->n_calls_ok++;
        else if (!first_bad[0])
            snprintf(first_bad, sizeof first_bad, "call %d: %s: %.150s", (int)k + 1,
                     rf_call_verdict_name(g.verdict), g.detail);
    }
    out->filters_ok = out->n_calls > 0 && out->n_calls_ok == out->n_calls;
    out->ok = out->quoted_ok && out->filters_ok;
    if (out->n_calls == 0)
        copy_str(out->reason, sizeof out->reason, "no tool call");
    else if (!out->filters_ok)
        copy_str(out->reason, sizeof out->reason, first_bad);
    else if (!out->quoted_found)
        copy_str(out->reason, sizeof out->reason, "no number in the final answer");
    else if (!out->quoted_ok)
        snprintf(out->reason, sizeof out->reason, "quoted %s, expected %s", out->quoted, t->answer);
}
