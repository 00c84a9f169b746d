/* test_alloc.c: zero heap allocations per decoded token after warm-up, counted by interposing
 * malloc/calloc/realloc/aligned_alloc in this executable: a context's decode step (full logits
 * and the fused top-k head, with sampling), and the engine's scheduler in steady-state decode
 * (counted between the 10th and the 60th token of a request, on every thread), with and without
 * penalties and logprobs; and both again on the widened matmul path (--widen), whose decoded
 * weight rows live in per-thread scratch allocated with the context.
 * Skipped under AddressSanitizer, which owns the allocator. */
#if defined(__SANITIZE_ADDRESS__)
#include <stdio.h>
int main(void) {
    fprintf(stderr, "skipped: allocation counting is not possible under AddressSanitizer\n");
    return 77;
}
#else
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "check.h"
#include "model/context.h"
#include "model/sampler.h"
#include "roofline/engine.h"
#include "tiny_model.h"
#include "util/buf.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_int g_counting;
static atomic_long g_allocs;

void *malloc(size_t n) {
    if (atomic_load_explicit(&g_counting, memory_order_relaxed)) atomic_fetch_add(&g_allocs, 1);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    if (atomic_load_explicit(&g_counting, memory_order_relaxed)) atomic_fetch_add(&g_allocs, 1);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    if (atomic_load_explicit(&g_counting, memory_order_relaxed)) atomic_fetch_add(&g_allocs, 1);
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n) {
    if (atomic_load_explicit(&g_counting, memory_order_relaxed)) atomic_fetch_add(&g_allocs, 1);
    return __libc_memalign(a, n);
}

static const char *g_model;

static void test_context(int8_t mode, bool widen) {
    rf_model *m = NULL;
    rf_error err = {0};
    CHECK(rf_model_load(g_model, &m, &err) == RF_OK);
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = 128;
    cp.n_batch = 16;
    cp.n_seq = 2;
    cp.n_threads = 2;
    cp.widen = widen;
    rf_context *c = NULL;
    CHECK(rf_context_new(m, &cp, &c, &err) == RF_OK);
    rf_sampler_params sp = {0.7f, 20, 0.9f, 1, 0.0f, 0.0f};
    rf_sampler *s = NULL;
    CHECK(rf_sampler_new(&sp, rf_model_hparams(m)->n_vocab, &s, &err) == RF_OK);
    int32_t tok[2] = {2, 2}, pos[2] = {0, 0}, seq[2] = {0, 1};
    int8_t out[2] = {mode, mode};
    long during = -1;
    for (int step = 0; step < 80; step++) {
        if (step == 10) {
            atomic_store(&g_allocs, 0);
            atomic_store(&g_counting, 1);
        }
        rf_batch b = {2, tok, pos, seq, out};
        CHECK(rf_decode(c, &b, &err) == RF_OK);
        for (int i = 0; i < 2; i++) {
            const int32_t *ids;
            const float *vals;
            int32_t k = rf_context_top(c, i, &ids, &vals);
            tok[i] = k ? rf_sampler_sample_top(s, ids, vals, k)
                       : rf_sampler_sample(s, rf_context_logits(c, i));
            pos[i]++;
        }
    }
    atomic_store(&g_counting, 0);
    during = atomic_load(&g_allocs);
    CHECK_MSG(during == 0, "%ld allocations in 70 decode steps (mode %d%s)", during, mode,
              widen ? ", widened" : "");
    rf_sampler_free(s);
    rf_context_free(c);
    rf_model_free(m);
}

typedef struct watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, done;
    long allocs;
} watch;

static void on_event(void *user, const rf_event *ev) {
    watch *w = user;
    pthread_mutex_lock(&w->mu);
    w->n++;
    if (w->n == 10) {
        atomic_store(&g_allocs, 0);
        atomic_store(&g_counting, 1);
    } else if (w->n == 60) {
        atomic_store(&g_counting, 0);
        w->allocs = atomic_load(&g_allocs);
    }
    if (ev->finish != RF_FINISH_NONE) {
        w->done = 1;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

/* extras: penalties and logprobs too (full logits, the penalised copy, the log-softmax) */
static void test_engine(float temp, int extras, bool widen) {
    rf_engine_params p = rf_engine_default_params();
    p.model_path = g_model;
    p.n_threads = 2;
    p.max_seqs = 4;
    p.n_ctx = 128;
    p.widen = widen;
    rf_engine *e = NULL;
    rf_error err = {0};
    CHECK(rf_engine_open(&p, &e, &err) == RF_OK);
    if (!e) return;
    watch w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, -1};
    int32_t prompt[5] = {2, 40, 41, 42, 43};
    rf_request_params rp = rf_request_default_params();
    rp.max_tokens = 80;
    rp.ignore_eos = true;
    rp.temperature = temp;
    rp.stop[0] = "zzzz"; /* exercises the stop-string hold-back */
    if (extras) {
        rp.presence_penalty = 0.5f;
        rp.frequency_penalty = 0.25f;
        rp.logprobs = RF_MAX_TOP_LOGPROBS;
    }
    CHECK(rf_engine_submit(e, prompt, 5, &rp, on_event, &w, NULL, &err) == RF_OK);
    pthread_mutex_lock(&w.mu);
    while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    CHECK_MSG(w.allocs == 0, "%ld allocations in 50 engine decode steps (temp %g%s%s)", w.allocs,
              (double)temp, extras ? ", penalties and logprobs" : "", widen ? ", widened" : "");
    rf_engine_close(e);
}

int main(void) {
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q8_0;
    static char path[256];
    const char *p = tiny_write_file(&s, "alloc");
    CHECK(p != NULL);
    snprintf(path, sizeof path, "%s", p);
    g_model = path;
    /* the counter sees allocations made by the library's code */
    atomic_store(&g_allocs, 0);
    atomic_store(&g_counting, 1);
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_buf_append_str(&b, "x");
    rf_buf_free(&b);
    atomic_store(&g_counting, 0);
    CHECK(atomic_load(&g_allocs) == 1);
    for (int wd = 0; wd < 2; wd++) {
        test_context(RF_OUT_LOGITS, wd);
        test_context(RF_OUT_TOP, wd);
        test_engine(0.0f, 0, wd);
        test_engine(0.9f, 0, wd);
        test_engine(0.0f, 1, wd);
        test_engine(0.9f, 1, wd);
    }
    remove(path);
    return check_summary("test_alloc");
}
#endif
