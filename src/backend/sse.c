/* sse.c: the incremental text/event-stream framer. */
#include "backend/sse.h"

#include <string.h>

void rf_sse_init(rf_sse *s, size_t max_event, rf_sse_event_fn fn, void *user) {
    memset(s, 0, sizeof *s);
    s->max = max_event ? max_event : RF_SSE_MAX_EVENT_DEFAULT;
    rf_buf_init(&s->line, 0);
    rf_buf_init(&s->data, 0);
    s->fn = fn;
    s->user = user;
}

void rf_sse_free(rf_sse *s) {
    rf_buf_free(&s->line);
    rf_buf_free(&s->data);
}

void rf_sse_reset(rf_sse *s) {
    rf_buf_reset(&s->line);
    rf_buf_reset(&s->data);
    s->n_events = 0;
    s->st = RF_SSE_OK;
    s->has_data = false;
    s->cr = false;
    s->type[0] = 0;
}

const char *rf_sse_status_str(rf_sse_status st) {
    switch (st) {
    case RF_SSE_OK:
        return "ok";
    case RF_SSE_TOO_BIG:
        return "event over the size limit";
    case RF_SSE_NOMEM:
        return "out of memory";
    case RF_SSE_STOPPED:
        return "stopped by the event handler";
    case RF_SSE_PARTIAL:
        return "stream ended inside an event";
    }
    return "unknown";
}

static rf_sse_status set_err(rf_sse *s, rf_sse_status st) {
    s->st = st;
    return st;
}

/* Appends n bytes to b, counting against the parser's bound. */
static rf_sse_status append(rf_sse *s, rf_buf *b, const char *p, size_t n) {
    if (n > s->max || s->line.len + s->data.len > s->max - n) return set_err(s, RF_SSE_TOO_BIG);
    if (rf_buf_append(b, p, n)) return set_err(s, RF_SSE_NOMEM);
    return RF_SSE_OK;
}

static rf_sse_status dispatch(rf_sse *s) {
    if (!s->has_data) { /* comments or other fields only: nothing to report */
        s->type[0] = 0;
        return RF_SSE_OK;
    }
    if (rf_buf_terminate(&s->data)) return set_err(s, RF_SSE_NOMEM);
    s->n_events++;
    int stop = s->fn ? s->fn(s->user, s->type, (const char *)s->data.data, s->data.len) : 0;
    rf_buf_reset(&s->data);
    s->has_data = false;
    s->type[0] = 0;
    return stop ? set_err(s, RF_SSE_STOPPED) : RF_SSE_OK;
}

/* One complete line, without its terminator. */
static rf_sse_status line(rf_sse *s, const char *p, size_t n) {
    if (n == 0) return dispatch(s);
    if (p[0] == ':') return RF_SSE_OK; /* comment */
    const char *colon = memchr(p, ':', n);
    size_t flen = colon ? (size_t)(colon - p) : n;
    const char *v = colon ? colon + 1 : p + n;
    size_t vlen = (size_t)(p + n - v);
    if (vlen && *v == ' ') v++, vlen--;
    if (flen == 4 && !memcmp(p, "data", 4)) {
        if (s->has_data) {
            rf_sse_status st = append(s, &s->data, "\n", 1);
            if (st) return st;
        }
        s->has_data = true;
        return append(s, &s->data, v, vlen);
    }
    if (flen == 5 && !memcmp(p, "event", 5)) {
        size_t k = vlen < sizeof s->type - 1 ? vlen : sizeof s->type - 1;
        memcpy(s->type, v, k);
        s->type[k] = 0;
    }
    return RF_SSE_OK; /* id, retry and unknown fields are ignored */
}

rf_sse_status rf_sse_feed(rf_sse *s, const void *bytes, size_t n) {
    if (s->st) return s->st;
    const char *p = bytes, *end = p + n;
    if (s->cr && p < end) {
        if (*p == '\n') p++; /* the \n of a \r\n split across chunks */
        s->cr = false;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *cr = memchr(p, '\r', (size_t)((nl ? nl : end) - p));
        const char *eol = cr ? cr : nl;
        if (!eol) { /* an unterminated line: keep it for the next chunk */
            rf_sse_status st = append(s, &s->line, p, (size_t)(end - p));
            return st;
        }
        rf_sse_status st;
        if (s->line.len) { /* completes the line begun in an earlier chunk */
            st = append(s, &s->line, p, (size_t)(eol - p));
            if (st) return st;
            size_t len = s->line.len;
            rf_buf_reset(&s->line); /* the bytes stay in place; no longer counted */
            st = line(s, (const char *)s->line.data, len);
        } else {
            st = line(s, p, (size_t)(eol - p));
        }
        if (st) return st;
        p = eol + 1;
        if (*eol == '\r') {
            if (p < end) {
                if (*p == '\n') p++;
            } else {
                s->cr = true;
            }
        }
    }
    return RF_SSE_OK;
}

rf_sse_status rf_sse_finish(rf_sse *s) {
    if (s->st) return s->st;
    if (s->line.len || s->has_data) return RF_SSE_PARTIAL;
    return RF_SSE_OK;
}
