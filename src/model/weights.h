/* weights.h: a model's tensors bound to the layout the forward pass reads (weights.c).
 *
 * rf_weights_bind binds token_embd, output (or the embedding again: a tied head), output_norm and
 * every layer's tensors from the architecture's rf_tensor_spec table into one rf_weights,
 * checking each shape and type; an architecture's layer then reads the members it bound
 * (optional ones are NULL / zero when the file has none). It also reads n_vocab (the embedding's
 * rows, checked against <arch>.vocab_size when the file has it) into m->hp.
 *
 * Calls go one way: model.c (loading) calls this module; blocks.c (the forward pass) reads the
 * types below; neither is called from here.
 *
 * Ownership: rf_weights points into the model's file mapping (never copied); rf_weights_bind
 * allocates it (and the GELU table when the FFN needs it) into m->weights, also on failure, and
 * rf_weights_free frees both.
 */
#ifndef RF_MODEL_WEIGHTS_H
#define RF_MODEL_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model_int.h"

/* One layer's tensors, the union of what the architectures have. */
typedef struct rf_layer {
    const float *attn_norm;      /* [E] */
    const float *q_norm;         /* [Dk] per-head RMSNorm of the queries (Gemma 3) */
    const float *k_norm;         /* [Dk] per-head RMSNorm of the keys (Gemma 3) */
    const float *post_attn_norm; /* [E] RMSNorm of the attention output (Gemma 3) */
    const float *ffn_norm;       /* [E] */
    const float *post_ffw_norm;  /* [E] RMSNorm of the FFN output (Gemma 3) */
    const float *bq, *bk, *bv;   /* [Q], [K], [V] projection biases (Qwen2) */
    const float *bo;             /* [E] output projection bias */
    rf_weight wq;                /* [E] -> [Q] */
    rf_weight wk;                /* [E] -> [K] */
    rf_weight wv;                /* [E] -> [V] */
    rf_weight wo;                /* [O] -> [E] */
    rf_weight gate, up;          /* [E] -> [F] */
    rf_weight down;              /* [F] -> [E] */
} rf_layer;

struct rf_weights {
    rf_weight tok_embd;       /* [E, n_vocab] */
    rf_weight output;         /* [E, n_vocab]; the same data as tok_embd when tied */
    const float *output_norm; /* [E] */
    int tied;
    uint16_t *gelu; /* binary16 GELU of every binary16 input (llama.cpp's table); GeGLU only */
    rf_layer layers[];
};

/* Entries of an architecture's rf_tensor_spec table: an F32 vector of n values or a matrix
 * [cols, rows] bound into rf_layer's member; the RF_T_OPT_ forms may be absent from the file. */
#define RF_T_VEC(name, member, n)                                                                  \
    { name, offsetof(rf_layer, member), 0, 0, n, RF_DIM_E }
#define RF_T_MAT(name, member, cols, rows)                                                         \
    { name, offsetof(rf_layer, member), 1, 0, cols, rows }
#define RF_T_OPT_VEC(name, member, n)                                                              \
    { name, offsetof(rf_layer, member), 0, 1, n, RF_DIM_E }

/* The tensors of a pre-norm GQA decoder layer with a SwiGLU FFN (Llama, Qwen2): attention and
 * FFN norms, q/k/v/o projections with optional biases, gate/up/down; the entries of a table. */
#define RF_T_GQA_SWIGLU_LAYER                                                                      \
    RF_T_VEC("attn_norm.weight", attn_norm, RF_DIM_E),                                             \
        RF_T_MAT("attn_q.weight", wq, RF_DIM_E, RF_DIM_Q),                                         \
        RF_T_MAT("attn_k.weight", wk, RF_DIM_E, RF_DIM_K),                                         \
        RF_T_MAT("attn_v.weight", wv, RF_DIM_E, RF_DIM_V),                                         \
        RF_T_OPT_VEC("attn_q.bias", bq, RF_DIM_Q), RF_T_OPT_VEC("attn_k.bias", bk, RF_DIM_K),      \
        RF_T_OPT_VEC("attn_v.bias", bv, RF_DIM_V),                                                 \
        RF_T_MAT("attn_output.weight", wo, RF_DIM_O, RF_DIM_E),                                    \
        RF_T_OPT_VEC("attn_output.bias", bo, RF_DIM_E),                                            \
        RF_T_VEC("ffn_norm.weight", ffn_norm, RF_DIM_E),                                           \
        RF_T_MAT("ffn_gate.weight", gate, RF_DIM_E, RF_DIM_F),                                     \
        RF_T_MAT("ffn_up.weight", up, RF_DIM_E, RF_DIM_F),                                         \
        RF_T_MAT("ffn_down.weight", down, RF_DIM_F, RF_DIM_E)

/* Binds every tensor of m->arch into a new m->weights (n_vocab from token_embd). */
rf_status rf_weights_bind(rf_model *m, rf_error *err);
void rf_weights_free(rf_weights *w);

#endif
