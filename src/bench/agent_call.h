/* agent_call.h: one tool call of an agent run, analysed against its task the way BFCL's AST
 * checker does (the rules in agent_task.h): the function name, the arguments as a JSON object,
 * required and unexpected parameters, each value's schema type, and the condition the call
 * carries. The agent's own files share it: tool execution (agent_tool.c) and grading
 * (agent_grade.c).
 *
 * Ownership: rf_agent_call_info is caller-owned with fixed buffers; its args is a JSON tree the
 * analysis made (NULL when the arguments are not a JSON object), which the caller releases with
 * json_decref.
 */
#ifndef RF_BENCH_AGENT_CALL_H
#define RF_BENCH_AGENT_CALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench/agent_task.h"

typedef struct rf_agent_call_info {
    rf_call_verdict v; /* first structural problem in BFCL order; OK when none */
    char detail[192];
    json_t *args;  /* owned; NULL when not a JSON object */
    bool has_cond; /* cond holds the condition the call carries */
    rf_cond cond;
    char cond_err[160];
    char filter[RF_COND_TEXT_MAX]; /* display text */
} rf_agent_call_info;

/* Analyses name(args) (args_len bytes, need not be NUL-terminated; NULL: empty) for task t. */
void rf_agent_call_analyse(const rf_agent_task *t, const char *name, const char *args,
                           size_t args_len, rf_agent_call_info *ci);
/* Sets the verdict v and its detail unless ci already has one (the first problem wins). */
void rf_agent_call_verdict(rf_agent_call_info *ci, rf_call_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
