/* test_bench.c: the bench agent end to end on the in-process backend with a tiny model: every
 * suite runs, records.jsonl gets one flushed line per request with the timestamps and metrics,
 * summary.json and scoreboard.md are written; an interrupt keeps what finished; bad input
 * (unknown scheme, malformed run file fields, bad question file) is refused with the place named.
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/runfile.h"
#include "report/report.h"
#include "check.h"
#include "tiny_model.h"

static char g_model_uri[300];

static rf_status parse(const char *const *args, int n, rf_runfile *rf, rf_error *err) {
    char *argv[64];
    static char store[64][256];
    for (int i = 0; i < n; i++) {
        snprintf(store[i], sizeof store[i], "%s", args[i]);
        argv[i] = store[i];
    }
    int help = 0;
    return rf_runfile_parse_args(n, argv, rf, &help, err);
}

static void test_full_run(void) {
    char dir[] = "/tmp/roofline-bench-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[400];
    snprintf(out, sizeof out, "%s/run", dir);
    const char *args[] = {"bench",         "--backend", g_model_uri,         "--no-membw",
                          "--speed-runs",  "2",         "--speed-tokens",    "8",
                          "--levels",      "1,3",       "--requests",        "3",
                          "--load-tokens", "6",         "--accuracy-tokens", "4",
                          "--agent-runs",  "1",         "--threads",         "2",
                          "--out",         out};
    rf_runfile rf;
    rf_error err = {0};
    CHECK_MSG(parse(args, (int)(sizeof args / sizeof args[0]), &rf, &err) == RF_OK, "%s", err.msg);
    CHECK(rf_bench_preflight(&rf.desc, &err) == RF_OK);
    volatile sig_atomic_t stop = 0;
    rf_bench *b = NULL;
    CHECK_MSG(rf_bench_open(&rf.desc, &stop, &b, &err) == RF_OK, "%s", err.msg);
    if (!b) return;
    CHECK_MSG(rf_bench_run_all(b, &err) == RF_OK, "%s", err.msg);
    CHECK(rf_bench_finish(b, &err) == RF_OK);
    rf_bench_close(b);
    rf_runfile_free(&rf);
    rf_report_opts ro;
    rf_report_opts_default(&ro);
    const char *dirs[1] = {out};
    CHECK_MSG(rf_report_build(dirs, 1, &ro, NULL, NULL, &err) == RF_OK, "report: %s", err.msg);

    char path[500];
    snprintf(path, sizeof path, "%s/records.jsonl", out);
    /* speed 2 + load (1+3 warm-up/measured... 4 + 4) + accuracy 40 + agent >= 1 + probe 1 */
    int lines = check_count_lines(path);
    CHECK_MSG(lines >= 2 + 8 + 40 + 1 + 1, "%d records", lines);
    json_error_t je;
    FILE *f = fopen(path, "r");
    char line[1 << 16];
    int good = 0, with_events = 0;
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, &je);
        good += o && json_is_string(json_object_get(o, "suite")) &&
                json_is_string(json_object_get(o, "status")) && json_object_get(o, "t_sent_ms") &&
                json_object_get(o, "ttft_ms");
        with_events += json_array_size(json_object_get(o, "events_ms")) > 0;
        json_decref(o);
    }
    if (f) fclose(f);
    CHECK(good == lines);
    CHECK(with_events >= lines - 1);
    snprintf(path, sizeof path, "%s/summary.json", out);
    json_t *sum = json_load_file(path, 0, &je);
    CHECK(sum != NULL);
    json_t *sp = json_object_get(json_object_get(sum, "speed"), "tiny");
    CHECK(json_integer_value(json_object_get(sp, "ok")) == 2);
    CHECK(json_number_value(json_object_get(json_object_get(sp, "decode_tok_s"), "median")) > 0);
    json_t *levels =
        json_object_get(json_object_get(json_object_get(sum, "load"), "tiny"), "levels");
    CHECK(json_array_size(levels) == 2);
    json_t *l3 = json_array_get(levels, 1);
    CHECK(json_integer_value(json_object_get(l3, "ok")) == 3);
    CHECK(json_integer_value(json_object_get(l3, "output_tokens")) == 18); /* ignore_eos: 3 x 6 */
    CHECK(json_number_value(json_object_get(l3, "output_tok_s")) > 0);
    json_t *acc = json_object_get(json_object_get(sum, "accuracy"), "tiny");
    CHECK(json_integer_value(json_object_get(acc, "total")) == 40);
    CHECK(json_array_size(json_object_get(json_object_get(json_object_get(sum, "agent"), "tiny"),
                                          "lines")) == 1);
    CHECK(json_object_get(json_object_get(sum, "probe"), "tiny") != NULL);
    json_decref(sum);
    snprintf(path, sizeof path, "%s/report.md", out);
    CHECK(check_count_lines(path) > 20);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* An interrupt mid-run: the suites stop, what finished is in records.jsonl and the summary. */
static volatile sig_atomic_t g_stop;
static pthread_t g_main;
static const char *g_records;
static void on_usr1(int sig) {
    (void)sig;
    g_stop = 1; /* in the main thread, as the CLI's SIGINT handler */
}
/* Interrupts once a few records are written (or after 20 s), however fast the run goes: a
 * signal to the main thread, so the flag is written where the bench reads it. */
static void *interrupter(void *arg) {
    (void)arg;
    for (int i = 0; i < 10000 && check_count_lines(g_records) < 5; i++) usleep(2000);
    pthread_kill(g_main, SIGUSR1);
    return NULL;
}

static void test_interrupt(void) {
    char dir[] = "/tmp/roofline-bench-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    const char *args[] = {"bench",         "--backend", g_model_uri, "--no-membw", "--suites",
                          "load",          "--levels",  "2",         "--requests", "4000",
                          "--load-tokens", "8",         "--out",     dir};
    rf_runfile rf;
    rf_error err = {0};
    CHECK(parse(args, (int)(sizeof args / sizeof args[0]), &rf, &err) == RF_OK);
    rf_bench *b = NULL;
    g_stop = 0;
    CHECK(rf_bench_open(&rf.desc, &g_stop, &b, &err) == RF_OK);
    if (!b) return;
    char records[400];
    snprintf(records, sizeof records, "%s/records.jsonl", dir);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    g_main = pthread_self();
    g_records = records;
    pthread_t th;
    pthread_create(&th, NULL, interrupter, NULL);
    CHECK(rf_bench_run_all(b, &err) == RF_OK);
    pthread_join(th, NULL);
    CHECK(rf_bench_finish(b, &err) == RF_OK);
    rf_bench_close(b);
    rf_runfile_free(&rf);
    rf_report_opts ro;
    rf_report_opts_default(&ro);
    const char *dirs[1] = {dir};
    CHECK(rf_report_build(dirs, 1, &ro, NULL, NULL, &err) == RF_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    int lines = check_count_lines(path);
    CHECK_MSG(lines >= 5 && lines < 4001, "%d records after the interrupt", lines);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_error_t je;
    json_t *sum = json_load_file(path, 0, &je);
    CHECK(sum && json_is_true(json_object_get(sum, "interrupted")));
    json_decref(sum);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

static void expect_bad_json(const char *text, const char *needle) {
    rf_runfile rf;
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    rf_error err = {0};
    rf_status st = rf_runfile_parse_json("run.json", text, &rf, &err);
    CHECK_MSG(st == RF_ERR_ARG && strstr(err.msg, needle) && strstr(err.msg, "run.json"),
              "'%s' gave %d: %s", text, st, err.msg);
    rf_runfile_free(&rf);
}

static void test_bad_input(void) {
    expect_bad_json("{\"backends\": [{\"uri\": \"local\", \"prise\": {}}]}", "backends[0].prise");
    expect_bad_json(
        "{\"backends\": [{\"uri\": \"local\", \"price\": {\"usd_per_hour\": \"cheap\"}}]}",
        "backends[0].price.usd_per_hour: expected a number");
    expect_bad_json("{\"load\": {\"levels\": [1, 0]}}", "load.levels");
    expect_bad_json("{\"suites\": [\"speed\", \"sped\"]}", "unknown suite 'sped'");
    expect_bad_json("{\"backends\": [{\"name\": \"x\"}]}", "missing \"uri\"");
    expect_bad_json("{\"speed\": {\"runs\": 3,}}", "line 1");
    expect_bad_json("[1, 2]", "expected an object");

    rf_runfile rf;
    rf_error err = {0};
    /* an unknown scheme is refused when the run is described, before a directory is made */
    const char *a1[] = {"bench", "--backend", "x=ftp://host", "--suites", "probe"};
    CHECK(parse(a1, 5, &rf, &err) == RF_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "unknown scheme 'ftp'") != NULL, "%s", err.msg);
    rf_runfile_free(&rf);

    const char *a2[] = {"bench", "--levels", "1,x"};
    CHECK(parse(a2, 3, &rf, &err) == RF_ERR_ARG && strstr(err.msg, "--levels"));
    const char *a3[] = {"bench", "--aba", "onlyone"};
    CHECK(parse(a3, 3, &rf, &err) == RF_ERR_ARG && strstr(err.msg, "--aba"));

    /* a question file with a bad line is refused before anything runs, naming the line */
    char qpath[] = "/tmp/roofline-q-XXXXXX";
    int fd = mkstemp(qpath);
    const char *bad = "{\"id\":\"a\",\"category\":\"c\",\"prompt\":\"p\",\"answer\":\"1\","
                      "\"grader\":\"number\"}\n"
                      "{\"id\":\"b\",\"category\":\"c\",\"prompt\":\"p\",\"grader\":\"number\"}\n";
    ssize_t wr = write(fd, bad, strlen(bad));
    (void)wr;
    close(fd);
    const char *a4[] = {"bench", "--suites", "accuracy", "--questions", qpath};
    CHECK(parse(a4, 5, &rf, &err) == RF_OK);
    CHECK(rf_bench_preflight(&rf.desc, &err) != RF_OK);
    CHECK_MSG(strstr(err.msg, qpath) && strstr(err.msg, ":2"), "%s", err.msg);
    rf_runfile_free(&rf);
    remove(qpath);
}

/* The one "is this the in-process engine" test every module asks (scheme "local" exactly). */
static void test_local_uri(void) {
    struct {
        const char *uri, *model;
        bool local;
    } cases[] = {
        {"local", NULL, true},
        {"local:", NULL, true},
        {"local:smollm2-135m", "smollm2-135m", true},
        {"local:/m/a:b.gguf", "/m/a:b.gguf", true},
        {"localhost:8080", NULL, false},
        {"locale", NULL, false},
        {"loca", NULL, false},
        {"openai:http://local:1/v1", NULL, false},
        {NULL, NULL, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rf_backend_cfg c = {.uri = cases[i].uri};
        const char *m = rf_backend_local_model(&c);
        CHECK_MSG(rf_backend_is_local(&c) == cases[i].local, "uri '%s'",
                  cases[i].uri ? cases[i].uri : "(null)");
        CHECK_MSG(cases[i].model ? m && !strcmp(m, cases[i].model) : m == NULL, "uri '%s': '%s'",
                  cases[i].uri ? cases[i].uri : "(null)", m ? m : "(null)");
    }
}

int main(void) {
    test_local_uri();
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q8_0;
    s.n_ctx_train = 8192;
    const char *p = tiny_write_file(&s, "bench");
    CHECK(p != NULL);
    snprintf(g_model_uri, sizeof g_model_uri, "tiny=local:%s", p);
    char model_path[300];
    snprintf(model_path, sizeof model_path, "%s", p);
    test_bad_input();
    test_full_run();
    test_interrupt();
    remove(model_path);
    return check_summary("test_bench");
}
