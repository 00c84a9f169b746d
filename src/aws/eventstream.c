/* eventstream.c: the AWS event stream decoder (eventstream.h). */
#include "aws/eventstream.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be_n(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static uint32_t crc(const uint8_t *p, size_t n) {
    return (uint32_t)crc32(0L, p, (uInt)n);
}

static rf_es_status fail(rf_es *d, rf_es_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static rf_es_status fail(rf_es *d, rf_es_status st, const char *fmt, ...) {
    char what[120];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(d->err, sizeof d->err, "event stream message %llu (at byte %llu): %s",
             (unsigned long long)d->n_messages + 1, (unsigned long long)d->offset, what);
    d->st = st;
    return st;
}

void rf_es_init(rf_es *d, size_t max_message, rf_es_fn fn, void *user) {
    memset(d, 0, sizeof *d);
    d->max = max_message ? max_message : RF_ES_MAX_MESSAGE_DEFAULT;
    rf_buf_init(&d->buf, d->max);
    d->fn = fn;
    d->user = user;
}

void rf_es_free(rf_es *d) {
    rf_buf_free(&d->buf);
}

void rf_es_reset(rf_es *d) {
    rf_buf_reset(&d->buf);
    d->need = 0;
    d->n_messages = d->offset = 0;
    d->st = RF_ES_OK;
    d->err[0] = 0;
}

/* The prelude's checks (12 bytes at p): returns the total length, or 0 with the error set. */
static size_t check_prelude(rf_es *d, const uint8_t *p) {
    uint32_t total = be32(p), hlen = be32(p + 4);
    if (crc(p, 8) != be32(p + 8)) {
        fail(d, RF_ES_CRC, "prelude CRC 0x%08x does not match 0x%08x", be32(p + 8), crc(p, 8));
        return 0;
    }
    if (total < 16) {
        fail(d, RF_ES_FORMAT, "total length %u is below the minimum 16", total);
        return 0;
    }
    if (total > d->max) {
        fail(d, RF_ES_TOO_BIG, "total length %u is over the limit %zu", total, d->max);
        return 0;
    }
    if (hlen > total - 16) {
        fail(d, RF_ES_FORMAT, "headers length %u does not fit the total length %u", hlen, total);
        return 0;
    }
    if (hlen > RF_ES_MAX_HEADER_BYTES) {
        fail(d, RF_ES_FORMAT, "headers length %u is over the limit %zu", hlen,
             RF_ES_MAX_HEADER_BYTES);
        return 0;
    }
    return total;
}

static const int k_fixed[] = {
    [RF_ES_TRUE] = 0,      [RF_ES_FALSE] = 0, [RF_ES_BYTE] = 1,   [RF_ES_SHORT] = 2,
    [RF_ES_INT] = 4,       [RF_ES_LONG] = 8,  [RF_ES_BYTES] = -1, [RF_ES_STRING] = -1,
    [RF_ES_TIMESTAMP] = 8, [RF_ES_UUID] = 16};

/* Decodes the headers in p[0..n) into d->hdrs; returns their count, or -1 with the error. */
static int parse_headers(rf_es *d, const uint8_t *p, size_t n) {
    int k = 0;
    size_t o = 0;
    while (o < n) {
        if (k == RF_ES_MAX_HEADERS) {
            fail(d, RF_ES_FORMAT, "more than %d headers", RF_ES_MAX_HEADERS);
            return -1;
        }
        rf_es_header *h = &d->hdrs[k];
        size_t nl = p[o++];
        if (!nl) {
            fail(d, RF_ES_FORMAT, "header %d has an empty name", k + 1);
            return -1;
        }
        if (nl + 1 > n - o) {
            fail(d, RF_ES_FORMAT, "header %d's name runs past the headers", k + 1);
            return -1;
        }
        h->name = (const char *)p + o;
        h->name_len = nl;
        o += nl;
        uint8_t type = p[o++];
        if (type > RF_ES_UUID) {
            fail(d, RF_ES_FORMAT, "header '%.*s' has unknown type %u", (int)nl, h->name, type);
            return -1;
        }
        h->type = (rf_es_type)type;
        h->i = 0;
        h->bytes = NULL;
        h->len = 0;
        int fixed = k_fixed[type];
        size_t vlen;
        if (fixed < 0) {
            if (n - o < 2) {
                fail(d, RF_ES_FORMAT, "header '%.*s' has no value length", (int)nl, h->name);
                return -1;
            }
            vlen = (size_t)be_n(p + o, 2);
            o += 2;
        } else {
            vlen = (size_t)fixed;
        }
        if (vlen > n - o) {
            fail(d, RF_ES_FORMAT, "header '%.*s''s value runs past the headers", (int)nl, h->name);
            return -1;
        }
        const uint8_t *v = p + o;
        switch (h->type) {
        case RF_ES_TRUE:
            h->i = 1;
            break;
        case RF_ES_FALSE:
            h->i = 0;
            break;
        case RF_ES_BYTE:
            h->i = (int8_t)v[0];
            break;
        case RF_ES_SHORT:
            h->i = (int16_t)be_n(v, 2);
            break;
        case RF_ES_INT:
            h->i = (int32_t)be_n(v, 4);
            break;
        case RF_ES_LONG:
        case RF_ES_TIMESTAMP:
            h->i = (int64_t)be_n(v, 8);
            break;
        case RF_ES_BYTES:
        case RF_ES_STRING:
        case RF_ES_UUID:
            h->bytes = v;
            h->len = vlen;
            break;
        }
        o += vlen;
        k++;
    }
    return k;
}

/* One whole message of total bytes at p (its prelude already checked). */
static rf_es_status dispatch(rf_es *d, const uint8_t *p, size_t total) {
    uint32_t want = be32(p + total - 4), got = crc(p, total - 4);
    if (want != got)
        return fail(d, RF_ES_CRC, "message CRC 0x%08x does not match 0x%08x", want, got);
    size_t hlen = be32(p + 4);
    int nh = parse_headers(d, p + RF_ES_PRELUDE, hlen);
    if (nh < 0) return d->st;
    rf_es_message m = {d->hdrs, nh, p + RF_ES_PRELUDE + hlen, total - RF_ES_PRELUDE - hlen - 4};
    d->n_messages++;
    d->offset += total;
    if (d->fn && d->fn(d->user, &m)) {
        snprintf(d->err, sizeof d->err, "stopped by the caller after message %llu",
                 (unsigned long long)d->n_messages);
        d->st = RF_ES_STOPPED;
    }
    return d->st;
}

rf_es_status rf_es_feed(rf_es *d, const void *bytes, size_t n) {
    const uint8_t *p = bytes;
    while (d->st == RF_ES_OK && n) {
        if (!d->buf.len) { /* whole messages straight from the input */
            if (n < RF_ES_PRELUDE) {
                if (rf_buf_append(&d->buf, p, n)) return fail(d, RF_ES_NOMEM, "out of memory");
                return RF_ES_OK;
            }
            size_t total = check_prelude(d, p);
            if (!total) return d->st;
            if (total <= n) {
                if (dispatch(d, p, total)) return d->st;
                p += total, n -= total;
                continue;
            }
            d->need = total;
            if (rf_buf_append(&d->buf, p, n)) return fail(d, RF_ES_NOMEM, "out of memory");
            return RF_ES_OK;
        }
        size_t goal = d->need ? d->need : RF_ES_PRELUDE;
        size_t take = goal - d->buf.len < n ? goal - d->buf.len : n;
        if (rf_buf_append(&d->buf, p, take)) return fail(d, RF_ES_NOMEM, "out of memory");
        p += take, n -= take;
        if (!d->need && d->buf.len == RF_ES_PRELUDE) {
            d->need = check_prelude(d, d->buf.data);
            if (!d->need) return d->st;
        }
        if (d->need && d->buf.len == d->need) {
            if (dispatch(d, d->buf.data, d->need)) return d->st;
            rf_buf_reset(&d->buf);
            d->need = 0;
        }
    }
    return d->st;
}

rf_es_status rf_es_finish(rf_es *d) {
    if (d->st) return d->st;
    if (d->buf.len) {
        size_t have = d->buf.len;
        rf_buf_reset(&d->buf);
        d->need = 0;
        snprintf(d->err, sizeof d->err,
                 "the stream ended inside message %llu (%zu bytes of it at byte %llu)",
                 (unsigned long long)d->n_messages + 1, have, (unsigned long long)d->offset);
        return RF_ES_PARTIAL;
    }
    return RF_ES_OK;
}

const char *rf_es_error(const rf_es *d) {
    return d->err;
}

const char *rf_es_status_str(rf_es_status st) {
    switch (st) {
    case RF_ES_OK:
        return "ok";
    case RF_ES_FORMAT:
        return "malformed message";
    case RF_ES_CRC:
        return "CRC mismatch";
    case RF_ES_TOO_BIG:
        return "message too big";
    case RF_ES_NOMEM:
        return "out of memory";
    case RF_ES_STOPPED:
        return "stopped";
    case RF_ES_PARTIAL:
        return "partial message";
    }
    return "unknown";
}

const rf_es_header *rf_es_find(const rf_es_message *m, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < m->n_headers; i++)
        if (m->headers[i].name_len == n && !memcmp(m->headers[i].name, name, n))
            return &m->headers[i];
    return NULL;
}

bool rf_es_header_is(const rf_es_message *m, const char *name, const char *value) {
    const rf_es_header *h = rf_es_find(m, name);
    size_t n = strlen(value);
    return h && h->type == RF_ES_STRING && h->len == n && !memcmp(h->bytes, value, n);
}
