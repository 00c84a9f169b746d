/* condition.h: the agent's filter condition language: `id OP N`, OP one of >= > <= < == !=.
 *
 * The parser reads a filter string as a model may write it: "id>=10", "id >= 10.0", "10 <= id"
 * (flipped), ">= 10" (field implied), "ID ≥ 10", in one layer of quotes; the threshold is a plain
 * decimal of at most 47 characters, below 1e46 in magnitude (no exponent, hex, inf or nan). An
 * operator alone (the op/threshold tool form) is read after BFCL string standardisation: spaces
 * and ,./-_*^ removed, lowercased; "≥" "≤" "≠" and "=" accepted. The printer writes "id >= 10";
 * what it prints of a parsed condition parses back to the same condition.
 *
 * Ownership: conditions are plain values; nothing here allocates. Errors are RF_ERR_FORMAT with a
 * message saying what is wrong; printing writes into a caller-owned buffer.
 */
#ifndef RF_BENCH_CONDITION_H
#define RF_BENCH_CONDITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

typedef enum rf_cond_op {
    RF_COND_GE = 0,
    RF_COND_GT,
    RF_COND_LE,
    RF_COND_LT,
    RF_COND_EQ,
    RF_COND_NE,
} rf_cond_op;

typedef struct rf_cond {
    rf_cond_op op;
    double threshold;
} rf_cond;

#define RF_COND_TEXT_MAX 64 /* room for a condition's display text ("id >= 10") */

/* ">=", ">", "<=", "<", "==", "!=". */
const char *rf_cond_op_str(rf_cond_op op);
/* An operator as a model may write it (after BFCL standardisation): false when unknown. */
bool rf_cond_op_parse(const char *s, size_t len, rf_cond_op *out);
/* Parses a filter string ("id >= 10", "10 <= id", ">= 10", ...; the threshold a plain decimal
 * of at most 47 characters, below 1e46 in magnitude); the message says what is wrong. What
 * rf_cond_format prints of a parsed condition parses back to the same condition. */
rf_status rf_cond_parse(const char *text, size_t len, rf_cond *out, rf_error *err);
/* "id >= 10" (threshold printed with %.15g, so 10.0 prints 10); returns snprintf's length. */
int rf_cond_format(const rf_cond *c, char *buf, size_t cap);
bool rf_cond_eval(const rf_cond *c, double id);
bool rf_cond_equal(const rf_cond *a, const rf_cond *b);
/* How many of the n ids satisfy c. */
int64_t rf_cond_count(const rf_cond *c, const int64_t *ids, int32_t n);

#endif
