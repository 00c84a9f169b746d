/* graders.h: grading one reply against one expected answer (number, exact, word), extracting
 * the value that was graded (for records), and character-for-character agreement between two
 * backends' replies to the same items.
 *
 * Rules:
 *  - number: the final number in the reply. A number is an optional minus sign ('-' or U+2212,
 *    not preceded by a letter or digit, so "10-20" is 10 and 20), digits with optional
 *    thousands separators ("1,234,567": a first group of 1-3 digits, then ",ddd" groups), and an
 *    optional fraction (".5"; a '.' not followed by a digit is punctuation, so "1,234." is 1234).
 *    Values compare as exact decimals: "926.0" equals "926", "-0" equals "0". The recorded value
 *    is the canonical text ("1234", "-5", "2.5").
 *  - exact: the reply and the answer with ASCII whitespace trimmed at both ends, byte for byte.
 *  - word: the answer or any alias occurs in the reply, case-insensitively (ASCII and Latin-1
 *    letters), with a word boundary at each end that is a word character (so "Paris." counts,
 *    "Parisian" does not; "D.C." may be followed by anything). A whitespace run in the answer
 *    matches any whitespace run in the reply. The recorded value is the matched reply text.
 *
 * Ownership: graders read reply (reply_len bytes, need not be NUL-terminated) and the expected
 * strings, and write into a caller-owned rf_grade; nothing is allocated. rf_agreement_compare
 * allocates out->diff_ids (the array only: the strings are the caller's ids, borrowed), which
 * rf_agreement_free releases.
 */
#ifndef RF_BENCH_GRADERS_H
#define RF_BENCH_GRADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/questions.h"
#include "roofline/status.h"

#define RF_GRADE_VALUE_MAX 128

typedef struct rf_grade {
    bool correct;
    bool found;     /* a value was extracted: a number, a matched word, a non-empty reply */
    bool truncated; /* value was cut to fit (the comparison used the whole value) */
    char value[RF_GRADE_VALUE_MAX]; /* what was graded; "" when nothing was found */
} rf_grade;

/* Canonical text of s[0..len) when it is exactly one number (surrounding ASCII whitespace and a
 * leading '+' allowed): "1,234" -> "1234", "926.0" -> "926", "-0.50" -> "-0.5". Returns false
 * when it is not a number; writes at most cap bytes including the NUL (truncating). */
bool rf_number_canonical(const char *s, size_t len, char *out, size_t cap);

/* Canonical text of the final number in text; false when there is none. */
bool rf_final_number(const char *text, size_t len, char *out, size_t cap);

/* As rf_final_number, but a number that is the operand of a comparison (">= 10", "> 10",
 * "≥ 10", "than 10", "equal to 10", "at least 10", "at most 10") or a total ("out of 11",
 * "of the 11") is skipped: "8 of the 11 ids are >= 10." quotes 8. For agent answers. */
bool rf_quoted_number(const char *text, size_t len, char *out, size_t cap);

/* True when a and b (NUL-terminated) are numbers with the same value. */
bool rf_numbers_equal(const char *a, const char *b);

void rf_grade_number(const char *reply, size_t reply_len, const char *expected, rf_grade *out);
void rf_grade_exact(const char *reply, size_t reply_len, const char *expected, rf_grade *out);
void rf_grade_word(const char *reply, size_t reply_len, const char *answer,
                   const char *const *aliases, int32_t n_aliases, rf_grade *out);
/* Dispatches on q->grader. */
void rf_grade_question(const rf_question *q, const char *reply, size_t reply_len, rf_grade *out);

/* ---- agreement between two backends ---- */

/* One item's reply from one backend. text NULL: no reply (the request failed); it agrees with
 * nothing, not even another missing reply. */
typedef struct rf_reply_ref {
    const char *text;
    size_t len;
} rf_reply_ref;

/* Character-for-character equality (same length, same bytes, both present). */
bool rf_replies_identical(const rf_reply_ref *a, const rf_reply_ref *b);

typedef struct rf_agreement {
    int32_t n_items;
    int32_t n_identical;
    int32_t n_diff;
    const char **diff_ids; /* n_diff ids, in item order; array owned, strings borrowed */
} rf_agreement;

/* Compares a[i] with b[i] for every i < n; ids[i] names item i. */
rf_status rf_agreement_compare(const char *const *ids, const rf_reply_ref *a, const rf_reply_ref *b,
                               int32_t n, rf_agreement *out, rf_error *err);
void rf_agreement_free(rf_agreement *ag);

#endif
