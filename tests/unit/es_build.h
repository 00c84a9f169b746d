/* es_build.h: test helpers that encode AWS event-stream messages (the decoder's input), with
 * zlib's crc32. hdr_* append one header to a header block; es_message appends a whole message
 * (prelude, both CRCs) to out. */
#ifndef RF_TEST_ES_BUILD_H
#define RF_TEST_ES_BUILD_H

#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "util/buf.h"

static inline void put_be(uint8_t *p, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

/* A header of any type: value bytes as they go on the wire (for 6/7 the u16 length is added). */
static inline void hdr_raw(rf_buf *h, const char *name, uint8_t type, const void *v, size_t n) {
    uint8_t nl = (uint8_t)strlen(name);
    rf_buf_append(h, &nl, 1);
    rf_buf_append(h, name, nl);
    rf_buf_append(h, &type, 1);
    if (type == 6 || type == 7) {
        uint8_t len[2];
        put_be(len, n, 2);
        rf_buf_append(h, len, 2);
    }
    if (n) rf_buf_append(h, v, n);
}

static inline void hdr_str(rf_buf *h, const char *name, const char *value) {
    hdr_raw(h, name, 7, value, strlen(value));
}

/* Appends one message with headers h (may be empty) and payload p[0..n). */
static inline void es_message(rf_buf *out, const rf_buf *h, const void *p, size_t n) {
    size_t total = 16 + h->len + n;
    uint8_t pre[12];
    put_be(pre, total, 4);
    put_be(pre + 4, h->len, 4);
    put_be(pre + 8, crc32(0L, pre, 8), 4);
    size_t start = out->len;
    rf_buf_append(out, pre, 12);
    rf_buf_append(out, h->data, h->len);
    if (n) rf_buf_append(out, p, n);
    uint8_t c[4];
    put_be(c, crc32(0L, out->data + start, (uInt)(total - 4)), 4);
    rf_buf_append(out, c, 4);
}

/* An event of :event-type type with a JSON (or raw) payload. */
static inline void es_event(rf_buf *out, const char *type, const char *payload, size_t n) {
    rf_buf h;
    rf_buf_init(&h, 0);
    hdr_str(&h, ":event-type", type);
    hdr_str(&h, ":content-type", "application/json");
    hdr_str(&h, ":message-type", "event");
    es_message(out, &h, payload, n);
    rf_buf_free(&h);
}

/* An exception message of :exception-type type with a JSON payload. */
static inline void es_exception(rf_buf *out, const char *type, const char *payload) {
    rf_buf h;
    rf_buf_init(&h, 0);
    hdr_str(&h, ":exception-type", type);
    hdr_str(&h, ":content-type", "application/json");
    hdr_str(&h, ":message-type", "exception");
    es_message(out, &h, payload, strlen(payload));
    rf_buf_free(&h);
}

#endif
