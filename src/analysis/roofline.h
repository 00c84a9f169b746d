/* roofline.h: the decode roofline of a model: bytes read from memory per decoded token, by role,
 * and the ceiling tok/s that a memory bandwidth allows.
 *
 * Bytes per token is not the file size: matrix weights are read in full each step; an embedding
 * table only the row of the token (unless it is also the output head: then in full); norm
 * vectors in full; the KV cache for the positions each layer can see at the given context
 * (global layers: all of them; sliding-window layers: at most the window), K and V in f16.
 * Nothing here allocates; the model is borrowed.
 */
#ifndef RF_ANALYSIS_ROOFLINE_H
#define RF_ANALYSIS_ROOFLINE_H

#include <stdint.h>

#include "model/model.h"

typedef struct rf_token_bytes {
    uint64_t matmul;    /* layer matrices, read in full */
    uint64_t head;      /* output head (the tied embedding when there is no output.weight) */
    uint64_t embed_row; /* the one embedding row looked up (0 extra when tied: counted in head) */
    uint64_t norms;     /* 1-D tensors */
    uint64_t kv;        /* K and V read at the given context */
    uint64_t total;
    int32_t ctx; /* context the kv figure is for */
    int tied;    /* the head is the embedding table */
} rf_token_bytes;

rf_token_bytes rf_model_token_bytes(const rf_model *m, int32_t ctx);

/* tok/s ceiling = bandwidth / bytes per token */
static inline double rf_roofline_tok_s(double bytes_per_s, const rf_token_bytes *b) {
    return b->total ? bytes_per_s / (double)b->total : 0;
}

#endif
