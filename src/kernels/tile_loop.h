/* tile_loop.h: dot_tile's loop, written once for the AVX2 and AVX-512 tables (kernels_avx2.c,
 * kernels_avx512.c) over a small per-ISA vector mapping: the segmenting over tokens, blocks
 * (super-blocks) and rows, the prefetch, the per-token preparation, the passes of tokens, the
 * transposing unpack of a tile, the float part of every pass and the type dispatch. The
 * ISA-specific pieces (a row's nibble levels and the integer dots of a pass) stay in the table's
 * file.
 *
 * dot_rows puts the values of one row along a vector, so every block ends in a horizontal sum
 * per row and token. dot_tile turns that around: rows are taken TILE_W at a time, one per int32
 * lane. Each tile's columns (a segment at a time) are first unpacked into a stack buffer in a
 * transposed form, once for all the tokens of a chunk: vector m holds, in lane i, the four levels
 * 4m..4m+3 of row i (unsigned: Q4_0 0..15, Q5_0 0..31, Q8_0 q + 128 with VNNI or q itself
 * without, Q4_K 0..15, Q6_K 0..63), next to the rows' scales as lane vectors (fp16 scales as
 * floats, the K-quants' sub-block scales and mins as int32). A token's activation bytes 4m..4m+3
 * are broadcast to every lane and VPDPBUSD (or its emulation: VPMADDUBSW pair sums added in
 * int16 while they cannot overflow, then widened with VPMADDWD; Q8_0 without VNNI moves the
 * weight signs onto the activation) accumulates the TILE_W rows at once: per block (32 values:
 * 8 steps) or sub-block an exact int32 sum per row, with no horizontal sums, then one float
 * multiply-add per block and token for all rows. The level offsets (-8, -16, Q8_0's +128, Q6_K's
 * -32) are removed exactly by starting a block's sum at minus the offset times the activation's
 * block (or sub-block) sum. The per-token data (those sums and the scales) is prepared once per
 * chunk of TILE_CH tokens and segment, for every row tile; tokens then go through the tile
 * TILE_T at a time (then 4, 2, 1). Fewer than TILE_W rows repeat the last row and drop its
 * results.
 *
 * Arithmetic: each row's result is one float chain over its blocks in order,
 * acc = fma((float)isum_b, d_b * da_b, acc) from 0 (Q4_1/Q5_1: then acc = fma(m_b, s_b, acc),
 * the block's min times the Q8_1 activation's d * sum(q); K-quants, per super-block: the same with
 * d * da, then acc = fnmadd((float)min_sum, dmin * da, acc)); a later segment continues the chain
 * from where the earlier one stored it. dot_rows (b32_chain_rows, k_affine_rows, q6_k_rows) runs
 * the same chains, so a token gets the same bits whether it is dotted alone or in a batch of any
 * size: batched decode and prefill do not change any sequence's logits. Against the scalar
 * reference the integer parts are exact and only the float order differs.
 *
 * The including file defines, before including this (after x86_common.h):
 *  - TILE_W (rows per tile = int32 lanes per vector), TILE_T (tokens per pass, 4 or 8);
 *  - tile_vf, tile_vi: the float and int32 vector types of TILE_W lanes;
 *  - the mapping macros, each one intrinsic or two: TV_LOADF(p), TV_LOADI(p), TV_STOREF(p, v),
 *    TV_STOREI(p, v) (aligned, p a byte pointer), TV_SETF(x), TV_SETI(x), TV_SET8(x), TV_ZEROI(),
 *    TV_ADDI, TV_MULLOI, TV_ANDI, TV_ORI, TV_XORI (a, b), TV_OR_AND(a, b, c) (a | (b & c)),
 *    TV_SLLI16, TV_SRLI16, TV_SLLI32, TV_SRLI32, TV_SRAI32 (v, n), TV_CVTF(v), TV_MULF(a, b),
 *    TV_FMADD(a, b, c), TV_FNMADD(a, b, c) (a * b -+ c as the intrinsics), TV_DPWSSD(acc, p, q,
 *    vnni) (acc + the int16 pair products of p and q), TV_HALVES_F(p) (TILE_W fp16 at p, 32-byte
 *    aligned, as floats), TV_LOW_HALF_F(v) (the fp16 in the low half of each lane as a float)
 *    and TV_TRANSPOSE(r, y) (TILE_W rows of 8 dwords, row i in the __m256i r[i], into y[k]:
 *    lane i = dword k of row i);
 *  - lanes_load(out, nr, go_on), lanes_store(v, out, nr): lanes [0, nr) of out (go_on = 0: 0);
 * and after including it, the functions declared below under "the table's pieces" (the per-row
 * nibble unpacking and the integer dots, where the instruction sets differ), then
 * TILE_DEFINE_DOT_TILE for each of its tables. Everything here is a static always-inlined
 * function or a macro, compiled once per including file for its instruction set; nothing
 * allocates or keeps state (the buffers are on the stack).
 */
#ifndef RF_KERNELS_TILE_LOOP_H
#define RF_KERNELS_TILE_LOOP_H

#if defined(__x86_64__)

#include "kernels/x86_common.h"

/* ---- geometry of the stack buffers ---- */

#define TILE_CH 128          /* tokens per chunk: their prepared data is kept for every row tile */
#define TILE_VB (4 * TILE_W) /* bytes per vector */
#define B32_SEG 32           /* blocks per segment (1024 values) */
/* Per block of TILE_W rows: 8 level vectors, then the rows' d and (Q4_1/Q5_1) m as floats. */
#define B32_D  (8 * TILE_VB)
#define B32_M  (9 * TILE_VB)
#define B32_WB (10 * TILE_VB)
#define K_SEG  4 /* super-blocks per segment */
/* Per super-block of TILE_W rows: 64 level vectors; the sub-block scales as int32 (8 vectors for
 * Q4_K, 16 for Q6_K); Q4_K: the mins as int16 pairs (m[2i], m[2i+1]), 4 vectors, then d and dmin
 * as floats; Q6_K: d after its 16 scale vectors. */
#define K_SC   (64 * TILE_VB)
#define K_MIN  (72 * TILE_VB)
#define K_D    (76 * TILE_VB)
#define K_DMIN (77 * TILE_VB)
#define K_D6   (80 * TILE_VB)
#define K_WB   (82 * TILE_VB)
#define K_AB   80 /* per token and super-block: d, then bsum pairs or Q6_K corrections */

/* ---- the table's pieces (defined by the including file) ---- */

/* The 32 levels (0..31) of the Q4_0/Q4_1/Q5_0/Q5_1 block at wb, in order. */
RF_INLINE __m256i b32_levels_t(rf_type t, const uint8_t *wb);
/* si[j] += the level dots of the transposed block wp with token j's activation bytes at
 * at[j] + ao, for j < nt. */
RF_INLINE void b32_dots_t(rf_type t, int vnni, int nt, const uint8_t *wp, const uint8_t *const *at,
                          size_t ao, tile_vi *si);
/* si[j] += the level dots of sub-block sub of the transposed super-block wp with token j's
 * activation bytes at at[j] + ao, for j < nt. */
RF_INLINE void k_dots_t(int q6, int vnni, int nt, const uint8_t *wp, int sub,
                        const uint8_t *const *at, size_t ao, tile_vi *si);

/* ---- unpacking a tile into the transposed form ---- */

/* The block at offset off of the TILE_W rows rows[i] into the transposed form at dst (B32_WB
 * bytes, 64-byte aligned); Q8_0 with VNNI stores q + 128 (unsigned). */
RF_INLINE void b32_unpack_t(rf_type t, int vnni, const uint8_t *const *rows, size_t off,
                            uint8_t *dst) {
    __m256i lv[TILE_W];
    tile_vi y[8];
    _Alignas(32) uint16_t d[TILE_W], m[TILE_W];
#pragma GCC unroll 16
    for (int i = 0; i < TILE_W; i++) {
        const uint8_t *wb = rows[i] + off;
        d[i] = ld16(wb);
        m[i] = b32_affine(t) ? ld16(wb + 2) : 0;
        lv[i] = t == RF_TYPE_Q8_0 ? loadu256(wb + 2) : b32_levels_t(t, wb);
    }
    TV_TRANSPOSE(lv, y);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        if (t == RF_TYPE_Q8_0 && vnni) y[k] = TV_XORI(y[k], TV_SET8((char)0x80));
        TV_STOREI(dst + TILE_VB * k, y[k]);
    }
    TV_STOREF(dst + B32_D, TV_HALVES_F(d));
    if (b32_affine(t)) TV_STOREF(dst + B32_M, TV_HALVES_F(m));
}

/* The super-block at offset off of the TILE_W rows rows[i] (Q4_K, or Q6_K when q6) into the
 * transposed form at dst (K_WB bytes): level vector m (value 4m..4m+3 of each row) at
 * TILE_VB * m, then the scales, mins and d as laid out above. */
RF_INLINE void k_unpack_t(int q6, const uint8_t *const *rows, size_t off, uint8_t *dst) {
    const tile_vi m4 = TV_SET8(0x0F);
    __m256i r[TILE_W];
    tile_vi y[8];
    if (!q6) {
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) { /* 32 qs bytes: values 64c + l (low) and 64c + 32 + l */
#pragma GCC unroll 16
            for (int i = 0; i < TILE_W; i++) r[i] = loadu256(rows[i] + off + 16 + 32 * c);
            TV_TRANSPOSE(r, y);
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                TV_STOREI(dst + TILE_VB * (16 * c + k), TV_ANDI(y[k], m4));
                TV_STOREI(dst + TILE_VB * (16 * c + 8 + k), TV_ANDI(TV_SRLI16(y[k], 4), m4));
            }
        }
        /* words 0-3 of each row: d and dmin, then the 12 bytes of scales and mins */
#pragma GCC unroll 16
        for (int i = 0; i < TILE_W; i++) r[i] = loadu256(rows[i] + off);
        TV_TRANSPOSE(r, y);
        const tile_vi hd = y[0], u0 = y[1], u1 = y[2], u2 = y[3];
        const tile_vi lo6 = TV_SETI(0x3F3F3F3F), lo4 = TV_SETI(0x0F0F0F0F);
        const tile_vi b45 = TV_SETI(0x30303030);
        const tile_vi sc_lo = TV_ANDI(u0, lo6);
        const tile_vi sc_hi = TV_ORI(TV_ANDI(u2, lo4), TV_ANDI(TV_SRLI32(u0, 2), b45));
        const tile_vi m_lo = TV_ANDI(u1, lo6);
        const tile_vi m_hi = TV_ORI(TV_ANDI(TV_SRLI32(u2, 4), lo4), TV_ANDI(TV_SRLI32(u1, 2), b45));
        const tile_vi b0 = TV_SETI(0xFF), b2 = TV_SETI(0xFF0000);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            TV_STOREI(dst + K_SC + TILE_VB * j, TV_ANDI(TV_SRLI32(sc_lo, 8 * j), b0));
            TV_STOREI(dst + K_SC + TILE_VB * (j + 4), TV_ANDI(TV_SRLI32(sc_hi, 8 * j), b0));
        }
        /* (m[2i], m[2i+1]) as int16 pairs */
        TV_STOREI(dst + K_MIN, TV_ORI(TV_ANDI(m_lo, b0), TV_ANDI(TV_SLLI32(m_lo, 8), b2)));
        TV_STOREI(dst + K_MIN + TILE_VB,
                  TV_ORI(TV_ANDI(TV_SRLI32(m_lo, 16), b0), TV_ANDI(TV_SRLI32(m_lo, 8), b2)));
        TV_STOREI(dst + K_MIN + 2 * TILE_VB,
                  TV_ORI(TV_ANDI(m_hi, b0), TV_ANDI(TV_SLLI32(m_hi, 8), b2)));
        TV_STOREI(dst + K_MIN + 3 * TILE_VB,
                  TV_ORI(TV_ANDI(TV_SRLI32(m_hi, 16), b0), TV_ANDI(TV_SRLI32(m_hi, 8), b2)));
        /* d, dmin: the low and high halves of word 0 of each row */
        TV_STOREF(dst + K_D, TV_LOW_HALF_F(hd));
        TV_STOREF(dst + K_DMIN, TV_LOW_HALF_F(TV_SRLI32(hd, 16)));
        return;
    }
    const tile_vi m2 = TV_SET8(0x30);
#pragma GCC unroll 2
    for (int n = 0; n < 2; n++) {
        tile_vi ta[8], tb[8], th[8];
#pragma GCC unroll 16
        for (int i = 0; i < TILE_W; i++) r[i] = loadu256(rows[i] + off + 64 * n);
        TV_TRANSPOSE(r, ta);
#pragma GCC unroll 16
        for (int i = 0; i < TILE_W; i++) r[i] = loadu256(rows[i] + off + 64 * n + 32);
        TV_TRANSPOSE(r, tb);
#pragma GCC unroll 16
        for (int i = 0; i < TILE_W; i++) r[i] = loadu256(rows[i] + off + 128 + 32 * n);
        TV_TRANSPOSE(r, th);
        /* value 128n + 32q + 4k + (0..3): vector 32n + 8q + k */
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            uint8_t *d = dst + TILE_VB * (32 * n + k);
            TV_STOREI(d, TV_OR_AND(TV_ANDI(ta[k], m4), TV_SLLI16(th[k], 4), m2));
            TV_STOREI(d + 8 * TILE_VB, TV_OR_AND(TV_ANDI(tb[k], m4), TV_SLLI16(th[k], 2), m2));
            TV_STOREI(d + 16 * TILE_VB, TV_OR_AND(TV_ANDI(TV_SRLI16(ta[k], 4), m4), th[k], m2));
            TV_STOREI(d + 24 * TILE_VB,
                      TV_OR_AND(TV_ANDI(TV_SRLI16(tb[k], 4), m4), TV_SRLI16(th[k], 2), m2));
        }
    }
    /* the 16 scales and d: words 0-3 and the low half of word 4 of the 18 bytes at 192 */
#pragma GCC unroll 16
    for (int i = 0; i < TILE_W; i++)
        r[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(rows[i] + off + 192)),
                                       _mm_cvtsi32_si128(ld16(rows[i] + off + 208)), 1);
    TV_TRANSPOSE(r, y);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
#pragma GCC unroll 4
        for (int b = 0; b < 4; b++) /* sign-extended byte b of word k: scale 4k + b */
            TV_STOREI(dst + K_SC + TILE_VB * (4 * k + b),
                      TV_SRAI32(TV_SLLI32(y[k], 24 - 8 * b), 24));
    TV_STOREF(dst + K_D6, TV_LOW_HALF_F(y[4]));
}

/* ---- the loop ---- */

/* Clamped row pointers of the tile at r0 (rows past n_rows repeat the last). */
RF_INLINE void tile_rows(const uint8_t *w, size_t ws, int64_t r0, int nr, const uint8_t **rows) {
    for (int i = 0; i < TILE_W; i++) rows[i] = w + (size_t)(r0 + (i < nr ? i : nr - 1)) * ws;
}

/* The passes over the chunk's nc tokens (from c0): TILE_T at a time, then 4, 2, 1; p0 is the
 * pass's first token in the chunk, at[] its rows. call(NT) sees NT as a constant. */
#define TILE_PASSES(call)                                                                          \
    for (int p0 = 0; p0 < nc;) {                                                                   \
        const int left = nc - p0;                                                                  \
        const int np = left >= TILE_T ? TILE_T : left >= 4 ? 4 : left >= 2 ? 2 : 1;                \
        const uint8_t *at[TILE_T];                                                                 \
        for (int j = 0; j < np; j++) at[j] = a + (size_t)(c0 + p0 + j) * as;                       \
        if (np == TILE_T)                                                                          \
            call(TILE_T);                                                                          \
        else if (TILE_T > 4 && np == 4)                                                            \
            call(4);                                                                               \
        else if (np == 2)                                                                          \
            call(2);                                                                               \
        else                                                                                       \
            call(1);                                                                               \
        p0 += np;                                                                                  \
    }

/* -- 32-value formats -- */

/* One token's block at a0 (Q8_0, or Q8_1 for the affine formats): its scale d, the offset
 * correction -off * sum(q) (Q8_0 with VNNI: off = 128) and (Q8_1) its s. */
RF_INLINE void b32_prep_t(rf_type t, int vnni, const uint8_t *a0, float *da, int32_t *negc,
                          float *sa) {
    *da = h2f(ld16(a0));
    *sa = b32_affine(t) ? h2f(ld16(a0 + 2)) : 0.0f;
    const int off = t == RF_TYPE_Q8_0 ? (vnni ? 128 : 0) : b32_offset(t);
    *negc = 0;
    if (off) {
        const __m256i p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), loadu256(a0 + 2));
        *negc = -off * hsum_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
    }
}

/* nt (<= TILE_T) tokens at at[j] (raw activation rows, from block b0) against the nb transposed
 * blocks at wb: out[j * os + lane] (+)= the dots. */
RF_INLINE void b32_kernel_t(rf_type t, int vnni, int nt, int64_t nb, const uint8_t *wb,
                            const uint8_t *const *at, int64_t b0, const float *da,
                            const int32_t *negc, const float *sa, float *out, int64_t os, int nr,
                            int go_on) {
    tile_vf acc[TILE_T];
#pragma GCC unroll 8
    for (int j = 0; j < nt; j++) acc[j] = lanes_load(out + j * os, nr, go_on);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *wp = wb + (size_t)b * B32_WB;
        const size_t ao = (size_t)(b0 + b) * b32_act_bytes(t) + b32_act_qs(t);
        tile_vi si[TILE_T];
#pragma GCC unroll 8
        for (int j = 0; j < nt; j++) si[j] = TV_SETI(negc[j * B32_SEG + b]);
        b32_dots_t(t, vnni, nt, wp, at, ao, si);
        const tile_vf dw = TV_LOADF(wp + B32_D);
#pragma GCC unroll 8
        for (int j = 0; j < nt; j++)
            acc[j] = TV_FMADD(TV_CVTF(si[j]), TV_MULF(dw, TV_SETF(da[j * B32_SEG + b])), acc[j]);
        if (b32_affine(t)) {
            const tile_vf mw = TV_LOADF(wp + B32_M);
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++)
                acc[j] = TV_FMADD(mw, TV_SETF(sa[j * B32_SEG + b]), acc[j]);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < nt; j++) lanes_store(acc[j], out + j * os, nr);
}

RF_INLINE void b32_tile(rf_type t, int vnni, int64_t n, int64_t n_rows, const uint8_t *w, size_t ws,
                        int64_t n_tok, const uint8_t *a, size_t as, float *out, int64_t os) {
    _Alignas(64) uint8_t wbuf[B32_SEG * B32_WB];
    float da[TILE_CH * B32_SEG], sa[TILE_CH * B32_SEG];
    int32_t negc[TILE_CH * B32_SEG];
    const int64_t nb = n / 32;
    const size_t bw = b32_bytes(t), ba = b32_act_bytes(t);
    for (int64_t c0 = 0; c0 < n_tok; c0 += TILE_CH) {
        const int nc = (int)(n_tok - c0 < TILE_CH ? n_tok - c0 : TILE_CH);
        for (int64_t b0 = 0; b0 < nb; b0 += B32_SEG) {
            const int sb = (int)(nb - b0 < B32_SEG ? nb - b0 : B32_SEG);
            for (int j = 0; j < nc; j++) {
                const uint8_t *arow = a + (size_t)(c0 + j) * as + (size_t)b0 * ba;
                for (int b = 0; b < sb; b++)
                    b32_prep_t(t, vnni, arow + (size_t)b * ba, &da[j * B32_SEG + b],
                               &negc[j * B32_SEG + b], &sa[j * B32_SEG + b]);
            }
            for (int64_t r0 = 0; r0 < n_rows; r0 += TILE_W) {
                const int nr = (int)(n_rows - r0 < TILE_W ? n_rows - r0 : TILE_W);
                const uint8_t *rows[TILE_W];
                tile_rows(w, ws, r0, nr, rows);
                const size_t ahead = (size_t)nr * ws;
                for (int b = 0; b < sb; b++) {
                    const size_t off = (size_t)(b0 + b) * bw;
                    for (int i = 0; i < nr; i++) prefetch_span(rows[i] + off, ahead, bw);
                    b32_unpack_t(t, vnni, rows, off, wbuf + (size_t)b * B32_WB);
                }
#define B32_PASS(NT)                                                                               \
    b32_kernel_t(t, vnni, (NT), sb, wbuf, at, b0, da + p0 * B32_SEG, negc + p0 * B32_SEG,          \
                 sa + p0 * B32_SEG, out + (c0 + p0) * os + r0, os, nr, b0 > 0)
                TILE_PASSES(B32_PASS)
#undef B32_PASS
            }
        }
    }
}

/* -- K-quants -- */

/* One token's super-block ak (Q8_K) at dst: d, then (Q4_K) the bsum pairs of its eight 32-value
 * sub-blocks as four int32 words of two int16, or (Q6_K) -32 * bsums[j] for the 16 sub-blocks. */
RF_INLINE void k_prep_t(int q6, const uint8_t *ak, uint8_t *dst) {
    memcpy(dst, ak, 4);
    const __m256i bs = loadu256(ak + 260);
    if (q6) {
        const __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(bs));
        const __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(bs, 1));
        _mm256_storeu_si256((__m256i *)(void *)(dst + 4),
                            _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), lo), 5));
        _mm256_storeu_si256((__m256i *)(void *)(dst + 36),
                            _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), hi), 5));
    } else {
        const __m256i bp = _mm256_madd_epi16(bs, _mm256_set1_epi16(1)); /* 8 x int32 */
        _mm_storeu_si128(
            (__m128i *)(void *)(dst + 4),
            _mm_packs_epi32(_mm256_castsi256_si128(bp), _mm256_extracti128_si256(bp, 1)));
    }
}

/* nt tokens at at[j] (raw Q8_K rows, from super-block k0) against the ns transposed super-blocks
 * at wb, prepared token data at ab (K_AB per token and super-block, K_SEG per token). */
RF_INLINE void k_kernel_t(int q6, int vnni, int nt, int64_t ns, const uint8_t *wb,
                          const uint8_t *const *at, int64_t k0, const uint8_t *ab, float *out,
                          int64_t os, int nr, int go_on) {
    tile_vf acc[TILE_T];
#pragma GCC unroll 8
    for (int j = 0; j < nt; j++) acc[j] = lanes_load(out + j * os, nr, go_on);
    for (int64_t s = 0; s < ns; s++) {
        const uint8_t *wp = wb + (size_t)s * K_WB;
        const size_t ao = (size_t)(k0 + s) * 292 + 4;
        tile_vi ts[TILE_T];
#pragma GCC unroll 8
        for (int j = 0; j < nt; j++) ts[j] = TV_ZEROI();
        const int nsub = q6 ? 16 : 8;
        for (int sub = 0; sub < nsub; sub++) {
            tile_vi si[TILE_T];
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++)
                si[j] = q6 ? TV_SETI((int)ld32(ab + (size_t)(j * K_SEG + s) * K_AB + 4 + 4 * sub))
                           : TV_ZEROI();
            k_dots_t(q6, vnni, nt, wp, sub, at, ao, si);
            const tile_vi sc = TV_LOADI(wp + K_SC + TILE_VB * sub);
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++) ts[j] = TV_ADDI(ts[j], TV_MULLOI(si[j], sc));
        }
        const tile_vf d = TV_LOADF(wp + (q6 ? K_D6 : K_D));
#pragma GCC unroll 8
        for (int j = 0; j < nt; j++) {
            const float da = ldf(ab + (size_t)(j * K_SEG + s) * K_AB);
            acc[j] = TV_FMADD(TV_CVTF(ts[j]), TV_MULF(d, TV_SETF(da)), acc[j]);
        }
        if (!q6) {
            tile_vi mm[TILE_T];
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++) mm[j] = TV_ZEROI();
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                const tile_vi mp = TV_LOADI(wp + K_MIN + TILE_VB * i);
#pragma GCC unroll 8
                for (int j = 0; j < nt; j++) {
                    const tile_vi bp =
                        TV_SETI((int)ld32(ab + (size_t)(j * K_SEG + s) * K_AB + 4 + 4 * i));
                    mm[j] = TV_DPWSSD(mm[j], mp, bp, vnni);
                }
            }
            const tile_vf dm = TV_LOADF(wp + K_DMIN);
#pragma GCC unroll 8
            for (int j = 0; j < nt; j++) {
                const float da = ldf(ab + (size_t)(j * K_SEG + s) * K_AB);
                acc[j] = TV_FNMADD(TV_CVTF(mm[j]), TV_MULF(dm, TV_SETF(da)), acc[j]);
            }
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < nt; j++) lanes_store(acc[j], out + j * os, nr);
}

RF_INLINE void k_tile(int q6, int vnni, int64_t n, int64_t n_rows, const uint8_t *w, size_t ws,
                      int64_t n_tok, const uint8_t *a, size_t as, float *out, int64_t os) {
    _Alignas(64) uint8_t wbuf[K_SEG * K_WB];
    _Alignas(64) uint8_t abuf[TILE_CH * K_SEG * K_AB];
    const int64_t nsb = n / 256;
    const size_t bw = q6 ? 210 : 144;
    for (int64_t c0 = 0; c0 < n_tok; c0 += TILE_CH) {
        const int nc = (int)(n_tok - c0 < TILE_CH ? n_tok - c0 : TILE_CH);
        for (int64_t k0 = 0; k0 < nsb; k0 += K_SEG) {
            const int sk = (int)(nsb - k0 < K_SEG ? nsb - k0 : K_SEG);
            for (int j = 0; j < nc; j++)
                for (int s = 0; s < sk; s++)
                    k_prep_t(q6, a + (size_t)(c0 + j) * as + (size_t)(k0 + s) * 292,
                             abuf + (size_t)(j * K_SEG + s) * K_AB);
            for (int64_t r0 = 0; r0 < n_rows; r0 += TILE_W) {
                const int nr = (int)(n_rows - r0 < TILE_W ? n_rows - r0 : TILE_W);
                const uint8_t *rows[TILE_W];
                tile_rows(w, ws, r0, nr, rows);
                const size_t ahead = (size_t)nr * ws;
                for (int s = 0; s < sk; s++) {
                    const size_t off = (size_t)(k0 + s) * bw;
                    for (int i = 0; i < nr; i++) prefetch_span(rows[i] + off, ahead, bw);
                    k_unpack_t(q6, rows, off, wbuf + (size_t)s * K_WB);
                }
#define K_PASS(NT)                                                                                 \
    k_kernel_t(q6, vnni, (NT), sk, wbuf, at, k0, abuf + (size_t)p0 * K_SEG * K_AB,                 \
               out + (c0 + p0) * os + r0, os, nr, k0 > 0)
                TILE_PASSES(K_PASS)
#undef K_PASS
            }
        }
    }
}

/* -- dispatch -- */

/* Below this many tokens dot_tile runs dot_rows per token (the streaming kernel): the unpacking
 * of a tile costs about what 1 (32-value formats), 2 (Q4_K) or 4 (Q6_K) tokens' dots do. */
RF_INLINE int tile_min_tok(rf_type t) {
    return t == RF_TYPE_Q6_K ? 5 : t == RF_TYPE_Q4_K ? 3 : 2;
}

/* Defines the table's dot_tile, `name`, over its dot_rows, `dot_rows`: the tile kernels above for
 * the types that have them once there are tile_min_tok tokens; else dot_rows per token, on tiles
 * of 16 rows so a tile stays in cache for every token. */
#define TILE_DEFINE_DOT_TILE(name, vnni, dot_rows)                                                 \
    static void name(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t ws,               \
                     int64_t n_tok, const void *a, size_t as, float *out, int64_t os) {            \
        const uint8_t *wp = w, *ap = a;                                                            \
        if (n_tok >= tile_min_tok(t)) {                                                            \
            switch (t) {                                                                           \
            case RF_TYPE_Q4_0:                                                                     \
                b32_tile(RF_TYPE_Q4_0, vnni, n, n_rows, wp, ws, n_tok, ap, as, out, os);           \
                return;                                                                            \
            case RF_TYPE_Q4_1:                                                                     \
                b32_tile(RF_TYPE_Q4_1, vnni, n, n_rows, wp, ws, n_tok, ap, as, out, os);           \
                return;                                                                            \
            case RF_TYPE_Q5_1:                                                                     \
                b32_tile(RF_TYPE_Q5_1, vnni, n, n_rows, wp, ws, n_tok, ap, as, out, os);           \
                return;                                                                            \
            case RF_TYPE_Q5_0:                                                                     \
                b32_tile(RF_TYPE_Q5_0, vnni, n, n_rows, wp, ws, n_tok, ap, as, out, os);           \
                return;                                                                            \
            case RF_TYPE_Q8_0:                                                                     \
                b32_tile(RF_TYPE_Q8_0, vnni, n, n_rows, wp, ws, n_tok, ap, as, out, os);           \
                return;                                                                            \
            case RF_TYPE_Q4_K:                                                                     \
                k_tile(0, vnni, n, n_rows, wp, ws, n_tok, ap, as, out, os);                        \
                return;                                                                            \
            case RF_TYPE_Q6_K:                                                                     \
                k_tile(1, vnni, n, n_rows, wp, ws, n_tok, ap, as, out, os);                        \
                return;                                                                            \
            default:                                                                               \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
        if (n_tok == 1) {                                                                          \
            dot_rows(t, n, n_rows, w, ws, a, out);                                                 \
            return;                                                                                \
        }                                                                                          \
        for (int64_t r = 0; r < n_rows; r += 16) { /* other types: a 16-row tile per token */      \
            const int64_t nr = n_rows - r < 16 ? n_rows - r : 16;                                  \
            for (int64_t j = 0; j < n_tok; j++)                                                    \
                dot_rows(t, n, nr, wp + (size_t)r * ws, ws, ap + (size_t)j * as,                   \
                         out + j * os + r);                                                        \
        }                                                                                          \
    }

#endif /* __x86_64__ */
#endif
