/* unicode.c: code point lookups over the generated tables of unicode_data.c, and UTF-8 decoding
 * and encoding with llama.cpp's rules (see unicode.h). Pure functions over read-only data.
 *
 * A category is one table read below U+0100 and a binary search over the ~2,300 category runs
 * above (12 steps). White_Space past U+00FF is looked up only for separators, which all such
 * code points are (scripts/gen_unicode.py asserts it).
 */
#include "model/unicode.h"

uint32_t rf_unicode_flags(uint32_t cp) {
    if (cp < 256) return rf_unicode_latin1[cp];
    if (cp >= 0x110000) return RF_UCP_UNDEFINED;
    size_t lo = 0, hi = rf_unicode_n_cat_ranges; /* the last run with start <= cp */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((rf_unicode_cat_ranges[mid] >> 8) <= cp)
            lo = mid;
        else
            hi = mid;
    }
    uint32_t f = rf_unicode_cat_ranges[lo] & 0xFF;
    if (f == RF_UCP_SEPARATOR)
        for (size_t i = 0; i < rf_unicode_n_whitespace; i++)
            if (rf_unicode_whitespace[i] == cp) return f | RF_UCP_WHITESPACE;
    return f;
}

uint32_t rf_unicode_lower_ascii(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + ('a' - 'A');
    if (cp < 128) return cp;
    for (size_t i = 0; i < rf_unicode_n_lower_ascii; i++)
        if (rf_unicode_lower_ascii_map[i][0] == cp) return rf_unicode_lower_ascii_map[i][1];
    return cp;
}

static inline bool is_cont(uint8_t c) {
    return (c & 0xC0) == 0x80;
}

uint32_t rf_utf8_decode(const uint8_t *s, size_t n, size_t *used) {
    uint8_t c = s[0];
    *used = 1;
    if (c < 0x80) return c;
    if (c < 0xC0 || c >= 0xF8) return 0xFFFD; /* continuation byte, or no such lead byte */
    size_t k = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (n < k) return 0xFFFD;
    for (size_t i = 1; i < k; i++)
        if (!is_cont(s[i])) return 0xFFFD;
    uint32_t cp = k == 2 ? c & 0x1Fu : k == 3 ? c & 0x0Fu : c & 0x07u;
    for (size_t i = 1; i < k; i++) cp = cp << 6 | (s[i] & 0x3Fu);
    *used = k;
    return cp;
}

size_t rf_utf8_encode(uint32_t cp, uint8_t out[4]) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp < 0x110000) {
        out[0] = (uint8_t)(0xF0 | cp >> 18);
        out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (uint8_t)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}
