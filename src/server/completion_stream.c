/* completion_stream.c: a completion's stream (see srv.h): the content reader runs on the
 * connection's thread and blocks on the request's condition variable, fed by the engine's
 * events; after 1 s without news it writes an SSE comment ": ping" so a dead client shows up
 * as a failed write. With tools, the reply is split into content and tool-call deltas as it
 * comes (server/tool_stream.h), and what the splitter held back is settled at the end from a
 * parse of the whole reply.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/srv.h"

#define PING_NS 1000000000ll /* a stream's keep-alive comment after 1 s of silence */

/* The splitter's pieces as stream chunks, appended to the reader's output. */
void rf_srv_on_split(void *user, rf_tsplit_kind k, int32_t index, const char *text, size_t len) {
    srv_req *r = user;
    json_t *o = NULL;
    if (k == RF_TSPLIT_CONTENT) {
        o = rf_openai_chunk_json(&r->meta, NULL, text, len, NULL, NULL);
    } else {
        char id[64], name[80];
        rf_srv_call_id(r, index, id, sizeof id);
        snprintf(name, sizeof name, "%.*s", (int)len, text);
        json_t *calls = k == RF_TSPLIT_CALL
                            ? rf_openai_tool_call_delta_json(index, id, name, "", 0)
                            : rf_openai_tool_call_delta_json(index, NULL, NULL, text, len);
        json_t *delta = calls ? json_pack("{s:o}", "tool_calls", calls) : NULL;
        o = delta ? rf_openai_delta_chunk_json(&r->meta, delta, NULL) : NULL;
    }
    if (rf_openai_sse_event(&r->out, o)) r->split_oom = true;
}

/* After the reply's end: what the splitter held back, and the calls it did not stream, from
 * the parse of the whole reply. Returns the number of calls in all. */
static int32_t stream_finish_tools(srv_req *r) {
    const char *held;
    size_t held_len;
    int32_t streamed = r->split.n_calls;
    if (!rf_tsplit_finish(&r->split, &held, &held_len)) return streamed;
    rf_reply rep;
    rf_error err = {0};
    int32_t total = streamed;
    pthread_rwlock_rdlock(&r->s->lock);
    rf_status st = r->s->e ? rf_engine_parse_reply(r->s->e, (const char *)r->reply.data,
                                                   r->reply.len, r->tools_json, &rep, &err)
                           : RF_ERR_INTERNAL;
    pthread_rwlock_unlock(&r->s->lock);
    if (st) {
        r->split_oom = true;
        return streamed;
    }
    if (rep.n_calls > streamed) {
        for (int32_t i = streamed; i < rep.n_calls; i++) {
            char id[64];
            rf_srv_call_id(r, i, id, sizeof id);
            const char *a = rep.calls[i].arguments;
            json_t *calls = rf_openai_tool_call_delta_json(i, id, rep.calls[i].name, a, strlen(a));
            json_t *delta = calls ? json_pack("{s:o}", "tool_calls", calls) : NULL;
            if (rf_openai_sse_event(
                    &r->out, delta ? rf_openai_delta_chunk_json(&r->meta, delta, NULL) : NULL))
                r->split_oom = true;
        }
        total = rep.n_calls;
    } else if (held_len) {
        rf_srv_on_split(r, RF_TSPLIT_CONTENT, -1, held, held_len);
    }
    rf_reply_free(&rep);
    return total;
}

/* Called with mu held, text pending: the splitter takes it (outside the lock: the text is taken
 * by swapping buffers). Returns with mu held. */
static rf_status take_split(srv_req *r) {
    rf_status st = RF_OK;
    r->lps.n = 0; /* a reply read for tool calls carries no logprobs */
    if (!r->pending.len) return st;
    rf_buf took = r->pending;
    r->pending = r->chunk;
    rf_buf_reset(&r->pending);
    r->chunk = took;
    pthread_mutex_unlock(&r->mu);
    st = rf_buf_append(&r->reply, r->chunk.data, r->chunk.len);
    if (!st) st = rf_tsplit_push(&r->split, (const char *)r->chunk.data, r->chunk.len);
    if (!st && r->split_oom) st = RF_ERR_NOMEM;
    pthread_mutex_lock(&r->mu);
    r->lps.n = 0;
    return st;
}

/* Called with mu held: the pending text and its logprobs as one chunk (formatted outside the
 * lock). Returns with mu held. */
static rf_status take_chunk(srv_req *r) {
    json_t *o = rf_openai_chunk_json(&r->meta, NULL, (const char *)r->pending.data, r->pending.len,
                                     NULL, NULL);
    rf_buf_reset(&r->pending);
    rf_openai_lps took = r->lps;
    r->lps = r->lps_out;
    r->lps.n = 0;
    r->lps_out = took;
    pthread_mutex_unlock(&r->mu);
    if (r->want_lp) o = rf_srv_with_logprobs(r, o, &r->lps_out);
    rf_status st = rf_openai_sse_event(&r->out, o);
    pthread_mutex_lock(&r->mu);
    return st;
}

/* The stream's tail once the engine's final event is in: an error event, or the finish chunk
 * (with the tool calls settled), the usage chunk when asked for, and [DONE]. */
static bool stream_end(srv_req *r) {
    const rf_openai_meta *m = &r->meta;
    r->ended = true;
    rf_openai_error e;
    rf_status st;
    if (rf_srv_gen_failed(r, &e)) {
        st = rf_openai_sse_event(&r->out, rf_openai_error_json(&e));
        return !st && !rf_openai_sse_done(&r->out);
    }
    rf_openai_timings t = rf_srv_timings(r);
    const char *fin = rf_srv_finish_reason(r->finish);
    if (r->split_on) {
        int32_t calls = stream_finish_tools(r);
        if (r->split_oom) return false;
        if (calls > 0 && r->finish == RF_FINISH_STOP) fin = "tool_calls";
    }
    st = rf_openai_sse_event(&r->out, rf_openai_chunk_json(m, NULL, NULL, 0, fin, &t));
    if (!st && r->include_usage)
        st = rf_openai_sse_event(&r->out,
                                 rf_openai_usage_chunk_json(m, r->n_prompt, r->n_gen, r->n_cached));
    return !st && !rf_openai_sse_done(&r->out);
}

/* The next write into r->out (possibly empty while nothing came); false on failure. */
static bool stream_next(srv_req *r) {
    const rf_openai_meta *m = &r->meta;
    if (!r->role_sent) {
        r->role_sent = true;
        if (m->kind == RF_OPENAI_CHAT)
            return !rf_openai_sse_event(&r->out,
                                        rf_openai_chunk_json(m, "assistant", NULL, 0, NULL, NULL));
    }
    pthread_mutex_lock(&r->mu);
    if (!r->done && r->pending.len == 0 && r->lps.n == 0) {
        struct timespec ts = rf_srv_wake_in(PING_NS);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    rf_status st = RF_OK;
    if (r->split_on)
        st = take_split(r);
    else if (r->pending.len || r->lps.n) /* logprobs go with the chunk their tokens' events made */
        st = take_chunk(r);
    bool done = r->done && r->pending.len == 0 && r->lps.n == 0;
    pthread_mutex_unlock(&r->mu);
    if (st) return false;
    if (!done) {
        if (r->out.len == 0) return !rf_buf_append_str(&r->out, ": ping\n\n");
        return true;
    }
    /* done: the engine thread writes nothing more, so the fields are stable */
    return stream_end(r);
}

ssize_t rf_srv_stream_read(rf_httpd_req *h, uint64_t pos, char *buf, size_t max) {
    srv_req *r = (srv_req *)h;
    (void)pos;
    while (r->out_off >= r->out.len) {
        if (r->ended) return RF_HTTPD_READ_END;
        rf_buf_reset(&r->out);
        r->out_off = 0;
        if (!stream_next(r)) return RF_HTTPD_READ_ERROR;
    }
    size_t n = r->out.len - r->out_off;
    if (n > max) n = max;
    memcpy(buf, r->out.data + r->out_off, n);
    r->out_off += n;
    return (ssize_t)n;
}
