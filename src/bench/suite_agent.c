/* suite_agent.c: the seeds' tool-calling agent. Each run is the full loop: a request with the
 * task's tools, the returned call executed deterministically (agent_tool.c), the tool result
 * sent back, the final answer read; up to the task's max_turns requests. A run is graded
 * separately on the number it quotes and on the filter condition it sent (BFCL-style), and
 * printed as the seed does: `NAME  run 2/3  ok  quoted=8  filters=['id >= 10']  0.4s`. Every
 * turn is a record; the report grades the runs again from them (src/report/analyze.c).
 */
#include <stdlib.h>
#include <string.h>

#include "bench/agent_task.h"
#include "bench/bench.h"
#include "util/clock.h"
#include "util/json_dump.h"

rf_status rf_agent_preflight(const rf_run_desc *d, rf_error *err) {
    char buf[RF_BENCH_PATH_MAX];
    rf_agent_task t;
    const char *path =
        rf_bench_data_path(d->agent_task, "agent/count_ids.json", buf, sizeof buf, err);
    if (!path) return err->code;
    rf_status st = rf_agent_task_load(path, &t, err);
    if (!st) rf_agent_task_free(&t);
    return st;
}

/* The OpenAI tool_calls array of an assistant turn, as JSON text (caller frees). */
static char *calls_json(const rf_bk_result *r) {
    json_t *a = json_array();
    for (int32_t i = 0; i < r->n_calls; i++) {
        json_t *c = json_object(), *f = json_object();
        json_object_set_new(c, "id", json_string(r->calls[i].id ? r->calls[i].id : "call"));
        json_object_set_new(c, "type", json_string("function"));
        json_object_set_new(
            f, "name",
            rf_json_text(r->calls[i].name, r->calls[i].name ? strlen(r->calls[i].name) : 0));
        json_object_set_new(f, "arguments",
                            rf_json_text(r->calls[i].arguments, r->calls[i].arguments
                                                                    ? strlen(r->calls[i].arguments)
                                                                    : 0));
        json_object_set_new(c, "function", f);
        json_array_append_new(a, c);
    }
    char *s = rf_json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

typedef struct turn_store {
    char *call_json[RF_SEND_MAX_MSGS];
    rf_tool_result results[RF_SEND_MAX_MSGS];
    int n_json, n_results;
} turn_store;

/* One run: returns the grade, the status for the line and the elapsed seconds. */
static rf_status one_run(rf_bench *b, rf_bench_backend *bb, const rf_agent_task *t, int run,
                         rf_agent_grade *g, const char **status, double *secs, rf_error *err) {
    rf_send *turns = calloc((size_t)t->max_turns, sizeof *turns);
    rf_agent_call *calls = calloc((size_t)t->max_turns * 4 + 1, sizeof *calls);
    turn_store ts = {0};
    if (!turns || !calls) {
        free(turns), free(calls);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    int n_calls = 0, n_turns = 0;
    const char *final_text = "";
    size_t final_len = 0;
    *status = NULL;
    rf_status st = RF_OK;
    int64_t turn_ns = 0;
    /* the conversation so far */
    rf_bk_message conv[RF_SEND_MAX_MSGS];
    int n_conv = 0;
    if (t->system) conv[n_conv++] = (rf_bk_message){"system", t->system, NULL, NULL};
    conv[n_conv++] = (rf_bk_message){"user", t->user, NULL, NULL};
    for (int k = 0; k < t->max_turns && !rf_bench_stopped(b); k++) {
        rf_send *s = &turns[n_turns++];
        rf_send_init(s, b, bb, "agent", t->user, 128);
        memcpy(s->msgs, conv, (size_t)n_conv * sizeof *conv);
        s->req.n_msgs = n_conv;
        s->req.tools = t->tools_json;
        s->req.tool_choice = t->tool_choice;
        snprintf(s->item, sizeof s->item, "%s run %d turn %d", t->name, run, k + 1);
        s->index = (run - 1) * t->max_turns + k;
        s->grade = json_object(); /* the reply and calls go into the record */
        st = rf_send_one(s, err);
        if (st) break;
        const rf_bk_result *r = &s->req.res;
        /* the run's time is its turns' (a turn restored by --resume keeps its recorded time) */
        if (r->t_done > r->t_sent && r->t_sent) turn_ns += r->t_done - r->t_sent;
        if (r->err != RF_BK_OK) {
            *status = rf_bk_error_name(r->err);
            break;
        }
        final_text = r->text.data ? (const char *)r->text.data : "";
        final_len = r->text.len;
        if (r->n_calls == 0 || n_conv + 2 > RF_SEND_MAX_MSGS) break; /* a final answer */
        /* execute every call and continue the conversation with the results */
        char *cj = calls_json(r);
        ts.call_json[ts.n_json] = cj;
        conv[n_conv++] = (rf_bk_message){"assistant", NULL, NULL, cj};
        for (int32_t i = 0;
             i < r->n_calls && n_conv < RF_SEND_MAX_MSGS && ts.n_results < RF_SEND_MAX_MSGS; i++) {
            const char *args = r->calls[i].arguments ? r->calls[i].arguments : "";
            if (n_calls < t->max_turns * 4)
                calls[n_calls++] =
                    (rf_agent_call){r->calls[i].name ? r->calls[i].name : "", args, strlen(args)};
            rf_tool_result *res = &ts.results[ts.n_results++];
            rf_agent_execute(t, r->calls[i].name ? r->calls[i].name : "", args, strlen(args), res);
            conv[n_conv++] = (rf_bk_message){"tool", res->content, r->calls[i].id, NULL};
        }
        ts.n_json++;
        final_text = "";
        final_len = 0;
    }
    *secs = (double)turn_ns / 1e9;
    rf_agent_grade_run(t, calls, n_calls, final_text, final_len, g);
    for (int i = 0; i < n_turns; i++) rf_send_free(&turns[i]);
    for (int i = 0; i < ts.n_json; i++) free(ts.call_json[i]);
    free(turns);
    free(calls);
    return st;
}

rf_status rf_suite_agent(rf_bench *b, rf_bench_backend *bb, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    char buf[RF_BENCH_PATH_MAX];
    rf_agent_task t;
    const char *path =
        rf_bench_data_path(d->agent_task, "agent/count_ids.json", buf, sizeof buf, err);
    if (!path) return err->code;
    rf_status st = rf_agent_task_load(path, &t, err);
    if (st) return st;
    int runs = d->agent_runs ? d->agent_runs : t.runs;
    int name_w = 4;
    for (int i = 0; i < d->n_backends; i++) {
        int w = (int)strlen(d->backends[i].cfg.name);
        if (w > name_w) name_w = w;
    }
    for (int run = 1; run <= runs && !rf_bench_stopped(b); run++) {
        rf_agent_grade g;
        const char *status = NULL;
        double secs = 0;
        st = one_run(b, bb, &t, run, &g, &status, &secs, err);
        if (st) break;
        /* the seed's line, as the run ends (the report grades the records again) */
        rf_buf line;
        rf_buf_init(&line, 0);
        rf_agent_format_run(bb->cfg.name, run, runs, &g, status, secs, name_w, 4, &line);
        rf_buf_terminate(&line);
        rf_bench_log(b, "%s", line.data ? (const char *)line.data : "");
        rf_buf_free(&line);
    }
    rf_agent_task_free(&t);
    return st;
}
