/* matmul.c: row-split matrix products over the pool. */
#include "kernels/matmul.h"

#include <math.h>
#include <string.h>

/* The fused top-k head computes its outputs in tiles of TOPK_ROWS rows x TOPK_TOK tokens. */
#define TOPK_ROWS 64
#define TOPK_TOK  16

typedef struct quant_job {
    const rf_kernels *k;
    rf_type type;
    const float *x;
    int64_t cols, x_stride, n_tok;
    rf_act *act;
} quant_job;

static void quant_worker(void *arg, int ith, int nth) {
    quant_job *j = arg;
    long b, e;
    rf_split((long)j->n_tok, ith, nth, &b, &e);
    for (long t = b; t < e; t++)
        j->k->quantize_act(j->type, j->x + t * j->x_stride,
                           (uint8_t *)j->act->data + (size_t)t * j->act->row_bytes, j->cols);
}

void rf_act_quantize(const rf_kernels *k, rf_pool *pool, rf_type type, const float *x, int64_t cols,
                     int64_t x_stride, int64_t n_tok, rf_act *act) {
    act->type = type;
    act->cols = cols;
    act->n_tok = n_tok;
    act->row_bytes = rf_type_row_bytes(type, (uint64_t)cols);
    quant_job j = {k, type, x, cols, x_stride, n_tok, act};
    if (n_tok == 1 || !pool)
        quant_worker(&j, 0, 1);
    else
        rf_pool_run(pool, quant_worker, &j);
}

typedef struct mm_job {
    const rf_kernels *k;
    const rf_weight *const *w; /* nw weights sharing the activation */
    int nw;
    const rf_act *act;
    float *const *y;
    const int64_t *y_stride;
    uint64_t total_bytes;
    const rf_widen *widen; /* NULL: the native kernels */
} mm_job;

/* out[t * out_stride + i] = dot(weight row r0 + i, activation row t0 + t) for i < nr, t < nt:
 * natively one dot_tile call, which unpacks each weight block once for all the tokens (and runs
 * dot_rows when there is one token); widened, each row decoded to floats in the thread's scratch
 * row and dotted with every token's f32 activations. */
static void tile_dot(const rf_kernels *k, const rf_widen *wd, int ith, const rf_weight *w, long r0,
                     long nr, const rf_act *act, int64_t t0, int64_t nt, float *out,
                     int64_t out_stride) {
    const uint8_t *wrow = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    const uint8_t *a = (const uint8_t *)act->data + (size_t)t0 * act->row_bytes;
    if (!wd) {
        k->dot_tile(w->type, w->cols, nr, wrow, w->row_bytes, nt, a, act->row_bytes, out,
                    out_stride);
        return;
    }
    float *row = wd->rows + (size_t)ith * (size_t)wd->cols;
    const int n = (int)w->cols;
    for (long i = 0; i < nr; i++, wrow += w->row_bytes) {
        k->dequantize_row(w->type, wrow, row, w->cols);
        for (int64_t t = 0; t < nt; t++)
            out[t * out_stride + i] =
                k->dot_f32(row, (const float *)(const void *)(a + (size_t)t * act->row_bytes), n);
    }
}

/* Rows [r0, r1) of one weight for every activation row. */
static void mm_rows(const mm_job *j, int ith, const rf_weight *w, float *y, int64_t y_stride,
                    long r0, long r1) {
    tile_dot(j->k, j->widen, ith, w, r0, r1 - r0, j->act, 0, j->act->n_tok, y + r0, y_stride);
}

/* Thread ith takes the bytes [ith*T/nth, (ith+1)*T/nth) of the weights laid end to end; a row
 * belongs to the thread whose range holds its first byte, so every row is done exactly once and
 * threads read equal amounts whatever the mix of row sizes. */
static void mm_worker(void *arg, int ith, int nth) {
    mm_job *j = arg;
    uint64_t b0 = j->total_bytes * (uint64_t)ith / (uint64_t)nth;
    uint64_t b1 = j->total_bytes * (uint64_t)(ith + 1) / (uint64_t)nth;
    uint64_t off = 0;
    for (int i = 0; i < j->nw; i++) {
        const rf_weight *w = j->w[i];
        uint64_t rb = w->row_bytes, end = off + (uint64_t)w->rows * rb;
        if (b1 > off && b0 < end) {
            uint64_t lo = b0 > off ? b0 - off : 0, hi = (b1 < end ? b1 : end) - off;
            long r0 = (long)((lo + rb - 1) / rb), r1 = (long)((hi + rb - 1) / rb);
            if (r1 > r0) mm_rows(j, ith, w, j->y[i], j->y_stride[i], r0, r1);
        }
        off = end;
    }
}

static void matmul_n(const rf_kernels *k, rf_pool *pool, const rf_weight *const *w, int nw,
                     const rf_act *act, float *const *y, const int64_t *y_stride,
                     const rf_widen *wd) {
    mm_job j = {k, w, nw, act, y, y_stride, 0, wd};
    for (int i = 0; i < nw; i++) j.total_bytes += (uint64_t)w[i]->rows * w[i]->row_bytes;
    if (!pool)
        mm_worker(&j, 0, 1);
    else
        rf_pool_run(pool, mm_worker, &j);
}

void rf_matmul_n(const rf_kernels *k, rf_pool *pool, const rf_weight *const *w, int nw,
                 const rf_act *act, float *const *y, const int64_t *y_stride) {
    matmul_n(k, pool, w, nw, act, y, y_stride, NULL);
}

void rf_matmul_n_widened(const rf_kernels *k, rf_pool *pool, const rf_weight *const *w, int nw,
                         const rf_act *x, float *const *y, const int64_t *y_stride,
                         const rf_widen *wd) {
    matmul_n(k, pool, w, nw, x, y, y_stride, wd);
}

void rf_matmul(const rf_kernels *k, rf_pool *pool, const rf_weight *w, const rf_act *act, float *y,
               int64_t y_stride) {
    rf_matmul_n(k, pool, &w, 1, act, &y, &y_stride);
}

/* ---- fused top-k ---- */

typedef struct topk_cand {
    float v;
    int32_t id;
} topk_cand;

/* a ranks below b: smaller value, or equal value and larger id */
static int topk_below(topk_cand a, topk_cand b) {
    return a.v < b.v || (a.v == b.v && a.id > b.id);
}

static void topk_sift(topk_cand *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && topk_below(h[l], h[m])) m = l;
        if (r < n && topk_below(h[r], h[m])) m = r;
        if (m == i) return;
        topk_cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Offers c to the min-heap h of at most k entries holding *n. */
static void topk_push(topk_cand *h, int32_t *n, int32_t k, topk_cand c) {
    if (*n < k) {
        int32_t i = (*n)++;
        h[i] = c;
        while (i > 0 && topk_below(h[i], h[(i - 1) / 2])) {
            topk_cand t = h[i];
            h[i] = h[(i - 1) / 2];
            h[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
    } else if (topk_below(h[0], c)) {
        h[0] = c;
        topk_sift(h, k, 0);
    }
}

typedef struct topk_job {
    const rf_kernels *k;
    const rf_weight *w;
    const rf_act *act;
    int32_t k_top;
    topk_cand *heaps; /* [nth][n_tok][k_top] */
    int32_t *counts;  /* [nth][n_tok] */
    uint32_t *worst;  /* [nth][n_tok] largest |value| bits seen: >= 0x7f800000 is Inf or NaN */
    const rf_widen *widen;
} topk_job;

#define NONFINITE_BITS 0x7f800000u /* |x| bits at or above this: an infinity or a NaN */

static inline uint32_t abs_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u & 0x7fffffffu;
}

static void topk_worker(void *arg, int ith, int nth) {
    topk_job *j = arg;
    const rf_weight *w = j->w;
    const int64_t n_tok = j->act->n_tok;
    topk_cand *heaps = j->heaps + (size_t)ith * (size_t)n_tok * (size_t)j->k_top;
    int32_t *counts = j->counts + (size_t)ith * (size_t)n_tok;
    uint32_t *worst = j->worst + (size_t)ith * (size_t)n_tok;
    for (int64_t t = 0; t < n_tok; t++) {
        counts[t] = 0;
        worst[t] = 0;
    }
    long b, e;
    rf_split((long)w->rows, ith, nth, &b, &e);
    float tile[TOPK_TOK * TOPK_ROWS];
    for (long r0 = b; r0 < e; r0 += TOPK_ROWS) {
        long nr = e - r0 < TOPK_ROWS ? e - r0 : TOPK_ROWS;
        for (int64_t t0 = 0; t0 < n_tok; t0 += TOPK_TOK) {
            int64_t nt = n_tok - t0 < TOPK_TOK ? n_tok - t0 : TOPK_TOK;
            tile_dot(j->k, j->widen, ith, w, r0, nr, j->act, t0, nt, tile, TOPK_ROWS);
            for (int64_t t = 0; t < nt; t++) {
                topk_cand *h = heaps + (size_t)(t0 + t) * (size_t)j->k_top;
                uint32_t wt = worst[t0 + t];
                for (long i = 0; i < nr; i++) {
                    float v = tile[t * TOPK_ROWS + i];
                    uint32_t ab = abs_bits(v);
                    wt = ab > wt ? ab : wt;
                    topk_push(h, &counts[t0 + t], j->k_top, (topk_cand){v, (int32_t)(r0 + i)});
                }
                worst[t0 + t] = wt;
            }
        }
    }
}

size_t rf_matmul_topk_scratch_bytes(int n_threads, int64_t n_tok, int32_t k_top) {
    return (size_t)n_threads * (size_t)n_tok *
           ((size_t)k_top * sizeof(topk_cand) + sizeof(int32_t) + sizeof(uint32_t));
}

static void matmul_topk(const rf_kernels *k, rf_pool *pool, const rf_weight *w, const rf_act *act,
                        int32_t k_top, void *scratch, int32_t *ids, float *vals, uint8_t *finite,
                        const rf_widen *wd) {
    int nth = pool ? rf_pool_size(pool) : 1;
    topk_job j = {k, w, act, k_top, scratch, NULL, NULL, wd};
    j.counts = (int32_t *)(j.heaps + (size_t)nth * (size_t)act->n_tok * (size_t)k_top);
    j.worst = (uint32_t *)(j.counts + (size_t)nth * (size_t)act->n_tok);
    if (!pool)
        topk_worker(&j, 0, 1);
    else
        rf_pool_run(pool, topk_worker, &j);
    /* merge: the threads' heaps for a row into the first thread's, then sort it */
    for (int64_t t = 0; t < act->n_tok; t++) {
        topk_cand *h = j.heaps + (size_t)t * (size_t)k_top;
        int32_t n = j.counts[t];
        uint32_t wt = 0;
        for (int th = 0; th < nth; th++) {
            uint32_t o = j.worst[(size_t)th * (size_t)act->n_tok + (size_t)t];
            wt = o > wt ? o : wt;
        }
        finite[t] = wt < NONFINITE_BITS;
        for (int th = 1; th < nth; th++) {
            const topk_cand *o =
                j.heaps + ((size_t)th * (size_t)act->n_tok + (size_t)t) * (size_t)k_top;
            int32_t on = j.counts[(size_t)th * (size_t)act->n_tok + (size_t)t];
            for (int32_t i = 0; i < on; i++) topk_push(h, &n, k_top, o[i]);
        }
        for (int32_t end = n - 1; end > 0; end--) { /* heap sort: weakest to the back */
            topk_cand tmp = h[0];
            h[0] = h[end];
            h[end] = tmp;
            topk_sift(h, end, 0);
        }
        for (int32_t i = 0; i < k_top; i++) {
            ids[t * k_top + i] = i < n ? h[i].id : -1;
            vals[t * k_top + i] = i < n ? h[i].v : -INFINITY;
        }
    }
}

void rf_matmul_topk(const rf_kernels *k, rf_pool *pool, const rf_weight *w, const rf_act *act,
                    int32_t k_top, void *scratch, int32_t *ids, float *vals, uint8_t *finite) {
    matmul_topk(k, pool, w, act, k_top, scratch, ids, vals, finite, NULL);
}

void rf_matmul_topk_widened(const rf_kernels *k, rf_pool *pool, const rf_weight *w,
                            const rf_act *act, int32_t k_top, void *scratch, int32_t *ids,
                            float *vals, uint8_t *finite, const rf_widen *wd) {
    matmul_topk(k, pool, w, act, k_top, scratch, ids, vals, finite, wd);
}

void rf_topk_select(const float *x, int64_t n, int32_t k_top, topk_cand_buf *buf, int32_t *ids,
                    float *vals) {
    topk_cand *h = (topk_cand *)buf;
    int32_t cnt = 0;
    for (int64_t i = 0; i < n; i++) topk_push(h, &cnt, k_top, (topk_cand){x[i], (int32_t)i});
    for (int32_t end = cnt - 1; end > 0; end--) {
        topk_cand tmp = h[0];
        h[0] = h[end];
        h[end] = tmp;
        topk_sift(h, end, 0);
    }
    for (int32_t i = 0; i < k_top; i++) {
        ids[i] = i < cnt ? h[i].id : -1;
        vals[i] = i < cnt ? h[i].v : -INFINITY;
    }
}

bool rf_all_finite(const float *x, int64_t n) {
    /* |x| bits + 2^23 reaches bit 31 exactly for an infinity or a NaN: OR them all. Eight
     * independent lanes, which the compiler turns into vector code (the row is the whole
     * vocabulary: 262144 values for Gemma 3). */
    enum { LANES = 8 };
    uint32_t acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] |= abs_bits(x[i + l]) + 0x00800000u;
    uint32_t all = 0;
    for (int l = 0; l < LANES; l++) all |= acc[l];
    for (; i < n; i++) all |= abs_bits(x[i]) + 0x00800000u;
    return !(all & 0x80000000u);
}
