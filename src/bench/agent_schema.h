/* agent_schema.h: the subset of JSON schema that an agent task's tool parameters use: a property
 * schema is an object with "type" (one of integer, number, string, boolean, array, object, null,
 * or an array of them) and, for arrays, "items" (a property schema). An integer is accepted for
 * "number"; a real is not accepted for "integer" (BFCL's AST checker rules). Used by the task
 * loader (agent_task.c) and the call analysis (agent_call.c).
 *
 * Ownership: the schemas and values are the caller's (borrowed for the call); results go into
 * caller-owned buffers. Nothing allocates.
 */
#ifndef RF_BENCH_AGENT_SCHEMA_H
#define RF_BENCH_AGENT_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Does v match the property schema s ("type" a string or an array of strings; "items")? A
 * schema without "type" accepts anything. */
bool rf_agent_schema_accepts(const json_t *s, const json_t *v);
/* The type s asks for, for messages: "integer", "number|string", "array of integer", "any". */
void rf_agent_schema_describe(const json_t *s, char *out, size_t cap);
/* Checks a property schema's types (and its items'); false with why saying what is wrong. */
bool rf_agent_schema_valid(const json_t *s, char *why, size_t cap);

#endif
