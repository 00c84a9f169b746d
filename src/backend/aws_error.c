/* aws_error.c: AWS errors as the bench's classes (aws_error.h). */
#include "backend/aws_error.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/file.h"

/* type equals name, the first letter compared without case */
static bool is(const char *type, const char *name) {
    if (!type || !*type) return false;
    char a = type[0] >= 'a' && type[0] <= 'z' ? (char)(type[0] - 32) : type[0];
    return a == name[0] && !strcmp(type + 1, name + 1);
}

static bool any(const char *type, const char *const *names) {
    for (; *names; names++)
        if (is(type, *names)) return true;
    return false;
}

rf_bk_error rf_bk_aws_error_class(const char *type, long status, bool in_stream) {
    static const char *const throttled[] = {"ThrottlingException", "ThrottledException",
                                            "TooManyRequestsException", "ModelNotReadyException",
                                            NULL};
    static const char *const model[] = {"ModelErrorException", "ModelError",
                                        "ModelStreamErrorException", "ModelStreamError", NULL};
    static const char *const internal[] = {"InternalStreamFailure", "InternalServerException",
                                           "InternalFailure",       "ServiceUnavailableException",
                                           "ServiceUnavailable",    NULL};
    if (any(type, throttled) || status == 429) return RF_BK_THROTTLED;
    if (any(type, model)) return RF_BK_MODEL_ERROR;
    if (is(type, "ModelTimeoutException") || status == 408) return RF_BK_TIMEOUT;
    if (in_stream) return RF_BK_SERVER_ERROR;
    if (any(type, internal)) return RF_BK_HTTP_5XX;
    return status >= 500 ? RF_BK_HTTP_5XX : RF_BK_HTTP_4XX;
}

/* "message"/"Message" of an AWS error document, and the SageMaker ModelError's original
 * message; type from "__type" or "code" when asked. */
static void doc_fields(const json_t *o, char *msg, size_t mn, char *type, size_t tn) {
    const char *m = json_string_value(json_object_get(o, "message"));
    if (!m) m = json_string_value(json_object_get(o, "Message"));
    const char *orig = json_string_value(json_object_get(o, "OriginalMessage"));
    if (!orig) orig = json_string_value(json_object_get(o, "originalMessage"));
    char a[300] = "", b[300] = "";
    if (m) rf_escaped(m, strlen(m), a, sizeof a);
    if (orig) rf_escaped(orig, strlen(orig), b, sizeof b);
    if (m || orig) snprintf(msg, mn, "%s%s%s%s", a, orig ? " (model: " : "", b, orig ? ")" : "");
    const char *t = json_string_value(json_object_get(o, "__type"));
    if (!t) t = json_string_value(json_object_get(o, "code"));
    if (type && t && !type[0]) {
        const char *hash = strrchr(t, '#'); /* "com.amazon.coral#ValidationException" */
        t = hash ? hash + 1 : t;
        rf_escaped(t, strcspn(t, ":"), type, tn);
    }
}

static void fail_with(rf_bk_result *res, rf_bk_error cls, const char *type, long status,
                      const char *msg) {
    char where[24] = "";
    if (status) snprintf(where, sizeof where, " (HTTP %ld)", status);
    rf_bk_fail(res, cls, "%s%s: %s%s%s%s", type[0] ? type : "error", where,
               msg[0] ? msg : "(no message)", res->request_id[0] ? " [request id " : "",
               res->request_id, res->request_id[0] ? "]" : "");
}

void rf_bk_aws_fail_http(rf_bk_result *res, long status, const char *error_type, const char *body,
                         size_t n) {
    char type[96] = "", msg[640] = "";
    if (error_type && *error_type)
        rf_escaped(error_type, strcspn(error_type, ":"), type, sizeof type);
    json_t *root = n ? json_loadb(body, n, 0, NULL) : NULL;
    if (json_is_object(root)) doc_fields(root, msg, sizeof msg, type, sizeof type);
    json_decref(root);
    if (!msg[0] && n) rf_escaped(body, n < 300 ? n : 300, msg, sizeof msg);
    fail_with(res, rf_bk_aws_error_class(type, status, false), type, status, msg);
}

/* A string header's value into out (escaped), or "". */
static void header_text(const rf_es_message *m, const char *name, char *out, size_t n) {
    const rf_es_header *h = rf_es_find(m, name);
    out[0] = 0;
    if (h && h->type == RF_ES_STRING) rf_escaped((const char *)h->bytes, h->len, out, n);
}

bool rf_bk_aws_fail_event(rf_bk_result *res, const rf_es_message *m) {
    char type[96], msg[640] = "";
    if (rf_es_header_is(m, ":message-type", "exception")) {
        header_text(m, ":exception-type", type, sizeof type);
        json_t *root =
            m->payload_len ? json_loadb((const char *)m->payload, m->payload_len, 0, NULL) : NULL;
        if (json_is_object(root)) doc_fields(root, msg, sizeof msg, NULL, 0);
        json_decref(root);
        if (!msg[0] && m->payload_len)
            rf_escaped((const char *)m->payload, m->payload_len < 300 ? m->payload_len : 300, msg,
                       sizeof msg);
    } else if (rf_es_header_is(m, ":message-type", "error")) {
        header_text(m, ":error-code", type, sizeof type);
        header_text(m, ":error-message", msg, sizeof msg);
    } else {
        return false;
    }
    fail_with(res, rf_bk_aws_error_class(type, 0, true), type, 0, msg);
    return true;
}
