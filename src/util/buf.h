/* buf.h: a growable byte buffer with a maximum size (the idea of curl's dynbuf).
 * The buffer owns its bytes; rf_buf_free releases them; rf_buf_take hands them to the caller.
 * Appends fail with RF_ERR_NOMEM (allocation) or RF_ERR_ARG (past max) and
 * leave the contents unchanged. */
#ifndef RF_UTIL_BUF_H
#define RF_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

typedef struct rf_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    size_t max; /* 0: SIZE_MAX */
} rf_buf;

void rf_buf_init(rf_buf *b, size_t max);
void rf_buf_free(rf_buf *b);
void rf_buf_reset(rf_buf *b); /* len = 0, keeps the allocation */
rf_status rf_buf_reserve(rf_buf *b, size_t extra);
rf_status rf_buf_append(rf_buf *b, const void *p, size_t n);
rf_status rf_buf_append_str(rf_buf *b, const char *s);
rf_status rf_buf_printf(rf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
rf_status rf_buf_append_u32le(rf_buf *b, uint32_t v);
rf_status rf_buf_append_u64le(rf_buf *b, uint64_t v);
rf_status rf_buf_append_zeros(rf_buf *b, size_t n);
/* Appends a NUL without counting it in len, so data can be used as a C string. */
rf_status rf_buf_terminate(rf_buf *b);
/* Returns the bytes (caller frees) and leaves b empty. */
uint8_t *rf_buf_take(rf_buf *b, size_t *len);

#endif
