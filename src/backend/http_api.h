/* http_api.h: the skeleton of a backend on a plain HTTP(S) chat API (openai:, and any
 * OpenAI-like API), written once; each API is a protocol table (rf_bk_api_proto) over it.
 *
 * The skeleton owns: the URI "SCHEME:http(s)://host[:port][/path]" (checked at validate: a host,
 * no query or fragment, no space or control character; trailing slashes dropped: the base),
 * extra_body (a JSON object merged into every body), the API key (read from cfg->api_key_env at
 * open, kept only inside the libcurl header list, never in results or messages), the model
 * (cfg->model, or, when NULL or empty, data[0].id of GET {base}{models_path}: a short blocking
 * request, open runs before the loop), POSTing each body to {base}{chat_path} with
 * Content-Type: application/json (and no 100-continue round trip) on the libcurl transport
 * (http.h), the reply's reading: an SSE stream folded event by event (proto.h's rf_bk_sse_stream),
 * or one body for a request that did not stream or a server that answered application/json, and
 * HTTP errors: >= 400 -> http_4xx/5xx, "HTTP S: MESSAGE" with the protocol's error_message of
 * the body. Everything else about a transfer (stalls, timeouts, resends, transport failures,
 * retries, cancel) is the transport's.
 *
 * A new OpenAI-like HTTP API (say, Anthropic's Messages API) is one protocol file: its body
 * builder and folds as an rf_bk_proto (proto.h), its rf_bk_api_proto (paths, key header, fixed
 * headers) and `const rf_backend_vtable rf_backend_NAME = RF_BK_API_BACKEND("NAME", &table);`,
 * plus X(NAME) in backend.c's registry.
 *
 * Ownership: the backend owns its URL, model name, header list, parsed extra_body and
 * transport; the tables are static.
 */
#ifndef RF_BACKEND_HTTP_API_H
#define RF_BACKEND_HTTP_API_H

#include "backend/backend.h"
#include "backend/http.h"
#include "backend/proto.h"
#include "roofline/status.h"

typedef struct rf_bk_api_proto {
    /* appended to the base URL: "/chat/completions" */
    const char *chat_path;
    /* GET {base}{models_path} -> data[0].id when no model is given; NULL: a model must be given */
    const char *models_path;
    /* the API key's header line up to the key: "Authorization: Bearer " */
    const char *key_prefix;
    /* more header lines sent with every request (NULL-terminated), or NULL */
    const char *const *headers;
    /* the chat protocol, with event, stream_end and error_message */
    const rf_bk_proto *proto;
} rf_bk_api_proto;

/* The skeleton's functions of the vtable; vt->proto is the rf_bk_api_proto. validate checks the
 * URL and extra_body (RF_ERR_ARG naming what is wrong) without opening anything. */
rf_status rf_bk_api_validate(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_error *err);
rf_status rf_bk_api_open(const rf_backend_vtable *vt, const rf_backend_cfg *cfg, rf_loop *loop,
                         rf_backend **out, rf_error *err);
const char *rf_bk_api_model(const rf_backend *b);
void rf_bk_api_close(rf_backend *b);

/* The rf_backend_vtable of a plain HTTP API: its scheme (the URI shape listed when a scheme is
 * unknown is "SCHEME:URL") and its rf_bk_api_proto. */
#define RF_BK_API_BACKEND(scheme_, table_)                                                         \
    {                                                                                              \
        .scheme = (scheme_), .usage = scheme_ ":URL", .loop_timed = true, .proto = (table_),       \
        .validate = rf_bk_api_validate, .open = rf_bk_api_open, .start = rf_bk_http_backend_start, \
        .cancel = rf_bk_http_backend_cancel, .model = rf_bk_api_model,                             \
        .count_tokens = rf_bk_http_backend_count_tokens, .close = rf_bk_api_close,                 \
    }

#endif
