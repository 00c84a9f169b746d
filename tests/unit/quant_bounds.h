/* quant_bounds.h: the stated worst-case error of each encoder of kernels/quant.h, per value, for
 * the round-trip tests (test_quant.c: rf_ref_quantize_row; test_quantize.c:
 * rf_ref_quantize_weights). The derivations are at each encoder in quant_ref.c. Header-only. */
#ifndef RF_TEST_QUANT_BOUNDS_H
#define RF_TEST_QUANT_BOUNDS_H

#include <math.h>
#include <stdint.h>

#include "kernels/types.h"

static inline float quant_group_absmax(const float *x, int64_t n) {
    float a = 0.0f;
    for (int64_t i = 0; i < n; i++) a = fmaxf(a, fabsf(x[i]));
    return a;
}

static inline float quant_group_range(const float *x, int64_t n) {
    float lo = x[0], hi = x[0];
    for (int64_t i = 1; i < n; i++) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
    }
    return hi - lo;
}

/* The bound on |x - decode(encode(x))| for a value x of block blk (bn values: 32, 256 for the
 * K-quants, 1 for the float types). The small absolute and relative slack covers the float
 * rounding of the decode; fp16 subnormal scales add up to qmax * 2^-25 (named where it exceeds
 * the slack).
 *   Q8_0 (activations and weights), Q8_1: d/2 + 127 |d - fp16(d)| <= 0.57 amax/127
 *     (+ 127 * 2^-25 for a subnormal fp16 d)
 *   Q4_0: |d| (1 + 8*2^-11) = amax/8 (1+2^-8)      Q5_0: amax/16 (1+2^-7)
 *   Q4_1: range/30 + 2^-11 (range + amax) (fp16 d and m)      Q5_1: range/62 + (the same)
 *   Q4_K: amax/15 * 1.02     Q5_K: amax/31 * 1.02     Q6_K: amax/32 * 1.01
 *   Q8_K: |d|/2 = amax/254   F16: 2^-11 |x|   BF16: 2^-8 |x|   F32: exact */
static inline float quant_err_bound(rf_type t, const float *blk, int64_t bn, float x) {
    const float amax = quant_group_absmax(blk, bn), slack = 1e-6f * amax + 1e-6f;
    const float range = bn > 1 ? quant_group_range(blk, bn) : 0.0f;
    switch (t) {
    case RF_TYPE_Q8_0:
    case RF_TYPE_Q8_1:
        return 0.57f * amax / 127.0f + 127.0f / 33554432.0f + slack;
    case RF_TYPE_Q4_0:
        return amax / 8.0f * (1.0f + 1.0f / 256.0f) + slack;
    case RF_TYPE_Q5_0:
        return amax / 16.0f * (1.0f + 1.0f / 128.0f) + slack;
    case RF_TYPE_Q4_1:
        return range / 30.0f + (range + amax) / 2048.0f + slack;
    case RF_TYPE_Q5_1:
        return range / 62.0f + (range + amax) / 2048.0f + slack;
    case RF_TYPE_Q4_K:
        return amax / 15.0f * 1.02f + slack;
    case RF_TYPE_Q5_K:
        return amax / 31.0f * 1.02f + slack;
    case RF_TYPE_Q6_K:
        return amax / 32.0f * 1.01f + slack;
    case RF_TYPE_Q8_K:
        return amax / 254.0f * 1.001f + slack;
    case RF_TYPE_F16:
        return fabsf(x) / 2048.0f + 3e-8f;
    case RF_TYPE_BF16:
        return fabsf(x) / 256.0f + 1e-38f;
    default: /* F32: exact */
        return 0.0f;
    }
}

#endif
