/* bedrock_proto.h: Amazon Bedrock Runtime's Converse and ConverseStream (service model
 * bedrock-runtime 2023-09-30) in the bench's common form, without a transport.
 *
 * Request (rf_bk_bedrock_build_body): system messages -> system[{text}]; user -> {role:user,
 * content:[{text}]}; assistant -> {role:assistant, content:[{text}?, {toolUse{toolUseId, name,
 * input}}...]} from its OpenAI tool_calls (input: the arguments parsed as JSON, or the text as a
 * JSON string when it is not JSON); tool -> {role:user, content:[{toolResult{toolUseId,
 * content:[{text}]}}]}; consecutive messages of one role are merged (Converse wants turns to
 * alternate: parallel tool results become one user turn). inferenceConfig {maxTokens,
 * temperature, topP}; OpenAI tools -> toolConfig.tools[{toolSpec{name, description,
 * inputSchema{json}}}], tool_choice "auto" -> {auto{}}, "required" -> {any{}}, a named function
 * -> {tool{name}}. The backend's extra_body is merged recursively (so stopSequences go as
 * {"inferenceConfig":{"stopSequences":[...]}}, model-specific fields as
 * additionalModelRequestFields). What Converse cannot express is not faked but recorded in
 * res.not_honoured: ignore_eos, tool_choice "none" (tools are then left out, unless the
 * conversation already holds tool turns, which Converse refuses without a toolConfig).
 *
 * Reply: Converse's body (output.message.content[]: text appended, toolUse blocks as tool
 * calls with the input's compact JSON as arguments), or ConverseStream's events
 * (contentBlockStart with a toolUse: a call begins; contentBlockDelta text or toolUse.input
 * fragments; messageStop; metadata), each delta a content event. stopReason end_turn and
 * stop_sequence -> "stop", tool_use -> "tool_calls", max_tokens -> "length",
 * content_filtered and guardrail_intervened -> "content_filter", others as Bedrock names them;
 * usage inputTokens/outputTokens; metrics.latencyMs -> res.server_latency_ms. Exceptions in the
 * stream go through aws_error.h. A stream without messageStop is truncated.
 *
 * Ownership: rf_bk_bedrock_fold owns its tool-call assembly (an rf_bk_openai_fold), reused across
 * requests.
 */
#ifndef RF_BACKEND_BEDROCK_PROTO_H
#define RF_BACKEND_BEDROCK_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "aws/eventstream.h"
#include "backend/openai_proto.h"
#include "backend/proto.h"
#include "util/buf.h"

/* Builds the Converse (and ConverseStream: the same body) request for req into out; extra (a
 * JSON object or NULL) is merged recursively. Sets req->res.not_honoured. false with a reason
 * in why when a field cannot be sent (names the message or field). */
bool rf_bk_bedrock_build_body(rf_bk_request *req, const json_t *extra, rf_buf *out, char *why,
                              size_t why_n);

/* The common finish_reason of a Bedrock stopReason. */
const char *rf_bk_bedrock_finish_reason(const char *stop_reason);

typedef struct rf_bk_bedrock_fold {
    rf_bk_openai_fold calls; /* the tool calls, by content block index */
    bool saw_stop;           /* messageStop */
    bool saw_metadata;       /* metadata (usage, metrics) */
    uint64_t n_events;       /* event messages folded */
} rf_bk_bedrock_fold;

void rf_bk_bedrock_fold_init(rf_bk_bedrock_fold *f);
void rf_bk_bedrock_fold_free(rf_bk_bedrock_fold *f);
void rf_bk_bedrock_fold_reset(rf_bk_bedrock_fold *f);

/* A whole Converse reply body (arrived at t). */
void rf_bk_bedrock_fold_body(rf_bk_bedrock_fold *f, rf_bk_request *req, const char *body,
                             size_t len, int64_t t);
/* One ConverseStream message (arrived at t); false when the stream must stop (an exception or
 * an event that is not the JSON it should be: recorded). */
bool rf_bk_bedrock_fold_event(rf_bk_bedrock_fold *f, rf_bk_request *req, const rf_es_message *m,
                              int64_t t);
/* The same for a message known not to be an exception or error (the AWS skeleton records
 * those): false when it is not the event JSON it should be (recorded). */
bool rf_bk_bedrock_fold_message(rf_bk_bedrock_fold *f, rf_bk_request *req, const rf_es_message *m,
                                int64_t t);
/* The stream ended: truncated without a messageStop. */
void rf_bk_bedrock_fold_end(rf_bk_bedrock_fold *f, rf_bk_request *req);
/* Moves the tool calls into req->res. */
void rf_bk_bedrock_fold_export(rf_bk_bedrock_fold *f, rf_bk_request *req);

/* The protocol table (proto.h) of Converse: the body above, whole Converse bodies folded,
 * the tool calls exported. Its stream is event-stream messages (rf_bk_bedrock_fold_message
 * and _end, given to the AWS skeleton by bedrock.c), not SSE: event and stream_end are NULL. */
extern const rf_bk_proto rf_bk_bedrock_converse;

#endif
