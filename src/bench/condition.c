/* condition.c: the filter condition language (condition.h): a lexer (operators, plain decimals,
 * the field name), the parser, the printer and the evaluator. */
#include "bench/condition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

static bool is_sp(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

const char *rf_cond_op_str(rf_cond_op op) {
    switch (op) {
    case RF_COND_GE:
        return ">=";
    case RF_COND_GT:
        return ">";
    case RF_COND_LE:
        return "<=";
    case RF_COND_LT:
        return "<";
    case RF_COND_EQ:
        return "==";
    case RF_COND_NE:
        return "!=";
    }
    return "?";
}

typedef struct op_text {
    const char *t;
    rf_cond_op op;
} op_text;

/* Longest first, so ">=" is found before ">". */
static const op_text OPS[] = {
    {">=", RF_COND_GE},
    {"<=", RF_COND_LE},
    {"==", RF_COND_EQ},
    {"!=", RF_COND_NE},
    {"\xe2\x89\xa5", RF_COND_GE},
    {"\xe2\x89\xa4", RF_COND_LE},
    {"\xe2\x89\xa0", RF_COND_NE},
    {">", RF_COND_GT},
    {"<", RF_COND_LT},
    {"=", RF_COND_EQ},
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

bool rf_cond_op_parse(const char *s, size_t len, rf_cond_op *out) {
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

static bool lex_op(const char *s, size_t len, size_t *i, rf_cond_op *op) {
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
 * - 1) in magnitude, so rf_cond_format prints every value the lexer accepts in at most
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

static rf_cond_op flip(rf_cond_op op) {
    switch (op) {
    case RF_COND_GE:
        return RF_COND_LE;
    case RF_COND_LE:
        return RF_COND_GE;
    case RF_COND_GT:
        return RF_COND_LT;
    case RF_COND_LT:
        return RF_COND_GT;
    default:
        return op;
    }
}

rf_status rf_cond_parse(const char *text, size_t len, rf_cond *out, rf_error *err) {
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
    rf_cond c;
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
        rf_cond_op op;
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

int rf_cond_format(const rf_cond *c, char *buf, size_t cap) {
    char num[400]; /* %.60f of any finite double fits */
    format_threshold(c->threshold == 0 ? 0.0 : c->threshold, num, sizeof num);
    return snprintf(buf, cap, "id %s %s", rf_cond_op_str(c->op), num);
}

bool rf_cond_eval(const rf_cond *c, double id) {
    switch (c->op) {
    case RF_COND_GE:
        return id >= c->threshold;
    case RF_COND_GT:
        return id > c->threshold;
    case RF_COND_LE:
        return id <= c->threshold;
    case RF_COND_LT:
        return id < c->threshold;
    case RF_COND_EQ:
        return id == c->threshold;
    case RF_COND_NE:
        return id != c->threshold;
    }
    return false;
}

bool rf_cond_equal(const rf_cond *a, const rf_cond *b) {
    return a->op == b->op && a->threshold == b->threshold;
}

int64_t rf_cond_count(const rf_cond *c, const int64_t *ids, int32_t n) {
    int64_t k = 0;
    for (int32_t i = 0; i < n; i++) k += rf_cond_eval(c, (double)ids[i]);
    return k;
}
