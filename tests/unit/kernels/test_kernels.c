/* test_kernels.c: the SIMD kernel tables (kernels_avx2.c, kernels_avx512.c, kernels_neon.c) against
 * the scalar reference table.
 *
 * `test_kernels` checks avx2 (NEON on AArch64); `test_kernels avx512`, `test_kernels avx512vnni`
 * and `test_kernels avx512bf16` (the CTest tests test_kernels_avx512, _avx512vnni, _avx512bf16)
 * check one AVX-512 table each, and exit 77 when the CPU lacks it, so CTest's summary lists them as
 * skipped instead of passing them (QEMU's TCG, 7.2, does not emulate AVX-512; Intel SDE would: run
 * `sde64 -icx -- test_kernels avx512vnni`, `sde64 -spr -- test_kernels avx512bf16`). A lower table
 * is forced on a higher CPU, so every path this machine can execute is checked. For each table:
 *  1. quantize_act, byte for byte against rf_ref_quantize_row, for Q8_0, Q8_1, Q8_K, F16, BF16
 *     and F32 on random rows, wide dynamic ranges, exact rounding ties, zero blocks, equal |x|
 *     with both signs (Q8_K's first-wins rule), constant blocks, subnormals, inf and NaN.
 *  2. dot_rows for every computable weight type, against the scalar table row by row:
 *     rows of 1, 2, 3, 4, 7, 8 and 20 blocks (float types: 1..2048 values, tails included),
 *     n_rows 1..37, two row strides, and weight rows that are random bit patterns (with sane
 *     fp16 scales), quantized random floats, zero scales, max/min quants, negative scales and
 *     constant rows. Tolerance: |fast - ref| <= 1e-5 * sum_i |w_i * a_i| (integer parts are exact;
 *     only float accumulation order differs). The max relative error seen is printed per type
 *     and table.
 *  3. dot_tile (rows x tokens) for the same types against the scalar table's dot_rows token by
 *     token, same tolerance: n_tok in {1, 2, 3, 4, 5, 7, 8, 13, 16, 33, 136} x n_rows 1..37 for two
 *     weight patterns, a sparser cross for the others; rows long enough to span the kernels'
 *     column segments; odd weight, activation and output strides (rows at unaligned addresses;
 *     the scalar table and the reference, which read blocks as structs, get aligned copies),
 *     with sentinels between and after the output rows. Every result must also have exactly the
 *     bits the same table's dot_rows gives that token alone (batch invariance: a sequence's
 *     logits do not depend on what else is in the batch). The scalar table's own dot_tile is
 *     checked the same way.
 *  4. The vector pieces (dot, axpy, f16 conversion, exp_sum, GeGLU, SwiGLU, read_sum) against the
 *     scalar ones: exact, or within one rounding, or (exp_sum, SwiGLU: polynomial exp) within a
 *     few ulp; the attention row kernels (every table, scalar included) give exactly the bits of
 *     that table's dot_f32/axpy_f32 on widened rows, and the scalar results within one rounding.
 *  5. dequantize_row (the widened matmul path's decoder) for every computable weight type and
 *     every weight pattern, rows of several lengths at odd addresses (the SIMD tables):
 * bit-identical to rf_ref_dequantize_row (NaN where the reference gives NaN), no write past the
 * row.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/types.h"
#include "util/cpu.h"
#include "util/half.h"

#define DOT_TOL  1e-5 /* relative to sum |w_i * a_i| */
#define MAX_ROWS 37

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static size_t row_bytes(rf_type t, int64_t n) {
    return rf_type_row_bytes((uint32_t)t, (uint64_t)n);
}

typedef struct table {
    const char *name;
    const rf_kernels *k;
} table;

/* ------------------------------------------------------------------------------------------ */
/* 1. quantize_act                                                                             */
/* ------------------------------------------------------------------------------------------ */

enum { QX_RANDOM, QX_WIDE, QX_TIES, QX_ZERO, QX_EQUAL_ABS, QX_CONST, QX_SPECIAL, QX_COUNT };

/* Fills x[0..n) with pattern `mode` (block = 32 or 256: the activation's block, 1 for floats). */
static void fill_act_input(int mode, float *x, int64_t n, int64_t block, uint64_t *s) {
    for (int64_t i = 0; i < n; i++) x[i] = rng_sym(s);
    switch (mode) {
    case QX_RANDOM:
        break;
    case QX_WIDE: /* magnitudes 2^-40 .. 2^40, per element */
        for (int64_t i = 0; i < n; i++) x[i] *= (float)ldexp(1.0, (int)(rng_next(s) % 81) - 40);
        break;
    case QX_TIES: /* amax 127 per block -> multipliers exactly +-1: every x.5 is a tie */
        for (int64_t i = 0; i < n; i++) x[i] = (float)((int)(rng_next(s) % 253) - 126) + 0.5f;
        for (int64_t b = 0; b + block <= n && block > 1; b += block)
            x[b + (int64_t)(rng_next(s) % (uint64_t)block)] = (rng_next(s) & 1) ? 127.0f : -127.0f;
        break;
    case QX_ZERO: /* every other block zero, one block of -0.0 */
        for (int64_t b = 0; b < n; b += 2 * block)
            for (int64_t i = b; i < b + block && i < n; i++)
                x[i] = (b / (2 * block)) % 2 ? -0.0f : 0.0f;
        break;
    case QX_EQUAL_ABS: /* the largest |x| twice with both signs, in random order */
        for (int64_t b = 0; b + block <= n && block > 1; b += block) {
            const int64_t i = b + (int64_t)(rng_next(s) % (uint64_t)block);
            int64_t j = b + (int64_t)(rng_next(s) % (uint64_t)block);
            if (j == i) j = b + (i - b + 1) % block;
            const float m = 2.0f + rng_sym(s);
            x[i] = (rng_next(s) & 1) ? m : -m;
            x[j] = -x[i];
        }
        break;
    case QX_CONST:
        for (int64_t i = 0; i < n; i++) x[i] = (i / (block > 1 ? block : 16)) % 2 ? -0.37f : 3.0f;
        break;
    case QX_SPECIAL: { /* NaN, inf, subnormals, huge values sprinkled; one all-subnormal block */
        const float sp[] = {NAN,   -NAN,   INFINITY, -INFINITY, 1e-40f, -3e-41f, 1.5e-45f,
                            3e38f, -3e38f, 65504.0f, 65520.0f,  1e-8f,  6.0e-8f, -0.0f};
        const int nsp = (int)(sizeof sp / sizeof sp[0]);
        for (int64_t i = 0; i < n; i++)
            if (rng_next(s) % 5 == 0) x[i] = sp[rng_next(s) % (uint64_t)nsp];
        if (n >= 2 * block && block > 1)
            for (int64_t i = 0; i < block; i++) x[i] = rng_sym(s) * 1e-40f;
        break;
    }
    default:
        break;
    }
}

static void test_quantize_act(const table *tb) {
    static const rf_type acts[] = {RF_TYPE_Q8_0, RF_TYPE_Q8_1, RF_TYPE_Q8_K,
                                   RF_TYPE_F16,  RF_TYPE_BF16, RF_TYPE_F32};
    static const int64_t n32[] = {32, 96, 640, 2048};
    static const int64_t nk[] = {256, 1024, 2048};
    static const int64_t nf[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 640, 2048};
    uint64_t seed = 12345;
    for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++) {
        const rf_type t = acts[ai];
        const int64_t block = rf_type_get((uint32_t)t)->block;
        const int64_t *ns = block == 32 ? n32 : block == 256 ? nk : nf;
        const size_t nn = block == 32    ? sizeof n32 / sizeof n32[0]
                          : block == 256 ? sizeof nk / sizeof nk[0]
                                         : sizeof nf / sizeof nf[0];
        int rows = 0, bad = 0;
        for (size_t ni = 0; ni < nn; ni++) {
            const int64_t n = ns[ni];
            const size_t bytes = row_bytes(t, n);
            float *x = xmalloc((size_t)n * sizeof *x);
            uint8_t *ref = xmalloc(bytes), *got = xmalloc(bytes);
            for (int mode = 0; mode < QX_COUNT; mode++) {
                for (int rep = 0; rep < 4; rep++) {
                    fill_act_input(mode, x, n, block, &seed);
                    memset(ref, 0xA5, bytes);
                    memset(got, 0x5A, bytes);
                    rf_ref_quantize_row(t, x, ref, n);
                    tb->k->quantize_act(t, x, got, n);
                    rows++;
                    if (memcmp(ref, got, bytes) != 0) {
                        size_t at = 0;
                        while (ref[at] == got[at]) at++;
                        if (bad++ < 5)
                            fprintf(stderr,
                                    "  %s quantize_act %s n=%lld mode %d: byte %zu: ref %02x got "
                                    "%02x\n",
                                    tb->name, rf_type_get((uint32_t)t)->name, (long long)n, mode,
                                    at, ref[at], got[at]);
                    }
                }
            }
            free(x);
            free(ref);
            free(got);
        }
        CHECK_MSG(bad == 0, "%s quantize_act %s: %d of %d rows differ", tb->name,
                  rf_type_get((uint32_t)t)->name, bad, rows);
        printf("  %-10s quantize_act %-5s %4d rows, %s\n", tb->name, rf_type_get((uint32_t)t)->name,
               rows, bad ? "MISMATCH" : "byte-exact");
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 2. dot_rows                                                                                 */
/* ------------------------------------------------------------------------------------------ */

enum {
    W_RANDOM_BITS,
    W_QUANTIZED,
    W_ZERO_SCALE,
    W_MAX_QUANTS,
    W_MIN_QUANTS,
    W_NEG_SCALE,
    W_CONST,
    W_COUNT
};
static const char *const w_mode_names[W_COUNT] = {
    "random-bits", "quantized", "zero-scale", "max-quants", "min-quants", "neg-scale", "constant"};

/* Offsets of the fp16 scale fields in a block of t; returns their count. */
static int scale_fields(rf_type t, int off[2]) {
    switch (t) {
    case RF_TYPE_Q4_1:
    case RF_TYPE_Q5_1:
    case RF_TYPE_Q4_K:
    case RF_TYPE_Q5_K:
        off[0] = 0;
        off[1] = 2;
        return 2;
    case RF_TYPE_Q6_K:
        off[0] = 208;
        return 1;
    default:
        off[0] = 0;
        return 1;
    }
}

static int is_float_type(rf_type t) {
    return t == RF_TYPE_F32 || t == RF_TYPE_F16 || t == RF_TYPE_BF16;
}

/* A sane random fp16 scale: sign random (or forced negative), magnitude 2^-8 .. 2^0. */
static uint16_t rand_scale(uint64_t *s, int negative) {
    float v = (float)ldexp(1.0 + 0.5 * rng_sym(s), -(int)(rng_next(s) % 9));
    if (negative || (rng_next(s) & 1)) v = -v;
    return rf_f32_to_f16(v);
}

/* One weight row of type t, n values, in pattern `mode`. */
static void fill_weight_row(rf_type t, int mode, int64_t n, uint8_t *row, uint64_t *s) {
    const size_t bytes = row_bytes(t, n);
    if (is_float_type(t)) {
        for (int64_t i = 0; i < n; i++) {
            float v = rng_sym(s);
            if (mode == W_ZERO_SCALE) v = 0.0f;
            if (mode == W_MAX_QUANTS)
                v = (i % 2 ? -1.0f : 1.0f) * (t == RF_TYPE_F16 ? 65504.0f : 1e18f);
            if (mode == W_MIN_QUANTS) v = (i % 2 ? -1.0f : 1.0f) * 6.0e-8f;
            if (mode == W_NEG_SCALE) v = -fabsf(v);
            if (mode == W_CONST) v = 0.75f;
            if (mode == W_RANDOM_BITS) v *= (float)ldexp(1.0, (int)(rng_next(s) % 21) - 10);
            if (t == RF_TYPE_F32)
                memcpy(row + 4 * i, &v, 4);
            else {
                const uint16_t h = t == RF_TYPE_F16 ? rf_f32_to_f16(v) : rf_f32_to_bf16(v);
                memcpy(row + 2 * i, &h, 2);
            }
        }
        return;
    }
    const int64_t block = rf_type_get((uint32_t)t)->block;
    const size_t bs = rf_type_get((uint32_t)t)->bytes;
    const int64_t nb = n / block;
    if (mode == W_QUANTIZED || mode == W_CONST) {
        float *x = xmalloc((size_t)n * sizeof *x);
        for (int64_t i = 0; i < n; i++) x[i] = mode == W_CONST ? -0.3f : rng_sym(s) * 2.0f;
        rf_ref_quantize_row(t, x, row, n);
        free(x);
        return;
    }
    for (size_t i = 0; i < bytes; i++) row[i] = (uint8_t)rng_next(s);
    if (mode == W_MAX_QUANTS) memset(row, 0xFF, bytes);
    if (mode == W_MIN_QUANTS) memset(row, 0x00, bytes);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = row + (size_t)b * bs;
        if (t == RF_TYPE_Q8_0 && mode == W_MAX_QUANTS)
            for (int j = 0; j < 32; j++) blk[2 + j] = j % 2 ? 0x80 : 0x7F; /* -128, 127 */
        if (t == RF_TYPE_Q8_0 && mode == W_MIN_QUANTS) memset(blk + 2, 0x80, 32);
        if (t == RF_TYPE_Q6_K && (mode == W_MAX_QUANTS || mode == W_MIN_QUANTS))
            for (int j = 0; j < 16; j++) blk[192 + j] = j % 2 ? 0x80 : 0x7F; /* scales -128, 127 */
        int off[2];
        const int nf = scale_fields(t, off);
        for (int f = 0; f < nf; f++) {
            uint16_t h = rand_scale(s, mode == W_NEG_SCALE);
            if (mode == W_ZERO_SCALE) h = (f == 0 && b % 2) ? 0x8000 : 0; /* +-0 */
            if (mode == W_MAX_QUANTS || mode == W_MIN_QUANTS) h = rf_f32_to_f16(f ? -1.0f : 1.0f);
            memcpy(blk + off[f], &h, 2);
        }
    }
}

typedef struct err_stat {
    double max_rel;
    long compared;
} err_stat;

/* One fast dot against the reference: within DOT_TOL of sum |w_i a_i| (sc)? Records the error. */
static int dot_ok(err_stat *st, double got, double ref, double sc) {
    const double d = fabs(got - ref);
    const double rel = sc > 0.0 ? d / sc : (d > 0.0 ? 1.0 : 0.0);
    if (rel > st->max_rel) st->max_rel = rel;
    st->compared++;
    return d <= DOT_TOL * sc + 1e-30;
}

/* sum_i |w_i * a_i| over a row, from the decoded values (the error scale). */
static double abs_dot(rf_type t, rf_type at, int64_t n, const uint8_t *w, const uint8_t *a,
                      float *wf, float *af) {
    rf_ref_dequantize_row(t, w, wf, n);
    rf_ref_dequantize_row(at, a, af, n);
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += fabs((double)wf[i] * (double)af[i]);
    return s;
}

static void test_dot_type(const table *tb, rf_type t, err_stat *st) {
    static const int64_t nbs[] = {1, 2, 3, 4, 7, 8, 20};
    static const int64_t nfs[] = {1, 3, 7, 8, 15, 16, 17, 20, 33, 96, 640, 2048};
    const rf_type at = rf_vec_dot_type(t);
    const int flt = is_float_type(t);
    const int64_t block = rf_type_get((uint32_t)t)->block;
    const size_t ncase = flt ? sizeof nfs / sizeof nfs[0] : sizeof nbs / sizeof nbs[0];
    uint64_t seed = 777 + (uint64_t)t;
    int reported = 0;
    for (size_t ci = 0; ci < ncase; ci++) {
        const int64_t n = flt ? nfs[ci] : nbs[ci] * block;
        const size_t rb = row_bytes(t, n);
        for (int mode = 0; mode < W_COUNT; mode++) {
            for (int pad = 0; pad < 2; pad++) {
                const size_t stride = rb + (pad ? 4 : 0);
                uint8_t *w = xmalloc(stride * MAX_ROWS);
                memset(w, 0xCD, stride * MAX_ROWS);
                for (int r = 0; r < MAX_ROWS; r++)
                    fill_weight_row(t, mode, n, w + r * stride, &seed);
                /* activation: random, with a zero first block in some cases */
                float *x = xmalloc((size_t)n * sizeof *x);
                for (int64_t i = 0; i < n; i++) x[i] = rng_sym(&seed);
                if (mode == W_CONST)
                    for (int64_t i = 0; i < n; i++) x[i] = 0.5f;
                if (pad && n > block && !flt)
                    for (int64_t i = 0; i < block; i++) x[i] = 0.0f;
                uint8_t *a = xmalloc(row_bytes(at, n));
                rf_ref_quantize_row(at, x, a, n);
                float ref[MAX_ROWS], got[MAX_ROWS + 1], scale[MAX_ROWS];
                float *wf = xmalloc((size_t)n * sizeof *wf), *af = xmalloc((size_t)n * sizeof *af);
                rf_kernels_scalar.dot_rows(t, n, MAX_ROWS, w, stride, a, ref);
                for (int r = 0; r < MAX_ROWS; r++)
                    scale[r] = (float)abs_dot(t, at, n, w + r * stride, a, wf, af);
                for (int nr = 1; nr <= MAX_ROWS; nr++) {
                    /* rows [first, first + nr) so later calls start mid-buffer */
                    const int first = (MAX_ROWS - nr) / 2;
                    got[nr] = 12345.0f; /* sentinel: must survive */
                    tb->k->dot_rows(t, n, nr, w + (size_t)first * stride, stride, a, got);
                    CHECK(got[nr] == 12345.0f);
                    for (int r = 0; r < nr; r++) {
                        const double sc = scale[first + r];
                        const int ok = dot_ok(st, got[r], ref[first + r], sc);
                        if (!ok && reported++ < 5)
                            fprintf(stderr,
                                    "  %s dot %s n=%lld %s pad=%d nr=%d row %d: ref %.9g got %.9g "
                                    "(sum|wa| %.6g)\n",
                                    tb->name, rf_type_get((uint32_t)t)->name, (long long)n,
                                    w_mode_names[mode], pad, nr, first + r, (double)ref[first + r],
                                    (double)got[r], sc);
                        CHECK(ok);
                    }
                }
                free(w);
                free(x);
                free(a);
                free(wf);
                free(af);
            }
        }
    }
}

static void test_dot_rows(const table *tb) {
    static const rf_type types[] = {RF_TYPE_Q8_0, RF_TYPE_Q5_0, RF_TYPE_Q4_0, RF_TYPE_Q5_1,
                                    RF_TYPE_Q4_1, RF_TYPE_Q4_K, RF_TYPE_Q5_K, RF_TYPE_Q6_K,
                                    RF_TYPE_F16,  RF_TYPE_BF16, RF_TYPE_F32};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        err_stat st = {0.0, 0};
        const int before = g_check_failures;
        test_dot_type(tb, types[i], &st);
        printf("  %-10s dot_rows %-5s %7ld rows, max rel err %.3g%s\n", tb->name,
               rf_type_get((uint32_t)types[i])->name, st.compared, st.max_rel,
               g_check_failures != before ? "  FAIL" : "");
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 3. dot_tile                                                                                 */
/* ------------------------------------------------------------------------------------------ */

#define TILE_MAX_TOK 136

/* dot_tile for one type: weight rows of every pattern, activations TILE_MAX_TOK random rows (one
 * with a zero first block, in the W_CONST pattern all equal), odd weight, activation and output
 * strides. Every call is checked against the scalar table's dot_rows per token, and the output
 * entries between rows (out_stride > n_rows) must keep their sentinel. The full cross of
 * n_rows 1..MAX_ROWS and n_tok in tile_toks runs for two patterns and one row length; the other
 * cases take a sparser cross. Over 128 tokens the SIMD kernels work in several token chunks. */
static void test_tile_type(const table *tbs, int ntb, rf_type t, err_stat *sts) {
    static const int64_t nbs[] = {1, 3, 41}; /* 32-value formats: 41 blocks span segments */
    static const int64_t nks[] = {1, 2, 5};  /* K-quants: 5 super-blocks span segments */
    static const int64_t nfs[] = {17, 640};
    static const int tile_toks[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 33, 136};
    static const int sparse_rows[] = {1, 3, 4, 5, 16, 17, 37};
    static const int sparse_toks[] = {1, 2, 4, 5, 33, 131};
    const int ntt = (int)(sizeof tile_toks / sizeof tile_toks[0]);
    const int nsr = (int)(sizeof sparse_rows / sizeof sparse_rows[0]);
    const int nst = (int)(sizeof sparse_toks / sizeof sparse_toks[0]);
    const rf_type at = rf_vec_dot_type(t);
    const int flt = is_float_type(t);
    const int kq = rf_type_get((uint32_t)t)->block == 256;
    const int64_t block = rf_type_get((uint32_t)t)->block;
    const int64_t *ns = flt ? nfs : kq ? nks : nbs;
    const size_t ncase = flt  ? sizeof nfs / sizeof nfs[0]
                         : kq ? sizeof nks / sizeof nks[0]
                              : sizeof nbs / sizeof nbs[0];
    uint64_t seed = 999 + (uint64_t)t;
    int reported = 0;
    for (size_t ci = 0; ci < ncase; ci++) {
        const int64_t n = flt ? ns[ci] : ns[ci] * block;
        const size_t rb = row_bytes(t, n), arb = row_bytes(at, n);
        const size_t ws = rb + 3, as = arb + 5; /* odd strides: unaligned rows */
        /* the reference (and the scalar table, which reads blocks as structs) gets aligned
         * copies at strides rb and arb */
        uint8_t *w = xmalloc(ws * MAX_ROWS), *w_al = xmalloc(rb * MAX_ROWS);
        uint8_t *a = xmalloc(as * TILE_MAX_TOK), *a_al = xmalloc(arb * TILE_MAX_TOK);
        float *x = xmalloc((size_t)n * sizeof *x);
        float *wf = xmalloc((size_t)n * MAX_ROWS * sizeof *wf);
        float *af = xmalloc((size_t)n * TILE_MAX_TOK * sizeof *af);
        float *ref = xmalloc(sizeof(float) * MAX_ROWS * TILE_MAX_TOK);
        double *scale = xmalloc(sizeof(double) * MAX_ROWS * TILE_MAX_TOK);
        float *own = xmalloc(sizeof(float) * MAX_ROWS * TILE_MAX_TOK);
        const int64_t os_max = MAX_ROWS + 3;
        float *got = xmalloc(sizeof(float) * (size_t)(os_max * (TILE_MAX_TOK + 1)));
        for (int mode = 0; mode < W_COUNT; mode++) {
            memset(w, 0xCD, ws * MAX_ROWS);
            memset(a, 0xCD, as * TILE_MAX_TOK);
            for (int r = 0; r < MAX_ROWS; r++) {
                fill_weight_row(t, mode, n, w_al + r * rb, &seed);
                memcpy(w + r * ws, w_al + r * rb, rb);
                rf_ref_dequantize_row(t, w_al + r * rb, wf + r * n, n);
            }
            for (int j = 0; j < TILE_MAX_TOK; j++) {
                for (int64_t i = 0; i < n; i++) x[i] = mode == W_CONST ? 0.5f : rng_sym(&seed);
                if (j == 3 && n > block && !flt)
                    for (int64_t i = 0; i < block; i++) x[i] = 0.0f;
                rf_ref_quantize_row(at, x, a_al + j * arb, n);
                memcpy(a + j * as, a_al + j * arb, arb);
                rf_ref_dequantize_row(at, a_al + j * arb, af + j * n, n);
            }
            for (int j = 0; j < TILE_MAX_TOK; j++) {
                rf_kernels_scalar.dot_rows(t, n, MAX_ROWS, w_al, rb, a_al + j * arb,
                                           ref + j * MAX_ROWS);
                for (int r = 0; r < MAX_ROWS; r++) {
                    double s = 0.0;
                    for (int64_t i = 0; i < n; i++)
                        s += fabs((double)wf[r * n + i] * (double)af[j * n + i]);
                    scale[j * MAX_ROWS + r] = s;
                }
            }
            const int full = ci == 1 && (mode == W_RANDOM_BITS || mode == W_QUANTIZED);
            const int nrc = full ? MAX_ROWS : nsr, ntc = full ? ntt : nst;
            for (int ti_ = 0; ti_ < ntb; ti_++) {
                const table *tb = &tbs[ti_];
                err_stat *st = &sts[ti_];
                const int al = tb->k == &rf_kernels_scalar; /* aligned rows only */
                const uint8_t *tw = al ? w_al : w, *ta = al ? a_al : a;
                const size_t tws = al ? rb : ws, tas = al ? arb : as;
                /* the same table's dot_rows, token by token: dot_tile must give the same bits */
                for (int j = 0; j < TILE_MAX_TOK; j++)
                    tb->k->dot_rows(t, n, MAX_ROWS, tw, tws, ta + j * tas, own + j * MAX_ROWS);
                int differ = 0;
                for (int ri = 0; ri < nrc; ri++) {
                    const int nr = full ? ri + 1 : sparse_rows[ri];
                    const int first = (MAX_ROWS - nr) / 2;
                    for (int ti = 0; ti < ntc; ti++) {
                        const int nt = full ? tile_toks[ti] : sparse_toks[ti];
                        const int t0 = (TILE_MAX_TOK - nt) / 3; /* tokens [t0, t0 + nt) */
                        const int64_t os = nr + 3;
                        const int64_t used =
                            (int64_t)(nt + 1) * os; /* one row of sentinels after */
                        for (int64_t i = 0; i < used; i++) got[i] = 12345.0f;
                        tb->k->dot_tile(t, n, nr, tw + (size_t)first * tws, tws, nt,
                                        ta + (size_t)t0 * tas, tas, got, os);
                        int clobbered = 0;
                        for (int j = 0; j < nt; j++) {
                            for (int64_t r = nr; r < os; r++)
                                clobbered += got[j * os + r] != 12345.0f;
                            for (int r = 0; r < nr; r++) {
                                const double rv = ref[(t0 + j) * MAX_ROWS + first + r];
                                const double sc = scale[(t0 + j) * MAX_ROWS + first + r];
                                const int ok = dot_ok(st, got[j * os + r], rv, sc);
                                if (!ok && reported++ < 5)
                                    fprintf(stderr,
                                            "  %s dot_tile %s n=%lld %s nr=%d nt=%d row %d tok %d: "
                                            "ref %.9g got %.9g (sum|wa| %.6g)\n",
                                            tb->name, rf_type_get((uint32_t)t)->name, (long long)n,
                                            w_mode_names[mode], nr, nt, r, j, rv,
                                            (double)got[j * os + r], sc);
                                CHECK(ok);
                                const float ov = own[(t0 + j) * MAX_ROWS + first + r];
                                differ += memcmp(&got[j * os + r], &ov, sizeof ov) != 0;
                            }
                        }
                        for (int64_t i = (int64_t)nt * os; i < used; i++)
                            clobbered += got[i] != 12345.0f;
                        CHECK_MSG(clobbered == 0,
                                  "%s dot_tile %s nr=%d nt=%d: %d entries outside the "
                                  "output written",
                                  tb->name, rf_type_get((uint32_t)t)->name, nr, nt, clobbered);
                    }
                }
                CHECK_MSG(differ == 0,
                          "%s dot_tile %s n=%lld %s: %d results differ from dot_rows' bits",
                          tb->name, rf_type_get((uint32_t)t)->name, (long long)n,
                          w_mode_names[mode], differ);
            }
        }
        free(w);
        free(w_al);
        free(a);
        free(a_al);
        free(x);
        free(wf);
        free(af);
        free(ref);
        free(scale);
        free(own);
        free(got);
    }
}

/* The tables share the reference results of each case. */
static void test_dot_tile(const table *tbs, int ntb) {
    static const rf_type types[] = {RF_TYPE_Q8_0, RF_TYPE_Q5_0, RF_TYPE_Q4_0, RF_TYPE_Q5_1,
                                    RF_TYPE_Q4_1, RF_TYPE_Q4_K, RF_TYPE_Q5_K, RF_TYPE_Q6_K,
                                    RF_TYPE_F16,  RF_TYPE_BF16, RF_TYPE_F32};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        err_stat st[4] = {{0.0, 0}, {0.0, 0}, {0.0, 0}, {0.0, 0}};
        const int before = g_check_failures;
        test_tile_type(tbs, ntb, types[i], st);
        for (int k = 0; k < ntb; k++)
            printf("  %-10s dot_tile %-5s %7ld dots, max rel err %.3g%s\n", tbs[k].name,
                   rf_type_get((uint32_t)types[i])->name, st[k].compared, st[k].max_rel,
                   g_check_failures != before ? "  FAIL" : "");
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Vector pieces (attention, FFN, bandwidth yardstick) against the scalar ones                */
/* ------------------------------------------------------------------------------------------ */

/* |fast - ref| <= tol * scale, reporting the first failure */
static int near(double fast, double ref, double scale, double tol, const char *what, const char *tb,
                int n) {
    if (fabs(fast - ref) <= tol * (scale > 0 ? scale : 1e-30)) return 1;
    CHECK_MSG(0, "%s %s n=%d: %.9g vs scalar %.9g", tb, what, n, fast, ref);
    return 0;
}

static void test_vec(const table *tb) {
    static const int lens[] = {0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 64, 100, 257, 1024};
    enum { N = 1024 };
    float *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y), *r1 = xmalloc(N * sizeof *r1),
          *r2 = xmalloc(N * sizeof *r2);
    uint16_t *h = xmalloc(N * sizeof *h), *gt = xmalloc(65536 * sizeof *gt);
    rf_gelu_table(gt);
    uint64_t rng = 0x5eed;
    const rf_kernels *k = tb->k, *ref = &rf_kernels_scalar;
    int ok = 1;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0] && ok; li++) {
        const int n = lens[li];
        double sxy = 0, sxh = 0;
        for (int i = 0; i < N; i++) {
            x[i] = rng_sym(&rng) * 4.0f;
            y[i] = rng_sym(&rng) * 4.0f;
            h[i] = rf_f32_to_f16(rng_sym(&rng) * 8.0f);
        }
        for (int i = 0; i < n; i++) {
            sxy += fabs((double)x[i] * y[i]);
            sxh += fabs((double)x[i] * rf_f16_to_f32(h[i]));
        }
        ok &= near(k->dot_f32(x, y, n), ref->dot_f32(x, y, n), sxy, 1e-6, "dot_f32", tb->name, n);
        ok &= near(k->dot_f32_f16(x, h, n), ref->dot_f32_f16(x, h, n), sxh, 1e-6, "dot_f32_f16",
                   tb->name, n);
        memcpy(r1, y, N * sizeof *y);
        memcpy(r2, y, N * sizeof *y);
        k->axpy_f32(r1, x, 0.37f, n);
        ref->axpy_f32(r2, x, 0.37f, n);
        for (int i = 0; i < N && ok; i++) /* one fma vs mul+add: one rounding apart */
            ok &= near(r1[i], r2[i], fabs(y[i]) + fabs(0.37 * x[i]), 1e-6, "axpy_f32", tb->name, n);
        memcpy(r1, y, N * sizeof *y);
        memcpy(r2, y, N * sizeof *y);
        k->axpy_f16(r1, h, -1.25f, n);
        ref->axpy_f16(r2, h, -1.25f, n);
        for (int i = 0; i < N && ok; i++)
            ok &= near(r1[i], r2[i], fabs(y[i]) + fabs(1.25 * rf_f16_to_f32(h[i])), 1e-6,
                       "axpy_f16", tb->name, n);
        k->cvt_f16_f32(h, r1, n);
        ref->cvt_f16_f32(h, r2, n);
        const int cvt_ok = memcmp(r1, r2, (size_t)n * sizeof *r1) == 0;
        CHECK_MSG(cvt_ok, "%s cvt_f16_f32 n=%d", tb->name, n);
        ok &= cvt_ok;
        /* softmax numerators: a max, a -inf (masked key), values up to 30 below the max */
        for (int i = 0; i < n; i++) r1[i] = r2[i] = -30.0f * (rng_sym(&rng) * 0.5f + 0.5f);
        if (n > 2) r1[1] = r2[1] = -INFINITY;
        const float s1 = k->exp_sum(r1, n, 0.0f), s2 = ref->exp_sum(r2, n, 0.0f);
        ok &= near(s1, s2, s2, 1e-5, "exp_sum (sum)", tb->name, n);
        for (int i = 0; i < n && ok; i++)
            ok &= near(r1[i], r2[i], r2[i], 1e-5, "exp_sum (value)", tb->name, n);
        if (n > 2) {
            CHECK_MSG(r1[1] == 0.0f, "%s exp_sum: exp(-inf) = %g", tb->name, r1[1]);
            ok &= r1[1] == 0.0f;
        }
        for (int i = 0; i < n; i++) x[i] = rng_sym(&rng) * 12.0f; /* beyond the +-10 clamps */
        k->geglu(gt, x, y, r1, n);
        ref->geglu(gt, x, y, r2, n);
        const int geglu_ok = memcmp(r1, r2, (size_t)n * sizeof *r1) == 0;
        CHECK_MSG(geglu_ok, "%s geglu n=%d", tb->name, n);
        ok &= geglu_ok;
        /* SwiGLU: a polynomial exp against expf, within 2e-6 relative; gates out to +-100 (where
         * exp(-g) overflows or vanishes), ties of sign at 0 */
        for (int i = 0; i < n; i++) {
            const float big[] = {-100.0f, -88.5f, -87.5f, 87.5f, 88.5f, 100.0f, 0.0f, -0.0f};
            x[i] = i % 7 == 3 ? big[(i / 7) % 8] : rng_sym(&rng) * 20.0f;
        }
        k->swiglu(x, y, r1, n);
        ref->swiglu(x, y, r2, n);
        for (int i = 0; i < n && ok; i++)
            ok &= near(r1[i], r2[i], fabs(r2[i]) + 1e-24, 2e-6, "swiglu", tb->name, n);
    }
    /* read_sum: 64-byte multiples, aligned */
    uint64_t *buf = NULL;
    CHECK(posix_memalign((void **)&buf, 64, 4096) == 0);
    for (int i = 0; buf && i < 512; i++) buf[i] = rng_next(&rng);
    for (size_t nb = 64; buf && nb <= 4096; nb *= 2)
        CHECK_MSG(k->read_sum(buf, nb) == ref->read_sum(buf, nb), "%s read_sum %zu bytes", tb->name,
                  nb);
    free(buf);
    printf("  %-10s vector pieces (dot, axpy, f16, exp_sum, geglu, swiglu, read_sum): %s\n",
           tb->name, ok ? "agree" : "DIFFER");
    free(x), free(y), free(r1), free(r2), free(h), free(gt);
}

/* The attention row kernels: every result has exactly the bits of the same table's dot_f32 /
 * axpy_f32 on the widened row (so the cache can be read in runs without changing any logit), and
 * agrees with the scalar table within one rounding per term. Row lengths around the 8/32/64-value
 * blocks, 1..64 rows, padded strides. */
static void test_att_rows(const table *tb) {
    static const int dims[] = {1, 3, 8, 16, 31, 32, 63, 64, 65, 72, 128, 200, 256};
    static const int nrows[] = {1, 2, 5, 64};
    enum { MAXD = 256, MAXR = 64, PAD = 5 };
    uint16_t *h = xmalloc((size_t)MAXR * (MAXD + PAD) * sizeof *h);
    float *x = xmalloc(MAXD * sizeof *x), *w = xmalloc(MAXD * sizeof *w);
    float *acc1 = xmalloc(MAXD * sizeof *acc1), *acc2 = xmalloc(MAXD * sizeof *acc2);
    float *acc3 = xmalloc(MAXD * sizeof *acc3), *a = xmalloc(MAXR * sizeof *a);
    float o1[MAXR], o2[MAXR];
    uint64_t rng = 0xa77e;
    const rf_kernels *k = tb->k, *ref = &rf_kernels_scalar;
    int exact = 1, ok = 1;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t ri = 0; ri < sizeof nrows / sizeof nrows[0]; ri++)
            for (int pad = 0; pad < 2; pad++) {
                const int d = dims[di], nr = nrows[ri];
                const size_t stride = (size_t)d + (pad ? PAD : 0);
                for (size_t i = 0; i < (size_t)nr * stride; i++)
                    h[i] = rf_f32_to_f16(rng_sym(&rng) * 8.0f);
                for (int i = 0; i < d; i++) {
                    x[i] = rng_sym(&rng) * 4.0f;
                    acc1[i] = acc2[i] = acc3[i] = rng_sym(&rng);
                }
                for (int j = 0; j < nr; j++) a[j] = rng_sym(&rng) * 0.5f + 0.5f;
                k->dot_f32_f16_rows(x, h, stride, nr, d, o1);
                ref->dot_f32_f16_rows(x, h, stride, nr, d, o2);
                k->axpy_f16_rows(acc1, h, stride, a, nr, d);
                ref->axpy_f16_rows(acc3, h, stride, a, nr, d);
                for (int j = 0; j < nr; j++) {
                    k->cvt_f16_f32(h + (size_t)j * stride, w, d);
                    const float want = k->dot_f32(x, w, d);
                    exact &= memcmp(&o1[j], &want, sizeof want) == 0;
                    k->axpy_f32(acc2, w, a[j], d);
                    double sc = 0;
                    for (int i = 0; i < d; i++) sc += fabs((double)x[i] * w[i]);
                    ok &= near(o1[j], o2[j], sc, 1e-6, "dot_f32_f16_rows", tb->name, d);
                }
                exact &= memcmp(acc1, acc2, (size_t)d * sizeof *acc1) == 0;
                for (int i = 0; i < d; i++) {
                    double sc = fabs((double)acc3[i]) + 1.0; /* |acc| <= 1 + sum a_j |h_ij| */
                    for (int j = 0; j < nr; j++)
                        sc += a[j] * fabs((double)rf_f16_to_f32(h[(size_t)j * stride + i]));
                    ok &= near(acc1[i], acc3[i], sc, 1e-6, "axpy_f16_rows", tb->name, d);
                }
            }
    CHECK_MSG(exact, "%s attention row kernels differ from dot_f32/axpy_f32 on the widened rows",
              tb->name);
    printf("  %-10s attention rows (dot_f32_f16_rows, axpy_f16_rows): %s, %s\n", tb->name,
           exact ? "the bits of dot_f32/axpy_f32" : "NOT EXACT", ok ? "agree" : "DIFFER");
    free(h), free(x), free(w), free(acc1), free(acc2), free(acc3), free(a);
}

/* ------------------------------------------------------------------------------------------ */
/* Selection                                                                                   */
/* ------------------------------------------------------------------------------------------ */
/* 5. dequantize_row                                                                           */
/* ------------------------------------------------------------------------------------------ */

static void test_dequantize(const table *tb) {
    static const rf_type types[] = {RF_TYPE_Q8_0, RF_TYPE_Q5_0, RF_TYPE_Q4_0, RF_TYPE_Q5_1,
                                    RF_TYPE_Q4_1, RF_TYPE_Q4_K, RF_TYPE_Q5_K, RF_TYPE_Q6_K,
                                    RF_TYPE_F16,  RF_TYPE_BF16, RF_TYPE_F32};
    static const int64_t blocks[] = {1, 2, 3, 7};
    uint64_t seed = 0x5eed0de9ull;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const rf_type t = types[ti];
        const int64_t block = is_float_type(t) ? 8 : rf_type_get((uint32_t)t)->block;
        long compared = 0, bad = 0;
        for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
            /* float rows also get a tail that is no multiple of 8 */
            const int64_t n = blocks[bi] * block + (is_float_type(t) ? (int64_t)bi : 0);
            const size_t rb = row_bytes(t, n);
            uint8_t *al = xmalloc(rb), *odd = xmalloc(rb + 2);
            float *ref = xmalloc((size_t)n * sizeof *ref), *got = xmalloc(((size_t)n + 1) * 4);
            for (int mode = 0; mode < W_COUNT; mode++) {
                fill_weight_row(t, mode, n, al, &seed);
                memcpy(odd + 2, al, rb);
                rf_ref_dequantize_row(t, al, ref, n);
                const float sentinel = -12345.5f;
                got[n] = sentinel;
                /* 2 bytes past malloc's 16-byte alignment: no vector load is aligned, the fp16
                 * fields are (block sizes are even, so a model's rows always are) */
                tb->k->dequantize_row(t, odd + 2, got, n);
                for (int64_t i = 0; i < n; i++) {
                    const int same =
                        memcmp(&ref[i], &got[i], 4) == 0 || (isnan(ref[i]) && isnan(got[i]));
                    bad += !same;
                    if (!same && bad <= 3)
                        CHECK_MSG(0, "%s dequantize %s %s n=%lld: value %lld is %.9g, ref %.9g",
                                  tb->name, rf_type_get((uint32_t)t)->name, w_mode_names[mode],
                                  (long long)n, (long long)i, got[i], ref[i]);
                }
                CHECK_MSG(got[n] == sentinel, "%s dequantize %s wrote past the row", tb->name,
                          rf_type_get((uint32_t)t)->name);
                compared += n;
            }
            free(al), free(odd), free(ref), free(got);
        }
        CHECK(bad == 0);
        printf("  %-10s dequantize %-5s %7ld values, %s\n", tb->name,
               rf_type_get((uint32_t)t)->name, compared, bad ? "MISMATCH" : "bit-exact");
    }
}

/* ------------------------------------------------------------------------------------------ */

static void test_selection(void) {
    const rf_kernels *best = rf_kernels_best();
    CHECK(best != NULL);
    CHECK(rf_kernels_get(RF_ISA_SCALAR) == &rf_kernels_scalar);
    const rf_isa want = rf_isa_best();
    CHECK_MSG(best->isa == want || rf_kernels_get(want) == NULL, "best %s, cpu %s",
              rf_isa_name(best->isa), rf_isa_name(want));
    for (int isa = RF_ISA_SCALAR; isa <= RF_ISA_NEON; isa++) {
        const rf_kernels *k = rf_kernels_get((rf_isa)isa);
        if (k) CHECK(k->isa == (rf_isa)isa);
        if (isa > (int)want) CHECK(k == NULL); /* never hand out what the CPU lacks */
    }
}

/* Exit status 77 (skipped) with the reason. */
static int skip(const char *why) {
    printf("skipped: %s\n", why);
    return check_summary("test_kernels") ? 1 : 77;
}

int main(int argc, char **argv) {
    /* "avx512", "avx512vnni" or "avx512bf16": that table alone */
    const char *only = argc > 1 ? argv[1] : NULL;
    test_selection();
    table tables[4];
    int nt = 0;
    const rf_cpu_features f = rf_cpu_detect();
    (void)f;
    if (only && strcmp(only, "avx512") && strcmp(only, "avx512vnni") && strcmp(only, "avx512bf16"))
        return fprintf(stderr, "test_kernels: unknown table '%s'\n", only), 2;
#if defined(__x86_64__)
    if (!only) {
        if (rf_kernels_get(RF_ISA_AVX2))
            tables[nt++] = (table){"avx2", rf_kernels_get(RF_ISA_AVX2)};
        else
            printf("  avx2: skipped (CPU lacks AVX2/FMA/F16C)\n");
    } else if (!rf_kernels_get(RF_ISA_AVX512)) {
        return skip("the CPU lacks AVX-512 F/BW/VL");
    } else if (!strcmp(only, "avx512")) {
        CHECK(rf_kernels_get(RF_ISA_AVX512) == (!f.avx512vnni  ? &rf_kernels_avx512
                                                : f.avx512bf16 ? &rf_kernels_avx512bf16
                                                               : &rf_kernels_avx512vnni));
        tables[nt++] = (table){"avx512", &rf_kernels_avx512};
    } else if (!f.avx512vnni) {
        CHECK(rf_kernels_get(RF_ISA_AVX512) == &rf_kernels_avx512);
        return skip("the CPU lacks AVX512-VNNI");
    } else if (!strcmp(only, "avx512vnni")) { /* forced on a BF16 CPU too: it is a fallback */
        tables[nt++] = (table){"avx512vnni", &rf_kernels_avx512vnni};
    } else if (!f.avx512bf16) {
        CHECK(rf_kernels_get(RF_ISA_AVX512) == &rf_kernels_avx512vnni);
        return skip("the CPU lacks AVX512_BF16");
    } else {
        CHECK(rf_kernels_get(RF_ISA_AVX512) == &rf_kernels_avx512bf16);
        tables[nt++] = (table){"avx512bf16", &rf_kernels_avx512bf16};
    }
#else
    if (only) return skip("AVX-512 tables exist on x86-64 only");
#endif
#if defined(__aarch64__)
    CHECK(rf_kernels_get(RF_ISA_NEON) == &rf_kernels_neon);
    tables[nt++] = (table){"neon", &rf_kernels_neon};
#endif
    /* dot_tile: the scalar table's too (a loop of its dot_rows: exact) */
    tables[nt] = (table){"scalar", &rf_kernels_scalar};
    const int with_scalar = only ? nt : nt + 1; /* the scalar table once: in the plain run */
    test_dot_tile(tables, with_scalar);
    for (int i = 0; i < with_scalar; i++) test_att_rows(&tables[i]);
    for (int i = 0; i < with_scalar; i++) test_dequantize(&tables[i]);
    if (nt == 0) return skip("no SIMD kernel table on this build/CPU");
    for (int i = 0; i < nt; i++) {
        test_vec(&tables[i]);
        test_quantize_act(&tables[i]);
        test_dot_rows(&tables[i]);
    }
    printf("  dot tolerance: |fast - ref| <= %g * sum|w_i*a_i|\n", DOT_TOL);
    return check_summary("test_kernels");
}
