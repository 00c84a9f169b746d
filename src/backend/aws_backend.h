/* aws_backend.h: the skeleton of the AWS backends (sagemaker:, bedrock:), written once; each
 * service is a protocol table (rf_bk_aws_proto) over it.
 *
 * The skeleton owns: the URI "SCHEME:REGION/NAME" (REGION may be empty: AWS_REGION /
 * AWS_DEFAULT_REGION then; NAME a model id, inference profile, ARN or endpoint name), the
 * credentials (aws/cred.h), the endpoint (aws/endpoint.h: AWS_ENDPOINT_URL_<SERVICE>,
 * AWS_ENDPOINT_URL, else the service's regional host), the URLs base + prefix + NAME
 * (percent-encoded as one path segment, ':' as %3A, '/' as %2F) + suffix, extra_body (a JSON
 * object merged into every body), the addressing and SigV4 signing of every attempt on the
 * libcurl transport (aws/sign.h; a retry is signed afresh), the Content-Type and Accept headers,
 * the event-stream framing of streamed replies (aws/eventstream.h), and the errors
 * (aws_error.h): HTTP error replies and stream exceptions as the bench's classes with AWS's
 * message and request id, throttling retried by the transport (http.h).
 *
 * A protocol table gives: the service, the URI shape for messages, the URL prefix and suffixes
 * of a plain and a streamed request, their Accept header lines, whether the configured model is
 * sent and recorded (else NAME is the model), the chat protocol (proto.h: body builder,
 * whole-body fold, export) and how a stream's event messages fold: each message that is not an
 * exception goes to message, or, when message is NULL, the payloads of PayloadPart events carry
 * the protocol's SSE bytes (split anywhere) and go, in order, to an SSE stream of proto's events.
 *
 * A service is one file: its table and RF_BK_AWS_BACKEND(...) as its rf_backend_vtable, plus a
 * line in backend.c's registry.
 *
 * Ownership: the backend owns its strings, credentials (wiped on close), parsed extra_body and
 * transport; the tables are static.
 */
#ifndef RF_BACKEND_AWS_BACKEND_H
#define RF_BACKEND_AWS_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "aws/endpoint.h"
#include "aws/eventstream.h"
#include "backend/backend.h"
#include "backend/http.h"
#include "backend/proto.h"
#include "roofline/status.h"

typedef struct rf_bk_aws_proto {
    rf_aws_service service;
    const char *uri_shape;     /* for messages: "bedrock:REGION/MODEL_ID" */
    const char *path_prefix;   /* "/model/": before NAME */
    const char *plain_suffix;  /* "/converse": after NAME, a request that does not stream */
    const char *stream_suffix; /* "/converse-stream" */
    const char *accept_plain;  /* header line: "Accept: application/json" */
    const char *accept_stream; /* "Accept: application/vnd.amazon.eventstream" */
    /* The configured model (cfg->model, when not empty) is sent as the body's model and is the
     * model recorded; false: none is sent, NAME is recorded. */
    bool model_from_cfg;
    const rf_bk_proto *proto; /* build, body, finish (and the SSE events when message is NULL) */
    /* One event-stream message that is not an exception or error (those are recorded by the
     * skeleton), arrived at t; false stops the stream (the cause recorded). NULL: PayloadPart
     * payloads are proto's SSE bytes. */
    bool (*message)(void *fold, rf_bk_request *req, const rf_es_message *m, int64_t t);
    /* With message: the event stream ended (whole messages): record truncation if the
     * protocol's end was not seen. */
    void (*stream_end)(void *fold, rf_bk_request *req);
} rf_bk_aws_proto;

/* The skeleton's functions of the vtable; vt->proto is the rf_bk_aws_proto. validate checks
 * the URI and extra_body (RF_ERR_ARG naming what is wrong) without opening anything. */
rf_status rf_bk_aws_validate(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_error *err);
rf_status rf_bk_aws_open(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_loop *loop,
                         rf_backend **out, rf_error *err);
const char *rf_bk_aws_model(const rf_backend *b);
void rf_bk_aws_close(rf_backend *b);

/* The rf_backend_vtable of an AWS service: scheme, usage (the URI shape listed when a scheme is
 * unknown) and its rf_bk_aws_proto. */
#define RF_BK_AWS_BACKEND(scheme_, usage_, table_)                                                 \
    {                                                                                              \
        .scheme = (scheme_), .usage = (usage_), .loop_timed = true, .proto = (table_),             \
        .validate = rf_bk_aws_validate, .open = rf_bk_aws_open, .start = rf_bk_http_backend_start, \
        .cancel = rf_bk_http_backend_cancel, .model = rf_bk_aws_model,                             \
        .count_tokens = rf_bk_http_backend_count_tokens, .close = rf_bk_aws_close,                 \
    }

#endif
