/* request.c: strict validation of OpenAI chat-completions and completions bodies. */
#include "openai/request.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/json_dump.h"
#include "util/json_kind.h"
#include "util/json_read.h"

static rf_status bad(rf_openai_error *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static rf_status bad(rf_openai_error *e, const char *param, const char *fmt, ...) {
    char msg[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rf_openai_error_set(e, 400, param, "invalid_value", "%s", msg);
}

static rf_status wrong_type(rf_openai_error *e, const char *param, const json_t *v,
                            const char *want) {
    return rf_openai_error_set(e, 400, param, "invalid_type", "'%s' must be %s, not %s", param,
                               want, v ? rf_json_kind(v) : "missing");
}

/* A message's content: a string, or an array of {type:"text", text} parts (joined). */
static rf_status content_text(rf_openai_req *r, const json_t *c, const char *param,
                              const char **out, rf_openai_error *e) {
    if (json_is_string(c)) {
        *out = json_string_value(c);
        return RF_OK;
    }
    if (!json_is_array(c)) return wrong_type(e, param, c, "a string or an array of text parts");
    rf_buf b;
    rf_buf_init(&b, 0);
    size_t i;
    const json_t *part;
    rf_status st = RF_OK;
    json_array_foreach(c, i, part) {
        const json_t *type = json_object_get(part, "type");
        const json_t *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type) ||
            strcmp(json_string_value(type), "text") != 0 || !json_is_string(text)) {
            st = rf_openai_error_set(e, 400, param, "invalid_value",
                                     "'%s' part %zu must be {\"type\": \"text\", \"text\": string} "
                                     "(other part types are not supported yet)",
                                     param, i);
            goto out;
        }
        if (rf_buf_append(&b, json_string_value(text), json_string_length(text))) {
            st = rf_openai_error_set(e, 500, NULL, NULL, "out of memory");
            goto out;
        }
    }
    if (rf_buf_terminate(&b)) {
        st = rf_openai_error_set(e, 500, NULL, NULL, "out of memory");
        goto out;
    }
    *out = rf_openai_req_own(r, (char *)rf_buf_take(&b, NULL));
    if (!*out) st = rf_openai_error_set(e, 500, NULL, NULL, "out of memory");
out:
    rf_buf_free(&b);
    return st;
}

static rf_status parse_messages(rf_openai_req *r, rf_openai_error *e) {
    const json_t *ms = json_object_get(r->root, "messages");
    if (!ms)
        return rf_openai_error_set(e, 400, "messages", "missing_required_parameter",
                                   "'messages' is required");
    if (!json_is_array(ms)) return wrong_type(e, "messages", ms, "an array");
    size_t n = json_array_size(ms);
    if (n == 0) return bad(e, "messages", "'messages' must be a non-empty array");
    r->msgs = calloc(n, sizeof *r->msgs);
    if (!r->msgs) return rf_openai_error_set(e, 500, NULL, NULL, "out of memory");
    r->n_msgs = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(ms, i);
        char param[64];
        snprintf(param, sizeof param, "messages[%zu]", i);
        if (!json_is_object(m)) return wrong_type(e, param, m, "an object");
        const json_t *role = json_object_get(m, "role");
        snprintf(param, sizeof param, "messages[%zu].role", i);
        if (!json_is_string(role)) return wrong_type(e, param, role, "a string");
        const char *rs = json_string_value(role);
        if (!strcmp(rs, "developer")) rs = "system";
        bool assistant = !strcmp(rs, "assistant"), tool = !strcmp(rs, "tool");
        if (strcmp(rs, "system") && strcmp(rs, "user") && !assistant && !tool)
            return bad(e, param,
                       "'%s' is '%.40s', not one of system, developer, user, assistant, tool",
                       param, json_string_value(role));
        rf_message *o = &r->msgs[i];
        o->role = rs;
        const json_t *tc = json_object_get(m, "tool_calls");
        if (tc && !json_is_null(tc)) {
            snprintf(param, sizeof param, "messages[%zu].tool_calls", i);
            if (!assistant) return bad(e, param, "only an assistant message has tool_calls");
            if (!json_is_array(tc)) return wrong_type(e, param, tc, "an array");
            if (json_array_size(tc)) {
                o->tool_calls = rf_openai_req_own(r, rf_json_dumps(tc, JSON_COMPACT));
                if (!o->tool_calls) return rf_openai_error_set(e, 500, NULL, NULL, "out of memory");
            }
        }
        const json_t *c = json_object_get(m, "content");
        snprintf(param, sizeof param, "messages[%zu].content", i);
        if (!c || json_is_null(c)) {
            if (!(assistant && o->tool_calls))
                return rf_openai_error_set(e, 400, param, "missing_required_parameter",
                                           "'%s' is required (null only for an assistant message "
                                           "with tool_calls)",
                                           param);
            o->content = NULL;
        } else {
            rf_status st = content_text(r, c, param, &o->content, e);
            if (st) return st;
        }
        if (tool) {
            const json_t *id = json_object_get(m, "tool_call_id");
            snprintf(param, sizeof param, "messages[%zu].tool_call_id", i);
            if (id && !json_is_null(id) && !json_is_string(id))
                return wrong_type(e, param, id, "a string");
            o->tool_call_id = id ? json_string_value(id) : NULL;
        }
    }
    return RF_OK;
}

static rf_status parse_stop(rf_openai_req *r, rf_openai_error *e) {
    const json_t *s = json_object_get(r->root, "stop");
    if (!s || json_is_null(s)) return RF_OK;
    if (json_is_string(s)) {
        if (json_string_length(s) == 0 || json_string_length(s) > RF_MAX_STOP_LEN ||
            strlen(json_string_value(s)) != json_string_length(s))
            return bad(e, "stop", "'stop' must be 1 to %d bytes", RF_MAX_STOP_LEN);
        r->stop[0] = json_string_value(s);
        return RF_OK;
    }
    if (!json_is_array(s)) return wrong_type(e, "stop", s, "a string or an array of strings");
    if (json_array_size(s) > RF_OPENAI_MAX_STOPS)
        return bad(e, "stop", "'stop' has %zu strings, at most %d are allowed", json_array_size(s),
                   RF_OPENAI_MAX_STOPS);
    size_t i;
    const json_t *v;
    json_array_foreach(s, i, v) {
        if (!json_is_string(v)) return wrong_type(e, "stop", v, "a string");
        if (json_string_length(v) == 0 || json_string_length(v) > RF_MAX_STOP_LEN ||
            strlen(json_string_value(v)) != json_string_length(v))
            return bad(e, "stop", "'stop' strings must be 1 to %d bytes", RF_MAX_STOP_LEN);
        r->stop[i] = json_string_value(v);
    }
    return RF_OK;
}

/* Chat: logprobs (boolean) and top_logprobs (0..20, above 0 only with logprobs true);
 * completions: the legacy logprobs, an integer 0..5. */
static rf_status parse_logprobs(rf_openai_req *r, rf_openai_error *e) {
    rf_error jerr;
    rf_jr j = rf_jr_make(NULL, RF_ERR_ARG, &jerr);
    r->logprobs = -1;
    if (r->kind == RF_OPENAI_COMPLETION) {
        int32_t n = -1;
        if (rf_jr_i32(&j, r->root, NULL, "logprobs", RF_JR_NULLABLE, 0, 5, &n))
            return rf_openai_jr_error(&j, e);
        r->logprobs = n;
        return RF_OK;
    }
    bool on = false;
    int32_t top = 0;
    if (rf_jr_bool(&j, r->root, NULL, "logprobs", RF_JR_NULLABLE, &on) ||
        rf_jr_i32(&j, r->root, NULL, "top_logprobs", RF_JR_NULLABLE, 0, RF_MAX_TOP_LOGPROBS, &top))
        return rf_openai_jr_error(&j, e);
    if (top > 0 && !on)
        return bad(e, "top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
    r->logprobs = on ? top : -1;
    return RF_OK;
}

static rf_status parse_fields(rf_openai_req *r, const rf_openai_limits *lim, rf_openai_error *e) {
    const json_t *root = r->root;
    rf_error jerr;
    rf_jr j = rf_jr_make(NULL, RF_ERR_ARG, &jerr);
    const unsigned opt = RF_JR_NULLABLE; /* absent or null: the default */
    if (rf_jr_str(&j, root, NULL, "model", opt, &r->model)) return rf_openai_jr_error(&j, e);
    if (r->model) {
        bool known = !lim || !lim->models;
        for (size_t i = 0; !known && lim->models[i]; i++) known = !strcmp(lim->models[i], r->model);
        if (!known)
            return rf_openai_error_set(e, 404, "model", "model_not_found",
                                       "The model '%.200s' does not exist (GET /v1/models lists "
                                       "the one served)",
                                       r->model);
    }
    int32_t n_ctx = lim && lim->n_ctx > 0 ? lim->n_ctx : INT32_MAX;
    json_int_t mt = -1, k = 0, seed = 0, n = 1;
    double temp = 1, top_p = 1;
    if (rf_jr_int(&j, root, NULL, "max_tokens", opt, 1, n_ctx, &mt) ||
        rf_jr_int(&j, root, NULL, "max_completion_tokens", opt, 1, n_ctx, &mt) ||
        rf_jr_num(&j, root, NULL, "temperature", opt, 0, 2, &temp) ||
        rf_jr_num(&j, root, NULL, "top_p", opt | RF_JR_LO_OPEN, 0, 1, &top_p) ||
        rf_jr_int(&j, root, NULL, "top_k", opt, 0, INT32_MAX, &k) ||
        rf_jr_int(&j, root, NULL, "seed", opt, INT64_MIN, INT64_MAX, &seed) ||
        rf_jr_int(&j, root, NULL, "n", opt, 1, 1, &n) ||
        rf_jr_num(&j, root, NULL, "presence_penalty", opt, -2, 2, &r->presence_penalty) ||
        rf_jr_num(&j, root, NULL, "frequency_penalty", opt, -2, 2, &r->frequency_penalty) ||
        rf_jr_bool(&j, root, NULL, "stream", opt, &r->stream) ||
        rf_jr_bool(&j, root, NULL, "ignore_eos", opt, &r->ignore_eos))
        return rf_openai_jr_error(&j, e);
    r->max_tokens = (int32_t)mt;
    r->temperature = (float)temp;
    r->top_p = (float)top_p;
    r->top_k = (int32_t)k;
    r->seed = (uint64_t)seed;
    if (rf_jr_has(root, "stream_options")) {
        if (!r->stream)
            return bad(e, "stream_options", "'stream_options' is only allowed with stream true");
        json_t *so = NULL;
        if (rf_jr_object(&j, root, NULL, "stream_options", 0, &so) ||
            rf_jr_bool(&j, so, "stream_options", "include_usage", opt, &r->include_usage))
            return rf_openai_jr_error(&j, e);
    }
    rf_status st;
    if ((st = parse_stop(r, e))) return st;
    if ((st = rf_openai_parse_tools(r, e))) return st;
    return parse_logprobs(r, e);
}

rf_status rf_openai_parse(rf_openai_kind kind, const char *body, size_t len,
                          const rf_openai_limits *lim, rf_openai_req *out, rf_openai_error *e) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    json_error_t je;
    out->root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
    rf_status st;
    if (!out->root) {
        st = rf_openai_error_set(e, 400, NULL, "invalid_json",
                                 "the body is not valid JSON: %s (line %d, column %d)", je.text,
                                 je.line, je.column);
        goto fail;
    }
    if (!json_is_object(out->root)) {
        st = rf_openai_error_set(e, 400, NULL, "invalid_json",
                                 "the body must be a JSON object, not %s", rf_json_kind(out->root));
        goto fail;
    }
    st = parse_fields(out, lim, e);
    if (st) goto fail;
    if (kind == RF_OPENAI_CHAT) {
        st = parse_messages(out, e);
        if (st) goto fail;
    } else {
        const json_t *p = json_object_get(out->root, "prompt");
        if (!p) {
            st = rf_openai_error_set(e, 400, "prompt", "missing_required_parameter",
                                     "'prompt' is required");
            goto fail;
        }
        if (!json_is_string(p)) {
            st = wrong_type(e, "prompt", p, "a string (token arrays are not supported yet)");
            goto fail;
        }
        if (json_string_length(p) == 0 || strlen(json_string_value(p)) != json_string_length(p)) {
            st = bad(e, "prompt", "'prompt' must be a non-empty string without NUL");
            goto fail;
        }
        out->prompt = json_string_value(p);
    }
    return RF_OK;
fail:
    rf_openai_req_free(out);
    return st;
}

rf_request_params rf_openai_engine_params(const rf_openai_req *r) {
    rf_request_params p = rf_request_default_params();
    p.temperature = r->temperature;
    p.top_k = r->top_k;
    p.top_p = r->top_p;
    p.seed = r->seed;
    p.max_tokens = r->max_tokens;
    p.ignore_eos = r->ignore_eos;
    p.presence_penalty = (float)r->presence_penalty;
    p.frequency_penalty = (float)r->frequency_penalty;
    p.logprobs = r->logprobs;
    for (int i = 0; i < RF_OPENAI_MAX_STOPS && r->stop[i]; i++) p.stop[i] = r->stop[i];
    p.json_schema = r->json_schema;
    if (r->tool_choice != RF_TOOL_CHOICE_NONE) {
        p.tools_json = r->tools_json;
        p.tool_choice = r->tool_choice;
        p.tool_name = r->tool_name;
        p.parallel_tool_calls = r->parallel_tool_calls;
    }
    return p;
}
