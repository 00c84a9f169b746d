/* gemma3.c: the Gemma 3 architecture: its hyperparameter rules, its layer's tensors and the layer
 * of the forward pass, composed from the blocks of blocks.h (docs/gemma3.md has the derivation
 * and the llama.cpp numerics we match):
 *   x = embed(token) * sqrt(n_embd)
 *   per layer: h = rms(x)*attn_norm; q,k,v = Wq h, Wk h, Wv h; q,k per-head rms with q_norm,
 *     k_norm; RoPE (NEOX pairing; base 10000 on sliding layers, rope.freq_base on global ones);
 *     q *= attn_scale; K,V to the cache (f16); softmax(q.K) V over the visible window;
 *     x += rms(Wo att)*post_attention_norm; h = rms(x)*ffn_norm;
 *     x += rms(Wdown(gelu_tanh(Wgate h) * Wup h))*post_ffw_norm
 *   logits = W_out rms(x)*output_norm (W_out tied to the embedding unless output.weight exists),
 *   then the final logit softcap when the file sets one.
 */
#include <math.h>

#include "model/blocks.h"

static rf_status g3_finish_hparams(rf_model *m, rf_error *err) {
    (void)err;
    rf_hparams *hp = &m->hp;
    /* Gemma 3 27B scales queries by 1/sqrt(n_embd/n_head); the others by 1/sqrt(head size). */
    hp->attn_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                                       : 1.0f / sqrtf((float)hp->head_dim_k);
    hp->embd_scale = sqrtf((float)hp->n_embd);
    return RF_OK;
}

static const rf_tensor_spec g3_tensors[] = {
    RF_T_VEC("attn_norm.weight", attn_norm, RF_DIM_E),
    RF_T_VEC("attn_q_norm.weight", q_norm, RF_DIM_DK),
    RF_T_VEC("attn_k_norm.weight", k_norm, RF_DIM_DK),
    RF_T_VEC("post_attention_norm.weight", post_attn_norm, RF_DIM_E),
    RF_T_VEC("ffn_norm.weight", ffn_norm, RF_DIM_E),
    RF_T_VEC("post_ffw_norm.weight", post_ffw_norm, RF_DIM_E),
    RF_T_MAT("attn_q.weight", wq, RF_DIM_E, RF_DIM_Q),
    RF_T_MAT("attn_k.weight", wk, RF_DIM_E, RF_DIM_K),
    RF_T_MAT("attn_v.weight", wv, RF_DIM_E, RF_DIM_V),
    RF_T_MAT("attn_output.weight", wo, RF_DIM_O, RF_DIM_E),
    RF_T_MAT("ffn_gate.weight", gate, RF_DIM_E, RF_DIM_F),
    RF_T_MAT("ffn_up.weight", up, RF_DIM_E, RF_DIM_F),
    RF_T_MAT("ffn_down.weight", down, RF_DIM_F, RF_DIM_E),
};

static void g3_layer(rf_fwd *f) {
    const rf_layer *L = f->L;
    rf_blk_norm(f, L->attn_norm);
    rf_blk_qkv(f);
    rf_blk_rope_cache(f, RF_ROPE_NEOX); /* q_norm, k_norm, the layer's base */
    rf_blk_attention(f);
    rf_blk_project(f, &L->wo, f->s.att, f->s.o, RF_PROF_WO);
    rf_blk_residual(f, NULL, L->post_attn_norm, L->ffn_norm);
    rf_blk_ffn(f, RF_GLU_GELU);
    rf_blk_residual(f, NULL, L->post_ffw_norm, NULL);
}

const rf_arch rf_arch_gemma3 = {
    .name = "gemma3",
    .hp_features = RF_HP_SWA | RF_HP_SOFTCAP,
    .ctx_default = 8192,
    .glu = RF_GLU_GELU,
    .tensors = g3_tensors,
    .n_tensors = (int)(sizeof g3_tensors / sizeof g3_tensors[0]),
    .finish_hparams = g3_finish_hparams,
    .layer = g3_layer,
};
