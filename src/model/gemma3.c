/* gemma3.c: the Gemma 3 architecture: hyperparameters, tensor binding and the forward pass.
 *
 * Forward pass for a batch of n tokens (activations and residual stream in f32; docs/gemma3.md
 * has the derivation and the llama.cpp numerics we match):
 *   x = embed(token) * sqrt(n_embd)
 *   per layer: h = rms(x)*attn_norm; q,k,v = Wq h, Wk h, Wv h; q,k per-head rms with q_norm,
 *     k_norm; RoPE (NEOX pairing; base 10000 on sliding layers, rope.freq_base on global ones);
 *     q *= attn_scale; K,V to the cache (f16); softmax(q.K) V over the visible window;
 *     x += rms(Wo att)*post_attention_norm; f = rms(x)*ffn_norm;
 *     x += rms(Wdown(gelu_tanh(Wgate f) * Wup f))*post_ffw_norm
 *   logits = W_out rms(x)*output_norm (W_out tied to the embedding unless output.weight exists).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"
#include "util/half.h"

typedef struct g3_layer {
    const float *attn_norm;      /* [n_embd] */
    const float *q_norm;         /* [head_dim_k] */
    const float *k_norm;         /* [head_dim_k] */
    const float *post_attn_norm; /* [n_embd] */
    const float *ffn_norm;       /* [n_embd] */
    const float *post_ffw_norm;  /* [n_embd] */
    rf_weight wq;                /* [n_embd] -> [n_head*head_dim_k] */
    rf_weight wk;                /* [n_embd] -> [n_head_kv*head_dim_k] */
    rf_weight wv;                /* [n_embd] -> [n_head_kv*head_dim_v] */
    rf_weight wo;                /* [n_head*head_dim_v] -> [n_embd] */
    rf_weight gate, up;          /* [n_embd] -> [n_ff] */
    rf_weight down;              /* [n_ff] -> [n_embd] */
} g3_layer;

typedef struct g3_weights {
    rf_weight tok_embd;       /* [n_embd, n_vocab] */
    rf_weight output;         /* [n_embd, n_vocab]; the same data as tok_embd when tied */
    const float *output_norm; /* [n_embd] */
    int tied;
    uint16_t gelu[65536]; /* binary16 GELU of every binary16 input, as llama.cpp's table */
    g3_layer layers[];
} g3_weights;

/* ---- hyperparameters ---- */

static rf_status load_hparams(rf_model *m, rf_error *err) {
    const rf_gguf *g = m->gguf;
    rf_hparams *hp = &m->hp;
    uint32_t u;
    rf_status st;
#define GET_U32(key, dst, req)                                                                     \
    do {                                                                                           \
        u = (uint32_t)(dst);                                                                       \
        st = rf_gguf_get_u32(g, "gemma3." key, req, &u, err);                                      \
        if (st) return st;                                                                         \
        if (u > INT32_MAX)                                                                         \
            return rf_error_set(err, RF_ERR_MODEL, "%s: gemma3." key " = %u is too large",         \
                                m->path, u);                                                       \
        dst = (int32_t)u;                                                                          \
    } while (0)
    GET_U32("embedding_length", hp->n_embd, true);
    GET_U32("block_count", hp->n_layer, true);
    GET_U32("feed_forward_length", hp->n_ff, true);
    GET_U32("attention.head_count", hp->n_head, true);
    hp->n_head_kv = hp->n_head;
    GET_U32("attention.head_count_kv", hp->n_head_kv, false);
    hp->n_ctx_train = 8192;
    GET_U32("context_length", hp->n_ctx_train, false);
    if (hp->n_head < 1 || hp->n_head > 1024)
        return rf_error_set(err, RF_ERR_MODEL, "%s: head_count %d is not in [1, 1024]", m->path,
                            hp->n_head);
    hp->head_dim_k = hp->n_embd / hp->n_head;
    GET_U32("attention.key_length", hp->head_dim_k, false);
    hp->head_dim_v = hp->head_dim_k;
    GET_U32("attention.value_length", hp->head_dim_v, false);
    hp->n_rot = hp->head_dim_k;
    GET_U32("rope.dimension_count", hp->n_rot, false);
    hp->sliding_window = 0;
    GET_U32("attention.sliding_window", hp->sliding_window, false);
#undef GET_U32
    if (hp->n_layer < 1 || hp->n_layer > RF_MAX_LAYERS)
        return rf_error_set(err, RF_ERR_MODEL, "%s: block_count %d is not in [1, %d]", m->path,
                            hp->n_layer, RF_MAX_LAYERS);
    if (hp->n_embd < 1 || hp->n_embd > 65536 || hp->n_ff < 1 || hp->n_ff > 1 << 20)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: embedding_length %d or feed_forward_length %d "
                            "out of range",
                            m->path, hp->n_embd, hp->n_ff);
    if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: head_count %d is not a multiple of "
                            "head_count_kv %d",
                            m->path, hp->n_head, hp->n_head_kv);
    /* Head sizes (attention.key_length / value_length; by default embedding_length / head_count):
     * the attention scratch holds RF_MAX_HEAD_DIM values per head, and RoPE rotates the key and
     * query values in pairs. */
    if (hp->head_dim_k < 2 || hp->head_dim_k > RF_MAX_HEAD_DIM || hp->head_dim_k % 2)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: gemma3.attention.key_length %d (the key head size) must be even "
                            "(RoPE rotates pairs of values) and at most %d",
                            m->path, hp->head_dim_k, RF_MAX_HEAD_DIM);
    if (hp->head_dim_v < 1 || hp->head_dim_v > RF_MAX_HEAD_DIM)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: gemma3.attention.value_length %d (the value head size) must be "
                            "in [1, %d]: the attention kernels hold at most %d values per head",
                            m->path, hp->head_dim_v, RF_MAX_HEAD_DIM, RF_MAX_HEAD_DIM);
    if (hp->n_rot < 2 || hp->n_rot > hp->head_dim_k || hp->n_rot % 2)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: gemma3.rope.dimension_count %d must be even (RoPE rotates pairs "
                            "of values) and in [2, key_length %d]",
                            m->path, hp->n_rot, hp->head_dim_k);
    if (hp->n_ctx_train < 1)
        return rf_error_set(err, RF_ERR_MODEL, "%s: context_length is zero", m->path);

    /* Float hyperparameters. NaN, infinities and meaningless values load without complaint
     * and give garbage (a NaN rope base, say, makes every logit NaN), so each is checked by name
     * against the range where it means something. */
    hp->rms_eps = 1e-6f;
    hp->rope_base = 10000.0f;
    hp->rope_base_swa = 10000.0f;
    hp->final_softcap = 0.0f;
    float factor = 0.0f;
    const struct {
        const char *key;
        float *dst;
        bool required;
        double lo, hi; /* lo < value < hi, or lo <= value when lo_closed */
        bool lo_closed;
        const char *range; /* the same, for the message */
    } floats[] = {
        {"gemma3.attention.layer_norm_rms_epsilon", &hp->rms_eps, true, 0, 1, false, "in (0, 1)"},
        {"gemma3.rope.freq_base", &hp->rope_base, false, 1, FLT_MAX, false, "> 1"},
        {"gemma3.rope.freq_base_swa", &hp->rope_base_swa, false, 1, FLT_MAX, false, "> 1"},
        {"gemma3.rope.scaling.factor", &factor, false, 0, 1e6, true, "in [0, 1e6) (0: none)"},
        {"gemma3.final_logit_softcapping", &hp->final_softcap, false, 0, FLT_MAX, true,
         ">= 0 (0: none)"},
    };
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        st = rf_gguf_get_f32(g, floats[i].key, floats[i].required, floats[i].dst, err);
        if (st) return st;
        double v = *floats[i].dst;
        bool ok = isfinite(v) && v < floats[i].hi &&
                  (floats[i].lo_closed ? v >= floats[i].lo : v > floats[i].lo);
        if (!ok)
            return rf_error_set(err, RF_ERR_MODEL, "%s: %s = %.9g is not a finite number %s",
                                m->path, floats[i].key, v, floats[i].range);
    }
    hp->rope_scale = factor > 0 ? 1.0f / factor : 1.0f;

    /* Sliding-window layers: a period p (default 6) where the last layer of each period is
     * global, or a per-layer bool array. */
    memset(hp->swa, 0, sizeof hp->swa);
    if (hp->sliding_window > 0) {
        const rf_gguf_kv *pat = rf_gguf_find_kv(g, "gemma3.attention.sliding_window_pattern");
        if (pat && pat->type == RF_GGUF_ARRAY) {
            if (pat->v.arr.type != RF_GGUF_BOOL || pat->v.arr.n != (uint64_t)hp->n_layer)
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: attention.sliding_window_pattern must "
                                    "be %d bools",
                                    m->path, hp->n_layer);
            for (int il = 0; il < hp->n_layer; il++)
                hp->swa[il] = rf_gguf_arr_int(pat, (uint64_t)il) != 0;
        } else {
            uint32_t period = 6;
            st = rf_gguf_get_u32(g, "gemma3.attention.sliding_window_pattern", false, &period, err);
            if (st) return st;
            if (period < 1)
                return rf_error_set(err, RF_ERR_MODEL, "%s: sliding_window_pattern is zero",
                                    m->path);
            for (int il = 0; il < hp->n_layer; il++)
                hp->swa[il] = (uint32_t)il % period < period - 1;
        }
    }
    /* Gemma 3 27B scales queries by 1/sqrt(n_embd/n_head); the others by 1/sqrt(head size). */
    hp->attn_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                                       : 1.0f / sqrtf((float)hp->head_dim_k);
    hp->embd_scale = sqrtf((float)hp->n_embd);
    return RF_OK;
}

static rf_status g3_load(rf_model *m, rf_error *err) {
    rf_status st = load_hparams(m, err);
    if (st) return st;
    rf_hparams *hp = &m->hp;
    g3_weights *w = calloc(1, sizeof *w + (size_t)hp->n_layer * sizeof(g3_layer));
    if (!w) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    m->weights = w;
    rf_gelu_table(w->gelu);

    const rf_gguf_tensor *emb = rf_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!emb)
        return rf_error_set(err, RF_ERR_MODEL, "%s: missing tensor 'token_embd.weight'", m->path);
    if (emb->n_dims != 2 || emb->ne[1] > INT32_MAX)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: tensor 'token_embd.weight' must be 2-D with "
                            "at most 2^31 rows",
                            m->path);
    hp->n_vocab = (int32_t)emb->ne[1];
    const int64_t E = hp->n_embd, F = hp->n_ff, V = hp->n_vocab;
    const int64_t QD = (int64_t)hp->n_head * hp->head_dim_k;
    const int64_t KD = (int64_t)hp->n_head_kv * hp->head_dim_k;
    const int64_t VD = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const int64_t OD = (int64_t)hp->n_head * hp->head_dim_v;
    st = rf_model_bind_matrix(m, "token_embd.weight", E, V, &w->tok_embd, err);
    if (st) return st;
    if (rf_gguf_find_tensor(m->gguf, "output.weight")) {
        st = rf_model_bind_matrix(m, "output.weight", E, V, &w->output, err);
        if (st) return st;
    } else {
        w->output = w->tok_embd;
        w->tied = 1;
    }
    st = rf_model_bind_vector(m, "output_norm.weight", E, &w->output_norm, err);
    if (st) return st;
    for (int il = 0; il < hp->n_layer; il++) {
        g3_layer *L = &w->layers[il];
        char n[64];
#define VEC(field, name, len)                                                                      \
    snprintf(n, sizeof n, "blk.%d." name ".weight", il);                                           \
    st = rf_model_bind_vector(m, n, len, &L->field, err);                                          \
    if (st) return st
#define MAT(field, name, cols, rows)                                                               \
    snprintf(n, sizeof n, "blk.%d." name ".weight", il);                                           \
    st = rf_model_bind_matrix(m, n, cols, rows, &L->field, err);                                   \
    if (st) return st
        VEC(attn_norm, "attn_norm", E);
        VEC(q_norm, "attn_q_norm", hp->head_dim_k);
        VEC(k_norm, "attn_k_norm", hp->head_dim_k);
        VEC(post_attn_norm, "post_attention_norm", E);
        VEC(ffn_norm, "ffn_norm", E);
        VEC(post_ffw_norm, "post_ffw_norm", E);
        MAT(wq, "attn_q", E, QD);
        MAT(wk, "attn_k", E, KD);
        MAT(wv, "attn_v", E, VD);
        MAT(wo, "attn_output", OD, E);
        MAT(gate, "ffn_gate", E, F);
        MAT(up, "ffn_up", E, F);
        MAT(down, "ffn_down", F, E);
#undef VEC
#undef MAT
    }
    return RF_OK;
}

static void g3_free_weights(void *w) {
    free(w);
}

/* ---- scratch layout ---- */

typedef struct g3_scratch {
    float *x;    /* [n][E] residual stream */
    float *h;    /* [n][E] normed input of a block */
    float *q;    /* [n][H*Dk] */
    float *k;    /* [n][Hkv*Dk] */
    float *v;    /* [n][Hkv*Dv] */
    float *att;  /* [n][H*Dv] */
    float *o;    /* [n][E] */
    float *g;    /* [n][F] */
    float *u;    /* [n][F] */
    float *rope; /* [n][2 bases][cos, sin][n_rot/2] */
    float *xo;   /* [n_outputs][E] final normed rows for the head */
    float *acc;  /* [n_threads][n_head + 2][RF_MAX_HEAD_DIM] attention scratch */
} g3_scratch;

static size_t carve(const rf_hparams *hp, int32_t n, int32_t n_threads, float *base,
                    g3_scratch *s) {
    const size_t E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    const size_t sizes[] = {n * E,
                            n * E,
                            (size_t)n * hp->n_head * hp->head_dim_k,
                            (size_t)n * hp->n_head_kv * hp->head_dim_k,
                            (size_t)n * hp->n_head_kv * hp->head_dim_v,
                            (size_t)n * hp->n_head * hp->head_dim_v,
                            n * E,
                            n * F,
                            n * F,
                            (size_t)n * 2 * (size_t)hp->n_rot,
                            n * E,
                            (size_t)n_threads * (size_t)(hp->n_head + 2) * RF_MAX_HEAD_DIM};
    float **ptrs[] = {&s->x, &s->h, &s->q, &s->k,    &s->v,  &s->att,
                      &s->o, &s->g, &s->u, &s->rope, &s->xo, &s->acc};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (base) *ptrs[i] = base + off;
        off += (sizes[i] + 15) & ~(size_t)15; /* 64-byte aligned slices */
    }
    return off;
}

static size_t g3_scratch_floats(const rf_model *m, int32_t n_batch, int32_t n_threads,
                                int32_t n_ctx) {
    g3_scratch s;
    (void)n_ctx; /* attention works in tiles: no per-context scratch */
    return carve(&m->hp, n_batch, n_threads, NULL, &s);
}

static size_t g3_act_bytes(const rf_model *m, int32_t n_batch) {
    const rf_hparams *hp = &m->hp;
    int64_t cols = hp->n_embd;
    if (hp->n_ff > cols) cols = hp->n_ff;
    if ((int64_t)hp->n_head * hp->head_dim_v > cols) cols = (int64_t)hp->n_head * hp->head_dim_v;
    /* F32 activations (for F32 weights) are the widest at 4 bytes per value. */
    return (size_t)n_batch * (size_t)cols * 4;
}

/* ---- elementwise pieces ---- */

/* y = x / sqrt(mean(x^2) + eps) * w; the sum of squares in double, as llama.cpp does. */
static void rms_norm(const float *x, const float *w, float *y, int n, float eps) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * scale * w[i];
}

/* cos/sin of position pos for n_rot/2 frequencies: theta_i = pos*scale * base^(-2i/n_rot),
 * stepped by repeated multiplication in float like llama.cpp. */
static void rope_table(float *cs, int32_t pos, float base, float scale, int n_rot) {
    int half = n_rot / 2;
    float step = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos * scale;
    for (int i = 0; i < half; i++) {
        cs[i] = cosf(theta);
        cs[half + i] = sinf(theta);
        theta *= step;
    }
}

/* NEOX rotation of the first n_rot values of one head: pairs (i, i + n_rot/2). */
static void rope_apply(float *x, const float *cs, int n_rot) {
    int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        float a = x[i], b = x[i + half], c = cs[i], s = cs[half + i];
        x[i] = a * c - b * s;
        x[i + half] = a * s + b * c;
    }
}

/* ---- matmul with shared activation quantization ---- */

typedef struct g3_run {
    rf_context *c;
    const rf_hparams *hp;
    const g3_weights *w;
    const rf_batch *b;
    g3_scratch s;
    int il;
    const float *act_src; /* source rows currently quantized in c->act, and as what */
    rf_type act_type;
} g3_run;

/* dst[i] = W[i] src for nw weights reading the same n activation rows: src is quantized once
 * per activation type (and not again while it stays current), and weights that share that type
 * run in one pool dispatch. */
static void project_n(g3_run *r, const rf_weight *const *w, int nw, const float *src, int64_t n,
                      float *const *dst, rf_prof_stage stage) {
    rf_context *c = r->c;
    for (int i0 = 0; i0 < nw;) {
        int64_t t = c->profiling ? rf_now_ns() : 0;
        rf_type at = rf_vec_dot_type(w[i0]->type);
        int i1 = i0 + 1;
        while (i1 < nw && rf_vec_dot_type(w[i1]->type) == at) i1++;
        rf_act act = {at, w[i0]->cols, n, rf_type_row_bytes(at, (uint64_t)w[i0]->cols), c->act};
        if (r->act_src != src || r->act_type != at) {
            rf_act_quantize(c->k, c->pool, at, src, w[i0]->cols, w[i0]->cols, n, &act);
            r->act_src = src;
            r->act_type = at;
            t = rf_prof_mark(c, t, RF_PROF_QUANT);
        }
        int64_t stride[8];
        for (int i = i0; i < i1; i++) stride[i - i0] = w[i]->rows;
        rf_matmul_n(c->k, c->pool, w + i0, i1 - i0, &act, dst + i0, stride);
        rf_prof_mark(c, t, stage);
        i0 = i1;
    }
}

static void project(g3_run *r, const rf_weight *w, const float *src, int64_t n, float *dst,
                    rf_prof_stage stage) {
    project_n(r, &w, 1, src, n, &dst, stage);
}

/* ---- attention ---- */

/* One query head against keys [lo, pos] of one KV head, in f32 throughout: scores q.K with K
 * widened from f16, an online softmax over tiles of 64 keys (the tile's max, then exp and sum),
 * and the weighted sum of V accumulated in key order, divided by the softmax sum at the end. This
 * is the structure of llama.cpp's tiled CPU flash attention; docs/correctness.md records how
 * sensitive the logits are to such choices. acc is Dv floats of scratch. */
/* g query heads (q: g rows of Dk, consecutive) sharing KV head hk, against keys [lo, pos]:
 * each K and V row is widened from f16 once and used by all g heads. Per head: scores q.K, an
 * online softmax over tiles of 64 keys (the tile's max, then exp and sum), the weighted sum of V
 * in key order, divided by the softmax sum at the end (the structure of llama.cpp's tiled CPU
 * flash attention; docs/correctness.md records how sensitive the logits are to such choices).
 * scratch holds g * Dv + Dk + Dv floats; out gets g rows of Dv. */
static void attend_group(const rf_kernels *k, const float *q, int g, const rf_kv_cache *kv, int il,
                         int32_t seq, int hk, int32_t lo, int32_t pos, int Dk, int Dv,
                         float *scratch, float *out) {
    enum { TILE = 64, GMAX = 64 };
    float p[GMAX][TILE], S[GMAX], M[GMAX];
    float *acc = scratch, *kf = scratch + (size_t)g * Dv, *vf = kf + Dk;
    for (int h = 0; h < g; h++) {
        S[h] = 0;
        M[h] = -INFINITY;
        for (int i = 0; i < Dv; i++) acc[(size_t)h * Dv + i] = 0;
    }
    for (int32_t t0 = lo - lo % TILE; t0 <= pos; t0 += TILE) {
        int32_t a = t0 < lo ? lo : t0, b = t0 + TILE - 1 < pos ? t0 + TILE - 1 : pos;
        for (int32_t j = a; j <= b; j++) {
            k->cvt_f16_f32(rf_kv_k(kv, il, seq, j) + (size_t)hk * Dk, kf, Dk);
            for (int h = 0; h < g; h++) p[h][j - a] = k->dot_f32(q + (size_t)h * Dk, kf, Dk);
        }
        for (int h = 0; h < g; h++) {
            float tmax = -INFINITY;
            for (int32_t j = a; j <= b; j++) tmax = fmaxf(tmax, p[h][j - a]);
            float Mnew = fmaxf(M[h], tmax);
            if (Mnew > M[h]) {
                float ms = expf(M[h] - Mnew);
                for (int i = 0; i < Dv; i++) acc[(size_t)h * Dv + i] *= ms;
                S[h] *= ms;
            }
            M[h] = Mnew;
            S[h] += k->exp_sum(p[h], b - a + 1, Mnew);
        }
        for (int32_t j = a; j <= b; j++) {
            k->cvt_f16_f32(rf_kv_v(kv, il, seq, j) + (size_t)hk * Dv, vf, Dv);
            for (int h = 0; h < g; h++) k->axpy_f32(acc + (size_t)h * Dv, vf, p[h][j - a], Dv);
        }
    }
    for (int h = 0; h < g; h++) {
        float inv = S[h] == 0.0f ? 0.0f : 1.0f / S[h];
        for (int i = 0; i < Dv; i++) out[(size_t)h * Dv + i] = acc[(size_t)h * Dv + i] * inv;
    }
}

/* Work items are (token, KV head) with all its query heads when there are enough of them to keep
 * every thread busy (prefill, batches); else (token, query head) so a single-token decode still
 * spreads its heads over the threads. */
static void attention_worker(void *arg, int ith, int nth) {
    g3_run *r = arg;
    const rf_hparams *hp = r->hp;
    const rf_kv_cache *kv = &r->c->kv;
    const int H = hp->n_head, Dk = hp->head_dim_k, Dv = hp->head_dim_v;
    const int group = H / hp->n_head_kv;
    const int il = r->il;
    const int per_item = (long)r->b->n * hp->n_head_kv >= nth && group <= 64 ? group : 1;
    const int items_per_tok = H / per_item;
    float *scratch = r->s.acc + (size_t)ith * (size_t)(H + 2) * RF_MAX_HEAD_DIM;
    long b, e;
    rf_split((long)r->b->n * items_per_tok, ith, nth, &b, &e);
    for (long item = b; item < e; item++) {
        int t = (int)(item / items_per_tok), h0 = (int)(item % items_per_tok) * per_item;
        int32_t seq = r->b->seq[t], pos = r->b->pos[t];
        int32_t lo = 0;
        if (hp->swa[il] && hp->sliding_window > 0 && pos >= hp->sliding_window)
            lo = pos - hp->sliding_window + 1;
        const float *q = r->s.q + ((size_t)t * H + h0) * Dk;
        float *out = r->s.att + ((size_t)t * H + h0) * Dv;
        attend_group(r->c->k, q, per_item, kv, il, seq, h0 / group, lo, pos, Dk, Dv, scratch, out);
    }
}

/* ---- per-token pieces (run over the pool when the batch has several tokens) ---- */

static void tok_attn_norm(g3_run *r, int t) {
    const int E = r->hp->n_embd;
    rms_norm(r->s.x + (size_t)t * E, r->w->layers[r->il].attn_norm, r->s.h + (size_t)t * E, E,
             r->hp->rms_eps);
}

/* q/k head norms, RoPE, the query scale, and K/V into the cache (f16). */
static void tok_qk_rope_cache(g3_run *r, int t) {
    const rf_hparams *hp = r->hp;
    const g3_layer *L = &r->w->layers[r->il];
    const int H = hp->n_head, Hkv = hp->n_head_kv, Dk = hp->head_dim_k, Dv = hp->head_dim_v;
    const int QD = H * Dk, KD = Hkv * Dk, VD = Hkv * Dv, nr = hp->n_rot;
    const float *cs = r->s.rope + (size_t)t * 2 * nr + (hp->swa[r->il] ? 0 : nr);
    for (int h = 0; h < H; h++) {
        float *q = r->s.q + (size_t)t * QD + (size_t)h * Dk;
        rms_norm(q, L->q_norm, q, Dk, hp->rms_eps);
        rope_apply(q, cs, nr);
        for (int i = 0; i < Dk; i++) q[i] *= hp->attn_scale;
    }
    uint16_t *kc = rf_kv_k(&r->c->kv, r->il, r->b->seq[t], r->b->pos[t]);
    uint16_t *vc = rf_kv_v(&r->c->kv, r->il, r->b->seq[t], r->b->pos[t]);
    for (int h = 0; h < Hkv; h++) {
        float *k = r->s.k + (size_t)t * KD + (size_t)h * Dk;
        rms_norm(k, L->k_norm, k, Dk, hp->rms_eps);
        rope_apply(k, cs, nr);
    }
    for (int i = 0; i < KD; i++) kc[i] = rf_f32_to_f16(r->s.k[(size_t)t * KD + i]);
    for (int i = 0; i < VD; i++) vc[i] = rf_f32_to_f16(r->s.v[(size_t)t * VD + i]);
}

/* x += rms(o)*post_attention_norm; h = rms(x)*ffn_norm */
static void tok_post_attn(g3_run *r, int t) {
    const int E = r->hp->n_embd;
    const g3_layer *L = &r->w->layers[r->il];
    float *x = r->s.x + (size_t)t * E, *o = r->s.o + (size_t)t * E;
    rms_norm(o, L->post_attn_norm, o, E, r->hp->rms_eps);
    for (int i = 0; i < E; i++) x[i] += o[i];
    rms_norm(x, L->ffn_norm, r->s.h + (size_t)t * E, E, r->hp->rms_eps);
}

static void tok_geglu(g3_run *r, int t) {
    const size_t F = (size_t)r->hp->n_ff;
    r->c->k->geglu(r->w->gelu, r->s.g + t * F, r->s.u + t * F, r->s.g + t * F, (int64_t)F);
}

/* x += rms(down)*post_ffw_norm */
static void tok_post_ffn(g3_run *r, int t) {
    const int E = r->hp->n_embd;
    float *x = r->s.x + (size_t)t * E, *o = r->s.o + (size_t)t * E;
    rms_norm(o, r->w->layers[r->il].post_ffw_norm, o, E, r->hp->rms_eps);
    for (int i = 0; i < E; i++) x[i] += o[i];
}

typedef struct tok_job {
    g3_run *r;
    void (*fn)(g3_run *r, int t);
} tok_job;

static void tok_worker(void *arg, int ith, int nth) {
    tok_job *j = arg;
    long b, e;
    rf_split((long)j->r->b->n, ith, nth, &b, &e);
    for (long t = b; t < e; t++) j->fn(j->r, (int)t);
}

/* fn for every token of the batch: inline for one token, over the pool for more. */
static void per_token(g3_run *r, void (*fn)(g3_run *r, int t)) {
    if (r->b->n == 1) {
        fn(r, 0);
        return;
    }
    tok_job j = {r, fn};
    rf_pool_run(r->c->pool, tok_worker, &j);
}

/* ---- the forward pass ---- */

static void g3_forward(rf_context *c, const rf_batch *b) {
    g3_run r = {0};
    r.c = c;
    r.hp = &c->model->hp;
    r.w = c->model->weights;
    r.b = b;
    carve(r.hp, c->n_batch, c->n_threads, c->scratch, &r.s);
    const rf_hparams *hp = r.hp;
    const g3_weights *w = r.w;
    const int n = b->n, E = hp->n_embd;
    const int nr = hp->n_rot;
    g3_scratch *s = &r.s;
    int64_t tm = c->profiling ? rf_now_ns() : 0;

    for (int t = 0; t < n; t++) {
        const uint8_t *row =
            (const uint8_t *)w->tok_embd.data + (size_t)b->token[t] * w->tok_embd.row_bytes;
        float *x = s->x + (size_t)t * E;
        rf_ref_dequantize_row(w->tok_embd.type, row, x, E);
        for (int i = 0; i < E; i++) x[i] *= hp->embd_scale;
        rope_table(s->rope + (size_t)t * 2 * nr, b->pos[t], hp->rope_base_swa, 1.0f, nr);
        rope_table(s->rope + (size_t)t * 2 * nr + nr, b->pos[t], hp->rope_base, hp->rope_scale, nr);
    }
    tm = rf_prof_mark(c, tm, RF_PROF_EMBED);

    for (int il = 0; il < hp->n_layer; il++) {
        const g3_layer *L = &w->layers[il];
        r.il = il;
        per_token(&r, tok_attn_norm);
        tm = rf_prof_mark(c, tm, RF_PROF_NORM);
        const rf_weight *qkv[3] = {&L->wq, &L->wk, &L->wv};
        float *qkv_out[3] = {s->q, s->k, s->v};
        project_n(&r, qkv, 3, s->h, n, qkv_out, RF_PROF_QKV);
        tm = c->profiling ? rf_now_ns() : 0;
        per_token(&r, tok_qk_rope_cache);
        tm = rf_prof_mark(c, tm, RF_PROF_ROPE);
        rf_pool_run(c->pool, attention_worker, &r);
        rf_prof_mark(c, tm, RF_PROF_ATTN);
        project(&r, &L->wo, s->att, n, s->o, RF_PROF_WO);
        tm = c->profiling ? rf_now_ns() : 0;
        per_token(&r, tok_post_attn);
        rf_prof_mark(c, tm, RF_PROF_NORM);
        const rf_weight *gu[2] = {&L->gate, &L->up};
        float *gu_out[2] = {s->g, s->u};
        project_n(&r, gu, 2, s->h, n, gu_out, RF_PROF_UP);
        tm = c->profiling ? rf_now_ns() : 0;
        per_token(&r, tok_geglu);
        rf_prof_mark(c, tm, RF_PROF_GELU);
        project(&r, &L->down, s->g, n, s->o, RF_PROF_DOWN);
        tm = c->profiling ? rf_now_ns() : 0;
        per_token(&r, tok_post_ffn);
        tm = rf_prof_mark(c, tm, RF_PROF_NORM);
    }

    /* The head, only for the rows that asked for outputs. */
    int n_out = 0, all_top = 1;
    for (int t = 0; t < n; t++) {
        if (!b->logits || !b->logits[t]) continue;
        rms_norm(s->x + (size_t)t * E, w->output_norm, s->xo + (size_t)n_out * E, E, hp->rms_eps);
        c->out_mode[n_out++] = b->logits[t];
        all_top &= b->logits[t] == RF_OUT_TOP;
    }
    c->n_out = n_out;
    rf_prof_mark(c, tm, RF_PROF_HEAD);
    if (!n_out) return;
    const size_t V = (size_t)hp->n_vocab, K = (size_t)c->n_top;
    if (all_top) {
        /* fused: no logits are written, each thread keeps its best candidates per row */
        int64_t th = c->profiling ? rf_now_ns() : 0;
        rf_type at = rf_vec_dot_type(w->output.type);
        rf_act act = {at, E, n_out, rf_type_row_bytes(at, (uint64_t)E), c->act};
        rf_act_quantize(c->k, c->pool, at, s->xo, E, E, n_out, &act);
        rf_matmul_topk(c->k, c->pool, &w->output, &act, c->n_top, c->top_scratch, c->top_ids,
                       c->top_vals, c->out_finite);
        rf_prof_mark(c, th, RF_PROF_HEAD);
    } else {
        project(&r, &w->output, s->xo, n_out, c->logits, RF_PROF_HEAD);
        for (int i = 0; i < n_out; i++) {
            c->out_finite[i] = rf_all_finite(c->logits + i * V, (int64_t)V);
            if (c->out_mode[i] == RF_OUT_TOP)
                rf_topk_select(c->logits + i * V, (int64_t)V, c->n_top, c->top_scratch,
                               c->top_ids + i * K, c->top_vals + i * K);
        }
    }
    if (hp->final_softcap > 0) { /* monotonic: the selection above is unchanged by it */
        float cap = hp->final_softcap;
        for (int i = 0; i < n_out; i++) {
            if (c->out_mode[i] == RF_OUT_TOP)
                for (size_t j = 0; j < K; j++)
                    c->top_vals[i * K + j] = cap * tanhf(c->top_vals[i * K + j] / cap);
            else
                for (size_t j = 0; j < V; j++)
                    c->logits[i * V + j] = cap * tanhf(c->logits[i * V + j] / cap);
        }
    }
}

const rf_arch rf_arch_gemma3 = {
    .name = "gemma3",
    .load = g3_load,
    .free_weights = g3_free_weights,
    .scratch_floats = g3_scratch_floats,
    .act_bytes = g3_act_bytes,
    .forward = g3_forward,
};
