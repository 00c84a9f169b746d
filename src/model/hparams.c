/* hparams.c: the hyperparameters of a model file, read under its architecture's key prefix
 * (gemma3.*, qwen2.*, llama.*) into rf_hparams, each checked by name against the range where it
 * means something: integer sizes against what the kernels and the scratch layout hold, and every
 * float hyperparameter finite and in its range (NaN, infinities and meaningless values would load
 * without complaint and give garbage: a NaN rope base makes every logit NaN). One table of float
 * keys serves every architecture; an architecture names the optional groups it reads (RF_HP_*)
 * and adds its own derived values in its finish_hparams hook. Nothing is allocated.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model_int.h"
#include "util/file.h"

/* Reads the u32 key prefix.suffix into *dst (left as is when absent and not required), refusing
 * values past INT32_MAX. */
static rf_status get_i32(const rf_model *m, const char *suffix, bool required, int32_t *dst,
                         rf_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", m->arch->name, suffix);
    uint32_t u = (uint32_t)*dst;
    rf_status st = rf_gguf_get_u32(m->gguf, key, required, &u, err);
    if (st) return st;
    if (u > INT32_MAX)
        return rf_error_set(err, RF_ERR_MODEL, "%s: %s = %u is too large", m->path, key, u);
    *dst = (int32_t)u;
    return RF_OK;
}

/* Sizes: every one read, then checked. */
static rf_status load_sizes(rf_model *m, rf_error *err) {
    rf_hparams *hp = &m->hp;
    const char *a = m->arch->name;
    rf_status st;
    if ((st = get_i32(m, "embedding_length", true, &hp->n_embd, err)) ||
        (st = get_i32(m, "block_count", true, &hp->n_layer, err)) ||
        (st = get_i32(m, "feed_forward_length", true, &hp->n_ff, err)) ||
        (st = get_i32(m, "attention.head_count", true, &hp->n_head, err)))
        return st;
    hp->n_head_kv = hp->n_head;
    hp->n_ctx_train = m->arch->ctx_default;
    if ((st = get_i32(m, "attention.head_count_kv", false, &hp->n_head_kv, err)) ||
        (st = get_i32(m, "context_length", m->arch->ctx_default == 0, &hp->n_ctx_train, err)))
        return st;
    if (hp->n_head < 1 || hp->n_head > 1024)
        return rf_error_set(err, RF_ERR_MODEL, "%s: %s.attention.head_count %d is not in [1, 1024]",
                            m->path, a, hp->n_head);
    hp->head_dim_k = hp->n_embd / hp->n_head;
    if ((st = get_i32(m, "attention.key_length", false, &hp->head_dim_k, err))) return st;
    hp->head_dim_v = hp->head_dim_k;
    if ((st = get_i32(m, "attention.value_length", false, &hp->head_dim_v, err))) return st;
    hp->n_rot = hp->head_dim_k;
    if ((st = get_i32(m, "rope.dimension_count", false, &hp->n_rot, err))) return st;
    hp->sliding_window = 0;
    if ((m->arch->hp_features & RF_HP_SWA) &&
        (st = get_i32(m, "attention.sliding_window", false, &hp->sliding_window, err)))
        return st;

    if (hp->n_layer < 1 || hp->n_layer > RF_MAX_LAYERS)
        return rf_error_set(err, RF_ERR_MODEL, "%s: %s.block_count %d is not in [1, %d]", m->path,
                            a, hp->n_layer, RF_MAX_LAYERS);
    if (hp->n_embd < 1 || hp->n_embd > 65536 || hp->n_ff < 1 || hp->n_ff > 1 << 20)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: %s.embedding_length %d or feed_forward_length %d out of range",
                            m->path, a, hp->n_embd, hp->n_ff);
    if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: %s.attention.head_count %d is not a multiple of head_count_kv %d",
                            m->path, a, hp->n_head, hp->n_head_kv);
    /* Head sizes (attention.key_length / value_length; by default embedding_length / head_count):
     * the attention scratch holds RF_MAX_HEAD_DIM values per head, and RoPE rotates the key and
     * query values in pairs. */
    if (hp->head_dim_k < 2 || hp->head_dim_k > RF_MAX_HEAD_DIM || hp->head_dim_k % 2)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: %s.attention.key_length %d (the key head size) must be even "
                            "(RoPE rotates pairs of values) and at most %d",
                            m->path, a, hp->head_dim_k, RF_MAX_HEAD_DIM);
    if (hp->head_dim_v < 1 || hp->head_dim_v > RF_MAX_HEAD_DIM)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: %s.attention.value_length %d (the value head size) must be in "
                            "[1, %d]: the attention kernels hold at most %d values per head",
                            m->path, a, hp->head_dim_v, RF_MAX_HEAD_DIM, RF_MAX_HEAD_DIM);
    if (hp->n_rot < 2 || hp->n_rot > hp->head_dim_k || hp->n_rot % 2)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: %s.rope.dimension_count %d must be even (RoPE rotates pairs "
                            "of values) and in [2, key_length %d]",
                            m->path, a, hp->n_rot, hp->head_dim_k);
    if (hp->n_ctx_train < 1)
        return rf_error_set(err, RF_ERR_MODEL, "%s: %s.context_length is zero", m->path, a);
    return RF_OK;
}

/* The float keys: suffix, destination, the RF_HP_* group that reads it (0: every architecture),
 * required, and the range where it means something: lo < value < hi, or lo <= value when
 * lo_closed. */
typedef struct float_key {
    const char *suffix;
    size_t field; /* offsetof(rf_hparams, ...); SIZE_MAX: the rope scaling factor */
    uint32_t group;
    bool required;
    double lo, hi;
    bool lo_closed;
    const char *range; /* the same, for the message */
} float_key;

#define RF_HP_FIELD(f) offsetof(rf_hparams, f)

static const float_key k_floats[] = {
    {"attention.layer_norm_rms_epsilon", RF_HP_FIELD(rms_eps), 0, true, 0, 1, false, "in (0, 1)"},
    {"rope.freq_base", RF_HP_FIELD(rope_base), 0, false, 1, FLT_MAX, false, "> 1"},
    {"rope.freq_base_swa", RF_HP_FIELD(rope_base_swa), RF_HP_SWA, false, 1, FLT_MAX, false, "> 1"},
    {"rope.scaling.factor", SIZE_MAX, 0, false, 0, 1e6, true, "in [0, 1e6) (0: none)"},
    {"final_logit_softcapping", RF_HP_FIELD(final_softcap), RF_HP_SOFTCAP, false, 0, FLT_MAX, true,
     ">= 0 (0: none)"},
};

static rf_status load_floats(rf_model *m, rf_error *err) {
    rf_hparams *hp = &m->hp;
    hp->rms_eps = 1e-6f;
    hp->rope_base = 10000.0f;
    hp->rope_base_swa = 10000.0f;
    hp->final_softcap = 0.0f;
    float factor = 0.0f;
    for (size_t i = 0; i < sizeof k_floats / sizeof k_floats[0]; i++) {
        const float_key *fk = &k_floats[i];
        if (fk->group && !(m->arch->hp_features & fk->group)) continue;
        char key[96];
        snprintf(key, sizeof key, "%s.%s", m->arch->name, fk->suffix);
        float *dst = fk->field == SIZE_MAX ? &factor : (float *)(void *)((char *)hp + fk->field);
        rf_status st = rf_gguf_get_f32(m->gguf, key, fk->required, dst, err);
        if (st) return st;
        double v = *dst;
        bool ok = isfinite(v) && v < fk->hi && (fk->lo_closed ? v >= fk->lo : v > fk->lo);
        if (!ok)
            return rf_error_set(err, RF_ERR_MODEL, "%s: %s = %.9g is not a finite number %s",
                                m->path, key, v, fk->range);
    }
    hp->rope_scale = factor > 0 ? 1.0f / factor : 1.0f;
    /* Only plain (linear) position scaling is implemented: YaRN, LongRoPE and the Llama 3
     * frequency factors change the rotation itself. */
    char key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch->name);
    const rf_gguf_kv *kv = rf_gguf_find_kv(m->gguf, key);
    if (kv && (kv->type != RF_GGUF_STRING ||
               !(rf_str_eq(kv->v.s, "none") || rf_str_eq(kv->v.s, "linear")))) {
        char shown[64];
        return rf_error_set(
            err, RF_ERR_UNSUPPORTED, "%s: %s = '%s' is not supported (only 'none' and 'linear')",
            m->path, key,
            kv->type == RF_GGUF_STRING
                ? rf_printable(kv->v.s.ptr, (size_t)kv->v.s.len, shown, sizeof shown)
                : "(not a string)");
    }
    if (rf_gguf_find_tensor(m->gguf, "rope_freqs.weight"))
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "%s: tensor 'rope_freqs.weight' (per-frequency RoPE factors, as Llama "
                            "3 uses) is not supported",
                            m->path);
    return RF_OK;
}

/* Sliding-window layers: a period p (default 6) where the last layer of each period is global,
 * or a per-layer bool array. */
static rf_status load_swa_pattern(rf_model *m, rf_error *err) {
    rf_hparams *hp = &m->hp;
    memset(hp->swa, 0, sizeof hp->swa);
    if (!(m->arch->hp_features & RF_HP_SWA) || hp->sliding_window <= 0) return RF_OK;
    char key[96];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", m->arch->name);
    const rf_gguf_kv *pat = rf_gguf_find_kv(m->gguf, key);
    if (pat && pat->type == RF_GGUF_ARRAY) {
        if (pat->v.arr.type != RF_GGUF_BOOL || pat->v.arr.n != (uint64_t)hp->n_layer)
            return rf_error_set(err, RF_ERR_MODEL, "%s: %s must be %d bools", m->path, key,
                                hp->n_layer);
        for (int il = 0; il < hp->n_layer; il++)
            hp->swa[il] = rf_gguf_arr_int(pat, (uint64_t)il) != 0;
        return RF_OK;
    }
    uint32_t period = 6;
    rf_status st = rf_gguf_get_u32(m->gguf, key, false, &period, err);
    if (st) return st;
    if (period < 1) return rf_error_set(err, RF_ERR_MODEL, "%s: %s is zero", m->path, key);
    for (int il = 0; il < hp->n_layer; il++) hp->swa[il] = (uint32_t)il % period < period - 1;
    return RF_OK;
}

rf_status rf_hparams_load(rf_model *m, rf_error *err) {
    rf_status st;
    if ((st = load_sizes(m, err)) || (st = load_floats(m, err)) || (st = load_swa_pattern(m, err)))
        return st;
    rf_hparams *hp = &m->hp;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->embd_scale = 1.0f;
    return m->arch->finish_hparams ? m->arch->finish_hparams(m, err) : RF_OK;
}
