/* matmul.c: row-split matrix products over the pool. */
#include "kernels/matmul.h"

#define ROW_TILE                                                                                   \
    16 /* weight rows per inner tile: a tile is dotted with every token before the next */

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
} mm_job;

/* Rows [r0, r1) of one weight for every activation row, in tiles of ROW_TILE rows. */
static void mm_rows(const mm_job *j, const rf_weight *w, float *y, int64_t y_stride, long r0,
                    long r1) {
    for (long t0 = r0; t0 < r1; t0 += ROW_TILE) {
        long nr = r1 - t0 < ROW_TILE ? r1 - t0 : ROW_TILE;
        const uint8_t *wrow = (const uint8_t *)w->data + (size_t)t0 * w->row_bytes;
        for (int64_t t = 0; t < j->act->n_tok; t++) {
            const void *a = (const uint8_t *)j->act->data + (size_t)t * j->act->row_bytes;
            j->k->dot_rows(w->type, w->cols, nr, wrow, w->row_bytes, a, y + t * y_stride + t0);
        }
    }
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
            if (r1 > r0) mm_rows(j, w, j->y[i], j->y_stride[i], r0, r1);
        }
        off = end;
    }
}

void rf_matmul_n(const rf_kernels *k, rf_pool *pool, const rf_weight *const *w, int nw,
                 const rf_act *act, float *const *y, const int64_t *y_stride) {
    mm_job j = {k, w, nw, act, y, y_stride, 0};
    for (int i = 0; i < nw; i++) j.total_bytes += (uint64_t)w[i]->rows * w[i]->row_bytes;
    if (!pool)
        mm_worker(&j, 0, 1);
    else
        rf_pool_run(pool, mm_worker, &j);
}

void rf_matmul(const rf_kernels *k, rf_pool *pool, const rf_weight *w, const rf_act *act, float *y,
               int64_t y_stride) {
    rf_matmul_n(k, pool, &w, 1, act, &y, &y_stride);
}
