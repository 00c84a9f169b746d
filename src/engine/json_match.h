/* json_match.h: the byte-level matcher over a compiled schema (engine/json_schema.h): a
 * pushdown automaton run as a small set of threads, each a stack of frames, so that anyOf
 * alternatives and candidate keys sharing a prefix are followed side by side until the bytes
 * tell them apart.
 *
 * Whitespace: at most one space after '{', '[', ':' and ',' and before '}', ']' and ','
 * (none elsewhere), so the model cannot loop on whitespace. Strings must be valid UTF-8
 * without control bytes; \u escapes may not be \u0000 or surrogates. Numbers are at most
 * RF_JM_NUMBER_LEN bytes with at most two exponent digits (what a 64-bit integer and a double
 * hold: parsers such as jansson refuse more). Values nest at most RF_JM_DEPTH frames (deeper
 * openings are refused); more than RF_JM_THREADS live alternatives at once: the extra ones are
 * dropped (rf_jset.overflow counts them).
 *
 * Ownership: sets are plain values the caller allocates (they are large: allocate them, don't
 * put them on a small stack); nothing here allocates. The schema is read-only.
 */
#ifndef RF_ENGINE_JSON_MATCH_H
#define RF_ENGINE_JSON_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/json_schema.h"

#define RF_JM_DEPTH      40
#define RF_JM_THREADS    64
#define RF_JM_NUMBER_LEN 16

typedef struct rf_jframe {
    uint16_t node;
    uint8_t st, fl;
    uint16_t a, b;
    uint32_t n;
} rf_jframe;

typedef struct rf_jthread {
    int32_t depth;
    rf_jframe f[RF_JM_DEPTH];
} rf_jthread;

typedef struct rf_jset {
    int32_t n;
    uint32_t overflow;
    rf_jthread t[RF_JM_THREADS];
} rf_jset;

/* The start: one thread at the schema's root. */
void rf_jm_init(const rf_jschema *s, rf_jset *set);
void rf_jm_copy(rf_jset *dst, const rf_jset *src); /* copies only the live frames */
/* out = in after byte c (out->n == 0: no thread survives). Returns true when out is the same
 * state as in (a plain character inside free strings, a byte not of the marker in free text):
 * out is then left untouched. */
bool rf_jm_step(const rf_jschema *s, const rf_jset *in, uint8_t c, rf_jset *out);
/* Feeds len bytes to set in place (tmp: scratch). False when the set died (it is then empty). */
bool rf_jm_feed(const rf_jschema *s, rf_jset *set, const char *bytes, size_t len, rf_jset *tmp);
/* Whether the output may end here (a complete value, free text, or a sequence's end point). */
bool rf_jm_can_end(const rf_jschema *s, const rf_jset *set);
/* Whether every thread has finished its root: no byte can follow. */
bool rf_jm_done(const rf_jset *set);
/* Whether every thread sits inside a free string (no length bound, no pending UTF-8 bytes): any
 * character other than '"', '\\' and control bytes keeps the state as it is. */
bool rf_jm_in_free_string(const rf_jschema *s, const rf_jset *set);
/* Whether some thread is at raw marker text or free text (where special tokens spelling text
 * may be written); keeps only those threads in *out. */
bool rf_jm_special_ok(const rf_jschema *s, const rf_jset *set, rf_jset *out);

#endif
