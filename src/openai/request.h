/* request.h: parsing and validating OpenAI request bodies (POST /v1/chat/completions and
 * POST /v1/completions) with jansson, strictly: a field of the wrong type or out of range is a
 * 400 whose error names the field (param); an unknown model is a 404 model_not_found. Unknown
 * extra fields are ignored, as OpenAI does. presence_penalty and frequency_penalty are in
 * [-2, 2]. Log-probabilities: chat takes logprobs (a boolean) and top_logprobs (0..20; above 0
 * only with logprobs true, as OpenAI and vLLM require), completions the legacy logprobs (an
 * integer 0..5: how many alternatives). Chat's tools, tool_choice, parallel_tool_calls and
 * response_format are read by tools.c (an empty tools array is a 400, as OpenAI's);
 * whether the engine can enforce a schema is checked at submission (rf_engine_submit).
 *
 * Files: the parser is request.c, which calls tools.c for the tool fields; both use error.c
 * (rf_openai_error_set, rf_openai_jr_error) and request_own.c (rf_openai_req_own,
 * rf_openai_req_free), and neither of those calls back, so calls go one way.
 *
 * Ownership: rf_openai_parse fills a rf_openai_req that owns the parsed JSON tree and every string
 * it points to (message texts borrow from the tree or from strings the request owns); release it
 * with rf_openai_req_free, which also leaves it zeroed. Nothing is global; thread-safe.
 */
#ifndef RF_OPENAI_REQUEST_H
#define RF_OPENAI_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/engine.h"
#include "roofline/status.h"

typedef enum rf_openai_kind { RF_OPENAI_CHAT = 0, RF_OPENAI_COMPLETION } rf_openai_kind;

/* An OpenAI error, ready for rf_openai_error_json: http status, type, param ("" for null), code
 * ("" for null) and message. */
typedef struct rf_openai_error {
    int http;
    char type[48];
    char param[64];
    char code[48];
    char msg[512];
} rf_openai_error;

/* Fills e; returns RF_ERR_ARG (400/404/413) or the status given for others (error.c). */
rf_status rf_openai_error_set(rf_openai_error *e, int http, const char *param, const char *code,
                              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define RF_OPENAI_MAX_STOPS 4

typedef struct rf_openai_req {
    rf_openai_kind kind;
    json_t *root;      /* the parsed body (owned) */
    const char *model; /* the model field, or NULL when absent */
    rf_message *msgs;  /* chat: n_msgs messages (owned array; strings borrowed) */
    size_t n_msgs;
    char **owned; /* strings made while parsing (joined content parts, tool_calls) */
    size_t n_owned;
    const char *prompt; /* completions: the prompt string (borrowed from root) */
    int32_t max_tokens; /* -1 when absent */
    float temperature;  /* [0, 2]; default 1 */
    float top_p;        /* (0, 1]; default 1 */
    int32_t top_k;      /* >= 0; default 0 (off) */
    uint64_t seed;      /* default 0 */
    double presence_penalty, frequency_penalty; /* [-2, 2]; default 0 */
    int32_t logprobs; /* -1: none; else the alternatives per token (chat: top_logprobs when
                       * logprobs is true; completions: logprobs) */
    const char *stop[RF_OPENAI_MAX_STOPS + 1]; /* NULL-terminated, borrowed from root */
    bool stream;
    bool include_usage; /* stream_options.include_usage */
    bool ignore_eos;    /* vLLM extension */
    /* chat: tools and structured output (tools.c) */
    const char *tools_json;     /* the tools array as compact JSON (owned), or NULL */
    rf_tool_choice tool_choice; /* NONE without tools; AUTO by default with them */
    const char *tool_name;      /* NAMED: the function (borrowed from root) */
    bool parallel_tool_calls;   /* default true */
    const char *json_schema;    /* response_format json_object or json_schema: the schema as JSON
                                 * text (owned or static), or NULL */
} rf_openai_req;

/* What the server accepts: the model ids it answers to (NULL-terminated; a request naming
 * another is a 404) and the context size (max_tokens above it is a 400). */
typedef struct rf_openai_limits {
    const char *const *models;
    int32_t n_ctx;
} rf_openai_limits;

/* Parses body (len bytes, need not be NUL-terminated) as a request of the given kind.
 * RF_OK: *out filled (free with rf_openai_req_free). Otherwise RF_ERR_ARG with *e filled (status
 * 400, or 404 for an unknown model) and *out left zeroed. */
rf_status rf_openai_parse(rf_openai_kind kind, const char *body, size_t len,
                          const rf_openai_limits *lim, rf_openai_req *out, rf_openai_error *e);
void rf_openai_req_free(rf_openai_req *r);

/* tools.c: validates and fills the tool and response_format fields (chat; on
 * completions those fields are a 400). */
rf_status rf_openai_parse_tools(rf_openai_req *r, rf_openai_error *e);

/* For the parser's files: keeps s (malloc'd) with the request, freed by rf_openai_req_free;
 * returns s, or NULL (s freed) when out of memory. */
char *rf_openai_req_own(rf_openai_req *r, char *s);
/* For the parser's files: the 400 for a json_read failure (param: its path). */
struct rf_jr;
rf_status rf_openai_jr_error(const struct rf_jr *j, rf_openai_error *e);

/* The engine's parameters for a parsed request (stop strings borrowed from r). */
rf_request_params rf_openai_engine_params(const rf_openai_req *r);

#endif
