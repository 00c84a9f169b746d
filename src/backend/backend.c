/* backend.c: the backend registry, configuration copies and result helpers. */
#include "backend/backend.h"
#include "util/file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The registry: one line a backend, X(NAME) for the rf_backend_vtable rf_backend_NAME that its
 * own file defines (see backend.h). The order is the order of the unknown-scheme message. */
#define RF_BACKENDS(X)                                                                             \
    X(local)                                                                                       \
    X(openai)                                                                                      \
    X(sagemaker)                                                                                   \
    X(bedrock)

#define RF_BACKEND_DECLARE(name) extern const rf_backend_vtable rf_backend_##name;
#define RF_BACKEND_ENTRY(name)   &rf_backend_##name,
RF_BACKENDS(RF_BACKEND_DECLARE)
static const rf_backend_vtable *const g_backends[] = {RF_BACKENDS(RF_BACKEND_ENTRY)};
#define N_BACKENDS (sizeof g_backends / sizeof g_backends[0])

const char *rf_bk_error_name(rf_bk_error e) {
    static const char *names[RF_BK_ERROR_COUNT] = {
        "ok",          "refused",      "timeout",      "stall",      "http_4xx", "http_5xx",
        "truncated",   "invalid_json", "server_error", "cancelled",  "internal", "protocol_error",
        "http_status", "client_error", "throttled",    "model_error"};
    return e < RF_BK_ERROR_COUNT ? names[e] : "unknown";
}

bool rf_bk_error_parse(const char *s, rf_bk_error *out) {
    for (int k = 0; s && k < RF_BK_ERROR_COUNT; k++)
        if (!strcmp(s, rf_bk_error_name((rf_bk_error)k))) {
            *out = (rf_bk_error)k;
            return true;
        }
    return false;
}

int64_t rf_bk_reply_cap(const rf_bk_request *req) {
    return req->max_reply_bytes > 0 ? req->max_reply_bytes : RF_BK_DEFAULT_REPLY_CAP;
}

bool rf_bk_append_capped(rf_buf *buf, int64_t cap, int64_t *total, const char *p, size_t n) {
    *total += (int64_t)n;
    int64_t room = cap - (int64_t)buf->len;
    if (room <= 0 || !n) return true;
    size_t k = (int64_t)n < room ? n : (size_t)room;
    return rf_buf_append(buf, p, k) == RF_OK;
}

bool rf_bk_result_text(rf_bk_request *req, const char *p, size_t n) {
    rf_bk_result *r = &req->res;
    return rf_bk_append_capped(&r->text, rf_bk_reply_cap(req), &r->text_bytes, p, n);
}

void rf_bk_result_init(rf_bk_result *r) {
    memset(r, 0, sizeof *r);
    rf_buf_init(&r->text, 0);
    r->prompt_tokens = r->completion_tokens = r->client_tokens = -1;
    r->server_latency_ms = -1;
}

void rf_bk_result_free(rf_bk_result *r) {
    free(r->ev_t);
    free(r->ev_tokens);
    rf_buf_free(&r->text);
    for (int32_t i = 0; i < r->n_calls; i++) {
        free(r->calls[i].id);
        free(r->calls[i].name);
        free(r->calls[i].arguments);
    }
    free(r->calls);
    rf_bk_result_init(r);
}

bool rf_bk_result_event(rf_bk_result *r, int64_t t, int32_t tokens) {
    if (!r->t_first_content) r->t_first_content = t;
    if (r->n_ev >= RF_BK_MAX_EVENTS) { /* an endless stream: count it, keep no more times */
        r->n_ev_dropped++;
        r->t_last_content = t;
        return true;
    }
    if (r->n_ev == r->cap_ev) {
        int32_t cap = r->cap_ev ? r->cap_ev * 2 : 256;
        int64_t *nt = realloc(r->ev_t, (size_t)cap * sizeof *nt);
        if (!nt) return false;
        r->ev_t = nt;
        int32_t *nk = realloc(r->ev_tokens, (size_t)cap * sizeof *nk);
        if (!nk) return false;
        r->ev_tokens = nk;
        r->cap_ev = cap;
    }
    r->ev_t[r->n_ev] = t;
    r->ev_tokens[r->n_ev] = tokens;
    r->n_ev++;
    r->t_last_content = t;
    return true;
}

void rf_bk_fail(rf_bk_result *r, rf_bk_error e, const char *fmt, ...) {
    if (r->err != RF_BK_OK) return; /* the first error is the cause */
    r->err = e;
    /* formatted whole, then cut on a character with unprintable bytes escaped: a server's
     * message may be anything, and the record must still hold valid text */
    char raw[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    size_t len = (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    rf_escaped(raw, len, r->err_msg, sizeof r->err_msg);
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

static void free_cfg(rf_backend_cfg *c) {
    free((void *)c->name);
    free((void *)c->uri);
    free((void *)c->model);
    free((void *)c->api_key_env);
    free((void *)c->extra_body);
    memset(c, 0, sizeof *c);
}

/* The length of uri's scheme: up to its first ':', or all of it. */
static size_t scheme_len(const char *uri) {
    const char *colon = strchr(uri, ':');
    return colon ? (size_t)(colon - uri) : strlen(uri);
}

bool rf_backend_is_local(const rf_backend_cfg *cfg) {
    if (!cfg->uri) return false;
    size_t n = scheme_len(cfg->uri);
    return n == strlen(rf_backend_local.scheme) && !strncmp(cfg->uri, rf_backend_local.scheme, n);
}

const char *rf_backend_local_model(const rf_backend_cfg *cfg) {
    if (!rf_backend_is_local(cfg)) return NULL;
    const char *m = cfg->uri + strlen(rf_backend_local.scheme);
    return *m == ':' && m[1] ? m + 1 : NULL;
}

static const rf_backend_vtable *find_scheme(const rf_backend_cfg *cfg, rf_error *err) {
    if (!cfg->uri || !*cfg->uri) {
        rf_error_set(err, RF_ERR_ARG, "backend '%s' has no URI", cfg->name ? cfg->name : "?");
        return NULL;
    }
    size_t n = scheme_len(cfg->uri);
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (strlen(g_backends[i]->scheme) == n && !strncmp(g_backends[i]->scheme, cfg->uri, n))
            return g_backends[i];
    char known[512];
    size_t k = 0;
    known[0] = 0;
    for (size_t i = 0; i < N_BACKENDS && k < sizeof known; i++)
        k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "",
                              g_backends[i]->usage);
    rf_error_set(err, RF_ERR_ARG, "backend '%s': unknown scheme '%.*s' in '%s' (known: %s)",
                 cfg->name ? cfg->name : "?", (int)n, cfg->uri, cfg->uri, known);
    return NULL;
}

rf_status rf_backend_validate(const rf_backend_cfg *cfg, rf_error *err) {
    const rf_backend_vtable *vt = find_scheme(cfg, err);
    if (!vt) return RF_ERR_ARG;
    if (!vt->validate) return RF_OK;
    rf_status st = vt->validate(vt, cfg, err);
    if (st) rf_error_prefix(err, "backend '%s'", cfg->name ? cfg->name : cfg->uri);
    return st;
}

rf_status rf_backend_open(const rf_backend_cfg *cfg, rf_loop *loop, rf_backend **out,
                          rf_error *err) {
    *out = NULL;
    const rf_backend_vtable *vt = find_scheme(cfg, err);
    if (!vt) return RF_ERR_ARG;
    rf_backend_cfg copy = *cfg;
    copy.name = dup_or_null(cfg->name ? cfg->name : cfg->uri);
    copy.uri = dup_or_null(cfg->uri);
    copy.model = dup_or_null(cfg->model);
    copy.api_key_env = dup_or_null(cfg->api_key_env);
    copy.extra_body = dup_or_null(cfg->extra_body);
    if (!copy.name || (cfg->uri && !copy.uri) || (cfg->model && !copy.model) ||
        (cfg->api_key_env && !copy.api_key_env) || (cfg->extra_body && !copy.extra_body)) {
        free_cfg(&copy);
        return rf_error_set(err, RF_ERR_NOMEM, "backend '%s': out of memory",
                            cfg->name ? cfg->name : cfg->uri);
    }
    if (!copy.timeout_s) copy.timeout_s = 600;
    if (!copy.stall_s) copy.stall_s = 60;
    rf_backend *b = NULL;
    rf_status st = vt->open(vt, &copy, loop, &b, err);
    if (st) {
        free_cfg(&copy);
        rf_error_prefix(err, "backend '%s'", cfg->name ? cfg->name : cfg->uri);
        return st;
    }
    b->vt = vt;
    b->cfg = copy;
    b->loop = loop;
    *out = b;
    return RF_OK;
}

void rf_backend_close(rf_backend *b) {
    if (!b) return;
    rf_backend_cfg cfg = b->cfg;
    b->vt->close(b);
    free_cfg(&cfg);
}
