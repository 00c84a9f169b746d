/* roofline.c: bytes read per decoded token, from the tensor table and hyperparameters. */
#include "analysis/roofline.h"

#include <string.h>

#include "format/gguf.h"

rf_token_bytes rf_model_token_bytes(const rf_model *m, int32_t ctx) {
    rf_token_bytes b = {0};
    const rf_gguf *g = rf_model_gguf(m);
    const rf_hparams *hp = rf_model_hparams(m);
    b.ctx = ctx;
    b.tied = rf_gguf_find_tensor(g, "output.weight") == NULL;
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        if (rf_str_eq(t->name, "token_embd.weight")) {
            uint64_t rows = t->nelements / t->ne[0];
            if (b.tied)
                b.head += t->nbytes;
            else
                b.embed_row += rows ? t->nbytes / rows : 0;
        } else if (rf_str_eq(t->name, "output.weight")) {
            b.head += t->nbytes;
        } else if (t->n_dims == 1) {
            b.norms += t->nbytes;
        } else {
            b.matmul += t->nbytes;
        }
    }
    /* KV: per layer, the positions a query at position ctx-1 attends to, K and V rows in f16 */
    uint64_t row = (uint64_t)hp->n_head_kv * (uint64_t)(hp->head_dim_k + hp->head_dim_v) * 2;
    for (int il = 0; il < hp->n_layer; il++) {
        uint64_t seen = (uint64_t)(ctx > 0 ? ctx : 0);
        if (hp->swa[il] && hp->sliding_window > 0 && seen > (uint64_t)hp->sliding_window)
            seen = (uint64_t)hp->sliding_window;
        b.kv += seen * row;
    }
    b.total = b.matmul + b.head + b.embed_row + b.norms + b.kv;
    return b;
}
