/* graders.c: number / exact / word graders and reply agreement (rules in graders.h). */
#include "bench/graders.h"

#include <stdlib.h>
#include <string.h>

/* ---- small character helpers (ASCII, locale-independent) ---- */

static bool is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

static bool is_alnum(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_ascii_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static unsigned char lower(unsigned char c) {
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static void trim(const char **s, size_t *n) {
    const unsigned char *p = (const unsigned char *)*s;
    size_t len = *n;
    while (len && is_ascii_space(p[0])) p++, len--;
    while (len && is_ascii_space(p[len - 1])) len--;
    *s = (const char *)p;
    *n = len;
}

/* ---- UTF-8 ---- */

#define CP_INVALID 0x110000u /* + the byte: an undecodable byte, equal only to itself */

static uint32_t utf8_dec(const unsigned char *s, size_t len, size_t i, size_t *adv) {
    unsigned c = s[i];
    *adv = 1;
    if (c < 0x80) return c;
    size_t need;
    uint32_t cp;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2, cp = c & 0x0F;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3, cp = c & 0x07;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return CP_INVALID + c;
    }
    if (i + need >= len) return CP_INVALID + c;
    for (size_t k = 1; k <= need; k++) {
        unsigned b = s[i + k];
        if (b < lo || b > hi) return CP_INVALID + c;
        lo = 0x80, hi = 0xBF;
        cp = (cp << 6) | (b & 0x3F);
    }
    *adv = need + 1;
    return cp;
}

/* The code point that ends just before byte i (i > 0). */
static uint32_t utf8_prev(const unsigned char *s, size_t i) {
    size_t q = i - 1;
    while (q > 0 && i - q < 4 && (s[q] & 0xC0) == 0x80) q--;
    size_t adv;
    uint32_t cp = utf8_dec(s, i, q, &adv);
    if (q + adv == i) return cp;
    return CP_INVALID + s[i - 1];
}

static uint32_t fold(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32; /* Latin-1 capitals */
    return cp;
}

static bool is_space_cp(uint32_t cp) {
    if (cp < 0x80) return is_ascii_space((unsigned char)cp);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Letters and digits (an approximation without Unicode tables: punctuation and symbol blocks
 * are not word characters, everything else outside ASCII is). */
static bool is_word_cp(uint32_t cp) {
    if (cp < 0x80) return is_alnum((unsigned char)cp) || cp == '_';
    if (cp >= CP_INVALID) return false;
    if (cp <= 0xBF) return cp == 0xAA || cp == 0xB5 || cp == 0xBA;
    if (cp == 0xD7 || cp == 0xF7) return false;
    if (cp >= 0x2000 && cp <= 0x2BFF) return false; /* punctuation, symbols, arrows, math */
    if (cp >= 0x3000 && cp <= 0x303F) return false; /* CJK punctuation */
    if (cp >= 0xFE30 && cp <= 0xFE6F) return false;
    if ((cp >= 0xFF00 && cp <= 0xFF0F) || (cp >= 0xFF1A && cp <= 0xFF20) ||
        (cp >= 0xFF3B && cp <= 0xFF40) || (cp >= 0xFF5B && cp <= 0xFF65))
        return false;
    if (cp >= 0x1F000 && cp <= 0x1FAFF) return false; /* emoji and pictographs */
    return true;
}

/* Copies n bytes of s into g->value, cutting at a UTF-8 boundary when it does not fit. */
static void set_value(rf_grade *g, const char *s, size_t n) {
    size_t cap = sizeof g->value - 1;
    if (n > cap) {
        n = cap;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
        g->truncated = true;
    }
    if (n) memcpy(g->value, s, n);
    g->value[n] = 0;
}

static void grade_reset(rf_grade *g) {
    memset(g, 0, sizeof *g);
}

/* ---- numbers ---- */

typedef struct numlit {
    bool neg;
    const char *ip; /* integer digits as written (thousands commas included) */
    size_t in;
    const char *fp; /* fraction digits */
    size_t fn;
    size_t start, end; /* span in the text, sign included */
} numlit;

static size_t scan_digits(const char *s, size_t len, size_t i) {
    while (i < len && is_digit((unsigned char)s[i])) i++;
    return i;
}

/* s[i] is a digit: scans the unsigned part of a number starting there. */
static size_t scan_unsigned(const char *s, size_t len, size_t i, numlit *nl) {
    size_t j = scan_digits(s, len, i);
    if (j - i <= 3) {
        while (j + 3 < len && s[j] == ',' && is_digit((unsigned char)s[j + 1]) &&
               is_digit((unsigned char)s[j + 2]) && is_digit((unsigned char)s[j + 3]) &&
               (j + 4 >= len || !is_digit((unsigned char)s[j + 4])))
            j += 4;
    }
    nl->ip = s + i;
    nl->in = j - i;
    nl->fp = NULL;
    nl->fn = 0;
    if (j + 1 < len && s[j] == '.' && is_digit((unsigned char)s[j + 1])) {
        size_t k = scan_digits(s, len, j + 1);
        nl->fp = s + j + 1;
        nl->fn = k - j - 1;
        j = k;
    }
    nl->start = i;
    nl->end = j;
    return j;
}

/* Is the digit run at i preceded by a minus sign that belongs to it? Sets the literal's start. */
static void scan_sign(const char *s, size_t i, numlit *nl) {
    const unsigned char *u = (const unsigned char *)s;
    nl->neg = false;
    if (i >= 1 && u[i - 1] == '-' && (i == 1 || !is_alnum(u[i - 2]))) {
        nl->neg = true;
        nl->start = i - 1;
    } else if (i >= 3 && u[i - 3] == 0xE2 && u[i - 2] == 0x88 && u[i - 1] == 0x92 &&
               (i == 3 || !is_alnum(u[i - 4]))) { /* U+2212 minus sign */
        nl->neg = true;
        nl->start = i - 3;
    }
}

typedef struct digit_iter {
    const char *s;
    size_t n, i;
} digit_iter;

static int dpeek(digit_iter *it) {
    while (it->i < it->n && it->s[it->i] == ',') it->i++;
    return it->i < it->n ? (unsigned char)it->s[it->i] : -1;
}

static int dnext(digit_iter *it) {
    int c = dpeek(it);
    if (c >= 0) it->i++;
    return c;
}

/* Iterator over the significant integer digits (leading zeros and commas skipped). */
static digit_iter int_digits(const numlit *nl, size_t *count) {
    digit_iter it = {nl->ip, nl->in, 0};
    while (dpeek(&it) == '0') it.i++;
    size_t c = 0;
    for (size_t k = it.i; k < it.n; k++)
        if (nl->ip[k] != ',') c++;
    *count = c;
    return it;
}

static size_t frac_len(const numlit *nl) {
    size_t n = nl->fn;
    while (n && nl->fp[n - 1] == '0') n--;
    return n;
}

static bool num_is_zero(const numlit *nl) {
    size_t ic;
    int_digits(nl, &ic);
    return ic == 0 && frac_len(nl) == 0;
}

static bool num_equal(const numlit *a, const numlit *b) {
    bool za = num_is_zero(a), zb = num_is_zero(b);
    if (za || zb) return za && zb;
    if (a->neg != b->neg) return false;
    size_t ca, cb;
    digit_iter ia = int_digits(a, &ca), ib = int_digits(b, &cb);
    if (ca != cb) return false;
    for (size_t k = 0; k < ca; k++)
        if (dnext(&ia) != dnext(&ib)) return false;
    size_t fa = frac_len(a), fb = frac_len(b);
    return fa == fb && (fa == 0 || memcmp(a->fp, b->fp, fa) == 0);
}

/* Writes the canonical text (truncated to cap); returns its full length. */
static size_t num_write(const numlit *nl, char *out, size_t cap) {
    size_t w = 0;
#define PUT(ch)                                                                                    \
    do {                                                                                           \
        if (w + 1 < cap) out[w] = (char)(ch);                                                      \
        w++;                                                                                       \
    } while (0)
    if (num_is_zero(nl)) {
        PUT('0');
    } else {
        if (nl->neg) PUT('-');
        size_t ic;
        digit_iter it = int_digits(nl, &ic);
        if (ic == 0) PUT('0');
        for (size_t k = 0; k < ic; k++) PUT(dnext(&it));
        size_t fl = frac_len(nl);
        if (fl) {
            PUT('.');
            for (size_t k = 0; k < fl; k++) PUT(nl->fp[k]);
        }
    }
#undef PUT
    if (cap) out[w < cap ? w : cap - 1] = 0;
    return w;
}

/* Parses s[0..len) as exactly one number (whitespace around, optional sign). */
static bool parse_whole(const char *s, size_t len, numlit *nl) {
    trim(&s, &len);
    bool neg = false;
    size_t i = 0;
    const unsigned char *u = (const unsigned char *)s;
    if (len >= 1 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    } else if (len >= 3 && u[0] == 0xE2 && u[1] == 0x88 && u[2] == 0x92) {
        neg = true;
        i = 3;
    }
    if (i >= len || !is_digit(u[i])) return false;
    if (scan_unsigned(s, len, i, nl) != len) return false;
    nl->neg = neg;
    nl->start = 0;
    return true;
}

bool rf_number_canonical(const char *s, size_t len, char *out, size_t cap) {
    numlit nl;
    if (!parse_whole(s, len, &nl)) return false;
    num_write(&nl, out, cap);
    return true;
}

bool rf_numbers_equal(const char *a, const char *b) {
    numlit na, nb;
    return parse_whole(a, strlen(a), &na) && parse_whole(b, strlen(b), &nb) && num_equal(&na, &nb);
}

/* Does text[0..end) end with pat (ASCII, case-insensitive), as whole words when pat starts with a
 * letter? */
static bool ends_with_ci(const char *text, size_t end, const char *pat) {
    size_t n = strlen(pat);
    if (n > end) return false;
    const unsigned char *t = (const unsigned char *)text + end - n;
    for (size_t k = 0; k < n; k++)
        if (lower(t[k]) != (unsigned char)pat[k]) return false;
    if (is_alnum((unsigned char)pat[0]) && end > n && is_alnum((unsigned char)text[end - n - 1]))
        return false;
    return true;
}

/* Is the number that starts at `start` the operand of a comparison or a total? */
static bool is_operand(const char *text, size_t start) {
    static const char *const pats[] = {">=",
                                       "=>",
                                       ">",
                                       "<=",
                                       "=<",
                                       "<",
                                       "\xe2\x89\xa5" /* ≥ */,
                                       "\xe2\x89\xa4" /* ≤ */,
                                       "than",
                                       "equal to",
                                       "equals to",
                                       "at least",
                                       "at most",
                                       "out of",
                                       "of the",
                                       "above",
                                       "below",
                                       "over",
                                       "under",
                                       "exceeding"};
    size_t end = start;
    while (end > 0 && (is_ascii_space((unsigned char)text[end - 1]) || text[end - 1] == '*' ||
                       text[end - 1] == '`'))
        end--;
    for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++)
        if (ends_with_ci(text, end, pats[k])) return true;
    return false;
}

static bool final_number(const char *text, size_t len, bool skip_operands, numlit *out) {
    bool found = false;
    size_t i = 0;
    while (i < len) {
        if (!is_digit((unsigned char)text[i])) {
            i++;
            continue;
        }
        numlit nl;
        size_t j = scan_unsigned(text, len, i, &nl);
        scan_sign(text, i, &nl);
        if (!skip_operands || !is_operand(text, nl.start)) {
            *out = nl;
            found = true;
        }
        i = j;
    }
    return found;
}

bool rf_final_number(const char *text, size_t len, char *out, size_t cap) {
    numlit nl;
    if (!final_number(text, len, false, &nl)) return false;
    num_write(&nl, out, cap);
    return true;
}

bool rf_quoted_number(const char *text, size_t len, char *out, size_t cap) {
    numlit nl;
    if (!final_number(text, len, true, &nl)) return false;
    num_write(&nl, out, cap);
    return true;
}

void rf_grade_number(const char *reply, size_t reply_len, const char *expected, rf_grade *out) {
    grade_reset(out);
    numlit got, want;
    if (!final_number(reply, reply_len, false, &got)) return;
    out->found = true;
    size_t n = num_write(&got, out->value, sizeof out->value);
    out->truncated = n >= sizeof out->value;
    out->correct = parse_whole(expected, strlen(expected), &want) && num_equal(&got, &want);
}

/* ---- exact ---- */

void rf_grade_exact(const char *reply, size_t reply_len, const char *expected, rf_grade *out) {
    grade_reset(out);
    const char *r = reply, *e = expected;
    size_t rn = reply_len, en = strlen(expected);
    trim(&r, &rn);
    trim(&e, &en);
    out->found = rn > 0;
    set_value(out, r, rn);
    out->correct = rn == en && (rn == 0 || memcmp(r, e, rn) == 0);
}

/* ---- word ---- */

/* Matches needle at hay[p..]: case-folded code points, whitespace runs match whitespace runs.
 * On success *end is the byte after the match. */
static bool match_at(const unsigned char *hay, size_t hlen, size_t p, const unsigned char *nd,
                     size_t nlen, size_t *end) {
    size_t h = p, n = 0, ha, na;
    while (n < nlen) {
        uint32_t nc = utf8_dec(nd, nlen, n, &na);
        if (h >= hlen) return false;
        uint32_t hc = utf8_dec(hay, hlen, h, &ha);
        if (is_space_cp(nc)) {
            if (!is_space_cp(hc)) return false;
            for (n += na; n < nlen && is_space_cp(utf8_dec(nd, nlen, n, &na));) n += na;
            for (h += ha; h < hlen && is_space_cp(utf8_dec(hay, hlen, h, &ha));) h += ha;
            continue;
        }
        if (fold(hc) != fold(nc)) return false;
        h += ha;
        n += na;
    }
    *end = h;
    return true;
}

static bool find_word(const char *hay_s, size_t hlen, const char *needle, size_t *ms, size_t *me) {
    size_t nlen = strlen(needle);
    trim(&needle, &nlen);
    if (nlen == 0) return false;
    const unsigned char *hay = (const unsigned char *)hay_s, *nd = (const unsigned char *)needle;
    size_t adv;
    bool left = is_word_cp(utf8_dec(nd, nlen, 0, &adv));
    bool right = is_word_cp(utf8_prev(nd, nlen));
    for (size_t p = 0; p < hlen; p += adv) {
        utf8_dec(hay, hlen, p, &adv);
        if (left && p > 0 && is_word_cp(utf8_prev(hay, p))) continue;
        size_t e, a2;
        if (!match_at(hay, hlen, p, nd, nlen, &e)) continue;
        if (right && e < hlen && is_word_cp(utf8_dec(hay, hlen, e, &a2))) continue;
        *ms = p;
        *me = e;
        return true;
    }
    return false;
}

void rf_grade_word(const char *reply, size_t reply_len, const char *answer,
                   const char *const *aliases, int32_t n_aliases, rf_grade *out) {
    grade_reset(out);
    size_t ms, me;
    bool hit = find_word(reply, reply_len, answer, &ms, &me);
    for (int32_t k = 0; !hit && k < n_aliases; k++)
        hit = aliases[k] && find_word(reply, reply_len, aliases[k], &ms, &me);
    if (!hit) return;
    out->found = out->correct = true;
    set_value(out, reply + ms, me - ms);
}

void rf_grade_question(const rf_question *q, const char *reply, size_t reply_len, rf_grade *out) {
    switch (q->grader) {
    case RF_GRADER_NUMBER:
        rf_grade_number(reply, reply_len, q->answer, out);
        return;
    case RF_GRADER_EXACT:
        rf_grade_exact(reply, reply_len, q->answer, out);
        return;
    case RF_GRADER_WORD:
        rf_grade_word(reply, reply_len, q->answer, (const char *const *)q->aliases, q->n_aliases,
                      out);
        return;
    }
    grade_reset(out);
}

/* ---- agreement ---- */

bool rf_replies_identical(const rf_reply_ref *a, const rf_reply_ref *b) {
    if (!a->text || !b->text) return false;
    return a->len == b->len && (a->len == 0 || memcmp(a->text, b->text, a->len) == 0);
}

rf_status rf_agreement_compare(const char *const *ids, const rf_reply_ref *a, const rf_reply_ref *b,
                               int32_t n, rf_agreement *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    if (n < 0 || (n > 0 && (!ids || !a || !b)))
        return rf_error_set(err, RF_ERR_ARG, "agreement: bad arguments (n = %d)", (int)n);
    if (n == 0) return RF_OK;
    out->diff_ids = malloc((size_t)n * sizeof *out->diff_ids);
    if (!out->diff_ids) return rf_error_set(err, RF_ERR_NOMEM, "agreement: out of memory");
    out->n_items = n;
    for (int32_t i = 0; i < n; i++) {
        if (rf_replies_identical(&a[i], &b[i]))
            out->n_identical++;
        else
            out->diff_ids[out->n_diff++] = ids[i];
    }
    return RF_OK;
}

void rf_agreement_free(rf_agreement *ag) {
    free(ag->diff_ids);
    memset(ag, 0, sizeof *ag);
}
