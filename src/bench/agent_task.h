/* agent_task.h: the tool-agent suite's tasks as data (JSON files under data/agent), the
 * deterministic tool they expose (count_ids), and the grading of a run: the number quoted in the
 * final answer, and the filter condition each tool call carried, checked the way the BFCL AST
 * checker does.
 *
 * Task file schema (data/agent/count_ids.json):
 *   {"name": str, "description": str (optional), "runs": int 1-1000,
 *    "max_turns": int 1-64 (optional, 4), "system": str (optional), "user": str,
 *    "ids": [int, ...] (1-10000 ids, each written in "user"),
 *    "tool_choice": str (optional, e.g. "auto"),
 *    "tools": [OpenAI tool objects: {"type": "function", "function": {"name", "description",
 *              "parameters": JSON schema object}}],
 *    "expected": {"function": str (a tool in "tools"), "answer": int or numeric string,
 *                 "filters": str or [str, ...] (acceptable conditions, e.g. "id >= 10")}}
 * The expected function's parameters must be "ids" (array of integers) plus either "op"
 * (string) and "threshold" (number), or "filter" (string, e.g. "id >= 10"). The loader checks
 * that "answer" is the count of "ids" under every acceptable filter.
 *
 * Conditions: `id OP N` with OP one of >= > <= < == !=, in the condition language of
 * condition.h: a call carries one as op/threshold arguments or as a filter string ("id>=10",
 * "10 <= id", ">= 10", "ID ≥ 10"); it prints "id >= 10".
 *
 * Call grading (BFCL AST checker rules): the function name matches; the arguments are a JSON
 * object; every required parameter is present; no parameter outside the schema; each value has
 * its schema type (an integer is accepted for "number", a real is not accepted for "integer");
 * the condition is one of the acceptable ones (compared as parsed conditions, so "id >= 10.0"
 * equals "id >= 10" where BFCL's string compare would read "id>=100"); "ids" is the task's ids
 * in any order.
 *
 * Files: this header is the agent's API; each section has its own file: tasks agent_task.c
 * (with the parameter schema subset, agent_schema.c), tool execution agent_tool.c, grading
 * agent_grade.c (both over one call analysed, agent_call.c), the output line agent_line.c.
 *
 * Ownership: rf_agent_task_load fills a caller-owned rf_agent_task whose strings and arrays it
 * owns; rf_agent_task_free releases them. Execution and grading write into caller-owned structs
 * with fixed buffers and allocate nothing that outlives the call. rf_agent_format_* append to a
 * caller-owned rf_buf.
 */
#ifndef RF_BENCH_AGENT_TASK_H
#define RF_BENCH_AGENT_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/condition.h"
#include "roofline/status.h"
#include "util/buf.h"

/* ---- tasks ---- */

typedef enum rf_tool_form {
    RF_TOOL_FORM_OP_THRESHOLD = 0, /* {"ids", "op", "threshold"} */
    RF_TOOL_FORM_FILTER,           /* {"ids", "filter"} */
} rf_tool_form;

typedef struct rf_agent_task {
    char *path;
    char *name;
    char *description; /* NULL when absent */
    char *system;      /* NULL when absent */
    char *user;
    char *tools_json;  /* the "tools" array as compact JSON text (for rf_bk_request.tools) */
    char *tool_choice; /* NULL when absent */
    char *function;    /* the tool the model must call */
    rf_tool_form form;
    int32_t runs;
    int32_t max_turns;
    char *answer; /* expected count, canonical number text ("8") */
    int64_t *ids;
    int32_t n_ids;
    rf_cond *filters; /* acceptable conditions; filters[0] is the one printed as expected */
    int32_t n_filters;
    void *priv; /* the expected function's parameter schema (owned) */
} rf_agent_task;

#define RF_AGENT_TASK_FILE_MAX (1u << 20)
#define RF_AGENT_MAX_IDS       10000
#define RF_AGENT_MAX_ID        9007199254740992LL /* 2^53: ids convert to double exactly */
#define RF_AGENT_ARGS_MAX      (64u * 1024u)

rf_status rf_agent_task_load(const char *path, rf_agent_task *out, rf_error *err);
/* Same, from memory; name is used in messages (and kept as out->path). */
rf_status rf_agent_task_parse(const char *name, const char *text, size_t len, rf_agent_task *out,
                              rf_error *err);
void rf_agent_task_free(rf_agent_task *t);
/* For the agent's files: the expected function's "parameters" schema (a jansson json_t, owned by
 * the task; NULL before a successful load). */
const struct json_t *rf_agent_task_params(const rf_agent_task *t);

/* ---- tool execution ---- */

#define RF_TOOL_CONTENT_MAX 512

typedef struct rf_tool_result {
    bool ok;
    int64_t count;                     /* ok: ids that satisfy the condition */
    rf_cond cond;                      /* ok: the condition applied */
    char content[RF_TOOL_CONTENT_MAX]; /* the tool message for the model, JSON text:
                                        * {"count": 8, "filter": "id >= 10"} or
                                        * {"error": "..."} */
} rf_tool_result;

/* Runs the tool call `name(args)` deterministically over the ids in the arguments. args is the
 * JSON text exactly as the model produced it (args_len bytes; may be invalid): any problem
 * (unknown tool, invalid JSON, missing/unexpected parameter, wrong type, unknown operator) gives
 * ok = false and an error message in content. */
void rf_agent_execute(const rf_agent_task *t, const char *name, const char *args, size_t args_len,
                      rf_tool_result *out);

/* ---- grading ---- */

typedef enum rf_call_verdict {
    RF_CALL_OK = 0,
    RF_CALL_WRONG_FUNCTION,
    RF_CALL_INVALID_JSON, /* not JSON, or not an object */
    RF_CALL_MISSING_PARAM,
    RF_CALL_UNEXPECTED_PARAM,
    RF_CALL_WRONG_TYPE,
    RF_CALL_BAD_FILTER,   /* the condition cannot be read (unknown operator, garbled string) */
    RF_CALL_WRONG_FILTER, /* a valid condition outside the acceptable set (e.g. id > 10) */
    RF_CALL_WRONG_VALUE,  /* another parameter's value is wrong (ids) */
} rf_call_verdict;

/* "ok", "wrong_function", "invalid_json", "missing_param", "unexpected_param", "wrong_type",
 * "bad_filter", "wrong_filter", "wrong_value". */
const char *rf_call_verdict_name(rf_call_verdict v);

typedef struct rf_call_grade {
    rf_call_verdict verdict;
    bool has_filter;               /* filter is a normalised condition */
    char filter[RF_COND_TEXT_MAX]; /* "id >= 10"; unreadable: the text as sent, or "?" */
    char detail[192];              /* why it is not ok ("" when ok) */
} rf_call_grade;

void rf_agent_grade_call(const rf_agent_task *t, const char *name, const char *args,
                         size_t args_len, rf_call_grade *out);

/* One tool call of a run, as the backend returned it (arguments need not be NUL-terminated). */
typedef struct rf_agent_call {
    const char *name;
    const char *arguments;
    size_t arguments_len;
} rf_agent_call;

#define RF_AGENT_GRADED_CALLS 8

typedef struct rf_agent_grade {
    bool ok;           /* quoted_ok && filters_ok */
    bool quoted_found; /* the final answer holds a number */
    bool quoted_ok;    /* ... equal to the expected answer */
    char quoted[48];   /* canonical text of that number, "" when none */
    bool filters_ok;   /* at least one call, and every call graded ok */
    int32_t n_calls;   /* calls made (all of them are graded) */
    int32_t n_calls_ok;
    rf_call_grade calls[RF_AGENT_GRADED_CALLS]; /* the first calls' grades, for printing */
    char reason[192];                           /* the first reason the run failed ("" when ok) */
} rf_agent_grade;

/* Grades a run: the quoted number is the last number of the final answer that is not a
 * comparison operand or a total (rf_quoted_number: "8 of the 11 ids are >= 10" quotes 8). */
void rf_agent_grade_run(const rf_agent_task *t, const rf_agent_call *calls, int32_t n_calls,
                        const char *final_text, size_t final_len, rf_agent_grade *out);

/* ---- the seed's output line ---- */

typedef struct rf_agent_line {
    const char *name;   /* backend name */
    int32_t run, runs;  /* 1-based run number, runs per backend */
    const char *status; /* "ok", "FAIL" or an error class such as "timeout" */
    const char *quoted; /* NULL or "": printed as None */
    const char *const *filters;
    int32_t n_filters;
    double seconds;
} rf_agent_line;

/* Appends e.g. "g6         run 2/3  ok   quoted=8  filters=['id >= 10']  0.4s" (no newline):
 * the name padded to name_width, two spaces, "run i/n", two spaces, the status padded to
 * status_width (0: 4, the width of FAIL) and a space, quoted=, filters= as a Python list, the
 * time in seconds rounded to 2 decimals without trailing zeros. */
rf_status rf_agent_format_line(const rf_agent_line *l, int name_width, int status_width,
                               rf_buf *out);

/* The same line from a graded run: status is error_class when not NULL (the request failed),
 * else "ok" or "FAIL". */
rf_status rf_agent_format_run(const char *name, int32_t run, int32_t runs, const rf_agent_grade *g,
                              const char *error_class, double seconds, int name_width,
                              int status_width, rf_buf *out);

#endif
