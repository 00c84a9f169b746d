/* test_constraint.c: the constraint engine on schemas alone: accepted and rejected texts byte by
 * byte for each keyword, unsupported and malformed schemas, the depth limit, tool-call
 * wrappers per family, and the token mask against brute-force simulation on a synthetic
 * vocabulary, and constrained requests through the engine's scheduler on a tiny random model
 * (byte tokens: every JSON text can be spelled), greedy and sampled. */
#include <jansson.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "event_collect.h"
#include "engine/constraint.h"
#include "model/chat.h"
#include "tiny_model.h"

static rf_jset g_set, g_tmp;

/* 0: died at some byte; 1: alive but not complete; 2: complete (may end). */
static int run_text(const rf_jschema *s, const char *text) {
    rf_jm_init(s, &g_set);
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        if (!rf_jm_step(s, &g_set, (uint8_t)text[i], &g_tmp)) rf_jm_copy(&g_set, &g_tmp);
        if (!g_set.n) return 0;
    }
    return rf_jm_can_end(s, &g_set) ? 2 : 1;
}

static rf_jschema *compile(const char *schema, rf_status *st_out, rf_error *err) {
    rf_jschema *s = NULL;
    rf_request_params p = rf_request_default_params();
    p.json_schema = schema;
    rf_status st = rf_constraint_compile(RF_CHAT_CHATML, &p, &s, err);
    if (st_out) *st_out = st;
    return s;
}

/* Every text in ok must be accepted (each prefix alive, the whole complete); every text in bad
 * must be refused (dead, or incomplete at its end). */
static void expect(const char *schema, const char *const *ok, const char *const *bad) {
    rf_error err = {0};
    rf_status st;
    rf_jschema *s = compile(schema, &st, &err);
    CHECK_MSG(st == RF_OK && s, "%s: %s", schema, err.msg);
    if (!s) return;
    for (int i = 0; ok && ok[i]; i++) {
        int r = run_text(s, ok[i]);
        CHECK_MSG(r == 2, "%s should accept %s (got %d)", schema, ok[i], r);
    }
    for (int i = 0; bad && bad[i]; i++) {
        int r = run_text(s, bad[i]);
        CHECK_MSG(r != 2, "%s should refuse %s", schema, bad[i]);
    }
    rf_jschema_free(s);
}

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_keywords(void) {
    expect("{\"type\":\"string\"}",
           L("\"\"", "\"abc\"", "\"a\\\"b\\\\\"", "\"\\u00e9x\"", "\"h\xc3\xa9\""),
           L("\"abc", "abc", "\"a\nb\"", "\"\\x\"", "\"\\u00g0\"", "\"\\u0000\"",
             "\"\\ud83d\\ude00\"", "\"\xc3\"", "\"\x80\"", "\"a\"b", "1"));
    expect("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}",
           L("\"ab\"", "\"abc\"", "\"\xc3\xa9\xc3\xa9\""), L("\"a\"", "\"abcd\"", "\"\""));
    expect("{\"type\":\"integer\"}", L("0", "-7", "123"), L("01", "1.5", "-", "1e3", "a"));
    expect("{\"type\":\"number\"}",
           L("0", "-0.5", "1e10", "2.5E-3", "7", "1234567890123456", "1E+99"),
           L(".5", "1.", "1e", "-", "00", "1.5.5", "12345678901234567", "1e123"));
    expect("{\"type\":\"boolean\"}", L("true", "false"), L("tru", "null", "truex", "1"));
    expect("{\"type\":\"null\"}", L("null"), L("nul", "false"));
    expect("{\"enum\":[\"red\",\"green\",1,null]}", L("\"red\"", "\"green\"", "1", "null"),
           L("\"blue\"", "\"re\"", "2", "\"red\"x"));
    expect("{\"const\":\"go\"}", L("\"go\""), L("\"g\"", "\"gone\""));
    expect("{\"enum\":[1,12]}", L("1", "12"), L("123", "2"));
    expect("{\"type\":[\"string\",\"null\"]}", L("\"x\"", "null"), L("1", "true"));
    expect("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"array\",\"items\":{\"type\":"
           "\"boolean\"}}]}",
           L("5", "[]", "[true,false]", "[true, false]"), L("[1]", "\"a\"", "[true,]"));
    expect("{\"oneOf\":[{\"const\":\"a\"},{\"const\":\"ab\"}]}", L("\"a\"", "\"ab\""),
           L("\"abc\"", "\"b\""));
    expect("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}",
           L("[1]", "[1,2]", "[ 1, 2 ]"), L("[]", "[1,2,3]", "[1,", "[1  ]", "[,1]"));
    const char *obj = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
                      "\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"boolean\"}},"
                      "\"required\":[\"b\"]}";
    expect(obj,
           L("{\"b\":\"x\"}", "{\"a\":1,\"b\":\"x\"}", "{\"a\": 1, \"b\": \"x\", \"c\": true}",
             "{\"b\":\"x\",\"c\":false}", "{ \"b\":\"x\" }"),
           L("{}", "{\"a\":1}", "{\"b\":\"x\",\"a\":1}", "{\"b\":\"x\",\"d\":1}", "{\"b\":1}",
             "{\"b\":\"x\"", "{\"b\" :\"x\"}", "{\"b\":  \"x\"}", "{\"b\":\"x\",}"));
    /* keys sharing a prefix */
    expect("{\"properties\":{\"lo\":{\"type\":\"integer\"},\"loc\":{\"type\":\"string\"}}}",
           L("{}", "{\"lo\":1}", "{\"loc\":\"x\"}", "{\"lo\":1,\"loc\":\"y\"}"),
           L("{\"loc\":1}", "{\"l\":1}"));
    expect("{\"type\":\"object\"}", L("{}", "{\"x\":[1,{\"y\":null}],\"z\":\"w\"}"),
           L("[]", "{\"x\"}", "{x:1}"));
    expect("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}",
           L("{\"k\":1,\"j\":2}"), L("{\"k\":\"v\"}"));
    expect("{\"type\":\"object\",\"additionalProperties\":false}", L("{}"), L("{\"k\":1}"));
    expect("{}", L("1", "\"s\"", "[[],{}]", "null", "{\"a\":{\"b\":[true]}}"),
           L("nul", "[1,]", "{\"a\" 1}"));
    expect("true", L("[]", "0"), L("]"));
    expect("{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"object\",\"properties\":"
           "{\"q\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]}}},\"required\":"
           "[\"q\"]}},\"required\":[\"p\"],\"title\":\"T\",\"description\":\"d\"}",
           L("{\"p\":{\"q\":[\"x\",\"y\"]}}"), L("{\"p\":{\"q\":[\"z\"]}}", "{\"p\":{}}"));
}

static void test_prefixes_alive(void) {
    rf_error err = {0};
    rf_jschema *s = compile("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
                            "\"string\"},\"n\":{\"type\":\"number\"}},\"required\":[\"name\","
                            "\"n\"]}",
                            NULL, &err);
    CHECK(s != NULL);
    if (!s) return;
    const char *text = "{\"name\": \"Bob\", \"n\": -1.5e3}";
    size_t n = strlen(text);
    char buf[64];
    for (size_t i = 1; i < n; i++) {
        memcpy(buf, text, i);
        buf[i] = 0;
        CHECK_MSG(run_text(s, buf) == 1, "prefix '%s' must be alive and incomplete", buf);
    }
    CHECK(run_text(s, text) == 2);
    CHECK(rf_jm_done(&g_set));
    rf_jschema_free(s);
}

static void test_errors(void) {
    const char *unsup[][2] = {
        {"{\"$ref\":\"#/x\"}", "$ref"},
        {"{\"type\":\"string\",\"pattern\":\"a+\"}", "pattern"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\",\"minimum\":0}}}",
         "json_schema.properties.a.minimum"},
        {"{\"allOf\":[{}]}", "allOf"},
        {"{\"not\":{}}", "not"},
        {"{\"type\":\"array\",\"items\":{\"if\":{}}}", "json_schema.items.if"},
        {"{\"patternProperties\":{}}", "patternProperties"},
        {"{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems"},
        {"false", "false"},
    };
    for (size_t i = 0; i < sizeof unsup / sizeof unsup[0]; i++) {
        rf_error err = {0};
        rf_status st;
        rf_jschema *s = compile(unsup[i][0], &st, &err);
        CHECK_MSG(st == RF_ERR_UNSUPPORTED && !s, "%s: status %d", unsup[i][0], st);
        CHECK_MSG(strstr(err.msg, unsup[i][1]) != NULL, "'%s' does not name %s", err.msg,
                  unsup[i][1]);
        rf_jschema_free(s);
    }
    const char *bad[] = {"{",
                         "[1]",
                         "{\"type\":\"strin\"}",
                         "{\"type\":5}",
                         "{\"enum\":[]}",
                         "{\"enum\":3}",
                         "{\"type\":\"string\",\"maxLength\":-1}",
                         "{\"type\":\"string\",\"minLength\":3,\"maxLength\":1}",
                         "{\"properties\":[]}",
                         "{\"type\":\"object\",\"required\":\"a\"}",
                         "{\"anyOf\":[]}",
                         "{\"properties\":{\"a\":7}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rf_error err = {0};
        rf_status st;
        rf_jschema *s = compile(bad[i], &st, &err);
        CHECK_MSG(st == RF_ERR_ARG && !s, "%s: status %d (%s)", bad[i], st, err.msg);
        rf_jschema_free(s);
    }
    /* deep nesting: refused by the depth limit, no stack overflow */
    size_t depth = 5000;
    char *deep = xmalloc(depth * 40 + 64);
    size_t at = 0;
    for (size_t i = 0; i < depth; i++) at += (size_t)sprintf(deep + at, "{\"items\":");
    at += (size_t)sprintf(deep + at, "{}");
    for (size_t i = 0; i < depth; i++) deep[at++] = '}';
    deep[at] = 0;
    rf_error err = {0};
    rf_status st;
    rf_jschema *s = compile(deep, &st, &err);
    CHECK_MSG((st == RF_ERR_UNSUPPORTED || st == RF_ERR_ARG) && !s, "deep: %d %s", st, err.msg);
    free(deep);
    /* within the limit: accepted */
    char ok[2048];
    at = 0;
    for (int i = 0; i < 20; i++) at += (size_t)sprintf(ok + at, "{\"items\":");
    at += (size_t)sprintf(ok + at, "{\"type\":\"null\"}");
    for (int i = 0; i < 20; i++) ok[at++] = '}';
    ok[at] = 0;
    s = compile(ok, &st, &err);
    CHECK(st == RF_OK && s);
    char text[64];
    memset(text, '[', 20);
    memcpy(text + 20, "null", 4);
    memset(text + 24, ']', 20);
    text[44] = 0;
    if (s) CHECK(run_text(s, text) == 2);
    rf_jschema_free(s);
    /* any value nested past the frame limit: refused at run time, no overflow */
    s = compile("{}", &st, &err);
    char arr[200];
    memset(arr, '[', 100);
    arr[100] = 0;
    if (s) CHECK(run_text(s, arr) == 0);
    rf_jschema_free(s);
}

/* Random bytes over a JSON-ish alphabet into several schemas: never a crash (ASan), and a text
 * the matcher completes always parses as JSON. */
static void test_random_bytes(void) {
    const char *schemas[] = {"{}", "{\"type\":\"object\"}",
                             "{\"type\":\"array\",\"items\":{\"type\":[\"number\",\"string\","
                             "\"null\"]},\"maxItems\":4}",
                             "{\"anyOf\":[{\"type\":\"integer\"},{\"enum\":[\"a\",[1,2],{\"k\":"
                             "true}]}]}"};
    const char alpha[] = "{}[]\",: 0123456789-+.eEtrufalsn\\/u\xc3\xa9\x01"
                         "abk";
    uint64_t seed = 11;
    int completed = 0;
    for (size_t si = 0; si < sizeof schemas / sizeof schemas[0]; si++) {
        rf_error err = {0};
        rf_jschema *s = compile(schemas[si], NULL, &err);
        CHECK(s != NULL);
        if (!s) continue;
        for (int k = 0; k < 3000; k++) {
            char text[40];
            int n = 1 + (int)(rng_next(&seed) % 12);
            for (int i = 0; i < n; i++) text[i] = alpha[rng_next(&seed) % (sizeof alpha - 1)];
            text[n] = 0;
            rf_jm_init(s, &g_set);
            int i = 0;
            for (; i < n && g_set.n; i++)
                if (!rf_jm_step(s, &g_set, (uint8_t)text[i], &g_tmp)) rf_jm_copy(&g_set, &g_tmp);
            if (g_set.n && rf_jm_can_end(s, &g_set)) {
                json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
                CHECK_MSG(j != NULL, "schema %zu accepted '%s', which is not JSON", si, text);
                json_decref(j);
                completed++;
            }
        }
        rf_jschema_free(s);
    }
    CHECK(completed > 0);
}

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"tz\":{\"type\":\"string\"}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"ping\"}}]";

static rf_jschema *tools_schema(int family, rf_tool_choice choice, const char *name,
                                bool parallel) {
    rf_request_params p = rf_request_default_params();
    p.tools_json = TOOLS;
    p.tool_choice = choice;
    p.tool_name = name;
    p.parallel_tool_calls = parallel;
    rf_jschema *s = NULL;
    rf_error err = {0};
    rf_status st = rf_constraint_compile(family, &p, &s, &err);
    CHECK_MSG(st == RF_OK && s, "tools: %s", err.msg);
    return s;
}

static void test_tool_wrappers(void) {
    rf_jschema *s = tools_schema(RF_CHAT_QWEN, RF_TOOL_CHOICE_REQUIRED, NULL, false);
    if (s) {
        const char *call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                           "\"Paris\"}}\n</tool_call>";
        CHECK(run_text(s, call) == 2);
        CHECK(rf_jm_done(&g_set));
        CHECK(run_text(s, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>") ==
              2);
        CHECK(
            run_text(s, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>") ==
            2);
        CHECK(run_text(s, "<tool_call>\n{\"name\": \"nope\"") == 0);
        CHECK(run_text(s, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}") == 0);
        CHECK(run_text(s, "Sure") == 0);
        CHECK(run_text(s, "") == 1);
        rf_jschema_free(s);
    }
    s = tools_schema(RF_CHAT_QWEN, RF_TOOL_CHOICE_NAMED, "get_time", false);
    if (s) {
        CHECK(run_text(s, "<tool_call>\n{\"name\": \"get_weather\"") == 0);
        CHECK(run_text(s, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": "
                          "\"UTC\"}}\n</tool_call>") == 2);
        rf_jschema_free(s);
    }
    s = tools_schema(RF_CHAT_QWEN, RF_TOOL_CHOICE_REQUIRED, NULL, true);
    if (s) {
        const char *two = "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n"
                          "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>";
        CHECK(run_text(s, two) == 2);
        CHECK(!rf_jm_done(&g_set)); /* another call may follow */
        rf_jschema_free(s);
    }
    s = tools_schema(RF_CHAT_QWEN, RF_TOOL_CHOICE_AUTO, NULL, false);
    if (s) {
        CHECK(run_text(s, "Hello there") == 2);
        CHECK(run_text(s, "Let me check. <tool_call>\n{\"name\": \"ping\", \"arguments\": {}}"
                          "\n</tool_call>") == 2);
        CHECK(rf_jm_done(&g_set));
        CHECK(run_text(s, "x <tool_call>\n{\"name\": \"pong\"") == 0);
        CHECK(run_text(s, "<tool_call>\n{\"name\": \"ping\"") == 1);
        CHECK(run_text(s, "{\"name\": \"ping\", \"arguments\": {}}") == 2); /* bare */
        CHECK(rf_jm_done(&g_set));
        CHECK(run_text(s, " {\"x\"") == 0);
        rf_jschema_free(s);
    }
    s = tools_schema(RF_CHAT_QWEN, RF_TOOL_CHOICE_AUTO, NULL, true);
    if (s) {
        const char *two = "A <tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"
                          "\n{ and <tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n"
                          "</tool_call> done";
        CHECK(run_text(s, two) == 2);
        CHECK(!rf_jm_done(&g_set));
        CHECK(run_text(s, "A <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
                          "</tool_call> <tool_call>\n{\"name\": \"x") == 0);
        rf_jschema_free(s);
    }
    s = tools_schema(RF_CHAT_GEMMA, RF_TOOL_CHOICE_REQUIRED, NULL, false);
    if (s) {
        CHECK(run_text(s, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}") ==
              2);
        CHECK(rf_jm_done(&g_set));
        CHECK(run_text(s, " {\"name\":\"ping\",\"parameters\":{}}") == 2);
        CHECK(run_text(s, "{\"name\": \"get_weather\", \"arguments\": {}}") == 0);
        CHECK(run_text(s, "Hi") == 0);
        rf_jschema_free(s);
    }
    s = tools_schema(RF_CHAT_CHATML, RF_TOOL_CHOICE_AUTO, NULL, false);
    if (s) {
        CHECK(run_text(s, "Hi {there}") == 2);
        CHECK(run_text(s, "  {\"name\": \"ping\", \"parameters\": {}}") == 2);
        CHECK(run_text(s, "{\"nam") == 1);
        CHECK(run_text(s, "{\"x\": 1}") == 0);
        rf_jschema_free(s);
    }
    /* bad tool requests */
    rf_request_params p = rf_request_default_params();
    rf_jschema *out = NULL;
    rf_error err = {0};
    p.tool_choice = RF_TOOL_CHOICE_REQUIRED;
    CHECK(rf_constraint_compile(RF_CHAT_QWEN, &p, &out, &err) == RF_ERR_ARG && !out);
    p.tools_json = TOOLS;
    p.tool_choice = RF_TOOL_CHOICE_NAMED;
    p.tool_name = "missing";
    CHECK(rf_constraint_compile(RF_CHAT_QWEN, &p, &out, &err) == RF_ERR_ARG && !out);
    CHECK(strstr(err.msg, "missing") != NULL);
    p.tools_json = "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{"
                   "\"type\":\"object\",\"properties\":{\"x\":{\"$ref\":\"#/a\"}}}}}]";
    p.tool_name = "f";
    CHECK(rf_constraint_compile(RF_CHAT_QWEN, &p, &out, &err) == RF_ERR_UNSUPPORTED && !out);
    CHECK(strstr(err.msg, "tools[0].function.parameters.properties.x.$ref") != NULL);
    char many[8192] = "[";
    for (int i = 0; i < 65; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "%s{\"type\":\"function\",\"function\":{\"name\":\"f%d\"}}", i ? "," : "", i);
    strcat(many, "]");
    p.tools_json = many;
    p.tool_choice = RF_TOOL_CHOICE_REQUIRED;
    CHECK(rf_constraint_compile(RF_CHAT_QWEN, &p, &out, &err) == RF_ERR_UNSUPPORTED && !out);
    p.tool_choice = RF_TOOL_CHOICE_NAMED;
    p.tool_name = "f64"; /* one of many: fine */
    CHECK(rf_constraint_compile(RF_CHAT_QWEN, &p, &out, &err) == RF_OK && out);
    if (out)
        CHECK(run_text(out, "<tool_call>\n{\"name\": \"f64\", \"arguments\": {}}\n</tool_call>") ==
              2);
    rf_jschema_free(out);
    out = NULL;
    p.tools_json = "{}";
    CHECK(rf_constraint_compile(RF_CHAT_QWEN, &p, &out, &err) == RF_ERR_ARG && !out);
    p = rf_request_default_params();
    CHECK(rf_constraint_compile(RF_CHAT_QWEN, &p, &out, &err) == RF_OK && !out);
}

/* A synthetic vocabulary: JSON-ish fragments, UTF-8 pieces (whole and split), specials. */
static const char *VOCAB[] = {"{",
                              "}",
                              "\"",
                              "\":",
                              "\": ",
                              ",",
                              ", ",
                              "[",
                              "]",
                              "\"name",
                              "name",
                              "\"ci",
                              "ty",
                              "\":\"",
                              "Paris",
                              " ",
                              "  ",
                              "\n",
                              "1",
                              "23",
                              "-",
                              ".",
                              "e",
                              "true",
                              "tr",
                              "ue",
                              "null",
                              "\\",
                              "\\n",
                              "\\u00",
                              "e9",
                              "\xc3",
                              "\xa9",
                              "\xc3\xa9",
                              "ab\"",
                              "\"}",
                              "\"}}",
                              "<tool_call>",
                              "</tool_call>",
                              "\"get_weather",
                              "get",
                              "_weather",
                              "\"arguments",
                              "\"parameters",
                              "x",
                              "\t",
                              "{\"",
                              "\"}\n",
                              "\"ping",
                              "{}",
                              "}}"};

static void test_mask(void) {
    const int32_t nv = (int32_t)(sizeof VOCAB / sizeof VOCAB[0]) + 2;
    const char *pieces[64];
    uint32_t lens[64];
    uint8_t kinds[64];
    for (int32_t i = 0; i < nv - 2; i++) {
        pieces[i] = VOCAB[i];
        lens[i] = (uint32_t)strlen(VOCAB[i]);
        kinds[i] = RF_VK_ORDINARY;
        if (!strcmp(VOCAB[i], "<tool_call>") || !strcmp(VOCAB[i], "</tool_call>"))
            kinds[i] = RF_VK_SPECIAL;
    }
    pieces[nv - 2] = "";
    lens[nv - 2] = 0;
    kinds[nv - 2] = RF_VK_EOG;
    pieces[nv - 1] = "<|im_start|>";
    lens[nv - 1] = 0; /* a control token: decodes to nothing */
    kinds[nv - 1] = RF_VK_NEVER;
    rf_vocab_index *v = NULL;
    rf_error err = {0};
    CHECK(rf_vocab_index_from_pieces(pieces, lens, kinds, nv, &v, &err) == RF_OK);
    if (!v) return;
    const char *schemas[] = {
        ("{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"n\":{\"type\":"
         "\"number\"}},\"required\":[\"city\"]}"),
        "{}", "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":3}}"};
    uint64_t bits[2];
    uint64_t seed = 7;
    for (int si = 0; si < 5; si++) {
        rf_jschema *s;
        if (si < 3)
            s = compile(schemas[si], NULL, &err);
        else
            s = tools_schema(si == 3 ? RF_CHAT_QWEN : RF_CHAT_GEMMA,
                             si == 3 ? RF_TOOL_CHOICE_AUTO : RF_TOOL_CHOICE_REQUIRED, NULL, true);
        CHECK(s != NULL);
        if (!s) continue;
        /* random walks: at each step the mask must equal token-by-token simulation */
        for (int walk = 0; walk < 30; walk++) {
            rf_constraint *c = NULL;
            CHECK(rf_constraint_new(s, v, &c, &err) == RF_OK);
            for (int step = 0; step < 40 && !rf_constraint_done(c); step++) {
                int32_t n = rf_constraint_mask(c, bits);
                int32_t brute = 0, allowed[64], na = 0;
                for (int32_t id = 0; id < nv; id++) {
                    bool a = rf_constraint_allows(c, id);
                    bool m = (bits[id / 64] >> (id % 64)) & 1u;
                    CHECK_MSG(a == m, "schema %d walk %d step %d token %d '%s': mask %d, sim %d",
                              si, walk, step, id, pieces[id], m, a);
                    if (a) {
                        brute++;
                        if (kinds[id] != RF_VK_EOG) allowed[na++] = id;
                    }
                }
                CHECK(n == brute);
                if (!na) break;
                int32_t pick = allowed[rng_next(&seed) % (uint64_t)na];
                CHECK(rf_constraint_accept(c, pick));
            }
            rf_constraint_free(c);
        }
        rf_jschema_free(s);
    }
    /* a control token is never allowed; EOS only when the value is complete */
    rf_jschema *s = compile("{\"type\":\"integer\"}", NULL, &err);
    rf_constraint *c = NULL;
    if (s && rf_constraint_new(s, v, &c, &err) == RF_OK) {
        CHECK(!rf_constraint_allows(c, nv - 1));
        CHECK(!rf_constraint_allows(c, nv - 2));
        CHECK(rf_constraint_accept(c, 18)); /* "1" */
        CHECK(rf_constraint_allows(c, nv - 2));
        CHECK(!rf_constraint_accept(c, 0)); /* "{" refused, state unchanged */
        CHECK(rf_constraint_accept(c, 19)); /* "23" */
        CHECK(!rf_constraint_done(c));
    }
    rf_constraint_free(c);
    rf_jschema_free(s);
    rf_vocab_index_free(v);
}

static void test_engine_tiny(void) {
    tiny_spec ts = tiny_default();
    const char *file = tiny_write_file(&ts, "constraint");
    CHECK(file != NULL);
    if (!file) return;
    char path[256];
    snprintf(path, sizeof path, "%s", file);
    rf_engine_params ep = rf_engine_default_params();
    ep.model_path = path;
    ep.n_threads = 2;
    ep.max_seqs = 4;
    ep.n_ctx = 128;
    rf_engine *e = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_engine_open(&ep, &e, &err) == RF_OK, "%s", err.msg);
    if (!e) {
        remove(path);
        return;
    }
    const char *schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"},"
                         "\"n\":{\"type\":\"integer\"},\"s\":{\"enum\":[\"x\",\"yy\"]}},"
                         "\"required\":[\"a\",\"n\",\"s\"]}";
    rf_request_params p = rf_request_default_params();
    /* refusals come from check_request and submit alike */
    p.json_schema = "{\"type\":\"string\",\"pattern\":\"x\"}";
    CHECK(rf_engine_check_request(e, &p, &err) == RF_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "pattern") != NULL);
    int32_t prompt[4] = {2, 270, 271, 272};
    CHECK(rf_engine_submit(e, prompt, 4, &p, ec_on_event, NULL, NULL, &err) == RF_ERR_UNSUPPORTED);
    p.json_schema = "{\"type\":";
    CHECK(rf_engine_check_request(e, &p, &err) == RF_ERR_ARG);
    enum { N = 6 };
    static ec_out o[N];
    for (int i = 0; i < N; i++) {
        ec_init(&o[i]);
        rf_request_params q = rf_request_default_params();
        q.json_schema = schema;
        q.max_tokens = 100;
        q.temperature = i == 0 ? 0.0f : 1.0f; /* sampled: random logits, many refusals */
        q.top_k = i < 3 ? 0 : 20;
        q.seed = (uint64_t)i;
        CHECK(rf_engine_submit(e, prompt, 4, &q, ec_on_event, &o[i], NULL, &err) == RF_OK);
    }
    for (int i = 0; i < N; i++) {
        ec_wait(&o[i]);
        CHECK_MSG(o[i].finish == RF_FINISH_STOP, "request %d: finish %d: %s", i, o[i].finish,
                  o[i].text);
        json_t *j = json_loads(o[i].text, 0, NULL);
        CHECK_MSG(json_is_object(j) && json_object_size(j) == 3, "request %d: %s", i, o[i].text);
        CHECK(json_is_boolean(json_object_get(j, "a")));
        CHECK(json_is_integer(json_object_get(j, "n")));
        const char *sv = json_string_value(json_object_get(j, "s"));
        CHECK(sv && (!strcmp(sv, "x") || !strcmp(sv, "yy")));
        json_decref(j);
        ec_destroy(&o[i]);
    }
    rf_engine_close(e);
    remove(path);
}

int main(void) {
    test_keywords();
    test_prefixes_alive();
    test_errors();
    test_tool_wrappers();
    test_mask();
    test_random_bytes();
    test_engine_tiny();
    printf("test_constraint: %d checks, %d failures\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
