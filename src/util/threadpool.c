/* threadpool.c: persistent workers released by a generation counter. */
#include "util/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define SPIN_ITERS 20000 /* about tens of microseconds before sleeping */

typedef struct worker {
    struct rf_pool *pool;
    int ith;
    pthread_t tid;
} worker;

struct rf_pool {
    int n;
    worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_cond_t done_cv;
    atomic_uint generation; /* bumped for each job */
    atomic_int pending;     /* workers still running the current job */
    atomic_int stop;
    rf_pool_fn fn;
    void *arg;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *p) {
    worker *w = p;
    rf_pool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        for (int i = 0; gen == seen && i < SPIN_ITERS; i++) {
            cpu_relax();
            gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        }
        if (gen == seen) {
            pthread_mutex_lock(&pool->mu);
            while ((gen = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->mu);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->stop)) break;
        seen = gen;
        pool->fn(pool->arg, w->ith, pool->n);
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool->mu);
            pthread_cond_signal(&pool->done_cv);
            pthread_mutex_unlock(&pool->mu);
        }
    }
    return NULL;
}

rf_status rf_pool_new(int n_threads, rf_pool **out, rf_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return rf_error_set(err, RF_ERR_ARG, "thread count %d is not in [1, 1024]", n_threads);
    rf_pool *p = calloc(1, sizeof *p);
    if (!p) return rf_error_set(err, RF_ERR_NOMEM, "thread pool: out of memory");
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    p->workers = calloc((size_t)n_threads, sizeof *p->workers);
    if (!p->workers) {
        rf_pool_free(p);
        return rf_error_set(err, RF_ERR_NOMEM, "thread pool: out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        p->workers[i].pool = p;
        p->workers[i].ith = i;
        if (pthread_create(&p->workers[i].tid, NULL, worker_main, &p->workers[i]) != 0) {
            p->n = i; /* join only those started */
            rf_pool_free(p);
            return rf_error_set(err, RF_ERR_INTERNAL, "thread pool: cannot start thread %d", i);
        }
    }
    *out = p;
    return RF_OK;
}

void rf_pool_free(rf_pool *p) {
    if (!p) return;
    if (p->workers) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->stop, 1);
        atomic_fetch_add(&p->generation, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i < p->n; i++) pthread_join(p->workers[i].tid, NULL);
        free(p->workers);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done_cv);
    free(p);
}

int rf_pool_size(const rf_pool *p) {
    return p->n;
}

void rf_pool_run(rf_pool *p, rf_pool_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    for (int i = 0; atomic_load_explicit(&p->pending, memory_order_acquire) && i < SPIN_ITERS; i++)
        cpu_relax();
    if (atomic_load(&p->pending)) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending)) pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
