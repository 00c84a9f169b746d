/* buf.c: growable byte buffer. */
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rf_buf_init(rf_buf *b, size_t max) {
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max ? max : SIZE_MAX;
}

void rf_buf_free(rf_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void rf_buf_reset(rf_buf *b) {
    b->len = 0;
}

rf_status rf_buf_reserve(rf_buf *b, size_t extra) {
    if (extra > b->max - b->len || extra == SIZE_MAX - b->len) return RF_ERR_ARG;
    size_t need = b->len + extra + 1; /* room for a terminator */
    if (need <= b->cap) return RF_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) return RF_ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return RF_OK;
}

rf_status rf_buf_append(rf_buf *b, const void *p, size_t n) {
    rf_status st = rf_buf_reserve(b, n);
    if (st) return st;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return RF_OK;
}

rf_status rf_buf_append_str(rf_buf *b, const char *s) {
    return rf_buf_append(b, s, strlen(s));
}

rf_status rf_buf_printf(rf_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return RF_ERR_ARG;
    if ((size_t)n < sizeof small) return rf_buf_append(b, small, (size_t)n);
    rf_status st = rf_buf_reserve(b, (size_t)n);
    if (st) return st;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return RF_OK;
}

rf_status rf_buf_append_u32le(rf_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return rf_buf_append(b, x, 4);
}

rf_status rf_buf_append_u64le(rf_buf *b, uint64_t v) {
    rf_status st = rf_buf_append_u32le(b, (uint32_t)v);
    return st ? st : rf_buf_append_u32le(b, (uint32_t)(v >> 32));
}

rf_status rf_buf_append_zeros(rf_buf *b, size_t n) {
    rf_status st = rf_buf_reserve(b, n);
    if (st) return st;
    memset(b->data + b->len, 0, n);
    b->len += n;
    return RF_OK;
}

rf_status rf_buf_terminate(rf_buf *b) {
    rf_status st = rf_buf_reserve(b, 0);
    if (st) return st;
    b->data[b->len] = 0;
    return RF_OK;
}

uint8_t *rf_buf_take(rf_buf *b, size_t *len) {
    uint8_t *p = b->data;
    if (len) *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
