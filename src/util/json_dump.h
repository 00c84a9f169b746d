/* util/json_dump.h: a JSON value serialized (into an rf_buf or a new string), whole or not at all.
 * jansson 2.14's dumper ignores a failed write of an object key and goes on, so a callback that
 * runs out of memory once can leave text with bytes missing that still looks like JSON; here a
 * failure is sticky: every later write fails too and the call reports it. The caller owns out. */
#ifndef RF_UTIL_JSON_DUMP_H
#define RF_UTIL_JSON_DUMP_H

#include <jansson.h>

#include "roofline/status.h"
#include "util/buf.h"

/* Appends o's text (json_dump_callback flags) to out: RF_OK, or RF_ERR_NOMEM with out's length
 * back where it was. */
rf_status rf_json_dump_buf(const json_t *o, size_t flags, rf_buf *out);

/* As json_dumps (a new NUL-terminated string, the caller frees it; NULL for NULL or out of
 * memory), never a text with bytes missing. */
char *rf_json_dumps(const json_t *o, size_t flags);

#endif
