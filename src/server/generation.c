/* generation.c: the engine side of a completion (see srv.h): the prompt rendered, tokenized and
 * submitted, the engine's events copied into the request, cancellation, and the outcome's
 * shapes (finish reason, timings, tool calls, logprobs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/srv.h"

struct timespec rf_srv_wake_in(int64_t ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ns += ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000ll);
    ts.tv_nsec = (long)(ns % 1000000000ll);
    return ts;
}

/* Scheduler thread: copies the event's text and counts into the request and signals. */
static void on_event(void *user, const rf_event *ev) {
    srv_req *r = user;
    pthread_mutex_lock(&r->mu);
    if (ev->text_len && rf_buf_append(&r->pending, ev->text, ev->text_len)) r->oom = true;
    if (r->want_lp && ev->token >= 0 && rf_openai_lps_push(&r->lps, ev)) r->oom = true;
    if (!r->t_first && ev->token >= 0) r->t_first = ev->t_ns;
    if (ev->t_admit_ns) r->t_admit = ev->t_admit_ns;
    r->t_submit = ev->t_submit_ns;
    r->n_prompt = ev->n_prompt;
    r->n_gen = ev->n_generated;
    r->n_cached = ev->n_cached;
    if (ev->token >= 0) rf_metrics_itl_add(&r->itl, ev->t_ns);
    bool fin = ev->finish != RF_FINISH_NONE;
    rf_metrics *m = r->s->metrics;
    if (m && ev->token >= 0) rf_metrics_token(m, ev->t_ns);
    if (fin) {
        r->done = true;
        r->finish = ev->finish;
        r->t_end = ev->t_ns;
        if (ev->error) snprintf(r->errmsg, sizeof r->errmsg, "%s", ev->error);
        /* recorded before anyone sees done: a client that got its reply finds it counted */
        rf_metrics_req mr = {r->finish,  r->n_prompt, r->n_gen, r->h.t0, r->t_submit,
                             r->t_admit, r->t_first,  r->t_end, &r->itl};
        if (m) rf_metrics_request(m, &mr);
    }
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (fin) rf_httpd_unref(&r->h);
}

void rf_srv_cancel(srv_req *r) {
    pthread_mutex_lock(&r->mu);
    bool live = r->submitted && !r->done;
    pthread_mutex_unlock(&r->mu);
    if (!live) return;
    pthread_rwlock_rdlock(&r->s->lock);
    if (r->s->e) rf_engine_cancel(r->s->e, r->eid);
    pthread_rwlock_unlock(&r->s->lock);
}

rf_openai_timings rf_srv_timings(const srv_req *r) {
    rf_openai_timings t = {0};
    t.prompt_n = r->n_prompt - r->n_cached; /* as llama-server: the prompt tokens computed */
    t.predicted_n = r->n_gen;
    t.cache_n = r->n_cached;
    if (r->t_first && r->t_admit) t.prompt_ms = (double)(r->t_first - r->t_admit) / 1e6;
    if (r->t_first && r->t_end) t.predicted_ms = (double)(r->t_end - r->t_first) / 1e6;
    return t;
}

/* 503 for a request cancelled by the server's shutdown, 500 for an engine failure. */
bool rf_srv_gen_failed(const srv_req *r, rf_openai_error *e) {
    if (r->oom) {
        rf_openai_error_set(e, 500, NULL, NULL, "generation failed: out of memory");
    } else if (r->finish == RF_FINISH_CANCELLED) {
        rf_openai_error_set(
            e, 503, NULL, "cancelled",
            "generation cancelled: the server stopped before the reply was finished");
    } else if (r->finish == RF_FINISH_ERROR) {
        rf_openai_error_set(e, 500, NULL, NULL, "generation failed: %s", r->errmsg);
    } else {
        return false;
    }
    return true;
}

const char *rf_srv_finish_reason(rf_finish f) {
    return f == RF_FINISH_LENGTH ? "length" : "stop";
}

void rf_srv_call_id(const srv_req *r, int32_t index, char *out, size_t cap) {
    snprintf(out, cap, "call_%llu_%d", (unsigned long long)r->eid, (int)index);
}

json_t *rf_srv_tool_calls_json(const srv_req *r, const rf_reply *rep, int32_t from, bool *oom) {
    if (rep->n_calls <= from) return NULL;
    json_t *arr = json_array();
    for (int32_t i = from; arr && i < rep->n_calls; i++) {
        char id[64];
        rf_srv_call_id(r, i, id, sizeof id);
        json_t *one = rf_openai_tool_calls_json(id, rep->calls[i].name, rep->calls[i].arguments);
        if (!one || json_array_extend(arr, one)) {
            json_decref(arr);
            arr = NULL;
        }
        json_decref(one);
    }
    if (!arr) *oom = true;
    return arr;
}

static int64_t engine_piece(void *user, int32_t id, char *buf, int64_t cap) {
    return rf_engine_detokenize(user, &id, 1, buf, cap);
}

/* Pieces from the engine; none once it is gone. */
json_t *rf_srv_with_logprobs(srv_req *r, json_t *o, const rf_openai_lps *l) {
    pthread_rwlock_rdlock(&r->s->lock);
    json_t *lp = rf_openai_logprobs_json(r->meta.kind, l->v, l->n, r->s->e ? engine_piece : NULL,
                                         r->s->e, &r->text_off);
    pthread_rwlock_unlock(&r->s->lock);
    return rf_openai_with_logprobs(o, lp);
}

/* The engine refused the request: its status as an OpenAI error. */
static rf_httpd_ret refused(srv_req *r, rf_status st, const rf_request_params *p, const char *msg) {
    if (st == RF_ERR_BUSY) return rf_srv_fail(r, 429, NULL, "server_is_overloaded", "%s", msg);
    if (st == RF_ERR_CONTEXT)
        return rf_srv_fail(r, 400, "messages", "context_length_exceeded", "%s", msg);
    if (st == RF_ERR_UNSUPPORTED || st == RF_ERR_ARG) /* the constraint, compiled */
        return rf_srv_fail(
            r, 400, p->json_schema ? "response_format" : (p->tools_json ? "tools" : NULL),
            st == RF_ERR_UNSUPPORTED ? "unsupported_schema" : "invalid_value", "%s", msg);
    return rf_srv_fail(r, 500, NULL, NULL, "%s", msg);
}

rf_httpd_ret rf_srv_submit(srv_req *r, const rf_openai_req *q, bool *queued) {
    rf_srv *s = r->s;
    rf_error err = {0};
    char *prompt = NULL;
    int32_t *ids = NULL;
    rf_httpd_ret ret = RF_HTTPD_OK;
    *queued = false;
    pthread_rwlock_rdlock(&s->lock);
    if (!s->e || rf_httpd_stopping(r->h.d)) {
        ret = rf_srv_fail(r, 503, NULL, "server_unavailable", "the server is %s",
                          s->e ? "shutting down" : "loading the model");
        goto out;
    }
    const char *text = q->prompt;
    if (q->kind == RF_OPENAI_CHAT) {
        const char *tools = q->tool_choice != RF_TOOL_CHOICE_NONE ? q->tools_json : NULL;
        rf_status st = rf_engine_chat_prompt(s->e, q->msgs, q->n_msgs, tools, true, &prompt, &err);
        if (st) {
            ret = rf_srv_fail(r, st == RF_ERR_NOMEM ? 500 : 400, "messages", NULL, "%s", err.msg);
            goto out;
        }
        text = prompt;
    }
    rf_request_params p = rf_openai_engine_params(q);
    if (p.tools_json && !(r->tools_json = strdup(p.tools_json))) {
        ret = rf_srv_fail(r, 500, NULL, NULL, "out of memory");
        goto out;
    }
    int64_t n = rf_engine_tokenize_alloc(s->e, text, strlen(text), true, true, &ids, &err);
    if (n < 0) {
        ret = rf_srv_fail(r, 500, NULL, NULL, "tokenizing the prompt: %s", err.msg);
        goto out;
    }
    int64_t want = q->max_tokens > 0 ? q->max_tokens : 1;
    if (n < 1 || n + want > s->n_ctx || n > INT32_MAX) {
        ret = rf_srv_fail(r, 400, q->kind == RF_OPENAI_CHAT ? "messages" : "prompt",
                          "context_length_exceeded",
                          "This model's maximum context length is %d tokens. However, you "
                          "requested %lld tokens (%lld in the %s, %lld in the completion).",
                          (int)s->n_ctx, (long long)(n + want), (long long)n,
                          q->kind == RF_OPENAI_CHAT ? "messages" : "prompt", (long long)want);
        goto out;
    }
    r->want_lp = p.logprobs >= 0;
    rf_httpd_ref(&r->h); /* the engine's, until the final event */
    r->submitted = true;
    rf_status st = rf_engine_submit(s->e, ids, (int32_t)n, &p, on_event, r, &r->eid, &err);
    if (st) {
        r->submitted = false;
        rf_httpd_unref(&r->h); /* not the last: the connection holds one */
        ret = refused(r, st, &p, err.msg);
        goto out;
    }
    r->counted = true;
    atomic_fetch_add(&s->active, 1);
    *queued = true;
out:
    pthread_rwlock_unlock(&s->lock);
    free(prompt);
    free(ids);
    return ret;
}
