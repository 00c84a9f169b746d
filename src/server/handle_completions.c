/* handle_completions.c: POST /v1/chat/completions and POST /v1/completions (see srv.h): the
 * request parsed and submitted, then a stream (completion_stream.c) or, non-stream, a wait on
 * the connection's thread until the engine's final event (polling the socket, so a client that
 * goes away cancels the request) and one body.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "openai/request.h"
#include "server/srv.h"

#define POLL_MS      200   /* a non-stream wait's check for a client that went away */
#define READER_BLOCK 16384 /* a stream's write size */

/* A non-stream chat reply to a request with tools: read for calls in the model's format. */
static rf_httpd_ret answer_tool_reply(srv_req *r, const rf_openai_timings *t) {
    rf_reply rep;
    rf_error err = {0};
    pthread_rwlock_rdlock(&r->s->lock);
    rf_status st = r->s->e ? rf_engine_parse_reply(r->s->e, (const char *)r->pending.data,
                                                   r->pending.len, r->tools_json, &rep, &err)
                           : RF_ERR_INTERNAL;
    pthread_rwlock_unlock(&r->s->lock);
    if (st) return rf_srv_fail(r, 500, NULL, NULL, "reading the reply's tool calls: %s", err.msg);
    bool oom = false;
    json_t *calls = rf_srv_tool_calls_json(r, &rep, 0, &oom);
    const char *fin = rf_srv_finish_reason(r->finish);
    if (calls && r->finish == RF_FINISH_STOP) fin = "tool_calls";
    json_t *o = NULL;
    if (!oom) {
        if (calls) {
            const char *content = rep.content;
            o = rf_openai_tool_response_json(&r->meta, content, content ? strlen(content) : 0,
                                             calls, fin, t);
        } else {
            o = rf_openai_response_json(&r->meta, (const char *)r->pending.data, r->pending.len,
                                        fin, t);
        }
    }
    rf_reply_free(&rep);
    return rf_httpd_reply_json(&r->h, 200, o, NULL, NULL);
}

/* Queues the stream (with the tool-call splitter when the request has tools). */
static rf_httpd_ret answer_stream(srv_req *r) {
    rf_srv *s = r->s;
    if (r->tools_json) {
        const char *open = NULL, *close = NULL;
        pthread_rwlock_rdlock(&s->lock);
        if (s->e) rf_engine_tool_markers(s->e, &open, &close);
        pthread_rwlock_unlock(&s->lock);
        rf_error err = {0};
        if (rf_tsplit_init(&r->split, open, close, r->tools_json, rf_srv_on_split, r, &err)) {
            rf_srv_cancel(r);
            return RF_HTTPD_CLOSE;
        }
        r->split_on = true;
    }
    rf_httpd_ret ret =
        rf_httpd_stream(&r->h, 200, RF_HTTPD_SIZE_UNKNOWN, READER_BLOCK, rf_srv_stream_read,
                        "text/event-stream", "Cache-Control", "no-cache");
    if (ret != RF_HTTPD_OK) rf_srv_cancel(r);
    return ret;
}

/* Non-stream: waits on this connection's thread, watching the socket, then the body. The
 * generation is no idle time: the idle timeout is held off meanwhile. */
static rf_httpd_ret answer_body(srv_req *r) {
    rf_httpd_hold(&r->h, true);
    pthread_mutex_lock(&r->mu);
    while (!r->done) {
        struct timespec ts = rf_srv_wake_in(POLL_MS * 1000000ll);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        if (!r->done && !r->gone && rf_httpd_client_gone(&r->h)) {
            r->gone = true;
            pthread_mutex_unlock(&r->mu);
            rf_srv_cancel(r);
            pthread_mutex_lock(&r->mu);
        }
    }
    pthread_mutex_unlock(&r->mu);
    rf_httpd_hold(&r->h, false);
    if (r->gone) {
        r->h.status = 499; /* as nginx logs it: the client closed the request */
        return RF_HTTPD_CLOSE;
    }
    rf_openai_error e;
    if (rf_srv_gen_failed(r, &e))
        return rf_srv_reply_error(r, &e, e.http == 503 ? "Retry-After" : NULL, "1");
    rf_openai_timings t = rf_srv_timings(r);
    if (r->tools_json) return answer_tool_reply(r, &t);
    json_t *o = rf_openai_response_json(&r->meta, (const char *)r->pending.data, r->pending.len,
                                        rf_srv_finish_reason(r->finish), &t);
    if (r->want_lp) o = rf_srv_with_logprobs(r, o, &r->lps);
    return rf_httpd_reply_json(&r->h, 200, o, NULL, NULL);
}

static rf_httpd_ret answer_completion(srv_req *r, rf_openai_kind kind) {
    rf_srv *s = r->s;
    rf_openai_req q;
    rf_openai_error e;
    rf_openai_limits lim = {s->models, s->n_ctx};
    if (rf_openai_parse(kind, (const char *)r->h.body.data, r->h.body.len, &lim, &q, &e))
        return rf_srv_reply_error(r, &e, NULL, NULL);
    bool queued = false;
    rf_httpd_ret ret = rf_srv_submit(r, &q, &queued);
    bool stream = q.stream;
    r->include_usage = q.include_usage;
    rf_openai_req_free(&q);
    if (!queued) return ret;
    snprintf(r->id, sizeof r->id, "%s-%llu", kind == RF_OPENAI_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)r->eid);
    r->meta = (rf_openai_meta){kind, r->id, (int64_t)time(NULL), s->model_id};
    return stream ? answer_stream(r) : answer_body(r);
}

rf_httpd_ret rf_srv_answer_chat(rf_httpd_req *h) {
    return answer_completion((srv_req *)h, RF_OPENAI_CHAT);
}

rf_httpd_ret rf_srv_answer_completions(rf_httpd_req *h) {
    return answer_completion((srv_req *)h, RF_OPENAI_COMPLETION);
}
