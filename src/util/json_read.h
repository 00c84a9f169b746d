/* json_read.h: strict reading of one JSON object's members (jansson): a member of a given type,
 * required or optional, an integer or number in a range, a non-empty string, array or object,
 * and unknown-key detection, each failing with an rf_status and an rf_error that names the
 * member's path (`backends[2].url`) and what was wrong with it, including the type found
 * ("must be a string, not an integer"). Shared by every reader of JSON input: the run file, the
 * agent task, the questions, the fake backend's and the server's OpenAI requests.
 *
 * Messages: "<where>: field '<path>': <what>" (without "<where>: " when where is NULL), where
 * <what> is one of "missing", "must be <type>, not <kind found>", "empty", "<x> is outside
 * [lo, hi]" ('(' or ')' for an open end), "unknown field (expected a, b, c)"; with
 * RF_JR_STYLE_PATH, "<where>: <path>: <what>" and "expected <type>, not <kind found>". On failure
 * the reader also records why (rf_jr_why) and the path in the context, for callers that map them to
 * their own error objects (the OpenAI error's param and code).
 *
 * An absent member (and a null one with RF_JR_NULLABLE) leaves *out untouched and returns
 * RF_OK unless RF_JR_REQUIRED; obj may be NULL (every member absent). Strings and values
 * returned are borrowed from obj's tree.
 *
 * Ownership: rf_jr is a caller's value (usually on the stack); nothing here allocates or keeps
 * global state. Thread-safe for distinct contexts.
 */
#ifndef ROOFLINE_UTIL_JSON_READ_H
#define ROOFLINE_UTIL_JSON_READ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

typedef enum rf_jr_why {
    RF_JR_OK = 0,
    RF_JR_MISSING, /* a required member is absent */
    RF_JR_TYPE,    /* of the wrong JSON type */
    RF_JR_EMPTY,   /* a blank string, an empty array or object where RF_JR_NONEMPTY */
    RF_JR_RANGE,   /* a number outside its range */
    RF_JR_UNKNOWN, /* a member rf_jr_keys does not know */
    RF_JR_OTHER,   /* a caller's own check (rf_jr_fail) */
} rf_jr_why;

/* Flags (or-ed). */
enum {
    RF_JR_REQUIRED = 1u << 0, /* absent is an error (RF_JR_MISSING) */
    RF_JR_NULLABLE = 1u << 1, /* null counts as absent (else null is a wrong type) */
    RF_JR_NONEMPTY = 1u << 2, /* a string not blank (spaces only), an array/object not empty */
    RF_JR_LO_OPEN = 1u << 3,  /* rf_jr_num: lo itself is out of range */
    RF_JR_HI_OPEN = 1u << 4,  /* rf_jr_num: hi itself is out of range */
};

/* How messages name the member and a wrong type (the callers' existing wordings). */
typedef enum rf_jr_style {
    RF_JR_STYLE_FIELD = 0, /* "<where>: field '<path>': must be a string, not an integer" */
    RF_JR_STYLE_PATH,      /* "<where>: <path>: expected a string, not an integer" */
} rf_jr_style;

typedef struct rf_jr {
    const char *where; /* the messages' prefix (a file name, "file:line"), or NULL */
    rf_jr_style style; /* RF_JR_STYLE_FIELD from rf_jr_make */
    rf_status code;    /* the status of a bad member (RF_ERR_FORMAT, RF_ERR_ARG) */
    rf_error *err;     /* filled on failure (may be NULL) */
    /* set by a failure: */
    rf_jr_why why;
    char path[160];
} rf_jr;

/* A context for input named where, failing with code into err. */
rf_jr rf_jr_make(const char *where, rf_status code, rf_error *err);

/* "parent.key", or "key" when parent is NULL or "" (truncated to cap). Returns out. */
char *rf_jr_path(char *out, size_t cap, const char *parent, const char *key);
/* "parent[i]" (truncated to cap). Returns out. */
char *rf_jr_index(char *out, size_t cap, const char *parent, size_t i);

/* Fails with why, naming path, with a printf-style <what>; returns c->code (RF_ERR_NOMEM is
 * for the caller's own out-of-memory messages). */
rf_status rf_jr_fail(rf_jr *c, rf_jr_why why, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* obj has key with a value other than null. */
bool rf_jr_has(const json_t *obj, const char *key);

rf_status rf_jr_str(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, const char **out);
/* An integer in [lo, hi] (a number with a fraction is a wrong type). */
rf_status rf_jr_int(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, json_int_t lo, json_int_t hi, json_int_t *out);
/* rf_jr_int into an int32_t (lo and hi within int32_t). */
rf_status rf_jr_i32(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, int32_t lo, int32_t hi, int32_t *out);
/* A number (integer or real) in [lo, hi] (open ends with RF_JR_LO_OPEN / RF_JR_HI_OPEN). */
rf_status rf_jr_num(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                    unsigned flags, double lo, double hi, double *out);
rf_status rf_jr_bool(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                     unsigned flags, bool *out);
rf_status rf_jr_array(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                      unsigned flags, json_t **out);
rf_status rf_jr_object(rf_jr *c, const json_t *obj, const char *parent, const char *key,
                       unsigned flags, json_t **out);

/* Every key of obj is in known (NULL-terminated); else RF_JR_UNKNOWN naming path.key (the key
 * made printable) and listing the known keys. obj named path must be an object (RF_JR_TYPE). */
rf_status rf_jr_keys(rf_jr *c, const json_t *obj, const char *path, const char *const *known);

#endif
