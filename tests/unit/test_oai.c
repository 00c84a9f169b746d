/* test_oai.c: the OpenAI request validation (server/openai_req.h) as a table of bodies and the
 * status and error param each must give, and the response shapes (server/openai_resp.h) against
 * golden JSON. No model, no network. */
#include <jansson.h>
#include <string.h>

#include "check.h"
#include "server/openai_req.h"
#include "server/openai_resp.h"

typedef struct req_case {
    rf_oai_kind kind;
    const char *body;
    int http;          /* 0: valid */
    const char *param; /* expected error param ("" for null) */
    const char *code;  /* expected error code, or NULL to skip the check */
} req_case;

#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static const req_case g_cases[] = {
    {RF_OAI_CHAT, "{" MSG "}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{\"model\":\"m\"," MSG ",\"unknown_field\":[1,2]}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{\"model\":\"other\"," MSG "}", 404, "model", "model_not_found"},
    {RF_OAI_CHAT, "{\"model\":7," MSG "}", 400, "model", "invalid_type"},
    {RF_OAI_CHAT, "not json", 400, "", "invalid_json"},
    {RF_OAI_CHAT, "[1]", 400, "", "invalid_json"},
    {RF_OAI_CHAT, "{" MSG "} trailing", 400, "", "invalid_json"},
    {RF_OAI_CHAT, "{\"messages\":[]," MSG "}", 400, "", "invalid_json"}, /* duplicate key */
    {RF_OAI_CHAT, "{}", 400, "messages", "missing_required_parameter"},
    {RF_OAI_CHAT, "{\"messages\":[]}", 400, "messages", "invalid_value"},
    {RF_OAI_CHAT, "{\"messages\":{}}", 400, "messages", "invalid_type"},
    {RF_OAI_CHAT, "{\"messages\":[3]}", 400, "messages[0]", "invalid_type"},
    {RF_OAI_CHAT, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", 400,
     "messages[0].role", "invalid_value"},
    {RF_OAI_CHAT, "{\"messages\":[{\"content\":\"x\"}]}", 400, "messages[0].role", "invalid_type"},
    {RF_OAI_CHAT, "{\"messages\":[{\"role\":\"user\"}]}", 400, "messages[0].content",
     "missing_required_parameter"},
    {RF_OAI_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "messages[0].content",
     "invalid_type"},
    {RF_OAI_CHAT,
     "{\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
     "{\"type\":\"text\",\"text\":\"b\"}]}]}",
     0, NULL, NULL},
    {RF_OAI_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
     400, "messages[0].content", "invalid_value"},
    {RF_OAI_CHAT,
     "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\","
     "\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
     "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\","
     "\"tool_call_id\":\"c1\",\"content\":\"42\"}]}",
     0, NULL, NULL},
    {RF_OAI_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"content\":null}]}", 400,
     "messages[0].content", "missing_required_parameter"},
    {RF_OAI_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]}", 400,
     "messages[0].tool_calls", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"max_tokens\":0}", 400, "max_tokens", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"max_tokens\":-5}", 400, "max_tokens", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"max_tokens\":5000}", 400, "max_tokens", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"max_tokens\":1.5}", 400, "max_tokens", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"max_completion_tokens\":0}", 400, "max_completion_tokens",
     "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"max_completion_tokens\":4096}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"temperature\":2.5}", 400, "temperature", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"temperature\":-0.1}", 400, "temperature", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"temperature\":\"hot\"}", 400, "temperature", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"temperature\":0}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"temperature\":2}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"temperature\":null}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"top_p\":0}", 400, "top_p", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"top_p\":1.01}", 400, "top_p", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"top_p\":1}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"top_k\":-1}", 400, "top_k", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"top_k\":40}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"seed\":\"x\"}", 400, "seed", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"seed\":-3}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"n\":2}", 400, "n", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"n\":1}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"presence_penalty\":2.5}", 400, "presence_penalty", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"frequency_penalty\":-2.1}", 400, "frequency_penalty",
     "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"presence_penalty\":1,\"frequency_penalty\":-1}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"stream\":\"yes\"}", 400, "stream", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"stream_options\":{\"include_usage\":true}}", 400, "stream_options",
     "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"stream\":true,\"stream_options\":{\"include_usage\":1}}", 400,
     "stream_options.include_usage", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}", 0, NULL,
     NULL},
    {RF_OAI_CHAT, "{" MSG ",\"stop\":\"\\n\"}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"stop\":[\"a\",\"b\",\"c\",\"d\"]}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 400, "stop",
     "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"stop\":[1]}", 400, "stop", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"stop\":\"\"}", 400, "stop", "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"stop\":{}}", 400, "stop", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}",
     400, "tools", "unsupported_parameter"},
    {RF_OAI_CHAT, "{" MSG ",\"tools\":[]}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"tool_choice\":\"auto\"}", 400, "tool_choice",
     "unsupported_parameter"},
    {RF_OAI_CHAT, "{" MSG ",\"tool_choice\":\"none\"}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"response_format\":{\"type\":\"json_schema\"}}", 400,
     "response_format.json_schema", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"response_format\":{\"type\":\"yaml\"}}", 400, "response_format.type",
     "invalid_value"},
    {RF_OAI_CHAT, "{" MSG ",\"response_format\":\"json\"}", 400, "response_format", "invalid_type"},
    {RF_OAI_CHAT, "{" MSG ",\"response_format\":{\"type\":\"json_object\"}}", 0, NULL, NULL},
    {RF_OAI_CHAT,
     "{" MSG ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\","
     "\"schema\":{\"type\":\"integer\"}}}}",
     0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"response_format\":{\"type\":\"text\"}}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"logprobs\":true}", 400, "logprobs", "unsupported_parameter"},
    {RF_OAI_CHAT, "{" MSG ",\"logprobs\":false,\"top_logprobs\":0}", 0, NULL, NULL},
    {RF_OAI_CHAT, "{" MSG ",\"top_logprobs\":3}", 400, "top_logprobs", "unsupported_parameter"},
    {RF_OAI_COMPLETION, "{\"prompt\":\"Once\"}", 0, NULL, NULL},
    {RF_OAI_COMPLETION, "{\"prompt\":\"Once\",\"max_tokens\":8,\"stream\":true}", 0, NULL, NULL},
    {RF_OAI_COMPLETION, "{}", 400, "prompt", "missing_required_parameter"},
    {RF_OAI_COMPLETION, "{\"prompt\":[1,2]}", 400, "prompt", "invalid_type"},
    {RF_OAI_COMPLETION, "{\"prompt\":\"\"}", 400, "prompt", "invalid_value"},
    {RF_OAI_COMPLETION, "{\"prompt\":\"a\\u0000b\"}", 400, "", "invalid_json"},
    {RF_OAI_COMPLETION, "{\"prompt\":\"x\",\"temperature\":9}", 400, "temperature",
     "invalid_value"},
};

static void test_requests(void) {
    const char *models[] = {"m", NULL};
    rf_oai_limits lim = {models, 4096};
    for (size_t i = 0; i < sizeof g_cases / sizeof g_cases[0]; i++) {
        const req_case *c = &g_cases[i];
        rf_oai_req q;
        rf_oai_error e;
        memset(&e, 0, sizeof e);
        rf_status st = rf_oai_parse(c->kind, c->body, strlen(c->body), &lim, &q, &e);
        if (c->http == 0) {
            CHECK_MSG(st == RF_OK, "case %zu %s: %d %s (%s)", i, c->body, e.http, e.msg, e.param);
            rf_oai_req_free(&q);
            continue;
        }
        CHECK_MSG(st != RF_OK && e.http == c->http, "case %zu %s: status %d, want %d (%s)", i,
                  c->body, st ? e.http : 200, c->http, e.msg);
        CHECK_MSG(st == RF_OK || !strcmp(e.param, c->param), "case %zu %s: param '%s', want '%s'",
                  i, c->body, e.param, c->param);
        CHECK_MSG(st == RF_OK || !c->code || !strcmp(e.code, c->code),
                  "case %zu %s: code '%s', want '%s'", i, c->body, e.code, c->code);
        CHECK_MSG(st == RF_OK || e.msg[0], "case %zu: empty message", i);
        CHECK(q.root == NULL && q.msgs == NULL); /* left zeroed */
        if (st == RF_OK) rf_oai_req_free(&q);
    }
}

static void test_fields(void) {
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"s\"},"
                       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"ab\"},"
                       "{\"type\":\"text\",\"text\":\"cd\"}]}],\"max_completion_tokens\":7,"
                       "\"temperature\":0.5,\"top_p\":0.9,\"top_k\":3,\"seed\":11,"
                       "\"stop\":[\"x\",\"yy\"],\"stream\":true,"
                       "\"stream_options\":{\"include_usage\":true}}";
    rf_oai_req q;
    rf_oai_error e;
    CHECK(rf_oai_parse(RF_OAI_CHAT, body, strlen(body), NULL, &q, &e) == RF_OK);
    CHECK(q.n_msgs == 2 && !strcmp(q.msgs[0].role, "system") && !strcmp(q.msgs[1].role, "user"));
    CHECK(q.n_msgs == 2 && !strcmp(q.msgs[1].content, "abcd"));
    CHECK(q.max_tokens == 7 && q.top_k == 3 && q.seed == 11 && q.stream && q.include_usage);
    CHECK_NEAR(q.temperature, 0.5, 1e-6);
    CHECK_NEAR(q.top_p, 0.9, 1e-6);
    rf_request_params p = rf_oai_engine_params(&q);
    CHECK(p.max_tokens == 7 && p.stop[0] && !strcmp(p.stop[0], "x") && !strcmp(p.stop[1], "yy") &&
          p.stop[2] == NULL);
    rf_oai_req_free(&q);
    CHECK(q.root == NULL);
    rf_oai_req_free(&q); /* twice is harmless */
    /* response_format reaches the engine as its json_schema */
    const char *b3 = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":"
                     "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\",\"schema\":"
                     "{\"type\":\"array\",\"items\":{\"type\":\"null\"}}}}}";
    CHECK(rf_oai_parse(RF_OAI_CHAT, b3, strlen(b3), NULL, &q, &e) == RF_OK);
    p = rf_oai_engine_params(&q);
    CHECK(p.json_schema &&
          !strcmp(p.json_schema, "{\"type\":\"array\",\"items\":{\"type\":\"null\"}}"));
    rf_oai_req_free(&q);
    const char *b4 = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":"
                     "{\"type\":\"json_object\"}}";
    CHECK(rf_oai_parse(RF_OAI_CHAT, b4, strlen(b4), NULL, &q, &e) == RF_OK);
    p = rf_oai_engine_params(&q);
    CHECK(p.json_schema && !strcmp(p.json_schema, "{\"type\":\"object\"}"));
    rf_oai_req_free(&q);
    /* defaults */
    const char *b2 = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    CHECK(rf_oai_parse(RF_OAI_CHAT, b2, strlen(b2), NULL, &q, &e) == RF_OK);
    CHECK(q.max_tokens == -1 && !q.stream && q.temperature == 1.0f && q.top_p == 1.0f);
    CHECK(rf_oai_engine_params(&q).json_schema == NULL);
    rf_oai_req_free(&q);
}

/* o (released) dumped with sorted keys equals want. */
static void check_json(json_t *o, const char *want, const char *what) {
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    CHECK_MSG(s && !strcmp(s, want), "%s:\n got  %s\n want %s", what, s ? s : "(null)", want);
    free(s);
    json_decref(o);
}

static void test_shapes(void) {
    rf_oai_meta m = {RF_OAI_CHAT, "chatcmpl-1", 1700000000, "m"};
    rf_oai_timings t = {4, 2, 0, 8.0, 10.0};
    check_json(rf_oai_chunk_json(&m, "assistant", NULL, 0, NULL, NULL),
               "{\"choices\":[{\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null,"
               "\"index\":0,\"logprobs\":null}],\"created\":1700000000,\"id\":\"chatcmpl-1\","
               "\"model\":\"m\",\"object\":\"chat.completion.chunk\",\"system_fingerprint\":"
               "\"roofline\",\"usage\":null}",
               "role chunk");
    check_json(rf_oai_chunk_json(&m, NULL, "Hi there", 2, NULL, NULL),
               "{\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null,\"index\":0,"
               "\"logprobs\":null}],\"created\":1700000000,\"id\":\"chatcmpl-1\",\"model\":\"m\","
               "\"object\":\"chat.completion.chunk\",\"system_fingerprint\":\"roofline\","
               "\"usage\":null}",
               "content chunk");
    check_json(rf_oai_chunk_json(&m, NULL, NULL, 0, "stop", &t),
               "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\",\"index\":0,\"logprobs\":"
               "null}],\"created\":1700000000,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":"
               "\"chat.completion.chunk\",\"system_fingerprint\":\"roofline\",\"timings\":{"
               "\"cache_n\":0,\"predicted_ms\":10.0,\"predicted_n\":2,\"predicted_per_second\":"
               "200.0,\"predicted_per_token_ms\":5.0,\"prompt_ms\":8.0,\"prompt_n\":4,"
               "\"prompt_per_second\":500.0,\"prompt_per_token_ms\":2.0},\"usage\":null}",
               "final chunk");
    check_json(rf_oai_usage_chunk_json(&m, 4, 2),
               "{\"choices\":[],\"created\":1700000000,\"id\":\"chatcmpl-1\",\"model\":\"m\","
               "\"object\":\"chat.completion.chunk\",\"system_fingerprint\":\"roofline\","
               "\"usage\":{\"completion_tokens\":2,\"prompt_tokens\":4,\"total_tokens\":6}}",
               "usage chunk");
    json_t *r = rf_oai_response_json(&m, "Hi", 2, "length", &t);
    CHECK(r && !strcmp(json_string_value(json_object_get(r, "object")), "chat.completion"));
    json_t *msg = json_object_get(json_array_get(json_object_get(r, "choices"), 0), "message");
    CHECK(msg && !strcmp(json_string_value(json_object_get(msg, "content")), "Hi"));
    CHECK(json_integer_value(json_object_get(json_object_get(r, "usage"), "total_tokens")) == 6);
    CHECK(json_object_get(json_object_get(r, "timings"), "predicted_per_token_ms") != NULL);
    json_decref(r);
    rf_oai_meta mc = {RF_OAI_COMPLETION, "cmpl-2", 1700000000, "m"};
    check_json(rf_oai_chunk_json(&mc, NULL, "ab", 2, NULL, NULL),
               "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"logprobs\":null,\"text\":"
               "\"ab\"}],\"created\":1700000000,\"id\":\"cmpl-2\",\"model\":\"m\",\"object\":"
               "\"text_completion\",\"system_fingerprint\":\"roofline\",\"usage\":null}",
               "completion chunk");
    rf_oai_error e;
    rf_oai_error_set(&e, 400, "temperature", NULL, "bad %d", 1);
    check_json(rf_oai_error_json(&e),
               "{\"error\":{\"code\":null,\"message\":\"bad 1\",\"param\":\"temperature\","
               "\"type\":\"invalid_request_error\"}}",
               "error");
    rf_oai_error_set(&e, 429, NULL, "server_is_overloaded", "busy");
    CHECK(!strcmp(e.type, "rate_limit_error"));
    check_json(rf_oai_models_json("m", 5),
               "{\"data\":[{\"created\":5,\"id\":\"m\",\"object\":\"model\",\"owned_by\":"
               "\"roofline\",\"root\":\"m\"}],\"object\":\"list\"}",
               "models");
    rf_buf b;
    rf_buf_init(&b, 0);
    CHECK(rf_oai_sse_event(&b, json_pack("{s:i}", "a", 1)) == RF_OK);
    CHECK(rf_oai_sse_done(&b) == RF_OK);
    CHECK(rf_buf_terminate(&b) == RF_OK);
    CHECK(!strcmp((const char *)b.data, "data: {\"a\":1}\n\ndata: [DONE]\n\n"));
    CHECK(rf_oai_sse_event(&b, NULL) == RF_ERR_NOMEM);
    rf_buf_free(&b);
}

int main(void) {
    test_requests();
    test_fields();
    test_shapes();
    printf("test_oai: %d checks, %d failures\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
