/* constraint.h: a request's constrained generation. Two parts:
 *
 * - rf_constraint_compile turns a request's json_schema, or its tools and tool_choice, into a
 *   schema graph (engine/json_schema.h) in the model's own call format: for json_schema the
 *   output is the value itself; for tool calls an anyOf over the declared tools (NAMED: that one)
 *   of {"name": const, ARGS: the tool's parameters} (ARGS "arguments" for the qwen family,
 *   "parameters" for families without tags), wrapped as the family writes calls:
 *     qwen, required/named: "<tool_call>\n" CALL "\n</tool_call>" (parallel_tool_calls under
 *       required: further calls may follow, each after "\n", and the output may end after any)
 *     qwen, auto: free text until "<tool_call>", then "\n" CALL "\n</tool_call>", then free text
 *       again when parallel_tool_calls (else the request ends after the call); a reply whose
 *       first non-space byte is '{' is a bare CALL (the request ends after it)
 *     others, required/named: up to 4 whitespace bytes and CALL (one call)
 *     others, auto: a reply whose first non-space byte is '{' is a CALL; any other is free.
 * - rf_constraint follows one request's output token by token: whether a token is allowed (the
 *   lazy check on the sampled token), the full mask of allowed tokens (a walk of the vocabulary
 *   trie pruned by the matcher, plain-string tokens as one precomputed class), and advancing.
 *
 * Ownership: rf_constraint_compile gives a schema the caller frees (rf_jschema_free); an
 * rf_constraint borrows its schema and vocabulary index (both must outlive it) and owns its
 * matcher state and scratch (rf_constraint_free).
 */
#ifndef RF_ENGINE_CONSTRAINT_H
#define RF_ENGINE_CONSTRAINT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/json_match.h"
#include "engine/json_schema.h"
#include "engine/vocab_index.h"
#include "roofline/engine.h"

/* *out: the schema, or NULL when the request is not constrained. family: an rf_chat_family.
 * RF_ERR_ARG for bad tools or tool_choice, RF_ERR_UNSUPPORTED for schema keywords the engine
 * cannot enforce (both naming where). */
rf_status rf_constraint_compile(int family, const rf_request_params *p, rf_jschema **out,
                                rf_error *err);

typedef struct rf_constraint rf_constraint;

rf_status rf_constraint_new(const rf_jschema *s, const rf_vocab_index *v, rf_constraint **out,
                            rf_error *err);
void rf_constraint_free(rf_constraint *c);

/* Whether token id may come next (end-of-generation tokens: where the output may end). */
bool rf_constraint_allows(rf_constraint *c, int32_t id);
/* The allowed tokens as a bitset of n_vocab bits (cleared first); returns how many. */
int32_t rf_constraint_mask(rf_constraint *c, uint64_t *bits);
/* Advances past token id; false (state unchanged) when it is not allowed. */
bool rf_constraint_accept(rf_constraint *c, int32_t id);
/* Whether the constrained output is complete and nothing may follow (the request ends). */
bool rf_constraint_done(const rf_constraint *c);

#endif
