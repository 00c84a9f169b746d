/* test_tokenizer_bpe.c: the byte-level BPE family ("gpt2", tokenizer_bpe.c) and its Unicode
 * tables (unicode.c): code point flags and UTF-8 rules, the qwen2 and smollm splits against
 * hand-derived word lists, merge order on tiny vocabularies, a data-driven table of hostile
 * vocabularies written as GGUF, work bounds that do not depend on timing, and, when the files
 * are present, llama.cpp's ids for every string of tests/data/tokenizer_ref_qwen2.tsv and
 * tokenizer_ref_smollm.tsv (tools/ref/gen_tokenizer_ref.py) with decode round trips, threads,
 * 1 MB of text and `roofline tokenize`. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gpt2_bytes.h"
#include "tok_ref.h"
#include "format/gguf.h"
#include "format/gguf_write.h"
#include "model/tokenizer.h"
#include "model/tokenizer_bpe.h"
#include "model/tokenizer_int.h"
#include "model/unicode.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Unicode tables and UTF-8 rules --------------------------------------------------- */

static void test_unicode(void) {
    static const struct {
        uint32_t cp, flags;
    } k_flags[] = {
        {'A', RF_UCP_LETTER},
        {'z', RF_UCP_LETTER},
        {'0', RF_UCP_NUMBER},
        {'9', RF_UCP_NUMBER},
        {' ', RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {'\n', RF_UCP_CONTROL | RF_UCP_WHITESPACE},
        {'\t', RF_UCP_CONTROL | RF_UCP_WHITESPACE},
        {0x0B, RF_UCP_CONTROL | RF_UCP_WHITESPACE},
        {0x1C, RF_UCP_CONTROL}, /* Python's isspace() says yes; White_Space says no */
        {0, RF_UCP_CONTROL},
        {'!', RF_UCP_PUNCTUATION},
        {'\'', RF_UCP_PUNCTUATION},
        {'_', RF_UCP_PUNCTUATION},
        {'$', RF_UCP_SYMBOL},
        {'+', RF_UCP_SYMBOL},
        {'`', RF_UCP_SYMBOL},
        {0x85, RF_UCP_CONTROL | RF_UCP_WHITESPACE},
        {0xA0, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0xAD, RF_UCP_CONTROL},     /* soft hyphen, Cf */
        {0xB2, RF_UCP_NUMBER},      /* superscript two, No */
        {0xB5, RF_UCP_LETTER},      /* micro sign */
        {0xD7, RF_UCP_SYMBOL},      /* multiplication sign */
        {0x0130, RF_UCP_LETTER},    /* I with dot above */
        {0x0301, RF_UCP_MARK},      /* combining acute */
        {0x0378, RF_UCP_UNDEFINED}, /* unassigned */
        {0x0660, RF_UCP_NUMBER},    /* Arabic-Indic zero */
        {0x05D0, RF_UCP_LETTER},    /* alef */
        {0x0600, RF_UCP_CONTROL},   /* Arabic number sign, Cf */
        {0x0903, RF_UCP_MARK},      /* Devanagari visarga, Mc */
        {0x1680, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0x180E, RF_UCP_CONTROL}, /* Mongolian vowel separator: Cf, not White_Space */
        {0x2003, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0x200B, RF_UCP_CONTROL}, /* zero width space: Cf */
        {0x200D, RF_UCP_CONTROL}, /* ZWJ */
        {0x2028, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0x2029, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0x202F, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0x205F, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0x2160, RF_UCP_NUMBER}, /* Roman numeral one, Nl */
        {0x20AC, RF_UCP_SYMBOL}, /* euro */
        {0x3000, RF_UCP_SEPARATOR | RF_UCP_WHITESPACE},
        {0x3001, RF_UCP_PUNCTUATION},
        {0x4E00, RF_UCP_LETTER},
        {0xD800, RF_UCP_CONTROL}, /* surrogate, Cs */
        {0xE000, RF_UCP_CONTROL}, /* private use, Co */
        {0xFE0F, RF_UCP_MARK},    /* variation selector 16 */
        {0xFEFF, RF_UCP_CONTROL},
        {0xFF10, RF_UCP_NUMBER}, /* fullwidth zero */
        {0xFFFD, RF_UCP_SYMBOL},
        {0x1F600, RF_UCP_SYMBOL}, /* grinning face */
        {0x1F3FD, RF_UCP_SYMBOL}, /* skin tone modifier: Sk */
        {0x1F1EB, RF_UCP_SYMBOL}, /* regional indicator */
        {0x1E030, RF_UCP_LETTER}, /* new in Unicode 15.0: the table is not 14.0 */
        {0x31350, RF_UCP_LETTER}, /* CJK extension H, new in 15.0 */
        {0x2EBF0, RF_UCP_LETTER}, /* CJK extension I, new in 15.1: 2EBF0..2EE5D */
        {0x2EE5E, RF_UCP_UNDEFINED},
        {0x0897, RF_UCP_UNDEFINED},   /* assigned in 16.0: the table is not 16.0 */
        {0xE0001, RF_UCP_CONTROL},    /* language tag */
        {0x10FFFF, RF_UCP_UNDEFINED}, /* noncharacter: Cn */
        {0x110000, RF_UCP_UNDEFINED}, /* past the code space */
        {0x1FFFFF, RF_UCP_UNDEFINED},
        {0xFFFFFFFF, RF_UCP_UNDEFINED},
    };
    for (size_t i = 0; i < COUNT(k_flags); i++)
        CHECK_MSG(rf_unicode_flags(k_flags[i].cp) == k_flags[i].flags, "U+%04X: 0x%x, want 0x%x",
                  k_flags[i].cp, rf_unicode_flags(k_flags[i].cp), k_flags[i].flags);

    /* Table invariants: runs sorted from 0, one category bit each; every code point has
     * exactly one category bit; White_Space on exactly 25 code points. */
    CHECK(rf_unicode_n_cat_ranges > 1000 && (rf_unicode_cat_ranges[0] >> 8) == 0);
    bool sorted = true;
    for (size_t i = 1; i < rf_unicode_n_cat_ranges; i++) {
        sorted = sorted && (rf_unicode_cat_ranges[i] >> 8) > (rf_unicode_cat_ranges[i - 1] >> 8);
        uint32_t f = rf_unicode_cat_ranges[i] & 0xFF;
        sorted = sorted && f && !(f & (f - 1)) &&
                 f != (rf_unicode_cat_ranges[i - 1] & 0xFF); /* maximal runs */
    }
    CHECK(sorted);
    size_t n_ws = 0, bad = 0;
    uint32_t n_cat[9] = {0};
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        uint32_t f = rf_unicode_flags(cp), c = f & 0xFF;
        n_ws += (f & RF_UCP_WHITESPACE) != 0;
        bad += c == 0 || (c & (c - 1)) || (f & ~0x1FFu);
        for (int b = 0; b < 8; b++) n_cat[b] += (c >> b) & 1;
    }
    CHECK(bad == 0);
    CHECK(n_ws == 25);
    /* Unicode 15.1.0 (unicodedata2 15.1.0): 136,726 letters (L*), 1,831 numbers (N*) */
    CHECK_MSG(n_cat[2] == 136726, "letters %u", n_cat[2]);
    CHECK_MSG(n_cat[1] == 1831, "numbers %u", n_cat[1]);

    static const uint32_t k_lower[][2] = {
        {'A', 'a'},
        {'Z', 'z'},
        {'a', 'a'},
        {'[', '['},
        {'@', '@'},
        {0x0130, 'i'},
        {0x212A, 'k'},
        {0x017F, 0x017F}, /* long s stays */
        {0x00C9, 0x00C9},
        {0xFF33, 0xFF33}, /* fullwidth S: not ASCII */
        {0xFFFFFFFF, 0xFFFFFFFF},
    };
    for (size_t i = 0; i < COUNT(k_lower); i++)
        CHECK_MSG(rf_unicode_lower_ascii(k_lower[i][0]) == k_lower[i][1], "lower U+%04X",
                  k_lower[i][0]);

    static const struct {
        const char *s;
        size_t n;
        uint32_t cp;
        size_t used;
    } k_dec[] = {
        {"A", 1, 'A', 1},
        {"\xc3\xa9", 2, 0xE9, 2},
        {"\xe2\x82\xac", 3, 0x20AC, 3},
        {"\xf0\x9f\x98\x80", 4, 0x1F600, 4},
        {"\xc3"
         "A",
         2, 0xFFFD, 1},         /* lead byte, no continuation */
        {"\x80", 1, 0xFFFD, 1}, /* stray continuation */
        {"\xbf\x80", 2, 0xFFFD, 1},
        {"\xff", 1, 0xFFFD, 1},
        {"\xf8\x88\x80\x80\x80", 5, 0xFFFD, 1}, /* 5-byte form: no such lead byte */
        {"\xe2\x82", 2, 0xFFFD, 1},             /* cut short */
        {"\xf0\x9f\x98", 3, 0xFFFD, 1},
        {"\xe2\x82\xac", 2, 0xFFFD, 1}, /* n limits it */
        {"\xc0\xaf", 2, 0x2F, 2},       /* overlong '/': llama.cpp takes it */
        {"\xe0\x80\x80", 3, 0, 3},      /* overlong NUL */
        {"\xed\xa0\x80", 3, 0xD800, 3}, /* surrogate */
        {"\xf4\x90\x80\x80", 4, 0x110000, 4},
        {"\xf7\xbf\xbf\xbf", 4, 0x1FFFFF, 4},
    };
    for (size_t i = 0; i < COUNT(k_dec); i++) {
        size_t used = 99;
        uint32_t cp = rf_utf8_decode((const uint8_t *)k_dec[i].s, k_dec[i].n, &used);
        CHECK_MSG(cp == k_dec[i].cp && used == k_dec[i].used, "decode case %zu: U+%04X/%zu", i, cp,
                  used);
    }
    static const uint32_t k_enc[] = {0,      0x7F,   0x80,    0x7FF,   0x800,
                                     0xD800, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < COUNT(k_enc); i++) {
        uint8_t b[4];
        size_t n = rf_utf8_encode(k_enc[i], b), used = 0;
        CHECK(n >= 1 && n <= 4 && rf_utf8_decode(b, n, &used) == k_enc[i] && used == n);
    }
    uint8_t b[4];
    CHECK(rf_utf8_encode(0x110000, b) == 0 && rf_utf8_encode(0xFFFFFFFF, b) == 0);
}

/* ---- the splits ------------------------------------------------------------------------- */

/* want: the words joined by '|' (no '|' in these texts). */
static void expect_split(const char *pre, const char *text, size_t len, const char *want,
                         int line) {
    char *norm = NULL;
    size_t nl = 0, *ends = NULL, nw = 0;
    rf_error err = {0};
    rf_status st = rf_bpe_split(pre, text, len, &norm, &nl, &ends, &nw, &err);
    char got[1024];
    size_t g = 0, prev = 0;
    for (size_t i = 0; st == RF_OK && i < nw && g + (ends[i] - prev) + 2 < sizeof got; i++) {
        if (i) got[g++] = '|';
        memcpy(got + g, norm + prev, ends[i] - prev);
        g += ends[i] - prev;
        prev = ends[i];
    }
    bool ok = st == RF_OK && (nw == 0 || ends[nw - 1] == nl) && g == strlen(want) &&
              memcmp(got, want, g) == 0;
    g_check_count++;
    if (!ok) {
        g_check_failures++;
        fprintf(stderr, "test_tokenizer_bpe.c:%d: split %s(", line, pre);
        print_escaped(text, len);
        fprintf(stderr, "):\n  got  ");
        print_escaped(got, g);
        fprintf(stderr, "\n  want ");
        print_escaped(want, strlen(want));
        fprintf(stderr, " %s\n", st ? err.msg : "");
    }
    free(norm);
    free(ends);
}
#define SPLIT(pre, text, want) expect_split((pre), (text), sizeof(text) - 1, (want), __LINE__)

static void test_splits(void) {
    /* qwen2: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
     *        ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    SPLIT("qwen2", "Hello world", "Hello| world");
    SPLIT("qwen2", "a 123", "a| |1|2|3"); /* digits one by one, the space alone */
    SPLIT("qwen2", "12abc34", "1|2|abc|3|4");
    SPLIT("qwen2", "don't", "don|'t");
    SPLIT("qwen2", "I'M", "I|'M"); /* case-insensitive */
    SPLIT("qwen2", "they'll WE'VE she'D", "they|'ll| WE|'VE| she|'D");
    SPLIT("qwen2", "x'Ll'Re", "x|'Ll|'Re");
    SPLIT("qwen2", "'", "'");
    SPLIT("qwen2", "'x", "'x"); /* not a contraction: the quote leads the letters */
    SPLIT("qwen2", "I'MOK 'Sup 'rest", "I|'M|OK| '|Sup| '|rest"); /* only a word's start */
    SPLIT("qwen2", "'Sup'REST", "'S|up|'RE|ST");
    SPLIT("qwen2", "\xc4\xb0'\xc4\xb0", "\xc4\xb0|'\xc4\xb0"); /* U+0130 lowercases to 'i' */
    SPLIT("qwen2", "a,b", "a|,b");
    SPLIT("qwen2", "a, b", "a|,| b");
    SPLIT("qwen2", "  a", " | a");
    SPLIT("qwen2", "a  b", "a| | b");
    SPLIT("qwen2", "a\n\nb", "a|\n\n|b");
    SPLIT("qwen2", "a  \n  b", "a|  \n| | b");
    SPLIT("qwen2", "trailing   ", "trailing|   ");
    SPLIT("qwen2", "x!!!\n\ny", "x|!!!\n\n|y");
    SPLIT("qwen2", " {\n", " {\n");
    SPLIT("qwen2", "\t\tx", "\t|\tx");
    SPLIT("qwen2", "x\r\n\r\n", "x|\r\n\r\n");
    SPLIT("qwen2", "\xc2\xa0y", "\xc2\xa0y");                 /* NBSP leads the word */
    SPLIT("qwen2", "e\xcc\x81", "e|\xcc\x81");                /* a mark is not \p{L} */
    SPLIT("qwen2", "\xf0\x9f\x98\x80x", "\xf0\x9f\x98\x80x"); /* a symbol leads letters */
    SPLIT("qwen2", "\xd9\xa3x", "\xd9\xa3|x");                /* Arabic-Indic three */
    SPLIT("qwen2", " \xe2\x86\x92 ", " \xe2\x86\x92| ");
    SPLIT("qwen2",
          "\xc3"
          "A",
          "\xef\xbf\xbd"
          "A");                      /* U+FFFD (a symbol) leads the letter */
    SPLIT("qwen2", "\xc0\xaf", "/"); /* the overlong form as its code point */
    SPLIT("qwen2", "\xf4\x90\x80\x80z", "\xf4\x90\x80\x80z"); /* past U+10FFFF: bytes kept */
    SPLIT("qwen2", "", "");

    /* smollm: \p{N} alone, then 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
     * \s+(?!\S) between the digits */
    SPLIT("smollm", "Hello world", "Hello| world");
    SPLIT("smollm", "a 123", "a| |1|2|3");
    SPLIT("smollm", "x  1", "x|  |1"); /* the run ends its segment: taken whole */
    SPLIT("smollm", "12abc34", "1|2|abc|3|4");
    SPLIT("smollm", "don't", "don|'t");
    SPLIT("smollm", "I'M", "I|'|M"); /* case-sensitive */
    SPLIT("smollm", "I'MOK 'sup 'rest", "I|'|MOK| '|sup| '|rest");
    SPLIT("smollm", "'sup'rest", "'s|up|'re|st");
    SPLIT("smollm", "they'll", "they|'ll");
    SPLIT("smollm", "a,b", "a|,|b");
    SPLIT("smollm", "  a", " | a");
    SPLIT("smollm", "a  b", "a| | b");
    SPLIT("smollm", "a\n\nb", "a|\n|\n|b");
    SPLIT("smollm", "trailing   ", "trailing|   ");
    SPLIT("smollm", "x!!!\n\ny", "x|!!!|\n|\n|y");
    SPLIT("smollm", " {\n", " {|\n");
    SPLIT("smollm", "\xd9\xa3\xd9\xa4x", "\xd9\xa3|\xd9\xa4|x");
    SPLIT("smollm", "x\xc2\xb2", "x|\xc2\xb2"); /* superscript two is \p{N} */
    SPLIT("smollm", "e\xcc\x81", "e|\xcc\x81");
    SPLIT("smollm",
          "\xc3"
          "A",
          "\xef\xbf\xbd|A");

    char *norm = NULL;
    size_t nl, *ends = NULL, nw;
    rf_error err = {0};
    CHECK(rf_bpe_split("llama3", "x", 1, &norm, &nl, &ends, &nw, &err) == RF_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "'llama3' (supported: qwen2, smollm)"), "%s", err.msg);
}

/* ---- tiny vocabularies ---------------------------------------------------------------- */

/* raw bytes -> byte-level text (malloc'd; gpt2_bytes.h) */
static char *bl(const char *raw, size_t n) {
    char *out = gpt2_text(raw, n);
    CHECK(out != NULL);
    if (!out) abort();
    return out;
}

typedef struct tiny_bpe {
    const char *pre;
    const char *const *extra;  /* raw texts of normal tokens from id 256 on, NULL-terminated */
    const char *const *merges; /* raw "LEFT RIGHT" pairs, split at the first '|' */
} tiny_bpe;

/* Ids: 0..255 the byte characters in byte order, then extra, then 4 special tokens. */
enum { T_EOT = 0, T_IMS, T_IME, T_TOOL, N_SPECIAL };
static const char *const k_special[N_SPECIAL] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>",
                                                 "<tool_call>"};

static rf_tokenizer *make_bpe(const tiny_bpe *v, int32_t *first_special) {
    size_t n_extra = 0, n_merges = 0;
    while (v->extra && v->extra[n_extra]) n_extra++;
    while (v->merges && v->merges[n_merges]) n_merges++;
    size_t n = 256 + n_extra + N_SPECIAL;
    rf_str *tok = xmalloc(n * sizeof *tok);
    int32_t *types = xmalloc(n * sizeof *types);
    char **owned = xmalloc((n + n_merges) * sizeof *owned);
    rf_str *mer = xmalloc((n_merges ? n_merges : 1) * sizeof *mer);
    size_t k = 0;
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        owned[k] = bl(&c, 1);
        tok[k] = (rf_str){owned[k], strlen(owned[k])};
        types[k++] = RF_TOKEN_NORMAL;
    }
    for (size_t i = 0; i < n_extra; i++) {
        owned[k] = bl(v->extra[i], strlen(v->extra[i]));
        tok[k] = (rf_str){owned[k], strlen(owned[k])};
        types[k++] = RF_TOKEN_NORMAL;
    }
    for (size_t i = 0; i < N_SPECIAL; i++) {
        owned[k] = NULL;
        tok[k] = (rf_str){k_special[i], strlen(k_special[i])};
        types[k++] = i == T_TOOL ? RF_TOKEN_USER_DEFINED : RF_TOKEN_CONTROL;
    }
    for (size_t i = 0; i < n_merges; i++) {
        const char *bar = strchr(v->merges[i], '|');
        char *l = bl(v->merges[i], (size_t)(bar - v->merges[i]));
        char *r = bl(bar + 1, strlen(bar + 1));
        char *m = xmalloc(strlen(l) + strlen(r) + 2);
        sprintf(m, "%s %s", l, r);
        free(l);
        free(r);
        owned[n + i] = m;
        mer[i] = (rf_str){m, strlen(m)};
    }
    rf_tokenizer_desc d = rf_tokenizer_desc_init();
    d.name = "tiny-bpe";
    d.model = "gpt2";
    d.pre = (rf_str){v->pre, strlen(v->pre)};
    d.n_tokens = d.n_types = n;
    d.tokens = tok;
    d.types = types;
    d.merges = mer;
    d.n_merges = n_merges;
    d.eos = (int64_t)(256 + n_extra + T_IME);
    d.add_bos = 0;
    rf_tokenizer *t = NULL;
    rf_error err = {0};
    rf_status st = rf_tokenizer_from_desc(&d, &t, &err);
    CHECK_MSG(st == RF_OK, "tiny vocabulary: %s", err.msg);
    for (size_t i = 0; i < n + n_merges; i++) free(owned[i]);
    free(owned);
    free(tok);
    free(types);
    free(mer);
    if (first_special) *first_special = (int32_t)(256 + n_extra);
    return t;
}

static int64_t enc(const rf_tokenizer *t, const char *s, size_t len, bool ps, int32_t *ids,
                   int64_t cap) {
    rf_error err = {0};
    int64_t n = rf_tokenizer_encode(t, s, len, true, ps, ids, cap, &err);
    if (n < 0) fprintf(stderr, "encode failed: %s\n", err.msg);
    return n;
}

static void expect_bpe(const rf_tokenizer *t, const char *s, bool ps, const int32_t *want,
                       int line) {
    int32_t got[256];
    int64_t n = enc(t, s, strlen(s), ps, got, 256), nw = 0;
    while (want[nw] >= 0) nw++;
    bool ok = n == nw;
    for (int64_t i = 0; ok && i < n; i++) ok = got[i] == want[i];
    g_check_count++;
    if (!ok) {
        g_check_failures++;
        fprintf(stderr, "test_tokenizer_bpe.c:%d: encode(", line);
        print_escaped(s, strlen(s));
        fprintf(stderr, ")\n  got ");
        for (int64_t i = 0; i < n && i < 256; i++) fprintf(stderr, " %d", got[i]);
        fprintf(stderr, "\n  want");
        for (int64_t i = 0; i < nw; i++) fprintf(stderr, " %d", want[i]);
        fputc('\n', stderr);
    }
}
#define EXPECT(t, s, ps, ...)                                                                      \
    expect_bpe((t), (s), (ps), (const int32_t[]){__VA_ARGS__, -1}, __LINE__)

/* decode(encode(s)) == s, specials parsed and rendered. */
static bool round_trips(const rf_tokenizer *t, const char *s, size_t len, const char *want,
                        size_t want_len) {
    rf_error err = {0};
    int64_t n = rf_tokenizer_encode(t, s, len, false, true, NULL, 0, &err);
    if (n < 0) return false;
    int32_t *ids = xmalloc((size_t)(n ? n : 1) * sizeof *ids);
    int64_t n2 = rf_tokenizer_encode(t, s, len, false, true, ids, n, &err);
    int64_t need = rf_tokenizer_decode(t, ids, n, true, NULL, 0);
    char *back = xmalloc((size_t)need + 1);
    int64_t got = rf_tokenizer_decode(t, ids, n, true, back, need + 1);
    bool ok =
        n2 == n && got == need && (size_t)got == want_len && memcmp(back, want, want_len) == 0;
    free(ids);
    free(back);
    return ok;
}

static void test_merges(void) {
    int32_t sp;
    /* Rank order, not position: "a b" before "b c" gives ab c; the other order a bc. */
    {
        const char *extra[] = {"ab", "bc", NULL}, *m[] = {"a|b", "b|c", NULL};
        rf_tokenizer *t = make_bpe(&(tiny_bpe){"qwen2", extra, m}, &sp);
        EXPECT(t, "abc", true, 256, 'c');
        EXPECT(t, "bcab", true, 257, 256);
        rf_tokenizer_free(t);
        const char *m2[] = {"b|c", "a|b", NULL};
        t = make_bpe(&(tiny_bpe){"qwen2", extra, m2}, &sp);
        EXPECT(t, "abc", true, 'a', 257);
        rf_tokenizer_free(t);
    }
    /* Equal ranks (the same pair twice): the left one first. */
    {
        const char *extra[] = {"aa", "aaaa", NULL}, *m[] = {"a|a", "aa|aa", NULL};
        rf_tokenizer *t = make_bpe(&(tiny_bpe){"qwen2", extra, m}, &sp);
        EXPECT(t, "aaa", true, 256, 'a');
        EXPECT(t, "aaaaa", true, 257, 'a');
        EXPECT(t, "aaaaaa", true, 257, 256);
        rf_tokenizer_free(t);
    }
    /* A merge reached through an intermediate, and a merge that never becomes adjacent. */
    {
        const char *extra[] = {"bc", "abc", "cd", NULL}, *m[] = {"b|c", "a|bc", "c|d", NULL};
        rf_tokenizer *t = make_bpe(&(tiny_bpe){"qwen2", extra, m}, &sp);
        EXPECT(t, "abc", true, 257);
        EXPECT(t, "abcd", true, 257, 'd'); /* bc (rank 0) wins over cd (rank 2) */
        EXPECT(t, "acd", true, 'a', 258);
        rf_tokenizer_free(t);
    }
    /* Merges work within words only: " a" is one word with qwen2, "a" "1" are two. A duplicate
     * merge keeps its first rank. */
    {
        const char *extra[] = {" a", "a1", " ab", NULL};
        const char *m[] = {" |a", "a|1", " a|b", " |a", NULL};
        rf_tokenizer *t = make_bpe(&(tiny_bpe){"qwen2", extra, m}, &sp);
        EXPECT(t, "x a1", true, 'x', 256, '1');
        EXPECT(t, " ab", true, 258);
        EXPECT(t, "a1", true, 'a', '1');
        rf_tokenizer_free(t);
    }
    /* Special tokens: control ones with parse_special, user-defined ones always; no BOS. */
    {
        const char *extra[] = {"ab", NULL}, *m[] = {"a|b", NULL};
        rf_tokenizer *t = make_bpe(&(tiny_bpe){"smollm", extra, m}, &sp);
        EXPECT(t, "<|im_start|>ab<|im_end|>", true, sp + T_IMS, 256, sp + T_IME);
        int32_t ids[64];
        int64_t n = enc(t, "<|im_start|>", 12, false, ids, 64);
        CHECK(n == 12 && ids[0] == '<' && ids[1] == '|');
        EXPECT(t, "a<tool_call>b", false, 'a', sp + T_TOOL, 'b');
        CHECK(!rf_tokenizer_add_bos(t) && !rf_tokenizer_add_eos(t));
        CHECK(rf_tokenizer_special(t).bos == 11 && rf_tokenizer_special(t).unk == -1);
        CHECK(rf_tokenizer_is_eog(t, sp + T_IME) && rf_tokenizer_is_eog(t, sp + T_EOT));
        /* Decoding: control tokens only on request; user-defined always; bytes back. */
        char buf[64];
        int32_t seq[] = {sp + T_IMS, 256, sp + T_TOOL, 0x0A, 0x20, 0xC3, 0xA9};
        int64_t k = rf_tokenizer_decode(t, seq, 7, false, buf, sizeof buf);
        CHECK(k == 17 && memcmp(buf, "ab<tool_call>\n \xc3\xa9", 17) == 0);
        k = rf_tokenizer_decode(t, seq, 1, true, buf, sizeof buf);
        CHECK(k == 12 && strcmp(buf, "<|im_start|>") == 0);
        rf_tokenizer_free(t);
    }
    /* Every byte is its own token with no merges, and decodes back; text round trips. */
    {
        rf_tokenizer *t = make_bpe(&(tiny_bpe){"qwen2", NULL, NULL}, &sp);
        char all[256];
        for (int b = 0; b < 256; b++) all[b] = (char)b;
        int32_t ids[600];
        for (int b = 0; b < 256; b++) {
            rf_error err = {0};
            int64_t n = rf_tokenizer_encode(t, all + b, 1, false, false, ids, 600, &err);
            char back[8];
            int32_t k = rf_tokenizer_piece(t, b, false, back, 8);
            bool valid = b < 0x80;
            /* a lone byte >= 0x80 is invalid UTF-8: U+FFFD, three bytes */
            CHECK_MSG(n == (valid ? 1 : 3) && (!valid || ids[0] == b), "byte 0x%02X: %lld", b,
                      (long long)n);
            CHECK(k == 1 && (uint8_t)back[0] == b);
        }
        const char *s = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80!\n\t x";
        CHECK(round_trips(t, s, strlen(s), s, strlen(s)));
        /* bad UTF-8 comes back as U+FFFD, as llama.cpp sees it */
        CHECK(round_trips(t,
                          "a\xff"
                          "b",
                          3,
                          "a\xef\xbf\xbd"
                          "b",
                          5));
        /* past U+10FFFF (llama.cpp aborts): the bytes round trip */
        CHECK(round_trips(t, "\xf4\x90\x80\x80", 4, "\xf4\x90\x80\x80", 4));
        CHECK(round_trips(t, "x\xf7\xbf\xbf\xbfy", 6, "x\xf7\xbf\xbf\xbfy", 6));
        rf_tokenizer_free(t);
    }
}

/* ---- hostile vocabularies as GGUF (data-driven) ------------------------------------------ */

typedef struct gguf_case {
    const char *what;
    const char *model;         /* NULL: key absent */
    const char *pre;           /* NULL: absent */
    bool pre_u32;              /* tokenizer.ggml.pre stored as u32 */
    const char *const *merges; /* NULL: absent */
    bool merges_i32;           /* tokenizer.ggml.merges stored as i32 array */
    const char *id_key;        /* one special-id key set to id_val */
    uint32_t id_val;
    bool drop_byte_a; /* the vocabulary lacks 'a' */
    rf_status want;
    const char *msg1, *msg2; /* substrings of the message */
} gguf_case;

/* tokens: the 256 byte characters, "ab", "Ġa", the specials; merges given by the case. */
static rf_status load_case(const gguf_case *c, rf_error *err) {
    const char *toks[256 + 2 + N_SPECIAL];
    char *owned[256];
    int32_t types[256 + 2 + N_SPECIAL];
    size_t n = 0;
    for (int b = 0; b < 256; b++) {
        char ch = (char)b;
        owned[b] = bl(&ch, 1);
        if (c->drop_byte_a && b == 'a') owned[b][0] = '\x01'; /* an unrelated text instead */
        toks[n] = owned[b];
        types[n++] = RF_TOKEN_NORMAL;
    }
    toks[n] = "ab";
    types[n++] = RF_TOKEN_NORMAL;
    toks[n] = "\xc4\xa0"
              "a";
    types[n++] = RF_TOKEN_NORMAL;
    for (int i = 0; i < N_SPECIAL; i++) {
        toks[n] = k_special[i];
        types[n++] = i == T_TOOL ? RF_TOKEN_USER_DEFINED : RF_TOKEN_CONTROL;
    }
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error werr = {0};
    bool ok = w != NULL;
    ok = ok && rf_gguf_writer_add_str(w, "general.architecture", "qwen2", &werr) == RF_OK;
    if (c->model)
        ok = ok && rf_gguf_writer_add_str(w, "tokenizer.ggml.model", c->model, &werr) == 0;
    if (c->pre && !c->pre_u32)
        ok = ok && rf_gguf_writer_add_str(w, "tokenizer.ggml.pre", c->pre, &werr) == RF_OK;
    if (c->pre_u32) ok = ok && rf_gguf_writer_add_u32(w, "tokenizer.ggml.pre", 7, &werr) == RF_OK;
    ok = ok && rf_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, n, &werr) == 0;
    ok = ok && rf_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", RF_GGUF_I32, types, n,
                                      &werr) == RF_OK;
    if (c->merges && !c->merges_i32) {
        size_t nm = 0;
        while (c->merges[nm]) nm++;
        ok = ok && rf_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", c->merges, NULL, nm,
                                              &werr) == RF_OK;
    }
    if (c->merges_i32) {
        int32_t v[2] = {1, 2};
        ok =
            ok && rf_gguf_writer_add_arr(w, "tokenizer.ggml.merges", RF_GGUF_I32, v, 2, &werr) == 0;
    }
    ok = ok && rf_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", false, &werr) == RF_OK;
    if (c->id_key) ok = ok && rf_gguf_writer_add_u32(w, c->id_key, c->id_val, &werr) == RF_OK;
    void *buf = NULL;
    size_t size = 0;
    ok = ok && rf_gguf_writer_to_memory(w, &buf, &size, &werr) == RF_OK;
    rf_gguf_writer_free(w);
    for (int b = 0; b < 256; b++) free(owned[b]);
    CHECK_MSG(ok, "writing the test GGUF: %s", werr.msg);
    if (!ok) return RF_ERR_INTERNAL;
    rf_gguf *g = NULL;
    rf_status st = rf_gguf_open_memory(buf, size, "bad.gguf", &g, err);
    CHECK_MSG(st == RF_OK, "reading the test GGUF: %s", err->msg);
    if (st == RF_OK) {
        rf_tokenizer *t = NULL;
        st = rf_tokenizer_from_gguf(g, &t, err);
        CHECK((st == RF_OK) == (t != NULL));
        rf_gguf_close(g); /* the tokenizer must not depend on the file */
        if (t) {
            int32_t ids[16];
            rf_error e2 = {0};
            int64_t k = rf_tokenizer_encode(t, " ab<|im_end|>", 13, true, true, ids, 16, &e2);
            if (c->drop_byte_a) {
                /* a byte with no token is dropped, as llama.cpp drops it */
                CHECK_MSG(k == 3 && ids[0] == ' ' && ids[1] == 'b', "%lld: %s", (long long)k,
                          e2.msg);
                CHECK(rf_tokenizer_encode(t, "xyz", 3, true, true, ids, 16, &e2) == 3);
            } else {
                CHECK(k >= 2 && ids[k - 1] == 256 + 2 + T_IME);
            }
            rf_tokenizer_free(t);
        }
    }
    free(buf);
    return st;
}

static void test_hostile(void) {
    static const char *const good[] = {"a b", "\xc4\xa0 a", NULL};
    static const char *const dup[] = {"a b", "a b", "\xc4\xa0 a", NULL};
    static const char *const empty[] = {NULL};
    static const char *const unknown_left[] = {"a b", "zz b", NULL};
    static const char *const unknown_right[] = {"a \xc4\xa0\xc4\xa0", NULL};
    static const char *const no_space[] = {"ab", NULL};
    static const char *const two_spaces[] = {"a  b", NULL};
    static const char *const three_parts[] = {"a b c", NULL};
    static const char *const trailing[] = {"a ", NULL};
    static const char *const leading[] = {" a", NULL};
    static const char *const blank[] = {"", NULL};
    static const char *const not_merged[] = {"b a", NULL};
    static const char *const ctl[] = {"a\x1b[2J b", NULL};
    static const gguf_case k_cases[] = {
        {"good qwen2", "gpt2", "qwen2", false, good, false, NULL, 0, false, RF_OK, NULL, NULL},
        {"good smollm", "gpt2", "smollm", false, good, false, NULL, 0, false, RF_OK, NULL, NULL},
        {"duplicate merge", "gpt2", "qwen2", false, dup, false, NULL, 0, false, RF_OK, NULL, NULL},
        {"no merges at all", "gpt2", "qwen2", false, empty, false, NULL, 0, false, RF_OK, NULL,
         NULL},
        {"a byte without its token", "gpt2", "qwen2", false, empty, false, NULL, 0, true, RF_OK,
         NULL, NULL},
        {"merge names an unknown token", "gpt2", "qwen2", false, unknown_left, false, NULL, 0,
         false, RF_ERR_MODEL, "'tokenizer.ggml.merges'[1] = 'zz b'", "'zz' is not a token"},
        {"merge names an unknown right token", "gpt2", "qwen2", false, unknown_right, false, NULL,
         0, false, RF_ERR_MODEL, "'tokenizer.ggml.merges'[0]", "'\xc4\xa0\xc4\xa0' is not a token"},
        {"merge without a space", "gpt2", "qwen2", false, no_space, false, NULL, 0, false,
         RF_ERR_MODEL, "[0] = 'ab'", "is not two tokens separated by one space"},
        {"merge with two spaces", "gpt2", "qwen2", false, two_spaces, false, NULL, 0, false,
         RF_ERR_MODEL, "[0] = 'a  b'", "is not two tokens separated by one space"},
        {"merge of three parts", "gpt2", "qwen2", false, three_parts, false, NULL, 0, false,
         RF_ERR_MODEL, "'a b c'", "is not two tokens separated by one space"},
        {"merge with an empty right side", "gpt2", "qwen2", false, trailing, false, NULL, 0, false,
         RF_ERR_MODEL, "'a '", "is not two tokens separated by one space"},
        {"merge with an empty left side", "gpt2", "qwen2", false, leading, false, NULL, 0, false,
         RF_ERR_MODEL, "' a'", "is not two tokens separated by one space"},
        {"empty merge", "gpt2", "qwen2", false, blank, false, NULL, 0, false, RF_ERR_MODEL,
         "[0] = ''", "is not two tokens separated by one space"},
        {"merge makes no token", "gpt2", "qwen2", false, not_merged, false, NULL, 0, false,
         RF_ERR_MODEL, "[0] = 'b a'", "the merged text 'ba' is not a token"},
        {"merge with control bytes", "gpt2", "qwen2", false, ctl, false, NULL, 0, false,
         RF_ERR_MODEL, "'a?[2J b'", "'a?[2J' is not a token"},
        {"merges missing", "gpt2", "qwen2", false, NULL, false, NULL, 0, false, RF_ERR_MODEL,
         "missing metadata key 'tokenizer.ggml.merges'", "gpt2"},
        {"merges of the wrong type", "gpt2", "qwen2", false, NULL, true, NULL, 0, false,
         RF_ERR_MODEL, "bad.gguf", "tokenizer.ggml.merges"},
        {"unknown pre-tokenizer", "gpt2", "llama3", false, good, false, NULL, 0, false,
         RF_ERR_UNSUPPORTED, "key 'tokenizer.ggml.pre': unsupported pre-tokenizer 'llama3'",
         "(supported: qwen2, smollm)"},
        {"pre-tokenizer with control bytes", "gpt2", "qw\x1b[0men", false, good, false, NULL, 0,
         false, RF_ERR_UNSUPPORTED, "unsupported pre-tokenizer 'qw?[0men'", "supported"},
        {"pre-tokenizer missing", "gpt2", NULL, false, good, false, NULL, 0, false,
         RF_ERR_UNSUPPORTED, "missing metadata key 'tokenizer.ggml.pre'",
         "supported: qwen2, smollm"},
        {"pre-tokenizer of the wrong type", "gpt2", NULL, true, good, false, NULL, 0, false,
         RF_ERR_MODEL, "bad.gguf", "tokenizer.ggml.pre"},
        {"unknown tokenizer model", "bert", "qwen2", false, good, false, NULL, 0, false,
         RF_ERR_UNSUPPORTED, "unsupported tokenizer model 'bert'", "(supported: llama, gpt2)"},
        {"tokenizer model missing", NULL, "qwen2", false, good, false, NULL, 0, false, RF_ERR_MODEL,
         "tokenizer.ggml.model", NULL},
        {"eos id out of range", "gpt2", "qwen2", false, good, false, "tokenizer.ggml.eos_token_id",
         262, false, RF_ERR_MODEL, "'tokenizer.ggml.eos_token_id' = 262 is out of range",
         "262 tokens"},
        {"bos id out of range", "gpt2", "qwen2", false, good, false, "tokenizer.ggml.bos_token_id",
         4000000000u, false, RF_ERR_MODEL, "'tokenizer.ggml.bos_token_id' = 4000000000",
         "out of range"},
        {"eot id out of range", "gpt2", "qwen2", false, good, false, "tokenizer.ggml.eot_token_id",
         1u << 31, false, RF_ERR_MODEL, "tokenizer.ggml.eot_token_id", "out of range"},
        {"last id is fine", "gpt2", "qwen2", false, good, false, "tokenizer.ggml.eos_token_id",
         256 + 2 + T_IME, false, RF_OK, NULL, NULL},
    };
    for (size_t i = 0; i < COUNT(k_cases); i++) {
        const gguf_case *c = &k_cases[i];
        rf_error err = {0};
        rf_status st = load_case(c, &err);
        CHECK_MSG(st == c->want, "%s: status %d, want %d (%s)", c->what, st, c->want, err.msg);
        if (c->msg1) CHECK_MSG(strstr(err.msg, c->msg1), "%s: '%s'", c->what, err.msg);
        if (c->msg2) CHECK_MSG(strstr(err.msg, c->msg2), "%s: '%s'", c->what, err.msg);
        if (c->want) CHECK_MSG(!strchr(err.msg, '\n'), "%s: one line", c->what);
    }
}

/* ---- work bounds (not timing) --------------------------------------------------------- */

static void check_work(const rf_bpe_work *w, const char *what) {
    /* A word of n bytes: at most n - 1 merges, n - 1 + 2 merges pushes and lookups, 2n - 2
     * pairs on the heap at once; each lookup visits few slots (load <= 2/3). */
    CHECK_MSG(w->merges <= w->bytes - w->words, "%s: %llu merges, %llu bytes, %llu words", what,
              (unsigned long long)w->merges, (unsigned long long)w->bytes,
              (unsigned long long)w->words);
    CHECK_MSG(w->pops == w->pushes, "%s: pops %llu pushes %llu", what, (unsigned long long)w->pops,
              (unsigned long long)w->pushes);
    CHECK_MSG(w->lookups <= (w->bytes - w->words) + 2 * w->merges, "%s: %llu lookups", what,
              (unsigned long long)w->lookups);
    CHECK_MSG(w->pushes <= w->lookups, "%s", what);
    CHECK_MSG(w->max_heap <= 2 * w->bytes, "%s: heap %llu", what, (unsigned long long)w->max_heap);
    CHECK_MSG(w->probes <= 4 * w->lookups + 1, "%s: %llu probes for %llu lookups", what,
              (unsigned long long)w->probes, (unsigned long long)w->lookups);
}

static void test_work(void) {
    /* One 100,000-byte word that merges all the way up a ladder aa, aaaa, ... (log n levels):
     * the heap does it in O(n log n); a scan of the merges per word or a rescan of the word per
     * merge would be quadratic. The counts are exact properties of the algorithm. */
    const char *extra[] = {"aa", "aaaa", "aaaaaaaa", "aaaaaaaaaaaaaaaa", NULL};
    const char *m[] = {"a|a", "aa|aa", "aaaa|aaaa", "aaaaaaaa|aaaaaaaa", NULL};
    int32_t sp;
    rf_tokenizer *t = make_bpe(&(tiny_bpe){"qwen2", extra, m}, &sp);
    const size_t n = 100000;
    char *s = xmalloc(n);
    memset(s, 'a', n);
    rf_bpe_work w;
    memset(&w, 0, sizeof w);
    int32_t *ids = xmalloc(n * sizeof *ids);
    rf_tok_out out = {ids, (int64_t)n, 0};
    rf_error err = {0};
    CHECK(rf_bpe_encode_counted(t, s, n, &out, &w, &err) == RF_OK);
    CHECK(w.words == 1 && w.bytes == n);
    CHECK(out.n == (int64_t)(n / 16)); /* 100000 = 6250 x 16 */
    bool all16 = true;
    for (int64_t i = 0; i < out.n && i < (int64_t)n; i++) all16 = all16 && ids[i] == 259;
    CHECK(all16);
    CHECK(w.merges == n - n / 16); /* every merge removes one symbol */
    check_work(&w, "ladder");

    /* Many short words: work in proportion to the bytes. */
    for (size_t i = 0; i < n; i++) s[i] = (i % 7 == 6) ? ' ' : 'a';
    memset(&w, 0, sizeof w);
    out.n = 0;
    CHECK(rf_bpe_encode_counted(t, s, n, &out, &w, &err) == RF_OK);
    check_work(&w, "short words");
    CHECK(w.words >= n / 7);

    /* Not a BPE tokenizer: refused. */
    rf_tokenizer_desc d = rf_tokenizer_desc_init();
    rf_str one = {"x", 1};
    d.model = "llama";
    d.n_tokens = 1;
    d.tokens = &one;
    d.add_bos = 0;
    rf_tokenizer *spm = NULL;
    CHECK(rf_tokenizer_from_desc(&d, &spm, &err) == RF_OK);
    if (spm) {
        CHECK(rf_bpe_encode_counted(spm, "x", 1, &out, &w, &err) == RF_ERR_ARG);
        rf_tokenizer_free(spm);
    }
    free(ids);
    free(s);
    rf_tokenizer_free(t);
}

/* ---- the real vocabularies against llama.cpp --------------------------------------------- */

/* What llama.cpp makes of the text before splitting (bad bytes to U+FFFD): the split hook's
 * normalised text, whose rules test_splits and test_unicode pin down. */
static char *normalised(const char *pre, const char *s, size_t len, size_t *out_len) {
    char *norm = NULL;
    size_t *ends = NULL, nw = 0;
    rf_error err = {0};
    if (rf_bpe_split(pre, s, len, &norm, out_len, &ends, &nw, &err)) return NULL;
    free(ends);
    if (!norm) norm = xmalloc(1);
    return norm;
}

/* `roofline tokenize -m model -f file`: the ids it prints for text. */
static int64_t cli_tokenize(const char *model, const char *text, size_t len, int32_t *ids,
                            int64_t cap) {
    const char *bin = getenv("ROOFLINE_BIN");
    if (!bin || access(bin, X_OK) != 0) return -2;
    char path[] = "/tmp/rf_bpe_cli_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    bool ok = write(fd, text, len) == (ssize_t)len;
    close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' tokenize -m '%s' -f '%s'", bin, model, path);
    FILE *p = ok ? popen(cmd, "r") : NULL;
    int64_t n = 0;
    if (p) {
        long v;
        while (n < cap && fscanf(p, "%ld", &v) == 1) ids[n++] = (int32_t)v;
        if (pclose(p) != 0) n = -1;
    } else {
        n = -1;
    }
    unlink(path);
    return n;
}

typedef struct model_facts {
    const char *file, *ref, *pre;
    int32_t n_vocab, bos, eos, im_start, im_end, tool_call; /* -1: none */
    int n_lost; /* bytes whose GPT-2 character is no token (llama.cpp drops them) */
} model_facts;

static void test_real_model(const char *path, const model_facts *mf) {
    const char *data = getenv("ROOFLINE_TEST_DATA");
    char ref_path[4096];
    snprintf(ref_path, sizeof ref_path, "%s/%s", data ? data : "tests/data", mf->ref);

    rf_gguf *g = NULL;
    rf_error err = {0};
    rf_status st = rf_gguf_open(path, &g, &err);
    CHECK_MSG(st == RF_OK, "%s", err.msg);
    if (st) return;
    rf_tokenizer *t = NULL;
    double t0 = now_s();
    st = rf_tokenizer_from_gguf(g, &t, &err);
    double t1 = now_s();
    rf_gguf_close(g);
    CHECK_MSG(st == RF_OK, "%s", err.msg);
    if (st) return;
    fprintf(stderr, "%s: loaded the vocabulary (%d tokens) in %.3f s\n", mf->file,
            rf_tokenizer_n_vocab(t), t1 - t0);

    /* Facts from the file (python3 -c "import gguf": see docs/tokenizer.md). */
    rf_special_tokens sp = rf_tokenizer_special(t);
    CHECK(rf_tokenizer_n_vocab(t) == mf->n_vocab);
    CHECK_MSG(sp.bos == mf->bos && sp.eos == mf->eos, "bos %d eos %d", sp.bos, sp.eos);
    CHECK(!rf_tokenizer_add_bos(t) && !rf_tokenizer_add_eos(t)); /* add_bos_token false */
    CHECK(rf_tokenizer_is_eog(t, mf->im_end));
    CHECK(rf_tokenizer_token_type(t, mf->im_start) == RF_TOKEN_CONTROL);
    CHECK(strcmp(rf_tokenizer_token_text(t, mf->im_start), "<|im_start|>") == 0);
    /* The byte characters that are tokens (Qwen2.5: all 256; SmolLM2: all but 21, among them
     * 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, 0xF5-0xFF). An ASCII byte
     * alone is one token that decodes back, or, lost, no token at all. */
    bool lost[256];
    int n_lost = 0;
    for (int b = 0; b < 256; b++) {
        char c = (char)b, *text = bl(&c, 1);
        lost[b] = rf_tok_lookup(t, text, strlen(text)) < 0;
        n_lost += lost[b];
        free(text);
    }
    CHECK_MSG(n_lost == mf->n_lost, "%d bytes without a token", n_lost);
    for (int b = 0; b < 128; b++) {
        char c = (char)b, back[4];
        int32_t id = -1;
        int64_t n = rf_tokenizer_encode(t, &c, 1, true, false, &id, 1, &err);
        if (lost[b])
            CHECK_MSG(n == 0, "lost byte 0x%02X: %lld tokens", b, (long long)n);
        else
            CHECK_MSG(n == 1 && rf_tokenizer_piece(t, id, false, back, 4) == 1 && back[0] == c,
                      "byte 0x%02X", b);
    }
    {
        int32_t ids[64];
        /* Without parse_special, control text is text; user-defined tokens still split. */
        int64_t n = rf_tokenizer_encode(t, "<|im_start|>x", 13, true, false, ids, 64, &err);
        CHECK(n > 2);
        for (int64_t i = 0; i < n && i < 64; i++) CHECK(ids[i] != mf->im_start);
        n = rf_tokenizer_encode(t, "<|im_start|>x", 13, true, true, ids, 64, &err);
        CHECK(n == 2 && ids[0] == mf->im_start);
        if (mf->tool_call >= 0) {
            n = rf_tokenizer_encode(t, "a<tool_call>b", 13, true, false, ids, 64, &err);
            CHECK(n == 3 && ids[1] == mf->tool_call);
        }
        char buf[32];
        CHECK(rf_tokenizer_decode(t, &mf->im_end, 1, false, buf, sizeof buf) == 0);
        CHECK(rf_tokenizer_decode(t, &mf->im_end, 1, true, buf, sizeof buf) == 10 &&
              strcmp(buf, "<|im_end|>") == 0);
    }

    size_t n_cases = 0;
    ref_case *cases = read_ref(ref_path, &n_cases);
    CHECK_MSG(n_cases >= 150, "%zu reference strings", n_cases);
    size_t matched = 0, round_tripped = 0, with_special = 0;
    for (size_t i = 0; i < n_cases; i++) {
        const ref_case *c = &cases[i];
        int32_t *ids = NULL;
        int64_t n = ref_encode(t, c->text, c->len, &ids);
        bool same = n == c->n && memcmp(ids, c->ids, (size_t)n * sizeof *ids) == 0;
        matched += same;
        g_check_count++;
        if (!same) {
            g_check_failures++;
            fprintf(stderr, "%s: mismatch for ", mf->file);
            print_escaped(c->text, c->len);
            fprintf(stderr, "\n  ours  :");
            for (int64_t k = 0; k < n; k++) fprintf(stderr, " %d", ids[k]);
            fprintf(stderr, "\n  llama :");
            for (int64_t k = 0; k < c->n; k++) fprintf(stderr, " %d", c->ids[k]);
            fputc('\n', stderr);
        }
        /* decode(encode(s)) == s, specials rendered; bad UTF-8 comes back as llama.cpp saw it
         * (U+FFFD for each bad byte), without the lost bytes. */
        bool has_special = false;
        for (int64_t k = 0; k < n; k++)
            has_special |= rf_tokenizer_token_type(t, ids[k]) != RF_TOKEN_NORMAL;
        with_special += has_special;
        size_t wl = 0;
        char *want = normalised(mf->pre, c->text, c->len, &wl);
        if (want) {
            size_t k = 0;
            for (size_t j = 0; j < wl; j++)
                if (!lost[(uint8_t)want[j]]) want[k++] = want[j];
            wl = k;
        }
        if (n >= 0 && want) {
            int64_t need = rf_tokenizer_decode(t, ids, n, true, NULL, 0);
            char *back = xmalloc((size_t)need + 1);
            int64_t got = rf_tokenizer_decode(t, ids, n, true, back, need + 1);
            bool ok = got == need && (size_t)got == wl && memcmp(back, want, wl) == 0;
            round_tripped += ok;
            CHECK_MSG(ok, "%s: decode(encode(s)) != s for case %zu", mf->file, i);
            free(back);
        }
        free(want);
        free(ids);
    }
    fprintf(stderr,
            "%s: llama.cpp reference: %zu/%zu exact id matches (%zu with special tokens); "
            "%zu/%zu round trip\n",
            mf->file, matched, n_cases, with_special, round_tripped, n_cases);
    CHECK(matched == n_cases && round_tripped == n_cases && with_special >= 8);

    /* The same strings from four threads at once. */
    pthread_t th[4];
    ref_thread_arg ta[4];
    for (int i = 0; i < 4; i++) {
        ta[i] = (ref_thread_arg){t, cases, n_cases, 0};
        pthread_create(&th[i], NULL, ref_thread_main, &ta[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(ta[i].mismatches == 0, "thread %d: %d mismatches", i, ta[i].mismatches);
    }

    /* Code points past U+10FFFF (llama.cpp aborts on them): the bytes round trip (but for
     * the lost ones: F7 in SmolLM2). */
    {
        const char s[] = "x\xf4\x90\x80\x80y \xf7\xbf\xbf\xbf";
        char want[sizeof s];
        size_t wl = 0;
        for (size_t j = 0; j + 1 < sizeof s; j++)
            if (!lost[(uint8_t)s[j]]) want[wl++] = s[j];
        CHECK(round_trips(t, s, sizeof s - 1, want, wl));
    }

    /* 1 MB of text on the real vocabulary (all cases glued together, repeated), with the work
     * counted: the bounds of check_work hold on real text too. */
    size_t total = 0;
    for (size_t i = 0; i < n_cases; i++) total += cases[i].len;
    if (total > 0) {
        size_t big_n = 1 << 20;
        char *big = xmalloc(big_n);
        for (size_t k = 0, i = 0; k < big_n; i = (i + 1) % n_cases) {
            size_t m = cases[i].len < big_n - k ? cases[i].len : big_n - k;
            memcpy(big + k, cases[i].text, m);
            k += m;
        }
        double b0 = now_s();
        int64_t n = rf_tokenizer_encode(t, big, big_n, true, true, NULL, 0, &err);
        double b1 = now_s();
        CHECK(n > 0 && n < (int64_t)big_n);
        fprintf(stderr, "%s: 1 MB mixed text: %lld tokens in %.2f s\n", mf->file, (long long)n,
                b1 - b0);
        rf_bpe_work w;
        memset(&w, 0, sizeof w);
        rf_tok_out out = {NULL, 0, 0};
        CHECK(rf_bpe_encode_counted(t, big, big_n, &out, &w, &err) == RF_OK);
        check_work(&w, mf->file);
        CHECK(w.bytes >= big_n && w.words > big_n / 16);
        /* 1 MB of newlines is one word of merges, of a bounded number of tokens. */
        memset(big, '\n', big_n);
        n = rf_tokenizer_encode(t, big, big_n, true, true, NULL, 0, &err);
        CHECK(n > 0 && n <= (int64_t)big_n / 2);
        free(big);
    }

    /* `roofline tokenize` prints the same ids (ChatML with newlines, through -f). */
    for (size_t i = 0; i < n_cases; i++) {
        const ref_case *c = &cases[i];
        if (c->len < 20 || !strstr(c->text, "<|im_start|>") || !strchr(c->text, '\n')) continue;
        int32_t ids[256];
        int64_t n = cli_tokenize(path, c->text, c->len, ids, 256);
        if (n == -2) {
            fprintf(stderr, "ROOFLINE_BIN not set: roofline tokenize not checked\n");
            break;
        }
        CHECK_MSG(n == c->n && memcmp(ids, c->ids, (size_t)n * sizeof *ids) == 0,
                  "%s: roofline tokenize gave %lld ids", mf->file, (long long)n);
    }

    free_ref(cases, n_cases);
    rf_tokenizer_free(t);
}

/* The BPE model files: ROOFLINE_TEST_QWEN2 / ROOFLINE_TEST_SMOLLM, else beside the default
 * model (models/, where scripts/fetch_models.py puts them). */
static const char *find_model(const char *env, const char *file, char *buf, size_t cap) {
    const char *p = getenv(env);
    if (p && access(p, R_OK) == 0) return p;
    const char *def = getenv("ROOFLINE_TEST_MODEL");
    const char *slash = def ? strrchr(def, '/') : NULL;
    if (slash)
        snprintf(buf, cap, "%.*s/%s", (int)(slash - def), def, file);
    else
        snprintf(buf, cap, "models/%s", file);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

int main(void) {
    test_unicode();
    test_splits();
    test_merges();
    test_hostile();
    test_work();
    if (g_check_failures) return check_summary("test_tokenizer_bpe");

    static const model_facts k_models[] = {
        {"qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "tokenizer_ref_qwen2.tsv", "qwen2", 151936,
         151643, 151645, 151644, 151645, 151657, 0},
        {"smollm2-135m-instruct-q4_1.gguf", "tokenizer_ref_smollm.tsv", "smollm", 49152, 1, 2, 1, 2,
         -1, 21},
    };
    static const char *const k_env[] = {"ROOFLINE_TEST_QWEN2", "ROOFLINE_TEST_SMOLLM"};
    int found = 0;
    for (size_t i = 0; i < COUNT(k_models); i++) {
        char buf[4096];
        const char *path = find_model(k_env[i], k_models[i].file, buf, sizeof buf);
        if (!path) {
            fprintf(stderr, "%s not found: skipped (scripts/fetch_models.py places it)\n",
                    k_models[i].file);
            continue;
        }
        found++;
        test_real_model(path, &k_models[i]);
    }
    int rc = check_summary("test_tokenizer_bpe");
    return rc ? rc : found ? 0 : 77;
}
