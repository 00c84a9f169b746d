/* json_schema.c: JSON Schema (through jansson) -> the matcher's node graph. */
#include "engine/json_schema.h"
#include "util/json_dump.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 256

static bool grow(void **p, int32_t *cap, int32_t need, size_t elem) {
    if (need <= *cap) return true;
    int32_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

static int32_t new_node(rf_jschema *s, rf_jn_kind kind) {
    if (s->n_nodes >= RF_JS_MAX_NODES) return -1;
    if (!grow((void **)&s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof *s->nodes)) return -1;
    rf_jnode *n = &s->nodes[s->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->max = -1;
    n->item = -1;
    n->loop_from = -1;
    n->text = -1;
    return s->n_nodes++;
}

static int32_t add_lit(rf_jschema *s, const char *text, size_t len) {
    if (len > UINT32_MAX / 2) return -1;
    if (!grow((void **)&s->lits, &s->cap_lits, s->n_lits + 1, sizeof *s->lits)) return -1;
    char *c = malloc(len + 1);
    if (!c) return -1;
    memcpy(c, text, len);
    c[len] = 0;
    s->lits[s->n_lits] = (rf_jlit){c, (uint32_t)len};
    return s->n_lits++;
}

static int cmp_lit(const void *a, const void *b) {
    const rf_jlit *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* A LIT node over texts (copied, sorted, duplicates dropped). */
static int32_t lit_node(rf_jschema *s, const char *const *texts, const size_t *lens, int32_t n,
                        bool raw) {
    int32_t first = s->n_lits;
    for (int32_t i = 0; i < n; i++)
        if (add_lit(s, texts[i], lens[i]) < 0) return -1;
    qsort(s->lits + first, (size_t)n, sizeof *s->lits, cmp_lit);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        rf_jlit *l = &s->lits[first + i];
        if (k && !cmp_lit(&s->lits[first + k - 1], l)) {
            free(l->s);
            continue;
        }
        s->lits[first + k++] = *l;
    }
    s->n_lits = first + k;
    int32_t id = new_node(s, RF_JN_LIT);
    if (id < 0) return -1;
    s->nodes[id].first = first;
    s->nodes[id].count = k;
    s->nodes[id].raw = raw;
    return id;
}

static int32_t lit1(rf_jschema *s, const char *t, bool raw) {
    size_t len = strlen(t);
    return lit_node(s, &t, &len, 1, raw);
}

int32_t rf_jschema_add_raw(rf_jschema *s, const char *text) {
    return lit1(s, text, true);
}

int32_t rf_jschema_add_const_string(rf_jschema *s, const char *str) {
    json_t *j = json_string(str);
    char *t = j ? rf_json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(j);
    if (!t) return -1;
    int32_t id = lit1(s, t, false);
    free(t);
    return id;
}

int32_t rf_jschema_add_text(rf_jschema *s, const char *marker, bool nobrace) {
    int32_t m = -1;
    if (marker && *marker && (m = add_lit(s, marker, strlen(marker))) < 0) return -1;
    int32_t id = new_node(s, RF_JN_TEXT);
    if (id < 0) return -1;
    s->nodes[id].text = m;
    s->nodes[id].nobrace = nobrace;
    return id;
}

int32_t rf_jschema_add_ws(rf_jschema *s, int32_t max) {
    int32_t id = new_node(s, RF_JN_WS);
    if (id >= 0) s->nodes[id].max = max;
    return id;
}

int32_t rf_jschema_add_list(rf_jschema *s, rf_jn_kind kind, const int32_t *kids, int32_t n) {
    if (!grow((void **)&s->kids, &s->cap_kids, s->n_kids + n, sizeof *s->kids)) return -1;
    int32_t first = s->n_kids;
    memcpy(s->kids + first, kids, (size_t)n * sizeof *kids);
    s->n_kids += n;
    int32_t id = new_node(s, kind);
    if (id < 0) return -1;
    s->nodes[id].first = first;
    s->nodes[id].count = n;
    return id;
}

static int32_t add_prop(rf_jschema *s, const char *key, int32_t node, bool required) {
    json_t *j = json_string(key);
    char *t = j ? rf_json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(j);
    if (!t) return -1;
    int32_t k = add_lit(s, t, strlen(t));
    free(t);
    if (k < 0 || !grow((void **)&s->props, &s->cap_props, s->n_props + 1, sizeof *s->props))
        return -1;
    s->props[s->n_props] = (rf_jprop){k, node, required};
    return s->n_props++;
}

int32_t rf_jschema_add_object(rf_jschema *s, const char *const *keys, const int32_t *nodes,
                              int32_t n) {
    int32_t first = s->n_props;
    for (int32_t i = 0; i < n; i++)
        if (add_prop(s, keys[i], nodes[i], true) < 0) return -1;
    int32_t id = new_node(s, RF_JN_OBJECT);
    if (id < 0) return -1;
    s->nodes[id].first = first;
    s->nodes[id].count = n;
    return id;
}

rf_status rf_jschema_new(rf_jschema **out, rf_error *err) {
    *out = NULL;
    rf_jschema *s = calloc(1, sizeof *s);
    if (!s) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    /* any value: a union of the six kinds, objects and arrays of any values */
    int32_t any = new_node(s, RF_JN_UNION);
    int32_t obj = new_node(s, RF_JN_OBJECT);
    int32_t arr = new_node(s, RF_JN_ARRAY);
    int32_t str = new_node(s, RF_JN_STRING);
    int32_t num = new_node(s, RF_JN_NUMBER);
    const char *words[3] = {"true", "false", "null"};
    size_t lens[3] = {4, 5, 4};
    int32_t lits = lit_node(s, words, lens, 3, false);
    if (any < 0 || obj < 0 || arr < 0 || str < 0 || num < 0 || lits < 0) goto nomem;
    s->nodes[obj].item = any;
    s->nodes[arr].item = any;
    int32_t kids[5] = {obj, arr, str, num, lits};
    if (!grow((void **)&s->kids, &s->cap_kids, 5, sizeof *s->kids)) goto nomem;
    memcpy(s->kids, kids, sizeof kids);
    s->n_kids = 5;
    s->nodes[any].first = 0;
    s->nodes[any].count = 5;
    s->any = any;
    s->any_string = str;
    s->root = any;
    *out = s;
    return RF_OK;
nomem:
    rf_jschema_free(s);
    return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
}

void rf_jschema_free(rf_jschema *s) {
    if (!s) return;
    for (int32_t i = 0; i < s->n_lits; i++) free(s->lits[i].s);
    free(s->lits);
    free(s->nodes);
    free(s->kids);
    free(s->props);
    free(s);
}

/* ---- compiling ---- */

typedef struct cctx {
    rf_jschema *s;
    rf_error *err;
} cctx;

static rf_status nomem(cctx *c) {
    return rf_error_set(c->err, RF_ERR_NOMEM, "out of memory");
}

/* Keywords that constrain values in ways the matcher does not enforce. */
static const char *const UNSUPPORTED[] = {"$ref",
                                          "$dynamicRef",
                                          "pattern",
                                          "patternProperties",
                                          "allOf",
                                          "not",
                                          "if",
                                          "then",
                                          "else",
                                          "dependentRequired",
                                          "dependentSchemas",
                                          "dependencies",
                                          "propertyNames",
                                          "contains",
                                          "minContains",
                                          "maxContains",
                                          "prefixItems",
                                          "additionalItems",
                                          "uniqueItems",
                                          "multipleOf",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "minProperties",
                                          "maxProperties",
                                          "unevaluatedProperties",
                                          "unevaluatedItems",
                                          "contentSchema",
                                          NULL};

static rf_status compile(cctx *c, json_t *j, const char *path, int depth, int32_t *out);

static rf_status get_count(cctx *c, json_t *o, const char *key, const char *path, int32_t *v) {
    json_t *x = json_object_get(o, key);
    if (!x) return RF_OK;
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > 1000000)
        return rf_error_set(c->err, RF_ERR_ARG,
                            "%s.%s: must be a non-negative integer (at most 1000000)", path, key);
    *v = (int32_t)json_integer_value(x);
    return RF_OK;
}

static rf_status compile_object(cctx *c, json_t *j, const char *path, int depth, int32_t *out) {
    rf_jschema *s = c->s;
    json_t *props = json_object_get(j, "properties");
    json_t *req = json_object_get(j, "required");
    json_t *add = json_object_get(j, "additionalProperties");
    char sub[PATH_MAX_LEN];
    if (props && !json_is_object(props))
        return rf_error_set(c->err, RF_ERR_ARG, "%s.properties: not an object", path);
    if (req && !json_is_array(req))
        return rf_error_set(c->err, RF_ERR_ARG, "%s.required: not an array", path);
    if (add && !json_is_boolean(add) && !json_is_object(add))
        return rf_error_set(c->err, RF_ERR_ARG,
                            "%s.additionalProperties: not a boolean or a schema", path);
    size_t ri;
    json_t *rv;
    json_array_foreach(req, ri, rv) {
        if (!json_is_string(rv))
            return rf_error_set(c->err, RF_ERR_ARG, "%s.required[%zu]: not a string", path, ri);
        if (!json_object_get(props, json_string_value(rv)))
            return rf_error_set(c->err, RF_ERR_UNSUPPORTED,
                                "%s.required: '%.60s' is not among the properties", path,
                                json_string_value(rv));
    }
    size_t n = props ? json_object_size(props) : 0;
    if (n > 4096) return rf_error_set(c->err, RF_ERR_UNSUPPORTED, "%s: too many properties", path);
    int32_t *nodes = malloc((n ? n : 1) * sizeof *nodes);
    if (!nodes) return nomem(c);
    rf_status st = RF_OK;
    const char *key;
    json_t *v;
    size_t i = 0;
    json_object_foreach(props, key, v) {
        snprintf(sub, sizeof sub, "%s.properties.%.40s", path, key);
        st = compile(c, v, sub, depth + 1, &nodes[i++]);
        if (st) goto done;
    }
    int32_t item = -1;
    if (!n) { /* a map: any keys, values per additionalProperties (absent/true: any value) */
        if (json_is_object(add)) {
            snprintf(sub, sizeof sub, "%s.additionalProperties", path);
            st = compile(c, add, sub, depth + 1, &item);
            if (st) goto done;
        } else if (!json_is_false(add)) {
            item = s->any;
        }
    }
    int32_t first = s->n_props;
    i = 0;
    json_object_foreach(props, key, v) {
        bool required = false;
        json_array_foreach(req, ri, rv) required |= !strcmp(json_string_value(rv), key);
        if (add_prop(s, key, nodes[i++], required) < 0) {
            st = nomem(c);
            goto done;
        }
    }
    int32_t id = new_node(s, RF_JN_OBJECT);
    if (id < 0) {
        st = nomem(c);
        goto done;
    }
    s->nodes[id].first = first;
    s->nodes[id].count = (int32_t)n;
    s->nodes[id].item = item;
    *out = id;
done:
    free(nodes);
    return st;
}

static rf_status compile_type(cctx *c, json_t *j, const char *type, const char *path, int depth,
                              int32_t *out) {
    rf_jschema *s = c->s;
    char sub[PATH_MAX_LEN];
    int32_t id = -1;
    rf_status st;
    if (!strcmp(type, "object")) return compile_object(c, j, path, depth, out);
    if (!strcmp(type, "string")) {
        int32_t mn = 0, mx = -1;
        if ((st = get_count(c, j, "minLength", path, &mn))) return st;
        if ((st = get_count(c, j, "maxLength", path, &mx))) return st;
        if (mx >= 0 && mn > mx)
            return rf_error_set(c->err, RF_ERR_ARG, "%s: minLength is above maxLength", path);
        if ((id = new_node(s, RF_JN_STRING)) < 0) return nomem(c);
        s->nodes[id].min = mn;
        s->nodes[id].max = mx;
    } else if (!strcmp(type, "number") || !strcmp(type, "integer")) {
        id = new_node(s, type[0] == 'n' ? RF_JN_NUMBER : RF_JN_INTEGER);
        if (id < 0) return nomem(c);
    } else if (!strcmp(type, "boolean") || !strcmp(type, "null")) {
        const char *w[2] = {"true", "false"};
        size_t l[2] = {4, 5};
        if (type[0] == 'n') {
            w[0] = "null";
            l[0] = 4;
        }
        if ((id = lit_node(s, w, l, type[0] == 'n' ? 1 : 2, false)) < 0) return nomem(c);
    } else if (!strcmp(type, "array")) {
        json_t *items = json_object_get(j, "items");
        int32_t mn = 0, mx = -1, item = s->any;
        if (items && !json_is_object(items) && !json_is_boolean(items))
            return rf_error_set(c->err, RF_ERR_UNSUPPORTED,
                                "%s.items: only a single schema is supported", path);
        if (json_is_false(items)) mx = 0;
        if (json_is_object(items)) {
            snprintf(sub, sizeof sub, "%s.items", path);
            if ((st = compile(c, items, sub, depth + 1, &item))) return st;
        }
        if ((st = get_count(c, j, "minItems", path, &mn))) return st;
        int32_t mx2 = -1;
        if ((st = get_count(c, j, "maxItems", path, &mx2))) return st;
        if (mx2 >= 0 && (mx < 0 || mx2 < mx)) mx = mx2;
        if (mx >= 0 && mn > mx)
            return rf_error_set(c->err, RF_ERR_ARG, "%s: minItems is above maxItems", path);
        if ((id = new_node(s, RF_JN_ARRAY)) < 0) return nomem(c);
        s->nodes[id].min = mn;
        s->nodes[id].max = mx;
        s->nodes[id].item = item;
    } else {
        return rf_error_set(c->err, RF_ERR_ARG, "%s.type: unknown type '%.40s'", path, type);
    }
    *out = id;
    return RF_OK;
}

static rf_status compile_enum(cctx *c, json_t *vals, const char *path, int32_t *out) {
    size_t n = json_array_size(vals);
    if (!n) return rf_error_set(c->err, RF_ERR_ARG, "%s: an empty enum matches nothing", path);
    if (n > 10000) return rf_error_set(c->err, RF_ERR_UNSUPPORTED, "%s: enum too long", path);
    char **texts = calloc(n, sizeof *texts);
    size_t *lens = calloc(n, sizeof *lens);
    rf_status st = RF_OK;
    if (!texts || !lens) {
        st = nomem(c);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        texts[i] = rf_json_dumps(json_array_get(vals, i),
                                 JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!texts[i]) {
            st = nomem(c);
            goto done;
        }
        lens[i] = strlen(texts[i]);
    }
    *out = lit_node(c->s, (const char *const *)texts, lens, (int32_t)n, false);
    if (*out < 0) st = nomem(c);
done:
    for (size_t i = 0; texts && i < n; i++) free(texts[i]);
    free(texts);
    free(lens);
    return st;
}

static rf_status compile(cctx *c, json_t *j, const char *path, int depth, int32_t *out) {
    rf_jschema *s = c->s;
    char sub[PATH_MAX_LEN];
    rf_status st;
    if (depth > RF_JS_MAX_DEPTH)
        return rf_error_set(c->err, RF_ERR_UNSUPPORTED,
                            "%s: the schema nests deeper than %d levels", path, RF_JS_MAX_DEPTH);
    if (json_is_true(j)) {
        *out = s->any;
        return RF_OK;
    }
    if (json_is_false(j))
        return rf_error_set(c->err, RF_ERR_UNSUPPORTED, "%s: the schema false matches nothing",
                            path);
    if (!json_is_object(j))
        return rf_error_set(c->err, RF_ERR_ARG, "%s: a schema must be an object or a boolean",
                            path);
    for (int i = 0; UNSUPPORTED[i]; i++)
        if (json_object_get(j, UNSUPPORTED[i]))
            return rf_error_set(c->err, RF_ERR_UNSUPPORTED,
                                "%s.%s: keyword not supported by the constraint engine", path,
                                UNSUPPORTED[i]);
    json_t *cnst = json_object_get(j, "const");
    json_t *en = json_object_get(j, "enum");
    if (cnst) {
        json_t *arr = json_pack("[O]", cnst);
        if (!arr) return nomem(c);
        snprintf(sub, sizeof sub, "%s.const", path);
        st = compile_enum(c, arr, sub, out);
        json_decref(arr);
        return st;
    }
    if (en) {
        snprintf(sub, sizeof sub, "%s.enum", path);
        if (!json_is_array(en)) return rf_error_set(c->err, RF_ERR_ARG, "%s: not an array", sub);
        return compile_enum(c, en, sub, out);
    }
    json_t *alts = json_object_get(j, "anyOf");
    const char *alt_kw = "anyOf";
    if (!alts) {
        alts = json_object_get(j, "oneOf");
        alt_kw = "oneOf";
    }
    json_t *type = json_object_get(j, "type");
    if (alts) {
        if (!json_is_array(alts) || !json_array_size(alts))
            return rf_error_set(c->err, RF_ERR_ARG, "%s.%s: not a non-empty array", path, alt_kw);
        if (type || json_object_get(j, "properties") || json_object_get(j, "items"))
            return rf_error_set(c->err, RF_ERR_UNSUPPORTED,
                                "%s.%s: beside type, properties or items (not supported)", path,
                                alt_kw);
        size_t n = json_array_size(alts);
        if (n > 1000) return rf_error_set(c->err, RF_ERR_UNSUPPORTED, "%s: too many", path);
        int32_t *k = malloc(n * sizeof *k);
        if (!k) return nomem(c);
        for (size_t i = 0; i < n; i++) {
            snprintf(sub, sizeof sub, "%s.%s[%zu]", path, alt_kw, i);
            st = compile(c, json_array_get(alts, i), sub, depth + 1, &k[i]);
            if (st) {
                free(k);
                return st;
            }
        }
        *out = rf_jschema_add_list(s, RF_JN_UNION, k, (int32_t)n);
        free(k);
        return *out < 0 ? nomem(c) : RF_OK;
    }
    if (json_is_string(type)) return compile_type(c, j, json_string_value(type), path, depth, out);
    if (json_is_array(type)) {
        size_t n = json_array_size(type);
        if (!n || n > 7)
            return rf_error_set(c->err, RF_ERR_ARG, "%s.type: 1 to 7 type names", path);
        int32_t k[7];
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_array_get(type, i);
            if (!json_is_string(t))
                return rf_error_set(c->err, RF_ERR_ARG, "%s.type[%zu]: not a string", path, i);
            if ((st = compile_type(c, j, json_string_value(t), path, depth, &k[i]))) return st;
        }
        if (n == 1) {
            *out = k[0];
            return RF_OK;
        }
        *out = rf_jschema_add_list(s, RF_JN_UNION, k, (int32_t)n);
        return *out < 0 ? nomem(c) : RF_OK;
    }
    if (type) return rf_error_set(c->err, RF_ERR_ARG, "%s.type: not a string or array", path);
    if (json_object_get(j, "properties") || json_object_get(j, "additionalProperties") ||
        json_object_get(j, "required"))
        return compile_object(c, j, path, depth, out);
    if (json_object_get(j, "items")) return compile_type(c, j, "array", path, depth, out);
    *out = s->any; /* {} and annotation-only schemas: any value */
    return RF_OK;
}

rf_status rf_jschema_compile_json(rf_jschema *s, const void *json, const char *path, int32_t *node,
                                  rf_error *err) {
    cctx c = {s, err};
    return compile(&c, (json_t *)json, path, 0, node);
}

rf_status rf_jschema_compile_text(rf_jschema *s, const char *text, const char *path, int32_t *node,
                                  rf_error *err) {
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        return rf_error_set(err, RF_ERR_ARG, "%s: not valid JSON (%s at line %d)", path, je.text,
                            je.line);
    rf_status st = rf_jschema_compile_json(s, j, path, node, err);
    json_decref(j);
    return st;
}
