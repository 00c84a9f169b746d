/* http.c: see http.h. The server's lifecycle (start, attach, stop) and a request's (set up,
 * its log line, freed) over the transport of src/httpd; the routes are in routes.c and the
 * handlers in handle_*.c (srv.h says which file does what).
 */
#include "server/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openai/response.h"
#include "server/srv.h"
#include "util/clock.h"
#include "util/json_dump.h"

#define STACK_BYTES ((size_t)1 << 20) /* per connection thread: 2048 of them stay cheap */

rf_srv_params rf_srv_default_params(void) {
    rf_srv_params p = {0};
    p.host = "127.0.0.1";
    p.port = 8080;
    p.body_max = (size_t)4 << 20;
    p.conn_limit = 2048;
    p.idle_timeout_s = 30;
    p.read_timeout_s = 30;
    p.metrics = true;
    return p;
}

/* ---- a request's lifecycle (the transport's hooks) ---- */

static void req_start(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    rf_srv *s = h->app;
    r->s = s;
    r->rid = atomic_fetch_add(&s->next_id, 1);
    snprintf(r->method, sizeof r->method, "%s", h->method);
    snprintf(r->path, sizeof r->path, "%s", h->url);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    rf_buf_init(&r->pending, 0);
    rf_buf_init(&r->out, 0);
    rf_buf_init(&r->reply, 0);
    rf_buf_init(&r->chunk, 0);
}

/* The request ended: a generation still running is cancelled; one line goes to stderr. */
static void req_done(rf_httpd_req *h, rf_httpd_end how) {
    srv_req *r = (srv_req *)h;
    if (how != RF_HTTPD_END_OK) rf_srv_cancel(r);
    pthread_mutex_lock(&r->mu);
    int32_t np = r->n_prompt, ng = r->n_gen;
    int64_t tf = r->t_first;
    pthread_mutex_unlock(&r->mu);
    fprintf(stderr,
            "serve: req=%llu %s %s status=%d prompt_tokens=%d completion_tokens=%d ttft_ms=%.1f "
            "duration_ms=%.1f%s\n",
            (unsigned long long)r->rid, r->method, r->path, h->status, (int)np, (int)ng,
            tf ? (double)(tf - h->t0) / 1e6 : 0.0, (double)(rf_now_ns() - h->t0) / 1e6,
            how == RF_HTTPD_END_OK ? "" : " (client gone)");
    if (r->counted) atomic_fetch_sub(&r->s->active, 1);
}

static void req_release(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    rf_buf_free(&r->pending);
    rf_buf_free(&r->out);
    rf_buf_free(&r->reply);
    rf_buf_free(&r->chunk);
    if (r->split_on) rf_tsplit_free(&r->split);
    free(r->tools_json);
    rf_openai_lps_free(&r->lps);
    rf_openai_lps_free(&r->lps_out);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

/* ---- the server's lifecycle ---- */

/* The 408's body (the transport writes it when a body arrives past the read deadline). */
static char *timeout_body(unsigned read_timeout_s) {
    rf_openai_error e;
    rf_openai_error_set(&e, 408, NULL, "request_timeout",
                        "the request was not received within %u s (--read-timeout)",
                        read_timeout_s);
    json_t *o = rf_openai_error_json(&e);
    char *body = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return body;
}

static void srv_free(rf_srv *s) {
    pthread_rwlock_destroy(&s->lock);
    rf_metrics_free(s->metrics);
    free(s->api_key);
    free(s);
}

rf_status rf_srv_start(const rf_srv_params *p, rf_srv **out, rf_error *err) {
    *out = NULL;
    rf_srv *s = calloc(1, sizeof *s);
    if (!s) return rf_error_set(err, RF_ERR_NOMEM, "server: out of memory");
    pthread_rwlock_init(&s->lock, NULL);
    s->body_max = p->body_max ? p->body_max : (size_t)4 << 20;
    snprintf(s->model_id, sizeof s->model_id, "%s", p->model_id ? p->model_id : "");
    s->models[0] = s->model_id;
    atomic_init(&s->active, 0);
    atomic_init(&s->next_id, 1);
    char *t408 = NULL;
    rf_status st = RF_OK;
    if ((p->api_key && *p->api_key && !(s->api_key = strdup(p->api_key))) ||
        (p->metrics && !(s->metrics = rf_metrics_new())) ||
        (p->read_timeout_s && !(t408 = timeout_body(p->read_timeout_s)))) {
        st = rf_error_set(err, RF_ERR_NOMEM, "server: out of memory");
        goto fail;
    }
    rf_httpd_params hp = {
        .name = "server",
        .log_tag = "serve",
        .host = p->host,
        .port = p->port,
        .body_max = s->body_max,
        .conn_limit = p->conn_limit ? p->conn_limit : 2048u,
        .stack_bytes = STACK_BYTES,
        .idle_timeout_s = p->idle_timeout_s,
        .read_timeout_s = p->read_timeout_s,
        .timeout_body = t408,
        .quiesce = true,
        .req_size = sizeof(srv_req),
        .app = s,
        .start = req_start,
        .dispatch = rf_srv_dispatch,
        .done = req_done,
        .release = req_release,
    };
    st = rf_httpd_start(&hp, &s->d, err);
    free(t408);
    if (st) goto fail;
    *out = s;
    return RF_OK;
fail:
    srv_free(s);
    return st;
}

int rf_srv_port(const rf_srv *s) {
    return rf_httpd_port(s->d);
}

void rf_srv_attach(rf_srv *s, rf_engine *e) {
    rf_engine_info info;
    rf_engine_get_info(e, &info);
    pthread_rwlock_wrlock(&s->lock);
    s->e = e;
    s->n_ctx = info.n_ctx;
    s->n_vocab = info.n_vocab;
    s->bytes_per_token = info.bytes_per_token;
    if (!s->model_id[0]) snprintf(s->model_id, sizeof s->model_id, "%s", info.model_name);
    pthread_rwlock_unlock(&s->lock);
}

void rf_srv_stop(rf_srv *s, int drain_ms) {
    if (!s) return;
    rf_httpd_quiesce(s->d); /* stopping; no new connections */
    int64_t deadline = rf_now_ns() + (int64_t)drain_ms * 1000000;
    while (atomic_load(&s->active) > 0 && rf_now_ns() < deadline) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    pthread_rwlock_wrlock(&s->lock);
    rf_engine *e = s->e;
    s->e = NULL;
    pthread_rwlock_unlock(&s->lock);
    rf_engine_close(e); /* what is left gets its final (cancelled) event */
    rf_httpd_stop(s->d);
    srv_free(s);
}
