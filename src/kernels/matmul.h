/* matmul.h: y = W x for a batch of activation rows, split over a thread pool.
 *
 * W is a weight matrix stored row-major in its own format (rows of `cols` values, row_bytes
 * apart: a GGUF tensor [cols, rows]); x holds n_tok activation rows already quantized to
 * rf_vec_dot_type(W.type) (see rf_act_quantize); y is n_tok rows of `rows` floats. Each weight
 * row is read once per call whatever n_tok is, so batched decode and prefill share the path: a
 * thread's rows go to one dot_tile call with every token, which unpacks each weight block once
 * for all of them. A token's outputs have the same bits whatever else is in the batch.
 *
 * The widened path (rf_matmul_n_widened, rf_matmul_topk_widened; `--widen`): the same products
 * computed the way an engine without native kernels for the file's format does it. Every call
 * decodes each weight row to floats (the kernels' dequantize_row) into a per-thread scratch row
 * and dots it with the f32 activations (dot_f32), once per token; nothing is quantized and no
 * integer kernel runs. It reads the same weight bytes as the native path; what it adds is the
 * decode of every weight on every call. Results agree with the native path within the
 * activation quantization's error (the native path dots against Q8 activations).
 * Nothing allocates; buffers (the widened path's scratch too) are the caller's.
 */
#ifndef RF_KERNELS_MATMUL_H
#define RF_KERNELS_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "util/threadpool.h"

typedef struct rf_weight {
    rf_type type;
    int64_t cols; /* ne[0]: values per row */
    int64_t rows; /* ne[1] */
    size_t row_bytes;
    const void *data; /* borrowed: into the model file mapping */
} rf_weight;

/* Quantized activations: n_tok rows of type `type`, row_bytes apart. */
typedef struct rf_act {
    rf_type type;
    int64_t cols;
    int64_t n_tok;
    size_t row_bytes;
    void *data;
} rf_act;

/* Quantizes n_tok rows of x (cols floats each, x_stride floats apart) into act (whose data must
 * hold n_tok * rf_type_row_bytes(type, cols) bytes), in parallel. */
void rf_act_quantize(const rf_kernels *k, rf_pool *pool, rf_type type, const float *x, int64_t cols,
                     int64_t x_stride, int64_t n_tok, rf_act *act);

/* y[t * y_stride + r] = dot(W row r, act row t) for r < W.rows, t < act.n_tok. */
void rf_matmul(const rf_kernels *k, rf_pool *pool, const rf_weight *w, const rf_act *act, float *y,
               int64_t y_stride);

/* Several weights that take the same activation (q, k and v; gate and up) in one pass over the
 * pool: y[i][t * y_stride[i] + r] = dot(row r of w[i], act row t). Every w[i] must pair with
 * act's type. Rows are split across threads by bytes, so one dispatch replaces nw. */
void rf_matmul_n(const rf_kernels *k, rf_pool *pool, const rf_weight *const *w, int nw,
                 const rf_act *act, float *const *y, const int64_t *y_stride);

/* The widened path's scratch: `cols` floats per thread of the pool (the widest weight row),
 * threads x cols floats in all, 64-byte aligned. */
typedef struct rf_widen {
    float *rows;
    int64_t cols;
} rf_widen;

/* rf_matmul_n on the widened path: x holds n_tok f32 activation rows (an rf_act of type F32 whose
 * data are the floats, cols of them per row); y as rf_matmul_n. */
void rf_matmul_n_widened(const rf_kernels *k, rf_pool *pool, const rf_weight *const *w, int nw,
                         const rf_act *x, float *const *y, const int64_t *y_stride,
                         const rf_widen *wd);

/* The k largest outputs of each activation row without storing the others: every thread keeps a
 * min-heap of k (value, row) pairs per activation row while it computes its rows, then the
 * heaps are merged. ids and vals get act->n_tok rows of k entries, sorted by descending value
 * (ties: lower row first). finite gets act->n_tok flags: 1 when every output of that row was a
 * finite number, 0 when one was a NaN or an infinity (a NaN never wins a comparison, so the heap
 * alone would hide it; each thread folds the bits of every value it computes into a maximum).
 * scratch holds rf_matmul_topk_scratch_bytes(threads, n_tok, k) bytes.
 * Used for the output head when only the best candidates are wanted (greedy, top-k sampling):
 * it saves writing and rescanning n_vocab logits per token. */
size_t rf_matmul_topk_scratch_bytes(int n_threads, int64_t n_tok, int32_t k_top);
void rf_matmul_topk(const rf_kernels *k, rf_pool *pool, const rf_weight *w, const rf_act *act,
                    int32_t k_top, void *scratch, int32_t *ids, float *vals, uint8_t *finite);
/* rf_matmul_topk on the widened path: act holds f32 rows as in rf_matmul_n_widened. */
void rf_matmul_topk_widened(const rf_kernels *k, rf_pool *pool, const rf_weight *w,
                            const rf_act *act, int32_t k_top, void *scratch, int32_t *ids,
                            float *vals, uint8_t *finite, const rf_widen *wd);

/* True when none of x[0..n) is a NaN or an infinity. */
bool rf_all_finite(const float *x, int64_t n);

/* The same selection over n values already computed: ids/vals get the k_top largest, sorted.
 * buf holds k_top candidates (rf_matmul_topk's scratch for one thread and row is enough). */
typedef struct topk_cand_buf topk_cand_buf;
void rf_topk_select(const float *x, int64_t n, int32_t k_top, topk_cand_buf *buf, int32_t *ids,
                    float *vals);

#endif
