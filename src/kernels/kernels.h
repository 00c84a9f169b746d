/* kernels.h: the run-time-dispatched compute kernels the model code calls.
 *
 * One rf_kernels table per instruction-set level (scalar reference, AVX2, AVX-512, NEON); the
 * tables are static constants, chosen once at context creation by CPUID (rf_kernels_best) or by
 * name (for tests and for comparing paths). Every fast kernel has the scalar one as its oracle.
 *
 * Nothing here allocates or keeps state.
 */
#ifndef RF_KERNELS_KERNELS_H
#define RF_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/quant.h"
#include "kernels/types.h"
#include "util/cpu.h"

typedef struct rf_kernels {
    rf_isa isa;
    /* Quantizes n floats (n a multiple of the block size) to the activation type act (F32, F16,
     * BF16, Q8_0, Q8_1 or Q8_K) as rf_ref_quantize_row does. */
    void (*quantize_act)(rf_type act, const float *x, void *dst, int64_t n);
    /* out[r] = dot(weight row r, a) for r in [0, n_rows): rows of n values of type t, w_stride
     * bytes apart; a is one activation row of rf_vec_dot_type(t). */
    void (*dot_rows)(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                     const void *a, float *out);
    /* The same dot for n_tok activation rows at once: out[j * out_stride + r] = dot(weight row r,
     * activation row j) for r < n_rows, j < n_tok; activation row j is at a + j * a_stride, of
     * rf_vec_dot_type(t). The kernel of prefill and batched decode: the SIMD tables unpack each
     * weight block once for all the tokens (tiles of rows, one row per vector lane) instead of
     * once per token; give it many rows and tokens at once (it chunks them itself). Every result
     * has exactly the bits dot_rows gives for that token (batch invariance: what else is in a
     * batch never changes a sequence's logits); same numerics contract as dot_rows. */
    void (*dot_tile)(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                     int64_t n_tok, const void *a, size_t a_stride, float *out, int64_t out_stride);
    /* Decodes n values of a weight row of type t into floats, bit-identical to
     * rf_ref_dequantize_row (the widened matmul path's inner loop, matmul.h). */
    void (*dequantize_row)(rf_type t, const void *src, float *dst, int64_t n);

    /* Vector pieces of attention and the FFN (vec_*.c). */
    /* dot of n floats with n halves */
    float (*dot_f32_f16)(const float *x, const uint16_t *h, int n);
    /* acc[i] += a * h[i] for i < n */
    void (*axpy_f16)(float *acc, const uint16_t *h, float a, int n);
    /* y[i] = f32(h[i]) for i < n */
    void (*cvt_f16_f32)(const uint16_t *h, float *y, int n);
    /* dot of n floats */
    float (*dot_f32)(const float *x, const float *y, int n);
    /* acc[i] += a * x[i] for i < n */
    void (*axpy_f32)(float *acc, const float *x, float a, int n);
    /* Attention over a run of cached f16 rows (row j at h + j * h_stride, n values each):
     * out[j] = dot_f32(x, f32(row j), n) for j < n_rows, and for j = 0 .. n_rows-1 in order
     * axpy_f32(acc, f32(row j), a[j], n): exactly the bits of those calls on the widened rows
     * (f16 to f32 is exact), without the conversions and calls per row */
    void (*dot_f32_f16_rows)(const float *x, const uint16_t *h, size_t h_stride, int n_rows, int n,
                             float *out);
    void (*axpy_f16_rows)(float *acc, const uint16_t *h, size_t h_stride, const float *a,
                          int n_rows, int n);
    /* x[i] = exp(x[i] - m) for i < n; returns the sum (softmax numerators). The SIMD versions use
     * a polynomial exp accurate to a few ulp; -inf inputs give 0. */
    float (*exp_sum)(float *x, int n, float m);
    /* out[i] = gelu(g[i]) * u[i], gelu read from a 65536-entry binary16 table indexed by the
     * binary16 of g[i] (rf_gelu_table), with g <= -10 -> 0 and g >= 10 -> g, as llama.cpp */
    void (*geglu)(const uint16_t *table, const float *g, const float *u, float *out, int64_t n);
    /* out[i] = silu(g[i]) * u[i], silu(x) = x / (1 + exp(-x)) (SwiGLU). The scalar one uses expf;
     * the SIMD ones a polynomial exp (a few ulp), so they agree within ~1e-6 relative */
    void (*swiglu)(const float *g, const float *u, float *out, int64_t n);
    /* Reads n bytes (n a multiple of 64, p 64-byte aligned) as a streaming load and returns a
     * checksum: the memory-bandwidth yardstick */
    uint64_t (*read_sum)(const void *p, size_t n);
} rf_kernels;

typedef void (*rf_dot_rows_fn)(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a, float *out);
/* dot_tile as dot_rows per token, on tiles of 16 rows so a tile stays in cache for every token
 * (exactly dot_rows' bits): the scalar and NEON tables' dot_tile. */
void rf_dot_tile_by_rows(rf_dot_rows_fn dot_rows, rf_type t, int64_t n, int64_t n_rows,
                         const void *w, size_t w_stride, int64_t n_tok, const void *a,
                         size_t a_stride, float *out, int64_t out_stride);

/* Fills table[65536] with binary16 GELU (tanh form) of every binary16 input. */
void rf_gelu_table(uint16_t *table);

/* The portable vector pieces (vec_scalar.c), also the fallback of the SIMD tables. */
float rf_scalar_dot_f32_f16(const float *x, const uint16_t *h, int n);
void rf_scalar_axpy_f16(float *acc, const uint16_t *h, float a, int n);
void rf_scalar_cvt_f16_f32(const uint16_t *h, float *y, int n);
float rf_scalar_dot_f32(const float *x, const float *y, int n);
void rf_scalar_axpy_f32(float *acc, const float *x, float a, int n);
float rf_scalar_exp_sum(float *x, int n, float m);
void rf_scalar_dot_f32_f16_rows(const float *x, const uint16_t *h, size_t h_stride, int n_rows,
                                int n, float *out);
void rf_scalar_axpy_f16_rows(float *acc, const uint16_t *h, size_t h_stride, const float *a,
                             int n_rows, int n);
void rf_scalar_geglu(const uint16_t *table, const float *g, const float *u, float *out, int64_t n);
void rf_scalar_swiglu(const float *g, const float *u, float *out, int64_t n);
uint64_t rf_scalar_read_sum(const void *p, size_t n);
#if defined(__x86_64__)
/* The AVX2 + FMA + F16C pieces (vec_avx2.c), shared by the AVX2 and AVX-512 tables. */
float rf_avx2_dot_f32_f16(const float *x, const uint16_t *h, int n);
void rf_avx2_axpy_f16(float *acc, const uint16_t *h, float a, int n);
void rf_avx2_cvt_f16_f32(const uint16_t *h, float *y, int n);
float rf_avx2_dot_f32(const float *x, const float *y, int n);
void rf_avx2_axpy_f32(float *acc, const float *x, float a, int n);
float rf_avx2_exp_sum(float *x, int n, float m);
void rf_avx2_dot_f32_f16_rows(const float *x, const uint16_t *h, size_t h_stride, int n_rows, int n,
                              float *out);
void rf_avx2_axpy_f16_rows(float *acc, const uint16_t *h, size_t h_stride, const float *a,
                           int n_rows, int n);
void rf_avx2_geglu(const uint16_t *table, const float *g, const float *u, float *out, int64_t n);
void rf_avx2_swiglu(const float *g, const float *u, float *out, int64_t n);
uint64_t rf_avx2_read_sum(const void *p, size_t n);
/* AVX2 weight-row decoders (dequant_avx2.c), shared by the AVX2 and AVX-512 tables. */
void rf_avx2_dequantize_row(rf_type t, const void *src, float *dst, int64_t n);
/* The members every x86 table takes from the pieces above, as designated initializers. */
#define RF_KERNELS_AVX2_PIECES                                                                     \
    .dequantize_row = rf_avx2_dequantize_row, .dot_f32_f16 = rf_avx2_dot_f32_f16,                  \
    .axpy_f16 = rf_avx2_axpy_f16, .cvt_f16_f32 = rf_avx2_cvt_f16_f32, .dot_f32 = rf_avx2_dot_f32,  \
    .axpy_f32 = rf_avx2_axpy_f32, .dot_f32_f16_rows = rf_avx2_dot_f32_f16_rows,                    \
    .axpy_f16_rows = rf_avx2_axpy_f16_rows, .exp_sum = rf_avx2_exp_sum, .geglu = rf_avx2_geglu,    \
    .swiglu = rf_avx2_swiglu, .read_sum = rf_avx2_read_sum
#endif

/* The table for isa, or NULL when this build or this CPU cannot run it. */
const rf_kernels *rf_kernels_get(rf_isa isa);
/* The fastest table this CPU runs. Never NULL. */
const rf_kernels *rf_kernels_best(void);

/* Scalar reference table (always available). */
extern const rf_kernels rf_kernels_scalar;

#if defined(__x86_64__)
/* x86-64 tables (kernels_avx2.c, kernels_avx512.c). Call one only when rf_kernels_get would
 * return it: they execute instructions the CPU may lack.
 *  - avx2: AVX2 + FMA + F16C.
 *  - avx512: AVX-512 F/BW/VL on top of avx2's features (no VNNI instruction).
 *  - avx512vnni: as avx512, with VPDPBUSD/VPDPWSSD for the integer dots; what
 *    rf_kernels_get(RF_ISA_AVX512) returns on a CPU with AVX512-VNNI but not AVX512_BF16.
 *  - avx512bf16: as avx512vnni, with BF16 weight rows dotted in BF16 by VDPBF16PS (denormals
 *    flushed to zero, within the same tolerance); what rf_kernels_get(RF_ISA_AVX512) returns
 *    on a CPU with both.
 * All four have isa set to their level (the AVX-512 ones report RF_ISA_AVX512). Against the scalar
 * table: quantize_act writes the same bytes; dot_rows and dot_tile are exact in their integer
 * parts and differ only by float accumulation order, |fast - ref| <= 1e-5 * sum_i |w_i * a_i|
 * (tests/unit/kernels/test_kernels.c). */
extern const rf_kernels rf_kernels_avx2;
extern const rf_kernels rf_kernels_avx512;
extern const rf_kernels rf_kernels_avx512vnni;
extern const rf_kernels rf_kernels_avx512bf16;
#endif
#if defined(__aarch64__)
/* AArch64 NEON table (kernels_neon.c): same contract against the scalar table. */
extern const rf_kernels rf_kernels_neon;
#endif

#endif
