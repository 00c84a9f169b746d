/* http.h: the libcurl transport shared by the bench's HTTP backends, under both skeletons (the
 * plain HTTP APIs of http_api.h: openai; the AWS services of aws_backend.h: sagemaker,
 * bedrock). It owns everything about a request but its protocol: the easy handles (pooled and
 * reused), the loop's multi handle, the body sent, stamping each network read, the reply's mode
 * (a stream, a whole body, or an error body kept bounded), stalls, timeouts, libcurl's
 * resends, the classification of transport failures, retries of throttled requests, cancel and
 * close, and exactly one req->done per start. A skeleton gives a table of hooks
 * (rf_bk_http_hooks): how to build the body, how to address and sign an attempt, and how to fold
 * the reply.
 *
 * Errors: HTTP >= 400 -> the protocol's http_error (with the bounded body and the request id
 * header); connect/resolve/TLS failures -> refused; CURLOPT_TIMEOUT_MS -> timeout; no body byte
 * for stall_s once the body has begun -> stall (checked in libcurl's progress callback, which runs
 * at least once a second); the out-of-descriptor kind of failure -> client_error; a stream the
 * protocol stopped -> its recorded error; a reply that is not HTTP -> protocol_error. A reused
 * connection that closes with no reply makes libcurl resend the request on another; when even
 * that ends with no reply the request is sent once more on a new connection. Each resend is
 * counted in res->resends.
 *
 * Retries: an attempt that ends with class RF_BK_THROTTLED before any content arrived is sent
 * again, up to retry_max more times, after a wait drawn uniformly from [0, min(cap, base * 2^k)]
 * for the k-th retry ("full jitter"), on a loop timer (never sleeping on the loop thread). Each
 * retry is counted in res->retries and its wait in res->retry_wait_ms; t_sent stays the first
 * attempt's, so latencies include the waits. A retry is prepared (addressed, signed) afresh.
 *
 * Threading: everything runs on the loop thread. A request that cannot start, or waits for a
 * retry, has a callback pending on the loop; cancel or close reports it at once and the pending
 * callback only frees its state when the loop next runs it.
 *
 * Ownership: rf_bk_http_new copies nothing from cfg but its numbers: hooks and ctx must outlive the
 * transport. rf_bk_http_free cancels what is in flight (each done runs) and frees the pool.
 */
#ifndef RF_BACKEND_HTTP_H
#define RF_BACKEND_HTTP_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/loop.h"
#include "util/buf.h"

typedef enum rf_bk_http_reply {
    RF_BK_HTTP_STREAM, /* bytes go to feed as they arrive */
    RF_BK_HTTP_BODY,   /* bytes are kept (up to RF_BK_HTTP_MAX_BODY) and given to body at the end */
} rf_bk_http_reply;

#define RF_BK_HTTP_MAX_BODY     ((size_t)64 << 20) /* a non-streamed reply */
#define RF_BK_HTTP_MAX_ERR_BODY ((size_t)64 << 10) /* the part of an error body kept */

/* A skeleton's hooks. ctx is the backend's; st is the per-request state state_new made (kept
 * with the pooled easy handle and reused by later requests). Every function is required. */
typedef struct rf_bk_http_hooks {
    void *(*state_new)(void *ctx);
    void (*state_free)(void *st);
    /* A new attempt of req: forget the previous reply. */
    void (*state_reset)(void *st, rf_bk_request *req);
    /* Writes the request body into body (reset, NUL-terminated) once per request; false with a
     * reason in why: the request is not sent (class internal). */
    bool (*build)(void *ctx, void *st, rf_bk_request *req, rf_buf *body, char *why, size_t why_n);
    /* Before each attempt: sets CURLOPT_URL and CURLOPT_HTTPHEADER (and signs) on easy. A list
     * the attempt needs may be left in *headers (NULL on entry): the transport frees it when the
     * attempt ends. An error is recorded as class internal and nothing is sent. */
    rf_status (*prepare)(void *ctx, void *st, rf_bk_request *req, CURL *easy, const rf_buf *body,
                         struct curl_slist **headers, rf_error *err);
    /* A 2xx reply begins (content_type may be NULL): how its bytes are read. */
    rf_bk_http_reply (*reply_kind)(void *ctx, rf_bk_request *req, const char *content_type);
    /* Stream bytes that arrived at t; false stops the transfer (the cause recorded in req). */
    bool (*feed)(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t);
    /* The 2xx stream ended at the transport level: a protocol that saw no end records
     * truncation. */
    void (*stream_end)(void *st, rf_bk_request *req);
    /* A whole 2xx body (n may be 0), which arrived at t. */
    void (*body)(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t);
    /* status >= 400 with its (bounded) body and the x-amzn-ErrorType header ("" when none):
     * records the error (class and message) in req->res; res->request_id is already set when
     * the reply carried one. */
    void (*http_error)(void *ctx, rf_bk_request *req, long status, const char *error_type,
                       const char *p, size_t n);
    /* The request is over (any outcome): export what the state assembled (tool calls). */
    void (*finish)(void *st, rf_bk_request *req);
} rf_bk_http_hooks;

typedef struct rf_bk_http_cfg {
    const rf_bk_http_hooks *hooks;
    void *ctx;
    const char *label; /* for messages (the URL requests go to); borrowed until free */
    double timeout_s;  /* per attempt; <= 0: 600 */
    double stall_s;    /* <= 0: 60 */
    int32_t retry_max; /* retries of a throttled request (0: none) */
    double retry_base_s, retry_cap_s;
} rf_bk_http_cfg;

/* The transport settings of a backend's configuration (timeout, stall, retries with their
 * defaults, RF_BK_DEFAULT_RETRY_*). */
rf_bk_http_cfg rf_bk_http_cfg_of(const rf_backend_cfg *cfg, const rf_bk_http_hooks *hooks,
                                 void *ctx, const char *label);

typedef struct rf_http rf_http;

rf_status rf_bk_http_new(rf_loop *loop, const rf_bk_http_cfg *cfg, rf_http **out, rf_error *err);
/* Starts req (never reports by returning: exactly one req->done follows). */
void rf_bk_http_start(rf_http *h, rf_bk_request *req);
/* Aborts a started request: its done runs now, with class cancelled. */
void rf_bk_http_cancel(rf_http *h, rf_bk_request *req);
/* Cancels everything in flight and frees the transport. */
void rf_bk_http_free(rf_http *h);

/* The part every HTTP backend starts with: the registry's view, then its transport. start,
 * cancel and count_tokens of such a backend are these three. */
typedef struct rf_bk_http_backend {
    rf_backend base;
    rf_http *http;
} rf_bk_http_backend;

void rf_bk_http_backend_start(rf_backend *b, rf_bk_request *req);
void rf_bk_http_backend_cancel(rf_backend *b, rf_bk_request *req);
/* -1: an HTTP backend has no tokenizer. */
int32_t rf_bk_http_backend_count_tokens(const rf_backend *b, const char *text, size_t len);

/* The request timeout in ms as the transport applies it (for backends' own blocking calls). */
long rf_bk_http_timeout_ms(const rf_http *h);

/* The wait before retry k (0-based) with full jitter: uniform in [0, min(cap, base * 2^k)]
 * seconds, u a uniform draw in [0, 1). */
double rf_bk_http_backoff_s(double base_s, double cap_s, int32_t k, double u);

#endif
