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
 * Penalties (OpenAI's presence and frequency penalties, model/penalty.h) apply before all of
 * this, to a copy of the logits, over the tokens given to rf_sampler_accept since the last
 * rf_sampler_configure: greedy, top-k and top-p all see the penalised logits. Since a penalty
 * can promote a token from outside any candidate list, a sampler with penalties needs full
 * logits (rf_sampler_fits_top is false).
 *
 * rf_sampler_logprobs reports the log-softmax of the raw logits (before temperature and
 * penalties) for a token and the most likely alternatives.
 *
 * Ownership: rf_sampler_new allocates working space for n_vocab candidates (and the penalty
 * counts) once; sampling allocates nothing. rf_sampler_free releases. One sampler per sequence;
 * not thread-safe.
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
    float presence_penalty;  /* [-2, 2]: subtracted once a token has been generated; 0: off */
    float frequency_penalty; /* [-2, 2]: subtracted per time a token has been generated; 0: off */
} rf_sampler_params;

rf_sampler_params rf_sampler_default_params(void); /* temp 0.8, top_k 40, top_p 0.95, seed 0 */

typedef struct rf_sampler rf_sampler;

rf_status rf_sampler_new(const rf_sampler_params *p, int32_t n_vocab, rf_sampler **out,
                         rf_error *err);
void rf_sampler_free(rf_sampler *s);
/* Validates parameters without making a sampler (RF_ERR_ARG naming the field). */
rf_status rf_sampler_check(const rf_sampler_params *p, rf_error *err);
/* Gives an existing sampler new (already checked) parameters, restarts its random stream and
 * forgets the penalty counts: one sampler per batch slot serves request after request without
 * allocating. */
void rf_sampler_configure(rf_sampler *s, const rf_sampler_params *p);
/* Restarts the random stream from the seed. */
void rf_sampler_reset(rf_sampler *s);
/* The seed from which a sampler's random stream goes on where this one stands: a sampler
 * configured with it draws what this one would draw next. */
uint64_t rf_sampler_stream_seed(const rf_sampler *s);
int32_t rf_sampler_sample(rf_sampler *s, const float *logits);
/* Counts a generated token for the penalties (nothing when both are 0). */
void rf_sampler_accept(rf_sampler *s, int32_t token);

/* The log-probability of token under the log-softmax of the raw logits (n_vocab values; no
 * temperature, no penalties) into *token_lp (-inf for an id out of range), and the k most likely
 * tokens with theirs, sorted by descending probability (ties: lower id first), into ids and lps
 * (k entries). Allocates nothing. Returns how many alternatives it wrote: min(k, n_vocab). */
int32_t rf_sampler_logprobs(rf_sampler *s, const float *logits, int32_t token, int32_t k,
                            int32_t *ids, float *lps, float *token_lp);

/* True when the n_top best candidates are all this sampler needs (greedy, or top-k with
 * top_k <= n_top, and no penalties): the decode step can then ask for RF_OUT_TOP instead of full
 * logits. */
bool rf_sampler_fits_top(const rf_sampler *s, int32_t n_top);
/* Samples from candidates sorted by descending logit (rf_context_top's output); gives the same
 * token as rf_sampler_sample would on the full logits when rf_sampler_fits_top holds (it applies
 * no penalties: a sampler with penalties does not fit the top). */
int32_t rf_sampler_sample_top(rf_sampler *s, const int32_t *ids, const float *vals, int32_t n);

/* Index of the largest of n values (lowest index on ties). */
int32_t rf_argmax(const float *x, int32_t n);

/* The k largest of n values, as (index, value) pairs sorted by descending value (ties: lower
 * index first). idx and val hold k entries. Returns min(k, n). */
int32_t rf_top_k(const float *x, int32_t n, int32_t k, int32_t *idx, float *val);

#endif
