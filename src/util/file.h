/* file.h: reading a whole (small) file into memory, writing a file atomically, and printable
 * excerpts of untrusted text for error messages. No state. */
#ifndef RF_UTIL_FILE_H
#define RF_UTIL_FILE_H

#include <stddef.h>

#include "roofline/status.h"

/* Reads path into *data (malloc'd, NUL-terminated; caller frees) and its length into *len.
 * Errors name the path: RF_ERR_IO (cannot open or read), RF_ERR_FORMAT (more than max bytes),
 * RF_ERR_NOMEM. */
rf_status rf_read_file(const char *path, size_t max, char **data, size_t *len, rf_error *err);

/* The directory part of path ("." when it has none, "/" for a file in the root) into out. */
void rf_path_dir(const char *path, char *out, size_t cap);

/* Writes all len bytes to fd (retrying short writes and EINTR); errors name `name`. */
rf_status rf_write_all(int fd, const void *data, size_t len, const char *name, rf_error *err);

/* Writes path atomically: fn(arg, fd, tmp_name, err) fills a new temporary file beside it
 * (path.tmp-XXXXXX, mode 0644), which is then fsync'd and renamed over path (and the directory
 * fsync'd). On any failure (fn's included) the temporary file is removed and path is untouched;
 * a kill leaves at most a stray path.tmp-XXXXXX, never half a file at path. Errors name the path
 * and the cause (RF_ERR_IO when the directory is not writable). */
typedef rf_status (*rf_write_fn)(void *arg, int fd, const char *name, rf_error *err);
rf_status rf_write_file_atomic_with(const char *path, rf_write_fn fn, void *arg, rf_error *err);

/* rf_write_file_atomic_with for len bytes of data. */
rf_status rf_write_file_atomic(const char *path, const void *data, size_t len, rf_error *err);

/* Creates the missing directories above path (mkdir -p of its parents, not path itself). */
rf_status rf_make_parents(const char *path, rf_error *err);

/* A short printable copy of s[0..n) into out (cap >= 8), always valid UTF-8: control bytes and
 * bytes of no valid UTF-8 sequence become '?', and text longer than fits ends in "..." without
 * cutting a character. Returns out. */
const char *rf_printable(const char *s, size_t n, char *out, size_t cap);
/* The same, but a byte that cannot be shown (a control byte, or one of no valid UTF-8 sequence)
 * is written as its escape \xNN, so nothing of a message is lost but its length. */
const char *rf_escaped(const char *s, size_t n, char *out, size_t cap);

#endif
