/* test_bench_hostile.c: the bench against the defects a hostile probe found (issue 8), one
 * regression test each: sends that fail at once do not nest (a small stack survives 20,000 of
 * them); --run twice merges; a record that cannot be written stops the run with the cause and
 * keeps only whole lines; a torn last line is cut off; run directories are unique and never
 * shared; --resume completes a run killed with SIGKILL mid-level with every request exactly once;
 * a long --out path is used whole; empty error messages; run-file values that were silently
 * reinterpreted; unbounded replies are capped (and counted); a descriptor limit is raised, and
 * what it still refuses is a client error; bad rates and URLs are refused up front; a client
 * whose loop runs late says so; a suite with no successful reply exits 3.
 *
 * In-process runs use a tiny random model (the local backend) or the fake OpenAI server; the
 * CLI cases run the roofline binary ($ROOFLINE_BIN, set by ctest).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "fake/fake_server.h"
#include "bench/records.h"
#include "bench/runfile.h"
#include "report/report.h"
#include "check.h"
#include "tiny_model.h"
#include "util/clock.h"
#include "util/utf8.h"

static char g_model[300];
static const char *g_bin;
static char g_tmp[64]; /* this test's scratch directory */
static char g_err[16384];

/* ------------------------------------------------------------------ helpers */

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Runs a shell command line; returns the exit status, stderr in g_err (stdout discarded). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[8192], errpath[128];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", g_tmp);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " >/dev/null 2>'%s' </dev/null", errpath);
    int st = system(cmd);
    FILE *f = fopen(errpath, "r");
    size_t k = f ? fread(g_err, 1, sizeof g_err - 1, f) : 0;
    g_err[k] = 0;
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static rf_status parse(const char *const *args, int n, rf_runfile *rf, rf_error *err) {
    static char store[64][4096];
    char *argv[64];
    for (int i = 0; i < n; i++) {
        snprintf(store[i], sizeof store[i], "%s", args[i]);
        argv[i] = store[i];
    }
    int help = 0;
    return rf_runfile_parse_args(n, argv, rf, &help, err);
}

typedef struct rec_check {
    int lines, bad;
    json_t *keys; /* key -> count of non-cancelled records */
    int cancelled;
    int by_class[RF_BK_ERROR_COUNT];
} rec_check;

static rf_status check_one(void *user, json_t *rec, int64_t line, rf_error *err) {
    (void)line, (void)err;
    rec_check *c = user;
    c->lines++;
    char *key = rf_record_key_of(rec);
    const char *cls = json_string_value(json_object_get(rec, "error_class"));
    rf_bk_error e;
    if (!key || !cls || !rf_bk_error_parse(cls, &e) ||
        json_integer_value(json_object_get(rec, "schema")) != RF_RECORD_SCHEMA) {
        c->bad++;
    } else if (e == RF_BK_CANCELLED) {
        c->cancelled++;
    } else {
        c->by_class[e]++;
        json_t *k = json_object_get(c->keys, key);
        json_object_set_new_nocheck(c->keys, key, json_integer(k ? json_integer_value(k) + 1 : 1));
    }
    free(key);
    return RF_OK;
}

/* Reads DIR/records.jsonl: every line a record, and per key the non-cancelled count. */
static rec_check read_records(const char *dir) {
    rec_check c = {0};
    c.keys = json_object();
    char path[4200];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    rf_error err = {0};
    rf_status st = rf_records_read(path, check_one, &c, &err);
    CHECK_MSG(st == RF_OK, "%s", err.msg);
    /* whole lines only: the file ends with a newline */
    FILE *f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        if (size > 0) {
            fseek(f, -1, SEEK_END);
            CHECK_MSG(fgetc(f) == '\n', "%s does not end with a whole line", path);
        }
        fclose(f);
    }
    return c;
}

static int keys_seen_once(const rec_check *c) {
    int n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(c->keys, k, v) n += json_integer_value(v) == 1;
    return n;
}

static json_t *load_summary(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    return json_load_file(path, 0, NULL);
}

static json_t *level_of(json_t *sum, const char *backend, size_t i) {
    return json_array_get(
        json_object_get(json_object_get(json_object_get(sum, "load"), backend), "levels"), i);
}

/* Opens and runs a bench in-process over a parsed description; returns the summary (a copy). */
static json_t *run_inprocess(rf_runfile *rf, volatile sig_atomic_t *stop, rf_status *st_out,
                             void (*before)(rf_bench *)) {
    rf_error err = {0};
    rf_bench *b = NULL;
    rf_status st = rf_bench_open(&rf->desc, stop, &b, &err);
    CHECK_MSG(st == RF_OK, "open: %s", err.msg);
    json_t *sum = NULL;
    if (b) {
        if (before) before(b);
        st = rf_bench_run_all(b, &err);
        if (st_out) *st_out = st;
        rf_error ferr = {0};
        CHECK_MSG(rf_bench_finish(b, &ferr) == RF_OK, "finish: %s", ferr.msg);
        char *dir = strdup(rf_bench_dir(b));
        rf_bench_close(b);
        rf_report_opts ro;
        rf_report_opts_default(&ro);
        const char *dirs[1] = {dir};
        CHECK_MSG(rf_report_build(dirs, 1, &ro, NULL, &sum, &ferr) == RF_OK, "report: %s",
                  ferr.msg);
        free(dir);
    }
    return sum;
}

/* ------------------------------------------------------------------ 1. no nesting */

typedef struct nest_arg {
    const char *dir, *questions;
    int ok;
} nest_arg;

static void *nest_thread(void *p) {
    nest_arg *a = p;
    char model[400];
    snprintf(model, sizeof model, "tiny=local:%s", g_model);
    const char *args[] = {"bench",         "--backend",   model,
                          "--no-membw",    "--suites",    "load,accuracy",
                          "--levels",      "1",           "--requests",
                          "20000",         "--warmup",    "0",
                          "--load-tokens", "1048576",     "--accuracy-tokens",
                          "1048576",       "--questions", a->questions,
                          "--out",         a->dir};
    rf_runfile rf;
    rf_error err = {0};
    rf_status st = parse(args, (int)(sizeof args / sizeof args[0]), &rf, &err);
    CHECK_MSG(st == RF_OK, "%s", err.msg);
    volatile sig_atomic_t stop = 0;
    json_t *sum = st ? NULL : run_inprocess(&rf, &stop, NULL, NULL);
    json_t *lv = level_of(sum, "tiny", 0);
    a->ok = json_integer_value(json_object_get(lv, "errors")) == 20000 &&
            json_integer_value(json_object_get(
                json_object_get(json_object_get(sum, "accuracy"), "tiny"), "errors")) == 20000;
    json_decref(sum);
    rf_runfile_free(&rf);
    return NULL;
}

/* Every request fails at once (more tokens than the context); before the fix each completion
 * started the next send inside itself, one stack level per request: 5,500 of them overflowed
 * an 8 MiB stack. Here 20,000 + 20,000 run on a 1 MiB stack. */
static void test_no_nesting(void) {
    char dir[128], q[128];
    snprintf(dir, sizeof dir, "%s/nest", g_tmp);
    snprintf(q, sizeof q, "%s/q20000.jsonl", g_tmp);
    FILE *f = fopen(q, "w");
    for (int i = 0; f && i < 20000; i++)
        fprintf(
            f,
            "{\"id\":\"q%d\",\"category\":\"c\",\"prompt\":\"What is %d + 1?\",\"answer\":\"%d\","
            "\"grader\":\"number\"}\n",
            i, i, i + 1);
    if (f) fclose(f);
    nest_arg a = {dir, q, 0};
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, (size_t)1 << 20);
    pthread_t th;
    CHECK(pthread_create(&th, &at, nest_thread, &a) == 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&at);
    CHECK_MSG(a.ok, "20,000 immediate failures per suite did not all complete");
    char path[200];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    CHECK(check_count_lines(path) == 40000);
}

/* ------------------------------------------------------------------ 2. --run twice */

static void test_run_twice(void) {
    char a[128], b[128], c[128];
    snprintf(a, sizeof a, "%s/a.json", g_tmp);
    snprintf(b, sizeof b, "%s/b.json", g_tmp);
    snprintf(c, sizeof c, "%s/c.json", g_tmp);
    write_text(a, "{\"backends\": [{\"name\": \"alpha\", \"uri\": \"local\"}, {\"name\": \"beta\", "
                  "\"uri\": \"openai:http://127.0.0.1:9/v1\", \"model\": \"m-one\"}],"
                  " \"suites\": [\"speed\"], \"speed\": {\"prompt\": \"first prompt\"},"
                  " \"load\": {\"levels\": [1, 2]}, \"out\": \"runs/from-a\"}");
    write_text(b, "{\"load\": {\"levels\": [8]}, \"probe\": {\"question\": \"second\"}}");
    write_text(c, "{\"backends\": [{\"name\": \"gamma\", \"uri\": \"local\"}]}");
    rf_runfile rf;
    rf_error err = {0};
    const char *args[] = {"bench", "--run", a, "--run", b};
    CHECK_MSG(parse(args, 5, &rf, &err) == RF_OK, "%s", err.msg);
    const rf_run_desc *d = &rf.desc;
    /* the first file's strings are alive after the second was parsed (ASan: no use after free) */
    CHECK(d->n_backends == 2 && !strcmp(d->backends[0].cfg.name, "alpha") &&
          !strcmp(d->backends[1].cfg.name, "beta") && !strcmp(d->backends[1].cfg.model, "m-one"));
    CHECK(!strcmp(d->speed_prompt, "first prompt") && !strcmp(d->out_dir, "runs/from-a"));
    CHECK(d->n_levels == 1 && d->levels[0] == 8);                        /* the later file wins */
    CHECK(!strcmp(d->probe_question, "second") && d->speed && !d->load); /* merged */
    rf_runfile_free(&rf);
    const char *args2[] = {"bench", "--run", a, "--run", c};
    CHECK(parse(args2, 5, &rf, &err) == RF_OK);
    CHECK(rf.desc.n_backends == 1 && !strcmp(rf.desc.backends[0].cfg.name, "gamma"));
    rf_runfile_free(&rf);
}

/* ------------------------------------------------------------------ 3, 4. record writes */

static void test_record_write_failure(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fsize", g_tmp);
    /* a file size limit of 16 KiB: the first records fit, then a write is cut short (EFBIG) */
    int rc = sh("trap '' XFSZ; ulimit -f 32; exec '%s' bench --no-membw --backend tiny=local:%s "
                "--suites load "
                "--levels 1 --requests 400 --load-tokens 4 --warmup 0 --no-progress --out '%s'",
                g_bin, g_model, dir);
    CHECK_MSG(rc == 1, "exit %d: %s", rc, g_err);
    CHECK_MSG(strstr(g_err, "records.jsonl") && strstr(g_err, "File too large"), "%s", g_err);
    rec_check c = read_records(dir);
    CHECK_MSG(c.lines > 3 && c.lines < 400 && c.bad == 0, "%d records, %d bad", c.lines, c.bad);
    json_t *sum = load_summary(dir);
    CHECK_MSG(
        json_integer_value(json_object_get(json_object_get(sum, "run"), "records")) == c.lines,
        "summary counts %lld records, the file has %d",
        (long long)json_integer_value(json_object_get(json_object_get(sum, "run"), "records")),
        c.lines);
    CHECK(json_is_string(json_object_get(json_object_get(sum, "run"), "error")));
    json_decref(sum);
    json_decref(c.keys);

    /* records.jsonl already there (here a link to /dev/full): refused, never appended to */
    snprintf(dir, sizeof dir, "%s/devfull", g_tmp);
    mkdir(dir, 0755);
    char link[200];
    snprintf(link, sizeof link, "%s/records.jsonl", dir);
    CHECK(symlink("/dev/full", link) == 0);
    rc = sh("'%s' bench --no-membw --backend tiny=local:%s --suites probe --no-progress --out '%s'",
            g_bin, g_model, dir);
    CHECK_MSG(rc == 2 && strstr(g_err, "already exists"), "exit %d: %s", rc, g_err);
    /* and --resume on it: not a regular file */
    char runjson[200];
    snprintf(runjson, sizeof runjson, "%s/run.json", dir);
    write_text(runjson, "{\"suites\": [\"probe\"]}");
    rc = sh("'%s' bench --resume '%s' --no-progress", g_bin, dir);
    CHECK_MSG(rc != 0 && strstr(g_err, "not a regular file"), "exit %d: %s", rc, g_err);
}

static void test_torn_tail(void) {
    char dir[128], path[200];
    snprintf(dir, sizeof dir, "%s/torn", g_tmp);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    const char *good = "{\"seq\":0}\n{\"seq\":1}\n";
    char text[8192];
    snprintf(text, sizeof text, "%s{\"seq\":2,\"reply\":\"", good);
    size_t n = strlen(text);
    memset(text + n, 'x', 5000); /* a long record cut by a kill */
    text[n + 5000] = 0;
    write_text(path, text);
    rf_records w;
    int64_t torn = 0;
    rf_error err = {0};
    CHECK_MSG(rf_records_reopen(&w, dir, &torn, &err) == RF_OK, "%s", err.msg);
    CHECK(torn == (int64_t)(n + 5000 - strlen(good)));
    json_t *rec = json_pack("{s:i}", "seq", 2);
    CHECK(rf_records_append(&w, rec, &err) == RF_OK);
    json_decref(rec);
    rf_records_close(&w);
    CHECK(check_count_lines(path) == 3);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size == (off_t)(strlen(good) + strlen("{\"seq\":2}\n")));
}

/* ------------------------------------------------------------------ 5. unique run dirs */

static void test_unique_dirs(void) {
    char cwd[4096], dir[128];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(dir, sizeof dir, "%s/cwd", g_tmp);
    mkdir(dir, 0755);
    CHECK(chdir(dir) == 0);
    char model[400];
    snprintf(model, sizeof model, "tiny=local:%s", g_model);
    const char *args[] = {"bench", "--backend", model, "--suites", "probe", "--no-membw"};
    rf_runfile rf, rfb;
    rf_error err = {0};
    CHECK(parse(args, 6, &rf, &err) == RF_OK);
    CHECK(parse(args, 6, &rfb, &err) == RF_OK);
    volatile sig_atomic_t stop = 0;
    rf_bench *b1 = NULL, *b2 = NULL;
    /* two runs started in the same millisecond (as fast as two opens go) */
    CHECK_MSG(rf_bench_open(&rf.desc, &stop, &b1, &err) == RF_OK, "%s", err.msg);
    CHECK_MSG(rf_bench_open(&rfb.desc, &stop, &b2, &err) == RF_OK, "%s", err.msg);
    if (b1 && b2) {
        CHECK_MSG(strcmp(rf_bench_dir(b1), rf_bench_dir(b2)) != 0, "both in %s", rf_bench_dir(b1));
        CHECK(!strncmp(rf_bench_dir(b1), "runs/", 5));
    }
    /* an --out that holds a run is refused */
    const char *again = b1 ? rf_bench_dir(b1) : "runs/x";
    rf_bench_close(b2);
    rf_runfile rf2;
    const char *args2[] = {"bench", "--backend", model, "--suites", "probe", "--out", again};
    CHECK(parse(args2, 7, &rf2, &err) == RF_OK);
    rf_bench *b3 = NULL;
    CHECK(rf_bench_open(&rf2.desc, &stop, &b3, &err) == RF_ERR_ARG && !b3);
    CHECK_MSG(strstr(err.msg, "already exists") && strstr(err.msg, "--resume"), "%s", err.msg);
    rf_bench_close(b1);
    rf_runfile_free(&rf);
    rf_runfile_free(&rfb);
    rf_runfile_free(&rf2);
    CHECK(chdir(cwd) == 0);
}

/* ------------------------------------------------------------------ 6. resume */

static int wait_lines(const char *path, int want, double max_s) {
    int64_t end = rf_now_ns() + (int64_t)(max_s * 1e9);
    int n = 0;
    while ((n = check_count_lines(path)) < want && rf_now_ns() < end) usleep(2000);
    return n;
}

/* A run killed with SIGKILL in the middle of a load level, then --resume: every request of the
 * run is recorded exactly once (none repeated, none lost), the summary counts all of them, and
 * says it was resumed. Then the same after an interrupt (SIGINT), whose cancelled requests are
 * sent again. */
static void test_resume(void) {
    const int per_level = 24; /* --requests; plus 1 warm-up */
    for (int mode = 0; mode < 2; mode++) {
        char dir[128], records[200];
        snprintf(dir, sizeof dir, "%s/resume%d", g_tmp, mode);
        snprintf(records, sizeof records, "%s/records.jsonl", dir);
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "exec '%s' bench --no-membw --backend tiny=local:%s --suites load,accuracy,probe "
                 "--levels 1,3 --requests %d --load-tokens 24 --accuracy-tokens 4 --no-progress "
                 "--threads 1 --out '%s' >/dev/null 2>&1",
                 g_bin, g_model, per_level, dir);
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        int before = wait_lines(records, 8, 60); /* well inside the first level */
        kill(pid, mode == 0 ? SIGKILL : SIGINT);
        int st = 0;
        waitpid(pid, &st, 0);
        CHECK_MSG(mode == 0 ? WIFSIGNALED(st) : WIFEXITED(st) && WEXITSTATUS(st) == 130,
                  "mode %d: status %d", mode, st);
        rec_check c0 = read_records(dir);
        fprintf(stderr, "resume %s: %d records before (%d at the kill), %d cancelled\n",
                mode ? "after SIGINT" : "after SIGKILL", c0.lines, before, c0.cancelled);
        CHECK(c0.lines >= 8 && c0.lines < 2 * (per_level + 1) + 40 + 1 && c0.bad == 0);
        json_decref(c0.keys);
        int rc = sh("'%s' bench --resume '%s' --no-progress --threads 1", g_bin, dir);
        CHECK_MSG(rc == 2 && strstr(g_err, "--threads"), "resume with flags: %d %s", rc, g_err);
        rc = sh("'%s' bench --resume '%s' --no-progress", g_bin, dir);
        CHECK_MSG(rc == 0, "resume exit %d: %s", rc, g_err);
        rec_check c = read_records(dir);
        int want = 2 * (per_level + 1) + 40 + 1;
        int once = keys_seen_once(&c);
        CHECK_MSG(c.bad == 0 && (int)json_object_size(c.keys) == want && once == want,
                  "mode %d: %zu keys, %d once, want %d", mode, json_object_size(c.keys), once,
                  want);
        CHECK(c.lines == want + c.cancelled);
        json_t *sum = load_summary(dir);
        json_t *run = json_object_get(sum, "run");
        CHECK(json_is_true(json_object_get(run, "resumed")));
        CHECK(json_integer_value(json_object_get(run, "sessions")) == 2);
        CHECK(json_integer_value(json_object_get(run, "records")) == c.lines);
        CHECK(json_integer_value(json_object_get(run, "records_reused")) > 0);
        for (size_t i = 0; i < 2; i++) {
            json_t *lv = level_of(sum, "tiny", i);
            CHECK_MSG(json_integer_value(json_object_get(lv, "ok")) == per_level,
                      "level %zu: ok %lld", i,
                      (long long)json_integer_value(json_object_get(lv, "ok")));
            CHECK(json_integer_value(json_object_get(lv, "output_tokens")) == per_level * 24);
            CHECK(json_number_value(json_object_get(lv, "output_tok_s")) > 0);
        }
        CHECK(json_integer_value(json_object_get(
                  json_object_get(json_object_get(sum, "accuracy"), "tiny"), "total")) == 40);
        CHECK(json_is_false(json_object_get(sum, "interrupted")));
        json_decref(sum);
        json_decref(c.keys);
        /* resuming a finished run sends nothing and gives the same counts */
        rc = sh("'%s' bench --resume '%s' --no-progress", g_bin, dir);
        rec_check c2 = read_records(dir);
        CHECK_MSG(rc == 0 && c2.lines == c.lines, "second resume: exit %d, %d -> %d records", rc,
                  c.lines, c2.lines);
        json_decref(c2.keys);
    }
}

/* ------------------------------------------------------------------ 8, 9, 10, 14: input */

static void test_long_out(void) {
    char dir[2000];
    int n = snprintf(dir, sizeof dir, "%s/long", g_tmp);
    while (n < 1500) n += snprintf(dir + n, sizeof dir - (size_t)n, "/%0100d", n);
    int rc =
        sh("'%s' bench --no-membw --backend tiny=local:%s --suites probe --no-progress --out '%s'",
           g_bin, g_model, dir);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_err);
    char path[2100];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    CHECK_MSG(check_count_lines(path) == 1, "no record in the %zu-byte --out directory",
              strlen(dir));
}

static void expect_parse_error(const char *const *args, int n, const char *n1, const char *n2) {
    rf_runfile rf;
    rf_error err = {0};
    rf_status st = parse(args, n, &rf, &err);
    CHECK_MSG(st == RF_ERR_ARG && strlen(err.msg) > 10 && (!n1 || strstr(err.msg, n1)) &&
                  (!n2 || strstr(err.msg, n2)),
              "%s %s: status %d, '%s'", args[1], n > 2 ? args[2] : "", st, err.msg);
    rf_runfile_free(&rf);
}

static void test_bad_input(void) {
    /* 9: the cause is named, never an empty message */
    const char *a1[] = {"bench", "--run", "/nonexistent.json"};
    expect_parse_error(a1, 3, "/nonexistent.json", "No such file");
    const char *a2[] = {"bench", "--run", g_tmp};
    expect_parse_error(a2, 3, g_tmp, "directory");
    char big[128];
    snprintf(big, sizeof big, "%s/big.json", g_tmp);
    FILE *f = fopen(big, "w");
    for (int i = 0; f && i < (17 << 10); i++) fprintf(f, "%1023s\n", " ");
    if (f) fclose(f);
    const char *a3[] = {"bench", "--run", big};
    expect_parse_error(a3, 3, big, "larger than");
    /* 10: values that were silently reinterpreted */
    const struct {
        const char *json, *n1, *n2;
    } runfiles[] = {
        {"{\"suites\": []}", "suites", "empty"},
        {"{\"backends\": []}", "backends", "empty"},
        {"{\"backends\": [{\"name\": \"a\", \"uri\": \"local\"}, {\"name\": \"b\", \"uri\": "
         "\"local\"}], \"aba\": {\"a\": \"a\", \"b\": \"nope\"}}",
         "aba.b", "'nope'"},
        {"{\"backends\": [{\"name\": \"a\", \"uri\": \"local\"}, {\"name\": \"b\", \"uri\": "
         "\"local\"}], \"aba\": {\"a\": \"a\", \"b\": \"b\", \"suites\": \"load\"}}",
         "aba.suites", "array"},
        {"{\"aba\": {\"a\": \"local\", \"b\": \"local\"}}", "aba", "the same backend"},
        {"{\"aba\": {\"a\": \"local\", \"b\": \"other\"}}", "aba.b", "not the name"},
        {"{\"load\": {\"rate\": 1e-300}}", "load.rate", "0.001"},
        {"{\"backends\": [{\"uri\": \"openai:http:///v1\"}]}", "openai:http:///v1", "no host"},
        {"{\"backends\": [{\"uri\": \"ftp://host\"}]}", "unknown scheme 'ftp'", NULL},
        {"{\"backends\": [{\"uri\": \"local\", \"max_reply_bytes\": 1.5}]}", "max_reply_bytes",
         "whole"},
    };
    char path[128];
    snprintf(path, sizeof path, "%s/bad.json", g_tmp);
    for (size_t i = 0; i < sizeof runfiles / sizeof runfiles[0]; i++) {
        write_text(path, runfiles[i].json);
        const char *a[] = {"bench", "--run", path};
        expect_parse_error(a, 3, runfiles[i].n1, runfiles[i].n2);
    }
    /* 14 and 19: flags */
    const struct {
        const char *flag, *value, *n1, *n2;
    } flags[] = {
        {"--rate", "1e-300", "--rate", "0.001"},
        {"--rate", "nan", "--rate", NULL},
        {"--backend", "x=openai:http:///v1", "no host", NULL},
        {"--backend", "x=", "got 'x='", "no URI"},
        {"--backend", "=local", "got '=local'", "no name"},
        {"--suites", ",", "--suites", "empty"},
        {"--aba", "a,b", "aba.a", "not the name"},
        {"--max-reply-bytes", "0", "--max-reply-bytes", NULL},
        {"--requests", "99999999999999999999", "--requests", NULL},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const char *a[] = {"bench", flags[i].flag, flags[i].value};
        expect_parse_error(a, 3, flags[i].n1, flags[i].n2);
    }
}

/* ------------------------------------------------------------------ 11: unbounded replies */

static void test_reply_cap(void) {
    rf_fake_params p = rf_fake_default_params();
    p.ttft_ms = 1;
    p.gap_ms = 0;
    rf_fake *fk = NULL;
    rf_error err = {0};
    CHECK(rf_fake_start(&p, &fk, &err) == RF_OK);
    if (!fk) return;
    char dir[128], runjson[1024], path[200];
    snprintf(dir, sizeof dir, "%s/cap", g_tmp);
    /* 200,000 tokens of "tok " (800,000 bytes) in events of 100 tokens; 4 KiB kept */
    snprintf(runjson, sizeof runjson,
             "{\"backends\": [{\"name\": \"fake\", \"uri\": \"openai:http://127.0.0.1:%d/v1\", "
             "\"max_reply_bytes\": 4096, \"extra_body\": {\"fake\": {\"tokens\": 200000, "
             "\"tokens_per_chunk\": 100}}}], \"suites\": [\"probe\"], \"out\": \"%s\"}",
             rf_fake_port(fk), dir);
    snprintf(path, sizeof path, "%s/cap.json", g_tmp);
    write_text(path, runjson);
    const char *args[] = {"bench", "--run", path, "--no-progress"};
    rf_runfile rf;
    CHECK(parse(args, 4, &rf, &err) == RF_OK);
    volatile sig_atomic_t stop = 0;
    json_t *sum = run_inprocess(&rf, &stop, NULL, NULL);
    json_decref(sum);
    rf_runfile_free(&rf);
    rf_fake_stop(fk);
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    json_t *rec = json_load_file(path, 0, NULL);
    CHECK(json_is_true(json_object_get(rec, "reply_truncated")));
    CHECK(json_integer_value(json_object_get(rec, "reply_bytes")) == 800000);
    CHECK(json_string_length(json_object_get(rec, "reply")) == 4096);
    CHECK(json_integer_value(json_object_get(rec, "completion_tokens_server")) == 200000);
    CHECK(!strcmp(json_string_value(json_object_get(rec, "status")), "ok"));
    json_decref(rec);
}

/* ------------------------------------------------------------------ 12: descriptors */

static void test_fd_limit(void) {
    rf_fake_params p = rf_fake_default_params();
    p.ttft_ms = 300; /* the streams stay open together */
    p.gap_ms = 10;
    rf_fake *fk = NULL;
    rf_error err = {0};
    CHECK(rf_fake_start(&p, &fk, &err) == RF_OK);
    if (!fk) return;
    char dir[128];
    /* a soft limit of 64 below a higher hard one: raised at start, so 100 streams work */
    snprintf(dir, sizeof dir, "%s/fd-soft", g_tmp);
    int rc = sh("ulimit -S -n 64 && exec '%s' bench --backend f=openai:http://127.0.0.1:%d/v1 "
                "--suites load --levels 100 --requests 100 --warmup 0 --load-tokens 4 "
                "--no-progress --out '%s'",
                g_bin, rf_fake_port(fk), dir);
    rec_check c = read_records(dir);
    CHECK_MSG(rc == 0 && c.by_class[RF_BK_OK] == 100, "soft limit: exit %d, %d ok: %s", rc,
              c.by_class[RF_BK_OK], g_err);
    json_decref(c.keys);
    /* a hard limit of 48: what cannot get a socket is the client's error, not "refused" */
    snprintf(dir, sizeof dir, "%s/fd-hard", g_tmp);
    rc = sh("ulimit -n 48 && exec '%s' bench --backend f=openai:http://127.0.0.1:%d/v1 "
            "--suites load --levels 100 --requests 100 --warmup 0 --load-tokens 4 --no-progress "
            "--out '%s'",
            g_bin, rf_fake_port(fk), dir);
    c = read_records(dir);
    fprintf(stderr, "hard limit 48, 100 streams: %d ok, %d client_error, %d refused\n",
            c.by_class[RF_BK_OK], c.by_class[RF_BK_CLIENT], c.by_class[RF_BK_REFUSED]);
    CHECK_MSG(c.lines == 100 && c.by_class[RF_BK_CLIENT] > 0 && c.by_class[RF_BK_REFUSED] == 0,
              "hard limit: exit %d, %d records, %d client errors, %d refused: %s", rc, c.lines,
              c.by_class[RF_BK_CLIENT], c.by_class[RF_BK_REFUSED], g_err);
    json_decref(c.keys);
    rf_fake_stop(fk);
}

/* ------------------------------------------------------------------ 18: client-bound */

static rf_bench *g_busy_bench;
static int64_t g_busy_until;

/* A loop callback that burns 30 ms of CPU every 40 ms: a client too busy to read in time. */
static void busy(void *user) {
    (void)user;
    int64_t t = rf_now_ns();
    while (rf_now_ns() - t < 30000000) {
    }
    if (t < g_busy_until) rf_bench_loop_at(g_busy_bench, t + 40000000, busy, NULL, NULL);
}

static void start_busy(rf_bench *b) {
    g_busy_bench = b;
    g_busy_until = rf_now_ns() + 20000000000ll;
    rf_bench_loop_at(b, rf_now_ns(), busy, NULL, NULL);
}

static void test_client_bound(void) {
    rf_fake_params p = rf_fake_default_params();
    p.ttft_ms = 20;
    p.gap_ms = 5;
    rf_fake *fk = NULL;
    rf_error err = {0};
    CHECK(rf_fake_start(&p, &fk, &err) == RF_OK);
    if (!fk) return;
    char uri[128], dir[128];
    snprintf(uri, sizeof uri, "f=openai:http://127.0.0.1:%d/v1", rf_fake_port(fk));
    snprintf(dir, sizeof dir, "%s/busy", g_tmp);
    const char *args[] = {"bench", "--backend",    uri, "--suites",      "load", "--levels",
                          "2",     "--requests",   "6", "--load-tokens", "40",   "--out",
                          dir,     "--no-progress"};
    rf_runfile rf;
    CHECK(parse(args, 14, &rf, &err) == RF_OK);
    volatile sig_atomic_t stop = 0;
    json_t *sum = run_inprocess(&rf, &stop, NULL, start_busy);
    g_busy_until = 0;
    json_t *cl = json_object_get(level_of(sum, "f", 0), "client");
    double p99 = json_number_value(json_object_get(json_object_get(cl, "loop_lag_ms"), "p99"));
    fprintf(stderr, "busy client: loop lag p99 %.1f ms, bound %s\n", p99,
            json_is_true(json_object_get(cl, "bound")) ? "yes" : "no");
    CHECK(json_is_true(json_object_get(cl, "bound")));
    CHECK(p99 >= 20);
    CHECK(json_is_string(json_object_get(cl, "warning")));
    json_decref(sum);
    rf_runfile_free(&rf);
    /* the scoreboard says so beside the level */
    char path[200];
    snprintf(path, sizeof path, "%s/report.md", dir);
    char text[65536] = "";
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    CHECK_MSG(strstr(text, "client-bound") != NULL, "scoreboard: %s", text);
    rf_fake_stop(fk);
}

/* ------------------------------------------------------------------ exit status 3 */

static void test_exit_unanswered(void) {
    rf_fake_params p = rf_fake_default_params();
    p.ttft_ms = 1;
    p.gap_ms = 1;
    p.fault = RF_FAKE_FAULT_500;
    p.fault_rate = 1.0;
    rf_fake *fk = NULL;
    rf_error err = {0};
    CHECK(rf_fake_start(&p, &fk, &err) == RF_OK);
    if (!fk) return;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/all500", g_tmp);
    int rc = sh("'%s' bench --backend f=openai:http://127.0.0.1:%d/v1 --suites load,probe "
                "--levels 2 --requests 4 --no-progress --out '%s'",
                g_bin, rf_fake_port(fk), dir);
    CHECK_MSG(rc == 3 && strstr(g_err, "load on f: 0 of") && strstr(g_err, "probe on f"),
              "exit %d: %s", rc, g_err);
    rf_fake_stop(fk);
}

int main(void) {
    g_bin = getenv("ROOFLINE_BIN");
    if (!g_bin || access(g_bin, X_OK)) {
        fprintf(stderr, "skipped: ROOFLINE_BIN not set\n");
        return 77;
    }
    snprintf(g_tmp, sizeof g_tmp, "/tmp/roofline-hostile-XXXXXX");
    if (!mkdtemp(g_tmp)) return 1;
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q8_0;
    s.n_ctx_train = 8192;
    const char *p = tiny_write_file(&s, "hostile");
    CHECK(p != NULL);
    if (!p) return check_summary("test_bench_hostile");
    snprintf(g_model, sizeof g_model, "%s", p);

    test_run_twice();
    test_bad_input();
    test_torn_tail();
    test_unique_dirs();
    test_no_nesting();
    test_record_write_failure();
    test_long_out();
    test_reply_cap();
    test_fd_limit();
    test_client_bound();
    test_exit_unanswered();
    test_resume();

    remove(g_model);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
    return check_summary("test_bench_hostile");
}
