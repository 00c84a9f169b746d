/* logprobs.h: per-token log-probabilities in OpenAI's response shapes.
 *
 * The server keeps one rf_openai_lp per generated token, copied from the engine's token events
 * (rf_openai_lps_push, every event with a token: the end-of-generation token that ends a reply
 * too, so there are as many entries as usage.completion_tokens counts), and formats them when it
 * writes a response or a stream chunk:
 *   chat:        {"content": [{"token", "logprob", "bytes": [int...], "top_logprobs":
 *                 [{"token", "logprob", "bytes"}...]}...], "refusal": null}
 *   completions: {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}...],
 *                 "text_offset": [...]} (the legacy shape: each top_logprobs object holds the
 *                 most likely alternatives and the sampled token, so up to n + 1 keys)
 * A token's text is its piece (the engine's detokenizer on that one id): the pieces of a reply
 * concatenate to its text, except for bytes a stop string cut off. A piece that is not valid
 * UTF-8 (part of a character split across tokens) shows each bad byte as U+FFFD in "token"
 * while "bytes" keeps the raw bytes. text_offset counts characters (code points) of those
 * token strings from the start of the completion. A log-probability below -9999 (or not
 * finite) is written as -9999, as OpenAI does.
 *
 * Ownership: rf_openai_lps owns its array (rf_openai_lps_free); the JSON functions return a new
 * reference (caller decrefs) or NULL when out of memory. Not synchronised: the server guards a
 * list with its request's lock.
 */
#ifndef RF_OPENAI_LOGPROBS_H
#define RF_OPENAI_LOGPROBS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/engine.h"
#include "roofline/status.h"
#include "openai/request.h"

typedef struct rf_openai_lp {
    int32_t token;
    float logprob;
    int32_t n_top;
    int32_t top_ids[RF_MAX_TOP_LOGPROBS];
    float top_lps[RF_MAX_TOP_LOGPROBS];
} rf_openai_lp;

typedef struct rf_openai_lps {
    rf_openai_lp *v;
    size_t n, cap;
} rf_openai_lps;

/* Appends ev's token and log-probabilities (ev->token >= 0). RF_ERR_NOMEM when growing fails. */
rf_status rf_openai_lps_push(rf_openai_lps *l, const rf_event *ev);
void rf_openai_lps_free(rf_openai_lps *l);

/* One token's piece, as rf_engine_detokenize on that id: writes at most cap bytes
 * (NUL-terminated when cap > 0), returns the length needed, or -1 (then the piece is empty). */
typedef int64_t (*rf_openai_piece_fn)(void *user, int32_t id, char *buf, int64_t cap);

/* The logprobs object of a choice for entries v[0..n) (shape by kind, above). *text_offset
 * (completions) is where the first token starts and is advanced past the last, so the chunks
 * of a stream continue each other's offsets. */
json_t *rf_openai_logprobs_json(rf_openai_kind kind, const rf_openai_lp *v, size_t n,
                                rf_openai_piece_fn piece, void *user, int64_t *text_offset);

/* Sets choices[0].logprobs of o (a response or chunk of response.h) to lp (released). Returns
 * o, or NULL when either is NULL or out of memory (both released). */
json_t *rf_openai_with_logprobs(json_t *o, json_t *lp);

#endif
