/* test_serve_http.c: the HTTP layer of the server (server/http.h) over real sockets with
 * libcurl, on a tiny random-weight model (tiny_model.h), so it runs everywhere and under the
 * sanitizers without the real models: /health while loading and when ready, 404, 405, 401,
 * 413, 503 before the engine is attached, completions non-stream and stream (exact usage,
 * [DONE]), completions logprobs (non-stream and stream), context_length_exceeded,
 * tokenize/detokenize, a chat request on a model whose template is of no known family (an error
 * object, not a crash), /metrics counters against the responses' usage, timings.cache_n from the
 * prefix cache, --no-metrics, a clean stop, and the connection deadlines over raw sockets: headers
 * sent a byte at a time are cut at the read timeout (no reply), a body sent so gets a 408
 * request_timeout, a silent connection is closed at the idle timeout, and the server answers
 * normally afterwards. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "http_client.h"
#include "roofline/engine.h"
#include "server/http.h"
#include "tiny_model.h"
#include "util/buf.h"

static int g_port;

/* One request; returns the status (0 on a transport error) and the body in *out (reset). */
static long http(const char *method, const char *path, const char *body, const char *key,
                 rf_buf *out) {
    return http_client_request(g_port, method, path, body, key, out);
}

/* The value of the sample named `name` (labels included, as written) in Prometheus text; -1
 * when absent. */
static double metric(const rf_buf *b, const char *name) {
    const char *t = b->len ? (const char *)b->data : "";
    size_t n = strlen(name);
    for (const char *l = t; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') return strtod(l + n + 1, NULL);
    return -1;
}

/* The body parsed (caller decrefs), NULL when it is not JSON. */
static json_t *body_json(const rf_buf *b) {
    return json_loadb(b->len ? (const char *)b->data : "", b->len, 0, NULL);
}

/* The body is an OpenAI error object whose code is code (NULL: any). */
static bool is_error(const rf_buf *b, const char *code) {
    json_t *o = body_json(b);
    json_t *e = json_object_get(o, "error");
    bool ok = json_is_string(json_object_get(e, "message")) &&
              json_is_string(json_object_get(e, "type")) && json_object_get(e, "param") &&
              json_object_get(e, "code");
    if (ok && code) ok = !strcmp(json_string_value(json_object_get(e, "code")) ?: "", code);
    json_decref(o);
    return ok;
}

/* Starts a server on an ephemeral port (g_port); NULL after a failed check. */
static rf_srv *start(const rf_srv_params *p) {
    rf_srv *s = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_srv_start(p, &s, &err) == RF_OK, "start: %s", err.msg);
    if (s) g_port = rf_srv_port(s);
    return s;
}

/* Completions logprobs from every "data:" event of an SSE body (or of a plain body): the
 * tokens, their count and text offsets in order, and how many events carried some. */
typedef struct lp_seen {
    char text[512], tokens[512];
    int n, events, bad;
} lp_seen;

static void collect_lp(json_t *o, lp_seen *s) {
    json_t *c0 = json_array_get(json_object_get(o, "choices"), 0);
    json_t *lp = json_object_get(c0, "logprobs");
    const char *text = json_string_value(json_object_get(c0, "text"));
    if (text) strncat(s->text, text, sizeof s->text - strlen(s->text) - 1);
    if (!json_is_object(lp)) return;
    s->events++;
    json_t *toks = json_object_get(lp, "tokens"), *lps = json_object_get(lp, "token_logprobs");
    json_t *tops = json_object_get(lp, "top_logprobs"), *offs = json_object_get(lp, "text_offset");
    size_t n = json_array_size(toks);
    s->bad += json_array_size(lps) != n || json_array_size(tops) != n || json_array_size(offs) != n;
    for (size_t i = 0; i < n; i++) {
        s->bad += json_integer_value(json_array_get(offs, i)) != (json_int_t)strlen(s->tokens);
        s->bad += !(json_number_value(json_array_get(lps, i)) <= 0);
        s->bad += json_object_size(json_array_get(tops, i)) < 1 ||
                  json_object_size(json_array_get(tops, i)) > 3; /* 2 alternatives + sampled */
        const char *t = json_string_value(json_array_get(toks, i));
        if (t) strncat(s->tokens, t, sizeof s->tokens - strlen(s->tokens) - 1);
        s->n++;
    }
}

static void collect_sse(const char *t, lp_seen *s) {
    for (const char *p = t ? strstr(t, "data: {") : NULL; p; p = strstr(p + 1, "data: {")) {
        const char *end = strstr(p, "\n\n");
        json_t *o = end ? json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL) : NULL;
        collect_lp(o, s);
        json_decref(o);
    }
}

/* Completions with logprobs 2: one entry per generated token (as many as completion_tokens),
 * log-probabilities <= 0, tokens that concatenate to the text, offsets that continue across
 * stream chunks. */
static void test_logprobs(rf_buf *b) {
    const char *body = "{\"prompt\":\"ab cd\",\"max_tokens\":5,\"temperature\":0,"
                       "\"ignore_eos\":true,\"logprobs\":2,\"presence_penalty\":0.5}";
    CHECK(http("POST", "/v1/completions", body, "k", b) == 200);
    json_t *r = body_json(b);
    static lp_seen one, st;
    memset(&one, 0, sizeof one);
    collect_lp(r, &one);
    CHECK(json_integer_value(json_object_get(json_object_get(r, "usage"), "completion_tokens")) ==
          5);
    json_decref(r);
    CHECK_MSG(one.events == 1 && one.n == 5 && one.bad == 0, "events %d, tokens %d, bad %d",
              one.events, one.n, one.bad);
    CHECK_MSG(!strcmp(one.tokens, one.text), "tokens '%s', text '%s'", one.tokens, one.text);
    const char *sbody = "{\"prompt\":\"ab cd\",\"max_tokens\":5,\"temperature\":0,"
                        "\"ignore_eos\":true,\"logprobs\":2,\"presence_penalty\":0.5,"
                        "\"stream\":true}";
    CHECK(http("POST", "/v1/completions", sbody, "k", b) == 200);
    memset(&st, 0, sizeof st);
    collect_sse((const char *)b->data, &st);
    CHECK_MSG(st.n == 5 && st.events >= 1 && st.bad == 0, "stream: events %d, tokens %d, bad %d",
              st.events, st.n, st.bad);
    CHECK_MSG(!strcmp(st.tokens, one.tokens) && !strcmp(st.text, one.text),
              "stream tokens '%s' text '%s'", st.tokens, st.text);
    /* without logprobs: null */
    const char *plain = "{\"prompt\":\"ab cd\",\"max_tokens\":2,\"temperature\":0}";
    CHECK(http("POST", "/v1/completions", plain, "k", b) == 200);
    r = body_json(b);
    CHECK(json_is_null(
        json_object_get(json_array_get(json_object_get(r, "choices"), 0), "logprobs")));
    json_decref(r);
    CHECK(http("POST", "/v1/completions", "{\"prompt\":\"x\",\"logprobs\":9}", "k", b) == 400 &&
          is_error(b, "invalid_value"));
}

static void test_server(const char *model) {
    rf_srv_params p = rf_srv_default_params();
    p.port = 0;
    p.api_key = "k";
    p.body_max = 4096;
    p.model_id = "tiny";
    rf_srv *s = start(&p);
    if (!s) return;
    rf_error err = {0};
    rf_buf b;
    rf_buf_init(&b, 0);
    const char *cbody = "{\"model\":\"tiny\",\"prompt\":\"ab cd\",\"max_tokens\":4,"
                        "\"temperature\":0,\"ignore_eos\":true}";
    /* loading */
    CHECK(http("GET", "/health", NULL, NULL, &b) == 503 && strstr((char *)b.data, "loading"));
    CHECK(http("POST", "/v1/completions", cbody, "k", &b) == 503 && is_error(&b, NULL));

    rf_engine_params ep = rf_engine_default_params();
    ep.model_path = model;
    ep.n_threads = 2;
    ep.n_ctx = 96;
    ep.max_seqs = 4;
    rf_engine *e = NULL;
    CHECK(rf_engine_open(&ep, &e, &err) == RF_OK);
    if (!e) {
        rf_srv_stop(s, 0);
        rf_buf_free(&b);
        return;
    }
    rf_srv_attach(s, e);
    CHECK(http("GET", "/health", NULL, NULL, &b) == 200 && strstr((char *)b.data, "\"ok\""));
    CHECK(http("GET", "/nowhere", NULL, "k", &b) == 404 && is_error(&b, "not_found"));
    CHECK(http("GET", "/v1/completions", NULL, "k", &b) == 405 && is_error(&b, NULL));
    CHECK(http("POST", "/v1/completions", cbody, NULL, &b) == 401 &&
          is_error(&b, "invalid_api_key"));
    CHECK(http("POST", "/v1/completions", cbody, "wrong", &b) == 401);
    char big[5000];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK(http("POST", "/v1/completions", big, "k", &b) == 413 && is_error(&b, NULL));
    CHECK(http("POST", "/v1/completions", "{\"prompt\":\"x\",\"n\":2}", "k", &b) == 400 &&
          is_error(&b, "invalid_value"));
    CHECK(http("GET", "/v1/models", NULL, "k", &b) == 200 && strstr((char *)b.data, "\"tiny\""));

    /* non-stream completions: exact usage */
    CHECK(http("POST", "/tokenize", "{\"content\":\"ab cd\",\"add_special\":true}", "k", &b) ==
          200);
    json_t *tk = body_json(&b);
    size_t n_prompt = json_array_size(json_object_get(tk, "tokens"));
    CHECK(n_prompt > 0);
    json_decref(tk);
    /* round trip (the tiny vocabulary has no plain space: a word without one) */
    CHECK(http("POST", "/tokenize", "{\"content\":\"abcd\"}", "k", &b) == 200);
    tk = body_json(&b);
    char detok[512];
    char *toks = json_dumps(json_object_get(tk, "tokens"), JSON_COMPACT);
    snprintf(detok, sizeof detok, "{\"tokens\":%s}", toks ? toks : "[]");
    free(toks);
    json_decref(tk);
    CHECK(http("POST", "/detokenize", detok, "k", &b) == 200 &&
          !strcmp((char *)b.data, "{\"content\":\"abcd\"}"));
    CHECK(http("POST", "/detokenize", "{\"tokens\":[1000000]}", "k", &b) == 400 &&
          is_error(&b, "invalid_value"));
    CHECK(http("POST", "/v1/completions", cbody, "k", &b) == 200);
    json_t *r = body_json(&b);
    json_t *u = json_object_get(r, "usage");
    CHECK(json_integer_value(json_object_get(u, "completion_tokens")) == 4);
    CHECK(json_integer_value(json_object_get(u, "prompt_tokens")) == (json_int_t)n_prompt);
    CHECK(json_object_get(json_object_get(r, "timings"), "predicted_per_second") != NULL);
    CHECK(!strcmp(json_string_value(json_object_get(
                      json_array_get(json_object_get(r, "choices"), 0), "finish_reason"))
                      ?: "",
                  "length"));
    json_decref(r);

    /* stream */
    const char *sbody = "{\"prompt\":\"ab cd\",\"max_tokens\":3,\"temperature\":0,"
                        "\"ignore_eos\":true,\"stream\":true,"
                        "\"stream_options\":{\"include_usage\":true}}";
    CHECK(http("POST", "/v1/completions", sbody, "k", &b) == 200);
    const char *t = (const char *)b.data;
    CHECK(t && strstr(t, "\"finish_reason\":\"length\"") && strstr(t, "\"timings\""));
    CHECK(t && strstr(t, "\"choices\":[],") && strstr(t, "\"completion_tokens\":3"));
    size_t len = b.len;
    CHECK(len > 14 && !strcmp(t + len - 14, "data: [DONE]\n\n"));
    /* the same prompt again: all of it but its last token comes from the prefix cache */
    char cache_n[32];
    snprintf(cache_n, sizeof cache_n, "\"cache_n\":%d", (int)n_prompt - 1);
    CHECK_MSG(t && strstr(t, cache_n), "stream timings lack %s", cache_n);

    /* /metrics: the counters equal the usage the two responses reported */
    CHECK(http("GET", "/metrics", NULL, NULL, &b) == 200);
    CHECK(metric(&b, "roofline:prompt_tokens_total") == (double)(2 * n_prompt));
    CHECK(metric(&b, "roofline:generation_tokens_total") == 7.0);
    CHECK(metric(&b, "roofline:request_success_total{finished_reason=\"length\"}") == 2.0);
    CHECK(metric(&b, "roofline:request_success_total{finished_reason=\"stop\"}") == 0.0);
    CHECK(metric(&b, "roofline:num_requests_running") == 0.0 &&
          metric(&b, "roofline:num_requests_waiting") == 0.0);
    CHECK(metric(&b, "roofline:prefix_cache_queries_total") == (double)(2 * n_prompt));
    CHECK(metric(&b, "roofline:prefix_cache_hits_total") == (double)(n_prompt - 1));
    CHECK(metric(&b, "roofline:e2e_request_latency_seconds_count") == 2.0);
    CHECK(metric(&b, "roofline:inter_token_latency_seconds_count") == 5.0); /* 3 + 2 gaps */
    CHECK(metric(&b, "roofline:weight_bytes_read_total") > 0);
    /* non-stream from the cache: usage counts the whole prompt, timings split it */
    CHECK(http("POST", "/v1/completions", cbody, "k", &b) == 200);
    r = body_json(&b);
    json_t *tm = json_object_get(r, "timings");
    CHECK(json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens")) ==
          (json_int_t)n_prompt);
    CHECK(json_integer_value(json_object_get(tm, "cache_n")) == (json_int_t)n_prompt - 1);
    CHECK(json_integer_value(json_object_get(tm, "prompt_n")) == 1);
    json_decref(r);

    test_logprobs(&b);

    /* context: 96 positions */
    CHECK(http("POST", "/v1/completions", "{\"prompt\":\"ab\",\"max_tokens\":96}", "k", &b) == 400);
    CHECK(is_error(&b, "context_length_exceeded") && strstr((char *)b.data, "96"));
    /* the tiny model has no known chat template: an error object (or a reply), never a crash */
    long st =
        http("POST", "/v1/chat/completions",
             "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}", "k", &b);
    CHECK(st == 200 || (st == 400 && is_error(&b, NULL)));
    rf_srv_stop(s, 1000);
    rf_buf_free(&b);
}

/* --no-metrics: /metrics is 404 (before and after an engine would be attached alike). */
static void test_no_metrics(void) {
    rf_srv_params p = rf_srv_default_params();
    p.port = 0;
    p.metrics = false;
    rf_srv *s = start(&p);
    if (!s) return;
    rf_buf b;
    rf_buf_init(&b, 0);
    CHECK(http("GET", "/metrics", NULL, NULL, &b) == 404 && is_error(&b, "not_found"));
    rf_srv_stop(s, 0);
    rf_buf_free(&b);
}

/* A raw connection to the server (g_port) whose reads wait at most 60 s; -1 on failure. */
static int dial(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)g_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {60, 0};
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
                    connect(fd, (struct sockaddr *)&sa, sizeof sa))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Everything the server sends until it closes (or 60 s pass), appended to out. */
static void read_to_close(int fd, rf_buf *out) {
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) rf_buf_append(out, buf, (size_t)n);
    rf_buf_terminate(out);
}

/* Sends text a byte every 100 ms, a slow client. Returns true when the server answered or
 * closed before the last byte (what it sent is in out), false when all of it went out. */
static bool dribble(int fd, const char *text, rf_buf *out) {
    rf_buf_reset(out);
    bool cut = false;
    for (const char *p = text; *p && !cut; p++) {
        struct pollfd pf = {fd, POLLIN, 0};
        cut = send(fd, p, 1, MSG_NOSIGNAL) != 1 || poll(&pf, 1, 100) > 0;
    }
    if (cut) read_to_close(fd, out);
    rf_buf_terminate(out);
    return cut;
}

/* --read-timeout 1 and --idle-timeout 1 over raw sockets (no engine needed: the deadlines act
 * before any route runs). Each slow client would need 30 s or more to finish sending. */
static void test_deadlines(void) {
    rf_srv_params p = rf_srv_default_params();
    p.port = 0;
    p.read_timeout_s = 1;
    p.idle_timeout_s = 30;
    rf_srv *s = start(&p);
    if (!s) return;
    rf_buf b;
    rf_buf_init(&b, 0);
    char pad[301];
    memset(pad, 'a', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    char req[1024];
    /* headers a byte at a time: the connection is shut, no reply */
    snprintf(req, sizeof req,
             "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n"
             "Content-Length: 2\r\n\r\n{}",
             pad);
    int fd = dial();
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_MSG(dribble(fd, req, &b), "slow headers were never cut");
        CHECK_MSG(b.len == 0, "slow headers got a reply: %.80s", b.len ? (char *)b.data : "");
        close(fd);
    }
    /* the headers at once, the body a byte at a time: 408 request_timeout, then closed */
    snprintf(req, sizeof req,
             "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             strlen(pad) + 2);
    fd = dial();
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
        snprintf(req, sizeof req, "\"%s\"", pad);
        CHECK_MSG(dribble(fd, req, &b), "a slow body was never cut");
        const char *t = b.len ? (const char *)b.data : "";
        CHECK_MSG(!strncmp(t, "HTTP/1.1 408 ", 13), "slow body: '%.60s'", t);
        const char *body = strstr(t, "\r\n\r\n");
        rf_buf eb;
        rf_buf_init(&eb, 0);
        if (body) rf_buf_append_str(&eb, body + 4);
        CHECK(is_error(&eb, "request_timeout"));
        rf_buf_free(&eb);
        close(fd);
    }
    /* a prompt request is untouched by the deadline (503: no engine attached) */
    CHECK(http("GET", "/health", NULL, NULL, &b) == 503 && strstr((char *)b.data, "loading"));
    rf_srv_stop(s, 0);

    /* idle: a connection that sends nothing is closed */
    p.read_timeout_s = 0;
    p.idle_timeout_s = 1;
    s = start(&p);
    if (!s) {
        rf_buf_free(&b);
        return;
    }
    fd = dial();
    CHECK(fd >= 0);
    if (fd >= 0) {
        rf_buf_reset(&b);
        char c;
        CHECK_MSG(recv(fd, &c, 1, 0) == 0, "an idle connection was not closed");
        close(fd);
    }
    CHECK(http("GET", "/health", NULL, NULL, &b) == 503);
    rf_srv_stop(s, 0);
    rf_buf_free(&b);
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    tiny_spec spec = tiny_default();
    spec.wtype = RF_TYPE_Q8_0;
    const char *path = tiny_write_file(&spec, "serve_http");
    CHECK(path != NULL);
    static char model[256];
    snprintf(model, sizeof model, "%s", path ? path : "");
    if (path) test_server(model);
    test_no_metrics();
    test_deadlines();
    remove(model);
    curl_global_cleanup();
    return check_summary("test_serve_http");
}
