/* x86_common.h: the helpers the AVX2 and AVX-512 kernel tables share (kernels_avx2.c,
 * kernels_avx512.c): unaligned loads of block fields, horizontal sums, software prefetch, the
 * geometry of the 32-value block formats and their activation blocks, the K-quant scale
 * unpacking, the rows-per-pass driver and the dot_rows and activation-quantizer dispatch
 * (dot_tile's loop is tile_loop.h).
 *
 * Include only from a file compiled with at least -mavx2 -mfma -mf16c (CMakeLists.txt): every
 * function here is an always-inlined static, so each table gets its own copy compiled for its
 * own instruction set and nothing here is ever called on a CPU that rf_kernels_get did not
 * check. Nothing allocates or keeps state.
 */
#ifndef RF_KERNELS_X86_COMMON_H
#define RF_KERNELS_X86_COMMON_H

#if defined(__x86_64__)

#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "util/half.h"

#define RF_INLINE static inline __attribute__((always_inline))
#define NR_MAX    4 /* rows per pass of dot_rows */

/* ---- loads (block fields are unaligned) ---- */

RF_INLINE uint16_t ld16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

RF_INLINE uint32_t ld32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

RF_INLINE uint64_t ld64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

RF_INLINE float ldf(const uint8_t *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}

RF_INLINE float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}

RF_INLINE __m128i loadu128(const uint8_t *p) {
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

RF_INLINE __m256i loadu256(const uint8_t *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

RF_INLINE __m256i bcast32(const uint8_t *p) {
    return _mm256_set1_epi32((int)ld32(p));
}

/* ---- horizontal reductions of 256-bit vectors ---- */

RF_INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

RF_INLINE int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

RF_INLINE float hmax_ps(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* ---- software prefetch ---- */

/* Prefetch into L2, PF_BYTES ahead rounded up to whole passes: the rows a later pass reads at
 * the same column. Rows of the small matrices are short (680 B for the 640-wide Q8_0 head), so
 * four rows read side by side are four streams of ~10 cache lines each, too short for the
 * hardware prefetchers to train on: without this the head streams at ~35% of a plain read, with
 * it at ~90-98%. L2 rather than L1 (T0 measured 2x slower: the lines evict the activation and
 * fill the L1 miss buffers). The address is formed as an integer: it may lie past the end of the
 * matrix (prefetching there is harmless). */
#define PF_BYTES 8192

RF_INLINE size_t pf_distance(int nr, size_t ws) {
    const size_t pass = (size_t)nr * ws;
    return pass ? (PF_BYTES + pass - 1) / pass * pass : 0;
}

RF_INLINE void prefetch_l2(const uint8_t *p, size_t ahead, size_t bytes) {
    const uintptr_t at = (uintptr_t)p + ahead;
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(at + o), _MM_HINT_T1);
}

/* The same for dot_tile: [p + ahead, p + ahead + bytes), the next tile's rows. */
RF_INLINE void prefetch_span(const uint8_t *p, size_t ahead, size_t bytes) {
    prefetch_l2(p, ahead, bytes);
}

/* ---- 32-value block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 ---- */

/* Bytes per weight block. */
RF_INLINE size_t b32_bytes(rf_type t) {
    return t == RF_TYPE_Q4_0   ? 18
           : t == RF_TYPE_Q4_1 ? 20
           : t == RF_TYPE_Q5_0 ? 22
           : t == RF_TYPE_Q5_1 ? 24
                               : 34;
}
/* Offset of the quants (nibbles or int8) in a weight block. */
RF_INLINE size_t b32_qs(rf_type t) {
    return t == RF_TYPE_Q4_0 || t == RF_TYPE_Q8_0 ? 2
           : t == RF_TYPE_Q4_1                    ? 4
           : t == RF_TYPE_Q5_0                    ? 6
                                                  : 8;
}
/* Offset of the fifth-bit word (0: none). */
RF_INLINE size_t b32_qh(rf_type t) {
    return t == RF_TYPE_Q5_0 ? 2 : t == RF_TYPE_Q5_1 ? 4 : 0;
}
/* Level offset the symmetric formats subtract (value = (level - offset) * d). */
RF_INLINE int b32_offset(rf_type t) {
    return t == RF_TYPE_Q4_0 ? 8 : t == RF_TYPE_Q5_0 ? 16 : 0;
}
/* The affine formats (value = level * d + m), dotted against Q8_1 activations. */
RF_INLINE int b32_affine(rf_type t) {
    return t == RF_TYPE_Q4_1 || t == RF_TYPE_Q5_1;
}
/* The activation block (Q8_0: d, qs; Q8_1: d, s, qs): its bytes and the offset of its qs. */
RF_INLINE size_t b32_act_bytes(rf_type t) {
    return b32_affine(t) ? 36 : 34;
}
RF_INLINE size_t b32_act_qs(rf_type t) {
    return b32_affine(t) ? 4 : 2;
}

/* ---- K-quants ---- */

/* The 8 six-bit scales and mins of a Q4_K/Q5_K super-block as bytes (rf_k_scale_min). */
RF_INLINE void k_scales_mins(const uint8_t *s, uint64_t *sc, uint64_t *m) {
    const uint32_t u0 = ld32(s), u1 = ld32(s + 4), u2 = ld32(s + 8);
    const uint32_t lo6 = 0x3F3F3F3Fu, lo4 = 0x0F0F0F0Fu, b45 = 0x30303030u;
    const uint32_t sc_hi = (u2 & lo4) | ((u0 >> 2) & b45);
    const uint32_t m_hi = ((u2 >> 4) & lo4) | ((u1 >> 2) & b45);
    *sc = (uint64_t)(u0 & lo6) | (uint64_t)sc_hi << 32;
    *m = (uint64_t)(u1 & lo6) | (uint64_t)m_hi << 32;
}

/* ---- drivers ---- */

/* Defines name(n_units, n_rows, w, ws, a, out): NR_MAX rows per pass, then one at a time; call
 * sees nr (a constant after inlining) and r. */
#define ROWS_FN(name, call)                                                                        \
    static void name(int64_t nu, int64_t n_rows, const uint8_t *w, size_t ws, const uint8_t *a,    \
                     float *out) {                                                                 \
        int64_t r = 0;                                                                             \
        for (; r + NR_MAX <= n_rows; r += NR_MAX) {                                                \
            const int nr = NR_MAX;                                                                 \
            call;                                                                                  \
        }                                                                                          \
        for (; r < n_rows; r++) {                                                                  \
            const int nr = 1;                                                                      \
            call;                                                                                  \
        }                                                                                          \
    }

/* Defines the table's dot_rows, `name`, from its row functions (ROWS_FN): dot_q4_0##sfx, ...,
 * dot_q6_k##sfx for the block formats (sfx may be empty), dot_f32, dot_f16 and bf16 for the
 * float rows; the types without a fast kernel go to the reference. */
#define RF_X86_DEFINE_DOT_ROWS(name, sfx, bf16)                                                    \
    static void name(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t ws,               \
                     const void *a, float *out) {                                                  \
        const uint8_t *wp = w, *ap = a;                                                            \
        switch (t) {                                                                               \
        case RF_TYPE_Q4_0:                                                                         \
            dot_q4_0##sfx(n / 32, n_rows, wp, ws, ap, out);                                        \
            return;                                                                                \
        case RF_TYPE_Q4_1:                                                                         \
            dot_q4_1##sfx(n / 32, n_rows, wp, ws, ap, out);                                        \
            return;                                                                                \
        case RF_TYPE_Q5_0:                                                                         \
            dot_q5_0##sfx(n / 32, n_rows, wp, ws, ap, out);                                        \
            return;                                                                                \
        case RF_TYPE_Q5_1:                                                                         \
            dot_q5_1##sfx(n / 32, n_rows, wp, ws, ap, out);                                        \
            return;                                                                                \
        case RF_TYPE_Q8_0:                                                                         \
            dot_q8_0##sfx(n / 32, n_rows, wp, ws, ap, out);                                        \
            return;                                                                                \
        case RF_TYPE_Q4_K:                                                                         \
            dot_q4_k##sfx(n / 256, n_rows, wp, ws, ap, out);                                       \
            return;                                                                                \
        case RF_TYPE_Q5_K:                                                                         \
            dot_q5_k##sfx(n / 256, n_rows, wp, ws, ap, out);                                       \
            return;                                                                                \
        case RF_TYPE_Q6_K:                                                                         \
            dot_q6_k##sfx(n / 256, n_rows, wp, ws, ap, out);                                       \
            return;                                                                                \
        case RF_TYPE_F32:                                                                          \
            dot_f32(n, n_rows, wp, ws, ap, out);                                                   \
            return;                                                                                \
        case RF_TYPE_F16:                                                                          \
            dot_f16(n, n_rows, wp, ws, ap, out);                                                   \
            return;                                                                                \
        case RF_TYPE_BF16:                                                                         \
            bf16(n, n_rows, wp, ws, ap, out);                                                      \
            return;                                                                                \
        default: /* no fast kernel: the reference (asserts on types without a dot) */              \
            rf_kernels_scalar.dot_rows(t, n, n_rows, w, ws, a, out);                               \
            return;                                                                                \
        }                                                                                          \
    }

/* Defines the table's quantize_act, `name`, from the file's own block quantizers:
 * quant_q8_32(x, dh, qs, sum) (one 32-value Q8_0/Q8_1 block: fp16 d at dh, qs; returns the float
 * d and, when sum is not NULL, sum(qs)), quant_q8_k(x, y, nb), quant_f16(x, y, n) and
 * quant_bf16(x, y, n). Q8_1's s is fp16(sum(q) * d) with the float d, as quant_ref.c. F32 and
 * anything else go to the reference. */
#define RF_X86_DEFINE_QUANTIZE_ACT(name)                                                           \
    static void quant_q8_0(const float *x, uint8_t *y, int64_t nb) {                               \
        for (int64_t i = 0; i < nb; i++, x += 32, y += 34) quant_q8_32(x, y, y + 2, NULL);         \
    }                                                                                              \
    static void quant_q8_1(const float *x, uint8_t *y, int64_t nb) {                               \
        for (int64_t i = 0; i < nb; i++, x += 32, y += 36) {                                       \
            int sum;                                                                               \
            const float d = quant_q8_32(x, y, y + 4, &sum);                                        \
            const uint16_t s = rf_f32_to_f16((float)sum * d);                                      \
            memcpy(y + 2, &s, 2);                                                                  \
        }                                                                                          \
    }                                                                                              \
    static void name(rf_type act, const float *x, void *dst, int64_t n) {                          \
        switch (act) {                                                                             \
        case RF_TYPE_Q8_0:                                                                         \
            quant_q8_0(x, dst, n / 32);                                                            \
            return;                                                                                \
        case RF_TYPE_Q8_1:                                                                         \
            quant_q8_1(x, dst, n / 32);                                                            \
            return;                                                                                \
        case RF_TYPE_Q8_K:                                                                         \
            quant_q8_k(x, dst, n / 256);                                                           \
            return;                                                                                \
        case RF_TYPE_F16:                                                                          \
            quant_f16(x, dst, n);                                                                  \
            return;                                                                                \
        case RF_TYPE_BF16:                                                                         \
            quant_bf16(x, dst, n);                                                                 \
            return;                                                                                \
        default: /* F32 (a copy) and anything else: the reference */                               \
            rf_ref_quantize_row(act, x, dst, n);                                                   \
            return;                                                                                \
        }                                                                                          \
    }

#endif /* __x86_64__ */
#endif
