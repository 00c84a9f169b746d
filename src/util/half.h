/* half.h: IEEE binary16 and bfloat16 conversions (scalar, exact, branch-light).
 * Header-only; no state. f32 -> f16 rounds to nearest even, like the F16C instruction. */
#ifndef RF_UTIL_HALF_H
#define RF_UTIL_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t rf_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float rf_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* binary16 -> f32, exact for every input including subnormals, inf and NaN. */
static inline float rf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return rf_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf / nan */
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return rf_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

/* f32 -> binary16 with round-to-nearest-even; overflow gives inf, NaN stays NaN. */
static inline uint16_t rf_f32_to_f16(float f) {
    uint32_t x = rf_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) {
        /* result is subnormal or zero: value / 2^-24, rounded to nearest even */
        float a = rf_bits_f32(ax) * 16777216.0f; /* exact scaling by 2^24 */
        uint32_t m = (uint32_t)a;
        float rem = a - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1u))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t mant = ax & 0x7fffffu;
    uint32_t e = (ax >> 23) - 112;
    uint32_t h = (e << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* carry may bump the exponent */
    return (uint16_t)(sign | h);
}

static inline float rf_bf16_to_f32(uint16_t b) {
    return rf_bits_f32((uint32_t)b << 16);
}

/* f32 -> bfloat16, round to nearest even; NaN kept quiet. */
static inline uint16_t rf_f32_to_bf16(float f) {
    uint32_t x = rf_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 64u);
    return (uint16_t)((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

/* Round an f32 through binary16 and back. */
static inline float rf_round_f16(float f) {
    return rf_f16_to_f32(rf_f32_to_f16(f));
}

#endif
