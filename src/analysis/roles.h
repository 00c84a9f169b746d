/* roles.h: what a tensor is for, from its name: the one classifier that the memory breakdown and
 * the bytes-per-token accounting of every format share (GGUF and safetensors).
 *
 * Names are matched against the conventions of the common architectures:
 *   GGUF (llama.cpp): token_embd, per_layer_token_embd (Gemma 3n), blk.N.*, output, *_norm,
 *                     multimodal projector files v.* / mm.* (vision) and a.* (audio);
 *   Hugging Face:     model.embed_tokens, model.language_model.* (Gemma 3/3n, multimodal
 *                     wrappers), model.layers.N.*, lm_head, embed_tokens_per_layer and the
 *                     per_layer_* tensors of Gemma 3n, vision_tower / vision_model / visual /
 *                     multi_modal_projector / embed_vision, audio_tower / embed_audio,
 *                     *norm* / ln_* layers.
 * The order of the tests matters and is part of the contract: a tower claims everything under it
 * (its norms too); then the per-layer embedding table, the token embedding table, the output
 * head, norms; everything else is the transformer body (read in full each step: the
 * conservative choice for a name the classifier does not know).
 * Pure functions; no state, nothing allocated.
 */
#ifndef RF_ANALYSIS_ROLES_H
#define RF_ANALYSIS_ROLES_H

#include <stddef.h>

typedef enum rf_role {
    RF_ROLE_TOKEN_EMBD = 0, /* the vocabulary embedding table: one row per token looked up */
    RF_ROLE_PER_LAYER_EMBD, /* Gemma 3n per-layer embedding tables: one row per token */
    RF_ROLE_BODY,           /* transformer layers' matrices, biases and other weights */
    RF_ROLE_VISION,         /* vision tower and its projector: not read to decode text */
    RF_ROLE_AUDIO,          /* audio tower and its projector: not read to decode text */
    RF_ROLE_NORMS,          /* normalisation weights of the text model */
    RF_ROLE_HEAD,           /* the output head (lm_head / output.weight) when stored */
    RF_ROLE_COUNT
} rf_role;

/* The role of the tensor named name[0..len) (not necessarily NUL-terminated). */
rf_role rf_role_classify(const char *name, size_t len);

/* "token embeddings", "per-layer embeddings", "transformer body", "vision tower",
 * "audio tower", "norms", "output head"; "?" for a value out of range. Never NULL. */
const char *rf_role_name(rf_role r);

/* A short machine name: "token_embd", "per_layer_embd", "body", "vision", "audio", "norms",
 * "head" (for JSON reports); "?" out of range. */
const char *rf_role_key(rf_role r);

#endif
