/* toolcall.c: JSON-object tool calls for Gemma 3 (jansson does all JSON). */
#include "engine/toolcall.h"

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
    char *desc = json_dumps(fns, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
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
        *arguments = args ? json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER) : strdup("{}");
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
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}
