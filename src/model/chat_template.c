/* chat_template.c: template families, recognised from the file's template text (see chat.h);
 * the rendering is chat.c. Kept apart so the model loader needs no JSON library. */
#include "model/chat.h"

#include <stdlib.h>
#include <string.h>

const char *rf_chat_family_name(rf_chat_family f) {
    static const char *const names[] = {"gemma", "chatml", "qwen", "unknown"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "unknown";
}

bool rf_chat_family_parse(const char *s, rf_chat_family *out) {
    for (int f = RF_CHAT_GEMMA; s && f < RF_CHAT_UNKNOWN; f++)
        if (!strcmp(s, rf_chat_family_name((rf_chat_family)f))) {
            *out = (rf_chat_family)f;
            return true;
        }
    return false;
}

/* The template's default system message: the literal text of a "<|im_start|>system\n...
 * <|im_end|>" the template writes when the conversation has no system turn (the occurrence that
 * is plain text, not an expression). Escaped newlines in a quoted Jinja string become newlines. */
static char *default_system(const char *t) {
    static const char head[] = "<|im_start|>system";
    for (const char *p = strstr(t, head); p; p = strstr(p + 1, head)) {
        const char *q = p + sizeof head - 1;
        if (q[0] == '\\' && q[1] == 'n')
            q += 2;
        else if (q[0] == '\n')
            q++;
        else
            continue;
        const char *end = strstr(q, "<|im_end|>");
        if (!end || end <= q) continue;
        bool literal = true;
        for (const char *c = q; c < end && literal; c++) literal = !strchr("'\"{}+%", *c);
        if (!literal) continue;
        size_t len = (size_t)(end - q);
        char *s = malloc(len + 1);
        if (!s) return NULL;
        size_t n = 0;
        for (const char *c = q; c < end; c++) {
            if (c[0] == '\\' && c + 1 < end && c[1] == 'n') {
                s[n++] = '\n';
                c++;
            } else {
                s[n++] = *c;
            }
        }
        s[n] = 0;
        return s;
    }
    return NULL;
}

/* The Jinja string literal of template t whose escaped text holds needle, unescaped (\n, \t,
 * \", \', \\), or NULL when no literal holds it. */
static char *literal_with(const char *t, const char *needle) {
    const char *p = strstr(t, needle);
    if (!p) return NULL;
    const char *q = p; /* the opening quote: the nearest unescaped one before needle */
    while (q > t && !((q[-1] == '"' || q[-1] == '\'') && (q - 1 == t || q[-2] != '\\'))) q--;
    if (q == t) return NULL;
    char quote = q[-1];
    size_t cap = strlen(q) + 1, n = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    for (const char *c = q; *c; c++) {
        if (*c == quote) {
            s[n] = 0;
            return s;
        }
        if (c[0] == '\\' && c[1]) {
            c++;
            s[n++] = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c;
        } else {
            s[n++] = *c;
        }
    }
    free(s); /* no closing quote: not a literal */
    return NULL;
}

void rf_chat_template_detect(const char *text, rf_chat_family fallback, rf_chat_template *out) {
    memset(out, 0, sizeof *out);
    if (!text) {
        out->family = fallback;
        return;
    }
    if (strstr(text, "<start_of_turn>")) {
        out->family = RF_CHAT_GEMMA;
    } else if (strstr(text, "<|im_start|>")) {
        out->family = strstr(text, "<tool_call>") && strstr(text, "<tools>") &&
                              strstr(text, "<tool_response>")
                          ? RF_CHAT_QWEN
                          : RF_CHAT_CHATML;
        out->default_system = default_system(text);
        if (out->family == RF_CHAT_QWEN) {
            /* the tool section's two texts as this file words them (they differ between files:
             * Qwen2.5-Coder 1.5B's doubles the braces of its example call) */
            out->tools_head = literal_with(text, "# Tools");
            out->tools_tail = literal_with(text, "</tools>\\n\\nFor each function call");
        }
    } else {
        out->family = RF_CHAT_UNKNOWN;
    }
}

void rf_chat_template_free(rf_chat_template *t) {
    free(t->default_system);
    free(t->tools_head);
    free(t->tools_tail);
    memset(t, 0, sizeof *t);
}
