/* routes.c: the server's route table, authentication and the answers of a request no handler
 * takes (see srv.h). A new endpoint is a handler and one line in `routes`.
 */
#include <string.h>

#include "server/srv.h"

enum { OPEN = 1 }; /* no API key, no body limit (as /health, and vLLM's /metrics) */

static const rf_httpd_route routes[] = {
    {"/chat/completions", "POST", rf_srv_answer_chat, 0},
    {"/completions", "POST", rf_srv_answer_completions, 0},
    {"/models", "GET", rf_srv_answer_models, 0},
    {"/health", "GET", rf_srv_answer_health, OPEN},
    {"/tokenize", "POST", rf_srv_answer_tokenize, 0},
    {"/detokenize", "POST", rf_srv_answer_detokenize, 0},
    {"/metrics", "GET", rf_srv_answer_metrics, OPEN},
};

/* `Authorization: Bearer KEY`, compared in constant time. */
static bool authorized(const rf_srv *s, const char *h) {
    if (!s->api_key) return true;
    if (!h || strncmp(h, "Bearer ", 7) != 0) return false;
    const char *k = h + 7, *want = s->api_key;
    size_t kl = strlen(k), wl = strlen(want);
    unsigned diff = kl != wl;
    for (size_t i = 0; i < wl; i++) diff |= (unsigned)(want[i] ^ (i < kl ? k[i] : 0));
    return diff == 0;
}

rf_httpd_ret rf_srv_dispatch(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    rf_srv *s = r->s;
    const rf_httpd_route *rt;
    rf_httpd_match m =
        rf_httpd_route_find(routes, sizeof routes / sizeof routes[0], h->url, h->method, &rt);
    if (m == RF_HTTPD_NO_ROUTE)
        return rf_srv_fail(r, 404, NULL, "not_found", "no route for %.20s %.100s", h->method,
                           h->url);
    if (m == RF_HTTPD_BAD_METHOD) {
        rf_openai_error e;
        rf_openai_error_set(&e, 405, NULL, "method_not_allowed",
                            "method %.20s is not allowed on %.100s", h->method, h->url);
        return rf_srv_reply_error(r, &e, "Allow", rt->method);
    }
    if (rt->flags & OPEN) return rt->fn(h);
    if (!authorized(s, rf_httpd_header(h, "Authorization")))
        return rf_srv_fail(r, 401, NULL, "invalid_api_key",
                           "a valid 'Authorization: Bearer' API key "
                           "is required");
    if (h->too_large)
        return rf_srv_fail(r, 413, NULL, "request_too_large", "the body exceeds %zu bytes",
                           s->body_max);
    return rt->fn(h);
}
