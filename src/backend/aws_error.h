/* aws_error.h: AWS service errors (Bedrock Runtime, SageMaker Runtime) as the bench's error
 * classes, with AWS's own message and request id.
 *
 * An error arrives as an HTTP error reply (the type in the x-amzn-ErrorType header, or "__type"
 * / "code" in the JSON body; the text in "message" / "Message") or, after a 200, as an event
 * stream message of :message-type "exception" (type in :exception-type, JSON payload) or
 * "error" (:error-code, :error-message headers). Types are matched without regard to the case
 * of their first letter (Bedrock's stream names them "throttlingException", its HTTP errors
 * "ThrottlingException").
 *
 * Classes: ThrottlingException, ThrottledException, TooManyRequestsException,
 * ModelNotReadyException and any HTTP 429 -> throttled (retried by the transport; a
 * ServiceQuotaExceededException is a 4xx: waiting does not lift a quota); ModelErrorException,
 * ModelError, ModelStreamErrorException, ModelStreamError -> model_error; ModelTimeoutException
 * (408) -> timeout; InternalStreamFailure, InternalServerException, InternalFailure,
 * ServiceUnavailableException -> http_5xx over HTTP, server_error in a stream; everything else
 * by status (http_4xx, http_5xx), or server_error in a stream.
 *
 * No state; nothing allocates.
 */
#ifndef RF_BACKEND_AWS_ERROR_H
#define RF_BACKEND_AWS_ERROR_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "aws/eventstream.h"

/* The class of an AWS error of type (may be NULL or ""), HTTP status (0 in a stream). */
rf_bk_error rf_bk_aws_error_class(const char *type, long status, bool in_stream);

/* Records an HTTP error reply in req->res: type from the error-type header (error_type, may be
 * "" or NULL; anything from ':' on is dropped) or the body; message "TYPE (HTTP S): MESSAGE
 * [request id ID]". */
void rf_bk_aws_fail_http(rf_bk_result *res, long status, const char *error_type, const char *body,
                         size_t n);

/* Whether m is an exception or error message; when it is, records it in res (class by
 * rf_bk_aws_error_class in a stream) and returns true. */
bool rf_bk_aws_fail_event(rf_bk_result *res, const rf_es_message *m);

#endif
