/* chat.h: rendering a conversation (and the tools it may call) into prompt text the way the
 * model's own chat template does, without a Jinja engine: the template text in the GGUF file is
 * recognised as one of a few families and rendered natively.
 *
 * Families:
 *   gemma   llama.cpp's "gemma": system text trimmed and written at the start of the next
 *           non-model turn followed by a blank line; assistant written "model"; each turn
 *           "<start_of_turn>ROLE\nTRIMMED<end_of_turn>\n"; generation prompt
 *           "<start_of_turn>model\n". The file of the embedded Gemma 3 base model has no
 *           template: gemma is its architecture's.
 *   chatml  "<|im_start|>ROLE\nCONTENT<|im_end|>\n"; the template's own default system message
 *           when the conversation has none (SmolLM2: "You are a helpful AI assistant named
 *           SmolLM, trained by Hugging Face").
 *   qwen    ChatML with Qwen2.5's tool section: tools as JSON lines inside <tools></tools> in the
 *           system turn, calls as <tool_call>{"name": ..., "arguments": ...}</tool_call> in the
 *           assistant turn, results as <tool_response> blocks in one user turn; its default
 *           system message ("You are Qwen, created by Alibaba Cloud. ...").
 * Families without a tool section of their own (gemma, chatml) describe the tools in the system
 * text and replay calls as a JSON object {"name", "parameters"} (engine/toolcall.h). Tools'
 * JSON is written as Jinja's tojson writes it (", " and ": ", keys in order). A template text
 * of none of these families is "unknown": rendering it fails with a message saying so, and a
 * family can be forced (rf_chat_family_parse). No BOS is written: the tokenizer adds it.
 *
 * Ownership: rf_chat_template owns its default system text (rf_chat_template_free); output goes
 * to a caller-owned rf_buf (appended, NUL-terminated).
 */
#ifndef RF_MODEL_CHAT_H
#define RF_MODEL_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "roofline/status.h"
#include "util/buf.h"

typedef enum rf_chat_family {
    RF_CHAT_GEMMA = 0,
    RF_CHAT_CHATML,
    RF_CHAT_QWEN,
    RF_CHAT_UNKNOWN,
} rf_chat_family;

/* "gemma", "chatml", "qwen", "unknown" */
const char *rf_chat_family_name(rf_chat_family f);
/* The family named s (not "unknown"); false when s names none. */
bool rf_chat_family_parse(const char *s, rf_chat_family *out);

typedef struct rf_chat_template {
    rf_chat_family family;
    char *default_system; /* the template's system text for a conversation without one, or NULL */
    /* qwen: the template's literal texts before the tool list (from "\n\n# Tools" to "<tools>")
     * and after it (from "\n</tools>" to the system turn's end), or NULL for Qwen2.5's usual
     * wording; all three owned, freed by rf_chat_template_free */
    char *tools_head, *tools_tail;
} rf_chat_template;

/* Recognises a template text (NULL: none in the file; then fallback is the family). */
void rf_chat_template_detect(const char *text, rf_chat_family fallback, rf_chat_template *out);
void rf_chat_template_free(rf_chat_template *t);

typedef struct rf_chat_msg {
    const char *role;         /* system, developer (as system), user, assistant, tool */
    const char *content;      /* may be NULL for an assistant turn that only calls tools */
    const char *tool_calls;   /* assistant: the OpenAI tool_calls array as JSON text, or NULL */
    const char *tool_call_id; /* tool: the call it answers (not rendered by these families) */
} rf_chat_msg;

/* tools_json: an OpenAI "tools" array as JSON text, or NULL. RF_ERR_UNSUPPORTED for an unknown
 * family; RF_ERR_ARG naming the message or field that is wrong. */
rf_status rf_chat_render(const rf_chat_template *t, const rf_chat_msg *msgs, size_t n,
                         const char *tools_json, bool add_generation_prompt, rf_buf *out,
                         rf_error *err);

#endif
