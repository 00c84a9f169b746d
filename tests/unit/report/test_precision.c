/* test_precision.c: the precision study end to end on tiny models, and the A/B/A judgement.
 *  - rf_drift_judge: seed 003's A/B/A (51.3, 105.1, 51.5) is "higher"; a difference no larger
 *    than the A-to-A drift is "within drift", whichever its sign; a larger fall is "lower";
 *    a missing figure is "unknown"; the JSON carries the same figures.
 *  - The study: a tiny as-shipped model, a Q8_0 variant made by hand in the variants
 *    directory (newer than the source, so it is used as it is), a BF16 one the study builds
 *    with the quantizer, and the widened one: the run expands into four backends, runs
 *    A B1 A B2 A B3 A (A's later turns under phases "precision a2" ...), and the summary's
 * precision section has a row per variant with its decode, ceiling inputs, accuracy, answers
 * identical to A's and each variant's drift judgement; the saved run.json reads back with the same
 * backends (not expanded twice); the report has the precision table and chart.
 *  - Stale files: a variant file older than the source is rebuilt when the study built it (its
 *    mark), and left byte for byte as it was, with an error naming it, when it did not.
 *  - Bad input: unknown or as-shipped variants, a suite the study does not run, "widen" on an
 *    HTTP backend, a variant whose URI is not local:PATH.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/runfile.h"
#include "check.h"
#include "format/gguf.h"
#include "format/quantize.h"
#include "report/drift.h"
#include "report/report.h"
#include "tiny_model.h"

static void test_drift(void) {
    rf_drift j = rf_drift_judge(51.3, 105.1, 51.5);
    CHECK(j.verdict == RF_DRIFT_HIGHER);
    CHECK(fabs(j.drift - 0.2) < 1e-9 && fabs(j.base - 51.4) < 1e-9);
    CHECK(fabs(j.diff - 53.7) < 1e-9);
    j = rf_drift_judge(51.3, 51.55, 51.5); /* +0.15 against a drift of 0.2 */
    CHECK(j.verdict == RF_DRIFT_WITHIN);
    j = rf_drift_judge(51.3, 51.25, 51.5); /* -0.15 */
    CHECK(j.verdict == RF_DRIFT_WITHIN);
    j = rf_drift_judge(51.3, 51.0, 51.5); /* -0.4 */
    CHECK(j.verdict == RF_DRIFT_LOWER);
    j = rf_drift_judge(50, 50.5, 50); /* no drift at all: any difference counts */
    CHECK(j.verdict == RF_DRIFT_HIGHER);
    j = rf_drift_judge(NAN, 50, 50);
    CHECK(j.verdict == RF_DRIFT_UNKNOWN);
    CHECK(!strcmp(rf_drift_verdict_name(RF_DRIFT_WITHIN), "within drift"));
    j = rf_drift_judge(619.1, 1077.25, 625.15);
    json_t *o = rf_drift_json(&j);
    CHECK(json_is_true(json_object_get(o, "difference_exceeds_drift")));
    CHECK(!strcmp(json_string_value(json_object_get(o, "verdict")), "higher"));
    CHECK(fabs(json_real_value(json_object_get(o, "a_drift")) - 6.05) < 1e-9);
    json_decref(o);
    j = rf_drift_judge(NAN, 1, 1);
    o = rf_drift_json(&j);
    CHECK(json_is_null(json_object_get(o, "difference_exceeds_drift")));
    json_decref(o);
}

static rf_status parse_file(const char *path, rf_runfile *rf, rf_error *err) {
    char a0[] = "bench", a1[] = "--run", a2[512], a3[] = "--no-progress";
    snprintf(a2, sizeof a2, "%s", path);
    char *argv[] = {a0, a1, a2, a3};
    int help = 0;
    return rf_runfile_parse_args(4, argv, rf, &help, err);
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* A tiny model file of weight type t moved to path. */
static int tiny_at(rf_type t, const char *tag, const char *path) {
    tiny_spec s = tiny_default();
    s.wtype = t;
    s.n_ctx_train = 4096;
    const char *p = tiny_write_file(&s, tag);
    return p ? rename(p, path) : -1;
}

/* Whether the file at path contains needle (read whole, up to 4 MiB). */
static bool file_has(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    static char buf[4 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

static const json_t *row_named(const json_t *prec, const char *variant) {
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(prec, "rows"), i, r) {
        const char *v = json_string_value(json_object_get(r, "variant"));
        if (v && !strcmp(v, variant)) return r;
    }
    return NULL;
}

static void test_study(void) {
    char dir[] = "/tmp/roofline-precision-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char src[400], vdir[400], var[500], runf[400], out[400];
    snprintf(src, sizeof src, "%s/tiny-q4_0.gguf", dir);
    snprintf(vdir, sizeof vdir, "%s/variants", dir);
    snprintf(var, sizeof var, "%s/tiny-q4_0-q8_0.gguf", vdir);
    snprintf(runf, sizeof runf, "%s/precision.json", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    CHECK(tiny_at(RF_TYPE_Q4_0, "prec-src", src) == 0);
    CHECK(mkdir(vdir, 0755) == 0);
    CHECK(tiny_at(RF_TYPE_Q8_0, "prec-q8", var) == 0); /* made after the source: it is kept */
    char text[2048];
    snprintf(text, sizeof text,
             "{\"precision\": {\"model\": \"%s\", \"dir\": \"%s\", \"variants\": [\"q8_0\", "
             "\"bf16\", \"widen\"], \"suites\": [\"speed\", \"load\", \"accuracy\"]},\n"
             " \"suites\": [\"precision\"], \"speed\": {\"runs\": 1, \"max_tokens\": 6},\n"
             " \"load\": {\"levels\": [1, 2], \"requests\": 2, \"max_tokens\": 4, \"warmup\": 0},\n"
             " \"accuracy\": {\"max_tokens\": 3}, \"membw\": false, \"out\": \"%s\"}\n",
             src, vdir, out);
    CHECK(write_text(runf, text) == 0);
    rf_runfile rf;
    rf_error err = {0};
    CHECK_MSG(parse_file(runf, &rf, &err) == RF_OK, "%s", err.msg);
    CHECK(rf.desc.n_backends == 4);
    CHECK(rf.desc.precision);
    int widened = 0, variants = 0;
    for (int i = 0; i < rf.desc.n_backends; i++) {
        variants += rf.desc.backends[i].variant != NULL;
        widened += rf.desc.backends[i].cfg.widen;
    }
    CHECK(variants == 4 && widened == 1);
    for (int i = 0; i < rf.desc.n_backends; i++) rf.desc.backends[i].cfg.threads = 2;
    volatile sig_atomic_t stop = 0;
    rf_bench *b = NULL;
    CHECK_MSG(rf_bench_open(&rf.desc, &stop, &b, &err) == RF_OK, "%s", err.msg);
    if (b) {
        CHECK_MSG(rf_bench_run_all(b, &err) == RF_OK, "%s", err.msg);
        CHECK(rf_bench_finish(b, &err) == RF_OK);
        char msg[512];
        CHECK_MSG(rf_bench_unanswered(b, msg, sizeof msg) == 0, "%s", msg);
        rf_bench_close(b);
    }
    rf_runfile_free(&rf);
    rf_report_opts ro;
    rf_report_opts_default(&ro);
    const char *dirs[1] = {out};
    CHECK_MSG(rf_report_build(dirs, 1, &ro, NULL, NULL, &err) == RF_OK, "report: %s", err.msg);

    char path[600];
    snprintf(path, sizeof path, "%s/summary.json", out);
    json_error_t je;
    json_t *sum = json_load_file(path, 0, &je);
    CHECK(sum != NULL);
    const json_t *prec = json_object_get(sum, "precision");
    CHECK(json_array_size(json_object_get(prec, "rows")) == 4);
    const json_t *turns = json_object_get(prec, "shipped_turns");
    CHECK(json_array_size(turns) == 4);
    static const char *const phases[4] = {"", "precision a2", "precision a3", "precision a4"};
    for (size_t k = 0; k < 4; k++) {
        const json_t *t = json_array_get(turns, k);
        const char *ph = json_string_value(json_object_get(t, "phase"));
        CHECK(ph && !strcmp(ph, phases[k]));
        CHECK_MSG(json_real_value(json_object_get(t, "decode_tok_s")) > 0, "A turn %zu", k + 1);
        CHECK(json_real_value(json_object_get(t, "output_tok_s_top")) > 0);
    }
    const json_t *a = row_named(prec, "shipped"), *q8 = row_named(prec, "q8_0");
    const json_t *wd = row_named(prec, "widen"), *bf = row_named(prec, "bf16");
    CHECK(a && q8 && wd && bf);
    /* the BF16 variant was built by the quantizer: 2 bytes a weight, more than Q8_0's */
    CHECK(json_integer_value(json_object_get(bf, "file_bytes")) >
          json_integer_value(json_object_get(q8, "file_bytes")));
    CHECK(json_integer_value(json_object_get(bf, "identical_of")) == 40);
    CHECK(json_is_true(json_object_get(wd, "widened")));
    CHECK(!json_is_true(json_object_get(q8, "widened")));
    /* the Q8_0 file is larger than the Q4_0 one; the widened one is the same file */
    CHECK(json_integer_value(json_object_get(q8, "file_bytes")) >
          json_integer_value(json_object_get(a, "file_bytes")));
    CHECK(json_integer_value(json_object_get(wd, "file_bytes")) ==
          json_integer_value(json_object_get(a, "file_bytes")));
    CHECK(json_integer_value(json_object_get(q8, "accuracy_total")) == 40);
    CHECK(json_integer_value(json_object_get(q8, "identical_of")) == 40);
    CHECK(json_is_integer(json_object_get(wd, "identical_to_shipped")));
    CHECK(json_real_value(json_object_get(q8, "decode_tok_s")) > 0);
    const json_t *dv = json_object_get(q8, "decode_vs_shipped");
    const char *verdict = json_string_value(json_object_get(dv, "verdict"));
    CHECK(verdict && strcmp(verdict, "unknown"));
    CHECK(json_object_get(wd, "output_tok_s_top_vs_shipped") != NULL);
    CHECK(json_is_null(json_object_get(a, "decode_vs_shipped")) ||
          !json_object_get(a, "decode_vs_shipped"));
    json_decref(sum);
    snprintf(path, sizeof path, "%s/report.md", out);
    CHECK(file_has(path, "## Precision"));
    snprintf(path, sizeof path, "%s/report.html", out);
    CHECK(file_has(path, "c-precision"));
    /* the saved description reads back with its four backends, not eight */
    snprintf(path, sizeof path, "%s/run.json", out);
    CHECK_MSG(parse_file(path, &rf, &err) == RF_OK, "%s", err.msg);
    CHECK(rf.desc.n_backends == 4);
    rf_runfile_free(&rf);
}

/* Sets path's access and modification times to t seconds after the epoch. */
static int set_mtime(const char *path, time_t t) {
    struct timespec ts[2] = {{.tv_sec = t}, {.tv_sec = t}};
    return utimensat(AT_FDCWD, path, ts, 0);
}

/* One study of src's q8_0 and bf16 variants in vdir (speed only); the backends' open errors
 * are copied into errs[variant] (empty when it opened). */
static void run_study(const char *dir, const char *src, const char *vdir, int k,
                      char errs[RF_VARIANT_COUNT][RF_ERROR_MSG_MAX]) {
    char runf[600], out[600], text[2048];
    snprintf(runf, sizeof runf, "%s/stale%d.json", dir, k);
    snprintf(out, sizeof out, "%s/stale-run%d", dir, k);
    snprintf(text, sizeof text,
             "{\"precision\": {\"model\": \"%s\", \"dir\": \"%s\", \"variants\": [\"q8_0\", "
             "\"bf16\"], \"suites\": [\"speed\"]}, \"suites\": [\"precision\"],\n"
             " \"speed\": {\"runs\": 1, \"max_tokens\": 2}, \"membw\": false, \"out\": \"%s\"}\n",
             src, vdir, out);
    CHECK(write_text(runf, text) == 0);
    rf_runfile rf;
    rf_error err = {0};
    CHECK_MSG(parse_file(runf, &rf, &err) == RF_OK, "%s", err.msg);
    volatile sig_atomic_t stop = 0;
    rf_bench *b = NULL;
    CHECK_MSG(rf_bench_open(&rf.desc, &stop, &b, &err) == RF_OK, "%s", err.msg);
    if (b) {
        CHECK_MSG(rf_bench_run_all(b, &err) == RF_OK, "%s", err.msg);
        const rf_run_desc *d = rf_bench_run(b);
        for (int i = 0; i < d->n_backends; i++)
            snprintf(errs[rf_variant_parse(d->backends[i].variant)], RF_ERROR_MSG_MAX, "%s",
                     d->backends[i].open_error);
        CHECK(rf_bench_finish(b, &err) == RF_OK);
        rf_bench_close(b);
    }
    rf_runfile_free(&rf);
}

/* A stale variant file (older than the source) is rebuilt only when the study built it (its
 * RF_QUANTIZE_KEY_SOURCE mark); any other file in its place is left byte for byte as it was and
 * the variant gets an error saying why. */
static void test_stale_files(void) {
    char dir[] = "/tmp/roofline-stale-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char src[400], vdir[400], q8[500], bf[500];
    snprintf(src, sizeof src, "%s/tiny-q4_0.gguf", dir);
    snprintf(vdir, sizeof vdir, "%s/variants", dir);
    snprintf(q8, sizeof q8, "%s/tiny-q4_0-q8_0.gguf", vdir);
    snprintf(bf, sizeof bf, "%s/tiny-q4_0-bf16.gguf", vdir);
    CHECK(tiny_at(RF_TYPE_Q4_0, "stale-src", src) == 0);
    CHECK(mkdir(vdir, 0755) == 0);
    CHECK(write_text(q8, "somebody's own file\n") == 0); /* unmarked and older than the source */
    CHECK(set_mtime(q8, 1000000000) == 0 && set_mtime(src, 1100000000) == 0);
    char errs[RF_VARIANT_COUNT][RF_ERROR_MSG_MAX];
    memset(errs, 0, sizeof errs);
    run_study(dir, src, vdir, 1, errs);
    CHECK_MSG(strstr(errs[RF_VARIANT_Q8_0], "was not built by the precision study") &&
                  strstr(errs[RF_VARIANT_Q8_0], q8),
              "q8_0: '%s'", errs[RF_VARIANT_Q8_0]);
    CHECK(file_has(q8, "somebody's own file"));
    CHECK_MSG(errs[RF_VARIANT_BF16][0] == 0, "bf16: %s", errs[RF_VARIANT_BF16]);
    rf_gguf *g = NULL;
    rf_error err = {0};
    rf_str mark = {0};
    CHECK_MSG(rf_gguf_open(bf, &g, &err) == RF_OK, "%s", err.msg);
    CHECK(g && rf_gguf_get_str(g, RF_QUANTIZE_KEY_SOURCE, true, &mark, &err) == RF_OK &&
          rf_str_eq(mark, src));
    rf_gguf_close(g);
    /* the source changes after the bf16 file was built: the study's own file is rebuilt */
    CHECK(set_mtime(bf, 1100000000) == 0 && set_mtime(src, 1200000000) == 0);
    memset(errs, 0, sizeof errs);
    run_study(dir, src, vdir, 2, errs);
    CHECK_MSG(errs[RF_VARIANT_BF16][0] == 0, "bf16: %s", errs[RF_VARIANT_BF16]);
    struct stat sb;
    CHECK(stat(bf, &sb) == 0 && sb.st_mtime > 1200000000);
    CHECK(file_has(q8, "somebody's own file"));
}

static void expect_bad(const char *text, const char *needle) {
    rf_runfile rf;
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    rf_error err = {0};
    CHECK(rf_runfile_parse_json("run.json", text, &rf, &err) != RF_OK ||
          rf_run_desc_check(&rf.desc, &err) != RF_OK);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "'%s' not in '%s'", needle, err.msg);
    rf_runfile_free(&rf);
}

static void test_bad_input(void) {
    expect_bad("{\"precision\": {\"variants\": [\"shipped\"]}}", "precision.variants");
    expect_bad("{\"precision\": {\"variants\": [\"q3_k\"]}}", "precision.variants");
    expect_bad("{\"precision\": {\"variants\": []}}", "precision.variants");
    expect_bad("{\"precision\": {\"suites\": [\"probe\"]}}", "precision.suites");
    expect_bad("{\"precision\": {\"colour\": 1}}", "colour");
    expect_bad("{\"backends\": [{\"name\": \"x\", \"uri\": \"openai:http://127.0.0.1:9/v1\", "
               "\"widen\": true}]}",
               "local backends only");
    expect_bad("{\"backends\": [{\"uri\": \"local\", \"variant\": \"q2\"}]}", "variant");
    /* a variant's file is its URI's path: a plain "local" (read past its end before), a "local:"
     * with no path and a remote backend are refused, naming the backend and its URI */
    expect_bad("{\"backends\": [{\"name\": \"a\", \"uri\": \"local\", \"variant\": \"shipped\"}]}",
               "backend 'a': a precision variant (\"variant\": \"shipped\") names its model file: "
               "its URI must be local:PATH, not 'local'");
    expect_bad("{\"backends\": [{\"uri\": \"local:\", \"variant\": \"q8_0\"}]}",
               "must be local:PATH, not 'local:'");
    expect_bad("{\"backends\": [{\"uri\": \"openai:http://127.0.0.1:9/v1\", \"variant\": "
               "\"bf16\"}]}",
               "must be local:PATH, not 'openai:http://127.0.0.1:9/v1'");
}

int main(void) {
    test_drift();
    test_bad_input();
    test_study();
    test_stale_files();
    return check_summary("test_precision");
}
