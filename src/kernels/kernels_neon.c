/* kernels_neon.c: the AArch64 Advanced SIMD (NEON) table.
 *
 * Baseline ARMv8-A NEON only (no dotprod or fp16 arithmetic extensions), so it runs on any
 * AArch64 CPU. Integer dots for the block formats of the supported models (Q8_0, Q4_0, Q4_1,
 * Q5_0, Q5_1, Q4_K, Q6_K): the weight block is widened to int8 levels once, multiplied with the
 * int8 activations (vmull_s8, pairwise-accumulated into int32, so no int16 overflow even at
 * -128), then scaled in float as the reference associates it (Q4_1/Q5_1: d*da*isum + m*s, the
 * Q8_1 activation carrying s = d * sum(q)). Other formats (Q5_K and the float rows) use the
 * reference dot; quantize_act is the reference (it must write the same bytes). dot_tile is
 * dot_rows per token, which gives exactly dot_rows' bits. SwiGLU uses a polynomial exp.
 *
 * Against the scalar table: integer parts exact, float accumulation order may differ,
 * |neon - ref| <= 1e-5 * sum |w_i a_i| (tests/unit/kernels/test_kernels.c, run under qemu-aarch64
 * by scripts/check_neon.sh).
 */
#include "kernels/kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#include "util/half.h"

/* ---- integer pieces ---- */

/* sum of w[i] * a[i] for i < 16 */
static inline int32x4_t mul16(int8x16_t w, int8x16_t a, int32x4_t acc) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(a)));
    return vpadalq_s16(acc, vmull_high_s8(w, a));
}

static inline int32_t isum32(int8x16_t w0, int8x16_t w1, const int8_t *a) {
    int32x4_t acc = mul16(w0, vld1q_s8(a), vdupq_n_s32(0));
    acc = mul16(w1, vld1q_s8(a + 16), acc);
    return vaddvq_s32(acc);
}

/* The 32 levels of a 4-bit block (low nibbles are values 0..15, high 16..31) minus offset. */
static inline void nibbles32(const uint8_t *qs, int8_t offset, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t q = vld1q_u8(qs);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))), vdupq_n_s8(offset));
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(offset));
}

/* ---- 32-value blocks ---- */

static float row_q8_0(const rf_block_q8_0 *w, const rf_block_q8_0 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        const int32_t s = isum32(vld1q_s8(w[i].qs), vld1q_s8(w[i].qs + 16), a[i].qs);
        sum += (float)s * (rf_f16_to_f32(w[i].d) * rf_f16_to_f32(a[i].d));
    }
    return sum;
}

static float row_q4_0(const rf_block_q4_0 *w, const rf_block_q8_0 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int8x16_t lo, hi;
        nibbles32(w[i].qs, 8, &lo, &hi);
        sum += (float)isum32(lo, hi, a[i].qs) * rf_f16_to_f32(w[i].d) * rf_f16_to_f32(a[i].d);
    }
    return sum;
}

/* Bit j of the 32-bit high-bit mask, as 0x10 or 0 in byte j (j < 16 from lo16, else hi16). */
static inline void high_bits(uint32_t h, uint8x16_t *lo16, uint8x16_t *hi16) {
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t m = vld1q_u8(bit);
    const uint8x16_t b0 = vcombine_u8(vdup_n_u8((uint8_t)h), vdup_n_u8((uint8_t)(h >> 8)));
    const uint8x16_t b1 = vcombine_u8(vdup_n_u8((uint8_t)(h >> 16)), vdup_n_u8((uint8_t)(h >> 24)));
    *lo16 = vandq_u8(vtstq_u8(b0, m), vdupq_n_u8(16));
    *hi16 = vandq_u8(vtstq_u8(b1, m), vdupq_n_u8(16));
}

static float row_q5_0(const rf_block_q5_0 *w, const rf_block_q8_0 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        uint32_t h;
        memcpy(&h, w[i].qh, 4);
        uint8x16_t h0, h1;
        high_bits(h, &h0, &h1);
        const uint8x16_t q = vld1q_u8(w[i].qs);
        const int8x16_t lo = vsubq_s8(
            vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, vdupq_n_u8(15)), h0)), vdupq_n_s8(16));
        const int8x16_t hi =
            vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), h1)), vdupq_n_s8(16));
        const float t =
            rf_f16_to_f32(w[i].d) * rf_f16_to_f32(a[i].d) * (float)isum32(lo, hi, a[i].qs);
        sum += t;
    }
    return sum;
}

/* The affine formats: value = level * d + m, against Q8_1 (s = d * sum(q)); the block term
 * (dw * da) * isum + mw * s, as the reference. */
static float row_q4_1(const rf_block_q4_1 *w, const rf_block_q8_1 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int8x16_t lo, hi;
        nibbles32(w[i].qs, 0, &lo, &hi);
        const float p =
            rf_f16_to_f32(w[i].d) * rf_f16_to_f32(a[i].d) * (float)isum32(lo, hi, a[i].qs);
        const float q = rf_f16_to_f32(w[i].m) * rf_f16_to_f32(a[i].s);
        const float t = p + q;
        sum += t;
    }
    return sum;
}

static float row_q5_1(const rf_block_q5_1 *w, const rf_block_q8_1 *a, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        uint32_t h;
        memcpy(&h, w[i].qh, 4);
        uint8x16_t h0, h1;
        high_bits(h, &h0, &h1);
        const uint8x16_t q = vld1q_u8(w[i].qs);
        const int8x16_t lo = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, vdupq_n_u8(15)), h0));
        const int8x16_t hi = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), h1));
        const float p =
            rf_f16_to_f32(w[i].d) * rf_f16_to_f32(a[i].d) * (float)isum32(lo, hi, a[i].qs);
        const float r = rf_f16_to_f32(w[i].m) * rf_f16_to_f32(a[i].s);
        const float t = p + r;
        sum += t;
    }
    return sum;
}

/* ---- K-quants ---- */

static float row_q4_k(const rf_block_q4_k *w, const rf_block_q8_k *a, int64_t nb) {
    float sum = 0.0f, mins = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) rf_k_scale_min(j, w[i].scales, &sc[j], &m[j]);
        int32_t total = 0;
        for (int c = 0; c < 4; c++) { /* 64 values: low nibbles 64c.., high 64c+32.. */
            const uint8x16_t q0 = vld1q_u8(w[i].qs + 32 * c), q1 = vld1q_u8(w[i].qs + 32 * c + 16);
            const uint8x16_t k = vdupq_n_u8(15);
            const int32_t s_lo = isum32(vreinterpretq_s8_u8(vandq_u8(q0, k)),
                                        vreinterpretq_s8_u8(vandq_u8(q1, k)), a[i].qs + 64 * c);
            const int32_t s_hi =
                isum32(vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)),
                       vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), a[i].qs + 64 * c + 32);
            total += sc[2 * c] * s_lo + sc[2 * c + 1] * s_hi;
        }
        int32_t msum = 0;
        for (int g = 0; g < RF_QK_K / 16; g++) msum += a[i].bsums[g] * m[g / 2];
        sum += rf_f16_to_f32(w[i].d) * a[i].d * (float)total;
        mins += rf_f16_to_f32(w[i].dmin) * a[i].d * (float)msum;
    }
    return sum - mins;
}

static float row_q6_k(const rf_block_q6_k *w, const rf_block_q8_k *a, int64_t nb) {
    float sum = 0.0f;
    const uint8x16_t k4 = vdupq_n_u8(15), k2 = vdupq_n_u8(3);
    const int8x16_t off = vdupq_n_s8(32);
    for (int64_t i = 0; i < nb; i++) {
        int32_t total = 0;
        for (int n = 0; n < 2; n++) { /* 128 values each */
            const uint8_t *ql = w[i].ql + 64 * n, *qh = w[i].qh + 32 * n;
            const int8_t *act = a[i].qs + 128 * n;
            const int8_t *scl = w[i].scales + 8 * n;
            for (int h = 0; h < 2; h++) { /* l in [16h, 16h + 16) of each quarter */
                const uint8x16_t l0 = vld1q_u8(ql + 16 * h), l1 = vld1q_u8(ql + 32 + 16 * h);
                const uint8x16_t hb = vld1q_u8(qh + 16 * h);
                int8x16_t v[4];
                v[0] = vreinterpretq_s8_u8(
                    vorrq_u8(vandq_u8(l0, k4), vshlq_n_u8(vandq_u8(hb, k2), 4)));
                v[1] = vreinterpretq_s8_u8(
                    vorrq_u8(vandq_u8(l1, k4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), k2), 4)));
                v[2] = vreinterpretq_s8_u8(
                    vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), k2), 4)));
                v[3] = vreinterpretq_s8_u8(
                    vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4)));
                for (int t = 0; t < 4; t++) { /* values 32t + 16h .. +16: scale (32t + 16h) / 16 */
                    const int32x4_t s =
                        mul16(vsubq_s8(v[t], off), vld1q_s8(act + 32 * t + 16 * h), vdupq_n_s32(0));
                    total += scl[2 * t + h] * vaddvq_s32(s);
                }
            }
        }
        sum += rf_f16_to_f32(w[i].d) * a[i].d * (float)total;
    }
    return sum;
}

static float row_dot(rf_type t, int64_t n, const void *w, const void *a) {
    switch (t) {
    case RF_TYPE_Q8_0:
        return row_q8_0(w, a, n / RF_QK);
    case RF_TYPE_Q4_0:
        return row_q4_0(w, a, n / RF_QK);
    case RF_TYPE_Q4_1:
        return row_q4_1(w, a, n / RF_QK);
    case RF_TYPE_Q5_1:
        return row_q5_1(w, a, n / RF_QK);
    case RF_TYPE_Q5_0:
        return row_q5_0(w, a, n / RF_QK);
    case RF_TYPE_Q4_K:
        return row_q4_k(w, a, n / RF_QK_K);
    case RF_TYPE_Q6_K:
        return row_q6_k(w, a, n / RF_QK_K);
    default:
        return rf_ref_vec_dot(t, n, w, a);
    }
}

static void neon_dot_rows(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a, float *out) {
    const uint8_t *row = w;
    for (int64_t r = 0; r < n_rows; r++, row += w_stride) out[r] = row_dot(t, n, row, a);
}

static void neon_dot_tile(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                          int64_t n_tok, const void *a, size_t a_stride, float *out,
                          int64_t out_stride) {
    rf_dot_tile_by_rows(neon_dot_rows, t, n, n_rows, w, w_stride, n_tok, a, a_stride, out,
                        out_stride);
}

/* ---- vector pieces ---- */

static float neon_dot_f32(const float *x, const float *y, int n) {
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        acc0 = vfmaq_f32(acc0, vld1q_f32(x + i), vld1q_f32(y + i));
        acc1 = vfmaq_f32(acc1, vld1q_f32(x + i + 4), vld1q_f32(y + i + 4));
    }
    float s = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

static void neon_axpy_f32(float *acc, const float *x, float a, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(acc + i, vfmaq_n_f32(vld1q_f32(acc + i), vld1q_f32(x + i), a));
    for (; i < n; i++) acc[i] += a * x[i];
}

static inline float32x4_t load_h4(const uint16_t *h) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

static float neon_dot_f32_f16(const float *x, const uint16_t *h, int n) {
    float32x4_t acc = vdupq_n_f32(0);
    int i = 0;
    for (; i + 4 <= n; i += 4) acc = vfmaq_f32(acc, vld1q_f32(x + i), load_h4(h + i));
    float s = vaddvq_f32(acc);
    for (; i < n; i++) s += x[i] * rf_f16_to_f32(h[i]);
    return s;
}

static void neon_axpy_f16(float *acc, const uint16_t *h, float a, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(acc + i, vfmaq_n_f32(vld1q_f32(acc + i), load_h4(h + i), a));
    for (; i < n; i++) acc[i] += a * rf_f16_to_f32(h[i]);
}

static void neon_cvt_f16_f32(const uint16_t *h, float *y, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, load_h4(h + i));
    for (; i < n; i++) y[i] = rf_f16_to_f32(h[i]);
}

/* exp(x) for 4 floats: x = n ln2 + r, n = round(x / ln2), |r| <= ln2/2 (ln2 in two parts so r
 * is exact), exp(r) by its degree-6 Taylor polynomial (relative error below 2e-7), times 2^n built
 * in the exponent bits; x is clamped to [-87.3, 88.7] first (beyond: 0 below, +inf from about
 * 88.4 up, as the AVX2 version). */
static inline float32x4_t exp4(float32x4_t x) {
    const uint32x4_t under = vcltq_f32(x, vdupq_n_f32(-87.3f));
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.7f));
    const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.0f / 720);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    const float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), under));
}

static void neon_swiglu(const float *g, const float *u, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t x = vld1q_f32(g + i);
        const float32x4_t s = vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(x))));
        vst1q_f32(out + i, vmulq_f32(s, vld1q_f32(u + i)));
    }
    if (i < n) rf_scalar_swiglu(g + i, u + i, out + i, n - i);
}

/* neon_dot_f32's sequence (two chains of 4 lanes over blocks of 8) on each widened row. */
static void neon_dot_f32_f16_rows(const float *x, const uint16_t *h, size_t h_stride, int n_rows,
                                  int n, float *out) {
    for (int j = 0; j < n_rows; j++) {
        const uint16_t *r = h + (size_t)j * h_stride;
        float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            acc0 = vfmaq_f32(acc0, vld1q_f32(x + i), load_h4(r + i));
            acc1 = vfmaq_f32(acc1, vld1q_f32(x + i + 4), load_h4(r + i + 4));
        }
        float s = vaddvq_f32(vaddq_f32(acc0, acc1));
        for (; i < n; i++) s += x[i] * rf_f16_to_f32(r[i]);
        out[j] = s;
    }
}

/* neon_axpy_f32 with each widened row in turn (fma per block of 4, the tail as acc += a * x). */
static void neon_axpy_f16_rows(float *acc, const uint16_t *h, size_t h_stride, const float *a,
                               int n_rows, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        float32x4_t v0 = vld1q_f32(acc + i), v1 = vld1q_f32(acc + i + 4);
        float32x4_t v2 = vld1q_f32(acc + i + 8), v3 = vld1q_f32(acc + i + 12);
        for (int j = 0; j < n_rows; j++) {
            const uint16_t *r = h + (size_t)j * h_stride + i;
            v0 = vfmaq_n_f32(v0, load_h4(r), a[j]);
            v1 = vfmaq_n_f32(v1, load_h4(r + 4), a[j]);
            v2 = vfmaq_n_f32(v2, load_h4(r + 8), a[j]);
            v3 = vfmaq_n_f32(v3, load_h4(r + 12), a[j]);
        }
        vst1q_f32(acc + i, v0);
        vst1q_f32(acc + i + 4, v1);
        vst1q_f32(acc + i + 8, v2);
        vst1q_f32(acc + i + 12, v3);
    }
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(acc + i);
        for (int j = 0; j < n_rows; j++)
            v = vfmaq_n_f32(v, load_h4(h + (size_t)j * h_stride + i), a[j]);
        vst1q_f32(acc + i, v);
    }
    for (; i < n; i++)
        for (int j = 0; j < n_rows; j++)
            acc[i] += a[j] * rf_f16_to_f32(h[(size_t)j * h_stride + i]);
}

static uint64_t neon_read_sum(const void *p, size_t n) {
    const uint64_t *q = p;
    uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n / 8; i += 8) { /* n is a multiple of 64: whole steps */
        a0 = vaddq_u64(a0, vld1q_u64(q + i));
        a1 = vaddq_u64(a1, vld1q_u64(q + i + 2));
        a2 = vaddq_u64(a2, vld1q_u64(q + i + 4));
        a3 = vaddq_u64(a3, vld1q_u64(q + i + 6));
    }
    return vaddvq_u64(vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3)));
}

/* ---- weight-row decoders (the widened matmul path) ---- */

/* y[0..15] = levels * d (16 signed levels, one rounding each: the reference's bits) */
static inline void store_scaled16(int8x16_t l, float d, float *y) {
    const int16x8_t a = vmovl_s8(vget_low_s8(l)), b = vmovl_high_s8(l);
    vst1q_f32(y, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(a))), d));
    vst1q_f32(y + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(a)), d));
    vst1q_f32(y + 8, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(b))), d));
    vst1q_f32(y + 12, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(b)), d));
}

/* Q8_0, Q4_0 and F16 rows in NEON; the other formats through the reference decoder. */
static void neon_dequantize_row(rf_type t, const void *src, float *dst, int64_t n) {
    if (t == RF_TYPE_Q8_0) {
        const rf_block_q8_0 *b = src;
        for (int64_t i = 0; i < n / 32; i++, dst += 32) {
            const float d = rf_f16_to_f32(b[i].d);
            store_scaled16(vld1q_s8(b[i].qs), d, dst);
            store_scaled16(vld1q_s8(b[i].qs + 16), d, dst + 16);
        }
    } else if (t == RF_TYPE_Q4_0) {
        const rf_block_q4_0 *b = src;
        for (int64_t i = 0; i < n / 32; i++, dst += 32) {
            int8x16_t lo, hi;
            nibbles32(b[i].qs, 8, &lo, &hi);
            const float d = rf_f16_to_f32(b[i].d);
            store_scaled16(lo, d, dst);
            store_scaled16(hi, d, dst + 16);
        }
    } else if (t == RF_TYPE_F16 && n <= INT32_MAX) {
        neon_cvt_f16_f32(src, dst, (int)n);
    } else {
        rf_ref_dequantize_row(t, src, dst, n);
    }
}

const rf_kernels rf_kernels_neon = {
    .isa = RF_ISA_NEON,
    .quantize_act = rf_ref_quantize_row, /* must write the reference's bytes */
    .dot_rows = neon_dot_rows,
    .dot_tile = neon_dot_tile,
    .dequantize_row = neon_dequantize_row,
    .dot_f32_f16 = neon_dot_f32_f16,
    .axpy_f16 = neon_axpy_f16,
    .cvt_f16_f32 = neon_cvt_f16_f32,
    .dot_f32 = neon_dot_f32,
    .axpy_f32 = neon_axpy_f32,
    .dot_f32_f16_rows = neon_dot_f32_f16_rows,
    .axpy_f16_rows = neon_axpy_f16_rows,
    .exp_sum = rf_scalar_exp_sum,
    .geglu = rf_scalar_geglu,
    .swiglu = neon_swiglu,
    .read_sum = neon_read_sum,
};

#else
typedef int rf_kernels_neon_unused; /* an ISO C translation unit needs a declaration */
#endif
