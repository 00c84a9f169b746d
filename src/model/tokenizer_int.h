/* tokenizer_int.h: what the generic part (tokenizer.c, tokenizer_desc.c, tokenizer_gguf.c,
 * tokenizer_eog.c, tokenizer_special.c; its private layout in tokenizer_impl.h) and the
 * per-family encoders (tokenizer_spm.c; tokenizer_bpe.c, byte-level BPE) share. Not part of the
 * public interface.
 *
 * The generic part owns the vocabulary (texts, scores, types), the text -> id hash table, the
 * special-token trie and the end-of-generation set; it splits special-token text out of the
 * input and hands each remaining fragment to the family's encode_fragment. A family adds a
 * vtable below and one line to the registry in tokenizer_desc.c.
 *
 * rf_tokenizer_from_desc builds a tokenizer from plain arrays: rf_tokenizer_from_gguf is a thin
 * reader on top of it, and unit tests use it to build tiny vocabularies without a file.
 */
#ifndef RF_MODEL_TOKENIZER_INT_H
#define RF_MODEL_TOKENIZER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/tokenizer.h"

/* Token attributes as llama.cpp derives them (a bit set: a type from the file plus what the
 * loader adds, e.g. CONTROL on end-of-generation tokens found by text). */
enum {
    RF_TOKATTR_NORMAL = 1u << 0,
    RF_TOKATTR_UNKNOWN = 1u << 1,
    RF_TOKATTR_CONTROL = 1u << 2,
    RF_TOKATTR_USER_DEFINED = 1u << 3,
    RF_TOKATTR_UNUSED = 1u << 4,
    RF_TOKATTR_BYTE = 1u << 5,
    RF_TOKATTR_EOG = 1u << 6, /* ends generation (not a llama.cpp attribute: its eog set) */
};

/* Output sink for encoders: writes the first cap ids to ids, counts all of them. */
typedef struct rf_tok_out {
    int32_t *ids;
    int64_t cap;
    int64_t n;
} rf_tok_out;

static inline void rf_tok_out_push(rf_tok_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

/* Per-call scratch memory for encoders (one per rf_tokenizer_encode call, so concurrent calls
 * never share it). Slot i is a buffer grown on demand and freed at the end of the call. */
#define RF_TOK_SCRATCH_SLOTS 4
typedef struct rf_tok_scratch {
    void *buf[RF_TOK_SCRATCH_SLOTS];
    size_t cap[RF_TOK_SCRATCH_SLOTS];
} rf_tok_scratch;

/* Returns slot's buffer with room for at least bytes bytes (contents not preserved), or NULL
 * when the allocation fails. */
void *rf_tok_scratch_get(rf_tok_scratch *s, int slot, size_t bytes);

struct rf_tokenizer_desc; /* below */

typedef struct rf_tokenizer_vtable {
    const char *model; /* the tokenizer.ggml.model value this family handles */
    /* Encodes one fragment of raw text (no special tokens inside), appending ids to out.
     * prev_special: the fragment starts the text or follows a special token (SPM uses it for the
     * space prefix). Returns RF_OK, or an error (allocation, a byte with no token). */
    rf_status (*encode_fragment)(const rf_tokenizer *t, rf_tok_scratch *s, const char *text,
                                 size_t len, bool prev_special, rf_tok_out *out, rf_error *err);
    /* Writes the bytes a NORMAL token decodes to (at most cap), returns the full length. */
    int32_t (*normal_piece)(const rf_tokenizer *t, int32_t id, char *buf, int32_t cap);
    /* Optional (NULL: none): builds the family's own tables from d once the vocabulary is in
     * place (the text -> id lookup works), validating what only the family reads. *data is then
     * owned by the tokenizer and handed to destroy by rf_tokenizer_free. */
    rf_status (*init)(const rf_tokenizer *t, const struct rf_tokenizer_desc *d, void **data,
                      rf_error *err);
    void (*destroy)(void *data);
} rf_tokenizer_vtable;

extern const rf_tokenizer_vtable rf_tokenizer_spm_vtable;
extern const rf_tokenizer_vtable rf_tokenizer_bpe_vtable; /* tokenizer_bpe.c: "gpt2" */

/* The most bytes of text the special tokens (control, user-defined, unknown) of a vocabulary may
 * hold in all: the special-token automaton needs ~50 bytes per byte while it is built, so this
 * bounds what a hostile file can make the loader allocate (under 1 GB). Real vocabularies hold
 * a few kB to ~100 kB (Gemma 3: about 76 kB); the splitting cost is linear in the text whatever
 * they hold. */
#define RF_TOK_MAX_SPECIAL_BYTES (16 << 20)

/* Special ids absent from the description. */
#define RF_TOK_ID_ABSENT INT64_MIN

/* A vocabulary as plain arrays (borrowed; copied by rf_tokenizer_from_desc). */
typedef struct rf_tokenizer_desc {
    const char *name;  /* used in error messages (file name); may be NULL */
    const char *model; /* tokenizer.ggml.model */
    uint64_t n_tokens; /* tokenizer.ggml.tokens */
    const rf_str *tokens;
    uint64_t n_scores; /* tokenizer.ggml.scores; scores NULL: absent (all 0) */
    const float *scores;
    uint64_t n_types; /* tokenizer.ggml.token_type; types NULL: absent (all normal) */
    const int32_t *types;
    /* tokenizer.ggml.{bos,eos,unknown,padding,eot,eom}_token_id, RF_TOK_ID_ABSENT if absent */
    int64_t bos, eos, unk, pad, eot, eom;
    /* tokenizer.ggml.add_bos_token, add_eos_token, add_space_prefix: 0, 1, or -1 if absent */
    int add_bos, add_eos, add_space_prefix;
    /* Byte-level BPE ("gpt2"): tokenizer.ggml.pre (ptr NULL: absent) and tokenizer.ggml.merges
     * (merges NULL: absent), each merge "LEFT RIGHT", its rank its index. */
    rf_str pre;
    uint64_t n_merges;
    const rf_str *merges;
} rf_tokenizer_desc;

/* An empty description: every optional field absent. */
rf_tokenizer_desc rf_tokenizer_desc_init(void);

/* Validates d and builds the tokenizer (see rf_tokenizer_from_gguf for the rules). */
rf_status rf_tokenizer_from_desc(const rf_tokenizer_desc *d, rf_tokenizer **out, rf_error *err);

/* A special token found in the text: text[start, start + len) is token id. */
typedef struct rf_tok_region {
    size_t start;
    size_t len;
    int32_t id;
} rf_tok_region;

/* The special-token split of rf_tokenizer_encode on its own (a test hook): *regs gets the *n_regs
 * special tokens found in text, sorted by start (malloc'd; caller frees; NULL when none), and
 * *work (when not NULL) the elementary steps the matcher took (automaton steps, candidate
 * visits, bytes marked), so tests can assert that the cost is linear in len whatever the
 * special tokens are. */
rf_status rf_tok_split_specials(const rf_tokenizer *t, const char *text, size_t len,
                                bool parse_special, rf_tok_region **regs, size_t *n_regs,
                                uint64_t *work, rf_error *err);

/* Accessors encoders use. */
int32_t rf_tok_lookup(const rf_tokenizer *t, const char *text, size_t len); /* -1: none */
float rf_tok_score(const rf_tokenizer *t, int32_t id);
uint32_t rf_tok_attr(const rf_tokenizer *t, int32_t id);
const char *rf_tok_text(const rf_tokenizer *t, int32_t id, uint32_t *len);
int32_t rf_tok_byte_id(const rf_tokenizer *t, uint8_t byte); /* -1: no token for it */
bool rf_tok_add_space_prefix(const rf_tokenizer *t);
const void *rf_tok_family_data(const rf_tokenizer *t); /* what the family's init made, or NULL */

#endif
