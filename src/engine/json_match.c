/* json_match.c: the matcher's threads, frames and byte transitions. */
#include "engine/json_match.h"

#include <string.h>

enum {
    ST_V0 = 0, /* the value has not started */
    ST_LIT,    /* literals [a, b) of the node agree with the n bytes so far */
    ST_STR,    /* inside a string; n characters; fl bits 1-2: UTF-8 bytes still due */
    ST_ESC,    /* after a backslash */
    ST_HEX,    /* \u: b hex digits so far, their value in a */
    ST_NMINUS,
    ST_NZERO,
    ST_NINT,
    ST_NDOT,
    ST_NFRAC,
    ST_NE,
    ST_NES,
    ST_NEXP,
    ST_OOPEN,  /* after '{' (a: the next property that may come) */
    ST_ONEXT,  /* after ',' */
    ST_OKEY,   /* in property a's key, b bytes matched */
    ST_OKEYW,  /* a free object's key (a string child) */
    ST_OCOLON, /* after the key */
    ST_OVAL,   /* after ':' */
    ST_OWAIT,  /* the value is a child frame */
    ST_OAFTER, /* after a value */
    ST_AOPEN,  /* after '[' (n: items so far) */
    ST_AWAIT,
    ST_AAFTER,
    ST_ANEXT,
    ST_SEQ,  /* element a is next */
    ST_SEQW, /* element a is a child frame */
    ST_TEXT, /* free text; b bytes of the marker matched */
    ST_WS,   /* n whitespace bytes so far */
};

#define FL_WS   1u /* the one space allowed here is used */
#define FL_LEAD 8u /* TEXT nobrace: only spaces so far */
#define PEND(f) (((f)->fl >> 1) & 3u)

static void copy_thread(rf_jthread *d, const rf_jthread *s) {
    d->depth = s->depth;
    memcpy(d->f, s->f, (size_t)s->depth * sizeof s->f[0]);
}

static bool push(rf_jthread *t, int32_t node) {
    if (t->depth >= RF_JM_DEPTH) return false;
    t->f[t->depth++] = (rf_jframe){(uint16_t)node, ST_V0, 0, 0, 0, 0};
    return true;
}

/* The top frame's value is complete: pop it and move its parent past it. */
static void pop(const rf_jschema *s, rf_jthread *t) {
    t->depth--;
    if (!t->depth) return;
    rf_jframe *f = &t->f[t->depth - 1];
    const rf_jnode *nd = &s->nodes[f->node];
    f->fl = 0;
    switch (f->st) {
    case ST_OWAIT:
        f->st = ST_OAFTER;
        if (nd->count) f->a++;
        break;
    case ST_OKEYW:
        f->st = ST_OCOLON;
        break;
    case ST_AWAIT:
        f->st = ST_AAFTER;
        f->n++;
        break;
    case ST_SEQW:
        f->a++;
        f->st = ST_SEQ;
        if (f->a >= nd->count) {
            if (nd->loop_from >= 0)
                f->a = (uint16_t)nd->loop_from;
            else
                pop(s, t);
        }
        break;
    default:
        break;
    }
}

static bool required_from(const rf_jschema *s, const rf_jnode *nd, int32_t a) {
    for (int32_t i = a; i < nd->count; i++)
        if (s->props[nd->first + i].required) return true;
    return false;
}

static bool is_ws(uint8_t c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The one space allowed at this point of an object or array. */
static bool take_space(rf_jframe *f, uint8_t c) {
    if (c != ' ' || (f->fl & FL_WS)) return false;
    f->fl |= FL_WS;
    return true;
}

static void add_thread(rf_jset *out, const rf_jthread *t) {
    if (out->n >= RF_JM_THREADS) {
        out->overflow++;
        return;
    }
    copy_thread(&out->t[out->n++], t);
}

static void step_thread(const rf_jschema *s, const rf_jthread *in, uint8_t c, rf_jset *out);

/* Counts one character of a string (saturating when only minLength matters). */
static void str_count(rf_jframe *f, const rf_jnode *nd) {
    if (nd->max >= 0 || f->n < (uint32_t)nd->min) f->n++;
}

/* Longest prefix of m that is a suffix of m[0..b) + c. */
static uint16_t marker_next(const rf_jlit *m, uint16_t b, uint8_t c) {
    for (int32_t k = b + 1 < (int32_t)m->len ? b + 1 : (int32_t)m->len; k > 0; k--)
        if ((uint8_t)m->s[k - 1] == c && !memcmp(m->s, m->s + b - (k - 1), (size_t)(k - 1)))
            return (uint16_t)k;
    return 0;
}

/* What a state's handler did with the byte: refused it (the thread dies, or was replaced by
 * forks appended to out), took it, or moved the thread to a state that must see it again (a
 * value that starts or ends without a byte of its own). */
typedef enum jm_res { JM_DEAD, JM_TAKEN, JM_AGAIN } jm_res;

/* The handlers below are inlined into run, which stays one function of its own, called by
 * step_thread: the shape the compiler gave the matcher when it was one switch. Left to itself,
 * GCC inlines run into step_thread instead and keeps two handlers out of line, and the matcher
 * is then 3-20% slower (constraint_cost, interleaved runs). */
#define JM_HANDLER static inline __attribute__((always_inline))

/* ST_V0: the first byte of a value, by the node's kind. */
JM_HANDLER jm_res run_start(const rf_jschema *s, rf_jthread *t, rf_jframe *f, const rf_jnode *nd,
                            uint8_t c, rf_jset *out) {
    switch (nd->kind) {
    case RF_JN_UNION: {
        rf_jthread tpl;
        copy_thread(&tpl, t);
        for (int32_t i = 0; i < nd->count; i++) {
            tpl.f[tpl.depth - 1].node = (uint16_t)s->kids[nd->first + i];
            step_thread(s, &tpl, c, out);
        }
        return JM_DEAD;
    }
    case RF_JN_LIT:
        f->st = ST_LIT;
        f->a = 0;
        f->b = (uint16_t)nd->count;
        f->n = 0;
        return JM_AGAIN;
    case RF_JN_STRING:
        if (c != '"') return JM_DEAD;
        f->st = ST_STR;
        f->n = 0;
        return JM_TAKEN;
    case RF_JN_NUMBER:
    case RF_JN_INTEGER:
        f->n = 1;
        if (c == '-')
            f->st = ST_NMINUS;
        else if (c == '0')
            f->st = ST_NZERO;
        else if (c >= '0' && c <= '9')
            f->st = ST_NINT;
        else
            return JM_DEAD;
        return JM_TAKEN;
    case RF_JN_OBJECT:
        if (c != '{') return JM_DEAD;
        f->st = ST_OOPEN;
        f->a = 0;
        return JM_TAKEN;
    case RF_JN_ARRAY:
        if (c != '[') return JM_DEAD;
        f->st = ST_AOPEN;
        f->n = 0;
        return JM_TAKEN;
    case RF_JN_SEQ:
        f->st = ST_SEQ;
        f->a = 0;
        return JM_AGAIN;
    case RF_JN_TEXT:
        f->st = ST_TEXT;
        f->b = 0;
        f->fl = nd->nobrace ? FL_LEAD : 0;
        return JM_AGAIN;
    case RF_JN_WS:
        f->st = ST_WS;
        f->n = 0;
        return JM_AGAIN;
    }
    return JM_DEAD;
}

/* ST_LIT: the literals [a, b) that still agree after byte c. */
JM_HANDLER jm_res run_lit(const rf_jschema *s, rf_jthread *t, rf_jframe *f, const rf_jnode *nd,
                          uint8_t c) {
    const rf_jlit *L = s->lits + nd->first;
    uint32_t pos = f->n;
    int32_t lo = -1, hi = -1;
    for (int32_t i = f->a; i < f->b; i++) {
        bool ok = L[i].len > pos && (uint8_t)L[i].s[pos] == c;
        if (ok && lo < 0) lo = i;
        if (ok) hi = i + 1;
        if (!ok && lo >= 0) break;
    }
    if (lo >= 0) {
        f->a = (uint16_t)lo;
        f->b = (uint16_t)hi;
        f->n = pos + 1;
        if (hi - lo == 1 && L[lo].len == pos + 1) pop(s, t);
        return JM_TAKEN;
    }
    if (L[f->a].len == pos) { /* complete (the shortest sorts first): the parent's byte */
        pop(s, t);
        return JM_AGAIN;
    }
    return JM_DEAD;
}

/* ST_STR: a byte inside a string (UTF-8 continuation bytes, the closing quote, a backslash,
 * the length bounds). */
JM_HANDLER jm_res run_str(const rf_jschema *s, rf_jthread *t, rf_jframe *f, const rf_jnode *nd,
                          uint8_t c) {
    uint32_t pend = PEND(f);
    if (pend) {
        if ((c & 0xC0) != 0x80) return JM_DEAD;
        f->fl = (uint8_t)((f->fl & ~6u) | ((pend - 1) << 1));
        return JM_TAKEN;
    }
    if (c == '"') {
        if (f->n < (uint32_t)nd->min) return JM_DEAD;
        pop(s, t);
        return JM_TAKEN;
    }
    if (c == '\\') {
        if (nd->max >= 0 && f->n >= (uint32_t)nd->max) return JM_DEAD;
        f->st = ST_ESC;
        return JM_TAKEN;
    }
    if (c < 0x20) return JM_DEAD;
    if (nd->max >= 0 && f->n >= (uint32_t)nd->max) return JM_DEAD;
    if (c >= 0x80) {
        if (c >= 0xC2 && c <= 0xDF)
            pend = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            pend = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            pend = 3;
        else
            return JM_DEAD;
        f->fl = (uint8_t)((f->fl & ~6u) | (pend << 1));
    }
    str_count(f, nd);
    return JM_TAKEN;
}

/* ST_ESC: the byte after a backslash. */
JM_HANDLER jm_res run_esc(rf_jframe *f, const rf_jnode *nd, uint8_t c) {
    if (c == 'u') {
        f->st = ST_HEX;
        f->a = f->b = 0;
        return JM_TAKEN;
    }
    if (!strchr("\"\\/bfnrt", c) || !c) return JM_DEAD;
    f->st = ST_STR;
    str_count(f, nd);
    return JM_TAKEN;
}

/* ST_HEX: the four hex digits of \u. */
JM_HANDLER jm_res run_hex(rf_jframe *f, const rf_jnode *nd, uint8_t c) {
    bool dig = c >= '0' && c <= '9';
    uint32_t h = dig                                      ? (uint32_t)(c - '0')
                 : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (uint32_t)((c | 0x20) - 'a' + 10)
                                                          : 16;
    if (h == 16) return JM_DEAD;
    f->a = (uint16_t)(f->a << 4 | h);
    if (++f->b < 4) return JM_TAKEN;
    /* \u0000 and surrogates (pairs included) are refused: parsers such as jansson
     * reject NUL and lone surrogates; characters beyond U+FFFF come as UTF-8 */
    if (!f->a || (f->a >= 0xD800 && f->a <= 0xDFFF)) return JM_DEAD;
    f->st = ST_STR;
    str_count(f, nd);
    return JM_TAKEN;
}

/* The number state after state st on byte c, or 0 when c cannot continue the number. */
JM_HANDLER uint8_t number_next(rf_jframe *f, uint8_t st, uint8_t c, bool integer) {
    bool dig = c >= '0' && c <= '9';
    bool e = (c == 'e' || c == 'E') && !integer;
    bool dot = c == '.' && !integer;
    uint8_t next = 0;
    switch (st) {
    case ST_NMINUS:
        next = c == '0' ? ST_NZERO : dig ? ST_NINT : 0;
        break;
    case ST_NZERO:
        next = dot ? ST_NDOT : e ? ST_NE : 0;
        break;
    case ST_NINT:
        next = dig ? ST_NINT : dot ? ST_NDOT : e ? ST_NE : 0;
        break;
    case ST_NDOT:
        next = dig ? ST_NFRAC : 0;
        break;
    case ST_NFRAC:
        next = dig ? ST_NFRAC : e ? ST_NE : 0;
        break;
    case ST_NE:
        next = (c == '+' || c == '-') ? ST_NES : dig ? ST_NEXP : 0;
        break;
    case ST_NES:
        next = dig ? ST_NEXP : 0;
        break;
    default:
        next = dig && f->b < 2 ? ST_NEXP : 0;
        break;
    }
    if (next == ST_NEXP) f->b = st == ST_NEXP ? f->b + 1 : 1; /* exponent digits */
    return next;
}

/* ST_NMINUS .. ST_NEXP: a byte of a number, or the byte after it (then its parent's). */
JM_HANDLER jm_res run_number(const rf_jschema *s, rf_jthread *t, rf_jframe *f, const rf_jnode *nd,
                             uint8_t c) {
    uint8_t st = f->st, next = 0;
    if (f->n < RF_JM_NUMBER_LEN) next = number_next(f, st, c, nd->kind == RF_JN_INTEGER);
    if (next) {
        f->st = next;
        f->n++;
        return JM_TAKEN;
    }
    if (st == ST_NZERO || st == ST_NINT || st == ST_NFRAC || st == ST_NEXP) {
        pop(s, t); /* the number ended: the byte is its parent's */
        return JM_AGAIN;
    }
    return JM_DEAD;
}

/* ST_OOPEN, ST_ONEXT: after '{' or ',': a space, '}' (when nothing more is required), or the
 * opening quote of a key (a fork per property that may come next). */
JM_HANDLER jm_res run_obj_key_start(const rf_jschema *s, rf_jthread *t, rf_jframe *f,
                                    const rf_jnode *nd, uint8_t c, rf_jset *out) {
    if (take_space(f, c)) return JM_TAKEN;
    if (c == '}' && f->st == ST_OOPEN && !required_from(s, nd, 0)) {
        pop(s, t);
        return JM_TAKEN;
    }
    if (c != '"') return JM_DEAD;
    if (!nd->count) {
        if (nd->item < 0) return JM_DEAD; /* closed and empty: only {} */
        f->st = ST_OKEYW;
        f->fl = 0;
        if (!push(t, s->any_string)) return JM_DEAD;
        t->f[t->depth - 1].st = ST_STR;
        return JM_TAKEN;
    }
    rf_jthread tpl;
    copy_thread(&tpl, t);
    rf_jframe *g = &tpl.f[tpl.depth - 1];
    for (int32_t j = f->a; j < nd->count; j++) {
        g->st = ST_OKEY;
        g->fl = 0;
        g->a = (uint16_t)j;
        g->b = 1; /* the opening quote */
        add_thread(out, &tpl);
        if (s->props[nd->first + j].required) break;
    }
    return JM_DEAD;
}

/* ST_OKEY: a byte of property a's key. */
JM_HANDLER jm_res run_obj_key(const rf_jschema *s, rf_jframe *f, const rf_jnode *nd, uint8_t c) {
    const rf_jlit *k = &s->lits[s->props[nd->first + f->a].key];
    if (f->b >= k->len || (uint8_t)k->s[f->b] != c) return JM_DEAD;
    if (++f->b == k->len) f->st = ST_OCOLON;
    return JM_TAKEN;
}

/* ST_OVAL, ST_ANEXT: a space, or the value (property a's, or the item) starts as a child. */
JM_HANDLER jm_res run_child_value(const rf_jschema *s, rf_jthread *t, rf_jframe *f,
                                  const rf_jnode *nd, uint8_t c) {
    if (take_space(f, c)) return JM_TAKEN;
    int32_t child =
        nd->kind == RF_JN_ARRAY || !nd->count ? nd->item : s->props[nd->first + f->a].node;
    f->st = f->st == ST_OVAL ? ST_OWAIT : ST_AWAIT;
    if (!push(t, child)) return JM_DEAD;
    return JM_AGAIN;
}

/* ST_OAFTER: after a property's value: a space, ',' or '}'. */
JM_HANDLER jm_res run_obj_after(const rf_jschema *s, rf_jthread *t, rf_jframe *f,
                                const rf_jnode *nd, uint8_t c) {
    if (take_space(f, c)) return JM_TAKEN;
    if (c == ',' && (!nd->count || f->a < nd->count)) {
        f->st = ST_ONEXT;
        f->fl = 0;
        return JM_TAKEN;
    }
    if (c == '}' && !required_from(s, nd, nd->count ? f->a : 0)) {
        pop(s, t);
        return JM_TAKEN;
    }
    return JM_DEAD;
}

/* ST_AOPEN: after '[': a space, ']' (when empty is allowed), or the first item. */
JM_HANDLER jm_res run_arr_open(const rf_jschema *s, rf_jthread *t, rf_jframe *f, const rf_jnode *nd,
                               uint8_t c) {
    if (take_space(f, c)) return JM_TAKEN;
    if (c == ']' && nd->min == 0) {
        pop(s, t);
        return JM_TAKEN;
    }
    if (nd->max == 0) return JM_DEAD;
    f->st = ST_AWAIT;
    if (!push(t, nd->item)) return JM_DEAD;
    return JM_AGAIN;
}

/* ST_AAFTER: after an item: a space, ',' (below maxItems) or ']' (from minItems). */
JM_HANDLER jm_res run_arr_after(const rf_jschema *s, rf_jthread *t, rf_jframe *f,
                                const rf_jnode *nd, uint8_t c) {
    if (take_space(f, c)) return JM_TAKEN;
    if (c == ',' && (nd->max < 0 || f->n < (uint32_t)nd->max)) {
        f->st = ST_ANEXT;
        f->fl = 0;
        return JM_TAKEN;
    }
    if (c == ']' && f->n >= (uint32_t)nd->min) {
        pop(s, t);
        return JM_TAKEN;
    }
    return JM_DEAD;
}

/* ST_TEXT: free text until its end marker (leading spaces, and no '{' first, when nobrace). */
JM_HANDLER jm_res run_text(const rf_jschema *s, rf_jthread *t, rf_jframe *f, const rf_jnode *nd,
                           uint8_t c) {
    if (f->fl & FL_LEAD) {
        if (is_ws(c)) return JM_TAKEN;
        if (c == '{') return JM_DEAD;
        f->fl = 0;
    }
    if (nd->text < 0) return JM_TAKEN;
    f->b = marker_next(&s->lits[nd->text], f->b, c);
    if (f->b == s->lits[nd->text].len) pop(s, t);
    return JM_TAKEN;
}

/* ST_WS: up to max whitespace bytes, then the byte is the parent's. */
JM_HANDLER jm_res run_ws(const rf_jschema *s, rf_jthread *t, rf_jframe *f, const rf_jnode *nd,
                         uint8_t c) {
    if (is_ws(c) && f->n < (uint32_t)nd->max) {
        f->n++;
        return JM_TAKEN;
    }
    pop(s, t);
    return JM_AGAIN;
}

/* One state's handler for byte c on the top frame of t. */
JM_HANDLER jm_res run_state(const rf_jschema *s, rf_jthread *t, uint8_t c, rf_jset *out) {
    rf_jframe *f = &t->f[t->depth - 1];
    const rf_jnode *nd = &s->nodes[f->node];
    switch (f->st) {
    case ST_V0:
        return run_start(s, t, f, nd, c, out);
    case ST_LIT:
        return run_lit(s, t, f, nd, c);
    case ST_STR:
        return run_str(s, t, f, nd, c);
    case ST_ESC:
        return run_esc(f, nd, c);
    case ST_HEX:
        return run_hex(f, nd, c);
    case ST_NMINUS:
    case ST_NZERO:
    case ST_NINT:
    case ST_NDOT:
    case ST_NFRAC:
    case ST_NE:
    case ST_NES:
    case ST_NEXP:
        return run_number(s, t, f, nd, c);
    case ST_OOPEN:
    case ST_ONEXT:
        return run_obj_key_start(s, t, f, nd, c, out);
    case ST_OKEY:
        return run_obj_key(s, f, nd, c);
    case ST_OCOLON:
        if (c != ':') return JM_DEAD;
        f->st = ST_OVAL;
        f->fl = 0;
        return JM_TAKEN;
    case ST_OVAL:
    case ST_ANEXT:
        return run_child_value(s, t, f, nd, c);
    case ST_OAFTER:
        return run_obj_after(s, t, f, nd, c);
    case ST_AOPEN:
        return run_arr_open(s, t, f, nd, c);
    case ST_AAFTER:
        return run_arr_after(s, t, f, nd, c);
    case ST_SEQ:
        f->st = ST_SEQW;
        return push(t, s->kids[nd->first + f->a]) ? JM_AGAIN : JM_DEAD;
    case ST_TEXT:
        return run_text(s, t, f, nd, c);
    case ST_WS:
        return run_ws(s, t, f, nd, c);
    default:
        return JM_DEAD;
    }
}

/* Runs byte c through the thread in its slot t (out->t[out->n]). Returns true when t consumed
 * it and lives (the caller keeps the slot); false when it died or was replaced by forks, which
 * step_thread has appended to out. A byte that ends a value without being part of it (a number's
 * end, whitespace's) pops the frame and runs again on the parent's state. */
__attribute__((noinline)) static bool run(const rf_jschema *s, rf_jthread *t, uint8_t c,
                                          rf_jset *out) {
    for (;;) {
        if (!t->depth) return false; /* a byte after the end */
        jm_res r = run_state(s, t, c, out);
        if (r != JM_AGAIN) return r == JM_TAKEN;
    }
}

static void step_thread(const rf_jschema *s, const rf_jthread *in, uint8_t c, rf_jset *out) {
    if (out->n >= RF_JM_THREADS) {
        out->overflow++;
        return;
    }
    rf_jthread *t = &out->t[out->n];
    copy_thread(t, in);
    if (run(s, t, c, out)) out->n++;
}

void rf_jm_init(const rf_jschema *s, rf_jset *set) {
    set->n = 1;
    set->overflow = 0;
    set->t[0].depth = 0;
    push(&set->t[0], s->root);
}

void rf_jm_copy(rf_jset *dst, const rf_jset *src) {
    dst->n = src->n;
    dst->overflow = src->overflow;
    for (int32_t i = 0; i < src->n; i++) copy_thread(&dst->t[i], &src->t[i]);
}

static bool same_thread(const rf_jthread *a, const rf_jthread *b) {
    return a->depth == b->depth && !memcmp(a->f, b->f, (size_t)a->depth * sizeof a->f[0]);
}

static bool free_string_frame(const rf_jschema *s, const rf_jthread *t) {
    if (!t->depth) return false;
    const rf_jframe *f = &t->f[t->depth - 1];
    const rf_jnode *nd = &s->nodes[f->node];
    return f->st == ST_STR && !PEND(f) && nd->max < 0 && f->n >= (uint32_t)nd->min;
}

bool rf_jm_in_free_string(const rf_jschema *s, const rf_jset *set) {
    if (!set->n) return false;
    for (int32_t i = 0; i < set->n; i++)
        if (!free_string_frame(s, &set->t[i])) return false;
    return true;
}

/* Whether byte c leaves every thread as it is because each is in free text that has matched
 * nothing of its marker and c is no byte of the marker. */
static bool text_identity(const rf_jschema *s, const rf_jset *set, uint8_t c) {
    if (!set->n) return false;
    for (int32_t i = 0; i < set->n; i++) {
        const rf_jthread *t = &set->t[i];
        if (!t->depth) return false;
        const rf_jframe *f = &t->f[t->depth - 1];
        const rf_jnode *nd = &s->nodes[f->node];
        if (f->st != ST_TEXT || (f->fl & FL_LEAD) || f->b) return false;
        if (nd->text >= 0 && memchr(s->lits[nd->text].s, c, s->lits[nd->text].len)) return false;
    }
    return true;
}

bool rf_jm_step(const rf_jschema *s, const rf_jset *in, uint8_t c, rf_jset *out) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\' && rf_jm_in_free_string(s, in)) return true;
    if (text_identity(s, in, c)) return true;
    out->n = 0;
    out->overflow = in->overflow;
    for (int32_t i = 0; i < in->n; i++) step_thread(s, &in->t[i], c, out);
    if (out->n > 1) { /* drop duplicates (alternatives that became the same state) */
        int32_t k = 0;
        for (int32_t i = 0; i < out->n; i++) {
            bool dup = false;
            for (int32_t j = 0; j < k && !dup; j++) dup = same_thread(&out->t[j], &out->t[i]);
            if (!dup) {
                if (k != i) copy_thread(&out->t[k], &out->t[i]);
                k++;
            }
        }
        out->n = k;
    }
    return false;
}

bool rf_jm_feed(const rf_jschema *s, rf_jset *set, const char *bytes, size_t len, rf_jset *tmp) {
    for (size_t i = 0; i < len && set->n; i++)
        if (!rf_jm_step(s, set, (uint8_t)bytes[i], tmp)) rf_jm_copy(set, tmp);
    return set->n > 0;
}

static bool thread_can_end(const rf_jschema *s, rf_jthread *t) {
    for (;;) {
        if (!t->depth) return true;
        rf_jframe *f = &t->f[t->depth - 1];
        const rf_jnode *nd = &s->nodes[f->node];
        switch (f->st) {
        case ST_TEXT:
            return true;
        case ST_LIT:
            if (s->lits[nd->first + f->a].len != f->n) return false;
            pop(s, t);
            continue;
        case ST_NZERO:
        case ST_NINT:
        case ST_NFRAC:
        case ST_NEXP:
        case ST_WS:
            pop(s, t);
            continue;
        case ST_SEQ:
            return (nd->can_end >> f->a) & 1u;
        case ST_V0:
            switch (nd->kind) {
            case RF_JN_TEXT:
                return true;
            case RF_JN_WS:
                pop(s, t);
                continue;
            case RF_JN_SEQ:
                return nd->can_end & 1u;
            case RF_JN_UNION:
                for (int32_t i = 0; i < nd->count; i++) {
                    rf_jthread u;
                    copy_thread(&u, t);
                    u.f[u.depth - 1].node = (uint16_t)s->kids[nd->first + i];
                    if (thread_can_end(s, &u)) return true;
                }
                return false;
            default:
                return false;
            }
        default:
            return false;
        }
    }
}

bool rf_jm_can_end(const rf_jschema *s, const rf_jset *set) {
    for (int32_t i = 0; i < set->n; i++) {
        rf_jthread t;
        copy_thread(&t, &set->t[i]);
        if (thread_can_end(s, &t)) return true;
    }
    return false;
}

bool rf_jm_done(const rf_jset *set) {
    if (!set->n) return false;
    for (int32_t i = 0; i < set->n; i++)
        if (set->t[i].depth) return false;
    return true;
}

/* Whether thread t's next byte goes to raw marker text or free text. */
static bool special_thread(const rf_jschema *s, const rf_jthread *t) {
    rf_jthread u;
    copy_thread(&u, t);
    for (int guard = 0; u.depth && guard < RF_JM_DEPTH * 2; guard++) {
        rf_jframe *f = &u.f[u.depth - 1];
        const rf_jnode *nd = &s->nodes[f->node];
        if (f->st == ST_TEXT) return true;
        if (f->st == ST_LIT) return nd->raw;
        if (f->st == ST_SEQ) {
            f->st = ST_SEQW;
            if (!push(&u, s->kids[nd->first + f->a])) return false;
            continue;
        }
        if (f->st != ST_V0) return false;
        if (nd->kind == RF_JN_TEXT) return true;
        if (nd->kind == RF_JN_LIT) return nd->raw;
        if (nd->kind == RF_JN_SEQ) {
            f->st = ST_SEQ;
            f->a = 0;
            continue;
        }
        if (nd->kind == RF_JN_UNION) {
            for (int32_t i = 0; i < nd->count; i++) {
                rf_jthread w;
                copy_thread(&w, &u);
                w.f[w.depth - 1].node = (uint16_t)s->kids[nd->first + i];
                if (special_thread(s, &w)) return true;
            }
        }
        return false;
    }
    return false;
}

bool rf_jm_special_ok(const rf_jschema *s, const rf_jset *set, rf_jset *out) {
    out->n = 0;
    out->overflow = set->overflow;
    for (int32_t i = 0; i < set->n; i++)
        if (special_thread(s, &set->t[i])) copy_thread(&out->t[out->n++], &set->t[i]);
    return out->n > 0;
}
