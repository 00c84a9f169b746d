/* http.c: the libcurl transport of the HTTP backends (http.h). */
#include "backend/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "util/clock.h"
#include "util/file.h"

typedef enum hx_mode {
    HX_MODE_NONE,  /* no body byte yet */
    HX_MODE_SSE,   /* 2xx stream */
    HX_MODE_BODY,  /* 2xx whole body */
    HX_MODE_ERROR, /* not 2xx: the body is kept (bounded) for its error message */
} hx_mode;

typedef enum hx_state {
    HX_IDLE,    /* in the pool */
    HX_RUNNING, /* the transfer is in the loop's multi handle */
    HX_PENDING, /* a posted callback (could not start) or a retry timer will run */
    HX_ZOMBIE,  /* reported (cancelled) while its callback is still pending */
} hx_state;

typedef struct hx_req hx_req;

struct hx_req {
    rf_http *h;                /* NULL once orphaned by free (a callback still refers to it) */
    const rf_bk_http_hooks *p; /* to free st when orphaned */
    rf_bk_request *req;
    CURL *easy;
    void *st;                   /* the protocol's state */
    struct curl_slist *headers; /* the attempt's list (prepare), freed when it ends */
    rf_buf body;                /* the request */
    rf_buf resp;                /* a whole reply, or an error body */
    int64_t t_last_byte;
    hx_state state;
    hx_mode mode;
    bool stalled;
    bool fresh;          /* resent once on a new connection after a reply-less end */
    bool retry_pending;  /* the pending callback is a retry timer (else a failure post) */
    int n_prereq;        /* times libcurl sent this attempt (> 1: it resent it) */
    int socket_errno;    /* why our socket() call failed (open_socket), or 0 */
    hx_req *next, *prev; /* in-flight list; next alone in the pool */
    char errbuf[CURL_ERROR_SIZE];
    char error_type[96]; /* the reply's x-amzn-ErrorType header */
};

struct rf_http {
    rf_loop *loop;
    const rf_bk_http_hooks *p;
    void *ctx;
    const char *label;
    long timeout_ms;
    int64_t stall_ns;
    int32_t retry_max;
    double retry_base_s, retry_cap_s;
    uint64_t rng;     /* splitmix64 state for the jitter */
    hx_req *inflight; /* RUNNING, PENDING and ZOMBIE requests */
    hx_req *pool;
    bool closing;
};

/* ---------------------------------------------------------------- helpers */

static void list_add(rf_http *h, hx_req *r) {
    r->prev = NULL;
    r->next = h->inflight;
    if (h->inflight) h->inflight->prev = r;
    h->inflight = r;
}

static void list_del(rf_http *h, hx_req *r) {
    if (r->prev)
        r->prev->next = r->next;
    else if (h->inflight == r)
        h->inflight = r->next;
    if (r->next) r->next->prev = r->prev;
    r->next = r->prev = NULL;
}

static double uniform(rf_http *h) {
    uint64_t z = (h->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

double rf_bk_http_backoff_s(double base_s, double cap_s, int32_t k, double u) {
    double w = base_s;
    for (int32_t i = 0; i < k && w < cap_s; i++) w *= 2;
    if (w > cap_s) w = cap_s;
    return w > 0 ? u * w : 0;
}

long rf_bk_http_timeout_ms(const rf_http *h) {
    return h->timeout_ms;
}

/* ---------------------------------------------------------------- libcurl callbacks */

static size_t on_header(char *p, size_t size, size_t nmemb, void *user) {
    hx_req *r = user;
    size_t n = size * nmemb;
    static const char *const ids[] = {"x-amzn-requestid:", "x-amz-request-id:", "x-request-id:"};
    static const char et[] = "x-amzn-errortype:";
    if (n > sizeof et - 1 && !strncasecmp(p, et, sizeof et - 1)) {
        const char *v = p + sizeof et - 1;
        size_t vn = n - (sizeof et - 1);
        while (vn && (*v == ' ' || *v == '\t')) v++, vn--;
        vn = strcspn(v, ":\r\n") < vn ? strcspn(v, ":\r\n") : vn;
        rf_escaped(v, vn, r->error_type, sizeof r->error_type);
    }
    for (size_t i = 0; r->req && i < sizeof ids / sizeof ids[0]; i++) {
        size_t k = strlen(ids[i]);
        if (n <= k || strncasecmp(p, ids[i], k)) continue;
        const char *v = p + k;
        size_t vn = n - k;
        while (vn && (*v == ' ' || *v == '\t')) v++, vn--;
        while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' ')) vn--;
        rf_bk_result *res = &r->req->res;
        if (!res->request_id[0] || i == 0) /* AWS's own id wins */
            rf_escaped(v, vn, res->request_id, sizeof res->request_id);
    }
    return n;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *user) {
    hx_req *r = user;
    size_t n = size * nmemb;
    rf_http *h = r->h;
    rf_bk_result *res = &r->req->res;
    int64_t now = rf_now_ns();
    r->t_last_byte = now;
    if (r->mode == HX_MODE_NONE) {
        long status = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        res->http_status = (int)status;
        res->t_first_byte = now;
        if (status < 200 || status >= 300) {
            r->mode = HX_MODE_ERROR;
        } else {
            char *ct = NULL;
            curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
            r->mode = h->p->reply_kind(h->ctx, r->req, ct) == RF_BK_HTTP_STREAM ? HX_MODE_SSE
                                                                                : HX_MODE_BODY;
        }
    }
    switch (r->mode) {
    case HX_MODE_SSE:
        return h->p->feed(r->st, r->req, p, n, now) ? n : 0; /* 0 aborts (CURLE_WRITE_ERROR) */
    case HX_MODE_BODY:
        if (rf_buf_append(&r->resp, p, n)) {
            rf_bk_fail(res, RF_BK_INVALID, "reply body larger than %zu MiB",
                       RF_BK_HTTP_MAX_BODY >> 20);
            return 0;
        }
        return n;
    case HX_MODE_ERROR:
        if (r->resp.len < RF_BK_HTTP_MAX_ERR_BODY) {
            size_t k = RF_BK_HTTP_MAX_ERR_BODY - r->resp.len;
            rf_buf_append(&r->resp, p, n < k ? n : k);
        }
        return n;
    case HX_MODE_NONE:
        break;
    }
    return 0;
}

/* Runs on every pass of the loop over the transfer (at least once a second). */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    hx_req *r = user;
    if (!r->t_last_byte || r->h->stall_ns <= 0) return 0;
    /* called for every transfer on every loop pass: the coarse clock (same base, a few ms
     * resolution) is cheaper and plenty for a stall limit */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    if ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - r->t_last_byte < r->h->stall_ns) return 0;
    r->stalled = true;
    return 1; /* CURLE_ABORTED_BY_CALLBACK */
}

/* libcurl's socket() call, made here so that its errno is kept: out of descriptors (EMFILE) is
 * this machine's failure, which libcurl reports as "Couldn't connect to server". */
static curl_socket_t open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *a) {
    hx_req *r = user;
    (void)purpose;
    curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd == CURL_SOCKET_BAD) r->socket_errno = errno;
    return fd;
}

/* Runs before libcurl sends the request on a connection; a second call for one transfer is a
 * resend on a new connection after a reused one closed with no reply. */
static int on_prereq(void *user, char *primary_ip, char *local_ip, int primary_port,
                     int local_port) {
    (void)primary_ip, (void)local_ip, (void)primary_port, (void)local_port;
    hx_req *r = user;
    if (++r->n_prereq > 1 && r->req) r->req->res.resends++;
    return CURL_PREREQFUNC_OK;
}

/* ---------------------------------------------------------------- request lifecycle */

static hx_req *req_new(rf_http *h) {
    hx_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->easy = curl_easy_init();
    r->st = h->p->state_new(h->ctx);
    if (!r->easy || !r->st) {
        curl_easy_cleanup(r->easy);
        if (r->st) h->p->state_free(r->st);
        free(r);
        return NULL;
    }
    r->h = h;
    r->p = h->p;
    rf_buf_init(&r->body, 0);
    rf_buf_init(&r->resp, RF_BK_HTTP_MAX_BODY);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, r);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, r);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, h->timeout_ms);
    /* Not a stall rule (on_progress is): a low-speed limit makes libcurl revisit the transfer
     * every second even when its socket is quiet, so on_progress runs under an event-driven
     * (socket-action) loop too. Its own limit is set past the request timeout: it never fires. */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, h->timeout_ms / 1000 + 2);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    return r;
}

static void req_destroy(hx_req *r) {
    curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    r->p->state_free(r->st);
    rf_buf_free(&r->body);
    rf_buf_free(&r->resp);
    free(r);
}

static void pool_put(rf_http *h, hx_req *r) {
    r->state = HX_IDLE;
    r->req = NULL;
    if (r->resp.cap > ((size_t)1 << 20)) { /* do not hoard a big reply's buffer */
        rf_buf_free(&r->resp);
        rf_buf_init(&r->resp, RF_BK_HTTP_MAX_BODY);
    }
    r->next = h->pool;
    h->pool = r;
}

static void end_attempt(hx_req *r) {
    curl_slist_free_all(r->headers);
    r->headers = NULL;
}

/* Reports req's result: r goes back to the pool (to_pool) or stays a zombie for its pending
 * callback; req->done runs last, so it may start another request (which can reuse r). */
static void complete(hx_req *r, bool to_pool) {
    rf_http *h = r->h;
    rf_bk_request *req = r->req;
    rf_bk_result *res = &req->res;
    end_attempt(r);
    h->p->finish(r->st, req);
    if (rf_buf_terminate(&res->text)) rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
    if (!res->t_done) res->t_done = rf_now_ns();
    req->priv = NULL;
    r->req = NULL;
    if (to_pool) {
        list_del(h, r);
        pool_put(h, r);
    } else {
        r->state = HX_ZOMBIE;
    }
    req->done(req->user, req);
}

/* A failure of this machine (out of descriptors, ports or buffers), not of the server. */
static bool local_resource_errno(long e) {
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM || e == EADDRNOTAVAIL ||
           e == EAGAIN;
}

static void classify_curl(hx_req *r, int code) {
    rf_bk_result *res = &r->req->res;
    const char *label = r->h->label;
    const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror((CURLcode)code);
    long os_err = r->socket_errno; /* libcurl does not keep socket()'s errno: open_socket does */
    if (!os_err) curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os_err);
    if (!res->http_status && local_resource_errno(os_err) &&
        (code == CURLE_COULDNT_CONNECT || code == CURLE_OUT_OF_MEMORY ||
         code == CURLE_FAILED_INIT || code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR)) {
        rf_bk_fail(res, RF_BK_CLIENT, "client-side failure, not the server's: %s (%s)%s",
                   strerror((int)os_err), detail,
                   os_err == EMFILE || os_err == ENFILE
                       ? "; raise the descriptor limit (ulimit -n) or lower the concurrency"
                       : "");
        return;
    }
    switch ((CURLcode)code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        rf_bk_fail(res, RF_BK_REFUSED, "%s: %s", label, detail);
        break;
    case CURLE_UNSUPPORTED_PROTOCOL: /* the URL was checked at open: here, an HTTP/0.9 reply */
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_RANGE_ERROR:
        rf_bk_fail(res, RF_BK_PROTOCOL, "%s: the reply is not valid HTTP: %s", label, detail);
        break;
    case CURLE_OUT_OF_MEMORY:
        rf_bk_fail(res, RF_BK_CLIENT, "client out of memory: %s", detail);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        rf_bk_fail(res, RF_BK_TIMEOUT, "no complete reply within %.3g s: %s",
                   (double)r->h->timeout_ms / 1000, detail);
        break;
    default:
        if (res->http_status)
            rf_bk_fail(res, RF_BK_TRUNCATED, "transfer ended early: %s", detail);
        else if (code == CURLE_GOT_NOTHING || code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR)
            rf_bk_fail(res, RF_BK_REFUSED, "%s: the connection closed with no reply: %s", label,
                       detail);
        else
            rf_bk_fail(res, RF_BK_PROTOCOL, "%s: no valid reply: %s", label, detail);
        break;
    }
}

static void on_xfer_done(void *user, void *easy, int code);
static void on_pending(void *user);

/* Readies r for an attempt (the protocol's state, the transfer flags) and prepares it: false
 * when prepare failed (recorded in the result). */
static bool begin_attempt(hx_req *r) {
    rf_http *h = r->h;
    rf_bk_request *req = r->req;
    r->mode = HX_MODE_NONE;
    r->stalled = r->fresh = false;
    r->n_prereq = 0;
    r->socket_errno = 0;
    r->t_last_byte = 0;
    r->errbuf[0] = 0;
    r->error_type[0] = 0;
    rf_buf_reset(&r->resp);
    curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 0L);
    h->p->state_reset(r->st, req);
    end_attempt(r);
    rf_error err = {0};
    if (h->p->prepare(h->ctx, r->st, req, r->easy, &r->body, &r->headers, &err) != RF_OK) {
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "request not sent: %s", err.msg);
        return false;
    }
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, (const char *)r->body.data);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    return true;
}

/* A request that cannot go on now: its report comes from the loop, never from inside start. */
static void fail_later(hx_req *r) {
    r->state = HX_PENDING;
    r->retry_pending = false;
    if (rf_loop_post(r->h->loop, on_pending, r) != RF_OK) complete(r, true);
}

/* Whether this attempt's failure is retried: throttled, nothing shown yet, retries left. */
static bool schedule_retry(hx_req *r) {
    rf_http *h = r->h;
    rf_bk_result *res = &r->req->res;
    if (res->err != RF_BK_THROTTLED || res->t_first_content || h->closing ||
        res->retries >= h->retry_max)
        return false;
    double wait = rf_bk_http_backoff_s(h->retry_base_s, h->retry_cap_s, res->retries, uniform(h));
    rf_error err = {0};
    int64_t at = rf_now_ns() + (int64_t)(wait * 1e9);
    end_attempt(r);
    r->state = HX_PENDING;
    r->retry_pending = true;
    if (rf_loop_at(h->loop, at, on_pending, r, &err) != RF_OK) {
        r->state = HX_RUNNING;
        return false;
    }
    res->retries++;
    res->retry_wait_ms += wait * 1e3;
    return true;
}

/* A retry's timer: the result goes back to a fresh attempt's, keeping what spans attempts. */
static void retry_now(hx_req *r) {
    rf_bk_request *req = r->req;
    rf_bk_result *res = &req->res;
    rf_bk_result keep = *res;
    rf_bk_result_free(res);
    res->t_sent = keep.t_sent;
    res->retries = keep.retries;
    res->retry_wait_ms = keep.retry_wait_ms;
    res->resends = keep.resends;
    snprintf(res->not_honoured, sizeof res->not_honoured, "%s", keep.not_honoured);
    r->state = HX_RUNNING;
    if (!begin_attempt(r)) {
        complete(r, true);
        return;
    }
    rf_error err = {0};
    if (rf_loop_add_easy(r->h->loop, r->easy, on_xfer_done, r, &err) != RF_OK) {
        rf_bk_fail(res, RF_BK_INTERNAL, "%s", err.msg);
        complete(r, true);
    }
}

static void on_xfer_done(void *user, void *easy, int code) {
    (void)easy;
    hx_req *r = user;
    rf_http *h = r->h;
    rf_bk_result *res = &r->req->res;
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status) res->http_status = (int)status;
    /* No reply at all, on connections that died under it: libcurl resends only on other pooled
     * connections (at most 5), and a server that closes each connection after a streamed reply
     * (llama-server) can leave that many dead ones in the pool. Send once more on a new one. */
    if (!r->fresh && !r->stalled && !status && r->mode == HX_MODE_NONE && res->err == RF_BK_OK &&
        (code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING)) {
        rf_error err = {0};
        r->fresh = true; /* on_prereq counts the resend */
        curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 1L);
        if (rf_loop_add_easy(h->loop, r->easy, on_xfer_done, r, &err) == RF_OK) return;
    }
    if (r->stalled) {
        rf_bk_fail(res, RF_BK_STALL, "no data for %.3g s (stall_s) after %lld content events",
                   (double)h->stall_ns / 1e9, (long long)(res->n_ev + res->n_ev_dropped));
    } else if (status >= 400) {
        h->p->http_error(h->ctx, r->req, status, r->error_type, (const char *)r->resp.data,
                         r->resp.len);
    } else if (code != CURLE_OK && !(status && (status < 200 || status >= 300))) {
        classify_curl(r, code);
    } else if (status < 200 || status >= 300) {
        char *loc = NULL;
        curl_easy_getinfo(r->easy, CURLINFO_REDIRECT_URL, &loc);
        if (status >= 300 && loc)
            rf_bk_fail(res, RF_BK_HTTP_STATUS,
                       "HTTP %ld: a redirect to %s (redirects are not followed: give that URL)",
                       status, loc);
        else
            rf_bk_fail(res, RF_BK_HTTP_STATUS, "unexpected HTTP status %ld", status);
    } else if (r->mode == HX_MODE_BODY ||
               (r->mode == HX_MODE_NONE &&
                h->p->reply_kind(h->ctx, r->req, NULL) == RF_BK_HTTP_BODY)) {
        h->p->body(r->st, r->req, (const char *)r->resp.data, r->resp.len, r->t_last_byte);
    } else {
        h->p->stream_end(r->st, r->req);
    }
    if (schedule_retry(r)) return;
    complete(r, true);
}

static void on_pending(void *user) {
    hx_req *r = user;
    if (!r->h) { /* orphaned by free: the request was reported there */
        req_destroy(r);
        return;
    }
    if (r->state == HX_ZOMBIE) { /* cancelled meanwhile: only recycle */
        list_del(r->h, r);
        pool_put(r->h, r);
        return;
    }
    if (r->retry_pending)
        retry_now(r);
    else
        complete(r, true);
}

/* ---------------------------------------------------------------- the interface */

rf_bk_http_cfg rf_bk_http_cfg_of(const rf_backend_cfg *cfg, const rf_bk_http_hooks *hooks,
                                 void *ctx, const char *label) {
    rf_bk_http_cfg c = {
        .hooks = hooks,
        .ctx = ctx,
        .label = label,
        .timeout_s = cfg->timeout_s,
        .stall_s = cfg->stall_s,
        .retry_max = cfg->retry_max < 0    ? 0
                     : cfg->retry_max == 0 ? RF_BK_DEFAULT_RETRY_MAX
                                           : cfg->retry_max,
        .retry_base_s = cfg->retry_base_s > 0 ? cfg->retry_base_s : RF_BK_DEFAULT_RETRY_BASE_S,
        .retry_cap_s = cfg->retry_cap_s > 0 ? cfg->retry_cap_s : RF_BK_DEFAULT_RETRY_CAP_S};
    return c;
}

rf_status rf_bk_http_new(rf_loop *loop, const rf_bk_http_cfg *cfg, rf_http **out, rf_error *err) {
    *out = NULL;
    rf_http *h = calloc(1, sizeof *h);
    if (!h) return rf_error_set(err, RF_ERR_NOMEM, "http transport: out of memory");
    h->loop = loop;
    h->p = cfg->hooks;
    h->ctx = cfg->ctx;
    h->label = cfg->label ? cfg->label : "";
    double t = cfg->timeout_s > 0 ? cfg->timeout_s : 600;
    h->timeout_ms = t * 1000 < 1 ? 1 : t * 1000 > 1e9 ? 1000000000L : (long)(t * 1000);
    double s = cfg->stall_s > 0 ? cfg->stall_s : 60;
    h->stall_ns = (int64_t)(s * 1e9);
    h->retry_max = cfg->retry_max > 0 ? cfg->retry_max : 0;
    h->retry_base_s = cfg->retry_base_s > 0 ? cfg->retry_base_s : 0;
    h->retry_cap_s = cfg->retry_cap_s > 0 ? cfg->retry_cap_s : h->retry_base_s;
    h->rng = (uint64_t)rf_now_ns() ^ (uint64_t)(uintptr_t)h;
    *out = h;
    return RF_OK;
}

void rf_bk_http_start(rf_http *h, rf_bk_request *req) {
    rf_bk_result_init(&req->res);
    req->priv = NULL;
    if (h->closing) {
        rf_bk_fail(&req->res, RF_BK_CANCELLED, "backend is closing");
        req->done(req->user, req);
        return;
    }
    hx_req *r = h->pool;
    if (r)
        h->pool = r->next;
    else
        r = req_new(h);
    if (!r) { /* no memory for even the request state: report at once */
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "out of memory");
        req->done(req->user, req);
        return;
    }
    r->req = req;
    req->priv = r;
    r->state = HX_RUNNING;
    list_add(h, r);

    char why[160];
    h->p->state_reset(r->st, req);
    if (!h->p->build(h->ctx, r->st, req, &r->body, why, sizeof why)) {
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "request not sent: %s", why);
        fail_later(r);
        return;
    }
    if (!begin_attempt(r)) {
        fail_later(r);
        return;
    }
    rf_error err = {0};
    req->res.t_sent = rf_now_ns();
    if (rf_loop_add_easy(h->loop, r->easy, on_xfer_done, r, &err) != RF_OK) {
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "%s", err.msg);
        fail_later(r);
    }
}

void rf_bk_http_cancel(rf_http *h, rf_bk_request *req) {
    hx_req *r = req->priv;
    if (!r || r->req != req || r->h != h) return;     /* not in flight (already done) */
    if (r->state == HX_PENDING && r->retry_pending) { /* the throttle was to be retried */
        char was[sizeof req->res.err_msg];
        snprintf(was, sizeof was, "%s", req->res.err_msg);
        req->res.err = RF_BK_OK;
        rf_bk_fail(&req->res, RF_BK_CANCELLED, "cancelled while waiting to retry (%s)", was);
    }
    rf_bk_fail(&req->res, RF_BK_CANCELLED, "cancelled");
    if (r->state == HX_RUNNING) {
        rf_loop_remove_easy(h->loop, r->easy);
        complete(r, true);
    } else if (r->state == HX_PENDING) {
        complete(r, false); /* the pending callback recycles r */
    }
}

void rf_bk_http_free(rf_http *h) {
    if (!h) return;
    h->closing = true;
    while (h->inflight) {
        hx_req *r = h->inflight;
        if (r->state == HX_RUNNING || r->state == HX_PENDING) {
            rf_bk_http_cancel(h, r->req); /* RUNNING leaves the list; PENDING becomes a zombie */
            if (h->inflight != r) continue;
        }
        list_del(h, r); /* a zombie: its callback will free it */
        r->h = NULL;
    }
    while (h->pool) {
        hx_req *r = h->pool;
        h->pool = r->next;
        req_destroy(r);
    }
    free(h);
}

void rf_bk_http_backend_start(rf_backend *b, rf_bk_request *req) {
    rf_bk_http_start(((rf_bk_http_backend *)b)->http, req);
}

void rf_bk_http_backend_cancel(rf_backend *b, rf_bk_request *req) {
    rf_bk_http_cancel(((rf_bk_http_backend *)b)->http, req);
}

int32_t rf_bk_http_backend_count_tokens(const rf_backend *b, const char *text, size_t len) {
    (void)b, (void)text, (void)len;
    return -1;
}
