/* aws_backend.c: the skeleton of the AWS backends (aws_backend.h): URI, credentials, endpoint,
 * URLs, signing, event-stream framing and errors, around a service's protocol table. */
#include "backend/aws_backend.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/cred.h"
#include "aws/sign.h"
#include "backend/aws_error.h"
#include "util/file.h"

/* Checks uri = "scheme:REGION/NAME" (NAME non-empty, REGION a region name or empty with one in
 * the environment) without opening anything; the region and name are returned when the pointers
 * are not NULL (*name malloc'd, caller frees). RF_ERR_ARG names what is wrong and the shape. */
static rf_status uri_parse(const char *uri, const char *scheme, const char *want,
                           char region[RF_AWS_REGION_MAX], char **name, rf_error *err) {
    if (name) *name = NULL;
    size_t sn = strlen(scheme);
    char shown[120];
    if (!uri || strncmp(uri, scheme, sn) || uri[sn] != ':')
        return rf_error_set(err, RF_ERR_ARG, "%s: '%s' is not %s", scheme,
                            uri ? rf_printable(uri, strlen(uri), shown, sizeof shown) : "", want);
    const char *r = uri + sn + 1, *slash = strchr(r, '/');
    if (!slash || !slash[1])
        return rf_error_set(err, RF_ERR_ARG, "%s: '%s' has no name after the region (%s)", scheme,
                            rf_printable(uri, strlen(uri), shown, sizeof shown), want);
    for (const char *p = slash + 1; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return rf_error_set(err, RF_ERR_ARG,
                                "%s: the name in '%s' has a space or control "
                                "character",
                                scheme, rf_printable(uri, strlen(uri), shown, sizeof shown));
    char given[RF_AWS_REGION_MAX + 1];
    size_t rn = (size_t)(slash - r);
    if (rn >= sizeof given)
        return rf_error_set(err, RF_ERR_ARG, "%s: the region in '%s' is too long (%s)", scheme,
                            rf_printable(uri, strlen(uri), shown, sizeof shown), want);
    memcpy(given, r, rn);
    given[rn] = 0;
    char reg[RF_AWS_REGION_MAX];
    rf_status st = rf_aws_region(given, reg, err);
    if (st) {
        rf_error_prefix(err, "%s: %s (%s)", scheme,
                        rf_printable(uri, strlen(uri), shown, sizeof shown), want);
        return st;
    }
    if (region) memcpy(region, reg, sizeof reg);
    if (name) {
        *name = strdup(slash + 1);
        if (!*name) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    }
    return RF_OK;
}

/* ---------------------------------------------------------------- the backend */

typedef struct aws_backend {
    rf_bk_http_backend hb; /* first: the registry's view and the transport */
    const rf_bk_aws_proto *p;
    const char *scheme;
    rf_aws_creds creds;
    char region[RF_AWS_REGION_MAX];
    char base[RF_AWS_URL_MAX]; /* the endpoint, no trailing '/' */
    char *name;                /* the model id or endpoint name, as given */
    char *url_plain;           /* base + prefix + escaped name + the plain suffix */
    char *url_stream;          /* ... + the streaming suffix */
    json_t *extra;             /* cfg->extra_body parsed, or NULL */
    const char *model_sent;    /* cfg->model when the table sends it, or NULL: none */
} aws_backend;

/* A request's state: the event-stream decoder, the protocol's fold and, for PayloadPart
 * streams, the SSE stream over it. */
typedef struct aws_state {
    const rf_bk_aws_proto *p;
    rf_es es;
    void *fold;
    rf_bk_sse_stream sse; /* when p->message is NULL */
    rf_bk_request *req;
    int64_t t; /* arrival of the bytes being decoded */
} aws_state;

static int on_message(void *user, const rf_es_message *m) {
    aws_state *s = user;
    rf_bk_request *req = s->req;
    if (rf_bk_aws_fail_event(&req->res, m)) return 1;
    if (s->p->message) return s->p->message(s->fold, req, m, s->t) ? 0 : 1;
    if (!rf_es_header_is(m, ":event-type", "PayloadPart")) return 0; /* not ours to know */
    return rf_bk_sse_stream_feed(&s->sse, m->payload, m->payload_len, s->t) ? 0 : 1;
}

static void *state_new(void *ctx) {
    const aws_backend *b = ctx;
    aws_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = b->p;
    s->fold = b->p->proto->fold_new();
    if (!s->fold) {
        free(s);
        return NULL;
    }
    rf_es_init(&s->es, 0, on_message, s);
    if (!s->p->message) rf_bk_sse_stream_init(&s->sse, s->p->proto, s->fold);
    return s;
}

static void state_free(void *st) {
    aws_state *s = st;
    rf_es_free(&s->es);
    if (!s->p->message) rf_bk_sse_stream_free(&s->sse);
    s->p->proto->fold_free(s->fold);
    free(s);
}

static void state_reset(void *st, rf_bk_request *req) {
    aws_state *s = st;
    rf_es_reset(&s->es);
    if (s->p->message)
        s->p->proto->fold_reset(s->fold);
    else
        rf_bk_sse_stream_reset(&s->sse, req);
    s->req = req;
    s->t = 0;
}

static bool build(void *ctx, void *st, rf_bk_request *req, rf_buf *body, char *why, size_t why_n) {
    (void)st;
    const aws_backend *b = ctx;
    return b->p->proto->build(req, b->model_sent, b->extra, body, why, why_n);
}

/* Addresses and signs one attempt: the URL, a Content-Type of application/json and the accept
 * header line, then rf_aws_sign_curl (which sets CURLOPT_HTTPHEADER). */
static rf_status prepare(void *ctx, void *st, rf_bk_request *req, CURL *easy, const rf_buf *body,
                         struct curl_slist **headers, rf_error *err) {
    (void)st;
    const aws_backend *b = ctx;
    const char *url = req->stream ? b->url_stream : b->url_plain;
    curl_easy_setopt(easy, CURLOPT_URL, url);
    struct curl_slist *h = curl_slist_append(*headers, "Content-Type: application/json");
    if (h) {
        *headers = h;
        h = curl_slist_append(h, req->stream ? b->p->accept_stream : b->p->accept_plain);
    }
    if (!h) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    *headers = h;
    return rf_aws_sign_curl(easy, &b->creds, b->region, rf_aws_signing_name(b->p->service), "POST",
                            url, body->data, body->len, RF_AWS_SIGNER_AUTO, headers, err);
}

static rf_bk_http_reply reply_kind(void *ctx, rf_bk_request *req, const char *ct) {
    (void)ctx, (void)ct;
    return req->stream ? RF_BK_HTTP_STREAM : RF_BK_HTTP_BODY;
}

/* An event stream's bytes, a framing error recorded (invalid_json, with the decoder's message;
 * a stop by on_message is its own to record). */
static bool feed(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    aws_state *s = st;
    s->t = t;
    rf_es_status es = rf_es_feed(&s->es, p, n);
    if (es == RF_ES_OK || es == RF_ES_STOPPED) return es == RF_ES_OK;
    rf_bk_fail(&req->res, es == RF_ES_NOMEM ? RF_BK_INTERNAL : RF_BK_INVALID, "%s",
               rf_es_error(&s->es));
    return false;
}

/* The stream ended: a message left half-way is truncated, then the protocol's own end. */
static void stream_end(void *st, rf_bk_request *req) {
    aws_state *s = st;
    if (rf_es_finish(&s->es) == RF_ES_PARTIAL)
        rf_bk_fail(&req->res, RF_BK_TRUNCATED, "%s", rf_es_error(&s->es));
    if (s->p->message)
        s->p->stream_end(s->fold, req);
    else
        rf_bk_sse_stream_end(&s->sse);
}

static void body(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    aws_state *s = st;
    s->p->proto->body(s->fold, req, p, n, t);
}

static void http_error(void *ctx, rf_bk_request *req, long status, const char *error_type,
                       const char *p, size_t n) {
    (void)ctx;
    rf_bk_aws_fail_http(&req->res, status, error_type, p, n);
}

static void finish(void *st, rf_bk_request *req) {
    aws_state *s = st;
    s->p->proto->finish(s->fold, req);
}

static const rf_bk_http_hooks aws_hooks = {
    .state_new = state_new,
    .state_free = state_free,
    .state_reset = state_reset,
    .build = build,
    .prepare = prepare,
    .reply_kind = reply_kind,
    .feed = feed,
    .stream_end = stream_end,
    .body = body,
    .http_error = http_error,
    .finish = finish,
};

rf_status rf_bk_aws_validate(const rf_backend_vtable *vt, const rf_backend_cfg *cfg,
                             rf_error *err) {
    const rf_bk_aws_proto *p = vt->proto;
    rf_status st = uri_parse(cfg->uri, vt->scheme, p->uri_shape, NULL, NULL, err);
    return st ? st : rf_bk_extra_body_check(cfg->extra_body, vt->scheme, err);
}

static char *url_of(const char *base, const char *prefix, const char *esc, const char *suffix) {
    char *u = NULL;
    return asprintf(&u, "%s%s%s%s", base, prefix, esc, suffix) < 0 ? NULL : u;
}

static void aws_free(aws_backend *b) {
    rf_bk_http_free(b->hb.http);
    rf_aws_creds_free(&b->creds);
    free(b->name);
    free(b->url_plain);
    free(b->url_stream);
    json_decref(b->extra);
    free(b);
}

/* The region and NAME of the URI, the endpoint, the URLs on the escaped NAME and the
 * credentials. */
static rf_status address(aws_backend *b, const char *uri, rf_error *err) {
    const rf_bk_aws_proto *p = b->p;
    const char *scheme = b->scheme;
    char *esc = NULL;
    rf_status st = uri_parse(uri, scheme, p->uri_shape, b->region, &b->name, err);
    if (!st) st = rf_aws_endpoint(p->service, b->region, b->base, err);
    if (!st) {
        size_t cap = strlen(b->name) * 3 + 1;
        esc = malloc(cap);
        if (!esc || rf_aws_escape_segment(b->name, esc, cap) < 0)
            st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    }
    if (!st) {
        b->url_plain = url_of(b->base, p->path_prefix, esc, p->plain_suffix);
        b->url_stream = url_of(b->base, p->path_prefix, esc, p->stream_suffix);
        if (!b->url_plain || !b->url_stream)
            st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    }
    if (!st) {
        st = rf_aws_creds_load(&b->creds, err);
        if (st) rf_error_prefix(err, "%s", scheme);
    }
    free(esc);
    return st;
}

rf_status rf_bk_aws_open(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_loop *loop,
                         rf_backend **out, rf_error *err) {
    *out = NULL;
    rf_status st = rf_bk_aws_validate(vt, cfg, err);
    if (st) return st;
    aws_backend *b = calloc(1, sizeof *b);
    if (!b) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", vt->scheme);
    b->p = vt->proto;
    b->scheme = vt->scheme;
    st = address(b, cfg->uri, err);
    if (st) {
        aws_free(b);
        return st;
    }
    if (cfg->extra_body) b->extra = json_loads(cfg->extra_body, JSON_REJECT_DUPLICATES, NULL);
    if (b->p->model_from_cfg && cfg->model && *cfg->model) b->model_sent = cfg->model;
    rf_bk_http_cfg hc = rf_bk_http_cfg_of(cfg, &aws_hooks, b, b->url_stream);
    st = rf_bk_http_new(loop, &hc, &b->hb.http, err);
    if (st) {
        aws_free(b);
        return st;
    }
    *out = &b->hb.base;
    return RF_OK;
}

/* The configured model when the table records it, else NAME. cfg strings live as long as the
 * backend. */
const char *rf_bk_aws_model(const rf_backend *bk) {
    const aws_backend *b = (const aws_backend *)bk;
    if (b->p->model_from_cfg && bk->cfg.model && *bk->cfg.model) return bk->cfg.model;
    return b->name;
}

void rf_bk_aws_close(rf_backend *bk) {
    aws_free((aws_backend *)bk);
}
