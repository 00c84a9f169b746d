/* heap.h: a binary min-heap over a caller's array, generated per element type (the tokenizers'
 * merge queues): RF_HEAP_DEFINE(prefix, T, before) defines
 *   typedef struct { T *v; int64_t n; } prefix_heap;   (v: caller-owned, room for every push)
 *   static void prefix_push(prefix_heap *h, T x);
 *   static T prefix_pop(prefix_heap *h);               (h->n > 0)
 * where before(const T *a, const T *b) is true when a must be popped before b. Nothing is
 * allocated; the functions are static inline in the including file, so `before` inlines. */
#ifndef ROOFLINE_UTIL_HEAP_H
#define ROOFLINE_UTIL_HEAP_H

#include <stdint.h>

#define RF_HEAP_DEFINE(prefix, T, before)                                                          \
    typedef struct prefix##_heap {                                                                 \
        T *v;                                                                                      \
        int64_t n;                                                                                 \
    } prefix##_heap;                                                                               \
                                                                                                   \
    static inline void prefix##_push(prefix##_heap *h, T x) {                                      \
        int64_t i = h->n++;                                                                        \
        while (i > 0) {                                                                            \
            int64_t parent = (i - 1) / 2;                                                          \
            if (!before(&x, &h->v[parent])) break;                                                 \
            h->v[i] = h->v[parent];                                                                \
            i = parent;                                                                            \
        }                                                                                          \
        h->v[i] = x;                                                                               \
    }                                                                                              \
                                                                                                   \
    static inline T prefix##_pop(prefix##_heap *h) {                                               \
        T top = h->v[0], last = h->v[--h->n];                                                      \
        int64_t i = 0;                                                                             \
        for (;;) {                                                                                 \
            int64_t c = 2 * i + 1;                                                                 \
            if (c >= h->n) break;                                                                  \
            if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;                               \
            if (!before(&h->v[c], &last)) break;                                                   \
            h->v[i] = h->v[c];                                                                     \
            i = c;                                                                                 \
        }                                                                                          \
        if (h->n > 0) h->v[i] = last;                                                              \
        return top;                                                                                \
    }

#endif
