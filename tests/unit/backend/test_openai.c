/* test_openai.c: the "openai" backend against a small libmicrohttpd responder inside the test.
 * The responder picks a canned reply from the first path segment of the base URL
 * (openai:http://127.0.0.1:PORT/<scenario>/v1): a normal stream (role prelude, content, a
 * keep-alive, finish, usage with llama-server timings, [DONE]), one dribbled in 5-byte pieces,
 * a non-streamed body, parallel tool-call deltas, HTTP 500 and 400 bodies, an error event, an
 * event that is not JSON, streams cut short (cleanly and mid-chunk), a stall, a server that never
 * answers (timeout), plus connection refused, bad URIs, the model name from GET /models, the API
 * key header, a request that cannot be built, cancel, close with requests in flight, and 64
 * concurrent streams on one loop. The request JSON the backend sends is checked field by field.
 *
 * Against the bench's fake server (src/fake/fake_server.c, server-wide schedule and faults):
 * timing (TTFT, event span), usage, the model from /v1/models, every fault kind mapped to its
 * error class, and 64 concurrent streams.
 *
 * Measurement mode, instead of the tests: ROOFLINE_OPENAI_BENCH=N[,CONC[,TOKENS[,PACE_MS]]]
 * runs N requests (default 256 concurrent, 128 tokens, unpaced) against the responder, or, with
 * ROOFLINE_OPENAI_BENCH_FAKE=1, against the fake server (PACE_MS its gap, 0 = back to back),
 * and prints the loop thread's CPU time (getrusage RUSAGE_THREAD; the servers run on other
 * threads). `perf stat --no-inherit` counts the loop thread alone, too.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "bench/bench.h"
#include "fake/fake_server.h"
#include "bench/records.h"
#include "check.h"
#include "util/clock.h"
#include "util/utf8.h"

/* ------------------------------------------------------------------ the responder */

typedef struct seg {
    int delay_ms; /* sleep before sending text */
    const char *text;
} seg;

typedef struct scenario {
    const char *name;
    int status;
    const char *ctype;
    const seg *segs; /* ends with {0, NULL} */
    bool end_error;  /* close mid-stream (no terminating chunk) */
    bool tiny;       /* at most 5 bytes per write */
    int pre_sleep_ms;
} scenario;

#define ROLE                                                                                       \
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"         \
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
#define TEXT(t)                                                                                    \
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"         \
    "\"delta\":{\"content\":\"" t "\"},\"finish_reason\":null}],\"usage\":null}\n\n"
#define FINISH(r)                                                                                  \
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" r "\"}]}"   \
    "\n\n"
#define USAGE                                                                                      \
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3," \
    "\"total_tokens\":15},\"timings\":{\"prompt_n\":12,\"prompt_ms\":30.5,\"predicted_n\":3,"      \
    "\"predicted_ms\":80.25,\"predicted_per_second\":37.4}}\n\n"
#define DONE "data: [DONE]\n\n"

static const seg k_normal[] = {{0, ": keep-alive\n\n" ROLE},
                               {20, TEXT("Hel")},
                               {20, TEXT("lo, w\\u00f6rld")},
                               {0, ": ping\n\n"},
                               {20, TEXT("!\\n")},
                               {0, FINISH("stop") USAGE DONE},
                               {0, NULL}};
static const seg k_fast[] = {
    {0, ROLE TEXT("Hel") TEXT("lo, w\\u00f6rld") TEXT("!\\n") FINISH("stop") USAGE DONE},
    {0, NULL}};
static const seg k_crlf[] = {
    {0, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}"
        "\r\n\r\n: c\r\n\r\ndata:\r\n\r\ndata:{\"choices\":[{\"index\":0,\"delta\":"
        "{\"content\":\"b\"},\"finish_reason\":\"length\"}]}\r\n\r\n"
        "data: [DONE]\r\n\r\n"},
    {0, NULL}};
static const seg k_tools[] = {
    {0, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,"
        "\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{"
        "\"name\":\"count_ids\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n"},
    {5, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
        "\"arguments\":\"{\\\"filter\\\": \"}}]},\"finish_reason\":null}]}\n\n"},
    {5,
     "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\","
     "\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"arguments\":\"{\\\"k\\\":\"}}]},"
     "\"finish_reason\":null}]}\n\n"},
    {5, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
        "\"arguments\":\"\\\"id >= 10\\\"}\"}}]},\"finish_reason\":null}]}\n\n"},
    {0, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{"
        "\"arguments\":\"1}\"}}]},\"finish_reason\":null}]}\n\n" FINISH(
            "tool_calls") "data: "
                          "{\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":"
                          "22}}\n\n" DONE},
    {0, NULL}};
static const seg k_nonstream[] = {
    {0, "{\"id\":\"c2\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"The answer is 8.\","
        "\"tool_calls\":[{\"id\":\"call_x\",\"type\":\"function\",\"function\":{\"name\":\"f\","
        "\"arguments\":\"{\\\"a\\\":1}\"}}]},\"finish_reason\":\"stop\"}],\"usage\":{"
        "\"prompt_tokens\":7,\"completion_tokens\":5,\"total_tokens\":12},\"timings\":{"
        "\"prompt_n\":7,\"prompt_ms\":1.5,\"predicted_n\":5,\"predicted_ms\":9.75}}"},
    {0, NULL}};
static const seg k_http500[] = {
    {0, "{\"error\":{\"message\":\"boom: slot crashed\",\"type\":\"server_error\",\"code\":500}}"},
    {0, NULL}};
static const seg k_http400[] = {
    {0, "{\"error\":{\"message\":\"This model's maximum context length is 4096 tokens.\","
        "\"type\":\"invalid_request_error\",\"param\":\"messages\","
        "\"code\":\"context_length_exceeded\"}}"},
    {0, NULL}};
static const seg k_errevent[] = {
    {0, ROLE TEXT("par")},
    {0, "data: {\"error\":{\"message\":\"out of KV cache\",\"type\":\"server_error\"}}\n\n" DONE},
    {0, NULL}};
static const seg k_badjson[] = {{0, ROLE TEXT("x")},
                                {0, "data: {\"choices\": [ oops\n\n"},
                                {0, TEXT("never") FINISH("stop") DONE},
                                {0, NULL}};
static const seg k_trunc[] = {{0, ROLE TEXT("cut ")}, {10, TEXT("short")}, {0, NULL}};
static const seg k_trunc_mid[] = {{0, ROLE TEXT("cut ")}, {10, "data: {\"choi"}, {0, NULL}};
static const seg k_finish_only[] = {{0, ROLE TEXT("ok") FINISH("stop")}, {0, NULL}};
static const seg k_stall[] = {{0, ROLE TEXT("then nothing")}, {3000, DONE}, {0, NULL}};
static const seg k_json_for_stream[] = {
    {0, "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"plain\"},"
        "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}"},
    {0, NULL}};
static const seg k_empty[] = {{0, NULL}};

static const scenario k_scenarios[] = {
    {"normal", 200, "text/event-stream", k_normal, false, false, 0},
    {"fast", 200, "text/event-stream", k_fast, false, false, 0},
    {"tiny", 200, "text/event-stream", k_normal, false, true, 0},
    {"crlf", 200, "text/event-stream", k_crlf, false, true, 0},
    {"tools", 200, "text/event-stream", k_tools, false, false, 0},
    {"nonstream", 200, "application/json", k_nonstream, false, false, 0},
    {"jsonreply", 200, "application/json", k_json_for_stream, false, false, 0},
    {"http500", 500, "application/json", k_http500, false, false, 0},
    {"http400", 400, "application/json", k_http400, false, false, 0},
    {"errevent", 200, "text/event-stream", k_errevent, false, false, 0},
    {"badjson", 200, "text/event-stream", k_badjson, false, false, 0},
    {"trunc", 200, "text/event-stream", k_trunc, false, false, 0},
    {"truncmid", 200, "text/event-stream", k_trunc_mid, true, false, 0},
    {"finishonly", 200, "text/event-stream", k_finish_only, false, false, 0},
    {"stall", 200, "text/event-stream", k_stall, false, false, 0},
    {"silent", 200, "text/event-stream", k_fast, false, false, 3000},
    {"empty", 200, "text/event-stream", k_empty, false, false, 0},
    {"bench", 200, "text/event-stream", NULL, false, false, 0}, /* generated */
    {NULL, 0, NULL, NULL, false, false, 0}};

static atomic_int g_stopping;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_last_body[16384]; /* the last POST body and Authorization header seen */
static char g_last_auth[256];
static int g_bench_tokens, g_bench_pace_ms;

/* Sleeps ms, waking early when the server stops. */
static void nap(int ms) {
    for (int i = 0; i < ms && !atomic_load(&g_stopping); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

typedef struct conn {
    char body[16384];
    size_t len;
} conn;

typedef struct reader {
    const scenario *sc;
    int i;
    size_t off;
    bool slept;
    int token; /* bench: next token to send */
    char tmp[512];
    size_t tmp_len, tmp_off;
} reader;

static ssize_t bench_read(reader *r, char *buf, size_t max) {
    if (r->tmp_off == r->tmp_len) {
        if (r->token > g_bench_tokens) return MHD_CONTENT_READER_END_OF_STREAM;
        if (r->token > 0 && g_bench_pace_ms) nap(g_bench_pace_ms);
        if (r->token < g_bench_tokens) {
            r->tmp_len = (size_t)snprintf(
                r->tmp, sizeof r->tmp,
                "data: {\"id\":\"chatcmpl-0123456789abcdef\",\"object\":\"chat.completion.chunk\","
                "\"created\":1700000000,\"model\":\"fake-model\",\"choices\":[{\"index\":0,"
                "\"delta\":{\"content\":\" tok%d\"},\"logprobs\":null,\"finish_reason\":null}],"
                "\"usage\":null}\n\n",
                r->token);
        } else {
            r->tmp_len = (size_t)snprintf(r->tmp, sizeof r->tmp, "%s",
                                          FINISH("length") "data: {\"choices\":[],\"usage\":{"
                                                           "\"prompt_tokens\":5,"
                                                           "\"completion_tokens\":0}}\n\n" DONE);
        }
        r->tmp_off = 0;
        r->token++;
    }
    size_t n = r->tmp_len - r->tmp_off;
    if (n > max) n = max;
    memcpy(buf, r->tmp + r->tmp_off, n);
    r->tmp_off += n;
    return (ssize_t)n;
}

static ssize_t reader_fn(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    reader *r = cls;
    if (!r->sc->segs) return bench_read(r, buf, max);
    for (;;) {
        if (atomic_load(&g_stopping)) return MHD_CONTENT_READER_END_WITH_ERROR;
        const seg *s = &r->sc->segs[r->i];
        if (!s->text)
            return r->sc->end_error ? MHD_CONTENT_READER_END_WITH_ERROR
                                    : MHD_CONTENT_READER_END_OF_STREAM;
        if (!r->slept && s->delay_ms) nap(s->delay_ms);
        r->slept = true;
        size_t left = strlen(s->text) - r->off;
        if (!left) {
            r->i++;
            r->off = 0;
            r->slept = false;
            continue;
        }
        size_t n = left < max ? left : max;
        if (r->sc->tiny && n > 5) n = 5;
        memcpy(buf, s->text + r->off, n);
        r->off += n;
        return (ssize_t)n;
    }
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, const char *ctype,
                             const char *text) {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, "Content-Type", ctype);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
    (void)cls, (void)version;
    conn *cs = *con_cls;
    if (!cs) {
        cs = calloc(1, sizeof *cs);
        if (!cs) return MHD_NO;
        *con_cls = cs;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t k = *upload_size;
        if (k > sizeof cs->body - 1 - cs->len) k = sizeof cs->body - 1 - cs->len;
        memcpy(cs->body + cs->len, upload, k);
        cs->len += k;
        *upload_size = 0;
        return MHD_YES;
    }
    /* "/<scenario>/v1/<endpoint>" */
    const char *p = url + 1, *slash = strchr(p, '/');
    if (!slash) return reply(c, 404, "application/json", "{\"error\":{\"message\":\"no path\"}}");
    const scenario *sc = NULL;
    for (const scenario *s = k_scenarios; s->name; s++)
        if (strlen(s->name) == (size_t)(slash - p) && !strncmp(s->name, p, (size_t)(slash - p)))
            sc = s;
    if (!strcmp(method, "GET") && !strcmp(slash, "/v1/models")) {
        if (sc && !strcmp(sc->name, "http500"))
            return reply(c, 404, "application/json", "{\"error\":{\"message\":\"no models\"}}");
        if (sc && !strcmp(sc->name, "badjson"))
            return reply(c, 200, "application/json", "{\"object\":\"list\",\"data\":[]}");
        return reply(c, 200, "application/json",
                     "{\"object\":\"list\",\"data\":[{\"id\":\"fake-model-7\",\"object\":\"model\","
                     "\"created\":0,\"owned_by\":\"test\",\"root\":\"fake-model-7\"}]}");
    }
    if (!sc || strcmp(method, "POST") || strcmp(slash, "/v1/chat/completions"))
        return reply(c, 404, "application/json", "{\"error\":{\"message\":\"unknown route\"}}");
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    pthread_mutex_lock(&g_mu);
    memcpy(g_last_body, cs->body, cs->len + 1);
    snprintf(g_last_auth, sizeof g_last_auth, "%s", auth ? auth : "");
    pthread_mutex_unlock(&g_mu);
    if (sc->pre_sleep_ms) nap(sc->pre_sleep_ms);
    if (sc->status != 200) return reply(c, sc->status, sc->ctype, sc->segs[0].text);
    reader *r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    r->sc = sc;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader_fn, r, free);
    MHD_add_response_header(resp, "Content-Type", sc->ctype);
    enum MHD_Result ret = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)c, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static struct MHD_Daemon *server_start(int *port) {
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
        NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_CONNECTION_LIMIT, 1000u,
        MHD_OPTION_END);
    if (!d) return NULL;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : 0;
    return d;
}

/* A port nothing listens on: bound, then closed. */
static int closed_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int port = 0;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof sa) &&
        !getsockname(fd, (struct sockaddr *)&sa, &len))
        port = ntohs(sa.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* ------------------------------------------------------------------ the client side */

static int g_port;
static rf_loop *g_loop;

typedef struct waiter {
    int done, want;
    volatile int flag;
} waiter;

static void on_done(void *user, rf_bk_request *req) {
    waiter *w = user;
    CHECK(req->priv == NULL); /* the backend has let go of the request */
    w->done++;
    if (w->done >= w->want) w->flag = 1;
}

static rf_backend *open_backend(const char *scen, const char *model, double timeout_s,
                                double stall_s, const char *key_env, rf_error *err) {
    char uri[256];
    snprintf(uri, sizeof uri, "openai:http://127.0.0.1:%d/%s/v1/", g_port, scen);
    rf_backend_cfg cfg = {0};
    cfg.name = scen;
    cfg.uri = uri;
    cfg.model = model;
    cfg.api_key_env = key_env;
    cfg.timeout_s = timeout_s;
    cfg.stall_s = stall_s;
    rf_backend *b = NULL;
    if (rf_backend_open(&cfg, g_loop, &b, err)) return NULL;
    return b;
}

static const rf_bk_message k_msgs[] = {{"system", "Be brief.", NULL, NULL},
                                       {"user", "Say hello.", NULL, NULL}};

static void req_init(rf_bk_request *req, waiter *w, bool stream) {
    memset(req, 0, sizeof *req);
    req->msgs = k_msgs;
    req->n_msgs = 2;
    req->temperature = 0;
    req->top_p = 1;
    req->max_tokens = 16;
    req->seed = 1;
    req->stream = stream;
    req->done = on_done;
    req->user = w;
}

static void run_until(waiter *w, double max_s) {
    rf_error err = {0};
    rf_status st = rf_loop_run(g_loop, &w->flag, rf_now_ns() + (int64_t)(max_s * 1e9), &err);
    CHECK_MSG(st == RF_OK, "loop: %s", err.msg);
}

/* Runs one request on scenario scen; returns the result in req->res (caller frees). */
static void run_one(const char *scen, bool stream, double stall_s, rf_bk_request *req) {
    waiter w = {0};
    w.want = 1;
    rf_error err = {0};
    rf_backend *b = open_backend(scen, "test-model", 10, stall_s, NULL, &err);
    CHECK_MSG(b, "open %s: %s", scen, err.msg);
    req_init(req, &w, stream);
    if (b) {
        b->vt->start(b, req);
        run_until(&w, 15);
        CHECK_MSG(w.done == 1, "%s: %d dones", scen, w.done);
        rf_backend_close(b);
        CHECK(w.done == 1);
    }
    req->user = NULL; /* w is gone */
}

static void expect_err(const char *scen, bool stream, rf_bk_error want, const char *msg_part) {
    rf_bk_request req;
    run_one(scen, stream, 0, &req);
    CHECK_MSG(req.res.err == want && (!msg_part || strstr(req.res.err_msg, msg_part)),
              "%s: got %s '%s', want %s '%s'", scen, rf_bk_error_name(req.res.err), req.res.err_msg,
              rf_bk_error_name(want), msg_part ? msg_part : "");
    rf_bk_result_free(&req.res);
}

static bool times_ordered(const rf_bk_result *r) {
    bool ok = r->t_sent > 0 && r->t_first_byte >= r->t_sent &&
              r->t_first_content >= r->t_first_byte && r->t_last_content >= r->t_first_content &&
              r->t_done >= r->t_last_content;
    for (int32_t i = 1; i < r->n_ev; i++) ok = ok && r->ev_t[i] >= r->ev_t[i - 1];
    return ok && r->n_ev > 0 && r->ev_t[0] == r->t_first_content &&
           r->ev_t[r->n_ev - 1] == r->t_last_content;
}

static void test_normal(const char *scen) {
    rf_bk_request req;
    run_one(scen, true, 0, &req);
    const rf_bk_result *r = &req.res;
    CHECK_MSG(r->err == RF_BK_OK, "%s: %s %s", scen, rf_bk_error_name(r->err), r->err_msg);
    CHECK(r->http_status == 200);
    CHECK_MSG(!strcmp((const char *)r->text.data, "Hello, w\xc3\xb6rld!\n"), "%s: text '%s'", scen,
              (const char *)r->text.data);
    CHECK_MSG(r->n_ev == 3, "%s: %d events", scen, r->n_ev); /* the role prelude is not one */
    CHECK(times_ordered(r));
    for (int32_t i = 0; i < r->n_ev; i++) CHECK(r->ev_tokens[i] == -1);
    /* the server sleeps 20 ms before each content chunk: each event has its own arrival time
     * (bounds loose enough for a loaded machine, where one read may come late) */
    CHECK_MSG(r->t_first_content - r->t_first_byte >= 5000000, "%s: prelude-to-content %lld ns",
              scen, (long long)(r->t_first_content - r->t_first_byte));
    CHECK(r->n_ev == 3 && r->ev_t[1] > r->ev_t[0] && r->ev_t[2] > r->ev_t[1] &&
          r->ev_t[2] - r->ev_t[0] >= 20000000);
    CHECK(r->prompt_tokens == 12 && r->completion_tokens == 3);
    CHECK(r->has_timings && r->prompt_n == 12 && r->predicted_n == 3);
    CHECK_NEAR(r->prompt_ms, 30.5, 1e-9);
    CHECK_NEAR(r->predicted_ms, 80.25, 1e-9);
    CHECK(!strcmp(r->finish_reason, "stop"));
    CHECK(r->n_calls == 0 && r->client_tokens == -1);
    rf_bk_result_free(&req.res);
}

/* ------------------------------------------------------------------ a raw TCP responder */

/* For replies libmicrohttpd will not send: not HTTP at all, broken status lines, redirects, any
 * bytes as an error body, and streams that never end. Each connection reads the request (up to
 * the blank line and Content-Length) and gets g_raw_reply, or, in g_raw_endless mode, headers
 * then SSE chunks until the client goes away. One request at a time. */
static const char *g_raw_reply;
static size_t g_raw_len;
static int g_raw_endless; /* 1: content chunks; 2: tool-call argument fragments */
static int g_raw_fd = -1;

static void raw_serve(int c) {
    char buf[16384];
    size_t n = 0;
    for (;;) { /* the request head, then as much body as Content-Length says */
        ssize_t k = recv(c, buf + n, sizeof buf - 1 - n, 0);
        if (k <= 0) return;
        n += (size_t)k;
        buf[n] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end) continue;
        const char *cl = strcasestr(buf, "Content-Length:");
        size_t want = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
        if (n - (size_t)(end + 4 - buf) >= want || n >= sizeof buf - 1) break;
    }
    if (!g_raw_endless) {
        ssize_t w = send(c, g_raw_reply, g_raw_len, MSG_NOSIGNAL);
        (void)w;
        return;
    }
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
    if (send(c, head, strlen(head), MSG_NOSIGNAL) < 0) return;
    if (g_raw_endless == 2) {
        const char *call =
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":"
            "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]"
            "}"
            "\n\n";
        if (send(c, call, strlen(call), MSG_NOSIGNAL) < 0) return;
    }
    const char *chunk =
        g_raw_endless == 1
            ? TEXT("0123456789abcdef0123456789abcdef")
            : "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
              "\"function\":{\"arguments\":\"0123456789abcdef0123456789abcdef\"}}]}}]}\n\n";
    while (!atomic_load(&g_stopping) && send(c, chunk, strlen(chunk), MSG_NOSIGNAL) > 0) {
    }
}

static void *raw_thread(void *arg) {
    (void)arg;
    for (;;) {
        int c = accept(g_raw_fd, NULL, NULL);
        if (c < 0) {
            if (atomic_load(&g_stopping)) return NULL;
            continue;
        }
        raw_serve(c);
        shutdown(c, SHUT_RDWR);
        close(c);
    }
}

static int raw_start(pthread_t *th) {
    g_raw_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (g_raw_fd < 0 || bind(g_raw_fd, (struct sockaddr *)&sa, sizeof sa) || listen(g_raw_fd, 16) ||
        getsockname(g_raw_fd, (struct sockaddr *)&sa, &len) ||
        pthread_create(th, NULL, raw_thread, NULL))
        return 0;
    return ntohs(sa.sin_port);
}

static void raw_stop(pthread_t th, int port) {
    atomic_store(&g_stopping, 1);
    shutdown(g_raw_fd, SHUT_RDWR);
    int c = socket(AF_INET, SOCK_STREAM, 0); /* wakes accept */
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    if (c >= 0) {
        int r = connect(c, (struct sockaddr *)&sa, sizeof sa);
        (void)r;
        close(c);
    }
    pthread_join(th, NULL);
    close(g_raw_fd);
}

/* One request to the raw responder answering reply[0..len). */
static void raw_one(int port, const char *reply, size_t len, int endless, int64_t cap,
                    double timeout_s, rf_bk_request *req) {
    g_raw_reply = reply;
    g_raw_len = len;
    g_raw_endless = endless;
    char uri[128];
    snprintf(uri, sizeof uri, "openai:http://127.0.0.1:%d/v1", port);
    rf_backend_cfg cfg = {0};
    cfg.name = "raw";
    cfg.uri = uri;
    cfg.model = "m";
    cfg.timeout_s = timeout_s;
    rf_backend *b = NULL;
    rf_error err = {0};
    waiter w = {0};
    w.want = 1;
    req_init(req, &w, true);
    req->max_reply_bytes = cap;
    CHECK_MSG(rf_backend_open(&cfg, g_loop, &b, &err) == RF_OK, "%s", err.msg);
    if (b) {
        b->vt->start(b, req);
        run_until(&w, timeout_s + 10);
        CHECK(w.done == 1);
        rf_backend_close(b);
    }
    req->user = NULL;
}

static bool valid_utf8_text(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = rf_utf8_seq(s + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

/* Builds "HTTP/1.1 <status>\r\nContent-Type: <ct>\r\nContent-Length: N\r\n\r\n<body>". */
static size_t http_reply(char *out, size_t cap, const char *status, const char *ct,
                         const char *body, size_t body_len) {
    int n = snprintf(out, cap, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                     status, ct, body_len);
    memcpy(out + n, body, body_len);
    return (size_t)n + body_len;
}

/* Error classes by what was received (not "refused" for everything), error text that survives
 * any bytes, and replies that never end. */
static void test_raw_replies(void) {
    pthread_t th;
    int port = raw_start(&th);
    CHECK(port > 0);
    if (!port) return;
    static const struct {
        const char *reply;
        rf_bk_error want;
        const char *msg;
    } cases[] = {
        {"HELLO WORLD\r\n\r\n", RF_BK_PROTOCOL, "not valid HTTP"},
        {"<html><body>an HTTP/0.9 page</body></html>\n", RF_BK_PROTOCOL, "not valid HTTP"},
        {"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", RF_BK_PROTOCOL, "not valid HTTP"},
        {"HTTP/1.1 abc\r\n\r\n", RF_BK_PROTOCOL, "not valid HTTP"},
        {"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/v2/chat/completions\r\n"
         "Content-Length: 0\r\n\r\n",
         RF_BK_HTTP_STATUS, "redirect to http://127.0.0.1:1/v2/chat/completions"},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n",
         RF_BK_HTTP_STATUS, NULL},
        {"", RF_BK_REFUSED, "closed with no reply"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rf_bk_request req;
        raw_one(port, cases[i].reply, strlen(cases[i].reply), 0, 0, 5, &req);
        CHECK_MSG(req.res.err == cases[i].want &&
                      (!cases[i].msg || strstr(req.res.err_msg, cases[i].msg)),
                  "raw case %zu: %s '%s', want %s", i, rf_bk_error_name(req.res.err),
                  req.res.err_msg, rf_bk_error_name(cases[i].want));
        rf_bk_result_free(&req.res);
    }

    /* error text: long UTF-8 messages, a plain body, binary bytes: always valid, never empty */
    static char body[4096], reply[8192];
    char *p = body;
    p += sprintf(p, "{\"error\":{\"message\":\"");
    for (int i = 0; i < 300; i++) p += sprintf(p, "\xc3\xa9");
    p += sprintf(p, "\",\"type\":\"server_error\"}}");
    const struct {
        const char *status, *ct;
        rf_bk_error want;
        const char *needle;
    } texts[] = {
        {"500 Internal Server Error", "application/json", RF_BK_HTTP_5XX,
         "HTTP 500: \xc3\xa9\xc3\xa9"},
        {"500 Internal Server Error", "text/plain", RF_BK_HTTP_5XX, "HTTP 500: \xc3\xbc\xc3\xbc"},
        {"503 Service Unavailable", "application/octet-stream", RF_BK_HTTP_5XX, "\\x"},
    };
    for (size_t t = 0; t < 3; t++) {
        size_t blen;
        if (t == 0) {
            blen = strlen(body);
            blen = http_reply(reply, sizeof reply, texts[t].status, texts[t].ct, body, blen);
        } else if (t == 1) {
            char u[400] = "";
            for (int i = 0; i < 150; i++) strcat(u, "\xc3\xbc");
            blen = http_reply(reply, sizeof reply, texts[t].status, texts[t].ct, u, strlen(u));
        } else {
            char bin[256];
            for (int i = 0; i < 255; i++) bin[i] = (char)(255 - i); /* 0xff .. 0x01 */
            blen = http_reply(reply, sizeof reply, texts[t].status, texts[t].ct, bin, 255);
        }
        rf_bk_request req;
        raw_one(port, reply, blen, 0, 0, 5, &req);
        const char *m = req.res.err_msg;
        CHECK_MSG(req.res.err == texts[t].want && valid_utf8_text(m) && strstr(m, texts[t].needle),
                  "error text %zu: %s '%s'", t, rf_bk_error_name(req.res.err), m);
        /* the record keeps the message: a string field, valid UTF-8 */
        rf_bench_backend bb;
        memset(&bb, 0, sizeof bb);
        bb.cfg.name = "raw";
        rf_send s;
        memset(&s, 0, sizeof s);
        s.bb = &bb;
        s.suite = "load";
        s.req = req;
        rf_record_ctx rc = {0, 0, "0123456789abcdef", 0, ""};
        json_t *rec = rf_record_of_send(&s, &rc);
        const char *e = json_string_value(json_object_get(rec, "error"));
        CHECK_MSG(e && strlen(e) > 20 && !strcmp(e, m), "record error field: %s", e ? e : "(none)");
        json_decref(rec);
        rf_bk_result_free(&req.res);
    }

    /* a stream that never ends: the reply kept stops at the cap, every byte is counted, the
     * request ends at its timeout (before the fix: 747 MB in 10 s) */
    for (int mode = 1; mode <= 2; mode++) {
        rf_bk_request req;
        raw_one(port, NULL, 0, mode, 10000, 1.0, &req);
        const rf_bk_result *r = &req.res;
        CHECK_MSG(r->err == RF_BK_TIMEOUT, "endless %d: %s %s", mode, rf_bk_error_name(r->err),
                  r->err_msg);
        if (mode == 1) {
            CHECK_MSG(r->text.len == 10000 && r->text_bytes > 100000,
                      "endless text: kept %zu, counted %lld", r->text.len,
                      (long long)r->text_bytes);
            CHECK(r->n_ev + r->n_ev_dropped > 1000 && r->t_last_content > r->t_first_content);
        } else {
            CHECK_MSG(r->n_calls == 1 && strlen(r->calls[0].arguments) == 10000 &&
                          r->calls[0].arguments_bytes > 100000,
                      "endless arguments: %d calls, kept %zu, counted %lld", r->n_calls,
                      r->n_calls ? strlen(r->calls[0].arguments) : 0,
                      r->n_calls ? (long long)r->calls[0].arguments_bytes : 0);
        }
        rf_bk_result_free(&req.res);
    }
    raw_stop(th, port);
    atomic_store(&g_stopping, 0);
}

static void test_crlf(void) {
    rf_bk_request req;
    run_one("crlf", true, 0, &req);
    CHECK_MSG(req.res.err == RF_BK_OK, "%s", req.res.err_msg);
    CHECK(!strcmp((const char *)req.res.text.data, "ab") && req.res.n_ev == 2);
    CHECK(!strcmp(req.res.finish_reason, "length"));
    CHECK(req.res.prompt_tokens == -1 && req.res.completion_tokens == -1 && !req.res.has_timings);
    rf_bk_result_free(&req.res);
}

static void test_tools(void) {
    rf_bk_request req;
    run_one("tools", true, 0, &req);
    const rf_bk_result *r = &req.res;
    CHECK_MSG(r->err == RF_BK_OK, "%s", r->err_msg);
    CHECK(r->n_calls == 2);
    if (r->n_calls == 2) {
        CHECK(!strcmp(r->calls[0].id, "call_a") && !strcmp(r->calls[0].name, "count_ids"));
        CHECK_MSG(!strcmp(r->calls[0].arguments, "{\"filter\": \"id >= 10\"}"), "args '%s'",
                  r->calls[0].arguments);
        CHECK(!strcmp(r->calls[1].id, "call_b") && !strcmp(r->calls[1].name, "lookup"));
        CHECK(!strcmp(r->calls[1].arguments, "{\"k\":1}"));
    }
    CHECK(r->n_ev == 5 && times_ordered(r)); /* every tool-call delta is a content event */
    CHECK(r->text.len == 0 && !strcmp(r->finish_reason, "tool_calls"));
    CHECK(r->prompt_tokens == 40 && r->completion_tokens == 22);
    rf_bk_result_free(&req.res);
}

static void test_nonstream(void) {
    rf_bk_request req;
    run_one("nonstream", false, 0, &req);
    const rf_bk_result *r = &req.res;
    CHECK_MSG(r->err == RF_BK_OK, "%s", r->err_msg);
    CHECK(!strcmp((const char *)r->text.data, "The answer is 8."));
    CHECK(r->n_calls == 1 && !strcmp(r->calls[0].id, "call_x") && !strcmp(r->calls[0].name, "f") &&
          !strcmp(r->calls[0].arguments, "{\"a\":1}"));
    CHECK(r->n_ev == 1 && times_ordered(r));
    CHECK(r->prompt_tokens == 7 && r->completion_tokens == 5 && !strcmp(r->finish_reason, "stop"));
    CHECK(r->has_timings && r->prompt_n == 7 && r->predicted_n == 5);
    CHECK_NEAR(r->predicted_ms, 9.75, 1e-9);
    rf_bk_result_free(&req.res);
    /* a streamed request answered with one JSON body (a server that ignores stream) */
    run_one("jsonreply", true, 0, &req);
    CHECK_MSG(req.res.err == RF_BK_OK && !strcmp((const char *)req.res.text.data, "plain"), "%s",
              req.res.err_msg);
    rf_bk_result_free(&req.res);
}

/* The request JSON: every field the brief names, from a request that uses them all. */
static void test_request_body(void) {
    waiter w = {0};
    w.want = 1;
    rf_error err = {0};
    rf_backend *b = open_backend("fast", "the-model", 10, 0, NULL, &err);
    CHECK_MSG(b, "%s", err.msg);
    if (!b) return;
    static const rf_bk_message msgs[] = {
        {"user", "How many ids are >= 10? caf\xc3\xa9", NULL, NULL},
        {"assistant", NULL, NULL,
         "[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"count_ids\","
         "\"arguments\":\"{\\\"filter\\\":\\\"id >= 10\\\"}\"}}]"},
        {"tool", "8", "call_1", NULL}};
    rf_bk_request req;
    req_init(&req, &w, true);
    req.msgs = msgs;
    req.n_msgs = 3;
    req.tools = "[{\"type\":\"function\",\"function\":{\"name\":\"count_ids\",\"parameters\":{"
                "\"type\":\"object\",\"properties\":{\"filter\":{\"type\":\"string\"}}}}}]";
    req.tool_choice = "auto";
    req.temperature = 0.7f;
    req.top_p = 0.9f;
    req.max_tokens = 128;
    req.seed = 1234;
    req.ignore_eos = true;
    b->vt->start(b, &req);
    run_until(&w, 10);
    CHECK(w.done == 1 && req.res.err == RF_BK_OK);
    pthread_mutex_lock(&g_mu);
    json_error_t je;
    json_t *o = json_loads(g_last_body, 0, &je);
    pthread_mutex_unlock(&g_mu);
    CHECK_MSG(json_is_object(o), "body: %s", je.text);
    CHECK(!strcmp(json_string_value(json_object_get(o, "model")), "the-model"));
    CHECK(json_integer_value(json_object_get(o, "max_tokens")) == 128);
    CHECK(json_integer_value(json_object_get(o, "max_completion_tokens")) == 128);
    CHECK(json_real_value(json_object_get(o, "temperature")) == 0.7);
    CHECK(json_real_value(json_object_get(o, "top_p")) == 0.9);
    CHECK(json_integer_value(json_object_get(o, "seed")) == 1234);
    CHECK(json_is_true(json_object_get(o, "stream")));
    CHECK(json_is_true(json_object_get(json_object_get(o, "stream_options"), "include_usage")));
    CHECK(json_is_true(json_object_get(o, "ignore_eos")));
    CHECK(!strcmp(json_string_value(json_object_get(o, "tool_choice")), "auto"));
    CHECK(!strcmp(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(o, "tools"), 0), "function"), "name")),
        "count_ids"));
    json_t *m = json_object_get(o, "messages");
    CHECK(json_array_size(m) == 3);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(m, 0), "content")),
                  "How many ids are >= 10? caf\xc3\xa9"));
    json_t *m1 = json_array_get(m, 1);
    CHECK(json_is_null(json_object_get(m1, "content")));
    CHECK(!strcmp(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(m1, "tool_calls"), 0), "function"),
            "name")),
        "count_ids"));
    json_t *m2 = json_array_get(m, 2);
    CHECK(!strcmp(json_string_value(json_object_get(m2, "role")), "tool"));
    CHECK(!strcmp(json_string_value(json_object_get(m2, "tool_call_id")), "call_1"));
    json_decref(o);
    rf_bk_result_free(&req.res);

    /* defaults: no top_p at 1, no tools, no ignore_eos; non-stream has no stream_options */
    w = (waiter){0};
    w.want = 1;
    req_init(&req, &w, false);
    b->vt->start(b, &req);
    run_until(&w, 10);
    pthread_mutex_lock(&g_mu);
    o = json_loads(g_last_body, 0, NULL);
    pthread_mutex_unlock(&g_mu);
    CHECK(json_is_object(o) && !json_object_get(o, "top_p") && !json_object_get(o, "tools") &&
          !json_object_get(o, "tool_choice") && !json_object_get(o, "ignore_eos") &&
          !json_object_get(o, "stream_options") && json_is_false(json_object_get(o, "stream")) &&
          json_real_value(json_object_get(o, "temperature")) == 0.0);
    json_decref(o);
    rf_bk_result_free(&req.res);
    rf_backend_close(b);
}

static void test_errors(void) {
    expect_err("http500", true, RF_BK_HTTP_5XX, "HTTP 500: boom: slot crashed");
    expect_err("http400", true, RF_BK_HTTP_4XX, "maximum context length is 4096");
    expect_err("http400", false, RF_BK_HTTP_4XX, "HTTP 400");
    expect_err("errevent", true, RF_BK_SERVER_ERROR, "out of KV cache");
    expect_err("badjson", true, RF_BK_INVALID, "not JSON");
    expect_err("trunc", true, RF_BK_TRUNCATED, "without [DONE]");
    expect_err("truncmid", true, RF_BK_TRUNCATED, NULL);
    expect_err("empty", true, RF_BK_TRUNCATED, NULL);
    expect_err("empty", false, RF_BK_INVALID, "empty");
    expect_err("normal", false, RF_BK_INVALID, NULL); /* an SSE body where JSON was asked */
    expect_err("finishonly", true, RF_BK_OK, NULL);   /* a finish_reason without [DONE] is fine */

    /* the text before an error stays in the result */
    rf_bk_request req;
    run_one("badjson", true, 0, &req);
    CHECK(!strcmp((const char *)req.res.text.data, "x") && req.res.n_ev == 1);
    rf_bk_result_free(&req.res);

    /* stall: stall_s 0.3 against a server that pauses 3 s mid-stream */
    int64_t t0 = rf_now_ns();
    run_one("stall", true, 0.3, &req);
    double dt = (double)(rf_now_ns() - t0) / 1e9;
    CHECK_MSG(req.res.err == RF_BK_STALL, "stall: %s %s", rf_bk_error_name(req.res.err),
              req.res.err_msg);
    /* not before stall_s; the class says it was the stall, not the server's 3 s pause ending
     * (how soon after stall_s depends on the machine's load: no upper bound in time) */
    CHECK_MSG(dt > 0.3 - 1e-3, "stall detected after %.2f s", dt);
    CHECK(req.res.n_ev == 1 && !strcmp((const char *)req.res.text.data, "then nothing"));
    rf_bk_result_free(&req.res);

    /* timeout: the server says nothing for 3 s, timeout_s 0.4 */
    waiter w = {0};
    w.want = 1;
    rf_error err = {0};
    rf_backend *b = open_backend("silent", "m", 0.4, 0, NULL, &err);
    CHECK(b != NULL);
    if (b) {
        req_init(&req, &w, true);
        t0 = rf_now_ns();
        b->vt->start(b, &req);
        run_until(&w, 10);
        dt = (double)(rf_now_ns() - t0) / 1e9;
        CHECK_MSG(w.done == 1 && req.res.err == RF_BK_TIMEOUT, "timeout: %s %s",
                  rf_bk_error_name(req.res.err), req.res.err_msg);
        CHECK_MSG(dt > 0.4 - 1e-3, "timeout after %.2f s", dt); /* not before timeout_s */
        rf_bk_result_free(&req.res);
        rf_backend_close(b);
    }

    /* connection refused: a closed port */
    char uri[128];
    snprintf(uri, sizeof uri, "openai:http://127.0.0.1:%d/v1", closed_port());
    rf_backend_cfg cfg = {0};
    cfg.uri = uri;
    cfg.model = "m";
    b = NULL;
    CHECK(rf_backend_open(&cfg, g_loop, &b, &err) == RF_OK);
    if (b) {
        w = (waiter){0};
        w.want = 1;
        req_init(&req, &w, true);
        b->vt->start(b, &req);
        run_until(&w, 10);
        CHECK_MSG(w.done == 1 && req.res.err == RF_BK_REFUSED && req.res.http_status == 0,
                  "refused: %s %s", rf_bk_error_name(req.res.err), req.res.err_msg);
        CHECK(strstr(req.res.err_msg, "127.0.0.1") != NULL);
        rf_bk_result_free(&req.res);
        rf_backend_close(b);
    }
}

static void test_open(void) {
    rf_error err = {0};
    rf_backend *b = NULL;
    rf_backend_cfg cfg = {0};
    cfg.model = "m";
    const char *bad[] = {"openai:",
                         "openai:ftp://host/v1",
                         "openai:http://",
                         "openai:localhost:8000",
                         "openai:http://host:99999/v1",
                         "openai:http://ho st/v1",
                         "openai:http://host/v1?x=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg.uri = bad[i];
        err = (rf_error){0};
        rf_status st = rf_backend_open(&cfg, g_loop, &b, &err);
        CHECK_MSG(st == RF_ERR_ARG && !b && strstr(err.msg, bad[i]), "'%s': %d %s", bad[i], (int)st,
                  err.msg);
    }
    /* an unknown scheme lists the registry's URI shapes, in its order */
    cfg.uri = "ftp://host";
    err = (rf_error){0};
    CHECK(rf_backend_open(&cfg, g_loop, &b, &err) == RF_ERR_ARG && !b);
    CHECK_MSG(strstr(err.msg, "unknown scheme 'ftp' in 'ftp://host' (known: local, "
                              "local:MODEL.gguf, openai:URL, sagemaker:REGION/ENDPOINT, "
                              "bedrock:REGION/MODEL_ID)"),
              "%s", err.msg);
    /* https is accepted (no request is made at open when the model is given) */
    cfg.uri = "openai:https://api.example.com/v1";
    CHECK(rf_backend_open(&cfg, g_loop, &b, &err) == RF_OK && b);
    if (b) CHECK(!strcmp(b->vt->model(b), "m") && b->vt->count_tokens(b, "abc", 3) == -1);
    rf_backend_close(b);

    /* model from GET /models */
    b = open_backend("normal", NULL, 10, 0, NULL, &err);
    CHECK_MSG(b && !strcmp(b->vt->model(b), "fake-model-7"), "%s", err.msg);
    if (b) {
        waiter w = {0};
        w.want = 1;
        rf_bk_request req;
        req_init(&req, &w, true);
        b->vt->start(b, &req);
        run_until(&w, 10);
        CHECK(req.res.err == RF_BK_OK);
        pthread_mutex_lock(&g_mu);
        CHECK(strstr(g_last_body, "\"model\":\"fake-model-7\"") != NULL);
        pthread_mutex_unlock(&g_mu);
        rf_bk_result_free(&req.res);
    }
    rf_backend_close(b);
    /* /models failing: 404, an empty list, an unreachable URL */
    err = (rf_error){0};
    b = open_backend("http500", NULL, 10, 0, NULL, &err);
    CHECK_MSG(!b && err.code == RF_ERR_IO && strstr(err.msg, "/http500/v1/models") &&
                  strstr(err.msg, "404"),
              "%s", err.msg);
    err = (rf_error){0};
    b = open_backend("badjson", NULL, 10, 0, NULL, &err);
    CHECK_MSG(!b && err.code == RF_ERR_FORMAT && strstr(err.msg, "data[0].id"), "%s", err.msg);
    char uri[128];
    snprintf(uri, sizeof uri, "openai:http://127.0.0.1:%d/v1", closed_port());
    cfg.uri = uri;
    cfg.model = NULL;
    err = (rf_error){0};
    CHECK(rf_backend_open(&cfg, g_loop, &b, &err) == RF_ERR_IO && !b);
    CHECK_MSG(strstr(err.msg, uri + 7) != NULL, "%s", err.msg);

    /* API key: sent as a Bearer header, never in messages; a missing variable is an error */
    setenv("RF_TEST_OPENAI_KEY", "sk-test-5ecret", 1);
    b = open_backend("fast", "m", 10, 0, "RF_TEST_OPENAI_KEY", &err);
    CHECK(b != NULL);
    if (b) {
        waiter w = {0};
        w.want = 1;
        rf_bk_request req;
        req_init(&req, &w, true);
        b->vt->start(b, &req);
        run_until(&w, 10);
        pthread_mutex_lock(&g_mu);
        CHECK_MSG(!strcmp(g_last_auth, "Bearer sk-test-5ecret"), "auth '%s'", g_last_auth);
        CHECK(!strstr(g_last_body, "5ecret"));
        pthread_mutex_unlock(&g_mu);
        rf_bk_result_free(&req.res);
        rf_backend_close(b);
    }
    err = (rf_error){0};
    b = open_backend("http500", NULL, 10, 0, "RF_TEST_OPENAI_KEY", &err); /* fails at /models */
    CHECK(!b && !strstr(err.msg, "5ecret"));
    unsetenv("RF_TEST_OPENAI_KEY");
    err = (rf_error){0};
    b = open_backend("fast", "m", 10, 0, "RF_TEST_OPENAI_KEY", &err);
    CHECK_MSG(!b && err.code == RF_ERR_ARG && strstr(err.msg, "RF_TEST_OPENAI_KEY"), "%s", err.msg);
    /* no key variable: no Authorization header */
    b = open_backend("fast", "m", 10, 0, NULL, &err);
    if (b) {
        waiter w = {0};
        w.want = 1;
        rf_bk_request req;
        req_init(&req, &w, true);
        b->vt->start(b, &req);
        run_until(&w, 10);
        pthread_mutex_lock(&g_mu);
        CHECK(g_last_auth[0] == 0);
        pthread_mutex_unlock(&g_mu);
        rf_bk_result_free(&req.res);
        rf_backend_close(b);
    }
}

/* A request that cannot be built is reported through done, later, from the loop, once. */
static void test_bad_request(void) {
    rf_error err = {0};
    rf_backend *b = open_backend("fast", "m", 10, 0, NULL, &err);
    if (!b) return;
    waiter w = {0};
    w.want = 2;
    rf_bk_request bad_tools, bad_utf8;
    req_init(&bad_tools, &w, true);
    bad_tools.tools = "{not json";
    req_init(&bad_utf8, &w, true);
    static const rf_bk_message m[] = {{"user", "bad \xff byte", NULL, NULL}};
    bad_utf8.msgs = m;
    bad_utf8.n_msgs = 1;
    b->vt->start(b, &bad_tools);
    b->vt->start(b, &bad_utf8);
    CHECK(w.done == 0); /* not from inside start */
    run_until(&w, 5);
    CHECK(w.done == 2);
    CHECK_MSG(bad_tools.res.err == RF_BK_INTERNAL && strstr(bad_tools.res.err_msg, "tools"), "%s",
              bad_tools.res.err_msg);
    CHECK_MSG(bad_utf8.res.err == RF_BK_INTERNAL && strstr(bad_utf8.res.err_msg, "UTF-8"), "%s",
              bad_utf8.res.err_msg);
    rf_bk_result_free(&bad_tools.res);
    rf_bk_result_free(&bad_utf8.res);

    /* cancelled before its failure is reported: one done (cancelled... or its cause) */
    w = (waiter){0};
    w.want = 1;
    req_init(&bad_tools, &w, true);
    bad_tools.tools = "{not json";
    b->vt->start(b, &bad_tools);
    b->vt->cancel(b, &bad_tools);
    CHECK(w.done == 1);
    w.flag = 0;
    w.want = 2;
    run_until(&w, 0.2); /* the pending post runs, reports nothing */
    CHECK(w.done == 1);
    rf_bk_result_free(&bad_tools.res);
    /* and one left pending at close */
    w = (waiter){0};
    w.want = 1;
    req_init(&bad_tools, &w, true);
    bad_tools.tools = "[1";
    b->vt->start(b, &bad_tools);
    rf_backend_close(b);
    CHECK(w.done == 1);
    w.flag = 0;
    w.want = 2;
    run_until(&w, 0.2); /* the orphaned state is freed here */
    CHECK(w.done == 1);
    rf_bk_result_free(&bad_tools.res);
}

typedef struct cancel_ctx {
    rf_backend *b;
    rf_bk_request *req;
} cancel_ctx;

static void cancel_now(void *user) {
    cancel_ctx *c = user;
    c->b->vt->cancel(c->b, c->req);
}

static void test_cancel_close(void) {
    rf_error err = {0};
    rf_backend *b = open_backend("stall", "m", 10, 0, NULL, &err);
    if (!b) return;
    waiter w = {0};
    w.want = 1;
    rf_bk_request req;
    req_init(&req, &w, true);
    b->vt->start(b, &req);
    cancel_ctx cc = {b, &req};
    rf_loop_at(g_loop, rf_now_ns() + 100000000, cancel_now, &cc, &err);
    int64_t t0 = rf_now_ns();
    run_until(&w, 5);
    CHECK(w.done == 1 && req.res.err == RF_BK_CANCELLED);
    /* the cancel at 100 ms ends it, not the reply: well before 1 s, plus how late a sleep
     * wakes up on this machine now */
    CHECK((double)(rf_now_ns() - t0) / 1e6 < 1000 + check_sleep_lateness_ms(20));
    CHECK(req.res.n_ev == 1); /* what arrived before the cancel is kept */
    b->vt->cancel(b, &req);   /* a second cancel: no second done */
    CHECK(w.done == 1);
    rf_bk_result_free(&req.res);

    /* close with 4 requests in flight: each gets one done, "cancelled" */
    w = (waiter){0};
    w.want = 4;
    rf_bk_request reqs[4];
    for (int i = 0; i < 4; i++) {
        req_init(&reqs[i], &w, true);
        b->vt->start(b, &reqs[i]);
    }
    w.flag = 0;
    waiter dummy = {0};
    dummy.want = 1;
    rf_error e2;
    rf_loop_run(g_loop, &dummy.flag, rf_now_ns() + 150000000, &e2); /* let them start */
    rf_backend_close(b);
    CHECK(w.done == 4);
    for (int i = 0; i < 4; i++) {
        CHECK(reqs[i].res.err == RF_BK_CANCELLED);
        rf_bk_result_free(&reqs[i].res);
    }
}

/* N concurrent streams on one loop, restarted as they finish (closed loop) until total. */
typedef struct many {
    rf_backend *b;
    rf_bk_request *reqs;
    int conc, total, started, done, ok, events;
    volatile int flag;
    int64_t bytes;
} many;

static void many_done(void *user, rf_bk_request *req);

static void many_start(many *m, rf_bk_request *req) {
    rf_bk_done_fn done = many_done;
    req_init(req, NULL, true);
    req->done = done;
    req->user = m;
    req->max_tokens = 128;
    m->started++;
    m->b->vt->start(m->b, req);
}

static void many_done(void *user, rf_bk_request *req) {
    many *m = user;
    m->done++;
    if (req->res.err == RF_BK_OK)
        m->ok++;
    else if (m->ok + 3 > m->done)
        fprintf(stderr, "request failed: %s %s\n", rf_bk_error_name(req->res.err),
                req->res.err_msg);
    m->events += req->res.n_ev;
    m->bytes += (int64_t)req->res.text.len;
    rf_bk_result_free(&req->res);
    if (m->started < m->total) many_start(m, req);
    if (m->done == m->total) m->flag = 1;
}

static double thread_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void run_many(const char *scen, int conc, int total, bool report) {
    rf_error err = {0};
    many m = {0};
    m.b = open_backend(scen, "m", 60, 30, NULL, &err);
    CHECK_MSG(m.b, "%s", err.msg);
    if (!m.b) return;
    m.conc = conc;
    m.total = total;
    m.reqs = calloc((size_t)conc, sizeof *m.reqs);
    double c0 = thread_cpu_s();
    int64_t t0 = rf_now_ns();
    for (int i = 0; i < conc && m.started < total; i++) many_start(&m, &m.reqs[i]);
    rf_status st = rf_loop_run(g_loop, &m.flag, rf_now_ns() + (int64_t)120e9, &err);
    double wall = (double)(rf_now_ns() - t0) / 1e9, cpu = thread_cpu_s() - c0;
    CHECK(st == RF_OK);
    CHECK_MSG(m.done == total && m.ok == total, "%s: %d/%d done, %d ok", scen, m.done, total, m.ok);
    if (report)
        fprintf(stderr,
                "openai client, %s: %d requests, %d concurrent, %d events: loop thread %.3f s "
                "CPU (user+sys) in %.2f s wall = %.1f us/request, %.2f us/event\n",
                scen, total, conc, m.events, cpu, wall, cpu / total * 1e6,
                m.events ? cpu / m.events * 1e6 : 0.0);
    rf_backend_close(m.b);
    free(m.reqs);
}

/* ------------------------------------------------------------------ against the fake server */

/* The bench's fake OpenAI server (src/fake/fake_server.c) with a server-wide schedule and fault
 * (our requests carry no "fake" field): 30 ms to the first token, 10 ms gaps, 8 tokens. */
static rf_fake *fake_start(rf_fake_fault fault, int32_t tokens, const char *model) {
    rf_fake_params p = rf_fake_default_params();
    p.ttft_ms = 30;
    p.gap_ms = 10;
    p.tokens = tokens;
    p.fault = fault;
    p.fault_rate = fault ? 1 : 0;
    p.stall_ms = 5000;
    p.model = model;
    rf_fake *f = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_fake_start(&p, &f, &err) == RF_OK, "fake: %s", err.msg);
    return f;
}

static rf_backend *fake_backend(rf_fake *f, const char *model, double stall_s) {
    char uri[128];
    snprintf(uri, sizeof uri, "openai:http://127.0.0.1:%d/v1", rf_fake_port(f));
    rf_backend_cfg cfg = {0};
    cfg.uri = uri;
    cfg.model = model;
    cfg.timeout_s = 20;
    cfg.stall_s = stall_s;
    rf_backend *b = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_backend_open(&cfg, g_loop, &b, &err) == RF_OK, "%s", err.msg);
    return b;
}

static void fake_one(rf_fake_fault fault, bool stream, rf_bk_error want) {
    rf_fake *f = fake_start(fault, 8, NULL);
    if (!f) return;
    rf_backend *b = fake_backend(f, "m", 0.3);
    if (b) {
        waiter w = {0};
        w.want = 1;
        rf_bk_request req;
        req_init(&req, &w, stream);
        b->vt->start(b, &req);
        run_until(&w, 10);
        CHECK_MSG(w.done == 1 && req.res.err == want, "fake fault %s (%s): got %s '%s'",
                  rf_fake_fault_name(fault), stream ? "stream" : "body",
                  rf_bk_error_name(req.res.err), req.res.err_msg);
        if (fault == RF_FAKE_FAULT_WRONG_TOOL_CALL)
            CHECK(req.res.n_calls == 1 && req.res.calls[0].name[0] && req.res.calls[0].arguments);
        rf_bk_result_free(&req.res);
        rf_backend_close(b);
    }
    rf_fake_stop(f);
}

static void test_fake_server(void) {
    rf_fake *f = fake_start(RF_FAKE_FAULT_NONE, 8, "fake-7b");
    if (!f) return;
    rf_backend *b = fake_backend(f, NULL, 0); /* the model name comes from /v1/models */
    if (b) {
        CHECK(!strcmp(b->vt->model(b), "fake-7b"));
        for (int stream = 1; stream >= 0; stream--) {
            waiter w = {0};
            w.want = 1;
            rf_bk_request req;
            req_init(&req, &w, stream);
            b->vt->start(b, &req);
            run_until(&w, 10);
            const rf_bk_result *r = &req.res;
            CHECK_MSG(r->err == RF_BK_OK, "%s", r->err_msg);
            CHECK_MSG(!strcmp((const char *)r->text.data, "tok tok tok tok tok tok tok tok "),
                      "text '%s'", (const char *)r->text.data);
            CHECK(r->completion_tokens == 8 && r->prompt_tokens > 0);
            CHECK(times_ordered(r));
            double ttft_ms = (double)(r->t_first_content - r->t_sent) / 1e6;
            if (stream) {
                CHECK_MSG(r->n_ev == 8, "%d events", r->n_ev);
                CHECK_MSG(ttft_ms >= 29 && ttft_ms < 500, "ttft %.1f ms", ttft_ms);
                /* single gaps jitter with the scheduler; the schedule is absolute, so the span
                 * of the 8 events is 70 ms, give or take a late read on a loaded machine */
                double span = r->n_ev == 8 ? (double)(r->ev_t[7] - r->ev_t[0]) / 1e6 : 0;
                CHECK_MSG(span > 40 && span < 300, "span of 8 events %.1f ms", span);
            } else {
                CHECK(r->n_ev == 1 && ttft_ms >= 29 + 7 * 10 - 1);
            }
            rf_bk_result_free(&req.res);
        }
        rf_backend_close(b);
    }
    rf_fake_stop(f);

    fake_one(RF_FAKE_FAULT_500, true, RF_BK_HTTP_5XX);
    fake_one(RF_FAKE_FAULT_429, true, RF_BK_HTTP_4XX);
    fake_one(RF_FAKE_FAULT_REFUSE, true, RF_BK_REFUSED);
    fake_one(RF_FAKE_FAULT_STALL, true, RF_BK_STALL);
    fake_one(RF_FAKE_FAULT_TRUNCATE, true, RF_BK_TRUNCATED);
    fake_one(RF_FAKE_FAULT_TRUNCATE, false, RF_BK_TRUNCATED);
    fake_one(RF_FAKE_FAULT_INVALID_JSON, true, RF_BK_INVALID);
    fake_one(RF_FAKE_FAULT_INVALID_JSON, false, RF_BK_INVALID);
    fake_one(RF_FAKE_FAULT_ERROR_EVENT, true, RF_BK_SERVER_ERROR);
    fake_one(RF_FAKE_FAULT_ERROR_EVENT, false, RF_BK_SERVER_ERROR);
    fake_one(RF_FAKE_FAULT_WRONG_TOOL_CALL, true, RF_BK_OK);
}

/* conc streams of `tokens` tokens against the fake server, total requests, closed loop. */
static void fake_many(int conc, int total, int tokens, double gap_ms, bool report) {
    rf_fake_params p = rf_fake_default_params();
    p.ttft_ms = 20;
    p.gap_ms = gap_ms;
    p.tokens = tokens;
    rf_fake *f = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_fake_start(&p, &f, &err) == RF_OK, "%s", err.msg);
    if (!f) return;
    many m = {0};
    m.b = fake_backend(f, "m", 30);
    if (m.b) {
        m.conc = conc;
        m.total = total;
        m.reqs = calloc((size_t)conc, sizeof *m.reqs);
        double c0 = thread_cpu_s();
        int64_t t0 = rf_now_ns();
        for (int i = 0; i < conc && m.started < total; i++) many_start(&m, &m.reqs[i]);
        rf_loop_run(g_loop, &m.flag, rf_now_ns() + (int64_t)300e9, &err);
        double wall = (double)(rf_now_ns() - t0) / 1e9, cpu = thread_cpu_s() - c0;
        CHECK_MSG(m.done == total && m.ok == total, "fake: %d/%d done, %d ok", m.done, total, m.ok);
        CHECK(m.events == total * tokens);
        if (report)
            fprintf(stderr,
                    "openai client vs fake server: %d requests, %d concurrent, %d tokens at "
                    "%.0f ms gaps, %d events: loop thread %.3f s CPU in %.2f s wall = %.1f "
                    "us/request, %.2f us/event\n",
                    total, conc, tokens, gap_ms, m.events, cpu, wall, cpu / total * 1e6,
                    m.events ? cpu / m.events * 1e6 : 0.0);
        rf_backend_close(m.b);
        free(m.reqs);
    }
    rf_fake_stop(f);
}

int main(void) {
    int port = 0;
    struct MHD_Daemon *d = server_start(&port);
    if (!d) {
        fprintf(stderr, "test_openai: cannot start the test HTTP server\n");
        return 1;
    }
    g_port = port;
    rf_error err = {0};
    if (rf_loop_new(&g_loop, &err)) {
        fprintf(stderr, "loop: %s\n", err.msg);
        return 1;
    }
    g_bench_tokens = 64;

    const char *bench = getenv("ROOFLINE_OPENAI_BENCH");
    if (bench && *bench) { /* measurement only: no unit tests */
        int n = 0, conc = 256, tokens = 128, pace = 0;
        sscanf(bench, "%d,%d,%d,%d", &n, &conc, &tokens, &pace);
        g_bench_tokens = tokens;
        g_bench_pace_ms = pace;
        const char *fk = getenv("ROOFLINE_OPENAI_BENCH_FAKE");
        if (n > 0 && fk && *fk && *fk != '0')
            fake_many(conc, n, tokens, pace, true);
        else if (n > 0)
            run_many("bench", conc, n, true);
    } else {
        test_open();
        test_normal("normal");
        test_normal("tiny"); /* the same stream in 5-byte writes */
        test_crlf();
        test_tools();
        test_nonstream();
        test_request_body();
        test_errors();
        test_raw_replies();
        test_bad_request();
        test_cancel_close();
        run_many("fast", 64, 64, false);  /* 64 concurrent, all complete */
        run_many("bench", 64, 256, true); /* closed loop, 64 tokens each */
        test_fake_server();
        fake_many(64, 64, 16, 10, true); /* 64 concurrent streams from the fake server */
    }

    atomic_store(&g_stopping, 1);
    MHD_stop_daemon(d);
    rf_loop_free(g_loop);
    return check_summary("test_openai");
}
