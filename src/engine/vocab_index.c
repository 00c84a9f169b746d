/* vocab_index.c: token pieces, preorder byte tries and token classes. */
#include "engine/vocab_index.h"

#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PIECE 1024 /* longer pieces are never allowed (no vocabulary has them) */

typedef struct ent {
    const char *s;
    uint32_t len;
    int32_t id;
} ent;

static int cmp_ent(const void *a, const void *b) {
    const ent *x = a, *y = b;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Builds a preorder trie over the tokens e[0..n) (sorted by bytes). */
static rf_status build_trie(ent *e, int32_t n, rf_trie *t) {
    size_t cap = 1;
    for (int32_t i = 0; i < n; i++) cap += e[i].len;
    t->nodes = malloc(cap * sizeof *t->nodes);
    t->ids = malloc((size_t)(n ? n : 1) * sizeof *t->ids);
    uint32_t *stack = malloc((MAX_PIECE + 1) * sizeof *stack);
    if (!t->nodes || !t->ids || !stack) {
        free(stack);
        return RF_ERR_NOMEM;
    }
    uint32_t nn = 1;
    t->nodes[0] = (rf_trie_node){0, 0, 0, 0, 0};
    stack[0] = 0;
    uint32_t depth = 0; /* bytes of the previous token (the open path) */
    const char *prev = "";
    for (int32_t i = 0; i < n; i++) {
        uint32_t l = 0;
        while (l < depth && l < e[i].len && prev[l] == e[i].s[l]) l++;
        for (uint32_t d = depth; d > l; d--) t->nodes[stack[d]].end = nn;
        for (uint32_t d = l + 1; d <= e[i].len; d++) {
            t->nodes[nn] = (rf_trie_node){0, 0, (uint16_t)d, 0, (uint8_t)e[i].s[d - 1]};
            stack[d] = nn++;
        }
        depth = e[i].len;
        prev = e[i].s;
        rf_trie_node *leaf = &t->nodes[stack[depth]];
        if (!leaf->tok_n) leaf->tok_first = (uint32_t)i;
        leaf->tok_n++;
        t->ids[i] = e[i].id;
    }
    for (uint32_t d = depth; d > 0; d--) t->nodes[stack[d]].end = nn;
    t->nodes[0].end = nn;
    t->n_nodes = nn;
    free(stack);
    rf_trie_node *shrunk = realloc(t->nodes, (size_t)nn * sizeof *t->nodes);
    if (shrunk) t->nodes = shrunk;
    return RF_OK;
}

/* Printable, no quote, backslash or control byte, valid UTF-8 (util/utf8.h's rule, stricter
 * than the matcher's: a plain token is always one the matcher takes inside a free string). */
static bool plain_string(const char *p, uint32_t len) {
    for (uint32_t i = 0; i < len;) {
        size_t k = rf_utf8_seq(p + i, len - i);
        unsigned char c = (unsigned char)p[i];
        if (!k || (k == 1 && (c < 0x20 || c == 0x7F || c == '"' || c == '\\'))) return false;
        i += (uint32_t)k;
    }
    return true;
}

rf_status rf_vocab_index_from_pieces(const char *const *pieces, const uint32_t *lens,
                                     const uint8_t *kinds, int32_t n, rf_vocab_index **out,
                                     rf_error *err) {
    *out = NULL;
    rf_vocab_index *v = calloc(1, sizeof *v);
    ent *e = NULL;
    ent *np = NULL;
    if (!v) goto nomem;
    v->n_vocab = n;
    v->off = malloc(((size_t)n + 1) * sizeof *v->off);
    v->kind = calloc((size_t)(n ? n : 1), 1);
    v->plain = calloc(((size_t)n + 63) / 64 + 1, sizeof *v->plain);
    v->specials = malloc((size_t)(n ? n : 1) * sizeof *v->specials);
    v->eog = malloc((size_t)(n ? n : 1) * sizeof *v->eog);
    if (!v->off || !v->kind || !v->plain || !v->specials || !v->eog) goto nomem;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        v->off[i] = (uint32_t)total;
        if (lens[i] <= MAX_PIECE) total += lens[i];
    }
    v->off[n] = (uint32_t)total;
    v->pool = malloc(total ? total : 1);
    if (!v->pool) goto nomem;
    for (int32_t i = 0; i < n; i++) {
        int32_t l = (int32_t)(v->off[i + 1] - v->off[i]);
        if (l) memcpy(v->pool + v->off[i], pieces[i], (size_t)l);
        if (l > v->max_len) v->max_len = l;
    }
    e = malloc((size_t)(n ? n : 1) * sizeof *e);
    np = malloc((size_t)(n ? n : 1) * sizeof *np);
    if (!e || !np) goto nomem;
    int32_t ne = 0, nnp = 0;
    for (int32_t i = 0; i < n; i++) {
        uint32_t len;
        const char *p = rf_vocab_piece(v, i, &len);
        uint8_t k = kinds[i];
        if (k != RF_VK_EOG && !len) k = RF_VK_NEVER;
        v->kind[i] = k;
        if (k == RF_VK_EOG) {
            v->eog[v->n_eog++] = i;
        } else if (k == RF_VK_ORDINARY) {
            e[ne++] = (ent){p, len, i};
            if (plain_string(p, len))
                v->plain[i / 64] |= 1ull << (i % 64);
            else
                np[nnp++] = (ent){p, len, i};
        } else if (k == RF_VK_SPECIAL) {
            v->specials[v->n_specials++] = i;
        }
    }
    qsort(e, (size_t)ne, sizeof *e, cmp_ent);
    qsort(np, (size_t)nnp, sizeof *np, cmp_ent);
    if (build_trie(e, ne, &v->all) || build_trie(np, nnp, &v->nonplain)) goto nomem;
    free(e);
    free(np);
    *out = v;
    return RF_OK;
nomem:
    free(e);
    free(np);
    rf_vocab_index_free(v);
    return rf_error_set(err, RF_ERR_NOMEM, "vocabulary index: out of memory");
}

rf_status rf_vocab_index_build(const rf_tokenizer *tok, rf_vocab_index **out, rf_error *err) {
    *out = NULL;
    int32_t n = rf_tokenizer_n_vocab(tok);
    const char **pieces = calloc((size_t)(n ? n : 1), sizeof *pieces);
    uint32_t *lens = calloc((size_t)(n ? n : 1), sizeof *lens);
    uint8_t *kinds = calloc((size_t)(n ? n : 1), 1);
    char *pool = NULL;
    rf_status st = RF_OK;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t l = rf_tokenizer_piece(tok, i, false, NULL, 0);
        if (lens) lens[i] = l > 0 ? (uint32_t)l : 0;
        total += l > 0 ? (size_t)l : 0;
    }
    pool = malloc(total ? total : 1);
    if (!pieces || !lens || !kinds || !pool) {
        st = rf_error_set(err, RF_ERR_NOMEM, "vocabulary index: out of memory");
        goto done;
    }
    size_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        rf_tokenizer_piece(tok, i, false, pool + at, (int32_t)lens[i]);
        pieces[i] = pool + at;
        at += lens[i];
        rf_token_type ty = rf_tokenizer_token_type(tok, i);
        if (rf_tokenizer_is_eog(tok, i))
            kinds[i] = RF_VK_EOG;
        else if (ty == RF_TOKEN_NORMAL || ty == RF_TOKEN_BYTE || ty == RF_TOKEN_UNDEFINED)
            kinds[i] = RF_VK_ORDINARY;
        else if (ty == RF_TOKEN_USER_DEFINED)
            kinds[i] = RF_VK_SPECIAL;
    }
    st = rf_vocab_index_from_pieces(pieces, lens, kinds, n, out, err);
done:
    free(pieces);
    free(lens);
    free(kinds);
    free(pool);
    return st;
}

void rf_vocab_index_free(rf_vocab_index *v) {
    if (!v) return;
    free(v->off);
    free(v->pool);
    free(v->kind);
    free(v->plain);
    free(v->specials);
    free(v->eog);
    free(v->all.nodes);
    free(v->all.ids);
    free(v->nonplain.nodes);
    free(v->nonplain.ids);
    free(v);
}
