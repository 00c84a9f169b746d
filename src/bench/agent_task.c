/* agent_task.c: agent task files, the count_ids tool, BFCL-style call grading and the seed's
 * output line (rules and ownership in agent_task.h). */
#include "bench/agent_task.h"
#include "util/file.h"
#include "util/json_dump.h"
#include "util/json_kind.h"
#include "util/json_read.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/graders.h"

#define MAX_ID_MAGNITUDE 9007199254740992LL /* 2^53: ids convert to double exactly */

typedef struct task_priv {
    json_t *params; /* the expected function's "parameters" schema */
} task_priv;

/* ---- small helpers ---- */

static bool is_sp(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

static void copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src);
}

/* ---- conditions ---- */

const char *rf_cmp_op_str(rf_cmp_op op) {
    switch (op) {
    case RF_CMP_GE:
        return ">=";
    case RF_CMP_GT:
        return ">";
    case RF_CMP_LE:
        return "<=";
    case RF_CMP_LT:
        return "<";
    case RF_CMP_EQ:
        return "==";
    case RF_CMP_NE:
        return "!=";
    }
    return "?";
}

typedef struct op_text {
    const char *t;
    rf_cmp_op op;
} op_text;

/* Longest first, so ">=" is found before ">". */
static const op_text OPS[] = {
    {">=", RF_CMP_GE},
    {"<=", RF_CMP_LE},
    {"==", RF_CMP_EQ},
    {"!=", RF_CMP_NE},
    {"\xe2\x89\xa5", RF_CMP_GE},
    {"\xe2\x89\xa4", RF_CMP_LE},
    {"\xe2\x89\xa0", RF_CMP_NE},
    {">", RF_CMP_GT},
    {"<", RF_CMP_LT},
    {"=", RF_CMP_EQ},
};

/* BFCL's standardize_string: drop spaces and ,./-_*^ and lowercase. */
static size_t bfcl_standardize(const char *s, size_t len, char *out, size_t cap) {
    size_t w = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == ' ' || c == ',' || c == '.' || c == '/' || c == '-' || c == '_' || c == '*' ||
            c == '^')
            continue;
        if (w + 1 < cap) out[w] = lower(c);
        w++;
    }
    if (cap) out[w < cap ? w : cap - 1] = 0;
    return w;
}

bool rf_cmp_op_parse(const char *s, size_t len, rf_cmp_op *out) {
    char buf[16];
    size_t n = bfcl_standardize(s, len, buf, sizeof buf);
    if (n == 0 || n >= sizeof buf) return false;
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
        if (strcmp(buf, OPS[k].t) == 0) {
            *out = OPS[k].op;
            return true;
        }
    }
    return false;
}

static size_t skip_sp(const char *s, size_t len, size_t i) {
    while (i < len && is_sp(s[i])) i++;
    return i;
}

static bool lex_op(const char *s, size_t len, size_t *i, rf_cmp_op *op) {
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
        size_t n = strlen(OPS[k].t);
        if (*i + n <= len && memcmp(s + *i, OPS[k].t, n) == 0) {
            *op = OPS[k].op;
            *i += n;
            return true;
        }
    }
    return false;
}

/* A threshold is at most NUMBER_MAX characters of text and below THRESHOLD_LIMIT = 10^(NUMBER_MAX
 * - 1) in magnitude, so rf_condition_format prints every value the lexer accepts in at most
 * NUMBER_MAX characters and what it prints reads back. Its shortest fixed-point form is never
 * longer than the text the value came from, but for a carry into a new integer digit: 47 nines
 * (10^47 - 1, which the length limit alone let in) are the double nearest 10^47, printed with 48
 * digits that the lexer then refused (fuzz_agent_task). Below 10^(NUMBER_MAX - 1) that extra
 * digit still fits. */
#define NUMBER_MAX      47
#define THRESHOLD_LIMIT 1e46

/* [+-]digits[.digits]: a plain decimal (no exponent, hex, inf or nan) of at most NUMBER_MAX
 * characters whose magnitude is below THRESHOLD_LIMIT. */
static bool lex_number(const char *s, size_t len, size_t *i, double *v) {
    size_t j = *i;
    if (j < len && (s[j] == '+' || s[j] == '-')) j++;
    size_t d0 = j;
    while (j < len && s[j] >= '0' && s[j] <= '9') j++;
    if (j == d0) return false;
    if (j < len && s[j] == '.') {
        j++;
        while (j < len && s[j] >= '0' && s[j] <= '9') j++;
    }
    char buf[NUMBER_MAX + 1];
    if (j - *i > NUMBER_MAX) return false;
    memcpy(buf, s + *i, j - *i);
    buf[j - *i] = 0;
    double x = strtod(buf, NULL);
    if (!(fabs(x) < THRESHOLD_LIMIT)) return false;
    *v = x == 0 ? 0.0 : x; /* no -0 */
    *i = j;
    return true;
}

/* An identifier at *i: returns its length (0 when none). */
static size_t lex_ident(const char *s, size_t len, size_t i) {
    size_t j = i;
    if (j < len && (is_ident(s[j]) && !(s[j] >= '0' && s[j] <= '9'))) {
        while (j < len && is_ident(s[j])) j++;
    }
    return j - i;
}

static rf_cmp_op flip(rf_cmp_op op) {
    switch (op) {
    case RF_CMP_GE:
        return RF_CMP_LE;
    case RF_CMP_LE:
        return RF_CMP_GE;
    case RF_CMP_GT:
        return RF_CMP_LT;
    case RF_CMP_LT:
        return RF_CMP_GT;
    default:
        return op;
    }
}

rf_status rf_condition_parse(const char *text, size_t len, rf_condition *out, rf_error *err) {
    char pbuf[48];
    size_t i = skip_sp(text, len, 0), end = len;
    while (end > i && is_sp(text[end - 1])) end--;
    if (end - i >= 2 && (text[i] == '\'' || text[i] == '"' || text[i] == '`') &&
        text[end - 1] == text[i]) { /* one layer of quotes */
        i = skip_sp(text, end - 1, i + 1);
        end--;
        while (end > i && is_sp(text[end - 1])) end--;
    }
    if (i == end) return rf_error_set(err, RF_ERR_FORMAT, "empty condition");
    rf_condition c;
    size_t n = lex_ident(text, end, i);
    if (n) { /* field op number */
        if (!(n == 2 && lower(text[i]) == 'i' && lower(text[i + 1]) == 'd'))
            return rf_error_set(err, RF_ERR_FORMAT, "unknown field '%s' (expected id)",
                                rf_printable(text + i, n, pbuf, sizeof pbuf));
        i = skip_sp(text, end, i + n);
        if (!lex_op(text, end, &i, &c.op))
            return rf_error_set(err, RF_ERR_FORMAT, "expected an operator after 'id' in '%s'",
                                rf_printable(text, len, pbuf, sizeof pbuf));
        i = skip_sp(text, end, i);
        if (!lex_number(text, end, &i, &c.threshold))
            return rf_error_set(err, RF_ERR_FORMAT,
                                "expected a number (below 1e46) after the operator in '%s'",
                                rf_printable(text, len, pbuf, sizeof pbuf));
    } else if (lex_number(text, end, &i, &c.threshold)) { /* number op field */
        i = skip_sp(text, end, i);
        rf_cmp_op op;
        if (!lex_op(text, end, &i, &op))
            return rf_error_set(err, RF_ERR_FORMAT, "expected an operator in '%s'",
                                rf_printable(text, len, pbuf, sizeof pbuf));
        i = skip_sp(text, end, i);
        n = lex_ident(text, end, i);
        if (!(n == 2 && lower(text[i]) == 'i' && lower(text[i + 1]) == 'd'))
            return rf_error_set(err, RF_ERR_FORMAT, "expected 'id' after the operator in '%s'",
                                rf_printable(text, len, pbuf, sizeof pbuf));
        i += n;
        c.op = flip(op);
    } else if (lex_op(text, end, &i, &c.op)) { /* op number, field implied */
        i = skip_sp(text, end, i);
        if (!lex_number(text, end, &i, &c.threshold))
            return rf_error_set(err, RF_ERR_FORMAT,
                                "expected a number (below 1e46) after the operator in '%s'",
                                rf_printable(text, len, pbuf, sizeof pbuf));
    } else {
        return rf_error_set(err, RF_ERR_FORMAT, "not a condition: '%s'",
                            rf_printable(text, len, pbuf, sizeof pbuf));
    }
    i = skip_sp(text, end, i);
    if (i != end)
        return rf_error_set(err, RF_ERR_FORMAT, "unexpected '%s' after the condition",
                            rf_printable(text + i, end - i, pbuf, sizeof pbuf));
    *out = c;
    return RF_OK;
}

/* The threshold as the condition language reads it back exactly: %.15g when that is plain
 * decimal and round-trips ("10", "9.5"), else the shortest fixed-point form that does (the
 * language has no exponents: %.15g printed 1e21 as "1e+21" and 1e-7 as "1e-07", which neither
 * parse nor, past 15 digits, keep the value). Any threshold the parser accepted fits in
 * NUMBER_MAX characters (see THRESHOLD_LIMIT). */
static void format_threshold(double t, char *out, size_t cap) {
    snprintf(out, cap, "%.15g", t);
    if (!strpbrk(out, "eEn") && strtod(out, NULL) == t) return;
    for (int prec = 0; prec <= 60; prec++) {
        snprintf(out, cap, "%.*f", prec, t);
        if (strtod(out, NULL) == t) break;
    }
    if (strchr(out, '.')) { /* "0.5000" is "0.5" */
        size_t n = strlen(out);
        while (n > 0 && out[n - 1] == '0') out[--n] = 0;
        if (n > 0 && out[n - 1] == '.') out[--n] = 0;
    }
}

int rf_condition_format(const rf_condition *c, char *buf, size_t cap) {
    char num[400]; /* %.60f of any finite double fits */
    format_threshold(c->threshold == 0 ? 0.0 : c->threshold, num, sizeof num);
    return snprintf(buf, cap, "id %s %s", rf_cmp_op_str(c->op), num);
}

bool rf_condition_eval(const rf_condition *c, double id) {
    switch (c->op) {
    case RF_CMP_GE:
        return id >= c->threshold;
    case RF_CMP_GT:
        return id > c->threshold;
    case RF_CMP_LE:
        return id <= c->threshold;
    case RF_CMP_LT:
        return id < c->threshold;
    case RF_CMP_EQ:
        return id == c->threshold;
    case RF_CMP_NE:
        return id != c->threshold;
    }
    return false;
}

bool rf_condition_equal(const rf_condition *a, const rf_condition *b) {
    return a->op == b->op && a->threshold == b->threshold;
}

/* ---- JSON schema types (the subset tool definitions use) ---- */

static const char *const TYPES[] = {"integer", "number", "string", "boolean",
                                    "array",   "object", "null"};

static bool known_type(const char *s) {
    for (size_t k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++)
        if (strcmp(s, TYPES[k]) == 0) return true;
    return false;
}

static bool value_is(const char *type, const json_t *v) {
    if (strcmp(type, "integer") == 0) return json_is_integer(v);
    if (strcmp(type, "number") == 0) return json_is_number(v); /* int accepted for float */
    if (strcmp(type, "string") == 0) return json_is_string(v);
    if (strcmp(type, "boolean") == 0) return json_is_boolean(v);
    if (strcmp(type, "array") == 0) return json_is_array(v);
    if (strcmp(type, "object") == 0) return json_is_object(v);
    if (strcmp(type, "null") == 0) return json_is_null(v);
    return false;
}

/* Does v match the property schema s ("type" a string or an array of strings; "items")? */
static bool type_ok(const json_t *s, const json_t *v) {
    const json_t *ty = json_object_get(s, "type");
    bool ok = false;
    if (json_is_string(ty)) {
        ok = value_is(json_string_value(ty), v);
    } else if (json_is_array(ty)) {
        for (size_t k = 0; k < json_array_size(ty) && !ok; k++)
            ok = value_is(json_string_value(json_array_get(ty, k)), v);
    } else {
        ok = true; /* no type: anything */
    }
    if (!ok) return false;
    const json_t *items = json_object_get(s, "items");
    if (json_is_array(v) && json_is_object(items)) {
        for (size_t k = 0; k < json_array_size(v); k++)
            if (!type_ok(items, json_array_get(v, k))) return false;
    }
    return true;
}

/* "integer", "number|string", "array of integer". */
static void type_desc(const json_t *s, char *out, size_t cap) {
    const json_t *ty = json_object_get(s, "type");
    size_t w = 0;
    out[0] = 0;
    if (json_is_string(ty)) {
        w = (size_t)snprintf(out, cap, "%s", json_string_value(ty));
    } else if (json_is_array(ty)) {
        for (size_t k = 0; k < json_array_size(ty) && w < cap; k++)
            w += (size_t)snprintf(out + w, cap - w, "%s%s", k ? "|" : "",
                                  json_string_value(json_array_get(ty, k)));
    } else {
        w = (size_t)snprintf(out, cap, "any");
    }
    const json_t *items = json_object_get(s, "items");
    if (json_is_object(items) && w < cap) {
        char inner[48];
        type_desc(items, inner, sizeof inner);
        snprintf(out + w, cap - w, " of %s", inner);
    }
}

/* Checks a property schema's types (and its items'); why says what is wrong. */
static bool schema_types_valid(const json_t *s, char *why, size_t cap) {
    if (!json_is_object(s)) {
        snprintf(why, cap, "must be an object");
        return false;
    }
    const json_t *ty = json_object_get(s, "type");
    bool ok = json_is_string(ty) && known_type(json_string_value(ty));
    if (json_is_array(ty) && json_array_size(ty) > 0) {
        ok = true;
        for (size_t k = 0; k < json_array_size(ty); k++) {
            const json_t *e = json_array_get(ty, k);
            ok &= json_is_string(e) && known_type(json_string_value(e));
        }
    }
    if (!ok) {
        snprintf(why, cap,
                 "needs a \"type\" among integer, number, string, boolean, array, "
                 "object, null");
        return false;
    }
    const json_t *items = json_object_get(s, "items");
    if (items && !schema_types_valid(items, why, cap)) return false;
    return true;
}

/* ---- task files ---- */

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

static int64_t count_ids(const rf_condition *cond, const int64_t *ids, int32_t n) {
    int64_t c = 0;
    for (int32_t k = 0; k < n; k++) c += rf_condition_eval(cond, (double)ids[k]);
    return c;
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
        if (!schema_types_valid(val, why, sizeof why)) return terr(c, path, "%s", why);
        json_t *probe = NULL; /* a value of the intended type must pass */
        if (k == 0) probe = json_pack("[I]", (json_int_t)1);
        if (k == 1 || k == 3) probe = json_string(">=");
        if (k == 2) probe = json_integer(10); /* "number" or "integer" */
        if (!probe) return nomem(c);
        bool ok = type_ok(val, probe);
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
        if (v > MAX_ID_MAGNITUDE || v < -MAX_ID_MAGNITUDE)
            return terr(c, path, "magnitude above 2^53");
        t->ids[k] = (int64_t)v;
        if (!number_in_text(t->user, t->ids[k]))
            return terr(c, path, "%lld is not written in field 'user'", (long long)t->ids[k]);
    }

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
        if (rf_condition_parse(s, strlen(s), &t->filters[k], &perr))
            return terr(c, path, "%s", perr.msg);
        t->n_filters = (int32_t)k + 1;
        int64_t cnt = count_ids(&t->filters[k], t->ids, t->n_ids);
        char cnt_s[32], ftext[RF_FILTER_TEXT_MAX];
        snprintf(cnt_s, sizeof cnt_s, "%lld", (long long)cnt);
        if (!rf_numbers_equal(cnt_s, t->answer)) {
            rf_condition_format(&t->filters[k], ftext, sizeof ftext);
            return terr(c, "expected.answer", "%s is not the count of ids under %s (%s)", t->answer,
                        ftext, cnt_s);
        }
    }

    task_priv *p = calloc(1, sizeof *p);
    if (!p) return nomem(c);
    p->params = json_incref((json_t *)params);
    t->priv = p;
    return RF_OK;
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

/* ---- one call, analysed (shared by execution and grading) ---- */

typedef struct call_info {
    rf_call_verdict v; /* first structural problem in BFCL order; OK when none */
    char detail[192];
    json_t *args;  /* owned; NULL when not a JSON object */
    bool has_cond; /* cond holds the condition the call carries */
    rf_condition cond;
    char cond_err[160];
    char filter[RF_FILTER_TEXT_MAX]; /* display text */
} call_info;

static void set_v(call_info *ci, rf_call_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_v(call_info *ci, rf_call_verdict v, const char *fmt, ...) {
    if (ci->v != RF_CALL_OK) return;
    ci->v = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ci->detail, sizeof ci->detail, fmt, ap);
    va_end(ap);
}

/* Reads the condition from the arguments (best effort, for display even when the call is
 * otherwise wrong). */
static void read_condition(const rf_agent_task *t, call_info *ci) {
    copy_str(ci->filter, sizeof ci->filter, "?");
    if (!ci->args) {
        copy_str(ci->cond_err, sizeof ci->cond_err, "arguments are not a JSON object");
        return;
    }
    char pbuf[48];
    if (t->form == RF_TOOL_FORM_FILTER) {
        const json_t *f = json_object_get(ci->args, "filter");
        if (!json_is_string(f)) {
            copy_str(ci->cond_err, sizeof ci->cond_err,
                     f ? "'filter' is not a string" : "no 'filter'");
            return;
        }
        const char *s = json_string_value(f);
        size_t n = json_string_length(f);
        rf_error e;
        if (rf_condition_parse(s, n, &ci->cond, &e) == RF_OK) {
            ci->has_cond = true;
        } else {
            snprintf(ci->cond_err, sizeof ci->cond_err, "filter: %.140s", e.msg);
            rf_printable(s, n, ci->filter, sizeof ci->filter);
            return;
        }
    } else {
        const json_t *op = json_object_get(ci->args, "op");
        const json_t *th = json_object_get(ci->args, "threshold");
        const char *ops = json_is_string(op) ? json_string_value(op) : NULL;
        bool op_ok = ops && rf_cmp_op_parse(ops, json_string_length(op), &ci->cond.op);
        if (op_ok && json_is_number(th) && isfinite(json_number_value(th))) {
            ci->has_cond = true;
            ci->cond.threshold = json_number_value(th) == 0 ? 0.0 : json_number_value(th);
        } else {
            char thbuf[32] = "?";
            if (th) {
                char *d = rf_json_dumps(th, JSON_ENCODE_ANY | JSON_COMPACT);
                if (d) rf_printable(d, strlen(d), thbuf, sizeof thbuf);
                free(d);
            }
            snprintf(ci->filter, sizeof ci->filter, "id %s %s",
                     ops ? rf_printable(ops, strlen(ops), pbuf, 16) : "?", thbuf);
            if (!ops)
                copy_str(ci->cond_err, sizeof ci->cond_err,
                         op ? "'op' is not a string" : "no 'op'");
            else if (!op_ok)
                snprintf(ci->cond_err, sizeof ci->cond_err, "unknown operator '%s'",
                         rf_printable(ops, strlen(ops), pbuf, sizeof pbuf));
            else
                copy_str(ci->cond_err, sizeof ci->cond_err,
                         th ? "'threshold' is not a number" : "no 'threshold'");
            return;
        }
    }
    rf_condition_format(&ci->cond, ci->filter, sizeof ci->filter);
}

static void analyse_call(const rf_agent_task *t, const char *name, const char *args,
                         size_t args_len, call_info *ci) {
    memset(ci, 0, sizeof *ci);
    char pbuf[48];
    if (!name || strcmp(name, t->function) != 0)
        set_v(ci, RF_CALL_WRONG_FUNCTION, "called '%s', expected '%s'",
              name ? rf_printable(name, strlen(name), pbuf, sizeof pbuf) : "(none)", t->function);
    if (!args) {
        args = "";
        args_len = 0;
    }
    if (args_len > RF_AGENT_ARGS_MAX) {
        set_v(ci, RF_CALL_INVALID_JSON, "arguments longer than %u bytes", RF_AGENT_ARGS_MAX);
    } else {
        json_error_t je;
        ci->args = json_loadb(args, args_len, JSON_REJECT_DUPLICATES, &je);
        if (!ci->args) {
            set_v(ci, RF_CALL_INVALID_JSON, "arguments are not valid JSON: %s (column %d)", je.text,
                  je.column);
        } else if (!json_is_object(ci->args)) {
            set_v(ci, RF_CALL_INVALID_JSON, "arguments are a JSON %s, not an object",
                  rf_json_type_name(ci->args));
            json_decref(ci->args);
            ci->args = NULL;
        }
    }
    read_condition(t, ci);
    if (!ci->args) return;
    const task_priv *p = t->priv;
    const json_t *props = json_object_get(p->params, "properties");
    const json_t *req = json_object_get(p->params, "required");
    for (size_t k = 0; k < json_array_size(req); k++) {
        const char *r = json_string_value(json_array_get(req, k));
        if (!json_object_get(ci->args, r))
            set_v(ci, RF_CALL_MISSING_PARAM, "missing required parameter '%s'", r);
    }
    const char *key;
    json_t *val;
    json_object_foreach(ci->args, key, val) {
        if (!json_object_get(props, key))
            set_v(ci, RF_CALL_UNEXPECTED_PARAM, "unexpected parameter '%s'",
                  rf_printable(key, strlen(key), pbuf, sizeof pbuf));
    }
    json_object_foreach(ci->args, key, val) {
        const json_t *s = json_object_get(props, key);
        if (s && !type_ok(s, val)) {
            char td[64];
            type_desc(s, td, sizeof td);
            set_v(ci, RF_CALL_WRONG_TYPE, "parameter '%s' should be %s, got %s", key, td,
                  rf_json_type_name(val));
        }
    }
    if (!ci->has_cond) set_v(ci, RF_CALL_BAD_FILTER, "%s", ci->cond_err);
}

/* ---- execution ---- */

static void tool_content(rf_tool_result *out, json_t *obj) {
    size_t n = obj ? json_dumpb(obj, out->content, sizeof out->content - 1, 0) : 0;
    if (n == 0 || n >= sizeof out->content)
        copy_str(out->content, sizeof out->content, "{\"error\": \"internal error\"}");
    else
        out->content[n] = 0;
    json_decref(obj);
}

static void tool_error(rf_tool_result *out, const char *msg) {
    out->ok = false;
    tool_content(out, json_pack("{s:s}", "error", msg));
}

void rf_agent_execute(const rf_agent_task *t, const char *name, const char *args, size_t args_len,
                      rf_tool_result *out) {
    memset(out, 0, sizeof *out);
    char msg[256], pbuf[48];
    if (!name || strcmp(name, t->function) != 0) {
        snprintf(msg, sizeof msg, "unknown tool '%s' (available: %s)",
                 name ? rf_printable(name, strlen(name), pbuf, sizeof pbuf) : "", t->function);
        tool_error(out, msg);
        return;
    }
    call_info ci;
    analyse_call(t, name, args, args_len, &ci);
    if (ci.v != RF_CALL_OK) {
        tool_error(out, ci.detail);
        json_decref(ci.args);
        return;
    }
    const json_t *ids = json_object_get(ci.args, "ids");
    int64_t count = 0;
    if (ids) { /* type-checked: an array of integers (or numbers, if the schema says so) */
        for (size_t k = 0; k < json_array_size(ids); k++)
            count += rf_condition_eval(&ci.cond, json_number_value(json_array_get(ids, k)));
    } else { /* optional in the schema: the task's ids */
        count = count_ids(&ci.cond, t->ids, t->n_ids);
    }
    json_decref(ci.args);
    out->ok = true;
    out->count = count;
    out->cond = ci.cond;
    tool_content(out, json_pack("{s:I, s:s}", "count", (json_int_t)count, "filter", ci.filter));
}

/* ---- grading ---- */

const char *rf_call_verdict_name(rf_call_verdict v) {
    switch (v) {
    case RF_CALL_OK:
        return "ok";
    case RF_CALL_WRONG_FUNCTION:
        return "wrong_function";
    case RF_CALL_INVALID_JSON:
        return "invalid_json";
    case RF_CALL_MISSING_PARAM:
        return "missing_param";
    case RF_CALL_UNEXPECTED_PARAM:
        return "unexpected_param";
    case RF_CALL_WRONG_TYPE:
        return "wrong_type";
    case RF_CALL_BAD_FILTER:
        return "bad_filter";
    case RF_CALL_WRONG_FILTER:
        return "wrong_filter";
    case RF_CALL_WRONG_VALUE:
        return "wrong_value";
    }
    return "?";
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Are the call's ids the task's ids as a multiset? (false on allocation failure) */
static bool same_ids(const rf_agent_task *t, const json_t *ids) {
    size_t n = json_array_size(ids);
    if (n != (size_t)t->n_ids) return false;
    int64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    bool same = a && b;
    for (size_t k = 0; same && k < n; k++) {
        const json_t *e = json_array_get(ids, k);
        double d = json_number_value(e);
        if (json_is_integer(e))
            a[k] = (int64_t)json_integer_value(e);
        else if (d == floor(d) && fabs(d) <= (double)MAX_ID_MAGNITUDE)
            a[k] = (int64_t)d;
        else
            same = false;
        b[k] = t->ids[k];
    }
    if (same) {
        qsort(a, n, sizeof *a, cmp_i64);
        qsort(b, n, sizeof *b, cmp_i64);
        same = memcmp(a, b, n * sizeof *a) == 0;
    }
    free(a);
    free(b);
    return same;
}

void rf_agent_grade_call(const rf_agent_task *t, const char *name, const char *args,
                         size_t args_len, rf_call_grade *out) {
    memset(out, 0, sizeof *out);
    call_info ci;
    analyse_call(t, name, args, args_len, &ci);
    if (ci.v == RF_CALL_OK) {
        bool acceptable = false;
        for (int32_t k = 0; k < t->n_filters && !acceptable; k++)
            acceptable = rf_condition_equal(&ci.cond, &t->filters[k]);
        if (!acceptable) {
            char want[RF_FILTER_TEXT_MAX];
            rf_condition_format(&t->filters[0], want, sizeof want);
            set_v(&ci, RF_CALL_WRONG_FILTER, "filter %s, expected %s", ci.filter, want);
        }
        const json_t *ids = json_object_get(ci.args, "ids");
        if (ids && !same_ids(t, ids))
            set_v(&ci, RF_CALL_WRONG_VALUE, "'ids' are not the %d ids of the question",
                  (int)t->n_ids);
    }
    json_decref(ci.args);
    out->verdict = ci.v;
    out->has_filter = ci.has_cond;
    copy_str(out->filter, sizeof out->filter, ci.filter);
    copy_str(out->detail, sizeof out->detail, ci.detail);
}

void rf_agent_grade_run(const rf_agent_task *t, const rf_agent_call *calls, int32_t n_calls,
                        const char *final_text, size_t final_len, rf_agent_grade *out) {
    memset(out, 0, sizeof *out);
    if (!final_text) final_len = 0;
    char q[sizeof out->quoted];
    if (final_text && rf_quoted_number(final_text, final_len, q, sizeof q)) {
        out->quoted_found = true;
        copy_str(out->quoted, sizeof out->quoted, q);
        out->quoted_ok = strlen(q) < sizeof q - 1 && rf_numbers_equal(q, t->answer);
    }
    out->n_calls = n_calls > 0 ? n_calls : 0;
    char first_bad[192] = "";
    for (int32_t k = 0; k < out->n_calls; k++) {
        rf_call_grade g;
        rf_agent_grade_call(t, calls[k].name, calls[k].arguments, calls[k].arguments_len, &g);
        if (k < RF_AGENT_GRADED_CALLS) out->calls[k] = g;
        if (g.verdict == RF_CALL_OK)
            out->n_calls_ok++;
        else if (!first_bad[0])
            snprintf(first_bad, sizeof first_bad, "call %d: %s: %.150s", (int)k + 1,
                     rf_call_verdict_name(g.verdict), g.detail);
    }
    out->filters_ok = out->n_calls > 0 && out->n_calls_ok == out->n_calls;
    out->ok = out->quoted_ok && out->filters_ok;
    if (out->n_calls == 0)
        copy_str(out->reason, sizeof out->reason, "no tool call");
    else if (!out->filters_ok)
        copy_str(out->reason, sizeof out->reason, first_bad);
    else if (!out->quoted_found)
        copy_str(out->reason, sizeof out->reason, "no number in the final answer");
    else if (!out->quoted_ok)
        snprintf(out->reason, sizeof out->reason, "quoted %s, expected %s", out->quoted, t->answer);
}

/* ---- the output line ---- */

/* Python's repr of a str (for filters=[...]). */
static rf_status py_repr(rf_buf *b, const char *s) {
    char quote = (strchr(s, '\'') && !strchr(s, '"')) ? '"' : '\'';
    rf_status st = rf_buf_append(b, &quote, 1);
    for (; !st && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == (unsigned char)quote)
            st = rf_buf_printf(b, "\\%c", c);
        else if (c == '\n')
            st = rf_buf_append_str(b, "\\n");
        else if (c == '\r')
            st = rf_buf_append_str(b, "\\r");
        else if (c == '\t')
            st = rf_buf_append_str(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            st = rf_buf_printf(b, "\\x%02x", c);
        else
            st = rf_buf_append(b, &c, 1);
    }
    return st ? st : rf_buf_append(b, &quote, 1);
}

/* Seconds as Python prints round(x, 2): "0.4", "1.19", "2.0". */
static void fmt_seconds(double s, char *out, size_t cap) {
    if (!isfinite(s)) {
        snprintf(out, cap, "%s", isnan(s) ? "nan" : (s > 0 ? "inf" : "-inf"));
        return;
    }
    snprintf(out, cap, "%.2f", s);
    char *dot = strchr(out, '.');
    if (!dot) return;
    size_t n = strlen(out);
    while (n > (size_t)(dot - out) + 2 && out[n - 1] == '0') out[--n] = 0;
}

rf_status rf_agent_format_line(const rf_agent_line *l, int name_width, int status_width,
                               rf_buf *out) {
    int sw = status_width > 0 ? status_width : 4;
    const char *quoted = l->quoted && l->quoted[0] ? l->quoted : "None";
    rf_status st = rf_buf_printf(out, "%-*s  run %d/%d  %-*s quoted=%s  filters=[",
                                 name_width > 0 ? name_width : 0, l->name ? l->name : "",
                                 (int)l->run, (int)l->runs, sw, l->status ? l->status : "", quoted);
    for (int32_t k = 0; !st && k < l->n_filters; k++) {
        if (k) st = rf_buf_append_str(out, ", ");
        if (!st) st = py_repr(out, l->filters[k] ? l->filters[k] : "");
    }
    char secs[48];
    fmt_seconds(l->seconds, secs, sizeof secs);
    if (!st) st = rf_buf_printf(out, "]  %ss", secs);
    if (!st) st = rf_buf_terminate(out);
    return st;
}

rf_status rf_agent_format_run(const char *name, int32_t run, int32_t runs, const rf_agent_grade *g,
                              const char *error_class, double seconds, int name_width,
                              int status_width, rf_buf *out) {
    const char *filters[RF_AGENT_GRADED_CALLS];
    int32_t nf = g->n_calls < RF_AGENT_GRADED_CALLS ? g->n_calls : RF_AGENT_GRADED_CALLS;
    for (int32_t k = 0; k < nf; k++) filters[k] = g->calls[k].filter;
    rf_agent_line l = {
        .name = name,
        .run = run,
        .runs = runs,
        .status = error_class ? error_class : (g->ok ? "ok" : "FAIL"),
        .quoted = g->quoted_found ? g->quoted : NULL,
        .filters = filters,
        .n_filters = nf,
        .seconds = seconds,
    };
    return rf_agent_format_line(&l, name_width, status_width, out);
}
