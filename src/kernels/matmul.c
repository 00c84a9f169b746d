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
    const rf_weight *w;
    const rf_act *act;
    float *y;
    int64_t y_stride;
} mm_job;

static void mm_worker(void *arg, int ith, int nth) {
    mm_job *j = arg;
    const rf_weight *w = j->w;
    long b, e;
    rf_split((long)w->rows, ith, nth, &b, &e);
    for (long r0 = b; r0 < e; r0 += ROW_TILE) {
        long nr = e - r0 < ROW_TILE ? e - r0 : ROW_TILE;
        const uint8_t *wrow = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
        for (int64_t t = 0; t < j->act->n_tok; t++) {
            const void *a = (const uint8_t *)j->act->data + (size_t)t * j->act->row_bytes;
            float *out = j->y + t * j->y_stride + r0;
            j->k->dot_rows(w->type, w->cols, nr, wrow, w->row_bytes, a, out);
        }
    }
}

void rf_matmul(const rf_kernels *k, rf_pool *pool, const rf_weight *w, const rf_act *act, float *y,
               int64_t y_stride) {
    mm_job j = {k, w, act, y, y_stride};
    if (!pool)
        mm_worker(&j, 0, 1);
    else
        rf_pool_run(pool, mm_worker, &j);
}
