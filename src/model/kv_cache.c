/* kv_cache.c: allocation of the per-layer K/V stores.
 *
 * The stores are mapped (anonymous, private), not calloc'd: the kernel's zero pages are backed
 * only when written, so a cache costs the memory of the positions sequences reach, not of its
 * capacity. calloc gives that only when it maps fresh memory itself; once a large block has been
 * freed (an engine closed), glibc raises its mmap threshold (up to 32 MiB) and serves the next
 * blocks below it from the heap, where calloc clears the memory earlier blocks left, touching
 * every page: 1.5 GB for SmolLM2 at 16 x 4096 positions when the precision study reopened it
 * (docs/bench.md, "Memory"). */
#include "model/kv_cache.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Bytes mapped for layer il's K (or V) store of row values per position (never 0: mmap cannot
 * map nothing). */
static size_t store_bytes(const rf_kv_cache *kv, int il, int32_t row) {
    size_t n = (size_t)kv->n_seq * (size_t)kv->cap[il] * (size_t)row * sizeof(uint16_t);
    return n ? n : 1;
}

/* Zeroed memory whose pages cost nothing until written; NULL on failure. */
static uint16_t *map_zeroed(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

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
        size_t kb = store_bytes(kv, il, kv->k_row), vb = store_bytes(kv, il, kv->v_row);
        kv->k[il] = map_zeroed(kb);
        kv->v[il] = map_zeroed(vb);
        if (!kv->k[il] || !kv->v[il]) goto nomem;
        kv->bytes += kb + vb;
    }
    return RF_OK;
nomem:
    rf_kv_cache_free(kv);
    return rf_error_set(err, RF_ERR_NOMEM, "KV cache: out of memory (%d sequences x %d positions)",
                        n_seq, n_ctx);
}

void rf_kv_cache_free(rf_kv_cache *kv) {
    for (int il = 0; il < RF_MAX_LAYERS; il++) {
        if (kv->k[il]) munmap(kv->k[il], store_bytes(kv, il, kv->k_row));
        if (kv->v[il]) munmap(kv->v[il], store_bytes(kv, il, kv->v_row));
        kv->k[il] = kv->v[il] = NULL;
    }
    free(kv->seq_len);
    free(kv->ring_lo);
    kv->seq_len = kv->ring_lo = NULL;
}
