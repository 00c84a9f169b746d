/* json_read.c: see json_read.h. */
#include "util/json_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/file.h"
#include "util/json_kind.h"

rf_jr rf_jr_make(const char *where, rf_status code, rf_error *err) {
    rf_jr c;
    memset(&c, 0, sizeof c);
    c.where = where;
    c.code = code;
    c.err = err;
    return c;
}

char *rf_jr_path(char *out, size_t cap, const char *parent, const char *key) {
    if (parent && *parent)
        snprintf(out, cap, "%s.%s", parent, key);
    else
        snprintf(out, cap, "%s", key);
    return out;
}

char *rf_jr_index(char *out, size_t cap, const char *parent, size_t i) {
    snprintf(out, cap, "%s[%zu]", parent ? parent : "", i);
    return out;
}

rf_status rf_jr_fail(rf_jr *c, rf_jr_why why, const char *path, const char *fmt, ...) {
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    c->why = why;
    snprintf(c->path, sizeof c->path, "%s", path ? path : "");
    const char *w = c->where ? c->where : "", *sep = c->where ? ": " : "";
    if (c->style == RF_JR_STYLE_PATH)
        return rf_error_set(c->err, c->code, "%s%s%s: %s", w, sep, c->path, what);
    return rf_error_set(c->err, c->code, "%s%sfield '%s': %s", w, sep, c->path, what);
}

bool rf_jr_has(const json_t *obj, const char *key) {
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return v && !json_is_null(v);
}

static rf_status wrong_type(rf_jr *c, const char *path, const json_t *v, const char *want) {
    return rf_jr_fail(c, RF_JR_TYPE, path, "%s %s, not %s",
                      c->style == RF_JR_STYLE_PATH ? "expected" : "must be", want,
                      v ? rf_json_kind(v) : "missing");
}

/* The JSON types an accessor takes. */
typedef enum want { W_STR, W_INT, W_NUM, W_BOOL, W_ARRAY, W_OBJECT } want;

static bool is_a(const json_t *v, want w) {
    switch (w) {
    case W_STR:
        return json_is_string(v);
    case W_INT:
        return json_is_integer(v);
    case W_NUM:
        return json_is_number(v);
    case W_BOOL:
        return json_is_boolean(v);
    case W_ARRAY:
        return json_is_array(v);
    case W_OBJECT:
        break;
    }
    return json_is_object(v);
}

static const char *const k_want_name[] = {"a string",  "an integer", "a number",
                                          "a boolean", "an array",   "an object"};

/* The member parent.key of obj of type w into *v (path: its path, >= 160 bytes). RF_OK with
 * *v NULL when it is absent (or null with RF_JR_NULLABLE) and not required. */
static rf_status typed(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                       unsigned flags, want w, char *path, json_t **v) {
    rf_jr_path(path, 160, parent, key);
    *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    if (*v && json_is_null(*v) && (flags & RF_JR_NULLABLE)) *v = NULL;
    if (!*v)
        return (flags & RF_JR_REQUIRED) ? rf_jr_fail(c, RF_JR_MISSING, path, "missing") : RF_OK;
    if (!is_a(*v, w)) return wrong_type(c, path, *v, k_want_name[w]);
    return RF_OK;
}

static bool blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
    return true;
}

rf_status rf_jr_str(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, const char **out) {
    char path[160];
    json_t *v;
    rf_status st = typed(c, obj, parent, key, flags, W_STR, path, &v);
    if (st || !v) return st;
    if ((flags & RF_JR_NONEMPTY) && blank(json_string_value(v)))
        return rf_jr_fail(c, RF_JR_EMPTY, path, "empty");
    *out = json_string_value(v);
    return RF_OK;
}

rf_status rf_jr_int(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, json_int_t lo, json_int_t hi, json_int_t *out) {
    char path[160];
    json_t *v;
    rf_status st = typed(c, obj, parent, key, flags, W_INT, path, &v);
    if (st || !v) return st;
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return rf_jr_fail(c, RF_JR_RANGE, path, "%lld is outside [%lld, %lld]", (long long)x,
                          (long long)lo, (long long)hi);
    *out = x;
    return RF_OK;
}

rf_status rf_jr_i32(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, int32_t lo, int32_t hi, int32_t *out) {
    json_int_t x = *out; /* kept when absent */
    rf_status st = rf_jr_int(c, obj, parent, key, flags, lo, hi, &x);
    if (!st) *out = (int32_t)x;
    return st;
}

rf_status rf_jr_num(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, double lo, double hi, double *out) {
    char path[160];
    json_t *v;
    rf_status st = typed(c, obj, parent, key, flags, W_NUM, path, &v);
    if (st || !v) return st;
    double x = json_number_value(v);
    bool lo_bad = (flags & RF_JR_LO_OPEN) ? !(x > lo) : !(x >= lo);
    bool hi_bad = (flags & RF_JR_HI_OPEN) ? !(x < hi) : !(x <= hi);
    if (!isfinite(x) || lo_bad || hi_bad)
        return rf_jr_fail(c, RF_JR_RANGE, path, "%g is outside %c%g, %g%c", x,
                          (flags & RF_JR_LO_OPEN) ? '(' : '[', lo, hi,
                          (flags & RF_JR_HI_OPEN) ? ')' : ']');
    *out = x;
    return RF_OK;
}

rf_status rf_jr_bool(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                     unsigned flags, bool *out) {
    char path[160];
    json_t *v;
    rf_status st = typed(c, obj, parent, key, flags, W_BOOL, path, &v);
    if (!st && v) *out = json_is_true(v);
    return st;
}

/* An array or an object member (w picks which). */
static rf_status container(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                           unsigned flags, want w, json_t **out) {
    char path[160];
    json_t *v;
    rf_status st = typed(c, obj, parent, key, flags, w, path, &v);
    if (st || !v) return st;
    if ((flags & RF_JR_NONEMPTY) && (w == W_ARRAY ? json_array_size(v) : json_object_size(v)) == 0)
        return rf_jr_fail(c, RF_JR_EMPTY, path, "empty");
    *out = v;
    return RF_OK;
}

rf_status rf_jr_array(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                      unsigned flags, json_t **out) {
    return container(c, obj, parent, key, flags, W_ARRAY, out);
}

rf_status rf_jr_object(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                       unsigned flags, json_t **out) {
    return container(c, obj, parent, key, flags, W_OBJECT, out);
}

rf_status rf_jr_keys(rf_jr *c, const json_t *obj, const char *path, const char *const *known) {
    if (!json_is_object(obj)) return wrong_type(c, path, obj, "an object");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        bool ok = false;
        for (size_t k = 0; known[k] && !ok; k++) ok = strcmp(key, known[k]) == 0;
        if (ok) continue;
        char pbuf[48], full[160], list[200];
        rf_jr_path(full, sizeof full, path, rf_printable(key, strlen(key), pbuf, sizeof pbuf));
        size_t n = 0;
        list[0] = 0;
        for (size_t k = 0; known[k] && n < sizeof list; k++) {
            int w = snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "", known[k]);
            if (w < 0) break;
            n += (size_t)w;
        }
        return rf_jr_fail(c, RF_JR_UNKNOWN, full, "unknown field (expected %s)", list);
    }
    return RF_OK;
}
