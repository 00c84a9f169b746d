/* agent_schema.c: the JSON schema type subset of tool parameters (agent_schema.h). */
#include "bench/agent_schema.h"

#include <stdio.h>
#include <string.h>

static const char *const TYPES[] = {"integer", "number", "string", "boolean",
                                    "array",   "object", "null"};

static bool known_type(const char *s) {
    for (size_t k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++)
        if (strcmp(s, TYPES[k]) == 0) return true;
    return false;
}

static bool value_is(const char *type, const json_t *v) {
    if (strcmp(type, "integer") == 0) return json_is_integer(v);
    if (strcmp(type, "number") == 0) return json_is_number(v); /* int accepted for float */
    if (strcmp(type, "string") == 0) return json_is_string(v);
    if (strcmp(type, "boolean") == 0) return json_is_boolean(v);
    if (strcmp(type, "array") == 0) return json_is_array(v);
    if (strcmp(type, "object") == 0) return json_is_object(v);
    if (strcmp(type, "null") == 0) return json_is_null(v);
    return false;
}

/* Does v match the property schema s ("type" a string or an array of strings; "items")? */
bool rf_agent_schema_accepts(const json_t *s, const json_t *v) {
    const json_t *ty = json_object_get(s, "type");
    bool ok = false;
    if (json_is_string(ty)) {
        ok = value_is(json_string_value(ty), v);
    } else if (json_is_array(ty)) {
        for (size_t k = 0; k < json_array_size(ty) && !ok; k++)
            ok = value_is(json_string_value(json_array_get(ty, k)), v);
    } else {
        ok = true; /* no type: anything */
    }
    if (!ok) return false;
    const json_t *items = json_object_get(s, "items");
    if (json_is_array(v) && json_is_object(items)) {
        for (size_t k = 0; k < json_array_size(v); k++)
            if (!rf_agent_schema_accepts(items, json_array_get(v, k))) return false;
    }
    return true;
}

/* "integer", "number|string", "array of integer". */
void rf_agent_schema_describe(const json_t *s, char *out, size_t cap) {
    const json_t *ty = json_object_get(s, "type");
    size_t w = 0;
    out[0] = 0;
    if (json_is_string(ty)) {
        w = (size_t)snprintf(out, cap, "%s", json_string_value(ty));
    } else if (json_is_array(ty)) {
        for (size_t k = 0; k < json_array_size(ty) && w < cap; k++)
            w += (size_t)snprintf(out + w, cap - w, "%s%s", k ? "|" : "",
                                  json_string_value(json_array_get(ty, k)));
    } else {
        w = (size_t)snprintf(out, cap, "any");
    }
    const json_t *items = json_object_get(s, "items");
    if (json_is_object(items) && w < cap) {
        char inner[48];
        rf_agent_schema_describe(items, inner, sizeof inner);
        snprintf(out + w, cap - w, " of %s", inner);
    }
}

/* Checks a property schema's types (and its items'); why says what is wrong. */
bool rf_agent_schema_valid(const json_t *s, char *why, size_t cap) {
    if (!json_is_object(s)) {
        snprintf(why, cap, "must be an object");
        return false;
    }
    const json_t *ty = json_object_get(s, "type");
    bool ok = json_is_string(ty) && known_type(json_string_value(ty));
    if (json_is_array(ty) && json_array_size(ty) > 0) {
        ok = true;
        for (size_t k = 0; k < json_array_size(ty); k++) {
            const json_t *e = json_array_get(ty, k);
            ok &= json_is_string(e) && known_type(json_string_value(e));
        }
    }
    if (!ok) {
        snprintf(why, cap,
                 "needs a \"type\" among integer, number, string, boolean, array, "
                 "object, null");
        return false;
    }
    const json_t *items = json_object_get(s, "items");
    if (items && !rf_agent_schema_valid(items, why, cap)) return false;
    return true;
}
