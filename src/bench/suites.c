/* suites.c: the suite table (bench.h's RF_SUITES) as data: each suite's name, switch, run
 * function, preflight and part in the precision study, for the run (run.c) and the precision
 * study (suite_precision.c). */
#include <stddef.h>

#include "bench/bench.h"

#define RF_SUITE_DEF_(ID, name, run, preflight, study)                                             \
    {RF_SUITE_##ID, #name, offsetof(rf_run_desc, name), run, preflight, study},
static const rf_suite_def g_suites[] = {RF_SUITES(RF_SUITE_DEF_)};
#undef RF_SUITE_DEF_

_Static_assert(sizeof g_suites / sizeof g_suites[0] == RF_SUITE_COUNT,
               "one line of RF_SUITES per suite");

const rf_suite_def *rf_suite_table(void) {
    return g_suites;
}

bool rf_suite_on(const rf_suite_def *s, const rf_run_desc *d) {
    return *(const bool *)((const char *)d + s->on);
}
