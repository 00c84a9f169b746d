/* test_chat.c: the native chat families render what llama.cpp renders with each model's own
 * template (tests/data/chat_ref.json: llama-server --jinja /apply-template, from
 * tools/ref/gen_chat_ref.py): the family and default system text recognised from the template
 * text alone, every case (system or not, conversations, tools, tool calls and results, with and
 * without the generation prompt) byte for byte. Also the Gemma family (llama.cpp's "gemma"), an
 * unknown template refused clearly, and tool calls read back from replies in each family's form
 * (tagged, bare JSON, the prompt's JSON), with the form reported. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/chat.h"
#include "model/toolcall.h"

static rf_chat_template g_gemma = {.family = RF_CHAT_GEMMA};

static void expect(const rf_chat_template *t, const rf_chat_msg *m, size_t n, bool gen,
                   const char *want) {
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_error err = {0};
    CHECK_MSG(rf_chat_render(t, m, n, NULL, gen, &b, &err) == RF_OK, "%s", err.msg);
    CHECK_MSG(b.data && strcmp((const char *)b.data, want) == 0, "got:\n%s\nwant:\n%s",
              b.data ? (const char *)b.data : "(null)", want);
    rf_buf_free(&b);
}

static void gemma_cases(void) {
    rf_chat_msg one[] = {{"user", "  What is 2+2?\n", NULL, NULL}};
    expect(&g_gemma, one, 1, true,
           "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n");
    rf_chat_msg sys[] = {{"system", " Be brief. ", NULL, NULL},
                         {"user", "Why is the sky blue?", NULL, NULL}};
    expect(&g_gemma, sys, 2, true,
           "<start_of_turn>user\nBe brief.\n\nWhy is the sky blue?<end_of_turn>\n"
           "<start_of_turn>model\n");
    rf_chat_msg conv[] = {{"user", "hi", NULL, NULL},
                          {"assistant", "Hello! ", NULL, NULL},
                          {"user", "bye", NULL, NULL}};
    expect(&g_gemma, conv, 3, true,
           "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
           "<start_of_turn>user\nbye<end_of_turn>\n<start_of_turn>model\n");
    expect(&g_gemma, conv, 2, false,
           "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n");
    rf_chat_msg bad[] = {{"user", NULL, NULL, NULL}};
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_error err = {0};
    CHECK(rf_chat_render(&g_gemma, bad, 1, NULL, true, &b, &err) == RF_ERR_ARG);
    rf_buf_free(&b);
    /* tools for a family without a tool section: described in the system text */
    rf_buf_init(&b, 0);
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}]";
    CHECK(rf_chat_render(&g_gemma, one, 1, tools, true, &b, &err) == RF_OK);
    CHECK(b.data && strstr((const char *)b.data, "You have access to the functions below") &&
          strstr((const char *)b.data, "\"name\": \"f\""));
    rf_buf_free(&b);
}

/* The messages of a reference case as rf_chat_msg (strings borrowed from req). */
static size_t case_msgs(json_t *req, rf_chat_msg *m, char **owned, size_t cap) {
    size_t n = 0, i;
    json_t *x;
    json_array_foreach(json_object_get(req, "messages"), i, x) {
        if (n >= cap) break;
        json_t *tc = json_object_get(x, "tool_calls");
        owned[n] = tc ? json_dumps(tc, JSON_COMPACT) : NULL;
        m[n] = (rf_chat_msg){json_string_value(json_object_get(x, "role")),
                             json_string_value(json_object_get(x, "content")), owned[n],
                             json_string_value(json_object_get(x, "tool_call_id"))};
        n++;
    }
    return n;
}

static void reference_cases(void) {
    const char *dir = getenv("ROOFLINE_TEST_DATA");
    char path[512];
    snprintf(path, sizeof path, "%s/chat_ref.json", dir ? dir : "tests/data");
    json_error_t je;
    json_t *ref = json_load_file(path, 0, &je);
    CHECK_MSG(ref != NULL, "%s: %s", path, je.text);
    const char *name;
    json_t *mo;
    int compared = 0;
    json_object_foreach(json_object_get(ref, "models"), name, mo) {
        rf_chat_template t;
        rf_chat_template_detect(json_string_value(json_object_get(mo, "template")), RF_CHAT_UNKNOWN,
                                &t);
        bool qwen = strstr(name, "qwen") != NULL;
        CHECK_MSG(t.family == (qwen ? RF_CHAT_QWEN : RF_CHAT_CHATML), "%s: family %s", name,
                  rf_chat_family_name(t.family));
        CHECK(t.default_system != NULL);
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(mo, "cases"), i, c) {
            json_t *req = json_object_get(c, "request");
            rf_chat_msg m[16];
            char *owned[16] = {0};
            size_t n = case_msgs(req, m, owned, 16);
            json_t *tools = json_object_get(req, "tools");
            char *tools_s = tools ? json_dumps(tools, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
            rf_buf b;
            rf_buf_init(&b, 0);
            rf_error err = {0};
            bool gen = json_is_true(json_object_get(c, "add_generation_prompt"));
            rf_status st = rf_chat_render(&t, m, n, tools_s, gen, &b, &err);
            const char *want = json_string_value(json_object_get(c, "prompt"));
            const char *got = b.data ? (const char *)b.data : "";
            if (tools && !qwen) {
                /* llama.cpp drops tools the template cannot show; roofline describes them in
                 * the system turn, so the model can call them */
                CHECK_MSG(st == RF_OK && strstr(got, "You have access to the functions below"),
                          "%s %s: %s", name, json_string_value(json_object_get(c, "label")), got);
            } else {
                CHECK_MSG(st == RF_OK && !strcmp(got, want),
                          "%s '%s' (gen %d):\ngot:\n%s\nwant:\n%s", name,
                          json_string_value(json_object_get(c, "label")), gen, got, want);
                compared++;
            }
            rf_buf_free(&b);
            free(tools_s);
            for (size_t k = 0; k < n; k++) free(owned[k]);
        }
        rf_chat_template_free(&t);
    }
    CHECK_MSG(compared >= 20, "%d cases compared byte for byte", compared);
    json_decref(ref);
}

static void unknown_template(void) {
    rf_chat_template t;
    rf_chat_template_detect("{% for m in messages %}<|start_header_id|>{{ m.role }}"
                            "<|end_header_id|>{% endfor %}",
                            RF_CHAT_UNKNOWN, &t);
    CHECK(t.family == RF_CHAT_UNKNOWN);
    rf_chat_msg one[] = {{"user", "hi", NULL, NULL}};
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_error err = {0};
    CHECK(rf_chat_render(&t, one, 1, NULL, true, &b, &err) == RF_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "gemma, chatml, qwen") && strstr(err.msg, "--chat-template"));
    rf_buf_free(&b);
    rf_chat_template_free(&t);
    rf_chat_template_detect(NULL, RF_CHAT_GEMMA, &t); /* no template: the architecture's */
    CHECK(t.family == RF_CHAT_GEMMA && !t.default_system);
    rf_chat_family f;
    CHECK(rf_chat_family_parse("qwen", &f) && f == RF_CHAT_QWEN);
    CHECK(!rf_chat_family_parse("unknown", &f) && !rf_chat_family_parse("llama3", &f));
}

/* A file's own wording of Qwen's tool section wins over the usual one (Qwen2.5-Coder 1.5B's
 * template doubles the braces of its example call; llama.cpp renders them as written). */
static void tool_section_wording(void) {
    static const char tpl[] =
        "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {{- 'You are Q.' }}\n"
        "    {{- \"\\n\\n# Tools\\n\\nCall 'tools':\\n<tools>\" }}\n"
        "    {%- for tool in tools %}{{- \"\\n\" }}{{- tool | tojson }}{%- endfor %}\n"
        "    {{- \"\\n</tools>\\n\\nFor each function call, say \\\"x\\\":\\n<tool_call>\\n"
        "{{\\\"name\\\": <function-name>}}\\n</tool_call><|im_end|>\\n\" }}\n"
        "{%- else %}{{- '<|im_start|>system\\nYou are Q.<|im_end|>\\n' }}{%- endif %}"
        "{{- '<tool_response>' }}";
    rf_chat_template t;
    rf_chat_template_detect(tpl, RF_CHAT_UNKNOWN, &t);
    CHECK(t.family == RF_CHAT_QWEN);
    CHECK_MSG(t.tools_head && !strcmp(t.tools_head, "\n\n# Tools\n\nCall 'tools':\n<tools>"), "%s",
              t.tools_head ? t.tools_head : "(null)");
    CHECK_MSG(t.tools_tail && !strcmp(t.tools_tail, "\n</tools>\n\nFor each function call, say "
                                                    "\"x\":\n<tool_call>\n{{\"name\": "
                                                    "<function-name>}}\n</tool_call><|im_end|>\n"),
              "%s", t.tools_tail ? t.tools_tail : "(null)");
    rf_chat_msg one[] = {{"user", "hi", NULL, NULL}};
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_error err = {0};
    CHECK(rf_chat_render(&t, one, 1, "[{\"type\":\"function\"}]", true, &b, &err) == RF_OK);
    CHECK(rf_buf_append(&b, "", 1) == RF_OK);
    const char *want = "<|im_start|>system\nYou are Q.\n\n# Tools\n\nCall 'tools':\n<tools>\n"
                       "{\"type\": \"function\"}\n</tools>\n\nFor each function call, say \"x\":\n"
                       "<tool_call>\n{{\"name\": <function-name>}}\n</tool_call><|im_end|>\n"
                       "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    CHECK_MSG(!strcmp((const char *)b.data, want), "rendered:\n%s", (const char *)b.data);
    rf_buf_free(&b);
    rf_chat_template_free(&t);
}

static void replies(void) {
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"count_ids\","
                        "\"parameters\":{\"type\":\"object\"}}}]";
    static const struct {
        int family;
        const char *reply;
        int n;
        rf_call_form form;
        const char *args0, *content;
    } cases[] = {
        {RF_CHAT_QWEN,
         "<tool_call>\n{\"name\": \"count_ids\", \"arguments\": {\"ids\": [1, 12], \"filter\": "
         "\"id >= 10\"}}\n</tool_call>",
         1, RF_CALL_FORM_TAGGED, "{\"ids\":[1,12],\"filter\":\"id >= 10\"}", NULL},
        {RF_CHAT_QWEN,
         "Let me count.\n<tool_call>\n{\"name\": \"count_ids\", \"arguments\": {\"ids\": [1]}}\n"
         "</tool_call>\n<tool_call>\n{\"name\": \"count_ids\", \"arguments\": {\"ids\": [2]}}\n"
         "</tool_call>",
         2, RF_CALL_FORM_TAGGED, "{\"ids\":[1]}", "Let me count."},
        /* Qwen2.5-Coder's habit: the call as bare JSON, without the tags */
        {RF_CHAT_QWEN, "{\"name\": \"count_ids\", \"arguments\": {\"ids\": [1, 12]}}", 1,
         RF_CALL_FORM_BARE_JSON, "{\"ids\":[1,12]}", NULL},
        {RF_CHAT_QWEN, "```json\n{\"name\": \"count_ids\", \"arguments\": {}}\n```", 1,
         RF_CALL_FORM_BARE_JSON, "{}", NULL},
        /* a tag around something else: text, not a call */
        {RF_CHAT_QWEN, "<tool_call>\n{\"name\": \"no_such\", \"arguments\": {}}\n</tool_call>", 0,
         RF_CALL_FORM_NONE, NULL, NULL},
        {RF_CHAT_QWEN, "There are 8.", 0, RF_CALL_FORM_NONE, NULL, NULL},
        {RF_CHAT_QWEN, "<tool_call>\n{\"name\": \"count_ids\", \"arguments\": {\"ids\": [1]}}", 1,
         RF_CALL_FORM_TAGGED, "{\"ids\":[1]}", NULL}, /* unclosed at the end of the reply */
        {RF_CHAT_GEMMA, "{\"name\": \"count_ids\", \"parameters\": {\"ids\": [3]}}", 1,
         RF_CALL_FORM_PROMPT_JSON, "{\"ids\":[3]}", NULL},
        {RF_CHAT_GEMMA, "<tool_call>{\"name\": \"count_ids\", \"arguments\": {}}</tool_call>", 0,
         RF_CALL_FORM_NONE, NULL, NULL}, /* Gemma has no tags */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rf_toolcalls tc;
        CHECK(rf_toolcalls_parse(cases[i].family, cases[i].reply, strlen(cases[i].reply), tools,
                                 &tc) == RF_OK);
        CHECK_MSG(
            tc.n == cases[i].n && tc.form == cases[i].form &&
                (!cases[i].args0 || (tc.n && !strcmp(tc.calls[0].arguments, cases[i].args0))) &&
                (!cases[i].content ? !tc.content
                                   : tc.content && !strcmp(tc.content, cases[i].content)),
            "reply %zu: %d calls, form %s, args '%s', content '%s'", i, tc.n,
            rf_call_form_name(tc.form), tc.n ? tc.calls[0].arguments : "",
            tc.content ? tc.content : "(none)");
        rf_toolcalls_free(&tc);
    }
}

int main(void) {
    gemma_cases();
    reference_cases();
    unknown_template();
    tool_section_wording();
    replies();
    return check_summary("test_chat");
}
