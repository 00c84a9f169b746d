/* test_quant.c: the scalar reference quant kernels (src/kernels/quant_ref.c) and the half.h
 * conversions.
 *
 * 1. Hand-built blocks of every weight format, with decoded values worked out in comments.
 * 2. Random rows of 1, 3 and 7 blocks per format: quantize -> dequantize within the encoder's
 *    stated bound; the integer dot equals the float dot of the dequantized rows; the dot is
 *    within the propagated quantization bound of the exact float dot.
 * 3. The activation encoders' exact llama.cpp numerics (Q8_0, Q8_1, Q8_K).
 * 4. F16/BF16 conversion edge cases.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "quant_bounds.h"
#include "kernels/quant.h"
#include "kernels/types.h"
#include "util/half.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Row buffer of exactly the row's size, so ASan sees any overrun. */
static void *row_alloc(rf_type t, int64_t n) {
    const size_t bytes = rf_type_row_bytes((uint32_t)t, (uint64_t)n);
    CHECK(bytes > 0);
    return xmalloc(bytes);
}

static float dequant1(rf_type t, const void *blk, int i) {
    float y[RF_QK_K];
    rf_ref_dequantize_row(t, blk, y, rf_type_get((uint32_t)t)->block);
    return y[i];
}

/* ------------------------------------------------------------------------------------------ */
/* 1. Hand-built blocks                                                                        */
/* ------------------------------------------------------------------------------------------ */

static void test_pairing(void) {
    CHECK(rf_vec_dot_type(RF_TYPE_Q4_0) == RF_TYPE_Q8_0);
    CHECK(rf_vec_dot_type(RF_TYPE_Q5_0) == RF_TYPE_Q8_0);
    CHECK(rf_vec_dot_type(RF_TYPE_Q8_0) == RF_TYPE_Q8_0);
    CHECK(rf_vec_dot_type(RF_TYPE_Q4_1) == RF_TYPE_Q8_1);
    CHECK(rf_vec_dot_type(RF_TYPE_Q5_1) == RF_TYPE_Q8_1);
    CHECK(rf_vec_dot_type(RF_TYPE_Q4_K) == RF_TYPE_Q8_K);
    CHECK(rf_vec_dot_type(RF_TYPE_Q5_K) == RF_TYPE_Q8_K);
    CHECK(rf_vec_dot_type(RF_TYPE_Q6_K) == RF_TYPE_Q8_K);
    CHECK(rf_vec_dot_type(RF_TYPE_F32) == RF_TYPE_F32);
    CHECK(rf_vec_dot_type(RF_TYPE_F16) == RF_TYPE_F16);
    CHECK(rf_vec_dot_type(RF_TYPE_BF16) == RF_TYPE_BF16);
    CHECK(rf_vec_dot_type(RF_TYPE_Q8_1) == RF_TYPE_COUNT);
    CHECK(rf_vec_dot_type(RF_TYPE_Q8_K) == RF_TYPE_COUNT);
    CHECK(rf_vec_dot_type(RF_TYPE_Q2_K) == RF_TYPE_COUNT);
    CHECK(rf_vec_dot_type(RF_TYPE_Q3_K) == RF_TYPE_COUNT);
    CHECK(rf_vec_dot_type((rf_type)5) == RF_TYPE_COUNT);
}

static void test_hand_q4_0(void) {
    rf_block_q4_0 b;
    memset(&b, 0, sizeof b);
    b.d = 0xB800; /* -0.5: negative d */
    b.qs[0] =
        0xF0; /* value 0: low nibble 0 -> (0-8)*-0.5 = 4; value 16: 15 -> (15-8)*-0.5 = -3.5 */
    b.qs[15] = 0x08; /* value 15: 8 -> 0; value 31: 0 -> 4 */
    CHECK(dequant1(RF_TYPE_Q4_0, &b, 0) == 4.0f);
    CHECK(dequant1(RF_TYPE_Q4_0, &b, 16) == -3.5f);
    CHECK(dequant1(RF_TYPE_Q4_0, &b, 15) == 0.0f);
    CHECK(dequant1(RF_TYPE_Q4_0, &b, 31) == 4.0f);
    b.d = 0; /* zero scale: every value 0 */
    CHECK(dequant1(RF_TYPE_Q4_0, &b, 16) == 0.0f);

    /* Dot: w d = 0.5, every qs = 0xF0 (values 0..15 -> -8, values 16..31 -> 7);
     * a d = 2, q = 1 on 0..15, -2 on 16..31: sumi = 16*(-8) + 16*(7*-2) = -352;
     * dot = -352 * 0.5 * 2 = -352. */
    rf_block_q8_0 a;
    b.d = 0x3800;
    memset(b.qs, 0xF0, sizeof b.qs);
    a.d = 0x4000;
    for (int j = 0; j < 32; j++) a.qs[j] = (int8_t)(j < 16 ? 1 : -2);
    CHECK(rf_ref_vec_dot(RF_TYPE_Q4_0, 32, &b, &a) == -352.0f);
}

static void test_hand_q4_1(void) {
    rf_block_q4_1 b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400;   /* 0.25 */
    b.m = 0xBC00;   /* -1 */
    b.qs[3] = 0xF2; /* value 3: 2*0.25 - 1 = -0.5; value 19: 15*0.25 - 1 = 2.75 */
    CHECK(dequant1(RF_TYPE_Q4_1, &b, 3) == -0.5f);
    CHECK(dequant1(RF_TYPE_Q4_1, &b, 19) == 2.75f);
    CHECK(dequant1(RF_TYPE_Q4_1, &b, 0) == -1.0f);

    /* Dot against Q8_1: d = 1, s = 3 (as if sum(q) = 3), q[3] = 2, q[19] = 1, rest 0 (the s
     * field is trusted, not recomputed): (0.25 * 1) * (2*2 + 15*1) + (-1) * 3 = 4.75 - 3. */
    rf_block_q8_1 a;
    memset(&a, 0, sizeof a);
    a.d = 0x3C00;
    a.s = 0x4200; /* 3 */
    a.qs[3] = 2;
    a.qs[19] = 1;
    CHECK(rf_ref_vec_dot(RF_TYPE_Q4_1, 32, &b, &a) == 1.75f);
}

static void test_hand_q5_0(void) {
    rf_block_q5_0 b;
    memset(&b, 0, sizeof b);
    b.d = 0x4000; /* 2 */
    /* qh as a little-endian u32 = 0x80040001: bits 0, 18 and 31 set. */
    b.qh[0] = 0x01;
    b.qh[2] = 0x04;
    b.qh[3] = 0x80;
    b.qs[0] = 0x3F;  /* value 0: 15|16 = 31 -> (31-16)*2 = 30; value 16: 3, bit 16 clear -> -26 */
    b.qs[2] = 0x70;  /* value 2: 0 -> -32; value 18: 7|16 = 23 -> 14 */
    b.qs[15] = 0xF0; /* value 15: 0, bit 15 clear -> -32; value 31: 15|16 = 31 (max) -> 30 */
    CHECK(dequant1(RF_TYPE_Q5_0, &b, 0) == 30.0f);
    CHECK(dequant1(RF_TYPE_Q5_0, &b, 16) == -26.0f);
    CHECK(dequant1(RF_TYPE_Q5_0, &b, 2) == -32.0f);
    CHECK(dequant1(RF_TYPE_Q5_0, &b, 18) == 14.0f);
    CHECK(dequant1(RF_TYPE_Q5_0, &b, 15) == -32.0f);
    CHECK(dequant1(RF_TYPE_Q5_0, &b, 31) == 30.0f);
}

static void test_hand_q5_1(void) {
    rf_block_q5_1 b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800;    /* 0.5 */
    b.m = 0x3C00;    /* 1 */
    b.qh[1] = 0x80;  /* bit 15 */
    b.qs[15] = 0x0F; /* value 15: 15|16 = 31 -> 15.5 + 1 = 16.5; value 31: 0 -> 1 */
    CHECK(dequant1(RF_TYPE_Q5_1, &b, 15) == 16.5f);
    CHECK(dequant1(RF_TYPE_Q5_1, &b, 31) == 1.0f);
}

static void test_hand_q8_0(void) {
    rf_block_q8_0 b;
    memset(&b, 0, sizeof b);
    b.d = 0xB400; /* -0.25 */
    b.qs[0] = -128;
    b.qs[31] = 127;
    CHECK(dequant1(RF_TYPE_Q8_0, &b, 0) == 32.0f);
    CHECK(dequant1(RF_TYPE_Q8_0, &b, 31) == -31.75f);
}

/* Scale bytes used by the Q4_K and Q5_K hand blocks (sub-block: sc, m):
 *   0: (63, 0)  s[0] = 0x3F (max scale), s[4] = 0
 *   1: (5, 7)   s[1] = 0x85: low 6 bits 5, top 2 bits = sc5 >> 4 = 2; s[5] = 0xC7: 7, m5 >> 4 = 3
 *   2, 3, 6: (0, 0)  s[2] = 0, s[3] = 0xC0 (sc3 = 0, top bits = sc7 >> 4 = 3),
 *            s[6] = 0, s[7] = 0x40 (m3 = 0, top bits = m7 >> 4 = 1), s[10] = 0
 *   4: (0, 3)   s[8] = 0x30: sc4 = 0 | (s[0] >> 6) << 4 = 0 (zero scale), m4 = 3 | (s[4]>>6)<<4 = 3
 *   5: (43, 54) s[9] = 0x6B: sc5 = 0xB | 2 << 4 = 43, m5 = 6 | 3 << 4 = 54
 *   7: (63, 31) s[11] = 0xFF: sc7 = 15 | 3 << 4 = 63, m7 = 15 | 1 << 4 = 31 */
static const uint8_t k_hand_scales[12] = {0x3F, 0x85, 0x00, 0xC0, 0x00, 0xC7,
                                          0x00, 0x40, 0x30, 0x6B, 0x00, 0xFF};

/* Quants of the hand blocks (chunk c = value/64 uses qs[32c..32c+31]; low nibbles are sub-block
 * 2c, high nibbles 2c+1):
 *   qs[2] = 0x0F:   value 2 (sb 0) = 15
 *   qs[8] = 0x90:   value 40 (sb 1) = 9
 *   qs[67] = 0xF7:  value 131 (sb 4) = 7, value 163 (sb 5) = 15
 *   qs[127] = 0xA0: value 255 (sb 7) = 10 */
static void k_hand_qs(uint8_t qs[128]) {
    memset(qs, 0, 128);
    qs[2] = 0x0F;
    qs[8] = 0x90;
    qs[67] = 0xF7;
    qs[127] = 0xA0;
}

static void test_hand_q4_k(void) {
    uint8_t sc, m;
    rf_k_scale_min(5, k_hand_scales, &sc, &m);
    CHECK(sc == 43 && m == 54);
    rf_k_scale_min(7, k_hand_scales, &sc, &m);
    CHECK(sc == 63 && m == 31);
    rf_k_scale_min(4, k_hand_scales, &sc, &m);
    CHECK(sc == 0 && m == 3);

    rf_block_q4_k b;
    b.d = 0x3C00;    /* 1 */
    b.dmin = 0x3800; /* 0.5 */
    memcpy(b.scales, k_hand_scales, 12);
    k_hand_qs(b.qs);
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 2) == 945.0f);   /* 63*15 - 0 */
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 40) == 41.5f);   /* 5*9 - 0.5*7 */
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 131) == -1.5f);  /* 0*7 - 0.5*3: zero scale */
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 163) == 618.0f); /* 43*15 - 0.5*54 */
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 255) == 614.5f); /* 63*10 - 0.5*31 */
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 224) == -15.5f); /* 63*0 - 0.5*31 */
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 64) == 0.0f);    /* sb 2: sc = m = 0 */

    /* Dot with a hand Q8_K: d = 0.5, every q = 1, bsums = 16.
     * sum sc*q = 63*15 + 5*9 + 0*7 + 43*15 + 63*10 = 2265;
     * sum over the 16 bsums of bsum * m[g/2] = 32 * (0+7+0+0+3+54+0+31) = 3040;
     * dot = (1*0.5)*2265 - (0.5*0.5)*3040 = 1132.5 - 760 = 372.5. */
    rf_block_q8_k a;
    a.d = 0.5f;
    memset(a.qs, 1, sizeof a.qs);
    for (int g = 0; g < 16; g++) a.bsums[g] = 16;
    CHECK(rf_ref_vec_dot(RF_TYPE_Q4_K, 256, &b, &a) == 372.5f);

    b.d = 0xBC00; /* -1: negative d flips the scaled part only */
    CHECK(dequant1(RF_TYPE_Q4_K, &b, 163) == -672.0f); /* -43*15 - 27 */
}

static void test_hand_q5_k(void) {
    rf_block_q5_k b;
    b.d = 0x3C00;
    b.dmin = 0x3800;
    memcpy(b.scales, k_hand_scales, 12);
    k_hand_qs(b.qs);
    memset(b.qh, 0, sizeof b.qh);
    /* Bit 2c of qh[l] adds 16 to the low-nibble value l of chunk c, bit 2c+1 to the high one. */
    b.qh[2] = 0x01;        /* value 2 (chunk 0 low): 15+16 = 31 (max) */
    b.qh[3] = 0x20 | 0x02; /* value 163 (chunk 2 high, l=3): 31; value 35 (chunk 0 high): 16 */
    b.qh[31] = 0x80;       /* value 255 (chunk 3 high, l=31): 10+16 = 26 */
    CHECK(dequant1(RF_TYPE_Q5_K, &b, 2) == 1953.0f);   /* 63*31 */
    CHECK(dequant1(RF_TYPE_Q5_K, &b, 163) == 1306.0f); /* 43*31 - 27 */
    CHECK(dequant1(RF_TYPE_Q5_K, &b, 131) == -1.5f);   /* bit 4 of qh[3] clear; sc4 = 0 */
    CHECK(dequant1(RF_TYPE_Q5_K, &b, 35) == 76.5f);    /* 5*16 - 3.5 */
    CHECK(dequant1(RF_TYPE_Q5_K, &b, 3) == 0.0f);      /* qs[3] low 0, bit 0 clear */
    CHECK(dequant1(RF_TYPE_Q5_K, &b, 255) == 1622.5f); /* 63*26 - 15.5 */
}

static void test_hand_q6_k(void) {
    rf_block_q6_k b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800; /* 0.5 */
    b.scales[0] = 1;
    b.scales[2] = -3;
    b.scales[4] = 127;
    b.scales[6] = -128;
    b.scales[9] = 2;
    b.scales[15] = 10;
    /* Half 0, l = 5: the four quarters read ql[5] low, ql[37] low, ql[5] high, ql[37] high and
     * bit pairs 0-1, 2-3, 4-5, 6-7 of qh[5]; scales 5/16 + 0, 2, 4, 6. */
    b.ql[5] = 0xF0;
    b.ql[37] = 0x5A;
    b.qh[5] = 0xE4;                                     /* pairs: 00, 01, 10, 11 */
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 5) == -16.0f);     /* 0.5*1*((0|0<<4)-32) */
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 37) == 9.0f);      /* 0.5*-3*((10|1<<4)-32) = -1.5*-6 */
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 69) == 952.5f);    /* 0.5*127*((15|2<<4)-32) = 63.5*15 */
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 101) == -1344.0f); /* 0.5*-128*((5|3<<4)-32) = -64*21 */
    /* Half 1 (ql += 64, qh += 32, scales += 8). Value 148 = 128 + 20: ql[84] low, qh[52] bits
     * 0-1, scale 9: level 15 | 3 << 4 = 63 (max) -> 0.5*2*(63-32) = 31. */
    b.ql[84] = 0x0F;
    b.qh[52] = 0x03;
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 148) == 31.0f);
    /* Value 255 = 128 + 96 + 31: ql[127] high, qh[63] bits 6-7, scale 15:
     * level 3 | 1 << 4 = 19 -> 0.5*10*(19-32) = -65. */
    b.ql[127] = 0x30;
    b.qh[63] = 0x40;
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 255) == -65.0f);
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 0) == -16.0f); /* all-zero bits: level -32, scale 1 */
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 16) == 0.0f);  /* scale 1 of the block is 0 */
    b.d = 0xB800;                                   /* -0.5 */
    CHECK(dequant1(RF_TYPE_Q6_K, &b, 69) == -952.5f);

    /* Dot with a hand Q8_K (d = 2, q[69] = 3, q[255] = -1, rest 0; bsums unused by Q6_K):
     * d*da*sum(sc*q6*q8) = (-0.5*2) * (127*15*3 + 10*(-13)*(-1)) = -(5715 + 130) = -5845. */
    rf_block_q8_k a;
    memset(&a, 0, sizeof a);
    a.d = 2.0f;
    a.qs[69] = 3;
    a.qs[255] = -1;
    CHECK(rf_ref_vec_dot(RF_TYPE_Q6_K, 256, &b, &a) == -5845.0f);
}

/* ------------------------------------------------------------------------------------------ */
/* 2. Random round trips and dots                                                              */
/* ------------------------------------------------------------------------------------------ */

/* Weight-like rows: each 32-group gets a random magnitude 2^-3..2^3 and a random shape
 * (symmetric, all positive, all negative, all zero, symmetric with an outlier), so the encoders
 * see positive-only sub-blocks, zero blocks and wide ranges. */
static void fill_weights(uint64_t *s, float *x, int64_t n) {
    for (int64_t g = 0; g < n; g += 32) {
        const float mag = ldexpf(1.0f, (int)(rng_next(s) % 7) - 3);
        const int shape = (int)(rng_next(s) % 5);
        const int64_t end = g + 32 < n ? g + 32 : n;
        for (int64_t i = g; i < end; i++) {
            float v = rng_sym(s);
            if (shape == 1) v = 0.5f + 0.5f * fabsf(v);
            if (shape == 2) v = -0.25f - fabsf(v);
            if (shape == 3) v = 0.0f;
            x[i] = mag * v;
        }
        if (shape == 4) x[g + (int64_t)(rng_next(s) % (uint64_t)(end - g))] *= 4.0f;
    }
}

static void fill_acts(uint64_t *s, float *x, int64_t n) {
    for (int64_t g = 0; g < n; g += 32) {
        const float mag = ldexpf(1.0f, (int)(rng_next(s) % 5) - 2);
        for (int64_t i = g; i < n && i < g + 32; i++) x[i] = mag * rng_sym(s);
    }
}

/* Quantizes x (n values) to t, decodes it into y, and checks every value against err_bound.
 * Also fills bound[i]. Returns the quantized row (caller frees). */
static void *round_trip(rf_type t, const float *x, float *y, float *bound, int64_t n) {
    void *q = row_alloc(t, n);
    rf_ref_quantize_row(t, x, q, n);
    rf_ref_dequantize_row(t, q, y, n);
    const int64_t bs = rf_type_get((uint32_t)t)->block;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t b0 = bs > 1 ? i / bs * bs : i;
        bound[i] = quant_err_bound(t, x + b0, bs > 1 ? bs : 1, x[i]);
        if (!(fabsf(x[i] - y[i]) <= bound[i]) && bad++ < 3)
            CHECK_MSG(0, "%s value %lld: x %.9g, decoded %.9g, bound %.3g",
                      rf_type_get((uint32_t)t)->name, (long long)i, (double)x[i], (double)y[i],
                      (double)bound[i]);
    }
    CHECK_MSG(bad == 0, "%s: %d values outside the bound", rf_type_get((uint32_t)t)->name, bad);
    return q;
}

/* Q4_1/Q5_1 only: the dot uses the activation's fp16 s = fp16(d * sum q) where the dequantized
 * float dot has fp16(d) * sum q; the kernel therefore differs by |m| * |s - fp16(d) sum q| per
 * block. Returns the sum of that known deviation (0 for other types). */
static double s_field_deviation(rf_type t, const void *w, const void *a, int64_t n) {
    if (t != RF_TYPE_Q4_1 && t != RF_TYPE_Q5_1) return 0.0;
    const rf_block_q8_1 *ab = a;
    double dev = 0.0;
    for (int64_t i = 0; i < n / 32; i++) {
        const uint16_t m =
            t == RF_TYPE_Q4_1 ? ((const rf_block_q4_1 *)w)[i].m : ((const rf_block_q5_1 *)w)[i].m;
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += ab[i].qs[j];
        const double exact = (double)rf_f16_to_f32(ab[i].d) * sum;
        dev += fabs((double)rf_f16_to_f32(m)) * fabs((double)rf_f16_to_f32(ab[i].s) - exact);
    }
    return dev;
}

static void check_format(rf_type t, int nblocks, uint64_t *seed) {
    const rf_type at = rf_vec_dot_type(t);
    const uint32_t bs = rf_type_get((uint32_t)t)->block;
    const int64_t n = (int64_t)nblocks * (bs > 1 ? bs : 37);
    float *xw = xmalloc((size_t)n * sizeof(float)), *xa = xmalloc((size_t)n * sizeof(float));
    float *yw = xmalloc((size_t)n * sizeof(float)), *ya = xmalloc((size_t)n * sizeof(float));
    float *bw = xmalloc((size_t)n * sizeof(float)), *ba = xmalloc((size_t)n * sizeof(float));
    fill_weights(seed, xw, n);
    fill_acts(seed, xa, n);
    void *qw = round_trip(t, xw, yw, bw, n);
    void *qa = round_trip(at, xa, ya, ba, n);

    /* (b) the kernel against the float dot of the decoded rows: 1e-4 of sum |w a| (float
     * rounding of the per-block scales) plus the known s-field deviation of Q4_1/Q5_1. */
    double deq = 0.0, mag = 0.0, exact = 0.0, prop = 0.0;
    for (int64_t i = 0; i < n; i++) {
        deq += (double)yw[i] * ya[i];
        mag += fabs((double)yw[i] * ya[i]);
        exact += (double)xw[i] * xa[i];
        prop += (double)bw[i] * fabs((double)xa[i]) + fabs((double)yw[i]) * ba[i];
    }
    const float dot = rf_ref_vec_dot(t, n, qw, qa);
    const double tol = 1e-4 * mag + s_field_deviation(t, qw, qa, n) + 1e-12;
    CHECK_MSG(fabs(dot - deq) <= tol, "%s x%d: dot %.9g, dequantized dot %.9g, tol %.3g",
              rf_type_get((uint32_t)t)->name, nblocks, (double)dot, deq, tol);

    /* (c) against the exact dot of the original rows: x.a - x^.a^ = (x - x^).a + x^.(a - a^),
     * so the per-value bounds propagate to sum bw|a| + |x^| ba (plus tol above). */
    CHECK_MSG(fabs(dot - exact) <= prop + tol, "%s x%d: dot %.9g, exact %.9g, bound %.3g",
              rf_type_get((uint32_t)t)->name, nblocks, (double)dot, exact, prop + tol);

    free(qw);
    free(qa);
    free(xw);
    free(xa);
    free(yw);
    free(ya);
    free(bw);
    free(ba);
}

static void test_random_formats(void) {
    static const rf_type types[] = {RF_TYPE_Q4_0, RF_TYPE_Q4_1, RF_TYPE_Q5_0, RF_TYPE_Q5_1,
                                    RF_TYPE_Q8_0, RF_TYPE_Q4_K, RF_TYPE_Q5_K, RF_TYPE_Q6_K,
                                    RF_TYPE_F32,  RF_TYPE_F16,  RF_TYPE_BF16};
    static const int nblocks[] = {1, 3, 7}; /* 5. odd row lengths */
    uint64_t seed = 0x5eed1234abcdull;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int rep = 0; rep < 8; rep++)
            for (size_t k = 0; k < 3; k++) check_format(types[t], nblocks[k], &seed);
}

/* Every encoder turns an all-zero row (over a garbage-filled buffer) into one that decodes to
 * exact zeros: no division by a zero scale, no stale bytes. */
static void test_zero_rows(void) {
    static const rf_type types[] = {RF_TYPE_Q4_0, RF_TYPE_Q4_1, RF_TYPE_Q5_0, RF_TYPE_Q5_1,
                                    RF_TYPE_Q8_0, RF_TYPE_Q8_1, RF_TYPE_Q4_K, RF_TYPE_Q5_K,
                                    RF_TYPE_Q6_K, RF_TYPE_Q8_K};
    float x[RF_QK_K] = {0}, y[RF_QK_K];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        void *q = row_alloc(types[t], RF_QK_K);
        memset(q, 0x55, rf_type_row_bytes((uint32_t)types[t], RF_QK_K));
        rf_ref_quantize_row(types[t], x, q, RF_QK_K);
        rf_ref_dequantize_row(types[t], q, y, RF_QK_K);
        int nonzero = 0;
        for (int i = 0; i < RF_QK_K; i++) nonzero += y[i] != 0.0f;
        CHECK_MSG(nonzero == 0, "%s: zero row decodes to %d nonzero values",
                  rf_type_get((uint32_t)types[t])->name, nonzero);
        free(q);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 3. Activation encoders                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void test_q8_k_act(void) {
    float x[RF_QK_K];
    rf_block_q8_k b;

    /* All zero: d = 0, q = 0, bsums = 0 even over garbage. */
    memset(x, 0, sizeof x);
    memset(&b, 0x55, sizeof b);
    rf_ref_quantize_row(RF_TYPE_Q8_K, x, &b, RF_QK_K);
    CHECK(b.d == 0.0f);
    int nz = 0;
    for (int i = 0; i < RF_QK_K; i++) nz += b.qs[i] != 0;
    for (int g = 0; g < 16; g++) nz += b.bsums[g] != 0;
    CHECK(nz == 0);

    /* One large negative value among small ones: m = -1000, iscale = -127/m = 0.127 > 0, so
     * d = 1/iscale > 0 and m -> -127; |0.127 * x| < 0.5 elsewhere -> 0. */
    uint64_t s = 42;
    for (int i = 0; i < RF_QK_K; i++) x[i] = rng_sym(&s);
    x[100] = -1000.0f;
    rf_ref_quantize_row(RF_TYPE_Q8_K, x, &b, RF_QK_K);
    CHECK(b.d == 1.0f / (-127.0f / -1000.0f));
    CHECK(b.d > 0.0f);
    CHECK(b.qs[100] == -127);
    CHECK(b.bsums[6] == -127); /* 100 / 16 = 6 */
    nz = 0;
    for (int i = 0; i < RF_QK_K; i++) nz += i != 100 && b.qs[i] != 0;
    CHECK(nz == 0);

    /* A large positive extreme gives a negative d; it still maps to -127. */
    x[100] = 0.0f;
    x[7] = 500.0f;
    rf_ref_quantize_row(RF_TYPE_Q8_K, x, &b, RF_QK_K);
    CHECK(b.d < 0.0f && b.qs[7] == -127);
    CHECK(b.d == 1.0f / (-127.0f / 500.0f));

    /* Rounding is to nearest, ties to even (ggml's nearest_int), and the first of equal |x|
     * wins: m = x[0] = -127 gives iscale = 1, d = 1, so q = rint(x). */
    memset(x, 0, sizeof x);
    x[0] = -127.0f;
    x[1] = 2.5f;
    x[2] = 3.5f;
    x[3] = -2.5f;
    x[4] = 0.5f;
    x[5] = 1.5f;
    x[6] = 126.5f;
    x[10] = 127.0f; /* same |x| as x[0], later: not the extreme */
    rf_ref_quantize_row(RF_TYPE_Q8_K, x, &b, RF_QK_K);
    CHECK(b.d == 1.0f);
    CHECK(b.qs[0] == -127 && b.qs[1] == 2 && b.qs[2] == 4 && b.qs[3] == -2);
    CHECK(b.qs[4] == 0 && b.qs[5] == 2 && b.qs[6] == 126 && b.qs[10] == 127);
    CHECK(b.bsums[0] == -127 + 2 + 4 - 2 + 0 + 2 + 126 + 127);

    /* bsums of a random block are the sums of its 16-groups. */
    for (int i = 0; i < RF_QK_K; i++) x[i] = 3.0f * rng_sym(&s);
    rf_ref_quantize_row(RF_TYPE_Q8_K, x, &b, RF_QK_K);
    int ok = 1;
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int l = 0; l < 16; l++) sum += b.qs[16 * g + l];
        ok &= sum == b.bsums[g];
    }
    CHECK(ok);
}

static void test_q8_0_act(void) {
    float x[32] = {0};
    rf_block_q8_0 b;

    /* amax = 127: d = 1 exactly, q = rint(x * 127/amax): ties to even, as llama.cpp's x86 SIMD
     * quantizer (the path its CPU backend runs) rounds; not roundf's ties away from zero. */
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.5f;
    x[4] = -126.5f;
    rf_ref_quantize_row(RF_TYPE_Q8_0, x, &b, 32);
    CHECK(b.d == 0x3C00);
    CHECK(b.qs[0] == 127 && b.qs[1] == 2 && b.qs[2] == -2 && b.qs[3] == 0 && b.qs[4] == -126);

    /* amax = 1: d = 1/127 = 0.0078740157 stored as fp16 0x2008 = 0.0078735352; q uses the
     * float multiplier 127/amax: 0.99603*127 = 126.496 -> 126, where 0.99603/fp16(d) = 126.504
     * -> 127. */
    memset(x, 0, sizeof x);
    x[0] = -1.0f;
    x[1] = 0.99603f;
    rf_ref_quantize_row(RF_TYPE_Q8_0, x, &b, 32);
    CHECK(b.d == rf_f32_to_f16(1.0f / 127.0f));
    CHECK(b.d == 0x2008);
    CHECK(b.qs[0] == -127 && b.qs[1] == 126);
    CHECK(roundf(x[1] / rf_f16_to_f32(b.d)) == 127.0f); /* what the fp16 d would have given */

    /* All zero: d = 0, q = 0. */
    memset(x, 0, sizeof x);
    memset(&b, 0x55, sizeof b);
    rf_ref_quantize_row(RF_TYPE_Q8_0, x, &b, 32);
    int nz = b.d != 0;
    for (int j = 0; j < 32; j++) nz += b.qs[j] != 0;
    CHECK(nz == 0);
}

static void test_q8_1_act(void) {
    /* q = 127, 127, 127, 127, 32 (x = 32/127): sum = 540. s = fp16(540 * d) with the float
     * d = 1/127: 4.2519689 -> 0x4441; with fp16(d) it would be 4.2517090 -> 0x4440. */
    float x[32] = {0};
    for (int j = 0; j < 4; j++) x[j] = 1.0f;
    x[4] = 32.0f / 127.0f;
    rf_block_q8_1 b;
    rf_ref_quantize_row(RF_TYPE_Q8_1, x, &b, 32);
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += b.qs[j];
    CHECK(sum == 540);
    CHECK(b.d == 0x2008);
    CHECK(b.s == rf_f32_to_f16(540.0f * (1.0f / 127.0f)));
    CHECK(b.s == 0x4441);
    CHECK(rf_f32_to_f16(540.0f * rf_f16_to_f32(b.d)) == 0x4440);

    /* Same quants and d as Q8_0. */
    rf_block_q8_0 c;
    rf_ref_quantize_row(RF_TYPE_Q8_0, x, &c, 32);
    CHECK(c.d == b.d && memcmp(c.qs, b.qs, 32) == 0);
}

/* ------------------------------------------------------------------------------------------ */
/* 4. half.h conversions                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void test_f16(void) {
    /* f16 -> f32 */
    CHECK(rf_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    CHECK(rf_f16_to_f32(0x03FF) == 1023.0f * ldexpf(1.0f, -24));
    CHECK(rf_f16_to_f32(0x0400) == ldexpf(1.0f, -14)); /* smallest normal */
    CHECK(rf_f16_to_f32(0x7BFF) == 65504.0f);
    CHECK(rf_f16_to_f32(0x8000) == 0.0f && signbit(rf_f16_to_f32(0x8000)));
    CHECK(isinf(rf_f16_to_f32(0x7C00)) && rf_f16_to_f32(0x7C00) > 0);
    CHECK(isinf(rf_f16_to_f32(0xFC00)) && rf_f16_to_f32(0xFC00) < 0);
    CHECK(isnan(rf_f16_to_f32(0x7E00)) && isnan(rf_f16_to_f32(0x7C01)));

    /* f32 -> f16, round to nearest even */
    CHECK(rf_f32_to_f16(1.0f) == 0x3C00);
    CHECK(rf_f32_to_f16(1.0f + ldexpf(1.0f, -11)) == 0x3C00);        /* tie -> even (1.0) */
    CHECK(rf_f32_to_f16(1.0f + 3.0f * ldexpf(1.0f, -11)) == 0x3C02); /* tie -> even (up) */
    CHECK(rf_f32_to_f16(1.0f + ldexpf(1.0f, -11) + ldexpf(1.0f, -20)) == 0x3C01);
    CHECK(rf_f32_to_f16(ldexpf(1.0f, -24)) == 0x0001);
    CHECK(rf_f32_to_f16(ldexpf(1.0f, -25)) == 0x0000);           /* tie between 0 and 1 -> 0 */
    CHECK(rf_f32_to_f16(3.0f * ldexpf(1.0f, -25)) == 0x0002);    /* tie between 1 and 2 -> 2 */
    CHECK(rf_f32_to_f16(-ldexpf(1.0f, -26)) == 0x8000);          /* -0 */
    CHECK(rf_f32_to_f16(1023.5f * ldexpf(1.0f, -24)) == 0x0400); /* carries into the normals */
    CHECK(rf_f32_to_f16(65504.0f) == 0x7BFF);
    CHECK(rf_f32_to_f16(65519.0f) == 0x7BFF);
    CHECK(rf_f32_to_f16(65520.0f) == 0x7C00); /* rounds past the largest finite: inf */
    CHECK(rf_f32_to_f16(-1e10f) == 0xFC00);
    CHECK(rf_f32_to_f16(INFINITY) == 0x7C00 && rf_f32_to_f16(-INFINITY) == 0xFC00);
    const uint16_t hn = rf_f32_to_f16(NAN);
    CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x03FF) != 0);
    CHECK(rf_f32_to_f16(ldexpf(1.0f, -30)) == 0x0000); /* underflow */

    /* Every f16 survives f16 -> f32 -> f16 (NaNs stay NaN). */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        const float f = rf_f16_to_f32((uint16_t)h);
        const uint16_t back = rf_f32_to_f16(f);
        bad += isnan(f) ? !((back & 0x7C00) == 0x7C00 && (back & 0x3FF)) : back != h;
    }
    CHECK(bad == 0);
}

static void test_bf16(void) {
    CHECK(rf_f32_to_bf16(1.0f) == 0x3F80);
    CHECK(rf_bf16_to_f32(0x3F80) == 1.0f);
    CHECK(rf_f32_to_bf16(1.0f + ldexpf(1.0f, -8)) == 0x3F80);        /* tie -> even */
    CHECK(rf_f32_to_bf16(1.0f + 3.0f * ldexpf(1.0f, -8)) == 0x3F82); /* tie -> even (up) */
    CHECK(rf_f32_to_bf16(-2.0f) == 0xC000);
    CHECK(rf_f32_to_bf16(INFINITY) == 0x7F80 && rf_f32_to_bf16(-INFINITY) == 0xFF80);
    CHECK(rf_f32_to_bf16(rf_bits_f32(0x7F7FFFFFu)) == 0x7F80); /* FLT_MAX rounds to inf */
    CHECK(rf_f32_to_bf16(rf_bits_f32(0x00010000u)) == 0x0001); /* f32 subnormal kept */
    CHECK(rf_f32_to_bf16(rf_bits_f32(0x00018000u)) == 0x0002); /* subnormal tie -> even */
    /* A signalling NaN whose payload is all in the low bits must not turn into inf. */
    const uint16_t bn = rf_f32_to_bf16(rf_bits_f32(0x7F800001u));
    CHECK((bn & 0x7F80) == 0x7F80 && (bn & 0x7F) != 0);
    CHECK(isnan(rf_bf16_to_f32(bn)));
    CHECK(rf_bf16_to_f32(0x0001) == rf_bits_f32(0x00010000u));
    CHECK(isinf(rf_bf16_to_f32(0xFF80)) && rf_bf16_to_f32(0xFF80) < 0);
}

/* The float dots accumulate each float product in double (ggml's scalar path): with
 * products 2^24, 1, 1, -2^24 a float accumulator would return 0 (2^24 + 1 rounds to 2^24);
 * double returns 2. 4096 = 2^12 is exact in f16 and bf16, so all three types see 2^24. */
static void test_float_rows(void) {
    enum { N = 4 };
    const float w[N] = {4096.0f, 1.0f, 1.0f, -4096.0f};
    const float a[N] = {4096.0f, 1.0f, 1.0f, 4096.0f};
    CHECK(rf_ref_vec_dot(RF_TYPE_F32, N, w, a) == 2.0f);

    uint16_t hw[N], ha[N];
    rf_ref_quantize_row(RF_TYPE_F16, w, hw, N);
    rf_ref_quantize_row(RF_TYPE_F16, a, ha, N);
    CHECK(hw[0] == 0x6C00 && hw[3] == 0xEC00 && ha[1] == 0x3C00);
    CHECK(rf_ref_vec_dot(RF_TYPE_F16, N, hw, ha) == 2.0f);

    rf_ref_quantize_row(RF_TYPE_BF16, w, hw, N);
    rf_ref_quantize_row(RF_TYPE_BF16, a, ha, N);
    CHECK(hw[0] == 0x4580 && hw[3] == 0xC580 && ha[1] == 0x3F80);
    CHECK(rf_ref_vec_dot(RF_TYPE_BF16, N, hw, ha) == 2.0f);
    float back[N];
    rf_ref_dequantize_row(RF_TYPE_BF16, hw, back, N);
    CHECK(back[0] == 4096.0f && back[3] == -4096.0f);
}

int main(void) {
    test_pairing();
    test_hand_q4_0();
    test_hand_q4_1();
    test_hand_q5_0();
    test_hand_q5_1();
    test_hand_q8_0();
    test_hand_q4_k();
    test_hand_q5_k();
    test_hand_q6_k();
    test_random_formats();
    test_zero_rows();
    test_q8_k_act();
    test_q8_0_act();
    test_q8_1_act();
    test_f16();
    test_bf16();
    test_float_rows();
    return check_summary("test_quant");
}
