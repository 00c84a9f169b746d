/* tokenizer_spm.c: the "llama" (SentencePiece-style) family.
 *
 * A fragment (raw text with no special tokens in it) is encoded as llama.cpp's SPM tokenizer
 * does:
 *   1. a ' ' is prepended when the vocabulary asks for a space prefix and the fragment starts
 *      the text or follows a special token; every ' ' becomes U+2581;
 *   2. the text is cut into symbols, one per UTF-8 character as its lead byte announces it
 *      (1 byte for ASCII and stray continuation bytes, 2 for 0xC0-0xDF, 3 for 0xE0-0xEF,
 *      4 for 0xF0-0xFF; a sequence cut short by the end of the text is shorter), kept in a
 *      doubly linked list;
 *   3. every adjacent pair whose concatenation is a token goes into a max-heap keyed by that
 *      token's score, ties going to the pair further left; the top pair is merged unless one
 *      side has changed since it was pushed, and the pairs the merged symbol now forms with its
 *      neighbours are pushed;
 *   4. each remaining symbol is its token, or, when its text is no token, one byte token per
 *      byte ("<0xHH>", else the single byte as a token, else the unknown token).
 * Each merge pops one pair and pushes at most two, so the heap never holds more than 2n entries
 * and the whole fragment costs O(n log n) hash lookups of at most two symbols' length.
 */
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer_int.h"
#include "util/heap.h"

typedef struct spm_symbol {
    int32_t prev, next;
    int32_t off, n; /* bytes [off, off + n) of the escaped text; n == 0 once merged away */
} spm_symbol;

typedef struct spm_pair {
    float score;
    int32_t left, right;
    int32_t size; /* bytes of left + right when pushed */
} spm_pair;

/* True when a should be popped before b. */
static inline bool pair_before(const spm_pair *a, const spm_pair *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

RF_HEAP_DEFINE(spm, spm_pair, pair_before)

static void try_pair(const rf_tokenizer *t, const char *text, const spm_symbol *sym, spm_heap *h,
                     int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    int32_t size = sym[left].n + sym[right].n;
    int32_t id = rf_tok_lookup(t, text + sym[left].off, (size_t)size);
    if (id < 0) return;
    spm_push(h, (spm_pair){rf_tok_score(t, id), left, right, size});
}

/* Lead byte -> length of the UTF-8 sequence it announces (llama.cpp's rule, no validation). */
static inline int32_t utf8_len(uint8_t c) {
    static const uint8_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[c >> 4];
}

static rf_status spm_encode_fragment(const rf_tokenizer *t, rf_tok_scratch *s, const char *raw,
                                     size_t len, bool prev_special, rf_tok_out *out,
                                     rf_error *err) {
    bool prefix = rf_tok_add_space_prefix(t) && prev_special;
    size_t n_space = 0;
    for (size_t i = 0; i < len; i++) n_space += raw[i] == ' ';
    size_t elen = len + 2 * n_space + (prefix ? 3 : 0); /* ' ' -> 3 bytes */
    if (elen > (size_t)INT32_MAX / 4)
        return rf_error_set(err, RF_ERR_ARG, "tokenizer: a text fragment of %zu bytes is too long",
                            len);
    if (elen == 0) return RF_OK;

    char *text = rf_tok_scratch_get(s, 0, elen);
    if (!text) goto nomem;

    /* 1. Escape spaces. */
    size_t e = 0;
    if (prefix) {
        memcpy(text, "\xe2\x96\x81", 3);
        e = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (raw[i] == ' ') {
            memcpy(text + e, "\xe2\x96\x81", 3);
            e += 3;
        } else {
            text[e++] = raw[i];
        }
    }

    /* 2. Symbols. The heap holds at most 2 n_sym - 2 pairs at once: n_sym - 1 to start with,
     * and each merge pops one and pushes at most two. */
    int32_t n_sym = 0;
    for (size_t off = 0; off < elen; off += (size_t)utf8_len((uint8_t)text[off])) n_sym++;
    spm_symbol *sym = rf_tok_scratch_get(s, 1, (size_t)n_sym * sizeof *sym);
    spm_heap heap = {rf_tok_scratch_get(s, 2, 2 * (size_t)n_sym * sizeof *heap.v), 0};
    if (!sym || !heap.v) goto nomem;
    n_sym = 0;
    for (int32_t off = 0; off < (int32_t)elen;) {
        int32_t n = utf8_len((uint8_t)text[off]);
        if (n > (int32_t)elen - off) n = (int32_t)elen - off;
        sym[n_sym] = (spm_symbol){n_sym - 1, off + n == (int32_t)elen ? -1 : n_sym + 1, off, n};
        n_sym++;
        off += n;
    }

    /* 3. Merge the best pairs. */
    for (int32_t i = 1; i < n_sym; i++) try_pair(t, text, sym, &heap, i - 1, i);
    while (heap.n > 0) {
        spm_pair p = spm_pop(&heap);
        spm_symbol *l = &sym[p.left], *r = &sym[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = p.left;
        try_pair(t, text, sym, &heap, l->prev, p.left);
        try_pair(t, text, sym, &heap, p.left, l->next);
    }

    /* 4. Emit. */
    for (int32_t i = 0; i != -1; i = sym[i].next) {
        int32_t id = rf_tok_lookup(t, text + sym[i].off, (size_t)sym[i].n);
        if (id >= 0) {
            rf_tok_out_push(out, id);
            continue;
        }
        for (int32_t k = 0; k < sym[i].n; k++) {
            uint8_t b = (uint8_t)text[sym[i].off + k];
            int32_t bid = rf_tok_byte_id(t, b);
            if (bid < 0) bid = rf_tokenizer_special(t).unk;
            if (bid < 0)
                return rf_error_set(err, RF_ERR_MODEL,
                                    "tokenizer: no token for byte 0x%02X (no <0x%02X> token, no "
                                    "unknown token)",
                                    b, b);
            rf_tok_out_push(out, bid);
        }
    }
    return RF_OK;
nomem:
    return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (%zu-byte fragment)", len);
}

/* Normal tokens: the stored text with U+2581 turned back into ' '. */
static int32_t spm_normal_piece(const rf_tokenizer *t, int32_t id, char *buf, int32_t cap) {
    uint32_t n;
    const char *s = rf_tok_text(t, id, &n);
    int32_t w = 0;
    for (uint32_t i = 0; i < n;) {
        char c;
        if (i + 2 < n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
            c = ' ';
            i += 3;
        } else {
            c = s[i++];
        }
        if (w < cap && buf) buf[w] = c;
        w++;
    }
    return w;
}

const rf_tokenizer_vtable rf_tokenizer_spm_vtable = {
    .model = "llama",
    .encode_fragment = spm_encode_fragment,
    .normal_piece = spm_normal_piece,
};
