/* local.c: the in-process engine as a bench backend ("local" or "local:MODEL.gguf").
 *
 * Requests go straight to the engine's scheduler (no HTTP), so concurrent requests batch as
 * they would in a server. The engine calls back on its own thread; each event is copied and
 * posted to the loop, where it is applied to the request's result: one content event per
 * generated token (tokens counted exactly), text appended, usage from the engine's counts, and
 * tool calls recognised in the reply when the request carried tools. Conversations and tools are
 * rendered in each model's own format and replies read back in it through the engine's public
 * API (rf_engine_chat_prompt, rf_engine_parse_reply): Qwen2.5's <tools>/<tool_call> section,
 * a JSON object described in the prompt for Gemma and plain ChatML. Each call's form (tagged,
 * bare JSON, prompt JSON) goes into the result, and so into the record.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "model/registry.h"
#include "roofline/engine.h"
#include "util/clock.h"

typedef struct local_backend {
    rf_backend base;
    rf_engine *e;
    char *model_name;
    int in_flight;
} local_backend;

typedef struct local_req {
    local_backend *b;
    rf_bk_request *req;
    uint64_t id;
    int finished; /* the final event was applied */
} local_req;

/* An engine event copied for the loop thread. */
typedef struct local_ev {
    local_req *lr;
    int64_t t_ns, t_admit_ns;
    int32_t token;
    rf_finish finish;
    int32_t n_prompt, n_generated;
    size_t len;
    char text[]; /* len bytes, then an error message when finish == ERROR */
} local_ev;

static rf_status local_open(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_loop *loop,
                            rf_backend **out, rf_error *err) {
    (void)vt, (void)loop;
    local_backend *b = calloc(1, sizeof *b);
    if (!b) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    /* local, local:NAME (an embedded model) or local:PATH: the one resolver every verb uses */
    char path[4096];
    rf_status st = rf_model_resolve(rf_backend_local_model(cfg), path, sizeof path, err);
    if (st) {
        free(b);
        return st;
    }
    rf_engine_params p = rf_engine_default_params();
    p.model_path = path;
    p.n_threads = cfg->threads;
    if (cfg->max_seqs) p.max_seqs = cfg->max_seqs;
    p.n_ctx = cfg->n_ctx;
    p.widen = cfg->widen;
    p.max_queue = 4096;
    st = rf_engine_open(&p, &b->e, err);
    if (st) {
        free(b);
        return st;
    }
    rf_engine_info info;
    rf_engine_get_info(b->e, &info);
    b->model_name = strdup(cfg->model ? cfg->model : info.model_name);
    *out = &b->base;
    return RF_OK;
}

/* Loop thread: applies one engine event to its request. */
static void deliver(void *user) {
    local_ev *ev = user;
    local_req *lr = ev->lr;
    rf_bk_request *req = lr->req;
    rf_bk_result *r = &req->res;
    if (!r->t_first_byte && ev->t_admit_ns) r->t_first_byte = ev->t_admit_ns;
    if (ev->token >= 0 && (ev->finish == RF_FINISH_NONE || ev->finish == RF_FINISH_LENGTH)) {
        if (!rf_bk_result_event(r, ev->t_ns, 1)) rf_bk_fail(r, RF_BK_INTERNAL, "out of memory");
    }
    if (ev->len && !rf_bk_result_text(req, ev->text, ev->len))
        rf_bk_fail(r, RF_BK_CLIENT, "client out of memory");
    if (ev->finish == RF_FINISH_NONE) {
        free(ev);
        return;
    }
    r->t_done = ev->t_ns;
    r->prompt_tokens = ev->n_prompt;
    r->completion_tokens = ev->n_generated;
    r->client_tokens = ev->n_generated;
    switch (ev->finish) {
    case RF_FINISH_STOP:
        snprintf(r->finish_reason, sizeof r->finish_reason, "stop");
        break;
    case RF_FINISH_LENGTH:
        snprintf(r->finish_reason, sizeof r->finish_reason, "length");
        break;
    case RF_FINISH_CANCELLED:
        rf_bk_fail(r, RF_BK_CANCELLED, "cancelled");
        break;
    default:
        rf_bk_fail(r, RF_BK_INTERNAL, "engine: %s", ev->text + ev->len);
        break;
    }
    if (req->tools && r->err == RF_BK_OK) {
        /* the reply in the model's own tool format (rf_engine_parse_reply) */
        rf_reply rp;
        rf_error perr = {0};
        if (rf_engine_parse_reply(lr->b->e, (const char *)r->text.data, r->text.len, req->tools,
                                  &rp, &perr) != RF_OK) {
            rf_bk_fail(r, RF_BK_CLIENT, "client out of memory");
        } else if (rp.n_calls > 0) {
            r->calls = calloc((size_t)rp.n_calls, sizeof *r->calls);
            for (int32_t i = 0; r->calls && i < rp.n_calls; i++) {
                char id[48];
                snprintf(id, sizeof id, "call_%llu_%d", (unsigned long long)lr->id, (int)i);
                r->calls[i] = (rf_bk_tool_call){strdup(id), rp.calls[i].name, rp.calls[i].arguments,
                                                (int64_t)strlen(rp.calls[i].arguments)};
                rp.calls[i].name = rp.calls[i].arguments = NULL;
                r->n_calls++;
            }
            snprintf(r->finish_reason, sizeof r->finish_reason, "tool_calls");
            snprintf(r->call_form, sizeof r->call_form, "%s", rp.form);
            rf_buf_reset(&r->text); /* the content is what is outside the calls */
            r->text_bytes = 0;
            if (rp.content) rf_bk_result_text(req, rp.content, strlen(rp.content));
        }
        rf_reply_free(&rp);
    }
    lr->b->in_flight--;
    lr->finished = 1;
    req->priv = NULL;
    free(lr);
    free(ev);
    req->done(req->user, req);
}

/* Engine thread: copy and post. */
static void on_event(void *user, const rf_event *e) {
    local_req *lr = user;
    size_t elen = e->error ? strlen(e->error) + 1 : 1;
    local_ev *ev = malloc(sizeof *ev + e->text_len + elen);
    if (!ev) return; /* nothing sensible to do on the engine thread; the request will time out */
    ev->lr = lr;
    ev->t_ns = e->t_ns;
    ev->t_admit_ns = e->t_admit_ns;
    ev->token = e->token;
    ev->finish = e->finish;
    ev->n_prompt = e->n_prompt;
    ev->n_generated = e->n_generated;
    ev->len = e->text_len;
    memcpy(ev->text, e->text, e->text_len);
    memcpy(ev->text + e->text_len, e->error ? e->error : "", elen);
    rf_loop_post(lr->b->base.loop, deliver, ev);
}

/* Renders the request's conversation (and tools) with the model's template, in its own tool
 * format (rf_engine_chat_prompt). */
static rf_status render(local_backend *b, rf_bk_request *req, char **prompt, rf_error *err) {
    int32_t n = req->n_msgs;
    rf_message *m = calloc((size_t)n + 1, sizeof *m);
    if (!m) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < n; i++) {
        const rf_bk_message *x = &req->msgs[i];
        m[i] = (rf_message){x->role, x->content, x->tool_calls, x->tool_call_id};
        if (!m[i].content && !(x->tool_calls && !strcmp(x->role, "assistant"))) m[i].content = "";
    }
    rf_status st = rf_engine_chat_prompt(b->e, m, (size_t)n, req->tools, true, prompt, err);
    free(m);
    return st;
}

static void fail_now(rf_bk_request *req, rf_bk_error e, const char *msg) {
    rf_bk_fail(&req->res, e, "%s", msg);
    req->res.t_done = rf_now_ns();
    req->done(req->user, req);
}

static void local_start(rf_backend *base, rf_bk_request *req) {
    local_backend *b = (local_backend *)base;
    rf_error err = {0};
    char *prompt = NULL;
    int32_t *ids = NULL;
    req->res.t_sent = rf_now_ns();
    if (render(b, req, &prompt, &err)) {
        fail_now(req, RF_BK_INVALID, err.msg);
        return;
    }
    int64_t n = rf_engine_tokenize_alloc(b->e, prompt, strlen(prompt), true, true, &ids, &err);
    free(prompt);
    if (n < 0) {
        fail_now(req, RF_BK_INTERNAL, err.msg);
        return;
    }
    rf_request_params p = rf_request_default_params();
    p.temperature = req->temperature;
    p.top_k = 0;
    p.top_p = req->top_p > 0 && req->top_p < 1 ? req->top_p : 1.0f;
    p.seed = req->seed;
    p.max_tokens = req->max_tokens > 0 ? req->max_tokens : -1;
    p.ignore_eos = req->ignore_eos;
    local_req *lr = calloc(1, sizeof *lr);
    if (!lr) {
        free(ids);
        fail_now(req, RF_BK_INTERNAL, "out of memory");
        return;
    }
    lr->b = b;
    lr->req = req;
    req->priv = lr;
    b->in_flight++;
    rf_status st = rf_engine_submit(b->e, ids, (int32_t)n, &p, on_event, lr, &lr->id, &err);
    free(ids);
    if (st) {
        b->in_flight--;
        req->priv = NULL;
        free(lr);
        fail_now(req, st == RF_ERR_BUSY ? RF_BK_HTTP_5XX : RF_BK_HTTP_4XX, err.msg);
    }
}

static void local_cancel(rf_backend *base, rf_bk_request *req) {
    local_backend *b = (local_backend *)base;
    local_req *lr = req->priv;
    if (lr) rf_engine_cancel(b->e, lr->id); /* the final event arrives as usual */
}

static const char *local_model(const rf_backend *base) {
    return ((const local_backend *)base)->model_name;
}

static int32_t local_count(const rf_backend *base, const char *text, size_t len) {
    const local_backend *b = (const local_backend *)base;
    rf_error err = {0};
    int64_t n = rf_engine_tokenize(b->e, text, len, false, false, NULL, 0, &err);
    return n < 0 || n > INT32_MAX ? -1 : (int32_t)n;
}

static void local_close(rf_backend *base) {
    local_backend *b = (local_backend *)base;
    /* Closing the engine cancels what is in flight; its final events are posted to the loop,
     * which must run them so every request gets its done call. */
    rf_engine_close(b->e);
    b->e = NULL;
    if (b->in_flight > 0) {
        rf_error err = {0};
        int64_t deadline = rf_now_ns() + 5000000000ll;
        while (b->in_flight > 0 && rf_now_ns() < deadline)
            rf_loop_run(base->loop, NULL, rf_now_ns() + 10000000, &err);
    }
    free(b->model_name);
    free(b);
}

const rf_backend_vtable rf_backend_local = {
    .scheme = "local",
    .usage = "local, local:MODEL.gguf",
    .open = local_open,
    .start = local_start,
    .cancel = local_cancel,
    .model = local_model,
    .count_tokens = local_count,
    .close = local_close,
};
