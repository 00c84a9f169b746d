/* penalty.c: presence and frequency penalties (see penalty.h). */
#include "model/penalty.h"

#include <stdlib.h>

rf_status rf_penalty_init(rf_penalty *p, int32_t n_vocab, rf_error *err) {
    p->n_vocab = n_vocab;
    p->n_seen = 0;
    p->count = calloc((size_t)n_vocab, sizeof *p->count);
    p->seen = malloc((size_t)n_vocab * sizeof *p->seen);
    if (!p->count || !p->seen) {
        rf_penalty_free(p);
        return rf_error_set(err, RF_ERR_NOMEM, "penalties: out of memory");
    }
    return RF_OK;
}

void rf_penalty_free(rf_penalty *p) {
    free(p->count);
    free(p->seen);
    p->count = p->seen = NULL;
    p->n_seen = 0;
}

void rf_penalty_clear(rf_penalty *p) {
    for (int32_t i = 0; i < p->n_seen; i++) p->count[p->seen[i]] = 0;
    p->n_seen = 0;
}

void rf_penalty_add(rf_penalty *p, int32_t token) {
    if (token < 0 || token >= p->n_vocab) return;
    if (p->count[token]++ == 0) p->seen[p->n_seen++] = token;
}

void rf_penalty_apply(const rf_penalty *p, float presence, float frequency, float *logits) {
    for (int32_t i = 0; i < p->n_seen; i++) {
        int32_t t = p->seen[i];
        logits[t] -= presence + frequency * (float)p->count[t];
    }
}
