/* openai_req.c: strict validation of OpenAI chat-completions and completions bodies. */
#include "server/openai_req.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/json_kind.h"

rf_status rf_oai_error_set(rf_oai_error *e, int http, const char *param, const char *code,
                           const char *fmt, ...) {
    if (!e) return RF_ERR_ARG;
    e->http = http;
    snprintf(e->type, sizeof e->type, "%s",
             http == 429   ? "rate_limit_error"
             : http >= 500 ? (http == 503 ? "service_unavailable_error" : "server_error")
                           : "invalid_request_error");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return http >= 500 ? RF_ERR_INTERNAL : RF_ERR_ARG;
}

static rf_status bad(rf_oai_error *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static rf_status bad(rf_oai_error *e, const char *param, const char *fmt, ...) {
    char msg[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rf_oai_error_set(e, 400, param, "invalid_value", "%s", msg);
}

static rf_status wrong_type(rf_oai_error *e, const char *param, const json_t *v, const char *want) {
    return rf_oai_error_set(e, 400, param, "invalid_type", "'%s' must be %s, not %s", param, want,
                            v ? rf_json_kind(v) : "missing");
}

static rf_status unsupported(rf_oai_error *e, const char *param) {
    return rf_oai_error_set(e, 400, param, "unsupported_parameter",
                            "'%s' is not supported yet by this server", param);
}

static char *own(rf_oai_req *r, char *s) {
    if (!s) return NULL;
    char **more = realloc(r->owned, (r->n_owned + 1) * sizeof *more);
    if (!more) {
        free(s);
        return NULL;
    }
    r->owned = more;
    r->owned[r->n_owned++] = s;
    return s;
}

/* A number field in [lo, hi] (open ends when lo_open / hi_open); absent or null keeps *out. */
static rf_status num_field(const json_t *root, const char *name, double lo, bool lo_open, double hi,
                           bool hi_open, double *out, rf_oai_error *e) {
    const json_t *v = json_object_get(root, name);
    if (!v || json_is_null(v)) return RF_OK;
    if (!json_is_number(v)) return wrong_type(e, name, v, "a number");
    double x = json_number_value(v);
    if (!isfinite(x) || (lo_open ? x <= lo : x < lo) || (hi_open ? x >= hi : x > hi))
        return bad(e, name, "'%s' is %g, not in %c%g, %g%c", name, x, lo_open ? '(' : '[', lo, hi,
                   hi_open ? ')' : ']');
    *out = x;
    return RF_OK;
}

/* An integer field in [lo, hi]; absent or null keeps *out. */
static rf_status int_field(const json_t *root, const char *name, json_int_t lo, json_int_t hi,
                           json_int_t *out, rf_oai_error *e) {
    const json_t *v = json_object_get(root, name);
    if (!v || json_is_null(v)) return RF_OK;
    if (!json_is_integer(v)) return wrong_type(e, name, v, "an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return bad(e, name, "'%s' is %lld, not in [%lld, %lld]", name, (long long)x, (long long)lo,
                   (long long)hi);
    *out = x;
    return RF_OK;
}

static rf_status bool_field(const json_t *root, const char *name, bool *out, rf_oai_error *e) {
    const json_t *v = json_object_get(root, name);
    if (!v || json_is_null(v)) return RF_OK;
    if (!json_is_boolean(v)) return wrong_type(e, name, v, "a boolean");
    *out = json_is_true(v);
    return RF_OK;
}

/* A message's content: a string, or an array of {type:"text", text} parts (joined). */
static rf_status content_text(rf_oai_req *r, const json_t *c, const char *param, const char **out,
                              rf_oai_error *e) {
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
            st = rf_oai_error_set(e, 400, param, "invalid_value",
                                  "'%s' part %zu must be {\"type\": \"text\", \"text\": string} "
                                  "(other part types are not supported yet)",
                                  param, i);
            goto out;
        }
        if (rf_buf_append(&b, json_string_value(text), json_string_length(text))) {
            st = rf_oai_error_set(e, 500, NULL, NULL, "out of memory");
            goto out;
        }
    }
    if (rf_buf_terminate(&b)) {
        st = rf_oai_error_set(e, 500, NULL, NULL, "out of memory");
        goto out;
    }
    *out = own(r, (char *)rf_buf_take(&b, NULL));
    if (!*out) st = rf_oai_error_set(e, 500, NULL, NULL, "out of memory");
out:
    rf_buf_free(&b);
    return st;
}

static rf_status parse_messages(rf_oai_req *r, rf_oai_error *e) {
    const json_t *ms = json_object_get(r->root, "messages");
    if (!ms)
        return rf_oai_error_set(e, 400, "messages", "missing_required_parameter",
                                "'messages' is required");
    if (!json_is_array(ms)) return wrong_type(e, "messages", ms, "an array");
    size_t n = json_array_size(ms);
    if (n == 0) return bad(e, "messages", "'messages' must be a non-empty array");
    r->msgs = calloc(n, sizeof *r->msgs);
    if (!r->msgs) return rf_oai_error_set(e, 500, NULL, NULL, "out of memory");
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
                o->tool_calls = own(r, json_dumps(tc, JSON_COMPACT));
                if (!o->tool_calls) return rf_oai_error_set(e, 500, NULL, NULL, "out of memory");
            }
        }
        const json_t *c = json_object_get(m, "content");
        snprintf(param, sizeof param, "messages[%zu].content", i);
        if (!c || json_is_null(c)) {
            if (!(assistant && o->tool_calls))
                return rf_oai_error_set(e, 400, param, "missing_required_parameter",
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

static rf_status parse_stop(rf_oai_req *r, rf_oai_error *e) {
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
    if (json_array_size(s) > RF_OAI_MAX_STOPS)
        return bad(e, "stop", "'stop' has %zu strings, at most %d are allowed", json_array_size(s),
                   RF_OAI_MAX_STOPS);
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

/* Fields we do not implement yet: refused rather than silently ignored. */
static rf_status refuse_unsupported(const json_t *root, rf_oai_error *e) {
    const json_t *v = json_object_get(root, "tools");
    if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0))
        return unsupported(e, "tools");
    v = json_object_get(root, "tool_choice");
    if (v && !json_is_null(v) && !(json_is_string(v) && !strcmp(json_string_value(v), "none")))
        return unsupported(e, "tool_choice");
    v = json_object_get(root, "logprobs");
    if (v && !json_is_null(v) && !json_is_false(v) &&
        !(json_is_integer(v) && json_integer_value(v) == 0))
        return unsupported(e, "logprobs");
    v = json_object_get(root, "top_logprobs");
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 0))
        return unsupported(e, "top_logprobs");
    return RF_OK;
}

/* response_format: text (nothing), json_object (any object), json_schema (json_schema.schema,
 * given to the engine as JSON text; whether it can be enforced is the engine's answer). */
static rf_status parse_response_format(rf_oai_req *r, rf_oai_error *e) {
    const json_t *v = json_object_get(r->root, "response_format");
    if (!v || json_is_null(v)) return RF_OK;
    if (!json_is_object(v)) return wrong_type(e, "response_format", v, "an object");
    const char *t = json_string_value(json_object_get(v, "type"));
    if (!t) return wrong_type(e, "response_format.type", json_object_get(v, "type"), "a string");
    if (!strcmp(t, "text")) return RF_OK;
    if (!strcmp(t, "json_object")) {
        r->json_schema = "{\"type\":\"object\"}";
        return RF_OK;
    }
    if (strcmp(t, "json_schema") != 0)
        return bad(e, "response_format.type",
                   "'response_format.type' must be text, json_object or json_schema");
    const json_t *js = json_object_get(v, "json_schema");
    if (!json_is_object(js)) return wrong_type(e, "response_format.json_schema", js, "an object");
    const json_t *schema = json_object_get(js, "schema");
    if (!schema) {
        r->json_schema = "{}"; /* a schema-less json_schema: any JSON value */
        return RF_OK;
    }
    if (!json_is_object(schema) && !json_is_boolean(schema))
        return wrong_type(e, "response_format.json_schema.schema", schema, "an object");
    r->json_schema = own(r, json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY));
    if (!r->json_schema) return rf_oai_error_set(e, 500, "", "", "out of memory");
    return RF_OK;
}

static rf_status parse_fields(rf_oai_req *r, const rf_oai_limits *lim, rf_oai_error *e) {
    const json_t *root = r->root;
    rf_status st;
    const json_t *m = json_object_get(root, "model");
    if (m && !json_is_null(m)) {
        if (!json_is_string(m)) return wrong_type(e, "model", m, "a string");
        r->model = json_string_value(m);
        bool known = !lim || !lim->models;
        for (size_t i = 0; !known && lim->models[i]; i++) known = !strcmp(lim->models[i], r->model);
        if (!known)
            return rf_oai_error_set(e, 404, "model", "model_not_found",
                                    "The model '%.200s' does not exist (GET /v1/models lists "
                                    "the one served)",
                                    r->model);
    }
    int32_t n_ctx = lim && lim->n_ctx > 0 ? lim->n_ctx : INT32_MAX;
    json_int_t mt = -1;
    if ((st = int_field(root, "max_tokens", 1, n_ctx, &mt, e))) return st;
    if ((st = int_field(root, "max_completion_tokens", 1, n_ctx, &mt, e))) return st;
    r->max_tokens = (int32_t)mt;
    double d = 1;
    if ((st = num_field(root, "temperature", 0, false, 2, false, &d, e))) return st;
    r->temperature = (float)d;
    d = 1;
    if ((st = num_field(root, "top_p", 0, true, 1, false, &d, e))) return st;
    r->top_p = (float)d;
    json_int_t k = 0;
    if ((st = int_field(root, "top_k", 0, INT32_MAX, &k, e))) return st;
    r->top_k = (int32_t)k;
    json_int_t seed = 0;
    if ((st = int_field(root, "seed", INT64_MIN, INT64_MAX, &seed, e))) return st;
    r->seed = (uint64_t)seed;
    json_int_t n = 1;
    if ((st = int_field(root, "n", 1, 1, &n, e))) return st;
    if ((st = num_field(root, "presence_penalty", -2, false, 2, false, &r->presence_penalty, e)))
        return st;
    if ((st = num_field(root, "frequency_penalty", -2, false, 2, false, &r->frequency_penalty, e)))
        return st;
    if ((st = bool_field(root, "stream", &r->stream, e))) return st;
    if ((st = bool_field(root, "ignore_eos", &r->ignore_eos, e))) return st;
    const json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!r->stream)
            return bad(e, "stream_options", "'stream_options' is only allowed with stream true");
        if (!json_is_object(so)) return wrong_type(e, "stream_options", so, "an object");
        const json_t *iu = json_object_get(so, "include_usage");
        if (iu && !json_is_null(iu) && !json_is_boolean(iu))
            return wrong_type(e, "stream_options.include_usage", iu, "a boolean");
        r->include_usage = json_is_true(iu);
    }
    if ((st = parse_stop(r, e))) return st;
    if ((st = parse_response_format(r, e))) return st;
    return refuse_unsupported(root, e);
}

rf_status rf_oai_parse(rf_oai_kind kind, const char *body, size_t len, const rf_oai_limits *lim,
                       rf_oai_req *out, rf_oai_error *e) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    json_error_t je;
    out->root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
    rf_status st;
    if (!out->root) {
        st = rf_oai_error_set(e, 400, NULL, "invalid_json",
                              "the body is not valid JSON: %s (line %d, column %d)", je.text,
                              je.line, je.column);
        goto fail;
    }
    if (!json_is_object(out->root)) {
        st = rf_oai_error_set(e, 400, NULL, "invalid_json",
                              "the body must be a JSON object, not %s", rf_json_kind(out->root));
        goto fail;
    }
    st = parse_fields(out, lim, e);
    if (st) goto fail;
    if (kind == RF_OAI_CHAT) {
        st = parse_messages(out, e);
        if (st) goto fail;
    } else {
        const json_t *p = json_object_get(out->root, "prompt");
        if (!p) {
            st = rf_oai_error_set(e, 400, "prompt", "missing_required_parameter",
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
    rf_oai_req_free(out);
    return st;
}

void rf_oai_req_free(rf_oai_req *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_owned; i++) free(r->owned[i]);
    free(r->owned);
    free(r->msgs);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}

rf_request_params rf_oai_engine_params(const rf_oai_req *r) {
    rf_request_params p = rf_request_default_params();
    p.temperature = r->temperature;
    p.top_k = r->top_k;
    p.top_p = r->top_p;
    p.seed = r->seed;
    p.max_tokens = r->max_tokens;
    p.ignore_eos = r->ignore_eos;
    p.json_schema = r->json_schema;
    for (int i = 0; i < RF_OAI_MAX_STOPS && r->stop[i]; i++) p.stop[i] = r->stop[i];
    return p;
}
