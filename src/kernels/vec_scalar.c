/* vec_scalar.c: portable versions of the small vector kernels (attention's f16 dot and axpy, the
 * GELU- and SiLU-gated products, the bandwidth read), and the GELU table. */
#include <math.h>

#include "kernels/kernels.h"
#include "util/half.h"

void rf_gelu_table(uint16_t *table) {
    for (uint32_t h = 0; h < 65536; h++) {
        float x = rf_f16_to_f32((uint16_t)h);
        float v =
            0.5f * x * (1.0f + tanhf(0.79788456080286535588f * x * (1.0f + 0.044715f * x * x)));
        table[h] = rf_f32_to_f16(v);
    }
}

float rf_scalar_dot_f32_f16(const float *x, const uint16_t *h, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += x[i] * rf_f16_to_f32(h[i]);
    return s;
}

void rf_scalar_axpy_f16(float *acc, const uint16_t *h, float a, int n) {
    for (int i = 0; i < n; i++) acc[i] += a * rf_f16_to_f32(h[i]);
}

void rf_scalar_geglu(const uint16_t *table, const float *g, const float *u, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float x = g[i], v;
        if (x <= -10.0f)
            v = 0.0f;
        else if (x >= 10.0f)
            v = x;
        else
            v = rf_f16_to_f32(table[rf_f32_to_f16(x)]);
        out[i] = v * u[i];
    }
}

/* silu(g) * u with silu(x) = x / (1 + expf(-x)), as llama.cpp's scalar ggml_silu_f32 (x -> -inf
 * gives -0 or NaN through inf/inf; the activations are finite). */
void rf_scalar_swiglu(const float *g, const float *u, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float s = g[i] / (1.0f + expf(-g[i]));
        out[i] = s * u[i];
    }
}

uint64_t rf_scalar_read_sum(const void *p, size_t n) {
    const uint64_t *q = p;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n / 8; i += 4) {
        s0 += q[i];
        s1 += q[i + 1];
        s2 += q[i + 2];
        s3 += q[i + 3];
    }
    for (; i < n / 8; i++) s0 += q[i]; /* never past n */
    return s0 + s1 + s2 + s3;
}

void rf_scalar_cvt_f16_f32(const uint16_t *h, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = rf_f16_to_f32(h[i]);
}

float rf_scalar_dot_f32(const float *x, const float *y, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

void rf_scalar_axpy_f32(float *acc, const float *x, float a, int n) {
    for (int i = 0; i < n; i++) acc[i] += a * x[i];
}

/* As rf_scalar_dot_f32 on each widened row. */
void rf_scalar_dot_f32_f16_rows(const float *x, const uint16_t *h, size_t h_stride, int n_rows,
                                int n, float *out) {
    for (int j = 0; j < n_rows; j++) {
        const uint16_t *r = h + (size_t)j * h_stride;
        float s = 0;
        for (int i = 0; i < n; i++) s += x[i] * rf_f16_to_f32(r[i]);
        out[j] = s;
    }
}

/* As rf_scalar_axpy_f32 with each widened row in turn. */
void rf_scalar_axpy_f16_rows(float *acc, const uint16_t *h, size_t h_stride, const float *a,
                             int n_rows, int n) {
    for (int j = 0; j < n_rows; j++) {
        const uint16_t *r = h + (size_t)j * h_stride;
        for (int i = 0; i < n; i++) acc[i] += a[j] * rf_f16_to_f32(r[i]);
    }
}

float rf_scalar_exp_sum(float *x, int n, float m) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        sum += x[i];
    }
    return (float)sum;
}
