/* response.c: see response.h. */
#include "openai/response.h"
#include "util/json_dump.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/utf8.h"

json_t *rf_openai_timings_json(const rf_openai_timings *t) {
    double pn = t->prompt_n, gn = t->predicted_n;
    return json_pack("{s:i, s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:f}", "cache_n", (int)t->cache_n,
                     "prompt_n", (int)t->prompt_n, "prompt_ms", t->prompt_ms, "prompt_per_token_ms",
                     pn > 0 ? t->prompt_ms / pn : 0.0, "prompt_per_second",
                     t->prompt_ms > 0 ? pn * 1e3 / t->prompt_ms : 0.0, "predicted_n",
                     (int)t->predicted_n, "predicted_ms", t->predicted_ms, "predicted_per_token_ms",
                     gn > 0 ? t->predicted_ms / gn : 0.0, "predicted_per_second",
                     t->predicted_ms > 0 ? gn * 1e3 / t->predicted_ms : 0.0);
}

json_t *rf_openai_usage_json(int32_t prompt_tokens, int32_t completion_tokens,
                             int32_t cached_tokens) {
    json_t *u =
        json_pack("{s:i, s:i, s:i}", "prompt_tokens", (int)prompt_tokens, "completion_tokens",
                  (int)completion_tokens, "total_tokens", (int)(prompt_tokens + completion_tokens));
    if (u && cached_tokens >= 0 &&
        json_object_set_new(u, "prompt_tokens_details",
                            json_pack("{s:i}", "cached_tokens", (int)cached_tokens))) {
        json_decref(u);
        return NULL;
    }
    return u;
}

/* Generated text as a JSON string: a model can emit bytes that are no UTF-8 (a lone
 * continuation byte, a character cut by the end of the reply), which jansson refuses; each such
 * byte becomes U+FFFD, as in the logprobs' tokens. NULL only when out of memory. */
static json_t *text_json(const char *p, size_t len) {
    json_t *v = json_stringn(p ? p : "", p ? len : 0);
    if (v || !p) return v;
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_status st = RF_OK;
    for (size_t i = 0; i < len && !st;) {
        size_t k = rf_utf8_seq(p + i, len - i);
        st = k ? rf_buf_append(&b, p + i, k) : rf_buf_append_str(&b, "\xEF\xBF\xBD");
        i += k ? k : 1;
    }
    v = st ? NULL : json_stringn(b.len ? (const char *)b.data : "", b.len);
    rf_buf_free(&b);
    return v;
}

static json_t *str_or_null(const char *s) {
    return s && *s ? json_string(s) : json_null();
}

json_t *rf_openai_error_json(const rf_openai_error *e) {
    return json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "message", e->msg, "type",
                     e->type[0] ? e->type : "invalid_request_error", "param", str_or_null(e->param),
                     "code", str_or_null(e->code));
}

static json_t *envelope(const rf_openai_meta *m, bool chunk) {
    const char *object = m->kind == RF_OPENAI_CHAT
                             ? (chunk ? "chat.completion.chunk" : "chat.completion")
                             : "text_completion";
    return json_pack("{s:s, s:s, s:I, s:s, s:s}", "id", m->id, "object", object, "created",
                     (json_int_t)m->created, "model", m->model, "system_fingerprint", "roofline");
}

/* Sets key to v (released) and returns o, or releases both and returns NULL. */
static json_t *with(json_t *o, const char *key, json_t *v) {
    if (!o || !v || json_object_set_new(o, key, v)) {
        json_decref(o);
        if (!o) json_decref(v);
        return NULL;
    }
    return o;
}

json_t *rf_openai_response_json(const rf_openai_meta *m, const char *content, size_t len,
                                const char *finish, const rf_openai_timings *t) {
    json_t *choice;
    if (m->kind == RF_OPENAI_CHAT)
        choice = json_pack("{s:i, s:{s:s, s:o, s:n}, s:n, s:s}", "index", 0, "message", "role",
                           "assistant", "content", text_json(content, len), "refusal", "logprobs",
                           "finish_reason", finish);
    else
        choice = json_pack("{s:i, s:o, s:n, s:s}", "index", 0, "text", text_json(content, len),
                           "logprobs", "finish_reason", finish);
    json_t *o = with(envelope(m, false), "choices", choice ? json_pack("[o]", choice) : NULL);
    o = with(o, "usage",
             rf_openai_usage_json(t->prompt_n + t->cache_n, t->predicted_n, t->cache_n));
    return with(o, "timings", rf_openai_timings_json(t));
}

json_t *rf_openai_delta_chunk_json(const rf_openai_meta *m, json_t *delta, const char *finish) {
    json_t *choice = delta ? json_pack("{s:i, s:o, s:n, s:o}", "index", 0, "delta", delta,
                                       "logprobs", "finish_reason", str_or_null(finish))
                           : NULL;
    json_t *o = with(envelope(m, true), "choices", choice ? json_pack("[o]", choice) : NULL);
    return with(o, "usage", json_null());
}

json_t *rf_openai_chunk_json(const rf_openai_meta *m, const char *role, const char *content,
                             size_t len, const char *finish, const rf_openai_timings *t) {
    json_t *o;
    if (m->kind == RF_OPENAI_CHAT) {
        json_t *delta = json_object();
        if (delta && role) json_object_set_new(delta, "role", json_string(role));
        if (delta && content) json_object_set_new(delta, "content", text_json(content, len));
        o = rf_openai_delta_chunk_json(m, delta, finish);
    } else {
        json_t *choice =
            json_pack("{s:i, s:o, s:n, s:o}", "index", 0, "text", text_json(content, len),
                      "logprobs", "finish_reason", str_or_null(finish));
        o = with(envelope(m, true), "choices", choice ? json_pack("[o]", choice) : NULL);
        o = with(o, "usage", json_null());
    }
    if (t) o = with(o, "timings", rf_openai_timings_json(t));
    return o;
}

json_t *rf_openai_tool_call_delta_json(int index, const char *id, const char *name,
                                       const char *args, size_t len) {
    json_t *fn = json_pack("{s:s%}", "arguments", args ? args : "", args ? len : 0);
    if (fn && name) fn = with(fn, "name", json_string(name));
    json_t *call = fn ? json_pack("{s:i, s:o}", "index", index, "function", fn) : NULL;
    if (call && id) {
        call = with(call, "id", json_string(id));
        call = with(call, "type", json_string("function"));
    }
    return call ? json_pack("[o]", call) : NULL;
}

json_t *rf_openai_tool_calls_json(const char *id, const char *name, const char *args) {
    return json_pack("[{s:s, s:s, s:{s:s, s:s}}]", "id", id, "type", "function", "function", "name",
                     name, "arguments", args);
}

json_t *rf_openai_assistant_json(const char *content, size_t len, json_t *tool_calls) {
    json_t *msg = json_pack("{s:s, s:o, s:n}", "role", "assistant", "content",
                            content ? text_json(content, len) : json_null(), "refusal");
    if (tool_calls) return with(msg, "tool_calls", tool_calls);
    return msg;
}

json_t *rf_openai_chat_body_json(const rf_openai_meta *m, json_t *message, const char *finish,
                                 json_t *usage) {
    json_t *choice = message ? json_pack("{s:i, s:o, s:n, s:s}", "index", 0, "message", message,
                                         "logprobs", "finish_reason", finish)
                             : NULL;
    json_t *o = with(envelope(m, false), "choices", choice ? json_pack("[o]", choice) : NULL);
    if (usage) return with(o, "usage", usage);
    return o;
}

json_t *rf_openai_tool_response_json(const rf_openai_meta *m, const char *content, size_t len,
                                     json_t *tool_calls, const char *finish,
                                     const rf_openai_timings *t) {
    json_t *msg = rf_openai_assistant_json(content, len, tool_calls);
    json_t *o = msg ? rf_openai_chat_body_json(m, msg, finish,
                                               rf_openai_usage_json(t->prompt_n + t->cache_n,
                                                                    t->predicted_n, t->cache_n))
                    : NULL;
    return with(o, "timings", rf_openai_timings_json(t));
}

json_t *rf_openai_usage_chunk_json(const rf_openai_meta *m, int32_t prompt_tokens,
                                   int32_t completion_tokens, int32_t cached_tokens) {
    json_t *o = with(envelope(m, true), "choices", json_array());
    return with(o, "usage", rf_openai_usage_json(prompt_tokens, completion_tokens, cached_tokens));
}

json_t *rf_openai_models_json(const char *id, int64_t created) {
    return json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:s}]}", "object", "list", "data", "id", id,
                     "object", "model", "created", (json_int_t)created, "owned_by", "roofline",
                     "root", id);
}

rf_status rf_openai_sse_event(rf_buf *b, json_t *o) {
    char *s = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) return RF_ERR_NOMEM;
    size_t len0 = b->len;
    rf_status st = rf_buf_append_str(b, "data: ");
    if (!st) st = rf_buf_append_str(b, s);
    if (!st) st = rf_buf_append_str(b, "\n\n");
    if (st) b->len = len0;
    free(s);
    return st;
}

rf_status rf_openai_sse_done(rf_buf *b) {
    return rf_buf_append_str(b, "data: [DONE]\n\n");
}
