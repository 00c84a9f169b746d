/* chat.c: built-in chat templates. */
#include "model/chat.h"

#include <ctype.h>
#include <string.h>

/* Appends s without leading and trailing whitespace. */
static rf_status append_trimmed(rf_buf *b, const char *s) {
    size_t n = strlen(s);
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    while (n > i && isspace((unsigned char)s[n - 1])) n--;
    return rf_buf_append(b, s + i, n - i);
}

static bool is_system(const char *role) {
    return strcmp(role, "system") == 0 || strcmp(role, "developer") == 0;
}

static rf_status render_gemma(const rf_chat_msg *msgs, size_t n, bool gen, rf_buf *out) {
    rf_status st = RF_OK;
    rf_buf sys;
    rf_buf_init(&sys, 0);
    for (size_t i = 0; i < n && !st; i++) {
        const char *role = msgs[i].role;
        if (is_system(role)) {
            if (sys.len) st = rf_buf_append_str(&sys, "\n\n");
            if (!st) st = append_trimmed(&sys, msgs[i].content);
            continue;
        }
        bool model = strcmp(role, "assistant") == 0 || strcmp(role, "model") == 0;
        st = rf_buf_append_str(out, "<start_of_turn>");
        if (!st) st = rf_buf_append_str(out, model ? "model" : role);
        if (!st) st = rf_buf_append_str(out, "\n");
        if (!st && !model && sys.len) {
            st = rf_buf_append(out, sys.data, sys.len);
            if (!st) st = rf_buf_append_str(out, "\n\n");
            rf_buf_reset(&sys);
        }
        if (!st) st = append_trimmed(out, msgs[i].content);
        if (!st) st = rf_buf_append_str(out, "<end_of_turn>\n");
    }
    if (!st && gen) st = rf_buf_append_str(out, "<start_of_turn>model\n");
    rf_buf_free(&sys);
    return st;
}

static rf_status render_chatml(const rf_chat_msg *msgs, size_t n, bool gen, rf_buf *out) {
    rf_status st = RF_OK;
    for (size_t i = 0; i < n && !st; i++) {
        st = rf_buf_printf(out, "<|im_start|>%s\n", msgs[i].role);
        if (!st) st = rf_buf_append_str(out, msgs[i].content);
        if (!st) st = rf_buf_append_str(out, "<|im_end|>\n");
    }
    if (!st && gen) st = rf_buf_append_str(out, "<|im_start|>assistant\n");
    return st;
}

rf_status rf_chat_render(rf_chat_format f, const rf_chat_msg *msgs, size_t n,
                         bool add_generation_prompt, rf_buf *out, rf_error *err) {
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return rf_error_set(err, RF_ERR_ARG, "chat message %zu has no role or content", i);
    rf_status st = f == RF_CHAT_CHATML ? render_chatml(msgs, n, add_generation_prompt, out)
                                       : render_gemma(msgs, n, add_generation_prompt, out);
    if (!st) st = rf_buf_terminate(out);
    if (st) return rf_error_set(err, st, "chat template: out of memory");
    return RF_OK;
}
