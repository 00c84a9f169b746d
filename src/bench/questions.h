/* questions.h: the accuracy suite's question files (JSONL, one question object per line), loaded
 * and checked line by line.
 *
 * Line schema (data/gen_accuracy.py writes data/accuracy/seed40.jsonl in it):
 *   {"id": "mul-01", "category": "multiplication",
 *    "prompt": "What is 47 * 86? Answer with the number only.", "answer": "4042",
 *    "grader": "number" | "exact" | "word", "aliases": ["..."]}
 * id: 1-64 bytes of [A-Za-z0-9._:-], unique in the file; category, prompt, answer: non-empty
 * strings; grader: one of the three names; aliases: optional, grader "word" only, an array of
 * non-empty strings. A "number" answer must be one number ("926", "-5", "1,234", "2.5"). Any other
 * key is an error (it is most likely a misspelt one). Blank lines are skipped; CRLF is accepted.
 *
 * Errors name the file, the 1-based line and the field:
 *   "q.jsonl:7: field 'grader': unknown grader \"numbr\" (expected number, exact or word)".
 *
 * Ownership: rf_questions_load / rf_questions_parse return a malloc'd array of questions whose
 * strings are all owned by the array; the caller releases everything with rf_questions_free.
 * On failure *out is NULL and *n_out 0.
 */
#ifndef RF_BENCH_QUESTIONS_H
#define RF_BENCH_QUESTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

typedef enum rf_grader_kind {
    RF_GRADER_NUMBER = 0, /* the final number in the reply equals the answer */
    RF_GRADER_EXACT,      /* the trimmed reply equals the trimmed answer, byte for byte */
    RF_GRADER_WORD,       /* the answer or an alias occurs as a whole word, any case */
} rf_grader_kind;

/* "number", "exact", "word". */
const char *rf_grader_kind_name(rf_grader_kind k);
/* Parses a grader name (exact spelling); false when unknown. */
bool rf_grader_kind_parse(const char *s, rf_grader_kind *out);

typedef struct rf_question {
    char *id;
    char *category;
    char *prompt;
    char *answer;
    rf_grader_kind grader;
    char **aliases; /* NULL when none */
    int32_t n_aliases;
    int32_t line; /* 1-based line in the file, for messages */
} rf_question;

#define RF_QUESTION_ID_MAX             64
#define RF_QUESTIONS_MAX_LINE_DEFAULT  (64u * 1024u)
#define RF_QUESTIONS_MAX_COUNT_DEFAULT 100000
#define RF_QUESTIONS_MAX_ALIASES       64

/* Limits on what a file may hold; a zero field takes its default. */
typedef struct rf_questions_limits {
    size_t max_line;   /* bytes per line, without the newline */
    int32_t max_count; /* questions per file */
} rf_questions_limits;

/* Reads and checks a question file. lim may be NULL (defaults). */
rf_status rf_questions_load(const char *path, const rf_questions_limits *lim, rf_question **out,
                            int32_t *n_out, rf_error *err);

/* Same, from memory; name is used in messages only. */
rf_status rf_questions_parse(const char *name, const char *text, size_t len,
                             const rf_questions_limits *lim, rf_question **out, int32_t *n_out,
                             rf_error *err);

void rf_questions_free(rf_question *qs, int32_t n);

/* Number of questions whose category equals cat. */
int32_t rf_questions_count_category(const rf_question *qs, int32_t n, const char *cat);

#endif
