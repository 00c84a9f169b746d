/* fuzz_toolcall.c: the libFuzzer target for the tool-call parsers: the whole-reply parser
 * (src/model/toolcall.c) and the streaming splitter (src/server/tool_stream.c).
 *
 * Input: one byte choosing the chat family (Gemma, ChatML: bare JSON calls; Qwen:
 * <tool_call> blocks), then TOOLS \0 REPLY (no NUL: the reply alone, with two declared tools).
 *   - rf_toolcalls_parse never fails on content; every call it finds has a non-empty name and
 *     arguments that are a JSON object; the form is "none" exactly when there is no call;
 *   - the splitter, fed the reply whole, byte by byte and in threes, gives the same events
 *     (adjacent pieces of one kind and call joined), in call order, and never sends more
 *     content bytes than it was fed. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_util.h"
#include "model/chat.h"
#include "model/toolcall.h"
#include "server/tool_stream.h"

static const char *const DEFAULT_TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]";

typedef struct ev_log {
    rf_buf b;
    int last_kind, last_index;
    int32_t n_calls;
    size_t content_bytes;
} ev_log;

static void on_log(void *user, rf_tsplit_kind k, int32_t index, const char *s, size_t n) {
    ev_log *l = user;
    if (k == RF_TSPLIT_CALL) {
        REQUIRE(index == l->n_calls);
        l->n_calls++;
    } else if (k == RF_TSPLIT_ARGS) {
        REQUIRE(index == l->n_calls - 1);
    } else {
        l->content_bytes += n;
    }
    if (!((int)k == l->last_kind && index == l->last_index && k != RF_TSPLIT_CALL)) {
        char tag[32];
        snprintf(tag, sizeof tag, "|%d:%d:", (int)k, (int)index);
        rf_buf_append_str(&l->b, tag);
    }
    l->last_kind = (int)k;
    l->last_index = index;
    rf_buf_append(&l->b, s, n);
}

/* The splitter's events for the reply cut in pieces of `piece` bytes; false when it refused the
 * tools (then nothing ran). */
static bool split(const char *open, const char *close, const char *tools, const char *text,
                  size_t len, size_t piece, ev_log *l) {
    rf_tsplit t;
    rf_buf_init(&l->b, 0);
    l->last_kind = -1;
    l->last_index = -2;
    l->n_calls = 0;
    l->content_bytes = 0;
    rf_error err = {0};
    if (rf_tsplit_init(&t, open, close, tools, on_log, l, &err) != RF_OK) return false;
    for (size_t at = 0; at < len; at += piece)
        REQUIRE(rf_tsplit_push(&t, text + at, len - at < piece ? len - at : piece) == RF_OK);
    const char *held;
    size_t hl;
    if (rf_tsplit_finish(&t, &held, &hl)) {
        REQUIRE(hl <= len);
        rf_buf_append_str(&l->b, "|held:");
        rf_buf_append(&l->b, held, hl);
    }
    REQUIRE(l->content_bytes <= len);
    rf_tsplit_free(&t);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int family = data[0] % 3; /* RF_CHAT_GEMMA, RF_CHAT_CHATML, RF_CHAT_QWEN */
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    const uint8_t *z = memchr(rest, 0, n);
    char *tools, *reply;
    size_t reply_len;
    if (z) {
        tools = fuzz_strndup(rest, (size_t)(z - rest));
        reply_len = n - (size_t)(z - rest) - 1;
        reply = fuzz_strndup(z + 1, reply_len);
    } else {
        tools = fuzz_strndup(DEFAULT_TOOLS, strlen(DEFAULT_TOOLS));
        reply_len = n;
        reply = fuzz_strndup(rest, n);
    }

    rf_toolcalls tc;
    memset(&tc, 0, sizeof tc);
    REQUIRE(rf_toolcalls_parse(family, reply, reply_len, tools, &tc) == RF_OK);
    REQUIRE(tc.n >= 0 && (tc.n == 0) == (tc.form == RF_CALL_FORM_NONE));
    for (int32_t i = 0; i < tc.n; i++) {
        REQUIRE(tc.calls[i].name && tc.calls[i].name[0] && tc.calls[i].arguments);
        json_t *a = json_loads(tc.calls[i].arguments, 0, NULL);
        REQUIRE(a && json_is_object(a));
        json_decref(a);
    }
    rf_toolcalls_free(&tc);

    char *name = NULL, *args = NULL;
    if (rf_toolcall_parse(reply, reply_len, tools, &name, &args)) {
        REQUIRE(name && name[0] && args);
        json_t *a = json_loads(args, 0, NULL);
        REQUIRE(a && json_is_object(a));
        json_decref(a);
    }
    free(name);
    free(args);

    const char *open, *close;
    rf_toolcall_markers(family, &open, &close);
    ev_log whole, bytes, threes;
    if (split(open, close, tools, reply, reply_len, reply_len ? reply_len : 1, &whole)) {
        REQUIRE(split(open, close, tools, reply, reply_len, 1, &bytes));
        REQUIRE(split(open, close, tools, reply, reply_len, 3, &threes));
        REQUIRE(fuzz_mem_eq(whole.b.data, whole.b.len, bytes.b.data, bytes.b.len));
        REQUIRE(fuzz_mem_eq(whole.b.data, whole.b.len, threes.b.data, threes.b.len));
        rf_buf_free(&bytes.b);
        rf_buf_free(&threes.b);
    }
    rf_buf_free(&whole.b);
    free(tools);
    free(reply);
    return 0;
}
