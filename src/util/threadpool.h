/* threadpool.h: a persistent pool of worker threads for data-parallel kernels.
 *
 * rf_pool_run(pool, fn, arg) calls fn(arg, ith, nth) once on each of the nth threads (the caller
 * is thread 0, the workers 1..nth-1) and returns when all calls have returned. Workers sleep on
 * a condition variable between runs after a short spin, so back-to-back runs (one per matmul)
 * cost microseconds and an idle pool costs nothing. No thread is created per run.
 *
 * Ownership: rf_pool_new returns a pool the caller frees with rf_pool_free (joins the workers).
 * A pool runs one job at a time: rf_pool_run must not be called concurrently on the same pool.
 */
#ifndef RF_UTIL_THREADPOOL_H
#define RF_UTIL_THREADPOOL_H

#include "roofline/status.h"

typedef struct rf_pool rf_pool;
typedef void (*rf_pool_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (1: no workers, runs inline). */
rf_status rf_pool_new(int n_threads, rf_pool **out, rf_error *err);
void rf_pool_free(rf_pool *p);
int rf_pool_size(const rf_pool *p);
void rf_pool_run(rf_pool *p, rf_pool_fn fn, void *arg);

/* The [begin, end) share of n items for thread ith of nth (contiguous, balanced). */
static inline void rf_split(long n, int ith, int nth, long *begin, long *end) {
    long per = n / nth, extra = n % nth;
    *begin = ith * per + (ith < extra ? ith : extra);
    *end = *begin + per + (ith < extra ? 1 : 0);
}

#endif
