/* kernels_avx512.c: the AVX-512 kernel tables rf_kernels_avx512 and rf_kernels_avx512vnni.
 *
 * Only this file is compiled with -mavx512f -mavx512bw -mavx512vl (+ -mavx2 -mfma -mf16c), see
 * CMakeLists.txt; rf_kernels_get hands a table out only when CPUID reports those features.
 * The VNNI instructions (VPDPBUSD, VPDPWSSD) are written as inline assembly inside the kernels
 * instantiated with vnni = 1, and the file is deliberately not compiled with -mavx512vnni: the
 * compiler can then never emit a VNNI instruction into the plain avx512 table on its own, so that
 * table runs on AVX-512 CPUs without VNNI (Skylake-SP) and is tested here by forcing it.
 * Nor is -mavx512dq used: rf_cpu_detect does not check DQ.
 *
 * Numerics: as kernels_avx2.c (the scalar table is the oracle): quantize_act is byte-exact;
 * dot_rows is exact in its integer parts and differs from the reference only by float
 * accumulation order (|fast - ref| <= 1e-5 * sum|w_i*a_i|). Activations must come from
 * quantize_act (|q| <= 127).
 *
 * Layout tricks:
 *  - 32-value formats go two blocks per 512-bit vector, values in order (block 0 in the low
 *    half); nibbles unpack with a broadcast load, a per-lane shift and a mask, Q5's fifth bits
 *    are the 64-bit mask qh0 | qh1 << 32, and one 8-byte load per block gives d (m) and qh.
 *    Level offsets (-8, -16, Q8_0's +128 for VPDPBUSD) are removed with an exact integer
 *    correction precomputed from the activation pair, shared by the four rows of a pass.
 *  - K-quants go one super-block per row and 64 values per vector (Q4_K/Q5_K: 64 bytes of
 *    nibbles per load, the activation rearranged to match once per pass); the sub-block scales are
 *    applied to maddubs' int16 pair sums with VPMADDWD/VPDPWSSD, so the integer sum of a whole
 *    super-block is exact in int32 before one float multiply-add.
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

RF_INLINE __m128i loadu128(const uint8_t *p) {
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

RF_INLINE __m256i loadu256(const uint8_t *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

RF_INLINE __m512i loadu512(const uint8_t *p) {
    return _mm512_loadu_si512((const void *)p);
}

/* Software prefetch into L2, PF_BYTES ahead rounded up to whole passes: the rows a later pass
 * reads at the same column. Rows of the small matrices are short (680 B for the 640-wide Q8_0
 * head), so four rows read side by side are four streams of ~10 cache lines each, too short for
 * the hardware prefetchers to train on: without this the head streams at ~35% of a plain read,
 * with it at ~90-98%. L2 rather than L1 (T0 measured 2x slower: the lines evict the activation
 * and fill the L1 miss buffers). Prefetching past the end of the matrix is harmless. */
#define PF_BYTES 8192

RF_INLINE size_t pf_distance(int nr, size_t ws) {
    const size_t pass = (size_t)nr * ws;
    return pass ? (PF_BYTES + pass - 1) / pass * pass : 0;
}

/* The address is formed as an integer: it may lie past the end of the matrix. */
RF_INLINE void prefetch_l2(const uint8_t *p, size_t ahead, size_t bytes) {
    const uintptr_t at = (uintptr_t)p + ahead;
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(at + o), _MM_HINT_T1);
}

/* [lo, hi] when two, else [lo, 0]. */
RF_INLINE __m512i join256(__m256i lo, const uint8_t *hi, int two) {
    return two ? _mm512_inserti64x4(_mm512_castsi256_si512(lo), loadu256(hi), 1)
               : _mm512_zextsi256_si512(lo);
}

/* acc + sum of u8 x s8 products, four adjacent bytes per int32 lane. The plain form goes through
 * int16 pair sums, exact as long as u <= 127 or the pairs cannot saturate (every caller's
 * levels are <= 63; Q8_0 uses VNNI or the abs/sign form). */
RF_INLINE __m512i dpbusd(__m512i acc, __m512i u, __m512i s, int vnni) {
    if (vnni) {
        __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
        return acc;
    }
    const __m512i p = _mm512_maddubs_epi16(u, s);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
}

/* acc + sum of int16 x int16 products, pairs per int32 lane. */
RF_INLINE __m512i dpwssd(__m512i acc, __m512i p, __m512i q, int vnni) {
    if (vnni) {
        __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(p), "v"(q));
        return acc;
    }
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, q));
}

/* ------------------------------------------------------------------------------------------ */
/* Activation quantizers                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* max(|x|, m); a NaN x leaves m (VMAXPS returns the second operand when either is NaN). */
RF_INLINE __m512 absmax_step(__m512 x, __m512 m) {
    return _mm512_max_ps(_mm512_abs_ps(x), m);
}

/* NaN lanes to 0, others clamped to [lo, hi], then rounded by MXCSR (nearest even, as rintf). */
RF_INLINE __m512i round_clamped(__m512 v, float lo, float hi) {
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
    return _mm512_cvtps_epi32(v);
}

/* One 32-value Q8_0/Q8_1 block: fp16(d) at dh, qs; returns the float d, *sum = sum(qs). */
RF_INLINE float quant_q8_32(const float *x, uint8_t *dh, uint8_t *qs, int *sum) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(absmax_step(v1, absmax_step(v0, _mm512_setzero_ps())));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const uint16_t h = rf_f32_to_f16(d);
    memcpy(dh, &h, 2);
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i q0 = round_clamped(_mm512_mul_ps(v0, vid), -127.0f, 127.0f);
    const __m512i q1 = round_clamped(_mm512_mul_ps(v1, vid), -127.0f, 127.0f);
    _mm_storeu_si128((__m128i *)(void *)qs, _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(void *)(qs + 16), _mm512_cvtepi32_epi8(q1));
    if (sum) *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
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

/* Q8_K as quant_ref.c: m = first element of largest |x| with its sign, iscale = -127/m,
 * q = (int8)min(127, sat(rint(iscale*x))), d = 1/iscale, bsums of 16; all-zero block -> zeros. */
static void quant_q8_k(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 256, y += 292) {
        __m512 m16 = _mm512_setzero_ps();
        for (int k = 0; k < 16; k++) m16 = absmax_step(_mm512_loadu_ps(x + 16 * k), m16);
        const float amax = _mm512_reduce_max_ps(m16);
        memset(y, 0, 292);
        if (amax == 0.0f) continue;
        float m = 0.0f;
        const __m512 va = _mm512_set1_ps(amax);
        for (int k = 0; k < 16; k++) {
            const __m512 ax = _mm512_abs_ps(_mm512_loadu_ps(x + 16 * k));
            const unsigned hit = _mm512_cmp_ps_mask(ax, va, _CMP_EQ_OQ);
            if (hit) {
                m = x[16 * k + __builtin_ctz(hit)];
                break;
            }
        }
        const float iscale = -127.0f / m;
        const __m512 vs = _mm512_set1_ps(iscale);
        for (int k = 0; k < 16; k++) {
            const __m512 v = _mm512_mul_ps(vs, _mm512_loadu_ps(x + 16 * k));
            __m512i q = round_clamped(v, -1073741824.0f, 1073741824.0f);
            q = _mm512_min_epi32(q, _mm512_set1_epi32(127));
            const __m128i b = _mm512_cvtepi32_epi8(q); /* truncation, as the int8 cast */
            _mm_storeu_si128((__m128i *)(void *)(y + 4 + 16 * k), b);
            const int16_t s = (int16_t)_mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(b));
            memcpy(y + 260 + 2 * k, &s, 2);
        }
        const float d = 1.0f / iscale;
        memcpy(y, &d, 4);
    }
}

static void quant_f16(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const int64_t left = n - i;
        const __mmask16 k = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16(y + i, k, h);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) /* NaN payloads: as half.h */
            for (int64_t j = i; j < i + 16 && j < n; j++) y[j] = rf_f32_to_f16(x[j]);
    }
}

static void quant_bf16(const float *x, uint16_t *y, int64_t n) {
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
    for (int64_t i = 0; i < n; i += 16) {
        const int64_t left = n - i;
        const __mmask16 k = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        const __m512i b = _mm512_castps_si512(v), top = _mm512_srli_epi32(b, 16);
        const __m512i lsb = _mm512_and_si512(top, one);
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(bias, lsb)), 16);
        r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), top,
                                 _mm512_set1_epi32(64));
        _mm256_mask_storeu_epi16(y + i, k, _mm512_cvtepi32_epi16(r));
    }
}

static void avx512_quantize_act(rf_type act, const float *x, void *dst, int64_t n) {
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
/* 32-value blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, two blocks per vector                       */
/* ------------------------------------------------------------------------------------------ */

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

RF_INLINE uint64_t ld64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The fp16 fields of blocks 0 and 1 from their first 8 bytes h0, h1 (h1 = 0 when absent), as
 * floats: d fields only -> [d0, d1, 0, 0]; d and m (or Q8_1's d and s) -> [d0, m0, d1, m1]. */
RF_INLINE __m128 b32_halves(int wide, uint64_t h0, uint64_t h1) {
    if (wide) return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)((h0 & 0xFFFFFFFFu) | h1 << 32)));
    return _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)(h0 & 0xFFFF) | (uint32_t)(h1 << 16))));
}

/* One or two blocks (b, b+1) of nr rows into acc (and the affine formats' m*s terms into
 * accm, lanes 1 and 3). Vector byte i holds value i of block 0, 32 + i value i of block 1. */
RF_INLINE void b32_step(rf_type t, int vnni, int nr, int two, int64_t b, const uint8_t *w,
                        size_t ws, const uint8_t *a, __m512 *acc, __m128 *accm, size_t pfd) {
    const int affine = b32_affine(t), off = b32_offset(t);
    const size_t bw = b32_bytes(t), ba = affine ? 36 : 34, aq = affine ? 4 : 2;
    const uint8_t *a0 = a + (size_t)b * ba, *a1 = a0 + ba;
    const __m512i zero = _mm512_setzero_si512();

    const __m512i av = join256(loadu256(a0 + aq), a1 + aq, two);
    const __m128 das = b32_halves(affine, ld64(a0), two ? ld64(a1) : 0);
    __m512i negc = zero; /* minus the level offset times the activation sums, per lane */
    if (t == RF_TYPE_Q8_0 && vnni)
        negc = _mm512_sub_epi32(zero, dpbusd(zero, _mm512_set1_epi8((char)0x80), av, 1));
    if (off) negc = _mm512_sub_epi32(zero, dpbusd(zero, _mm512_set1_epi8((char)off), av, vnni));
    /* the scale of int32 lane i is that of block i / 8 */
    const __m512i sidx =
        _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1 + affine, 1 + affine, 1 + affine, 1 + affine,
                          1 + affine, 1 + affine, 1 + affine, 1 + affine);
    /* 64-bit lanes 2, 3, 6, 7 hold the high nibbles */
    const __m512i nshift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        const uint8_t *w0 = w + (size_t)r * ws + (size_t)b * bw, *w1 = w0 + bw;
        prefetch_l2(w0, pfd, 2 * bw);
        const uint64_t h0 = ld64(w0), h1 = two ? ld64(w1) : 0; /* d [m] [qh] */
        __m512i dp;
        if (t == RF_TYPE_Q8_0) {
            const __m512i q = join256(loadu256(w0 + 2), w1 + 2, two);
            if (vnni) {
                dp = dpbusd(negc, _mm512_xor_si512(q, _mm512_set1_epi8((char)0x80)), av, 1);
            } else {
                const __m512i sa = _mm512_mask_sub_epi8(av, _mm512_movepi8_mask(q), zero, av);
                dp = dpbusd(zero, _mm512_abs_epi8(q), sa, 0);
            }
        } else {
            const __m256i q0 = _mm256_broadcastsi128_si256(loadu128(w0 + b32_qs(t)));
            const __m512i qq =
                two ? _mm512_inserti64x4(_mm512_castsi256_si512(q0),
                                         _mm256_broadcastsi128_si256(loadu128(w1 + b32_qs(t))), 1)
                    : _mm512_zextsi256_si512(q0);
            __m512i x = _mm512_and_si512(_mm512_srlv_epi64(qq, nshift), _mm512_set1_epi8(0x0F));
            if (b32_qh(t)) { /* the two qh words are the byte mask of the fifth bits */
                const __mmask64 k0 = _cvtu32_mask32(ld32(w0 + b32_qh(t)));
                const __mmask64 k1 = two ? _cvtu32_mask32(ld32(w1 + b32_qh(t))) : 0;
                x = _mm512_mask_add_epi8(x, _mm512_kunpackd(k1, k0), x, _mm512_set1_epi8(0x10));
            }
            dp = dpbusd(negc, x, av, vnni);
        }
        const __m128 s = _mm_mul_ps(b32_halves(affine, h0, h1), das);
        if (affine) accm[r] = _mm_add_ps(accm[r], s);
        const __m512 s16 = _mm512_permutexvar_ps(sidx, _mm512_castps128_ps512(s));
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), s16, acc[r]);
    }
}

RF_INLINE void b32_rows(rf_type t, int vnni, int nr, int64_t nb, const uint8_t *w, size_t ws,
                        const uint8_t *a, float *out) {
    __m512 acc[NR_MAX];
    __m128 accm[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        accm[r] = _mm_setzero_ps();
    }
    int64_t b = 0;
    const size_t pfd = pf_distance(nr, ws);
    for (; b + 2 <= nb; b += 2) b32_step(t, vnni, nr, 1, b, w, ws, a, acc, accm, pfd);
    if (b < nb) b32_step(t, vnni, nr, 0, b, w, ws, a, acc, accm, pfd);
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        float s = _mm512_reduce_add_ps(acc[r]);
        if (b32_affine(t)) {
            const __m128 m = _mm_add_ps(accm[r], _mm_movehl_ps(accm[r], accm[r]));
            s += _mm_cvtss_f32(_mm_movehdup_ps(m)); /* lanes 1 + 3 */
        }
        out[r] = s;
    }
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

/* [lo x32 bytes, hi x32 bytes]. */
RF_INLINE __m512i halves_epi16(int lo, int hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)lo)),
                              _mm256_set1_epi16((short)hi), 1);
}

/* Q4_K (q5 = 0) and Q5_K super-blocks. 64 bytes of qs (chunks 2g and 2g+1) per load: their low
 * nibbles are sub-blocks 4g and 4g+2, their high nibbles 4g+1 and 4g+3; the activation is
 * rearranged to match once per super-block, shared by the rows of the pass. */
RF_INLINE void k_affine_rows(int q5, int vnni, int nr, int64_t nb, const uint8_t *w, size_t ws,
                             const uint8_t *a, float *out) {
    const size_t bw = q5 ? 176 : 144, qs_off = q5 ? 48 : 16;
    const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
    const size_t pfd = pf_distance(nr, ws);
    __m512 acc[NR_MAX];
    __m128 accm[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        accm[r] = _mm_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *ak = a + (size_t)i * 292;
        const float da = ldf(ak);
        __m512i alo[2], ahi[2]; /* sub-blocks [4g, 4g+2] and [4g+1, 4g+3] */
#pragma GCC unroll 2
        for (int g = 0; g < 2; g++) {
            const __m512i v0 = loadu512(ak + 4 + 128 * g), v1 = loadu512(ak + 68 + 128 * g);
            alo[g] = _mm512_shuffle_i64x2(v0, v1, _MM_SHUFFLE(1, 0, 1, 0));
            ahi[g] = _mm512_shuffle_i64x2(v0, v1, _MM_SHUFFLE(3, 2, 3, 2));
        }
        /* sums of bsums pairs (one per sub-block), as 8 int16 */
        const __m256i bp = _mm256_madd_epi16(loadu256(ak + 260), _mm256_set1_epi16(1));
        const __m128i bsp =
            _mm_packs_epi32(_mm256_castsi256_si128(bp), _mm256_extracti128_si256(bp, 1));
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + (size_t)r * ws + (size_t)i * bw;
            prefetch_l2(wb, pfd, bw);
            const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)ld32(wb))),
                                         _mm_set1_ps(da)); /* d*da, dmin*da */
            uint64_t sc8, m8;
            k_scales_mins(wb + 4, &sc8, &m8);
            const __m512i scb =
                _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)sc8)));
            const __m128i mins =
                _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)m8)), bsp);
            accm[r] = _mm_fmadd_ps(_mm_permute_ps(dd, 0x55), _mm_cvtepi32_ps(mins), accm[r]);
            const __m512i h =
                q5 ? _mm512_broadcast_i64x4(loadu256(wb + 16)) : _mm512_setzero_si512();
            __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 2
            for (int g = 0; g < 2; g++) {
                const __m512i q = loadu512(wb + qs_off + 64 * g);
                __m512i lo = _mm512_and_si512(q, m4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
                if (q5) { /* fifth bit of sub-block j is bit j of qh */
                    const __m512i bl = halves_epi16(0x0101 << (4 * g), 0x0101 << (4 * g + 2));
                    const __m512i bh = halves_epi16(0x0101 << (4 * g + 1), 0x0101 << (4 * g + 3));
                    lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(h, bl), lo, b4);
                    hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(h, bh), hi, b4);
                }
                /* scale words: low half sub-block 4g (+1 for hi), high half 4g+2 (+1) */
                const int j = 4 * g;
                const __m512i sl =
                    halves_epi16((2 * j) | (2 * j + 1) << 8, (2 * j + 4) | (2 * j + 5) << 8);
                const __m512i sh =
                    halves_epi16((2 * j + 2) | (2 * j + 3) << 8, (2 * j + 6) | (2 * j + 7) << 8);
                sumi = dpwssd(sumi, _mm512_maddubs_epi16(lo, alo[g]), _mm512_shuffle_epi8(scb, sl),
                              vnni);
                sumi = dpwssd(sumi, _mm512_maddubs_epi16(hi, ahi[g]), _mm512_shuffle_epi8(scb, sh),
                              vnni);
            }
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_broadcastss_ps(dd), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        const __m128 m = _mm_add_ps(accm[r], _mm_movehl_ps(accm[r], accm[r]));
        out[r] =
            _mm512_reduce_add_ps(acc[r]) - (_mm_cvtss_f32(m) + _mm_cvtss_f32(_mm_movehdup_ps(m)));
    }
}

/* Q6_K: ql at 0, qh at 128, int8 scales at 192, d at 208. Levels 0..63 dotted unsigned, minus
 * the exact correction 32 * sum_j sc_j * bsums_j. */
RF_INLINE void q6_k_rows(int vnni, int nr, int64_t nb, const uint8_t *w, size_t ws,
                         const uint8_t *a, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    const size_t pfd = pf_distance(nr, ws);
    __m512 acc[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *ak = a + (size_t)i * 292;
        const float da = ldf(ak);
        __m512i av[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) av[c] = loadu512(ak + 4 + 64 * c);
        const __m256i bsums = loadu256(ak + 260);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + (size_t)r * ws + (size_t)i * 210;
            prefetch_l2(wb, pfd, 210);
            const __m256i sc16 = _mm256_cvtepi8_epi16(loadu128(wb + 192));
            const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), 5);
            __m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(corr));
            const __m512i scz = _mm512_castsi256_si512(sc16);
#pragma GCC unroll 2
            for (int n = 0; n < 2; n++) {
                const __m512i ql = loadu512(wb + 64 * n);
                const __m256i h = loadu256(wb + 128 + 32 * n);
                const __m512i hh =
                    _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);
                /* values 128n + 0..63 and 128n + 64..127; A | (B & C) is 0xF8 */
                const __m512i x01 = _mm512_ternarylogic_epi32(_mm512_and_si512(ql, m4),
                                                              _mm512_slli_epi16(hh, 4), m2, 0xF8);
                const __m512i x23 = _mm512_ternarylogic_epi32(
                    _mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), hh, m2, 0xF8);
                /* 128-bit lane k of x01 is sub-block 8n+k, of x23 8n+4+k */
                const __m512i i01 = _mm512_setr_epi64(
                    0x0001000100010001ll * (8 * n), 0x0001000100010001ll * (8 * n),
                    0x0001000100010001ll * (8 * n + 1), 0x0001000100010001ll * (8 * n + 1),
                    0x0001000100010001ll * (8 * n + 2), 0x0001000100010001ll * (8 * n + 2),
                    0x0001000100010001ll * (8 * n + 3), 0x0001000100010001ll * (8 * n + 3));
                const __m512i i23 = _mm512_add_epi16(i01, _mm512_set1_epi16(4));
                sumi = dpwssd(sumi, _mm512_maddubs_epi16(x01, av[2 * n]),
                              _mm512_permutexvar_epi16(i01, scz), vnni);
                sumi = dpwssd(sumi, _mm512_maddubs_epi16(x23, av[2 * n + 1]),
                              _mm512_permutexvar_epi16(i23, scz), vnni);
            }
            const float dd = _cvtsh_ss(ld16(wb + 208)) * da;
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(dd), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* ------------------------------------------------------------------------------------------ */
/* Float rows                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Up to 16 values (mask k) of a row of type t at element index i, as floats (0 past k). */
RF_INLINE __m512 load16f(rf_type t, const uint8_t *p, int64_t i, __mmask16 k, int full) {
    if (t == RF_TYPE_F32) {
        const float *f = (const float *)(const void *)p + i;
        return full ? _mm512_loadu_ps(f) : _mm512_maskz_loadu_ps(k, f);
    }
    const __m256i h = full ? loadu256(p + 2 * i) : _mm256_maskz_loadu_epi16(k, p + 2 * i);
    if (t == RF_TYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

RF_INLINE void float_rows(rf_type t, int nr, int64_t n, const uint8_t *w, size_t ws,
                          const uint8_t *a, float *out) {
    __m512 acc[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 av = load16f(t, a, i, 0xFFFF, 1);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[r] = _mm512_fmadd_ps(load16f(t, w + (size_t)r * ws, i, 0xFFFF, 1), av, acc[r]);
    }
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        const __m512 av = load16f(t, a, i, k, 0);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[r] = _mm512_fmadd_ps(load16f(t, w + (size_t)r * ws, i, k, 0), av, acc[r]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* ------------------------------------------------------------------------------------------ */
/* Dispatch                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Defines name(n_units, n_rows, w, ws, a, out): four rows per pass, then one at a time. */
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
#define DEFINE_QUANT_ROWS(sfx, vnni)                                                               \
    ROWS_FN(dot_q4_0##sfx, b32_rows(RF_TYPE_Q4_0, vnni, nr, nu, W_R, ws, a, out + r))              \
    ROWS_FN(dot_q4_1##sfx, b32_rows(RF_TYPE_Q4_1, vnni, nr, nu, W_R, ws, a, out + r))              \
    ROWS_FN(dot_q5_0##sfx, b32_rows(RF_TYPE_Q5_0, vnni, nr, nu, W_R, ws, a, out + r))              \
    ROWS_FN(dot_q5_1##sfx, b32_rows(RF_TYPE_Q5_1, vnni, nr, nu, W_R, ws, a, out + r))              \
    ROWS_FN(dot_q8_0##sfx, b32_rows(RF_TYPE_Q8_0, vnni, nr, nu, W_R, ws, a, out + r))              \
    ROWS_FN(dot_q4_k##sfx, k_affine_rows(0, vnni, nr, nu, W_R, ws, a, out + r))                    \
    ROWS_FN(dot_q5_k##sfx, k_affine_rows(1, vnni, nr, nu, W_R, ws, a, out + r))                    \
    ROWS_FN(dot_q6_k##sfx, q6_k_rows(vnni, nr, nu, W_R, ws, a, out + r))

DEFINE_QUANT_ROWS(_plain, 0)
DEFINE_QUANT_ROWS(_vnni, 1)
ROWS_FN(dot_f32, float_rows(RF_TYPE_F32, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_f16, float_rows(RF_TYPE_F16, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_bf16, float_rows(RF_TYPE_BF16, nr, nu, W_R, ws, a, out + r))
#undef W_R

#define DEFINE_DOT_ROWS(sfx)                                                                       \
    static void avx512_dot_rows##sfx(rf_type t, int64_t n, int64_t n_rows, const void *w,          \
                                     size_t ws, const void *a, float *out) {                       \
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
            dot_bf16(n, n_rows, wp, ws, ap, out);                                                  \
            return;                                                                                \
        default: /* no fast kernel: the reference (asserts on types without a dot) */              \
            rf_kernels_scalar.dot_rows(t, n, n_rows, w, ws, a, out);                               \
            return;                                                                                \
        }                                                                                          \
    }

DEFINE_DOT_ROWS(_plain)
DEFINE_DOT_ROWS(_vnni)

const rf_kernels rf_kernels_avx512 = {
    .isa = RF_ISA_AVX512,
    .quantize_act = avx512_quantize_act,
    .dot_rows = avx512_dot_rows_plain,
    .dot_f32_f16 = rf_avx2_dot_f32_f16,
    .axpy_f16 = rf_avx2_axpy_f16,
    .geglu = rf_avx2_geglu,
    .read_sum = rf_avx2_read_sum,
};
const rf_kernels rf_kernels_avx512vnni = {
    .isa = RF_ISA_AVX512,
    .quantize_act = avx512_quantize_act,
    .dot_rows = avx512_dot_rows_vnni,
    .dot_f32_f16 = rf_avx2_dot_f32_f16,
    .axpy_f16 = rf_avx2_axpy_f16,
    .geglu = rf_avx2_geglu,
    .read_sum = rf_avx2_read_sum,
};

#else
/* Not x86-64: no AVX-512 tables (ISO C wants at least one declaration per translation unit). */
typedef int rf_kernels_avx512_unavailable;
#endif
