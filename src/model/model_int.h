/* model_int.h: what model.c, context.c and the architecture files share (not for callers
 * outside src/model/).
 *
 * An architecture (gemma3.c; a Llama-style one later) is a table of three functions: load
 * (read hyperparameters, bind tensors into its own weights struct), scratch (the float buffers
 * its forward pass needs for n_batch tokens) and forward (one rf_decode step). model.c and
 * context.c know nothing else about it.
 */
#ifndef RF_MODEL_MODEL_INT_H
#define RF_MODEL_MODEL_INT_H

#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "model/context.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "util/threadpool.h"

typedef struct rf_arch {
    const char *name; /* general.architecture value */
    /* Fills m->hp and m->weights (allocated by the arch, freed by free_weights). */
    rf_status (*load)(rf_model *m, rf_error *err);
    void (*free_weights)(void *weights);
    /* Floats of scratch the forward pass needs for n_batch tokens and n_threads threads with
     * positions up to n_ctx (logits excluded). */
    size_t (*scratch_floats)(const rf_model *m, int32_t n_batch, int32_t n_threads, int32_t n_ctx);
    /* Bytes of quantized-activation scratch for n_batch tokens. */
    size_t (*act_bytes)(const rf_model *m, int32_t n_batch);
    /* One forward step; the batch was validated by rf_decode. Writes c->logits for flagged
     * tokens in order. */
    void (*forward)(rf_context *c, const rf_batch *b);
} rf_arch;

struct rf_model {
    char *path;
    rf_gguf *gguf;
    rf_tokenizer *tok;
    rf_hparams hp;
    const rf_arch *arch;
    void *weights;
    rf_chat_format chat;
};

struct rf_context {
    const rf_model *model;
    const rf_kernels *k;
    rf_pool *pool;
    rf_kv_cache kv;
    int32_t n_ctx, n_batch, n_outputs, n_threads;
    float *scratch; /* arch-owned layout */
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

extern const rf_arch rf_arch_gemma3;

/* Binds tensor `name` as a matrix weight of shape [cols, rows] with a computable type. */
rf_status rf_model_bind_matrix(const rf_model *m, const char *name, int64_t cols, int64_t rows,
                               rf_weight *w, rf_error *err);
/* Binds an F32 vector of n values. */
rf_status rf_model_bind_vector(const rf_model *m, const char *name, int64_t n, const float **out,
                               rf_error *err);

#endif
