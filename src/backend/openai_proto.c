/* openai_proto.c: Chat Completions bodies and reply folding, no transport (openai_proto.h). */
#include "backend/openai_proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/json_dump.h"

#define OA_MAX_CALLS 256 /* tool-call indices accepted in one reply */

struct rf_bk_openai_call {
    rf_buf id, name, args;
    int64_t args_bytes; /* arguments bytes that arrived (args keeps at most the reply cap) */
    bool used;
};

/* An integer field in [0, INT32_MAX], else -1. */
static int32_t get_count(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) return -1;
    json_int_t x = json_integer_value(v);
    return x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
}

static double get_number(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* A short excerpt of untrusted text for messages: valid UTF-8, cut on a character, control
 * and invalid bytes escaped (util/file.h). */
static void clean_copy(char *out, size_t n, const char *s, size_t len) {
    rf_escaped(s, len, out, n);
}

/* The message of an OpenAI-style error: {"error":{"message":...}}, {"error":"..."},
 * {"message":...} or FastAPI's {"detail":...}; falls back to the raw text. */
void rf_bk_openai_error_message(const char *body, size_t len, char *out, size_t n) {
    out[0] = 0;
    json_t *root = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *msg = NULL;
    if (json_is_object(root)) {
        json_t *e = json_object_get(root, "error");
        if (json_is_object(e))
            msg = json_string_value(json_object_get(e, "message"));
        else if (json_is_string(e))
            msg = json_string_value(e);
        if (!msg) msg = json_string_value(json_object_get(root, "message"));
        if (!msg) msg = json_string_value(json_object_get(root, "detail"));
    }
    if (msg)
        clean_copy(out, n, msg, strlen(msg));
    else
        clean_copy(out, n, body, len < 400 ? len : 400);
    json_decref(root);
}

static const char *error_object_message(const json_t *e) {
    if (json_is_string(e)) return json_string_value(e);
    const char *m = json_is_object(e) ? json_string_value(json_object_get(e, "message")) : NULL;
    return m ? m : "(no message)";
}

/* The double closest to f's shortest decimal form: 0.7f goes out as 0.7, not 0.699999988. */
double rf_bk_openai_float_to_double(float f) {
    char s[32];
    for (int p = 6; p <= 9; p++) {
        snprintf(s, sizeof s, "%.*g", p, (double)f);
        if (strtof(s, NULL) == f) break;
    }
    return strtod(s, NULL);
}

/* ---------------------------------------------------------------- request body */

/* Builds the Chat Completions JSON into out; on failure writes a reason into why. */
bool rf_bk_openai_build_body(const rf_bk_request *req, const char *model, const json_t *extra,
                             rf_buf *out, char *why, size_t why_n) {
    json_t *o = json_object(), *msgs = json_array();
    bool ok = o && msgs;
    if (ok && model) ok = !json_object_set_new(o, "model", json_string(model));
    for (int32_t i = 0; ok && i < req->n_msgs; i++) {
        const rf_bk_message *m = &req->msgs[i];
        json_t *jm = json_object();
        json_t *content = m->content ? json_string(m->content) : json_null();
        if (!jm || !content) {
            if (!jm)
                snprintf(why, why_n, "out of memory");
            else
                snprintf(why, why_n, "message %d: content is not valid UTF-8", (int)i);
            json_decref(jm);
            json_decref(content);
            ok = false;
            break;
        }
        int r1 = json_object_set_new(jm, "role", json_string(m->role ? m->role : "user"));
        int r2 = json_object_set_new(jm, "content", content); /* takes content either way */
        if (r1 || r2) {
            snprintf(why, why_n, "out of memory");
            ok = false; /* jm is appended below and freed with msgs */
        }
        if (m->tool_call_id) {
            json_t *id = json_string(m->tool_call_id);
            if (!id) {
                snprintf(why, why_n, "message %d: tool_call_id is not valid UTF-8", (int)i);
                ok = false;
            }
            json_object_set_new(jm, "tool_call_id", id);
        }
        if (ok && m->tool_calls) {
            json_t *tc = json_loads(m->tool_calls, 0, NULL);
            if (!json_is_array(tc)) {
                snprintf(why, why_n, "message %d: tool_calls is not a JSON array", (int)i);
                ok = false;
            }
            json_object_set_new(jm, "tool_calls", tc);
        }
        if (json_array_append_new(msgs, jm)) {
            snprintf(why, why_n, "out of memory");
            ok = false;
        }
    }
    if (ok) { /* a member that cannot be added: out of memory, no request */
        ok = !json_object_set_new(o, "messages", msgs);
        msgs = NULL;
        if (req->max_tokens > 0) {
            ok = ok && !json_object_set_new(o, "max_tokens", json_integer(req->max_tokens));
            ok = ok &&
                 !json_object_set_new(o, "max_completion_tokens", json_integer(req->max_tokens));
        }
        if (isfinite(req->temperature) && req->temperature >= 0)
            ok = ok &&
                 !json_object_set_new(o, "temperature",
                                      json_real(rf_bk_openai_float_to_double(req->temperature)));
        if (isfinite(req->top_p) && req->top_p > 0 && req->top_p < 1)
            ok = ok && !json_object_set_new(o, "top_p",
                                            json_real(rf_bk_openai_float_to_double(req->top_p)));
        ok = ok &&
             !json_object_set_new(o, "seed", json_integer((json_int_t)(req->seed & INT64_MAX)));
        ok = ok && !json_object_set_new(o, "stream", json_boolean(req->stream));
        if (req->stream)
            ok = ok &&
                 !json_object_set_new(o, "stream_options", json_pack("{s:b}", "include_usage", 1));
        if (req->ignore_eos) ok = ok && !json_object_set_new(o, "ignore_eos", json_true());
        if (!ok) snprintf(why, why_n, "out of memory");
    }
    if (ok && req->tools) {
        json_t *t = json_loads(req->tools, 0, NULL);
        if (!json_is_array(t)) {
            snprintf(why, why_n, "tools is not a JSON array");
            ok = false;
        }
        json_object_set_new(o, "tools", t);
    }
    if (ok && req->tool_choice) {
        json_t *tc = req->tool_choice[0] == '{' ? json_loads(req->tool_choice, 0, NULL)
                                                : json_string(req->tool_choice);
        if (!tc) {
            snprintf(why, why_n, "tool_choice is neither a name nor a JSON object");
            ok = false;
        }
        json_object_set_new(o, "tool_choice", tc);
    }
    if (ok && extra && json_object_update(o, (json_t *)extra)) {
        snprintf(why, why_n, "cannot merge extra_body (out of memory)");
        ok = false;
    }
    rf_buf_reset(out);
    if (ok && rf_json_dump_buf(o, JSON_COMPACT, out)) {
        snprintf(why, why_n, "cannot serialize the request (out of memory)");
        ok = false;
    }
    if (ok && rf_buf_terminate(out)) ok = false;
    json_decref(msgs);
    json_decref(o);
    return ok;
}

/* ---------------------------------------------------------------- reply parsing */

static rf_bk_openai_call *call_slot(rf_bk_openai_fold *r, json_int_t idx) {
    if (idx < 0 || idx >= OA_MAX_CALLS) return NULL;
    if (idx >= r->cap_calls) {
        int32_t cap = r->cap_calls ? r->cap_calls : 4;
        while (cap <= idx) cap *= 2;
        rf_bk_openai_call *c = realloc(r->calls, (size_t)cap * sizeof *c);
        if (!c) return NULL;
        for (int32_t i = r->cap_calls; i < cap; i++) {
            memset(&c[i], 0, sizeof c[i]);
            rf_buf_init(&c[i].id, 0);
            rf_buf_init(&c[i].name, 0);
            rf_buf_init(&c[i].args, 0);
        }
        r->calls = c;
        r->cap_calls = cap;
    }
    while (r->n_calls <= idx) {
        rf_bk_openai_call *c = &r->calls[r->n_calls++];
        c->used = false;
        c->args_bytes = 0;
        rf_buf_reset(&c->id);
        rf_buf_reset(&c->name);
        rf_buf_reset(&c->args);
    }
    return &r->calls[idx];
}

static void set_str(rf_buf *b, const json_t *s) {
    if (!json_is_string(s) || !json_string_length(s)) return;
    rf_buf_reset(b);
    rf_buf_append(b, json_string_value(s), json_string_length(s));
}

/* Appends arguments, up to the reply cap (every byte counted): a JSON string fragment, or (from
 * servers that send an object) its compact text. */
static void append_args(rf_bk_request *req, rf_bk_openai_call *c, const json_t *a) {
    int64_t cap = rf_bk_reply_cap(req);
    bool ok = true;
    if (json_is_string(a)) {
        ok = rf_bk_append_capped(&c->args, cap, &c->args_bytes, json_string_value(a),
                                 json_string_length(a));
    } else if (a && !json_is_null(a)) {
        char *txt = rf_json_dumps(a, JSON_COMPACT);
        ok = txt && rf_bk_append_capped(&c->args, cap, &c->args_bytes, txt, strlen(txt));
        free(txt);
    }
    if (!ok) rf_bk_fail(&req->res, RF_BK_INTERNAL, "out of memory");
}

/* Folds a tool_calls array (stream deltas or a whole message's calls) into the slots. */
static bool fold_calls(rf_bk_openai_fold *r, rf_bk_request *req, const json_t *tcs) {
    bool any = false;
    size_t i;
    json_t *tc;
    json_array_foreach(tcs, i, tc) {
        if (!json_is_object(tc)) continue;
        json_t *ji = json_object_get(tc, "index");
        rf_bk_openai_call *c =
            call_slot(r, json_is_integer(ji) ? json_integer_value(ji) : (json_int_t)i);
        if (!c) continue;
        json_t *fn = json_object_get(tc, "function");
        set_str(&c->id, json_object_get(tc, "id"));
        if (json_is_object(fn)) {
            set_str(&c->name, json_object_get(fn, "name"));
            append_args(req, c, json_object_get(fn, "arguments"));
        }
        c->used = true;
        any = true;
    }
    return any;
}

bool rf_bk_openai_fold_call(rf_bk_openai_fold *f, rf_bk_request *req, int64_t idx, const json_t *id,
                            const json_t *name, const json_t *args) {
    rf_bk_openai_call *c = call_slot(f, (json_int_t)idx);
    if (!c) {
        if (idx >= 0 && idx < OA_MAX_CALLS) rf_bk_fail(&req->res, RF_BK_INTERNAL, "out of memory");
        return false;
    }
    set_str(&c->id, id);
    set_str(&c->name, name);
    append_args(req, c, args);
    c->used = true;
    return true;
}

static void fold_usage_timings(rf_bk_result *res, const json_t *root) {
    const json_t *u = json_object_get(root, "usage");
    if (json_is_object(u)) {
        res->prompt_tokens = get_count(u, "prompt_tokens");
        res->completion_tokens = get_count(u, "completion_tokens");
    }
    const json_t *t = json_object_get(root, "timings");
    if (json_is_object(t)) {
        res->has_timings = true;
        res->prompt_n = get_count(t, "prompt_n");
        res->predicted_n = get_count(t, "predicted_n");
        res->prompt_ms = get_number(t, "prompt_ms");
        res->predicted_ms = get_number(t, "predicted_ms");
    }
}

static void set_finish(rf_bk_openai_fold *r, rf_bk_request *req, const json_t *fr) {
    if (!json_is_string(fr)) return;
    rf_bk_result *res = &req->res;
    clean_copy(res->finish_reason, sizeof res->finish_reason, json_string_value(fr),
               json_string_length(fr));
    r->saw_finish = true;
}

static bool nonempty_string(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) > 0;
}

/* One streamed chunk (a JSON object). */
static void fold_chunk(rf_bk_openai_fold *r, rf_bk_request *req, const json_t *root, int64_t t) {
    rf_bk_result *res = &req->res;
    const json_t *e = json_object_get(root, "error");
    if (e && !json_is_null(e)) {
        rf_bk_fail(res, RF_BK_SERVER_ERROR, "error in stream: %s", error_object_message(e));
        return;
    }
    bool content = false;
    const json_t *choices = json_object_get(root, "choices");
    size_t i;
    json_t *ch;
    json_array_foreach(choices, i, ch) {
        const json_t *d = json_object_get(ch, "delta");
        if (json_is_object(d)) {
            const json_t *c = json_object_get(d, "content");
            if (json_is_string(c) && json_string_length(c)) {
                if (!rf_bk_result_text(req, json_string_value(c), json_string_length(c)))
                    rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
                content = true;
            }
            if (nonempty_string(d, "reasoning_content") || nonempty_string(d, "reasoning") ||
                nonempty_string(d, "refusal"))
                content = true;
            const json_t *tcs = json_object_get(d, "tool_calls");
            if (json_is_array(tcs) && fold_calls(r, req, tcs)) content = true;
        }
        set_finish(r, req, json_object_get(ch, "finish_reason"));
    }
    fold_usage_timings(res, root);
    if (content && !rf_bk_result_event(res, t, -1))
        rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
}

bool rf_bk_openai_fold_event(rf_bk_openai_fold *r, rf_bk_request *req, const char *type,
                             const char *data, size_t len, int64_t t, uint64_t n_event) {
    rf_bk_result *res = &req->res;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        r->saw_done = true;
        if (!res->t_done) res->t_done = t;
        return true;
    }
    size_t k = 0;
    while (k < len && (data[k] == ' ' || data[k] == '\t')) k++;
    if (k == len) return true; /* an empty data: line is a keep-alive, not a chunk */
    json_error_t je;
    json_t *root = json_loadb(data, len, 0, &je);
    if (!json_is_object(root)) {
        char head[48];
        clean_copy(head, sizeof head, data, len);
        if (root)
            rf_bk_fail(res, RF_BK_INVALID, "event %llu is not a JSON object: '%s'",
                       (unsigned long long)n_event, head);
        else
            rf_bk_fail(res, RF_BK_INVALID, "event %llu is not JSON (%s at column %d): '%s'",
                       (unsigned long long)n_event, je.text, je.column, head);
        json_decref(root);
        return false; /* stop: the transfer is aborted */
    }
    if (!strcmp(type, "error")) {
        rf_bk_fail(res, RF_BK_SERVER_ERROR, "error event: %s",
                   error_object_message(json_object_get(root, "error")));
    } else {
        fold_chunk(r, req, root, t);
    }
    json_decref(root);
    return true;
}

/* A whole (non-streamed) reply. */
void rf_bk_openai_fold_body(rf_bk_openai_fold *r, rf_bk_request *req, const char *body, size_t len,
                            int64_t t) {
    rf_bk_result *res = &req->res;
    if (!len) {
        rf_bk_fail(res, RF_BK_INVALID, "empty reply body");
        return;
    }
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!json_is_object(root)) {
        rf_bk_fail(res, RF_BK_INVALID, "reply is not a JSON object (%s at line %d)",
                   root ? "not an object" : je.text, je.line);
        json_decref(root);
        return;
    }
    const json_t *e = json_object_get(root, "error");
    if (e && !json_is_null(e)) {
        rf_bk_fail(res, RF_BK_SERVER_ERROR, "error in reply: %s", error_object_message(e));
        json_decref(root);
        return;
    }
    const json_t *ch = json_array_get(json_object_get(root, "choices"), 0);
    const json_t *msg = json_object_get(ch, "message");
    if (!json_is_object(msg)) {
        rf_bk_fail(res, RF_BK_INVALID, "reply has no choices[0].message");
        json_decref(root);
        return;
    }
    bool content = false;
    const json_t *c = json_object_get(msg, "content");
    if (json_is_string(c) && json_string_length(c)) {
        if (!rf_bk_result_text(req, json_string_value(c), json_string_length(c)))
            rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
        content = true;
    }
    const json_t *tcs = json_object_get(msg, "tool_calls");
    if (json_is_array(tcs) && fold_calls(r, req, tcs)) content = true;
    set_finish(r, req, json_object_get(ch, "finish_reason"));
    fold_usage_timings(res, root);
    if (content && !rf_bk_result_event(res, t, -1))
        rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
    json_decref(root);
}

static char *buf_strdup(const rf_buf *b) {
    char *s = malloc(b->len + 1);
    if (!s) return NULL;
    if (b->len) memcpy(s, b->data, b->len);
    s[b->len] = 0;
    return s;
}

/* Moves the accumulated tool calls into the result. */
void rf_bk_openai_fold_export(rf_bk_openai_fold *r, rf_bk_request *req) {
    rf_bk_result *res = &req->res;
    int32_t n = 0;
    for (int32_t i = 0; i < r->n_calls; i++) n += r->calls[i].used;
    if (!n) return;
    res->calls = calloc((size_t)n, sizeof *res->calls);
    if (!res->calls) {
        rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
        return;
    }
    for (int32_t i = 0; i < r->n_calls; i++) {
        const rf_bk_openai_call *c = &r->calls[i];
        if (!c->used) continue;
        rf_bk_tool_call *o = &res->calls[res->n_calls++];
        o->id = buf_strdup(&c->id);
        o->name = buf_strdup(&c->name);
        o->arguments = buf_strdup(&c->args);
        o->arguments_bytes = c->args_bytes;
    }
}

void rf_bk_openai_fold_init(rf_bk_openai_fold *f) {
    memset(f, 0, sizeof *f);
}

void rf_bk_openai_fold_reset(rf_bk_openai_fold *f) {
    f->n_calls = 0;
    f->saw_done = f->saw_finish = false;
}

void rf_bk_openai_fold_free(rf_bk_openai_fold *f) {
    for (int32_t i = 0; i < f->cap_calls; i++) {
        rf_buf_free(&f->calls[i].id);
        rf_buf_free(&f->calls[i].name);
        rf_buf_free(&f->calls[i].args);
    }
    free(f->calls);
    rf_bk_openai_fold_init(f);
}

bool rf_bk_openai_fold_complete(const rf_bk_openai_fold *f) {
    return f->saw_done || f->saw_finish;
}

/* ---------------------------------------------------------------- the table */

static void *chat_fold_new(void) {
    rf_bk_openai_fold *f = malloc(sizeof *f);
    if (f) rf_bk_openai_fold_init(f);
    return f;
}

static void chat_fold_free(void *f) {
    rf_bk_openai_fold_free(f);
    free(f);
}

static void chat_fold_reset(void *f) {
    rf_bk_openai_fold_reset(f);
}

static bool chat_build(rf_bk_request *req, const char *model, const json_t *extra, rf_buf *out,
                       char *why, size_t why_n) {
    return rf_bk_openai_build_body(req, model, extra, out, why, why_n);
}

static void chat_body(void *f, rf_bk_request *req, const char *body, size_t len, int64_t t) {
    rf_bk_openai_fold_body(f, req, body, len, t);
}

static bool chat_event(void *f, rf_bk_request *req, const char *type, const char *data, size_t len,
                       int64_t t, uint64_t n_event) {
    return rf_bk_openai_fold_event(f, req, type, data, len, t, n_event);
}

static void chat_stream_end(void *f, rf_bk_request *req, uint64_t n_events, bool partial) {
    if (!rf_bk_openai_fold_complete(f))
        rf_bk_fail(&req->res, RF_BK_TRUNCATED,
                   "stream ended without [DONE] or a finish_reason after %llu events%s",
                   (unsigned long long)n_events, partial ? " (and a partial event)" : "");
}

static void chat_finish(void *f, rf_bk_request *req) {
    rf_bk_openai_fold_export(f, req);
}

const rf_bk_proto rf_bk_openai_chat = {
    .fold_new = chat_fold_new,
    .fold_free = chat_fold_free,
    .fold_reset = chat_fold_reset,
    .build = chat_build,
    .body = chat_body,
    .event = chat_event,
    .stream_end = chat_stream_end,
    .finish = chat_finish,
    .error_message = rf_bk_openai_error_message,
};
