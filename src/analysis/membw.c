/* membw.c: streaming-read bandwidth over a thread pool. */
#include "analysis/membw.h"

#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/stats.h"
#include "util/threadpool.h"

typedef struct job {
    const rf_kernels *k;
    uint8_t *buf;
    size_t bytes;
    int touch; /* 1: write the buffer (first use), 0: read it */
    uint64_t sums[1024];
} job;

static void worker(void *arg, int ith, int nth) {
    job *j = arg;
    size_t lines = j->bytes / 64;
    long b, e;
    rf_split((long)lines, ith, nth, &b, &e);
    uint8_t *p = j->buf + (size_t)b * 64;
    size_t n = (size_t)(e - b) * 64;
    if (j->touch)
        memset(p, ith + 1, n);
    else
        j->sums[ith] = j->k->read_sum(p, n);
}

rf_status rf_membw_measure(const rf_membw_params *p, rf_membw_result *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    size_t bytes = p->bytes ? p->bytes : (size_t)1 << 30;
    int repeats = p->repeats ? p->repeats : 7;
    int n_threads = p->n_threads ? p->n_threads : rf_cpu_physical_cores();
    const rf_kernels *k = p->k ? p->k : rf_kernels_best();
    if (bytes < (1u << 20) || repeats < 1 || repeats > RF_MEMBW_MAX_REPEATS || n_threads < 1 ||
        n_threads > 1024)
        return rf_error_set(err, RF_ERR_ARG,
                            "membw: need bytes >= 1 MiB, repeats in [1, %d], threads in [1, 1024]",
                            RF_MEMBW_MAX_REPEATS);
    bytes &= ~(size_t)4095;
    rf_pool *pool = NULL;
    rf_status st = rf_pool_new(n_threads, &pool, err);
    if (st) return st;
    job *j = calloc(1, sizeof *j);
    uint8_t *buf = aligned_alloc(4096, bytes);
    if (!j || !buf) {
        st = rf_error_set(err, RF_ERR_NOMEM, "membw: cannot allocate %zu bytes", bytes);
        goto out;
    }
    j->k = k;
    j->buf = buf;
    j->bytes = bytes;
    j->touch = 1;
    rf_pool_run(pool, worker, j); /* each thread first-touches its own share */
    j->touch = 0;
    rf_pool_run(pool, worker, j); /* warm-up read */
    double runs[RF_MEMBW_MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        int64_t t0 = rf_now_ns();
        rf_pool_run(pool, worker, j);
        int64_t dt = rf_now_ns() - t0;
        runs[r] = out->runs_gbs[r] = (double)bytes / (double)(dt > 0 ? dt : 1);
    }
    rf_stats sts;
    rf_stats_compute(runs, (size_t)repeats, &sts);
    out->median_gbs = sts.p50;
    out->min_gbs = sts.min;
    out->max_gbs = sts.max;
    out->repeats = repeats;
    out->n_threads = n_threads;
    out->bytes = bytes;
    out->kernel = rf_isa_name(k->isa);
out:
    free(buf);
    free(j);
    rf_pool_free(pool);
    return st;
}
