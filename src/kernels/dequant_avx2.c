/* dequant_avx2.c: AVX2 + F16C weight-row decoders, the dequantize_row of the AVX2 and AVX-512
 * tables (compiled with those flags only for this file).
 *
 * The widened matmul path (matmul.h, --widen) decodes every weight row to floats on every call,
 * so this is its inner loop: 32-value blocks decode eight values per instruction (nibbles or
 * bytes widened to 32-bit lanes, converted, scaled); the K-quant super-blocks decode their
 * levels sixteen at a time and scale per sub-block. Every value is computed with the same float
 * operations in the same order as rf_ref_dequantize_row (level * d, then + m or - dmin * m; no
 * fused multiply-add), so the results are bit-identical to the reference (test_kernels checks
 * it). Types without a decoder here (Q5_K, Q8_1, Q8_K) use the reference.
 */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "kernels/kernels.h"
#include "util/half.h"

/* Block fields by offset: rows need not be aligned to the blocks' 2-byte fp16 fields, so
 * nothing is read through a block struct (the native kernels' rule too, x86_common.h). */
#define FIELD(T, i, f) (src + (size_t)(i) * sizeof(T) + offsetof(T, f))
static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return rf_f16_to_f32(h);
}

/* 8 levels (bytes, as signed or unsigned 8-bit integers) to floats */
static inline __m256 lv8_u(__m128i b) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
}
static inline __m256 lv8_s(__m128i b) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

/* The 32 levels of a block minus off, as bytes b[0..31] (value j at b[j]): the nibbles of qs
 * (low nibbles are values 0..15, high nibbles 16..31), plus bit j of the qh word as bit 4 when
 * qh4 is given (the Q5 formats' fifth bit). Written with whole-vector stores, so the 8-byte loads
 * that widen them (store_*32) are forwarded from the store buffer. */
static inline void levels32(const uint8_t qs[16], const uint8_t *qh4, int off, uint8_t b[32]) {
    const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)qs), m4 = _mm_set1_epi8(15);
    const __m128i lo = _mm_and_si128(q, m4), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
    if (!qh4) {
        const __m128i vo = _mm_set1_epi8((char)off);
        _mm_storeu_si128((__m128i *)(void *)b, _mm_sub_epi8(lo, vo));
        _mm_storeu_si128((__m128i *)(void *)(b + 16), _mm_sub_epi8(hi, vo));
        return;
    }
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    /* lane j takes byte j/8 of the word and tests its bit j%8 */
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i w = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), sel);
    __m256i h5 =
        _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(w, bit), bit), _mm256_set1_epi8(16));
    __m256i lv = _mm256_or_si256(_mm256_set_m128i(hi, lo), h5);
    _mm256_storeu_si256((__m256i *)(void *)b, _mm256_sub_epi8(lv, _mm256_set1_epi8((char)off)));
}

/* y[0..31] = b[j] * d, b signed levels */
static inline void store_scaled32(const uint8_t b[32], float d, float *y) {
    const __m256 vd = _mm256_set1_ps(d);
    for (int j = 0; j < 32; j += 8)
        _mm256_storeu_ps(
            y + j,
            _mm256_mul_ps(lv8_s(_mm_loadl_epi64((const __m128i *)(const void *)(b + j))), vd));
}

/* y[0..31] = b[j] * d + m (two roundings, as the reference), b unsigned levels */
static inline void store_affine32(const uint8_t b[32], float d, float m, float *y) {
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    for (int j = 0; j < 32; j += 8)
        _mm256_storeu_ps(
            y + j,
            _mm256_add_ps(
                _mm256_mul_ps(lv8_u(_mm_loadl_epi64((const __m128i *)(const void *)(b + j))), vd),
                vm));
}

static void dq_q4_0(const uint8_t *src, float *y, int64_t nb) {
    uint8_t lv[32];
    for (int64_t i = 0; i < nb; i++, y += 32) {
        levels32(FIELD(rf_block_q4_0, i, qs), NULL, 8, lv);
        store_scaled32(lv, half_at(FIELD(rf_block_q4_0, i, d)), y);
    }
}

static void dq_q4_1(const uint8_t *src, float *y, int64_t nb) {
    uint8_t lv[32];
    for (int64_t i = 0; i < nb; i++, y += 32) {
        levels32(FIELD(rf_block_q4_1, i, qs), NULL, 0, lv);
        store_affine32(lv, half_at(FIELD(rf_block_q4_1, i, d)), half_at(FIELD(rf_block_q4_1, i, m)),
                       y);
    }
}

static void dq_q5_0(const uint8_t *src, float *y, int64_t nb) {
    uint8_t lv[32];
    for (int64_t i = 0; i < nb; i++, y += 32) {
        levels32(FIELD(rf_block_q5_0, i, qs), FIELD(rf_block_q5_0, i, qh), 16, lv);
        store_scaled32(lv, half_at(FIELD(rf_block_q5_0, i, d)), y);
    }
}

static void dq_q5_1(const uint8_t *src, float *y, int64_t nb) {
    uint8_t lv[32];
    for (int64_t i = 0; i < nb; i++, y += 32) {
        levels32(FIELD(rf_block_q5_1, i, qs), FIELD(rf_block_q5_1, i, qh), 0, lv);
        store_affine32(lv, half_at(FIELD(rf_block_q5_1, i, d)), half_at(FIELD(rf_block_q5_1, i, m)),
                       y);
    }
}

static void dq_q8_0(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        const __m256 vd = _mm256_set1_ps(half_at(FIELD(rf_block_q8_0, i, d)));
        for (int j = 0; j < 32; j += 8) {
            __m128i q =
                _mm_loadl_epi64((const __m128i *)(const void *)(FIELD(rf_block_q8_0, i, qs) + j));
            _mm256_storeu_ps(y + j, _mm256_mul_ps(lv8_s(q), vd));
        }
    }
}

/* Q4_K: value = (d * sc_j) * level - (dmin * m_j) over 8 sub-blocks of 32 */
static void dq_q4_k(const uint8_t *src, float *y, int64_t nb) {
    uint8_t lv[64];
    for (int64_t i = 0; i < nb; i++, y += 256) {
        const float d = half_at(FIELD(rf_block_q4_k, i, d)),
                    dmin = half_at(FIELD(rf_block_q4_k, i, dmin));
        for (int p = 0; p < 4; p++) { /* 64 values: 32 low nibbles, then 32 high ones */
            const __m256i q = _mm256_loadu_si256(
                (const __m256i *)(const void *)(FIELD(rf_block_q4_k, i, qs) + 32 * p));
            const __m256i m4 = _mm256_set1_epi8(15);
            _mm256_storeu_si256((__m256i *)(void *)lv, _mm256_and_si256(q, m4));
            _mm256_storeu_si256((__m256i *)(void *)(lv + 32),
                                _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
            for (int h = 0; h < 2; h++) {
                uint8_t sc, m;
                rf_k_scale_min(2 * p + h, FIELD(rf_block_q4_k, i, scales), &sc, &m);
                const __m256 ds = _mm256_set1_ps(d * (float)sc),
                             dm = _mm256_set1_ps(dmin * (float)m);
                float *yy = y + 64 * p + 32 * h;
                for (int j = 0; j < 32; j += 8) {
                    __m128i l8 = _mm_loadl_epi64((const __m128i *)(const void *)(lv + 32 * h + j));
                    _mm256_storeu_ps(yy + j, _mm256_sub_ps(_mm256_mul_ps(ds, lv8_u(l8)), dm));
                }
            }
        }
    }
}

/* Q6_K: value = (d * scale_k) * level, level = (4 low bits | 2 high bits << 4) - 32 */
static void dq_q6_k(const uint8_t *src, float *y, int64_t nb) {
    int8_t lv[128];
    for (int64_t i = 0; i < nb; i++, y += 256) {
        const float d = half_at(FIELD(rf_block_q6_k, i, d));
        for (int n = 0; n < 2; n++) {
            const uint8_t *ql = FIELD(rf_block_q6_k, i, ql) + 64 * n,
                          *qh = FIELD(rf_block_q6_k, i, qh) + 32 * n;
            const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
            const __m256i o32 = _mm256_set1_epi8(32);
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(const void *)ql);
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(const void *)(ql + 32));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)(const void *)qh);
            const __m256i lo[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                                   _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
            for (int t = 0; t < 4; t++) {
                __m256i h2 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * t), m2);
                __m256i v = _mm256_sub_epi8(_mm256_or_si256(lo[t], _mm256_slli_epi16(h2, 4)), o32);
                _mm256_storeu_si256((__m256i *)(void *)(lv + 32 * t), v);
            }
            for (int g = 0; g < 8; g++) { /* 16 values per scale */
                const __m256 ds =
                    _mm256_set1_ps(d * (float)(int8_t)FIELD(rf_block_q6_k, i, scales)[8 * n + g]);
                for (int j = 0; j < 16; j += 8) {
                    __m128i l8 = _mm_loadl_epi64((const __m128i *)(const void *)(lv + 16 * g + j));
                    _mm256_storeu_ps(y + 128 * n + 16 * g + j, _mm256_mul_ps(ds, lv8_s(l8)));
                }
            }
        }
    }
}

static void dq_f16(const uint16_t *h, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(h + i))));
    for (; i < n; i++) y[i] = rf_f16_to_f32(h[i]);
}

static void dq_bf16(const uint16_t *h, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(h + i)));
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; i < n; i++) y[i] = rf_bf16_to_f32(h[i]);
}

void rf_avx2_dequantize_row(rf_type t, const void *src, float *dst, int64_t n) {
    switch (t) {
    case RF_TYPE_F32:
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    case RF_TYPE_F16:
        dq_f16(src, dst, n);
        return;
    case RF_TYPE_BF16:
        dq_bf16(src, dst, n);
        return;
    case RF_TYPE_Q4_0:
        dq_q4_0((const uint8_t *)src, dst, n / 32);
        return;
    case RF_TYPE_Q4_1:
        dq_q4_1((const uint8_t *)src, dst, n / 32);
        return;
    case RF_TYPE_Q5_0:
        dq_q5_0((const uint8_t *)src, dst, n / 32);
        return;
    case RF_TYPE_Q5_1:
        dq_q5_1((const uint8_t *)src, dst, n / 32);
        return;
    case RF_TYPE_Q8_0:
        dq_q8_0((const uint8_t *)src, dst, n / 32);
        return;
    case RF_TYPE_Q4_K:
        dq_q4_k((const uint8_t *)src, dst, n / 256);
        return;
    case RF_TYPE_Q6_K:
        dq_q6_k((const uint8_t *)src, dst, n / 256);
        return;
    default:
        rf_ref_dequantize_row(t, src, dst, n);
        return;
    }
}

#else
typedef int rf_dequant_avx2_unavailable; /* an ISO C translation unit needs a declaration */
#endif
