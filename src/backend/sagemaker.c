/* sagemaker.c: the "sagemaker" backend: a SageMaker Runtime endpoint serving an
 * OpenAI-style chat contract (the AWS vLLM container's), on the shared libcurl transport.
 *
 * URI: "sagemaker:REGION/ENDPOINT_NAME" (REGION empty: AWS_REGION / AWS_DEFAULT_REGION).
 * Credentials, endpoint (AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME, AWS_ENDPOINT_URL, else
 * runtime.sagemaker.REGION.amazonaws.com) and SigV4 (signing name "sagemaker") as aws_client.h
 * says. The body is the Chat Completions body of openai_proto.h ("model" only when the
 * configuration names one; extra_body merged).
 *
 * Not streamed: POST /endpoints/NAME/invocations (Accept: application/json); the reply is the
 * container's chat.completion JSON. Streamed: POST /endpoints/NAME/invocations-response-stream
 * (X-Amzn-SageMaker-Accept: text/event-stream); the reply is an AWS event stream whose
 * PayloadPart events carry the container's SSE bytes, split anywhere: they are fed, in order, to
 * the SSE framer and the OpenAI fold, so an SSE event split across frames is whole again.
 * ModelStreamError -> model_error, InternalStreamFailure -> server_error (aws_error.h); HTTP
 * errors -> aws_error.h's classes with AWS's message and request id.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend/aws_client.h"
#include "backend/aws_error.h"
#include "backend/backend.h"
#include "backend/http.h"
#include "aws/eventstream.h"
#include "backend/openai_proto.h"

typedef struct sm_backend {
    rf_bk_http_backend hb; /* first */
    rf_bk_aws_client aws;
    json_t *extra;          /* cfg->extra_body parsed, or NULL */
    const char *model_sent; /* cfg->model or NULL: no "model" field */
} sm_backend;

typedef struct sm_state {
    rf_es es;
    rf_bk_openai_stream oa;
} sm_state;

static int on_message(void *user, const rf_es_message *m) {
    sm_state *s = user;
    rf_bk_result *res = &s->oa.req->res;
    if (rf_bk_aws_fail_event(res, m)) return 1;
    if (!rf_es_header_is(m, ":event-type", "PayloadPart")) return 0; /* not ours to know */
    return rf_bk_openai_stream_feed(&s->oa, m->payload, m->payload_len, s->oa.t) ? 0 : 1;
}

static void *sm_state_new(void *ctx) {
    (void)ctx;
    sm_state *s = malloc(sizeof *s);
    if (!s) return NULL;
    rf_es_init(&s->es, 0, on_message, s);
    rf_bk_openai_stream_init(&s->oa);
    return s;
}

static void sm_state_free(void *st) {
    sm_state *s = st;
    rf_es_free(&s->es);
    rf_bk_openai_stream_free(&s->oa);
    free(s);
}

static void sm_state_reset(void *st, rf_bk_request *req) {
    sm_state *s = st;
    rf_es_reset(&s->es);
    rf_bk_openai_stream_reset(&s->oa, req);
}

static bool sm_build(void *ctx, void *st, rf_bk_request *req, rf_buf *body, char *why,
                     size_t why_n) {
    (void)st;
    const sm_backend *b = ctx;
    return rf_bk_openai_build_body(req, b->model_sent, b->extra, body, why, why_n);
}

static rf_status sm_prepare(void *ctx, void *st, rf_bk_request *req, CURL *easy, const rf_buf *body,
                            struct curl_slist **headers, rf_error *err) {
    (void)st;
    const sm_backend *b = ctx;
    return rf_bk_aws_client_prepare(&b->aws, easy, req->stream,
                                    req->stream ? "X-Amzn-SageMaker-Accept: text/event-stream"
                                                : "Accept: application/json",
                                    body, headers, err);
}

static rf_bk_http_reply sm_reply_kind(void *ctx, rf_bk_request *req, const char *ct) {
    (void)ctx, (void)ct;
    return req->stream ? RF_BK_HTTP_STREAM : RF_BK_HTTP_BODY;
}

static bool sm_feed(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    sm_state *s = st;
    s->oa.t = t;
    return rf_bk_aws_es_feed(&s->es, &req->res, p, n);
}

static void sm_stream_end(void *st, rf_bk_request *req) {
    sm_state *s = st;
    rf_bk_aws_es_end(&s->es, &req->res);
    rf_bk_openai_stream_end(&s->oa);
}

static void sm_body(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    rf_bk_openai_fold_body(&((sm_state *)st)->oa.fold, req, p, n, t);
}

static void sm_http_error(void *ctx, rf_bk_request *req, long status, const char *error_type,
                          const char *p, size_t n) {
    (void)ctx;
    rf_bk_aws_fail_http(&req->res, status, error_type, p, n);
}

static void sm_finish(void *st, rf_bk_request *req) {
    rf_bk_openai_fold_export(&((sm_state *)st)->oa.fold, req);
}

static const rf_bk_http_proto sm_proto = {
    .state_new = sm_state_new,
    .state_free = sm_state_free,
    .state_reset = sm_state_reset,
    .build = sm_build,
    .prepare = sm_prepare,
    .reply_kind = sm_reply_kind,
    .feed = sm_feed,
    .stream_end = sm_stream_end,
    .body = sm_body,
    .http_error = sm_http_error,
    .finish = sm_finish,
};

static rf_status sm_validate(const rf_backend_cfg *cfg, rf_error *err) {
    return rf_bk_aws_validate(cfg, "sagemaker", err);
}

static void sm_free(sm_backend *b) {
    rf_bk_http_free(b->hb.http);
    rf_bk_aws_client_close(&b->aws);
    json_decref(b->extra);
    free(b);
}

static rf_status sm_open(const rf_backend_cfg *cfg, rf_loop *loop, rf_backend **out,
                         rf_error *err) {
    *out = NULL;
    rf_status st = sm_validate(cfg, err);
    if (st) return st;
    sm_backend *b = calloc(1, sizeof *b);
    if (!b) return rf_error_set(err, RF_ERR_NOMEM, "sagemaker: out of memory");
    st = rf_bk_aws_client_open(&b->aws, RF_AWS_SAGEMAKER_RUNTIME, cfg->uri, "sagemaker",
                               "/endpoints/", "/invocations", "/invocations-response-stream", err);
    if (st) {
        free(b);
        return st;
    }
    if (cfg->extra_body) b->extra = json_loads(cfg->extra_body, JSON_REJECT_DUPLICATES, NULL);
    b->model_sent = cfg->model && *cfg->model ? cfg->model : NULL;
    rf_bk_http_cfg hc = rf_bk_http_cfg_of(cfg, &sm_proto, b, b->aws.url_stream);
    st = rf_bk_http_new(loop, &hc, &b->hb.http, err);
    if (st) {
        sm_free(b);
        return st;
    }
    *out = &b->hb.base;
    return RF_OK;
}

/* The configured model name, else the endpoint's. cfg strings live as long as the backend. */
static const char *sm_model(const rf_backend *bk) {
    const sm_backend *b = (const sm_backend *)bk;
    return bk->cfg.model && *bk->cfg.model ? bk->cfg.model : b->aws.name;
}

static void sm_close(rf_backend *bk) {
    sm_free((sm_backend *)bk);
}

const rf_backend_vtable rf_backend_sagemaker = {
    .scheme = "sagemaker",
    .loop_timed = true,
    .validate = sm_validate,
    .open = sm_open,
    .start = rf_bk_http_backend_start,
    .cancel = rf_bk_http_backend_cancel,
    .model = sm_model,
    .count_tokens = rf_bk_http_backend_count_tokens,
    .close = sm_close,
};
