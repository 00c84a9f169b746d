/* records.c: the record line (fields, writer, reader, restore). See records.h. */
#include "bench/records.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/json_dump.h"

/* ---------------------------------------------------------------- the writer */

static rf_status open_at(rf_records *w, const char *dir, const char *name, int flags,
                         rf_error *err) {
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if (asprintf(&w->path, "%s/%s", dir, name) < 0) {
        w->path = NULL;
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    w->fd = open(w->path, flags | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        rf_status st = errno == EEXIST ? rf_error_set(err, RF_ERR_ARG,
                                                      "%s already exists: the directory holds a "
                                                      "run (resume it with --resume %s, or "
                                                      "choose another --out)",
                                                      w->path, dir)
                                       : rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s",
                                                      w->path, strerror(errno));
        free(w->path);
        w->path = NULL;
        return st;
    }
    struct stat sb;
    if (fstat(w->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { /* a device or pipe: never ours */
        rf_status st = rf_error_set(err, RF_ERR_IO, "%s: not a regular file", w->path);
        rf_records_close(w);
        return st;
    }
    return RF_OK;
}

rf_status rf_records_create(rf_records *w, const char *dir, rf_error *err) {
    return open_at(w, dir, "records.jsonl", O_CREAT | O_EXCL, err);
}

/* The length of the file's whole lines: up to and including its last '\n'. */
static rf_status whole_length(int fd, const char *path, int64_t size, int64_t *out, rf_error *err) {
    char chunk[65536];
    int64_t end = size;
    while (end > 0) {
        int64_t start = end > (int64_t)sizeof chunk ? end - (int64_t)sizeof chunk : 0;
        ssize_t n = pread(fd, chunk, (size_t)(end - start), start);
        if (n != end - start)
            return rf_error_set(err, RF_ERR_IO, "%s: read error: %s", path,
                                n < 0 ? strerror(errno) : "short read");
        for (int64_t i = n - 1; i >= 0; i--)
            if (chunk[i] == '\n') {
                *out = start + i + 1;
                return RF_OK;
            }
        end = start;
    }
    *out = 0;
    return RF_OK;
}

rf_status rf_records_reopen(rf_records *w, const char *dir, int64_t *torn_bytes, rf_error *err) {
    return rf_records_reopen_named(w, dir, "records.jsonl", torn_bytes, err);
}

rf_status rf_records_reopen_named(rf_records *w, const char *dir, const char *name,
                                  int64_t *torn_bytes, rf_error *err) {
    *torn_bytes = 0;
    rf_status st = open_at(w, dir, name, O_CREAT, err);
    if (st) return st;
    int rfd = open(w->path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (rfd < 0 || fstat(rfd, &sb) != 0) {
        st = rf_error_set(err, RF_ERR_IO, "%s: %s", w->path, strerror(errno));
        goto fail;
    }
    int64_t whole = 0;
    st = whole_length(rfd, w->path, (int64_t)sb.st_size, &whole, err);
    if (st) goto fail;
    if (whole < (int64_t)sb.st_size) { /* a torn last line: cut it off */
        if (ftruncate(w->fd, (off_t)whole) != 0) {
            st = rf_error_set(err, RF_ERR_IO, "%s: cannot cut off the torn last line: %s", w->path,
                              strerror(errno));
            goto fail;
        }
        *torn_bytes = (int64_t)sb.st_size - whole;
    }
    w->size = whole;
    close(rfd);
    return RF_OK;
fail:
    if (rfd >= 0) close(rfd);
    rf_records_close(w);
    return st;
}

rf_status rf_records_append(rf_records *w, const json_t *rec, rf_error *err) {
    rf_buf line;
    rf_buf_init(&line, 0);
    rf_status st = RF_OK;
    if (rf_json_dump_buf(
            rec, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15),
            &line) ||
        rf_buf_append(&line, "\n", 1)) {
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: cannot build a record (out of memory)", w->path);
        goto out;
    }
    size_t off = 0;
    while (off < line.len) { /* one write; more only after a short write */
        ssize_t n = write(w->fd, line.data + off, line.len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            /* leave only whole lines: cut off what part of this one got in */
            bool cut = off == 0 || ftruncate(w->fd, (off_t)w->size) == 0;
            st = rf_error_set(err, RF_ERR_IO, "%s: writing record %llu failed: %s%s", w->path,
                              (unsigned long long)w->written + 1, strerror(e),
                              cut ? "" : " (and a partial line could not be cut off)");
            goto out;
        }
        off += (size_t)n;
    }
    w->size += (int64_t)line.len;
    w->written++;
out:
    rf_buf_free(&line);
    return st;
}

void rf_records_close(rf_records *w) {
    if (w->fd >= 0) close(w->fd);
    free(w->path);
    w->fd = -1;
    w->path = NULL;
}

/* ---------------------------------------------------------------- the reader */

rf_status rf_records_read(const char *path, rf_record_fn fn, void *user, rf_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return RF_OK;
        return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int64_t no = 0;
    rf_status st = RF_OK;
    while (!st && (n = getline(&line, &cap, f)) > 0) {
        no++;
        if (line[n - 1] != '\n') break; /* torn: the last line, cut by a kill */
        json_error_t je;
        json_t *rec = json_loadb(line, (size_t)n, 0, &je);
        if (!json_is_object(rec)) {
            st = rf_error_set(err, RF_ERR_FORMAT, "%s:%lld: not a record (%s)", path, (long long)no,
                              rec ? "not a JSON object" : je.text);
            json_decref(rec);
            break;
        }
        st = fn(user, rec, no, err);
        json_decref(rec);
    }
    if (!st && ferror(f)) st = rf_error_set(err, RF_ERR_IO, "%s: read error", path);
    free(line);
    fclose(f);
    return st;
}

/* ---------------------------------------------------------------- the record */

static json_t *ms_since(int64_t t0, int64_t t) {
    return t ? json_real((double)(t - t0) / 1e6) : json_null();
}

char *rf_record_key_make(const char *phase, const char *suite, const char *backend, long long level,
                         long long index) {
    char *k = NULL;
    /* unit separators: no field of a key can contain one (names are checked text) */
    if (asprintf(&k, "%s\x1f%s\x1f%s\x1f%lld\x1f%lld", phase ? phase : "", suite, backend, level,
                 index) < 0)
        return NULL;
    return k;
}

char *rf_record_key_of_send(const rf_send *s, const char *phase) {
    return rf_record_key_make(phase, s->suite, s->bb->cfg.name, s->level_index, s->index);
}

char *rf_record_key_of(const json_t *rec) {
    const char *suite = json_string_value(json_object_get(rec, "suite"));
    const char *backend = json_string_value(json_object_get(rec, "backend"));
    json_t *lv = json_object_get(rec, "level_index"), *ix = json_object_get(rec, "index");
    if (!suite || !backend || !json_is_integer(lv) || !json_is_integer(ix)) return NULL;
    return rf_record_key_make(json_string_value(json_object_get(rec, "phase")), suite, backend,
                              (long long)json_integer_value(lv), (long long)json_integer_value(ix));
}

/* json_object_set_new / json_array_append_new that note a failure (out of memory) in *bad. */
static void put(int *bad, json_t *o, const char *key, json_t *v) {
    if (json_object_set_new(o, key, v)) *bad = 1;
}

static void push(int *bad, json_t *a, json_t *v) {
    if (json_array_append_new(a, v)) *bad = 1;
}

json_t *rf_record_of_send(const rf_send *s, const rf_record_ctx *c) {
    const rf_bk_result *r = &s->req.res;
    rf_send_metrics m;
    rf_send_metrics_of(s, &m);
    json_t *o = json_object();
    int bad = !o; /* a member that could not be made: no record rather than a partial one */
    const char *model = s->bb->b ? s->bb->b->vt->model(s->bb->b) : "";
    put(&bad, o, "schema", json_integer(RF_RECORD_SCHEMA));
    put(&bad, o, "run_id", json_string(c->run_id));
    put(&bad, o, "session", json_integer(c->session));
    put(&bad, o, "seq", json_integer((json_int_t)c->seq));
    if (c->phase && *c->phase) put(&bad, o, "phase", json_string(c->phase));
    put(&bad, o, "suite", json_string(s->suite));
    put(&bad, o, "backend", rf_json_text(s->bb->cfg.name, strlen(s->bb->cfg.name)));
    put(&bad, o, "model", rf_json_text(model, strlen(model)));
    put(&bad, o, "item", rf_json_text(s->item, strlen(s->item)));
    put(&bad, o, "level", json_integer(s->level));
    put(&bad, o, "level_index", json_integer(s->level_index));
    put(&bad, o, "index", json_integer(s->index));
    put(&bad, o, "warmup", json_boolean(s->warmup));
    put(&bad, o, "status", json_string(m.ok ? "ok" : "error"));
    put(&bad, o, "error_class", json_string(rf_bk_error_name(r->err)));
    /* never dropped: rf_json_text always gives a string, whatever the message holds */
    if (r->err) put(&bad, o, "error", rf_json_text(r->err_msg, strlen(r->err_msg)));
    put(&bad, o, "http_status", json_integer(r->http_status));
    put(&bad, o, "resends", json_integer(r->resends));
    put(&bad, o, "retries", json_integer(r->retries));
    if (r->retries) put(&bad, o, "retry_wait_ms", json_real(r->retry_wait_ms));
    if (r->request_id[0])
        put(&bad, o, "request_id", rf_json_text(r->request_id, strlen(r->request_id)));
    if (r->server_latency_ms >= 0)
        put(&bad, o, "server_latency_ms", json_real(r->server_latency_ms));
    if (r->not_honoured[0]) put(&bad, o, "not_honoured", json_string(r->not_honoured));
    /* timestamps: ms since the session started, on the monotonic clock */
    put(&bad, o, "t_intended_ms", ms_since(c->t0, s->t_intended));
    put(&bad, o, "t_sent_ms", ms_since(c->t0, r->t_sent));
    put(&bad, o, "t_first_byte_ms", ms_since(c->t0, r->t_first_byte));
    put(&bad, o, "t_first_content_ms", ms_since(c->t0, r->t_first_content));
    put(&bad, o, "t_last_content_ms", ms_since(c->t0, r->t_last_content));
    put(&bad, o, "t_done_ms", ms_since(c->t0, r->t_done));
    put(&bad, o, "max_tokens", json_integer(s->req.max_tokens));
    put(&bad, o, "prompt_tokens_server", json_integer(r->prompt_tokens));
    put(&bad, o, "completion_tokens_server", json_integer(r->completion_tokens));
    put(&bad, o, "completion_tokens_client", json_integer(r->client_tokens));
    put(&bad, o, "content_events", json_integer(r->n_ev + r->n_ev_dropped));
    if (r->n_ev_dropped) put(&bad, o, "events_dropped", json_integer(r->n_ev_dropped));
    put(&bad, o, "finish_reason", rf_json_text(r->finish_reason, strlen(r->finish_reason)));
    put(&bad, o, "ttft_ms", json_real(m.ttft_ms));
    put(&bad, o, "e2e_ms", json_real(m.e2e_ms));
    put(&bad, o, "tpot_ms", json_real(m.tpot_ms));
    put(&bad, o, "decode_tok_s", json_real(m.decode_tok_s));
    put(&bad, o, "lag_ms", json_real(m.lag_ms));
    put(&bad, o, "reply_bytes", json_integer(r->text_bytes));
    if (r->text_bytes > (int64_t)r->text.len) put(&bad, o, "reply_truncated", json_true());
    json_t *ev = json_array(), *evk = json_array();
    for (int32_t i = 0; i < r->n_ev; i++) {
        push(&bad, ev, json_real((double)(r->ev_t[i] - r->t_sent) / 1e6));
        push(&bad, evk, json_integer(r->ev_tokens[i]));
    }
    put(&bad, o, "events_ms", ev);
    put(&bad, o, "events_tokens", evk);
    if (r->has_timings) {
        json_t *t = json_object();
        put(&bad, t, "prompt_n", json_integer(r->prompt_n));
        put(&bad, t, "prompt_ms", json_real(r->prompt_ms));
        put(&bad, t, "predicted_n", json_integer(r->predicted_n));
        put(&bad, t, "predicted_ms", json_real(r->predicted_ms));
        put(&bad, o, "server_timings", t);
    }
    if (s->grade || !strcmp(s->suite, "probe")) {
        put(&bad, o, "reply", rf_json_text((const char *)r->text.data, r->text.len));
        json_t *calls = json_array();
        for (int32_t i = 0; i < r->n_calls; i++) {
            const rf_bk_tool_call *tc = &r->calls[i];
            json_t *cj = json_object();
            put(&bad, cj, "id", rf_json_text(tc->id, tc->id ? strlen(tc->id) : 0));
            put(&bad, cj, "name", rf_json_text(tc->name, tc->name ? strlen(tc->name) : 0));
            size_t alen = tc->arguments ? strlen(tc->arguments) : 0;
            put(&bad, cj, "arguments", rf_json_text(tc->arguments, alen));
            if (tc->arguments_bytes > (int64_t)alen) {
                put(&bad, cj, "arguments_bytes", json_integer(tc->arguments_bytes));
                put(&bad, cj, "arguments_truncated", json_true());
            }
            push(&bad, calls, cj);
        }
        put(&bad, o, "tool_calls", calls);
        if (r->call_form[0]) put(&bad, o, "call_form", json_string(r->call_form));
    }
    if (s->grade && json_object_update(o, s->grade)) bad = 1;
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---------------------------------------------------------------- restoring a result */

typedef struct restore_ctx {
    const json_t *rec;
    rf_error *err;
    rf_status st;
} restore_ctx;

static void fail_field(restore_ctx *c, const char *field, const char *what) {
    if (c->st) return;
    json_int_t seq = json_integer_value(json_object_get(c->rec, "seq"));
    c->st =
        rf_error_set(c->err, RF_ERR_FORMAT, "record seq %lld: %s: %s", (long long)seq, field, what);
}

/* The largest time a record may hold, in ms (31 years): times become int64 ns on a clock that
 * starts at the run's, so a difference of two never overflows (a fuzzed event time of 5e46 ms
 * read as INT64_MIN overflowed the report's gap arithmetic). */
#define RF_RECORD_MS_MAX 1e12

static int64_t time_of(restore_ctx *c, const char *field, int64_t base) {
    const json_t *v = json_object_get(c->rec, field);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
        fabs(json_number_value(v)) > RF_RECORD_MS_MAX) {
        fail_field(c, field, "expected null or a time in ms (at most 1e12)");
        return 0;
    }
    int64_t t = base + llround(json_number_value(v) * 1e6);
    return t ? t : 1; /* 0 means "did not happen" */
}

static int32_t count_of(restore_ctx *c, const char *field) {
    const json_t *v = json_object_get(c->rec, field);
    if (!json_is_integer(v) || json_integer_value(v) < -1 || json_integer_value(v) > INT32_MAX) {
        fail_field(c, field, "expected an integer >= -1");
        return -1;
    }
    return (int32_t)json_integer_value(v);
}

static char *dup_field(const json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? strdup(v) : NULL;
}

rf_status rf_record_restore(const json_t *rec, rf_send *s, int64_t base_ns, rf_error *err) {
    restore_ctx c = {rec, err, RF_OK};
    rf_bk_result *r = &s->req.res;
    const char *cls = json_string_value(json_object_get(rec, "error_class"));
    if (!rf_bk_error_parse(cls, &r->err)) fail_field(&c, "error_class", "not a known class");
    const char *msg = json_string_value(json_object_get(rec, "error"));
    if (msg) snprintf(r->err_msg, sizeof r->err_msg, "%s", msg);
    s->t_intended = time_of(&c, "t_intended_ms", base_ns);
    r->t_sent = time_of(&c, "t_sent_ms", base_ns);
    r->t_first_byte = time_of(&c, "t_first_byte_ms", base_ns);
    int64_t first = time_of(&c, "t_first_content_ms", base_ns);
    int64_t last = time_of(&c, "t_last_content_ms", base_ns);
    r->t_done = time_of(&c, "t_done_ms", base_ns);
    r->prompt_tokens = count_of(&c, "prompt_tokens_server");
    r->completion_tokens = count_of(&c, "completion_tokens_server");
    r->client_tokens = count_of(&c, "completion_tokens_client");
    r->http_status = (int)json_integer_value(json_object_get(rec, "http_status"));
    r->resends = (int32_t)json_integer_value(json_object_get(rec, "resends"));
    r->retries = (int32_t)json_integer_value(json_object_get(rec, "retries"));
    r->retry_wait_ms = json_number_value(json_object_get(rec, "retry_wait_ms"));
    const char *rid = json_string_value(json_object_get(rec, "request_id"));
    snprintf(r->request_id, sizeof r->request_id, "%s", rid ? rid : "");
    const json_t *lat = json_object_get(rec, "server_latency_ms");
    r->server_latency_ms = json_is_number(lat) ? json_number_value(lat) : -1;
    const char *nh = json_string_value(json_object_get(rec, "not_honoured"));
    snprintf(r->not_honoured, sizeof r->not_honoured, "%s", nh ? nh : "");
    const char *fr = json_string_value(json_object_get(rec, "finish_reason"));
    snprintf(r->finish_reason, sizeof r->finish_reason, "%s", fr ? fr : "");
    const json_t *ev = json_object_get(rec, "events_ms"),
                 *evk = json_object_get(rec, "events_tokens");
    if (!json_is_array(ev) || !json_is_array(evk) || json_array_size(ev) != json_array_size(evk))
        fail_field(&c, "events_ms", "expected two arrays of the same length (events_tokens)");
    for (size_t i = 0; !c.st && i < json_array_size(ev); i++) {
        const json_t *t = json_array_get(ev, i), *k = json_array_get(evk, i);
        if (!json_is_number(t) || !json_is_integer(k) || !isfinite(json_number_value(t)) ||
            fabs(json_number_value(t)) > RF_RECORD_MS_MAX) {
            fail_field(&c, "events_ms", "expected times in ms (at most 1e12) and token counts");
            break;
        }
        if (!rf_bk_result_event(r, r->t_sent + llround(json_number_value(t) * 1e6),
                                (int32_t)json_integer_value(k))) {
            c.st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            break;
        }
    }
    r->n_ev_dropped = json_integer_value(json_object_get(rec, "events_dropped"));
    if (first) r->t_first_content = first;
    if (last) r->t_last_content = last;
    const json_t *timings = json_object_get(rec, "server_timings");
    if (json_is_object(timings)) {
        r->has_timings = true;
        r->prompt_n = (int32_t)json_integer_value(json_object_get(timings, "prompt_n"));
        r->predicted_n = (int32_t)json_integer_value(json_object_get(timings, "predicted_n"));
        r->prompt_ms = json_number_value(json_object_get(timings, "prompt_ms"));
        r->predicted_ms = json_number_value(json_object_get(timings, "predicted_ms"));
    }
    const json_t *reply = json_object_get(rec, "reply");
    if (json_is_string(reply) &&
        rf_buf_append(&r->text, json_string_value(reply), json_string_length(reply)))
        c.st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    if (!c.st && rf_buf_terminate(&r->text))
        c.st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    const json_t *rb = json_object_get(rec, "reply_bytes");
    r->text_bytes = json_is_integer(rb) ? json_integer_value(rb) : (int64_t)r->text.len;
    const json_t *calls = json_object_get(rec, "tool_calls");
    size_t nc = json_array_size(calls);
    if (!c.st && nc) {
        r->calls = calloc(nc, sizeof *r->calls);
        if (!r->calls) c.st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        for (size_t i = 0; !c.st && i < nc; i++) {
            const json_t *cj = json_array_get(calls, i);
            rf_bk_tool_call *tc = &r->calls[r->n_calls++];
            tc->id = dup_field(cj, "id");
            tc->name = dup_field(cj, "name");
            tc->arguments = dup_field(cj, "arguments");
            const json_t *ab = json_object_get(cj, "arguments_bytes");
            tc->arguments_bytes = json_is_integer(ab) ? json_integer_value(ab)
                                  : tc->arguments     ? (int64_t)strlen(tc->arguments)
                                                      : 0;
        }
    }
    const char *form = json_string_value(json_object_get(rec, "call_form"));
    if (form) snprintf(r->call_form, sizeof r->call_form, "%s", form);
    s->warmup = json_is_true(json_object_get(rec, "warmup"));
    return c.st;
}
