/* tokenizer_impl.h: the layout of rf_tokenizer and what the files of the generic part share
 * (tokenizer.c, tokenizer_desc.c, tokenizer_gguf.c, tokenizer_eog.c, tokenizer_special.c). Not
 * for the family encoders, which go through tokenizer_int.h's accessors, nor for anyone else.
 *
 * Built once by rf_tokenizer_from_desc (tokenizer_desc.c), read-only afterwards:
 *   - the vocabulary: every token's text (one NUL-terminated pool), score, stored type and the
 *     attribute bits llama.cpp derives from it (tokenizer_int.h);
 *   - an open-addressing hash table from token text to id;
 *   - an Aho-Corasick automaton over the special tokens' texts (control, user-defined, unknown),
 *     used to split them out of the raw text before the family encoder sees it
 *     (tokenizer_special.c);
 *   - the end-of-generation set (an attribute bit; tokenizer_eog.c).
 *
 * Ownership: every array below belongs to the tokenizer and is freed by rf_tokenizer_free
 * (tokenizer.c), as is the family's data (through vt->destroy).
 */
#ifndef RF_MODEL_TOKENIZER_IMPL_H
#define RF_MODEL_TOKENIZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/tokenizer_int.h"

#define RF_TOK_COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct rf_tokenizer {
    const rf_tokenizer_vtable *vt;
    int32_t n_vocab;
    char *pool;     /* all token texts, each NUL-terminated */
    size_t *off;    /* n_vocab + 1 offsets into pool */
    float *scores;  /* n_vocab */
    uint8_t *types; /* n_vocab, rf_token_type as stored */
    uint8_t *attr;  /* n_vocab, RF_TOKATTR_* */
    int32_t *hash;  /* hash_mask + 1 slots, -1 empty */
    uint64_t hash_mask;
    int32_t byte_id[256];
    rf_special_tokens special;
    int32_t eom;
    bool add_bos, add_eos, add_space_prefix;

    /* The special-token automaton over the reversed texts. Node 0 is the root, whose children
     * root_child indexes by byte; nodes are numbered breadth first, so the children of a node
     * are the n_child nodes from first on, sorted by byte. */
    struct ac_node {
        int32_t first;   /* first child */
        int32_t fail;    /* the longest proper suffix of this node's text that is a node */
        int32_t hit[2];  /* the longest suffix (itself included) that ends a token eligible
                          * without [0] / with [1] parse_special, or -1 */
        int32_t id;      /* the token whose reversed text this node spells, or -1 */
        int32_t len_idx; /* index of that token's length in special_lens */
        uint16_t n_child;
        uint8_t byte; /* the byte on the edge from the parent */
    } * ac;
    int32_t n_ac;
    int32_t root_child[256];
    uint32_t *special_lens; /* distinct special-token lengths, longest first */
    int32_t n_special_lens;
    void *family; /* the family's own tables (vt->init), freed by vt->destroy */
};

/* FNV-1a of n bytes, the hash table's hash. */
static inline uint64_t rf_tok_hash_bytes(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)p[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

/* The length of token id's text (its NUL excluded). */
static inline size_t rf_tok_len(const rf_tokenizer *t, int32_t id) {
    return t->off[id + 1] - t->off[id] - 1;
}

/* The id of the token whose text is the C string s, or -1. */
static inline int32_t rf_tok_find_text(const rf_tokenizer *t, const char *s) {
    return rf_tok_lookup(t, s, strlen(s));
}

/* The error for a special id out of range (shown: the value as it was stored). */
rf_status rf_tok_id_range_error(const char *name, const char *key, const char *shown, uint64_t n,
                                rf_error *err);

/* Marks the end-of-turn token (found by text when the file names none) and the
 * end-of-generation set, with llama.cpp's adjustments of the attributes (tokenizer_eog.c). Needs
 * the hash table. */
void rf_tok_mark_eog(rf_tokenizer *t);

/* Builds the special-token automaton and the distinct special lengths from the attributes
 * (tokenizer_special.c); name is for error messages. Needs the hash table (texts are unique). */
rf_status rf_tok_build_specials(rf_tokenizer *t, const char *name, rf_error *err);

#endif
