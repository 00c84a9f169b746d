/* chat.c: chat templates rendered natively (see chat.h); families and detection are
 * chat_template.c. */
#include "model/chat.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "model/toolcall.h"
#include "util/json_dump.h"

/* ---------------------------------------------------------------- helpers */

static rf_status append_trimmed(rf_buf *b, const char *s) {
    size_t n = strlen(s), i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    while (n > i && isspace((unsigned char)s[n - 1])) n--;
    return rf_buf_append(b, s + i, n - i);
}

static bool is_system(const char *role) {
    return !strcmp(role, "system") || !strcmp(role, "developer");
}

/* Jinja's tojson as llama.cpp writes it: ", " and ": ", keys in order, UTF-8 as is. */
static rf_status append_tojson(rf_buf *b, const json_t *v) {
    char *s = rf_json_dumps(v, JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
    if (!s) return RF_ERR_NOMEM;
    rf_status st = rf_buf_append_str(b, s);
    free(s);
    return st;
}

/* A tool call's arguments as an object (OpenAI sends them as a JSON string). */
static json_t *arguments_of(const json_t *fn) {
    const json_t *a = json_object_get(fn, "arguments");
    if (json_is_string(a)) {
        json_t *o = json_loads(json_string_value(a), JSON_DECODE_ANY, NULL);
        return o ? o : json_incref((json_t *)a);
    }
    return a ? json_incref((json_t *)a) : json_object();
}

/* ---------------------------------------------------------------- families without tool
 * sections: tools described in the system text, calls and results replayed as text */

typedef struct plain {
    rf_chat_msg *m;
    char **owned;
    size_t n;
    rf_buf sys;
} plain;

static void plain_free(plain *p, size_t n_msgs) {
    for (size_t i = 0; p->owned && i <= n_msgs; i++) free(p->owned[i]);
    free(p->owned);
    free(p->m);
    rf_buf_free(&p->sys);
}

/* The conversation with tools made text: a system turn with the instructions first, a tool
 * result as a user turn in <tool_response>, an assistant call as its JSON. */
static rf_status plain_messages(const rf_chat_msg *msgs, size_t n, const char *tools, plain *p,
                                rf_error *err) {
    memset(p, 0, sizeof *p);
    rf_buf_init(&p->sys, 0);
    p->m = calloc(n + 1, sizeof *p->m);
    p->owned = calloc(n + 1, sizeof *p->owned);
    if (!p->m || !p->owned) return rf_error_set(err, RF_ERR_NOMEM, "chat: out of memory");
    rf_status st = RF_OK;
    if (tools) {
        for (size_t i = 0; i < n && !st; i++)
            if (is_system(msgs[i].role) && msgs[i].content) {
                st = rf_buf_append_str(&p->sys, msgs[i].content);
                if (!st) st = rf_buf_append_str(&p->sys, "\n\n");
            }
        if (!st) st = rf_toolcall_instructions(tools, &p->sys, err);
        if (!st) st = rf_buf_terminate(&p->sys);
        if (st) return st;
        p->m[p->n++] = (rf_chat_msg){"system", (const char *)p->sys.data, NULL, NULL};
    }
    for (size_t i = 0; i < n; i++) {
        const rf_chat_msg *x = &msgs[i];
        if (tools && is_system(x->role)) continue;
        if (!strcmp(x->role, "tool")) {
            if (asprintf(&p->owned[i], "<tool_response>\n%s\n</tool_response>",
                         x->content ? x->content : "") < 0)
                return rf_error_set(err, RF_ERR_NOMEM, "chat: out of memory");
            p->m[p->n++] = (rf_chat_msg){"user", p->owned[i], NULL, NULL};
        } else if (!strcmp(x->role, "assistant") && x->tool_calls && !x->content) {
            json_t *a = json_loads(x->tool_calls, 0, NULL);
            json_t *f = json_object_get(json_array_get(a, 0), "function");
            json_t *args = arguments_of(f);
            char *as = rf_json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
            const char *name = json_string_value(json_object_get(f, "name"));
            p->owned[i] = rf_toolcall_render(name ? name : "", as ? as : "{}");
            free(as);
            json_decref(args);
            json_decref(a);
            if (!p->owned[i]) return rf_error_set(err, RF_ERR_NOMEM, "chat: out of memory");
            p->m[p->n++] = (rf_chat_msg){"assistant", p->owned[i], NULL, NULL};
        } else {
            p->m[p->n++] = (rf_chat_msg){x->role, x->content ? x->content : "", NULL, NULL};
        }
    }
    return RF_OK;
}

static rf_status render_gemma(const rf_chat_msg *msgs, size_t n, bool gen, rf_buf *out) {
    rf_status st = RF_OK;
    rf_buf sys;
    rf_buf_init(&sys, 0);
    for (size_t i = 0; i < n && !st; i++) {
        const char *role = msgs[i].role;
        if (is_system(role)) {
            if (sys.len) st = rf_buf_append_str(&sys, "\n\n");
            if (!st) st = append_trimmed(&sys, msgs[i].content);
            continue;
        }
        bool model = !strcmp(role, "assistant") || !strcmp(role, "model");
        st = rf_buf_append_str(out, "<start_of_turn>");
        if (!st) st = rf_buf_append_str(out, model ? "model" : role);
        if (!st) st = rf_buf_append_str(out, "\n");
        if (!st && !model && sys.len) {
            st = rf_buf_append(out, sys.data, sys.len);
            if (!st) st = rf_buf_append_str(out, "\n\n");
            rf_buf_reset(&sys);
        }
        if (!st) st = append_trimmed(out, msgs[i].content);
        if (!st) st = rf_buf_append_str(out, "<end_of_turn>\n");
    }
    if (!st && gen) st = rf_buf_append_str(out, "<start_of_turn>model\n");
    rf_buf_free(&sys);
    return st;
}

static rf_status render_chatml(const rf_chat_template *t, const rf_chat_msg *msgs, size_t n,
                               bool gen, rf_buf *out) {
    rf_status st = RF_OK;
    if (t->default_system && (!n || !is_system(msgs[0].role)))
        st = rf_buf_printf(out, "<|im_start|>system\n%s<|im_end|>\n", t->default_system);
    for (size_t i = 0; i < n && !st; i++) {
        st = rf_buf_printf(out, "<|im_start|>%s\n",
                           is_system(msgs[i].role) ? "system" : msgs[i].role);
        if (!st) st = rf_buf_append_str(out, msgs[i].content);
        if (!st) st = rf_buf_append_str(out, "<|im_end|>\n");
    }
    if (!st && gen) st = rf_buf_append_str(out, "<|im_start|>assistant\n");
    return st;
}

/* ---------------------------------------------------------------- Qwen2.5 */

/* Qwen2.5's tool section as its usual template words it (a file's own wording wins). */
static const char k_qwen_tools_head[] =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are "
    "provided with function signatures within <tools></tools> XML tags:\n<tools>";
static const char k_qwen_tools_tail[] =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

static rf_status render_qwen(const rf_chat_template *t, const rf_chat_msg *msgs, size_t n,
                             const char *tools, bool gen, rf_buf *out, rf_error *err) {
    const char *sys0 = n && is_system(msgs[0].role) ? (msgs[0].content ? msgs[0].content : "")
                       : t->default_system          ? t->default_system
                                                    : "";
    bool has_sys = n && is_system(msgs[0].role);
    rf_status st = RF_OK;
    if (tools) {
        json_t *arr = json_loads(tools, 0, NULL);
        if (!json_is_array(arr)) {
            json_decref(arr);
            return rf_error_set(err, RF_ERR_ARG, "tools: not a JSON array");
        }
        st = rf_buf_printf(out, "<|im_start|>system\n%s%s", sys0,
                           t->tools_head ? t->tools_head : k_qwen_tools_head);
        size_t i;
        json_t *tool;
        json_array_foreach(arr, i, tool) {
            if (st) break;
            st = rf_buf_append_str(out, "\n");
            if (!st) st = append_tojson(out, tool);
        }
        json_decref(arr);
        if (!st) st = rf_buf_append_str(out, t->tools_tail ? t->tools_tail : k_qwen_tools_tail);
    } else if (has_sys || t->default_system) {
        st = rf_buf_printf(out, "<|im_start|>system\n%s<|im_end|>\n", sys0);
    }
    for (size_t i = 0; i < n && !st; i++) {
        const rf_chat_msg *m = &msgs[i];
        const char *role = is_system(m->role) ? "system" : m->role;
        bool call = !strcmp(role, "assistant") && m->tool_calls;
        if (!strcmp(role, "user") || (!strcmp(role, "system") && i > 0) ||
            (!strcmp(role, "assistant") && !call)) {
            st = rf_buf_printf(out, "<|im_start|>%s\n", role);
            if (!st) st = rf_buf_append_str(out, m->content ? m->content : "");
            if (!st) st = rf_buf_append_str(out, "<|im_end|>\n");
        } else if (call) {
            st = rf_buf_append_str(out, "<|im_start|>assistant");
            if (!st && m->content && *m->content) st = rf_buf_printf(out, "\n%s", m->content);
            json_t *arr = json_loads(m->tool_calls, 0, NULL);
            if (!json_is_array(arr)) {
                json_decref(arr);
                return rf_error_set(err, RF_ERR_ARG, "message %zu: tool_calls is not a JSON array",
                                    i);
            }
            size_t k;
            json_t *c;
            json_array_foreach(arr, k, c) {
                if (st) break;
                json_t *f = json_object_get(c, "function");
                if (!f) f = c;
                const char *name = json_string_value(json_object_get(f, "name"));
                json_t *args = arguments_of(f);
                st = rf_buf_printf(
                    out, "\n<tool_call>\n{\"name\": \"%s\", \"arguments\": ", name ? name : "");
                if (!st) st = append_tojson(out, args);
                if (!st) st = rf_buf_append_str(out, "}\n</tool_call>");
                json_decref(args);
            }
            json_decref(arr);
            if (!st) st = rf_buf_append_str(out, "<|im_end|>\n");
        } else if (!strcmp(role, "tool")) {
            bool first = i == 0 || strcmp(msgs[i - 1].role, "tool");
            bool last = i + 1 == n || strcmp(msgs[i + 1].role, "tool");
            if (first) st = rf_buf_append_str(out, "<|im_start|>user");
            if (!st) st = rf_buf_append_str(out, "\n<tool_response>\n");
            if (!st) st = rf_buf_append_str(out, m->content ? m->content : "");
            if (!st) st = rf_buf_append_str(out, "\n</tool_response>");
            if (!st && last) st = rf_buf_append_str(out, "<|im_end|>\n");
        }
    }
    if (!st && gen) st = rf_buf_append_str(out, "<|im_start|>assistant\n");
    return st;
}

rf_status rf_chat_render(const rf_chat_template *t, const rf_chat_msg *msgs, size_t n,
                         const char *tools_json, bool add_generation_prompt, rf_buf *out,
                         rf_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role) return rf_error_set(err, RF_ERR_ARG, "chat message %zu has no role", i);
        if (!msgs[i].content && !(msgs[i].tool_calls && !strcmp(msgs[i].role, "assistant")))
            return rf_error_set(err, RF_ERR_ARG, "chat message %zu (%s) has no content", i,
                                msgs[i].role);
    }
    if (t->family == RF_CHAT_UNKNOWN)
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "the model's chat template is none of the families roofline renders "
                            "(gemma, chatml, qwen): force one (--chat-template NAME)");
    rf_status st;
    if (t->family == RF_CHAT_QWEN) {
        st = render_qwen(t, msgs, n, tools_json, add_generation_prompt, out, err);
        if (st) return st == RF_ERR_NOMEM ? rf_error_set(err, st, "chat: out of memory") : st;
    } else {
        plain p;
        st = plain_messages(msgs, n, tools_json, &p, err); /* sets err when it fails */
        if (!st) {
            st = t->family == RF_CHAT_CHATML
                     ? render_chatml(t, p.m, p.n, add_generation_prompt, out)
                     : render_gemma(p.m, p.n, add_generation_prompt, out);
            if (st) rf_error_set(err, st, "chat: out of memory");
        }
        plain_free(&p, n);
        if (st) return st;
    }
    st = rf_buf_terminate(out);
    return st ? rf_error_set(err, st, "chat template: out of memory") : RF_OK;
}
