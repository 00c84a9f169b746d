/* quant_ref.c: scalar reference encoders, decoders and dot products for the block formats of
 * quant.h.
 *
 * Numerics contract (what a SIMD kernel is compared against):
 *  - Activation encoders (Q8_0, Q8_1, Q8_K, F16, BF16) reproduce what llama.cpp's CPU backend
 *    runs on x86 value for value: Q8_0/Q8_1 multiply by the float 127/amax and round to
 *    nearest, ties to even (its AVX2/AVX-512 quantizer; its portable reference instead uses
 *    1/d and roundf, and on the real model that alone moves logits by ~0.08, so we follow the
 *    path the peer actually runs); Q8_1's s is fp16(sum(q) * d) with the unrounded float d;
 *    Q8_K rounds to nearest with ties to even (its x86 path is the reference).
 *  - Dot products do the integer work on the packed quants and apply the float scales per block
 *    in the same order as ggml's scalar generic kernels; the K-quant kernels keep ggml's 8 lanes
 *    (value index mod 8) so results can match bit for bit.
 *  - Every float product that ggml adds into an accumulator is written as its own statement, so
 *    no compiler fuses it into an FMA: ISO C's FP_CONTRACT (clang's default) only contracts
 *    within one expression, and GCC contracts across statements only in its GNU modes
 *    (-ffp-contract=fast), which this project's -std=c17 turns off. Cross-checked against the
 *    peer's libggml build (GNU mode, -O3 -march=native): the activation encoders, all decoders
 *    and the Q4_0, Q8_0 and Q6_K dots match bit for bit; that build fuses the Q4_1/Q5_1 block term
 * into fma(dw*da, sumi, m*s) and the K-quant lane/min updates into FMAs, so Q4_1, Q5_1, Q4_K and
 *    Q5_K differ from it in the last bits only (and match exactly when fused the same way).
 *    Its Q5_0 generic dot is miscompiled by GCC 12.2 at -O3 -march=native (the int8 cast of
 *    level-16 is lost, negative levels count as +256), so it is no oracle; ours agrees with its
 *    Q5_0 decoder. The integer code here avoids narrowing casts for that reason.
 *  - Inputs are expected to be finite; NaN/inf never cause undefined behaviour (conversions
 *    to int saturate) but give meaningless blocks.
 *  - Weight encoders: the 32-value formats are llama.cpp's reference encoders value for value
 *    (Q8_0's weight encoder is rf_ref_quantize_weights'; rf_ref_quantize_row's Q8_0 is the
 *    activation one); the K-quants are plain round-to-nearest encoders (no search). Each one's
 *    worst-case error is stated at its definition and checked by tests/unit/kernels/test_quant.c.
 */
#include "kernels/quant.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "util/half.h"

_Static_assert(sizeof(rf_block_q4_0) == 18, "Q4_0 block is 18 bytes");
_Static_assert(sizeof(rf_block_q4_1) == 20, "Q4_1 block is 20 bytes");
_Static_assert(sizeof(rf_block_q5_0) == 22, "Q5_0 block is 22 bytes");
_Static_assert(sizeof(rf_block_q5_1) == 24, "Q5_1 block is 24 bytes");
_Static_assert(sizeof(rf_block_q8_0) == 34, "Q8_0 block is 34 bytes");
_Static_assert(sizeof(rf_block_q8_1) == 36, "Q8_1 block is 36 bytes");
_Static_assert(sizeof(rf_block_q4_k) == 144, "Q4_K block is 144 bytes");
_Static_assert(sizeof(rf_block_q5_k) == 176, "Q5_K block is 176 bytes");
_Static_assert(sizeof(rf_block_q6_k) == 210, "Q6_K block is 210 bytes");
_Static_assert(sizeof(rf_block_q8_k) == 292, "Q8_K block is 292 bytes");

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

static float h2f(uint16_t h) {
    return rf_f16_to_f32(h);
}

static int clampi(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* An integral float to int, saturating at +-2^30 and mapping NaN to 0, so that no input (inf,
 * NaN, absurd ranges) can make the conversion undefined. Exact for every value used here. */
static int sat_int(float v) {
    if (v != v) return 0;
    if (v > 1073741824.0f) return 1 << 30;
    if (v < -1073741824.0f) return -(1 << 30);
    return (int)v;
}

/* Nearest integer, ties to even (the default rounding mode). Same results as ggml's
 * nearest_int (add 1.5*2^23 and read the mantissa) for |v| < 2^22, the only range used here. */
static int round_even(float v) {
    return sat_int(rintf(v));
}

/* fp16 of v rounded away from zero when v is not representable, so |h2f(result)| >= |v|
 * (finite v below 65504). Used for weight scales so the largest value never needs clamping. */
static uint16_t f16_ceil_abs(float v) {
    uint16_t h = rf_f32_to_f16(v);
    if (fabsf(h2f(h)) < fabsf(v) && (h & 0x7fffu) < 0x7bffu) h++; /* next magnitude up */
    return h;
}

/* The element of largest |x| keeping its sign; the first one wins ties. 0 for an all-zero x. */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, m = 0.0f;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            m = x[i];
        }
    }
    return m;
}

static float absmax(const float *x, int n) {
    return fabsf(signed_absmax(x, n));
}

static void min_max(const float *x, int n, float *lo, float *hi) {
    *lo = *hi = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < *lo) *lo = x[i];
        if (x[i] > *hi) *hi = x[i];
    }
}

/* Q5_0/Q5_1 keep the 32 fifth bits in a little-endian u32: bit j belongs to value j. */
static uint32_t load_u32_le(const uint8_t b[4]) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void store_u32_le(uint8_t b[4], uint32_t v) {
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: unpacking the quants                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Nibble of value j (0..31) of a 32-block: values 0..15 are the low nibbles of qs[0..15],
 * values 16..31 the high nibbles. */
static int nibble32(const uint8_t qs[16], int j) {
    return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
}

/* Unsigned 5-bit level (0..31) of value j: nibble | bit j of the qh word << 4. */
static int level5(const uint8_t qs[16], uint32_t qh, int j) {
    return nibble32(qs, j) | (int)((qh >> j) & 1u) << 4;
}

/* Writes levels q[0..31] (each 0..15) as nibbles. */
static void pack_nibbles32(const int q[32], uint8_t qs[16]) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
}

/* Writes levels q[0..31] (each 0..31): low 4 bits as nibbles, bit 4 into the qh word. */
static void pack_levels5(const int q[32], uint8_t qs[16], uint8_t qh[4]) {
    int lo[32];
    uint32_t h = 0;
    for (int j = 0; j < 32; j++) {
        lo[j] = q[j] & 15;
        h |= (uint32_t)(q[j] >> 4) << j;
    }
    pack_nibbles32(lo, qs);
    store_u32_le(qh, h);
}

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: weight encoders                                                            */
/* ------------------------------------------------------------------------------------------ */

/* The weight encoders of the 32-value formats are llama.cpp's reference ones
 * (quantize_row_*_ref, what llama-quantize runs without an importance matrix), value for value,
 * so a file quantized here has the bytes llama-quantize would write.
 *
 * Symmetric, Q4_0 (half = 8) and Q5_0 (half = 16): the signed extreme m (first on ties) maps to
 * level -half: d = m / -half (float), id = 1/d, level = trunc(x*id + half + 0.5) clamped to
 * 2*half-1, the stored scale fp16(d) (nearest). Error per value: <= |d|/2 inside the grid, <= |d|
 * for a value of the opposite sign to m beyond (half - 0.5)|d| (clamped), plus |level| *
 * |d - fp16(d)| <= half * 2^-11 |d| from the scale's rounding: <= amax/half * (1 + half * 2^-11)
 * in all. Writes levels 0..2*half-1 into q
 * and returns the fp16 d. */
static uint16_t encode_symmetric32(const float *x, int half, int q[32]) {
    const float m = signed_absmax(x, 32);
    const float d = m / (float)-half;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) {
        const float v = x[j] * id;
        q[j] = clampi(sat_int(v + ((float)half + 0.5f)), 0, 2 * half - 1); /* truncates */
    }
    return rf_f32_to_f16(d);
}

/* Affine, Q4_1 (qmax = 15) and Q5_1 (qmax = 31): d = (max - min)/qmax, id = 1/d, level =
 * trunc((x - min)*id + 0.5) clamped to qmax, stored d = fp16(d), m = fp16(min). Error per value:
 * d/2 plus the scale's and the minimum's fp16 rounding (level * |d - fp16(d)| <= 2^-11 range,
 * |min - fp16(min)| <= 2^-11 |min|): <= range/(2 qmax) + 2^-11 (range + |min|). */
static void encode_affine32(const float *x, int qmax, uint16_t *dh, uint16_t *mh, int q[32]) {
    float lo, hi;
    min_max(x, 32, &lo, &hi);
    const float d = (hi - lo) / (float)qmax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *dh = rf_f32_to_f16(d);
    *mh = rf_f32_to_f16(lo);
    for (int j = 0; j < 32; j++) {
        const float v = (x[j] - lo) * id;
        q[j] = clampi(sat_int(v + 0.5f), 0, qmax); /* truncates */
    }
}

static void quantize_q4_0(const float *x, rf_block_q4_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK) {
        int q[32];
        y[i].d = encode_symmetric32(x, 8, q);
        pack_nibbles32(q, y[i].qs);
    }
}

static void quantize_q5_0(const float *x, rf_block_q5_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK) {
        int q[32];
        y[i].d = encode_symmetric32(x, 16, q);
        pack_levels5(q, y[i].qs, y[i].qh);
    }
}

static void quantize_q4_1(const float *x, rf_block_q4_1 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK) {
        int q[32];
        encode_affine32(x, 15, &y[i].d, &y[i].m, q);
        pack_nibbles32(q, y[i].qs);
    }
}

static void quantize_q5_1(const float *x, rf_block_q5_1 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK) {
        int q[32];
        encode_affine32(x, 31, &y[i].d, &y[i].m, q);
        pack_levels5(q, y[i].qs, y[i].qh);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: activation encoders (llama.cpp reference numerics)                         */
/* ------------------------------------------------------------------------------------------ */

/* Shared by Q8_0 and Q8_1: d = amax/127 (float), q = rint(x * (127/amax)) (ties to even; the
 * float multiplier is used, not the fp16 of d). Returns that float d; *dh gets its fp16. Error
 * <= d/2 + 127*|d - fp16(d)| <= 0.57*amax/127. The Q8_0 weight encoder is the next one. */
static float encode_q8_32(const float *x, uint16_t *dh, int8_t qs[32]) {
    const float amax = absmax(x, 32);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    *dh = rf_f32_to_f16(d);
    for (int j = 0; j < 32; j++) {
        /* |v| <= 127 up to one rounding; the clamp only guards against NaN/inf input */
        const float v = x[j] * id;
        qs[j] = (int8_t)clampi(sat_int(rintf(v)), -127, 127);
    }
    return d;
}

static void quantize_q8_0(const float *x, rf_block_q8_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK) encode_q8_32(x, &y[i].d, y[i].qs);
}

/* The Q8_0 weight encoder, llama.cpp's quantize_row_q8_0_ref: d = amax/127, q = roundf(x / d)
 * (through the float 1/d; halves away from zero), stored fp16(d). It differs from the activation
 * encoder above (127/amax, ties to even) in the last level of a few values, which is why a
 * weight file has its own. Error per value <= d/2 + 127 |d - fp16(d)| <= 0.57 amax/127, plus 127 *
 * 2^-25 when fp16(d) is subnormal (amax below 2^-14 * 127). */
static void quantize_q8_0_weights(const float *x, rf_block_q8_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK) {
        const float d = absmax(x, 32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = rf_f32_to_f16(d);
        for (int j = 0; j < 32; j++) {
            const float v = x[j] * id;
            y[i].qs[j] = (int8_t)clampi(sat_int(roundf(v)), -127, 127);
        }
    }
}

/* Q8_1: as Q8_0 plus s = fp16((float)sum(q) * d) with the float d, as llama.cpp's reference
 * (its AVX2 path does the same). */
static void quantize_q8_1(const float *x, rf_block_q8_1 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK) {
        const float d = encode_q8_32(x, &y[i].d, y[i].qs);
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += y[i].qs[j];
        y[i].s = rf_f32_to_f16((float)sum * d);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: decoders                                                                   */
/* ------------------------------------------------------------------------------------------ */

static void dequant_q4_0(const rf_block_q4_0 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK) {
        const float d = h2f(b[i].d);
        for (int j = 0; j < 32; j++) y[j] = (float)(nibble32(b[i].qs, j) - 8) * d;
    }
}

static void dequant_q4_1(const rf_block_q4_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK) {
        const float d = h2f(b[i].d), m = h2f(b[i].m);
        for (int j = 0; j < 32; j++) {
            const float v = (float)nibble32(b[i].qs, j) * d;
            y[j] = v + m;
        }
    }
}

static void dequant_q5_0(const rf_block_q5_0 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK) {
        const float d = h2f(b[i].d);
        const uint32_t qh = load_u32_le(b[i].qh);
        for (int j = 0; j < 32; j++) y[j] = (float)(level5(b[i].qs, qh, j) - 16) * d;
    }
}

static void dequant_q5_1(const rf_block_q5_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK) {
        const float d = h2f(b[i].d), m = h2f(b[i].m);
        const uint32_t qh = load_u32_le(b[i].qh);
        for (int j = 0; j < 32; j++) {
            const float v = (float)level5(b[i].qs, qh, j) * d;
            y[j] = v + m;
        }
    }
}

static void dequant_q8_0(const rf_block_q8_0 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK) {
        const float d = h2f(b[i].d);
        for (int j = 0; j < 32; j++) y[j] = (float)b[i].qs[j] * d;
    }
}

static void dequant_q8_1(const rf_block_q8_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK) {
        const float d = h2f(b[i].d);
        for (int j = 0; j < 32; j++) y[j] = (float)b[i].qs[j] * d;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 32-value blocks: dot products against Q8_0 / Q8_1                                          */
/* ------------------------------------------------------------------------------------------ */

/* sum_j (level_j - offset) * a_j over one block; levels are the weight's unsigned levels. */
static int isum32(const int lv[32], int offset, const int8_t a[32]) {
    int s = 0;
    for (int j = 0; j < 32; j++) s += (lv[j] - offset) * (int)a[j];
    return s;
}

static void levels_q4(const uint8_t qs[16], int lv[32]) {
    for (int j = 0; j < 32; j++) lv[j] = nibble32(qs, j);
}

static void levels_q5(const uint8_t qs[16], const uint8_t qh[4], int lv[32]) {
    const uint32_t h = load_u32_le(qh);
    for (int j = 0; j < 32; j++) lv[j] = level5(qs, h, j);
}

/* sum over blocks of (sumi * dw) * da, in ggml's association. */
static float dot_q4_0(const rf_block_q4_0 *w, const rf_block_q8_0 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int lv[32];
        levels_q4(w[i].qs, lv);
        const float t = (float)isum32(lv, 8, a[i].qs) * h2f(w[i].d) * h2f(a[i].d);
        sum += t;
    }
    return sum;
}

/* sum over blocks of (dw * da) * sumi. */
static float dot_q5_0(const rf_block_q5_0 *w, const rf_block_q8_0 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int lv[32];
        levels_q5(w[i].qs, w[i].qh, lv);
        const float t = h2f(w[i].d) * h2f(a[i].d) * (float)isum32(lv, 16, a[i].qs);
        sum += t;
    }
    return sum;
}

/* sum over blocks of sumi * (dw * da). */
static float dot_q8_0(const rf_block_q8_0 *w, const rf_block_q8_0 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int s = 0;
        for (int j = 0; j < 32; j++) s += (int)w[i].qs[j] * (int)a[i].qs[j];
        const float t = (float)s * (h2f(w[i].d) * h2f(a[i].d));
        sum += t;
    }
    return sum;
}

/* One block of the affine formats: (dw * da) * sumi + mw * sa, summed as ggml does:
 * the two products, then their sum, then added to the running total. */
static float affine_term(uint16_t dw, uint16_t mw, const rf_block_q8_1 *a, int sumi) {
    const float p = h2f(dw) * h2f(a->d) * (float)sumi;
    const float q = h2f(mw) * h2f(a->s);
    return p + q;
}

static float dot_q4_1(const rf_block_q4_1 *w, const rf_block_q8_1 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int lv[32];
        levels_q4(w[i].qs, lv);
        const float t = affine_term(w[i].d, w[i].m, &a[i], isum32(lv, 0, a[i].qs));
        sum += t;
    }
    return sum;
}

static float dot_q5_1(const rf_block_q5_1 *w, const rf_block_q8_1 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int lv[32];
        levels_q5(w[i].qs, w[i].qh, lv);
        const float t = affine_term(w[i].d, w[i].m, &a[i], isum32(lv, 0, a[i].qs));
        sum += t;
    }
    return sum;
}

/* ------------------------------------------------------------------------------------------ */
/* K-quants: unpacking                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Q4_K/Q5_K value order: value i (0..255) lies in chunk c = i/64 and sub-block j = i/32; its
 * nibble is in qs[32c + i%32], low nibble when j is even, high when odd. Q5_K's fifth bit is
 * bit j of qh[i%32]. */
static int k_nibble(const uint8_t qs[128], int i) {
    const uint8_t byte = qs[32 * (i / 64) + i % 32];
    return (i / 32) % 2 ? byte >> 4 : byte & 15;
}

/* Unsigned levels of a Q4_K (qh == NULL, 0..15) or Q5_K (0..31) super-block. */
static void k_levels(const uint8_t qs[128], const uint8_t *qh, int lv[RF_QK_K]) {
    for (int i = 0; i < RF_QK_K; i++) {
        lv[i] = k_nibble(qs, i);
        if (qh) lv[i] |= ((qh[i % 32] >> (i / 32)) & 1) << 4;
    }
}

/* Scales (sc) and mins (m) of the 8 sub-blocks, unpacked from the 12 scale bytes. */
static void k_scales_mins(const uint8_t s[RF_K_SCALE_SIZE], int sc[8], int m[8]) {
    for (int j = 0; j < 8; j++) {
        uint8_t a, b;
        rf_k_scale_min(j, s, &a, &b);
        sc[j] = a;
        m[j] = b;
    }
}

/* Q6_K value i (0..255): half n = i/128, quarter t = (i%128)/32, l = i%32. The low 4 bits are
 * in ql[64n + 32(t%2) + l] (low nibble for t < 2, high for t >= 2); the top 2 bits are bits
 * 2t..2t+1 of qh[32n + l]. Its scale is scales[i/16]. Returns the signed level (-32..31). */
static int q6_level(const rf_block_q6_k *b, int i) {
    const int n = i / 128, t = (i % 128) / 32, l = i % 32;
    const uint8_t lo = b->ql[64 * n + 32 * (t % 2) + l];
    const int low4 = t < 2 ? lo & 15 : lo >> 4;
    const int high2 = (b->qh[32 * n + l] >> (2 * t)) & 3;
    return (low4 | high2 << 4) - 32;
}

/* ------------------------------------------------------------------------------------------ */
/* K-quants: decoders                                                                          */
/* ------------------------------------------------------------------------------------------ */

/* value = (d*sc_j) * level - (dmin*m_j), j = i/32. */
static void dequant_k_affine(uint16_t dh, uint16_t dminh, const uint8_t *scales, const uint8_t *qs,
                             const uint8_t *qh, float *y) {
    int lv[RF_QK_K], sc[8], m[8];
    k_levels(qs, qh, lv);
    k_scales_mins(scales, sc, m);
    const float d = h2f(dh), dmin = h2f(dminh);
    for (int j = 0; j < 8; j++) {
        const float ds = d * (float)sc[j], dm = dmin * (float)m[j];
        for (int l = 0; l < 32; l++) {
            const float v = ds * (float)lv[32 * j + l];
            y[32 * j + l] = v - dm;
        }
    }
}

static void dequant_q4_k(const rf_block_q4_k *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK_K)
        dequant_k_affine(b[i].d, b[i].dmin, b[i].scales, b[i].qs, NULL, y);
}

static void dequant_q5_k(const rf_block_q5_k *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK_K)
        dequant_k_affine(b[i].d, b[i].dmin, b[i].scales, b[i].qs, b[i].qh, y);
}

/* value = d * scales[i/16] * level, evaluated left to right. */
static void dequant_q6_k(const rf_block_q6_k *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK_K) {
        const float d = h2f(b[i].d);
        for (int v = 0; v < RF_QK_K; v++)
            y[v] = d * (float)b[i].scales[v / 16] * (float)q6_level(&b[i], v);
    }
}

static void dequant_q8_k(const rf_block_q8_k *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += RF_QK_K)
        for (int j = 0; j < RF_QK_K; j++) y[j] = b[i].d * (float)b[i].qs[j];
}

/* ------------------------------------------------------------------------------------------ */
/* K-quants: weight encoders                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Packs 6-bit scales and mins into the 12 bytes rf_k_scale_min reads:
 * bytes 0..3: sc0..3 in bits 0-5, bits 4-5 of sc4..7 in bits 6-7;
 * bytes 4..7: m0..3 in bits 0-5, bits 4-5 of m4..7 in bits 6-7;
 * bytes 8..11: sc4..7 & 15 in the low nibble, m4..7 & 15 in the high nibble. */
static void k_pack_scales(const int sc[8], const int m[8], uint8_t s[RF_K_SCALE_SIZE]) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
}

/* Levels of a Q4_K (qmax 15) / Q5_K (qmax 31) super-block: value = (d*sc_j)*q - dmin*m_j.
 * Per sub-block j: lo_j = min(0, min x) (mins are stored as positive m), step_j =
 * (max x - lo_j)/qmax. d = max step / 63 rounded up to fp16, dmin = max(-lo) / 63;
 * sc_j = ceil(step_j/d) so the grid covers the sub-block, m_j = nearest(-lo_j/dmin).
 * Error per value <= max(d*sc_j, dmin)/2 (+ fp16 slop) <= amax/qmax * 1.02 with amax the
 * super-block's largest |x|. */
typedef struct {
    uint16_t d, dmin;
    int sc[8], m[8];
    int q[RF_QK_K];
} k_affine_levels;

static void k_encode_affine(const float *x, int qmax, k_affine_levels *out) {
    float lo[8], step[8], max_step = 0.0f, max_neg = 0.0f;
    for (int j = 0; j < 8; j++) {
        float mn, mx;
        min_max(x + 32 * j, 32, &mn, &mx);
        lo[j] = mn < 0.0f ? mn : 0.0f;
        step[j] = (mx - lo[j]) / (float)qmax;
        if (step[j] > max_step) max_step = step[j];
        if (-lo[j] > max_neg) max_neg = -lo[j];
    }
    out->d = f16_ceil_abs(max_step / 63.0f);
    out->dmin = rf_f32_to_f16(max_neg / 63.0f);
    const float d = h2f(out->d), dmin = h2f(out->dmin);
    for (int j = 0; j < 8; j++) {
        out->sc[j] = d > 0.0f ? clampi(sat_int(ceilf(step[j] / d)), 0, 63) : 0;
        out->m[j] = dmin > 0.0f ? clampi(round_even(-lo[j] / dmin), 0, 63) : 0;
        const float ds = d * (float)out->sc[j], dm = dmin * (float)out->m[j];
        for (int l = 0; l < 32; l++) {
            const int i = 32 * j + l;
            out->q[i] = ds > 0.0f ? clampi(round_even((x[i] + dm) / ds), 0, qmax) : 0;
        }
    }
}

/* Writes levels q[0..255] (low 4 bits) as Q4_K/Q5_K nibbles (see k_nibble). */
static void k_pack_nibbles(const int q[RF_QK_K], uint8_t qs[128]) {
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            qs[32 * c + l] = (uint8_t)((q[64 * c + l] & 15) | (q[64 * c + 32 + l] & 15) << 4);
}

static void quantize_q4_k(const float *x, rf_block_q4_k *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK_K) {
        k_affine_levels lv;
        k_encode_affine(x, 15, &lv);
        y[i].d = lv.d;
        y[i].dmin = lv.dmin;
        k_pack_scales(lv.sc, lv.m, y[i].scales);
        k_pack_nibbles(lv.q, y[i].qs);
    }
}

static void quantize_q5_k(const float *x, rf_block_q5_k *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK_K) {
        k_affine_levels lv;
        k_encode_affine(x, 31, &lv);
        y[i].d = lv.d;
        y[i].dmin = lv.dmin;
        k_pack_scales(lv.sc, lv.m, y[i].scales);
        k_pack_nibbles(lv.q, y[i].qs);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int v = 0; v < RF_QK_K; v++) /* bit (v/32) of qh[v%32]: sub-block's fifth bits */
            y[i].qh[v % 32] |= (uint8_t)((lv.q[v] >> 4) << (v / 32));
    }
}

/* Q6_K: 16 sub-blocks of 16, value = d * sc_j * q with int8 sc_j and q in [-32, 31].
 * Sub-block j's signed extreme m_j maps to q = -32 (step s_j = m_j / -32); d = max|s_j| / 127
 * rounded up to fp16; |sc_j| = ceil(|s_j|/d) with the sign of s_j. Error per value
 * <= |d*sc_j| <= (amax/32)(1 + 1/127)(1 + 2^-10), amax the super-block's largest |x|. */
static void quantize_q6_k_block(const float *x, rf_block_q6_k *y) {
    float s[16], max_s = 0.0f;
    for (int j = 0; j < 16; j++) {
        s[j] = signed_absmax(x + 16 * j, 16) / -32.0f;
        if (fabsf(s[j]) > max_s) max_s = fabsf(s[j]);
    }
    y->d = f16_ceil_abs(max_s / 127.0f);
    const float d = h2f(y->d);
    memset(y->ql, 0, sizeof y->ql);
    memset(y->qh, 0, sizeof y->qh);
    for (int j = 0; j < 16; j++) {
        const int mag = d > 0.0f ? clampi(sat_int(ceilf(fabsf(s[j]) / d)), 0, 127) : 0;
        y->scales[j] = (int8_t)(s[j] < 0.0f ? -mag : mag);
        const float ds = d * (float)y->scales[j];
        for (int l = 0; l < 16; l++) {
            const int i = 16 * j + l;
            const int q = ds != 0.0f ? clampi(round_even(x[i] / ds), -32, 31) : 0;
            const int u = q + 32; /* 0..63, positions as in q6_level */
            const int n = i / 128, t = (i % 128) / 32, p = i % 32;
            y->ql[64 * n + 32 * (t % 2) + p] |= (uint8_t)((u & 15) << (t < 2 ? 0 : 4));
            y->qh[32 * n + p] |= (uint8_t)((u >> 4) << (2 * t));
        }
    }
}

static void quantize_q6_k(const float *x, rf_block_q6_k *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK_K) quantize_q6_k_block(x, &y[i]);
}

/* Q8_K activations, llama.cpp's reference: m = the element of largest |x| (first on ties) with
 * its sign, iscale = -127/m, q = min(127, nearest_even(iscale*x)), d = 1/iscale (so m decodes
 * as -127*d); bsums[g] = sum of q[16g..16g+15]. An all-zero block gets d = 0, q = 0 and (unlike
 * llama.cpp, which leaves them unwritten) bsums = 0. */
static void quantize_q8_k(const float *x, rf_block_q8_k *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += RF_QK_K) {
        const float m = signed_absmax(x, RF_QK_K);
        memset(y[i].qs, 0, sizeof y[i].qs);
        memset(y[i].bsums, 0, sizeof y[i].bsums);
        y[i].d = 0.0f;
        if (m == 0.0f) continue;
        const float iscale = -127.0f / m;
        for (int j = 0; j < RF_QK_K; j++) {
            const float v = iscale * x[j];
            const int q = round_even(v);
            y[i].qs[j] = (int8_t)(q < 127 ? q : 127);
        }
        for (int g = 0; g < RF_QK_K / 16; g++) {
            int s = 0;
            for (int l = 0; l < 16; l++) s += y[i].qs[16 * g + l];
            y[i].bsums[g] = (int16_t)s;
        }
        y[i].d = 1.0f / iscale;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* K-quants: dot products against Q8_K                                                         */
/* ------------------------------------------------------------------------------------------ */

/* ggml's generic K-quant kernels accumulate: per super-block, 8 int32 lanes
 * lane[i % 8] += scale(i) * (w_i * a_i); then float lanes acc[l] += (dw * da) * lane[l]; the
 * min terms go into a separate float total (total -= (dmin * da) * sum_g bsums[g]*m[g/2]);
 * finally total += acc[0] + ... + acc[7], one lane at a time. */
typedef struct {
    float lanes[8];
    float total;
} k_acc;

/* w: levels already offset (signed); scale of value i is scales[i >> shift]. */
static void k_acc_block(k_acc *acc, const int w[RF_QK_K], const int *scales, int shift,
                        const rf_block_q8_k *a, float dw) {
    int32_t lane[8] = {0};
    for (int i = 0; i < RF_QK_K; i++) lane[i % 8] += scales[i >> shift] * (w[i] * a->qs[i]);
    const float d = dw * a->d;
    for (int l = 0; l < 8; l++) {
        const float p = d * (float)lane[l];
        acc->lanes[l] += p;
    }
}

/* The min correction of a Q4_K/Q5_K block: total -= (dmin * da) * sum_g bsums[g] * m[g/2]. */
static void k_acc_mins(k_acc *acc, const int m[8], const rf_block_q8_k *a, float dmin) {
    int sumi = 0;
    for (int g = 0; g < RF_QK_K / 16; g++) sumi += a->bsums[g] * m[g / 2];
    const float p = dmin * a->d * (float)sumi;
    acc->total -= p;
}

static float k_acc_finish(const k_acc *acc) {
    float s = acc->total;
    for (int l = 0; l < 8; l++) s += acc->lanes[l];
    return s;
}

/* One Q4_K (qh == NULL) or Q5_K super-block: scaled level sums and the min correction. */
static void k_acc_affine(k_acc *acc, uint16_t dh, uint16_t dminh, const uint8_t *scales,
                         const uint8_t *qs, const uint8_t *qh, const rf_block_q8_k *a) {
    int lv[RF_QK_K], sc[8], m[8];
    k_levels(qs, qh, lv);
    k_scales_mins(scales, sc, m);
    k_acc_block(acc, lv, sc, 5, a, h2f(dh));
    k_acc_mins(acc, m, a, h2f(dminh));
}

static float dot_q4_k(const rf_block_q4_k *w, const rf_block_q8_k *a, int64_t nb) {
    k_acc acc = {{0}, 0.0f};
    for (int64_t i = 0; i < nb; i++)
        k_acc_affine(&acc, w[i].d, w[i].dmin, w[i].scales, w[i].qs, NULL, &a[i]);
    return k_acc_finish(&acc);
}

static float dot_q5_k(const rf_block_q5_k *w, const rf_block_q8_k *a, int64_t nb) {
    k_acc acc = {{0}, 0.0f};
    for (int64_t i = 0; i < nb; i++)
        k_acc_affine(&acc, w[i].d, w[i].dmin, w[i].scales, w[i].qs, w[i].qh, &a[i]);
    return k_acc_finish(&acc);
}

static float dot_q6_k(const rf_block_q6_k *w, const rf_block_q8_k *a, int64_t nb) {
    k_acc acc = {{0}, 0.0f};
    for (int64_t i = 0; i < nb; i++) {
        int lv[RF_QK_K], sc[16];
        for (int v = 0; v < RF_QK_K; v++) lv[v] = q6_level(&w[i], v);
        for (int j = 0; j < 16; j++) sc[j] = w[i].scales[j];
        k_acc_block(&acc, lv, sc, 4, &a[i], h2f(w[i].d));
    }
    return k_acc_finish(&acc);
}

/* ------------------------------------------------------------------------------------------ */
/* Float rows                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* ggml's scalar float dots: each product in float, accumulated in double, rounded at the end. */
static float dot_f32(const float *w, const float *a, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float p = w[i] * a[i];
        s += (double)p;
    }
    return (float)s;
}

static float dot_f16(const uint16_t *w, const uint16_t *a, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float p = h2f(w[i]) * h2f(a[i]);
        s += (double)p;
    }
    return (float)s;
}

static float dot_bf16(const uint16_t *w, const uint16_t *a, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float p = rf_bf16_to_f32(w[i]) * rf_bf16_to_f32(a[i]);
        s += (double)p;
    }
    return (float)s;
}

/* ------------------------------------------------------------------------------------------ */
/* Public entry points                                                                         */
/* ------------------------------------------------------------------------------------------ */

rf_type rf_vec_dot_type(rf_type t) {
    switch (t) {
    case RF_TYPE_F32:
        return RF_TYPE_F32;
    case RF_TYPE_F16:
        return RF_TYPE_F16;
    case RF_TYPE_BF16:
        return RF_TYPE_BF16;
    case RF_TYPE_Q4_0:
    case RF_TYPE_Q5_0:
    case RF_TYPE_Q8_0:
        return RF_TYPE_Q8_0;
    case RF_TYPE_Q4_1:
    case RF_TYPE_Q5_1:
        return RF_TYPE_Q8_1;
    case RF_TYPE_Q4_K:
    case RF_TYPE_Q5_K:
    case RF_TYPE_Q6_K:
        return RF_TYPE_Q8_K;
    default:
        return RF_TYPE_COUNT;
    }
}

/* Number of blocks in n values of t; asserts that n is a whole number of blocks. */
static int64_t blocks_of(rf_type t, int64_t n) {
    const int64_t bs = rf_type_get((uint32_t)t)->block;
    assert(bs > 0 && n >= 0 && n % bs == 0);
    return bs > 0 ? n / bs : 0;
}

void rf_ref_dequantize_row(rf_type t, const void *src, float *dst, int64_t n) {
    const int64_t nb = blocks_of(t, n);
    switch (t) {
    case RF_TYPE_F32:
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    case RF_TYPE_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = h2f(((const uint16_t *)src)[i]);
        return;
    case RF_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = rf_bf16_to_f32(((const uint16_t *)src)[i]);
        return;
    case RF_TYPE_Q4_0:
        dequant_q4_0(src, dst, nb);
        return;
    case RF_TYPE_Q4_1:
        dequant_q4_1(src, dst, nb);
        return;
    case RF_TYPE_Q5_0:
        dequant_q5_0(src, dst, nb);
        return;
    case RF_TYPE_Q5_1:
        dequant_q5_1(src, dst, nb);
        return;
    case RF_TYPE_Q8_0:
        dequant_q8_0(src, dst, nb);
        return;
    case RF_TYPE_Q8_1:
        dequant_q8_1(src, dst, nb);
        return;
    case RF_TYPE_Q4_K:
        dequant_q4_k(src, dst, nb);
        return;
    case RF_TYPE_Q5_K:
        dequant_q5_k(src, dst, nb);
        return;
    case RF_TYPE_Q6_K:
        dequant_q6_k(src, dst, nb);
        return;
    case RF_TYPE_Q8_K:
        dequant_q8_k(src, dst, nb);
        return;
    default:
        assert(!"rf_ref_dequantize_row: unsupported type");
        for (int64_t i = 0; i < n; i++) dst[i] = NAN;
        return;
    }
}

void rf_ref_quantize_row(rf_type t, const float *src, void *dst, int64_t n) {
    const int64_t nb = blocks_of(t, n);
    switch (t) {
    case RF_TYPE_F32:
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    case RF_TYPE_F16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = rf_f32_to_f16(src[i]);
        return;
    case RF_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = rf_f32_to_bf16(src[i]);
        return;
    case RF_TYPE_Q4_0:
        quantize_q4_0(src, dst, nb);
        return;
    case RF_TYPE_Q4_1:
        quantize_q4_1(src, dst, nb);
        return;
    case RF_TYPE_Q5_0:
        quantize_q5_0(src, dst, nb);
        return;
    case RF_TYPE_Q5_1:
        quantize_q5_1(src, dst, nb);
        return;
    case RF_TYPE_Q8_0:
        quantize_q8_0(src, dst, nb);
        return;
    case RF_TYPE_Q8_1:
        quantize_q8_1(src, dst, nb);
        return;
    case RF_TYPE_Q4_K:
        quantize_q4_k(src, dst, nb);
        return;
    case RF_TYPE_Q5_K:
        quantize_q5_k(src, dst, nb);
        return;
    case RF_TYPE_Q6_K:
        quantize_q6_k(src, dst, nb);
        return;
    case RF_TYPE_Q8_K:
        quantize_q8_k(src, dst, nb);
        return;
    default:
        assert(!"rf_ref_quantize_row: unsupported type");
        return;
    }
}

void rf_ref_quantize_weights(rf_type t, const float *src, void *dst, int64_t n) {
    if (t == RF_TYPE_Q8_0)
        quantize_q8_0_weights(src, dst, blocks_of(t, n));
    else
        rf_ref_quantize_row(t, src, dst, n);
}

float rf_ref_vec_dot(rf_type t, int64_t n, const void *w, const void *a) {
    const int64_t nb = blocks_of(t, n);
    switch (t) {
    case RF_TYPE_F32:
        return dot_f32(w, a, n);
    case RF_TYPE_F16:
        return dot_f16(w, a, n);
    case RF_TYPE_BF16:
        return dot_bf16(w, a, n);
    case RF_TYPE_Q4_0:
        return dot_q4_0(w, a, nb);
    case RF_TYPE_Q4_1:
        return dot_q4_1(w, a, nb);
    case RF_TYPE_Q5_0:
        return dot_q5_0(w, a, nb);
    case RF_TYPE_Q5_1:
        return dot_q5_1(w, a, nb);
    case RF_TYPE_Q8_0:
        return dot_q8_0(w, a, nb);
    case RF_TYPE_Q4_K:
        return dot_q4_k(w, a, nb);
    case RF_TYPE_Q5_K:
        return dot_q5_k(w, a, nb);
    case RF_TYPE_Q6_K:
        return dot_q6_k(w, a, nb);
    default:
        assert(!"rf_ref_vec_dot: type has no dot kernel");
        return NAN;
    }
}
