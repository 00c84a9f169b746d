/* runfile_fields.h: the run file's fields as one table (runfile_fields.c), inside the run-file
 * module (runfile.c, runfile_args.c): each field is one row (its place in the file, JSON type,
 * range, default, help, and where in rf_run_desc or rf_bench_backend it is stored), and the
 * same rows drive the unknown-key check, parsing, `run.json` and the help's field list. A new
 * field is a new row (plus a custom reader/writer when it is not a plain integer, number,
 * string or boolean).
 *
 * Ownership: nothing here allocates but the JSON values rf_runfile_fields_to_json returns (the
 * caller frees) and the copies rf_runfile_own_copy keeps in rf->roots.
 */
#ifndef RF_BENCH_RUNFILE_FIELDS_H
#define RF_BENCH_RUNFILE_FIELDS_H

#include <stdio.h>

#include "bench/runfile.h"
#include "util/json_read.h"

/* The fields of root (a run file's tree) into d; c names the file. */
rf_status rf_runfile_fields_parse(rf_jr *c, json_t *root, rf_run_desc *d);
/* d's fields as a run file (into o, an object). */
void rf_runfile_fields_to_json(json_t *o, const rf_run_desc *d);
/* The run file's fields: path, type, range, default and help, one per row. */
void rf_runfile_fields_help(FILE *f);

/* Turns suite s on in d ("speed", ..., "precision"); else an error at path. */
rf_status rf_runfile_set_suite(rf_jr *c, rf_run_desc *d, const char *path, const char *s);
/* A copy of v owned by rf (for argv values cut in place); NULL when out of memory. */
char *rf_runfile_own_copy(rf_runfile *rf, const char *v);

#endif
