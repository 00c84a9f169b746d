/* toolcall.h: tool calls in replies, in each chat family's form (model/chat.h).
 *
 * Models without a tool section (Gemma 3, plain ChatML): the tools are described in the prompt
 * and a call is recognised by the shape of the output, as Google suggests for Gemma: a reply
 * that is only a JSON object {"name": ..., "parameters": {...}} (also accepted: "arguments" for
 * "parameters", and the object inside a ```json fence) naming one of the tools.
 * Qwen2.5: every <tool_call>{"name": ..., "arguments": {...}}</tool_call> block of the reply
 * (the template's documented form), the text outside the blocks being content; when there is no
 * block, a reply that is a bare JSON object naming a declared tool with an "arguments" object
 * is taken as a call too (Qwen2.5-Coder writes it so; several vLLM parsers accept it). Each
 * parsed reply says which form its calls took, so a grader and a user can see it.
 *
 * Ownership: outputs are malloc'd (rf_toolcalls_free) or appended to caller-owned rf_buf.
 */
#ifndef RF_MODEL_TOOLCALL_H
#define RF_MODEL_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

typedef enum rf_call_form {
    RF_CALL_FORM_NONE = 0,    /* no call: a plain answer */
    RF_CALL_FORM_TAGGED,      /* the family's own form (<tool_call> blocks) */
    RF_CALL_FORM_BARE_JSON,   /* a bare JSON object naming a tool, where the family has tags */
    RF_CALL_FORM_PROMPT_JSON, /* the JSON object the prompt asked for (families without tags) */
} rf_call_form;

/* "none", "tagged", "bare_json", "prompt_json" */
const char *rf_call_form_name(rf_call_form f);

typedef struct rf_tool_call {
    char *name;
    char *arguments; /* the arguments object as compact JSON text */
} rf_tool_call;

typedef struct rf_toolcalls {
    rf_tool_call *calls;
    int32_t n;
    rf_call_form form;
    char *content; /* the reply's text outside the calls (trimmed), or NULL */
} rf_toolcalls;

/* The texts a family's call is written between: qwen "<tool_call>" and "</tool_call>" (a block
 * holding {"name": ..., "arguments": {...}}); families without tags (gemma, chatml): both NULL,
 * the call being a bare JSON object {"name": ..., "parameters": {...}} as the whole reply. The
 * strings are static. */
void rf_toolcall_markers(int family, const char **open, const char **close);

/* Parses a reply of a model of chat family `family` (an rf_chat_family) against tools_json.
 * Never fails on the reply's content (a reply that is not a call is a plain answer); returns
 * RF_ERR_NOMEM only. */
rf_status rf_toolcalls_parse(int family, const char *text, size_t len, const char *tools_json,
                             rf_toolcalls *out);
void rf_toolcalls_free(rf_toolcalls *tc);

#endif
