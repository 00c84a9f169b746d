/* suite_precision.c: the precision study (seed 000's "precision determines what you give up",
 * seed 003's A/B/A).
 *
 * The run description holds one backend per variant of one model (runfile.c expands the
 * "precision" section into them, each with `variant` set): the as-shipped file (A), the file
 * requantized to Q8_0, BF16, F16 and Q4_0 (embeddings included), and the as-shipped file on the
 * engine's widened matmul path. This suite:
 *  1. builds each variant's file with rf_quantize_file (src/format/quantize.h) when it is missing
 *     or older than the source (a stale file only when it carries the study's own
 *     RF_QUANTIZE_KEY_SOURCE mark, so no other file is overwritten); files live in the precision
 *     "dir" (runs/variants by default) as
 *     <source base name>-<variant>.gguf and are reused by later runs;
 *  2. runs A, B1, A, B2, ..., Bn, A: every turn opens the turn's backend (so one engine is in
 *     memory at a time), runs the configured suites through the ordinary suite code and closes
 *     it. The first turn of each backend runs speed, load, accuracy and agent with no A/B/A
 *     phase (its records are the run's ordinary records: every section of the report covers
 *     it); A's later turns run speed and load again under phase "precision aK" (K = 2, 3, ...),
 *     so each Bi lies between A turns i and i + 1, whose difference is the drift Bi is judged
 *     against (src/report/precision.c).
 * Everything measured is in the records; the figures are the report's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench.h"
#include "format/gguf.h"
#include "format/quantize.h"
#include "model/registry.h"
#include "util/file.h"

/* The model file a variant's URI names ("local:PATH", which rf_run_desc_check requires),
 * resolved as the backend will open it (an embedded model's name becomes its file). */
static rf_status file_of(const rf_bench_backend *bb, char *out, size_t cap, rf_error *err) {
    return rf_model_resolve(rf_backend_local_model(&bb->cfg), out, cap, err);
}

/* Whether path is a GGUF file that rf_quantize_file marked as built from a source (a stale one
 * the study may replace). */
static bool built_here(const char *path) {
    rf_gguf *g = NULL;
    rf_error e = {0};
    if (rf_gguf_open(path, &g, &e)) return false;
    bool marked = rf_gguf_find_kv(g, RF_QUANTIZE_KEY_SOURCE) != NULL;
    rf_gguf_close(g);
    return marked;
}

/* Builds bb's variant file from src unless it exists and is at least as new as src. The file is
 * the URI's own path: never an embedded model's file (the backend would open that one, not what
 * was built) and never the source itself. */
static rf_status ensure_variant(rf_bench *b, const rf_bench_backend *bb, const char *src,
                                rf_error *err) {
    int v = rf_variant_parse(bb->variant);
    if (v == RF_VARIANT_SHIPPED || v == RF_VARIANT_WIDEN) return RF_OK;
    const char *out = rf_backend_local_model(&bb->cfg);
    char resolved[RF_BENCH_PATH_MAX];
    rf_status st = file_of(bb, resolved, sizeof resolved, err);
    if (st && st != RF_ERR_IO) return st; /* RF_ERR_IO: an embedded model not installed */
    if (st || strcmp(resolved, out))
        return rf_error_set(err, RF_ERR_ARG,
                            "'%s' names an embedded model: a built variant (%s) needs a file "
                            "path of its own",
                            out, bb->variant);
    struct stat ss, os;
    if (stat(src, &ss)) return rf_error_set(err, RF_ERR_IO, "%s: %s", src, strerror(errno));
    bool exists = !stat(out, &os);
    if (exists && os.st_dev == ss.st_dev && os.st_ino == ss.st_ino)
        return rf_error_set(err, RF_ERR_ARG,
                            "%s is the as-shipped file itself: a built variant (%s) needs a file "
                            "of its own",
                            out, bb->variant);
    if (exists && os.st_mtime >= ss.st_mtime) return RF_OK;
    if (exists && !built_here(out))
        return rf_error_set(err, RF_ERR_ARG,
                            "%s is older than the as-shipped file %s but was not built by the "
                            "precision study (no %s in its metadata): it is left as it is; "
                            "remove it or name another file for the variant %s",
                            out, src, RF_QUANTIZE_KEY_SOURCE, bb->variant);
    st = rf_make_parents(out, err);
    if (st) return st;
    rf_quantize_opts o;
    rf_quantize_opts_init(&o);
    static const rf_type types[RF_VARIANT_COUNT] = {
        [RF_VARIANT_Q8_0] = RF_TYPE_Q8_0,
        [RF_VARIANT_BF16] = RF_TYPE_BF16,
        [RF_VARIANT_F16] = RF_TYPE_F16,
        [RF_VARIANT_Q4_0] = RF_TYPE_Q4_0,
    };
    o.type = types[v];
    o.emb_type = types[v]; /* the embeddings too ("everywhere") */
    o.keep_mixed = false;
    o.force = true;
    o.threads = bb->cfg.threads;
    o.source_mark = src;
    rf_quantize_report rep;
    rf_bench_log(b, "precision: building %s from %s", out, src);
    st = rf_quantize_file(src, out, &o, &rep, err);
    if (!st)
        rf_bench_log(b, "precision: %s: %d tensors converted, %d kept, %d fell back%s%s", out,
                     rep.n_quantized, rep.n_kept, rep.n_fallback, rep.n_fallback ? ": " : "",
                     rep.fallback);
    return st;
}

/* One turn of backend bb: open it, run the suites the table puts in the study (accuracy and
 * agent on its first turn only), close it. A backend that cannot be opened or built is logged and
 * keeps its error (the report and the exit status name it); the study goes on. */
static rf_status turn(rf_bench *b, rf_bench_backend *bb, const char *src, const char *phase,
                      bool first, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    unsigned s = d->precision_suites ? d->precision_suites : ~0u;
    rf_error e = {0};
    rf_bench_log(b, "precision: %s%s%s", bb->cfg.name, phase ? ", " : "", phase ? phase : "");
    rf_status st = ensure_variant(b, bb, src, &e);
    if (!st) st = rf_backend_open(&bb->cfg, rf_bench_loop(b), &bb->b, &e);
    if (st) {
        snprintf(bb->open_error, sizeof bb->open_error, "%s", e.msg);
        rf_bench_log(b, "precision: %s: %s", bb->cfg.name, e.msg);
        return RF_OK;
    }
    char when[160];
    snprintf(when, sizeof when, "precision: %s%s%s", bb->cfg.name, phase ? ", " : "",
             phase ? phase : "");
    rf_bench_sample_membw(b, when); /* the ceiling of the turn's decode, next to it */
    rf_bench_set_phase(b, phase);
    st = RF_OK;
    const rf_suite_def *t = rf_suite_table();
    for (int k = 0; k < RF_SUITE_COUNT && !st; k++) {
        bool in_turn = t[k].study == RF_STUDY_EVERY || (first && t[k].study == RF_STUDY_FIRST);
        if (in_turn && s >> t[k].id & 1u) st = t[k].run(b, bb, err);
    }
    rf_bench_set_phase(b, NULL);
    rf_backend_close(bb->b);
    bb->b = NULL;
    return st;
}

rf_status rf_suite_precision(rf_bench *b, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    rf_bench_backend *a = NULL;
    for (int i = 0; i < d->n_backends && !a; i++)
        if (d->backends[i].variant && !strcmp(d->backends[i].variant, "shipped"))
            a = &d->backends[i];
    if (!a) {
        rf_bench_log(b, "precision: skipped: the run has no as-shipped backend");
        return RF_OK;
    }
    char src[RF_BENCH_PATH_MAX];
    rf_error e = {0};
    if (file_of(a, src, sizeof src, &e)) { /* no source: no turn can run */
        for (int i = 0; i < d->n_backends; i++)
            if (d->backends[i].variant)
                snprintf(d->backends[i].open_error, sizeof d->backends[i].open_error,
                         "the as-shipped file: %.400s", e.msg);
        rf_bench_log(b, "precision: %s: %s", a->cfg.name, e.msg);
        return RF_OK;
    }
    rf_status st = turn(b, a, src, NULL, true, err);
    int k = 1;
    for (int i = 0; i < d->n_backends && !st && !rf_bench_stopped(b); i++) {
        rf_bench_backend *bb = &d->backends[i];
        if (!bb->variant || bb == a) continue;
        st = turn(b, bb, src, NULL, true, err);
        char phase[32];
        snprintf(phase, sizeof phase, "precision a%d", ++k);
        if (!st && !rf_bench_stopped(b)) st = turn(b, a, src, phase, false, err);
    }
    return st;
}
