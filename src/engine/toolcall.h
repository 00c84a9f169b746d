/* toolcall.h: tool calling for models without tool tokens (Gemma 3): the tools are described in
 * the prompt and a call is recognised by the shape of the output, as Google suggests for Gemma:
 * a reply that is only a JSON object {"name": ..., "parameters": {...}} (also accepted:
 * "arguments" for "parameters", and the object inside a ```json fence) naming one of the tools.
 * A second format (Gemma 4's native tokens) would be another pair of functions here.
 *
 * Ownership: outputs are malloc'd strings (caller frees) or appended to caller-owned rf_buf.
 */
#ifndef RF_ENGINE_TOOLCALL_H
#define RF_ENGINE_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>

#include "roofline/status.h"
#include "util/buf.h"

/* Appends the instructions describing tools_json (an OpenAI "tools" array) to out.
 * RF_ERR_ARG naming the problem when tools_json is not such an array. */
rf_status rf_toolcall_instructions(const char *tools_json, rf_buf *out, rf_error *err);

/* Recognises a call in a reply. Returns true and sets *name and *arguments (the arguments
 * object serialised as compact JSON) when text is a call to one of tools_json's functions;
 * false otherwise (a plain answer). */
bool rf_toolcall_parse(const char *text, size_t len, const char *tools_json, char **name,
                       char **arguments);

/* The assistant turn that a call is rendered as when a conversation is replayed:
 * {"name": NAME, "parameters": ARGUMENTS}. Caller frees; NULL when out of memory. */
char *rf_toolcall_render(const char *name, const char *arguments_json);

#endif
