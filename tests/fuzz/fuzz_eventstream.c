/* fuzz_eventstream.c: the libFuzzer target for the AWS event-stream decoder (eventstream.h).
 *
 * The input is decoded twice: in one piece, and in pieces whose sizes the input's first byte
 * picks (1 to 256 bytes, so frames are split across reads and coalesced in them). Both runs must
 * agree on every message (count, headers, payload bytes) and on the final status: a decoder that
 * depends on how the network cut the bytes traps. Every header and payload byte handed to the
 * callback is read, so ASan catches a view outside the input or the decoder's buffer. A
 * rejection always has a message. Deterministic, no state between runs.
 *
 * Built two ways: with -fsanitize=fuzzer (ROOFLINE_FUZZ=ON, clang) as the fuzzer, and with
 * replay.c as a plain program that runs the corpus (CTest fuzz_eventstream_replay). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aws/eventstream.h"
#include "fuzz_util.h"

typedef struct digest {
    uint64_t n, h; /* messages, and a hash of all they held */
} digest;

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static int on_msg(void *user, const rf_es_message *m) {
    digest *d = user;
    d->n++;
    REQUIRE(m->n_headers >= 0 && m->n_headers <= RF_ES_MAX_HEADERS);
    for (int i = 0; i < m->n_headers; i++) {
        const rf_es_header *h = &m->headers[i];
        REQUIRE(h->name_len >= 1);
        d->h = mix(d->h, h->name, h->name_len);
        d->h = mix(d->h, &h->type, sizeof h->type);
        d->h = mix(d->h, &h->i, sizeof h->i);
        if (h->bytes) d->h = mix(d->h, h->bytes, h->len);
        REQUIRE(h->type != RF_ES_UUID || h->len == 16);
        REQUIRE(rf_es_find(m, "x") == NULL || rf_es_find(m, "x")->name_len == 1);
    }
    d->h = mix(d->h, m->payload, m->payload_len);
    return 0;
}

static rf_es_status run(const uint8_t *p, size_t n, size_t step, digest *out) {
    rf_es d;
    rf_es_init(&d, (size_t)1 << 20, on_msg, out);
    rf_es_status st = RF_ES_OK;
    for (size_t o = 0; o < n && st == RF_ES_OK; o += step)
        st = rf_es_feed(&d, p + o, n - o < step ? n - o : step);
    if (st == RF_ES_OK) st = rf_es_finish(&d);
    if (st != RF_ES_OK) REQUIRE(rf_es_error(&d)[0] != 0);
    if (st != RF_ES_OK && st != RF_ES_PARTIAL) REQUIRE(rf_es_feed(&d, p, n) == st); /* sticky */
    rf_es_free(&d);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    size_t step = (size_t)data[0] + 1;
    digest a = {0, 0}, b = {0, 0};
    rf_es_status sa = run(data + 1, size - 1, size, &a);
    rf_es_status sb = run(data + 1, size - 1, step, &b);
    REQUIRE(sa == sb);
    REQUIRE(a.n == b.n && a.h == b.h);
    return 0;
}
