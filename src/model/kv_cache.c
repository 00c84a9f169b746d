/* kv_cache.c: allocation of the per-layer K/V stores. */
#include "model/kv_cache.h"

#include <stdlib.h>
#include <string.h>

rf_status rf_kv_cache_init(rf_kv_cache *kv, const rf_hparams *hp, int32_t n_seq, int32_t n_ctx,
                           int32_t n_batch, rf_error *err) {
    memset(kv, 0, sizeof *kv);
    kv->n_layer = hp->n_layer;
    kv->n_seq = n_seq;
    kv->n_ctx = n_ctx;
    kv->k_row = hp->n_head_kv * hp->head_dim_k;
    kv->v_row = hp->n_head_kv * hp->head_dim_v;
    kv->seq_len = calloc((size_t)n_seq, sizeof *kv->seq_len);
    kv->ring_lo = calloc((size_t)n_seq, sizeof *kv->ring_lo);
    if (!kv->seq_len || !kv->ring_lo) goto nomem;
    for (int il = 0; il < hp->n_layer; il++) {
        int64_t cap = n_ctx;
        if (hp->swa[il] && hp->sliding_window > 0) {
            int64_t ring = (int64_t)hp->sliding_window + n_batch;
            if (ring < cap) cap = ring;
        }
        kv->cap[il] = (int32_t)cap;
        size_t kn = (size_t)n_seq * (size_t)cap * (size_t)kv->k_row;
        size_t vn = (size_t)n_seq * (size_t)cap * (size_t)kv->v_row;
        kv->k[il] = calloc(kn, sizeof(uint16_t));
        kv->v[il] = calloc(vn, sizeof(uint16_t));
        if (!kv->k[il] || !kv->v[il]) goto nomem;
        kv->bytes += (kn + vn) * sizeof(uint16_t);
    }
    return RF_OK;
nomem:
    rf_kv_cache_free(kv);
    return rf_error_set(err, RF_ERR_NOMEM, "KV cache: out of memory (%d sequences x %d positions)",
                        n_seq, n_ctx);
}

void rf_kv_cache_free(rf_kv_cache *kv) {
    for (int il = 0; il < RF_MAX_LAYERS; il++) {
        free(kv->k[il]);
        free(kv->v[il]);
        kv->k[il] = kv->v[il] = NULL;
    }
    free(kv->seq_len);
    free(kv->ring_lo);
    kv->seq_len = kv->ring_lo = NULL;
}
