/* response.h: the OpenAI response shapes the server writes: chat.completion and
 * text_completion bodies, their stream chunks (chat: a role delta first, content deltas, a final
 * chunk with finish_reason and llama-server's "timings"; then, with include_usage, a usage chunk
 * whose choices are empty), the SSE framing ("data: JSON\n\n", "data: [DONE]\n\n"), the error
 * object {"error":{"message","type","param","code"}}, GET /v1/models's list, and the "timings"
 * object with llama-server's field names, present in every completion response.
 *
 * Ownership: every function returning json_t * returns a new reference (caller decrefs) or
 * NULL when out of memory; strings passed in are copied. The SSE writers append to a caller's
 * rf_buf and leave it unchanged on failure. Stateless; thread-safe.
 */
#ifndef RF_OPENAI_RESPONSE_H
#define RF_OPENAI_RESPONSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "openai/request.h"
#include "util/buf.h"

/* What is common to every chunk and body of one response. */
typedef struct rf_openai_meta {
    rf_openai_kind kind;
    const char *id;    /* "chatcmpl-..." or "cmpl-..." */
    int64_t created;   /* Unix seconds */
    const char *model; /* the model id the response names */
} rf_openai_meta;

/* Per-request counts and times (llama-server's "timings"): prompt_n the prompt tokens computed,
 * cache_n those reused from the prefix cache (usage.prompt_tokens is their sum), prompt_ms is
 * admission to the first token (prefill), predicted_ms the first token to the end. */
typedef struct rf_openai_timings {
    int32_t prompt_n, predicted_n, cache_n;
    double prompt_ms, predicted_ms;
} rf_openai_timings;

json_t *rf_openai_timings_json(const rf_openai_timings *t);
/* {prompt_tokens, completion_tokens, total_tokens} and, when cached_tokens >= 0, OpenAI's
 * prompt_tokens_details {cached_tokens} (the prompt tokens served from the prefix cache). */
json_t *rf_openai_usage_json(int32_t prompt_tokens, int32_t completion_tokens,
                             int32_t cached_tokens);

/* {"error": {"message", "type", "param" (null when ""), "code" (null when "")}} */
json_t *rf_openai_error_json(const rf_openai_error *e);

/* A whole non-stream response: one choice with content (len bytes), finish_reason, usage and
 * timings. */
json_t *rf_openai_response_json(const rf_openai_meta *m, const char *content, size_t len,
                                const char *finish, const rf_openai_timings *t);

/* A stream chunk. Chat: delta {role} when role is non-NULL, {content} when content is non-NULL,
 * finish_reason (null when finish is NULL); completions: choice {text, finish_reason}. With t
 * non-NULL the chunk carries "timings" (the final chunk). "usage": null. */
json_t *rf_openai_chunk_json(const rf_openai_meta *m, const char *role, const char *content,
                             size_t len, const char *finish, const rf_openai_timings *t);

/* The include_usage chunk: choices [], usage. */
json_t *rf_openai_usage_chunk_json(const rf_openai_meta *m, int32_t prompt_tokens,
                                   int32_t completion_tokens, int32_t cached_tokens);

/* ---- Building blocks the fake backend (fake/fake_server.c) writes its tool calls and its
 * own envelopes with; generic, for any writer of these shapes. ---- */

/* A chat stream chunk around a caller's delta (stolen, also on failure): choices [{index 0,
 * delta, logprobs null, finish_reason (null when finish is NULL)}], "usage": null. */
json_t *rf_openai_delta_chunk_json(const rf_openai_meta *m, json_t *delta, const char *finish);

/* A stream delta's tool_calls: [{index, id, type "function", function {name, arguments}}],
 * id and type only with id non-NULL, name only when non-NULL; arguments is args[0..len). */
json_t *rf_openai_tool_call_delta_json(int index, const char *id, const char *name,
                                       const char *args, size_t len);

/* A non-stream message's tool_calls: [{id, type "function", function {name, arguments}}]. */
json_t *rf_openai_tool_calls_json(const char *id, const char *name, const char *args);

/* The assistant message of a non-stream chat body: {role, content (null when content is NULL),
 * refusal null, tool_calls (stolen; left out when NULL)}. */
json_t *rf_openai_assistant_json(const char *content, size_t len, json_t *tool_calls);

/* A non-stream chat.completion body around a caller's message (stolen): one choice {index 0,
 * message, logprobs null, finish_reason}, and usage (stolen) unless NULL. No timings. */
json_t *rf_openai_chat_body_json(const rf_openai_meta *m, json_t *message, const char *finish,
                                 json_t *usage);

/* A whole non-stream chat response whose message calls tools: content (NULL: null), the
 * tool_calls array (stolen: [{id, type "function", function {name, arguments}}]), finish_reason
 * (normally "tool_calls"), usage and timings. */
json_t *rf_openai_tool_response_json(const rf_openai_meta *m, const char *content, size_t len,
                                     json_t *tool_calls, const char *finish,
                                     const rf_openai_timings *t);

/* GET /v1/models: {object:"list", data:[{id, object:"model", created, owned_by, root}]}. */
json_t *rf_openai_models_json(const char *id, int64_t created);

/* Appends "data: <o compact>\n\n" and releases o (also on failure). RF_ERR_NOMEM when o is NULL
 * or an allocation fails. */
rf_status rf_openai_sse_event(rf_buf *b, json_t *o);
/* Appends "data: [DONE]\n\n". */
rf_status rf_openai_sse_done(rf_buf *b);

#endif
