/* failalloc.h: a test-only allocation hook: interposes malloc, calloc, realloc, aligned_alloc,
 * posix_memalign, memalign and valloc (and pthread_create, to tell a thread's own code from a
 * sanitizer runtime's per-thread set-up) in the one test executable that includes failalloc.c
 * (strdup, asprintf, fopen and libc's other internal allocations go through malloc, so they
 * are covered too), forwarding to the next definition in the lookup order (libc's, or the
 * sanitizer runtime's: under AddressSanitizer the hook composes with it, so LeakSanitizer sees
 * every allocation and reports leaks at exit).
 *
 * failalloc_arm(n, scope) makes the n-th counted allocation from now (1-based) return NULL
 * (once: later ones succeed, as after a transient shortage); FA_ALL counts every thread,
 * FA_THIS counts only the arming thread. A thread may exclude itself (failalloc_ignore_thread),
 * e.g. a test's HTTP client, so that only the code under test is failed.
 * No state is owned by the caller; nothing to free. */
#ifndef RF_TEST_FAILALLOC_H
#define RF_TEST_FAILALLOC_H

#include <stdbool.h>

typedef enum fa_scope { FA_ALL = 0, FA_THIS = 1 } fa_scope;

/* Fails the n-th counted allocation from now; n <= 0 counts without failing. */
void failalloc_arm(long n, fa_scope scope);
/* Stops counting; returns the number of allocations counted since arming. */
long failalloc_disarm(void);
/* Whether the armed failure happened (since the last arm). */
bool failalloc_fired(void);
/* true: the calling thread's allocations are never counted nor failed. */
void failalloc_ignore_thread(bool ignore);

#endif
