/* roofline/status.h: the status codes every fallible roofline function returns, and the
 * error record that carries a human-readable message naming what was wrong.
 *
 * Ownership: rf_error is a plain value owned by the caller (usually on the stack); functions
 * that fail fill it, functions that succeed leave it untouched. Nothing here allocates.
 */
#ifndef ROOFLINE_STATUS_H
#define ROOFLINE_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rf_status {
    RF_OK = 0,
    RF_ERR_IO,          /* file missing, unreadable, short read, mmap failed */
    RF_ERR_FORMAT,      /* the bytes are not a valid file of the claimed format */
    RF_ERR_UNSUPPORTED, /* valid, but a version/type/architecture we do not implement */
    RF_ERR_MODEL,       /* a model file lacks a tensor or key, or shapes disagree */
    RF_ERR_NOMEM,       /* an allocation failed */
    RF_ERR_ARG,         /* a caller-supplied argument is out of range */
    RF_ERR_CONTEXT,     /* a prompt or request does not fit the context window */
    RF_ERR_BUSY,        /* a bounded queue is full: retry later */
    RF_ERR_INTERNAL,    /* a bug: an invariant did not hold */
} rf_status;

#define RF_ERROR_MSG_MAX 512

typedef struct rf_error {
    rf_status code;
    char msg[RF_ERROR_MSG_MAX];
} rf_error;

/* Fills *err (when err is not NULL) with code and a printf-style message; returns code, so a
 * failing function can `return rf_error_set(err, RF_ERR_IO, "...", ...)`. */
rf_status rf_error_set(rf_error *err, rf_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (used to add a file name or a field path). */
void rf_error_prefix(rf_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Static name of a status code, e.g. "format error". Never NULL. */
const char *rf_status_str(rf_status code);

#ifdef __cplusplus
}
#endif
#endif
