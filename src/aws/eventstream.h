/* eventstream.h: an incremental decoder of AWS's event stream framing
 * (application/vnd.amazon.eventstream: Bedrock ConverseStream, SageMaker
 * InvokeEndpointWithResponseStream), fed arbitrary byte chunks as they arrive. The SSE framer
 * (sse.h) is its sibling for text/event-stream.
 *
 * A message, all integers big-endian: total length u32, headers length u32, prelude CRC32 u32
 * (of the first 8 bytes), headers, payload, message CRC32 u32 (of everything before it). Both
 * CRCs are checked (zlib's crc32). A header: name length u8 (>= 1), name, type u8, value: 0 bool
 * true and 1 bool false (no bytes), 2 byte (1), 3 short (2), 4 int (4), 5 long (8), 6 bytes and
 * 7 string (u16 length, then the bytes), 8 timestamp (8: ms since the epoch), 9 uuid (16).
 *
 * Bounds: a message's total length must be at least 16 and at most the limit given to
 * rf_es_init (AWS's own limit is 16 MiB); the headers length at most RF_ES_MAX_HEADER_BYTES and
 * within the message; at most RF_ES_MAX_HEADERS headers. A message split across reads is held
 * (up to its total length) until complete; several in one read are each dispatched. A message
 * that lies whole in one read is decoded in place, without a copy.
 *
 * Errors are sticky: once rf_es_feed returns non-OK, every later call returns the same status,
 * and rf_es_error says what was wrong (with the message's number and byte offset).
 *
 * Ownership: the decoder owns its buffer (freed by rf_es_free, kept by rf_es_reset). The
 * message passed to the callback, its headers and payload point into the input or that buffer:
 * valid only during the call. Not thread-safe; one decoder per stream.
 */
#ifndef RF_AWS_EVENTSTREAM_H
#define RF_AWS_EVENTSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define RF_ES_MAX_MESSAGE_DEFAULT ((size_t)16 << 20)
#define RF_ES_MAX_HEADER_BYTES    ((size_t)128 << 10)
#define RF_ES_MAX_HEADERS         64
#define RF_ES_PRELUDE             12 /* total, headers length, prelude CRC */

typedef enum rf_es_type {
    RF_ES_TRUE = 0,
    RF_ES_FALSE = 1,
    RF_ES_BYTE = 2,
    RF_ES_SHORT = 3,
    RF_ES_INT = 4,
    RF_ES_LONG = 5,
    RF_ES_BYTES = 6,
    RF_ES_STRING = 7,
    RF_ES_TIMESTAMP = 8,
    RF_ES_UUID = 9,
} rf_es_type;

typedef struct rf_es_header {
    const char *name; /* not NUL-terminated */
    size_t name_len;
    rf_es_type type;
    int64_t i;            /* bool (0/1), byte, short, int, long, timestamp (ms) */
    const uint8_t *bytes; /* bytes, string (not NUL-terminated, may hold anything), uuid */
    size_t len;           /* of bytes (16 for a uuid) */
} rf_es_header;

typedef struct rf_es_message {
    const rf_es_header *headers;
    int n_headers;
    const uint8_t *payload;
    size_t payload_len;
} rf_es_message;

typedef enum rf_es_status {
    RF_ES_OK = 0,
    RF_ES_FORMAT,  /* a length or header that cannot be (named in rf_es_error) */
    RF_ES_CRC,     /* a prelude or message CRC that does not match */
    RF_ES_TOO_BIG, /* a total length over the decoder's limit */
    RF_ES_NOMEM,
    RF_ES_STOPPED, /* the callback returned nonzero */
    RF_ES_PARTIAL, /* rf_es_finish only: the stream ended inside a message */
} rf_es_status;

/* One decoded message; return 0 to go on, nonzero to stop (rf_es_feed returns STOPPED). */
typedef int (*rf_es_fn)(void *user, const rf_es_message *m);

typedef struct rf_es {
    rf_buf buf;  /* the incomplete message carried over from earlier reads */
    size_t need; /* its total length once its prelude is in (0 before) */
    size_t max;  /* bound on a message's total length */
    rf_es_fn fn;
    void *user;
    uint64_t n_messages; /* dispatched so far */
    uint64_t offset;     /* stream bytes consumed by whole messages */
    rf_es_status st;     /* sticky */
    char err[160];
    rf_es_header hdrs[RF_ES_MAX_HEADERS];
} rf_es;

/* max_message: 0 selects RF_ES_MAX_MESSAGE_DEFAULT. */
void rf_es_init(rf_es *d, size_t max_message, rf_es_fn fn, void *user);
void rf_es_free(rf_es *d);
/* A new stream, keeping the buffer's memory. */
void rf_es_reset(rf_es *d);
/* Feeds n bytes; calls fn for every message they complete. */
rf_es_status rf_es_feed(rf_es *d, const void *bytes, size_t n);
/* End of stream: RF_ES_PARTIAL when part of a message is left (discarded); else the sticky
 * status. */
rf_es_status rf_es_finish(rf_es *d);
/* What went wrong ("" when nothing). */
const char *rf_es_error(const rf_es *d);
const char *rf_es_status_str(rf_es_status st);

/* The first header named name, or NULL. */
const rf_es_header *rf_es_find(const rf_es_message *m, const char *name);
/* Whether header name is a string equal to value. */
bool rf_es_header_is(const rf_es_message *m, const char *name, const char *value);

#endif
