/* test_bedrock_proto.c: the Converse body built from the bench's common form, and Converse /
 * ConverseStream replies folded back into it. Reply shapes follow botocore's service model
 * bedrock-runtime 2023-09-30 (ConverseResponse; ConverseStreamOutput events messageStart,
 * contentBlockStart, contentBlockDelta, contentBlockStop, messageStop, metadata; exceptions). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/aws_error.h"
#include "backend/bedrock_proto.h"
#include "check.h"
#include "es_build.h"

static const char *k_tools =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"noargs\"}}]";

static json_t *build(rf_bk_request *req, const char *extra_text, char *why) {
    rf_buf out;
    rf_buf_init(&out, 0);
    json_t *extra = extra_text ? json_loads(extra_text, 0, NULL) : NULL;
    bool ok = rf_bk_bedrock_build_body(req, extra, &out, why, 160);
    json_decref(extra);
    json_t *o = ok ? json_loadb((const char *)out.data, out.len, 0, NULL) : NULL;
    rf_buf_free(&out);
    return o;
}

static bool json_eq_text(const json_t *v, const char *want) {
    json_t *w = json_loads(want, JSON_DECODE_ANY, NULL);
    bool eq = w && json_equal(v, w);
    if (!eq) {
        char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        fprintf(stderr, "got  %s\nwant %s\n", got ? got : "(null)", want);
        free(got);
    }
    json_decref(w);
    return eq;
}

static void test_body(void) {
    rf_bk_message msgs[] = {
        {.role = "system", .content = "Be brief."},
        {.role = "user", .content = "Weather in Paris and Rome?"},
        {.role = "assistant",
         .content = "Checking.",
         .tool_calls = "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
                       "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}},"
                       "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":"
                       "\"get_weather\",\"arguments\":\"not json\"}},"
                       "{\"id\":\"c3\",\"type\":\"function\",\"function\":{\"name\":"
                       "\"noargs\",\"arguments\":\"\"}}]"},
        {.role = "tool", .tool_call_id = "c1", .content = "18C"},
        {.role = "tool", .tool_call_id = "c2", .content = "21C"},
    };
    rf_bk_request req = {.msgs = msgs,
                         .n_msgs = 5,
                         .tools = k_tools,
                         .tool_choice = "required",
                         .temperature = 0.7f,
                         .top_p = 0.9f,
                         .max_tokens = 64,
                         .ignore_eos = true};
    rf_bk_result_init(&req.res);
    char why[160] = "";
    json_t *o = build(&req, "{\"inferenceConfig\":{\"stopSequences\":[\"END\"]}}", why);
    CHECK_MSG(o != NULL, "%s", why);
    CHECK(json_eq_text(json_object_get(o, "system"), "[{\"text\":\"Be brief.\"}]"));
    CHECK(json_eq_text(
        json_object_get(o, "messages"),
        "[{\"role\":\"user\",\"content\":[{\"text\":\"Weather in Paris and Rome?\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"text\":\"Checking.\"},"
        "{\"toolUse\":{\"toolUseId\":\"c1\",\"name\":\"get_weather\",\"input\":{\"city\":"
        "\"Paris\"}}},{\"toolUse\":{\"toolUseId\":\"c2\",\"name\":\"get_weather\",\"input\":"
        "\"not json\"}},{\"toolUse\":{\"toolUseId\":\"c3\",\"name\":\"noargs\",\"input\":"
        "{}}}]},"
        "{\"role\":\"user\",\"content\":[{\"toolResult\":{\"toolUseId\":\"c1\",\"content\":"
        "[{\"text\":\"18C\"}]}},{\"toolResult\":{\"toolUseId\":\"c2\",\"content\":[{\"text\":"
        "\"21C\"}]}}]}]"));
    CHECK(json_eq_text(json_object_get(o, "inferenceConfig"),
                       "{\"maxTokens\":64,\"temperature\":0.7,\"topP\":0.9,"
                       "\"stopSequences\":[\"END\"]}"));
    CHECK(json_eq_text(
        json_object_get(o, "toolConfig"),
        "{\"tools\":[{\"toolSpec\":{\"name\":\"get_weather\",\"description\":\"Weather\","
        "\"inputSchema\":{\"json\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
        "\"string\"}}}}}},{\"toolSpec\":{\"name\":\"noargs\",\"inputSchema\":{\"json\":"
        "{\"type\":\"object\"}}}}],\"toolChoice\":{\"any\":{}}}"));
    CHECK(!json_object_get(o, "model") && !json_object_get(o, "seed"));
    CHECK(!strcmp(req.res.not_honoured, "ignore_eos"));
    json_decref(o);

    /* tool_choice: auto, a named function, none (tools left out; kept, and noted, when the
     * conversation has tool turns) */
    req.ignore_eos = false;
    req.tool_choice = "auto";
    o = build(&req, NULL, why);
    CHECK(json_eq_text(json_object_get(json_object_get(o, "toolConfig"), "toolChoice"),
                       "{\"auto\":{}}"));
    CHECK(req.res.not_honoured[0] == 0);
    json_decref(o);
    req.tool_choice = "{\"type\":\"function\",\"function\":{\"name\":\"noargs\"}}";
    o = build(&req, NULL, why);
    CHECK(json_eq_text(json_object_get(json_object_get(o, "toolConfig"), "toolChoice"),
                       "{\"tool\":{\"name\":\"noargs\"}}"));
    json_decref(o);
    req.tool_choice = "none";
    o = build(&req, NULL, why);
    CHECK(json_object_get(o, "toolConfig") != NULL);
    CHECK(!json_object_get(json_object_get(o, "toolConfig"), "toolChoice"));
    CHECK(!strcmp(req.res.not_honoured, "tool_choice"));
    json_decref(o);
    req.n_msgs = 2;
    o = build(&req, NULL, why);
    CHECK(o && !json_object_get(o, "toolConfig") && !req.res.not_honoured[0]);
    json_decref(o);

    /* bad input is refused by name */
    req.tool_choice = "sometimes";
    CHECK(build(&req, NULL, why) == NULL && strstr(why, "tool_choice"));
    req.tool_choice = NULL;
    req.tools = "{}";
    CHECK(build(&req, NULL, why) == NULL && strstr(why, "tools is not a JSON array"));
    req.tools = NULL;
    rf_bk_message bad[] = {{.role = "user", .content = "\xff\xfe"}};
    req.msgs = bad;
    req.n_msgs = 1;
    CHECK(build(&req, NULL, why) == NULL && strstr(why, "message 0"));
    rf_bk_message badtool[] = {{.role = "tool", .tool_call_id = "c1", .content = "\xc3"}};
    req.msgs = badtool;
    CHECK(build(&req, NULL, why) == NULL && strstr(why, "message 0"));
    rf_bk_message badcalls[] = {{.role = "assistant", .tool_calls = "[{\"id\":\"x\"}]"}};
    req.msgs = badcalls;
    CHECK(build(&req, NULL, why) == NULL && strstr(why, "function.name"));
    rf_bk_result_free(&req.res);
}

static void test_converse_body(void) {
    const char *reply =
        "{\"output\":{\"message\":{\"role\":\"assistant\",\"content\":[{\"text\":\"Let me "
        "check.\"},{\"toolUse\":{\"toolUseId\":\"tooluse_1\",\"name\":\"get_weather\",\"input\":"
        "{\"city\":\"Paris\"}}}]}},\"stopReason\":\"tool_use\",\"usage\":{\"inputTokens\":30,"
        "\"outputTokens\":12,\"totalTokens\":42},\"metrics\":{\"latencyMs\":345}}";
    rf_bk_request req = {0};
    rf_bk_result_init(&req.res);
    rf_bk_bedrock_fold f;
    rf_bk_bedrock_fold_init(&f);
    rf_bk_bedrock_fold_body(&f, &req, reply, strlen(reply), 1000);
    rf_bk_bedrock_fold_export(&f, &req);
    rf_bk_result *r = &req.res;
    CHECK(r->err == RF_BK_OK);
    CHECK(r->text.len == 13 && !memcmp(r->text.data, "Let me check.", 13));
    CHECK(r->text_bytes == 13);
    CHECK(!strcmp(r->finish_reason, "tool_calls"));
    CHECK(r->prompt_tokens == 30 && r->completion_tokens == 12);
    CHECK(r->server_latency_ms == 345);
    CHECK(r->n_calls == 1);
    CHECK(r->n_calls == 1 && !strcmp(r->calls[0].id, "tooluse_1") &&
          !strcmp(r->calls[0].name, "get_weather") &&
          !strcmp(r->calls[0].arguments, "{\"city\":\"Paris\"}"));
    CHECK(r->n_ev == 1 && r->ev_t[0] == 1000);
    rf_bk_result_free(r);

    /* the stop reasons */
    CHECK(!strcmp(rf_bk_bedrock_finish_reason("end_turn"), "stop"));
    CHECK(!strcmp(rf_bk_bedrock_finish_reason("stop_sequence"), "stop"));
    CHECK(!strcmp(rf_bk_bedrock_finish_reason("max_tokens"), "length"));
    CHECK(!strcmp(rf_bk_bedrock_finish_reason("guardrail_intervened"), "content_filter"));
    CHECK(!strcmp(rf_bk_bedrock_finish_reason("malformed_tool_use"), "malformed_tool_use"));

    /* not the reply it should be */
    rf_bk_bedrock_fold_reset(&f);
    rf_bk_result_init(r);
    rf_bk_bedrock_fold_body(&f, &req, "{\"output\":{}}", 13, 1);
    CHECK(r->err == RF_BK_INVALID && strstr(r->err_msg, "output.message.content"));
    rf_bk_result_free(r);
    rf_bk_result_init(r);
    rf_bk_bedrock_fold_body(&f, &req, "[1]", 3, 1);
    CHECK(r->err == RF_BK_INVALID);
    rf_bk_result_free(r);
    rf_bk_bedrock_fold_free(&f);
}

typedef struct stream_ctx {
    rf_bk_bedrock_fold f;
    rf_bk_request req;
    int64_t t;
} stream_ctx;

static int on_msg(void *user, const rf_es_message *m) {
    stream_ctx *c = user;
    return rf_bk_bedrock_fold_event(&c->f, &c->req, m, c->t++) ? 0 : 1;
}

static void run_stream(stream_ctx *c, const rf_buf *bytes, size_t step) {
    rf_es d;
    rf_es_init(&d, 0, on_msg, c);
    rf_bk_bedrock_fold_init(&c->f);
    rf_bk_result_init(&c->req.res);
    c->t = 100;
    for (size_t o = 0; o < bytes->len; o += step)
        if (rf_es_feed(&d, bytes->data + o, bytes->len - o < step ? bytes->len - o : step)) break;
    if (rf_es_finish(&d) == RF_ES_OK) rf_bk_bedrock_fold_end(&c->f, &c->req);
    rf_bk_bedrock_fold_export(&c->f, &c->req);
    rf_es_free(&d);
    rf_bk_bedrock_fold_free(&c->f);
}

#define EV(out, type, json) es_event(out, type, json, strlen(json))

static void test_converse_stream(void) {
    rf_buf s;
    rf_buf_init(&s, 0);
    EV(&s, "messageStart", "{\"role\":\"assistant\",\"p\":\"abcd\"}");
    EV(&s, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hel\"}}");
    EV(&s, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"lo\"}}");
    EV(&s, "contentBlockStop", "{\"contentBlockIndex\":0}");
    EV(&s, "contentBlockStart",
       "{\"contentBlockIndex\":1,\"start\":{\"toolUse\":{\"toolUseId\":\"t-1\",\"name\":"
       "\"get_weather\"}}}");
    EV(&s, "contentBlockDelta",
       "{\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"{\\\"ci\"}}}");
    EV(&s, "contentBlockDelta",
       "{\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"ty\\\":\\\"Rome\\\"}\"}}}");
    EV(&s, "contentBlockStop", "{\"contentBlockIndex\":1}");
    EV(&s, "messageStop", "{\"stopReason\":\"tool_use\"}");
    EV(&s, "metadata",
       "{\"usage\":{\"inputTokens\":9,\"outputTokens\":7,\"totalTokens\":16},\"metrics\":"
       "{\"latencyMs\":222}}");
    size_t steps[] = {1, 7, 64, s.len};
    for (size_t k = 0; k < 4; k++) {
        stream_ctx c = {0};
        run_stream(&c, &s, steps[k]);
        rf_bk_result *r = &c.req.res;
        CHECK_MSG(r->err == RF_BK_OK, "%s", r->err_msg);
        CHECK(r->text.len == 5 && !memcmp(r->text.data, "Hello", 5));
        CHECK(!strcmp(r->finish_reason, "tool_calls"));
        CHECK(r->prompt_tokens == 9 && r->completion_tokens == 7 && r->server_latency_ms == 222);
        CHECK(r->n_calls == 1 && !strcmp(r->calls[0].id, "t-1") &&
              !strcmp(r->calls[0].name, "get_weather") &&
              !strcmp(r->calls[0].arguments, "{\"city\":\"Rome\"}"));
        CHECK(r->n_ev == 5); /* two text deltas, the call's start and two input fragments */
        CHECK(r->ev_t[0] == 101 && r->t_first_content == 101);
        rf_bk_result_free(r);
    }

    /* a stream cut before messageStop is truncated */
    rf_buf cut;
    rf_buf_init(&cut, 0);
    EV(&cut, "messageStart", "{\"role\":\"assistant\"}");
    EV(&cut, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"x\"}}");
    stream_ctx c = {0};
    run_stream(&c, &cut, cut.len);
    CHECK(c.req.res.err == RF_BK_TRUNCATED && strstr(c.req.res.err_msg, "messageStop"));
    rf_bk_result_free(&c.req.res);

    /* exceptions in the stream, by class, with AWS's message */
    struct {
        const char *type, *payload;
        rf_bk_error want;
    } ex[] = {
        {"throttlingException", "{\"message\":\"Too many tokens, please wait.\"}", RF_BK_THROTTLED},
        {"modelStreamErrorException",
         "{\"message\":\"boom\",\"originalStatusCode\":500,\"originalMessage\":\"oom\"}",
         RF_BK_MODEL_ERROR},
        {"validationException", "{\"message\":\"bad input\"}", RF_BK_SERVER_ERROR},
        {"internalServerException", "{\"message\":\"x\"}", RF_BK_SERVER_ERROR},
        {"serviceUnavailableException", "{\"message\":\"x\"}", RF_BK_SERVER_ERROR},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        rf_buf b;
        rf_buf_init(&b, 0);
        EV(&b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"x\"}}");
        es_exception(&b, ex[i].type, ex[i].payload);
        EV(&b, "messageStop", "{\"stopReason\":\"end_turn\"}");
        c = (stream_ctx){0};
        run_stream(&c, &b, 5);
        CHECK_MSG(c.req.res.err == ex[i].want, "%s: %s", ex[i].type,
                  rf_bk_error_name(c.req.res.err));
        CHECK(strstr(c.req.res.err_msg, ex[i].type) != NULL);
        CHECK(c.req.res.finish_reason[0] == 0); /* the stop after the exception is not read */
        rf_bk_result_free(&c.req.res);
        rf_buf_free(&b);
    }
    c = (stream_ctx){0};
    rf_buf b;
    rf_buf_init(&b, 0);
    es_exception(&b, "modelStreamErrorException",
                 "{\"message\":\"boom\",\"originalStatusCode\":500,\"originalMessage\":\"oom\"}");
    run_stream(&c, &b, b.len);
    CHECK(strstr(c.req.res.err_msg, "boom (model: oom)") != NULL);
    rf_bk_result_free(&c.req.res);
    /* an event that is not JSON */
    rf_buf_reset(&b);
    EV(&b, "contentBlockDelta", "{\"contentBlockIndex\":0,");
    c = (stream_ctx){0};
    run_stream(&c, &b, b.len);
    CHECK(c.req.res.err == RF_BK_INVALID && strstr(c.req.res.err_msg, "contentBlockDelta"));
    rf_bk_result_free(&c.req.res);
    rf_buf_free(&b);
    rf_buf_free(&cut);
    rf_buf_free(&s);
}

static void test_error_classes(void) {
    CHECK(rf_bk_aws_error_class("ThrottlingException", 400, false) == RF_BK_THROTTLED);
    CHECK(rf_bk_aws_error_class("ModelNotReadyException", 429, false) == RF_BK_THROTTLED);
    CHECK(rf_bk_aws_error_class("", 429, false) == RF_BK_THROTTLED);
    CHECK(rf_bk_aws_error_class("ValidationException", 400, false) == RF_BK_HTTP_4XX);
    CHECK(rf_bk_aws_error_class("AccessDeniedException", 403, false) == RF_BK_HTTP_4XX);
    CHECK(rf_bk_aws_error_class("ModelErrorException", 424, false) == RF_BK_MODEL_ERROR);
    CHECK(rf_bk_aws_error_class("ModelError", 424, false) == RF_BK_MODEL_ERROR);
    CHECK(rf_bk_aws_error_class("ModelTimeoutException", 408, false) == RF_BK_TIMEOUT);
    CHECK(rf_bk_aws_error_class("ServiceUnavailableException", 503, false) == RF_BK_HTTP_5XX);
    CHECK(rf_bk_aws_error_class("InternalStreamFailure", 0, true) == RF_BK_SERVER_ERROR);
    CHECK(rf_bk_aws_error_class("ModelStreamError", 0, true) == RF_BK_MODEL_ERROR);
    rf_bk_result r;
    rf_bk_result_init(&r);
    snprintf(r.request_id, sizeof r.request_id, "req-123");
    const char *body = "{\"message\":\"The provided model identifier is invalid.\"}";
    rf_bk_aws_fail_http(&r, 400, "ValidationException:http://internal.amazon.com/coral/", body,
                        strlen(body));
    CHECK(r.err == RF_BK_HTTP_4XX);
    CHECK_MSG(!strcmp(r.err_msg, "ValidationException (HTTP 400): The provided model identifier "
                                 "is invalid. [request id req-123]"),
              "%s", r.err_msg);
    rf_bk_result_free(&r);
    rf_bk_result_init(&r);
    body = "{\"__type\":\"com.amazon.coral#ThrottlingException\",\"Message\":\"slow down\"}";
    rf_bk_aws_fail_http(&r, 400, "", body, strlen(body));
    CHECK(r.err == RF_BK_THROTTLED && strstr(r.err_msg, "ThrottlingException (HTTP 400): slow"));
    rf_bk_result_free(&r);
}

int main(void) {
    test_body();
    test_converse_body();
    test_converse_stream();
    test_error_classes();
    printf("test_bedrock_proto: %d checks, %d failures\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
