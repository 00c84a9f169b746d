/* runset.h: one or more run directories read back for analysis: each run's description
 * (run.json), its request records (records.jsonl) and its run log (runlog.jsonl: sessions,
 * levels, machine facts). Nothing is measured here; everything the report shows is recomputed
 * from these files, so a run can be re-analysed (or merged with another run) without running it
 * again.
 *
 * Records: a key (phase, suite, backend, level_index, index) may have several lines (a request
 * cancelled by an interrupt and sent again on --resume): the last line that is not "cancelled"
 * is the request's result, else the last one. Lines that are not records of this schema (no
 * run_id, key or error class) are counted in `skipped` and left out, with the first one named
 * in `warning`; a torn last line (a kill in the middle of a write) is left out and counted.
 *
 * Merging: backends keep their names unless two runs have a backend of the same name, then
 * both are shown as NAME@RUN (RUN: the run directory's last path component), so an A run and a
 * B run from different days can sit side by side.
 *
 * Ownership: rf_runset_load fills a runset the caller frees with rf_runset_free; every string
 * and JSON value inside belongs to it.
 */
#ifndef RF_REPORT_RUNSET_H
#define RF_REPORT_RUNSET_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/runfile.h"

typedef struct rf_run {
    char *dir;
    char *label;     /* the directory's last component */
    rf_runfile rf;   /* run.json parsed (rf.desc) */
    json_t *recs;    /* the records that count, one per key, in first-seen order */
    json_t *by_key;  /* key -> the record (the same references) */
    json_t *log;     /* run log entries, in order */
    json_t *machine; /* the last "machine" entry, or NULL (borrowed from log) */
    /* the read bandwidth samples ("machine" and "membw" entries with a positive membw_gbs): how
     * many, their median, lowest and highest (GB/s; NAN when none) */
    int membw_n;
    double membw_median, membw_low, membw_high;
    char **names; /* per backend of rf.desc: the name shown (NAME or NAME@RUN) */
    char run_id[17];
    int sessions;       /* sessions that started */
    bool ended;         /* the last session ended (was not killed) */
    bool interrupted;   /* ... and was it interrupted, or stopped by an error */
    char *error;        /* the error that stopped the last session, or NULL */
    int64_t lines;      /* record lines read */
    int64_t skipped;    /* lines left out: not records of this schema, or not read back */
    int64_t superseded; /* cancelled lines replaced by a later record of the same key */
    bool torn;          /* the last line was torn (left out) */
    char warning[1024]; /* the first problem met reading the files, or "" */
} rf_run;

typedef struct rf_runset {
    rf_run *runs;
    int n;
} rf_runset;

rf_status rf_runset_load(const char *const *dirs, int n, rf_runset *out, rf_error *err);
void rf_runset_free(rf_runset *rs);

/* The record of one request, or NULL. */
const json_t *rf_run_record(const rf_run *r, const char *phase, const char *suite,
                            const char *backend, int level_index, int index);

/* Every record of suite and backend (and phase; NULL: ""), in index order: a new array of
 * borrowed references (caller decrefs the array). level_index < 0: any level. */
json_t *rf_run_records(const rf_run *r, const char *phase, const char *suite, const char *backend,
                       int level_index);

#endif
