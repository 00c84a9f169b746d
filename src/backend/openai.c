/* openai.c: the "openai" backend: Chat Completions (openai_proto.h) over HTTP(S), streamed
 * (SSE, with usage) or as one JSON body, as a protocol table over the plain HTTP skeleton
 * (http_api.h).
 *
 * URI: "openai:http://host:port/v1" (or https). The API key, when cfg->api_key_env names one,
 * goes as "Authorization: Bearer KEY"; with no model configured, GET {base}/models gives
 * data[0].id. Each body is POSTed to {base}/chat/completions; HTTP >= 400 -> http_4xx/5xx with
 * the body's error.message (rf_bk_openai_error_message).
 */
#include "backend/http_api.h"
#include "backend/openai_proto.h"

static const rf_bk_api_proto openai = {
    .chat_path = "/chat/completions",
    .models_path = "/models",
    .key_prefix = "Authorization: Bearer ",
    .headers = NULL,
    .proto = &rf_bk_openai_chat,
};

const rf_backend_vtable rf_backend_openai = RF_BK_API_BACKEND("openai", &openai);
