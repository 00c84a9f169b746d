/* bench.c: the run's state, the request helper, records and progress. */
#include "bench/bench.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/report.h"
#include "util/clock.h"
#include "util/utf8.h"

struct rf_bench {
    rf_run_desc *run;
    rf_loop *loop;
    FILE *records;
    char dir[1024];
    volatile sig_atomic_t *interrupted;
    int64_t t0;
    json_t *summary;
    int tty;
    uint64_t seq;       /* record sequence number */
    rf_send **inflight; /* started, not yet done: cancelled on interrupt */
    int n_inflight, cap_inflight;
    int cancelling;
    volatile int woken; /* set when a send finishes: rf_bench_wait re-checks its count */
};

void rf_run_desc_defaults(rf_run_desc *d) {
    memset(d, 0, sizeof *d);
    d->speed_runs = 3;
    d->speed_tokens = 512;
    d->speed_prompt =
        "Write a long story about a lighthouse keeper who finds a message in a bottle.";
    d->levels[0] = 1, d->levels[1] = 4, d->levels[2] = 16;
    d->n_levels = 3;
    d->load_tokens = 128;
    d->load_warmup = 1;
    d->rate_requests = 32;
    d->rate_seed = 1;
    d->accuracy_tokens = 48;
    d->accuracy_concurrency = 8;
    d->probe_question = "What is the capital of France? Answer with one word.";
    d->progress = true;
}

rf_run_desc *rf_bench_run(rf_bench *b) {
    return b->run;
}
const char *rf_bench_dir(const rf_bench *b) {
    return b->dir;
}
int rf_bench_interrupted(const rf_bench *b) {
    return b->interrupted && *b->interrupted;
}
json_t *rf_bench_summary(rf_bench *b) {
    return b->summary;
}
int64_t rf_bench_t0(const rf_bench *b) {
    return b->t0;
}

static rf_status make_dirs(const char *path, rf_error *err) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    return RF_OK;
}

rf_status rf_bench_open(rf_run_desc *d, volatile sig_atomic_t *interrupted, rf_bench **out,
                        rf_error *err) {
    *out = NULL;
    rf_bench *b = calloc(1, sizeof *b);
    if (!b) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    b->run = d;
    b->interrupted = interrupted;
    b->tty = d->progress && isatty(2);
    b->summary = json_object();
    if (d->out_dir) {
        snprintf(b->dir, sizeof b->dir, "%s", d->out_dir);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(b->dir, sizeof b->dir, "runs/%Y%m%d-%H%M%S", &tm);
    }
    rf_status st = make_dirs(b->dir, err);
    if (st) goto fail;
    char path[1100];
    snprintf(path, sizeof path, "%s/records.jsonl", b->dir);
    b->records = fopen(path, "a");
    if (!b->records) {
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    st = rf_loop_new(&b->loop, err);
    if (st) goto fail;
    int opened = 0;
    for (int i = 0; i < d->n_backends; i++) {
        rf_bench_backend *bb = &d->backends[i];
        rf_error e = {0};
        rf_bench_log(b, "opening backend %s (%s)", bb->cfg.name, bb->cfg.uri);
        if (rf_backend_open(&bb->cfg, b->loop, &bb->b, &e) != RF_OK) {
            snprintf(bb->open_error, sizeof bb->open_error, "%s", e.msg);
            rf_bench_log(b, "backend %s: %s", bb->cfg.name, e.msg);
            if (e.code == RF_ERR_ARG) { /* a configuration error: nothing should run */
                st = rf_error_set(err, RF_ERR_ARG, "%s", e.msg);
                goto fail;
            }
        } else {
            opened++;
        }
    }
    if (!opened) {
        st = rf_error_set(err, RF_ERR_IO, "no backend could be opened (%s)",
                          d->n_backends ? d->backends[0].open_error : "none given");
        goto fail;
    }
    b->t0 = rf_now_ns();
    *out = b;
    return RF_OK;
fail:
    rf_bench_close(b);
    return st;
}

void rf_bench_close(rf_bench *b) {
    if (!b) return;
    for (int i = 0; i < b->run->n_backends; i++) {
        rf_backend_close(b->run->backends[i].b);
        b->run->backends[i].b = NULL;
    }
    rf_loop_free(b->loop);
    if (b->records) fclose(b->records);
    json_decref(b->summary);
    free(b->inflight);
    free(b);
}

void rf_bench_log(rf_bench *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (b->tty) fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void rf_bench_progress(rf_bench *b, const char *what, int done, int total) {
    if (b->tty) {
        int width = 30, fill = total ? done * width / total : 0;
        fprintf(stderr, "\r\033[K%-36s [", what);
        for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
        fprintf(stderr, "] %d/%d", done, total);
        if (done == total) fputc('\n', stderr);
        fflush(stderr);
    } else if (done == total || done == 0) {
        fprintf(stderr, "%s: %d/%d\n", what, done, total);
    }
}

/* ---- requests ---- */

void rf_send_init(rf_send *s, rf_bench *b, rf_bench_backend *bb, const char *suite,
                  const char *prompt, int max_tokens) {
    memset(s, 0, sizeof *s);
    s->bench = b;
    s->bb = bb;
    s->suite = suite;
    s->msgs[0] = (rf_bk_message){"user", prompt, NULL, NULL};
    s->req.msgs = s->msgs;
    s->req.n_msgs = 1;
    s->req.temperature = 0;
    s->req.top_p = 1;
    s->req.max_tokens = max_tokens;
    s->req.stream = true;
    rf_bk_result_init(&s->req.res);
}

void rf_send_metrics_of(const rf_send *s, rf_send_metrics *m) {
    const rf_bk_result *r = &s->req.res;
    m->ok = r->err == RF_BK_OK;
    m->tokens = r->completion_tokens >= 0 ? r->completion_tokens
                : r->client_tokens >= 0   ? r->client_tokens
                                          : r->n_ev;
    m->ttft_ms = m->e2e_ms = m->tpot_ms = m->decode_tok_s = m->e2e_tok_s = -1;
    m->queue_e2e_ms = m->lag_ms = -1;
    if (r->t_sent && r->t_first_content)
        m->ttft_ms = (double)(r->t_first_content - r->t_sent) / 1e6;
    if (r->t_sent && r->t_last_content) m->e2e_ms = (double)(r->t_last_content - r->t_sent) / 1e6;
    if (m->tokens > 1 && m->e2e_ms >= 0 && m->ttft_ms >= 0)
        m->tpot_ms = (m->e2e_ms - m->ttft_ms) / (m->tokens - 1);
    if (m->tokens > 1 && r->t_last_content > r->t_first_content)
        m->decode_tok_s = (m->tokens - 1) * 1e9 / (double)(r->t_last_content - r->t_first_content);
    if (m->tokens > 0 && m->e2e_ms > 0) m->e2e_tok_s = m->tokens * 1e3 / m->e2e_ms;
    int64_t intended = s->t_intended ? s->t_intended : r->t_sent;
    if (intended && r->t_last_content)
        m->queue_e2e_ms = (double)(r->t_last_content - intended) / 1e6;
    if (s->t_intended && r->t_sent) m->lag_ms = (double)(r->t_sent - s->t_intended) / 1e6;
}

static json_t *ns_rel(const rf_bench *b, int64_t t) {
    return t ? json_real((double)(t - b->t0) / 1e6) : json_null();
}

/* Appends one line to records.jsonl and flushes it. */
static void write_record(rf_bench *b, rf_send *s) {
    const rf_bk_result *r = &s->req.res;
    rf_send_metrics m;
    rf_send_metrics_of(s, &m);
    json_t *o = json_object();
    json_object_set_new(o, "seq", json_integer((json_int_t)b->seq++));
    json_object_set_new(o, "suite", json_string(s->suite));
    json_object_set_new(o, "backend", json_string(s->bb->cfg.name));
    json_object_set_new(o, "model", json_string(s->bb->b ? s->bb->b->vt->model(s->bb->b) : ""));
    json_object_set_new(o, "item", json_string(s->item));
    json_object_set_new(o, "level", json_integer(s->level));
    json_object_set_new(o, "warmup", json_boolean(s->warmup));
    json_object_set_new(o, "status", json_string(m.ok ? "ok" : "error"));
    json_object_set_new(o, "error_class", json_string(rf_bk_error_name(r->err)));
    if (r->err) json_object_set_new(o, "error", json_string(r->err_msg));
    json_object_set_new(o, "http_status", json_integer(r->http_status));
    json_object_set_new(o, "resends", json_integer(r->resends));
    /* timestamps: ms since the run started, on the monotonic clock */
    json_object_set_new(o, "t_intended_ms", ns_rel(b, s->t_intended));
    json_object_set_new(o, "t_sent_ms", ns_rel(b, r->t_sent));
    json_object_set_new(o, "t_first_byte_ms", ns_rel(b, r->t_first_byte));
    json_object_set_new(o, "t_first_content_ms", ns_rel(b, r->t_first_content));
    json_object_set_new(o, "t_last_content_ms", ns_rel(b, r->t_last_content));
    json_object_set_new(o, "t_done_ms", ns_rel(b, r->t_done));
    json_object_set_new(o, "max_tokens", json_integer(s->req.max_tokens));
    json_object_set_new(o, "prompt_tokens_server", json_integer(r->prompt_tokens));
    json_object_set_new(o, "completion_tokens_server", json_integer(r->completion_tokens));
    json_object_set_new(o, "completion_tokens_client", json_integer(r->client_tokens));
    json_object_set_new(o, "content_events", json_integer(r->n_ev));
    json_object_set_new(o, "finish_reason", json_string(r->finish_reason));
    json_object_set_new(o, "ttft_ms", json_real(m.ttft_ms));
    json_object_set_new(o, "e2e_ms", json_real(m.e2e_ms));
    json_object_set_new(o, "tpot_ms", json_real(m.tpot_ms));
    json_object_set_new(o, "decode_tok_s", json_real(m.decode_tok_s));
    json_object_set_new(o, "lag_ms", json_real(m.lag_ms));
    json_t *ev = json_array(), *evk = json_array();
    for (int32_t i = 0; i < r->n_ev; i++) {
        json_array_append_new(ev, json_real((double)(r->ev_t[i] - r->t_sent) / 1e6));
        json_array_append_new(evk, json_integer(r->ev_tokens[i]));
    }
    json_object_set_new(o, "events_ms", ev);
    json_object_set_new(o, "events_tokens", evk);
    if (r->has_timings) {
        json_t *t = json_object();
        json_object_set_new(t, "prompt_n", json_integer(r->prompt_n));
        json_object_set_new(t, "prompt_ms", json_real(r->prompt_ms));
        json_object_set_new(t, "predicted_n", json_integer(r->predicted_n));
        json_object_set_new(t, "predicted_ms", json_real(r->predicted_ms));
        json_object_set_new(o, "server_timings", t);
    }
    if (s->grade || !strcmp(s->suite, "probe")) {
        json_object_set_new(o, "reply", rf_json_text((const char *)r->text.data, r->text.len));
        json_t *calls = json_array();
        for (int32_t i = 0; i < r->n_calls; i++) {
            json_t *c = json_object();
            json_object_set_new(c, "name", json_string(r->calls[i].name ? r->calls[i].name : ""));
            json_object_set_new(c, "arguments",
                                json_string(r->calls[i].arguments ? r->calls[i].arguments : ""));
            json_array_append_new(calls, c);
        }
        json_object_set_new(o, "tool_calls", calls);
    }
    if (s->grade) json_object_update(o, s->grade);
    json_dumpf(o, b->records, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    fputc('\n', b->records);
    fflush(b->records);
    json_decref(o);
}

static void send_done(void *user, rf_bk_request *req) {
    rf_send *s = user;
    (void)req;
    rf_bench *b = s->bench;
    if (s->started && s->inflight_idx >= 0 && s->inflight_idx < b->n_inflight &&
        b->inflight[s->inflight_idx] == s) {
        rf_send *last = b->inflight[--b->n_inflight];
        b->inflight[s->inflight_idx] = last;
        last->inflight_idx = s->inflight_idx;
        s->inflight_idx = -1;
    }
    s->finished = 1;
    if (s->on_result) s->on_result(s);
    write_record(s->bench, s);
    if (s->on_done) s->on_done(s);
    b->woken = 1;
}

static void send_now(void *user) {
    rf_send *s = user;
    if (rf_bench_interrupted(s->bench) || !s->bb->b) {
        rf_bk_fail(&s->req.res, RF_BK_CANCELLED, "%s",
                   s->bb->b ? "interrupted before sending" : s->bb->open_error);
        send_done(s, &s->req);
        return;
    }
    rf_bench *b = s->bench;
    if (b->n_inflight == b->cap_inflight) {
        int cap = b->cap_inflight ? b->cap_inflight * 2 : 64;
        rf_send **p = realloc(b->inflight, (size_t)cap * sizeof *p);
        if (!p) {
            rf_bk_fail(&s->req.res, RF_BK_INTERNAL, "out of memory");
            send_done(s, &s->req);
            return;
        }
        b->inflight = p;
        b->cap_inflight = cap;
    }
    s->inflight_idx = b->n_inflight;
    b->inflight[b->n_inflight++] = s;
    s->started = 1;
    s->req.done = send_done;
    s->req.user = s;
    s->bb->b->vt->start(s->bb->b, &s->req);
}

void rf_send_at(rf_send *s, int64_t t) {
    s->t_intended = t;
    rf_error err = {0};
    if (t == 0 || t <= rf_now_ns() || rf_loop_at(s->bench->loop, t, send_now, s, &err) != RF_OK)
        send_now(s);
}

rf_status rf_bench_wait(rf_bench *b, const volatile int *outstanding, rf_error *err) {
    while (*outstanding > 0) {
        if (rf_bench_interrupted(b) && !b->cancelling) {
            /* cancel what is in flight; each still ends with its record written */
            b->cancelling = 1;
            for (int i = b->n_inflight - 1; i >= 0; i--) {
                if (i >= b->n_inflight) continue;
                rf_send *s = b->inflight[i];
                s->bb->b->vt->cancel(s->bb->b, &s->req);
            }
            b->cancelling = 0;
        }
        /* rf_loop_run returns once its flag is non-zero, so it gets the completion flag, not
         * the count (which is non-zero while work is pending: the loop would never block) */
        b->woken = 0;
        if (*outstanding <= 0) break;
        rf_status st = rf_loop_run(b->loop, &b->woken, rf_now_ns() + 200000000, err);
        if (st) return st;
    }
    return RF_OK;
}

static void one_done(rf_send *s) {
    (*(int *)s->user)--;
}

rf_status rf_send_one(rf_send *s, rf_error *err) {
    int outstanding = 1;
    s->on_done = one_done;
    s->user = &outstanding;
    rf_send_at(s, 0);
    rf_status st = rf_bench_wait(s->bench, &outstanding, err);
    s->user = NULL; /* it pointed at this frame */
    return st;
}

void rf_send_free(rf_send *s) {
    rf_bk_result_free(&s->req.res);
    json_decref(s->grade);
    s->grade = NULL;
}

json_t *rf_stats_json(const rf_stats *s) {
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer((json_int_t)s->n));
    json_object_set_new(o, "min", json_real(s->min));
    json_object_set_new(o, "p50", json_real(s->p50));
    json_object_set_new(o, "p90", json_real(s->p90));
    json_object_set_new(o, "p99", json_real(s->p99));
    json_object_set_new(o, "max", json_real(s->max));
    json_object_set_new(o, "mean", json_real(s->mean));
    return o;
}

rf_status rf_bench_loop_at(rf_bench *b, int64_t t, rf_loop_fn fn, void *user, rf_error *err) {
    return rf_loop_at(b->loop, t, fn, user, err);
}

json_t *rf_json_text(const char *p, size_t len) {
    if (!p) return json_string("");
    rf_buf b;
    rf_buf_init(&b, 0);
    const unsigned char *u = (const unsigned char *)p;
    for (size_t i = 0; i < len;) {
        size_t k = rf_utf8_seq(p + i, len - i);
        if (k && u[i] != 0) {
            rf_buf_append(&b, u + i, k);
            i += k;
        } else {
            if (u[i]) rf_buf_append(&b, "\xEF\xBF\xBD", 3); /* NUL bytes are dropped */
            i++;
        }
    }
    json_t *s = json_stringn(b.data ? (const char *)b.data : "", b.len);
    rf_buf_free(&b);
    return s ? s : json_string("");
}

rf_status rf_bench_finish(rf_bench *b, rf_error *err) {
    char path[1100], date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *run = json_object();
    json_object_set_new(run, "dir", json_string(b->dir));
    json_object_set_new(run, "date", json_string(date));
    json_object_set_new(run, "duration_s", json_real((double)(rf_now_ns() - b->t0) / 1e9));
    json_object_set_new(run, "records", json_integer((json_int_t)b->seq));
    json_object_set_new(b->summary, "run", run);
    snprintf(path, sizeof path, "%s/summary.json", b->dir);
    if (json_dump_file(b->summary, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII))
        return rf_error_set(err, RF_ERR_IO, "%s: cannot write", path);
    snprintf(path, sizeof path, "%s/scoreboard.md", b->dir);
    FILE *f = fopen(path, "w");
    if (!f) return rf_error_set(err, RF_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    rf_report_markdown(b->summary, f);
    int bad = ferror(f);
    if (fclose(f) || bad) return rf_error_set(err, RF_ERR_IO, "%s: write failed", path);
    rf_report_markdown(b->summary, stdout);
    printf("\nrun directory: %s (records.jsonl, summary.json, scoreboard.md)\n", b->dir);
    fflush(stdout);
    return RF_OK;
}
