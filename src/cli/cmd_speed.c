/* cmd_speed.c: `roofline speed`: engine throughput measured the way llama-bench does it.
 *   pp N: one batch of N tokens (BOS, then seeded random ids) into an empty cache, logits for
 *         the last token only;
 *   tg N: N single-token decode steps from an empty cache (BOS first, then random ids), full
 *         logits each step, no sampling;
 *   batched decode at B: B sequences, each prefilled with a 16-token prompt, then N steps that
 *         decode one token for every sequence in one batch; aggregate tok/s = B * N / time.
 * One warm-up run of each, then R repetitions; medians reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "util/stats.h"
#include "analysis/roofline.h"
#include "cli.h"
#include "model/context.h"
#include "util/clock.h"

#define MAX_B    16
#define MAX_RUNS 64

typedef struct speed_opts {
    const char *model;
    long threads, pp, tg, reps;
    long bs[MAX_B];
    int n_bs;
    int isa;
    int8_t head; /* RF_OUT_LOGITS or RF_OUT_TOP for tg and batched steps */
    bool json;
    bool profile; /* after the measured runs, one profiled run of each decode test */
    bool widen;   /* the widened matmul path */
} speed_opts;

static uint64_t g_rng = 0x1234567;

static int32_t rand_tok(int32_t n_vocab) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int32_t)((g_rng >> 33) % (uint64_t)n_vocab);
}

/* tok/s of one pp run */
static double run_pp(rf_context *c, int n, int32_t bos, int32_t n_vocab, rf_error *err) {
    int32_t *tok = malloc((size_t)n * sizeof *tok), *pos = malloc((size_t)n * sizeof *pos);
    int32_t *seq = calloc((size_t)n, sizeof *seq);
    int8_t *lg = calloc((size_t)n, 1);
    double r = -1;
    if (tok && pos && seq && lg) {
        for (int i = 0; i < n; i++) {
            tok[i] = i == 0 ? bos : rand_tok(n_vocab);
            pos[i] = i;
        }
        lg[n - 1] = RF_OUT_LOGITS;
        rf_context_seq_reset(c, 0);
        rf_batch b = {n, tok, pos, seq, lg};
        int64_t t0 = rf_now_ns();
        if (rf_decode(c, &b, err) == RF_OK) r = (double)n * 1e9 / (double)(rf_now_ns() - t0);
    }
    free(tok);
    free(pos);
    free(seq);
    free(lg);
    return r;
}

/* aggregate tok/s of one decode run of B sequences (B = 1: llama-bench's tg) */
static double run_decode(rf_context *c, int B, int steps, int prompt, int8_t head, int32_t bos,
                         int32_t n_vocab, bool profile, rf_error *err) {
    int32_t tok[MAX_B * 16], pos[MAX_B * 16], seq[MAX_B * 16];
    int8_t lg[MAX_B * 16];
    for (int s = 0; s < B; s++) rf_context_seq_reset(c, s);
    if (prompt > 0) { /* prefill every sequence's prompt in one batch */
        int n = 0;
        for (int s = 0; s < B; s++)
            for (int i = 0; i < prompt; i++, n++) {
                tok[n] = i == 0 ? bos : rand_tok(n_vocab);
                pos[n] = i;
                seq[n] = s;
                lg[n] = RF_OUT_NONE;
            }
        rf_batch b = {n, tok, pos, seq, lg};
        if (rf_decode(c, &b, err)) return -1;
    }
    if (profile) rf_context_profile_enable(c, 1); /* the steps only, not the prompts */
    int64_t t0 = rf_now_ns();
    for (int step = 0; step < steps; step++) {
        for (int s = 0; s < B; s++) {
            tok[s] = prompt == 0 && step == 0 ? bos : rand_tok(n_vocab);
            pos[s] = prompt + step;
            seq[s] = s;
            lg[s] = head;
        }
        rf_batch b = {B, tok, pos, seq, lg};
        if (rf_decode(c, &b, err)) return -1;
    }
    double r = (double)B * steps * 1e9 / (double)(rf_now_ns() - t0);
    if (profile) {
        char title[64];
        snprintf(title, sizeof title, prompt ? "decode profile, B=%d" : "decode profile, tg (B=%d)",
                 B);
        cli_print_profile(c, title);
        rf_context_profile_enable(c, 0);
    }
    return r;
}

/* -b 1,4,16: dest is the speed_opts */
static rf_status parse_list(void *dest, const char *opt, const char *v, rf_error *err) {
    speed_opts *o = dest;
    const char *s = v;
    o->n_bs = 0;
    bool ok = true;
    while (*s && o->n_bs < MAX_B) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 1 || x > MAX_B) {
            ok = false;
            break;
        }
        o->bs[o->n_bs++] = x;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') {
            ok = false;
            break;
        }
    }
    if (!ok || !o->n_bs)
        return rf_error_set(err, RF_ERR_ARG,
                            "%s expects a list like 1,4,16 of values in [1, %d], got '%s'", opt,
                            MAX_B, v);
    return RF_OK;
}

static rf_status parse_head(void *dest, const char *opt, const char *v, rf_error *err) {
    if (strcmp(v, "logits") && strcmp(v, "top"))
        return rf_error_set(err, RF_ERR_ARG, "%s expects logits or top, got '%s'", opt, v);
    *(int8_t *)dest = v[0] == 't' ? RF_OUT_TOP : RF_OUT_LOGITS;
    return RF_OK;
}

static rf_status parse_isa(void *dest, const char *opt, const char *v, rf_error *err) {
    int *isa = dest;
    *isa = rf_isa_parse(v);
    if (*isa < 0)
        return rf_error_set(err, RF_ERR_ARG, "%s expects scalar, avx2, avx512 or neon, got '%s'",
                            opt, v);
    return RF_OK;
}

/* The options into *o: -1 to go on, else the exit status (help printed, or an error). */
static int parse_opts(int argc, char **argv, speed_opts *o) {
    *o = (speed_opts){.pp = 512, .tg = 128, .reps = 5, .isa = -1, .head = RF_OUT_LOGITS};
    o->bs[0] = 1, o->bs[1] = 4, o->bs[2] = 16, o->n_bs = 3;
    char b_help[200];
    snprintf(b_help, sizeof b_help,
             "batched decode: aggregate tok/s of B sequences stepping together, each after a "
             "16-token prompt, N steps (default 1,4,16; at most %d)",
             MAX_B);
    const rf_opt opts[] = {
        {NULL, "-m", RF_OPT_STRING, RF_OPT_DEST(o->model), .metavar = "MODEL",
         .help = "GGUF file or embedded model's name (default: the embedded model)"},
        {NULL, "-t", RF_OPT_INT, RF_OPT_DEST(o->threads), .lo = 1, .hi = 1024, .metavar = "THREADS",
         .help = "threads (default: physical cores)"},
        {NULL, "-p", RF_OPT_INT, RF_OPT_DEST(o->pp), .lo = 0, .hi = 16384, .metavar = "N",
         .help = "prompt processing: one batch of N tokens (default 512; 0 skips)"},
        {NULL, "-n", RF_OPT_INT, RF_OPT_DEST(o->tg), .lo = 0, .hi = 16384, .metavar = "N",
         .help = "text generation: N single-token steps with full logits (default 128; 0 skips)"},
        {NULL, "-b", RF_OPT_STRING, .dest = o, .fn = parse_list, .metavar = "B[,B...]",
         .help = b_help},
        {NULL, "-r", RF_OPT_INT, RF_OPT_DEST(o->reps), .lo = 1, .hi = MAX_RUNS, .metavar = "REPS",
         .help = "repetitions (default 5)"},
        {"--head", NULL, RF_OPT_STRING, .dest = &o->head, .fn = parse_head, .metavar = "logits|top",
         .help = "what the decode steps compute: all logits (default, as llama-bench) or the top "
                 "candidates only (what greedy and top-k sampling need)"},
        {"--kernels", NULL, RF_OPT_STRING, .dest = &o->isa, .fn = parse_isa, .metavar = "K",
         .help = "kernel set: scalar, avx2, avx512, neon (default: the best this CPU runs)"},
        {"--json", NULL, RF_OPT_TRUE, RF_OPT_DEST(o->json), .help = "print the figures as JSON"},
        {"--profile", NULL, RF_OPT_TRUE, RF_OPT_DEST(o->profile),
         .help = "after the measured runs, one more of tg and of each B with the time of each "
                 "stage per decode step (to stderr; the figures above exclude it)"},
        {"--widen", NULL, RF_OPT_TRUE, RF_OPT_DEST(o->widen),
         .help = "every matmul decodes its weight rows to floats on every call and multiplies in "
                 "floats (the widened path), instead of the native integer kernels"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline speed",
        .about = "Engine throughput, measured as llama-bench does (medians of REPS after a "
                 "warm-up).\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
    };
    return cli_opts("speed", &spec, argc, argv);
}

int cli_speed(int argc, char **argv) {
    speed_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    o.model = cli_model("speed", o.model);
    if (!o.model) return RF_EXIT_BAD_INPUT;
    int maxb = 1;
    for (int i = 0; i < o.n_bs; i++)
        if (o.bs[i] > maxb) maxb = (int)o.bs[i];
    rf_error err = {0};
    rf_model *m = NULL;
    rf_context *c = NULL;
    rf_status st = rf_model_load(o.model, &m, &err);
    if (!st) {
        rf_context_params cp = rf_context_default_params();
        long need = (o.pp > 16 + o.tg ? o.pp : 16 + o.tg) + 8;
        cp.n_ctx = (int32_t)need;
        cp.n_seq = maxb;
        cp.n_batch = (int32_t)(o.pp > maxb * 16 ? o.pp : maxb * 16);
        cp.n_outputs = maxb;
        cp.n_threads = (int32_t)o.threads;
        cp.isa = o.isa;
        cp.widen = o.widen;
        st = rf_context_new(m, &cp, &c, &err);
    }
    if (st) {
        cli_errorf("speed", "%s", err.msg);
        rf_model_free(m);
        return cli_exit_for(st);
    }
    const int32_t nv = rf_model_hparams(m)->n_vocab;
    const int32_t bos = rf_tokenizer_special(rf_model_tokenizer(m)).bos;
    double pp[MAX_RUNS], tg[MAX_RUNS], bd[MAX_B][MAX_RUNS];
    int ok = 1;
    /* interleave the tests within each repetition, after one warm-up of each */
    for (long r = -1; r < o.reps && ok; r++) {
        double v;
        if (o.pp) {
            v = run_pp(c, (int)o.pp, bos, nv, &err);
            ok &= v > 0;
            if (r >= 0) pp[r] = v;
        }
        if (o.tg) {
            v = run_decode(c, 1, (int)o.tg, 0, o.head, bos, nv, false, &err);
            ok &= v > 0;
            if (r >= 0) tg[r] = v;
        }
        for (int i = 0; i < o.n_bs && o.tg; i++) {
            v = run_decode(c, (int)o.bs[i], (int)o.tg, 16, o.head, bos, nv, false, &err);
            ok &= v > 0;
            if (r >= 0) bd[i][r] = v;
        }
    }
    if (ok && o.profile &&
        o.tg) { /* profiled runs apart, so timing them costs the figures nothing */
        ok &= run_decode(c, 1, (int)o.tg, 0, o.head, bos, nv, true, &err) > 0;
        for (int i = 0; i < o.n_bs && ok; i++)
            ok &= run_decode(c, (int)o.bs[i], (int)o.tg, 16, o.head, bos, nv, true, &err) > 0;
    }
    if (!ok) {
        cli_errorf("speed", "%s", err.msg);
        rf_context_free(c);
        rf_model_free(m);
        return RF_EXIT_FAIL;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    rf_token_bytes tb = rf_model_token_bytes(m, (int32_t)o.tg);
    int reps = (int)o.reps;
    if (o.json) {
        printf("{\"model\": \"%s\", \"threads\": %d, \"kernels\": \"%s\", \"widen\": %s, \"head\": "
               "\"%s\", "
               "\"reps\": %d, \"bytes_per_token\": %llu, \"peak_rss_bytes\": %lld, "
               "\"kv_bytes\": %llu, \"model_file_bytes\": %llu",
               o.model, rf_context_n_threads(c), rf_isa_name(rf_context_isa(c)),
               rf_context_widened(c) ? "true" : "false", o.head == RF_OUT_TOP ? "top" : "logits",
               reps, (unsigned long long)tb.total, (long long)ru.ru_maxrss * 1024,
               (unsigned long long)rf_context_kv_bytes(c),
               (unsigned long long)rf_gguf_file_size(rf_model_gguf(m)));
        if (o.pp) {
            printf(", \"pp\": {\"n\": %ld, \"median\": %.3f, \"runs\": [", o.pp,
                   rf_median(pp, (size_t)reps));
            for (int r = 0; r < reps; r++) printf(r ? ", %.3f" : "%.3f", pp[r]);
            printf("]}");
        }
        if (o.tg) {
            printf(", \"tg\": {\"n\": %ld, \"median\": %.3f, \"runs\": [", o.tg,
                   rf_median(tg, (size_t)reps));
            for (int r = 0; r < reps; r++) printf(r ? ", %.3f" : "%.3f", tg[r]);
            printf("]}, \"batched\": [");
            for (int i = 0; i < o.n_bs; i++) {
                printf("%s{\"b\": %ld, \"median\": %.3f, \"runs\": [", i ? ", " : "", o.bs[i],
                       rf_median(bd[i], (size_t)reps));
                for (int r = 0; r < reps; r++) printf(r ? ", %.3f" : "%.3f", bd[i][r]);
                printf("]}");
            }
            printf("]");
        }
        printf("}\n");
    } else {
        printf("model %s, %d threads, %s kernels%s, medians of %d\n", o.model,
               rf_context_n_threads(c), rf_isa_name(rf_context_isa(c)),
               rf_context_widened(c) ? " (widened matmuls)" : "", reps);
        if (o.pp) printf("  pp%-5ld %10.2f tok/s\n", o.pp, rf_median(pp, (size_t)reps));
        if (o.tg) {
            printf("  tg%-5ld %10.2f tok/s\n", o.tg, rf_median(tg, (size_t)reps));
            for (int i = 0; i < o.n_bs; i++)
                printf("  B=%-4ld  %10.2f tok/s aggregate (%ld steps)\n", o.bs[i],
                       rf_median(bd[i], (size_t)reps), o.tg);
        }
        printf("  peak RSS %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
    }
    rf_context_free(c);
    rf_model_free(m);
    return RF_EXIT_OK;
}
