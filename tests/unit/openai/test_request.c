/* test_request.c: the OpenAI request validation (openai/request.h) on the parse-level cases of
 * tests/data/openai_errors.json (the status and error type, code and param each must give; the
 * same file drives tests/integration/test_errors.py over HTTP), and the response shapes
 * (openai/response.h) against golden JSON. No model, no network. */
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "openai/request.h"
#include "openai/response.h"

/* The body of a case: raw (its bytes), raw_repeat ({text, times}) or body (JSON, compact);
 * malloc'd, *len set. NULL when the case has none. */
static char *case_body(const json_t *c, size_t *len) {
    const json_t *raw = json_object_get(c, "raw"), *rep = json_object_get(c, "raw_repeat");
    const json_t *body = json_object_get(c, "body");
    char *out = NULL;
    if (json_is_string(raw)) {
        *len = json_string_length(raw);
        out = xmalloc(*len + 1);
        memcpy(out, json_string_value(raw), *len + 1);
    } else if (json_is_object(rep)) {
        const char *t = json_string_value(json_object_get(rep, "text"));
        size_t tl = t ? strlen(t) : 0,
               n = (size_t)json_integer_value(json_object_get(rep, "times"));
        *len = tl * n;
        out = xmalloc(*len + 1);
        for (size_t i = 0; i < n; i++) memcpy(out + i * tl, t, tl);
        out[*len] = 0;
    } else if (body) {
        out = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        *len = out ? strlen(out) : 0;
    }
    return out;
}

/* An expected error member: NULL when the case does not check it, "" for null. */
static const char *want_member(const json_t *c, const char *key) {
    const json_t *v = json_object_get(c, key);
    if (!v) return NULL;
    return json_is_null(v) ? "" : json_string_value(v);
}

/* Every parse-level case of tests/data/openai_errors.json through rf_openai_parse: the status, the
 * error's type, code and param, a message, and the request left zeroed on failure. */
static void test_requests(void) {
    const char *dir = getenv("ROOFLINE_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/openai_errors.json", dir ? dir : "tests/data");
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    CHECK_MSG(doc != NULL, "%s: %s (line %d)", path, je.text, je.line);
    const json_t *cases = json_object_get(doc, "cases");
    const char *models[] = {"m", NULL};
    rf_openai_limits lim = {models, 4096};
    size_t i, n_run = 0, n_bad = 0;
    const json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *ep = json_string_value(json_object_get(c, "endpoint"));
        const char *method = json_string_value(json_object_get(c, "method"));
        CHECK_MSG(name && ep && method, "case %zu: name, endpoint and method are required", i);
        if (!name || !ep || !method) continue;
        bool chat = !strcmp(ep, "/v1/chat/completions"), compl = !strcmp(ep, "/v1/completions");
        const json_t *pv = json_object_get(c, "parse");
        bool parse = pv ? json_is_true(pv) : (chat || compl ) && !strcmp(method, "POST");
        if (!parse) continue;
        CHECK_MSG(chat || compl, "%s: a parse case must be a completions endpoint", name);
        int http = (int)json_integer_value(json_object_get(c, "status"));
        size_t len = 0;
        char *body = case_body(c, &len);
        CHECK_MSG(body != NULL, "%s: no body", name);
        if (!body) continue;
        n_run++;
        rf_openai_req q;
        rf_openai_error e;
        memset(&e, 0, sizeof e);
        rf_status st =
            rf_openai_parse(chat ? RF_OPENAI_CHAT : RF_OPENAI_COMPLETION, body, len, &lim, &q, &e);
        if (http == 200) {
            CHECK_MSG(st == RF_OK, "%s: %d %s (%s)", name, e.http, e.msg, e.param);
            if (st == RF_OK) rf_openai_req_free(&q);
            free(body);
            continue;
        }
        n_bad++;
        CHECK_MSG(st != RF_OK && e.http == http, "%s: status %d, want %d (%s)", name,
                  st ? e.http : 200, http, e.msg);
        if (st == RF_OK) {
            rf_openai_req_free(&q);
            free(body);
            continue;
        }
        const char *type = want_member(c, "type"), *code = want_member(c, "code"),
                   *param = want_member(c, "param");
        CHECK_MSG(!type || !strcmp(e.type, type), "%s: type '%s', want '%s'", name, e.type, type);
        CHECK_MSG(!code || !strcmp(e.code, code), "%s: code '%s', want '%s'", name, e.code, code);
        CHECK_MSG(!param || !strcmp(e.param, param), "%s: param '%s', want '%s'", name, e.param,
                  param);
        CHECK_MSG(e.msg[0], "%s: empty message", name);
        CHECK(q.root == NULL && q.msgs == NULL); /* left zeroed */
        free(body);
    }
    CHECK_MSG(n_run >= 70 && n_bad >= 50, "only %zu cases (%zu bad) read from %s", n_run, n_bad,
              path);
    json_decref(doc);
}

static void test_fields(void) {
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"s\"},"
                       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"ab\"},"
                       "{\"type\":\"text\",\"text\":\"cd\"}]}],\"max_completion_tokens\":7,"
                       "\"temperature\":0.5,\"top_p\":0.9,\"top_k\":3,\"seed\":11,"
                       "\"stop\":[\"x\",\"yy\"],\"stream\":true,"
                       "\"stream_options\":{\"include_usage\":true}}";
    rf_openai_req q;
    rf_openai_error e;
    CHECK(rf_openai_parse(RF_OPENAI_CHAT, body, strlen(body), NULL, &q, &e) == RF_OK);
    CHECK(q.n_msgs == 2 && !strcmp(q.msgs[0].role, "system") && !strcmp(q.msgs[1].role, "user"));
    CHECK(q.n_msgs == 2 && !strcmp(q.msgs[1].content, "abcd"));
    CHECK(q.max_tokens == 7 && q.top_k == 3 && q.seed == 11 && q.stream && q.include_usage);
    CHECK_NEAR(q.temperature, 0.5, 1e-6);
    CHECK_NEAR(q.top_p, 0.9, 1e-6);
    rf_request_params p = rf_openai_engine_params(&q);
    CHECK(p.max_tokens == 7 && p.stop[0] && !strcmp(p.stop[0], "x") && !strcmp(p.stop[1], "yy") &&
          p.stop[2] == NULL);
    rf_openai_req_free(&q);
    CHECK(q.root == NULL);
    rf_openai_req_free(&q); /* twice is harmless */
    /* defaults */
    const char *b2 = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    CHECK(rf_openai_parse(RF_OPENAI_CHAT, b2, strlen(b2), NULL, &q, &e) == RF_OK);
    CHECK(q.max_tokens == -1 && !q.stream && q.temperature == 1.0f && q.top_p == 1.0f);
    p = rf_openai_engine_params(&q);
    CHECK(p.logprobs == -1 && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f);
    rf_openai_req_free(&q);
    /* penalties and logprobs reach the engine's parameters */
    const char *b3 = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                     "\"presence_penalty\":0.5,\"frequency_penalty\":-1.25,\"logprobs\":true,"
                     "\"top_logprobs\":4}";
    CHECK(rf_openai_parse(RF_OPENAI_CHAT, b3, strlen(b3), NULL, &q, &e) == RF_OK);
    p = rf_openai_engine_params(&q);
    CHECK(p.logprobs == 4 && p.presence_penalty == 0.5f && p.frequency_penalty == -1.25f);
    rf_openai_req_free(&q);
    const char *b4 = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":true}";
    CHECK(rf_openai_parse(RF_OPENAI_CHAT, b4, strlen(b4), NULL, &q, &e) == RF_OK);
    CHECK(rf_openai_engine_params(&q).logprobs == 0); /* the token's own, no alternatives */
    rf_openai_req_free(&q);
    const char *b5 = "{\"prompt\":\"x\",\"logprobs\":3}";
    CHECK(rf_openai_parse(RF_OPENAI_COMPLETION, b5, strlen(b5), NULL, &q, &e) == RF_OK);
    CHECK(rf_openai_engine_params(&q).logprobs == 3);
    rf_openai_req_free(&q);
    const char *b6 = "{\"prompt\":\"x\",\"top_logprobs\":3}"; /* not a completions field */
    CHECK(rf_openai_parse(RF_OPENAI_COMPLETION, b6, strlen(b6), NULL, &q, &e) == RF_OK);
    CHECK(rf_openai_engine_params(&q).logprobs == -1);
    rf_openai_req_free(&q);
}

/* o (released) dumped with sorted keys equals want. */
static void check_json(json_t *o, const char *want, const char *what) {
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    CHECK_MSG(s && !strcmp(s, want), "%s:\n got  %s\n want %s", what, s ? s : "(null)", want);
    free(s);
    json_decref(o);
}

static void test_shapes(void) {
    rf_openai_meta m = {RF_OPENAI_CHAT, "chatcmpl-1", 1700000000, "m"};
    rf_openai_timings t = {4, 2, 0, 8.0, 10.0};
    check_json(rf_openai_chunk_json(&m, "assistant", NULL, 0, NULL, NULL),
               "{\"choices\":[{\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null,"
               "\"index\":0,\"logprobs\":null}],\"created\":1700000000,\"id\":\"chatcmpl-1\","
               "\"model\":\"m\",\"object\":\"chat.completion.chunk\",\"system_fingerprint\":"
               "\"roofline\",\"usage\":null}",
               "role chunk");
    check_json(rf_openai_chunk_json(&m, NULL, "Hi there", 2, NULL, NULL),
               "{\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null,\"index\":0,"
               "\"logprobs\":null}],\"created\":1700000000,\"id\":\"chatcmpl-1\",\"model\":\"m\","
               "\"object\":\"chat.completion.chunk\",\"system_fingerprint\":\"roofline\","
               "\"usage\":null}",
               "content chunk");
    check_json(rf_openai_chunk_json(&m, NULL, NULL, 0, "stop", &t),
               "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\",\"index\":0,\"logprobs\":"
               "null}],\"created\":1700000000,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":"
               "\"chat.completion.chunk\",\"system_fingerprint\":\"roofline\",\"timings\":{"
               "\"cache_n\":0,\"predicted_ms\":10.0,\"predicted_n\":2,\"predicted_per_second\":"
               "200.0,\"predicted_per_token_ms\":5.0,\"prompt_ms\":8.0,\"prompt_n\":4,"
               "\"prompt_per_second\":500.0,\"prompt_per_token_ms\":2.0},\"usage\":null}",
               "final chunk");
    check_json(rf_openai_usage_chunk_json(&m, 4, 2, -1),
               "{\"choices\":[],\"created\":1700000000,\"id\":\"chatcmpl-1\",\"model\":\"m\","
               "\"object\":\"chat.completion.chunk\",\"system_fingerprint\":\"roofline\","
               "\"usage\":{\"completion_tokens\":2,\"prompt_tokens\":4,\"total_tokens\":6}}",
               "usage chunk");
    check_json(rf_openai_usage_json(10, 2, 7),
               "{\"completion_tokens\":2,\"prompt_tokens\":10,\"prompt_tokens_details\":{"
               "\"cached_tokens\":7},\"total_tokens\":12}",
               "usage with cached tokens");
    /* a tool-call response counts the whole prompt, the cached part included */
    rf_openai_timings tc = {3, 2, 5, 8.0, 10.0};
    json_t *tr = rf_openai_tool_response_json(&m, NULL, 0, json_array(), "tool_calls", &tc);
    json_t *tu = json_object_get(tr, "usage");
    CHECK(json_integer_value(json_object_get(tu, "prompt_tokens")) == 8);
    CHECK(json_integer_value(
              json_object_get(json_object_get(tu, "prompt_tokens_details"), "cached_tokens")) == 5);
    CHECK(json_is_null(json_object_get(
        json_object_get(json_array_get(json_object_get(tr, "choices"), 0), "message"), "content")));
    json_decref(tr);
    json_t *r = rf_openai_response_json(&m, "Hi", 2, "length", &t);
    CHECK(r && !strcmp(json_string_value(json_object_get(r, "object")), "chat.completion"));
    json_t *msg = json_object_get(json_array_get(json_object_get(r, "choices"), 0), "message");
    CHECK(msg && !strcmp(json_string_value(json_object_get(msg, "content")), "Hi"));
    CHECK(json_integer_value(json_object_get(json_object_get(r, "usage"), "total_tokens")) == 6);
    CHECK(json_object_get(json_object_get(r, "timings"), "predicted_per_token_ms") != NULL);
    json_decref(r);
    rf_openai_meta mc = {RF_OPENAI_COMPLETION, "cmpl-2", 1700000000, "m"};
    check_json(rf_openai_chunk_json(&mc, NULL, "ab", 2, NULL, NULL),
               "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"logprobs\":null,\"text\":"
               "\"ab\"}],\"created\":1700000000,\"id\":\"cmpl-2\",\"model\":\"m\",\"object\":"
               "\"text_completion\",\"system_fingerprint\":\"roofline\",\"usage\":null}",
               "completion chunk");
    /* generated bytes that are no UTF-8 (a lone continuation byte, a character cut at the end):
     * each is U+FFFD, in every shape that carries text (schemathesis found a reply that ended
     * so dropped: jansson refused the string and the server closed without a response) */
    const char bad[] = "a\x80"
                       "b\xE2\x82";
    const char *want = "a\xEF\xBF\xBD"
                       "b\xEF\xBF\xBD\xEF\xBF\xBD";
    json_t *bo = rf_openai_response_json(&mc, bad, sizeof bad - 1, "length", &t);
    CHECK(bo && !strcmp(json_string_value(json_object_get(
                            json_array_get(json_object_get(bo, "choices"), 0), "text"))
                            ?: "",
                        want));
    json_decref(bo);
    bo = rf_openai_response_json(&m, bad, sizeof bad - 1, "length", &t);
    CHECK(bo &&
          !strcmp(json_string_value(json_object_get(
                      json_object_get(json_array_get(json_object_get(bo, "choices"), 0), "message"),
                      "content"))
                      ?: "",
                  want));
    json_decref(bo);
    bo = rf_openai_chunk_json(&mc, NULL, bad, sizeof bad - 1, NULL, NULL);
    CHECK(bo && !strcmp(json_string_value(json_object_get(
                            json_array_get(json_object_get(bo, "choices"), 0), "text"))
                            ?: "",
                        want));
    json_decref(bo);
    bo = rf_openai_chunk_json(&m, NULL, bad, sizeof bad - 1, NULL, NULL);
    CHECK(bo &&
          !strcmp(json_string_value(json_object_get(
                      json_object_get(json_array_get(json_object_get(bo, "choices"), 0), "delta"),
                      "content"))
                      ?: "",
                  want));
    json_decref(bo);
    rf_openai_error e;
    rf_openai_error_set(&e, 400, "temperature", NULL, "bad %d", 1);
    check_json(rf_openai_error_json(&e),
               "{\"error\":{\"code\":null,\"message\":\"bad 1\",\"param\":\"temperature\","
               "\"type\":\"invalid_request_error\"}}",
               "error");
    rf_openai_error_set(&e, 429, NULL, "server_is_overloaded", "busy");
    CHECK(!strcmp(e.type, "rate_limit_error"));
    check_json(rf_openai_models_json("m", 5),
               "{\"data\":[{\"created\":5,\"id\":\"m\",\"object\":\"model\",\"owned_by\":"
               "\"roofline\",\"root\":\"m\"}],\"object\":\"list\"}",
               "models");
    rf_buf b;
    rf_buf_init(&b, 0);
    CHECK(rf_openai_sse_event(&b, json_pack("{s:i}", "a", 1)) == RF_OK);
    CHECK(rf_openai_sse_done(&b) == RF_OK);
    CHECK(rf_buf_terminate(&b) == RF_OK);
    CHECK(!strcmp((const char *)b.data, "data: {\"a\":1}\n\ndata: [DONE]\n\n"));
    CHECK(rf_openai_sse_event(&b, NULL) == RF_ERR_NOMEM);
    rf_buf_free(&b);
}

int main(void) {
    test_requests();
    test_fields();
    test_shapes();
    printf("test_request: %d checks, %d failures\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
