/* analyze.h: the run's figures, computed from its records (runset.h), never from live state:
 * the same numbers whether the bench just finished or `roofline report` reads the directory a
 * month later. The summary object has one section per suite keyed by backend (speed, load with
 * its levels, accuracy, agreement, agent, probe, aba), the backends with their prices and
 * hardware, the runs (sessions, interruptions, what was left out), and, from econ.h, cost and
 * roofline sections. Every figure that could not be measured is JSON null ("unknown"), never 0.
 *
 * Definitions (docs/bench.md has them in full): TTFT = sent -> first content event; E2E = sent
 * -> last content event; TPOT = (E2E - TTFT) / (n - 1) (vLLM); decode tok/s = (n - 1) / (last -
 * first content event); n/E2E tok/s = n / E2E; a load level's duration is the span from its
 * first intended send to its last completion, added per session when a resume split it; output
 * tok/s = output tokens of its successful measured requests / duration; goodput (vLLM) = good
 * requests / duration, a request being good when every given SLO holds (TPOT counts as 0 when
 * n <= 1).
 *
 * The options (opts.h) come with this header. The speed and load figures are speed_load.h's; the
 * cost and roofline sections econ.h's; the precision study precision.h's: analyze.c calls them,
 * they never call it.
 *
 * Ownership: rf_analyze returns a new object (caller decrefs); the runset is only read.
 */
#ifndef RF_REPORT_ANALYZE_H
#define RF_REPORT_ANALYZE_H

#include <jansson.h>

#include "report/opts.h"
#include "report/runset.h"

json_t *rf_analyze(const rf_runset *rs, const rf_report_opts *o, rf_error *err);

#endif
