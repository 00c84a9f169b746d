/* tsplit_log.h: one feeding of a reply through the streaming tool-call splitter
 * (server/tool_stream.h) written down as text, so that feedings cut differently can be compared:
 * every event tagged "|KIND:INDEX:" (adjacent pieces of one kind and call merged), then
 * "|held:TEXT" when the splitter held text back. Used by test_tool_stream and fuzz_toolcall.
 * Header-only; the caller owns log->b (rf_buf_init before, rf_buf_free after). */
#ifndef RF_TEST_TSPLIT_LOG_H
#define RF_TEST_TSPLIT_LOG_H

#include <stdbool.h>
#include <stdio.h>

#include "server/tool_stream.h"
#include "util/buf.h"

typedef struct tsplit_log {
    rf_buf b;
    int last_kind, last_index;
    int32_t n_calls;      /* RF_TSPLIT_CALL events */
    int bad_order;        /* events whose index is not the current call's (-1 for content) */
    size_t content_bytes; /* bytes of content events */
} tsplit_log;

static inline void tsplit_log_event(void *user, rf_tsplit_kind k, int32_t index, const char *s,
                                    size_t n) {
    tsplit_log *l = user;
    if (k == RF_TSPLIT_CALL) {
        l->bad_order += index != l->n_calls;
        l->n_calls++;
    } else if (k == RF_TSPLIT_ARGS) {
        l->bad_order += index != l->n_calls - 1;
    } else {
        l->bad_order += index != -1;
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

/* Feeds len bytes of text in pieces of `piece` bytes (open/close: the markers, or NULL) and
 * finishes. False when the splitter refused the tools or a push failed. */
static inline bool tsplit_log_feed(const char *open, const char *close, const char *tools,
                                   const char *text, size_t len, size_t piece, tsplit_log *l) {
    l->last_kind = -1;
    l->last_index = -2;
    l->n_calls = 0;
    l->bad_order = 0;
    l->content_bytes = 0;
    rf_tsplit t;
    if (rf_tsplit_init(&t, open, close, tools, tsplit_log_event, l, NULL) != RF_OK) return false;
    bool ok = true;
    for (size_t at = 0; at < len && ok; at += piece)
        ok = rf_tsplit_push(&t, text + at, len - at < piece ? len - at : piece) == RF_OK;
    const char *held;
    size_t hl;
    if (ok && rf_tsplit_finish(&t, &held, &hl)) {
        rf_buf_append_str(&l->b, "|held:");
        rf_buf_append(&l->b, held, hl);
    }
    rf_tsplit_free(&t);
    return ok;
}

#endif
