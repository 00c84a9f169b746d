/* facts_gguf.c: facts from a GGUF file: the tensor table and the KV geometry from the {arch}.*
 * metadata (llama.cpp's keys and defaults), for any architecture, without loading the model. */
#include <stdio.h>
#include <string.h>

#include "analysis/facts.h"
#include "analysis/facts_int.h"
#include "kernels/types.h"
#include "util/file.h"

/* Per-layer values of key: a scalar integer (every layer) or an integer array of n_layer.
 * Absent: *present false. */
static rf_status per_layer(const rf_gguf *g, const char *key, int32_t n_layer, uint64_t hi,
                           uint32_t *vals, bool *present, rf_error *err) {
    *present = false;
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return RF_OK;
    if (kv->type == RF_GGUF_ARRAY) {
        rf_gguf_type et = kv->v.arr.type;
        bool integer = et == RF_GGUF_U8 || et == RF_GGUF_I8 || et == RF_GGUF_U16 ||
                       et == RF_GGUF_I16 || et == RF_GGUF_U32 || et == RF_GGUF_I32 ||
                       et == RF_GGUF_U64 || et == RF_GGUF_I64;
        if (!integer || kv->v.arr.n != (uint64_t)n_layer)
            return rf_error_set(err, RF_ERR_MODEL,
                                "%s: key '%s' must be an integer or %d integers (one per layer), "
                                "found an array of %llu %s",
                                rf_gguf_name(g), key, n_layer, (unsigned long long)kv->v.arr.n,
                                rf_gguf_type_name(et));
        for (int32_t il = 0; il < n_layer; il++) {
            int64_t v = rf_gguf_arr_int(kv, (uint64_t)il);
            if (v < 0 || (uint64_t)v > hi)
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: key '%s'[%d] = %lld is not in [0, %llu]", rf_gguf_name(g),
                                    key, il, (long long)v, (unsigned long long)hi);
            vals[il] = (uint32_t)v;
        }
    } else {
        uint32_t v = 0;
        rf_status st = rf_gguf_get_u32(g, key, true, &v, err);
        if (st) return st;
        if (v > hi)
            return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' = %u is not in [0, %llu]",
                                rf_gguf_name(g), key, v, (unsigned long long)hi);
        for (int32_t il = 0; il < n_layer; il++) vals[il] = v;
    }
    *present = true;
    return RF_OK;
}

/* A u32 key in [lo, hi]; absent: *present false. */
static rf_status get_u32_in(const rf_gguf *g, const char *key, uint32_t lo, uint32_t hi,
                            bool *present, uint32_t *out, rf_error *err) {
    *present = rf_gguf_find_kv(g, key) != NULL;
    if (!*present) return RF_OK;
    rf_status st = rf_gguf_get_u32(g, key, true, out, err);
    if (st) return st;
    if (*out < lo || *out > hi)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' = %u is not in [%u, %u]",
                            rf_gguf_name(g), key, *out, lo, hi);
    return RF_OK;
}

rf_status rf_kv_geom_from_gguf(const rf_gguf *g, rf_kv_geom *out, char *note, size_t note_cap,
                               rf_error *err) {
    memset(out, 0, sizeof *out);
    if (note_cap) note[0] = 0;
    rf_str a = {0};
    rf_status st = rf_gguf_get_str(g, "general.architecture", false, &a, err);
    if (st) return st;
    if (a.len == 0 || a.len > 40) {
        snprintf(note, note_cap, "no usable general.architecture: no KV figures");
        return RF_OK;
    }
    char arch[48], key[128];
    snprintf(arch, sizeof arch, "%.*s", (int)a.len, a.ptr);
#define KEY(k) (snprintf(key, sizeof key, "%s.%s", arch, k), key)
    bool have;
    uint32_t n_layer = 0;
    if ((st = get_u32_in(g, KEY("block_count"), 1, RF_KV_MAX_LAYERS, &have, &n_layer, err)))
        return st;
    if (!have) {
        snprintf(note, note_cap, "no %s.block_count: no KV figures", arch);
        return RF_OK;
    }
    uint32_t kvh[RF_KV_MAX_LAYERS], nh[RF_KV_MAX_LAYERS];
    bool have_h, have_kvh;
    if ((st = per_layer(g, KEY("attention.head_count"), (int32_t)n_layer, 1 << 16, nh, &have_h,
                        err)))
        return st;
    if ((st = per_layer(g, KEY("attention.head_count_kv"), (int32_t)n_layer, RF_KV_MAX_HEADS, kvh,
                        &have_kvh, err)))
        return st;
    if (!have_h) {
        snprintf(note, note_cap, "no %s.attention.head_count: no KV figures", arch);
        return RF_OK;
    }
    if (!have_kvh)
        for (uint32_t il = 0; il < n_layer; il++) {
            if (nh[il] > RF_KV_MAX_HEADS)
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: %s.attention.head_count %u (also the KV head count: no "
                                    "head_count_kv) is over %d",
                                    rf_gguf_name(g), arch, nh[il], RF_KV_MAX_HEADS);
            kvh[il] = nh[il];
        }
    uint32_t embd = 0, dk = 0, dv = 0, dk_swa = 0, dv_swa = 0, lora = 0, rope = 0;
    bool have_embd, have_dk, have_dv, have_dk_swa, have_dv_swa, have_lora, have_rope;
    if ((st = get_u32_in(g, KEY("embedding_length"), 1, 1 << 20, &have_embd, &embd, err)) ||
        (st = get_u32_in(g, KEY("attention.key_length"), 1, RF_KV_MAX_HEAD_DIM, &have_dk, &dk,
                         err)) ||
        (st = get_u32_in(g, KEY("attention.value_length"), 0, RF_KV_MAX_HEAD_DIM, &have_dv, &dv,
                         err)) ||
        (st = get_u32_in(g, KEY("attention.key_length_swa"), 1, RF_KV_MAX_HEAD_DIM, &have_dk_swa,
                         &dk_swa, err)) ||
        (st = get_u32_in(g, KEY("attention.value_length_swa"), 0, RF_KV_MAX_HEAD_DIM, &have_dv_swa,
                         &dv_swa, err)) ||
        (st = get_u32_in(g, KEY("attention.kv_lora_rank"), 1, RF_KV_MAX_HEAD_DIM, &have_lora, &lora,
                         err)) ||
        (st = get_u32_in(g, KEY("rope.dimension_count"), 0, RF_KV_MAX_HEAD_DIM, &have_rope, &rope,
                         err)))
        return st;
    const char *extra = "";
    for (uint32_t il = 0; il < n_layer; il++) {
        rf_kv_layer *l = &out->layer[il];
        l->has_cache = kvh[il] > 0;
        l->n_kv_head = kvh[il];
        if (!kvh[il]) continue; /* a layer without attention (recurrent) */
        if (have_lora) {        /* MLA: one latent row of kv_lora_rank + rope dims */
            if (lora + rope > RF_KV_MAX_HEAD_DIM)
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: %s.attention.kv_lora_rank %u + rope.dimension_count %u is "
                                    "over %d",
                                    rf_gguf_name(g), arch, lora, rope, RF_KV_MAX_HEAD_DIM);
            l->n_kv_head = 1;
            l->head_dim_k = lora + rope;
            l->head_dim_v = 0;
            extra = "; MLA latent cache (kv_lora_rank + rope dims)";
            continue;
        }
        uint32_t def = 0;
        if (have_embd && nh[il] && embd % nh[il] == 0) def = embd / nh[il];
        l->head_dim_k = have_dk ? dk : def;
        l->head_dim_v = have_dv ? dv : l->head_dim_k;
        if (l->head_dim_k == 0 || l->head_dim_k > RF_KV_MAX_HEAD_DIM ||
            l->head_dim_v > RF_KV_MAX_HEAD_DIM)
            return rf_error_set(err, RF_ERR_MODEL,
                                "%s: layer %u: no usable key head size (%s.attention.key_length, "
                                "or embedding_length / head_count in [1, %d])",
                                rf_gguf_name(g), il, arch, RF_KV_MAX_HEAD_DIM);
    }
    out->n_layer = (int32_t)n_layer;

    /* sliding layers: a window, and a period or a per-layer bool array */
    uint32_t window = 0;
    if ((st = get_u32_in(g, KEY("attention.sliding_window"), 0, (uint32_t)RF_KV_MAX_CTX, &have,
                         &window, err)))
        return st;
    const char *how = "every layer global";
    if (window > 0) {
        static const struct {
            const char *arch;
            uint32_t period;
        } periods[] = {{"gemma2", 2}, {"gemma3", 6}, {"gemma3n", 5}, {"cohere2", 4}};
        const rf_gguf_kv *pat = rf_gguf_find_kv(g, KEY("attention.sliding_window_pattern"));
        uint32_t period = 0;
        if (pat && pat->type == RF_GGUF_ARRAY) {
            if (pat->v.arr.type != RF_GGUF_BOOL || pat->v.arr.n != n_layer)
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: %s must be a u32 period or %u bools (one per layer)",
                                    rf_gguf_name(g), key, n_layer);
            for (uint32_t il = 0; il < n_layer; il++)
                out->layer[il].window = rf_gguf_arr_int(pat, il) ? window : 0;
            how = "sliding layers from attention.sliding_window_pattern";
        } else {
            if (pat) {
                if ((st = get_u32_in(g, key, 1, RF_KV_MAX_LAYERS, &have, &period, err))) return st;
                how = "attention.sliding_window_pattern: the last layer of each period global";
            } else {
                for (size_t i = 0; i < sizeof periods / sizeof periods[0]; i++)
                    if (strcmp(arch, periods[i].arch) == 0) period = periods[i].period;
                how = period ? "llama.cpp's layer pattern for this architecture"
                             : "sliding_window without a layer pattern: every layer counted "
                               "as global";
            }
            for (uint32_t il = 0; il < n_layer && period; il++)
                out->layer[il].window = il % period < period - 1 ? window : 0;
        }
        if (have_dk_swa || have_dv_swa)
            for (uint32_t il = 0; il < n_layer; il++) {
                rf_kv_layer *l = &out->layer[il];
                if (!l->window || !l->n_kv_head) continue;
                if (have_dk_swa) l->head_dim_k = dk_swa;
                l->head_dim_v = have_dv_swa ? dv_swa : l->head_dim_k;
            }
    }
    uint32_t shared = 0;
    if ((st = get_u32_in(g, KEY("attention.shared_kv_layers"), 0, n_layer, &have, &shared, err)))
        return st;
    for (uint32_t il = n_layer - shared; il < n_layer; il++) out->layer[il].has_cache = false;
    snprintf(note, note_cap, "%s%s%s", how,
             shared ? "; the last layers share earlier caches (attention.shared_kv_layers)" : "",
             extra);
#undef KEY
    return RF_OK;
}

rf_status rf_model_facts_from_gguf(const rf_gguf *g, rf_model_facts **out, rf_error *err) {
    *out = NULL;
    rf_model_facts *f = rf_facts_new(rf_gguf_name(g), RF_FACTS_GGUF, err);
    if (!f) return RF_ERR_NOMEM;
    uint32_t file = 0;
    rf_status st = rf_facts_add_file(f, rf_gguf_name(g), rf_gguf_file_size(g),
                                     rf_gguf_data_offset(g), &file, err);
    if (st) goto out;
    rf_str a = {0};
    if (rf_gguf_get_str(g, "general.architecture", false, &a, NULL) == RF_OK && a.len)
        rf_printable(a.ptr, (size_t)a.len, f->arch, sizeof f->arch);
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        rf_facts_tensor ft;
        memset(&ft, 0, sizeof ft);
        ft.name = (char *)t->name.ptr;
        const char *tn = rf_type_get(t->type)->name;
        snprintf(ft.dtype, sizeof ft.dtype, "%s", tn ? tn : "?");
        ft.n_dims = t->n_dims;
        for (uint32_t d = 0; d < t->n_dims && d < RF_FACTS_MAX_DIMS; d++) ft.shape[d] = t->ne[d];
        ft.nbytes = t->nbytes;
        uint64_t rows = t->ne[0] ? t->nelements / t->ne[0] : 0;
        ft.row_bytes = rows ? t->nbytes / rows : 0;
        ft.parts = 1;
        ft.file = file;
        if ((st = rf_facts_add_tensor(f, &ft, (size_t)t->name.len, err))) goto out;
    }
    f->stored_tensors = rf_gguf_n_tensors(g);
    f->files[file].tensors = rf_gguf_n_tensors(g);
    rf_facts_account(f);
    if ((st = rf_kv_geom_from_gguf(g, &f->kv, f->kv_note, sizeof f->kv_note, err))) goto out;
    if (f->arch[0]) {
        char key[96];
        uint32_t ctx = 0;
        snprintf(key, sizeof key, "%s.context_length", f->arch);
        if (rf_gguf_get_u32(g, key, false, &ctx, NULL) == RF_OK) f->ctx_train = ctx;
    }
out:
    if (st) {
        rf_model_facts_free(f);
        return st;
    }
    *out = f;
    return RF_OK;
}
