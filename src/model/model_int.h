/* model_int.h: what model.c, context.c, hparams.c, weights.c, blocks.c and the architecture files
 * share (not for callers outside src/model/).
 *
 * An architecture (gemma3.c, qwen2.c, llama.c) is a table, rf_arch: its name (the value of
 * general.architecture, which is also the prefix of its hyperparameter keys), the optional
 * hyperparameters it reads (RF_HP_*), the tensors of one layer (rf_tensor_spec, bound into the
 * shared rf_layer by weights.c), a hook for its own derived hyperparameters and the function that
 * runs one layer of the forward pass from the blocks of blocks.h. model.c loads every
 * architecture the same way (hparams.c reads the keys with their range checks, weights.c binds
 * the tensors) and rf_decode runs rf_blk_forward, which calls the layer function per layer; so a
 * new Llama-style architecture is a short file plus one line in model.c's registry.
 */
#ifndef RF_MODEL_MODEL_INT_H
#define RF_MODEL_MODEL_INT_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "model/context.h"
#include "model/kv_cache.h"
#include "model/chat.h"
#include "model/model.h"
#include "util/threadpool.h"

typedef struct rf_fwd rf_fwd;         /* one forward step in flight (blocks.h) */
typedef struct rf_weights rf_weights; /* the bound tensors (weights.h) */

/* Optional hyperparameter groups an architecture reads beyond the common ones (hparams.c). */
enum {
    RF_HP_SWA = 1u << 0,     /* attention.sliding_window, its layer pattern, rope.freq_base_swa */
    RF_HP_SOFTCAP = 1u << 1, /* final_logit_softcapping */
};

/* Sizes a tensor's dimension is bound to (weights.c checks every shape). */
typedef enum rf_dim {
    RF_DIM_E,  /* embedding_length */
    RF_DIM_F,  /* feed_forward_length */
    RF_DIM_Q,  /* head_count * key_length: queries */
    RF_DIM_K,  /* head_count_kv * key_length: keys */
    RF_DIM_V,  /* head_count_kv * value_length: values */
    RF_DIM_O,  /* head_count * value_length: attention output */
    RF_DIM_DK, /* key_length: one head (per-head norms) */
} rf_dim;

/* One tensor of a layer: blk.<il>.<name> bound into the rf_layer member at `field`, a matrix
 * (rf_weight, [cols, rows], any computable type) or an F32 vector of cols values. An optional
 * tensor that is absent leaves the member zero (NULL data). */
typedef struct rf_tensor_spec {
    const char *name; /* "attn_q.weight" */
    size_t field;     /* offsetof(rf_layer, member) */
    int matrix;
    int optional;
    rf_dim cols, rows; /* rows: matrices only */
} rf_tensor_spec;

typedef enum rf_glu {
    RF_GLU_GELU, /* gelu_tanh(gate) * up (Gemma) */
    RF_GLU_SILU, /* silu(gate) * up: SwiGLU (Llama, Qwen2) */
} rf_glu;

typedef struct rf_arch {
    const char *name;     /* general.architecture value and hyperparameter key prefix */
    uint32_t hp_features; /* RF_HP_* */
    int32_t ctx_default;  /* context_length when the file has none; 0: the key is required */
    rf_glu glu;           /* the FFN's gate activation */
    const rf_tensor_spec *tensors; /* one layer's tensors */
    int n_tensors;
    /* The architecture's own rules after the common keys are read (attention and embedding
     * scales, ...); NULL: none. */
    rf_status (*finish_hparams)(rf_model *m, rf_error *err);
    /* One layer of the forward pass over the batch in f (f->il, f->L set by rf_blk_forward). */
    void (*layer)(rf_fwd *f);
} rf_arch;

struct rf_model {
    char *path;
    rf_gguf *gguf;
    rf_tokenizer *tok;
    rf_hparams hp;
    const rf_arch *arch;
    rf_weights *weights; /* weights.c binds and frees */
    rf_chat_template chat;
};

struct rf_context {
    const rf_model *model;
    const rf_kernels *k;
    rf_pool *pool;
    rf_kv_cache kv;
    int32_t n_ctx, n_batch, n_outputs, n_threads;
    float *scratch; /* blocks.c's layout */
    size_t scratch_n;
    void *act; /* quantized activations */
    size_t act_n;
    float *logits; /* [n_outputs][n_vocab] */
    int32_t n_top;
    int32_t *top_ids;    /* [n_outputs][n_top] */
    float *top_vals;     /* [n_outputs][n_top] */
    int8_t *out_mode;    /* [n_outputs] RF_OUT_* of each output of the last batch */
    uint8_t *out_finite; /* [n_outputs] 1: every logit of that output was finite */
    void *top_scratch;   /* rf_matmul_topk scratch */
    rf_widen widen;      /* widened path: per-thread decoded weight rows; rows NULL when off */
    int32_t n_out;       /* outputs of the last batch */
    int profiling;
    rf_profile prof;
};

/* Stage timing for rf_context_profile: t = rf_prof_mark(c, t, stage) adds the time since t to
 * the stage when profiling and returns the new mark. */
#include "util/clock.h"
static inline int64_t rf_prof_mark(rf_context *c, int64_t t, rf_prof_stage s) {
    if (!c->profiling) return 0;
    int64_t now = rf_now_ns();
    c->prof.ns[s] += now - t;
    return now;
}

/* Reads and checks the hyperparameters of m->arch under its key prefix into m->hp (hparams.c):
 * the common keys, the arch's RF_HP_* groups, then its finish_hparams rules. */
rf_status rf_hparams_load(rf_model *m, rf_error *err);

#endif
