/* tool_stream.c: see tool_stream.h.
 *
 * States: TEXT (content; watching for the open marker, holding back a suffix that may be its
 * beginning), HEAD (a call's text up to its name and the arguments key, held until it is
 * complete), ARGS (the arguments value, passed through as fragments while its nesting is
 * tracked), TAIL (after the value: up to the close marker, dropped), PLAIN (a reply that is
 * neither: all content), HELD (a call of another shape: everything held to the end).
 */
#include "server/tool_stream.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

enum { TEXT = 0, HEAD, ARGS, TAIL, PLAIN, HELD };

rf_status rf_tsplit_init(rf_tsplit *t, const char *open, const char *close, const char *tools_json,
                         rf_tsplit_fn fn, void *user, rf_error *err) {
    memset(t, 0, sizeof *t);
    rf_buf_init(&t->hold, 0);
    t->fn = fn;
    t->user = user;
    t->at_start = true;
    json_t *tools = tools_json ? json_loads(tools_json, 0, NULL) : NULL;
    size_t n = json_is_array(tools) ? json_array_size(tools) : 0;
    t->names = calloc(n + 1, sizeof *t->names);
    if (!t->names) goto oom;
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(
            json_object_get(json_object_get(json_array_get(tools, i), "function"), "name"));
        if (!name) continue;
        if (!(t->names[t->n_names] = strdup(name))) goto oom;
        t->n_names++;
    }
    if (open && !(t->open = strdup(open))) goto oom;
    if (close && !(t->close = strdup(close))) goto oom;
    json_decref(tools);
    return RF_OK;
oom:
    json_decref(tools);
    rf_tsplit_free(t);
    return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
}

void rf_tsplit_free(rf_tsplit *t) {
    for (size_t i = 0; t->names && i < t->n_names; i++) free(t->names[i]);
    free(t->names);
    free(t->open);
    free(t->close);
    rf_buf_free(&t->hold);
    memset(t, 0, sizeof *t);
}

static bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void emit(rf_tsplit *t, rf_tsplit_kind k, const char *s, size_t n) {
    if (n || k == RF_TSPLIT_CALL)
        t->fn(t->user, k, k == RF_TSPLIT_CONTENT ? -1 : t->n_calls - 1, s, n);
}

/* How a call's head s[0..n) reads: -1 not a call of the streamed shape, 0 incomplete so far,
 * else the bytes up to and including the ':' after the arguments key, with the name in
 * name[0..*name_len). Shape: ws '{' ws "name" ws ':' ws "N" ws ',' ws ("arguments" |
 * "parameters") ws ':'. */
static int head_len(const rf_tsplit *t, const char *s, size_t n, const char **name,
                    size_t *name_len) {
    size_t i = 0;
#define WS()                                                                                       \
    while (i < n && is_ws(s[i])) i++;                                                              \
    if (i == n) return 0
#define LIT(str)                                                                                   \
    do {                                                                                           \
        const char *l_ = (str);                                                                    \
        for (; *l_; l_++, i++) {                                                                   \
            if (i == n) return 0;                                                                  \
            if (s[i] != *l_) return -1;                                                            \
        }                                                                                          \
    } while (0)
    WS();
    LIT("{");
    WS();
    LIT("\"name\"");
    WS();
    LIT(":");
    WS();
    LIT("\"");
    size_t a = i;
    while (i < n && s[i] != '"') {
        if (s[i] == '\\' || (unsigned char)s[i] < 0x20 || i - a > 64) return -1;
        i++;
    }
    if (i == n) return 0;
    *name = s + a;
    *name_len = i - a;
    bool known = false;
    for (size_t k = 0; k < t->n_names && !known; k++)
        known = strlen(t->names[k]) == *name_len && !memcmp(t->names[k], *name, *name_len);
    if (!known) return -1;
    i++;
    WS();
    LIT(",");
    WS();
    if (i == n) return 0;
    if (s[i] != '"') return -1;
    if (i + 1 == n) return 0;
    LIT(s[i + 1] == 'a' ? "\"arguments\"" : "\"parameters\"");
    WS();
    LIT(":");
    WS();
    if (s[i] != '{') return -1; /* arguments that are not an object are not streamed */
#undef WS
#undef LIT
    return (int)i;
}

/* Passes the arguments object's bytes through while tracking where it ends; returns the bytes
 * that belong to it (all of n unless it ends inside). */
static size_t args_scan(rf_tsplit *t, const char *s, size_t n, bool *ended) {
    *ended = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (t->in_str) {
            if (t->esc)
                t->esc = false;
            else if (c == '\\')
                t->esc = true;
            else if (c == '"')
                t->in_str = false;
        } else if (c == '"') {
            t->in_str = true;
        } else if (c == '{' || c == '[') {
            t->depth++;
        } else if ((c == '}' || c == ']') && --t->depth == 0) {
            *ended = true;
            return i + 1;
        }
    }
    return n;
}

/* Length of the longest suffix of s[0..n) that is a proper prefix of m. */
static size_t partial_suffix(const char *s, size_t n, const char *m) {
    size_t lm = strlen(m);
    for (size_t k = lm - 1 < n ? lm - 1 : n; k > 0; k--)
        if (!memcmp(s + n - k, m, k)) return k;
    return 0;
}

static rf_status hold(rf_tsplit *t, const char *s, size_t n) {
    return rf_buf_append(&t->hold, s, n);
}

/* Takes the held text out as a new piece to process. */
static char *take_hold(rf_tsplit *t, size_t *n) {
    *n = t->hold.len;
    char *p = (char *)rf_buf_take(&t->hold, NULL);
    rf_buf_init(&t->hold, 0);
    return p;
}

static rf_status step(rf_tsplit *t, const char *s, size_t n);

/* A Markdown fence opening a reply, "```" or "```json", then white space, then '{' at *at:
 * 1 (and *at set to the '{'), 0 when s[*at..n) may still become one, -1 when it is not one. */
static int fence_len(const char *s, size_t n, size_t *at) {
    static const char tick[] = "```", lang[] = "json";
    size_t i = *at;
    for (size_t k = 0; k < 3; k++, i++) {
        if (i == n) return 0;
        if (s[i] != tick[k]) return -1;
    }
    size_t k = 0;
    while (k < 4 && i < n && s[i] == lang[k]) k++, i++;
    if (i == n) return 0;
    if (k != 0 && k != 4) return -1;
    while (i < n && is_ws(s[i])) i++;
    if (i == n) return 0;
    if (s[i] != '{') return -1;
    *at = i;
    return 1;
}

/* TEXT: content up to an open marker (or a bare call at the very start). */
static rf_status step_text(rf_tsplit *t, const char *s, size_t n) {
    if (t->at_start) {
        size_t i = 0;
        while (i < n && is_ws(s[i])) i++;
        if (i == n) return hold(t, s, n); /* still nothing but white space */
        size_t j = i;
        int f = t->n_names ? fence_len(s, n, &j) : -1;
        if (f == 0) return hold(t, s, n); /* maybe a fence: wait for more */
        if (f > 0) i = j;                 /* a fence before the object, as Gemma writes it */
        t->at_start = false;
        if (s[i] == '{' && t->n_names) {
            t->state = HEAD;
            return step(t, s + i, n - i); /* the leading white space (and fence) is dropped */
        }
        if (!t->open) {
            t->state = PLAIN;
            emit(t, RF_TSPLIT_CONTENT, t->hold.data ? (const char *)t->hold.data : "", t->hold.len);
            rf_buf_reset(&t->hold);
            emit(t, RF_TSPLIT_CONTENT, s, n);
            return RF_OK;
        }
    }
    if (!t->open) {
        emit(t, RF_TSPLIT_CONTENT, s, n);
        return RF_OK;
    }
    const char *p = memmem(s, n, t->open, strlen(t->open));
    if (!p) {
        size_t keep = partial_suffix(s, n, t->open);
        /* trailing white space is held too: before a call it is the call's, after the last
         * call it is dropped; it is content only when more text follows */
        while (keep < n && is_ws(s[n - keep - 1])) keep++;
        emit(t, RF_TSPLIT_CONTENT, s, n - keep);
        return hold(t, s + n - keep, keep);
    }
    size_t at = (size_t)(p - s);
    /* white space just before a call is the call's, not content */
    size_t c = at;
    while (c > 0 && is_ws(s[c - 1])) c--;
    emit(t, RF_TSPLIT_CONTENT, s, c);
    t->state = HEAD;
    size_t skip = at + strlen(t->open);
    return step(t, s + skip, n - skip);
}

static rf_status step_head(rf_tsplit *t, const char *s, size_t n) {
    rf_status st = hold(t, s, n);
    if (st) return st;
    const char *name = NULL;
    size_t name_len = 0;
    int h = head_len(t, (const char *)t->hold.data, t->hold.len, &name, &name_len);
    if (h == 0) return RF_OK;
    if (h < 0) {
        t->state = HELD;
        return RF_OK;
    }
    t->n_calls++;
    emit(t, RF_TSPLIT_CALL, name, name_len);
    t->state = ARGS;
    t->depth = 0;
    t->in_str = t->esc = false;
    size_t rest_n = t->hold.len - (size_t)h;
    char *all = take_hold(t, &n);
    st = step(t, all + h, rest_n);
    free(all);
    return st;
}

static rf_status step_args(rf_tsplit *t, const char *s, size_t n) {
    bool ended = false;
    size_t used = args_scan(t, s, n, &ended);
    emit(t, RF_TSPLIT_ARGS, s, used);
    if (!ended) return RF_OK;
    t->state = TAIL;
    t->tail_match = 0;
    return step(t, s + used, n - used);
}

/* TAIL: after the arguments, up to the close marker (dropped); a bare call ends the calls. */
static rf_status step_tail(rf_tsplit *t, const char *s, size_t n) {
    if (!t->close) return RF_OK; /* a bare call is the whole reply */
    size_t lc = strlen(t->close);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == t->close[t->tail_match]) {
            if (++t->tail_match == lc) {
                t->state = TEXT;
                return step(t, s + i + 1, n - i - 1);
            }
        } else {
            t->tail_match = s[i] == t->close[0] ? 1 : 0;
        }
    }
    return RF_OK;
}

static rf_status step(rf_tsplit *t, const char *s, size_t n) {
    if (n == 0) return RF_OK;
    switch (t->state) {
    case TEXT: {
        if (t->hold.len == 0) return step_text(t, s, n);
        rf_status st = hold(t, s, n); /* a held partial marker or leading white space */
        if (st) return st;
        size_t m;
        char *all = take_hold(t, &m);
        st = step_text(t, all, m);
        free(all);
        return st;
    }
    case HEAD:
        return step_head(t, s, n);
    case ARGS:
        return step_args(t, s, n);
    case TAIL:
        return step_tail(t, s, n);
    case PLAIN:
        emit(t, RF_TSPLIT_CONTENT, s, n);
        return RF_OK;
    default: /* HELD */
        return hold(t, s, n);
    }
}

rf_status rf_tsplit_push(rf_tsplit *t, const char *s, size_t n) {
    return step(t, s, n);
}

bool rf_tsplit_finish(rf_tsplit *t, const char **held, size_t *held_len) {
    *held = NULL;
    *held_len = 0;
    if (t->state == HELD || t->state == HEAD) {
        *held = t->hold.data ? (const char *)t->hold.data : "";
        *held_len = t->hold.len;
        return true;
    }
    if (t->state == TEXT && t->hold.len) { /* a partial marker, or white space */
        bool blank = true;
        for (size_t i = 0; i < t->hold.len && blank; i++) blank = is_ws((char)t->hold.data[i]);
        if (!blank || !t->n_calls)
            emit(t, RF_TSPLIT_CONTENT, (const char *)t->hold.data, t->hold.len);
        rf_buf_reset(&t->hold);
    }
    return false;
}
