/* tool_stream.h: splits a model's reply into content and tool calls while it streams, so the
 * server can send OpenAI's tool-call deltas as the model writes them: a call's name as soon as it
 * is known, then its arguments in fragments (as OpenAI streams them), and the text outside calls
 * as content.
 *
 * A call is what the model's format says (rf_engine_tool_markers): OPEN {"name": "N",
 * "arguments": VALUE} CLOSE, anywhere in the reply (open non-NULL), or a reply whose first
 * non-space byte is '{' holding {"name": "N", "arguments" or "parameters": VALUE} (every
 * family: Qwen2.5-Coder also writes calls bare). N must be one of the declared tools. The name
 * comes first: that is how the models write it and how the constraint engine orders it. A call
 * in another shape is not streamed: from there the splitter holds the text back, and
 * rf_tsplit_finish says so, for the caller to parse the whole reply (rf_engine_parse_reply) and
 * send the remaining calls whole. The arguments' fragments are the model's own bytes: joined,
 * they are the arguments' JSON text.
 *
 * This reads only the structure around the arguments (braces, brackets, string quotes and
 * escapes, to find where the value ends); the arguments are not parsed here.
 *
 * Ownership: rf_tsplit_init copies the markers and names; rf_tsplit_free releases. Events are
 * delivered through the callback during push and finish; their text is borrowed for the call.
 * One splitter per reply; not thread-safe.
 */
#ifndef RF_SERVER_TOOL_STREAM_H
#define RF_SERVER_TOOL_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"
#include "util/buf.h"

typedef enum rf_tsplit_kind {
    RF_TSPLIT_CONTENT = 0, /* text outside calls */
    RF_TSPLIT_CALL,        /* a call begins: text is its name */
    RF_TSPLIT_ARGS,        /* a fragment of the current call's arguments */
} rf_tsplit_kind;

typedef void (*rf_tsplit_fn)(void *user, rf_tsplit_kind kind, int32_t index, const char *text,
                             size_t len);

typedef struct rf_tsplit {
    char *open, *close; /* markers, or NULL */
    char **names;       /* declared tool names */
    size_t n_names;
    int state;
    bool at_start;     /* nothing but white space seen yet */
    rf_buf hold;       /* text held back: a possible marker, a call's head, the fallback */
    int32_t n_calls;   /* calls begun */
    int depth;         /* arguments: nesting */
    bool in_str, esc;  /* arguments: inside a string, after a backslash */
    size_t tail_match; /* bytes of the close marker matched */
    rf_tsplit_fn fn;
    void *user;
} rf_tsplit;

/* tools_json: the request's OpenAI tools array (the names are taken from it). */
rf_status rf_tsplit_init(rf_tsplit *t, const char *open, const char *close, const char *tools_json,
                         rf_tsplit_fn fn, void *user, rf_error *err);
void rf_tsplit_free(rf_tsplit *t);
/* Feeds the next piece of the reply. RF_ERR_NOMEM only. */
rf_status rf_tsplit_push(rf_tsplit *t, const char *s, size_t n);
/* The reply is complete: sends what is held back and can be sent. Returns true when text was
 * held back because a call did not have the streamed shape (*held / *held_len: that text,
 * valid until rf_tsplit_free): the caller parses the whole reply for calls at index
 * t->n_calls and on, and sends *held as content when it holds none. */
bool rf_tsplit_finish(rf_tsplit *t, const char **held, size_t *held_len);

#endif
