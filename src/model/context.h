/* context.h: the state of inference on a model: KV cache for n_seq sequences, scratch buffers
 * sized for n_batch tokens, the thread pool and the selected kernels.
 *
 * rf_decode runs one forward step over a batch of tokens that may belong to different sequences
 * at different positions (prefill chunks and one-token decodes alike); each weight matrix is read
 * once per step. Every allocation happens in rf_context_new: rf_decode allocates nothing.
 *
 * Ownership: the context borrows the model (free the context first) and owns everything else.
 * A context is used by one thread at a time.
 */
#ifndef RF_MODEL_CONTEXT_H
#define RF_MODEL_CONTEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "roofline/status.h"
#include "util/cpu.h"

typedef struct rf_context_params {
    int32_t n_ctx;     /* positions per sequence; 0: min(training context, 4096) */
    int32_t n_seq;     /* sequences with their own KV cache; default 1 */
    int32_t n_batch;   /* most tokens one rf_decode call takes; default 512 */
    int32_t n_outputs; /* most tokens per call whose logits are produced; 0: n_batch */
    int32_t n_threads; /* 0: physical cores */
    int32_t n_top;     /* candidates kept for RF_OUT_TOP rows; 0: 64 */
    int32_t isa;       /* -1: best this CPU runs; else an rf_isa */
    bool widen;        /* every matmul on the widened path (kernels/matmul.h): each weight row
                        * decoded to floats on every call and dotted in floats, instead of the
                        * native integer kernels; for measuring what a format costs an engine
                        * without native kernels for it. Default off */
} rf_context_params;

rf_context_params rf_context_default_params(void);

typedef struct rf_context rf_context;

rf_status rf_context_new(const rf_model *m, const rf_context_params *p, rf_context **out,
                         rf_error *err);
void rf_context_free(rf_context *c);

/* What a batch row asks for (rf_batch.logits[i]). */
enum {
    RF_OUT_NONE = 0,   /* nothing: a prompt token whose logits nobody needs */
    RF_OUT_LOGITS = 1, /* all n_vocab logits */
    RF_OUT_TOP = 2,    /* only the n_top largest (id, logit) pairs: enough for greedy and top-k
                        * sampling; when every output row of a batch asks for this, the output
                        * head keeps per-thread heaps instead of writing n_vocab logits */
};

/* A batch: n tokens; token i goes to sequence seq[i] at position pos[i] (each sequence's
 * positions must continue where its cache ends, in order); logits[i] is an RF_OUT_* value
 * (logits may be NULL: no outputs). */
typedef struct rf_batch {
    int32_t n;
    const int32_t *token;
    const int32_t *pos;
    const int32_t *seq;
    const int8_t *logits;
} rf_batch;

/* Runs the batch. RF_ERR_ARG for a malformed batch (token id, sequence, position order, sizes),
 * RF_ERR_CONTEXT when a position would pass n_ctx; nothing is changed on error. */
rf_status rf_decode(rf_context *c, const rf_batch *b, rf_error *err);

/* Logits (n_vocab floats) of the i-th token that asked for them in the last batch; NULL when i is
 * out of range. Valid until the next rf_decode. */
const float *rf_context_logits(const rf_context *c, int32_t i);
int32_t rf_context_n_outputs(const rf_context *c);

/* The n_top best (id, logit) pairs of the i-th output of the last batch, sorted by descending
 * logit (ties: lower id first); returns n_top, or 0 when that output asked for RF_OUT_LOGITS
 * (use rf_context_logits) or i is out of range. Valid until the next rf_decode. */
int32_t rf_context_top(const rf_context *c, int32_t i, const int32_t **ids, const float **vals);
int32_t rf_context_n_top(const rf_context *c);

/* False when a logit of the i-th output of the last batch was a NaN or an infinity (anywhere in
 * the row, RF_OUT_TOP rows included: the head checks every value it computes, before the final
 * softcap, which would turn an infinity into a finite cap), or i is out of range. Such an output
 * is garbage: weights or activations of the model are NaN/Inf. Nothing is sampled from it. */
bool rf_context_output_finite(const rf_context *c, int32_t i);

/* Forgets a sequence's cache (its next position is 0 again). */
void rf_context_seq_reset(rf_context *c, int32_t seq);
int32_t rf_context_seq_len(const rf_context *c, int32_t seq);
/* Drops a sequence's positions from n_keep on, so generation can continue from a shared prefix.
 * Fails with RF_ERR_ARG, changing nothing, when n_keep is past the end or when a sliding-window
 * layer's ring no longer holds the window that position n_keep needs (then reset instead). */
rf_status rf_context_seq_truncate(rf_context *c, int32_t seq, int32_t n_keep, rf_error *err);
/* Whether rf_context_seq_truncate(c, seq, n_keep) would succeed. On a model with sliding-window
 * layers a ring keeps only its last window + n_batch positions, so keeping n_keep needs
 * n_keep - window + 1 to be among them: shorter prefixes of a long sequence cannot be kept. */
bool rf_context_seq_can_keep(const rf_context *c, int32_t seq, int32_t n_keep);
int32_t rf_context_n_ctx(const rf_context *c);
uint64_t rf_context_kv_bytes(const rf_context *c); /* KV cache memory allocated */
int32_t rf_context_n_batch(const rf_context *c);
int32_t rf_context_n_threads(const rf_context *c);
rf_isa rf_context_isa(const rf_context *c);
bool rf_context_widened(const rf_context *c); /* the widened matmul path is on */
const rf_model *rf_context_model(const rf_context *c);

/* Where decode time goes: nanoseconds summed over rf_decode calls per stage, collected only
 * after rf_context_profile_enable (two clock reads per stage; off by default). */
typedef enum rf_prof_stage {
    RF_PROF_EMBED, /* embedding rows, RoPE tables */
    RF_PROF_QUANT, /* activation quantization */
    RF_PROF_QKV,   /* q, k, v projections */
    RF_PROF_ROPE,  /* q/k biases and norms, RoPE, K/V to the cache */
    RF_PROF_ATTN,  /* attention */
    RF_PROF_WO,    /* output projection */
    RF_PROF_NORM,  /* residual norms */
    RF_PROF_UP,    /* gate and up projections */
    RF_PROF_GLU,   /* the gate activation times up (GELU or SiLU) */
    RF_PROF_DOWN,  /* down projection */
    RF_PROF_HEAD,  /* final norm and output head */
    RF_PROF_COUNT
} rf_prof_stage;

typedef struct rf_profile {
    int64_t ns[RF_PROF_COUNT];
    int64_t calls;  /* rf_decode calls profiled */
    int64_t tokens; /* tokens in them */
} rf_profile;

void rf_context_profile_enable(rf_context *c, int on); /* also resets the counters */
rf_profile rf_context_profile(const rf_context *c);
const char *rf_prof_stage_name(rf_prof_stage s);

#endif
