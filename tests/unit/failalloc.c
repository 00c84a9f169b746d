/* failalloc.c: the allocation hook of failalloc.h. Included by one test executable (it defines
 * malloc and friends, so it must be linked into that executable alone). */
#include "failalloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *memalign(size_t alignment, size_t n); /* glibc's <malloc.h>; declared here alone */

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*valloc_fn)(size_t);
typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static malloc_fn next_malloc;
static calloc_fn next_calloc;
static realloc_fn next_realloc;
static memalign_fn next_aligned_alloc, next_memalign;
static posix_memalign_fn next_posix_memalign;
static valloc_fn next_valloc;
static pthread_create_fn next_pthread_create;

static atomic_int g_armed;
static atomic_long g_count, g_target;
static atomic_bool g_fired;
static atomic_uintptr_t g_owner; /* FA_THIS: the arming thread */
static _Thread_local bool t_ignore;
/* true while a thread runs its own code: set by the pthread_create wrapper around the start
 * routine (and by failalloc_arm on the arming thread). A sanitizer runtime's per-thread set-up
 * and tear-down (which allocate, and abort when that fails) run outside it and are not
 * counted; the allocations pthread_create makes in the creating thread still are. */
static _Thread_local bool t_started;
/* not thread-local: the first allocations come from the dynamic loader and the sanitizer
 * runtime's start-up, before this thread's TLS may be touched; they run on one thread */
static atomic_bool g_resolving;

/* dlsym may allocate (calloc) before the real functions are known: a small static arena serves
 * those few calls; its blocks are never freed (free is not interposed: they are not passed to
 * free by dlsym's users in practice, and a test process is short-lived). */
static _Alignas(64) unsigned char g_boot[8192];
static atomic_size_t g_boot_used;

static void *boot_alloc(size_t n) {
    n = (n + 63) & ~(size_t)63;
    size_t at = atomic_fetch_add(&g_boot_used, n);
    if (at + n > sizeof g_boot) return NULL;
    return g_boot + at;
}

static void resolve(void) {
    if (next_malloc) return;
    atomic_store(&g_resolving, true);
    next_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
    next_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
    next_aligned_alloc = (memalign_fn)dlsym(RTLD_NEXT, "aligned_alloc");
    next_memalign = (memalign_fn)dlsym(RTLD_NEXT, "memalign");
    next_posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
    next_valloc = (valloc_fn)dlsym(RTLD_NEXT, "valloc");
    next_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    next_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
    atomic_store(&g_resolving, false);
}

/* true: this allocation fails. */
static bool should_fail(void) {
    if (!atomic_load_explicit(&g_armed, memory_order_relaxed) || t_ignore || !t_started)
        return false;
    if (atomic_load_explicit(&g_owner, memory_order_relaxed) &&
        atomic_load_explicit(&g_owner, memory_order_relaxed) != (uintptr_t)pthread_self())
        return false;
    long k = atomic_fetch_add(&g_count, 1) + 1;
    if (k != atomic_load(&g_target)) return false;
    atomic_store(&g_fired, true);
    return true;
}

void failalloc_arm(long n, fa_scope scope) {
    resolve();
    t_started = true;
    atomic_store(&g_armed, 0);
    atomic_store(&g_count, 0);
    atomic_store(&g_fired, false);
    atomic_store(&g_target, n > 0 ? n : -1);
    atomic_store(&g_owner, scope == FA_THIS ? (uintptr_t)pthread_self() : 0);
    atomic_store(&g_armed, 1);
}

long failalloc_disarm(void) {
    atomic_store(&g_armed, 0);
    return atomic_load(&g_count);
}

bool failalloc_fired(void) {
    return atomic_load(&g_fired);
}

void failalloc_ignore_thread(bool ignore) {
    t_ignore = ignore;
}

void *malloc(size_t n) {
    if (atomic_load(&g_resolving)) return boot_alloc(n);
    resolve();
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return next_malloc(n);
}

void *calloc(size_t a, size_t b) {
    if (atomic_load(&g_resolving)) { /* static storage: already zero */
        if (b && a > SIZE_MAX / b) return NULL;
        return boot_alloc(a * b);
    }
    resolve();
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return next_calloc(a, b);
}

void *realloc(void *p, size_t n) {
    resolve();
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return next_realloc(p, n);
}

void *aligned_alloc(size_t a, size_t n) {
    resolve();
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return next_aligned_alloc(a, n);
}

void *memalign(size_t a, size_t n) {
    resolve();
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return next_memalign(a, n);
}

int posix_memalign(void **out, size_t a, size_t n) {
    resolve();
    if (should_fail()) return ENOMEM;
    return next_posix_memalign(out, a, n);
}

void *valloc(size_t n) {
    resolve();
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return next_valloc(n);
}

typedef struct start_arg {
    void *(*fn)(void *);
    void *arg;
} start_arg;

static void *start_counted(void *p) {
    start_arg a = *(start_arg *)p;
    free(p);
    t_started = true;
    void *r = a.fn(a.arg);
    t_started = false;
    return r;
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    resolve();
    start_arg *a = malloc(sizeof *a); /* counted: may fail, as pthread_create's own may */
    if (!a) return EAGAIN;
    a->fn = fn;
    a->arg = arg;
    int rc = next_pthread_create(th, attr, start_counted, a);
    if (rc) free(a);
    return rc;
}
