/* file.h: reading a whole (small) file into memory, and printable excerpts of untrusted text for
 * error messages. No state. */
#ifndef RF_UTIL_FILE_H
#define RF_UTIL_FILE_H

#include <stddef.h>

#include "roofline/status.h"

/* Reads path into *data (malloc'd, NUL-terminated; caller frees) and its length into *len.
 * Errors name the path: RF_ERR_IO (cannot open or read), RF_ERR_FORMAT (more than max bytes),
 * RF_ERR_NOMEM. */
rf_status rf_read_file(const char *path, size_t max, char **data, size_t *len, rf_error *err);

/* Writes len bytes to path through a temporary file beside it (path.tmp) and a rename, so a
 * reader (or a kill) never leaves half a file in place. Errors name the path and the cause. */
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
