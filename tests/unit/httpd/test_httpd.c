/* test_httpd.c: the request lifecycle of httpd/httpd.h over real sockets with a small app: the
 * route table's lookup (with and without /v1, a wrong method, no route), a whole reply with a
 * header, the body handed to dispatch, a body over body_max (too_large), a streamed reply read
 * in pieces, a handler that closes the connection, and the hooks: every request started is
 * done and released exactly once, the last by rf_httpd_stop at the latest. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "http_client.h"
#include "httpd/httpd.h"

typedef struct app {
    atomic_int started, done, released;
} app;

typedef struct app_req {
    rf_httpd_req h;
    int pieces; /* the stream's pieces written */
} app_req;

static rf_httpd_ret hello(rf_httpd_req *h) {
    return rf_httpd_reply(h, 200, "text/plain", "hello", 5, RF_HTTPD_COPY, "X-Test", "1");
}

static rf_httpd_ret echo(rf_httpd_req *h) {
    if (h->too_large)
        return rf_httpd_reply_json(h, 413, json_pack("{s:s}", "error", "too large"), NULL, NULL);
    return rf_httpd_reply(h, 200, "application/octet-stream", h->body.data, h->body.len,
                          RF_HTTPD_COPY, NULL, NULL);
}

static ssize_t count_read(rf_httpd_req *h, uint64_t pos, char *buf, size_t max) {
    app_req *r = (app_req *)h;
    (void)pos;
    if (r->pieces == 3) return RF_HTTPD_READ_END;
    if (max < 2) return RF_HTTPD_READ_ERROR;
    buf[0] = (char)('a' + r->pieces++);
    buf[1] = '\n';
    return 2;
}

static rf_httpd_ret stream(rf_httpd_req *h) {
    return rf_httpd_stream(h, 200, RF_HTTPD_SIZE_UNKNOWN, 64, count_read, "text/event-stream",
                           "Cache-Control", "no-cache");
}

static rf_httpd_ret drop(rf_httpd_req *h) {
    (void)h;
    return RF_HTTPD_CLOSE;
}

static const rf_httpd_route routes[] = {
    {"/hello", "GET", hello, 0},
    {"/echo", "POST", echo, 0},
    {"/stream", "GET", stream, 0},
    {"/drop", "GET", drop, 0},
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

static rf_httpd_ret dispatch(rf_httpd_req *h) {
    const rf_httpd_route *rt;
    switch (rf_httpd_route_find(routes, N_ROUTES, h->url, h->method, &rt)) {
    case RF_HTTPD_ROUTED:
        return rt->fn(h);
    case RF_HTTPD_BAD_METHOD:
        return rf_httpd_reply(h, 405, "text/plain", "", 0, RF_HTTPD_COPY, "Allow", rt->method);
    default:
        return rf_httpd_reply(h, 404, "text/plain", "", 0, RF_HTTPD_COPY, NULL, NULL);
    }
}

static void on_start(rf_httpd_req *h) {
    atomic_fetch_add(&((app *)h->app)->started, 1);
}

static void on_done(rf_httpd_req *h, rf_httpd_end how) {
    (void)how;
    atomic_fetch_add(&((app *)h->app)->done, 1);
}

static void on_release(rf_httpd_req *h) {
    atomic_fetch_add(&((app *)h->app)->released, 1);
}

static void test_route_find(void) {
    const rf_httpd_route *rt = NULL;
    CHECK(rf_httpd_route_find(routes, N_ROUTES, "/hello", "GET", &rt) == RF_HTTPD_ROUTED);
    CHECK(rt == &routes[0]);
    CHECK(rf_httpd_route_find(routes, N_ROUTES, "/v1/echo", "POST", &rt) == RF_HTTPD_ROUTED);
    CHECK(rt == &routes[1]);
    CHECK(rf_httpd_route_find(routes, N_ROUTES, "/v1/echo", "GET", &rt) == RF_HTTPD_BAD_METHOD);
    CHECK(rt == &routes[1]);
    CHECK(rf_httpd_route_find(routes, N_ROUTES, "/v2/echo", "POST", &rt) == RF_HTTPD_NO_ROUTE);
    CHECK(rt == NULL);
    CHECK(rf_httpd_route_find(routes, N_ROUTES, "/v1", "GET", &rt) == RF_HTTPD_NO_ROUTE);
}

static void test_daemon(void) {
    app a;
    atomic_init(&a.started, 0);
    atomic_init(&a.done, 0);
    atomic_init(&a.released, 0);
    rf_httpd_params p = {.name = "test",
                         .port = 0,
                         .body_max = 16,
                         .conn_limit = 16,
                         .stack_bytes = (size_t)1 << 20,
                         .quiesce = true,
                         .req_size = sizeof(app_req),
                         .app = &a,
                         .start = on_start,
                         .dispatch = dispatch,
                         .done = on_done,
                         .release = on_release};
    rf_error err = {0};
    rf_httpd *d = NULL;
    p.port = 70000;
    CHECK(rf_httpd_start(&p, &d, &err) == RF_ERR_ARG && d == NULL);
    CHECK_MSG(strstr(err.msg, "test: port 70000") != NULL, "%s", err.msg);
    p.port = 0;
    p.host = "not-an-address";
    CHECK(rf_httpd_start(&p, &d, &err) == RF_ERR_ARG && d == NULL);
    p.host = NULL;
    CHECK_MSG(rf_httpd_start(&p, &d, &err) == RF_OK, "%s", err.msg);
    if (!d) return;
    int port = rf_httpd_port(d);
    CHECK(port > 0);
    CHECK(!rf_httpd_stopping(d));
    rf_buf b;
    rf_buf_init(&b, 0);
    CHECK(http_client_request(port, "GET", "/v1/hello", NULL, NULL, &b) == 200);
    CHECK(b.len == 5 && !memcmp(b.data, "hello", 5));
    CHECK(http_client_request(port, "POST", "/echo", "{\"a\":1}", NULL, &b) == 200);
    CHECK(b.len == 7 && !memcmp(b.data, "{\"a\":1}", 7));
    CHECK(http_client_request(port, "POST", "/echo", "{\"a\":\"0123456789abcdef\"}", NULL, &b) ==
          413);
    CHECK(http_client_request(port, "GET", "/echo", NULL, NULL, &b) == 405);
    CHECK(http_client_request(port, "GET", "/nowhere", NULL, NULL, &b) == 404);
    CHECK(http_client_request(port, "GET", "/stream", NULL, NULL, &b) == 200);
    CHECK_MSG(b.len == 6 && !memcmp(b.data, "a\nb\nc\n", 6), "stream: '%.20s'",
              b.len ? (char *)b.data : "");
    CHECK(http_client_request(port, "GET", "/drop", NULL, NULL, &b) == 0);
    CHECK(http_client_request(port, "GET", "/hello", NULL, NULL, &b) == 200);
    rf_buf_free(&b);
    rf_httpd_quiesce(d);
    CHECK(rf_httpd_stopping(d));
    rf_httpd_stop(d);
    int started = atomic_load(&a.started);
    CHECK_MSG(started == 8, "%d requests started", started);
    CHECK_MSG(atomic_load(&a.done) == started && atomic_load(&a.released) == started,
              "started %d, done %d, released %d", started, atomic_load(&a.done),
              atomic_load(&a.released));
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_route_find();
    test_daemon();
    curl_global_cleanup();
    return check_summary("test_httpd");
}
