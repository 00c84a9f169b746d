/* sagemaker.c: the "sagemaker" backend: a SageMaker Runtime endpoint serving an
 * OpenAI-style chat contract (the AWS vLLM container's), as a protocol table over the AWS
 * skeleton (aws_backend.h) with Chat Completions (openai_proto.h) inside.
 *
 * URI: "sagemaker:REGION/ENDPOINT_NAME" (REGION empty: AWS_REGION / AWS_DEFAULT_REGION).
 * Credentials, endpoint (AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME, AWS_ENDPOINT_URL, else
 * runtime.sagemaker.REGION.amazonaws.com) and SigV4 (signing name "sagemaker") as
 * aws_backend.h says. The body is the Chat Completions body of openai_proto.h ("model" only
 * when the configuration names one; extra_body merged).
 *
 * Not streamed: POST /endpoints/NAME/invocations (Accept: application/json); the reply is the
 * container's chat.completion JSON. Streamed: POST /endpoints/NAME/invocations-response-stream
 * (X-Amzn-SageMaker-Accept: text/event-stream); the reply is an AWS event stream whose
 * PayloadPart events carry the container's SSE bytes, split anywhere: they are fed, in order, to
 * the SSE framer and the OpenAI fold, so an SSE event split across frames is whole again.
 * ModelStreamError -> model_error, InternalStreamFailure -> server_error (aws_error.h); HTTP
 * errors -> aws_error.h's classes with AWS's message and request id.
 */
#include "backend/aws_backend.h"
#include "backend/openai_proto.h"

static const rf_bk_aws_proto sagemaker = {
    .service = RF_AWS_SAGEMAKER_RUNTIME,
    .uri_shape = "sagemaker:REGION/ENDPOINT_NAME",
    .path_prefix = "/endpoints/",
    .plain_suffix = "/invocations",
    .stream_suffix = "/invocations-response-stream",
    .accept_plain = "Accept: application/json",
    .accept_stream = "X-Amzn-SageMaker-Accept: text/event-stream",
    .model_from_cfg = true,
    .proto = &rf_bk_openai_chat,
    .message = NULL, /* PayloadPart payloads are the container's SSE bytes */
};

const rf_backend_vtable rf_backend_sagemaker =
    RF_BK_AWS_BACKEND("sagemaker", "sagemaker:REGION/ENDPOINT", &sagemaker);
