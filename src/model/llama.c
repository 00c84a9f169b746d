/* llama.c: the Llama architecture (Llama 1/2, SmolLM, TinyLlama, ...): a pre-norm decoder layer
 * with grouped-query attention, normal (interleaved-pair) RoPE (llama.cpp's rope type for llama)
 * with rope.freq_base over rope.dimension_count values, and a SwiGLU FFN:
 *   per layer: h = rms(x)*attn_norm; q,k,v = Wq h, Wk h, Wv h (+ biases when the file has them);
 *     RoPE of q and k pairing (2i, 2i+1); q *= 1/sqrt(head size); K,V to the cache;
 *     x += Wo softmax(q.K) V (+ bias); h = rms(x)*ffn_norm; x += Wdown(silu(Wgate h) * Wup h)
 *   logits = W_out rms(x)*output_norm (W_out = token_embd when the file has no output.weight).
 * Embeddings are used as stored. Hyperparameters are the llama.* keys; files that need what is
 * not implemented (Llama 3's rope_freqs factors, YaRN scaling) are refused by hparams.c.
 */
#include "model/blocks.h"

static const rf_tensor_spec llama_tensors[] = {RF_T_GQA_SWIGLU_LAYER};

static void llama_layer(rf_fwd *f) {
    rf_blk_gqa_swiglu_layer(f, RF_ROPE_NORM);
}

const rf_arch rf_arch_llama = {
    .name = "llama",
    .ctx_default = 0, /* llama.context_length is required, as llama.cpp requires it */
    .glu = RF_GLU_SILU,
    .tensors = llama_tensors,
    .n_tensors = (int)(sizeof llama_tensors / sizeof llama_tensors[0]),
    .layer = llama_layer,
};
