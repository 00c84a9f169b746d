/* tokenizer.h: text <-> token ids, from a GGUF vocabulary.
 *
 * One interface, one implementation per tokenizer family behind it: "llama" (SentencePiece
 * style: scores, byte fallback, U+2581 for spaces; tokenizer_spm.c) now, byte-level BPE later
 * (a new file registering its own vtable, no change here).
 *
 * Encoding follows llama.cpp: special-token text is split out of the raw text first (user-defined
 * tokens always; control and unknown tokens only when parse_special is set), then each remaining
 * fragment is encoded on its own; BOS is prepended when add_special is set and the vocabulary
 * says add_bos.
 *
 * Ownership: rf_tokenizer_create copies everything it needs from the parameters, so the rf_gguf
 * it was built from may be closed afterwards. The caller frees with rf_tokenizer_free. Encode and
 * decode are read-only on the tokenizer and safe to call from several threads at once.
 */
#ifndef RF_MODEL_TOKENIZER_H
#define RF_MODEL_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/gguf.h"
#include "roofline/status.h"

typedef enum rf_token_type {
    RF_TOKEN_UNDEFINED = 0,
    RF_TOKEN_NORMAL = 1,
    RF_TOKEN_UNKNOWN = 2,
    RF_TOKEN_CONTROL = 3,
    RF_TOKEN_USER_DEFINED = 4,
    RF_TOKEN_UNUSED = 5,
    RF_TOKEN_BYTE = 6,
} rf_token_type;

typedef struct rf_tokenizer rf_tokenizer;

/* Special ids; -1 when the vocabulary has none. */
typedef struct rf_special_tokens {
    int32_t bos, eos, unk, pad, eot; /* eot: <end_of_turn> or the model's end-of-turn token */
    int32_t start_of_turn;           /* Gemma's <start_of_turn>, -1 elsewhere */
} rf_special_tokens;

/* Builds the tokenizer described by the tokenizer.ggml.* keys of g: model, tokens, scores,
 * token_type, bos/eos/unknown/padding ids, add_bos_token, add_eos_token, add_space_prefix.
 * Validates what it reads (byte tokens are exactly <0xHH>, special ids in range, array lengths
 * agree, token texts unique) and fails with RF_ERR_MODEL / RF_ERR_UNSUPPORTED naming the key.
 * Also reads eot_token_id and eom_token_id when present. Keys left out take llama.cpp's defaults
 * for the family ("llama": bos 1, eos 2, unk 0, add_bos on, add_eos off, space prefix on); the
 * end-of-turn token is then found by text ("<end_of_turn>", "<|eot_id|>", ...), and the
 * end-of-generation set is eos, eot, eom and the tokens llama.cpp recognises by text ("</s>",
 * "<|im_end|>", ...; for Gemma 3: 1 <eos>, 106 <end_of_turn>, 212 </s>). */
rf_status rf_tokenizer_from_gguf(const rf_gguf *g, rf_tokenizer **out, rf_error *err);

void rf_tokenizer_free(rf_tokenizer *t);

int32_t rf_tokenizer_n_vocab(const rf_tokenizer *t);
rf_special_tokens rf_tokenizer_special(const rf_tokenizer *t);
/* The type stored in the file (tokenizer.ggml.token_type; RF_TOKEN_UNDEFINED out of range). The
 * loader's adjustments (llama.cpp's: e.g. "</s>" is treated as control because it ends
 * generation) show in splitting, decoding and is_eog, not here. */
rf_token_type rf_tokenizer_token_type(const rf_tokenizer *t, int32_t id);
/* The stored text of a token (as in the vocabulary, U+2581 and all); NULL when out of range. */
const char *rf_tokenizer_token_text(const rf_tokenizer *t, int32_t id);
/* True for ids that end generation (eos, eot and any other end-of-generation token). */
bool rf_tokenizer_is_eog(const rf_tokenizer *t, int32_t id);

/* Whether encoding with add_special prepends BOS / appends EOS (tokenizer.ggml.add_bos_token,
 * add_eos_token; llama.cpp's defaults for the family when absent). */
bool rf_tokenizer_add_bos(const rf_tokenizer *t);
bool rf_tokenizer_add_eos(const rf_tokenizer *t);

/* Encodes len bytes of text (any bytes: invalid UTF-8 is encoded byte by byte). Writes at most
 * cap ids to out and returns the total number of ids the text needs (call again with a larger
 * buffer when the result exceeds cap), or -1 with err set on an internal failure (allocation),
 * or when a byte has no token (no <0xHH> token, no single-byte token, no unknown token). With
 * add_special, EOS is also appended when the vocabulary says add_eos (llama.cpp does). */
int64_t rf_tokenizer_encode(const rf_tokenizer *t, const char *text, size_t len, bool add_special,
                            bool parse_special, int32_t *out, int64_t cap, rf_error *err);
/* As rf_tokenizer_encode into a new array *out (the caller frees it; NULL on failure): one pass
 * when the text needs at most len + 8 ids (almost always), a second only when it needs more.
 * Returns the number of ids, or -1 with err set (the encoder's error, or out of memory). */
int64_t rf_tokenizer_encode_alloc(const rf_tokenizer *t, const char *text, size_t len,
                                  bool add_special, bool parse_special, int32_t **out,
                                  rf_error *err);

/* The bytes one token decodes to. special: render control tokens' text (e.g. "<end_of_turn>");
 * otherwise they decode to nothing. Writes at most cap bytes (no NUL) and returns the piece's
 * full length, or -1 for an id out of range. */
int32_t rf_tokenizer_piece(const rf_tokenizer *t, int32_t id, bool special, char *buf, int32_t cap);

/* Decodes n ids into buf (NUL-terminated when cap > 0). Returns the full length needed excluding
 * the NUL (as snprintf), or -1 when an id is out of range. */
int64_t rf_tokenizer_decode(const rf_tokenizer *t, const int32_t *ids, int64_t n, bool special,
                            char *buf, int64_t cap);

#endif
