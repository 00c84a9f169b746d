/* roofline.c: bytes read per decoded token of a loaded model, through the shared accounting. */
#include "analysis/roofline.h"

#include <string.h>

#include "format/gguf.h"

void rf_model_kv_geom(const rf_model *m, rf_kv_geom *g) {
    const rf_hparams *hp = rf_model_hparams(m);
    memset(g, 0, sizeof *g);
    int32_t n = hp->n_layer < RF_KV_MAX_LAYERS ? hp->n_layer : RF_KV_MAX_LAYERS;
    g->n_layer = n > 0 ? n : 0;
    for (int32_t il = 0; il < g->n_layer; il++) {
        rf_kv_layer *l = &g->layer[il];
        l->n_kv_head = (uint32_t)hp->n_head_kv;
        l->head_dim_k = (uint32_t)hp->head_dim_k;
        l->head_dim_v = (uint32_t)hp->head_dim_v;
        l->window = hp->swa[il] && hp->sliding_window > 0 ? (uint32_t)hp->sliding_window : 0;
        l->has_cache = true;
    }
}

rf_token_bytes rf_model_token_bytes(const rf_model *m, int32_t ctx) {
    rf_token_bytes b;
    memset(&b, 0, sizeof b);
    const rf_gguf *g = rf_model_gguf(m);
    rf_footprint fp;
    rf_footprint_init(&fp);
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        uint64_t rows = t->ne[0] ? t->nelements / t->ne[0] : 0;
        rf_footprint_add(&fp, rf_role_classify(t->name.ptr, (size_t)t->name.len), "", t->nbytes,
                         rows ? t->nbytes / rows : 0);
    }
    rf_kv_geom geom;
    rf_model_kv_geom(m, &geom);
    rf_token_read r = rf_footprint_read(&fp, &geom, ctx, RF_KV_F16);
    b.by_role = r;
    b.ctx = ctx;
    b.tied = r.tied;
    b.matmul = r.role[RF_ROLE_BODY];
    b.head = r.role[RF_ROLE_HEAD];
    b.embed_row = r.role[RF_ROLE_TOKEN_EMBD] + r.role[RF_ROLE_PER_LAYER_EMBD];
    b.norms = r.role[RF_ROLE_NORMS];
    b.kv = r.kv;
    b.total = r.total;
    return b;
}
