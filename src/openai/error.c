/* error.c: OpenAI errors as values (request.h: rf_openai_error): the error a status and message
 * make, and the 400 for a JSON member read that failed; shared by the request parser (request.c,
 * tools.c), the server and the fake. */
#include <stdarg.h>
#include <stdio.h>

#include "openai/request.h"
#include "util/json_read.h"

rf_status rf_openai_error_set(rf_openai_error *e, int http, const char *param, const char *code,
                              const char *fmt, ...) {
    if (!e) return RF_ERR_ARG;
    e->http = http;
    snprintf(e->type, sizeof e->type, "%s",
             http == 429   ? "rate_limit_error"
             : http >= 500 ? (http == 503 ? "service_unavailable_error" : "server_error")
                           : "invalid_request_error");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return http >= 500 ? RF_ERR_INTERNAL : RF_ERR_ARG;
}

/* The OpenAI error for a member read that failed (util/json_read.h): param is the member's
 * path; code missing_required_parameter, invalid_type, or invalid_value for the rest. */
rf_status rf_openai_jr_error(const rf_jr *j, rf_openai_error *e) {
    const char *code = j->why == RF_JR_MISSING ? "missing_required_parameter"
                       : j->why == RF_JR_TYPE  ? "invalid_type"
                                               : "invalid_value";
    return rf_openai_error_set(e, 400, j->path, code, "%s", j->err->msg);
}
