/* sampler.h: choosing the next token from logits.
 *
 * temperature <= 0 is greedy (argmax, ties to the lowest id). Otherwise, in the order HF
 * transformers uses: logits / temperature, keep the top_k highest (0: no limit), softmax, keep
 * the smallest set of most likely tokens whose mass reaches top_p (1: no limit), renormalise,
 * draw with the sampler's own seeded generator. The whole vocabulary is never sorted: top-k is a
 * bounded heap, and top-p without top-k finds its probability threshold by linear-time
 * selection.
 * The same seed and logits give the same tokens, run after run.
 *
 * Ownership: rf_sampler_new allocates working space for n_vocab candidates once; sampling
 * allocates nothing. rf_sampler_free releases. One sampler per sequence; not thread-safe.
 */
#ifndef RF_MODEL_SAMPLER_H
#define RF_MODEL_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "roofline/status.h"

typedef struct rf_sampler_params {
    float temperature; /* <= 0: greedy */
    int32_t top_k;     /* 0: disabled */
    float top_p;       /* in (0, 1]; 1: disabled */
    uint64_t seed;
} rf_sampler_params;

rf_sampler_params rf_sampler_default_params(void); /* temp 0.8, top_k 40, top_p 0.95, seed 0 */

typedef struct rf_sampler rf_sampler;

rf_status rf_sampler_new(const rf_sampler_params *p, int32_t n_vocab, rf_sampler **out,
                         rf_error *err);
void rf_sampler_free(rf_sampler *s);
/* Validates parameters without making a sampler (RF_ERR_ARG naming the field). */
rf_status rf_sampler_check(const rf_sampler_params *p, rf_error *err);
/* Gives an existing sampler new (already checked) parameters and restarts its random stream:
 * one sampler per batch slot serves request after request without allocating. */
void rf_sampler_configure(rf_sampler *s, const rf_sampler_params *p);
/* Restarts the random stream from the seed. */
void rf_sampler_reset(rf_sampler *s);
int32_t rf_sampler_sample(rf_sampler *s, const float *logits);

/* True when the n_top best candidates are all this sampler needs (greedy, or top-k with
 * top_k <= n_top): the decode step can then ask for RF_OUT_TOP instead of full logits. */
bool rf_sampler_fits_top(const rf_sampler *s, int32_t n_top);
/* Samples from candidates sorted by descending logit (rf_context_top's output); gives the same
 * token as rf_sampler_sample would on the full logits when rf_sampler_fits_top holds. */
int32_t rf_sampler_sample_top(rf_sampler *s, const int32_t *ids, const float *vals, int32_t n);

/* Index of the largest of n values (lowest index on ties). */
int32_t rf_argmax(const float *x, int32_t n);

/* The k largest of n values, as (index, value) pairs sorted by descending value (ties: lower
 * index first). idx and val hold k entries. Returns min(k, n). */
int32_t rf_top_k(const float *x, int32_t n, int32_t k, int32_t *idx, float *val);

#endif
