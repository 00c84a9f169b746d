/* json_schema.h: a JSON Schema compiled into the node graph the constraint matcher
 * (engine/json_match.h) walks byte by byte.
 *
 * Supported (docs/constraints.md): type (a name or an array of names), enum and const (any
 * JSON value: matched as its compact serialisation), object (properties written in schema
 * order, optional ones may be skipped, required; additionalProperties false or absent: only the
 * listed properties; without properties: any keys, values per additionalProperties or any
 * value), string (minLength, maxLength), number, integer, boolean, null, array (items, minItems,
 * maxItems), anyOf and oneOf (as anyOf), `true` and `{}` (any JSON value). Annotations (title,
 * description, default, examples, format, $schema, $id, $comment, $defs, definitions, ...) are
 * ignored. Keywords that constrain what the engine does not enforce ($ref, pattern, allOf, not,
 * if/then/else, minimum, multipleOf, uniqueItems, ...) give RF_ERR_UNSUPPORTED naming the
 * keyword and its JSON path; a malformed schema gives RF_ERR_ARG; nesting deeper than
 * RF_JS_MAX_DEPTH gives RF_ERR_UNSUPPORTED.
 *
 * Besides JSON values the graph has the nodes tool calls need around them: raw literal text (a
 * call's open and close markers), a sequence, free text up to a marker, and bounded whitespace.
 *
 * Ownership: rf_jschema_new allocates; every string and node belongs to the schema;
 * rf_jschema_free releases it all. A compiled schema is read-only and may be shared by threads.
 */
#ifndef RF_ENGINE_JSON_SCHEMA_H
#define RF_ENGINE_JSON_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

#define RF_JS_MAX_DEPTH 32    /* schema nesting accepted */
#define RF_JS_MAX_NODES 60000 /* nodes in one graph (frames hold 16-bit node ids) */

typedef enum rf_jn_kind {
    RF_JN_LIT = 0, /* one of a sorted set of byte strings (enum, const, null, booleans, markers) */
    RF_JN_STRING,  /* a JSON string; min/max: length in characters (max -1: unbounded) */
    RF_JN_NUMBER,
    RF_JN_INTEGER,
    RF_JN_OBJECT, /* props [first, first+count); item: value of other keys (-1: none) */
    RF_JN_ARRAY,  /* item: the items' node; min/max items */
    RF_JN_UNION,  /* kids [first, first+count): any one of them */
    RF_JN_SEQ,    /* kids [first, first+count) one after the other; can_end, loop_from */
    RF_JN_TEXT,   /* free bytes until text (the marker) has been written; empty text: never ends */
    RF_JN_WS,     /* at most max whitespace bytes */
} rf_jn_kind;

typedef struct rf_jnode {
    uint8_t kind;
    bool raw;     /* LIT: marker text, not a JSON value (special tokens may spell it) */
    bool nobrace; /* TEXT: its first non-space byte may not be '{' */
    int32_t min, max;
    int32_t first, count;
    int32_t item;
    uint32_t can_end;  /* SEQ: bit i: the output may end before element i */
    int32_t loop_from; /* SEQ: after the last element go back to this one; -1: the SEQ ends */
    int32_t text;      /* TEXT: index of the marker in lits; -1: none */
} rf_jnode;

typedef struct rf_jlit {
    char *s;
    uint32_t len;
} rf_jlit;

typedef struct rf_jprop {
    int32_t key; /* index in lits: the key as JSON text, quotes included */
    int32_t node;
    bool required;
} rf_jprop;

typedef struct rf_jschema {
    rf_jnode *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *kids;
    int32_t n_kids, cap_kids;
    rf_jprop *props;
    int32_t n_props, cap_props;
    rf_jlit *lits;
    int32_t n_lits, cap_lits;
    int32_t root;
    int32_t any;        /* any JSON value */
    int32_t any_string; /* a free string (keys of free objects) */
} rf_jschema;

rf_status rf_jschema_new(rf_jschema **out, rf_error *err);
void rf_jschema_free(rf_jschema *s);

/* Compiles the JSON Schema text into a node of s (*node). path names the schema in messages
 * (e.g. "response_format.json_schema"). */
rf_status rf_jschema_compile_text(rf_jschema *s, const char *text, const char *path, int32_t *node,
                                  rf_error *err);
/* As above from a parsed jansson value (json_t *, passed as void * to keep jansson out of
 * this header). */
rf_status rf_jschema_compile_json(rf_jschema *s, const void *json, const char *path, int32_t *node,
                                  rf_error *err);

/* Builders for the nodes around values (return the node id, or -1 when out of memory / the
 * graph is full). */
int32_t rf_jschema_add_raw(rf_jschema *s, const char *text);         /* raw marker text */
int32_t rf_jschema_add_const_string(rf_jschema *s, const char *str); /* "str" as JSON */
int32_t rf_jschema_add_text(rf_jschema *s, const char *marker, bool nobrace);
int32_t rf_jschema_add_ws(rf_jschema *s, int32_t max);
/* A node over kids (copied). kind: RF_JN_UNION or RF_JN_SEQ. */
int32_t rf_jschema_add_list(rf_jschema *s, rf_jn_kind kind, const int32_t *kids, int32_t n);
/* An object of the given properties, all required, in order (keys copied). */
int32_t rf_jschema_add_object(rf_jschema *s, const char *const *keys, const int32_t *nodes,
                              int32_t n);

#endif
