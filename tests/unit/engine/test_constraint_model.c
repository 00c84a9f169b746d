/* test_constraint_model.c: constrained generation end to end on the real models (SmolLM2,
 * chatml; Qwen2.5-Coder, qwen tool format), each skipped when its file is absent:
 *   - a json_schema request's output parses with jansson and matches the schema;
 *   - json_object mode ({"type":"object"}) gives an object;
 *   - tool_choice named and required give a reply rf_engine_parse_reply reads as a call to the
 *     right tool with arguments matching its parameters;
 *   - the mask on the real vocabulary equals token-by-token simulation of every token.
 * Skips (77) when neither model is there. */
#include <jansson.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "event_collect.h"
#include "engine/constraint.h"
#include "model/chat.h"
#include "model/model.h"
#include "roofline/engine.h"
#include <unistd.h>

/* Runs one chat request; returns the output text in c. */
static bool generate(rf_engine *e, const char *user, const char *tools, rf_request_params *p,
                     ec_out *c) {
    rf_message m[1] = {{"user", user, NULL, NULL}};
    char *prompt = NULL;
    rf_error err = {0};
    if (rf_engine_chat_prompt(e, m, 1, tools, true, &prompt, &err)) return false;
    int32_t *ids = NULL;
    int64_t n = rf_engine_tokenize_alloc(e, prompt, strlen(prompt), true, true, &ids, &err);
    free(prompt);
    if (n < 1) return false;
    ec_init(c);
    rf_status st = rf_engine_submit(e, ids, (int32_t)n, p, ec_on_event, c, NULL, &err);
    free(ids);
    CHECK_MSG(st == RF_OK, "submit: %s", err.msg);
    if (!st) ec_wait(c);
    ec_destroy(c);
    return st == RF_OK;
}

static void test_json_schema(rf_engine *e, const char *tag) {
    const char *schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
                         "\"maxLength\":24},\"age\":{\"type\":\"integer\"},\"langs\":{\"type\":"
                         "\"array\",\"items\":{\"enum\":[\"c\",\"python\",\"go\"]},"
                         "\"maxItems\":3}},\"required\":[\"name\",\"age\",\"langs\"]}";
    rf_request_params p = rf_request_default_params();
    p.json_schema = schema;
    p.max_tokens = 80;
    ec_out c;
    if (!generate(e, "Describe a programmer as JSON with name, age and languages.", NULL, &p, &c))
        return;
    CHECK_MSG(c.finish == RF_FINISH_STOP, "%s: finish %d, text %s", tag, c.finish, c.text);
    json_error_t je;
    json_t *j = json_loads(c.text, 0, &je);
    CHECK_MSG(json_is_object(j), "%s: not a JSON object: %s", tag, c.text);
    json_t *name = json_object_get(j, "name");
    CHECK_MSG(json_is_string(name) && strlen(json_string_value(name)) <= 24 * 4, "%s: %s", tag,
              c.text);
    CHECK_MSG(json_is_integer(json_object_get(j, "age")), "%s: %s", tag, c.text);
    json_t *langs = json_object_get(j, "langs");
    CHECK_MSG(json_is_array(langs) && json_array_size(langs) <= 3, "%s: %s", tag, c.text);
    size_t i;
    json_t *l;
    json_array_foreach(langs, i, l) {
        const char *s = json_string_value(l);
        CHECK(s && (!strcmp(s, "c") || !strcmp(s, "python") || !strcmp(s, "go")));
    }
    CHECK(json_object_size(j) == 3);
    json_decref(j);
    printf("%s json_schema: %s\n", tag, c.text);

    /* json_object mode, sampled */
    p = rf_request_default_params();
    p.json_schema = "{\"type\":\"object\"}";
    p.temperature = 0.8f;
    p.seed = 3;
    p.max_tokens = 60;
    if (!generate(e, "Give me a JSON object about the weather.", NULL, &p, &c)) return;
    if (c.finish == RF_FINISH_STOP) {
        j = json_loads(c.text, 0, &je);
        CHECK_MSG(json_is_object(j), "%s: json_object: %s", tag, c.text);
        json_decref(j);
    } else { /* ran out of tokens: still a prefix of an object */
        CHECK_MSG(c.finish == RF_FINISH_LENGTH && c.text[0] == '{', "%s: %d %s", tag, c.finish,
                  c.text);
    }
    printf("%s json_object: %s\n", tag, c.text);
}

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Current "
    "weather in a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
    "\"string\",\"maxLength\":40},\"unit\":{\"enum\":[\"celsius\",\"fahrenheit\"]}},"
    "\"required\":[\"city\",\"unit\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"send_email\",\"description\":\"Send an "
    "email\",\"parameters\":{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\","
    "\"maxLength\":40},\"body\":{\"type\":\"string\",\"maxLength\":60}},\"required\":[\"to\","
    "\"body\"]}}}]";

static void check_call(rf_engine *e, const char *tag, const ec_out *c, const char *want) {
    CHECK_MSG(c->finish == RF_FINISH_STOP, "%s: finish %d: %s", tag, c->finish, c->text);
    rf_reply r;
    rf_error err = {0};
    CHECK(rf_engine_parse_reply(e, c->text, c->len, TOOLS, &r, &err) == RF_OK);
    CHECK_MSG(r.n_calls == 1, "%s: %d calls in %s", tag, r.n_calls, c->text);
    if (r.n_calls >= 1) {
        CHECK_MSG(!want || !strcmp(r.calls[0].name, want), "%s: called %s", tag, r.calls[0].name);
        json_t *a = json_loads(r.calls[0].arguments, 0, NULL);
        CHECK(json_is_object(a));
        if (!strcmp(r.calls[0].name, "get_weather")) {
            CHECK(json_is_string(json_object_get(a, "city")));
            const char *u = json_string_value(json_object_get(a, "unit"));
            CHECK(u && (!strcmp(u, "celsius") || !strcmp(u, "fahrenheit")));
        } else {
            CHECK(!strcmp(r.calls[0].name, "send_email"));
            CHECK(json_is_string(json_object_get(a, "to")));
            CHECK(json_is_string(json_object_get(a, "body")));
        }
        json_decref(a);
    }
    rf_reply_free(&r);
    printf("%s: %s\n", tag, c->text);
}

static void test_tools(rf_engine *e, const char *tag) {
    rf_request_params p = rf_request_default_params();
    p.tools_json = TOOLS;
    p.tool_choice = RF_TOOL_CHOICE_NAMED;
    p.tool_name = "get_weather";
    p.max_tokens = 80;
    ec_out c;
    char t[64];
    if (generate(e, "What is the weather like in Paris?", TOOLS, &p, &c)) {
        snprintf(t, sizeof t, "%s named", tag);
        check_call(e, t, &c, "get_weather");
    }
    p.tool_choice = RF_TOOL_CHOICE_REQUIRED;
    p.tool_name = NULL;
    if (generate(e, "Email bob@example.com that the build is green.", TOOLS, &p, &c)) {
        snprintf(t, sizeof t, "%s required", tag);
        check_call(e, t, &c, NULL);
    }
    p.tool_choice = RF_TOOL_CHOICE_AUTO;
    p.max_tokens = 100;
    if (generate(e, "What is the weather like in Oslo? Use the tool.", TOOLS, &p, &c)) {
        rf_reply r;
        rf_error err = {0};
        CHECK(rf_engine_parse_reply(e, c.text, c.len, TOOLS, &r, &err) == RF_OK);
        /* either a plain answer or well-formed calls: a reply that opens a call (a first
         * non-space '{', or the tag) is constrained into one */
        const char *q = c.text;
        while (*q == ' ' || *q == '\n') q++;
        if (*q == '{' || strstr(c.text, "<tool_call>"))
            CHECK_MSG(r.n_calls >= 1, "%s auto: an opened call that does not parse: %s", tag,
                      c.text);
        for (int32_t i = 0; i < r.n_calls; i++) {
            json_t *a = json_loads(r.calls[i].arguments, 0, NULL);
            CHECK(json_is_object(a));
            json_decref(a);
        }
        printf("%s auto (%d calls): %s\n", tag, r.n_calls, c.text);
        rf_reply_free(&r);
    }
}

/* The mask on the real vocabulary equals simulating every token, along a constrained path. */
static void test_real_mask(const char *path, int family) {
    rf_model *m = NULL;
    rf_error err = {0};
    if (rf_model_load(path, &m, &err)) return;
    rf_vocab_index *v = NULL;
    CHECK(rf_vocab_index_build(rf_model_tokenizer(m), &v, &err) == RF_OK);
    rf_request_params p = rf_request_default_params();
    p.tools_json = TOOLS;
    p.tool_choice = RF_TOOL_CHOICE_REQUIRED;
    rf_jschema *s = NULL;
    CHECK(rf_constraint_compile(family, &p, &s, &err) == RF_OK);
    rf_constraint *c = NULL;
    if (v && s && rf_constraint_new(s, v, &c, &err) == RF_OK) {
        const char *text = family == RF_CHAT_QWEN ? "<tool_call>\n{\"name\": \"get_weather\", "
                                                    "\"arguments\": {\"city\": \"Par"
                                                  : "{\"name\": \"get_weather\", \"parameters\": "
                                                    "{\"city\": \"Par";
        int32_t *ids = NULL;
        int64_t n = rf_tokenizer_encode_alloc(rf_model_tokenizer(m), text, strlen(text), false,
                                              true, &ids, &err);
        uint64_t *bits = xmalloc(((size_t)v->n_vocab + 63) / 64 * 8);
        for (int64_t k = 0; k <= n; k++) {
            int32_t cnt = rf_constraint_mask(c, bits), brute = 0, bad = 0;
            for (int32_t id = 0; id < v->n_vocab; id++) {
                bool a = rf_constraint_allows(c, id);
                brute += a;
                bad += a != (bool)((bits[id / 64] >> (id % 64)) & 1u);
            }
            CHECK_MSG(bad == 0 && cnt == brute, "%s step %lld: %d tokens differ", path,
                      (long long)k, bad);
            if (k < n) CHECK_MSG(rf_constraint_accept(c, ids[k]), "token %d refused", ids[k]);
        }
        free(bits);
        free(ids);
    }
    rf_constraint_free(c);
    rf_jschema_free(s);
    rf_vocab_index_free(v);
    rf_model_free(m);
}

int main(void) {
    const char *models[2][2] = {
        {ROOFLINE_MODELS_DIR "/smollm2-135m-instruct-q4_1.gguf", "smollm2"},
        {ROOFLINE_MODELS_DIR "/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen"}};
    int ran = 0;
    for (int i = 0; i < 2; i++) {
        if (access(models[i][0], R_OK) != 0) continue;
        ran++;
        rf_engine_params ep = rf_engine_default_params();
        ep.model_path = models[i][0];
        ep.max_seqs = 2;
        ep.n_ctx = 1024;
        rf_engine *e = NULL;
        rf_error err = {0};
        CHECK_MSG(rf_engine_open(&ep, &e, &err) == RF_OK, "%s", err.msg);
        if (!e) continue;
        test_json_schema(e, models[i][1]);
        test_tools(e, models[i][1]);
        rf_engine_info info;
        rf_engine_get_info(e, &info);
        rf_chat_family fam = RF_CHAT_CHATML;
        rf_chat_family_parse(info.chat_template, &fam);
        rf_engine_close(e);
        test_real_mask(models[i][0], fam);
    }
    if (!ran) {
        printf("test_constraint_model: no model in %s: skipped\n", ROOFLINE_MODELS_DIR);
        return 77;
    }
    printf("test_constraint_model: %d checks, %d failures\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
