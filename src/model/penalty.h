/* penalty.h: OpenAI's presence and frequency penalties over the tokens generated so far.
 *
 * Before sampling, logit[t] -= presence * (count[t] > 0) + frequency * count[t], where count[t]
 * is how many times t was generated in this request (the prompt does not count). The counts are
 * dense (one per vocabulary entry, so adding is O(1)) with a list of the distinct tokens seen, so
 * clearing and applying cost O(distinct tokens), not O(n_vocab).
 *
 * Ownership: rf_penalty_init allocates both arrays once (8 bytes per vocabulary entry);
 * nothing else allocates. rf_penalty_free releases. One per sequence; not thread-safe.
 */
#ifndef RF_MODEL_PENALTY_H
#define RF_MODEL_PENALTY_H

#include <stdint.h>

#include "roofline/status.h"

typedef struct rf_penalty {
    int32_t n_vocab;
    int32_t *count; /* [n_vocab] appearances of each token */
    int32_t *seen;  /* [n_vocab] the distinct tokens with count > 0, in order of first use */
    int32_t n_seen;
} rf_penalty;

rf_status rf_penalty_init(rf_penalty *p, int32_t n_vocab, rf_error *err);
void rf_penalty_free(rf_penalty *p);
/* Forgets every count (a new request). */
void rf_penalty_clear(rf_penalty *p);
/* Counts one generated token; ids outside [0, n_vocab) are ignored. */
void rf_penalty_add(rf_penalty *p, int32_t token);
/* Subtracts the penalties from logits[n_vocab] in place (only the tokens seen change). */
void rf_penalty_apply(const rf_penalty *p, float presence, float frequency, float *logits);

#endif
