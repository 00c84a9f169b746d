/* fuzz_util.h: what the fuzz targets share: the invariant check (a trap, which libFuzzer and the
 * replay report as a crash, never an exit), a NUL-terminated copy of the input, and cutting the
 * input into NUL-separated parts. Header-only; nothing here keeps state between inputs. */
#ifndef RF_FUZZ_UTIL_H
#define RF_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: trap (a crash with a stack trace under the sanitizers). */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

/* A malloc'd copy of n bytes with a NUL after them (the caller frees). Traps when out of memory:
 * inputs are small (-max_len), so that is a leak or a runaway, not an input to survive. */
static inline char *fuzz_strndup(const void *p, size_t n) {
    char *s = malloc(n + 1);
    REQUIRE(s != NULL);
    if (n) memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* The next part of [*p, *p + *n) up to a NUL (or the end): *len its bytes; *p and *n advance
 * past the NUL. Returns the part's start (never NULL; *len 0 once the input is used up). */
static inline const uint8_t *fuzz_part(const uint8_t **p, size_t *n, size_t *len) {
    const uint8_t *start = *p;
    const uint8_t *z = *n ? memchr(start, 0, *n) : NULL;
    *len = z ? (size_t)(z - start) : *n;
    size_t used = z ? *len + 1 : *len;
    *p += used;
    *n -= used;
    return start;
}

/* Two byte ranges hold the same bytes (either pointer may be NULL when its length is 0). */
static inline int fuzz_mem_eq(const void *a, size_t na, const void *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

/* The error message is a terminated, non-empty string starting with prefix. */
static inline int fuzz_msg_ok(const char *msg, size_t cap, const char *prefix) {
    return memchr(msg, 0, cap) != NULL && msg[0] != 0 && strncmp(msg, prefix, strlen(prefix)) == 0;
}

#endif
