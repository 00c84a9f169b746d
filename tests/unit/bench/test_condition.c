/* test_condition.c: the agent's filter condition language (src/bench/condition.c): parsing the
 * ways a model writes a condition, printing it back, operators, evaluation and counting. */
#include <stdbool.h>
#include <string.h>

#include "bench/condition.h"
#include "check.h"

static bool has(const char *hay, const char *needle) {
    return strstr(hay, needle) != NULL;
}

static void cond_ok(const char *text, const char *want) {
    rf_cond c;
    rf_error err = {0};
    rf_status st = rf_cond_parse(text, strlen(text), &c, &err);
    char got[RF_COND_TEXT_MAX] = "";
    if (st == RF_OK) rf_cond_format(&c, got, sizeof got);
    CHECK_MSG(st == RF_OK && strcmp(got, want) == 0, "condition \"%s\": got \"%s\" (%s), want %s",
              text, got, st ? err.msg : "ok", want);
}

static void cond_bad(const char *text, const char *why) {
    rf_cond c;
    rf_error err = {0};
    rf_status st = rf_cond_parse(text, strlen(text), &c, &err);
    CHECK_MSG(st == RF_ERR_FORMAT && has(err.msg, why), "condition \"%s\": status %d, \"%s\"", text,
              (int)st, err.msg);
}

static void test_conditions(void) {
    cond_ok("id >= 10", "id >= 10");
    cond_ok("id>=10", "id >= 10");
    cond_ok("10 <= id", "id >= 10");
    cond_ok("id >= 10.0", "id >= 10");
    cond_ok(">= 10", "id >= 10");
    cond_ok(">=10", "id >= 10");
    cond_ok("ID \xe2\x89\xa5 10", "id >= 10");
    cond_ok("  id >= 10  ", "id >= 10");
    cond_ok("'id >= 10'", "id >= 10");
    cond_ok("`id>=10`", "id >= 10");
    cond_ok("id >= +10", "id >= 10");
    cond_ok("id > 10", "id > 10");
    cond_ok("10 > id", "id < 10");
    cond_ok("id == 10", "id == 10");
    cond_ok("id = 10", "id == 10");
    cond_ok("id != 10", "id != 10");
    cond_ok("id >= 9.5", "id >= 9.5");
    cond_ok("id >= -3", "id >= -3");
    cond_ok("id >= 10.", "id >= 10");
    cond_ok("id >= -0", "id >= 0");
    /* thresholds past 15 digits or below 1e-4 print without exponents and read back the same
     * (fuzz_agent_task: "id >= 666666666666666666666" printed as 6.66666666666667e+20) */
    cond_ok("id >= 666666666666666666666", "id >= 666666666666666622976");
    cond_ok("id >= 666666666666666622976", "id >= 666666666666666622976");
    cond_ok("id < 0.0000001", "id < 0.0000001");
    cond_ok("id >= 1234567890123456789", "id >= 1234567890123456768");
    cond_ok("id >= 0.1", "id >= 0.1");
    cond_ok("id >= 10.25", "id >= 10.25");
    /* at most 47 characters and below 1e46: what is printed reads back (fuzz_agent_task: 47
     * nines, the double nearest 10^47, printed with 48 digits the lexer refused) */
    cond_ok("id >= 999999999999999999999999999999999999999999999",
            "id >= 999999999999999929757289024535551219930759168");
    cond_ok("id >= -999999999999999929757289024535551219930759168",
            "id >= -999999999999999929757289024535551219930759168");
    cond_bad("id >= 99999999999999999999999999999999999999999999999", "expected a number");
    cond_bad("id >= 9999999999999999999999999999999999999999999999", "expected a number");
    cond_bad("id >= 10000000000000000000000000000000000000000000000", "expected a number");
    cond_bad("id >= 0.00000000000000000000000000000000000000000000001", "expected a number");
    cond_bad("", "empty");
    cond_bad("idx >= 10", "unknown field 'idx'");
    cond_bad("x > 3", "unknown field 'x'");
    cond_bad("id >= ten", "expected a number");
    cond_bad("id", "expected an operator");
    cond_bad("id => 10", "expected a number"); /* "=" then "> 10" */
    cond_bad("id >= 10 and id < 20", "unexpected 'and id < 20'");
    cond_bad(">= ", "expected a number");
    cond_bad("10 <= x", "expected 'id'");
    cond_bad("id >= 1e1", "unexpected 'e1'");
    cond_bad("greater than 10", "unknown field 'greater'");
    cond_bad("id >= 0x10", "unexpected 'x10'");

    rf_cond_op op;
    CHECK(rf_cond_op_parse(" >= ", 4, &op) && op == RF_COND_GE);
    CHECK(rf_cond_op_parse("\xe2\x89\xa4", 3, &op) && op == RF_COND_LE);
    CHECK(rf_cond_op_parse("=", 1, &op) && op == RF_COND_EQ);
    CHECK(rf_cond_op_parse("!=", 2, &op) && op == RF_COND_NE);
    CHECK(!rf_cond_op_parse("=>", 2, &op));
    CHECK(!rf_cond_op_parse("gte", 3, &op));
    CHECK(!rf_cond_op_parse("", 0, &op));
    rf_cond a = {RF_COND_GE, 10}, b = {RF_COND_GE, 10.0}, c = {RF_COND_GT, 10};
    CHECK(rf_cond_equal(&a, &b) && !rf_cond_equal(&a, &c));
    CHECK(rf_cond_eval(&a, 10) && !rf_cond_eval(&c, 10) && rf_cond_eval(&c, 11));
    int64_t ids[] = {12, 3, 27, 10, 9};
    CHECK(rf_cond_count(&a, ids, 5) == 3 && rf_cond_count(&c, ids, 5) == 2);
    CHECK(strcmp(rf_cond_op_str(RF_COND_NE), "!=") == 0);
}

int main(void) {
    test_conditions();
    return check_summary("test_condition");
}
