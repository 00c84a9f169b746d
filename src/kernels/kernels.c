/* kernels.c: the scalar reference table and run-time selection. */
#include "kernels/kernels.h"

static void scalar_quantize_act(rf_type act, const float *x, void *dst, int64_t n) {
    rf_ref_quantize_row(act, x, dst, n);
}

static void scalar_dot_rows(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                            const void *a, float *out) {
    const uint8_t *row = w;
    for (int64_t r = 0; r < n_rows; r++, row += w_stride) out[r] = rf_ref_vec_dot(t, n, row, a);
}

void rf_dot_tile_by_rows(rf_dot_rows_fn dot_rows, rf_type t, int64_t n, int64_t n_rows,
                         const void *w, size_t w_stride, int64_t n_tok, const void *a,
                         size_t a_stride, float *out, int64_t out_stride) {
    for (int64_t r = 0; r < n_rows; r += 16) {
        const int64_t nr = n_rows - r < 16 ? n_rows - r : 16;
        for (int64_t j = 0; j < n_tok; j++)
            dot_rows(t, n, nr, (const uint8_t *)w + (size_t)r * w_stride, w_stride,
                     (const uint8_t *)a + (size_t)j * a_stride, out + j * out_stride + r);
    }
}

static void scalar_dot_tile(rf_type t, int64_t n, int64_t n_rows, const void *w, size_t w_stride,
                            int64_t n_tok, const void *a, size_t a_stride, float *out,
                            int64_t out_stride) {
    rf_dot_tile_by_rows(scalar_dot_rows, t, n, n_rows, w, w_stride, n_tok, a, a_stride, out,
                        out_stride);
}

const rf_kernels rf_kernels_scalar = {
    .isa = RF_ISA_SCALAR,
    .quantize_act = scalar_quantize_act,
    .dot_rows = scalar_dot_rows,
    .dot_tile = scalar_dot_tile,
    .dequantize_row = rf_ref_dequantize_row,
    .dot_f32_f16 = rf_scalar_dot_f32_f16,
    .axpy_f16 = rf_scalar_axpy_f16,
    .cvt_f16_f32 = rf_scalar_cvt_f16_f32,
    .dot_f32 = rf_scalar_dot_f32,
    .axpy_f32 = rf_scalar_axpy_f32,
    .dot_f32_f16_rows = rf_scalar_dot_f32_f16_rows,
    .axpy_f16_rows = rf_scalar_axpy_f16_rows,
    .exp_sum = rf_scalar_exp_sum,
    .geglu = rf_scalar_geglu,
    .swiglu = rf_scalar_swiglu,
    .read_sum = rf_scalar_read_sum,
};

/* The SIMD tables need their level's features; AVX-512 needs AVX2/FMA/F16C as well (its table
 * uses them for tails and conversions). VNNI picks the variant with VPDPBUSD, and AVX512_BF16 on
 * top of it the one that computes BF16 weights in BF16 (every CPU with AVX512_BF16 so far has
 * VNNI: Cooper Lake, Sapphire Rapids, Zen 4). */
const rf_kernels *rf_kernels_get(rf_isa isa) {
    if (isa == RF_ISA_SCALAR) return &rf_kernels_scalar;
#if defined(__x86_64__)
    const rf_cpu_features f = rf_cpu_detect();
    const int avx2 = f.avx2 && f.fma && f.f16c;
    if (isa == RF_ISA_AVX2) return avx2 ? &rf_kernels_avx2 : NULL;
    if (isa == RF_ISA_AVX512) {
        if (!(avx2 && f.avx512f && f.avx512bw && f.avx512vl)) return NULL;
        if (!f.avx512vnni) return &rf_kernels_avx512;
        return f.avx512bf16 ? &rf_kernels_avx512bf16 : &rf_kernels_avx512vnni;
    }
#endif
#if defined(__aarch64__)
    if (isa == RF_ISA_NEON) return &rf_kernels_neon;
#endif
    return NULL;
}

const rf_kernels *rf_kernels_best(void) {
    for (int isa = rf_isa_best(); isa > RF_ISA_SCALAR; isa--) {
        const rf_kernels *k = rf_kernels_get((rf_isa)isa);
        if (k) return k;
    }
    return &rf_kernels_scalar;
}
