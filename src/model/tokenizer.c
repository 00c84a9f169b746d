/* tokenizer.c: the generic part of the tokenizer at run time (see tokenizer.h and
 * tokenizer_int.h): the accessors, encoding (the special tokens split out by tokenizer_special.c,
 * each fragment between them handed to the family's encoder), decoding, and freeing.
 *
 * The rest of the generic part: tokenizer_desc.c builds a tokenizer from a description (the
 * vocabulary checks, the hash table, the byte fallback), tokenizer_gguf.c reads that description
 * from a GGUF file, tokenizer_eog.c finds the end-of-generation tokens and tokenizer_special.c
 * splits special-token text out of the input. tokenizer_impl.h has the layout they share.
 */
#include "model/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "model/tokenizer_impl.h"

void *rf_tok_scratch_get(rf_tok_scratch *s, int slot, size_t bytes) {
    if (bytes <= s->cap[slot] && s->buf[slot]) return s->buf[slot];
    size_t want = s->cap[slot] ? s->cap[slot] : 256;
    while (want < bytes) {
        if (want > SIZE_MAX / 2) {
            want = bytes;
            break;
        }
        want *= 2;
    }
    void *p = malloc(want);
    if (!p) return NULL;
    free(s->buf[slot]);
    s->buf[slot] = p;
    s->cap[slot] = want;
    return p;
}

static void scratch_free(rf_tok_scratch *s) {
    for (int i = 0; i < RF_TOK_SCRATCH_SLOTS; i++) free(s->buf[i]);
}

/* ---- accessors ------------------------------------------------------------------------- */

int32_t rf_tok_lookup(const rf_tokenizer *t, const char *text, size_t len) {
    uint64_t i = rf_tok_hash_bytes(text, len) & t->hash_mask;
    for (;;) {
        int32_t id = t->hash[i];
        if (id < 0) return -1;
        if (rf_tok_len(t, id) == len && memcmp(t->pool + t->off[id], text, len) == 0) return id;
        i = (i + 1) & t->hash_mask;
    }
}

float rf_tok_score(const rf_tokenizer *t, int32_t id) {
    return t->scores[id];
}
uint32_t rf_tok_attr(const rf_tokenizer *t, int32_t id) {
    return t->attr[id];
}
int32_t rf_tok_byte_id(const rf_tokenizer *t, uint8_t byte) {
    return t->byte_id[byte];
}
bool rf_tok_add_space_prefix(const rf_tokenizer *t) {
    return t->add_space_prefix;
}
const void *rf_tok_family_data(const rf_tokenizer *t) {
    return t->family;
}

const char *rf_tok_text(const rf_tokenizer *t, int32_t id, uint32_t *len) {
    if (len) *len = (uint32_t)rf_tok_len(t, id);
    return t->pool + t->off[id];
}

int32_t rf_tokenizer_n_vocab(const rf_tokenizer *t) {
    return t->n_vocab;
}
rf_special_tokens rf_tokenizer_special(const rf_tokenizer *t) {
    return t->special;
}

rf_token_type rf_tokenizer_token_type(const rf_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_vocab) return RF_TOKEN_UNDEFINED;
    return (rf_token_type)t->types[id];
}

const char *rf_tokenizer_token_text(const rf_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_vocab) return NULL;
    return t->pool + t->off[id];
}

bool rf_tokenizer_is_eog(const rf_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && (t->attr[id] & RF_TOKATTR_EOG);
}

bool rf_tokenizer_add_bos(const rf_tokenizer *t) {
    return t->add_bos;
}
bool rf_tokenizer_add_eos(const rf_tokenizer *t) {
    return t->add_eos;
}

/* ---- freeing ---------------------------------------------------------------------------- */

void rf_tokenizer_free(rf_tokenizer *t) {
    if (!t) return;
    if (t->vt && t->vt->destroy) t->vt->destroy(t->family);
    free(t->pool);
    free(t->off);
    free(t->scores);
    free(t->types);
    free(t->attr);
    free(t->hash);
    free(t->ac);
    free(t->special_lens);
    free(t);
}

/* ---- encoding ---------------------------------------------------------------------------- */

int64_t rf_tokenizer_encode(const rf_tokenizer *t, const char *text, size_t len, bool add_special,
                            bool parse_special, int32_t *out, int64_t cap, rf_error *err) {
    rf_tok_out o = {out, out ? (cap > 0 ? cap : 0) : 0, 0};
    if (add_special && t->add_bos) rf_tok_out_push(&o, t->special.bos);
    if (len > 0 && !text) {
        rf_error_set(err, RF_ERR_ARG, "tokenizer: NULL text of %zu bytes", len);
        return -1;
    }

    rf_tok_region *regs = NULL;
    size_t n_regs = 0;
    rf_status st = rf_tok_split_specials(t, text, len, parse_special, &regs, &n_regs, NULL, err);
    if (st) return -1;

    rf_tok_scratch scratch;
    memset(&scratch, 0, sizeof scratch);
    size_t pos = 0;
    bool prev_special = true;
    for (size_t i = 0; i <= n_regs && !st; i++) {
        size_t end = i < n_regs ? regs[i].start : len;
        if (end > pos) {
            st = t->vt->encode_fragment(t, &scratch, text + pos, end - pos, prev_special, &o, err);
            prev_special = false;
        }
        if (i < n_regs) {
            rf_tok_out_push(&o, regs[i].id);
            prev_special = true;
            pos = regs[i].start + regs[i].len;
        }
    }
    scratch_free(&scratch);
    free(regs);
    if (st) return -1;
    if (add_special && t->add_eos) rf_tok_out_push(&o, t->special.eos);
    return o.n;
}

int64_t rf_tokenizer_encode_alloc(const rf_tokenizer *t, const char *text, size_t len,
                                  bool add_special, bool parse_special, int32_t **out,
                                  rf_error *err) {
    *out = NULL;
    if (len > (size_t)INT32_MAX) {
        rf_error_set(err, RF_ERR_ARG, "text of %zu bytes: too long to tokenize", len);
        return -1;
    }
    int64_t cap = (int64_t)len + 8; /* a byte per id and BOS/EOS: short only when a byte becomes
                                       several ids */
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) goto oom;
    int64_t n = rf_tokenizer_encode(t, text, len, add_special, parse_special, ids, cap, err);
    if (n > cap) {
        int32_t *more = realloc(ids, (size_t)n * sizeof *ids);
        if (!more) goto oom;
        ids = more;
        cap = n;
        n = rf_tokenizer_encode(t, text, len, add_special, parse_special, ids, cap, err);
        if (n > cap) {
            free(ids);
            rf_error_set(err, RF_ERR_INTERNAL, "tokenizing %zu bytes: the count changed", len);
            return -1;
        }
    }
    if (n < 0) {
        free(ids);
        return -1;
    }
    *out = ids;
    return n;
oom:
    free(ids);
    rf_error_set(err, RF_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
    return -1;
}

/* ---- decoding ---------------------------------------------------------------------------- */

static int hex_val(char c) {
    return c <= '9' ? c - '0' : c - 'A' + 10;
}

/* Text of a byte token, validated at load: "<0xHH>". */
static uint8_t byte_token_value(const char *s) {
    return (uint8_t)(hex_val(s[3]) * 16 + hex_val(s[4]));
}

static int32_t copy_out(const char *src, size_t n, char *buf, int32_t cap) {
    if (cap > 0 && buf) memcpy(buf, src, n < (size_t)cap ? n : (size_t)cap);
    return (int32_t)n;
}

int32_t rf_tokenizer_piece(const rf_tokenizer *t, int32_t id, bool special, char *buf,
                           int32_t cap) {
    if (id < 0 || id >= t->n_vocab) return -1;
    uint32_t a = t->attr[id];
    if (a & (RF_TOKATTR_CONTROL | RF_TOKATTR_UNKNOWN)) {
        if (!special) return 0;
        return copy_out(t->pool + t->off[id], rf_tok_len(t, id), buf, cap);
    }
    if (a & RF_TOKATTR_USER_DEFINED)
        return copy_out(t->pool + t->off[id], rf_tok_len(t, id), buf, cap);
    if (a & RF_TOKATTR_NORMAL) return t->vt->normal_piece(t, id, buf, cap);
    if (a & RF_TOKATTR_BYTE) {
        char c = (char)byte_token_value(t->pool + t->off[id]);
        return copy_out(&c, 1, buf, cap);
    }
    return 0; /* unused and undefined tokens decode to nothing */
}

int64_t rf_tokenizer_decode(const rf_tokenizer *t, const int32_t *ids, int64_t n, bool special,
                            char *buf, int64_t cap) {
    int64_t total = 0;
    if (cap < 0) cap = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t room = cap > 0 ? cap - 1 - total : 0;
        if (room < 0) room = 0;
        if (room > INT32_MAX) room = INT32_MAX;
        int32_t k =
            rf_tokenizer_piece(t, ids[i], special, room ? buf + total : NULL, (int32_t)room);
        if (k < 0) {
            if (cap > 0) buf[0] = 0;
            return -1;
        }
        total += k;
    }
    if (cap > 0) buf[total < cap ? total : cap - 1] = 0;
    return total;
}
