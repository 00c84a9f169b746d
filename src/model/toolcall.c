/* toolcall.c: tool calls in replies, per chat family (jansson does all JSON). */
#include "model/toolcall.h"

#include "model/chat.h"
#include "util/json_dump.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

rf_status rf_toolcall_instructions(const char *tools_json, rf_buf *out, rf_error *err) {
    json_error_t je;
    json_t *tools = json_loads(tools_json, 0, &je);
    if (!tools || !json_is_array(tools)) {
        json_decref(tools);
        return rf_error_set(err, RF_ERR_ARG, "tools: not a JSON array (%s)",
                            tools ? "wrong type" : je.text);
    }
    json_t *fns = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *f = json_object_get(t, "function");
        if (!json_is_object(f) || !json_is_string(json_object_get(f, "name"))) {
            json_decref(fns);
            json_decref(tools);
            return rf_error_set(err, RF_ERR_ARG, "tools[%zu]: no function name", i);
        }
        json_array_append(fns, f);
    }
    char *desc = rf_json_dumps(fns, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(fns);
    json_decref(tools);
    if (!desc) return rf_error_set(err, RF_ERR_NOMEM, "tools: out of memory");
    rf_status st = rf_buf_append_str(
        out, "You have access to the functions below. If you decide to call one, reply with only "
             "a JSON object of the form {\"name\": \"function name\", \"parameters\": {\"argument "
             "name\": value}} and no other text. Otherwise answer normally.\n\nFunctions:\n");
    if (!st) st = rf_buf_append_str(out, desc);
    free(desc);
    return st ? rf_error_set(err, st, "tools: out of memory") : RF_OK;
}

static bool tool_exists(const char *tools_json, const char *name) {
    json_t *tools = json_loads(tools_json, 0, NULL);
    bool found = false;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (n && !strcmp(n, name)) found = true;
    }
    json_decref(tools);
    return found;
}

bool rf_toolcall_parse(const char *text, size_t len, const char *tools_json, char **name,
                       char **arguments) {
    *name = *arguments = NULL;
    if (!tools_json) return false;
    /* trim whitespace and an optional ```json ... ``` fence */
    size_t a = 0, b = len;
    while (a < b && isspace((unsigned char)text[a])) a++;
    while (b > a && isspace((unsigned char)text[b - 1])) b--;
    if (b - a >= 6 && !strncmp(text + a, "```", 3) && !strncmp(text + b - 3, "```", 3)) {
        a += 3;
        b -= 3;
        while (a < b && text[a] != '\n' && text[a] != '{') a++; /* the fence's language tag */
        while (a < b && isspace((unsigned char)text[a])) a++;
        while (b > a && isspace((unsigned char)text[b - 1])) b--;
    }
    if (a >= b || text[a] != '{') return false;
    json_t *o = json_loadb(text + a, b - a, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return false;
    }
    const char *n = json_string_value(json_object_get(o, "name"));
    json_t *args = json_object_get(o, "parameters");
    if (!args) args = json_object_get(o, "arguments");
    bool ok = n && tool_exists(tools_json, n) && (!args || json_is_object(args));
    if (ok) {
        *name = strdup(n);
        *arguments = args ? rf_json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER) : strdup("{}");
        if (!*name || !*arguments) {
            free(*name);
            free(*arguments);
            *name = *arguments = NULL;
            ok = false;
        }
    }
    json_decref(o);
    return ok;
}

char *rf_toolcall_render(const char *name, const char *arguments_json) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name ? name : ""));
    json_t *args = arguments_json ? json_loads(arguments_json, 0, NULL) : NULL;
    json_object_set_new(o, "parameters", args ? args : json_object());
    char *s = rf_json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

const char *rf_call_form_name(rf_call_form f) {
    static const char *const names[] = {"none", "tagged", "bare_json", "prompt_json"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "?";
}

static rf_status add_call(rf_toolcalls *out, char *name, char *args) {
    rf_tool_call *c = realloc(out->calls, (size_t)(out->n + 1) * sizeof *c);
    if (!c) {
        free(name);
        free(args);
        return RF_ERR_NOMEM;
    }
    out->calls = c;
    c[out->n++] = (rf_tool_call){name, args};
    return RF_OK;
}

/* text[a..b) trimmed of whitespace, as a new string (NULL when nothing is left). */
static char *trimmed(const char *text, size_t a, size_t b) {
    while (a < b && isspace((unsigned char)text[a])) a++;
    while (b > a && isspace((unsigned char)text[b - 1])) b--;
    return a < b ? strndup(text + a, b - a) : NULL;
}

static const char qwen_open[] = "<tool_call>", qwen_close[] = "</tool_call>";

void rf_toolcall_markers(int family, const char **open, const char **close) {
    bool tagged = family == RF_CHAT_QWEN;
    *open = tagged ? qwen_open : NULL;
    *close = tagged ? qwen_close : NULL;
}

/* Qwen's <tool_call> blocks: each holds {"name": ..., "arguments": {...}}. */
static rf_status parse_tagged(const char *text, size_t len, const char *tools_json,
                              rf_toolcalls *out, bool *found) {
    const char *open_tag = qwen_open, *close_tag = qwen_close;
    const size_t lo = sizeof qwen_open - 1, lc = sizeof qwen_close - 1;
    rf_buf content;
    rf_buf_init(&content, 0);
    rf_status st = RF_OK;
    size_t i = 0;
    *found = false;
    while (!st && i < len) {
        const char *p = memmem(text + i, len - i, open_tag, lo);
        if (!p) {
            st = rf_buf_append(&content, text + i, len - i);
            break;
        }
        size_t at = (size_t)(p - text);
        st = rf_buf_append(&content, text + i, at - i);
        const char *q = memmem(p + lo, len - at - lo, close_tag, lc);
        size_t end = q ? (size_t)(q - text) : len; /* an unclosed last block: to the end */
        char *name = NULL, *args = NULL;
        if (!st && rf_toolcall_parse(text + at + lo, end - at - lo, tools_json, &name, &args)) {
            *found = true;
            st = add_call(out, name, args);
        } else if (!st) { /* not a call of a declared tool: it stays text */
            st = rf_buf_append(&content, p, (q ? end + lc : end) - at);
        }
        i = q ? end + lc : len;
    }
    if (!st && *found) {
        out->content = trimmed(content.data ? (const char *)content.data : "", 0, content.len);
        out->form = RF_CALL_FORM_TAGGED;
    }
    rf_buf_free(&content);
    return st;
}

rf_status rf_toolcalls_parse(int family, const char *text, size_t len, const char *tools_json,
                             rf_toolcalls *out) {
    memset(out, 0, sizeof *out);
    if (!tools_json || !text) return RF_OK;
    if (family == RF_CHAT_QWEN) {
        bool found = false;
        rf_status st = parse_tagged(text, len, tools_json, out, &found);
        if (st || found) return st;
    }
    char *name = NULL, *args = NULL;
    if (!rf_toolcall_parse(text, len, tools_json, &name, &args)) return RF_OK;
    out->form = family == RF_CHAT_QWEN ? RF_CALL_FORM_BARE_JSON : RF_CALL_FORM_PROMPT_JSON;
    return add_call(out, name, args);
}

void rf_toolcalls_free(rf_toolcalls *tc) {
    for (int32_t i = 0; i < tc->n; i++) {
        free(tc->calls[i].name);
        free(tc->calls[i].arguments);
    }
    free(tc->calls);
    free(tc->content);
    memset(tc, 0, sizeof *tc);
}
