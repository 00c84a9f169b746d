/* test_bench_fake.c: the bench against the fake OpenAI server, in-process: a clean load run
 * measures the programmed schedule (TTFT, per-token gap; bounds widened by the server's own
 * lateness) and renders the scoreboard of tests/data/scoreboard_golden.txt (timing cells
 * normalized); then, for every fault the server can inject, a run where half the requests are
 * faulted: every request still has exactly one record and the run goes on to the end. The
 * transport faults (refuse, 500, 429, stall, truncate, invalid_json, error_event) give the
 * faulted requests error records of the right class; wrong_tool_call and wrong_tool_name are
 * well-formed streams whose tool call is bad, so in the load suite they are successes whose
 * records say finish_reason "tool_calls" (one per injected fault): judging the call is the
 * agent suite's grading (tools/stress/fake_truth.py runs it against these faults). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "fake/fake_server.h"
#include "bench/runfile.h"
#include "report/report.h"
#include "check.h"
#include "util/buf.h"
#include "util/file.h"

/* Runs one load level of n requests at concurrency c against the fake server; returns the
 * summary (caller frees) and fills per-class record counts. */
static int g_tool_finishes; /* records of the last run with finish_reason "tool_calls" */

static json_t *run_md(int port, int c, int n, int tokens, double stall_s, const char *extra,
                      int counts[RF_BK_ERROR_COUNT], int *records, char **report_md) {
    char dir[] = "/tmp/roofline-bfake-XXXXXX";
    if (!mkdtemp(dir)) return NULL;
    char uri[128], runjson[1024];
    snprintf(uri, sizeof uri, "openai:http://127.0.0.1:%d/v1", port);
    snprintf(runjson, sizeof runjson,
             "{\"backends\": [{\"name\": \"fake\", \"uri\": \"%s\", \"stall_s\": %g, "
             "\"timeout_s\": 20%s%s}], \"suites\": [\"load\"], \"load\": {\"levels\": [%d], "
             "\"requests\": %d, \"max_tokens\": %d, \"warmup\": 0}, \"out\": \"%s\"}",
             uri, stall_s, extra ? ", \"extra_body\": " : "", extra ? extra : "", c, n, tokens,
             dir);
    rf_runfile rf;
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    rf_error err = {0};
    json_t *sum = NULL;
    CHECK_MSG(rf_runfile_parse_json("run.json", runjson, &rf, &err) == RF_OK, "%s", err.msg);
    rf.desc.progress = false;
    volatile sig_atomic_t stop = 0;
    rf_bench *b = NULL;
    CHECK_MSG(rf_bench_open(&rf.desc, &stop, &b, &err) == RF_OK, "%s", err.msg);
    if (b) {
        CHECK_MSG(rf_bench_run_all(b, &err) == RF_OK, "%s", err.msg);
        CHECK(rf_bench_finish(b, &err) == RF_OK);
        rf_bench_close(b);
        /* the figures come from the run directory, as `roofline report` computes them */
        rf_report_opts ro;
        rf_report_opts_default(&ro);
        const char *dirs[1] = {dir};
        CHECK_MSG(rf_report_build(dirs, 1, &ro, NULL, &sum, &err) == RF_OK, "report: %s", err.msg);
    }
    rf_runfile_free(&rf);
    char path[256];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    memset(counts, 0, sizeof(int) * RF_BK_ERROR_COUNT);
    *records = 0;
    g_tool_finishes = 0;
    FILE *f = fopen(path, "r");
    char line[1 << 16];
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        const char *cls = json_string_value(json_object_get(o, "error_class"));
        for (int k = 0; cls && k < RF_BK_ERROR_COUNT; k++)
            if (!strcmp(cls, rf_bk_error_name((rf_bk_error)k))) counts[k]++;
        const char *fin = json_string_value(json_object_get(o, "finish_reason"));
        g_tool_finishes += fin && !strcmp(fin, "tool_calls");
        (*records)++;
        json_decref(o);
    }
    if (f) fclose(f);
    if (report_md) {
        snprintf(path, sizeof path, "%s/report.md", dir);
        size_t len = 0;
        *report_md = NULL;
        rf_error rerr = {0};
        CHECK_MSG(rf_read_file(path, 1 << 20, report_md, &len, &rerr) == RF_OK, "%s", rerr.msg);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    CHECK(system(path) == 0);
    return sum;
}

static json_t *run(int port, int c, int n, int tokens, double stall_s, const char *extra,
                   int counts[RF_BK_ERROR_COUNT], int *records) {
    return run_md(port, c, n, tokens, stall_s, extra, counts, records, NULL);
}

/* The scoreboard with what varies from run to run replaced: the run directory and time in its
 * first lines ("RUN", "TIME"), the fake server's port ("PORT"), every table cell that is a
 * number with a decimal point ("#": times and rates, measured), and the client-bound flag and
 * note (they say the client's loop ran late: the machine's load); what is left (sections,
 * column names, rows, counts of requests and errors, "unknown" cells and notes) is fixed by the
 * run. */
static void normalize_md(const char *md, rf_buf *out) {
    rf_buf_reset(out);
    for (const char *l = md; *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        if (!strncmp(l, "**client-bound**",
                     16)) { /* the client's own lateness: load, not the run */
            l += n + (e ? 1 : 0);
            if (*l == '\n') l++; /* and the blank line after the note */
            continue;
        }
        if (!strncmp(l, "run `", 5)) {
            rf_buf_append_str(out, "run `RUN`, TIME");
        } else if (l[0] == '|') {
            const char *c = l; /* cells lie between consecutive '|' */
            const char *next;
            while ((next = memchr(c + 1, '|', (size_t)(l + n - c - 1))) != NULL) {
                char cell[512];
                size_t cl = (size_t)(next - c - 1) < sizeof cell - 1 ? (size_t)(next - c - 1)
                                                                     : sizeof cell - 1;
                memcpy(cell, c + 1, cl);
                cell[cl] = 0;
                char *t = cell;
                while (*t == ' ') t++;
                char *z = t + strlen(t);
                while (z > t && z[-1] == ' ') *--z = 0;
                char *flag = strstr(t, " (client-bound)");
                if (flag) memmove(flag, flag + 15, strlen(flag + 15) + 1);
                char *end = NULL;
                strtod(t, &end);
                bool number = *t && end && *end == 0 && strchr(t, '.') != NULL;
                char *port = strstr(t, "127.0.0.1:");
                rf_buf_append_str(out, "| ");
                if (number) {
                    rf_buf_append_str(out, "#");
                } else if (port) {
                    rf_buf_append(out, t, (size_t)(port - t) + 10);
                    rf_buf_append_str(out, "PORT");
                    const char *after = port + 10;
                    while (*after >= '0' && *after <= '9') after++;
                    rf_buf_append_str(out, after);
                } else {
                    rf_buf_append_str(out, t);
                }
                rf_buf_append_str(out, " ");
                c = next;
            }
            rf_buf_append_str(out, "|");
        } else {
            rf_buf_append(out, l, n);
        }
        rf_buf_append_str(out, "\n");
        l += n + (e ? 1 : 0);
    }
    rf_buf_terminate(out);
}

/* The normalized scoreboard of a fixed run against tests/data/scoreboard_golden.txt (with
 * ROOFLINE_UPDATE_GOLDEN=1 in the environment, written there instead). */
static void check_golden(const char *md) {
    rf_buf norm;
    rf_buf_init(&norm, 0);
    normalize_md(md ? md : "", &norm);
    char path[512];
    snprintf(path, sizeof path, "%s/scoreboard_golden.txt",
             getenv("ROOFLINE_TEST_DATA") ? getenv("ROOFLINE_TEST_DATA") : "tests/data");
    if (getenv("ROOFLINE_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        CHECK(f && fwrite(norm.data, 1, norm.len, f) == norm.len);
        if (f) fclose(f);
    }
    char *want = NULL;
    size_t len = 0;
    rf_error err = {0};
    CHECK_MSG(rf_read_file(path, 1 << 20, &want, &len, &err) == RF_OK, "%s", err.msg);
    bool same = want && len == norm.len && !memcmp(want, norm.data, len);
    CHECK_MSG(same, "the scoreboard differs from %s; normalized, it is:\n%s", path,
              (const char *)norm.data);
    free(want);
    rf_buf_free(&norm);
}

static double level_stat(json_t *sum, const char *key, const char *q) {
    json_t *lv = json_array_get(
        json_object_get(json_object_get(json_object_get(sum, "load"), "fake"), "levels"), 0);
    json_t *x = q ? json_object_get(json_object_get(lv, key), q) : json_object_get(lv, key);
    return json_number_value(x);
}

int main(void) {
    rf_fake_params p = rf_fake_default_params();
    p.ttft_ms = 40;
    p.gap_ms = 8;
    p.stall_ms = 3000;
    rf_fake *fk = NULL;
    rf_error err = {0};
    CHECK(rf_fake_start(&p, &fk, &err) == RF_OK);
    if (!fk) return check_summary("test_bench_fake");
    int counts[RF_BK_ERROR_COUNT], records;

    /* clean run: the schedule comes back, within a base tolerance widened by the server's own
     * lateness over the same run (its 99th percentile chunk lateness), so a loaded machine is
     * not a failure; the machine's absolute punctuality is tools/stress/fake_truth.py's figure */
    char *md = NULL;
    json_t *sum = run_md(rf_fake_port(fk), 4, 8, 16, 0, NULL, counts, &records, &md);
    CHECK(records == 8 && counts[RF_BK_OK] == 8);
    check_golden(md);
    free(md);
    rf_fake_stats st0 = rf_fake_get_stats(fk);
    const double late99 = rf_fake_late_quantile(&st0, 0.99);
    double ttft = level_stat(sum, "ttft_ms", "p50"),
           gap = level_stat(sum, "per_token_gap_ms", "p50");
    fprintf(stderr,
            "clean: ttft p50 %.2f ms (programmed 40), token gap p50 %.2f ms (8); server chunk "
            "lateness p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
            ttft, gap, rf_fake_late_quantile(&st0, 0.5), late99, st0.late_max_ms);
    CHECK_MSG(ttft >= 40 - 0.1, "ttft p50 %.2f ms, before its time", ttft);
    CHECK_NEAR(ttft, 40, 3 + late99);
    CHECK_NEAR(gap, 8, 2 + late99);
    CHECK(level_stat(sum, "output_tokens", NULL) == 8 * 16);
    double client_tok_s = level_stat(sum, "output_tok_s", NULL);
    json_decref(sum);
    /* the server's own punctuality is counted: every chunk of the 8 streams (16 tokens, the
     * finish and usage tail) */
    CHECK_MSG(st0.chunks_sent >= 8 * 16, "%llu chunks", (unsigned long long)st0.chunks_sent);
    CHECK(rf_fake_late_quantile(&st0, 0.5) > 0);
    CHECK(rf_fake_late_quantile(&st0, 1.0) <= st0.late_max_ms + 0.1);
    /* what the server served agrees with what the client measured: the two durations (first
     * arrival to last end, first send to last completion) differ by connection set-up and by
     * lateness, so by 5% plus twice the server's worst lateness */
    CHECK(st0.streamed_tokens == 8 * 16 && st0.served_s > 0);
    double served = st0.served_s > 0 ? (double)st0.streamed_tokens / st0.served_s : 0;
    double d_server = st0.served_s, d_client = client_tok_s > 0 ? 8 * 16 / client_tok_s : 0;
    CHECK_MSG(fabs(d_server - d_client) <= 0.05 * d_server + 2e-3 * st0.late_max_ms,
              "served %.1f tok/s in %.4f s, client %.1f tok/s in %.4f s", served, d_server,
              client_tok_s, d_client);

    /* extra_body is merged into every request: here the fake's per-request fault field */
    sum = run(rf_fake_port(fk), 2, 4, 8, 0, "{\"fake\": {\"fault\": \"500\"}}", counts, &records);
    CHECK(records == 4 && counts[RF_BK_HTTP_5XX] == 4);
    json_decref(sum);
    rf_fake_stop(fk);

    /* each fault at rate 0.5: every request recorded, faulted ones classed, the run goes on */
    const struct {
        rf_fake_fault fault;
        rf_bk_error cls;
    } cases[] = {
        {RF_FAKE_FAULT_REFUSE, RF_BK_REFUSED},
        {RF_FAKE_FAULT_500, RF_BK_HTTP_5XX},
        {RF_FAKE_FAULT_429, RF_BK_HTTP_4XX},
        {RF_FAKE_FAULT_STALL, RF_BK_STALL},
        {RF_FAKE_FAULT_TRUNCATE, RF_BK_TRUNCATED},
        {RF_FAKE_FAULT_INVALID_JSON, RF_BK_INVALID},
        {RF_FAKE_FAULT_ERROR_EVENT, RF_BK_SERVER_ERROR},
        {RF_FAKE_FAULT_WRONG_TOOL_CALL, RF_BK_OK}, /* a bad call, not a bad transport */
        {RF_FAKE_FAULT_WRONG_TOOL_NAME, RF_BK_OK},
    };
    /* every kind but "none": a fault added to the server without a case here fails */
    CHECK(sizeof cases / sizeof cases[0] == RF_FAKE_FAULT_COUNT - 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rf_fake_params fp = p;
        fp.ttft_ms = 5;
        fp.gap_ms = 2;
        fp.fault = cases[i].fault;
        fp.fault_rate = 0.5;
        fp.seed = 7 + i;
        CHECK(rf_fake_start(&fp, &fk, &err) == RF_OK);
        if (!fk) continue;
        sum = run(rf_fake_port(fk), 4, 12, 8, 1.0, NULL, counts, &records);
        rf_fake_stats st = rf_fake_get_stats(fk);
        int faulted = (int)st.faults_injected;
        CHECK_MSG(records == 12, "%s: %d records", rf_fake_fault_name(cases[i].fault), records);
        /* A request closed with no reply is resent by the client (as libcurl, httpx and browsers
         * do when a reused connection dies), so a refusal shows either as a refused record or as
         * a resend of a request that then succeeded; both are counted. */
        int resent = (int)level_stat(sum, "resends", NULL);
        if (cases[i].fault == RF_FAKE_FAULT_REFUSE) {
            CHECK_MSG(counts[RF_BK_REFUSED] + resent == faulted,
                      "refuse: %d injected, %d refused records, %d resends", faulted,
                      counts[RF_BK_REFUSED], resent);
            CHECK(counts[RF_BK_OK] == 12 - counts[RF_BK_REFUSED]);
            CHECK(level_stat(sum, "errors", NULL) == counts[RF_BK_REFUSED]);
            CHECK(faulted > 0); /* refused records may be 0: every refusal may be resent */
            json_decref(sum);
            rf_fake_stop(fk);
            continue;
        }
        CHECK(resent == 0);
        if (cases[i].cls == RF_BK_OK) { /* the tool-call faults: all 12 succeed */
            CHECK_MSG(counts[RF_BK_OK] == 12 && g_tool_finishes == faulted && faulted > 0,
                      "%s: %d injected, %d ok, %d records finished by tool_calls",
                      rf_fake_fault_name(cases[i].fault), faulted, counts[RF_BK_OK],
                      g_tool_finishes);
            CHECK(level_stat(sum, "errors", NULL) == 0);
            json_decref(sum);
            rf_fake_stop(fk);
            continue;
        }
        CHECK_MSG(counts[cases[i].cls] == faulted && counts[RF_BK_OK] == 12 - faulted,
                  "%s: %d faults injected, %d records of class %s, %d ok",
                  rf_fake_fault_name(cases[i].fault), faulted, counts[cases[i].cls],
                  rf_bk_error_name(cases[i].cls), counts[RF_BK_OK]);
        CHECK(faulted > 0);
        CHECK(level_stat(sum, "errors", NULL) == faulted);
        json_decref(sum);
        rf_fake_stop(fk);
    }
    return check_summary("test_bench_fake");
}
