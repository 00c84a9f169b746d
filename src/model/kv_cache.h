/* kv_cache.h: keys and values of every layer for a fixed set of sequences, in f16.
 *
 * Layer il of sequence s keeps cap[il] position slots; position p lives in slot p % cap[il].
 * Global layers get cap = n_ctx (every position); sliding-window layers get a ring of
 * min(n_ctx, window + n_batch) slots: enough for a chunk of up to n_batch new tokens whose first
 * query still sees the window before it. Rows are n_head_kv * head_dim values.
 *
 * Ownership: rf_kv_cache_init maps the stores (anonymous zero pages: a page costs memory only
 * once a position in it is written, whatever the allocator did before); rf_kv_cache_free unmaps
 * them. Not thread-safe for concurrent writers to the same sequence.
 */
#ifndef RF_MODEL_KV_CACHE_H
#define RF_MODEL_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "roofline/status.h"

typedef struct rf_kv_cache {
    int32_t n_layer, n_seq, n_ctx;
    int32_t k_row, v_row; /* values per position */
    int32_t cap[RF_MAX_LAYERS];
    uint16_t *k[RF_MAX_LAYERS]; /* [n_seq][cap][k_row] f16 */
    uint16_t *v[RF_MAX_LAYERS]; /* [n_seq][cap][v_row] f16 */
    int32_t *seq_len;           /* [n_seq]: positions stored (the next position) */
    int32_t *ring_lo;           /* [n_seq]: no sliding-window ring holds a position below this
                                 * one (raised by truncation: a ring's slots past the new end
                                 * held later positions, not earlier ones; 0 after a reset) */
    size_t bytes;               /* total allocated */
} rf_kv_cache;

rf_status rf_kv_cache_init(rf_kv_cache *kv, const rf_hparams *hp, int32_t n_seq, int32_t n_ctx,
                           int32_t n_batch, rf_error *err);
void rf_kv_cache_free(rf_kv_cache *kv);

static inline uint16_t *rf_kv_k(const rf_kv_cache *kv, int il, int32_t seq, int32_t pos) {
    return kv->k[il] +
           ((size_t)seq * (size_t)kv->cap[il] + (size_t)(pos % kv->cap[il])) * (size_t)kv->k_row;
}

static inline uint16_t *rf_kv_v(const rf_kv_cache *kv, int il, int32_t seq, int32_t pos) {
    return kv->v[il] +
           ((size_t)seq * (size_t)kv->cap[il] + (size_t)(pos % kv->cap[il])) * (size_t)kv->v_row;
}

#endif
