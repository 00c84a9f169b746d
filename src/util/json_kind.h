/* json_kind.h: names of a JSON value's type for error messages ("x is an array, not an
 * object"). Static strings; nothing to free. */
#ifndef ROOFLINE_UTIL_JSON_KIND_H
#define ROOFLINE_UTIL_JSON_KIND_H

#include <jansson.h>

/* The type with its article: "an object", "an array", "a string", "an integer", "a number with a
 * fraction or exponent", "a boolean", "null". */
const char *rf_json_kind(const json_t *v);
/* The bare JSON Schema type name: "object", "array", "string", "integer", "number", "boolean",
 * "null". */
const char *rf_json_type_name(const json_t *v);

#endif
