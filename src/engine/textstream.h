/* textstream.h: turning generated token pieces into text that is safe to show.
 *
 * Bytes are held back while they might still become part of a stop string, or while they end
 * in an incomplete UTF-8 character (byte tokens split characters); everything else is released
 * as soon as it arrives. When a stop string completes, the text before it is released and the
 * rest (the stop string and anything after it) is dropped.
 *
 * A plain value with fixed buffers: no allocation, ever.
 */
#ifndef RF_ENGINE_TEXTSTREAM_H
#define RF_ENGINE_TEXTSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "roofline/engine.h"

#define RF_TS_PIECE_MAX 256 /* longest piece pushed at once */
#define RF_TS_PENDING   (RF_MAX_STOP_LEN + RF_TS_PIECE_MAX + 8)

typedef struct rf_textstream {
    char stop[RF_MAX_STOPS][RF_MAX_STOP_LEN + 1];
    size_t stop_len[RF_MAX_STOPS];
    int n_stop;
    char pend[RF_TS_PENDING];
    size_t n_pend;
} rf_textstream;

/* Starts a stream with the given stop strings (NULL-terminated list, at most RF_MAX_STOPS,
 * each 1..RF_MAX_STOP_LEN bytes; longer or empty ones must be refused by the caller). */
void rf_ts_init(rf_textstream *ts, const char *const *stops);

/* Adds n (<= RF_TS_PIECE_MAX) bytes. Writes the releasable bytes to out (room for
 * RF_TS_PENDING) and their count to *out_len. Returns true when a stop string completed: then
 * out holds the text before it and the stream is finished. */
bool rf_ts_push(rf_textstream *ts, const char *piece, size_t n, char *out, size_t *out_len);

/* Releases whatever is held back (at the end of a request that did not stop on a string). */
size_t rf_ts_flush(rf_textstream *ts, char *out);

#endif
