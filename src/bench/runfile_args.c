/* runfile_args.c: the bench's flags (one rf_opt table: parsing and --help), the run files and
 * --resume they name, and the precision study's backends (runfile.h). */
#include "bench/runfile.h"
#include "bench/runfile_fields.h"
#include "model/registry.h"
#include "util/file.h"
#include "util/opt.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the flags set besides the description: applied to every backend at the end. */
typedef struct bench_flags {
    rf_runfile *rf;
    const char *model, *key_env, *resume;
    long threads;        /* -1: not given */
    long long reply_cap; /* -1: not given */
} bench_flags;

/* --backend NAME=URI (or URI: named by itself) */
static rf_status flag_backend(void *dest, const char *opt, const char *v, rf_error *err) {
    rf_runfile *rf = dest;
    rf_run_desc *d = &rf->desc;
    if (!rf->flag_backends) d->n_backends = 0; /* flags replace the run files' list */
    rf->flag_backends = true;
    if (d->n_backends >= RF_BENCH_MAX_BACKENDS)
        return rf_error_set(err, RF_ERR_ARG, "%s: at most 16 backends", opt);
    char *nv = rf_runfile_own_copy(rf, v);
    if (!nv) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    rf_bench_backend *bb = &d->backends[d->n_backends++];
    memset(bb, 0, sizeof *bb);
    char *eq = strchr(nv, '=');
    if (eq) {
        *eq = 0;
        bb->cfg.name = nv;
        bb->cfg.uri = eq + 1;
    } else {
        bb->cfg.name = bb->cfg.uri = nv;
    }
    if (!*bb->cfg.uri || !*bb->cfg.name)
        return rf_error_set(err, RF_ERR_ARG, "%s expects NAME=URI, got '%s'%s", opt, v,
                            !*bb->cfg.name ? " (no name before '=')" : " (no URI after '=')");
    return RF_OK;
}

/* --suites speed,load,... */
static rf_status flag_suites(void *dest, const char *opt, const char *v, rf_error *err) {
    rf_runfile *rf = dest;
    rf_run_desc *d = &rf->desc;
    d->speed = d->load = d->accuracy = d->agent = d->probe = d->precision = false;
    d->suites_set = true;
    char *buf = rf_runfile_own_copy(rf, v);
    if (!buf) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    rf_jr c = rf_jr_make(opt, RF_ERR_ARG, err);
    c.style = RF_JR_STYLE_PATH;
    int n = 0;
    rf_status st = RF_OK;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save), n++)
        st = rf_runfile_set_suite(&c, d, "value", tok);
    if (!st && !n) st = rf_error_set(err, RF_ERR_ARG, "%s: empty list", opt);
    return st;
}

/* --levels 1,4,16 */
static rf_status flag_levels(void *dest, const char *opt, const char *v, rf_error *err) {
    rf_runfile *rf = dest;
    rf_run_desc *d = &rf->desc;
    d->n_levels = 0;
    char *buf = rf_runfile_own_copy(rf, v);
    if (!buf) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (d->n_levels >= RF_BENCH_MAX_LEVELS)
            return rf_error_set(err, RF_ERR_ARG, "%s: at most 16 levels", opt);
        char *end = NULL;
        long x = strtol(tok, &end, 10);
        if (!*tok || *end || x < 1 || x > 4096)
            return rf_error_set(err, RF_ERR_ARG, "%s expects an integer in [1, 4096], got '%s'",
                                opt, tok);
        d->levels[d->n_levels++] = (int)x;
    }
    if (!d->n_levels) return rf_error_set(err, RF_ERR_ARG, "%s: empty list", opt);
    return RF_OK;
}

/* --aba A,B */
static rf_status flag_aba(void *dest, const char *opt, const char *v, rf_error *err) {
    rf_runfile *rf = dest;
    rf_run_desc *d = &rf->desc;
    char *buf = rf_runfile_own_copy(rf, v);
    if (!buf) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    char *comma = strchr(buf, ',');
    if (!comma || comma == buf || !comma[1])
        return rf_error_set(err, RF_ERR_ARG, "%s expects A,B (two backend names), got '%s'", opt,
                            v);
    *comma = 0;
    d->aba_a = buf;
    d->aba_b = comma + 1;
    d->aba = d->aba_speed = true;
    return RF_OK;
}

/* --slo ttft:MS,tpot:MS,e2e:MS (vLLM's --goodput form). */
static rf_status flag_slo(void *dest, const char *opt, const char *v, rf_error *err) {
    rf_run_desc *d = &((rf_runfile *)dest)->desc;
    const char *p = v;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char part[64];
        if (n >= sizeof part) return rf_error_set(err, RF_ERR_ARG, "%s: '%s' is too long", opt, v);
        memcpy(part, p, n);
        part[n] = 0;
        char *colon = strchr(part, ':'), *num_end = NULL;
        double x = colon ? strtod(colon + 1, &num_end) : 0;
        if (!colon || num_end == colon + 1 || *num_end || !(x > 0 && x <= 1e9))
            return rf_error_set(err, RF_ERR_ARG,
                                "%s expects NAME:MS,... (ttft, tpot, e2e), got '%s'", opt, v);
        *colon = 0;
        if (!strcmp(part, "ttft"))
            d->slo_ttft_ms = x;
        else if (!strcmp(part, "tpot"))
            d->slo_tpot_ms = x;
        else if (!strcmp(part, "e2e") || !strcmp(part, "e2el"))
            d->slo_e2e_ms = x;
        else
            return rf_error_set(err, RF_ERR_ARG, "%s: unknown metric '%s' (ttft, tpot, e2e)", opt,
                                part);
        if (!end) break;
        p = end + 1;
    }
    return RF_OK;
}

#define N_BENCH_OPTS 32 /* at most */

/* The bench's flags, storing into f (and f->rf's description). */
static size_t bench_opts(rf_opt *o, bench_flags *f) {
    rf_run_desc *d = &f->rf->desc;
    rf_runfile *rf = f->rf;
    const rf_opt t[] = {
        {"--run", NULL, RF_OPT_LIST, .metavar = "FILE",
         .help = "a JSON run description (fields below); several merge in order"},
        {"--backend", NULL, RF_OPT_LIST, .dest = rf, .fn = flag_backend, .metavar = "NAME=URI",
         .help = "add a backend (repeatable); URI: local, local:MODEL.gguf,\n"
                 "openai:http://HOST:PORT/v1 (llama-server, vLLM, roofline serve, ...),\n"
                 "sagemaker:REGION/ENDPOINT, bedrock:REGION/MODEL_ID (AWS; docs/aws.md)"},
        {"--model", NULL, RF_OPT_STRING, RF_OPT_DEST(f->model), .metavar = "NAME",
         .help = "model name sent to openai backends (default: the server's first)"},
        {"--api-key-env", NULL, RF_OPT_STRING, RF_OPT_DEST(f->key_env), .metavar = "VAR",
         .help = "environment variable holding the API key (default OPENAI_API_KEY, when set)"},
        {"--suites", NULL, RF_OPT_STRING, .dest = rf, .fn = flag_suites, .metavar = "LIST",
         .help = "comma list of speed,load,accuracy,agent,probe,precision (precision: the run "
                 "file's study, else Qwen2.5-Coder 0.5B's five variants; docs/bench.md)"},
        {"--speed-runs", NULL, RF_OPT_INT, RF_OPT_DEST(d->speed_runs), .lo = 1, .hi = 1000,
         .metavar = "N", .help = "speed runs (3)"},
        {"--speed-tokens", NULL, RF_OPT_INT, RF_OPT_DEST(d->speed_tokens), .lo = 1, .hi = 1 << 20,
         .metavar = "N", .help = "tokens per speed run (512)"},
        {"--levels", NULL, RF_OPT_STRING, .dest = rf, .fn = flag_levels, .metavar = "LIST",
         .help = "load concurrency levels (1,4,16)"},
        {"--requests", NULL, RF_OPT_INT, RF_OPT_DEST(d->load_requests), .lo = 1, .hi = 1 << 20,
         .metavar = "N", .help = "load requests per level (max(8, 2*level))"},
        {"--load-tokens", NULL, RF_OPT_INT, RF_OPT_DEST(d->load_tokens), .lo = 1, .hi = 1 << 20,
         .metavar = "N", .help = "tokens per load request (128)"},
        {"--warmup", NULL, RF_OPT_INT, RF_OPT_DEST(d->load_warmup), .lo = 0, .hi = 1 << 20,
         .metavar = "N", .help = "warm-up requests per level, left out of statistics (1)"},
        {"--rate", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(d->rate), .lo = RF_BENCH_MIN_RATE,
         .hi = RF_BENCH_MAX_RATE, .what = "requests per second", .metavar = "R",
         .help = "Poisson load at R requests/s instead of fixed concurrency"},
        {"--rate-requests", NULL, RF_OPT_INT, RF_OPT_DEST(d->rate_requests), .lo = 1, .hi = 1 << 20,
         .metavar = "N", .help = "requests in the Poisson run (32)"},
        {"--max-concurrency", NULL, RF_OPT_INT, RF_OPT_DEST(d->rate_max_concurrency), .lo = 0,
         .hi = 1 << 20, .metavar = "N",
         .help = "cap on in-flight requests in the Poisson run (0 = none)"},
        {"--questions", NULL, RF_OPT_STRING, RF_OPT_DEST(d->questions), .metavar = "FILE",
         .help = "accuracy question file (data/accuracy/seed40.jsonl)"},
        {"--accuracy-tokens", NULL, RF_OPT_INT, RF_OPT_DEST(d->accuracy_tokens), .lo = 1,
         .hi = 1 << 20, .metavar = "N", .help = "tokens per accuracy answer (48)"},
        {"--accuracy-concurrency", NULL, RF_OPT_INT, RF_OPT_DEST(d->accuracy_concurrency), .lo = 1,
         .hi = 4096, .metavar = "N", .help = "accuracy requests in flight (8)"},
        {"--agent-task", NULL, RF_OPT_STRING, RF_OPT_DEST(d->agent_task), .metavar = "FILE",
         .help = "agent task (data/agent/count_ids.json)"},
        {"--agent-runs", NULL, RF_OPT_INT, RF_OPT_DEST(d->agent_runs), .lo = 1, .hi = 1000,
         .metavar = "N", .help = "runs per backend (the task's, 3)"},
        {"--probe", NULL, RF_OPT_STRING, RF_OPT_DEST(d->probe_question), .metavar = "TEXT",
         .help = "the probe question"},
        {"--aba", NULL, RF_OPT_STRING, .dest = rf, .fn = flag_aba, .metavar = "A,B",
         .help = "run A, then B, then A again on the speed suite (and load with --aba-load) and "
                 "report whether B-A exceeds the A-to-A drift"},
        {"--aba-load", NULL, RF_OPT_TRUE, RF_OPT_DEST(d->aba_load),
         .help = "run the load suite in the A/B/A phases too"},
        {"--threads", NULL, RF_OPT_INT, RF_OPT_DEST(f->threads), .lo = 0, .hi = 1024,
         .metavar = "N", .help = "engine threads for local backends (physical cores)"},
        {"--max-reply-bytes", NULL, RF_OPT_INT, RF_OPT_DEST(f->reply_cap), .lo = 1,
         .hi = (double)((long long)1 << 40), .what = "bytes", .metavar = "N",
         .help = "reply text kept per request (1048576); more is counted, not kept"},
        {"--out", NULL, RF_OPT_STRING, RF_OPT_DEST(d->out_dir), .metavar = "DIR",
         .help = "run directory (default runs/<UTC time>-<ms>); it must not already hold a run"},
        {"--resume", NULL, RF_OPT_STRING, RF_OPT_DEST(f->resume), .metavar = "DIR",
         .help = "continue the run in DIR from its saved run.json, skipping every request "
                 "already in its records.jsonl (only --no-progress may be given with it)"},
        {"--no-progress", NULL, RF_OPT_FALSE, RF_OPT_DEST(d->progress),
         .help = "plain progress lines even on a terminal"},
        {"--slo", NULL, RF_OPT_STRING, .dest = rf, .fn = flag_slo, .metavar = "SPEC",
         .help = "goodput SLOs in ms, e.g. ttft:500,tpot:50,e2e:8000: per level, good requests / "
                 "duration (vLLM), and the largest level whose requests are at least 90% good"},
        {"--no-membw", NULL, RF_OPT_FALSE, RF_OPT_DEST(d->membw),
         .help = "do not measure the memory bandwidth for local backends (the roofline "
                 "efficiency is then unknown)"},
    };
    _Static_assert(sizeof t / sizeof t[0] <= N_BENCH_OPTS, "N_BENCH_OPTS");
    memcpy(o, t, sizeof t);
    return sizeof t / sizeof t[0];
}

static rf_opt_spec bench_spec(const rf_opt *opts, size_t n) {
    return (rf_opt_spec){.prog = "roofline bench", .opts = opts, .n_opts = n};
}

void rf_runfile_help(FILE *f) {
    rf_runfile rf;
    memset(&rf, 0, sizeof rf);
    bench_flags fl = {.rf = &rf};
    rf_opt opts[N_BENCH_OPTS];
    size_t n = bench_opts(opts, &fl);
    fputs(
        "usage: roofline bench [--run FILE] [options]\n"
        "\n"
        "Sends the same work to one or more backends and writes a scoreboard and a report. With\n"
        "no --run and no --backend: data/runs/default.json, the embedded models in-process side\n"
        "by side (Qwen2.5-Coder 0.5B and Gemma 3 270M: speed, load at 1, 4, 16, accuracy, agent,\n"
        "probe; SmolLM2 135M: speed and accuracy), then a short precision study of SmolLM2\n"
        "(as shipped, Q8_0, widened: speed, load, accuracy, A B A B A). Results go to\n"
        "runs/<UTC time>/: run.json, records.jsonl (one line per request, written as each\n"
        "completes), runlog.jsonl, and the report computed from them: summary.json, report.md\n"
        "(printed), report.html, csv/. Ctrl-C stops the run and reports what finished; --resume\n"
        "continues it.\n"
        "\n"
        "Options (they override the run file's values):\n",
        f);
    rf_opt_help_list(f, opts, n);
    fputs("\n"
          "Exit status: 0 ok; 1 a run-time failure (e.g. records.jsonl could not be written); 2 "
          "bad\ninput; 3 the run finished but some suite got no successful reply from some "
          "backend (or a\nbackend could not be opened); 130 interrupted.\n\n",
          f);
    rf_runfile_fields_help(f);
}

/* Reads one run file (or a run directory's saved run.json) into rf. */
static rf_status load_file(const char *path, rf_runfile *rf, rf_error *err) {
    char *text = NULL;
    size_t len = 0;
    rf_error ferr = {0};
    if (rf_read_file(path, RF_RUNFILE_MAX, &text, &len, &ferr))
        return rf_error_set(err, RF_ERR_ARG, "%s", ferr.msg);
    rf_status st = rf_runfile_parse_json(path, text, rf, err);
    free(text);
    return st;
}

/* The precision study's backends, appended to the run: the as-shipped file (A) and one per
 * variant, unless the description has them already (a saved run.json). Built variants live in
 * DIR/<model file's base name>-<variant>.gguf; the widened one runs the as-shipped file. */
static rf_status expand_precision(rf_runfile *rf, rf_error *err) {
    rf_run_desc *d = &rf->desc;
    if (!d->precision) return RF_OK;
    for (int i = 0; i < d->n_backends; i++)
        if (d->backends[i].variant) return RF_OK;
    char src[RF_BENCH_PATH_MAX];
    rf_status st = rf_model_resolve(d->precision_model ? d->precision_model : "qwen2.5-coder-0.5b",
                                    src, sizeof src, err);
    if (st) {
        rf_error_prefix(err, "precision.model");
        return st;
    }
    const char *dir = d->precision_dir ? d->precision_dir : "runs/variants";
    const char *slash = strrchr(src, '/');
    const char *base = slash ? slash + 1 : src;
    size_t blen = strlen(base);
    if (blen > 5 && !strcmp(base + blen - 5, ".gguf")) blen -= 5;
    unsigned want = d->precision_variants ? d->precision_variants : ~0u;
    for (int v = 0; v < RF_VARIANT_COUNT; v++) {
        if (v != RF_VARIANT_SHIPPED && !(want >> v & 1u)) continue;
        if (d->n_backends >= RF_BENCH_MAX_BACKENDS)
            return rf_error_set(err, RF_ERR_ARG, "precision: more than %d backends in the run",
                                RF_BENCH_MAX_BACKENDS);
        char name[64], uri[RF_BENCH_PATH_MAX + 16];
        snprintf(name, sizeof name, "prec/%s", rf_variant_name(v));
        int n = v == RF_VARIANT_SHIPPED || v == RF_VARIANT_WIDEN
                    ? snprintf(uri, sizeof uri, "local:%s", src)
                    : snprintf(uri, sizeof uri, "local:%s/%.*s-%s.gguf", dir, (int)blen, base,
                               rf_variant_name(v));
        if (n < 0 || (size_t)n >= sizeof uri)
            return rf_error_set(err, RF_ERR_ARG, "precision: the variant path is too long");
        rf_bench_backend *bb = &d->backends[d->n_backends];
        memset(bb, 0, sizeof *bb);
        bb->cfg.name = rf_runfile_own_copy(rf, name);
        bb->cfg.uri = rf_runfile_own_copy(rf, uri);
        if (!bb->cfg.name || !bb->cfg.uri) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        bb->variant = rf_variant_name(v);
        bb->cfg.widen = v == RF_VARIANT_WIDEN;
        d->n_backends++;
    }
    return RF_OK;
}

/* --resume DIR: the saved description is the run: nothing else may change it. */
static rf_status resume(const rf_opt_spec *s, int argc, char **argv, rf_runfile *rf,
                        const char *dir, rf_error *err) {
    int i = 1;
    rf_opt_hit h;
    while (rf_opt_next(s, argc, argv, &i, &h, err) > 0) {
        bool ok = h.opt && (!strcmp(h.spelled, "--resume") || !strcmp(h.spelled, "--no-progress"));
        if (!ok)
            return rf_error_set(err, RF_ERR_ARG,
                                "--resume continues the run as its run.json describes it; "
                                "'%s' cannot be given with it",
                                h.spelled);
    }
    char *path = NULL;
    if (asprintf(&path, "%s/run.json", dir) < 0)
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    rf_status st = load_file(path, rf, err);
    free(path);
    if (st) {
        rf_error_prefix(err, "--resume %s", dir);
        return st;
    }
    rf->desc.out_dir = dir;
    rf->desc.resume = true;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--no-progress")) rf->desc.progress = false;
    return RF_OK;
}

/* The run from the default run file (when neither --run nor --backend is given) or the --run
 * files in order, then every flag over it, in order. */
static rf_status describe(const rf_opt_spec *s, int argc, char **argv, rf_runfile *rf,
                          bool described, rf_error *err) {
    int i;
    rf_opt_hit h;
    /* no run file and no backend: the default run (data/runs/default.json: the embedded models
     * side by side), which the flags then adjust */
    if (!described) {
        char path[RF_BENCH_PATH_MAX];
        const char *def = rf_bench_data_path(NULL, "runs/default.json", path, sizeof path, err);
        if (!def) return err->code;
        if (access(def, R_OK) == 0) {
            rf_status st = load_file(def, rf, err);
            if (st) return st;
        }
    }
    /* the run files first, in order, so flags override them */
    for (i = 1; rf_opt_next(s, argc, argv, &i, &h, err) > 0;)
        if (h.opt && !strcmp(h.spelled, "--run")) {
            rf_status st = load_file(h.val, rf, err);
            if (st) return st;
        }
    for (i = 1; rf_opt_next(s, argc, argv, &i, &h, err) > 0;) {
        if (h.opt && !strcmp(h.spelled, "--run")) continue;
        rf_status st = rf_opt_apply(s, &h, err);
        if (st) return st;
    }
    return RF_OK;
}

static rf_status parse_args(int argc, char **argv, rf_runfile *rf, int *want_help, rf_error *err) {
    memset(rf, 0, sizeof *rf);
    rf_run_desc *d = &rf->desc;
    rf_run_desc_defaults(d);
    *want_help = 0;
    for (int i = 1; i < argc; i++) /* help wins wherever it is */
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            *want_help = 1;
            return RF_OK;
        }
    bench_flags f = {.rf = rf, .threads = -1, .reply_cap = -1};
    rf_opt opts[N_BENCH_OPTS];
    const rf_opt_spec s = bench_spec(opts, bench_opts(opts, &f));
    /* the whole command line first: its syntax, --resume, --run and --backend */
    bool described = false;
    const char *resume_dir = NULL;
    int i = 1, r;
    rf_opt_hit h;
    while ((r = rf_opt_next(&s, argc, argv, &i, &h, err)) > 0) {
        if (h.opt && !strcmp(h.spelled, "--resume")) resume_dir = h.val;
        described |= h.opt && (!strcmp(h.spelled, "--run") || !strcmp(h.spelled, "--backend"));
    }
    if (r < 0) return err->code;
    rf_status st = resume_dir ? resume(&s, argc, argv, rf, resume_dir, err)
                              : describe(&s, argc, argv, rf, described, err);
    if (st) return st;
    if (!d->n_backends && !d->precision) { /* the default: the embedded model in-process */
        d->backends[0].cfg.name = "local";
        d->backends[0].cfg.uri = "local";
        d->n_backends = 1;
    }
    rf_status pst = expand_precision(rf, err);
    if (pst) return pst;
    for (int k = 0; k < d->n_backends; k++) {
        rf_bench_backend *bb = &d->backends[k];
        if (f.model && !bb->cfg.model) bb->cfg.model = f.model;
        if (f.key_env && !bb->cfg.api_key_env) bb->cfg.api_key_env = f.key_env;
        /* the default variable only when set: a keyless local server needs no key; a
         * variable named explicitly (flag or run file) must be set */
        if (!bb->cfg.api_key_env && getenv("OPENAI_API_KEY"))
            bb->cfg.api_key_env = "OPENAI_API_KEY";
        if (f.threads >= 0) bb->cfg.threads = (int)f.threads;
        if (f.reply_cap > 0) bb->cfg.max_reply_bytes = f.reply_cap;
    }
    if (!d->suites_set && !d->aba) d->speed = d->load = d->accuracy = d->agent = d->probe = true;
    return rf_run_desc_check(d, err);
}

rf_status rf_runfile_parse_args(int argc, char **argv, rf_runfile *rf, int *want_help,
                                rf_error *err) {
    rf_status st = parse_args(argc, argv, rf, want_help, err);
    if (st) rf_runfile_free(rf); /* nothing of a refused description is kept */
    return st;
}
