/* tokenizer_bpe.h: test hooks into the byte-level BPE family (tokenizer_bpe.c), which is
 * otherwise reached only through tokenizer.h. Not part of the public interface.
 *
 * Both hooks work on one fragment of raw text (no special-token splitting), exactly as
 * rf_tokenizer_encode hands it to the family.
 */
#ifndef RF_MODEL_TOKENIZER_BPE_H
#define RF_MODEL_TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "model/tokenizer_int.h"

/* The words a pre-tokenizer ("qwen2", "smollm") cuts text into. The text is first decoded as
 * llama.cpp does (see unicode.h: a bad byte becomes U+FFFD, an overlong form its code point)
 * and re-encoded: *norm gets those bytes (malloc'd, caller frees; NULL when len is 0),
 * *norm_len their number, and ends[0, *n_words) (malloc'd, caller frees) the end offset in
 * *norm of each word, in order (a word starts where the previous one ends). A code point past
 * U+10FFFF keeps its original four bytes. Errors: an unknown pre-tokenizer (RF_ERR_UNSUPPORTED),
 * allocation. */
rf_status rf_bpe_split(const char *pre, const char *text, size_t len, char **norm, size_t *norm_len,
                       size_t **ends, size_t *n_words, rf_error *err);

/* What one encode of a fragment did, for bounds on the work that do not depend on timing. */
typedef struct rf_bpe_work {
    uint64_t words;    /* words from the pre-tokenizer */
    uint64_t bytes;    /* bytes of those words (= initial symbols) */
    uint64_t merges;   /* merges applied (each removes one symbol: <= bytes - words) */
    uint64_t pushes;   /* candidate pairs pushed on the heap */
    uint64_t pops;     /* pairs popped (applied or stale) */
    uint64_t lookups;  /* merge-table lookups (one per adjacent pair considered) */
    uint64_t probes;   /* hash slots visited by those lookups */
    uint64_t max_heap; /* the most pairs on the heap at once */
} rf_bpe_work;

/* Encodes text as one fragment with t (a "gpt2" tokenizer), appending ids to out (see
 * rf_tok_out), and adds what it did to *work. RF_ERR_ARG when t is not byte-level BPE. */
rf_status rf_bpe_encode_counted(const rf_tokenizer *t, const char *text, size_t len,
                                rf_tok_out *out, rf_bpe_work *work, rf_error *err);

#endif
