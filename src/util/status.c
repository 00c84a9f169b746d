/* status.c: error records. */
#include "roofline/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

rf_status rf_error_set(rf_error *err, rf_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void rf_error_prefix(rf_error *err, const char *fmt, ...) {
    if (!err) return;
    char head[RF_ERROR_MSG_MAX];
    char old[RF_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = 0;
    size_t h = strlen(head);
    if (h > sizeof err->msg - 3) h = sizeof err->msg - 3;
    memcpy(err->msg, head, h);
    memcpy(err->msg + h, ": ", 2);
    size_t room = sizeof err->msg - h - 3;
    size_t o = strlen(old);
    if (o > room) o = room;
    memcpy(err->msg + h + 2, old, o);
    err->msg[h + 2 + o] = 0;
}

const char *rf_status_str(rf_status code) {
    switch (code) {
    case RF_OK:
        return "ok";
    case RF_ERR_IO:
        return "i/o error";
    case RF_ERR_FORMAT:
        return "format error";
    case RF_ERR_UNSUPPORTED:
        return "unsupported";
    case RF_ERR_MODEL:
        return "model error";
    case RF_ERR_NOMEM:
        return "out of memory";
    case RF_ERR_ARG:
        return "invalid argument";
    case RF_ERR_CONTEXT:
        return "context overflow";
    case RF_ERR_BUSY:
        return "busy";
    case RF_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}
