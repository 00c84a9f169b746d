/* model.h: a loaded model: hyperparameters, weights (views into the mapped GGUF file), tokenizer
 * and the architecture that computes it.
 *
 * rf_model_load opens the file, checks the architecture is one roofline implements, reads and
 * validates the hyperparameters and binds every tensor with its expected shape and a computable
 * type; any problem is an error naming the file and the key or tensor. Weights are never copied.
 *
 * Ownership: the caller frees the model with rf_model_free after every rf_context made from it
 * is freed. A loaded model is read-only and may be shared by threads.
 */
#ifndef RF_MODEL_MODEL_H
#define RF_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "format/gguf.h"
#include "model/tokenizer.h"
#include "roofline/status.h"

#define RF_MAX_LAYERS   512
#define RF_MAX_HEAD_DIM 512

typedef struct rf_chat_template rf_chat_template; /* model/chat.h */

typedef struct rf_hparams {
    char arch[32];
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_ff;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim_k;
    int32_t head_dim_v;
    int32_t n_ctx_train;
    int32_t n_rot;          /* rotary dims per head */
    int32_t sliding_window; /* 0: none */
    float rms_eps;
    float rope_base;            /* global layers */
    float rope_base_swa;        /* sliding-window layers */
    float rope_scale;           /* position scale on global layers (1/factor) */
    float attn_scale;           /* applied to q after RoPE */
    float embd_scale;           /* token embeddings are multiplied by this */
    float final_softcap;        /* 0: none */
    uint8_t swa[RF_MAX_LAYERS]; /* 1 when layer il uses the sliding window */
} rf_hparams;

typedef struct rf_model rf_model;

rf_status rf_model_load(const char *path, rf_model **out, rf_error *err);
void rf_model_free(rf_model *m);

const rf_hparams *rf_model_hparams(const rf_model *m);
const rf_tokenizer *rf_model_tokenizer(const rf_model *m);
const rf_gguf *rf_model_gguf(const rf_model *m);
/* The chat template recognised from the file's tokenizer.chat_template (model/chat.h); a file
 * without one gets its architecture's (gemma for gemma3), else "unknown". */
const rf_chat_template *rf_model_chat_template(const rf_model *m);
/* Forces a family (the user's --chat-template): the file's default system text is kept. */
void rf_model_set_chat_family(rf_model *m, int family);
const char *rf_model_path(const rf_model *m);

#endif
