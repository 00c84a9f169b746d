/* reply.c: the server's error replies: OpenAI error objects (see srv.h). */
#include <stdarg.h>
#include <stdio.h>

#include "server/srv.h"

rf_httpd_ret rf_srv_reply_error(srv_req *r, const rf_openai_error *e, const char *hname,
                                const char *hval) {
    return rf_httpd_reply_json(&r->h, e->http, rf_openai_error_json(e), hname, hval);
}

rf_httpd_ret rf_srv_fail(srv_req *r, int http, const char *param, const char *code, const char *fmt,
                         ...) {
    rf_openai_error e;
    char msg[sizeof e.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rf_openai_error_set(&e, http, param, code, "%s", msg);
    return rf_srv_reply_error(r, &e, http == 429 || http == 503 ? "Retry-After" : NULL, "1");
}
