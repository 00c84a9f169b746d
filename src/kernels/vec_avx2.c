/* vec_avx2.c: AVX2 + FMA + F16C versions of the small vector kernels (compiled with those flags
 * only for this file; used by the AVX2 and AVX-512 tables). Results differ from vec_scalar.c
 * only by float summation order. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>

#include "kernels/kernels.h"
#include "util/half.h"

static inline __m256 ld_h8(const uint16_t *h) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)h));
}

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* A dot of f32 x with a row of f16 h (rf_avx2_dot_f32_f16 and each row of
 * rf_avx2_dot_f32_f16_rows): rf_avx2_dot_f32's sequence (four chains of 8 lanes over
 * blocks of 32, then one over 8, the same final sums) on the widened row. */
static inline float dot_row_f16(const float *x, const uint16_t *h, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), ld_h8(h + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), ld_h8(h + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), ld_h8(h + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), ld_h8(h + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), ld_h8(h + i), a0);
    float s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) s += x[i] * rf_f16_to_f32(h[i]);
    return s;
}

float rf_avx2_dot_f32_f16(const float *x, const uint16_t *h, int n) {
    return dot_row_f16(x, h, n);
}

void rf_avx2_axpy_f16(float *acc, const uint16_t *h, float a, int n) {
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(va, ld_h8(h + i), _mm256_loadu_ps(acc + i)));
    for (; i < n; i++) acc[i] += a * rf_f16_to_f32(h[i]);
}

void rf_avx2_geglu(const uint16_t *table, const float *g, const float *u, float *out, int64_t n) {
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m128i xh = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
        uint16_t idx[8], val[8];
        _mm_storeu_si128((__m128i *)(void *)idx, xh);
        for (int j = 0; j < 8; j++) val[j] = table[idx[j]];
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)val));
        v = _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, hi, _CMP_GE_OQ));
        v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LE_OQ));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(v, _mm256_loadu_ps(u + i)));
    }
    if (i < n) rf_scalar_geglu(table, g + i, u + i, out + i, n - i);
}

void rf_avx2_cvt_f16_f32(const uint16_t *h, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, ld_h8(h + i));
    for (; i < n; i++) y[i] = rf_f16_to_f32(h[i]);
}

float rf_avx2_dot_f32(const float *x, const float *y, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
    float s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

void rf_avx2_axpy_f32(float *acc, const float *x, float a, int n) {
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(acc + i,
                         _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(acc + i)));
    for (; i < n; i++) acc[i] += a * x[i];
}

void rf_avx2_dot_f32_f16_rows(const float *x, const uint16_t *h, size_t h_stride, int n_rows, int n,
                              float *out) {
    for (int j = 0; j < n_rows; j++) out[j] = dot_row_f16(x, h + (size_t)j * h_stride, n);
}

/* W vectors of 8 accumulators at acc, kept in registers across the rows (W a constant after
 * inlining): v += a[j] * f32(row j) by fma, as rf_avx2_axpy_f32 does. */
static inline __attribute__((always_inline)) void
axpy_rows_block(float *acc, const uint16_t *h, size_t h_stride, const float *a, int n_rows, int W) {
    __m256 v[8];
#pragma GCC unroll 8
    for (int k = 0; k < W; k++) v[k] = _mm256_loadu_ps(acc + 8 * k);
    for (int j = 0; j < n_rows; j++) {
        const __m256 va = _mm256_set1_ps(a[j]);
        const uint16_t *r = h + (size_t)j * h_stride;
#pragma GCC unroll 8
        for (int k = 0; k < W; k++) v[k] = _mm256_fmadd_ps(va, ld_h8(r + 8 * k), v[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < W; k++) _mm256_storeu_ps(acc + 8 * k, v[k]);
}

/* rf_avx2_axpy_f32 with each widened row in turn: fma per block of 8, the tail as acc += a * x,
 * each value's operations in row order; up to 64 accumulators stay in registers over the rows. */
void rf_avx2_axpy_f16_rows(float *acc, const uint16_t *h, size_t h_stride, const float *a,
                           int n_rows, int n) {
    int i = 0;
    for (; i + 64 <= n; i += 64) axpy_rows_block(acc + i, h + i, h_stride, a, n_rows, 8);
    for (; i + 8 <= n; i += 8) axpy_rows_block(acc + i, h + i, h_stride, a, n_rows, 1);
    for (; i < n; i++)
        for (int j = 0; j < n_rows; j++)
            acc[i] += a[j] * rf_f16_to_f32(h[(size_t)j * h_stride + i]);
}

/* exp(x) for 8 floats: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2/2 (ln2 split in two
 * parts so r is exact), exp(r) by a degree-6 polynomial (Taylor terms; relative error below
 * 2e-7 on that interval), times 2^n built in the exponent bits. Inputs below -87.3 give 0 (the
 * softmax never needs subnormals), above 88.7 give +inf. */
static inline __m256 exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.7f), lo = _mm256_set1_ps(-87.3f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(under, y);
}

float rf_avx2_exp_sum(float *x, int n, float m) {
    const __m256 vm = _mm256_set1_ps(m);
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, v);
        acc = _mm256_add_ps(acc, v);
    }
    float s = hsum8(acc);
    for (; i < n; i++) {
        x[i] = expf(x[i] - m);
        s += x[i];
    }
    return s;
}

/* silu(g) * u: g / (1 + exp(-g)) with exp8 (a few ulp from expf; exp(-g) is +inf from g below
 * about -88.4 and 0 above 87.3, so silu is -0 and g there, as the reference gives), times u. */
void rf_avx2_swiglu(const float *g, const float *u, float *out, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = exp8(_mm256_xor_ps(x, sign));
        const __m256 s = _mm256_div_ps(x, _mm256_add_ps(one, e));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
    }
    if (i < n) rf_scalar_swiglu(g + i, u + i, out + i, n - i);
}

uint64_t rf_avx2_read_sum(const void *p, size_t n) {
    const __m256i *q = p;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    const size_t nv = n / 32; /* 32-byte vectors; n is a multiple of 64: nv is even */
    size_t i = 0;
    for (; i + 4 <= nv; i += 4) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256(q + i));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256(q + i + 1));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256(q + i + 2));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256(q + i + 3));
    }
    for (; i < nv; i++) s0 = _mm256_add_epi64(s0, _mm256_load_si256(q + i)); /* never past n */
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)(void *)out, s);
    return out[0] + out[1] + out[2] + out[3];
}

#else
typedef int rf_vec_avx2_unavailable;
#endif
