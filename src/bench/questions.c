/* questions.c: JSONL question files (schema and ownership in questions.h). */
#include "bench/questions.h"
#include "util/file.h"
#include "util/json_read.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/graders.h"
#include "util/buf.h"

#define FILE_MAX ((size_t)256 << 20)

const char *rf_grader_kind_name(rf_grader_kind k) {
    switch (k) {
    case RF_GRADER_NUMBER:
        return "number";
    case RF_GRADER_EXACT:
        return "exact";
    case RF_GRADER_WORD:
        return "word";
    }
    return "?";
}

bool rf_grader_kind_parse(const char *s, rf_grader_kind *out) {
    static const rf_grader_kind all[] = {RF_GRADER_NUMBER, RF_GRADER_EXACT, RF_GRADER_WORD};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        if (strcmp(s, rf_grader_kind_name(all[k])) == 0) {
            *out = all[k];
            return true;
        }
    }
    return false;
}

static void free_question(rf_question *q) {
    free(q->id);
    free(q->category);
    free(q->prompt);
    free(q->answer);
    for (int32_t k = 0; k < q->n_aliases; k++) free(q->aliases[k]);
    free(q->aliases);
    memset(q, 0, sizeof *q);
}

void rf_questions_free(rf_question *qs, int32_t n) {
    if (!qs) return;
    for (int32_t i = 0; i < n; i++) free_question(&qs[i]);
    free(qs);
}

int32_t rf_questions_count_category(const rf_question *qs, int32_t n, const char *cat) {
    int32_t c = 0;
    for (int32_t i = 0; i < n; i++)
        if (strcmp(qs[i].category, cat) == 0) c++;
    return c;
}

/* ---- one line ---- */

typedef struct line_ctx {
    const char *name;
    int line;
    rf_error *err;
} line_ctx;

#define FIELD_ERR(ctx, code, field, ...) field_error((ctx), (code), (field), __VA_ARGS__)

static rf_status field_error(const line_ctx *c, rf_status code, const char *field, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));

/* The member reader for this line: messages start "name:line: ". */
static rf_jr line_jr(const line_ctx *c, char *where, size_t cap) {
    snprintf(where, cap, "%s:%d", c->name, c->line);
    return rf_jr_make(where, RF_ERR_FORMAT, c->err);
}

static rf_status field_error(const line_ctx *c, rf_status code, const char *field, const char *fmt,
                             ...) {
    char what[256], where[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rf_jr j = line_jr(c, where, sizeof where);
    j.code = code;
    return rf_jr_fail(&j, RF_JR_OTHER, field, "%s", what);
}

static bool blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
    return true;
}

/* Required non-empty string field; *out is a malloc'd copy. */
static rf_status get_string(const line_ctx *c, json_t *obj, const char *key, char **out) {
    char where[300];
    rf_jr j = line_jr(c, where, sizeof where);
    const char *s = NULL;
    rf_status st = rf_jr_str(&j, obj, NULL, key, RF_JR_REQUIRED | RF_JR_NONEMPTY, &s);
    if (st) return st;
    *out = strdup(s);
    if (!*out) return rf_error_set(c->err, RF_ERR_NOMEM, "%s: out of memory", c->name);
    return RF_OK;
}

static bool id_char(unsigned char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           ch == '.' || ch == '_' || ch == ':' || ch == '-';
}

static rf_status parse_question(const line_ctx *c, const char *text, size_t len, rf_question *q) {
    char pbuf[64];
    memset(q, 0, sizeof *q);
    q->line = c->line;
    if (memchr(text, 0, len))
        return rf_error_set(c->err, RF_ERR_FORMAT, "%s:%d: invalid JSON: NUL byte in the line",
                            c->name, c->line);
    json_error_t je;
    json_t *obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!obj)
        return rf_error_set(c->err, RF_ERR_FORMAT, "%s:%d: invalid JSON at column %d: %s", c->name,
                            c->line, je.column, je.text);
    rf_status st = RF_OK;
    if (!json_is_object(obj)) {
        st = rf_error_set(c->err, RF_ERR_FORMAT, "%s:%d: expected a JSON object", c->name, c->line);
        goto done;
    }
    static const char *const known[] = {"id",     "category", "prompt", "answer",
                                        "grader", "aliases",  NULL};
    char where[300];
    rf_jr j = line_jr(c, where, sizeof where);
    if ((st = rf_jr_keys(&j, obj, NULL, known))) goto done;
    if ((st = get_string(c, obj, "id", &q->id))) goto done;
    size_t idn = strlen(q->id);
    if (idn > RF_QUESTION_ID_MAX) {
        st = FIELD_ERR(c, RF_ERR_FORMAT, "id", "longer than %d bytes", RF_QUESTION_ID_MAX);
        goto done;
    }
    for (size_t k = 0; k < idn; k++) {
        if (!id_char((unsigned char)q->id[k])) {
            st = FIELD_ERR(c, RF_ERR_FORMAT, "id", "\"%s\" has a character outside [A-Za-z0-9._:-]",
                           rf_printable(q->id, strlen(q->id), pbuf, sizeof pbuf));
            goto done;
        }
    }
    if ((st = get_string(c, obj, "category", &q->category))) goto done;
    if ((st = get_string(c, obj, "prompt", &q->prompt))) goto done;
    if ((st = get_string(c, obj, "answer", &q->answer))) goto done;
    json_t *g = json_object_get(obj, "grader");
    if (!g) {
        st = FIELD_ERR(c, RF_ERR_FORMAT, "grader", "missing");
        goto done;
    }
    if (!json_is_string(g) || !rf_grader_kind_parse(json_string_value(g), &q->grader)) {
        st = FIELD_ERR(
            c, RF_ERR_FORMAT, "grader", "unknown grader \"%s\" (expected number, exact or word)",
            json_is_string(g) ? rf_printable(json_string_value(g), strlen(json_string_value(g)),
                                             pbuf, sizeof pbuf)
                              : "(not a string)");
        goto done;
    }
    if (q->grader == RF_GRADER_NUMBER) {
        char canon[8];
        if (!rf_number_canonical(q->answer, strlen(q->answer), canon, sizeof canon)) {
            st = FIELD_ERR(c, RF_ERR_FORMAT, "answer", "\"%s\" is not a number (grader \"number\")",
                           rf_printable(q->answer, strlen(q->answer), pbuf, sizeof pbuf));
            goto done;
        }
    }
    json_t *al = json_object_get(obj, "aliases");
    if (al) {
        if (q->grader != RF_GRADER_WORD) {
            st = FIELD_ERR(c, RF_ERR_FORMAT, "aliases", "only allowed with grader \"word\"");
            goto done;
        }
        if (!json_is_array(al)) {
            st = FIELD_ERR(c, RF_ERR_FORMAT, "aliases", "must be an array of strings");
            goto done;
        }
        size_t na = json_array_size(al);
        if (na > RF_QUESTIONS_MAX_ALIASES) {
            st = FIELD_ERR(c, RF_ERR_FORMAT, "aliases", "more than %d aliases",
                           RF_QUESTIONS_MAX_ALIASES);
            goto done;
        }
        if (na) {
            q->aliases = calloc(na, sizeof *q->aliases);
            if (!q->aliases) {
                st = rf_error_set(c->err, RF_ERR_NOMEM, "%s: out of memory", c->name);
                goto done;
            }
        }
        for (size_t k = 0; k < na; k++) {
            json_t *e = json_array_get(al, k);
            char fname[32];
            snprintf(fname, sizeof fname, "aliases[%zu]", k);
            if (!json_is_string(e) || blank(json_string_value(e))) {
                st = FIELD_ERR(c, RF_ERR_FORMAT, fname, "must be a non-empty string");
                goto done;
            }
            q->aliases[k] = strdup(json_string_value(e));
            if (!q->aliases[k]) {
                st = rf_error_set(c->err, RF_ERR_NOMEM, "%s: out of memory", c->name);
                goto done;
            }
            q->n_aliases = (int32_t)k + 1;
        }
    }
done:
    json_decref(obj);
    if (st) free_question(q);
    return st;
}

/* ---- duplicate ids: open addressing over question indices ---- */

typedef struct id_set {
    int32_t *slot; /* -1 empty, else index into qs */
    size_t cap;    /* power of two */
    size_t n;
} id_set;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Returns the index already holding id, -1 after inserting idx, -2 when out of memory. */
static int32_t id_set_insert(id_set *set, const rf_question *qs, int32_t idx) {
    if ((set->n + 1) * 2 > set->cap) {
        size_t ncap = set->cap ? set->cap * 2 : 64;
        int32_t *ns = malloc(ncap * sizeof *ns);
        if (!ns) return -2;
        for (size_t k = 0; k < ncap; k++) ns[k] = -1;
        for (size_t k = 0; k < set->cap; k++) {
            if (set->slot[k] < 0) continue;
            size_t h = hash_str(qs[set->slot[k]].id) & (ncap - 1);
            while (ns[h] >= 0) h = (h + 1) & (ncap - 1);
            ns[h] = set->slot[k];
        }
        free(set->slot);
        set->slot = ns;
        set->cap = ncap;
    }
    size_t h = hash_str(qs[idx].id) & (set->cap - 1);
    while (set->slot[h] >= 0) {
        if (strcmp(qs[set->slot[h]].id, qs[idx].id) == 0) return set->slot[h];
        h = (h + 1) & (set->cap - 1);
    }
    set->slot[h] = idx;
    set->n++;
    return -1;
}

rf_status rf_questions_parse(const char *name, const char *text, size_t len,
                             const rf_questions_limits *lim, rf_question **out, int32_t *n_out,
                             rf_error *err) {
    *out = NULL;
    *n_out = 0;
    size_t max_line = lim && lim->max_line ? lim->max_line : RF_QUESTIONS_MAX_LINE_DEFAULT;
    int32_t max_count = lim && lim->max_count > 0 ? lim->max_count : RF_QUESTIONS_MAX_COUNT_DEFAULT;
    rf_question *qs = NULL;
    int32_t n = 0, cap = 0;
    id_set ids = {0};
    rf_status st = RF_OK;
    int line = 0;
    size_t pos = 0;
    while (pos < len) {
        line++;
        const char *ls = text + pos;
        const char *nl = memchr(ls, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - ls) : len - pos;
        pos += ll + (nl ? 1 : 0);
        if (ll && ls[ll - 1] == '\r') ll--;
        if (ll > max_line) {
            st = rf_error_set(err, RF_ERR_FORMAT, "%s:%d: line longer than %zu bytes", name, line,
                              max_line);
            goto fail;
        }
        bool empty = true;
        for (size_t k = 0; k < ll && empty; k++)
            empty = ls[k] == ' ' || ls[k] == '\t' || ls[k] == '\r';
        if (empty) continue;
        if (n >= max_count) {
            st = rf_error_set(err, RF_ERR_FORMAT, "%s:%d: more than %d questions", name, line,
                              (int)max_count);
            goto fail;
        }
        if (n == cap) {
            int32_t ncap = cap ? (cap > max_count / 2 ? max_count : cap * 2) : 64;
            if (ncap <= cap) ncap = cap + 1;
            rf_question *nq = realloc(qs, (size_t)ncap * sizeof *nq);
            if (!nq) {
                st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", name);
                goto fail;
            }
            qs = nq;
            cap = ncap;
        }
        line_ctx c = {name, line, err};
        if ((st = parse_question(&c, ls, ll, &qs[n]))) goto fail;
        n++;
        int32_t prev = id_set_insert(&ids, qs, n - 1);
        if (prev == -2) {
            st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", name);
            goto fail;
        }
        if (prev >= 0) {
            char pbuf[80];
            st = FIELD_ERR(&c, RF_ERR_FORMAT, "id", "duplicate id \"%s\" (first on line %d)",
                           rf_printable(qs[n - 1].id, strlen(qs[n - 1].id), pbuf, sizeof pbuf),
                           (int)qs[prev].line);
            goto fail;
        }
    }
    free(ids.slot);
    if (n == 0) {
        free(qs);
        return rf_error_set(err, RF_ERR_FORMAT, "%s: no questions", name);
    }
    *out = qs;
    *n_out = n;
    return RF_OK;
fail:
    free(ids.slot);
    rf_questions_free(qs, n);
    return st;
}

rf_status rf_questions_load(const char *path, const rf_questions_limits *lim, rf_question **out,
                            int32_t *n_out, rf_error *err) {
    *out = NULL;
    *n_out = 0;
    char *text = NULL;
    size_t len = 0;
    rf_status st = rf_read_file(path, FILE_MAX, &text, &len, err);
    if (!st) st = rf_questions_parse(path, text, len, lim, out, n_out, err);
    free(text);
    return st;
}
