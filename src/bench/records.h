/* records.h: records.jsonl, the run's one line per request. This file owns the record: its
 * fields (built in one place, versioned by RF_RECORD_SCHEMA, written into every line), the
 * append-only writer, the reader, and the way back from a line to a request's result (what
 * `roofline bench --resume` uses instead of sending a request that is already recorded).
 *
 * Writing: each line is built in memory and handed to the kernel with one write(2) on an
 * O_APPEND descriptor, so a process killed between records leaves only whole lines. (Linux may
 * stop a single large write between pages when the process is killed; the reader therefore
 * treats a last line without its newline as torn, and --resume cuts it off.) A failed or short
 * write is an error naming the file and the cause; the partial line is cut back off
 * (ftruncate), so the file keeps only whole lines, and the caller stops the run.
 *
 * The request key: (phase, suite, backend, level_index, index) identifies a request within a run
 * (level_index: the level's position in the run's list, as two levels may have the same
 * concurrency) and
 * is the same in every session of it; a record also carries the run id (random, one per run) and
 * the session (0 for the first, +1 for each resume). A record of class "cancelled" is a request
 * the run stopped before it finished: a resume sends it again, and the later record of its key
 * supersedes it.
 *
 * Ownership: rf_records owns its descriptor and path (rf_records_close frees both). The JSON
 * objects passed in and out are the caller's (rf_record_of_send returns a new reference).
 */
#ifndef RF_BENCH_RECORDS_H
#define RF_BENCH_RECORDS_H

#include <jansson.h>
#include <stdint.h>

#include "bench/bench.h"

#define RF_RECORD_SCHEMA 1

typedef struct rf_records {
    int fd;
    char *path;
    int64_t size;     /* bytes of whole lines in the file */
    uint64_t written; /* lines appended through this handle */
} rf_records;

/* Creates DIR/records.jsonl, which must not exist yet (O_EXCL: two runs never share one). */
rf_status rf_records_create(rf_records *w, const char *dir, rf_error *err);
/* Opens DIR/records.jsonl (created if absent) to append to it; a last line without its newline
 * (torn by a kill) is cut off, its length reported in *torn_bytes. */
rf_status rf_records_reopen(rf_records *w, const char *dir, int64_t *torn_bytes, rf_error *err);
/* The same for another line file of the run directory (runlog.jsonl). */
rf_status rf_records_reopen_named(rf_records *w, const char *dir, const char *name,
                                  int64_t *torn_bytes, rf_error *err);
/* Appends rec as one line. On failure nothing of the line stays in the file (when the file can
 * still be cut back) and err names the file and the cause (e.g. "No space left on device"). */
rf_status rf_records_append(rf_records *w, const json_t *rec, rf_error *err);
void rf_records_close(rf_records *w);

/* Calls fn for every whole line of the file at path, in order, with its 1-based line number; a
 * line that is not a JSON object is an error naming the line; a last line without its newline
 * is skipped (torn). A missing file has no lines. fn's error stops the reading. */
typedef rf_status (*rf_record_fn)(void *user, json_t *rec, int64_t line, rf_error *err);
rf_status rf_records_read(const char *path, rf_record_fn fn, void *user, rf_error *err);

/* What every record of a run shares beside the request's own fields. */
typedef struct rf_record_ctx {
    int64_t t0;         /* the session's start (monotonic ns): times are ms after it */
    uint64_t seq;       /* this record's sequence number in the run */
    const char *run_id; /* 16 hex digits */
    int session;
    const char *phase; /* "" outside A/B/A; "aba 1", "aba 2", "aba 3" */
} rf_record_ctx;

/* The record of a finished send (a new object). */
json_t *rf_record_of_send(const rf_send *s, const rf_record_ctx *c);

/* The request key of a send, or of a record, as one string (kept in *buf; caller frees). */
char *rf_record_key_of_send(const rf_send *s, const char *phase);
char *rf_record_key_of(const json_t *rec);
char *rf_record_key_make(const char *phase, const char *suite, const char *backend,
                         long long level_index, long long index);

/* Restores a recorded result into s->req.res (s->req.res must be freshly initialised): times
 * are placed on a clock at base_ns (the record's own session's times keep their spacing; times
 * of different sessions are not comparable, hence s->session), text, tool calls, counts, error
 * class and message. RF_ERR_FORMAT names the field that is missing or wrong. */
rf_status rf_record_restore(const json_t *rec, rf_send *s, int64_t base_ns, rf_error *err);

#endif
