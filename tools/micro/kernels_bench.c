/* kernels_bench.c: single-thread throughput of dot_rows per kernel table, against a plain
 * streaming read of the same bytes (the bandwidth ceiling one core can reach).
 *
 * Matrices (random quants, sane fp16 scales; one activation row quantized by the scalar table):
 *  - the Qwen2.5-Coder 0.5B and SmolLM2 shapes (896-wide Q5_0/Q8_0, 576/1536-wide Q4_1) besides
 *    the embedded model's;
 *  - the embedded model's shapes: the 262144 x 640 Q8_0 output head (178 MB, streams from DRAM),
 *    ffn_gate/up 2048 x 640 Q5_0, attn_output 640 x 1024 Q4_K, ffn_down 640 x 2048 Q6_K (these
 *    three fit in L2/L3 when run alone, so they show the kernels' compute ceiling);
 *  - the same row lengths with enough rows for ~178 MB ("stream"), which is what the transformer
 *    body looks like during decode (246 MB of weights per token do not stay in cache);
 *  - F16 and BF16 at Qwen's 896 width, cached and streaming (the precision study's variants).
 * dot_rows is called on 16-row tiles, as rf_matmul does (1024-row tiles measured within 2%).
 * Each figure is the median of 5 timed passes after one warm-up. GB/s counts weight bytes read;
 * "vs read" is against the plain AVX2 read of 178 MB measured at start-up (the yardstick: the
 * aim is >= 80% on the head). max|d|/ref = max |y - y_scalar| / (|y_scalar| + 1e-3) over the
 * first 4096 rows, a sanity check only (cancelling rows inflate it;
 * tests/unit/kernels/test_kernels.c checks the real tolerance).
 *
 * Tile mode (a third argument n_tok > 1): one dot_tile call over the matrix (big ones cut to
 * fewer rows) and n_tok activation rows, as rf_matmul gives each thread its rows, against the
 * per-token loop of dot_rows on TILE-row tiles it replaces; figures in GMAC/s (weight values x
 * tokens per ns) and the speed-up. The cached matrices show the compute ceiling of prefill and
 * batched decode. The last column counts outputs where the two differ at all: dot_tile must
 * give dot_rows' bits (0).
 *
 * Usage: kernels_bench [reps [filter [n_tok]]]   (reps defaults to 5; filter: only matrices whose
 * name contains it, "" for all; n_tok defaults to 1: the single-token table above)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/types.h"
#include "util/clock.h"
#include "util/cpu.h"
#include "util/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifndef TILE
#define TILE 16 /* rows per dot_rows call, as rf_matmul */
#endif

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_sym(uint64_t *s) {
    return (float)((double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static void *xalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t median(int64_t *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return v[n / 2];
}

/* Random bytes with every fp16 scale field replaced by a value in +-[2^-8, 1]; F16 and BF16
 * rows get values in (-1, 1) instead (random bits would be NaNs and subnormals). */
static void fill_weights(rf_type t, uint8_t *w, size_t bytes, uint64_t *s) {
    if (t == RF_TYPE_F16 || t == RF_TYPE_BF16) {
        for (size_t i = 0; i + 2 <= bytes; i += 2) {
            const float v = rng_sym(s);
            const uint16_t h = t == RF_TYPE_F16 ? rf_f32_to_f16(v) : rf_f32_to_bf16(v);
            memcpy(w + i, &h, 2);
        }
        return;
    }
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        const uint64_t v = rng_next(s);
        memcpy(w + i, &v, 8);
    }
    const size_t bs = rf_type_get((uint32_t)t)->bytes;
    int off[2], nf = 1;
    off[0] = 0;
    if (t == RF_TYPE_Q4_1 || t == RF_TYPE_Q5_1 || t == RF_TYPE_Q4_K || t == RF_TYPE_Q5_K) {
        off[1] = 2;
        nf = 2;
    }
    if (t == RF_TYPE_Q6_K) off[0] = 208;
    for (size_t b = 0; b + bs <= bytes; b += bs)
        for (int f = 0; f < nf; f++) {
            const uint16_t h =
                rf_f32_to_f16((float)ldexp(1.0 + 0.5 * rng_sym(s), -(int)(rng_next(s) % 9)));
            memcpy(w + b + (size_t)off[f], &h, 2);
        }
}

#if defined(__x86_64__)
static volatile uint64_t g_sink;

/* The yardstick: read every byte once with 256-bit loads (4 independent xor chains). */
__attribute__((target("avx2"))) static uint64_t read_avx2(const uint8_t *p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a0 = _mm256_xor_si256(a0, _mm256_load_si256((const __m256i *)(const void *)(p + i)));
        a1 = _mm256_xor_si256(a1, _mm256_load_si256((const __m256i *)(const void *)(p + i + 32)));
        a2 = _mm256_xor_si256(a2, _mm256_load_si256((const __m256i *)(const void *)(p + i + 64)));
        a3 = _mm256_xor_si256(a3, _mm256_load_si256((const __m256i *)(const void *)(p + i + 96)));
    }
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    uint64_t r = (uint64_t)_mm256_extract_epi64(x, 0) ^ (uint64_t)_mm256_extract_epi64(x, 3);
    for (; i < n; i++) r ^= p[i];
    return r;
}

__attribute__((target("avx512f"))) static uint64_t read_avx512(const uint8_t *p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a0 = _mm512_xor_si512(a0, _mm512_load_si512((const void *)(p + i)));
        a1 = _mm512_xor_si512(a1, _mm512_load_si512((const void *)(p + i + 64)));
    }
    uint64_t r = (uint64_t)_mm512_reduce_or_epi64(_mm512_xor_si512(a0, a1));
    for (; i < n; i++) r ^= p[i];
    return r;
}
#endif

/* Median ns of reading n bytes; 0 when the CPU lacks the instructions. */
static int64_t time_read(int wide, const uint8_t *p, size_t n, int reps) {
#if defined(__x86_64__)
    const rf_cpu_features f = rf_cpu_detect();
    if (wide ? !f.avx512f : !f.avx2) return 0;
    int64_t t[32];
    for (int k = -1; k < reps; k++) {
        const int64_t t0 = rf_now_ns();
        g_sink += wide ? read_avx512(p, n) : read_avx2(p, n);
        if (k >= 0) t[k] = rf_now_ns() - t0;
    }
    return median(t, reps);
#else
    (void)wide, (void)p, (void)n, (void)reps;
    return 0;
#endif
}

typedef struct shape {
    const char *name;
    rf_type t;
    int64_t cols, rows;
} shape;

typedef struct table {
    const char *name;
    const rf_kernels *k;
} table;

/* Median ns of one pass of dot_rows over the matrix in TILE-row tiles. */
static int64_t time_dot(const rf_kernels *k, const shape *sh, const uint8_t *w, size_t rb,
                        const void *a, float *y, int reps) {
    int64_t t[32];
    for (int rep = -1; rep < reps; rep++) {
        const int64_t t0 = rf_now_ns();
        for (int64_t r = 0; r < sh->rows; r += TILE) {
            const int64_t nr = sh->rows - r < TILE ? sh->rows - r : TILE;
            k->dot_rows(sh->t, sh->cols, nr, w + (size_t)r * rb, rb, a, y + r);
        }
        if (rep >= 0) t[rep] = rf_now_ns() - t0;
    }
    return median(t, reps);
}

/* Median ns of one pass over the matrix for n_tok tokens: one dot_tile call over all rows and
 * tokens (tile = 1, as rf_matmul gives a thread its rows), or dot_rows per TILE-row tile and
 * token (tile = 0, what rf_matmul did before dot_tile). */
static int64_t time_tile(const rf_kernels *k, int tile, const shape *sh, const uint8_t *w,
                         size_t rb, int64_t n_tok, const uint8_t *a, size_t ab, float *y,
                         int reps) {
    int64_t t[32];
    for (int rep = -1; rep < reps; rep++) {
        const int64_t t0 = rf_now_ns();
        if (tile) {
            k->dot_tile(sh->t, sh->cols, sh->rows, w, rb, n_tok, a, ab, y, sh->rows);
        } else {
            for (int64_t r = 0; r < sh->rows; r += TILE) {
                const int64_t nr = sh->rows - r < TILE ? sh->rows - r : TILE;
                for (int64_t j = 0; j < n_tok; j++)
                    k->dot_rows(sh->t, sh->cols, nr, w + (size_t)r * rb, rb, a + (size_t)j * ab,
                                y + j * sh->rows + r);
            }
        }
        if (rep >= 0) t[rep] = rf_now_ns() - t0;
    }
    return median(t, reps);
}

/* Tile mode: every matrix (the big ones with fewer rows) against n_tok tokens. */
static void run_tiles(const shape *shapes, int nshapes, const table *tables, int nt, int reps,
                      const char *filter, int64_t n_tok, uint8_t *w) {
    printf("roofline kernels_bench: dot_tile, single thread, %lld tokens, median of %d\n\n",
           (long long)n_tok, reps);
    printf("%-24s %-10s %12s %12s %8s %10s\n", "matrix", "table", "tile GMAC/s", "rows GMAC/s",
           "speedup", "differ");
    uint64_t seed = 43;
    for (int i = 0; i < nshapes; i++) {
        shape sh = shapes[i];
        if (filter && *filter && !strstr(sh.name, filter)) continue;
        const int64_t max_rows = 8192 * 64 / n_tok > 256 ? 8192 * 64 / n_tok : 256;
        if (sh.rows > max_rows) sh.rows = max_rows;
        const size_t rb = rf_type_row_bytes((uint32_t)sh.t, (uint64_t)sh.cols);
        fill_weights(sh.t, w, rb * (size_t)sh.rows, &seed);
        const rf_type at = rf_vec_dot_type(sh.t);
        const size_t ab = rf_type_row_bytes((uint32_t)at, (uint64_t)sh.cols);
        float *x = xalloc((size_t)sh.cols * sizeof *x);
        uint8_t *a = xalloc(ab * (size_t)n_tok);
        for (int64_t j = 0; j < n_tok; j++) {
            for (int64_t c = 0; c < sh.cols; c++) x[c] = rng_sym(&seed);
            rf_kernels_scalar.quantize_act(at, x, a + (size_t)j * ab, sh.cols);
        }
        float *y = xalloc((size_t)sh.rows * (size_t)n_tok * sizeof *y);
        float *yref = xalloc((size_t)sh.rows * (size_t)n_tok * sizeof *yref);
        const double macs = (double)sh.rows * (double)sh.cols * (double)n_tok;
        for (int k = 1; k < nt; k++) { /* the SIMD tables */
            const int64_t ns_rows = time_tile(tables[k].k, 0, &sh, w, rb, n_tok, a, ab, yref, reps);
            const int64_t ns_tile = time_tile(tables[k].k, 1, &sh, w, rb, n_tok, a, ab, y, reps);
            long differ = 0;
            for (int64_t j = 0; j < sh.rows * n_tok; j++)
                differ += memcmp(&y[j], &yref[j], sizeof *y) != 0;
            printf("%-24s %-10s %12.2f %12.2f %7.2fx %10ld\n", sh.name, tables[k].name,
                   macs / (double)ns_tile, macs / (double)ns_rows,
                   (double)ns_rows / (double)ns_tile, differ);
        }
        printf("\n");
        free(x);
        free(a);
        free(y);
        free(yref);
    }
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 31) reps = 5;
    const char *filter = argc > 2 && *argv[2] ? argv[2] : NULL;
    const int64_t n_tok = argc > 3 ? atoll(argv[3]) : 1;
    const int64_t stream_bytes = 178257920; /* the head's size */
    const shape shapes[] = {
        {"head Q8_0 262144x640", RF_TYPE_Q8_0, 640, 262144},
        {"ffn_up Q5_0 2048x640", RF_TYPE_Q5_0, 640, 2048},
        {"cached Q8_0 2048x640", RF_TYPE_Q8_0, 640, 2048},
        {"attn_out Q4_K 640x1024", RF_TYPE_Q4_K, 1024, 640},
        {"ffn_down Q6_K 640x2048", RF_TYPE_Q6_K, 2048, 640},
        {"stream Q5_0 x640", RF_TYPE_Q5_0, 640, stream_bytes / 440},
        {"stream Q4_K x1024", RF_TYPE_Q4_K, 1024, stream_bytes / 576},
        {"stream Q6_K x2048", RF_TYPE_Q6_K, 2048, stream_bytes / 1680},
        /* Qwen2.5-Coder 0.5B (896 wide: Q5_0/Q8_0 body, Q8_0 head) and SmolLM2 (Q4_1 body) */
        {"qwen head Q8_0 151936x896", RF_TYPE_Q8_0, 896, 151936},
        {"qwen ffn_up Q5_0 4864x896", RF_TYPE_Q5_0, 896, 4864},
        {"stream Q5_0 x896", RF_TYPE_Q5_0, 896, stream_bytes / 616},
        {"stream Q4_K x4864", RF_TYPE_Q4_K, 4864, stream_bytes / 2736},
        {"smol ffn_up Q4_1 1536x576", RF_TYPE_Q4_1, 576, 1536},
        {"stream Q4_1 x576", RF_TYPE_Q4_1, 576, stream_bytes / 360},
        {"stream Q4_1 x1536", RF_TYPE_Q4_1, 1536, stream_bytes / 960},
        {"smol head Q8_0 49152x576", RF_TYPE_Q8_0, 576, 49152},
        /* the 16-bit variants of the precision study (widened to f32, or BF16 in BF16) */
        {"qwen ffn_up F16 4864x896", RF_TYPE_F16, 896, 4864},
        {"qwen ffn_up BF16 4864x896", RF_TYPE_BF16, 896, 4864},
        {"stream F16 x896", RF_TYPE_F16, 896, stream_bytes / 1792},
        {"stream BF16 x896", RF_TYPE_BF16, 896, stream_bytes / 1792},
    };
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);

    table tables[6];
    int nt = 0;
    tables[nt++] = (table){"scalar", &rf_kernels_scalar};
#if defined(__x86_64__)
    if (rf_kernels_get(RF_ISA_AVX2)) tables[nt++] = (table){"avx2", rf_kernels_get(RF_ISA_AVX2)};
    if (rf_kernels_get(RF_ISA_AVX512)) {
        tables[nt++] = (table){"avx512", &rf_kernels_avx512};
        const rf_kernels *best = rf_kernels_get(RF_ISA_AVX512);
        if (best == &rf_kernels_avx512vnni || best == &rf_kernels_avx512bf16)
            tables[nt++] = (table){"avx512vnni", &rf_kernels_avx512vnni};
        if (best == &rf_kernels_avx512bf16)
            tables[nt++] = (table){"avx512bf16", &rf_kernels_avx512bf16};
    }
#endif

    /* One buffer big enough for every matrix; the yardstick reads the first stream_bytes. */
    size_t max_bytes = 0;
    for (int i = 0; i < nshapes; i++) {
        const size_t b = rf_type_row_bytes((uint32_t)shapes[i].t, (uint64_t)shapes[i].cols) *
                         (size_t)shapes[i].rows;
        if (b > max_bytes) max_bytes = b;
    }
    uint8_t *w = xalloc(max_bytes);
    memset(w, 0, max_bytes);
    if (n_tok > 1) {
        run_tiles(shapes, nshapes, tables, nt, reps, filter, n_tok, w);
        free(w);
        return 0;
    }
    const int64_t read2 = time_read(0, w, (size_t)stream_bytes, reps);
    const int64_t read5 = time_read(1, w, (size_t)stream_bytes, reps);
    printf("roofline kernels_bench: single thread, median of %d, cpu best isa %s\n", reps,
           rf_isa_name(rf_isa_best()));
    const double gbs_read = read2 ? (double)stream_bytes / (double)read2 : 0.0;
    if (read2) printf("plain read %.0f MB: avx2 %.2f GB/s", stream_bytes / 1e6, gbs_read);
    if (read5) printf(", avx512 %.2f GB/s", (double)stream_bytes / (double)read5);
    printf("\n\n%-24s %-10s %9s %9s %8s %10s\n", "matrix", "table", "GB/s", "ns/row", "vs read",
           "max|d|/ref");

    uint64_t seed = 42;
    for (int i = 0; i < nshapes; i++) {
        const shape *sh = &shapes[i];
        if (filter && !strstr(sh->name, filter)) continue;
        const size_t rb = rf_type_row_bytes((uint32_t)sh->t, (uint64_t)sh->cols);
        const size_t bytes = rb * (size_t)sh->rows;
        fill_weights(sh->t, w, bytes, &seed);
        const rf_type at = rf_vec_dot_type(sh->t);
        float *x = xalloc((size_t)sh->cols * sizeof *x);
        for (int64_t j = 0; j < sh->cols; j++) x[j] = rng_sym(&seed);
        void *a = xalloc(rf_type_row_bytes((uint32_t)at, (uint64_t)sh->cols));
        rf_kernels_scalar.quantize_act(at, x, a, sh->cols);
        float *y = xalloc((size_t)sh->rows * sizeof *y);
        float *yref = xalloc((size_t)sh->rows * sizeof *yref);
        const int64_t check_rows = sh->rows < 4096 ? sh->rows : 4096;
        rf_kernels_scalar.dot_rows(sh->t, sh->cols, check_rows, w, rb, a, yref);
        for (int k = 0; k < nt; k++) {
            /* the scalar table on the big matrices: fewer passes, it is only a baseline */
            const int r = (k == 0 && bytes > 16000000) ? 1 : reps;
            const int64_t ns = time_dot(tables[k].k, sh, w, rb, a, y, r);
            double maxd = 0.0;
            for (int64_t j = 0; j < check_rows; j++) {
                const double d =
                    fabs((double)y[j] - (double)yref[j]) / (fabs((double)yref[j]) + 1e-3);
                if (d > maxd) maxd = d;
            }
            const double gbs = (double)bytes / (double)ns;
            printf("%-24s %-10s %9.2f %9.1f %7.0f%% %10.2g\n", sh->name, tables[k].name, gbs,
                   (double)ns / (double)sh->rows, gbs_read > 0 ? 100.0 * gbs / gbs_read : 0.0,
                   maxd);
        }
        printf("\n");
        free(x);
        free(a);
        free(y);
        free(yref);
    }
    free(w);
    return 0;
}
