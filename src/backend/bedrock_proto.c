/* bedrock_proto.c: Converse / ConverseStream bodies and reply folding (bedrock_proto.h). */
#include "backend/bedrock_proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/aws_error.h"
#include "util/json_dump.h"

/* ---------------------------------------------------------------- request */

/* Appends block to the conversation as role's: into the last message when it has that role
 * (Converse wants user and assistant turns to alternate), else as a new message. Steals
 * block. */
static bool add_block(json_t *msgs, const char *role, json_t *block) {
    if (!block) return false;
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    const char *lr = last ? json_string_value(json_object_get(last, "role")) : NULL;
    if (lr && !strcmp(lr, role))
        return !json_array_append_new(json_object_get(last, "content"), block);
    json_t *m = json_pack("{s:s, s:[o]}", "role", role, "content", block);
    return m && !json_array_append_new(msgs, m);
}

static json_t *text_block(const char *s) {
    json_t *t = json_string(s ? s : "");
    return t ? json_pack("{s:o}", "text", t) : NULL;
}

/* An assistant turn's OpenAI tool_calls as toolUse blocks. */
static bool add_tool_uses(json_t *msgs, const char *tool_calls, char *why, size_t why_n, int i) {
    json_t *tcs = json_loads(tool_calls, 0, NULL);
    bool ok = json_is_array(tcs);
    if (!ok) snprintf(why, why_n, "message %d: tool_calls is not a JSON array", i);
    size_t k;
    json_t *tc;
    json_array_foreach(tcs, k, tc) {
        if (!ok) break;
        const json_t *fn = json_object_get(tc, "function");
        const char *id = json_string_value(json_object_get(tc, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!id || !name) {
            snprintf(why, why_n, "message %d: tool call %zu has no id or function.name", i, k);
            ok = false;
            break;
        }
        const json_t *a = json_object_get(fn, "arguments");
        json_t *input = NULL;
        size_t al = json_string_length(a), sp = 0;
        while (sp < al && strchr(" \t\r\n", json_string_value(a)[sp])) sp++;
        if (json_is_string(a) && sp == al) {
            input = json_object(); /* no arguments: an empty input, as Converse sends them */
        } else if (json_is_string(a)) {
            input = json_loads(json_string_value(a), JSON_DECODE_ANY, NULL);
            if (!input) input = json_copy((json_t *)a); /* not JSON: sent as the text it is */
        } else {
            input = a ? json_deep_copy(a) : json_object();
        }
        json_t *b = json_pack("{s:{s:s, s:s, s:o}}", "toolUse", "toolUseId", id, "name", name,
                              "input", input);
        ok = add_block(msgs, "assistant", b);
        if (!ok) snprintf(why, why_n, "message %d: cannot build tool call %zu", i, k);
    }
    json_decref(tcs);
    return ok;
}

/* OpenAI tools -> Converse toolSpecs. */
static json_t *tool_specs(const char *tools, char *why, size_t why_n) {
    json_t *t = json_loads(tools, 0, NULL), *out = json_array();
    bool ok = json_is_array(t) && out;
    if (!json_is_array(t)) snprintf(why, why_n, "tools is not a JSON array");
    size_t k;
    json_t *tool;
    json_array_foreach(t, k, tool) {
        if (!ok) break;
        const json_t *fn = json_object_get(tool, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!name) {
            snprintf(why, why_n, "tools[%zu] has no function.name", k);
            ok = false;
            break;
        }
        json_t *params = json_object_get(fn, "parameters");
        json_t *schema =
            json_is_object(params) ? json_incref(params) : json_pack("{s:s}", "type", "object");
        json_t *spec = json_pack("{s:s, s:{s:o}}", "name", name, "inputSchema", "json", schema);
        const char *desc = json_string_value(json_object_get(fn, "description"));
        if (spec && desc && *desc) json_object_set_new(spec, "description", json_string(desc));
        ok = spec && !json_array_append_new(out, json_pack("{s:o}", "toolSpec", spec));
    }
    json_decref(t);
    if (!ok) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static void note(char *list, size_t n, const char *what) {
    size_t len = strlen(list);
    snprintf(list + len, n - len, "%s%s", len ? "," : "", what);
}

bool rf_bk_bedrock_build_body(rf_bk_request *req, const json_t *extra, rf_buf *out, char *why,
                              size_t why_n) {
    json_t *o = json_object(), *msgs = json_array(), *sys = json_array();
    bool ok = o && msgs && sys, tool_turns = false;
    char *nh = req->res.not_honoured;
    size_t nhn = sizeof req->res.not_honoured;
    nh[0] = 0;
    for (int32_t i = 0; ok && i < req->n_msgs; i++) {
        const rf_bk_message *m = &req->msgs[i];
        const char *role = m->role ? m->role : "user";
        if (!strcmp(role, "system") || !strcmp(role, "developer")) {
            if (m->content && *m->content) ok = !json_array_append_new(sys, text_block(m->content));
        } else if (!strcmp(role, "tool")) {
            json_t *id = json_string(m->tool_call_id ? m->tool_call_id : "");
            json_t *txt = text_block(m->content);
            if (id && txt)
                ok = add_block(
                    msgs, "user",
                    json_pack("{s:{s:o, s:[o]}}", "toolResult", "toolUseId", id, "content", txt));
            else
                ok = false, json_decref(id), json_decref(txt);
            tool_turns = true;
        } else if (!strcmp(role, "assistant")) {
            if (m->content && *m->content)
                ok = add_block(msgs, "assistant", text_block(m->content));
            if (ok && m->tool_calls) {
                if (!add_tool_uses(msgs, m->tool_calls, why, why_n, (int)i)) goto fail;
                tool_turns = true;
            }
        } else {
            ok = add_block(msgs, "user", text_block(m->content));
        }
        if (!ok) snprintf(why, why_n, "message %d: content is not valid UTF-8", (int)i);
    }
    if (!ok) goto fail;
    json_object_set_new(o, "messages", msgs);
    msgs = NULL;
    if (json_array_size(sys)) {
        json_object_set_new(o, "system", sys);
        sys = NULL;
    }
    json_t *inf = json_object();
    if (req->max_tokens > 0) json_object_set_new(inf, "maxTokens", json_integer(req->max_tokens));
    if (isfinite(req->temperature) && req->temperature >= 0)
        json_object_set_new(inf, "temperature",
                            json_real(rf_bk_openai_float_to_double(req->temperature)));
    if (isfinite(req->top_p) && req->top_p > 0 && req->top_p < 1)
        json_object_set_new(inf, "topP", json_real(rf_bk_openai_float_to_double(req->top_p)));
    json_object_set_new(o, "inferenceConfig", inf);
    if (req->ignore_eos) note(nh, nhn, "ignore_eos");
    const char *choice = req->tool_choice;
    bool none = choice && !strcmp(choice, "none");
    if (req->tools && (!none || tool_turns)) {
        json_t *specs = tool_specs(req->tools, why, why_n);
        if (!specs) goto fail;
        json_t *tc = json_pack("{s:o}", "tools", specs);
        json_t *jc = NULL;
        if (none) {
            note(nh, nhn, "tool_choice");
        } else if (!choice || !strcmp(choice, "auto")) {
            jc = json_pack("{s:{}}", "auto");
        } else if (!strcmp(choice, "required")) {
            jc = json_pack("{s:{}}", "any");
        } else {
            json_t *c = choice[0] == '{' ? json_loads(choice, 0, NULL) : NULL;
            const char *name =
                json_string_value(json_object_get(json_object_get(c, "function"), "name"));
            if (name) jc = json_pack("{s:{s:s}}", "tool", "name", name);
            json_decref(c);
            if (!jc) {
                snprintf(why, why_n,
                         "tool_choice '%.40s' is not auto, none, required or a "
                         "function",
                         choice);
                json_decref(tc);
                goto fail;
            }
        }
        if (jc) json_object_set_new(tc, "toolChoice", jc);
        json_object_set_new(o, "toolConfig", tc);
    }
    if (extra && json_object_update_recursive(o, (json_t *)extra)) {
        snprintf(why, why_n, "cannot merge extra_body (out of memory)");
        goto fail;
    }
    rf_buf_reset(out);
    if (rf_json_dump_buf(o, JSON_COMPACT, out) || rf_buf_terminate(out)) {
        snprintf(why, why_n, "cannot serialize the request (out of memory)");
        goto fail;
    }
    json_decref(sys); /* an empty system list was never moved into o */
    json_decref(o);
    return true;
fail:
    json_decref(msgs);
    json_decref(sys);
    json_decref(o);
    return false;
}

/* ---------------------------------------------------------------- reply */

const char *rf_bk_bedrock_finish_reason(const char *s) {
    if (!s) return "";
    if (!strcmp(s, "end_turn") || !strcmp(s, "stop_sequence")) return "stop";
    if (!strcmp(s, "tool_use")) return "tool_calls";
    if (!strcmp(s, "max_tokens")) return "length";
    if (!strcmp(s, "content_filtered") || !strcmp(s, "guardrail_intervened"))
        return "content_filter";
    return s;
}

static int32_t get_count(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) return -1;
    json_int_t x = json_integer_value(v);
    return x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
}

static void set_stop(rf_bk_bedrock_fold *f, rf_bk_request *req, const json_t *sr) {
    if (!json_is_string(sr)) return;
    rf_bk_result *res = &req->res;
    snprintf(res->finish_reason, sizeof res->finish_reason, "%s",
             rf_bk_bedrock_finish_reason(json_string_value(sr)));
    f->saw_stop = true;
}

static void set_usage_metrics(rf_bk_request *req, const json_t *root) {
    rf_bk_result *res = &req->res;
    const json_t *u = json_object_get(root, "usage");
    if (json_is_object(u)) {
        res->prompt_tokens = get_count(u, "inputTokens");
        res->completion_tokens = get_count(u, "outputTokens");
    }
    const json_t *lat = json_object_get(json_object_get(root, "metrics"), "latencyMs");
    if (json_is_number(lat) && json_number_value(lat) >= 0)
        res->server_latency_ms = json_number_value(lat);
}

void rf_bk_bedrock_fold_init(rf_bk_bedrock_fold *f) {
    memset(f, 0, sizeof *f);
    rf_bk_openai_fold_init(&f->calls);
}

void rf_bk_bedrock_fold_free(rf_bk_bedrock_fold *f) {
    rf_bk_openai_fold_free(&f->calls);
}

void rf_bk_bedrock_fold_reset(rf_bk_bedrock_fold *f) {
    rf_bk_openai_fold_reset(&f->calls);
    f->saw_stop = f->saw_metadata = false;
    f->n_events = 0;
}

static void event_at(rf_bk_request *req, int64_t t) {
    if (!rf_bk_result_event(&req->res, t, -1))
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "out of memory");
}

static bool add_text(rf_bk_request *req, const json_t *t) {
    if (!json_is_string(t) || !json_string_length(t)) return false;
    if (!rf_bk_result_text(req, json_string_value(t), json_string_length(t)))
        rf_bk_fail(&req->res, RF_BK_INTERNAL, "out of memory");
    return true;
}

void rf_bk_bedrock_fold_body(rf_bk_bedrock_fold *f, rf_bk_request *req, const char *body,
                             size_t len, int64_t t) {
    rf_bk_result *res = &req->res;
    json_error_t je;
    json_t *root = len ? json_loadb(body, len, 0, &je) : NULL;
    if (!json_is_object(root)) {
        rf_bk_fail(res, RF_BK_INVALID, "Converse reply is not a JSON object (%s)",
                   !len   ? "empty body"
                   : root ? "not an object"
                          : je.text);
        json_decref(root);
        return;
    }
    const json_t *content =
        json_object_get(json_object_get(json_object_get(root, "output"), "message"), "content");
    if (!json_is_array(content)) {
        rf_bk_fail(res, RF_BK_INVALID, "Converse reply has no output.message.content");
        json_decref(root);
        return;
    }
    bool any = false;
    int64_t ncall = 0;
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b) {
        if (add_text(req, json_object_get(b, "text"))) any = true;
        const json_t *tu = json_object_get(b, "toolUse");
        if (json_is_object(tu) &&
            rf_bk_openai_fold_call(&f->calls, req, ncall++, json_object_get(tu, "toolUseId"),
                                   json_object_get(tu, "name"), json_object_get(tu, "input")))
            any = true;
    }
    set_stop(f, req, json_object_get(root, "stopReason"));
    set_usage_metrics(req, root);
    if (any) event_at(req, t);
    json_decref(root);
}

bool rf_bk_bedrock_fold_event(rf_bk_bedrock_fold *f, rf_bk_request *req, const rf_es_message *m,
                              int64_t t) {
    if (rf_bk_aws_fail_event(&req->res, m)) return false;
    return rf_bk_bedrock_fold_message(f, req, m, t);
}

bool rf_bk_bedrock_fold_message(rf_bk_bedrock_fold *f, rf_bk_request *req, const rf_es_message *m,
                                int64_t t) {
    rf_bk_result *res = &req->res;
    const rf_es_header *et = rf_es_find(m, ":event-type");
    if (!rf_es_header_is(m, ":message-type", "event") || !et || et->type != RF_ES_STRING) {
        rf_bk_fail(res, RF_BK_INVALID, "ConverseStream message %llu is not an event",
                   (unsigned long long)f->n_events + 1);
        return false;
    }
    json_error_t je;
    json_t *root = json_loadb((const char *)m->payload, m->payload_len, 0, &je);
    char type[40];
    snprintf(type, sizeof type, "%.*s", (int)(et->len < 39 ? et->len : 39),
             (const char *)et->bytes);
    if (!json_is_object(root)) {
        rf_bk_fail(res, RF_BK_INVALID, "ConverseStream %s event %llu is not a JSON object (%s)",
                   type, (unsigned long long)f->n_events + 1, root ? "not an object" : je.text);
        json_decref(root);
        return false;
    }
    f->n_events++;
    const json_t *idx = json_object_get(root, "contentBlockIndex");
    int64_t bi = json_is_integer(idx) ? json_integer_value(idx) : 0;
    bool content = false;
    if (!strcmp(type, "contentBlockStart")) {
        const json_t *tu = json_object_get(json_object_get(root, "start"), "toolUse");
        if (json_is_object(tu))
            content = rf_bk_openai_fold_call(&f->calls, req, bi, json_object_get(tu, "toolUseId"),
                                             json_object_get(tu, "name"), NULL);
    } else if (!strcmp(type, "contentBlockDelta")) {
        const json_t *d = json_object_get(root, "delta");
        content = add_text(req, json_object_get(d, "text"));
        const json_t *tu = json_object_get(d, "toolUse");
        if (json_is_object(tu) &&
            rf_bk_openai_fold_call(&f->calls, req, bi, NULL, NULL, json_object_get(tu, "input")))
            content = true;
        if (json_is_object(json_object_get(d, "reasoningContent"))) content = true;
    } else if (!strcmp(type, "messageStop")) {
        set_stop(f, req, json_object_get(root, "stopReason"));
    } else if (!strcmp(type, "metadata")) {
        set_usage_metrics(req, root);
        f->saw_metadata = true;
        if (!res->t_done) res->t_done = t;
    }
    if (content) event_at(req, t);
    json_decref(root);
    return true;
}

void rf_bk_bedrock_fold_end(rf_bk_bedrock_fold *f, rf_bk_request *req) {
    if (!f->saw_stop)
        rf_bk_fail(&req->res, RF_BK_TRUNCATED,
                   "ConverseStream ended without messageStop after %llu events",
                   (unsigned long long)f->n_events);
}

void rf_bk_bedrock_fold_export(rf_bk_bedrock_fold *f, rf_bk_request *req) {
    rf_bk_openai_fold_export(&f->calls, req);
}

/* ---------------------------------------------------------------- the table */

static void *converse_fold_new(void) {
    rf_bk_bedrock_fold *f = malloc(sizeof *f);
    if (f) rf_bk_bedrock_fold_init(f);
    return f;
}

static void converse_fold_free(void *f) {
    rf_bk_bedrock_fold_free(f);
    free(f);
}

static void converse_fold_reset(void *f) {
    rf_bk_bedrock_fold_reset(f);
}

static bool converse_build(rf_bk_request *req, const char *model, const json_t *extra, rf_buf *out,
                           char *why, size_t why_n) {
    (void)model; /* the model is in the path */
    return rf_bk_bedrock_build_body(req, extra, out, why, why_n);
}

static void converse_body(void *f, rf_bk_request *req, const char *body, size_t len, int64_t t) {
    rf_bk_bedrock_fold_body(f, req, body, len, t);
}

static void converse_finish(void *f, rf_bk_request *req) {
    rf_bk_bedrock_fold_export(f, req);
}

const rf_bk_proto rf_bk_bedrock_converse = {
    .fold_new = converse_fold_new,
    .fold_free = converse_fold_free,
    .fold_reset = converse_fold_reset,
    .build = converse_build,
    .body = converse_body,
    .finish = converse_finish,
};
