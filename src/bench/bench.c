/* bench.c: the run's state, the request helper, records and progress. */
#include "bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/records.h"
#include "bench/runfile.h"
#include "analysis/membw.h"
#include "util/clock.h"
#include "util/cpu.h"
#include "util/file.h"
#include "util/json_dump.h"

struct rf_bench {
    rf_run_desc *run;
    rf_loop *loop;
    rf_records rec;
    char *dir;
    volatile sig_atomic_t *interrupted;
    int64_t t0;
    rf_records log; /* runlog.jsonl: sessions, levels, machine facts */
    int tty;
    uint64_t seq;       /* the next record's sequence number (records in the file so far) */
    rf_send **inflight; /* started, not yet done: cancelled on interrupt */
    int n_inflight, cap_inflight;
    int cancelling;
    volatile int woken; /* set when a send finishes: rf_bench_wait re-checks its count */
    /* the run's identity, and what an earlier session of it recorded (--resume) */
    char run_id[17];
    int session;
    json_t *recorded; /* key -> the record of a finished request (resume), or NULL */
    int64_t reused, torn_bytes, superseded;
    const char *phase; /* "" or the A/B/A phase, part of every request key */
    /* a record that could not be written stops the run */
    rf_status failed;
    rf_error fail_err;
    /* per suite and backend: requests finished, and how many succeeded (exit status 3) */
    int done[RF_SUITE_COUNT][RF_BENCH_MAX_BACKENDS], ok[RF_SUITE_COUNT][RF_BENCH_MAX_BACKENDS];
};

#define RF_SUITE_NAME_(ID, name, run, preflight, study) #name,
static const char *const g_suite_names[RF_SUITE_COUNT] = {RF_SUITES(RF_SUITE_NAME_)};
#undef RF_SUITE_NAME_

static int suite_index(const char *name) {
    for (int i = 0; i < RF_SUITE_COUNT; i++)
        if (!strcmp(name, g_suite_names[i])) return i;
    return -1;
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
int rf_bench_stopped(const rf_bench *b) {
    return rf_bench_interrupted(b) || b->failed != RF_OK;
}
int64_t rf_bench_t0(const rf_bench *b) {
    return b->t0;
}
rf_loop *rf_bench_loop(rf_bench *b) {
    return b->loop;
}
void rf_bench_set_phase(rf_bench *b, const char *phase) {
    b->phase = phase ? phase : "";
}

/* The run directory: a new one under runs/ named by the UTC time to the millisecond (a suffix
 * when that exists: mkdir is the exclusive step), or the given one, which may exist only while
 * it holds no run (records.jsonl is then created with O_EXCL). */
static rf_status make_run_dir(rf_bench *b, const char *given, rf_error *err) {
    if (given) {
        b->dir = strdup(given);
        if (!b->dir) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        rf_status st = rf_make_parents(b->dir, err);
        if (st) return st;
        if (mkdir(b->dir, 0755) && errno != EEXIST)
            return rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", b->dir, strerror(errno));
        struct stat sb;
        if (stat(b->dir, &sb) || !S_ISDIR(sb.st_mode))
            return rf_error_set(err, RF_ERR_IO, "%s: not a directory", b->dir);
        return RF_OK;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[64];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int k = 0; k < 1000; k++) {
        free(b->dir);
        b->dir = NULL;
        int n = k ? asprintf(&b->dir, "runs/%s-%03ld-%d", stamp, ts.tv_nsec / 1000000, k + 1)
                  : asprintf(&b->dir, "runs/%s-%03ld", stamp, ts.tv_nsec / 1000000);
        if (n < 0) {
            b->dir = NULL;
            return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        }
        if (k == 0) {
            rf_status st = rf_make_parents(b->dir, err);
            if (st) return st;
        }
        if (mkdir(b->dir, 0755) == 0) return RF_OK;
        if (errno != EEXIST)
            return rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", b->dir, strerror(errno));
    }
    return rf_error_set(err, RF_ERR_IO, "runs/%s-*: 1000 run directories exist already", stamp);
}

static rf_status write_json_atomic(const char *dir, const char *name, const json_t *o,
                                   rf_error *err) {
    char *text = rf_json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    char *path = NULL;
    if (!text || asprintf(&path, "%s/%s", dir, name) < 0) {
        free(text);
        return rf_error_set(err, RF_ERR_NOMEM, "%s/%s: cannot serialise", dir, name);
    }
    rf_status st = rf_write_file_atomic(path, text, strlen(text), err);
    free(text);
    free(path);
    return st;
}

/* 16 hex digits from the kernel's generator (the clock when that fails). */
static void new_run_id(char out[17]) {
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
        x = (uint64_t)rf_now_ns() ^ (uint64_t)getpid();
    snprintf(out, 17, "%016llx", (unsigned long long)x);
}

typedef struct scan_ctx {
    rf_bench *b;
    const char *path;
} scan_ctx;

/* --resume: one line of the earlier sessions' records. */
static rf_status scan_record(void *user, json_t *rec, int64_t line, rf_error *err) {
    scan_ctx *c = user;
    rf_bench *b = c->b;
    const char *id = json_string_value(json_object_get(rec, "run_id"));
    json_t *seq = json_object_get(rec, "seq"), *session = json_object_get(rec, "session");
    char *key = rf_record_key_of(rec);
    rf_status st = RF_OK;
    if (!id || !key || !json_is_integer(seq) || !json_is_integer(session)) {
        st = rf_error_set(err, RF_ERR_FORMAT,
                          "%s:%lld: not a record of a run that can be resumed (no run_id, seq, "
                          "session, suite, backend, level or index: an older schema?)",
                          c->path, (long long)line);
        goto out;
    }
    if (!b->run_id[0])
        snprintf(b->run_id, sizeof b->run_id, "%s", id);
    else if (strcmp(b->run_id, id)) {
        st = rf_error_set(err, RF_ERR_FORMAT, "%s:%lld: a record of run %.16s in run %s", c->path,
                          (long long)line, id, b->run_id);
        goto out;
    }
    if ((uint64_t)json_integer_value(seq) >= b->seq) b->seq = (uint64_t)json_integer_value(seq) + 1;
    if (json_integer_value(session) >= b->session)
        b->session = (int)json_integer_value(session) + 1;
    const char *cls = json_string_value(json_object_get(rec, "error_class"));
    if (cls && !strcmp(cls, "cancelled")) { /* stopped, not finished: sent again */
        if (!json_object_get(b->recorded, key)) b->superseded++;
        goto out;
    }
    if (json_object_get(b->recorded, key)) b->superseded++;
    if (json_object_set_nocheck(b->recorded, key, rec))
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
out:
    free(key);
    return st;
}

static void utc_now(char *out, size_t cap) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

typedef struct log_scan {
    bool machine;
} log_scan;

static rf_status scan_log(void *user, json_t *ev, int64_t line, rf_error *err) {
    (void)line, (void)err;
    log_scan *c = user;
    const char *kind = json_string_value(json_object_get(ev, "kind"));
    if (kind && !strcmp(kind, "machine")) c->machine = true;
    return RF_OK;
}

/* Measures the read bandwidth into ev (membw_gbs, min, max, repeats, threads, bytes, kernel),
 * or sets membw_error. */
static void measure_membw(json_t *ev) {
    rf_membw_params mp = {0};
    mp.bytes = (size_t)512 << 20; /* far past any cache, quick to touch */
    mp.repeats = 5;
    rf_membw_result mr;
    rf_error e = {0};
    if (rf_membw_measure(&mp, &mr, &e) == RF_OK) {
        json_object_set_new(ev, "membw_gbs", json_real(mr.median_gbs));
        json_object_set_new(ev, "membw_min_gbs", json_real(mr.min_gbs));
        json_object_set_new(ev, "membw_max_gbs", json_real(mr.max_gbs));
        json_object_set_new(ev, "membw_repeats", json_integer(mr.repeats));
        json_object_set_new(ev, "membw_threads", json_integer(mr.n_threads));
        json_object_set_new(ev, "membw_bytes", json_integer((json_int_t)mr.bytes));
        json_object_set_new(ev, "membw_kernel", json_string(mr.kernel));
    } else {
        json_object_set_new(ev, "membw_error", json_string(e.msg));
    }
}

/* Whether the run has a local backend (whose roofline needs this machine's bandwidth). */
static bool has_local_backend(const rf_run_desc *d) {
    for (int i = 0; i < d->n_backends; i++)
        if (rf_backend_is_local(&d->backends[i].cfg)) return true;
    return false;
}

void rf_bench_sample_membw(rf_bench *b, const char *when) {
    const rf_run_desc *d = b->run;
    if (!has_local_backend(d) || !d->membw || rf_bench_stopped(b)) return;
    json_t *ev = json_object();
    json_object_set_new(ev, "kind", json_string("membw"));
    json_object_set_new(ev, "when", rf_json_text(when, strlen(when)));
    measure_membw(ev);
    rf_bench_log_event(b, ev);
}

/* The machine the local backends run on: its read bandwidth (the roofline's numerator; the first
 * sample, more are taken by rf_bench_sample_membw), cores and memory. */
static void log_machine(rf_bench *b) {
    rf_bench_log(b, "measuring the memory read bandwidth (roofline membw) for the local backend");
    json_t *ev = json_object();
    json_object_set_new(ev, "kind", json_string("machine"));
    measure_membw(ev);
    char cpu[256];
    rf_cpu_model_name(cpu, sizeof cpu);
    json_object_set_new(ev, "cpu", rf_json_text(cpu, strlen(cpu)));
    json_object_set_new(ev, "physical_cores", json_integer(rf_cpu_physical_cores()));
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0)
        json_object_set_new(ev, "mem_total_bytes", json_integer((json_int_t)pages * psize));
    rf_bench_log_event(b, ev);
}

static rf_status open_log(rf_bench *b, rf_error *err) {
    rf_run_desc *d = b->run;
    char *path = NULL;
    if (asprintf(&path, "%s/runlog.jsonl", b->dir) < 0)
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    log_scan c = {false};
    rf_status st = d->resume ? rf_records_read(path, scan_log, &c, err) : RF_OK;
    free(path);
    if (st) return st;
    /* the same append-only writer as the records: whole lines, a torn last one cut off */
    int64_t torn = 0;
    rf_records w;
    char *dir = b->dir;
    st = rf_records_reopen_named(&w, dir, "runlog.jsonl", &torn, err);
    if (st) return st;
    b->log = w;
    char date[64];
    utc_now(date, sizeof date);
    json_t *ev = json_object();
    json_object_set_new(ev, "kind", json_string("session"));
    json_object_set_new(ev, "run_id", json_string(b->run_id));
    json_object_set_new(ev, "started", json_string(date));
    json_object_set_new(ev, "resumed", json_boolean(d->resume));
    rf_bench_log_event(b, ev);
    if (has_local_backend(d) && d->membw && !c.machine) log_machine(b);
    return b->failed ? b->fail_err.code : RF_OK;
}

static rf_status open_records(rf_bench *b, rf_error *err) {
    rf_run_desc *d = b->run;
    rf_status st;
    if (!d->resume) {
        new_run_id(b->run_id);
        st = rf_records_create(&b->rec, b->dir, err);
        if (st) return st;
        json_t *saved = rf_run_desc_to_json(d);
        if (!saved) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        json_object_set_new(saved, "out", json_string_nocheck(b->dir));
        st = write_json_atomic(b->dir, "run.json", saved, err);
        json_decref(saved);
        return st;
    }
    st = rf_records_reopen(&b->rec, b->dir, &b->torn_bytes, err);
    if (st) return st;
    b->recorded = json_object();
    if (!b->recorded) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    scan_ctx c = {b, b->rec.path};
    st = rf_records_read(b->rec.path, scan_record, &c, err);
    if (st) return st;
    if (!b->run_id[0]) new_run_id(b->run_id); /* killed before its first record */
    if (b->torn_bytes)
        rf_bench_log(b, "resume: cut off a torn last line of %lld bytes in %s",
                     (long long)b->torn_bytes, b->rec.path);
    rf_bench_log(b, "resume: run %s, session %d, %zu requests already recorded", b->run_id,
                 b->session, json_object_size(b->recorded));
    return RF_OK;
}

rf_status rf_bench_open(rf_run_desc *d, volatile sig_atomic_t *interrupted, rf_bench **out,
                        rf_error *err) {
    *out = NULL;
    rf_status st = rf_run_desc_check(d, err);
    if (st) return st;
    rf_bench *b = calloc(1, sizeof *b);
    if (!b) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    b->rec.fd = -1;
    b->run = d;
    b->phase = "";
    b->interrupted = interrupted;
    b->tty = d->progress && isatty(2);
    b->log.fd = -1;
    if (d->resume && !d->out_dir) {
        st = rf_error_set(err, RF_ERR_ARG, "resume: no run directory given");
        goto fail;
    }
    st = make_run_dir(b, d->out_dir, err);
    if (st) goto fail;
    st = open_records(b, err);
    if (st) goto fail;
    st = open_log(b, err);
    if (st) {
        if (err && b->failed) *err = b->fail_err;
        goto fail;
    }
    st = rf_loop_new(&b->loop, err);
    if (st) goto fail;
    int opened = 0;
    for (int i = 0; i < d->n_backends; i++) {
        rf_bench_backend *bb = &d->backends[i];
        rf_error e = {0};
        if (bb->variant) { /* the precision study opens each variant for its own turns */
            opened++;
            continue;
        }
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
    rf_records_close(&b->rec);
    rf_records_close(&b->log);
    json_decref(b->recorded);
    free(b->inflight);
    free(b->dir);
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
    s->req.stream = !bb->no_stream;
    s->req.max_reply_bytes = bb->cfg.max_reply_bytes;
    s->inflight_idx = -1;
    s->session = b->session;
    rf_bk_result_init(&s->req.res);
}

/* Appends s's record to records.jsonl (one write of the whole line). A failure stops the run:
 * the error is kept for rf_bench_wait, every later request is cancelled, and what was written
 * stays. */
static void write_record(rf_bench *b, rf_send *s) {
    if (b->failed) return;
    rf_record_ctx c = {b->t0, b->seq, b->run_id, b->session, b->phase};
    json_t *o = rf_record_of_send(s, &c);
    rf_error e = {0};
    rf_status st = o ? rf_records_append(&b->rec, o, &e)
                     : rf_error_set(&e, RF_ERR_NOMEM, "%s: out of memory", b->rec.path);
    json_decref(o);
    if (st) {
        b->failed = st;
        b->fail_err = e;
        rf_bench_log(b, "stopping the run: %s", e.msg);
        return;
    }
    b->seq++;
}

static void count_done(rf_bench *b, const rf_send *s) {
    int k = suite_index(s->suite), i = (int)(s->bb - b->run->backends);
    if (k < 0 || i < 0 || i >= RF_BENCH_MAX_BACKENDS) return;
    b->done[k][i]++;
    b->ok[k][i] += s->req.res.err == RF_BK_OK;
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
    if (!s->reused) write_record(b, s);
    count_done(b, s);
    if (s->on_done) s->on_done(s);
    b->woken = 1;
}

static void send_now(void *user) {
    rf_send *s = user;
    rf_bench *b = s->bench;
    if (s->reused) { /* restored from the records: its completion, on the loop */
        send_done(s, &s->req);
        return;
    }
    if (rf_bench_stopped(b) || !s->bb->b) {
        rf_bk_fail(&s->req.res, RF_BK_CANCELLED, "%s",
                   !s->bb->b   ? s->bb->open_error
                   : b->failed ? "the run stopped: records.jsonl could not be written"
                               : "interrupted before sending");
        send_done(s, &s->req);
        return;
    }
    if (b->n_inflight == b->cap_inflight) {
        int cap = b->cap_inflight ? b->cap_inflight * 2 : 64;
        rf_send **p = realloc(b->inflight, (size_t)cap * sizeof *p);
        if (!p) {
            rf_bk_fail(&s->req.res, RF_BK_CLIENT, "client out of memory");
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

bool rf_send_recorded(rf_send *s) {
    rf_bench *b = s->bench;
    if (s->reused) return true;
    if (!b->recorded) return false;
    char *key = rf_record_key_of_send(s, b->phase);
    json_t *rec = key ? json_object_get(b->recorded, key) : NULL;
    free(key);
    if (!rec) return false;
    const char *item = json_string_value(json_object_get(rec, "item"));
    rf_error e = {0};
    if (!item || strcmp(item, s->item)) {
        /* the same key for another request: the description or its data changed */
        rf_error_set(&e, RF_ERR_FORMAT,
                     "records.jsonl: request %s/%s/%d/%d was '%s' in the earlier session, '%s' "
                     "now (did the question file or task change?)",
                     s->suite, s->bb->cfg.name, s->level_index, s->index, item ? item : "?",
                     s->item);
    } else {
        rf_bk_result_free(&s->req.res);
        rf_bk_result_init(&s->req.res);
        int64_t warm_t = s->t_intended;
        if (rf_record_restore(rec, s, b->t0, &e) == RF_OK) {
            s->session = (int)json_integer_value(json_object_get(rec, "session"));
            s->reused = true;
            b->reused++;
            return true;
        }
        s->t_intended = warm_t;
    }
    if (!b->failed) {
        b->failed = RF_ERR_FORMAT;
        b->fail_err = e;
        rf_bench_log(b, "stopping the run: %s", e.msg);
    }
    return false;
}

void rf_send_at(rf_send *s, int64_t t) {
    rf_bench *b = s->bench;
    int64_t now = rf_now_ns();
    rf_send_recorded(s);
    if (!s->reused) s->t_intended = t;
    /* Always through the loop, never from here: a send that fails at once completes inside this
     * call, and its completion may start the next one; started from here each would nest one
     * level deeper. A recorded request completes now, not at its time. */
    int64_t at = s->reused || t == 0 || t < now ? now : t;
    rf_error err = {0};
    if (rf_loop_at(b->loop, at, send_now, s, &err) != RF_OK) {
        rf_bk_fail(&s->req.res, RF_BK_CLIENT, "client out of memory (timer)");
        s->reused = false;
        s->finished = 1;
        send_done(s, &s->req);
    }
}

/* Cancels what is in flight; each still ends with its record written. */
static void cancel_inflight(rf_bench *b) {
    b->cancelling = 1;
    for (int i = b->n_inflight - 1; i >= 0; i--) {
        if (i >= b->n_inflight) continue;
        rf_send *s = b->inflight[i];
        s->bb->b->vt->cancel(s->bb->b, &s->req);
    }
    b->cancelling = 0;
}

rf_status rf_bench_wait(rf_bench *b, const volatile int *outstanding, rf_error *err) {
    while (*outstanding > 0) {
        if (rf_bench_stopped(b) && !b->cancelling) cancel_inflight(b);
        /* rf_loop_run returns once its flag is non-zero, so it gets the completion flag, not
         * the count (which is non-zero while work is pending: the loop would never block) */
        b->woken = 0;
        if (*outstanding <= 0) break;
        rf_status st = rf_loop_run(b->loop, &b->woken, rf_now_ns() + 200000000, err);
        if (st) { /* the caller's sends go away with its frame: none may stay in flight */
            if (!b->cancelling) cancel_inflight(b);
            return st;
        }
    }
    if (b->failed) {
        if (err) *err = b->fail_err;
        return b->failed;
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

rf_status rf_bench_loop_at(rf_bench *b, int64_t t, rf_loop_fn fn, void *user, rf_error *err) {
    return rf_loop_at(b->loop, t, fn, user, err);
}

int rf_bench_unanswered(const rf_bench *b, char *msg, size_t cap) {
    const rf_run_desc *d = b->run;
    int n = 0;
    size_t w = 0;
    msg[0] = 0;
    for (int i = 0; i < d->n_backends && i < RF_BENCH_MAX_BACKENDS; i++) {
        if (!d->backends[i].b && d->backends[i].open_error[0]) {
            n++;
            if (w < cap)
                w += (size_t)snprintf(msg + w, cap - w, "%sbackend %s could not be opened",
                                      w ? "; " : "", d->backends[i].cfg.name);
            continue;
        }
        for (int k = 0; k < RF_SUITE_COUNT; k++)
            if (b->done[k][i] > 0 && b->ok[k][i] == 0) {
                n++;
                if (w < cap)
                    w += (size_t)snprintf(msg + w, cap - w,
                                          "%s%s on %s: 0 of %d requests succeeded", w ? "; " : "",
                                          g_suite_names[k], d->backends[i].cfg.name, b->done[k][i]);
            }
    }
    return n;
}

void rf_bench_log_event(rf_bench *b, json_t *ev) {
    if (!ev) return;
    rf_error e = {0};
    json_object_set_new(ev, "session", json_integer(b->session));
    if (b->log.fd >= 0 && rf_records_append(&b->log, ev, &e) && !b->failed) {
        b->failed = e.code; /* the run log is as much the run's as its records */
        b->fail_err = e;
        rf_bench_log(b, "stopping the run: %s", e.msg);
    }
    json_decref(ev);
}

rf_status rf_bench_finish(rf_bench *b, rf_error *err) {
    rf_bench_sample_membw(b, "end");
    char date[64];
    utc_now(date, sizeof date);
    json_t *ev = json_object();
    json_object_set_new(ev, "kind", json_string("session_end"));
    json_object_set_new(ev, "ended", json_string(date));
    json_object_set_new(ev, "duration_s", json_real((double)(rf_now_ns() - b->t0) / 1e9));
    json_object_set_new(ev, "records", json_integer((json_int_t)b->seq));
    json_object_set_new(ev, "interrupted", json_boolean(rf_bench_interrupted(b)));
    if (b->failed)
        json_object_set_new(ev, "error", rf_json_text(b->fail_err.msg, strlen(b->fail_err.msg)));
    if (b->run->resume) {
        json_object_set_new(ev, "records_reused", json_integer(b->reused));
        json_object_set_new(ev, "records_superseded", json_integer(b->superseded));
        json_object_set_new(ev, "torn_bytes_cut", json_integer(b->torn_bytes));
    }
    bool failed_before = b->failed != RF_OK;
    rf_bench_log_event(b, ev);
    if (!failed_before && b->failed) {
        if (err) *err = b->fail_err;
        return b->failed;
    }
    return RF_OK;
}
