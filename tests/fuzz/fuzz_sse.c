/* fuzz_sse.c: the libFuzzer target for the SSE framer (src/backend/sse.c), the bench client's
 * reader of streamed responses.
 *
 * Input: two bytes choosing a split point and the event bound, then the stream. The stream is fed
 * three ways: whole, in two chunks cut at the chosen point, and byte by byte (a \r\n split
 * across chunks, a line carried over). All three must give the same events (type and data, in
 * order) and the same final status. The one exception is the bound: a line that arrives in one
 * chunk is never held while one split across chunks is, so when a feeding hits RF_SSE_TOO_BIG
 * its events must only be a prefix of the others'. */
#include <string.h>

#include "backend/sse.h"
#include "fuzz_util.h"
#include "util/buf.h"

typedef struct events {
    rf_buf log; /* per event: type, 0x1f, data, 0x1e */
    size_t n;
} events;

static int on_event(void *user, const char *type, const char *data, size_t len) {
    events *e = user;
    REQUIRE(data[len] == 0 && strlen(type) < 32);
    rf_buf_append_str(&e->log, type);
    rf_buf_append(&e->log, "\x1f", 1);
    rf_buf_append(&e->log, data, len);
    rf_buf_append(&e->log, "\x1e", 1);
    e->n++;
    return 0;
}

/* Feeds bytes in chunks of `chunk` (0: whole, after the first `cut` bytes). */
static rf_sse_status feed(const uint8_t *b, size_t n, size_t cut, size_t chunk, size_t max,
                          events *e) {
    rf_sse s;
    rf_buf_init(&e->log, 0);
    e->n = 0;
    rf_sse_init(&s, max, on_event, e);
    rf_sse_status st = RF_SSE_OK;
    if (chunk) {
        for (size_t i = 0; i < n && st == RF_SSE_OK; i += chunk)
            st = rf_sse_feed(&s, b + i, n - i < chunk ? n - i : chunk);
    } else {
        st = rf_sse_feed(&s, b, cut);
        if (st == RF_SSE_OK) st = rf_sse_feed(&s, b + cut, n - cut);
    }
    rf_sse_status fin = rf_sse_finish(&s);
    REQUIRE(st == RF_SSE_OK || fin == st); /* errors are sticky */
    REQUIRE(s.n_events == e->n);
    rf_sse_free(&s);
    return fin;
}

static int is_prefix(const events *a, const events *b) {
    return a->log.len <= b->log.len &&
           fuzz_mem_eq(a->log.data, a->log.len, b->log.data, a->log.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t n = size - 2;
    const uint8_t *b = data + 2;
    size_t cut = n ? data[0] % (n + 1) : 0;
    size_t max = 16 + (size_t)data[1] * 8; /* 16 .. 2056 bytes: small enough to be hit */
    events whole, split, bytes;
    rf_sse_status s1 = feed(b, n, n, 0, max, &whole);
    rf_sse_status s2 = feed(b, n, cut, 0, max, &split);
    rf_sse_status s3 = feed(b, n, 0, 1, max, &bytes);
    const events *all[3] = {&whole, &split, &bytes};
    const rf_sse_status st[3] = {s1, s2, s3};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            if (st[i] == RF_SSE_TOO_BIG || st[j] == RF_SSE_TOO_BIG) {
                if (st[i] == RF_SSE_TOO_BIG)
                    REQUIRE(is_prefix(all[i], all[j]) || is_prefix(all[j], all[i]));
                continue;
            }
            REQUIRE(st[i] == st[j]);
            REQUIRE(all[i]->n == all[j]->n);
            REQUIRE(
                fuzz_mem_eq(all[i]->log.data, all[i]->log.len, all[j]->log.data, all[j]->log.len));
        }
    rf_buf_free(&whole.log);
    rf_buf_free(&split.log);
    rf_buf_free(&bytes.log);
    return 0;
}
