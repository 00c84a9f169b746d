/* runfile.h: the run description from a JSON file and/or command-line flags.
 *
 * The JSON file is strict: an unknown key, a wrong type or a value out of range is an error
 * naming the file and the field's path (e.g. "run.json: backends[1].price.usd_per_hour: expected
 * a number"). Flags given after --run override the file's values. The schema is printed by
 * `roofline bench --help` (rf_runfile_help) and documented in docs/bench.md.
 *
 * Ownership: rf_runfile keeps the parsed JSON alive because the description's strings point
 * into it (and into argv, which outlives the run); rf_runfile_free releases it.
 */
#ifndef RF_BENCH_RUNFILE_H
#define RF_BENCH_RUNFILE_H

#include <stdio.h>

#include "bench/bench.h"

typedef struct rf_runfile {
    rf_run_desc desc;
    json_t *root; /* the --run file, or NULL */
} rf_runfile;

/* Parses argv (after the verb). RF_ERR_ARG names the flag or field that was wrong. */
rf_status rf_runfile_parse_args(int argc, char **argv, rf_runfile *rf, int *want_help,
                                rf_error *err);
/* Parses a JSON text (name is used in messages); exposed for tests. */
rf_status rf_runfile_parse_json(const char *name, const char *text, rf_runfile *rf, rf_error *err);
void rf_runfile_free(rf_runfile *rf);
void rf_runfile_help(FILE *f);

#endif
