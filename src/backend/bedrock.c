/* bedrock.c: the "bedrock" backend: Amazon Bedrock Runtime's Converse (not streamed)
 * and ConverseStream (streamed), on the shared libcurl transport, with bedrock_proto.h's
 * mapping to and from the bench's common form.
 *
 * URI: "bedrock:REGION/MODEL_ID" (REGION empty: AWS_REGION / AWS_DEFAULT_REGION); MODEL_ID a
 * model id ("anthropic.claude-3-haiku-20240307-v1:0"), an inference profile ("us.amazon.nova-
 * micro-v1:0") or an ARN, percent-encoded into the path (':' as %3A, '/' as %2F). Credentials,
 * endpoint (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL, else
 * bedrock-runtime.REGION.amazonaws.com) and SigV4 (signing name "bedrock"; our signer on
 * libcurl < 8.14, whose signer gets escaped paths wrong) as aws_client.h says.
 *
 * POST /model/ID/converse (Accept: application/json) or /model/ID/converse-stream (Accept:
 * application/vnd.amazon.eventstream). Stream exceptions (throttlingException,
 * modelStreamErrorException, validationException, ...) and HTTP errors -> aws_error.h's
 * classes with AWS's message and request id; throttling is retried by the transport.
 * cfg->model is not sent (the id is in the path); the model recorded is MODEL_ID.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backend/aws_client.h"
#include "backend/aws_error.h"
#include "backend/backend.h"
#include "backend/bedrock_proto.h"
#include "backend/http.h"
#include "aws/eventstream.h"

typedef struct br_backend {
    rf_bk_http_backend hb; /* first */
    rf_bk_aws_client aws;
    json_t *extra; /* cfg->extra_body parsed, or NULL */
} br_backend;

typedef struct br_state {
    rf_es es;
    rf_bk_bedrock_fold fold;
    rf_bk_request *req;
    int64_t t; /* arrival of the bytes being decoded */
} br_state;

static int on_message(void *user, const rf_es_message *m) {
    br_state *s = user;
    return rf_bk_bedrock_fold_event(&s->fold, s->req, m, s->t) ? 0 : 1;
}

static void *br_state_new(void *ctx) {
    (void)ctx;
    br_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    rf_es_init(&s->es, 0, on_message, s);
    rf_bk_bedrock_fold_init(&s->fold);
    return s;
}

static void br_state_free(void *st) {
    br_state *s = st;
    rf_es_free(&s->es);
    rf_bk_bedrock_fold_free(&s->fold);
    free(s);
}

static void br_state_reset(void *st, rf_bk_request *req) {
    br_state *s = st;
    rf_es_reset(&s->es);
    rf_bk_bedrock_fold_reset(&s->fold);
    s->req = req;
    s->t = 0;
}

static bool br_build(void *ctx, void *st, rf_bk_request *req, rf_buf *body, char *why,
                     size_t why_n) {
    (void)st;
    const br_backend *b = ctx;
    return rf_bk_bedrock_build_body(req, b->extra, body, why, why_n);
}

static rf_status br_prepare(void *ctx, void *st, rf_bk_request *req, CURL *easy, const rf_buf *body,
                            struct curl_slist **headers, rf_error *err) {
    (void)st;
    const br_backend *b = ctx;
    return rf_bk_aws_client_prepare(&b->aws, easy, req->stream,
                                    req->stream ? "Accept: application/vnd.amazon.eventstream"
                                                : "Accept: application/json",
                                    body, headers, err);
}

static rf_bk_http_reply br_reply_kind(void *ctx, rf_bk_request *req, const char *ct) {
    (void)ctx, (void)ct;
    return req->stream ? RF_BK_HTTP_STREAM : RF_BK_HTTP_BODY;
}

static bool br_feed(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    br_state *s = st;
    s->t = t;
    return rf_bk_aws_es_feed(&s->es, &req->res, p, n);
}

static void br_stream_end(void *st, rf_bk_request *req) {
    br_state *s = st;
    rf_bk_aws_es_end(&s->es, &req->res);
    rf_bk_bedrock_fold_end(&s->fold, req);
}

static void br_body(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    rf_bk_bedrock_fold_body(&((br_state *)st)->fold, req, p, n, t);
}

static void br_http_error(void *ctx, rf_bk_request *req, long status, const char *error_type,
                          const char *p, size_t n) {
    (void)ctx;
    rf_bk_aws_fail_http(&req->res, status, error_type, p, n);
}

static void br_finish(void *st, rf_bk_request *req) {
    rf_bk_bedrock_fold_export(&((br_state *)st)->fold, req);
}

static const rf_bk_http_proto br_proto = {
    .state_new = br_state_new,
    .state_free = br_state_free,
    .state_reset = br_state_reset,
    .build = br_build,
    .prepare = br_prepare,
    .reply_kind = br_reply_kind,
    .feed = br_feed,
    .stream_end = br_stream_end,
    .body = br_body,
    .http_error = br_http_error,
    .finish = br_finish,
};

static rf_status br_validate(const rf_backend_cfg *cfg, rf_error *err) {
    return rf_bk_aws_validate(cfg, "bedrock", err);
}

static void br_free(br_backend *b) {
    rf_bk_http_free(b->hb.http);
    rf_bk_aws_client_close(&b->aws);
    json_decref(b->extra);
    free(b);
}

static rf_status br_open(const rf_backend_cfg *cfg, rf_loop *loop, rf_backend **out,
                         rf_error *err) {
    *out = NULL;
    rf_status st = br_validate(cfg, err);
    if (st) return st;
    br_backend *b = calloc(1, sizeof *b);
    if (!b) return rf_error_set(err, RF_ERR_NOMEM, "bedrock: out of memory");
    st = rf_bk_aws_client_open(&b->aws, RF_AWS_BEDROCK_RUNTIME, cfg->uri, "bedrock", "/model/",
                               "/converse", "/converse-stream", err);
    if (st) {
        free(b);
        return st;
    }
    if (cfg->extra_body) b->extra = json_loads(cfg->extra_body, JSON_REJECT_DUPLICATES, NULL);
    rf_bk_http_cfg hc = rf_bk_http_cfg_of(cfg, &br_proto, b, b->aws.url_stream);
    st = rf_bk_http_new(loop, &hc, &b->hb.http, err);
    if (st) {
        br_free(b);
        return st;
    }
    *out = &b->hb.base;
    return RF_OK;
}

static const char *br_model(const rf_backend *bk) {
    return ((const br_backend *)bk)->aws.name;
}

static void br_close(rf_backend *bk) {
    br_free((br_backend *)bk);
}

const rf_backend_vtable rf_backend_bedrock = {
    .scheme = "bedrock",
    .loop_timed = true,
    .validate = br_validate,
    .open = br_open,
    .start = rf_bk_http_backend_start,
    .cancel = rf_bk_http_backend_cancel,
    .model = br_model,
    .count_tokens = rf_bk_http_backend_count_tokens,
    .close = br_close,
};
