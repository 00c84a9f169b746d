/* check.h: the unit tests' assertion macros. A failed CHECK prints file:line and the expression
 * and marks the test failed; the test keeps going so one run shows every failure. */
#ifndef RF_TEST_CHECK_H
#define RF_TEST_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int g_check_failures;
static int g_check_count;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        g_check_count++;                                                                           \
        if (!(cond)) {                                                                             \
            g_check_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        g_check_count++;                                                                           \
        if (!(cond)) {                                                                             \
            g_check_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double ca_ = (double)(a), cb_ = (double)(b);                                               \
        CHECK_MSG(fabs(ca_ - cb_) <= (tol), "%s = %.9g, %s = %.9g, tol %g", #a, ca_, #b, cb_,      \
                  (double)(tol));                                                                  \
    } while (0)

/* splitmix64: a small fixed-seed generator, state owned by the caller. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static inline float rng_sym(uint64_t *s) {
    return (float)((double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

/* malloc that aborts the test on failure; never returns NULL. */
static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* How late a plain 1 ms sleep wakes up on this machine now: the worst of reps, in ms. A test
 * without a fake server to measure its own lateness bounds a delay by a base plus this (measured
 * in the same run, beside the delay it bounds), never by a fixed number alone: a machine that
 * other work keeps busy wakes everything late, and that is not the code's fault. */
static inline double check_sleep_lateness_ms(int reps) {
    double worst = 0;
    for (int i = 0; i < reps; i++) {
        struct timespec a, b, d = {0, 1000000};
        clock_gettime(CLOCK_MONOTONIC, &a);
        nanosleep(&d, NULL);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double late =
            (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 - 1;
        if (late > worst) worst = late;
    }
    return worst;
}

/* Ends main(): prints a one-line summary, returns the process exit status. */
static inline int check_summary(const char *name) {
    fprintf(stderr, "%s: %d checks, %d failed\n", name, g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}

/* The number of '\n' in the file at path; -1 when it cannot be opened. */
static inline int check_count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

/* Returns the real-model path for end-to-end tests, or exits 77 (skipped) when it is absent. */
static inline const char *check_model_or_skip(void) {
    const char *p = getenv("ROOFLINE_TEST_MODEL");
    FILE *f = p ? fopen(p, "rb") : NULL;
    if (!f) {
        fprintf(stderr, "skipped: model file not found (%s); run scripts/setup.sh\n",
                p ? p : "ROOFLINE_TEST_MODEL unset");
        exit(77);
    }
    fclose(f);
    return p;
}

#endif
