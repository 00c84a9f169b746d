/* tools.c: a chat request's tools, tool_choice, parallel_tool_calls and response_format
 * (see request.h), validated as OpenAI does:
 *   tools             a non-empty array of {"type": "function", "function": {"name",
 *                     "description"?, "parameters"? (an object), "strict"?}}; names match
 *                     ^[a-zA-Z0-9_-]{1,64}$ and are distinct
 *   tool_choice       "none", "auto", "required" or {"type": "function", "function": {"name"}}
 *                     naming a declared tool; all but "none" need tools; default "auto" with
 *                     tools, "none" without
 *   parallel_tool_calls  a boolean (default true)
 *   response_format   {"type": "text"}, {"type": "json_object"} (any JSON object), or
 *                     {"type": "json_schema", "json_schema": {"name", "description"?,
 *                     "schema"? (an object; absent: any JSON value), "strict"?}}
 * Whether the engine can enforce a schema is the engine's to say (rf_engine_submit compiles it), at
 * submission. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai/request.h"
#include "util/json_dump.h"
#include "util/json_read.h"

static bool valid_name(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static rf_status name_error(rf_openai_error *e, const char *param, const char *name) {
    return rf_openai_error_set(e, 400, param, "invalid_value",
                               "'%s' is '%.80s': a name must match ^[a-zA-Z0-9_-]{1,64}$", param,
                               name);
}

static rf_status parse_tool_list(rf_openai_req *r, rf_jr *j, json_t *tools, rf_openai_error *e) {
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        char at[48], fn[64];
        rf_jr_index(at, sizeof at, "tools", i);
        if (!json_is_object(t))
            return rf_openai_error_set(e, 400, at, "invalid_type", "'%s' must be an object", at);
        const char *type = NULL, *name = NULL, *desc = NULL;
        json_t *f = NULL, *params = NULL;
        bool strict = false;
        if (rf_jr_str(j, t, at, "type", RF_JR_REQUIRED, &type) ||
            rf_jr_object(j, t, at, "function", RF_JR_REQUIRED, &f))
            return rf_openai_jr_error(j, e);
        rf_jr_path(fn, sizeof fn, at, "function");
        if (strcmp(type, "function") != 0) {
            char tp[64];
            return rf_openai_error_set(
                e, 400, rf_jr_path(tp, sizeof tp, at, "type"), "invalid_value",
                "tool type '%.40s' is not supported (only \"function\")", type);
        }
        if (rf_jr_str(j, f, fn, "name", RF_JR_REQUIRED, &name) ||
            rf_jr_str(j, f, fn, "description", RF_JR_NULLABLE, &desc) ||
            rf_jr_object(j, f, fn, "parameters", RF_JR_NULLABLE, &params) ||
            rf_jr_bool(j, f, fn, "strict", RF_JR_NULLABLE, &strict))
            return rf_openai_jr_error(j, e);
        char np[80];
        rf_jr_path(np, sizeof np, fn, "name");
        if (!valid_name(name)) return name_error(e, np, name);
        for (size_t k = 0; k < i; k++) {
            const char *other = json_string_value(
                json_object_get(json_object_get(json_array_get(tools, k), "function"), "name"));
            if (other && !strcmp(other, name))
                return rf_openai_error_set(e, 400, np, "invalid_value",
                                           "tool name '%s' is declared twice (tools[%zu] and "
                                           "tools[%zu])",
                                           name, k, i);
        }
    }
    r->tools_json = rf_openai_req_own(r, rf_json_dumps(tools, JSON_COMPACT));
    if (!r->tools_json) return rf_openai_error_set(e, 500, NULL, NULL, "out of memory");
    return RF_OK;
}

static rf_status parse_tool_choice(rf_openai_req *r, rf_jr *j, json_t *tools, rf_openai_error *e) {
    const json_t *tc = json_object_get(r->root, "tool_choice");
    r->tool_choice = tools ? RF_TOOL_CHOICE_AUTO : RF_TOOL_CHOICE_NONE;
    if (!tc || json_is_null(tc)) return RF_OK;
    if (json_is_string(tc)) {
        const char *s = json_string_value(tc);
        if (!strcmp(s, "none")) {
            r->tool_choice = RF_TOOL_CHOICE_NONE;
        } else if (!strcmp(s, "auto")) {
            if (!tools)
                return rf_openai_error_set(e, 400, "tool_choice", "invalid_value",
                                           "'tool_choice' is \"auto\" but no tools are given");
        } else if (!strcmp(s, "required")) {
            if (!tools)
                return rf_openai_error_set(e, 400, "tool_choice", "invalid_value",
                                           "'tool_choice' is \"required\" but no tools are given");
            r->tool_choice = RF_TOOL_CHOICE_REQUIRED;
        } else {
            return rf_openai_error_set(e, 400, "tool_choice", "invalid_value",
                                       "'tool_choice' is '%.40s', not one of none, auto, required "
                                       "or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                                       s);
        }
        return RF_OK;
    }
    if (!json_is_object(tc))
        return rf_openai_error_set(e, 400, "tool_choice", "invalid_type",
                                   "'tool_choice' must be a string or an object");
    const char *type = NULL, *name = NULL;
    json_t *f = NULL;
    if (rf_jr_str(j, tc, "tool_choice", "type", RF_JR_REQUIRED, &type) ||
        rf_jr_object(j, tc, "tool_choice", "function", RF_JR_REQUIRED, &f) ||
        rf_jr_str(j, f, "tool_choice.function", "name", RF_JR_REQUIRED, &name))
        return rf_openai_jr_error(j, e);
    if (strcmp(type, "function") != 0)
        return rf_openai_error_set(e, 400, "tool_choice.type", "invalid_value",
                                   "'tool_choice.type' is '%.40s', not \"function\"", type);
    if (!tools)
        return rf_openai_error_set(
            e, 400, "tool_choice", "invalid_value",
            "'tool_choice' names the function '%.64s' but no tools are given", name);
    bool declared = false;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        declared = declared || (n && !strcmp(n, name));
    }
    if (!declared)
        return rf_openai_error_set(e, 400, "tool_choice.function.name", "invalid_value",
                                   "'tool_choice' names the function '%.64s', which is not among "
                                   "the tools",
                                   name);
    r->tool_choice = RF_TOOL_CHOICE_NAMED;
    r->tool_name = name;
    return RF_OK;
}

static rf_status parse_response_format(rf_openai_req *r, rf_jr *j, rf_openai_error *e) {
    json_t *rf = NULL;
    if (rf_jr_object(j, r->root, NULL, "response_format", RF_JR_NULLABLE, &rf))
        return rf_openai_jr_error(j, e);
    if (!rf) return RF_OK;
    const char *type = NULL;
    if (rf_jr_str(j, rf, "response_format", "type", RF_JR_REQUIRED, &type))
        return rf_openai_jr_error(j, e);
    if (!strcmp(type, "text")) return RF_OK;
    if (!strcmp(type, "json_object")) {
        r->json_schema = "{\"type\":\"object\"}";
        return RF_OK;
    }
    if (strcmp(type, "json_schema") != 0)
        return rf_openai_error_set(e, 400, "response_format.type", "invalid_value",
                                   "'response_format.type' is '%.40s', not one of text, "
                                   "json_object, json_schema",
                                   type);
    json_t *js = NULL, *schema = NULL;
    const char *name = NULL, *desc = NULL;
    bool strict = false;
    if (rf_jr_object(j, rf, "response_format", "json_schema", RF_JR_REQUIRED, &js) ||
        rf_jr_str(j, js, "response_format.json_schema", "name", RF_JR_REQUIRED, &name) ||
        rf_jr_str(j, js, "response_format.json_schema", "description", RF_JR_NULLABLE, &desc) ||
        rf_jr_object(j, js, "response_format.json_schema", "schema", RF_JR_NULLABLE, &schema) ||
        rf_jr_bool(j, js, "response_format.json_schema", "strict", RF_JR_NULLABLE, &strict))
        return rf_openai_jr_error(j, e);
    if (!valid_name(name)) return name_error(e, "response_format.json_schema.name", name);
    r->json_schema = schema ? rf_openai_req_own(r, rf_json_dumps(schema, JSON_COMPACT)) : "{}";
    if (!r->json_schema) return rf_openai_error_set(e, 500, NULL, NULL, "out of memory");
    return RF_OK;
}

rf_status rf_openai_parse_tools(rf_openai_req *r, rf_openai_error *e) {
    rf_error jerr;
    rf_jr j = rf_jr_make(NULL, RF_ERR_ARG, &jerr);
    r->parallel_tool_calls = true;
    if (r->kind != RF_OPENAI_CHAT) {
        static const char *const chat_only[] = {"tools", "tool_choice", "response_format",
                                                "parallel_tool_calls"};
        for (size_t i = 0; i < sizeof chat_only / sizeof chat_only[0]; i++)
            if (rf_jr_has(r->root, chat_only[i]))
                return rf_openai_error_set(e, 400, chat_only[i], "unsupported_parameter",
                                           "'%s' is a chat parameter: use /v1/chat/completions",
                                           chat_only[i]);
        return RF_OK;
    }
    json_t *tools = NULL;
    if (rf_jr_array(&j, r->root, NULL, "tools", RF_JR_NULLABLE, &tools))
        return rf_openai_jr_error(&j, e);
    if (tools && json_array_size(tools) == 0) /* as OpenAI: leave it out for no tools */
        return rf_openai_error_set(e, 400, "tools", "invalid_value",
                                   "'tools' must not be empty (leave it out for no tools)");
    rf_status st;
    if (tools && (st = parse_tool_list(r, &j, tools, e))) return st;
    if ((st = parse_tool_choice(r, &j, tools, e))) return st;
    if (rf_jr_bool(&j, r->root, NULL, "parallel_tool_calls", RF_JR_NULLABLE,
                   &r->parallel_tool_calls))
        return rf_openai_jr_error(&j, e);
    return parse_response_format(r, &j, e);
}
