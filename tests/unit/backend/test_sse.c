/* test_sse.c: the incremental SSE framer: events split across chunks and coalesced in one,
 * \n / \r\n / \r line endings (a \r\n split between chunks), comments, "data:" with and without
 * a space, multi-line data, ignored fields, the size bound, a partial event at end of stream, a
 * handler that stops the parser, and a recorded OpenAI stream fed byte by byte and in random
 * splits, always giving the same events as one whole feed. */
#include <string.h>

#include "backend/sse.h"
#include "check.h"

/* Collects events as "type|data" records separated by \x1e. */
typedef struct coll {
    char out[65536];
    size_t len;
    int n;
    int stop_after; /* stop the parser after this many events (0: never) */
} coll;

static int on_event(void *user, const char *type, const char *data, size_t len) {
    coll *c = user;
    size_t tl = strlen(type);
    if (data[len] != 0) return 1; /* must be NUL-terminated */
    if (c->len + tl + len + 2 < sizeof c->out) {
        memcpy(c->out + c->len, type, tl);
        c->len += tl;
        c->out[c->len++] = '|';
        memcpy(c->out + c->len, data, len);
        c->len += len;
        c->out[c->len++] = '\x1e';
        c->out[c->len] = 0;
    }
    c->n++;
    return c->stop_after && c->n >= c->stop_after;
}

/* Feeds text whole; returns the status of finish (or of the first failing feed). */
static rf_sse_status run_whole(const char *text, size_t max, coll *c) {
    memset(c, 0, sizeof *c);
    rf_sse s;
    rf_sse_init(&s, max, on_event, c);
    rf_sse_status st = rf_sse_feed(&s, text, strlen(text));
    if (!st) st = rf_sse_finish(&s);
    rf_sse_free(&s);
    return st;
}

/* Feeds text cut at the given split points (sorted offsets). */
static rf_sse_status run_split(const char *text, const size_t *cuts, int n_cuts, coll *c) {
    memset(c, 0, sizeof *c);
    rf_sse s;
    rf_sse_init(&s, 0, on_event, c);
    size_t n = strlen(text), at = 0;
    rf_sse_status st = RF_SSE_OK;
    for (int i = 0; i <= n_cuts && !st; i++) {
        size_t to = i < n_cuts ? cuts[i] : n;
        st = rf_sse_feed(&s, text + at, to - at);
        at = to;
    }
    if (!st) st = rf_sse_finish(&s);
    rf_sse_free(&s);
    return st;
}

static rf_sse_status run_bytewise(const char *text, coll *c) {
    memset(c, 0, sizeof *c);
    rf_sse s;
    rf_sse_init(&s, 0, on_event, c);
    size_t n = strlen(text);
    rf_sse_status st = RF_SSE_OK;
    for (size_t i = 0; i < n && !st; i++) st = rf_sse_feed(&s, text + i, 1);
    if (!st) st = rf_sse_finish(&s);
    rf_sse_free(&s);
    return st;
}

/* Expects text (fed whole, byte by byte and split at every single point) to give want. */
static void expect(const char *text, const char *want, rf_sse_status want_st, int line) {
    coll c;
    rf_sse_status st = run_whole(text, 0, &c);
    CHECK_MSG(st == want_st && !strcmp(c.out, want), "line %d whole: st %d events '%s'", line,
              (int)st, c.out);
    st = run_bytewise(text, &c);
    CHECK_MSG(st == want_st && !strcmp(c.out, want), "line %d bytewise: st %d events '%s'", line,
              (int)st, c.out);
    size_t n = strlen(text);
    for (size_t cut = 0; cut <= n; cut++) {
        st = run_split(text, &cut, 1, &c);
        if (st != want_st || strcmp(c.out, want)) {
            CHECK_MSG(0, "line %d split at %zu: st %d events '%s'", line, cut, (int)st, c.out);
            break;
        }
    }
}
#define EXPECT(text, want, st) expect(text, want, st, __LINE__)

/* A recorded-style OpenAI stream: role prelude, content, a keep-alive, tool-call deltas, the
 * finish chunk, the usage chunk with llama-server timings, and [DONE]; \r\n endings in part. */
static const char k_stream[] =
    ": connected\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
    "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":"
    "\"Hel\"},\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo, "
    "w\\u00f6rld\"},\"finish_reason\":null}]}\r\n\r\n"
    ": ping\r\n"
    "\r\n"
    "data: "
    "{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
    "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"count_ids\",\"arguments\":"
    "\"\"}}]},\"finish_reason\":null}]}\n\n"
    "data:{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
    "\"function\":{\"arguments\":\"{\\\"min\\\": 10}\"}}]},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
    "\"tool_calls\"}]}\n\n"
    "id: 7\nretry: 1000\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
    "\"completion_tokens\":9,\"total_tokens\":21},\"timings\":{\"prompt_n\":12,\"prompt_ms\":"
    "30.5,\"predicted_n\":9,\"predicted_ms\":80.25}}\n\n"
    "data: [DONE]\n\n";

static void test_recorded_stream(void) {
    coll whole, c;
    CHECK(run_whole(k_stream, 0, &whole) == RF_SSE_OK);
    CHECK(whole.n == 7);
    CHECK(strstr(whole.out, "|data: ") == NULL); /* "data: " prefixes are stripped */
    CHECK(strstr(whole.out, "|[DONE]\x1e") != NULL);
    CHECK(strstr(whole.out, "|{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{"
                            "\"tool_calls\":[{\"index\":0,\"function\"") != NULL);
    CHECK(run_bytewise(k_stream, &c) == RF_SSE_OK && c.n == 7 && !strcmp(c.out, whole.out));
    /* random splits: 2000 runs of 1-40 cut points */
    uint64_t rng = 42;
    size_t n = strlen(k_stream);
    int bad = 0;
    for (int run = 0; run < 2000; run++) {
        size_t cuts[40];
        int k = 1 + (int)(rng_next(&rng) % 40);
        for (int i = 0; i < k; i++) cuts[i] = (size_t)(rng_next(&rng) % (n + 1));
        for (int i = 1; i < k; i++) /* insertion sort */
            for (int j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
                size_t t = cuts[j];
                cuts[j] = cuts[j - 1];
                cuts[j - 1] = t;
            }
        rf_sse_status st = run_split(k_stream, cuts, k, &c);
        if (st != RF_SSE_OK || c.n != 7 || strcmp(c.out, whole.out)) bad++;
    }
    CHECK_MSG(bad == 0, "%d of 2000 random splits differ", bad);
}

static void test_bound(void) {
    /* an event whose data passes the limit is an error, and the buffers stay bounded */
    coll c;
    char big[300];
    memset(big, 'x', sizeof big);
    memcpy(big, "data: ", 6);
    big[sizeof big - 1] = 0;
    rf_sse s;
    memset(&c, 0, sizeof c);
    rf_sse_init(&s, 256, on_event, &c);
    CHECK(rf_sse_feed(&s, "data: ok\n\n", 10) == RF_SSE_OK && c.n == 1);
    CHECK(rf_sse_feed(&s, big, strlen(big)) == RF_SSE_TOO_BIG);
    CHECK(s.line.cap <= 512 && s.data.cap <= 512);
    CHECK(rf_sse_feed(&s, "\n\n", 2) == RF_SSE_TOO_BIG); /* sticky */
    CHECK(rf_sse_finish(&s) == RF_SSE_TOO_BIG);
    CHECK(c.n == 1);
    rf_sse_free(&s);

    /* the bound counts the whole event: many small data lines add up */
    memset(&c, 0, sizeof c);
    rf_sse_init(&s, 256, on_event, &c);
    rf_sse_status st = RF_SSE_OK;
    for (int i = 0; i < 100 && !st; i++) st = rf_sse_feed(&s, "data: 0123456789\n", 17);
    CHECK(st == RF_SSE_TOO_BIG && c.n == 0);
    rf_sse_free(&s);

    /* a line that never ends, fed in small pieces */
    memset(&c, 0, sizeof c);
    rf_sse_init(&s, 1000, on_event, &c);
    st = RF_SSE_OK;
    int fed = 0;
    for (; fed < 1000 && !st; fed++) st = rf_sse_feed(&s, ": no newline here ", 18);
    CHECK(st == RF_SSE_TOO_BIG && fed < 60 && s.line.cap <= 2048);
    rf_sse_free(&s);

    /* one byte past the limit fails, exactly at it passes */
    memset(&c, 0, sizeof c);
    rf_sse_init(&s, 16, on_event, &c);
    CHECK(rf_sse_feed(&s, "data:0123456789abcdefg\n\n", 24) == RF_SSE_TOO_BIG);
    rf_sse_reset(&s);
    CHECK(rf_sse_feed(&s, "data:0123456789abcdef\n\n", 23) == RF_SSE_OK && c.n == 1);
    rf_sse_free(&s);

    /* the 4 MiB default: a 5 MiB event fails, a 3 MiB one passes */
    size_t nb = (size_t)5 << 20;
    char *huge = xmalloc(nb + 16);
    memcpy(huge, "data: ", 6);
    memset(huge + 6, 'y', nb - 6);
    memcpy(huge + nb, "\n\n", 3);
    memset(&c, 0, sizeof c);
    rf_sse_init(&s, 0, on_event, &c);
    CHECK(rf_sse_feed(&s, huge, nb + 2) == RF_SSE_TOO_BIG && c.n == 0);
    rf_sse_reset(&s);
    size_t small = (size_t)3 << 20;
    memcpy(huge + small, "\n\n", 2);
    st = RF_SSE_OK;
    for (size_t at = 0; at < small + 2 && !st; at += 65536) /* in network-sized pieces */
        st = rf_sse_feed(&s, huge + at, at + 65536 <= small + 2 ? 65536 : small + 2 - at);
    CHECK(st == RF_SSE_OK && c.n == 1);
    free(huge);
    rf_sse_free(&s);
}

static void test_stop_and_reset(void) {
    coll c;
    memset(&c, 0, sizeof c);
    c.stop_after = 2;
    rf_sse s;
    rf_sse_init(&s, 0, on_event, &c);
    const char *t = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    CHECK(rf_sse_feed(&s, t, strlen(t)) == RF_SSE_STOPPED && c.n == 2);
    CHECK(rf_sse_feed(&s, "data: 4\n\n", 9) == RF_SSE_STOPPED && c.n == 2);
    /* reset: a new stream on the same parser (buffers reused) */
    rf_sse_reset(&s);
    c.stop_after = 0;
    CHECK(rf_sse_feed(&s, "data: 5\n", 8) == RF_SSE_OK);
    CHECK(rf_sse_finish(&s) == RF_SSE_PARTIAL);
    rf_sse_reset(&s);
    CHECK(rf_sse_feed(&s, "data: 6\n\n", 9) == RF_SSE_OK && rf_sse_finish(&s) == RF_SSE_OK);
    CHECK(c.n == 3 && strstr(c.out, "|6\x1e") && !strstr(c.out, "|5\x1e"));
    CHECK(s.n_events == 1);
    rf_sse_free(&s);
}

int main(void) {
    /* one event; several coalesced; blank lines alone give nothing */
    EXPECT("data: hello\n\n", "|hello\x1e", RF_SSE_OK);
    EXPECT("data: a\n\ndata: b\n\n\n\ndata: c\n\n", "|a\x1e|b\x1e|c\x1e", RF_SSE_OK);
    EXPECT("\n\n\n", "", RF_SSE_OK);
    EXPECT("", "", RF_SSE_OK);
    /* with and without the space; only one space is dropped; no colon means an empty value */
    EXPECT("data:x\n\ndata: y\n\ndata:  z\n\n", "|x\x1e|y\x1e| z\x1e", RF_SSE_OK);
    EXPECT("data\n\ndata:\n\n", "|\x1e|\x1e", RF_SSE_OK);
    EXPECT("data: a:b: c\n\n", "|a:b: c\x1e", RF_SSE_OK);
    /* multi-line data joined with \n (no trailing \n) */
    EXPECT("data: line1\ndata: line2\ndata:\ndata: line4\n\n", "|line1\nline2\n\nline4\x1e",
           RF_SSE_OK);
    /* \r\n and lone \r endings, mixed */
    EXPECT("data: a\r\n\r\ndata: b\r\rdata: c\r\n\ndata: d\n\r\n", "|a\x1e|b\x1e|c\x1e|d\x1e",
           RF_SSE_OK);
    EXPECT("data: a\r\ndata: b\r\n\r\n", "|a\nb\x1e", RF_SSE_OK);
    /* comments: skipped anywhere, a comment-only block is not an event */
    EXPECT(": ping\n\n: ping\n\ndata: x\n: mid-event comment\ndata: y\n\n:\n\n", "|x\ny\x1e",
           RF_SSE_OK);
    /* other fields ignored; event: sets the type; "data" must be the exact field name */
    EXPECT("id: 1\nretry: 10\nfoo: bar\ndata: x\n\n", "|x\x1e", RF_SSE_OK);
    EXPECT("event: error\ndata: {\"e\":1}\n\ndata: after\n\n", "error|{\"e\":1}\x1e|after\x1e",
           RF_SSE_OK);
    EXPECT("datax: 1\ndat: 2\n DATA: 3\nData: 4\n\n", "", RF_SSE_OK);
    EXPECT("event: only-type\n\ndata: x\n\n", "|x\x1e", RF_SSE_OK);
    /* partial events at end of stream */
    EXPECT("data: a\n\ndata: b", "|a\x1e", RF_SSE_PARTIAL);
    EXPECT("data: a\n\ndata: b\n", "|a\x1e", RF_SSE_PARTIAL);
    EXPECT("data: a\n\n: trailing comment", "|a\x1e", RF_SSE_PARTIAL);
    EXPECT("data: a\n\nid: 3\n", "|a\x1e", RF_SSE_OK); /* no data pending: nothing lost */
    EXPECT("data: a\r\n\r", "|a\x1e", RF_SSE_OK);      /* \r alone ends the blank line */
    /* embedded bytes are passed through untouched (UTF-8, NUL is not special before \n) */
    EXPECT("data: w\xc3\xb6rld \xe2\x82\xac\n\n", "|w\xc3\xb6rld \xe2\x82\xac\x1e", RF_SSE_OK);

    test_recorded_stream();
    test_bound();
    test_stop_and_reset();
    return check_summary("test_sse");
}
