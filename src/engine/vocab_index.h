/* vocab_index.h: a tokenizer's vocabulary arranged for constrained decoding: every token's
 * bytes (rf_tokenizer_piece), a byte trie of the ordinary tokens in preorder (so a mask is one
 * pass that skips whole subtrees the matcher rejects), a second trie of only the tokens that are
 * not plain string text, the bitset of plain-string tokens (printable, no '"', '\\' or control
 * byte, complete UTF-8: valid anywhere inside a free string), the user-defined tokens that
 * spell text (Qwen's <tool_call>), and the end-of-generation tokens.
 *
 * Control, unknown and unused tokens and tokens that decode to nothing are in no trie: they are
 * never allowed inside a constraint (end-of-generation tokens only where the output may end).
 *
 * Ownership: rf_vocab_index_build allocates; rf_vocab_index_free releases. Read-only once
 * built: one index serves every request of an engine.
 */
#ifndef RF_ENGINE_VOCAB_INDEX_H
#define RF_ENGINE_VOCAB_INDEX_H

#include <stdint.h>

#include "model/tokenizer.h"
#include "roofline/status.h"

typedef struct rf_trie_node {
    uint32_t end;       /* index just past this node's subtree */
    uint32_t tok_first; /* tokens ending here: ids[tok_first .. tok_first + tok_n) */
    uint16_t depth;     /* bytes from the root (the root is 0) */
    uint16_t tok_n;
    uint8_t byte;
} rf_trie_node;

typedef struct rf_trie {
    rf_trie_node *nodes; /* preorder; nodes[0] is the root */
    uint32_t n_nodes;
    int32_t *ids;
} rf_trie;

typedef struct rf_vocab_index {
    int32_t n_vocab;
    int32_t max_len; /* longest piece */
    uint32_t *off;   /* piece of token i: pool[off[i] .. off[i + 1]) */
    char *pool;
    uint8_t *kind;     /* RF_VK_* per token */
    rf_trie all;       /* every ordinary token */
    rf_trie nonplain;  /* the ordinary tokens that are not plain string text */
    uint64_t *plain;   /* bitset (n_vocab bits) of plain string tokens */
    int32_t *specials; /* user-defined tokens with text */
    int32_t n_specials;
    int32_t *eog;
    int32_t n_eog;
} rf_vocab_index;

enum { RF_VK_NEVER = 0, RF_VK_ORDINARY, RF_VK_SPECIAL, RF_VK_EOG };

rf_status rf_vocab_index_build(const rf_tokenizer *tok, rf_vocab_index **out, rf_error *err);
/* The same from token pieces (copied) and RF_VK_* kinds: for tests and synthetic vocabularies. */
rf_status rf_vocab_index_from_pieces(const char *const *pieces, const uint32_t *lens,
                                     const uint8_t *kinds, int32_t n, rf_vocab_index **out,
                                     rf_error *err);
void rf_vocab_index_free(rf_vocab_index *v);

static inline const char *rf_vocab_piece(const rf_vocab_index *v, int32_t id, uint32_t *len) {
    *len = v->off[id + 1] - v->off[id];
    return v->pool + v->off[id];
}

#endif
