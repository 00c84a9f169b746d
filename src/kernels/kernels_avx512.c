/* kernels_avx512.c: the AVX-512 kernel tables rf_kernels_avx512, rf_kernels_avx512vnni and
 * rf_kernels_avx512bf16 (the VNNI table with BF16 weights computed by VDPBF16PS).
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
 * dot_rows and dot_tile are exact in their integer parts and differ from the reference only by
 * float accumulation order (|fast - ref| <= 1e-5 * sum|w_i*a_i|); for the 32-value formats (Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0), Q4_K and Q6_K both run the same per-row float chain (see dot_tile), so
 * dot_tile gives exactly the bits of dot_rows token by token (the other types' dot_tile is
 * dot_rows per token). Activations must come from quantize_act (|q| <= 127).
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
 *  - dot_tile (prefill, batched decode) transposes tiles of 16 rows so that each int32 lane is a
 *    row: the loop of tile_loop.h over this file's mapping and unpack and dot pieces.
 */
#if defined(__x86_64__)

#include "kernels/x86_common.h"

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

RF_INLINE __m512i loadu512(const uint8_t *p) {
    return _mm512_loadu_si512((const void *)p);
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

/* acc + a[2i] * b[2i] + a[2i+1] * b[2i+1] per float lane i, a and b 32 bfloat16 values each
 * (VDPBF16PS: each product is exact in float, the two adds round to nearest even; denormal
 * inputs and results are flushed to zero). Inline assembly for the reason VNNI is: the file is
 * not compiled with -mavx512bf16, so only kernels that ask for it contain the instruction. */
RF_INLINE __m512 dpbf16(__m512 acc, __m512i a, __m512i b) {
    __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
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

RF_X86_DEFINE_QUANTIZE_ACT(avx512_quantize_act)

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, two blocks per vector                       */
/* ------------------------------------------------------------------------------------------ */

/* The fp16 fields of blocks 0 and 1 from their first 8 bytes h0, h1 (h1 = 0 when absent), as
 * floats: d fields only -> [d0, d1, 0, 0]; d and m (or Q8_1's d and s) -> [d0, m0, d1, m1]. */
RF_INLINE __m128 b32_halves(int wide, uint64_t h0, uint64_t h1) {
    if (wide) return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)((h0 & 0xFFFFFFFFu) | h1 << 32)));
    return _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)(h0 & 0xFFFF) | (uint32_t)(h1 << 16))));
}

/* The level dots of blocks b, b+1 (b+1 only when two) of one row at w0 against the activation
 * pair av, 8 lanes per block, offsets removed through negc (exact). */
RF_INLINE __m512i b32_dp(rf_type t, int vnni, const uint8_t *w0, int two, __m512i av,
                         __m512i negc) {
    const uint8_t *w1 = w0 + b32_bytes(t);
    const __m512i zero = _mm512_setzero_si512();
    if (t == RF_TYPE_Q8_0) {
        const __m512i q = join256(loadu256(w0 + 2), w1 + 2, two);
        if (vnni) return dpbusd(negc, _mm512_xor_si512(q, _mm512_set1_epi8((char)0x80)), av, 1);
        const __m512i sa = _mm512_mask_sub_epi8(av, _mm512_movepi8_mask(q), zero, av);
        return dpbusd(zero, _mm512_abs_epi8(q), sa, 0);
    }
    /* 64-bit lanes 2, 3, 6, 7 hold the high nibbles */
    const __m512i nshift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
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
    return dpbusd(negc, x, av, vnni);
}

/* Minus the level offset times the activation sums, per lane (Q8_0 with VNNI: offset 128). */
RF_INLINE __m512i b32_negc(rf_type t, int vnni, __m512i av) {
    const __m512i zero = _mm512_setzero_si512();
    const int off = t == RF_TYPE_Q8_0 ? (vnni ? 128 : 0) : b32_offset(t);
    if (!off) return zero;
    return _mm512_sub_epi32(zero, dpbusd(zero, _mm512_set1_epi8((char)off), av, vnni));
}

/* Four rows' block sums from their level dots (8 lanes per block): lanes 0-3 block b of rows
 * 0-3, lanes 4-7 block b+1. */
RF_INLINE __m256i rows4_block_sums(const __m512i *dp) {
    const __m512i x =
        _mm512_add_epi32(_mm512_unpacklo_epi32(dp[0], dp[1]), _mm512_unpackhi_epi32(dp[0], dp[1]));
    const __m512i y =
        _mm512_add_epi32(_mm512_unpacklo_epi32(dp[2], dp[3]), _mm512_unpackhi_epi32(dp[2], dp[3]));
    const __m512i z = _mm512_add_epi32(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y));
    return _mm256_add_epi32(_mm512_castsi512_si256(_mm512_shuffle_i32x4(z, z, 0x08)),
                            _mm512_castsi512_si256(_mm512_shuffle_i32x4(z, z, 0x0D)));
}

/* out[r] = dot(row r, a) for r < nr (<= 8, a constant after inlining). Each row's result is one
 * float chain over its blocks in order: acc = fma((float)isum_b, d_b * da_b, acc), isum_b the
 * block's exact integer dot, and for the affine formats (Q4_1, Q5_1) then acc = fma(m_b, s_b, acc)
 * with the Q8_1 block's s: the arithmetic of dot_tile, so one token gives the same bits either
 * way. Eight rows share each activation pair's setup (its load, the offset correction, the scales)
 * and their block sums land in the eight lanes of the chain. */
RF_INLINE void b32_chain_rows(rf_type t, int vnni, int nr, int64_t nb, const uint8_t *w, size_t ws,
                              const uint8_t *a, float *out) {
    const int affine = b32_affine(t);
    const size_t bw = b32_bytes(t), ba = b32_act_bytes(t), aq = b32_act_qs(t);
    const size_t pfd = pf_distance(nr, ws);
    __m256 acc = _mm256_setzero_ps(); /* lane r: row r */
    for (int64_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
        const uint8_t *a0 = a + (size_t)b * ba, *a1 = a0 + ba;
        const __m512i av = join256(loadu256(a0 + aq), a1 + aq, two);
        const __m512i negc = b32_negc(t, vnni, av);
        __m512i dp[8];
        /* the rows' fp16 d (and m) of blocks b and b+1: word r % 4 of half r / 4 */
        uint64_t d0[2] = {0, 0}, d1[2] = {0, 0}, m0[2] = {0, 0}, m1[2] = {0, 0};
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            if (r >= nr) {
                dp[r] = _mm512_setzero_si512();
                continue;
            }
            const uint8_t *w0 = w + (size_t)r * ws + (size_t)b * bw;
            const int sh = 16 * (r % 4);
            prefetch_l2(w0, pfd, 2 * bw);
            d0[r / 4] |= (uint64_t)ld16(w0) << sh;
            if (two) d1[r / 4] |= (uint64_t)ld16(w0 + bw) << sh;
            if (affine) {
                m0[r / 4] |= (uint64_t)ld16(w0 + 2) << sh;
                if (two) m1[r / 4] |= (uint64_t)ld16(w0 + bw + 2) << sh;
            }
            dp[r] = b32_dp(t, vnni, w0, two, av, negc);
        }
        /* lanes 0-3: block b of rows 0-3 (4-7), lanes 4-7: block b+1 */
        const __m256i s03 = rows4_block_sums(dp);
        const __m256i s47 = nr > 4 ? rows4_block_sums(dp + 4) : _mm256_setzero_si256();
        /* the activation pair's [d0, d1, 0, 0] or (Q8_1) [d0, s0, d1, s1] */
        const __m128 ah = b32_halves(affine, ld64(a0), two ? ld64(a1) : 0);
        const __m256 da0 = _mm256_broadcastss_ps(ah);
        const __m256 dw0 = _mm256_cvtph_ps(_mm_set_epi64x((long long)d0[1], (long long)d0[0]));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_permute2x128_si256(s03, s47, 0x20)),
                              _mm256_mul_ps(dw0, da0), acc);
        if (affine)
            acc =
                _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_set_epi64x((long long)m0[1], (long long)m0[0])),
                                _mm256_broadcastss_ps(_mm_shuffle_ps(ah, ah, 1)), acc);
        if (two) {
            const __m256 da1 = _mm256_broadcastss_ps(affine ? _mm_shuffle_ps(ah, ah, 2)
                                                            : _mm_shuffle_ps(ah, ah, 1));
            const __m256 dw1 = _mm256_cvtph_ps(_mm_set_epi64x((long long)d1[1], (long long)d1[0]));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_permute2x128_si256(s03, s47, 0x31)),
                                  _mm256_mul_ps(dw1, da1), acc);
            if (affine)
                acc = _mm256_fmadd_ps(
                    _mm256_cvtph_ps(_mm_set_epi64x((long long)m1[1], (long long)m1[0])),
                    _mm256_broadcastss_ps(_mm_shuffle_ps(ah, ah, 3)), acc);
        }
    }
    _Alignas(32) float o[8];
    _mm256_store_ps(o, acc);
    for (int r = 0; r < nr; r++) out[r] = o[r];
}

/* Defines name(n_units, n_rows, w, ws, a, out) for b32_chain_rows: eight rows per pass, then four,
 * then one at a time (nr a constant in every instantiation). The nibble formats gain from sharing
 * the activation pair's setup over eight rows (bench/kernels_bench, one core streaming: Q5_0 at
 * 896 wide 15 -> 19 GB/s, Q4_1 at 576 wide 14 -> 21 GB/s); Q8_0, whose setup is one load, stays
 * at four rows per pass (measured no faster at eight). */
#define ROWS8_FN(name, call)                                                                       \
    static void name(int64_t nu, int64_t n_rows, const uint8_t *w, size_t ws, const uint8_t *a,    \
                     float *out) {                                                                 \
        int64_t r = 0;                                                                             \
        for (; r + 8 <= n_rows; r += 8) {                                                          \
            const int nr = 8;                                                                      \
            call;                                                                                  \
        }                                                                                          \
        if (r + 4 <= n_rows) {                                                                     \
            const int nr = 4;                                                                      \
            call;                                                                                  \
            r += 4;                                                                                \
        }                                                                                          \
        for (; r < n_rows; r++) {                                                                  \
            const int nr = 1;                                                                      \
            call;                                                                                  \
        }                                                                                          \
    }

/* ------------------------------------------------------------------------------------------ */
/* K-quants against Q8_K (a block: float d at 0, qs at 4, int16 bsums at 260)                 */
/* ------------------------------------------------------------------------------------------ */

/* The four rows' super-block sums (16 lanes each) as one vector, lane r = row r. */
RF_INLINE __m128i rows4_sums(const __m512i *v) {
    __m128i x[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        const __m256i h =
            _mm256_add_epi32(_mm512_castsi512_si256(v[r]), _mm512_extracti64x4_epi64(v[r], 1));
        x[r] = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    }
    return _mm_hadd_epi32(_mm_hadd_epi32(x[0], x[1]), _mm_hadd_epi32(x[2], x[3]));
}

/* One super-block of four rows into acc (lane r = row r), as dot_tile does it:
 * acc = fma((float)sum, d * da, acc), then (mins) acc = fnmadd((float)min_sum, dmin * da, acc);
 * dd[r] holds d * da in lane 0 and dmin * da in lane 1, mins[r] the min dot in 4 lanes. */
RF_INLINE void k_chain4(__m128 *acc, const __m512i *sums, const __m128i *mins, const __m128 *dd,
                        int has_mins) {
    const __m128 lo = _mm_unpacklo_ps(dd[0], dd[1]), hi = _mm_unpacklo_ps(dd[2], dd[3]);
    *acc = _mm_fmadd_ps(_mm_cvtepi32_ps(rows4_sums(sums)), _mm_movelh_ps(lo, hi), *acc);
    if (has_mins) {
        const __m128i m =
            _mm_hadd_epi32(_mm_hadd_epi32(mins[0], mins[1]), _mm_hadd_epi32(mins[2], mins[3]));
        *acc = _mm_fnmadd_ps(_mm_cvtepi32_ps(m), _mm_movehl_ps(hi, lo), *acc);
    }
}

RF_INLINE void k_store4(__m128 acc, int nr, float *out) {
    _Alignas(16) float o[4];
    _mm_store_ps(o, acc);
    for (int r = 0; r < nr; r++) out[r] = o[r];
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
    __m128 acc = _mm_setzero_ps(); /* lane r: row r */
    for (int64_t i = 0; i < nb; i++) {
        __m512i sumr[4];
        __m128i minr[4];
        __m128 ddr[4];
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
        for (int r = 0; r < 4; r++) {
            if (r >= nr) {
                sumr[r] = _mm512_setzero_si512();
                minr[r] = _mm_setzero_si128();
                ddr[r] = _mm_setzero_ps();
                continue;
            }
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
            minr[r] = mins;
            ddr[r] = dd;
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
            sumr[r] = sumi;
        }
        k_chain4(&acc, sumr, minr, ddr, 1);
    }
    k_store4(acc, nr, out);
}

/* Q6_K: ql at 0, qh at 128, int8 scales at 192, d at 208. Levels 0..63 dotted unsigned, minus
 * the exact correction 32 * sum_j sc_j * bsums_j. */
RF_INLINE void q6_k_rows(int vnni, int nr, int64_t nb, const uint8_t *w, size_t ws,
                         const uint8_t *a, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    const size_t pfd = pf_distance(nr, ws);
    __m128 acc = _mm_setzero_ps(); /* lane r: row r */
    for (int64_t i = 0; i < nb; i++) {
        __m512i sumr[4];
        __m128 ddr[4];
        const uint8_t *ak = a + (size_t)i * 292;
        const float da = ldf(ak);
        __m512i av[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) av[c] = loadu512(ak + 4 + 64 * c);
        const __m256i bsums = loadu256(ak + 260);
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            if (r >= nr) {
                sumr[r] = _mm512_setzero_si512();
                ddr[r] = _mm_setzero_ps();
                continue;
            }
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
            ddr[r] = _mm_set_ss(_cvtsh_ss(ld16(wb + 208)) * da);
            sumr[r] = sumi;
        }
        k_chain4(&acc, sumr, NULL, ddr, 0);
    }
    k_store4(acc, nr, out);
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

/* F32/F16/BF16 rows widened to floats, one FMA per 16 values and row. Eight rows per pass and
 * each row's cache lines prefetched into L2 a pass or more ahead, as the block formats do: the
 * 896-wide F16 rows of Qwen's ffn_up streamed at 10 GB/s on one core without the prefetch and 20
 * with it (bench/kernels_bench 5 F16), and `roofline speed -t 2 -n 64` on the F16 file decoded
 * at 19-20 tok/s with four rows and no prefetch, 34-36 with both (two runs each, alternated). */
RF_INLINE void float_rows(rf_type t, int nr, int64_t n, const uint8_t *w, size_t ws,
                          const uint8_t *a, float *out) {
    __m512 acc[8];
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();
    const size_t esz = t == RF_TYPE_F32 ? 4 : 2, pfd = pf_distance(nr, ws);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 av = load16f(t, a, i, 0xFFFF, 1);
        const int pf = ((size_t)i * esz) % 64 == 0; /* once per cache line of each row */
#pragma GCC unroll 8
        for (int r = 0; r < nr; r++) {
            if (pf) prefetch_l2(w + (size_t)r * ws + (size_t)i * esz, pfd, 64);
            acc[r] = _mm512_fmadd_ps(load16f(t, w + (size_t)r * ws, i, 0xFFFF, 1), av, acc[r]);
        }
    }
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        const __m512 av = load16f(t, a, i, k, 0);
#pragma GCC unroll 8
        for (int r = 0; r < nr; r++)
            acc[r] = _mm512_fmadd_ps(load16f(t, w + (size_t)r * ws, i, k, 0), av, acc[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* BF16 rows against a BF16 activation computed in BF16 (the avx512bf16 table): one VDPBF16PS per
 * 32 values and row instead of widening each half to float for an FMA; rows and prefetch as
 * float_rows. 64 bytes per row per step; the tail is a masked load (zeros past n contribute
 * nothing). Cached 896-wide rows: 80-85 GB/s on one core against 50 widened; prefill of the BF16
 * file (roofline speed -p 64) 215-280 tok/s against 129-135 widened; decode is memory-bound
 * either way. */
RF_INLINE void bf16_native_rows(int nr, int64_t n, const uint8_t *w, size_t ws, const uint8_t *a,
                                float *out) {
    __m512 acc[8];
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();
    const size_t pfd = pf_distance(nr, ws);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512i av = loadu512(a + 2 * i);
#pragma GCC unroll 8
        for (int r = 0; r < nr; r++) {
            const uint8_t *p = w + (size_t)r * ws + 2 * i;
            prefetch_l2(p, pfd, 64);
            acc[r] = dpbf16(acc[r], loadu512(p), av);
        }
    }
    if (i < n) {
        const __mmask32 k = (__mmask32)((1ull << (n - i)) - 1);
        const __m512i av = _mm512_maskz_loadu_epi16(k, a + 2 * i);
#pragma GCC unroll 8
        for (int r = 0; r < nr; r++)
            acc[r] = dpbf16(acc[r], _mm512_maskz_loadu_epi16(k, w + (size_t)r * ws + 2 * i), av);
    }
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* ------------------------------------------------------------------------------------------ */
/* Dispatch                                                                                    */
/* ------------------------------------------------------------------------------------------ */

#define W_R (w + (size_t)r * ws)
#define DEFINE_QUANT_ROWS(sfx, vnni)                                                               \
    ROWS8_FN(dot_q4_0##sfx, b32_chain_rows(RF_TYPE_Q4_0, vnni, nr, nu, W_R, ws, a, out + r))       \
    ROWS8_FN(dot_q4_1##sfx, b32_chain_rows(RF_TYPE_Q4_1, vnni, nr, nu, W_R, ws, a, out + r))       \
    ROWS8_FN(dot_q5_0##sfx, b32_chain_rows(RF_TYPE_Q5_0, vnni, nr, nu, W_R, ws, a, out + r))       \
    ROWS8_FN(dot_q5_1##sfx, b32_chain_rows(RF_TYPE_Q5_1, vnni, nr, nu, W_R, ws, a, out + r))       \
    ROWS_FN(dot_q8_0##sfx, b32_chain_rows(RF_TYPE_Q8_0, vnni, nr, nu, W_R, ws, a, out + r))        \
    ROWS_FN(dot_q4_k##sfx, k_affine_rows(0, vnni, nr, nu, W_R, ws, a, out + r))                    \
    ROWS_FN(dot_q5_k##sfx, k_affine_rows(1, vnni, nr, nu, W_R, ws, a, out + r))                    \
    ROWS_FN(dot_q6_k##sfx, q6_k_rows(vnni, nr, nu, W_R, ws, a, out + r))

DEFINE_QUANT_ROWS(_plain, 0)
DEFINE_QUANT_ROWS(_vnni, 1)
ROWS8_FN(dot_f32, float_rows(RF_TYPE_F32, nr, nu, W_R, ws, a, out + r))
ROWS8_FN(dot_f16, float_rows(RF_TYPE_F16, nr, nu, W_R, ws, a, out + r))
ROWS8_FN(dot_bf16, float_rows(RF_TYPE_BF16, nr, nu, W_R, ws, a, out + r))
ROWS8_FN(dot_bf16_native, bf16_native_rows(nr, nu, W_R, ws, a, out + r))
#undef W_R

RF_X86_DEFINE_DOT_ROWS(avx512_dot_rows_plain, _plain, dot_bf16)
RF_X86_DEFINE_DOT_ROWS(avx512_dot_rows_vnni, _vnni, dot_bf16)
RF_X86_DEFINE_DOT_ROWS(avx512_dot_rows_bf16, _vnni, dot_bf16_native)

/* ------------------------------------------------------------------------------------------ */
/* dot_tile: 16 rows against a group of tokens, one row per int32 lane (tile_loop.h)          */
/* ------------------------------------------------------------------------------------------ */

/* The mapping tile_loop.h's loop is written over: 16 rows per tile, one per lane of a 512-bit
 * vector, 8 tokens per pass. */
#define TILE_W 16
#define TILE_T 8
typedef __m512 tile_vf;
typedef __m512i tile_vi;
#define TV_LOADF(p)                _mm512_load_ps((const void *)(p))
#define TV_LOADI(p)                _mm512_load_si512((const void *)(p))
#define TV_SETF(x)                 _mm512_set1_ps(x)
#define TV_SETI(x)                 _mm512_set1_epi32(x)
#define TV_ZEROI()                 _mm512_setzero_si512()
#define TV_ADDI(a, b)              _mm512_add_epi32(a, b)
#define TV_MULLOI(a, b)            _mm512_mullo_epi32(a, b)
#define TV_CVTF(v)                 _mm512_cvtepi32_ps(v)
#define TV_MULF(a, b)              _mm512_mul_ps(a, b)
#define TV_FMADD(a, b, c)          _mm512_fmadd_ps(a, b, c)
#define TV_FNMADD(a, b, c)         _mm512_fnmadd_ps(a, b, c)
#define TV_DPWSSD(acc, p, q, vnni) dpwssd(acc, p, q, vnni)
#define TV_STOREF(p, v)            _mm512_store_ps((void *)(p), v)
#define TV_STOREI(p, v)            _mm512_store_si512((void *)(p), v)
#define TV_SET8(x)                 _mm512_set1_epi8(x)
#define TV_ANDI(a, b)              _mm512_and_si512(a, b)
#define TV_ORI(a, b)               _mm512_or_si512(a, b)
#define TV_XORI(a, b)              _mm512_xor_si512(a, b)
#define TV_OR_AND(a, b, c)         _mm512_ternarylogic_epi32(a, b, c, 0xF8)
#define TV_SLLI16(v, n)            _mm512_slli_epi16(v, n)
#define TV_SRLI16(v, n)            _mm512_srli_epi16(v, n)
#define TV_SLLI32(v, n)            _mm512_slli_epi32(v, n)
#define TV_SRLI32(v, n)            _mm512_srli_epi32(v, n)
#define TV_SRAI32(v, n)            _mm512_srai_epi32(v, n)
#define TV_HALVES_F(p)             _mm512_cvtph_ps(_mm256_load_si256((const void *)(p)))
#define TV_LOW_HALF_F(v)           _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v))
#define TV_TRANSPOSE(r, y)         transpose16x8(r, y)

/* Lanes [0, nr) of out: a later segment continues the chains where the earlier one stored them
 * (go_on = 1), else they start at 0. */
RF_INLINE __m512 lanes_load(const float *out, int nr, int go_on) {
    const __mmask16 m = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    return go_on ? _mm512_maskz_loadu_ps(m, out) : _mm512_setzero_ps();
}

RF_INLINE void lanes_store(__m512 v, float *out, int nr) {
    const __mmask16 m = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    _mm512_mask_storeu_ps(out, m, v);
}

/* Transposes 16 rows of 8 dwords (row j in r[j]) into y[k]: lane i = dword k of row i. */
RF_INLINE void transpose16x8(const __m256i *r, __m512i *y) {
    __m512i z[8], t[8], u[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(r[j]), r[j + 8], 1);
#pragma GCC unroll 4
    for (int j = 0; j < 8; j += 2) {
        t[j] = _mm512_unpacklo_epi32(z[j], z[j + 1]);
        t[j + 1] = _mm512_unpackhi_epi32(z[j], z[j + 1]);
    }
#pragma GCC unroll 2
    for (int j = 0; j < 8; j += 4) {
        u[j] = _mm512_unpacklo_epi64(t[j], t[j + 2]);
        u[j + 1] = _mm512_unpackhi_epi64(t[j], t[j + 2]);
        u[j + 2] = _mm512_unpacklo_epi64(t[j + 1], t[j + 3]);
        u[j + 3] = _mm512_unpackhi_epi64(t[j + 1], t[j + 3]);
    }
    /* u[k] (k < 4): 128-bit lanes = dword k of rows 0-3, dword k+4 of rows 0-3, the same of
     * rows 8-11; u[k+4] likewise for rows 4-7 and 12-15 */
    const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        y[k] = _mm512_permutex2var_epi64(u[k], lo, u[k + 4]);
        y[k + 4] = _mm512_permutex2var_epi64(u[k], hi, u[k + 4]);
    }
}

#include "kernels/tile_loop.h"

/* Four bytes anywhere, as the memory operand of an embedded broadcast. */
typedef uint32_t __attribute__((may_alias, aligned(1))) u32_any;

/* acc + u8 x s8 dot of each lane of x with the four bytes at p (broadcast to every lane). */
RF_INLINE __m512i dpbusd_b(__m512i acc, __m512i x, const uint8_t *p, int vnni) {
    if (vnni) {
        __asm__("vpdpbusd %2%{1to16%}, %1, %0"
                : "+v"(acc)
                : "v"(x), "m"(*(const u32_any *)(const void *)p));
        return acc;
    }
    return dpbusd(acc, x, _mm512_set1_epi32((int)ld32(p)), 0);
}

/* -- 32-value formats -- */

/* The 32 levels of a nibble-format block: the 16 bytes broadcast, the high nibbles shifted down
 * in the upper half; Q5's fifth bits are the byte mask qh. */
RF_INLINE __m256i b32_levels_t(rf_type t, const uint8_t *wb) {
    const __m256i q = _mm256_broadcastsi128_si256(loadu128(wb + b32_qs(t)));
    __m256i x = _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 0, 4, 4)),
                                 _mm256_set1_epi8(0x0F));
    if (b32_qh(t))
        x = _mm256_mask_add_epi8(x, _cvtu32_mask32(ld32(wb + b32_qh(t))), x,
                                 _mm256_set1_epi8(0x10));
    return x;
}

/* si[j] += the level dots of the transposed block wp with token j's bytes at at[j] + ao. */
RF_INLINE void b32_dots_t(rf_type t, int vnni, int nt, const uint8_t *wp, const uint8_t *const *at,
                          size_t ao, tile_vi *si) {
    if (t == RF_TYPE_Q8_0 && !vnni) { /* |q| x sign(a, q) */
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m512i q = _mm512_load_si512((const void *)(wp + 64 * k));
            const __m512i x = _mm512_abs_epi8(q);
            const __mmask64 m = _mm512_movepi8_mask(q);
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++) {
                const __m512i a = _mm512_set1_epi32((int)ld32(at[j] + ao + 4 * k));
                const __m512i sq = _mm512_mask_sub_epi8(a, m, _mm512_setzero_si512(), a);
                si[j] = dpbusd(si[j], x, sq, 0);
            }
        }
    } else if (!vnni) { /* levels <= 31: four pair sums fit in int16 before widening */
#pragma GCC unroll 2
        for (int k0 = 0; k0 < 8; k0 += 4) {
            __m512i x[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                x[k] = _mm512_load_si512((const void *)(wp + 64 * (k0 + k)));
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++) {
                __m512i p = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++)
                    p = _mm512_add_epi16(
                        p, _mm512_maddubs_epi16(
                               x[k], _mm512_set1_epi32((int)ld32(at[j] + ao + 4 * (k0 + k)))));
                si[j] = _mm512_add_epi32(si[j], _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
            }
        }
    } else {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m512i x = _mm512_load_si512((const void *)(wp + 64 * k));
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++) si[j] = dpbusd_b(si[j], x, at[j] + ao + 4 * k, 1);
        }
    }
}

/* -- K-quants -- */

/* si[j] += the level dots of sub-block sub of the transposed super-block wp with token j's bytes
 * at at[j] + ao. */
RF_INLINE void k_dots_t(int q6, int vnni, int nt, const uint8_t *wp, int sub,
                        const uint8_t *const *at, size_t ao, tile_vi *si) {
    const int per = q6 ? 4 : 8;
    if (vnni) {
#pragma GCC unroll 8
        for (int k = 0; k < per; k++) {
            const int m = per * sub + k;
            const __m512i x = _mm512_load_si512((const void *)(wp + 64 * m));
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++) si[j] = dpbusd_b(si[j], x, at[j] + ao + 4 * m, 1);
        }
        return;
    }
    /* pair sums added in int16 while they fit: 8 steps (levels <= 15), 2 (<= 63) */
    const int grp = q6 ? 2 : 8;
#pragma GCC unroll 4
    for (int g0 = 0; g0 < per; g0 += grp) {
        __m512i x[8];
#pragma GCC unroll 8
        for (int k = 0; k < grp; k++)
            x[k] = _mm512_load_si512((const void *)(wp + 64 * (per * sub + g0 + k)));
#pragma GCC unroll 8
        for (int j = 0; j < nt; j++) {
            const uint8_t *ap = at[j] + ao + 4 * (per * sub + g0);
            __m512i p = _mm512_maddubs_epi16(x[0], _mm512_set1_epi32((int)ld32(ap)));
#pragma GCC unroll 7
            for (int k = 1; k < grp; k++)
                p = _mm512_add_epi16(
                    p, _mm512_maddubs_epi16(x[k], _mm512_set1_epi32((int)ld32(ap + 4 * k))));
            si[j] = _mm512_add_epi32(si[j], _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
        }
    }
}

TILE_DEFINE_DOT_TILE(avx512_dot_tile_plain, 0, avx512_dot_rows_plain)
TILE_DEFINE_DOT_TILE(avx512_dot_tile_vnni, 1, avx512_dot_rows_vnni)
TILE_DEFINE_DOT_TILE(avx512_dot_tile_bf16, 1, avx512_dot_rows_bf16)

const rf_kernels rf_kernels_avx512 = {
    .isa = RF_ISA_AVX512,
    .quantize_act = avx512_quantize_act,
    .dot_rows = avx512_dot_rows_plain,
    .dot_tile = avx512_dot_tile_plain,
    RF_KERNELS_AVX2_PIECES,
};
const rf_kernels rf_kernels_avx512vnni = {
    .isa = RF_ISA_AVX512,
    .quantize_act = avx512_quantize_act,
    .dot_rows = avx512_dot_rows_vnni,
    .dot_tile = avx512_dot_tile_vnni,
    RF_KERNELS_AVX2_PIECES,
};
const rf_kernels rf_kernels_avx512bf16 = {
    .isa = RF_ISA_AVX512,
    .quantize_act = avx512_quantize_act,
    .dot_rows = avx512_dot_rows_bf16,
    .dot_tile = avx512_dot_tile_bf16,
    RF_KERNELS_AVX2_PIECES,
};

#else
/* Not x86-64: no AVX-512 tables (ISO C wants at least one declaration per translation unit). */
typedef int rf_kernels_avx512_unavailable;
#endif
