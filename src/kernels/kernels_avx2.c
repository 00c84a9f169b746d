/* kernels_avx2.c: the AVX2 + FMA + F16C kernel table (rf_kernels_avx2).
 *
 * Only this file is compiled with -mavx2 -mfma -mf16c (CMakeLists.txt); nothing here runs unless
 * rf_kernels_get found those features at run time.
 *
 * Numerics (the contract tests/unit/test_kernels.c checks against the scalar table):
 *  - quantize_act writes exactly the bytes rf_ref_quantize_row writes, for every input including
 *    ties, zero blocks, NaN, inf and subnormals: the same float operations in the same order
 *    (x * (127/amax), x * (-127/m)), rounding by the MXCSR mode as rintf does, NaN mapped to 0
 *    and out-of-range values saturated before the conversion to integer, as quant_ref.c does.
 *  - dot_rows does the integer part of every block exactly (maddubs/madd on the packed quants;
 *    the weight formats' offsets -8/-16/-32 are subtracted as an exact integer correction from
 *    the activation sums) and accumulates the float products per lane, reducing at the end, so it
 *    differs from the scalar table only by float rounding: |fast - ref| <= 1e-5 * sum|w_i*a_i|.
 *  - Activations must come from quantize_act (|q| <= 127): the sign trick of the Q8_0 dot
 *    relies on it.
 *
 * Rows are processed four at a time (the activation block and its per-block setup are loaded
 * once per four rows), the remainder one at a time.
 */
#if defined(__x86_64__)

#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "util/half.h"

#define RF_INLINE static inline __attribute__((always_inline))
#define NR_MAX    4 /* rows per pass */

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

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

RF_INLINE float ldf(const uint8_t *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}

RF_INLINE float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}

RF_INLINE __m256i loadu256(const uint8_t *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

RF_INLINE __m128i loadu128(const uint8_t *p) {
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

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

/* Software prefetch into L2, PF_BYTES ahead rounded up to whole passes: the rows a later pass
 * reads at the same column. Short rows (680 B for the 640-wide Q8_0 head) read four at a time
 * are streams too short for the hardware prefetchers to train on; see kernels_avx512.c. The
 * address is formed as an integer: it may lie past the end of the matrix (harmless). */
#define PF_BYTES 8192

RF_INLINE size_t pf_distance(int nr, size_t ws) {
    const size_t pass = (size_t)nr * ws;
    return pass ? (PF_BYTES + pass - 1) / pass * pass : 0;
}

RF_INLINE void prefetch_l2(const uint8_t *p, size_t ahead, size_t bytes) {
    const uintptr_t at = (uintptr_t)p + ahead;
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(at + o), _MM_HINT_T1);
}

/* Sum of u8 x s8 products, four adjacent bytes per int32 lane (u <= 127 or pairs that cannot
 * saturate int16: every caller's levels are <= 63 or the sign trick's |w| <= 128 with |a| <= 127).
 */
RF_INLINE __m256i dot_u8s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* 16 packed bytes of nibbles -> 32 levels 0..15: low nibbles first (values 0..15 of a 32-block),
 * then the high nibbles (values 16..31). */
RF_INLINE __m256i nibbles32(const uint8_t *qs) {
    const __m128i q = loadu128(qs);
    const __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
    return _mm256_and_si256(x, _mm256_set1_epi8(0x0F));
}

/* Byte j = 0x10 when bit j of the little-endian word qh is set (the fifth bit of Q5_0/Q5_1). */
RF_INLINE __m256i fifth_bits32(uint32_t qh) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                            2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* ------------------------------------------------------------------------------------------ */
/* Activation quantizers                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* max(|x|, m) lane-wise; a NaN x leaves m unchanged (maxps returns its second operand when either
 * is NaN), as fabsf(NaN) > amax is false in the reference. */
RF_INLINE __m256 absmax_step(__m256 x, __m256 m) {
    return _mm256_max_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), m);
}

/* NaN lanes to 0, others clamped to [lo, hi] (then exact in int32), rounded by MXCSR (nearest
 * even by default, as rintf). */
RF_INLINE __m256i round_clamped(__m256 v, float lo, float hi) {
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
    return _mm256_cvtps_epi32(v);
}

/* Four vectors of 8 int32 (each in int8 range after saturation) -> 32 int8 in order. */
RF_INLINE __m256i pack_i32x32_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    const __m256i x = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* One 32-value Q8_0/Q8_1 block: writes fp16(d) and qs, returns the float d; *sum = sum(qs). */
RF_INLINE float quant_q8_32(const float *x, uint8_t *dh, uint8_t *qs, int *sum) {
    __m256 v[4], m = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        m = absmax_step(v[k], m);
    }
    const float amax = hmax_ps(m);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const uint16_t h = rf_f32_to_f16(d);
    memcpy(dh, &h, 2);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; k++) q[k] = round_clamped(_mm256_mul_ps(v[k], vid), -127.0f, 127.0f);
    _mm256_storeu_si256((__m256i *)(void *)qs, pack_i32x32_i8(q[0], q[1], q[2], q[3]));
    if (sum)
        *sum = hsum_epi32(
            _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    return d;
}

static void quant_q8_0(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 34) quant_q8_32(x, y, y + 2, NULL);
}

static void quant_q8_1(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 36) {
        int sum;
        const float d = quant_q8_32(x, y, y + 4, &sum);
        const uint16_t s = rf_f32_to_f16((float)sum * d);
        memcpy(y + 2, &s, 2);
    }
}

/* Q8_K: m = first element of largest |x| with its sign, iscale = -127/m, q = min(127, rint(v))
 * with v = iscale*x saturated to +-2^30 (NaN -> 0) and the int narrowed to int8 by truncation,
 * d = 1/iscale, bsums of 16. An all-zero (or all-NaN) block is all zeros. */
static void quant_q8_k(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 256, y += 292) {
        __m256 m8 = _mm256_setzero_ps();
        for (int k = 0; k < 32; k++) m8 = absmax_step(_mm256_loadu_ps(x + 8 * k), m8);
        const float amax = hmax_ps(m8);
        memset(y, 0, 292);
        if (amax == 0.0f) continue;
        float m = 0.0f;
        const __m256 va = _mm256_set1_ps(amax), sign = _mm256_set1_ps(-0.0f);
        for (int k = 0; k < 32; k++) {
            const __m256 ax = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k));
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(ax, va, _CMP_EQ_OQ));
            if (hit) {
                m = x[8 * k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.0f / m;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127), lo8 = _mm256_set1_epi32(0xFF);
        uint8_t *qs = y + 4;
        for (int k = 0; k < 32; k += 4) {
            __m256i q[4];
            for (int j = 0; j < 4; j++) {
                const __m256 v = _mm256_mul_ps(vs, _mm256_loadu_ps(x + 8 * (k + j)));
                q[j] = round_clamped(v, -1073741824.0f, 1073741824.0f);
                q[j] = _mm256_and_si256(_mm256_min_epi32(q[j], lim), lo8); /* int8 truncation */
            }
            const __m256i ab = _mm256_packus_epi32(q[0], q[1]),
                          cd = _mm256_packus_epi32(q[2], q[3]);
            const __m256i p = _mm256_permutevar8x32_epi32(
                _mm256_packus_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(void *)(qs + 8 * k), p);
            /* bsums of the two 16-groups in these 32 bytes */
            const __m256i s4 = dot_u8s8(_mm256_set1_epi8(1), p); /* 4 sums of 4 per lane */
            __m256i s = _mm256_hadd_epi32(s4, s4);
            s = _mm256_hadd_epi32(s, s);
            const int16_t b0 = (int16_t)_mm256_extract_epi32(s, 0);
            const int16_t b1 = (int16_t)_mm256_extract_epi32(s, 4);
            memcpy(y + 260 + 2 * (k / 2), &b0, 2);
            memcpy(y + 260 + 2 * (k / 2 + 1), &b1, 2);
        }
        const float d = 1.0f / iscale;
        memcpy(y, &d, 4);
    }
}

static void quant_f16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm_storeu_si128((__m128i *)(void *)(y + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) /* NaN payloads: as half.h */
            for (int j = 0; j < 8; j++) y[i + j] = rf_f32_to_f16(x[i + j]);
    }
    for (; i < n; i++) y[i] = rf_f32_to_f16(x[i]);
}

static void quant_bf16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
    for (; i + 16 <= n; i += 16) {
        __m256i r[2];
        for (int k = 0; k < 2; k++) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
            const __m256i b = _mm256_castps_si256(v);
            const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
            const __m256i rn =
                _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(bias, lsb)), 16);
            const __m256i qn = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(64));
            r[k] =
                _mm256_blendv_epi8(rn, qn, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
        }
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xD8);
        _mm256_storeu_si256((__m256i *)(void *)(y + i), p);
    }
    for (; i < n; i++) y[i] = rf_f32_to_bf16(x[i]);
}

static void avx2_quantize_act(rf_type act, const float *x, void *dst, int64_t n) {
    switch (act) {
    case RF_TYPE_Q8_0:
        quant_q8_0(x, dst, n / 32);
        return;
    case RF_TYPE_Q8_1:
        quant_q8_1(x, dst, n / 32);
        return;
    case RF_TYPE_Q8_K:
        quant_q8_k(x, dst, n / 256);
        return;
    case RF_TYPE_F16:
        quant_f16(x, dst, n);
        return;
    case RF_TYPE_BF16:
        quant_bf16(x, dst, n);
        return;
    default: /* F32 (a copy) and anything else: the reference */
        rf_ref_quantize_row(act, x, dst, n);
        return;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0                                              */
/* ------------------------------------------------------------------------------------------ */

/* Block geometry: bytes per weight block, offset of qs, offset of qh (0: none), level offset
 * subtracted (8/16 for the symmetric formats), 1 for the affine formats (d, m; Q8_1 acts). */
RF_INLINE size_t b32_bytes(rf_type t) {
    return t == RF_TYPE_Q4_0   ? 18
           : t == RF_TYPE_Q4_1 ? 20
           : t == RF_TYPE_Q5_0 ? 22
           : t == RF_TYPE_Q5_1 ? 24
                               : 34;
}
RF_INLINE size_t b32_qs(rf_type t) {
    return t == RF_TYPE_Q4_0 || t == RF_TYPE_Q8_0 ? 2
           : t == RF_TYPE_Q4_1                    ? 4
           : t == RF_TYPE_Q5_0                    ? 6
                                                  : 8;
}
RF_INLINE size_t b32_qh(rf_type t) {
    return t == RF_TYPE_Q5_0 ? 2 : t == RF_TYPE_Q5_1 ? 4 : 0;
}
RF_INLINE int b32_offset(rf_type t) {
    return t == RF_TYPE_Q4_0 ? 8 : t == RF_TYPE_Q5_0 ? 16 : 0;
}
RF_INLINE int b32_affine(rf_type t) {
    return t == RF_TYPE_Q4_1 || t == RF_TYPE_Q5_1;
}

/* out[r] = dot(row r, a) for r < nr (nr a compile-time constant after inlining). */
RF_INLINE void b32_rows(rf_type t, int nr, int64_t nb, const uint8_t *w, size_t ws,
                        const uint8_t *a, float *out) {
    const int affine = b32_affine(t), off = b32_offset(t);
    const size_t bw = b32_bytes(t), ba = affine ? 36 : 34, aq = affine ? 4 : 2;
    const size_t pfd = pf_distance(nr, ws);
    __m256 acc[NR_MAX];
    float msum[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        acc[r] = _mm256_setzero_ps();
        msum[r] = 0.0f;
    }
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *ab = a + (size_t)b * ba;
        const __m256i av = loadu256(ab + aq);
        const __m256 da = _mm256_cvtph_ps(_mm_set1_epi16((short)ld16(ab))); /* 8 x da */
        const float sa = affine ? h2f(ld16(ab + 2)) : 0.0f;
        __m256i negc = _mm256_setzero_si256();
        if (off) negc = _mm256_sub_epi32(negc, dot_u8s8(_mm256_set1_epi8((char)off), av));
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + (size_t)r * ws + (size_t)b * bw;
            prefetch_l2(wb, pfd, bw);
            __m256i dp;
            if (t == RF_TYPE_Q8_0) {
                const __m256i q = loadu256(wb + 2);
                dp = dot_u8s8(_mm256_abs_epi8(q), _mm256_sign_epi8(av, q));
            } else {
                __m256i x = nibbles32(wb + b32_qs(t));
                if (b32_qh(t)) x = _mm256_or_si256(x, fifth_bits32(ld32(wb + b32_qh(t))));
                dp = _mm256_add_epi32(dot_u8s8(x, av), negc);
            }
            /* 8 x dw*da: a broadcast fp16 converts straight to a broadcast float */
            const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(_mm_set1_epi16((short)ld16(wb))), da);
            acc[r] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(dp), acc[r]);
            if (affine) msum[r] += h2f(ld16(wb + 2)) * sa;
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) out[r] = hsum_ps(acc[r]) + msum[r];
}

/* ------------------------------------------------------------------------------------------ */
/* K-quants against Q8_K (a block: float d at 0, qs at 4, int16 bsums at 260)                 */
/* ------------------------------------------------------------------------------------------ */

/* The 8 six-bit scales and mins of a Q4_K/Q5_K super-block as bytes (rf_k_scale_min). */
RF_INLINE void k_scales_mins(const uint8_t *s, uint64_t *sc, uint64_t *m) {
    const uint32_t u0 = ld32(s), u1 = ld32(s + 4), u2 = ld32(s + 8);
    const uint32_t lo6 = 0x3F3F3F3Fu, lo4 = 0x0F0F0F0Fu, b45 = 0x30303030u;
    const uint32_t sc_hi = (u2 & lo4) | ((u0 >> 2) & b45);
    const uint32_t m_hi = ((u2 >> 4) & lo4) | ((u1 >> 2) & b45);
    *sc = (uint64_t)(u0 & lo6) | (uint64_t)sc_hi << 32;
    *m = (uint64_t)(u1 & lo6) | (uint64_t)m_hi << 32;
}

/* Word j of w8 (8 words in both 128-bit lanes) broadcast to all 16 words. */
RF_INLINE __m256i bcast_word(__m256i w8, int j) {
    return _mm256_shuffle_epi8(w8, _mm256_set1_epi16((short)((2 * j) | (2 * j + 1) << 8)));
}

/* Q4_K (qh_off == 0) and Q5_K super-blocks. */
RF_INLINE void k_affine_rows(int q5, int nr, int64_t nb, const uint8_t *w, size_t ws,
                             const uint8_t *a, float *out) {
    const size_t bw = q5 ? 176 : 144, qs_off = q5 ? 48 : 16;
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    const size_t pfd = pf_distance(nr, ws);
    __m256 acc[NR_MAX]; /* scaled level sums minus the min terms, per lane */
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *ak = a + (size_t)i * 292;
        const float da = ldf(ak);
        const __m256i bsums = loadu256(ak + 260);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + (size_t)r * ws + (size_t)i * bw;
            prefetch_l2(wb, pfd, bw);
            const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)ld32(wb))),
                                         _mm_set1_ps(da)); /* d*da, dmin*da */
            uint64_t sc8, m8;
            k_scales_mins(wb + 4, &sc8, &m8);
            const __m256i scw =
                _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)sc8)));
            const __m128i mb = _mm_cvtsi64_si128((long long)m8);
            const __m256i mdup = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));
            acc[r] = _mm256_fnmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dd)),
                                      _mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, mdup)), acc[r]);
            __m256i h = q5 ? loadu256(wb + 16) : _mm256_setzero_si256();
            __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                const __m256i q = loadu256(wb + qs_off + 32 * c);
                __m256i lo = _mm256_and_si256(q, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                if (q5) {
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(h, 4), b4));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(h, 3), b4));
                    h = _mm256_srli_epi16(h, 2);
                }
                const __m256i pl = _mm256_maddubs_epi16(lo, loadu256(ak + 4 + 64 * c));
                const __m256i ph = _mm256_maddubs_epi16(hi, loadu256(ak + 36 + 64 * c));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(pl, bcast_word(scw, 2 * c)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(ph, bcast_word(scw, 2 * c + 1)));
            }
            acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) out[r] = hsum_ps(acc[r]);
}

/* Q6_K: ql at 0, qh at 128, int8 scales at 192, d at 208. Levels 0..63 dotted unsigned, minus
 * the exact correction 32 * sum_j sc_j * bsums_j. */
RF_INLINE void q6_k_rows(int nr, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                         float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    const size_t pfd = pf_distance(nr, ws);
    __m256 acc[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *ak = a + (size_t)i * 292;
        const float da = ldf(ak);
        const __m256i bsums = loadu256(ak + 260);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + (size_t)r * ws + (size_t)i * 210;
            prefetch_l2(wb, pfd, 210);
            const __m256i sc16 = _mm256_cvtepi8_epi16(loadu128(wb + 192));
            __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(),
                                            _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), 5));
#pragma GCC unroll 2
            for (int n = 0; n < 2; n++) {
                const __m256i sb = n ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
                                     : _mm256_permute2x128_si256(sc16, sc16, 0x00);
                const __m256i ql0 = loadu256(wb + 64 * n), ql1 = loadu256(wb + 64 * n + 32);
                const __m256i qh = loadu256(wb + 128 + 32 * n);
                __m256i x[4];
                x[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                                       _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
                x[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                       _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
                x[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                       _mm256_and_si256(qh, m2));
                x[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                       _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    /* lane 0: sub-block 8n+2k, lane 1: 8n+2k+1 */
                    const __m256i sel = _mm256_setr_epi8(
                        (char)(4 * k), (char)(4 * k + 1), (char)(4 * k), (char)(4 * k + 1),
                        (char)(4 * k), (char)(4 * k + 1), (char)(4 * k), (char)(4 * k + 1),
                        (char)(4 * k), (char)(4 * k + 1), (char)(4 * k), (char)(4 * k + 1),
                        (char)(4 * k), (char)(4 * k + 1), (char)(4 * k), (char)(4 * k + 1),
                        (char)(4 * k + 2), (char)(4 * k + 3), (char)(4 * k + 2), (char)(4 * k + 3),
                        (char)(4 * k + 2), (char)(4 * k + 3), (char)(4 * k + 2), (char)(4 * k + 3),
                        (char)(4 * k + 2), (char)(4 * k + 3), (char)(4 * k + 2), (char)(4 * k + 3),
                        (char)(4 * k + 2), (char)(4 * k + 3), (char)(4 * k + 2), (char)(4 * k + 3));
                    const __m256i p =
                        _mm256_maddubs_epi16(x[k], loadu256(ak + 4 + 128 * n + 32 * k));
                    sumi =
                        _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_shuffle_epi8(sb, sel)));
                }
            }
            const float dd = h2f(ld16(wb + 208)) * da;
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) out[r] = hsum_ps(acc[r]);
}

/* ------------------------------------------------------------------------------------------ */
/* Float rows                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* 8 values of a row of type t (F32, F16, BF16) at element index i, as floats. */
RF_INLINE __m256 load8f(rf_type t, const uint8_t *p, int64_t i) {
    if (t == RF_TYPE_F32) return _mm256_loadu_ps((const float *)(const void *)p + i);
    const __m128i h = loadu128(p + 2 * i);
    if (t == RF_TYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

RF_INLINE float load1f(rf_type t, const uint8_t *p, int64_t i) {
    if (t == RF_TYPE_F32) return ldf(p + 4 * i);
    if (t == RF_TYPE_F16) return h2f(ld16(p + 2 * i));
    return rf_bf16_to_f32(ld16(p + 2 * i));
}

RF_INLINE void float_rows(rf_type t, int nr, int64_t n, const uint8_t *w, size_t ws,
                          const uint8_t *a, float *out) {
    __m256 acc[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 av = load8f(t, a, i);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[r] = _mm256_fmadd_ps(load8f(t, w + (size_t)r * ws, i), av, acc[r]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        float s = hsum_ps(acc[r]);
        for (int64_t j = i; j < n; j++) s += load1f(t, w + (size_t)r * ws, j) * load1f(t, a, j);
        out[r] = s;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Dispatch                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Defines dot_NAME(n_units, n_rows, w, ws, a, out): four rows per pass, then one at a time. */
#define ROWS_FN(name, call)                                                                        \
    static void name(int64_t nu, int64_t n_rows, const uint8_t *w, size_t ws, const uint8_t *a,    \
                     float *out) {                                                                 \
        int64_t r = 0;                                                                             \
        for (; r + 4 <= n_rows; r += 4) {                                                          \
            const int nr = 4;                                                                      \
            call;                                                                                  \
        }                                                                                          \
        for (; r < n_rows; r++) {                                                                  \
            const int nr = 1;                                                                      \
            call;                                                                                  \
        }                                                                                          \
    }

#define W_R (w + (size_t)r * ws)
ROWS_FN(dot_q4_0, b32_rows(RF_TYPE_Q4_0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q4_1, b32_rows(RF_TYPE_Q4_1, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q5_0, b32_rows(RF_TYPE_Q5_0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q5_1, b32_rows(RF_TYPE_Q5_1, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q8_0, b32_rows(RF_TYPE_Q8_0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q4_k, k_affine_rows(0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q5_k, k_affine_rows(1, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q6_k, q6_k_rows(nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_f32, float_rows(RF_TYPE_F32, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_f16, float_rows(RF_TYPE_F16, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_bf16, float_rows(RF_TYPE_BF16, nr, nu, W_R, ws, a, out + r))
#undef W_R

static void avx2_dot_rows(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a, float *out) {
    const uint8_t *wp = w, *ap = a;
    switch (t) {
    case RF_TYPE_Q4_0:
        dot_q4_0(n / 32, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_Q4_1:
        dot_q4_1(n / 32, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_Q5_0:
        dot_q5_0(n / 32, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_Q5_1:
        dot_q5_1(n / 32, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_Q8_0:
        dot_q8_0(n / 32, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_Q4_K:
        dot_q4_k(n / 256, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_Q5_K:
        dot_q5_k(n / 256, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_Q6_K:
        dot_q6_k(n / 256, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_F32:
        dot_f32(n, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_F16:
        dot_f16(n, n_rows, wp, w_stride, ap, out);
        return;
    case RF_TYPE_BF16:
        dot_bf16(n, n_rows, wp, w_stride, ap, out);
        return;
    default: /* no fast kernel: the reference (asserts on types without a dot) */
        rf_kernels_scalar.dot_rows(t, n, n_rows, w, w_stride, a, out);
        return;
    }
}

const rf_kernels rf_kernels_avx2 = {
    .isa = RF_ISA_AVX2,
    .quantize_act = avx2_quantize_act,
    .dot_rows = avx2_dot_rows,
    .dot_f32_f16 = rf_avx2_dot_f32_f16,
    .axpy_f16 = rf_avx2_axpy_f16,
    .geglu = rf_avx2_geglu,
    .read_sum = rf_avx2_read_sum,
};

#else
/* Not x86-64: no AVX2 table (ISO C wants at least one declaration per translation unit). */
typedef int rf_kernels_avx2_unavailable;
#endif
