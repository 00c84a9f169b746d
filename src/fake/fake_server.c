/* fake_server.c: the fake OpenAI backend (see fake_server.h for the schedule, the "fake" field
 * and the faults; fake_req.h for the files): names and params, the server's lifecycle and its
 * counters, and a request's lifecycle over the transport of src/httpd.
 *
 * Shape: libmicrohttpd in thread-per-connection mode (src/httpd). Each request gets a fake_req,
 * created when its headers are in (t0, the schedule's origin) and shared, by a reference count,
 * between the connection (released when the request ends) and a streaming response's reader.
 */
#include "fake/fake_server.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake/fake_req.h"
#include "openai/request.h"

/* ---- names, params ---- */

static const char *const g_fault_names[RF_FAKE_FAULT_COUNT] = {
    "none",
    "refuse",
    "500",
    "429",
    "stall",
    "truncate",
    "invalid_json",
    "error_event",
    "wrong_tool_call",
    "wrong_tool_name",
};

const char *rf_fake_fault_name(rf_fake_fault f) {
    return (unsigned)f < RF_FAKE_FAULT_COUNT ? g_fault_names[f] : "?";
}

bool rf_fake_fault_parse(const char *s, rf_fake_fault *out) {
    for (int i = 0; s && i < RF_FAKE_FAULT_COUNT; i++)
        if (strcmp(s, g_fault_names[i]) == 0) {
            *out = (rf_fake_fault)i;
            return true;
        }
    return false;
}

rf_fake_params rf_fake_default_params(void) {
    rf_fake_params p;
    memset(&p, 0, sizeof p);
    p.ttft_ms = 50;
    p.gap_ms = 10;
    p.tokens_per_chunk = 1;
    p.usage = true;
    p.fault_after = 2;
    p.stall_ms = 60000;
    p.retry_after_s = 1;
    p.seed = 1;
    return p;
}

/* ---- a request's lifecycle (the transport's hooks) ---- */

static void req_start(rf_httpd_req *h) {
    fake_req *r = (fake_req *)h;
    r->srv = h->app;
    rf_buf_init(&r->out, 0);
    atomic_fetch_add(&r->srv->c.requests, 1);
}

/* The request ended: its outcome counted. */
static void req_done(rf_httpd_req *h, rf_httpd_end how) {
    fake_req *r = (fake_req *)h;
    rf_fake *f = r->srv;
    bool ok = how == RF_HTTPD_END_OK;
    if (r->client_gone ||
        (!ok && how != RF_HTTPD_END_SHUTDOWN && !r->ended_by_us && !rf_httpd_stopping(h->d)))
        atomic_fetch_add(&f->c.client_disconnects, 1);
    if (ok && r->stream_resp && r->reached_end) atomic_fetch_add(&f->c.streams_completed, 1);
    if (ok && r->body_resp) atomic_fetch_add(&f->c.bodies_completed, 1);
}

static void req_release(rf_httpd_req *h) {
    fake_req *r = (fake_req *)h;
    rf_buf_free(&r->out);
    free(r->reply_off);
    free(r->frag_off);
    free(r->tool_args);
    rf_openai_req_free(&r->req);
}

/* ---- lifecycle ---- */

rf_status rf_fake_start(const rf_fake_params *p, rf_fake **out, rf_error *err) {
    *out = NULL;
    if (p->port < 0 || p->port > 65535)
        return rf_error_set(err, RF_ERR_ARG, "fake server: port %d is not in [0, 65535]", p->port);
    if (!(p->ttft_ms >= 0 && p->ttft_ms <= MAX_MS) || !(p->gap_ms >= 0 && p->gap_ms <= MAX_MS))
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: ttft_ms and gap_ms must be in [0, %g], got %g and %g",
                            MAX_MS, p->ttft_ms, p->gap_ms);
    if (p->tokens < 0 || p->tokens > MAX_TOKENS || p->tokens_per_chunk < 0 ||
        p->tokens_per_chunk > 10000)
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: tokens must be in [0, %d] and tokens_per_chunk in "
                            "[0, 10000], got %d and %d",
                            MAX_TOKENS, (int)p->tokens, (int)p->tokens_per_chunk);
    if ((unsigned)p->fault >= RF_FAKE_FAULT_COUNT || !(p->fault_rate >= 0 && p->fault_rate <= 1))
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: fault %d / fault_rate %g out of range (rate in [0, 1])",
                            (int)p->fault, p->fault_rate);
    if (p->fault_after < 0 || !(p->stall_ms >= 0 && p->stall_ms <= MAX_STALL_MS) ||
        p->retry_after_s < 0)
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: fault_after, stall_ms and retry_after_s must be >= 0 "
                            "(stall_ms <= %g)",
                            MAX_STALL_MS);
    const char *model = p->model ? p->model : "fake-model";
    if (strlen(model) >= sizeof(((rf_fake *)0)->model) || !*model)
        return rf_error_set(err, RF_ERR_ARG, "fake server: model name must be 1..127 bytes");

    rf_fake *f = calloc(1, sizeof *f);
    if (!f) return rf_error_set(err, RF_ERR_NOMEM, "fake server: out of memory");
    f->p = *p;
    f->p.model = NULL;
    snprintf(f->model, sizeof f->model, "%s", model);
    rf_httpd_params hp = {
        .name = "fake server",
        .host = "127.0.0.1",
        .port = p->port,
        .body_max = BODY_MAX,
        .conn_limit = CONN_LIMIT,
        .stack_bytes = STACK_BYTES,
        .nodelay = true, /* each event goes out when due: no Nagle wait for the last ACK */
        .req_size = sizeof(fake_req),
        .app = f,
        .start = req_start,
        .dispatch = rf_fake_dispatch,
        .done = req_done,
        .release = req_release,
    };
    rf_status st = rf_httpd_start(&hp, &f->d, err);
    if (st) {
        free(f);
        return st;
    }
    *out = f;
    return RF_OK;
}

int rf_fake_port(const rf_fake *f) {
    return rf_httpd_port(f->d);
}

rf_fake_stats rf_fake_get_stats(const rf_fake *f) {
    rf_fake *m = (rf_fake *)f; /* atomic loads take non-const pointers on some compilers */
    rf_fake_stats s;
    memset(&s, 0, sizeof s);
    s.requests = atomic_load(&m->c.requests);
    s.chat_requests = atomic_load(&m->c.chat_requests);
    s.bad_requests = atomic_load(&m->c.bad_requests);
    s.streams_started = atomic_load(&m->c.streams_started);
    s.streams_completed = atomic_load(&m->c.streams_completed);
    s.bodies_completed = atomic_load(&m->c.bodies_completed);
    s.faults_injected = atomic_load(&m->c.faults_injected);
    for (int i = 0; i < RF_FAKE_FAULT_COUNT; i++)
        s.faults_by_kind[i] = atomic_load(&m->c.by_kind[i]);
    s.client_disconnects = atomic_load(&m->c.client_disconnects);
    for (int i = 0; i < RF_FAKE_LATE_BINS; i++) {
        s.late_hist[i] = atomic_load(&m->c.late_hist[i]);
        s.chunks_sent += s.late_hist[i];
    }
    s.late_max_ms = (double)atomic_load(&m->c.late_max_ns) / 1e6;
    s.streamed_tokens = atomic_load(&m->c.streamed_tokens);
    uint64_t a = atomic_load(&m->c.first_arrival_ns), z = atomic_load(&m->c.last_end_ns);
    s.served_s = a && z > a ? (double)(z - a) / 1e9 : 0;
    return s;
}

double rf_fake_late_quantile(const rf_fake_stats *s, double q) {
    const uint64_t n = s->chunks_sent;
    if (!n) return 0;
    uint64_t want = (uint64_t)ceil(q * (double)n), acc = 0;
    if (want < 1) want = 1;
    for (int i = 0; i < RF_FAKE_LATE_BINS; i++) {
        acc += s->late_hist[i];
        if (acc >= want) return i == RF_FAKE_LATE_BINS - 1 ? s->late_max_ms : (i + 1) * 0.1;
    }
    return s->late_max_ms;
}

void rf_fake_stop(rf_fake *f) {
    if (!f) return;
    rf_httpd_stop(f->d); /* wakes every wait, drops every connection */
    free(f);
}
