/* qwen2.c: the Qwen2 architecture (Qwen2, Qwen2.5): a pre-norm decoder layer with grouped-query
 * attention whose q, k and v projections carry biases, NEOX RoPE (llama.cpp's rope type for
 * qwen2) with rope.freq_base over rope.dimension_count values, and a SwiGLU FFN:
 *   per layer: h = rms(x)*attn_norm; q,k,v = Wq h + bq, Wk h + bk, Wv h + bv; RoPE of q and k;
 *     q *= 1/sqrt(head size); K,V to the cache; x += Wo softmax(q.K) V; h = rms(x)*ffn_norm;
 *     x += Wdown(silu(Wgate h) * Wup h)
 *   logits = W_out rms(x)*output_norm (W_out = token_embd when the file has no output.weight).
 * Embeddings are used as stored (no scale). Hyperparameters are the qwen2.* keys.
 */
#include "model/blocks.h"

static const rf_tensor_spec qwen2_tensors[] = {RF_T_GQA_SWIGLU_LAYER};

static void qwen2_layer(rf_fwd *f) {
    rf_blk_gqa_swiglu_layer(f, RF_ROPE_NEOX);
}

const rf_arch rf_arch_qwen2 = {
    .name = "qwen2",
    .ctx_default = 0, /* qwen2.context_length is required, as llama.cpp requires it */
    .glu = RF_GLU_SILU,
    .tensors = qwen2_tensors,
    .n_tensors = (int)(sizeof qwen2_tensors / sizeof qwen2_tensors[0]),
    .layer = qwen2_layer,
};
