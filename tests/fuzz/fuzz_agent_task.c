/* fuzz_agent_task.c: the libFuzzer target for agent task files (src/bench/agent_task.c, the
 * condition language in condition.c, execution and grading in agent_tool.c and agent_grade.c): the
 * loader with its schema subset, the condition language, tool execution and call grading.
 *
 * The input is up to four NUL-separated parts: TASK \0 NAME \0 ARGS \0 FINAL.
 *   - TASK is parsed as a task file; when it is refused (its message must name the file) the
 *     committed data/agent/count_ids.json is used for the rest;
 *   - ARGS is also read as a filter condition: one that parses must print ("id >= 10") to a
 *     text that parses back to an equal condition that evaluates the same on the task's ids;
 *   - NAME(ARGS) is executed and graded: a result that is ok has a
 *     possible count; every grade has a verdict name and terminated texts;
 *   - FINAL is graded as the run's final answer after that one call.
 * Deterministic: the fallback task is read once and never changed. */
#include <string.h>

#include "bench/agent_task.h"
#include "fuzz_util.h"

static const rf_agent_task *fallback_task(void) {
    static rf_agent_task t;
    static int loaded;
    if (!loaded) {
        rf_error err = {0};
        REQUIRE(rf_agent_task_load(ROOFLINE_DATA_DIR "/agent/count_ids.json", &t, &err) == RF_OK);
        loaded = 1;
    }
    return &t;
}

static void check_condition(const rf_agent_task *t, const char *text, size_t len) {
    rf_cond c;
    rf_error err = {0};
    if (rf_cond_parse(text, len, &c, &err) != RF_OK) {
        REQUIRE(fuzz_msg_ok(err.msg, sizeof err.msg, ""));
        return;
    }
    char buf[RF_COND_TEXT_MAX * 2];
    int n = rf_cond_format(&c, buf, sizeof buf);
    REQUIRE(n > 0 && (size_t)n < sizeof buf);
    rf_cond back;
    REQUIRE(rf_cond_parse(buf, (size_t)n, &back, &err) == RF_OK);
    REQUIRE(rf_cond_equal(&c, &back));
    for (int32_t i = 0; i < t->n_ids; i++)
        REQUIRE(rf_cond_eval(&c, (double)t->ids[i]) == rf_cond_eval(&back, (double)t->ids[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p = data;
    size_t n = size, task_len, name_len, args_len, final_len;
    const uint8_t *task_text = fuzz_part(&p, &n, &task_len);
    const uint8_t *name = fuzz_part(&p, &n, &name_len);
    const uint8_t *args = fuzz_part(&p, &n, &args_len);
    const uint8_t *final = fuzz_part(&p, &n, &final_len);

    rf_agent_task own;
    memset(&own, 0, sizeof own);
    const rf_agent_task *t = fallback_task();
    rf_error err = {0};
    rf_status st = rf_agent_task_parse("task.json", (const char *)task_text, task_len, &own, &err);
    if (st == RF_OK) {
        REQUIRE(own.n_ids >= 1 && own.n_ids <= RF_AGENT_MAX_IDS && own.n_filters >= 1);
        REQUIRE(own.runs >= 1 && own.function && own.tools_json && own.answer);
        t = &own;
    } else {
        REQUIRE(fuzz_msg_ok(err.msg, sizeof err.msg, "task.json"));
    }

    check_condition(t, (const char *)args, args_len);

    char *fname = fuzz_strndup(name, name_len);
    rf_tool_result r;
    rf_agent_execute(t, fname, (const char *)args, args_len, &r);
    REQUIRE(memchr(r.content, 0, sizeof r.content) != NULL && r.content[0] == '{');
    if (r.ok) REQUIRE(r.count >= 0 && r.count <= RF_AGENT_MAX_IDS);
    rf_call_grade g;
    rf_agent_grade_call(t, fname, (const char *)args, args_len, &g);
    REQUIRE(rf_call_verdict_name(g.verdict) != NULL);
    REQUIRE(memchr(g.filter, 0, sizeof g.filter) && memchr(g.detail, 0, sizeof g.detail));
    REQUIRE((g.verdict == RF_CALL_OK) == (g.detail[0] == 0));

    rf_agent_call call = {fname, (const char *)args, args_len};
    rf_agent_grade rg;
    rf_agent_grade_run(t, &call, 1, (const char *) final, final_len, &rg);
    REQUIRE(rg.n_calls == 1 && rg.n_calls_ok == (g.verdict == RF_CALL_OK));
    REQUIRE(rg.ok == (rg.quoted_ok && rg.filters_ok));
    REQUIRE(memchr(rg.reason, 0, sizeof rg.reason) && memchr(rg.quoted, 0, sizeof rg.quoted));
    free(fname);
    rf_agent_task_free(&own); /* also after a refusal: nothing may be left behind */
    return 0;
}
