/* backend.h: one interface for every system the bench measures: send a chat request, stream its
 * events with timestamps, return usage and tool calls.
 *
 * A backend is a table of functions (rf_backend_vtable) plus its own state; backends are
 * registered by URI scheme in backend.c's registry (local, openai, sagemaker, bedrock). All calls
 * happen on the loop thread; a backend that works on another thread (the in-process engine,
 * local.c) posts its events back with rf_loop_post.
 *
 * The HTTP backends are protocol tables over two skeletons, both on one libcurl transport
 * (http.h: pooling, stalls, timeouts, resends, retries, cancel):
 *   proto.h        a chat protocol: body builder, reply and stream-event folding (rf_bk_proto):
 *                  openai_proto.c (Chat Completions), bedrock_proto.c (Converse)
 *   http_api.h     plain HTTP(S) APIs: URL, API key, model discovery, SSE, HTTP errors; an API is
 *                  an rf_bk_api_proto (paths, key header, its rf_bk_proto): openai.c
 *   aws_backend.h  AWS services: URI, credentials, endpoint, SigV4, event streams, AWS errors; a
 *                  service is an rf_bk_aws_proto (URL suffixes, Accept headers, its rf_bk_proto
 *                  and stream-message fold): sagemaker.c (Chat Completions inside PayloadPart
 *                  events), bedrock.c (ConverseStream messages)
 *
 * Adding an OpenAI-like HTTP API (say, the Anthropic Messages API) is one protocol file plus a
 * registry line:
 *   1. src/backend/anthropic.c: the body builder and the folds (a whole reply body; one SSE
 *      event; the stream's end; the tool calls' export; the error body's message) as a
 *      `static const rf_bk_proto`, its `static const rf_bk_api_proto` (chat_path "/messages",
 *      models_path "/models", key_prefix "x-api-key: ", headers {"anthropic-version: ...",
 *      NULL}) and `const rf_backend_vtable rf_backend_anthropic =
 *      RF_BK_API_BACKEND("anthropic", &table);`
 *   2. X(anthropic) in RF_BACKENDS in backend.c.
 * An AWS service is the same with an rf_bk_aws_proto and RF_BK_AWS_BACKEND (bedrock.c); a
 * backend that is no HTTP API fills the vtable itself (local.c).
 *
 * Ownership: the driver owns rf_bk_request structs (and everything their inputs point to, until
 * the request's done callback); the backend fills req->res, whose buffers the driver frees with
 * rf_bk_result_free. A backend frees its own state in close; requests still in flight are
 * cancelled (their done callback runs with error class "cancelled") before close returns.
 */
#ifndef RF_BACKEND_BACKEND_H
#define RF_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/loop.h"
#include "roofline/status.h"
#include "util/buf.h"

/* ---- configuration (from the run description) ---- */

typedef struct rf_backend_cfg {
    const char *name;        /* label in results, e.g. "g6" or "local" */
    const char *uri;         /* "local", "local:/path/model.gguf", "openai:http://host:8080/v1" */
    const char *model;       /* model name sent to an API (openai "model"); NULL: ask the server
                              * (GET /models) or use the file name */
    const char *api_key_env; /* environment variable holding the API key (never the key itself) */
    int32_t threads;         /* local: engine threads (0: physical cores) */
    int32_t max_seqs;        /* local: engine batch slots (0: 16) */
    int32_t n_ctx;           /* local: context per request (0: engine default) */
    bool widen;              /* local: the engine's widened matmul path (--widen) */
    double timeout_s;        /* per request; 0: 600 */
    double stall_s;          /* no byte for this long mid-stream is an error; 0: 60 */
    const char *extra_body;  /* HTTP: a JSON object merged into every request body (as the
                              * openai SDK's extra_body), e.g. {"cache_prompt": false}; NULL */
    int64_t max_reply_bytes; /* reply text (and each tool call's arguments) kept per request;
                              * 0: RF_BK_DEFAULT_REPLY_CAP. Bytes past it are counted, not kept. */
    /* HTTP: a throttled request (RF_BK_THROTTLED: AWS ThrottlingException, ModelNotReady, 429
     * from the AWS backends) that showed no content yet is sent again after a wait drawn from
     * [0, min(retry_cap_s, retry_base_s * 2^k)] (full jitter), at most retry_max times. */
    int32_t retry_max;   /* 0: RF_BK_DEFAULT_RETRY_MAX; < 0: no retries */
    double retry_base_s; /* 0: RF_BK_DEFAULT_RETRY_BASE_S */
    double retry_cap_s;  /* 0: RF_BK_DEFAULT_RETRY_CAP_S */
} rf_backend_cfg;

#define RF_BK_DEFAULT_RETRY_MAX    3
#define RF_BK_DEFAULT_RETRY_BASE_S 1.0  /* botocore's "standard" retry mode: base 1 s ... */
#define RF_BK_DEFAULT_RETRY_CAP_S  20.0 /* ... capped at 20 s */

#define RF_BK_DEFAULT_REPLY_CAP ((int64_t)1 << 20)
#define RF_BK_MAX_EVENTS        (1 << 20) /* content events whose times are kept per request */

/* ---- one request ---- */

typedef struct rf_bk_message {
    const char *role;         /* system, user, assistant, tool */
    const char *content;      /* may be NULL for an assistant message with tool calls */
    const char *tool_call_id; /* role tool */
    const char *tool_calls;   /* role assistant: the OpenAI tool_calls array as JSON text */
} rf_bk_message;

typedef enum rf_bk_error {
    RF_BK_OK = 0,
    RF_BK_REFUSED, /* connection refused / could not connect / DNS */
    RF_BK_TIMEOUT, /* the whole request took longer than timeout_s */
    RF_BK_STALL,   /* the stream went quiet for stall_s */
    RF_BK_HTTP_4XX,
    RF_BK_HTTP_5XX,
    RF_BK_TRUNCATED,    /* the stream ended without [DONE] / a finish */
    RF_BK_INVALID,      /* a body or event that is not the JSON the protocol promises */
    RF_BK_SERVER_ERROR, /* an error object inside a 200 stream */
    RF_BK_CANCELLED,
    RF_BK_INTERNAL,
    RF_BK_PROTOCOL,    /* a reply that is not HTTP (garbage, HTTP/0.9, another protocol) */
    RF_BK_HTTP_STATUS, /* an HTTP status the protocol does not use here (1xx, 3xx, 2xx != 200) */
    RF_BK_CLIENT,      /* the client ran out of a local resource (descriptors, ports, memory):
                        * not the server's fault */
    RF_BK_THROTTLED,   /* the service refused for rate or capacity (AWS ThrottlingException,
                        * ModelNotReadyException, HTTP 429 from AWS), after any retries */
    RF_BK_MODEL_ERROR, /* the model (container) failed: Bedrock ModelErrorException (424),
                        * SageMaker ModelError / ModelStreamError */
    RF_BK_ERROR_COUNT
} rf_bk_error;

const char *rf_bk_error_name(rf_bk_error e); /* "refused", "timeout", ... ("ok") */
/* The class named s (the names above); false when s names none. */
bool rf_bk_error_parse(const char *s, rf_bk_error *out);

typedef struct rf_bk_tool_call {
    char *id;
    char *name;
    char *arguments; /* JSON text as sent (may be invalid JSON: graded, not trusted), at most the
                      * request's reply cap */
    int64_t arguments_bytes; /* bytes of arguments that arrived (more than kept when cut) */
} rf_bk_tool_call;

typedef struct rf_bk_result {
    /* monotonic ns; 0 when the event did not happen */
    int64_t t_sent;          /* request handed to the transport */
    int64_t t_first_byte;    /* first response byte (HTTP); engine: admission */
    int64_t t_first_content; /* first event carrying content or a tool-call delta */
    int64_t t_last_content;
    int64_t t_done; /* [DONE] / final event / transfer end */
    /* every content-bearing event: time and tokens in it (-1 when unknown) */
    int64_t *ev_t;
    int32_t *ev_tokens;
    int32_t n_ev, cap_ev;
    int64_t n_ev_dropped; /* content events past RF_BK_MAX_EVENTS: counted, times not kept */
    rf_buf text;          /* reply content, concatenated, at most the request's reply cap */
    int64_t text_bytes;   /* reply bytes that arrived (text.len, plus what the cap cut) */
    rf_bk_tool_call *calls;
    int32_t n_calls;
    int32_t prompt_tokens;     /* from the server's usage; -1 when not sent */
    int32_t completion_tokens; /* from the server's usage; -1 when not sent */
    int32_t client_tokens;     /* counted by the client (engine: exact; HTTP: -1 unless the
                                * driver re-tokenizes) */
    char finish_reason[24];
    char call_form[16]; /* how the tool calls were written: "tagged", "bare_json",
                         * "prompt_json" (local backend); "" when unknown or none */
    int http_status;
    rf_bk_error err;
    char err_msg[512];    /* valid UTF-8 always: cut on a character, unprintable bytes as \xNN */
    int32_t resends;      /* HTTP: times the request was resent on a new connection because a reused
                           * one closed with no reply (libcurl does this by itself) */
    int32_t retries;      /* times a throttled request was sent again (rf_backend_cfg.retry_*) */
    double retry_wait_ms; /* the backoff waits those retries spent (inside the latencies) */
    char request_id[96];  /* the service's id of the (last) attempt: x-amzn-RequestId,
                           * x-request-id; "" when none */
    double server_latency_ms; /* the service's own latency (Bedrock metrics.latencyMs); < 0:
                               * not reported */
    char not_honoured[48];    /* request fields the backend could not honour, comma-separated
                               * (e.g. "ignore_eos" on Bedrock); "" when none */
    /* the server's own timings when it reports them (llama-server's `timings`) */
    bool has_timings;
    double prompt_ms, predicted_ms;
    int32_t prompt_n, predicted_n;
} rf_bk_result;

typedef struct rf_bk_request rf_bk_request;
typedef void (*rf_bk_done_fn)(void *user, rf_bk_request *req);

struct rf_bk_request {
    const rf_bk_message *msgs;
    int32_t n_msgs;
    const char *tools;       /* OpenAI "tools" array as JSON text; NULL: none */
    const char *tool_choice; /* "auto", "none", "required"; NULL: omitted */
    float temperature;
    float top_p; /* 1: omitted */
    int32_t max_tokens;
    uint64_t seed;
    bool ignore_eos;         /* ask for exactly max_tokens (vLLM/llama.cpp extension) */
    bool stream;             /* SSE streaming (with usage) vs one JSON body */
    int64_t max_reply_bytes; /* reply text and tool-call arguments kept; 0: the default cap */
    rf_bk_done_fn done;      /* runs once, on the loop thread */
    void *user;
    rf_bk_result res;
    void *priv; /* the backend's per-request state */
};

void rf_bk_result_init(rf_bk_result *r);
void rf_bk_result_free(rf_bk_result *r);
/* Appends a content event (t, tokens) to r, growing its arrays; false when out of memory. Past
 * RF_BK_MAX_EVENTS events only the count and the last time are kept. */
bool rf_bk_result_event(rf_bk_result *r, int64_t t, int32_t tokens);
/* The cap on kept reply bytes for req (its max_reply_bytes, else the default). */
int64_t rf_bk_reply_cap(const rf_bk_request *req);
/* Appends reply text to req's result up to the cap; bytes past it are only counted in
 * text_bytes. False when out of memory. Cuts on a byte: the record writer repairs a character
 * cut at the cap. */
bool rf_bk_result_text(rf_bk_request *req, const char *p, size_t n);
/* Appends n bytes to buf (a tool call's arguments) up to cap, counting every byte in *total. */
bool rf_bk_append_capped(rf_buf *buf, int64_t cap, int64_t *total, const char *p, size_t n);
/* Sets the error class and a printf-style message (the first error wins). */
void rf_bk_fail(rf_bk_result *r, rf_bk_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- backends ---- */

typedef struct rf_backend rf_backend;

typedef struct rf_backend_vtable rf_backend_vtable;

struct rf_backend_vtable {
    const char *scheme; /* "local", "openai", ... */
    const char *usage;  /* the URI shapes, listed when a scheme is unknown: "openai:URL" */
    /* The protocol table of a backend built on a skeleton (http_api.h, aws_backend.h), which
     * its validate and open read from vt; NULL for one written whole (local). */
    const void *proto;
    /* Event times are taken on the loop thread when data is read (HTTP): a busy loop makes them
     * late. false when another thread stamps them (the engine's own clock readings). */
    bool loop_timed;
    /* Checks a configuration without opening anything (when the run is described, so a bad
     * URL stops the run before it starts); NULL: nothing to check before open. */
    rf_status (*validate)(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_error *err);
    rf_status (*open)(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_loop *loop,
                      rf_backend **out, rf_error *err);
    /* Starts req now (non-blocking). Failures to start are reported through req->done with an
     * error class, never by returning: the driver always gets exactly one done per start. */
    void (*start)(rf_backend *b, rf_bk_request *req);
    /* Aborts a started request (its done still runs, with RF_BK_CANCELLED). */
    void (*cancel)(rf_backend *b, rf_bk_request *req);
    /* The model name the backend serves (for records), borrowed until close. */
    const char *(*model)(const rf_backend *b);
    /* Counts tokens of text with the backend's tokenizer when it has one (local); -1 otherwise. */
    int32_t (*count_tokens)(const rf_backend *b, const char *text, size_t len);
    void (*close)(rf_backend *b);
};

/* Every backend embeds this as its first member. */
struct rf_backend {
    const rf_backend_vtable *vt;
    rf_backend_cfg cfg; /* strings copied by rf_backend_open (owned) */
    rf_loop *loop;
};

/* Opens the backend named by cfg->uri's scheme. RF_ERR_ARG names an unknown scheme and lists
 * the known ones. */
rf_status rf_backend_open(const rf_backend_cfg *cfg, rf_loop *loop, rf_backend **out,
                          rf_error *err);
/* The scheme and the backend's own checks of cfg (RF_ERR_ARG naming the backend and field). */
rf_status rf_backend_validate(const rf_backend_cfg *cfg, rf_error *err);
void rf_backend_close(rf_backend *b);
/* Whether cfg->uri names the in-process engine ("local" or "local:MODEL"), by the scheme parse
 * rf_backend_open uses; false for a NULL URI. */
bool rf_backend_is_local(const rf_backend_cfg *cfg);
/* The model a local URI names (what follows "local:": an embedded model's name or a path),
 * borrowed from cfg->uri; NULL for plain "local" (the default model), "local:" and any URI that
 * is not local. */
const char *rf_backend_local_model(const rf_backend_cfg *cfg);

#endif
