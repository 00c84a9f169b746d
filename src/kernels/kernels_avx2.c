/* kernels_avx2.c: the AVX2 + FMA + F16C kernel table (rf_kernels_avx2).
 *
 * Only this file is compiled with -mavx2 -mfma -mf16c (CMakeLists.txt); nothing here runs unless
 * rf_kernels_get found those features at run time.
 *
 * Numerics (the contract tests/unit/kernels/test_kernels.c checks against the scalar table):
 *  - quantize_act writes exactly the bytes rf_ref_quantize_row writes, for every input including
 *    ties, zero blocks, NaN, inf and subnormals: the same float operations in the same order
 *    (x * (127/amax), x * (-127/m)), rounding by the MXCSR mode as rintf does, NaN mapped to 0
 *    and out-of-range values saturated before the conversion to integer, as quant_ref.c does.
 *  - dot_rows does the integer part of every block exactly (maddubs/madd on the packed quants;
 *    the weight formats' offsets -8/-16/-32 are subtracted as an exact integer correction from
 *    the activation sums), so it differs from the scalar table only by float rounding:
 *    |fast - ref| <= 1e-5 * sum|w_i*a_i|. For the 32-value formats, Q4_K and Q6_K the float part
 *    is one chain per row over its blocks (super-blocks) in order, acc = fma((float)isum, d * da,
 *    acc) (Q4_1/Q5_1: then fma(m, s, acc) with the Q8_1 block's s; K-quants: then fnmadd of the
 *    min sum with dmin * da), exactly as dot_tile computes each lane, so dot_tile gives the bits
 *    of dot_rows token by token (batch invariance); the other types (Q5_K, floats) accumulate
 *    per lane and reduce at the end, and their dot_tile is dot_rows.
 *  - Activations must come from quantize_act (|q| <= 127): the sign trick of the Q8_0 dot
 *    relies on it.
 *
 * Rows are processed four at a time (the activation block and its per-block setup are loaded
 * once per four rows), the remainder one at a time. dot_tile transposes tiles of 8 rows so each
 * int32 lane is a row: the loop of tile_loop.h over this file's mapping and unpack and dot pieces.
 */
#if defined(__x86_64__)

#include "kernels/x86_common.h"

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

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

RF_X86_DEFINE_QUANTIZE_ACT(avx2_quantize_act)

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0                                              */
/* ------------------------------------------------------------------------------------------ */

/* Four rows' sums of 8 int32 lanes each: lane r = row r. */
RF_INLINE __m128i rows4_sums(const __m256i *v) {
    const __m256i x =
        _mm256_add_epi32(_mm256_unpacklo_epi32(v[0], v[1]), _mm256_unpackhi_epi32(v[0], v[1]));
    const __m256i y =
        _mm256_add_epi32(_mm256_unpacklo_epi32(v[2], v[3]), _mm256_unpackhi_epi32(v[2], v[3]));
    const __m256i z = _mm256_add_epi32(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y));
    return _mm_add_epi32(_mm256_castsi256_si128(z), _mm256_extracti128_si256(z, 1));
}

RF_INLINE void store4(__m128 acc, int nr, float *out) {
    _Alignas(16) float o[4];
    _mm_store_ps(o, acc);
    for (int r = 0; r < nr; r++) out[r] = o[r];
}

/* out[r] = dot(row r, a) for r < nr (<= 4). Each row's result is one float chain over its blocks
 * in order: acc = fma((float)isum_b, d_b * da_b, acc), isum_b the block's exact integer dot of
 * the levels (offset removed), and for the affine formats Q4_1/Q5_1 then acc = fma(m_b, s_b, acc)
 * with the activation block's s = d * sum(q): the arithmetic of dot_tile, so one token gives the
 * same bits either way. */
RF_INLINE void b32_chain_rows(rf_type t, int nr, int64_t nb, const uint8_t *w, size_t ws,
                              const uint8_t *a, float *out) {
    const int off = b32_offset(t), affine = b32_affine(t);
    const size_t bw = b32_bytes(t), ba = b32_act_bytes(t), aq = b32_act_qs(t);
    const size_t pfd = pf_distance(nr, ws);
    __m128 acc = _mm_setzero_ps(); /* lane r: row r */
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *ab = a + (size_t)b * ba;
        const __m256i av = loadu256(ab + aq);
        __m256i negc = _mm256_setzero_si256();
        if (off) negc = _mm256_sub_epi32(negc, dot_u8s8(_mm256_set1_epi8((char)off), av));
        __m256i dp[4];
        uint64_t dh = 0, mh = 0; /* the rows' fp16 d (and m), word r */
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            if (r >= nr) {
                dp[r] = _mm256_setzero_si256();
                continue;
            }
            const uint8_t *wb = w + (size_t)r * ws + (size_t)b * bw;
            prefetch_l2(wb, pfd, bw);
            dh |= (uint64_t)ld16(wb) << (16 * r);
            if (affine) mh |= (uint64_t)ld16(wb + 2) << (16 * r);
            if (t == RF_TYPE_Q8_0) {
                const __m256i q = loadu256(wb + 2);
                dp[r] = dot_u8s8(_mm256_abs_epi8(q), _mm256_sign_epi8(av, q));
            } else {
                __m256i x = nibbles32(wb + b32_qs(t));
                if (b32_qh(t)) x = _mm256_or_si256(x, fifth_bits32(ld32(wb + b32_qh(t))));
                dp[r] = off ? _mm256_add_epi32(dot_u8s8(x, av), negc) : dot_u8s8(x, av);
            }
        }
        const __m128 dw = _mm_cvtph_ps(_mm_cvtsi64_si128((long long)dh));
        const __m128 s = _mm_mul_ps(dw, _mm_set1_ps(h2f(ld16(ab))));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(rows4_sums(dp)), s, acc);
        if (affine)
            acc = _mm_fmadd_ps(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)mh)),
                               _mm_set1_ps(h2f(ld16(ab + 2))), acc);
    }
    store4(acc, nr, out);
}

/* ------------------------------------------------------------------------------------------ */
/* K-quants against Q8_K (a block: float d at 0, qs at 4, int16 bsums at 260)                 */
/* ------------------------------------------------------------------------------------------ */

/* Word j of w8 (8 words in both 128-bit lanes) broadcast to all 16 words. */
RF_INLINE __m256i bcast_word(__m256i w8, int j) {
    return _mm256_shuffle_epi8(w8, _mm256_set1_epi16((short)((2 * j) | (2 * j + 1) << 8)));
}

/* Q4_K (qh_off == 0) and Q5_K super-blocks. */
/* One super-block of one row into its chain, as dot_tile does it per lane:
 * acc = fma((float)sum, d * da, acc), then (mins) acc = fnmadd((float)min_sum, dmin * da, acc);
 * dd holds d * da in lane 0 and dmin * da in lane 1. */
RF_INLINE __m128 k_chain1(__m128 acc, __m256i sum, __m256i mins, __m128 dd, int has_mins) {
    /* both sums at once: [sum, mins, sum, mins] */
    const __m256i h = _mm256_hadd_epi32(sum, has_mins ? mins : sum);
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    x = _mm_hadd_epi32(x, x);
    const __m128 f = _mm_cvtepi32_ps(x);
    acc = _mm_fmadd_ss(f, dd, acc);
    if (has_mins) acc = _mm_fnmadd_ss(_mm_movehdup_ps(f), _mm_movehdup_ps(dd), acc);
    return acc;
}

RF_INLINE void k_affine_rows(int q5, int nr, int64_t nb, const uint8_t *w, size_t ws,
                             const uint8_t *a, float *out) {
    const size_t bw = q5 ? 176 : 144, qs_off = q5 ? 48 : 16;
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    const size_t pfd = pf_distance(nr, ws);
    __m128 acc[NR_MAX]; /* lane 0: the row's chain */
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm_setzero_ps();
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
            const __m256i mins = _mm256_madd_epi16(bsums, mdup);
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
            acc[r] = k_chain1(acc[r], sumi, mins, dd, 1);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) out[r] = _mm_cvtss_f32(acc[r]);
}

/* Q6_K: ql at 0, qh at 128, int8 scales at 192, d at 208. Levels 0..63 dotted unsigned, minus
 * the exact correction 32 * sum_j sc_j * bsums_j. */
RF_INLINE void q6_k_rows(int nr, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                         float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    const size_t pfd = pf_distance(nr, ws);
    __m128 acc[NR_MAX]; /* lane 0: the row's chain */
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm_setzero_ps();
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
            const __m128 dd = _mm_set_ss(h2f(ld16(wb + 208)) * da);
            acc[r] = k_chain1(acc[r], sumi, sumi, dd, 0);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) out[r] = _mm_cvtss_f32(acc[r]);
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

/* F32/F16/BF16 rows widened to floats, one FMA per 8 values and row, each row's cache lines
 * prefetched into L2 a pass or more ahead as the block formats do (the F16 file's decode with
 * --kernels avx2: 17-20 tok/s without the prefetch, 26-29 with it). */
RF_INLINE void float_rows(rf_type t, int nr, int64_t n, const uint8_t *w, size_t ws,
                          const uint8_t *a, float *out) {
    __m256 acc[NR_MAX];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    const size_t esz = t == RF_TYPE_F32 ? 4 : 2, pfd = pf_distance(nr, ws);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 av = load8f(t, a, i);
        const int pf = ((size_t)i * esz) % 64 == 0; /* once per cache line of each row */
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            if (pf) prefetch_l2(w + (size_t)r * ws + (size_t)i * esz, pfd, 64);
            acc[r] = _mm256_fmadd_ps(load8f(t, w + (size_t)r * ws, i), av, acc[r]);
        }
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

#define W_R (w + (size_t)r * ws)
ROWS_FN(dot_q4_0, b32_chain_rows(RF_TYPE_Q4_0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q4_1, b32_chain_rows(RF_TYPE_Q4_1, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q5_0, b32_chain_rows(RF_TYPE_Q5_0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q5_1, b32_chain_rows(RF_TYPE_Q5_1, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q8_0, b32_chain_rows(RF_TYPE_Q8_0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q4_k, k_affine_rows(0, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q5_k, k_affine_rows(1, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_q6_k, q6_k_rows(nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_f32, float_rows(RF_TYPE_F32, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_f16, float_rows(RF_TYPE_F16, nr, nu, W_R, ws, a, out + r))
ROWS_FN(dot_bf16, float_rows(RF_TYPE_BF16, nr, nu, W_R, ws, a, out + r))
#undef W_R

RF_X86_DEFINE_DOT_ROWS(avx2_dot_rows, , dot_bf16)

/* ------------------------------------------------------------------------------------------ */
/* dot_tile: 8 rows against a group of tokens, one row per int32 lane (tile_loop.h)           */
/* ------------------------------------------------------------------------------------------ */

/* The mapping tile_loop.h's loop is written over: 8 rows per tile, one per lane of a 256-bit
 * vector, 4 tokens per pass. No VNNI: the byte dots are VPMADDUBSW pair sums added in int16 while
 * they cannot overflow (levels <= 31: four steps, Q4_K: a whole sub-block, Q6_K: two), then
 * widened with VPMADDWD; Q8_0 moves the weight signs onto the activation (|q| x sign(a, q)). */
#define TILE_W 8
#define TILE_T 4
typedef __m256 tile_vf;
typedef __m256i tile_vi;
#define TV_LOADF(p)                _mm256_load_ps((const float *)(const void *)(p))
#define TV_LOADI(p)                _mm256_load_si256((const __m256i *)(const void *)(p))
#define TV_SETF(x)                 _mm256_set1_ps(x)
#define TV_SETI(x)                 _mm256_set1_epi32(x)
#define TV_ZEROI()                 _mm256_setzero_si256()
#define TV_ADDI(a, b)              _mm256_add_epi32(a, b)
#define TV_MULLOI(a, b)            _mm256_mullo_epi32(a, b)
#define TV_CVTF(v)                 _mm256_cvtepi32_ps(v)
#define TV_MULF(a, b)              _mm256_mul_ps(a, b)
#define TV_FMADD(a, b, c)          _mm256_fmadd_ps(a, b, c)
#define TV_FNMADD(a, b, c)         _mm256_fnmadd_ps(a, b, c)
#define TV_DPWSSD(acc, p, q, vnni) _mm256_add_epi32(acc, _mm256_madd_epi16(p, q))
#define TV_STOREF(p, v)            _mm256_store_ps((float *)(void *)(p), v)
#define TV_STOREI(p, v)            _mm256_store_si256((__m256i *)(void *)(p), v)
#define TV_SET8(x)                 _mm256_set1_epi8(x)
#define TV_ANDI(a, b)              _mm256_and_si256(a, b)
#define TV_ORI(a, b)               _mm256_or_si256(a, b)
#define TV_XORI(a, b)              _mm256_xor_si256(a, b)
#define TV_OR_AND(a, b, c)         _mm256_or_si256(a, _mm256_and_si256(b, c))
#define TV_SLLI16(v, n)            _mm256_slli_epi16(v, n)
#define TV_SRLI16(v, n)            _mm256_srli_epi16(v, n)
#define TV_SLLI32(v, n)            _mm256_slli_epi32(v, n)
#define TV_SRLI32(v, n)            _mm256_srli_epi32(v, n)
#define TV_SRAI32(v, n)            _mm256_srai_epi32(v, n)
#define TV_HALVES_F(p)             _mm256_cvtph_ps(_mm_load_si128((const void *)(p)))
#define TV_LOW_HALF_F(v)           low_half_f(v)
#define TV_TRANSPOSE(r, y)         transpose8x8(r, y)

/* Lanes [0, nr) of out: a later segment continues the chains where the earlier one stored them
 * (go_on = 1), else they start at 0. */
RF_INLINE __m256 lanes_load(const float *out, int nr, int go_on) {
    if (!go_on) return _mm256_setzero_ps();
    if (nr == 8) return _mm256_loadu_ps(out);
    _Alignas(32) float s[8] = {0};
    for (int i = 0; i < nr; i++) s[i] = out[i];
    return _mm256_load_ps(s);
}

RF_INLINE void lanes_store(__m256 v, float *out, int nr) {
    if (nr == 8) {
        _mm256_storeu_ps(out, v);
        return;
    }
    _Alignas(32) float s[8];
    _mm256_store_ps(s, v);
    for (int i = 0; i < nr; i++) out[i] = s[i];
}

/* The fp16 in the low half of each int32 lane, as floats. */
RF_INLINE __m256 low_half_f(__m256i v) {
    const __m256i h = _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF));
    return _mm256_cvtph_ps(
        _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

/* Transposes 8 rows of 8 dwords (row j in r[j]) into y[k]: lane i = dword k of row i. */
RF_INLINE void transpose8x8(const __m256i *r, __m256i *y) {
    __m256i t[8], u[8];
#pragma GCC unroll 4
    for (int j = 0; j < 8; j += 2) {
        t[j] = _mm256_unpacklo_epi32(r[j], r[j + 1]);
        t[j + 1] = _mm256_unpackhi_epi32(r[j], r[j + 1]);
    }
#pragma GCC unroll 2
    for (int j = 0; j < 8; j += 4) {
        u[j] = _mm256_unpacklo_epi64(t[j], t[j + 2]);
        u[j + 1] = _mm256_unpackhi_epi64(t[j], t[j + 2]);
        u[j + 2] = _mm256_unpacklo_epi64(t[j + 1], t[j + 3]);
        u[j + 3] = _mm256_unpackhi_epi64(t[j + 1], t[j + 3]);
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        y[k] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x20);
        y[k + 4] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x31);
    }
}

#include "kernels/tile_loop.h"

/* -- 32-value formats -- */

/* The 32 levels of a nibble-format block (low nibbles, then high; Q5: | the fifth bits). */
RF_INLINE __m256i b32_levels_t(rf_type t, const uint8_t *wb) {
    const __m256i x = nibbles32(wb + b32_qs(t));
    return b32_qh(t) ? _mm256_or_si256(x, fifth_bits32(ld32(wb + b32_qh(t)))) : x;
}

/* si[j] += the level dots of the transposed block wp with token j's bytes at at[j] + ao. */
RF_INLINE void b32_dots_t(rf_type t, int vnni, int nt, const uint8_t *wp, const uint8_t *const *at,
                          size_t ao, tile_vi *si) {
    (void)vnni;
    if (t == RF_TYPE_Q8_0) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i q = _mm256_load_si256((const __m256i *)(const void *)(wp + 32 * k));
            const __m256i x = _mm256_abs_epi8(q);
#pragma GCC unroll 4
            for (int j = 0; j < nt; j++) {
                const __m256i sq = _mm256_sign_epi8(bcast32(at[j] + ao + 4 * k), q);
                si[j] = _mm256_add_epi32(si[j], dot_u8s8(x, sq));
            }
        }
        return;
    }
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 2
    for (int k0 = 0; k0 < 8; k0 += 4) {
        __m256i x[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            x[k] = _mm256_load_si256((const __m256i *)(const void *)(wp + 32 * (k0 + k)));
#pragma GCC unroll 4
        for (int j = 0; j < nt; j++) {
            __m256i p = _mm256_maddubs_epi16(x[0], bcast32(at[j] + ao + 4 * k0));
#pragma GCC unroll 3
            for (int k = 1; k < 4; k++)
                p = _mm256_add_epi16(
                    p, _mm256_maddubs_epi16(x[k], bcast32(at[j] + ao + 4 * (k0 + k))));
            si[j] = _mm256_add_epi32(si[j], _mm256_madd_epi16(p, ones));
        }
    }
}

/* -- K-quants -- */

/* si[j] += the level dots of sub-block sub of the transposed super-block wp with token j's bytes
 * at at[j] + ao: pair sums added in int16 over the whole sub-block (Q4_K) or two steps (Q6_K). */
RF_INLINE void k_dots_t(int q6, int vnni, int nt, const uint8_t *wp, int sub,
                        const uint8_t *const *at, size_t ao, tile_vi *si) {
    (void)vnni;
    const __m256i ones = _mm256_set1_epi16(1);
    const int per = q6 ? 4 : 8, grp = q6 ? 2 : 8;
#pragma GCC unroll 8
    for (int g0 = 0; g0 < per; g0 += grp) {
#pragma GCC unroll 4
        for (int j = 0; j < nt; j++) {
            __m256i p = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int k = g0; k < g0 + grp; k++) {
                const int m = per * sub + k;
                const __m256i x = _mm256_load_si256((const __m256i *)(const void *)(wp + 32 * m));
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(x, bcast32(at[j] + ao + 4 * m)));
            }
            si[j] = _mm256_add_epi32(si[j], _mm256_madd_epi16(p, ones));
        }
    }
}

TILE_DEFINE_DOT_TILE(avx2_dot_tile, 0, avx2_dot_rows)

const rf_kernels rf_kernels_avx2 = {
    .isa = RF_ISA_AVX2,
    .quantize_act = avx2_quantize_act,
    .dot_rows = avx2_dot_rows,
    .dot_tile = avx2_dot_tile,
    RF_KERNELS_AVX2_PIECES,
};

#else
/* Not x86-64: no AVX2 table (ISO C wants at least one declaration per translation unit). */
typedef int rf_kernels_avx2_unavailable;
#endif
