/* sse.h: an incremental Server-Sent Events parser (the text/event-stream line framer of the
 * WHATWG HTML spec, section 9.2.6), fed arbitrary byte chunks as they arrive from the network.
 *
 * Lines end with \n, \r\n or a lone \r (a \r\n split across two chunks is one line end). A
 * line starting with ':' is a comment (keep-alive) and is skipped. "data:VALUE" and
 * "data: VALUE" (one leading space dropped) append VALUE to the event's data; several data lines
 * are joined with \n. "event:" sets the event's type; other fields ("id:", "retry:", anything
 * unknown) are ignored. A blank line ends the event: the callback then gets its type and data,
 * provided at least one data line was seen (an event of only comments or other fields is not
 * dispatched, as in the spec). No byte of a complete line is copied except the data values.
 *
 * Bounds: the bytes held for one event (its unterminated line plus its data) may not exceed the
 * limit given to rf_sse_init; past it the parser stops with RF_SSE_TOO_BIG instead of growing.
 * Errors are sticky: once rf_sse_feed returns non-OK, every later call returns the same status.
 *
 * Ownership: the parser owns its two buffers (freed by rf_sse_free, kept by rf_sse_reset for
 * reuse by the next stream). The data pointer passed to the callback is NUL-terminated and valid
 * only during the call. Not thread-safe; one parser per stream.
 */
#ifndef RF_BACKEND_SSE_H
#define RF_BACKEND_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define RF_SSE_MAX_EVENT_DEFAULT ((size_t)4 << 20) /* 4 MiB */

typedef enum rf_sse_status {
    RF_SSE_OK = 0,
    RF_SSE_TOO_BIG, /* one event (or one line) exceeded the limit */
    RF_SSE_NOMEM,   /* an allocation failed */
    RF_SSE_STOPPED, /* the callback returned nonzero */
    RF_SSE_PARTIAL, /* rf_sse_finish only: the stream ended inside an event */
} rf_sse_status;

/* One complete event: type ("" when no event: field), data (NUL-terminated) and its length.
 * Return 0 to go on, nonzero to stop the parser (rf_sse_feed then returns RF_SSE_STOPPED). */
typedef int (*rf_sse_event_fn)(void *user, const char *type, const char *data, size_t len);

typedef struct rf_sse {
    rf_buf line; /* the unterminated line carried over from the previous chunk */
    rf_buf data; /* the current event's data lines joined with \n */
    size_t max;  /* bound on line.len + data.len */
    rf_sse_event_fn fn;
    void *user;
    uint64_t n_events; /* events dispatched so far */
    rf_sse_status st;  /* sticky error */
    bool has_data;     /* the current event has at least one data line */
    bool cr;           /* the last byte fed ended a line with \r: skip a \n right after it */
    char type[32];     /* the current event's type (truncated; "" when none) */
} rf_sse;

/* max_event: 0 selects RF_SSE_MAX_EVENT_DEFAULT. */
void rf_sse_init(rf_sse *s, size_t max_event, rf_sse_event_fn fn, void *user);
void rf_sse_free(rf_sse *s);
/* Forgets any state (a new stream), keeping the buffers' memory. */
void rf_sse_reset(rf_sse *s);
/* Feeds n bytes; calls the callback for every event they complete. */
rf_sse_status rf_sse_feed(rf_sse *s, const void *bytes, size_t n);
/* End of stream: RF_SSE_PARTIAL when an unterminated line or an event without its closing blank
 * line is left (it is discarded, not dispatched); otherwise the sticky status (RF_SSE_OK). */
rf_sse_status rf_sse_finish(rf_sse *s);
const char *rf_sse_status_str(rf_sse_status st);

#endif
