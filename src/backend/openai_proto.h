/* openai_proto.h: the OpenAI Chat Completions protocol of the bench's client side, without a
 * transport: the request body built from an rf_bk_request, and replies (SSE events of a stream,
 * or one JSON body) folded into the request's rf_bk_result. JSON in, results out; no sockets.
 * Used by the "openai" backend (HTTP) and the "sagemaker" one (the same bodies and chunks inside
 * AWS's framing).
 *
 * Folding: content appended (up to the reply cap), tool-call fragments concatenated per index,
 * finish_reason, usage and llama-server's timings; an error object in a 200 reply is
 * server_error; an event that is not a JSON object is invalid_json. The first error is the
 * cause (rf_bk_fail). Every content-bearing event is stamped with the time given.
 *
 * Ownership: rf_bk_openai_fold owns its tool-call slots (reused across requests: reset, not freed,
 * between them); rf_bk_openai_fold_export copies the calls into the result (the driver frees them
 * with rf_bk_result_free). Not thread-safe; one fold per request in flight.
 */
#ifndef RF_BACKEND_OPENAI_PROTO_H
#define RF_BACKEND_OPENAI_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/proto.h"
#include "util/buf.h"

/* Builds the Chat Completions JSON for req into out (reset first, NUL-terminated). model NULL:
 * no "model" field; extra (a JSON object, or NULL) is merged in last (extra_body). On failure
 * returns false and writes the reason into why (a message naming the field). */
bool rf_bk_openai_build_body(const rf_bk_request *req, const char *model, const json_t *extra,
                             rf_buf *out, char *why, size_t why_n);

/* The double closest to f's shortest decimal form, for JSON numbers: 0.7f goes out as 0.7, not
 * 0.699999988. */
double rf_bk_openai_float_to_double(float f);

/* The message of an OpenAI-style error body: {"error":{"message":...}}, {"error":"..."},
 * {"message":...} or FastAPI's {"detail":...}; else an excerpt of the raw text. Always valid
 * UTF-8 (util/file.h rf_escaped). */
void rf_bk_openai_error_message(const char *body, size_t len, char *out, size_t n);

typedef struct rf_bk_openai_call rf_bk_openai_call; /* one tool call being assembled (private) */

typedef struct rf_bk_openai_fold {
    rf_bk_openai_call *calls;
    int32_t n_calls, cap_calls; /* n_calls: highest used index + 1 */
    bool saw_done;              /* data: [DONE] */
    bool saw_finish;            /* a finish_reason */
} rf_bk_openai_fold;

void rf_bk_openai_fold_init(rf_bk_openai_fold *f);
void rf_bk_openai_fold_free(rf_bk_openai_fold *f);
/* Forgets the previous reply (a new request or a retry), keeping the memory. */
void rf_bk_openai_fold_reset(rf_bk_openai_fold *f);

/* One SSE event of a stream (type "" or the event: field; data as the framer gave it), which
 * arrived at time t; n_event is its 1-based number, for messages. [DONE] sets saw_done (and
 * res.t_done); an empty data is a keep-alive. Returns false when the stream must stop (an event
 * that is not a JSON object: the error is recorded). */
bool rf_bk_openai_fold_event(rf_bk_openai_fold *f, rf_bk_request *req, const char *type,
                             const char *data, size_t len, int64_t t, uint64_t n_event);

/* A whole (non-streamed) reply body that arrived at time t. */
void rf_bk_openai_fold_body(rf_bk_openai_fold *f, rf_bk_request *req, const char *body, size_t len,
                            int64_t t);

/* Folds one piece of the tool call at index idx (0-based, below 256) in the common form: id and
 * name (JSON strings, or NULL) replace what the call had when non-empty; args (a JSON string
 * fragment appended as is, or any other JSON value appended as its compact text; NULL: none).
 * For protocols other than OpenAI's that assemble the same form (Bedrock's toolUse blocks).
 * Returns false when idx is out of range or memory ran out (recorded). */
bool rf_bk_openai_fold_call(rf_bk_openai_fold *f, rf_bk_request *req, int64_t idx, const json_t *id,
                            const json_t *name, const json_t *args);

/* Whether the stream came to its end ([DONE] or a finish_reason). */
bool rf_bk_openai_fold_complete(const rf_bk_openai_fold *f);

/* Moves the assembled tool calls into req->res (calls, n_calls). */
void rf_bk_openai_fold_export(rf_bk_openai_fold *f, rf_bk_request *req);

/* The protocol table (proto.h) of Chat Completions: the body above, SSE events and whole bodies
 * folded as above, the stream truncated unless [DONE] or a finish_reason came, error bodies by
 * rf_bk_openai_error_message. */
extern const rf_bk_proto rf_bk_openai_chat;

#endif
