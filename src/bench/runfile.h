/* runfile.h: the run description from a JSON file and/or command-line flags.
 *
 * The JSON file is strict: an unknown key, a wrong type or a value out of range is an error
 * naming the file and the field's path (e.g. "run.json: backends[1].price.usd_per_hour: expected
 * a number"). Flags given after --run override the file's values. The schema is printed by
 * `roofline bench --help` (rf_runfile_help) and documented in docs/bench.md.
 *
 * Several --run files merge in order (a later file's key replaces the earlier value; a later
 * "backends" list replaces the whole list); --resume DIR reads DIR/run.json, the description a
 * run saved, and allows no other flag but --no-progress. rf_run_desc_check validates the
 * whole description (backend URIs, A/B/A names, the rate schedule) before anything runs.
 *
 * Ownership: rf_runfile keeps every parsed JSON tree (and copies of the argv values it cuts)
 * alive because the description's strings point into them (and into argv, which outlives the
 * run); rf_runfile_free releases them.
 */
#ifndef RF_BENCH_RUNFILE_H
#define RF_BENCH_RUNFILE_H

#include <stdio.h>

#include "bench/bench.h"

#define RF_RUNFILE_MAX ((size_t)16 << 20) /* a run file's bytes */

typedef struct rf_runfile {
    rf_run_desc desc;
    json_t *roots;      /* array: every run file's tree and owned argv copies, or NULL */
    bool flag_backends; /* a --backend flag replaced the run files' backends */
} rf_runfile;

/* Parses argv (after the verb). RF_ERR_ARG names the flag or field that was wrong; on failure
 * rf holds nothing (rf_runfile_free is still harmless). */
rf_status rf_runfile_parse_args(int argc, char **argv, rf_runfile *rf, int *want_help,
                                rf_error *err);
/* Parses a JSON text (name is used in messages); exposed for tests. */
rf_status rf_runfile_parse_json(const char *name, const char *text, rf_runfile *rf, rf_error *err);
void rf_runfile_free(rf_runfile *rf);
/* The whole description, checked: RF_ERR_ARG naming the field (called by parse_args and by
 * rf_bench_open, so a description built any other way is checked too). */
rf_status rf_run_desc_check(const rf_run_desc *d, rf_error *err);
/* The description as a run file (every value filled in, data paths resolved): what a run saves
 * as run.json and --resume reads back. Caller frees. */
json_t *rf_run_desc_to_json(const rf_run_desc *d);
void rf_runfile_help(FILE *f);

#endif
