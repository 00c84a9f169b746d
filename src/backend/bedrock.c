/* bedrock.c: the "bedrock" backend: Amazon Bedrock Runtime's Converse (not streamed)
 * and ConverseStream (streamed) as a protocol table over the AWS skeleton (aws_backend.h), with
 * bedrock_proto.h's mapping to and from the bench's common form.
 *
 * URI: "bedrock:REGION/MODEL_ID" (REGION empty: AWS_REGION / AWS_DEFAULT_REGION); MODEL_ID a
 * model id ("anthropic.claude-3-haiku-20240307-v1:0"), an inference profile ("us.amazon.nova-
 * micro-v1:0") or an ARN, percent-encoded into the path (':' as %3A, '/' as %2F). Credentials,
 * endpoint (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL, else
 * bedrock-runtime.REGION.amazonaws.com) and SigV4 (signing name "bedrock"; our signer on
 * libcurl < 8.14, whose signer gets escaped paths wrong) as aws_backend.h says.
 *
 * POST /model/ID/converse (Accept: application/json) or /model/ID/converse-stream (Accept:
 * application/vnd.amazon.eventstream). Stream exceptions (throttlingException,
 * modelStreamErrorException, validationException, ...) and HTTP errors -> aws_error.h's
 * classes with AWS's message and request id; throttling is retried by the transport.
 * cfg->model is not sent (the id is in the path); the model recorded is MODEL_ID.
 */
#include "backend/aws_backend.h"
#include "backend/bedrock_proto.h"

static bool message(void *fold, rf_bk_request *req, const rf_es_message *m, int64_t t) {
    return rf_bk_bedrock_fold_message(fold, req, m, t);
}

static void stream_end(void *fold, rf_bk_request *req) {
    rf_bk_bedrock_fold_end(fold, req);
}

static const rf_bk_aws_proto bedrock = {
    .service = RF_AWS_BEDROCK_RUNTIME,
    .uri_shape = "bedrock:REGION/MODEL_ID",
    .path_prefix = "/model/",
    .plain_suffix = "/converse",
    .stream_suffix = "/converse-stream",
    .accept_plain = "Accept: application/json",
    .accept_stream = "Accept: application/vnd.amazon.eventstream",
    .model_from_cfg = false,
    .proto = &rf_bk_bedrock_converse,
    .message = message,
    .stream_end = stream_end,
};

const rf_backend_vtable rf_backend_bedrock =
    RF_BK_AWS_BACKEND("bedrock", "bedrock:REGION/MODEL_ID", &bedrock);
