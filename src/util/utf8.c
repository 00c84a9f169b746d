/* utf8.c: UTF-8 sequence validation. */
#include "util/utf8.h"

size_t rf_utf8_seq(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    const unsigned c = p[0];
    const size_t need = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 0;
    if (!need || need > n) return 0;
    for (size_t i = 1; i < need; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if (need == 2 && c < 0xC2) return 0;                  /* overlong */
    if (need == 3 && c == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
    if (need == 3 && c == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
    if (need == 4 && (c > 0xF4 || (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)))
        return 0; /* overlong or above U+10FFFF */
    return need;
}
