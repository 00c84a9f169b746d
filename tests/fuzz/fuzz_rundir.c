/* fuzz_rundir.c: the libFuzzer target for a run directory read back by the report
 * (src/report/runset.c, analyze.c, econ.c, precision.c, tables.c, the renderers) and the
 * resume path's record reader (rf_record_restore, src/bench/records.c, which the analysis calls
 * on every record).
 *
 * The input is KIND RECORDS \0 RUNLOG: KIND (the first byte, modulo the count) picks one of the
 * run descriptions below as run.json (a fake OpenAI backend through every suite with an hourly
 * price; local backends whose model files do not exist; an A/B/A run; a precision study; a
 * Poisson load with goodput SLOs), so the bytes go to the records and the run log, not to the run
 * file (fuzz_runfile has that). RECORDS becomes records.jsonl and RUNLOG runlog.jsonl.
 *
 * The report reads a directory, so the three files are written into one scratch directory of
 * this process (made once under TMPDIR, rewritten for every input: nothing is carried from one
 * input to the next). Questions, the agent task, prices and accelerators come from the project's
 * data directory, as a run's defaults do.
 *
 * Properties: the run set loads, or the error names the directory or one of its files; a loaded
 * run never counts more records than lines; the analysis gives a summary or an error with a
 * message; the summary serialises to JSON that parses again; the tables build, and the Markdown,
 * HTML and every CSV render. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "report/report.h"
#include "report/runset.h"
#include "util/json_dump.h"

#define SUITES_ALL "\"suites\": [\"speed\", \"load\", \"accuracy\", \"agent\", \"probe\"]"

static const char *const k_runs[] = {
    /* a fake OpenAI backend through every suite, with an hourly price */
    "{\"backends\": [{\"name\": \"f\", \"uri\": \"openai:http://127.0.0.1:9/v1\", "
    "\"price\": {\"usd_per_hour\": 1.5}}], " SUITES_ALL ", "
    "\"speed\": {\"runs\": 2, \"max_tokens\": 8}, "
    "\"load\": {\"levels\": [1, 4], \"requests\": 4, \"max_tokens\": 8, \"warmup\": 1}}",
    /* two local backends (their model files do not exist: facts unknown), one per token priced */
    "{\"backends\": [{\"name\": \"t\", \"uri\": \"local:/nonexistent/m.gguf\", \"threads\": 2}, "
    "{\"name\": \"g\", \"uri\": \"openai:http://127.0.0.1:9/v1\", \"model\": \"m\", "
    "\"price\": {\"usd_per_m_input\": 0.1, \"usd_per_m_output\": 0.4}}], " SUITES_ALL ", "
    "\"load\": {\"levels\": [1, 16], \"requests\": 16, \"warmup\": 0}}",
    /* A/B/A on speed and load */
    "{\"backends\": [{\"name\": \"a\", \"uri\": \"openai:http://127.0.0.1:9/v1\"}, "
    "{\"name\": \"b\", \"uri\": \"openai:http://127.0.0.1:10/v1\"}], "
    "\"aba\": {\"a\": \"a\", \"b\": \"b\", \"suites\": [\"speed\", \"load\"]}, "
    "\"speed\": {\"runs\": 2, \"max_tokens\": 8}, \"load\": {\"levels\": [1, 2], \"requests\": 2}}",
    /* a precision study as run.json saves one (the variants already expanded) */
    "{\"backends\": [{\"name\": \"prec/shipped\", \"uri\": \"local:/nonexistent/m.gguf\", "
    "\"variant\": \"shipped\"}, {\"name\": \"prec/q8_0\", \"uri\": "
    "\"local:/nonexistent/m-q8_0.gguf\", \"variant\": \"q8_0\"}, {\"name\": \"prec/widen\", "
    "\"uri\": \"local:/nonexistent/m.gguf\", \"variant\": \"widen\", \"widen\": true}], "
    "\"precision\": {\"model\": \"/nonexistent/m.gguf\", \"variants\": [\"q8_0\", \"widen\"], "
    "\"suites\": [\"speed\", \"load\", \"accuracy\"]}, \"suites\": [\"precision\"], "
    "\"load\": {\"levels\": [1, 2], \"requests\": 2}}",
    /* a Poisson load with goodput SLOs */
    "{\"backends\": [{\"name\": \"r\", \"uri\": \"openai:http://127.0.0.1:9/v1\", "
    "\"price\": {\"usd_per_hour\": 0.5}}], \"suites\": [\"load\"], "
    "\"load\": {\"rate\": 2.5, \"rate_requests\": 8, \"max_concurrency\": 4}, "
    "\"slo\": {\"ttft_ms\": 500, \"tpot_ms\": 50, \"e2e_ms\": 8000}}",
};
#define N_RUNS (sizeof k_runs / sizeof k_runs[0])

static char g_dir[256]; /* the scratch directory (made once; its files rewritten per input) */

static void put(const char *name, const void *data, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    REQUIRE(len == 0 || fwrite(data, 1, len, f) == len);
    REQUIRE(fclose(f) == 0);
}

static void cleanup(void) {
    static const char *const names[] = {"run.json", "records.jsonl", "runlog.jsonl"};
    char path[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
}

static void render(json_t *sum) {
    char *text = rf_json_dumps(sum, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    REQUIRE(text != NULL);
    json_error_t je;
    json_t *back = json_loads(text, 0, &je);
    REQUIRE(back != NULL); /* what summary.json holds is JSON */
    json_decref(back);
    free(text);
    rf_tables ts;
    rf_error err = {0};
    REQUIRE(rf_tables_build(sum, &ts, &err) == RF_OK);
    char *md = NULL;
    size_t md_len = 0;
    FILE *f = open_memstream(&md, &md_len);
    REQUIRE(f != NULL);
    rf_report_markdown(&ts, f);
    REQUIRE(fclose(f) == 0);
    free(md);
    rf_buf html, csv;
    rf_buf_init(&html, 0);
    rf_buf_init(&csv, 0);
    REQUIRE(rf_report_html(sum, &ts, &html) == RF_OK && html.len > 0);
    for (int i = 0; i < ts.n; i++) {
        rf_buf_reset(&csv);
        REQUIRE(rf_report_csv(&ts.t[i], &csv) == RF_OK);
    }
    rf_buf_free(&html);
    rf_buf_free(&csv);
    rf_tables_free(&ts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/roofline-fuzz-rundir-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        REQUIRE(mkdtemp(g_dir) != NULL);
        atexit(cleanup);
    }
    if (size < 1) return 0;
    const char *run = k_runs[data[0] % N_RUNS];
    const uint8_t *p = data + 1;
    size_t n = size - 1, rec_len, log_len;
    const uint8_t *recs = fuzz_part(&p, &n, &rec_len);
    const uint8_t *log = fuzz_part(&p, &n, &log_len);
    put("run.json", run, strlen(run));
    put("records.jsonl", recs, rec_len);
    put("runlog.jsonl", log, log_len);

    const char *dirs[1] = {g_dir};
    rf_runset rs;
    rf_error err = {0};
    rf_status st = rf_runset_load(dirs, 1, &rs, &err);
    if (st) {
        REQUIRE(fuzz_msg_ok(err.msg, sizeof err.msg, g_dir));
        return 0;
    }
    REQUIRE(rs.n == 1);
    const rf_run *r = &rs.runs[0];
    REQUIRE(r->skipped <= r->lines && (int64_t)json_array_size(r->recs) <= r->lines);
    rf_report_opts o;
    rf_report_opts_default(&o);
    json_t *sum = rf_analyze(&rs, &o, &err);
    rf_runset_free(&rs);
    if (!sum) {
        REQUIRE(err.msg[0] != 0);
        return 0;
    }
    render(sum);
    json_decref(sum);
    return 0;
}
