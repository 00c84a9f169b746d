/* blocks.h: the building blocks every architecture's forward pass is made of (blocks.c) and the
 * scratch they work in; the weights they read are bound by weights.c (weights.h).
 *
 * One decode step (rf_blk_forward, called by rf_decode): every token's embedding row is decoded
 * and scaled (hp->embd_scale) and its RoPE angles computed; per layer the architecture's layer
 * function composes the blocks below over the whole batch (any mix of sequences and positions:
 * prefill chunks, batched decode); then the head computes the rows that asked for outputs. Every
 * block runs over the context's thread pool: matrix products split by rows (each weight read
 * once for all the tokens, the activation quantized once per matrix group), per-token pieces
 * split by tokens (run inline for a single token), attention split by (token, KV group).
 *
 * Numerics follow llama.cpp's CPU backend (docs/correctness.md): RMSNorm's sum of squares in
 * double, RoPE angles by repeated float multiplication, f16 K/V, f32 tiled attention with an
 * online softmax, activations quantized to each weight's partner type.
 *
 * Ownership: rf_fwd lives on rf_blk_forward's stack; the scratch belongs to the context
 * (rf_decode allocates nothing); the weights belong to the model (weights.h).
 */
#ifndef RF_MODEL_BLOCKS_H
#define RF_MODEL_BLOCKS_H

#include "model/model_int.h"
#include "model/weights.h"

/* The scratch of one step, carved from the context's buffer for n_batch tokens. */
typedef struct rf_scratch {
    float *x;    /* [n][E] residual stream */
    float *h;    /* [n][E] normed input of a block */
    float *q;    /* [n][H*Dk] */
    float *k;    /* [n][Hkv*Dk] */
    float *v;    /* [n][Hkv*Dv] */
    float *att;  /* [n][H*Dv] */
    float *o;    /* [n][E] output of a block before the residual */
    float *g;    /* [n][F] */
    float *u;    /* [n][F] */
    float *rope; /* [n][2 bases][cos, sin][n_rot/2]: sliding-window base, then the global one */
    float *xo;   /* [n_outputs][E] final normed rows for the head */
    float *acc;  /* [n_threads][64][head_dim_v] attention accumulators */
} rf_scratch;

struct rf_fwd {
    rf_context *c;
    const rf_hparams *hp;
    const rf_weights *w;
    const rf_batch *b;
    rf_scratch s;
    int il;               /* the layer being computed */
    const rf_layer *L;    /* its tensors */
    const float *act_src; /* source rows currently quantized in c->act, and as what */
    rf_type act_type;
};

/* How RoPE pairs the values of a head (llama.cpp's rope types). */
typedef enum rf_rope_style {
    RF_ROPE_NEOX, /* (i, i + n_rot/2): Gemma 3, Qwen2 */
    RF_ROPE_NORM, /* (2i, 2i + 1): Llama */
} rf_rope_style;

/* ---- scratch ---- */

/* Floats of scratch for n_batch tokens and n_threads threads (logits excluded), and bytes of
 * quantized-activation scratch. */
size_t rf_blk_scratch_floats(const rf_hparams *hp, int32_t n_batch, int32_t n_threads);
size_t rf_blk_act_bytes(const rf_hparams *hp, int32_t n_batch);
/* Values in the widest row of any matmul weight (the head's and the embedding's are n_embd). */
int64_t rf_blk_max_cols(const rf_hparams *hp);

/* ---- the step ---- */

/* One forward step of the batch (validated by rf_decode): embeddings, m->arch->layer for every
 * layer, the head for the rows that asked for outputs (c->logits or the top candidates). */
void rf_blk_forward(rf_context *c, const rf_batch *b);

/* ---- blocks: each runs over every token of the batch ---- */

/* One pre-norm GQA + SwiGLU layer (the RF_T_GQA_SWIGLU_LAYER tensors) with the given RoPE
 * pairing: norm, qkv (+ biases), RoPE, attention, Wo (+ bias), residual, FFN norm, SwiGLU,
 * residual. */
void rf_blk_gqa_swiglu_layer(rf_fwd *f, rf_rope_style style);

/* h = rms(x) * w */
void rf_blk_norm(rf_fwd *f, const float *w);
/* q, k, v = Wq h, Wk h, Wv h (h quantized once for the three) */
void rf_blk_qkv(rf_fwd *f);
/* Per token: the q/k/v biases when the layer has them, the per-head q/k norms when it has them,
 * RoPE of q and k (the layer's base: sliding-window layers use rope_base_swa), q *= attn_scale,
 * K and V into the cache (f16). */
void rf_blk_rope_cache(rf_fwd *f, rf_rope_style style);
/* att = softmax(q K^T) V per head over the positions each token sees (its sequence's cache up to
 * its own position; the last sliding_window ones on sliding-window layers), K/V heads shared by
 * head_count / head_count_kv query heads. */
void rf_blk_attention(rf_fwd *f);
/* dst = W src for the batch's rows (src quantized to W's partner type unless it already is). */
void rf_blk_project(rf_fwd *f, const rf_weight *w, const float *src, float *dst,
                    rf_prof_stage stage);
/* The residual: o += bias (when given); o = rms(o) * post_norm (when given); x += o; then, when
 * next_norm is given, h = rms(x) * next_norm (the next block's input). */
void rf_blk_residual(rf_fwd *f, const float *bias, const float *post_norm, const float *next_norm);
/* The gated FFN: g, u = Wgate h, Wup h; g = act(g) * u (GELU-tanh or SiLU); o = Wdown g. */
void rf_blk_ffn(rf_fwd *f, rf_glu glu);

#endif
