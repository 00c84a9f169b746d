/* fake_stream.c: a chat request's plan written out (see fake_server.h for the schedule and the
 * faults, fake_req.h for the files): the stream's content reader produces one SSE write at a
 * time: it formats the next event, then blocks in rf_httpd_wait until that event's absolute due
 * time (waking early for the server's stop or a client that went away; a stall stays silent);
 * the non-stream body is built once, in one buffer of its exact size.
 */
#include <stdio.h>
#include <string.h>

#include "fake/fake_req.h"
#include "openai/response.h"
#include "util/clock.h"
#include "util/json_dump.h"

/* Counts one chunk handed to the socket late_ns after its programmed time. */
static void note_late(fake_counters *c, int64_t late_ns) {
    if (late_ns < 0) late_ns = 0;
    int64_t bin = late_ns / 100000;
    if (bin >= RF_FAKE_LATE_BINS) bin = RF_FAKE_LATE_BINS - 1;
    atomic_fetch_add(&c->late_hist[bin], 1);
    uint64_t prev = atomic_load(&c->late_max_ns);
    while ((uint64_t)late_ns > prev &&
           !atomic_compare_exchange_weak(&c->late_max_ns, &prev, (uint64_t)late_ns)) {
    }
}

int64_t rf_fake_ev_time(const fake_req *r, int32_t i) {
    int32_t last = r->n_ev > 0 ? r->n_ev - 1 : 0;
    if (i > last) i = last;
    if (i < 0) i = 0;
    return r->h.t0 + r->ttft_ns + (int64_t)i * r->gap_ns;
}

/* ---- JSON output ---- */

/* Appends `data: <o compact>\n\n` and releases o; false on allocation failure. */
static bool sse_append(rf_buf *out, json_t *o) {
    return rf_openai_sse_event(out, o) == RF_OK;
}

/* An OpenAI error object; its type follows http (server_error for 500, rate_limit_error for
 * 429, invalid_request_error for the 4xx). */
json_t *rf_fake_error_obj(int http, const char *msg, const char *param, const char *code) {
    rf_openai_error e;
    rf_openai_error_set(&e, http, param, code, "%s", msg);
    return rf_openai_error_json(&e);
}

static json_t *usage_obj(const fake_req *r) {
    return rf_openai_usage_json(r->prompt_tokens, r->completion_tokens, -1);
}

static rf_openai_meta meta_of(const fake_req *r) {
    return (rf_openai_meta){RF_OPENAI_CHAT, r->id, r->created, r->model};
}

/* o with the fake's fingerprint, and without "usage" unless the request asked for usage
 * chunks (then every chunk has "usage": null); NULL stays NULL. */
static json_t *fake_envelope(const fake_req *r, json_t *o) {
    if (o && json_object_set_new(o, "system_fingerprint", json_string(FINGERPRINT))) {
        json_decref(o);
        return NULL;
    }
    if (o && !r->include_usage) json_object_del(o, "usage");
    return o;
}

/* The chunk of one delta (stolen). */
static json_t *delta_chunk(const fake_req *r, json_t *delta, const char *finish) {
    rf_openai_meta m = meta_of(r);
    return fake_envelope(r, rf_openai_delta_chunk_json(&m, delta, finish));
}

/* The text of content tokens [a, b). */
static bool content_text(const fake_req *r, int32_t a, int32_t b, rf_buf *t) {
    for (int32_t j = a; j < b; j++) {
        rf_status st = r->reply ? rf_buf_append(t, r->reply + r->reply_off[j],
                                                r->reply_off[j + 1] - r->reply_off[j])
                                : rf_buf_append(t, r->token_text, r->token_text_len);
        if (st) return false;
    }
    return true;
}

static json_t *tool_header(const fake_req *r) {
    return rf_openai_tool_call_delta_json(0, r->call_id, r->tool_name, "", 0);
}

/* The delta of event ev (content chunk, tool-call header, or arguments fragment). */
static json_t *event_delta(const fake_req *r, int32_t ev) {
    json_t *d = json_object();
    if (!d) return NULL;
    if (ev == 0) json_object_set_new(d, "role", json_string("assistant"));
    if (ev < r->n_cev) {
        rf_buf t;
        rf_buf_init(&t, 0);
        int32_t a = ev * r->tpc, b = a + r->tpc < r->n_content ? a + r->tpc : r->n_content;
        json_t *s = content_text(r, a, b, &t)
                        ? json_stringn(t.len ? (const char *)t.data : "", t.len)
                        : NULL;
        rf_buf_free(&t);
        if (!s || json_object_set_new(d, "content", s)) goto fail;
    } else if (ev == r->n_cev) {
        if (ev == 0) json_object_set_new(d, "content", json_null());
        if (json_object_set_new(d, "tool_calls", tool_header(r))) goto fail;
    } else {
        int32_t j = ev - r->n_cev - 1;
        json_t *tc = rf_openai_tool_call_delta_json(0, NULL, NULL, r->tool_args + r->frag_off[j],
                                                    r->frag_off[j + 1] - r->frag_off[j]);
        if (json_object_set_new(d, "tool_calls", tc)) goto fail;
    }
    return d;
fail:
    json_decref(d);
    return NULL;
}

static bool is_mid_stream_fault(rf_fake_fault f) {
    return f == RF_FAKE_FAULT_STALL || f == RF_FAKE_FAULT_TRUNCATE ||
           f == RF_FAKE_FAULT_INVALID_JSON || f == RF_FAKE_FAULT_ERROR_EVENT;
}

/* Formats the stream's next write into r->out and sets *due; may set r->end. False when out of
 * memory. */
static bool stream_next(fake_req *r, int64_t *due) {
    if (!r->fault_done && is_mid_stream_fault(r->fault) && r->next_ev == r->fault_at) {
        r->fault_done = true;
        *due = rf_fake_ev_time(r, r->fault_at);
        switch (r->fault) {
        case RF_FAKE_FAULT_TRUNCATE:
            r->end = END_CLEAN;
            *due = 0;
            return true;
        case RF_FAKE_FAULT_STALL:
            r->end = END_ABORT;
            *due += r->stall_ns;
            return true;
        case RF_FAKE_FAULT_INVALID_JSON: {
            char line[256];
            snprintf(line, sizeof line,
                     "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"choices\":"
                     "[{\"index\":0,\"delta\":{\"content\":\"tok\n\n",
                     r->id);
            return rf_buf_append_str(&r->out, line) == RF_OK;
        }
        case RF_FAKE_FAULT_ERROR_EVENT:
            r->end = END_CLEAN;
            return sse_append(&r->out,
                              rf_fake_error_obj(500, "fake error event after the 200 header", NULL,
                                                "fake_error_event")) &&
                   rf_openai_sse_done(&r->out) == RF_OK;
        default:
            break;
        }
    }
    if (r->next_ev < r->n_ev) {
        *due = rf_fake_ev_time(r, r->next_ev);
        json_t *d = event_delta(r, r->next_ev);
        r->next_ev++;
        return d && sse_append(&r->out, delta_chunk(r, d, NULL));
    }
    /* the tail: finish chunk, usage chunk, [DONE] */
    *due = rf_fake_ev_time(r, r->n_ev);
    r->end = END_CLEAN;
    json_t *d = json_object();
    if (d && r->n_ev == 0) json_object_set_new(d, "role", json_string("assistant"));
    if (!d || !sse_append(&r->out, delta_chunk(r, d, r->finish))) return false;
    if (r->include_usage && r->usage) {
        rf_openai_meta m = meta_of(r);
        json_t *u = fake_envelope(
            r, rf_openai_usage_chunk_json(&m, (int32_t)r->prompt_tokens, r->completion_tokens, -1));
        if (!sse_append(&r->out, u)) return false;
    }
    return rf_openai_sse_done(&r->out) == RF_OK;
}

ssize_t rf_fake_stream_read(rf_httpd_req *h, uint64_t pos, char *buf, size_t max) {
    fake_req *r = (fake_req *)h;
    (void)pos;
    while (r->out_off >= r->out.len) {
        if (r->end == END_CLEAN) {
            if (!r->reached_end) {
                fake_counters *c = &r->srv->c;
                uint64_t now = (uint64_t)rf_now_ns(), prev = atomic_load(&c->last_end_ns);
                while (now > prev && !atomic_compare_exchange_weak(&c->last_end_ns, &prev, now)) {
                }
                atomic_fetch_add(&c->streamed_tokens, (uint64_t)r->completion_tokens);
            }
            r->reached_end = true;
            return RF_HTTPD_READ_END;
        }
        rf_buf_reset(&r->out);
        r->out_off = 0;
        int64_t due = 0;
        if (r->end == END_ABORT || !stream_next(r, &due)) {
            r->ended_by_us = true;
            return RF_HTTPD_READ_ERROR;
        }
        rf_httpd_wait_result w = rf_httpd_wait(&r->h, due);
        if (w == RF_HTTPD_WAIT_STOP) {
            r->ended_by_us = true;
            return RF_HTTPD_READ_ERROR;
        }
        if (w == RF_HTTPD_WAIT_GONE) {
            r->client_gone = true;
            return RF_HTTPD_READ_ERROR;
        }
        if (r->end == END_ABORT) { /* the stall ran its course */
            r->ended_by_us = true;
            return RF_HTTPD_READ_ERROR;
        }
        note_late(&r->srv->c, rf_now_ns() - due);
    }
    size_t n = r->out.len - r->out_off;
    if (n > max) n = max;
    memcpy(buf, r->out.data + r->out_off, n);
    r->out_off += n;
    return (ssize_t)n;
}

/* Non-stream truncate: the first half of r->out, then a dropped connection. */
ssize_t rf_fake_truncated_read(rf_httpd_req *h, uint64_t pos, char *buf, size_t max) {
    fake_req *r = (fake_req *)h;
    size_t half = r->out.len / 2;
    if (pos >= half) {
        r->ended_by_us = true;
        return RF_HTTPD_READ_ERROR;
    }
    size_t n = half - (size_t)pos;
    if (n > max) n = max;
    memcpy(buf, r->out.data + pos, n);
    return (ssize_t)n;
}

/* The non-stream chat.completion body, into r->out, built once in one buffer reserved for its
 * exact size: jansson writes the envelope with an empty content string, and the content is
 * spliced in between its quotes (the reply, or the token text escaped once and copied
 * n_content times), so no copy of the content is made on the way. False when out of memory. */
bool rf_fake_completion_body(fake_req *r) {
    static const char key[] = "\"content\":\"\"";
    bool has_content = r->n_content > 0 || !r->has_tool;
    json_t *msg = rf_openai_assistant_json(
        has_content ? "" : NULL, 0,
        r->has_tool ? rf_openai_tool_calls_json(r->call_id, r->tool_name, r->tool_args) : NULL);
    rf_openai_meta m = meta_of(r);
    json_t *o = rf_openai_chat_body_json(&m, msg, r->finish, r->usage ? usage_obj(r) : NULL);
    if (o && json_object_set_new(o, "system_fingerprint", json_string(FINGERPRINT))) {
        json_decref(o);
        o = NULL;
    }
    char *env = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!env) return false;
    size_t env_len = strlen(env), at = env_len, piece_len = 0, reps = 0;
    char *piece = NULL; /* the content, escaped, with its quotes */
    if (has_content && r->n_content > 0) {
        /* Inside a string every '"' is escaped, so `"content":""` can only be the key and its
         * empty value. */
        const char *k = strstr(env, key);
        json_t *str =
            r->reply ? json_string(r->reply) : json_stringn(r->token_text, r->token_text_len);
        piece = k && str ? rf_json_dumps(str, JSON_ENCODE_ANY) : NULL;
        json_decref(str);
        if (!piece) {
            free(env);
            return false;
        }
        at = (size_t)(k - env) + sizeof key - 2; /* just before the closing quote */
        piece_len = strlen(piece) - 2;
        reps = r->reply ? 1 : (size_t)r->n_content;
    }
    /* plan_request checked reps * piece_len against RF_FAKE_COMPLETION_MAX; checked again here
     * so that no estimate can let a body past it */
    rf_buf_reset(&r->out);
    bool ok = rf_fake_mul_sat(reps, piece_len) <= RF_FAKE_COMPLETION_MAX &&
              rf_buf_reserve(&r->out, env_len + reps * piece_len) == RF_OK &&
              rf_buf_append(&r->out, env, at) == RF_OK;
    for (size_t i = 0; ok && i < reps; i++)
        ok = rf_buf_append(&r->out, piece + 1, piece_len) == RF_OK;
    ok = ok && rf_buf_append(&r->out, env + at, env_len - at) == RF_OK;
    free(piece);
    free(env);
    return ok;
}
