/* test_eventstream.c: the AWS event-stream decoder: a message botocore decodes (every header
 * type), split at every byte offset, several per read, corrupted CRCs and lengths, truncation,
 * bounds, sticky errors, and a stop from the callback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/eventstream.h"
#include "check.h"
#include "es_build.h"

/* Built in Python with zlib.crc32 and decoded by botocore.eventstream.EventStreamBuffer to
 * {'t': True, 'f': False, 'b': -1, 's': -2, 'i': -70000, 'l': -5000000000, 'y': b'\x00\x01\x02',
 *  ':event-type': 'PayloadPart', 'ts': 1700000000123, 'u': bytes(range(16))}, payload
 * b'data: {"x":1}\n\n'. */
static const char k_hex[] =
    "00000081000000624a18463f017400016601016202ff017303fffe016904fffeee90016c05fffffffed5fa0e00"
    "01790600030001020b3a6576656e742d7479706507000b5061796c6f616450617274027473080000018bcfe568"
    "7b017509000102030405060708090a0b0c0d0e0f646174613a207b2278223a317d0a0a2b4cfa4b";

static size_t unhex(const char *h, uint8_t *out) {
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

typedef struct seen {
    int n;
    int stop_at; /* stop at this message (1-based; 0: never) */
    char payloads[16][64];
    int n_headers[16];
    bool all_types_ok;
} seen;

static int on_msg(void *user, const rf_es_message *m) {
    seen *s = user;
    if (s->n < 16) {
        size_t k = m->payload_len < 63 ? m->payload_len : 63;
        memcpy(s->payloads[s->n], m->payload, k);
        s->payloads[s->n][k] = 0;
        s->n_headers[s->n] = m->n_headers;
    }
    const rf_es_header *h;
    bool ok = m->n_headers == 10;
    ok = ok && (h = rf_es_find(m, "t")) && h->type == RF_ES_TRUE && h->i == 1;
    ok = ok && (h = rf_es_find(m, "f")) && h->type == RF_ES_FALSE && h->i == 0;
    ok = ok && (h = rf_es_find(m, "b")) && h->type == RF_ES_BYTE && h->i == -1;
    ok = ok && (h = rf_es_find(m, "s")) && h->type == RF_ES_SHORT && h->i == -2;
    ok = ok && (h = rf_es_find(m, "i")) && h->type == RF_ES_INT && h->i == -70000;
    ok = ok && (h = rf_es_find(m, "l")) && h->type == RF_ES_LONG && h->i == -5000000000LL;
    ok = ok && (h = rf_es_find(m, "y")) && h->type == RF_ES_BYTES && h->len == 3 &&
         !memcmp(h->bytes, "\x00\x01\x02", 3);
    ok = ok && rf_es_header_is(m, ":event-type", "PayloadPart");
    ok = ok && (h = rf_es_find(m, "ts")) && h->type == RF_ES_TIMESTAMP && h->i == 1700000000123LL;
    ok = ok && (h = rf_es_find(m, "u")) && h->type == RF_ES_UUID && h->len == 16 &&
         h->bytes[15] == 15;
    if (ok) s->all_types_ok = true;
    s->n++;
    return s->stop_at && s->n == s->stop_at;
}

static void test_reference_every_split(void) {
    uint8_t msg[256];
    size_t n = unhex(k_hex, msg);
    CHECK(n == 129);
    for (size_t cut = 0; cut <= n; cut++) {
        seen s = {0};
        rf_es d;
        rf_es_init(&d, 0, on_msg, &s);
        CHECK(rf_es_feed(&d, msg, cut) == RF_ES_OK);
        CHECK(s.n == (cut == n));
        CHECK(rf_es_feed(&d, msg + cut, n - cut) == RF_ES_OK);
        CHECK(rf_es_finish(&d) == RF_ES_OK);
        CHECK_MSG(s.n == 1 && s.all_types_ok, "cut %zu", cut);
        CHECK(!strcmp(s.payloads[0], "data: {\"x\":1}\n\n"));
        rf_es_free(&d);
    }
    /* byte by byte */
    seen s = {0};
    rf_es d;
    rf_es_init(&d, 0, on_msg, &s);
    for (size_t i = 0; i < n; i++) CHECK(rf_es_feed(&d, msg + i, 1) == RF_ES_OK);
    CHECK(s.n == 1 && s.all_types_ok);
    rf_es_free(&d);
}

static void test_many_per_read(void) {
    rf_buf all, h;
    rf_buf_init(&all, 0);
    rf_buf_init(&h, 0);
    char p[32];
    for (int i = 0; i < 5; i++) {
        rf_buf_reset(&h);
        hdr_str(&h, ":message-type", "event");
        snprintf(p, sizeof p, "part %d", i);
        es_message(&all, &h, p, strlen(p));
    }
    rf_buf_reset(&h);
    es_message(&all, &h, NULL, 0); /* no headers, no payload: 16 bytes */
    /* whole, and in every chunk size */
    for (size_t step = 1; step <= all.len; step++) {
        seen s = {0};
        rf_es d;
        rf_es_init(&d, 0, on_msg, &s);
        for (size_t o = 0; o < all.len; o += step) {
            size_t k = all.len - o < step ? all.len - o : step;
            CHECK(rf_es_feed(&d, all.data + o, k) == RF_ES_OK);
        }
        CHECK(rf_es_finish(&d) == RF_ES_OK);
        CHECK_MSG(s.n == 6, "step %zu: %d", step, s.n);
        CHECK(!strcmp(s.payloads[3], "part 3") && s.n_headers[3] == 1);
        CHECK(s.payloads[5][0] == 0 && s.n_headers[5] == 0);
        CHECK(d.offset == all.len && d.n_messages == 6);
        rf_es_free(&d);
    }
    /* the callback stops the decoder: sticky */
    seen s = {.stop_at = 2};
    rf_es d;
    rf_es_init(&d, 0, on_msg, &s);
    CHECK(rf_es_feed(&d, all.data, all.len) == RF_ES_STOPPED);
    CHECK(s.n == 2);
    CHECK(rf_es_feed(&d, all.data, all.len) == RF_ES_STOPPED && s.n == 2);
    rf_es_reset(&d); /* a new stream */
    s.stop_at = 0;
    CHECK(rf_es_feed(&d, all.data, all.len) == RF_ES_OK && s.n == 8);
    rf_es_free(&d);
    rf_buf_free(&all);
    rf_buf_free(&h);
}

/* Feeds bytes (whole, then split in two at every offset) and expects status st with what in
 * the error message. */
static void expect_error(const uint8_t *p, size_t n, rf_es_status st, const char *what,
                         size_t max) {
    for (size_t cut = 0; cut <= n; cut += (cut < 20 ? 1 : 7)) {
        seen s = {0};
        rf_es d;
        rf_es_init(&d, max, on_msg, &s);
        rf_es_status got = rf_es_feed(&d, p, cut);
        if (got == RF_ES_OK) got = rf_es_feed(&d, p + cut, n - cut);
        CHECK_MSG(got == st, "cut %zu: %s, want %s (%s)", cut, rf_es_status_str(got),
                  rf_es_status_str(st), rf_es_error(&d));
        CHECK_MSG(strstr(rf_es_error(&d), what) != NULL, "'%s' lacks '%s'", rf_es_error(&d), what);
        CHECK(s.n == 0);
        CHECK(rf_es_feed(&d, p, n) == st); /* sticky */
        CHECK(rf_es_finish(&d) == st);
        rf_es_free(&d);
    }
}

static void test_errors(void) {
    uint8_t msg[256], bad[256];
    size_t n = unhex(k_hex, msg);

    memcpy(bad, msg, n);
    bad[9] ^= 1; /* prelude CRC */
    expect_error(bad, n, RF_ES_CRC, "prelude CRC", 0);
    memcpy(bad, msg, n);
    bad[n - 1] ^= 0x80; /* message CRC */
    expect_error(bad, n, RF_ES_CRC, "message CRC", 0);
    memcpy(bad, msg, n);
    bad[60] ^= 0x20; /* a byte inside: message CRC */
    expect_error(bad, n, RF_ES_CRC, "message CRC", 0);

    /* lengths (prelude CRCs made right, so the length check is what fails) */
    uint8_t pre[16];
    put_be(pre, 10, 4), put_be(pre + 4, 0, 4), put_be(pre + 8, crc32(0L, pre, 8), 4);
    expect_error(pre, 12, RF_ES_FORMAT, "below the minimum", 0);
    put_be(pre, 100, 4), put_be(pre + 4, 90, 4), put_be(pre + 8, crc32(0L, pre, 8), 4);
    expect_error(pre, 12, RF_ES_FORMAT, "headers length 90", 0);
    put_be(pre, 0xffffffffu, 4), put_be(pre + 4, 0, 4), put_be(pre + 8, crc32(0L, pre, 8), 4);
    expect_error(pre, 12, RF_ES_TOO_BIG, "over the limit", 0);
    put_be(pre, 200, 4), put_be(pre + 4, 0, 4), put_be(pre + 8, crc32(0L, pre, 8), 4);
    expect_error(pre, 12, RF_ES_TOO_BIG, "limit 100", 100);
    put_be(pre, 300000, 4), put_be(pre + 4, 200000, 4), put_be(pre + 8, crc32(0L, pre, 8), 4);
    expect_error(pre, 12, RF_ES_FORMAT, "headers length 200000 is over", 0);

    /* headers that cannot be */
    rf_buf out, h;
    rf_buf_init(&out, 0);
    rf_buf_init(&h, 0);
    hdr_raw(&h, "x", 10, NULL, 0); /* unknown type */
    es_message(&out, &h, "p", 1);
    expect_error(out.data, out.len, RF_ES_FORMAT, "unknown type 10", 0);
    rf_buf_reset(&out), rf_buf_reset(&h);
    uint8_t zero = 0;
    rf_buf_append(&h, &zero, 1); /* empty name */
    es_message(&out, &h, NULL, 0);
    expect_error(out.data, out.len, RF_ES_FORMAT, "empty name", 0);
    rf_buf_reset(&out), rf_buf_reset(&h);
    hdr_raw(&h, "s", 7, "abc", 3);
    h.data[3] = 0, h.data[4] = 200; /* string length 200, past the headers */
    es_message(&out, &h, NULL, 0);
    expect_error(out.data, out.len, RF_ES_FORMAT, "runs past the headers", 0);
    rf_buf_reset(&out), rf_buf_reset(&h);
    hdr_raw(&h, "l", 5, "\x01\x02", 2); /* a long with 2 bytes */
    es_message(&out, &h, NULL, 0);
    expect_error(out.data, out.len, RF_ES_FORMAT, "runs past the headers", 0);
    rf_buf_reset(&out), rf_buf_reset(&h);
    for (int i = 0; i < RF_ES_MAX_HEADERS + 1; i++) hdr_raw(&h, "t", 0, NULL, 0);
    es_message(&out, &h, NULL, 0);
    expect_error(out.data, out.len, RF_ES_FORMAT, "more than 64 headers", 0);

    /* truncation: every proper prefix is partial at the end */
    for (size_t cut = 1; cut < n; cut++) {
        seen s = {0};
        rf_es d;
        rf_es_init(&d, 0, on_msg, &s);
        CHECK(rf_es_feed(&d, msg, cut) == RF_ES_OK);
        CHECK(rf_es_finish(&d) == RF_ES_PARTIAL);
        CHECK(strstr(rf_es_error(&d), "ended inside message 1") != NULL);
        CHECK(s.n == 0);
        rf_es_free(&d);
    }
    rf_buf_free(&out);
    rf_buf_free(&h);
}

int main(void) {
    test_reference_every_split();
    test_many_per_read();
    test_errors();
    printf("test_eventstream: %d checks, %d failures\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
