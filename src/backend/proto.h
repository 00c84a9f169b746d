/* proto.h: a chat protocol as a table (rf_bk_proto): how a request becomes a body and how a
 * reply (one JSON body, or a stream of events) folds into the request's rf_bk_result. No
 * transport: the skeletons that send requests (http_api.h for plain HTTP(S) APIs,
 * aws_backend.h for AWS services) take a protocol table and do the rest.
 *
 * The tables: rf_bk_openai_chat (openai_proto.h: Chat Completions, served by the openai and
 * sagemaker backends) and rf_bk_bedrock_converse (bedrock_proto.h: Converse, bedrock).
 *
 * Also here: rf_bk_sse_stream, an SSE framer (sse.h) feeding a protocol's event fold, for a
 * transport that hands over a stream's bytes as they arrive (plain HTTP: the reply body;
 * sagemaker: the PayloadPart bytes of an event stream).
 *
 * Ownership: a fold is the protocol's per-request state, made by fold_new and freed by
 * fold_free; it is reused across requests (fold_reset between them). An rf_bk_sse_stream
 * borrows its fold (its owner frees both). The tables are static and never freed.
 */
#ifndef RF_BACKEND_PROTO_H
#define RF_BACKEND_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/sse.h"
#include "roofline/status.h"
#include "util/buf.h"

typedef struct rf_bk_proto {
    /* The per-request fold; NULL from fold_new when out of memory. */
    void *(*fold_new)(void);
    void (*fold_free)(void *fold);
    /* Forgets the previous reply (a new request or a retry), keeping the memory. */
    void (*fold_reset)(void *fold);
    /* Builds the request body into out (reset first, NUL-terminated). model: the model to name
     * in the body, or NULL (none, or the protocol names it elsewhere); extra: a JSON object
     * merged in (extra_body), or NULL. May set req->res.not_honoured. False with a reason in
     * why (naming the field) when the request cannot be sent. */
    bool (*build)(rf_bk_request *req, const char *model, const json_t *extra, rf_buf *out,
                  char *why, size_t why_n);
    /* A whole (non-streamed) 2xx reply body that arrived at t. */
    void (*body)(void *fold, rf_bk_request *req, const char *body, size_t len, int64_t t);
    /* One SSE event (type "" or its event: field) that arrived at t, n_event its 1-based
     * number; false stops the stream (the cause recorded). NULL: the protocol does not stream
     * over SSE (its skeleton gives it its events another way). */
    bool (*event)(void *fold, rf_bk_request *req, const char *type, const char *data, size_t len,
                  int64_t t, uint64_t n_event);
    /* The SSE stream ended after n_events events (partial: inside one): a protocol that saw no
     * end records truncation. NULL with event. */
    void (*stream_end)(void *fold, rf_bk_request *req, uint64_t n_events, bool partial);
    /* The request is over (any outcome): moves what the fold assembled (tool calls) into
     * req->res. */
    void (*finish)(void *fold, rf_bk_request *req);
    /* The message of an error reply body (HTTP >= 400) into out, always valid UTF-8. NULL: the
     * protocol's skeleton maps errors itself (AWS). */
    void (*error_message)(const char *body, size_t len, char *out, size_t n);
} rf_bk_proto;

/* The check of a backend's extra_body (merged into every body by build): NULL, or the text of
 * a JSON object; else RF_ERR_ARG "SCHEME: extra_body is not a JSON object". */
rf_status rf_bk_extra_body_check(const char *extra_body, const char *scheme, rf_error *err);

/* An SSE stream of a protocol's events. */
typedef struct rf_bk_sse_stream {
    rf_sse sse;
    const rf_bk_proto *proto;
    void *fold;         /* borrowed */
    rf_bk_request *req; /* the request being folded (set by reset) */
    int64_t t;          /* arrival of the bytes being parsed */
} rf_bk_sse_stream;

/* proto must have event and stream_end. */
void rf_bk_sse_stream_init(rf_bk_sse_stream *s, const rf_bk_proto *proto, void *fold);
void rf_bk_sse_stream_free(rf_bk_sse_stream *s);
/* A new stream for req (a new request or a retry): resets the framer and the fold. */
void rf_bk_sse_stream_reset(rf_bk_sse_stream *s, rf_bk_request *req);
/* Bytes of the stream that arrived at t. False when the stream must stop: an event over the
 * framer's bound (invalid_json), one the fold refused (its cause), out of memory (internal);
 * the cause is recorded in req->res. */
bool rf_bk_sse_stream_feed(rf_bk_sse_stream *s, const void *p, size_t n, int64_t t);
/* The stream ended: the protocol's stream_end. */
void rf_bk_sse_stream_end(rf_bk_sse_stream *s);

#endif
