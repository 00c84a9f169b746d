/* widen_bench.c: what the widened matmul path (--widen, docs/kernels.md) costs per weight byte
 * on one core, against the native integer kernel, for the formats of the precision study.
 *
 * For each format: a matrix of `rows` x `cols` (random quants, sane scales) that stays in L2
 * (the compute ceiling, which is what decides once the native path reaches the bandwidth) and one
 * of ~128 MB that streams from DRAM. Per matrix, with the best kernel table this CPU runs:
 *  - native:   dot_rows on 16-row tiles (rf_matmul's per-thread loop) against Q8 activations;
 *  - widened:  per row, dequantize_row into a float row, then dot_f32 with f32 activations
 *              (exactly the widened path's inner loop, kernels/matmul.c);
 *  - decode:   dequantize_row alone (the part the widened path adds).
 * Figures: GB/s of weight bytes (1e9 bytes per second), median of `reps` timed passes after a
 * warm-up; widened/native is the slowdown per byte read.
 *
 * Usage: widen_bench [reps]   (default 5)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/types.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "util/clock.h"
#include "util/half.h"
#include "util/stats.h"

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void *xalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* Random floats quantized row by row with the reference encoder: valid blocks of every format. */
static void fill(rf_type t, uint8_t *w, int64_t rows, int64_t cols, uint64_t *s) {
    float *x = xalloc((size_t)cols * sizeof *x);
    const size_t rb = rf_type_row_bytes((uint32_t)t, (uint64_t)cols);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < cols; i++)
            x[i] = (float)((double)(rng(s) >> 11) / 9007199254740992.0 * 2 - 1);
        rf_ref_quantize_row(t, x, w + (size_t)r * rb, cols);
    }
    free(x);
}

static volatile float g_sink;

/* mode 0 native, 1 widened, 2 decode only; returns GB/s of weight bytes */
static double pass(const rf_kernels *k, int mode, rf_type t, const uint8_t *w, int64_t rows,
                   int64_t cols, const void *aq, const float *af, float *row, float *out) {
    const size_t rb = rf_type_row_bytes((uint32_t)t, (uint64_t)cols);
    const int64_t t0 = rf_now_ns();
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int64_t nr = rows - r0 < 16 ? rows - r0 : 16;
        const uint8_t *wr = w + (size_t)r0 * rb;
        if (mode == 0) {
            k->dot_rows(t, cols, nr, wr, rb, aq, out);
            continue;
        }
        for (int64_t i = 0; i < nr; i++, wr += rb) {
            k->dequantize_row(t, wr, row, cols);
            if (mode == 1) out[i] = k->dot_f32(row, af, (int)cols);
        }
        if (mode == 2) out[0] = row[0];
    }
    g_sink = out[0];
    return (double)rb * (double)rows / (double)(rf_now_ns() - t0);
}

int main(int argc, char **argv) {
    const int reps = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 5;
    const rf_kernels *k = rf_kernels_best();
    static const rf_type types[] = {RF_TYPE_Q4_0, RF_TYPE_Q5_0, RF_TYPE_Q8_0, RF_TYPE_Q4_K,
                                    RF_TYPE_Q6_K, RF_TYPE_F16,  RF_TYPE_BF16};
    const int64_t cols = 4864 / 256 * 256; /* Qwen2.5 0.5B's ffn_down width, cut to K-blocks */
    printf("kernels %s, one thread, rows of %lld values, GB/s of weight bytes (median of %d)\n",
           rf_isa_name(k->isa), (long long)cols, reps);
    printf("%-5s %-7s %9s %9s %9s %10s\n", "type", "matrix", "native", "widened", "decode",
           "wide/nat");
    uint64_t seed = 7;
    float *af = xalloc((size_t)cols * sizeof *af), *row = xalloc((size_t)cols * sizeof *row);
    float out[16];
    for (int64_t i = 0; i < cols; i++)
        af[i] = (float)((double)(rng(&seed) >> 11) / 9007199254740992.0 * 2 - 1);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const rf_type t = types[ti];
        const rf_type at = rf_vec_dot_type(t);
        void *aq = xalloc(rf_type_row_bytes((uint32_t)at, (uint64_t)cols));
        k->quantize_act(at, af, aq, cols);
        const size_t rb = rf_type_row_bytes((uint32_t)t, (uint64_t)cols);
        const int64_t shapes[2] = {(int64_t)((256 << 10) / rb) + 1, (int64_t)((128 << 20) / rb)};
        static const char *const names[2] = {"L2", "DRAM"};
        for (int m = 0; m < 2; m++) {
            const int64_t rows = shapes[m];
            uint8_t *w = xalloc((size_t)rows * rb);
            fill(t, w, rows, cols, &seed);
            double g[3];
            for (int mode = 0; mode < 3; mode++) {
                double v[64];
                const int n = reps < 64 ? reps : 64;
                pass(k, mode, t, w, rows, cols, aq, af, row, out);
                for (int r = 0; r < n; r++)
                    v[r] = pass(k, mode, t, w, rows, cols, aq, af, row, out);
                g[mode] = rf_median(v, (size_t)n);
            }
            printf("%-5s %-7s %9.2f %9.2f %9.2f %9.2fx\n", rf_type_get((uint32_t)t)->name, names[m],
                   g[0], g[1], g[2], g[0] / g[1]);
            free(w);
        }
        free(aq);
    }
    free(af);
    free(row);
    return 0;
}
