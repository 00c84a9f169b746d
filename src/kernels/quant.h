/* quant.h: block layouts of the quantized formats and their scalar reference kernels.
 *
 * The reference kernels are the oracle for every SIMD kernel and the fallback on any CPU. They
 * follow the pairing llama.cpp's CPU backend uses: a weight row of type T is dotted against
 * activations quantized once to rf_vec_dot_type(T) (Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for
 * Q4_1/Q5_1, Q8_K for the K-quants, F16/BF16/F32 for the float types), so results match the
 * peer's numerics and a fast kernel can be checked bit-for-bit-ish against these.
 *
 * Nothing here allocates or keeps state; every function works on caller-owned buffers.
 * n is always a multiple of the type's block size (callers check rf_type_row_bytes first).
 */
#ifndef RF_KERNELS_QUANT_H
#define RF_KERNELS_QUANT_H

#include <stdint.h>

#include "kernels/types.h"

#define RF_QK           32  /* values per block of the 32-wide formats */
#define RF_QK_K         256 /* values per super-block of the K-quants */
#define RF_K_SCALE_SIZE 12

/* All fp16 fields are IEEE binary16 bit patterns. */
typedef struct {
    uint16_t d;
    uint8_t qs[RF_QK / 2];
} rf_block_q4_0; /* 18 B: value = ((nibble) - 8) * d; low nibbles are values 0..15 */

typedef struct {
    uint16_t d, m;
    uint8_t qs[RF_QK / 2];
} rf_block_q4_1; /* 20 B: value = nibble * d + m */

typedef struct {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[RF_QK / 2];
} rf_block_q5_0; /* 22 B: value = (nibble | highbit << 4) - 16) * d */

typedef struct {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[RF_QK / 2];
} rf_block_q5_1; /* 24 B: value = (nibble | highbit << 4) * d + m */

typedef struct {
    uint16_t d;
    int8_t qs[RF_QK];
} rf_block_q8_0; /* 34 B: value = q * d */

typedef struct {
    uint16_t d, s; /* s = d * sum(qs) */
    int8_t qs[RF_QK];
} rf_block_q8_1; /* 36 B, activations only */

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[RF_K_SCALE_SIZE];
    uint8_t qs[RF_QK_K / 2];
} rf_block_q4_k; /* 144 B */

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[RF_K_SCALE_SIZE];
    uint8_t qh[RF_QK_K / 8];
    uint8_t qs[RF_QK_K / 2];
} rf_block_q5_k; /* 176 B */

typedef struct {
    uint8_t ql[RF_QK_K / 2];
    uint8_t qh[RF_QK_K / 4];
    int8_t scales[RF_QK_K / 16];
    uint16_t d;
} rf_block_q6_k; /* 210 B */

typedef struct {
    float d;
    int8_t qs[RF_QK_K];
    int16_t bsums[RF_QK_K / 16];
} rf_block_q8_k; /* 292 B, activations only */

/* The activation type a weight of type t is dotted against; RF_TYPE_COUNT when t has no dot. */
rf_type rf_vec_dot_type(rf_type t);

/* Decodes n values of a row of type t (any known computable type, and Q8_1/Q8_K) into dst. */
void rf_ref_dequantize_row(rf_type t, const void *src, float *dst, int64_t n);

/* Encodes n floats into a row of type t. For the activation types (F32, F16, BF16, Q8_0, Q8_1,
 * Q8_K) this is the exact rounding the dot kernels expect. For the other weight formats it is
 * the weight encoder of rf_ref_quantize_weights. */
void rf_ref_quantize_row(rf_type t, const float *src, void *dst, int64_t n);

/* Encodes n floats into a weight row of type t (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q4_K, Q5_K, Q6_K), as stored in a model file: for F16, BF16 and the 32-value formats the
 * bytes llama.cpp's reference encoders (quantize_row_*_ref, llama-quantize without an importance
 * matrix) write; for the K-quants a round-to-nearest encoder in the standard layout (no search;
 * not llama.cpp's bytes). Only Q8_0 differs from rf_ref_quantize_row (which encodes Q8_0 as
 * activations). Error bounds: quant_ref.c, at each encoder. */
void rf_ref_quantize_weights(rf_type t, const float *src, void *dst, int64_t n);

/* Dot product of a weight row w (type t, n values) with an activation row a already quantized
 * to rf_vec_dot_type(t). */
float rf_ref_vec_dot(rf_type t, int64_t n, const void *w, const void *a);

/* 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block. */
static inline void rf_k_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

#endif
