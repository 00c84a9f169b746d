/* agent_task.c: agent task files (schema, rules and ownership in agent_task.h): the loader, the
 * expected function's parameters, and the check that the answer is the count of the ids under
 * every acceptable condition. */
#include "bench/agent_task.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/agent_schema.h"
#include "bench/graders.h"
#include "util/file.h"
#include "util/json_dump.h"
#include "util/json_read.h"

typedef struct task_priv {
    json_t *params; /* the expected function's "parameters" schema */
} task_priv;

typedef rf_jr tctx; /* where: the file's name; RF_ERR_FORMAT */

static rf_status terr(tctx *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static rf_status terr(tctx *c, const char *field, const char *fmt, ...) {
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return rf_jr_fail(c, RF_JR_OTHER, field, "%s", what);
}

static rf_status nomem(const tctx *c) {
    return rf_error_set(c->err, RF_ERR_NOMEM, "%s: out of memory", c->where);
}

/* String member parent.key: required or optional (absent leaves *out NULL); never blank; *out
 * is a malloc'd copy. */
static rf_status get_str(tctx *c, const json_t *obj, const char *parent, const char *key,
                         bool required, char **out) {
    const char *s = NULL;
    *out = NULL;
    rf_status st =
        rf_jr_str(c, obj, parent, key, RF_JR_NONEMPTY | (required ? RF_JR_REQUIRED : 0), &s);
    if (st || !s) return st;
    *out = strdup(s);
    return *out ? RF_OK : nomem(c);
}

/* Is the integer v written in text as a whole number? */
static bool number_in_text(const char *text, int64_t v) {
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)v);
    size_t wn = strlen(want);
    for (const char *p = strstr(text, want); p; p = strstr(p + 1, want)) {
        bool left_ok = p == text || !((p[-1] >= '0' && p[-1] <= '9') || (v >= 0 && p[-1] == '-'));
        char r = p[wn];
        bool right_ok =
            !(r >= '0' && r <= '9') && !(r == '.' && p[wn + 1] >= '0' && p[wn + 1] <= '9');
        if (left_ok && right_ok) return true;
    }
    return false;
}

static rf_status parse_params(tctx *c, const json_t *params, const char *fpath, rf_agent_task *t) {
    char path[160], why[96];
    if (!json_is_object(params)) return terr(c, fpath, "must be a JSON schema object");
    const json_t *ty = json_object_get(params, "type");
    snprintf(path, sizeof path, "%s.type", fpath);
    if (ty && !(json_is_string(ty) && strcmp(json_string_value(ty), "object") == 0))
        return terr(c, path, "must be \"object\"");
    const json_t *props = json_object_get(params, "properties");
    snprintf(path, sizeof path, "%s.properties", fpath);
    if (!json_is_object(props)) return terr(c, path, "missing or not an object");
    static const char *const allowed[] = {"ids", "op", "threshold", "filter"};
    static const char *const want_type[] = {"array", "string", "number", "string"};
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)props, key, val) {
        char pbuf[48];
        snprintf(path, sizeof path, "%.100s.properties.%s", fpath,
                 rf_printable(key, strlen(key), pbuf, sizeof pbuf));
        size_t k = 0;
        while (k < 4 && strcmp(key, allowed[k]) != 0) k++;
        if (k == 4) return terr(c, path, "count_ids tasks take only ids, op, threshold, filter");
        if (!rf_agent_schema_valid(val, why, sizeof why)) return terr(c, path, "%s", why);
        json_t *probe = NULL; /* a value of the intended type must pass */
        if (k == 0) probe = json_pack("[I]", (json_int_t)1);
        if (k == 1 || k == 3) probe = json_string(">=");
        if (k == 2) probe = json_integer(10); /* "number" or "integer" */
        if (!probe) return nomem(c);
        bool ok = rf_agent_schema_accepts(val, probe);
        json_decref(probe);
        if (!ok)
            return terr(c, path, "must accept %s%s", want_type[k], k == 0 ? " of integer" : "");
    }
    bool has_ids = json_object_get(props, "ids"), has_op = json_object_get(props, "op"),
         has_thr = json_object_get(props, "threshold"), has_f = json_object_get(props, "filter");
    snprintf(path, sizeof path, "%s.properties", fpath);
    if (!has_ids) return terr(c, path, "needs \"ids\"");
    if (has_f && !has_op && !has_thr)
        t->form = RF_TOOL_FORM_FILTER;
    else if (has_op && has_thr && !has_f)
        t->form = RF_TOOL_FORM_OP_THRESHOLD;
    else
        return terr(c, path, "needs \"op\" and \"threshold\", or \"filter\" (not both)");
    const json_t *req = json_object_get(params, "required");
    if (req) {
        snprintf(path, sizeof path, "%s.required", fpath);
        if (!json_is_array(req)) return terr(c, path, "must be an array of property names");
        for (size_t k = 0; k < json_array_size(req); k++) {
            const json_t *e = json_array_get(req, k);
            snprintf(path, sizeof path, "%s.required[%zu]", fpath, k);
            if (!json_is_string(e) || !json_object_get(props, json_string_value(e)))
                return terr(c, path, "not a property name");
        }
    }
    return RF_OK;
}

/* "ids": 1-RF_AGENT_MAX_IDS integers of magnitude up to 2^53, each written in "user". */
static rf_status parse_ids(tctx *c, const json_t *root, rf_agent_task *t) {
    char path[128];
    const json_t *ids = json_object_get(root, "ids");
    if (!ids) return terr(c, "ids", "missing");
    if (!json_is_array(ids) || json_array_size(ids) == 0 || json_array_size(ids) > RF_AGENT_MAX_IDS)
        return terr(c, "ids", "must be an array of 1-%d integers", RF_AGENT_MAX_IDS);
    t->n_ids = (int32_t)json_array_size(ids);
    t->ids = malloc((size_t)t->n_ids * sizeof *t->ids);
    if (!t->ids) return nomem(c);
    for (int32_t k = 0; k < t->n_ids; k++) {
        const json_t *e = json_array_get(ids, (size_t)k);
        snprintf(path, sizeof path, "ids[%d]", (int)k);
        if (!json_is_integer(e)) return terr(c, path, "must be an integer");
        json_int_t v = json_integer_value(e);
        if (v > RF_AGENT_MAX_ID || v < -RF_AGENT_MAX_ID)
            return terr(c, path, "magnitude above 2^53");
        t->ids[k] = (int64_t)v;
        if (!number_in_text(t->user, t->ids[k]))
            return terr(c, path, "%lld is not written in field 'user'", (long long)t->ids[k]);
    }
    return RF_OK;
}

/* "tools": a non-empty array of {"type": "function", "function": {"name", "parameters"?}},
 * kept as compact JSON text in t->tools_json; *out is the array (borrowed from root). */
static rf_status parse_tools(tctx *c, const json_t *root, rf_agent_task *t, const json_t **out) {
    rf_status st;
    char path[128];
    const json_t *tools = json_object_get(root, "tools");
    if (!tools) return terr(c, "tools", "missing");
    if (!json_is_array(tools) || json_array_size(tools) == 0)
        return terr(c, "tools", "must be a non-empty array of tool objects");
    for (size_t k = 0; k < json_array_size(tools); k++) {
        const json_t *tool = json_array_get(tools, k);
        snprintf(path, sizeof path, "tools[%zu]", k);
        if (!json_is_object(tool)) return terr(c, path, "must be an object");
        const json_t *ty = json_object_get(tool, "type");
        snprintf(path, sizeof path, "tools[%zu].type", k);
        if (!json_is_string(ty) || strcmp(json_string_value(ty), "function") != 0)
            return terr(c, path, "must be \"function\"");
        json_t *fn = NULL, *params = NULL;
        const char *nm = NULL;
        rf_jr_index(path, sizeof path, "tools", k);
        if ((st = rf_jr_object(c, tool, path, "function", RF_JR_REQUIRED, &fn))) return st;
        char fpath[160];
        rf_jr_path(fpath, sizeof fpath, path, "function");
        if ((st = rf_jr_str(c, fn, fpath, "name", RF_JR_REQUIRED | RF_JR_NONEMPTY, &nm))) return st;
        if ((st = rf_jr_object(c, fn, fpath, "parameters", 0, &params))) return st;
    }
    t->tools_json = rf_json_dumps(tools, JSON_COMPACT);
    if (!t->tools_json) return nomem(c);
    *out = tools;
    return RF_OK;
}

/* "expected.answer": an integer, or a number as a string; kept as canonical number text. */
static rf_status parse_answer(tctx *c, const json_t *exp, rf_agent_task *t) {
    const json_t *ans = json_object_get(exp, "answer");
    char canon[48];
    if (!ans) return terr(c, "expected.answer", "missing");
    if (json_is_integer(ans)) {
        snprintf(canon, sizeof canon, "%" JSON_INTEGER_FORMAT, json_integer_value(ans));
    } else if (!json_is_string(ans) ||
               !rf_number_canonical(json_string_value(ans), strlen(json_string_value(ans)), canon,
                                    sizeof canon) ||
               strlen(canon) >= sizeof canon - 1) {
        return terr(c, "expected.answer", "must be an integer (or a number as a string)");
    }
    t->answer = strdup(canon);
    if (!t->answer) return nomem(c);
    return RF_OK;
}

/* "expected.filters": 1-64 conditions, under each of which "answer" is the count of the ids. */
static rf_status parse_filters(tctx *c, const json_t *exp, rf_agent_task *t) {
    char path[128];
    const json_t *fl = json_object_get(exp, "filters");
    if (!fl) return terr(c, "expected.filters", "missing");
    size_t nf = json_is_array(fl) ? json_array_size(fl) : 1;
    if ((!json_is_array(fl) && !json_is_string(fl)) || nf == 0 || nf > 64)
        return terr(c, "expected.filters", "must be a condition string or an array of 1-64");
    t->filters = malloc(nf * sizeof *t->filters);
    if (!t->filters) return nomem(c);
    for (size_t k = 0; k < nf; k++) {
        const json_t *e = json_is_array(fl) ? json_array_get(fl, k) : fl;
        if (json_is_array(fl))
            snprintf(path, sizeof path, "expected.filters[%zu]", k);
        else
            snprintf(path, sizeof path, "expected.filters");
        if (!json_is_string(e)) return terr(c, path, "must be a string such as \"id >= 10\"");
        rf_error perr;
        const char *s = json_string_value(e);
        if (rf_cond_parse(s, strlen(s), &t->filters[k], &perr))
            return terr(c, path, "%s", perr.msg);
        t->n_filters = (int32_t)k + 1;
        int64_t cnt = rf_cond_count(&t->filters[k], t->ids, t->n_ids);
        char cnt_s[32], ftext[RF_COND_TEXT_MAX];
        snprintf(cnt_s, sizeof cnt_s, "%lld", (long long)cnt);
        if (!rf_numbers_equal(cnt_s, t->answer)) {
            rf_cond_format(&t->filters[k], ftext, sizeof ftext);
            return terr(c, "expected.answer", "%s is not the count of ids under %s (%s)", t->answer,
                        ftext, cnt_s);
        }
    }
    return RF_OK;
}

static rf_status parse_task(tctx *c, const json_t *root, rf_agent_task *t) {
    rf_status st;
    char path[128], pbuf[48];
    if (!json_is_object(root))
        return rf_error_set(c->err, RF_ERR_FORMAT, "%s: expected a JSON object", c->where);
    static const char *const known[] = {"name",   "description", "runs", "max_turns",
                                        "system", "user",        "ids",  "tool_choice",
                                        "tools",  "expected",    NULL};
    if ((st = rf_jr_keys(c, root, NULL, known))) return st;
    if ((st = get_str(c, root, NULL, "name", true, &t->name))) return st;
    if ((st = get_str(c, root, NULL, "description", false, &t->description))) return st;
    t->runs = 0;
    t->max_turns = 4;
    if ((st = rf_jr_i32(c, root, NULL, "runs", RF_JR_REQUIRED, 1, 1000, &t->runs))) return st;
    if ((st = rf_jr_i32(c, root, NULL, "max_turns", 0, 1, 64, &t->max_turns))) return st;
    if ((st = get_str(c, root, NULL, "system", false, &t->system))) return st;
    if ((st = get_str(c, root, NULL, "user", true, &t->user))) return st;
    if ((st = get_str(c, root, NULL, "tool_choice", false, &t->tool_choice))) return st;
    if ((st = parse_ids(c, root, t))) return st;
    const json_t *tools = NULL;
    if ((st = parse_tools(c, root, t, &tools))) return st;
    const json_t *exp = json_object_get(root, "expected");
    if (!exp) return terr(c, "expected", "missing");
    if (!json_is_object(exp)) return terr(c, "expected", "must be an object");
    static const char *const known_exp[] = {"function", "answer", "filters", NULL};
    if ((st = rf_jr_keys(c, exp, "expected", known_exp))) return st;
    if ((st = get_str(c, exp, "expected", "function", true, &t->function))) return st;
    const json_t *params = NULL;
    size_t fi = 0;
    for (; fi < json_array_size(tools); fi++) {
        const json_t *fn = json_object_get(json_array_get(tools, fi), "function");
        if (strcmp(json_string_value(json_object_get(fn, "name")), t->function) == 0) {
            params = json_object_get(fn, "parameters");
            break;
        }
    }
    if (fi == json_array_size(tools))
        return terr(c, "expected.function", "\"%s\" is not a tool in field 'tools'",
                    rf_printable(t->function, strlen(t->function), pbuf, sizeof pbuf));
    snprintf(path, sizeof path, "tools[%zu].function.parameters", fi);
    if (!params) return terr(c, path, "missing");
    if ((st = parse_params(c, params, path, t))) return st;
    if ((st = parse_answer(c, exp, t))) return st;
    if ((st = parse_filters(c, exp, t))) return st;
    task_priv *p = calloc(1, sizeof *p);
    if (!p) return nomem(c);
    p->params = json_incref((json_t *)params);
    t->priv = p;
    return RF_OK;
}

const struct json_t *rf_agent_task_params(const rf_agent_task *t) {
    const task_priv *p = t->priv;
    return p ? p->params : NULL;
}

rf_status rf_agent_task_parse(const char *name, const char *text, size_t len, rf_agent_task *out,
                              rf_error *err) {
    memset(out, 0, sizeof *out);
    tctx c = rf_jr_make(name, RF_ERR_FORMAT, err);
    if (len > RF_AGENT_TASK_FILE_MAX)
        return rf_error_set(err, RF_ERR_FORMAT, "%s: larger than %u bytes", name,
                            RF_AGENT_TASK_FILE_MAX);
    out->path = strdup(name);
    if (!out->path) return nomem(&c);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        rf_agent_task_free(out);
        return rf_error_set(err, RF_ERR_FORMAT, "%s:%d:%d: invalid JSON: %s", name, je.line,
                            je.column, je.text);
    }
    rf_status st = parse_task(&c, root, out);
    json_decref(root);
    if (st) rf_agent_task_free(out);
    return st;
}

rf_status rf_agent_task_load(const char *path, rf_agent_task *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    char *buf = NULL;
    size_t n = 0;
    rf_status st = rf_read_file(path, RF_AGENT_TASK_FILE_MAX, &buf, &n, err);
    if (!st) st = rf_agent_task_parse(path, buf, n, out, err);
    free(buf);
    return st;
}

void rf_agent_task_free(rf_agent_task *t) {
    if (!t) return;
    free(t->path);
    free(t->name);
    free(t->description);
    free(t->system);
    free(t->user);
    free(t->tools_json);
    free(t->tool_choice);
    free(t->function);
    free(t->answer);
    free(t->ids);
    free(t->filters);
    task_priv *p = t->priv;
    if (p) {
        json_decref(p->params);
        free(p);
    }
    memset(t, 0, sizeof *t);
}
