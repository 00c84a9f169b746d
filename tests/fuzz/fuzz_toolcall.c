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
#include "tsplit_log.h"

static const char *const DEFAULT_TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]";

/* The splitter's events for the reply cut in pieces of `piece` bytes (tests/unit/tsplit_log.h);
 * false when it refused the tools (then nothing ran). */
static bool split(const char *open, const char *close, const char *tools, const char *text,
                  size_t len, size_t piece, tsplit_log *l) {
    rf_buf_init(&l->b, 0);
    if (!tsplit_log_feed(open, close, tools, text, len, piece, l)) return false;
    REQUIRE(l->bad_order == 0 && l->content_bytes <= len);
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
    tsplit_log whole, bytes, threes;
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
