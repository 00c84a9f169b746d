/* fake_handlers.c: the fake server's routes and handlers (see fake_server.h for the endpoints,
 * fake_req.h for the files): POST /v1/chat/completions (its plan, then the faults that answer
 * at once, a stream or a body at its time), GET /v1/models, GET /health; the error replies.
 */
#include <stdio.h>
#include <time.h>

#include "fake/fake_req.h"
#include "openai/response.h"

/* An error object of status (a 4xx other than 429 counts as a bad request). */
static rf_httpd_ret reply_error(fake_req *r, int status, const char *param, const char *code,
                                const char *msg) {
    if (status >= 400 && status < 500 && status != 429)
        atomic_fetch_add(&r->srv->c.bad_requests, 1);
    return rf_httpd_reply_json(&r->h, status, rf_fake_error_obj(status, msg, param, code), NULL,
                               NULL);
}

/* Queues the first len bytes of r->out as the body, handing its buffer over. */
static rf_httpd_ret reply_out(fake_req *r, size_t len) {
    uint8_t *data = rf_buf_take(&r->out, NULL);
    if (!data) return RF_HTTPD_CLOSE;
    return rf_httpd_reply(&r->h, 200, "application/json", data, len, RF_HTTPD_TAKE, NULL, NULL);
}

static rf_httpd_ret reply_stream(fake_req *r) {
    r->stream_resp = true;
    atomic_fetch_add(&r->srv->c.streams_started, 1);
    return rf_httpd_stream(&r->h, 200, RF_HTTPD_SIZE_UNKNOWN, 4096, rf_fake_stream_read,
                           "text/event-stream", "Cache-Control", "no-cache");
}

/* A non-stream chat response: waits for the schedule, then the body (or its fault). */
static rf_httpd_ret answer_body(fake_req *r) {
    int64_t due =
        r->fault == RF_FAKE_FAULT_STALL ? r->h.t0 + r->stall_ns : rf_fake_ev_time(r, r->n_ev);
    rf_httpd_wait_result w = rf_httpd_wait(&r->h, due);
    if (w == RF_HTTPD_WAIT_GONE) r->client_gone = true;
    if (w != RF_HTTPD_WAIT_DUE || r->fault == RF_FAKE_FAULT_STALL) {
        r->ended_by_us = w != RF_HTTPD_WAIT_GONE;
        return RF_HTTPD_CLOSE;
    }
    if (r->fault == RF_FAKE_FAULT_ERROR_EVENT)
        return rf_httpd_reply_json(
            &r->h, 200,
            rf_fake_error_obj(500, "fake error in a 200 body", NULL, "fake_error_event"), NULL,
            NULL);
    if (!rf_fake_completion_body(r)) return RF_HTTPD_CLOSE;
    if (r->fault == RF_FAKE_FAULT_INVALID_JSON) return reply_out(r, r->out.len / 2);
    if (r->fault == RF_FAKE_FAULT_TRUNCATE)
        return rf_httpd_stream(&r->h, 200, r->out.len, 4096, rf_fake_truncated_read,
                               "application/json", NULL, NULL);
    r->body_resp = true;
    return reply_out(r, r->out.len);
}

/* The faults that answer as soon as the body is in: true with *ret when r has one. */
static bool answer_fault(fake_req *r, rf_httpd_ret *ret) {
    switch (r->fault) {
    case RF_FAKE_FAULT_REFUSE:
        r->ended_by_us = true;
        *ret = RF_HTTPD_CLOSE;
        return true;
    case RF_FAKE_FAULT_500:
        *ret = rf_httpd_reply_json(
            &r->h, 500,
            rf_fake_error_obj(500, "fake internal server error", NULL, "fake_internal_error"), NULL,
            NULL);
        return true;
    case RF_FAKE_FAULT_429: {
        char ra[24];
        snprintf(ra, sizeof ra, "%d", (int)r->retry_after);
        *ret = rf_httpd_reply_json(
            &r->h, 429,
            rf_fake_error_obj(429, "fake rate limit: retry later", NULL, "rate_limit_exceeded"),
            "Retry-After", ra);
        return true;
    }
    default:
        return false;
    }
}

static rf_httpd_ret answer_chat(rf_httpd_req *h) {
    fake_req *r = (fake_req *)h;
    rf_fake *f = r->srv;
    if (h->too_large)
        return reply_error(r, 413, NULL, "request_too_large", "request body is larger than 1 MiB");
    if (rf_fake_json_items(h->body.data, h->body.len, RF_FAKE_JSON_ITEMS_MAX) >
        RF_FAKE_JSON_ITEMS_MAX) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "request body has more than %d structural JSON characters (',' ':' '[' '{' "
                 "outside strings)",
                 RF_FAKE_JSON_ITEMS_MAX);
        rf_buf_free(&h->body);
        return reply_error(r, 400, NULL, "too_many_json_items", msg);
    }
    /* the OpenAI fields: the server's parser, with its limits; any model is answered; tool
     * calls are the fake's to answer */
    rf_openai_limits lim = {NULL, MAX_TOKENS};
    rf_openai_error oe;
    rf_status pst = rf_openai_parse(RF_OPENAI_CHAT, (const char *)h->body.data, h->body.len, &lim,
                                    &r->req, &oe);
    rf_buf_free(&h->body);
    if (pst) {
        if (oe.http == 400 || oe.http == 404) atomic_fetch_add(&f->c.bad_requests, 1);
        return rf_httpd_reply_json(h, oe.http, rf_openai_error_json(&oe), NULL, NULL);
    }
    r->root = r->req.root;
    rf_fake_err e;
    if (!rf_fake_plan(f, r, &e))
        return reply_error(r, 400, e.param[0] ? e.param : NULL, NULL, e.msg);
    atomic_fetch_add(&f->c.chat_requests, 1);
    uint64_t zero = 0; /* the first chat request's arrival: set once */
    atomic_compare_exchange_strong(&f->c.first_arrival_ns, &zero, (uint64_t)h->t0);
    if (r->fault != RF_FAKE_FAULT_NONE) {
        atomic_fetch_add(&f->c.faults_injected, 1);
        atomic_fetch_add(&f->c.by_kind[r->fault], 1);
    }
    rf_httpd_ret ret;
    if (answer_fault(r, &ret)) return ret;
    return r->stream ? reply_stream(r) : answer_body(r);
}

static rf_httpd_ret answer_models(rf_httpd_req *h) {
    fake_req *r = (fake_req *)h;
    json_t *o = rf_openai_models_json(r->srv->model, (int64_t)time(NULL));
    json_t *m = json_array_get(json_object_get(o, "data"), 0);
    if (!m || json_object_set_new(m, "owned_by", json_string("roofline-fake")) ||
        json_object_set_new(m, "parent", json_null()) ||
        json_object_set_new(m, "max_model_len", json_integer(32768))) {
        json_decref(o);
        return RF_HTTPD_CLOSE;
    }
    return rf_httpd_reply_json(h, 200, o, NULL, NULL);
}

static rf_httpd_ret answer_health(rf_httpd_req *h) {
    static const char ok[] = "{\"status\":\"ok\"}";
    return rf_httpd_reply(h, 200, "application/json", ok, sizeof ok - 1, RF_HTTPD_COPY, NULL, NULL);
}

static const rf_httpd_route routes[] = {
    {"/chat/completions", "POST", answer_chat, 0},
    {"/models", "GET", answer_models, 0},
    {"/health", "GET", answer_health, 0},
};

rf_httpd_ret rf_fake_dispatch(rf_httpd_req *h) {
    fake_req *r = (fake_req *)h;
    const rf_httpd_route *rt;
    rf_httpd_match m =
        rf_httpd_route_find(routes, sizeof routes / sizeof routes[0], h->url, h->method, &rt);
    if (m == RF_HTTPD_ROUTED) return rt->fn(h);
    char msg[200];
    if (m == RF_HTTPD_NO_ROUTE) {
        snprintf(msg, sizeof msg, "no route for %.20s %.120s", h->method, h->url);
        return reply_error(r, 404, NULL, "not_found", msg);
    }
    snprintf(msg, sizeof msg, "method %.20s is not allowed on %.120s", h->method, h->url);
    return reply_error(r, 405, NULL, "method_not_allowed", msg);
}
