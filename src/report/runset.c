/* runset.c: run directories read back (see runset.h). */
#include "report/runset.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench.h"
#include "bench/records.h"
#include "util/file.h"
#include "util/stats.h"

typedef struct load_ctx {
    rf_run *r;
    json_t *index; /* key -> position in r->recs */
    const char *path;
} load_ctx;

/* A line left out: counted, and the first one named in the run's warning. */
static void skip(load_ctx *c, int64_t line, const char *fmt, ...) {
    if (!c->r->skipped++) {
        char why[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        snprintf(c->r->warning, sizeof c->r->warning, "%s:%lld: %s; such lines are left out",
                 c->path, (long long)line, why);
    }
}

static rf_status take_record(void *user, json_t *rec, int64_t line, rf_error *err) {
    load_ctx *c = user;
    rf_run *r = c->r;
    r->lines++;
    char *key = rf_record_key_of(rec);
    const char *id = json_string_value(json_object_get(rec, "run_id"));
    const char *cls = json_string_value(json_object_get(rec, "error_class"));
    if (!key || !id || !cls) {
        skip(c, line, "not a record of schema %d (no key, run_id or error_class)",
             RF_RECORD_SCHEMA);
        free(key);
        return RF_OK;
    }
    /* a record whose result does not read back (a time past the limit, a wrong field) is left
     * out here, named, rather than counted as a request that measured nothing */
    rf_send s;
    memset(&s, 0, sizeof s);
    rf_bk_result_init(&s.req.res);
    rf_error e = {0};
    rf_status st = rf_record_restore(rec, &s, 0, &e);
    rf_bk_result_free(&s.req.res);
    if (st == RF_ERR_NOMEM) {
        free(key);
        return rf_error_set(err, st, "%s:%lld: %s", c->path, (long long)line, e.msg);
    }
    if (st) {
        skip(c, line, "%s", e.msg);
        free(key);
        return RF_OK;
    }
    if (!r->run_id[0]) snprintf(r->run_id, sizeof r->run_id, "%s", id);
    bool cancelled = !strcmp(cls, "cancelled");
    json_t *at = json_object_get(c->index, key);
    if (!at) {
        json_object_set_new_nocheck(c->index, key,
                                    json_integer((json_int_t)json_array_size(r->recs)));
        json_array_append(r->recs, rec);
    } else {
        size_t i = (size_t)json_integer_value(at);
        const char *old =
            json_string_value(json_object_get(json_array_get(r->recs, i), "error_class"));
        bool old_cancelled = old && !strcmp(old, "cancelled");
        /* the last result that is not a cancellation counts */
        if (old_cancelled || !cancelled) {
            if (old_cancelled && !cancelled) r->superseded++;
            json_array_set(r->recs, i, rec);
        }
    }
    free(key);
    return RF_OK;
}

static rf_status take_log(void *user, json_t *ev, int64_t line, rf_error *err) {
    (void)line, (void)err;
    load_ctx *c = user;
    json_array_append(c->r->log, ev);
    return RF_OK;
}

/* Whether the file's last byte is not a newline (a torn last line). */
static bool last_line_torn(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool torn = false;
    if (fseek(f, -1, SEEK_END) == 0) torn = fgetc(f) != '\n';
    fclose(f);
    return torn;
}

static rf_status load_run(const char *dir, rf_run *r, rf_error *err) {
    memset(r, 0, sizeof *r);
    r->dir = strdup(dir);
    const char *slash = strrchr(dir, '/');
    while (slash && !slash[1] && slash > dir) { /* "runs/x/" */
        const char *p = slash - 1;
        while (p > dir && *p != '/') p--;
        slash = *p == '/' ? p : NULL;
    }
    r->label = strdup(slash ? slash + 1 : dir);
    if (r->label) {
        size_t n = strlen(r->label);
        while (n && r->label[n - 1] == '/') r->label[--n] = 0;
    }
    r->recs = json_array();
    r->log = json_array();
    if (!r->dir || !r->label || !r->recs || !r->log)
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return rf_error_set(err, RF_ERR_IO, "%s: not a run directory (%s)", dir,
                            errno ? strerror(errno) : "not a directory");
    /* the description as the run saved it, checked as --resume would */
    char *argv[] = {"bench", "--resume", r->dir};
    int help = 0;
    rf_status st = rf_runfile_parse_args(3, argv, &r->rf, &help, err);
    if (st) return st;
    char *path = NULL;
    if (asprintf(&path, "%s/records.jsonl", dir) < 0)
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    load_ctx c = {r, json_object(), path};
    st = c.index ? rf_records_read(path, take_record, &c, err)
                 : rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    r->torn = last_line_torn(path);
    if (r->torn && !r->warning[0])
        snprintf(r->warning, sizeof r->warning,
                 "%s: the last line is torn (the run was killed while writing it): left out", path);
    json_decref(c.index);
    free(path);
    if (st) return st;
    r->by_key = json_object();
    if (!r->by_key) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    size_t ri;
    json_t *rec;
    json_array_foreach(r->recs, ri, rec) {
        char *key = rf_record_key_of(rec);
        if (key) json_object_set_nocheck(r->by_key, key, rec);
        free(key);
    }
    if (asprintf(&path, "%s/runlog.jsonl", dir) < 0)
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    c.path = path;
    st = rf_records_read(path, take_log, &c, err);
    free(path);
    if (st) return st;
    size_t i;
    json_t *ev;
    r->membw_median = r->membw_low = r->membw_high = NAN;
    double *bw = calloc(json_array_size(r->log) + 1, sizeof *bw);
    if (!bw) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    json_array_foreach(r->log, i, ev) {
        const char *kind = json_string_value(json_object_get(ev, "kind"));
        if (!kind) continue;
        const json_t *gbs = json_object_get(ev, "membw_gbs");
        if ((!strcmp(kind, "machine") || !strcmp(kind, "membw")) && json_is_number(gbs) &&
            json_number_value(gbs) > 0) {
            const double v = json_number_value(gbs);
            if (!r->membw_n || v > r->membw_high) r->membw_high = v;
            if (!r->membw_n || v < r->membw_low) r->membw_low = v;
            bw[r->membw_n++] = v;
        }
        if (!strcmp(kind, "machine")) {
            r->machine = ev;
        } else if (!strcmp(kind, "session")) {
            r->sessions++;
            r->ended = false;
        } else if (!strcmp(kind, "session_end")) {
            r->ended = true;
            r->interrupted = json_is_true(json_object_get(ev, "interrupted"));
            free(r->error);
            const char *e = json_string_value(json_object_get(ev, "error"));
            r->error = e ? strdup(e) : NULL;
        }
    }
    if (r->membw_n) r->membw_median = rf_median(bw, (size_t)r->membw_n);
    free(bw);
    int nb = r->rf.desc.n_backends;
    r->names = calloc((size_t)nb + 1, sizeof *r->names);
    if (!r->names) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    return RF_OK;
}

static void free_run(rf_run *r) {
    for (int i = 0; r->names && i < r->rf.desc.n_backends; i++) free(r->names[i]);
    free(r->names);
    json_decref(r->recs);
    json_decref(r->by_key);
    json_decref(r->log);
    rf_runfile_free(&r->rf);
    free(r->dir);
    free(r->label);
    free(r->error);
}

rf_status rf_runset_load(const char *const *dirs, int n, rf_runset *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    if (n < 1) return rf_error_set(err, RF_ERR_ARG, "no run directory given");
    out->runs = calloc((size_t)n, sizeof *out->runs);
    if (!out->runs) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        out->n = i + 1;
        rf_status st = load_run(dirs[i], &out->runs[i], err);
        if (st) {
            rf_runset_free(out);
            return st;
        }
    }
    /* shown names: NAME, or NAME@RUN where two runs share a name */
    for (int i = 0; i < n; i++) {
        rf_run *r = &out->runs[i];
        for (int b = 0; b < r->rf.desc.n_backends; b++) {
            const char *name = r->rf.desc.backends[b].cfg.name;
            bool clash = false;
            for (int j = 0; j < n && !clash; j++)
                for (int k = 0; j != i && k < out->runs[j].rf.desc.n_backends; k++)
                    clash |= !strcmp(out->runs[j].rf.desc.backends[k].cfg.name, name);
            int w = clash ? asprintf(&r->names[b], "%s@%s", name, r->label)
                          : asprintf(&r->names[b], "%s", name);
            if (w < 0) {
                r->names[b] = NULL;
                rf_runset_free(out);
                return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            }
        }
    }
    return RF_OK;
}

void rf_runset_free(rf_runset *rs) {
    for (int i = 0; rs->runs && i < rs->n; i++) free_run(&rs->runs[i]);
    free(rs->runs);
    memset(rs, 0, sizeof *rs);
}

static bool matches(const json_t *rec, const char *phase, const char *suite, const char *backend,
                    int level_index) {
    const char *p = json_string_value(json_object_get(rec, "phase"));
    const char *s = json_string_value(json_object_get(rec, "suite"));
    const char *b = json_string_value(json_object_get(rec, "backend"));
    if (strcmp(p ? p : "", phase ? phase : "") || !s || strcmp(s, suite) || !b ||
        strcmp(b, backend))
        return false;
    return level_index < 0 ||
           json_integer_value(json_object_get(rec, "level_index")) == level_index;
}

const json_t *rf_run_record(const rf_run *r, const char *phase, const char *suite,
                            const char *backend, int level_index, int index) {
    char *key = rf_record_key_make(phase, suite, backend, level_index, index);
    const json_t *rec = key ? json_object_get(r->by_key, key) : NULL;
    free(key);
    return rec;
}

static int by_index(const void *a, const void *b) {
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t lx = json_integer_value(json_object_get(x, "level_index")),
               ly = json_integer_value(json_object_get(y, "level_index"));
    if (lx != ly) return lx < ly ? -1 : 1;
    json_int_t ix = json_integer_value(json_object_get(x, "index")),
               iy = json_integer_value(json_object_get(y, "index"));
    return (ix > iy) - (ix < iy);
}

json_t *rf_run_records(const rf_run *r, const char *phase, const char *suite, const char *backend,
                       int level_index) {
    size_t n = 0, i;
    json_t *rec;
    json_array_foreach(r->recs, i, rec) n += matches(rec, phase, suite, backend, level_index);
    json_t **v = calloc(n + 1, sizeof *v);
    json_t *out = json_array();
    if (!v || !out) {
        free(v);
        return out;
    }
    size_t k = 0;
    json_array_foreach(r->recs, i, rec) if (matches(rec, phase, suite, backend, level_index))
        v[k++] = rec;
    qsort(v, k, sizeof *v, by_index);
    for (i = 0; i < k; i++) json_array_append(out, v[i]);
    free(v);
    return out;
}
