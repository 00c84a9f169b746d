/* roofline.h: the decode roofline of a model the engine has loaded: bytes read from memory per
 * decoded token, by role, and the ceiling tok/s that a memory bandwidth allows.
 *
 * Bytes per token is not the file size. The rules and the role classifier are the shared ones
 * of analysis/footprint.h and analysis/roles.h (the same accounting `roofline inspect` applies to
 * any GGUF or safetensors checkpoint through analysis/facts.h): matrix weights read in full each
 * step; an embedding table only the row of the token (unless it is also the output head: then in
 * full); per-layer embedding tables their rows; norms in full; vision and audio towers not at
 * all; the KV cache (f16) for the positions each layer can see at the given context (global
 * layers: all of them; sliding-window layers: at most the window), the geometry taken from the
 * model's validated hyperparameters.
 * Nothing here allocates; the model is borrowed.
 */
#ifndef RF_ANALYSIS_ROOFLINE_H
#define RF_ANALYSIS_ROOFLINE_H

#include <stdint.h>

#include "analysis/footprint.h"
#include "analysis/kvcap.h"
#include "model/model.h"

typedef struct rf_token_bytes {
    uint64_t matmul;    /* transformer body (layer matrices and other weights), read in full */
    uint64_t head;      /* output head (the tied embedding when there is no output.weight) */
    uint64_t embed_row; /* the embedding rows looked up: token table (0 when tied: counted in
                         * head) plus per-layer tables */
    uint64_t norms;     /* norm weights */
    uint64_t kv;        /* K and V read at the given context */
    uint64_t total;
    int32_t ctx;           /* context the kv figure is for */
    int tied;              /* the head is the embedding table */
    rf_token_read by_role; /* the same figures by role (footprint.h) */
} rf_token_bytes;

rf_token_bytes rf_model_token_bytes(const rf_model *m, int32_t ctx);

/* The model's KV geometry (from its hyperparameters) into *g. */
void rf_model_kv_geom(const rf_model *m, rf_kv_geom *g);

/* tok/s ceiling = bandwidth / bytes per token */
static inline double rf_roofline_tok_s(double bytes_per_s, const rf_token_bytes *b) {
    return b->total ? bytes_per_s / (double)b->total : 0;
}

#endif
