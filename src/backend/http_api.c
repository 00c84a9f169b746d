/* http_api.c: the skeleton of the backends on plain HTTP(S) chat APIs (http_api.h). */
#include "backend/http_api.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define API_MAX_MODELS        ((size_t)4 << 20) /* GET /models reply */
#define API_MODELS_TIMEOUT_MS 10000L

typedef struct api_backend {
    rf_bk_http_backend hb; /* first: the registry's view and the transport */
    const rf_bk_api_proto *p;
    const char *scheme;
    char *url_chat;
    char *model;
    struct curl_slist *headers; /* may hold the API key's header: never printed */
    json_t *extra;              /* cfg->extra_body parsed (owned), merged into bodies; or NULL */
    long timeout_ms;
} api_backend;

/* ---------------------------------------------------------------- the transport's hooks */

/* A request's state: the protocol's fold and the SSE stream over it. */
typedef struct api_state {
    const rf_bk_proto *proto;
    void *fold;
    rf_bk_sse_stream sse;
} api_state;

static void *state_new(void *ctx) {
    const api_backend *b = ctx;
    api_state *s = malloc(sizeof *s);
    if (!s) return NULL;
    s->proto = b->p->proto;
    s->fold = s->proto->fold_new();
    if (!s->fold) {
        free(s);
        return NULL;
    }
    rf_bk_sse_stream_init(&s->sse, s->proto, s->fold);
    return s;
}

static void state_free(void *st) {
    api_state *s = st;
    rf_bk_sse_stream_free(&s->sse);
    s->proto->fold_free(s->fold);
    free(s);
}

static void state_reset(void *st, rf_bk_request *req) {
    rf_bk_sse_stream_reset(&((api_state *)st)->sse, req);
}

static bool build(void *ctx, void *st, rf_bk_request *req, rf_buf *body, char *why, size_t why_n) {
    (void)st;
    const api_backend *b = ctx;
    return b->p->proto->build(req, b->model, b->extra, body, why, why_n);
}

static rf_status prepare(void *ctx, void *st, rf_bk_request *req, CURL *easy, const rf_buf *body,
                         struct curl_slist **headers, rf_error *err) {
    (void)st, (void)req, (void)body, (void)headers, (void)err;
    const api_backend *b = ctx;
    curl_easy_setopt(easy, CURLOPT_URL, b->url_chat);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, b->headers);
    return RF_OK;
}

/* A stream unless the request did not ask for one or the server answered with one body. */
static rf_bk_http_reply reply_kind(void *ctx, rf_bk_request *req, const char *ct) {
    (void)ctx;
    if (!req->stream) return RF_BK_HTTP_BODY;
    return ct && !strncasecmp(ct, "application/json", 16) ? RF_BK_HTTP_BODY : RF_BK_HTTP_STREAM;
}

static bool feed(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    (void)req;
    return rf_bk_sse_stream_feed(&((api_state *)st)->sse, p, n, t);
}

static void stream_end(void *st, rf_bk_request *req) {
    (void)req;
    rf_bk_sse_stream_end(&((api_state *)st)->sse);
}

static void body(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    api_state *s = st;
    s->proto->body(s->fold, req, p, n, t);
}

static void http_error(void *ctx, rf_bk_request *req, long status, const char *error_type,
                       const char *p, size_t n) {
    (void)error_type;
    const api_backend *b = ctx;
    char msg[200];
    b->p->proto->error_message(p, n, msg, sizeof msg);
    rf_bk_fail(&req->res, status >= 500 ? RF_BK_HTTP_5XX : RF_BK_HTTP_4XX, "HTTP %ld: %s", status,
               msg[0] ? msg : "(empty body)");
}

static void finish(void *st, rf_bk_request *req) {
    api_state *s = st;
    s->proto->finish(s->fold, req);
}

static const rf_bk_http_hooks api_hooks = {
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

/* ---------------------------------------------------------------- vtable */

const char *rf_bk_api_model(const rf_backend *bk) {
    return ((const api_backend *)bk)->model;
}

static void api_free(api_backend *b) {
    rf_bk_http_free(b->hb.http);
    curl_slist_free_all(b->headers);
    json_decref(b->extra);
    free(b->url_chat);
    free(b->model);
    free(b);
}

void rf_bk_api_close(rf_backend *bk) {
    api_free((api_backend *)bk);
}

/* ---------------------------------------------------------------- open */

static size_t collect(char *p, size_t size, size_t nmemb, void *user) {
    size_t n = size * nmemb;
    return rf_buf_append(user, p, n) ? 0 : n;
}

/* GET {base}{models_path}: data[0].id. Blocking, short timeout: open runs before the loop. */
static rf_status fetch_model(api_backend *b, const char *base, rf_error *err) {
    const char *scheme = b->scheme;
    char *url = NULL;
    if (asprintf(&url, "%s%s", base, b->p->models_path) < 0)
        return rf_error_set(err, RF_ERR_NOMEM, "%s", scheme);
    rf_buf body;
    rf_buf_init(&body, API_MAX_MODELS);
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *e = curl_easy_init();
    rf_status st = RF_OK;
    if (!e) {
        st = rf_error_set(err, RF_ERR_INTERNAL, "%s: curl_easy_init failed", scheme);
        goto out;
    }
    long tmo = b->timeout_ms < API_MODELS_TIMEOUT_MS ? b->timeout_ms : API_MODELS_TIMEOUT_MS;
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
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot reach %s: %s", scheme, url,
                          errbuf[0] ? errbuf : curl_easy_strerror(rc));
        goto out;
    }
    if (status != 200) {
        char msg[200];
        b->p->proto->error_message((const char *)body.data, body.len, msg, sizeof msg);
        st = rf_error_set(err, RF_ERR_IO, "%s: GET %s: HTTP %ld: %s", scheme, url, status, msg);
        goto out;
    }
    json_t *root = json_loadb((const char *)body.data, body.len, 0, NULL);
    const char *id =
        json_string_value(json_object_get(json_array_get(json_object_get(root, "data"), 0), "id"));
    if (id && *id) {
        b->model = strdup(id);
        if (!b->model) st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    } else {
        st = rf_error_set(err, RF_ERR_FORMAT,
                          "%s: GET %s: the reply has no data[0].id; give the model name", scheme,
                          url);
    }
    json_decref(root);
out:
    curl_easy_cleanup(e);
    rf_buf_free(&body);
    free(url);
    return st;
}

/* Checks "http(s)://host[:port][/path]" and returns it without trailing slashes (malloc'd). */
static rf_status parse_base(const char *scheme, const char *uri, char **base, rf_error *err) {
    *base = NULL;
    const char *url = strchr(uri, ':');
    url = url ? url + 1 : uri;
    char want[96];
    snprintf(want, sizeof want, "expected %s:http://HOST:PORT/v1 or %s:https://...", scheme,
             scheme);
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return rf_error_set(err, RF_ERR_ARG, "%s: '%s' is not an http(s) URL (%s)", scheme, uri,
                            want);
    const char *auth = strstr(url, "://") + 3;
    if (!*auth || *auth == '/' || *auth == '?' || *auth == '#')
        return rf_error_set(err, RF_ERR_ARG, "%s: '%s' has no host (%s)", scheme, uri, want);
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return rf_error_set(err, RF_ERR_ARG,
                                "%s: '%s' contains a space or control character (%s)", scheme, uri,
                                want);
    CURLU *u = curl_url();
    if (!u) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    rf_status st = RF_OK;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    char *host = NULL, *query = NULL, *frag = NULL;
    if (uc == CURLUE_OUT_OF_MEMORY) { /* not the URL's fault: no configuration error */
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory parsing '%s'", scheme, uri);
        goto out;
    }
    if (uc) {
        st = rf_error_set(err, RF_ERR_ARG, "%s: malformed URL in '%s': %s (%s)", scheme, uri,
                          curl_url_strerror(uc), want);
        goto out;
    }
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);
    if (!host || !*host || query || frag) {
        st = rf_error_set(err, RF_ERR_ARG, "%s: malformed URL in '%s': %s (%s)", scheme, uri,
                          !host || !*host ? "no host" : "a query or fragment is not allowed", want);
        goto out;
    }
    size_t n = strlen(url);
    while (n && url[n - 1] == '/') n--;
    *base = strndup(url, n);
    if (!*base) st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
out:
    curl_free(host);
    curl_free(query);
    curl_free(frag);
    curl_url_cleanup(u);
    return st;
}

/* The configuration alone, before anything is opened: the URL and the extra_body. */
rf_status rf_bk_api_validate(const rf_backend_vtable *vt, const rf_backend_cfg *cfg,
                             rf_error *err) {
    char *base = NULL;
    rf_status st = parse_base(vt->scheme, cfg->uri, &base, err);
    free(base);
    return st ? st : rf_bk_extra_body_check(cfg->extra_body, vt->scheme, err);
}

/* The header list: Content-Type, no 100-continue round trip, the table's fixed headers, and
 * the API key's header when cfg->api_key_env names one (the key is wiped from every buffer but
 * the list). */
static rf_status make_headers(api_backend *b, const rf_backend_cfg *cfg, rf_error *err) {
    const char *scheme = b->scheme;
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (h) b->headers = h, h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    for (const char *const *x = b->p->headers; h && x && *x; x++) h = curl_slist_append(h, *x);
    if (!h) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    if (!cfg->api_key_env || !*cfg->api_key_env) return RF_OK;
    const char *key = getenv(cfg->api_key_env);
    if (!key || !*key)
        return rf_error_set(err, RF_ERR_ARG, "%s: the API key variable %s (api_key_env) is not set",
                            scheme, cfg->api_key_env);
    for (const char *k = key; *k; k++)
        if ((unsigned char)*k < 0x20 || *k == 0x7f) /* would split the header */
            return rf_error_set(err, RF_ERR_ARG,
                                "%s: the API key in %s contains control characters", scheme,
                                cfg->api_key_env);
    size_t n = strlen(b->p->key_prefix) + strlen(key) + 1;
    char *line = malloc(n);
    if (line) {
        snprintf(line, n, "%s%s", b->p->key_prefix, key);
        h = curl_slist_append(b->headers, line);
        explicit_bzero(line, n);
        free(line);
    }
    if (!line || !h) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    return RF_OK;
}

rf_status rf_bk_api_open(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_loop *loop,
                         rf_backend **out, rf_error *err) {
    *out = NULL;
    const char *scheme = vt->scheme;
    char *base = NULL;
    rf_status st = parse_base(scheme, cfg->uri, &base, err);
    if (st) return st;
    api_backend *b = calloc(1, sizeof *b);
    if (!b) {
        free(base);
        return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
    }
    b->p = vt->proto;
    b->scheme = scheme;
    if (cfg->extra_body) {
        json_error_t je;
        b->extra = json_loads(cfg->extra_body, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(b->extra)) {
            st = rf_error_set(err, RF_ERR_ARG, "%s: extra_body is not a JSON object%s%s", scheme,
                              b->extra ? "" : ": ", b->extra ? "" : je.text);
            goto fail;
        }
    }
    if (asprintf(&b->url_chat, "%s%s", base, b->p->chat_path) < 0) {
        b->url_chat = NULL;
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
        goto fail;
    }
    rf_bk_http_cfg hc = rf_bk_http_cfg_of(cfg, &api_hooks, b, b->url_chat);
    st = rf_bk_http_new(loop, &hc, &b->hb.http, err);
    if (st) goto fail;
    b->timeout_ms = rf_bk_http_timeout_ms(b->hb.http);
    st = make_headers(b, cfg, err);
    if (st) goto fail;
    if (cfg->model && *cfg->model) {
        b->model = strdup(cfg->model);
        if (!b->model) {
            st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", scheme);
            goto fail;
        }
    } else if (b->p->models_path) {
        st = fetch_model(b, base, err);
        if (st) goto fail;
    } else {
        st = rf_error_set(err, RF_ERR_ARG, "%s: no model given (model)", scheme);
        goto fail;
    }
    free(base);
    *out = &b->hb.base;
    return RF_OK;
fail:
    free(base);
    api_free(b);
    return st;
}
