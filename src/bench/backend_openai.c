/* backend_openai.c: the "openai" backend: Chat Completions over HTTP(S) with libcurl's multi
 * interface, streamed (SSE, with usage) or as one JSON body.
 *
 * URI: "openai:http://host:port/v1" (or https). open validates the base URL, reads the API key
 * from cfg->api_key_env (kept only inside the libcurl header list; never in results or
 * messages) and, when cfg->model is NULL, asks GET {base}/models for data[0].id with a short
 * blocking request (open runs before the loop).
 *
 * Per request: the body is built with jansson, POSTed to {base}/chat/completions on the loop's
 * multi handle; a write callback stamps each network read and feeds the SSE framer; each event is
 * parsed once with jansson and folded into rf_bk_result (content appended, tool-call fragments
 * concatenated per index, finish_reason, usage, llama-server timings). Timing of events is the
 * arrival of the read that completed them. Per-request state (easy handle, SSE parser, buffers)
 * lives in a pool and is reused, so a steady stream of requests allocates almost nothing beyond
 * what jansson needs per event.
 *
 * Errors: HTTP >= 400 -> http_4xx/5xx with the body's error.message; connect/resolve/TLS
 * failures -> refused; CURLOPT_TIMEOUT_MS (timeout_s) -> timeout; no body byte for stall_s once
 * the body has begun -> stall (checked in libcurl's progress callback, which runs whenever
 * libcurl visits the transfer: at least once a second, see req_new); an error object in a 200
 * stream -> server_error; an event that is not a JSON object, or an event over 4 MiB ->
 * invalid_json; a stream that ends with neither [DONE] nor a finish_reason -> truncated. Stall
 * counts only after the first body byte: before it the server may legitimately queue the
 * request, and timeout_s bounds that. The first error is the cause (rf_bk_fail). An empty
 * `data:` event is a keep-alive; a streamed request answered with application/json is parsed as
 * a whole body. A reused connection that closes with no reply makes libcurl resend the request
 * on another (servers close idle keep-alive connections); when even that ends with no reply the
 * request is sent once more on a new connection (on_xfer_done). Each resend is counted in
 * res->resends (on_prereq), so a server that drops requests is still seen.
 *
 * Threading: everything runs on the loop thread. Exactly one req->done per start: from the
 * loop's transfer-done callback, from cancel/close (synchronously), or, for a request that could
 * not be started (bad tools JSON, invalid UTF-8), from a callback posted to the loop. If close
 * runs while such a post is pending, the request is reported at close and its small state is
 * freed by the post when the loop next runs.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "bench/backend.h"
#include "bench/sse.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/json_dump.h"

#define OA_MAX_BODY          ((size_t)64 << 20) /* a non-streamed reply */
#define OA_MAX_ERR_BODY      ((size_t)64 << 10) /* the part of an error body we keep */
#define OA_MAX_MODELS        ((size_t)4 << 20)  /* GET /models reply */
#define OA_MAX_CALLS         256                /* tool-call indices accepted in one reply */
#define OA_MODELS_TIMEOUT_MS 10000L

typedef struct oa_call {
    rf_buf id, name, args;
    int64_t args_bytes; /* arguments bytes that arrived (args keeps at most the reply cap) */
    bool used;
} oa_call;

typedef enum oa_mode {
    OA_MODE_NONE,  /* no body byte yet */
    OA_MODE_SSE,   /* 2xx event stream */
    OA_MODE_BODY,  /* 2xx JSON body (non-stream, or a server that ignored stream) */
    OA_MODE_ERROR, /* not 2xx: the body is kept (bounded) for its error message */
} oa_mode;

typedef enum oa_state {
    OA_IDLE,    /* in the pool */
    OA_RUNNING, /* the transfer is in the loop's multi handle */
    OA_FAILING, /* could not start: a posted callback will report it */
    OA_ZOMBIE,  /* reported (cancelled) while its failure post is still pending */
} oa_state;

typedef struct oa_backend oa_backend;
typedef struct oa_req oa_req;

struct oa_req {
    oa_backend *b; /* NULL once orphaned by close (a post still refers to it) */
    rf_bk_request *req;
    CURL *easy;
    rf_sse sse;
    rf_buf body; /* the request JSON */
    rf_buf resp; /* a non-streamed reply, or an error body */
    oa_call *calls;
    int32_t n_calls, cap_calls; /* n_calls: highest used index + 1 */
    int64_t t_chunk;            /* arrival of the read being parsed */
    int64_t t_last_byte;
    int64_t stall_ns;
    oa_state state;
    oa_mode mode;
    bool stream, saw_done, saw_finish, stalled;
    bool fresh;          /* resent once on a new connection after a reply-less end (on_xfer_done) */
    int n_prereq;        /* times libcurl sent this request (> 1: it resent it) */
    int socket_errno;    /* why our socket() call failed (open_socket), or 0 */
    oa_req *next, *prev; /* in-flight list; next alone in the pool */
    char errbuf[CURL_ERROR_SIZE];
};

struct oa_backend {
    rf_backend base; /* first: the registry's view */
    rf_loop *loop;
    char *url_chat;
    char *model;
    struct curl_slist *headers; /* may hold the Authorization header: never printed */
    json_t *extra;              /* cfg->extra_body parsed (owned), merged into bodies; or NULL */
    long timeout_ms;
    int64_t stall_ns;
    oa_req *inflight; /* RUNNING, FAILING and ZOMBIE requests */
    oa_req *pool;
    bool closing;
};

/* ---------------------------------------------------------------- helpers */

static void list_add(oa_backend *b, oa_req *r) {
    r->prev = NULL;
    r->next = b->inflight;
    if (b->inflight) b->inflight->prev = r;
    b->inflight = r;
}

static void list_del(oa_backend *b, oa_req *r) {
    if (r->prev)
        r->prev->next = r->next;
    else if (b->inflight == r)
        b->inflight = r->next;
    if (r->next) r->next->prev = r->prev;
    r->next = r->prev = NULL;
}

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
static void error_message(const char *body, size_t len, char *out, size_t n) {
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
static double float_to_double(float f) {
    char s[32];
    for (int p = 6; p <= 9; p++) {
        snprintf(s, sizeof s, "%.*g", p, (double)f);
        if (strtof(s, NULL) == f) break;
    }
    return strtod(s, NULL);
}

/* ---------------------------------------------------------------- request body */

/* Builds the Chat Completions JSON into out; on failure writes a reason into why. */
static bool build_body(const oa_backend *b, const rf_bk_request *req, rf_buf *out, char *why,
                       size_t why_n) {
    json_t *o = json_object(), *msgs = json_array();
    bool ok = o && msgs;
    if (ok) ok = !json_object_set_new(o, "model", json_string(b->model));
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
            ok = ok && !json_object_set_new(o, "temperature",
                                            json_real(float_to_double(req->temperature)));
        if (isfinite(req->top_p) && req->top_p > 0 && req->top_p < 1)
            ok = ok && !json_object_set_new(o, "top_p", json_real(float_to_double(req->top_p)));
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
    if (ok && b->extra && json_object_update(o, b->extra)) {
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

static oa_call *call_slot(oa_req *r, json_int_t idx) {
    if (idx < 0 || idx >= OA_MAX_CALLS) return NULL;
    if (idx >= r->cap_calls) {
        int32_t cap = r->cap_calls ? r->cap_calls : 4;
        while (cap <= idx) cap *= 2;
        oa_call *c = realloc(r->calls, (size_t)cap * sizeof *c);
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
        oa_call *c = &r->calls[r->n_calls++];
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
static void append_args(oa_req *r, oa_call *c, const json_t *a) {
    int64_t cap = rf_bk_reply_cap(r->req);
    bool ok = true;
    if (json_is_string(a)) {
        ok = rf_bk_append_capped(&c->args, cap, &c->args_bytes, json_string_value(a),
                                 json_string_length(a));
    } else if (a && !json_is_null(a)) {
        char *txt = rf_json_dumps(a, JSON_COMPACT);
        ok = txt && rf_bk_append_capped(&c->args, cap, &c->args_bytes, txt, strlen(txt));
        free(txt);
    }
    if (!ok) rf_bk_fail(&r->req->res, RF_BK_INTERNAL, "out of memory");
}

/* Folds a tool_calls array (stream deltas or a whole message's calls) into the slots. */
static bool fold_calls(oa_req *r, const json_t *tcs) {
    bool any = false;
    size_t i;
    json_t *tc;
    json_array_foreach(tcs, i, tc) {
        if (!json_is_object(tc)) continue;
        json_t *ji = json_object_get(tc, "index");
        oa_call *c = call_slot(r, json_is_integer(ji) ? json_integer_value(ji) : (json_int_t)i);
        if (!c) continue;
        json_t *fn = json_object_get(tc, "function");
        set_str(&c->id, json_object_get(tc, "id"));
        if (json_is_object(fn)) {
            set_str(&c->name, json_object_get(fn, "name"));
            append_args(r, c, json_object_get(fn, "arguments"));
        }
        c->used = true;
        any = true;
    }
    return any;
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

static void set_finish(oa_req *r, const json_t *fr) {
    if (!json_is_string(fr)) return;
    rf_bk_result *res = &r->req->res;
    clean_copy(res->finish_reason, sizeof res->finish_reason, json_string_value(fr),
               json_string_length(fr));
    r->saw_finish = true;
}

static bool nonempty_string(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) > 0;
}

/* One streamed chunk (a JSON object). */
static void fold_chunk(oa_req *r, const json_t *root) {
    rf_bk_result *res = &r->req->res;
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
                if (!rf_bk_result_text(r->req, json_string_value(c), json_string_length(c)))
                    rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
                content = true;
            }
            if (nonempty_string(d, "reasoning_content") || nonempty_string(d, "reasoning") ||
                nonempty_string(d, "refusal"))
                content = true;
            const json_t *tcs = json_object_get(d, "tool_calls");
            if (json_is_array(tcs) && fold_calls(r, tcs)) content = true;
        }
        set_finish(r, json_object_get(ch, "finish_reason"));
    }
    fold_usage_timings(res, root);
    if (content && !rf_bk_result_event(res, r->t_chunk, -1))
        rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
}

static int on_event(void *user, const char *type, const char *data, size_t len) {
    oa_req *r = user;
    rf_bk_result *res = &r->req->res;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        r->saw_done = true;
        if (!res->t_done) res->t_done = r->t_chunk;
        return 0;
    }
    size_t k = 0;
    while (k < len && (data[k] == ' ' || data[k] == '\t')) k++;
    if (k == len) return 0; /* an empty data: line is a keep-alive, not a chunk */
    json_error_t je;
    json_t *root = json_loadb(data, len, 0, &je);
    if (!json_is_object(root)) {
        char head[48];
        clean_copy(head, sizeof head, data, len);
        if (root)
            rf_bk_fail(res, RF_BK_INVALID, "event %llu is not a JSON object: '%s'",
                       (unsigned long long)r->sse.n_events, head);
        else
            rf_bk_fail(res, RF_BK_INVALID, "event %llu is not JSON (%s at column %d): '%s'",
                       (unsigned long long)r->sse.n_events, je.text, je.column, head);
        json_decref(root);
        return 1; /* stop: the transfer is aborted */
    }
    if (!strcmp(type, "error")) {
        rf_bk_fail(res, RF_BK_SERVER_ERROR, "error event: %s",
                   error_object_message(json_object_get(root, "error")));
    } else {
        fold_chunk(r, root);
    }
    json_decref(root);
    return 0;
}

/* A whole (non-streamed) reply. */
static void parse_body(oa_req *r) {
    rf_bk_result *res = &r->req->res;
    if (!r->resp.len) {
        rf_bk_fail(res, RF_BK_INVALID, "empty reply body");
        return;
    }
    json_error_t je;
    json_t *root = json_loadb((const char *)r->resp.data, r->resp.len, 0, &je);
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
        if (!rf_bk_result_text(r->req, json_string_value(c), json_string_length(c)))
            rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
        content = true;
    }
    const json_t *tcs = json_object_get(msg, "tool_calls");
    if (json_is_array(tcs) && fold_calls(r, tcs)) content = true;
    set_finish(r, json_object_get(ch, "finish_reason"));
    fold_usage_timings(res, root);
    if (content && !rf_bk_result_event(res, r->t_last_byte, -1))
        rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
    json_decref(root);
}

/* ---------------------------------------------------------------- libcurl callbacks */

static size_t on_write(char *p, size_t size, size_t nmemb, void *user) {
    oa_req *r = user;
    size_t n = size * nmemb;
    rf_bk_result *res = &r->req->res;
    int64_t now = rf_now_ns();
    r->t_chunk = r->t_last_byte = now;
    if (r->mode == OA_MODE_NONE) {
        long status = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        res->http_status = (int)status;
        res->t_first_byte = now;
        if (status < 200 || status >= 300) {
            r->mode = OA_MODE_ERROR;
        } else if (!r->stream) {
            r->mode = OA_MODE_BODY;
        } else {
            char *ct = NULL;
            curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
            r->mode = ct && !strncasecmp(ct, "application/json", 16) ? OA_MODE_BODY : OA_MODE_SSE;
        }
    }
    switch (r->mode) {
    case OA_MODE_SSE: {
        rf_sse_status st = rf_sse_feed(&r->sse, p, n);
        if (st == RF_SSE_OK) return n;
        if (st == RF_SSE_TOO_BIG)
            rf_bk_fail(res, RF_BK_INVALID, "an SSE event is larger than %zu bytes", r->sse.max);
        else if (st == RF_SSE_NOMEM)
            rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
        return 0; /* aborts the transfer (CURLE_WRITE_ERROR); the cause is recorded */
    }
    case OA_MODE_BODY:
        if (rf_buf_append(&r->resp, p, n)) {
            rf_bk_fail(res, RF_BK_INVALID, "reply body larger than %zu MiB", OA_MAX_BODY >> 20);
            return 0;
        }
        return n;
    case OA_MODE_ERROR:
        if (r->resp.len < OA_MAX_ERR_BODY) {
            size_t k = OA_MAX_ERR_BODY - r->resp.len;
            rf_buf_append(&r->resp, p, n < k ? n : k);
        }
        return n;
    case OA_MODE_NONE:
        break;
    }
    return 0;
}

/* Runs on every pass of the loop over the transfer (at least once a second). */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    oa_req *r = user;
    if (!r->t_last_byte || r->stall_ns <= 0) return 0;
    /* called for every transfer on every loop pass: the coarse clock (same base, a few ms
     * resolution) is cheaper and plenty for a stall limit */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    if ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - r->t_last_byte < r->stall_ns) return 0;
    r->stalled = true;
    return 1; /* CURLE_ABORTED_BY_CALLBACK */
}

/* libcurl's socket() call, made here so that its errno is kept: out of descriptors (EMFILE) is
 * this machine's failure, which libcurl reports as "Couldn't connect to server". */
static curl_socket_t open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *a) {
    oa_req *r = user;
    (void)purpose;
    curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd == CURL_SOCKET_BAD) r->socket_errno = errno;
    return fd;
}

/* Runs before libcurl sends the request on a connection; a second call for one transfer is a
 * resend on a new connection after a reused one closed with no reply. */
static int on_prereq(void *user, char *primary_ip, char *local_ip, int primary_port,
                     int local_port) {
    (void)primary_ip, (void)local_ip, (void)primary_port, (void)local_port;
    oa_req *r = user;
    if (++r->n_prereq > 1 && r->req) r->req->res.resends++;
    return CURL_PREREQFUNC_OK;
}

/* ---------------------------------------------------------------- request lifecycle */

static oa_req *req_new(oa_backend *b) {
    oa_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->easy = curl_easy_init();
    if (!r->easy) {
        free(r);
        return NULL;
    }
    r->b = b;
    rf_sse_init(&r->sse, RF_SSE_MAX_EVENT_DEFAULT, on_event, r);
    rf_buf_init(&r->body, 0);
    rf_buf_init(&r->resp, OA_MAX_BODY);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, b->url_chat);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, b->headers);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, r);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, r);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, b->timeout_ms);
    /* Not a stall rule (on_progress is): a low-speed limit makes libcurl revisit the transfer
     * every second even when its socket is quiet, so on_progress runs under an event-driven
     * (socket-action) loop too. Its own limit is set past the request timeout: it never fires. */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, b->timeout_ms / 1000 + 2);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    return r;
}

static void req_destroy(oa_req *r) {
    curl_easy_cleanup(r->easy);
    rf_sse_free(&r->sse);
    rf_buf_free(&r->body);
    rf_buf_free(&r->resp);
    for (int32_t i = 0; i < r->cap_calls; i++) {
        rf_buf_free(&r->calls[i].id);
        rf_buf_free(&r->calls[i].name);
        rf_buf_free(&r->calls[i].args);
    }
    free(r->calls);
    free(r);
}

static void pool_put(oa_backend *b, oa_req *r) {
    r->state = OA_IDLE;
    r->req = NULL;
    if (r->resp.cap > ((size_t)1 << 20)) { /* do not hoard a big reply's buffer */
        rf_buf_free(&r->resp);
        rf_buf_init(&r->resp, OA_MAX_BODY);
    }
    r->next = b->pool;
    b->pool = r;
}

static char *buf_strdup(const rf_buf *b) {
    char *s = malloc(b->len + 1);
    if (!s) return NULL;
    if (b->len) memcpy(s, b->data, b->len);
    s[b->len] = 0;
    return s;
}

/* Moves the accumulated tool calls into the result. */
static void export_calls(oa_req *r, rf_bk_result *res) {
    int32_t n = 0;
    for (int32_t i = 0; i < r->n_calls; i++) n += r->calls[i].used;
    if (!n) return;
    res->calls = calloc((size_t)n, sizeof *res->calls);
    if (!res->calls) {
        rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
        return;
    }
    for (int32_t i = 0; i < r->n_calls; i++) {
        const oa_call *c = &r->calls[i];
        if (!c->used) continue;
        rf_bk_tool_call *o = &res->calls[res->n_calls++];
        o->id = buf_strdup(&c->id);
        o->name = buf_strdup(&c->name);
        o->arguments = buf_strdup(&c->args);
        o->arguments_bytes = c->args_bytes;
    }
}

/* Reports req's result: r goes back to the pool (to_pool) or stays a zombie for its pending
 * post; req->done runs last, so it may start another request (which can reuse r). */
static void complete(oa_req *r, bool to_pool) {
    oa_backend *b = r->b;
    rf_bk_request *req = r->req;
    rf_bk_result *res = &req->res;
    export_calls(r, res);
    if (rf_buf_terminate(&res->text)) rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
    if (!res->t_done) res->t_done = rf_now_ns();
    req->priv = NULL;
    r->req = NULL;
    if (to_pool) {
        list_del(b, r);
        pool_put(b, r);
    } else {
        r->state = OA_ZOMBIE;
    }
    req->done(req->user, req);
}

/* A failure of this machine (out of descriptors, ports or buffers), not of the server. */
static bool local_resource_errno(long e) {
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM || e == EADDRNOTAVAIL ||
           e == EAGAIN;
}

static void classify_curl(oa_req *r, int code) {
    rf_bk_result *res = &r->req->res;
    const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror((CURLcode)code);
    long os_err = r->socket_errno; /* libcurl does not keep socket()'s errno: open_socket does */
    if (!os_err) curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os_err);
    if (!res->http_status && local_resource_errno(os_err) &&
        (code == CURLE_COULDNT_CONNECT || code == CURLE_OUT_OF_MEMORY ||
         code == CURLE_FAILED_INIT || code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR)) {
        rf_bk_fail(res, RF_BK_CLIENT, "client-side failure, not the server's: %s (%s)%s",
                   strerror((int)os_err), detail,
                   os_err == EMFILE || os_err == ENFILE
                       ? "; raise the descriptor limit (ulimit -n) or lower the concurrency"
                       : "");
        return;
    }
    switch ((CURLcode)code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        rf_bk_fail(res, RF_BK_REFUSED, "%s: %s", r->b->url_chat, detail);
        break;
    case CURLE_UNSUPPORTED_PROTOCOL: /* the URL was checked at open: here, an HTTP/0.9 reply */
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_RANGE_ERROR:
        rf_bk_fail(res, RF_BK_PROTOCOL, "%s: the reply is not valid HTTP: %s", r->b->url_chat,
                   detail);
        break;
    case CURLE_OUT_OF_MEMORY:
        rf_bk_fail(res, RF_BK_CLIENT, "client out of memory: %s", detail);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        rf_bk_fail(res, RF_BK_TIMEOUT, "no complete reply within %.3g s: %s",
                   (double)r->b->timeout_ms / 1000, detail);
        break;
    default:
        if (res->http_status)
            rf_bk_fail(res, RF_BK_TRUNCATED, "transfer ended early: %s", detail);
        else if (code == CURLE_GOT_NOTHING || code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR)
            rf_bk_fail(res, RF_BK_REFUSED, "%s: the connection closed with no reply: %s",
                       r->b->url_chat, detail);
        else
            rf_bk_fail(res, RF_BK_PROTOCOL, "%s: no valid reply: %s", r->b->url_chat, detail);
        break;
    }
}

static void on_xfer_done(void *user, void *easy, int code) {
    (void)easy;
    oa_req *r = user;
    rf_bk_result *res = &r->req->res;
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status) res->http_status = (int)status;
    /* No reply at all, on connections that died under it: libcurl resends only on other pooled
     * connections (at most 5), and a server that closes each connection after a streamed reply
     * (llama-server) can leave that many dead ones in the pool. Send once more on a new one. */
    if (!r->fresh && !r->stalled && !status && r->mode == OA_MODE_NONE && res->err == RF_BK_OK &&
        (code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING)) {
        rf_error err = {0};
        r->fresh = true; /* on_prereq counts the resend */
        curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 1L);
        if (rf_loop_add_easy(r->b->loop, r->easy, on_xfer_done, r, &err) == RF_OK) return;
    }
    if (r->stalled) {
        rf_bk_fail(res, RF_BK_STALL, "no data for %.3g s (stall_s) after %llu events",
                   (double)r->stall_ns / 1e9, (unsigned long long)r->sse.n_events);
    } else if (status >= 400) {
        char msg[200];
        error_message((const char *)r->resp.data, r->resp.len, msg, sizeof msg);
        rf_bk_fail(res, status >= 500 ? RF_BK_HTTP_5XX : RF_BK_HTTP_4XX, "HTTP %ld: %s", status,
                   msg[0] ? msg : "(empty body)");
    } else if (code != CURLE_OK && !(status && (status < 200 || status >= 300))) {
        classify_curl(r, code);
    } else if (status < 200 || status >= 300) {
        char *loc = NULL;
        curl_easy_getinfo(r->easy, CURLINFO_REDIRECT_URL, &loc);
        if (status >= 300 && loc)
            rf_bk_fail(res, RF_BK_HTTP_STATUS,
                       "HTTP %ld: a redirect to %s (redirects are not followed: give that URL)",
                       status, loc);
        else
            rf_bk_fail(res, RF_BK_HTTP_STATUS, "unexpected HTTP status %ld", status);
    } else if (r->mode == OA_MODE_BODY || (r->mode == OA_MODE_NONE && !r->stream)) {
        parse_body(r);
    } else {
        rf_sse_status st = rf_sse_finish(&r->sse);
        if (!r->saw_done && !r->saw_finish)
            rf_bk_fail(res, RF_BK_TRUNCATED,
                       "stream ended without [DONE] or a finish_reason after %llu events%s",
                       (unsigned long long)r->sse.n_events,
                       st == RF_SSE_PARTIAL ? " (and a partial event)" : "");
    }
    complete(r, true);
}

static void on_failed_post(void *user) {
    oa_req *r = user;
    if (!r->b) { /* orphaned by close: the request was reported there */
        req_destroy(r);
        return;
    }
    if (r->state == OA_ZOMBIE) { /* cancelled meanwhile: only recycle */
        list_del(r->b, r);
        pool_put(r->b, r);
        return;
    }
    complete(r, true);
}

/* A request that cannot start: reported from the loop, not from inside start. */
static void fail_later(oa_req *r) {
    r->state = OA_FAILING;
    if (rf_loop_post(r->b->loop, on_failed_post, r) != RF_OK) complete(r, true);
}

/* ---------------------------------------------------------------- vtable */

static void oa_start(rf_backend *bk, rf_bk_request *req) {
    oa_backend *b = (oa_backend *)bk;
    rf_bk_result_init(&req->res);
    req->priv = NULL;
    if (b->closing) {
        rf_bk_fail(&req->res, RF_BK_CANCELLED, "backend is closing");
        req->done(req->user, req);
        return;
    }
    oa_req *r = b->pool;
    if (r)
        b->pool = r->next;
    else
        r = req_new(b);
    if (!r) { /* no memory for even the request state: report at once */
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "out of memory");
        req->done(req->user, req);
        return;
    }
    r->req = req;
    req->priv = r;
    r->state = OA_RUNNING;
    r->mode = OA_MODE_NONE;
    r->stream = req->stream;
    r->saw_done = r->saw_finish = r->stalled = r->fresh = false;
    r->n_prereq = 0;
    r->socket_errno = 0;
    curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 0L);
    r->t_chunk = r->t_last_byte = 0;
    r->stall_ns = b->stall_ns;
    r->n_calls = 0;
    r->errbuf[0] = 0;
    rf_sse_reset(&r->sse);
    rf_buf_reset(&r->resp);
    list_add(b, r);

    char why[160];
    if (!build_body(b, req, &r->body, why, sizeof why)) {
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "request not sent: %s", why);
        fail_later(r);
        return;
    }
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, (const char *)r->body.data);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    rf_error err = {0};
    req->res.t_sent = rf_now_ns();
    if (rf_loop_add_easy(b->loop, r->easy, on_xfer_done, r, &err) != RF_OK) {
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "%s", err.msg);
        fail_later(r);
    }
}

static void oa_cancel(rf_backend *bk, rf_bk_request *req) {
    oa_backend *b = (oa_backend *)bk;
    oa_req *r = req->priv;
    if (!r || r->req != req || r->b != b) return; /* not in flight (already done) */
    rf_bk_fail(&req->res, RF_BK_CANCELLED, "cancelled");
    if (r->state == OA_RUNNING) {
        rf_loop_remove_easy(b->loop, r->easy);
        complete(r, true);
    } else if (r->state == OA_FAILING) {
        complete(r, false); /* the pending post recycles r */
    }
}

static const char *oa_model(const rf_backend *bk) {
    return ((const oa_backend *)bk)->model;
}

static int32_t oa_count_tokens(const rf_backend *bk, const char *text, size_t len) {
    (void)bk, (void)text, (void)len;
    return -1;
}

static void oa_close(rf_backend *bk) {
    oa_backend *b = (oa_backend *)bk;
    b->closing = true;
    while (b->inflight) {
        oa_req *r = b->inflight;
        if (r->state == OA_RUNNING || r->state == OA_FAILING) {
            oa_cancel(bk, r->req); /* RUNNING leaves the list; FAILING becomes a zombie */
            if (b->inflight != r) continue;
        }
        list_del(b, r); /* a zombie: its post will free it */
        r->b = NULL;
    }
    while (b->pool) {
        oa_req *r = b->pool;
        b->pool = r->next;
        req_destroy(r);
    }
    curl_slist_free_all(b->headers);
    json_decref(b->extra);
    free(b->url_chat);
    free(b->model);
    free(b);
}

/* ---------------------------------------------------------------- open */

static size_t collect(char *p, size_t size, size_t nmemb, void *user) {
    size_t n = size * nmemb;
    return rf_buf_append(user, p, n) ? 0 : n;
}

/* GET {base}/models: data[0].id. Blocking, short timeout: open runs before the loop. */
static rf_status fetch_model(oa_backend *b, const char *base, rf_error *err) {
    char *url = NULL;
    if (asprintf(&url, "%s/models", base) < 0) return rf_error_set(err, RF_ERR_NOMEM, "openai");
    rf_buf body;
    rf_buf_init(&body, OA_MAX_MODELS);
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *e = curl_easy_init();
    rf_status st = RF_OK;
    if (!e) {
        st = rf_error_set(err, RF_ERR_INTERNAL, "openai: curl_easy_init failed");
        goto out;
    }
    long tmo = b->timeout_ms < OA_MODELS_TIMEOUT_MS ? b->timeout_ms : OA_MODELS_TIMEOUT_MS;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, b->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo);
    CURLcode rc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) {
        st = rf_error_set(err, RF_ERR_IO, "openai: cannot reach %s: %s", url,
                          errbuf[0] ? errbuf : curl_easy_strerror(rc));
        goto out;
    }
    if (status != 200) {
        char msg[200];
        error_message((const char *)body.data, body.len, msg, sizeof msg);
        st = rf_error_set(err, RF_ERR_IO, "openai: GET %s: HTTP %ld: %s", url, status, msg);
        goto out;
    }
    json_t *root = json_loadb((const char *)body.data, body.len, 0, NULL);
    const char *id =
        json_string_value(json_object_get(json_array_get(json_object_get(root, "data"), 0), "id"));
    if (id && *id) {
        b->model = strdup(id);
        if (!b->model) st = rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
    } else {
        st = rf_error_set(err, RF_ERR_FORMAT,
                          "openai: GET %s: the reply has no data[0].id; give the model name", url);
    }
    json_decref(root);
out:
    curl_easy_cleanup(e);
    rf_buf_free(&body);
    free(url);
    return st;
}

/* Checks "http(s)://host[:port][/path]" and returns it without trailing slashes (malloc'd). */
static rf_status parse_base(const char *uri, char **base, rf_error *err) {
    *base = NULL;
    const char *url = strchr(uri, ':');
    url = url ? url + 1 : uri;
    const char *want = "expected openai:http://HOST:PORT/v1 or openai:https://...";
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return rf_error_set(err, RF_ERR_ARG, "openai: '%s' is not an http(s) URL (%s)", uri, want);
    const char *auth = strstr(url, "://") + 3;
    if (!*auth || *auth == '/' || *auth == '?' || *auth == '#')
        return rf_error_set(err, RF_ERR_ARG, "openai: '%s' has no host (%s)", uri, want);
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return rf_error_set(err, RF_ERR_ARG,
                                "openai: '%s' contains a space or control character (%s)", uri,
                                want);
    CURLU *u = curl_url();
    if (!u) return rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
    rf_status st = RF_OK;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    char *host = NULL, *query = NULL, *frag = NULL;
    if (uc == CURLUE_OUT_OF_MEMORY) { /* not the URL's fault: no configuration error */
        st = rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory parsing '%s'", uri);
        goto out;
    }
    if (uc) {
        st = rf_error_set(err, RF_ERR_ARG, "openai: malformed URL in '%s': %s (%s)", uri,
                          curl_url_strerror(uc), want);
        goto out;
    }
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);
    if (!host || !*host || query || frag) {
        st = rf_error_set(err, RF_ERR_ARG, "openai: malformed URL in '%s': %s (%s)", uri,
                          !host || !*host ? "no host" : "a query or fragment is not allowed", want);
        goto out;
    }
    size_t n = strlen(url);
    while (n && url[n - 1] == '/') n--;
    *base = strndup(url, n);
    if (!*base) st = rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
out:
    curl_free(host);
    curl_free(query);
    curl_free(frag);
    curl_url_cleanup(u);
    return st;
}

/* The configuration alone, before anything is opened: the URL and the extra_body. */
static rf_status oa_validate(const rf_backend_cfg *cfg, rf_error *err) {
    char *base = NULL;
    rf_status st = parse_base(cfg->uri, &base, err);
    free(base);
    if (st || !cfg->extra_body) return st;
    json_t *x = json_loads(cfg->extra_body, JSON_REJECT_DUPLICATES, NULL);
    bool ok = json_is_object(x);
    json_decref(x);
    return ok ? RF_OK : rf_error_set(err, RF_ERR_ARG, "openai: extra_body is not a JSON object");
}

static rf_status oa_open(const rf_backend_cfg *cfg, rf_loop *loop, rf_backend **out,
                         rf_error *err) {
    *out = NULL;
    char *base = NULL;
    rf_status st = parse_base(cfg->uri, &base, err);
    if (st) return st;
    oa_backend *b = calloc(1, sizeof *b);
    if (!b) {
        free(base);
        return rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
    }
    b->loop = loop;
    double t = cfg->timeout_s > 0 ? cfg->timeout_s : 600;
    b->timeout_ms = t * 1000 < 1 ? 1 : t * 1000 > 1e9 ? 1000000000L : (long)(t * 1000);
    double s = cfg->stall_s > 0 ? cfg->stall_s : 60;
    b->stall_ns = (int64_t)(s * 1e9);
    if (cfg->extra_body) {
        json_error_t je;
        b->extra = json_loads(cfg->extra_body, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(b->extra)) {
            st = rf_error_set(err, RF_ERR_ARG, "openai: extra_body is not a JSON object%s%s",
                              b->extra ? "" : ": ", b->extra ? "" : je.text);
            goto fail;
        }
    }
    if (asprintf(&b->url_chat, "%s/chat/completions", base) < 0) {
        b->url_chat = NULL;
        st = rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
        goto fail;
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (h) b->headers = h, h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    if (!h) {
        st = rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
        goto fail;
    }
    if (cfg->api_key_env && *cfg->api_key_env) {
        const char *key = getenv(cfg->api_key_env);
        if (!key || !*key) {
            st = rf_error_set(err, RF_ERR_ARG,
                              "openai: the API key variable %s (api_key_env) is not set",
                              cfg->api_key_env);
            goto fail;
        }
        for (const char *k = key; *k; k++)
            if ((unsigned char)*k < 0x20 || *k == 0x7f) { /* would split the header */
                st = rf_error_set(err, RF_ERR_ARG,
                                  "openai: the API key in %s contains control characters",
                                  cfg->api_key_env);
                goto fail;
            }
        size_t n = strlen(key) + 32;
        char *line = malloc(n);
        if (line) {
            snprintf(line, n, "Authorization: Bearer %s", key);
            h = curl_slist_append(b->headers, line);
            explicit_bzero(line, n);
            free(line);
        }
        if (!line || !h) {
            st = rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
            goto fail;
        }
    }
    if (cfg->model && *cfg->model) {
        b->model = strdup(cfg->model);
        if (!b->model) {
            st = rf_error_set(err, RF_ERR_NOMEM, "openai: out of memory");
            goto fail;
        }
    } else {
        st = fetch_model(b, base, err);
        if (st) goto fail;
    }
    free(base);
    *out = &b->base;
    return RF_OK;
fail:
    free(base);
    curl_slist_free_all(b->headers);
    json_decref(b->extra);
    free(b->url_chat);
    free(b->model);
    free(b);
    return st;
}

const rf_backend_vtable rf_backend_openai = {
    .scheme = "openai",
    .loop_timed = true,
    .validate = oa_validate,
    .open = oa_open,
    .start = oa_start,
    .cancel = oa_cancel,
    .model = oa_model,
    .count_tokens = oa_count_tokens,
    .close = oa_close,
};
