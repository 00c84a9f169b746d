/* openai.c: the "openai" backend: Chat Completions over HTTP(S), streamed (SSE, with
 * usage) or as one JSON body, on the shared libcurl transport (http.h) with the protocol of
 * openai_proto.h.
 *
 * URI: "openai:http://host:port/v1" (or https). open validates the base URL, reads the API key
 * from cfg->api_key_env (kept only inside the libcurl header list; never in results or
 * messages) and, when cfg->model is NULL, asks GET {base}/models for data[0].id with a short
 * blocking request (open runs before the loop).
 *
 * Per request: the body is built with jansson (rf_bk_openai_build_body) and POSTed to
 * {base}/chat/completions; the reply is an SSE stream folded event by event (rf_bk_openai_stream),
 * or, for a request that did not stream or a server that answered application/json, one body
 * (rf_bk_openai_fold_body). HTTP >= 400 -> http_4xx/5xx with the body's error.message. Everything
 * else about the transfer (stalls, timeouts, resends, transport failures, cancel) is the transport's (http.h).
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend.h"
#include "backend/http.h"
#include "backend/openai_proto.h"

#define OA_MAX_MODELS        ((size_t)4 << 20) /* GET /models reply */
#define OA_MODELS_TIMEOUT_MS 10000L

typedef struct oa_backend {
    rf_bk_http_backend hb; /* first: the registry's view and the transport */
    char *url_chat;
    char *model;
    struct curl_slist *headers; /* may hold the Authorization header: never printed */
    json_t *extra;              /* cfg->extra_body parsed (owned), merged into bodies; or NULL */
    long timeout_ms;
} oa_backend;

/* ---------------------------------------------------------------- the protocol */

static void *oa_state_new(void *ctx) {
    (void)ctx;
    rf_bk_openai_stream *s = malloc(sizeof *s);
    if (s) rf_bk_openai_stream_init(s);
    return s;
}

static void oa_state_free(void *st) {
    rf_bk_openai_stream_free(st);
    free(st);
}

static void oa_state_reset(void *st, rf_bk_request *req) {
    rf_bk_openai_stream_reset(st, req);
}

static bool oa_build(void *ctx, void *st, rf_bk_request *req, rf_buf *body, char *why,
                     size_t why_n) {
    (void)st;
    const oa_backend *b = ctx;
    return rf_bk_openai_build_body(req, b->model, b->extra, body, why, why_n);
}

static rf_status oa_prepare(void *ctx, void *st, rf_bk_request *req, CURL *easy, const rf_buf *body,
                            struct curl_slist **headers, rf_error *err) {
    (void)st, (void)req, (void)body, (void)headers, (void)err;
    const oa_backend *b = ctx;
    curl_easy_setopt(easy, CURLOPT_URL, b->url_chat);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, b->headers);
    return RF_OK;
}

/* A stream unless the request did not ask for one or the server answered with one body. */
static rf_bk_http_reply oa_reply_kind(void *ctx, rf_bk_request *req, const char *ct) {
    (void)ctx;
    if (!req->stream) return RF_BK_HTTP_BODY;
    return ct && !strncasecmp(ct, "application/json", 16) ? RF_BK_HTTP_BODY : RF_BK_HTTP_STREAM;
}

static bool oa_feed(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    (void)req;
    return rf_bk_openai_stream_feed(st, p, n, t);
}

static void oa_stream_end(void *st, rf_bk_request *req) {
    (void)req;
    rf_bk_openai_stream_end(st);
}

static void oa_body(void *st, rf_bk_request *req, const char *p, size_t n, int64_t t) {
    rf_bk_openai_fold_body(&((rf_bk_openai_stream *)st)->fold, req, p, n, t);
}

static void oa_http_error(void *ctx, rf_bk_request *req, long status, const char *error_type,
                          const char *p, size_t n) {
    (void)ctx, (void)error_type;
    char msg[200];
    rf_bk_openai_error_message(p, n, msg, sizeof msg);
    rf_bk_fail(&req->res, status >= 500 ? RF_BK_HTTP_5XX : RF_BK_HTTP_4XX, "HTTP %ld: %s", status,
               msg[0] ? msg : "(empty body)");
}

static void oa_finish(void *st, rf_bk_request *req) {
    rf_bk_openai_fold_export(&((rf_bk_openai_stream *)st)->fold, req);
}

static const rf_bk_http_proto oa_proto = {
    .state_new = oa_state_new,
    .state_free = oa_state_free,
    .state_reset = oa_state_reset,
    .build = oa_build,
    .prepare = oa_prepare,
    .reply_kind = oa_reply_kind,
    .feed = oa_feed,
    .stream_end = oa_stream_end,
    .body = oa_body,
    .http_error = oa_http_error,
    .finish = oa_finish,
};

/* ---------------------------------------------------------------- vtable */

static const char *oa_model(const rf_backend *bk) {
    return ((const oa_backend *)bk)->model;
}

static void oa_close(rf_backend *bk) {
    oa_backend *b = (oa_backend *)bk;
    rf_bk_http_free(b->hb.http);
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
        rf_bk_openai_error_message((const char *)body.data, body.len, msg, sizeof msg);
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
    rf_bk_http_cfg hc = rf_bk_http_cfg_of(cfg, &oa_proto, b, b->url_chat);
    st = rf_bk_http_new(loop, &hc, &b->hb.http, err);
    if (st) goto fail;
    b->timeout_ms = rf_bk_http_timeout_ms(b->hb.http);
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
    *out = &b->hb.base;
    return RF_OK;
fail:
    free(base);
    rf_bk_http_free(b->hb.http);
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
    .start = rf_bk_http_backend_start,
    .cancel = rf_bk_http_backend_cancel,
    .model = oa_model,
    .count_tokens = rf_bk_http_backend_count_tokens,
    .close = oa_close,
};
