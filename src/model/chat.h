/* chat.h: rendering a conversation into prompt text with a model's chat template.
 *
 * Built-in formats (no Jinja): Gemma (llama.cpp's "gemma": system text is trimmed and written at
 * the start of the next non-model turn followed by a blank line; assistant is written "model";
 * each turn "<start_of_turn>ROLE\nTRIMMED<end_of_turn>\n"; generation prompt
 * "<start_of_turn>model\n") and ChatML. No BOS is written: the tokenizer adds it.
 *
 * Ownership: output goes to a caller-owned rf_buf (appended, NUL-terminated).
 */
#ifndef RF_MODEL_CHAT_H
#define RF_MODEL_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"
#include "util/buf.h"

typedef struct rf_chat_msg {
    const char *role; /* system, developer (as system), user, assistant, tool */
    const char *content;
} rf_chat_msg;

rf_status rf_chat_render(rf_chat_format f, const rf_chat_msg *msgs, size_t n,
                         bool add_generation_prompt, rf_buf *out, rf_error *err);

#endif
