/* proto.c: the extra_body check and an SSE stream feeding a protocol's event fold (proto.h). */
#include "backend/proto.h"

#include <string.h>

rf_status rf_bk_extra_body_check(const char *extra_body, const char *scheme, rf_error *err) {
    if (!extra_body) return RF_OK;
    json_t *x = json_loads(extra_body, JSON_REJECT_DUPLICATES, NULL);
    bool ok = json_is_object(x);
    json_decref(x);
    return ok ? RF_OK
              : rf_error_set(err, RF_ERR_ARG, "%s: extra_body is not a JSON object", scheme);
}

static int on_event(void *user, const char *type, const char *data, size_t len) {
    rf_bk_sse_stream *s = user;
    return s->proto->event(s->fold, s->req, type, data, len, s->t, s->sse.n_events) ? 0 : 1;
}

void rf_bk_sse_stream_init(rf_bk_sse_stream *s, const rf_bk_proto *proto, void *fold) {
    memset(s, 0, sizeof *s);
    rf_sse_init(&s->sse, RF_SSE_MAX_EVENT_DEFAULT, on_event, s);
    s->proto = proto;
    s->fold = fold;
}

void rf_bk_sse_stream_free(rf_bk_sse_stream *s) {
    rf_sse_free(&s->sse);
}

void rf_bk_sse_stream_reset(rf_bk_sse_stream *s, rf_bk_request *req) {
    rf_sse_reset(&s->sse);
    s->proto->fold_reset(s->fold);
    s->req = req;
    s->t = 0;
}

bool rf_bk_sse_stream_feed(rf_bk_sse_stream *s, const void *p, size_t n, int64_t t) {
    s->t = t;
    rf_sse_status st = rf_sse_feed(&s->sse, p, n);
    if (st == RF_SSE_OK) return true;
    rf_bk_result *res = &s->req->res;
    if (st == RF_SSE_TOO_BIG)
        rf_bk_fail(res, RF_BK_INVALID, "an SSE event is larger than %zu bytes", s->sse.max);
    else if (st == RF_SSE_NOMEM)
        rf_bk_fail(res, RF_BK_INTERNAL, "out of memory");
    return false;
}

void rf_bk_sse_stream_end(rf_bk_sse_stream *s) {
    rf_sse_status st = rf_sse_finish(&s->sse);
    s->proto->stream_end(s->fold, s->req, s->sse.n_events, st == RF_SSE_PARTIAL);
}
