/* test_report.c: the report recomputed from run directories written by hand, so every figure
 * has a known answer: a load level's TTFT, TPOT, duration, output tok/s and goodput under SLOs;
 * single-stream decode and n/E2E tok/s; $/M output tokens, $/month and the break-even against a
 * per-token backend; the roofline ceiling of the seed's unit slip (300 GB/s over 6.32 GiB = 44.2
 * tok/s, not 47) and the efficiency; two runs merged (a shared name becomes NAME@RUN); and bad
 * input: a torn last line, lines of another schema, a missing prices file, an unknown
 * accelerator, nothing measured: the report still renders, the missing parts unknown, never 0
 * or NaN, with a note naming the place. The section registry: ids unique, every section
 * renders something, tables grouped by section in the registry's order. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/records.h"
#include "check.h"
#include "report/report.h"
#include "report/runset.h"
#include "util/file.h"

static char g_tmp[64];

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* One request's record: sent at t_ms, first content ttft later, then n-1 more events gap ms
 * apart, done 1 ms after the last. */
static json_t *record(const char *suite, const char *backend, int level_index, int level, int index,
                      double t_ms, double ttft, int n, double gap, int seq) {
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_integer(RF_RECORD_SCHEMA));
    json_object_set_new(o, "run_id", json_string("00000000000000aa"));
    json_object_set_new(o, "session", json_integer(0));
    json_object_set_new(o, "seq", json_integer(seq));
    json_object_set_new(o, "suite", json_string(suite));
    json_object_set_new(o, "backend", json_string(backend));
    json_object_set_new(o, "model", json_string("m"));
    char item[32];
    snprintf(item, sizeof item, "%s %d", suite, index);
    json_object_set_new(o, "item", json_string(item));
    json_object_set_new(o, "level", json_integer(level));
    json_object_set_new(o, "level_index", json_integer(level_index));
    json_object_set_new(o, "index", json_integer(index));
    json_object_set_new(o, "warmup", json_false());
    json_object_set_new(o, "status", json_string("ok"));
    json_object_set_new(o, "error_class", json_string("ok"));
    json_object_set_new(o, "http_status", json_integer(200));
    json_object_set_new(o, "resends", json_integer(0));
    double last = t_ms + ttft + (n - 1) * gap;
    json_object_set_new(o, "t_intended_ms", json_real(t_ms));
    json_object_set_new(o, "t_sent_ms", json_real(t_ms));
    json_object_set_new(o, "t_first_byte_ms", json_real(t_ms + ttft));
    json_object_set_new(o, "t_first_content_ms", json_real(t_ms + ttft));
    json_object_set_new(o, "t_last_content_ms", json_real(last));
    json_object_set_new(o, "t_done_ms", json_real(last + 1));
    json_object_set_new(o, "max_tokens", json_integer(n));
    json_object_set_new(o, "prompt_tokens_server", json_integer(20));
    json_object_set_new(o, "completion_tokens_server", json_integer(n));
    json_object_set_new(o, "completion_tokens_client", json_integer(-1));
    json_object_set_new(o, "finish_reason", json_string("length"));
    json_t *ev = json_array(), *evk = json_array();
    for (int k = 0; k < n; k++) {
        json_array_append_new(ev, json_real(ttft + k * gap));
        json_array_append_new(evk, json_integer(1));
    }
    json_object_set_new(o, "events_ms", ev);
    json_object_set_new(o, "events_tokens", evk);
    json_object_set_new(o, "reply_bytes", json_integer(0));
    return o;
}

static void append(FILE *f, json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT);
    fprintf(f, "%s\n", s);
    free(s);
    json_decref(o);
}

/* A run directory: run.json from desc_json, and the standard records of backend "b":
 * level c=2 with 4 requests sent 10 ms apart (TTFT 50, 11 tokens 10 ms apart), one speed run
 * of 512 tokens (TTFT 100, 10 ms apart). */
static void make_run(const char *dir, const char *desc_json, bool torn, bool old_line) {
    mkdir(dir, 0755);
    char path[256];
    snprintf(path, sizeof path, "%s/run.json", dir);
    write_text(path, desc_json);
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    FILE *f = fopen(path, "w");
    int seq = 0;
    append(f, record("speed", "b", 0, 0, 0, 0, 100, 512, 10, seq++));
    for (int i = 0; i < 4; i++)
        append(f, record("load", "b", 0, 2, i, 1000 + 10 * i, 50, 11, 10, seq++));
    if (old_line) fputs("{\"suite\":\"load\",\"status\":\"ok\"}\n", f); /* an older schema */
    if (torn) fputs("{\"schema\":1,\"run_id\":\"00000000000000aa\",\"seq\":99,\"sui", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/runlog.jsonl", dir);
    write_text(path, "{\"kind\":\"session\",\"session\":0,\"run_id\":\"00000000000000aa\","
                     "\"started\":\"2026-12-01T00:00:00Z\",\"resumed\":false}\n"
                     "{\"kind\":\"session_end\",\"session\":0,\"interrupted\":false,"
                     "\"records\":5}\n");
}

static double num(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

static char *read_all(const char *path) {
    char *t = NULL;
    size_t n;
    rf_error e = {0};
    if (rf_read_file(path, 16u << 20, &t, &n, &e)) return strdup("");
    return t;
}

/* rf_report_build on one run directory with the default options; NULL (a failed check) when
 * it fails. */
static json_t *report_of(const char *dir) {
    rf_report_opts o;
    rf_report_opts_default(&o);
    const char *dirs[1] = {dir};
    json_t *sum = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_report_build(dirs, 1, &o, NULL, &sum, &err) == RF_OK, "%s", err.msg);
    return sum;
}

static const char k_desc[] =
    "{\"backends\": [{\"name\": \"b\", \"uri\": \"openai:http://127.0.0.1:9/v1\", \"model\": \"m\","
    " \"price\": {\"usd_per_hour\": 0.8048}, \"hardware\": {\"name\": \"NVIDIA L4\"},"
    " \"bytes_per_token\": 6786048327.68},"
    " {\"name\": \"api\", \"uri\": \"openai:http://127.0.0.1:9/v1\", \"model\": \"m\","
    " \"price\": {\"usd_per_m_input\": 0.035, \"usd_per_m_output\": 0.14}}],"
    " \"suites\": [\"speed\", \"load\"], \"speed\": {\"runs\": 1, \"max_tokens\": 512},"
    " \"load\": {\"levels\": [2], \"requests\": 4, \"max_tokens\": 11, \"warmup\": 0},"
    " \"slo\": {\"ttft_ms\": 60, \"tpot_ms\": 10}, \"membw\": false}";

static void test_figures(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/run1", g_tmp);
    make_run(dir, k_desc, false, false);
    json_t *sum = report_of(dir);
    if (!sum) return;
    const json_t *lv = json_array_get(
        json_object_get(json_object_get(json_object_get(sum, "load"), "b"), "levels"), 0);
    CHECK_NEAR(num(lv, "ttft_ms", "p50"), 50, 1e-6);
    CHECK_NEAR(num(lv, "tpot_ms", "p50"), 10, 1e-6);         /* (150 - 50) / 10 */
    CHECK_NEAR(num(lv, "tok_s_per_user", "p50"), 100, 1e-6); /* 1 / TPOT */
    CHECK_NEAR(num(lv, "duration_s", NULL), 0.181, 1e-9);    /* 1000 -> 1030 + 151 */
    CHECK_NEAR(num(lv, "output_tok_s", NULL), 44 / 0.181, 1e-6);
    CHECK_NEAR(num(lv, "goodput", "goodput_req_s"), 4 / 0.181, 1e-6); /* all within the SLOs */
    CHECK(json_is_true(json_object_get(json_object_get(lv, "goodput"), "meets")));
    CHECK(num(json_object_get(json_object_get(sum, "load"), "b"), "largest_level_meeting_slo",
              NULL) == 2);
    const json_t *sp = json_object_get(json_object_get(sum, "speed"), "b");
    CHECK_NEAR(num(sp, "decode_tok_s", "median"), 100, 1e-6); /* 511 / 5.11 s */
    CHECK_NEAR(num(sp, "e2e_tok_s", "median"), 512 / 5.21, 1e-6);
    /* cost: g6's price at the measured rates */
    const json_t *c =
        json_object_get(json_object_get(json_object_get(sum, "cost"), "backends"), "b");
    CHECK(!strcmp(json_string_value(json_object_get(c, "kind")), "instance"));
    CHECK_NEAR(num(c, "usd_per_month", NULL), 587.504, 1e-9);
    CHECK_NEAR(num(json_object_get(c, "single_stream"), "usd_per_m_output", NULL),
               0.8048 / (512 / 5.21 * 3600) * 1e6, 1e-9);
    const json_t *cl = json_array_get(json_object_get(c, "levels"), 0);
    CHECK_NEAR(num(cl, "usd_per_m_output", NULL), 0.8048 / (44 / 0.181 * 3600) * 1e6, 1e-9);
    const json_t *be = json_array_get(json_object_get(c, "break_even"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(be, "against")), "api"));
    CHECK_NEAR(num(be, "break_even_tok_s", NULL), 709.7, 0.05); /* seed 000's 710 */
    /* roofline: 300 GB/s (the L4 from the table) over 6.32 GiB: 44.2 tok/s, not 47 */
    const json_t *r = json_object_get(json_object_get(sum, "roofline"), "b");
    CHECK_NEAR(num(r, "bandwidth_gbs", NULL), 300, 0);
    CHECK_NEAR(num(r, "ceiling_tok_s", NULL), 300e9 / (6.32 * 1073741824.0), 1e-9);
    CHECK(round(num(r, "ceiling_tok_s", NULL) * 10) / 10 == 44.2);
    CHECK(strstr(json_string_value(json_object_get(r, "bandwidth_source")), "NVIDIA L4"));
    /* the per-token backend has no bandwidth: unknown, never 0 */
    const json_t *ra = json_object_get(json_object_get(sum, "roofline"), "api");
    CHECK(json_is_null(json_object_get(ra, "ceiling_tok_s")) &&
          json_is_null(json_object_get(ra, "bandwidth_gbs")));
    /* the renderings: the same figures in report.md, report.html and the CSVs */
    char path[256];
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_all(path);
    CHECK_MSG(strstr(md, "| b | c=2 | 4 | 0 | 243.1 |") != NULL, "report.md:\n%s", md);
    CHECK_MSG(strstr(md, "| b | 300.00 | 6786.0 | 44.2 |") != NULL, "report.md:\n%s", md);
    CHECK(strstr(md, "| b | api | 0.315 | 709.7 |") != NULL);
    CHECK(!strstr(md, "nan") && !strstr(md, "NaN"));
    free(md);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *html = read_all(path);
    CHECK(strstr(html, "id=\"c-throughput\"") && strstr(html, "id=\"t-load\"") &&
          strstr(html, ">243.1<") && !strstr(html, "<script") && !strstr(html, "src=") &&
          !strstr(html, "href=") && !strstr(html, "<link"));
    free(html);
    snprintf(path, sizeof path, "%s/csv/load.csv", dir);
    char *csv = read_all(path);
    CHECK_MSG(strstr(csv, "b,c=2,4,0,243.09392265193") != NULL, "load.csv:\n%s", csv);
    free(csv);
    json_decref(sum);

    /* an SLO that fails: no request is good, no level meets it */
    rf_report_opts o;
    rf_report_opts_default(&o);
    o.slo.tpot_ms = 9;
    o.slo.ttft_ms = 0;
    const char *dirs[1] = {dir};
    rf_error err = {0};
    CHECK(rf_report_build(dirs, 1, &o, NULL, &sum, &err) == RF_OK);
    lv = json_array_get(
        json_object_get(json_object_get(json_object_get(sum, "load"), "b"), "levels"), 0);
    CHECK(num(lv, "goodput", "good") == 0 &&
          json_is_false(json_object_get(json_object_get(lv, "goodput"), "meets")));
    CHECK(json_is_null(json_object_get(json_object_get(json_object_get(sum, "load"), "b"),
                                       "largest_level_meeting_slo")));
    json_decref(sum);
}

/* A local backend's ceiling: the median of the run's bandwidth samples (the start's "machine",
 * "membw" ones later; a failed sample and a non-positive one do not count). */
static void test_membw_samples(void) {
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "%s/run-membw", g_tmp);
    make_run(dir,
             "{\"backends\": [{\"name\": \"b\", \"uri\": \"local:/nonexistent.gguf\","
             " \"bytes_per_token\": 1e9}], \"suites\": [\"speed\", \"load\"],"
             " \"speed\": {\"runs\": 1, \"max_tokens\": 512},"
             " \"load\": {\"levels\": [2], \"requests\": 4, \"max_tokens\": 11, \"warmup\": 0}}",
             false, false);
    snprintf(path, sizeof path, "%s/runlog.jsonl", dir);
    write_text(
        path, "{\"kind\":\"session\",\"session\":0,\"run_id\":\"00000000000000aa\"}\n"
              "{\"kind\":\"machine\",\"session\":0,\"membw_gbs\":20.0,\"membw_repeats\":5,"
              "\"membw_bytes\":536870912,\"cpu\":\"x\"}\n"
              "{\"kind\":\"membw\",\"session\":0,\"when\":\"precision: a\",\"membw_gbs\":30.0}\n"
              "{\"kind\":\"membw\",\"session\":0,\"when\":\"precision: b\",\"membw_error\":\"x\"}\n"
              "{\"kind\":\"membw\",\"session\":0,\"when\":\"precision: c\",\"membw_gbs\":-1}\n"
              "{\"kind\":\"membw\",\"session\":0,\"when\":\"end\",\"membw_gbs\":25.0}\n"
              "{\"kind\":\"session_end\",\"session\":0,\"interrupted\":false}\n");
    json_t *sum = report_of(dir);
    if (!sum) return;
    const json_t *r = json_object_get(json_object_get(sum, "roofline"), "b");
    CHECK_NEAR(num(r, "bandwidth_gbs", NULL), 25.0, 0);
    CHECK_NEAR(num(r, "ceiling_tok_s", NULL), 25.0, 1e-9); /* 25e9 B/s over 1e9 B per token */
    const char *src = json_string_value(json_object_get(r, "bandwidth_source"));
    CHECK_MSG(src && strstr(src, "median of 3 samples (20.0 to 30.0 GB/s)") &&
                  strstr(src, "5 reads of 512 MiB"),
              "%s", src ? src : "(null)");
    json_decref(sum);
}

static void test_merge_and_bad_input(void) {
    char d1[128], d2[128], out[128];
    snprintf(d1, sizeof d1, "%s/monday", g_tmp);
    snprintf(d2, sizeof d2, "%s/tuesday", g_tmp);
    snprintf(out, sizeof out, "%s/merged", g_tmp);
    make_run(d1, k_desc, false, false);
    /* the B run: a torn last line, a line of an older schema, an unknown accelerator */
    const char *desc2 =
        "{\"backends\": [{\"name\": \"b\", \"uri\": \"openai:http://127.0.0.1:9/v1\", \"model\":"
        " \"m\", \"hardware\": {\"name\": \"Quantum Toaster 9000\"}}],"
        " \"suites\": [\"speed\", \"load\"], \"speed\": {\"runs\": 1, \"max_tokens\": 512},"
        " \"load\": {\"levels\": [2], \"requests\": 4, \"max_tokens\": 11, \"warmup\": 0}}";
    make_run(d2, desc2, true, true);
    rf_report_opts o;
    rf_report_opts_default(&o);
    o.prices_path = "/nonexistent/prices.json";
    const char *dirs[2] = {d1, d2};
    json_t *sum = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_report_build(dirs, 2, &o, out, &sum, &err) == RF_OK, "%s", err.msg);
    if (!sum) return;
    const json_t *load = json_object_get(sum, "load");
    CHECK(json_object_get(load, "b@monday") && json_object_get(load, "b@tuesday"));
    CHECK(json_object_get(json_object_get(sum, "backends"), "api")); /* a unique name stays */
    const json_t *runs = json_object_get(sum, "runs");
    const json_t *r2 = json_array_get(runs, 1);
    CHECK(json_integer_value(json_object_get(r2, "skipped")) == 1);
    CHECK(json_is_true(json_object_get(r2, "torn_last_line")));
    CHECK(json_integer_value(json_object_get(r2, "requests")) == 5);
    /* the notes name the places */
    char *notes = json_dumps(json_object_get(sum, "notes"), 0);
    CHECK_MSG(strstr(notes, "tuesday/records.jsonl:6") && strstr(notes, "/nonexistent/prices.json"),
              "notes: %s", notes);
    free(notes);
    /* no prices file: cost unknown, not 0 */
    const json_t *c =
        json_object_get(json_object_get(json_object_get(sum, "cost"), "backends"), "b@tuesday");
    CHECK(!strcmp(json_string_value(json_object_get(c, "kind")), "unknown"));
    /* b@monday has its price in the run file */
    c = json_object_get(json_object_get(json_object_get(sum, "cost"), "backends"), "b@monday");
    CHECK(!strcmp(json_string_value(json_object_get(c, "kind")), "instance"));
    const json_t *rt = json_object_get(json_object_get(sum, "roofline"), "b@tuesday");
    CHECK(json_is_null(json_object_get(rt, "bandwidth_gbs")));
    CHECK(strstr(json_string_value(json_object_get(rt, "bandwidth_source")), "unknown"));
    char path[256];
    snprintf(path, sizeof path, "%s/report.md", out);
    char *md = read_all(path);
    CHECK(strstr(md, "unknown") && !strstr(md, "nan"));
    free(md);
    json_decref(sum);

    /* a record whose event time is past the limit (a fuzzed 5.4e46 ms read as INT64_MIN and
     * overflowed the gap arithmetic) is left out and named; the others count */
    char d5[128];
    snprintf(d5, sizeof d5, "%s/far", g_tmp);
    make_run(d5, k_desc, false, false);
    snprintf(path, sizeof path, "%s/records.jsonl", d5);
    FILE *f = fopen(path, "a");
    json_t *far = record("load", "b", 0, 2, 4, 1040, 50, 11, 10, 5);
    json_array_set_new(json_object_get(far, "events_ms"), 0, json_real(5.4e46));
    append(f, far);
    fclose(f);
    const char *fars[1] = {d5};
    rf_report_opts_default(&o);
    CHECK_MSG(rf_report_build(fars, 1, &o, NULL, &sum, &err) == RF_OK, "%s", err.msg);
    if (sum) {
        const json_t *r5 = json_array_get(json_object_get(sum, "runs"), 0);
        const char *w = json_string_value(json_object_get(r5, "warning"));
        CHECK(json_integer_value(json_object_get(r5, "skipped")) == 1);
        CHECK_MSG(w && strstr(w, "far/records.jsonl:6") && strstr(w, "events_ms") &&
                      strstr(w, "1e12"),
                  "warning: %s", w ? w : "(none)");
        /* the four load requests recorded before it still count */
        const json_t *b = json_object_get(json_object_get(sum, "load"), "b");
        char *txt = json_dumps(b, JSON_COMPACT);
        CHECK_MSG(txt && strstr(txt, "\"ok\":4"), "load: %s", txt ? txt : "(none)");
        free(txt);
        json_decref(sum);
    }

    /* nothing measured at all: the report renders, every figure unknown */
    char d3[128];
    snprintf(d3, sizeof d3, "%s/empty", g_tmp);
    mkdir(d3, 0755);
    snprintf(path, sizeof path, "%s/run.json", d3);
    write_text(path, "{\"suites\": [\"load\"], \"membw\": false}");
    const char *one[1] = {d3};
    rf_report_opts_default(&o);
    CHECK_MSG(rf_report_build(one, 1, &o, NULL, &sum, &err) == RF_OK, "%s", err.msg);
    CHECK(json_is_true(json_object_get(sum, "interrupted"))); /* no session ended */
    json_decref(sum);
    /* not a run directory: a clear error */
    const char *none[1] = {"/nonexistent/run"};
    CHECK(rf_report_build(none, 1, &o, NULL, NULL, &err) != RF_OK &&
          strstr(err.msg, "/nonexistent/run"));
    snprintf(path, sizeof path, "%s/norun", g_tmp);
    mkdir(path, 0755);
    const char *norun[1] = {path};
    CHECK(rf_report_build(norun, 1, &o, NULL, NULL, &err) != RF_OK && strstr(err.msg, "run.json"));
}

/* The section registry (section.h): every section has a unique id, a title and something to
 * render; sections with charts have a rank; the tables of a summary come out grouped by section,
 * in the registry's order, each stamped with the section that built it. */
static void test_sections(void) {
    int n = 0;
    const rf_report_section *const *sec = rf_report_sections(&n);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        CHECK(sec[i]->id && *sec[i]->id && sec[i]->title && *sec[i]->title);
        CHECK_MSG(sec[i]->tables || sec[i]->charts || sec[i]->html, "%s renders nothing",
                  sec[i]->id);
        CHECK_MSG(!sec[i]->charts || sec[i]->chart_rank > 0, "%s: charts without a rank",
                  sec[i]->id);
        for (int j = 0; j < i; j++)
            CHECK_MSG(strcmp(sec[i]->id, sec[j]->id), "%s twice", sec[i]->id);
    }
    json_error_t je;
    json_t *sum = json_loads("{\"run\": {\"dir\": \"d\"}, \"backends\": {\"a\": {\"uri\": "
                             "\"u\"}}, \"speed\": {\"a\": {\"ok\": 1, \"runs\": 1}}, "
                             "\"probe\": {\"a\": {\"ok\": true, \"answer\": \"x\"}}}",
                             0, &je);
    CHECK(sum != NULL);
    rf_tables ts;
    rf_error err = {0};
    CHECK(rf_tables_build(sum, &ts, &err) == RF_OK);
    CHECK(ts.n == 3 && rf_tables_find(&ts, "backends") && rf_tables_find(&ts, "speed") &&
          rf_tables_find(&ts, "probe"));
    for (int t = 0; t < ts.n; t++) {
        CHECK(ts.t[t].section >= 0 && ts.t[t].section < n);
        CHECK(!strcmp(sec[ts.t[t].section]->id, ts.t[t].id));
        if (t) CHECK(ts.t[t].section > ts.t[t - 1].section);
    }
    rf_tables_free(&ts);
    json_decref(sum);
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/roofline-report-XXXXXX");
    if (!mkdtemp(g_tmp)) return 1;
    test_figures();
    test_membw_samples();
    test_merge_and_bad_input();
    test_sections();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd)) fprintf(stderr, "cannot remove %s\n", g_tmp);
    return check_summary("test_report");
}
