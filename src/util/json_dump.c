/* json_dump.c: see json_dump.h. */
#include "util/json_dump.h"

#include <stdbool.h>

typedef struct dump_ctx {
    rf_buf *out;
    bool failed;
} dump_ctx;

static int dump_cb(const char *p, size_t n, void *user) {
    dump_ctx *c = user;
    if (c->failed || rf_buf_append(c->out, p, n)) c->failed = true;
    return c->failed ? -1 : 0;
}

rf_status rf_json_dump_buf(const json_t *o, size_t flags, rf_buf *out) {
    const size_t len = out->len;
    dump_ctx c = {out, false};
    if (!o || json_dump_callback(o, dump_cb, &c, flags) || c.failed) {
        out->len = len;
        return RF_ERR_NOMEM;
    }
    return RF_OK;
}

char *rf_json_dumps(const json_t *o, size_t flags) {
    rf_buf b;
    rf_buf_init(&b, 0);
    if (rf_json_dump_buf(o, flags, &b) || rf_buf_terminate(&b)) {
        rf_buf_free(&b);
        return NULL;
    }
    return (char *)rf_buf_take(&b, NULL);
}
