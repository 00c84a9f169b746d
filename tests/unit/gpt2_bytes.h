/* gpt2_bytes.h: GPT-2's byte-level text for the tests and fuzz targets that build byte-level BPE
 * vocabularies, written independently of the product (tokenizer_bpe.c): the printable bytes
 * 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF are their own code point, the other 68 take U+0100 on in
 * byte order. Header-only; gpt2_text's result is the caller's to free. */
#ifndef RF_TEST_GPT2_BYTES_H
#define RF_TEST_GPT2_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The GPT-2 character of byte b. */
static inline uint32_t gpt2_char(int b) {
    int n = 0;
    for (int c = 0; c < 256; c++) {
        bool self = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
        if (c == b) return self ? (uint32_t)c : 0x100u + (uint32_t)n;
        n += !self;
    }
    return 0;
}

/* n raw bytes as byte-level text (UTF-8, NUL-terminated, malloc'd); NULL when out of memory. */
static inline char *gpt2_text(const char *raw, size_t n) {
    char *out = malloc(2 * n + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = gpt2_char((uint8_t)raw[i]);
        if (c < 0x80) {
            out[k++] = (char)c;
        } else {
            out[k++] = (char)(0xC0 | c >> 6);
            out[k++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[k] = 0;
    return out;
}

#endif
