/* cmd_run.c: `roofline run`: generate text from a prompt, streaming it to stdout, with the
 * counts and speeds on stderr at the end. With --chat and no -p, an interactive conversation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "model/chat.h"
#include "model/context.h"
#include "model/sampler.h"
#include "util/buf.h"
#include "util/clock.h"

typedef struct run_opts {
    const char *model, *prompt, *system;
    bool chat;
    long n_predict, threads, n_ctx, top_k;
    double temp, top_p;
    unsigned long long seed;
    bool seed_set;
    bool profile;
    bool ignore_eos;
    bool widen;
    int isa;
    const char *chat_template; /* --chat-template: force a family */
} run_opts;

typedef struct run_stats {
    int64_t n_prompt, n_gen, n_decode_steps;
    int64_t prefill_ns, decode_ns;
} run_stats;

static rf_status parse_isa(void *dest, const char *opt, const char *v, rf_error *err) {
    int *isa = dest;
    *isa = rf_isa_parse(v);
    if (*isa < 0)
        return rf_error_set(err, RF_ERR_ARG, "%s expects scalar, avx2, avx512 or neon, got '%s'",
                            opt, v);
    return RF_OK;
}

static bool parse_args(int argc, char **argv, run_opts *o, int *rc) {
    *o = (run_opts){.n_predict = 256, .temp = 0.8, .top_k = 40, .top_p = 0.95, .isa = -1};
    long seed = -1;
    char model_help[4200];
    snprintf(model_help, sizeof model_help, "GGUF file (default: the embedded model, %s)",
             cli_default_model());
    const rf_opt opts[] = {
        {NULL, "-m", RF_OPT_STRING, RF_OPT_DEST(o->model), .metavar = "MODEL", .help = model_help},
        {NULL, "-p", RF_OPT_STRING, RF_OPT_DEST(o->prompt), .metavar = "PROMPT",
         .help = "prompt text; special-token text such as <start_of_turn> is parsed"},
        {"--chat", NULL, RF_OPT_TRUE, RF_OPT_DEST(o->chat),
         .help = "wrap PROMPT as one user turn in the model's chat template; without -p, an "
                 "interactive conversation on stdin"},
        {"--system", NULL, RF_OPT_STRING, RF_OPT_DEST(o->system), .metavar = "TEXT",
         .help = "system message for --chat"},
        {"--chat-template", NULL, RF_OPT_STRING, RF_OPT_DEST(o->chat_template), .metavar = "F",
         .help = "render --chat as F (gemma, chatml, qwen) whatever the file's template is"},
        {NULL, "-n", RF_OPT_INT, RF_OPT_DEST(o->n_predict), .lo = -1, .hi = 1 << 24, .metavar = "N",
         .help = "tokens to generate (default 256; -1: until end of turn or context)"},
        {"--temp", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(o->temp), .lo = 0, .hi = 100, .metavar = "T",
         .help = "temperature (default 0.8; 0 = greedy)"},
        {"--top-k", NULL, RF_OPT_INT, RF_OPT_DEST(o->top_k), .lo = 0, .hi = 1 << 30, .metavar = "K",
         .help = "keep the K most likely tokens (default 40; 0 = off)"},
        {"--top-p", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(o->top_p), .lo = 1e-6, .hi = 1, .metavar = "P",
         .help = "nucleus mass (default 0.95; 1 = off)"},
        {"--seed", NULL, RF_OPT_INT, RF_OPT_DEST(seed), .lo = 0, .hi = 0x7fffffffL, .metavar = "S",
         .help = "sampling seed (default: random, printed at the end)"},
        {NULL, "-t", RF_OPT_INT, RF_OPT_DEST(o->threads), .lo = 1, .hi = 1024, .metavar = "THREADS",
         .help = "threads (default: physical cores)"},
        {NULL, "-c", RF_OPT_INT, RF_OPT_DEST(o->n_ctx), .lo = 1, .hi = 1 << 24, .metavar = "CTX",
         .help = "context size in tokens (default 4096)"},
        {"--kernels", NULL, RF_OPT_STRING, .dest = &o->isa, .fn = parse_isa, .metavar = "K",
         .help = "kernel set: scalar, avx2, avx512, neon (default: the best this CPU runs)"},
        {"--ignore-eos", NULL, RF_OPT_TRUE, RF_OPT_DEST(o->ignore_eos),
         .help = "keep generating through end-of-turn tokens (for timing)"},
        {"--profile", NULL, RF_OPT_TRUE, RF_OPT_DEST(o->profile),
         .help = "after the run, where decode time went, per stage"},
        {"--widen", NULL, RF_OPT_TRUE, RF_OPT_DEST(o->widen),
         .help = "every matmul decodes its weight rows to floats on every call and multiplies in "
                 "floats, instead of the native integer kernels"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline run",
        .about = "Streams the generated text to stdout; prompt tokens, generated tokens, prefill "
                 "and\ndecode tok/s go to stderr at the end.\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
    };
    *rc = cli_opts("run", &spec, argc, argv);
    if (*rc >= 0) return false;
    *rc = RF_EXIT_BAD_INPUT;
    o->seed_set = seed >= 0;
    if (o->seed_set) o->seed = (unsigned long long)seed;
    if (!o->prompt && !o->chat) {
        cli_errorf("run", "give -p PROMPT, or --chat for a conversation");
        return false;
    }
    o->model = cli_model("run", o->model);
    if (!o->model) return false; /* *rc is RF_EXIT_BAD_INPUT */
    if (!o->seed_set) o->seed = (unsigned long long)time(NULL) ^ (unsigned long long)rf_now_ns();
    *rc = RF_EXIT_OK;
    return true;
}

/* Tokenizes text into *ids (replacing what it held). */
static rf_status tokenize(const rf_tokenizer *tok, const char *text, int32_t **ids, int64_t *n,
                          rf_error *err) {
    int32_t *p = NULL;
    int64_t got = rf_tokenizer_encode_alloc(tok, text, strlen(text), true, true, &p, err);
    if (got < 0) return err->code ? err->code : RF_ERR_INTERNAL;
    free(*ids);
    *ids = p;
    *n = got;
    return RF_OK;
}

/* What the decode steps ask the head for: only the best candidates when they are all the
 * sampler needs (greedy, top-k), else every logit. */
static int8_t out_mode(const rf_context *c, const rf_sampler *smp) {
    return rf_sampler_fits_top(smp, rf_context_n_top(c)) ? RF_OUT_TOP : RF_OUT_LOGITS;
}

/* The next token from the last output of the last batch (sequence 0), into *id; RF_ERR_MODEL
 * when that output has a NaN or an infinity among its logits. */
static rf_status sample(const rf_context *c, rf_sampler *smp, int32_t *id, rf_error *err) {
    int32_t last = rf_context_n_outputs(c) - 1;
    if (!rf_context_output_finite(c, last))
        return rf_error_set(err, RF_ERR_MODEL,
                            "non-finite logits at position %d (the model's weights or activations "
                            "are NaN/Inf)",
                            rf_context_seq_len(c, 0) - 1);
    const int32_t *ids;
    const float *vals;
    int32_t n = rf_context_top(c, last, &ids, &vals);
    *id = n ? rf_sampler_sample_top(smp, ids, vals, n)
            : rf_sampler_sample(smp, rf_context_logits(c, last));
    return RF_OK;
}

/* Prefills ids[from..n) into sequence 0 in chunks of n_batch, asking for the last logits. */
static rf_status prefill(rf_context *c, const int32_t *ids, int64_t from, int64_t n, int8_t mode,
                         rf_error *err) {
    int32_t nb = rf_context_n_batch(c);
    int32_t *pos = malloc((size_t)nb * sizeof *pos), *seq = calloc((size_t)nb, sizeof *seq);
    int8_t *lg = calloc((size_t)nb, 1);
    rf_status st = RF_OK;
    if (!pos || !seq || !lg) {
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int64_t i = from; i < n && !st; i += nb) {
        int32_t m = (int32_t)(n - i < nb ? n - i : nb);
        for (int32_t j = 0; j < m; j++) {
            pos[j] = (int32_t)(i + j);
            lg[j] = i + j == n - 1 ? mode : RF_OUT_NONE;
        }
        rf_batch b = {m, ids + i, pos, seq, lg};
        st = rf_decode(c, &b, err);
    }
out:
    free(pos);
    free(seq);
    free(lg);
    return st;
}

/* Samples and streams up to n_predict tokens after the prompt already in the cache; appends
 * them to *hist when hist is not NULL. */
static rf_status generate(rf_context *c, rf_sampler *smp, const rf_tokenizer *tok, long n_predict,
                          bool ignore_eos, run_stats *stats, int32_t **hist, int64_t *n_hist,
                          rf_error *err) {
    const int32_t n_ctx = rf_context_n_ctx(c);
    char piece[256];
    int64_t t0 = rf_now_ns();
    const int8_t mode = out_mode(c, smp);
    for (long i = 0; n_predict < 0 || i < n_predict; i++) {
        int32_t id = 0;
        rf_status sst = sample(c, smp, &id, err);
        if (sst) return sst;
        stats->n_gen++;
        if (!ignore_eos && rf_tokenizer_is_eog(tok, id)) break;
        int32_t len = rf_tokenizer_piece(tok, id, false, piece, (int32_t)sizeof piece);
        if (len > 0)
            fwrite(piece, 1, (size_t)(len < (int32_t)sizeof piece ? len : (int32_t)sizeof piece),
                   stdout);
        fflush(stdout);
        if (hist) {
            int32_t *p = realloc(*hist, (size_t)(*n_hist + 1) * sizeof *p);
            if (!p) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            *hist = p;
            p[(*n_hist)++] = id;
        }
        if (n_predict >= 0 && i + 1 >= n_predict) break;
        int32_t pos = rf_context_seq_len(c, 0);
        if (pos >= n_ctx) {
            fprintf(stderr, "\n[context full: %d tokens]\n", n_ctx);
            break;
        }
        int32_t seq = 0;
        int8_t lg = mode;
        rf_batch b = {1, &id, &pos, &seq, &lg};
        rf_status st = rf_decode(c, &b, err);
        if (st) return st;
        stats->n_decode_steps++;
    }
    stats->decode_ns += rf_now_ns() - t0;
    return RF_OK;
}

static void print_stats(const run_stats *s, const run_opts *o, const rf_context *c) {
    double pf = s->prefill_ns > 0 ? (double)s->n_prompt * 1e9 / (double)s->prefill_ns : 0;
    double dc = s->decode_ns > 0 ? (double)s->n_decode_steps * 1e9 / (double)s->decode_ns : 0;
    fprintf(stderr,
            "\n\nprompt tokens: %lld, generated tokens: %lld, prefill: %.2f tok/s (%.1f ms), "
            "decode: %.2f tok/s (%lld steps, %.1f ms)\nthreads: %d, kernels: %s%s, seed: %llu\n",
            (long long)s->n_prompt, (long long)s->n_gen, pf, (double)s->prefill_ns / 1e6, dc,
            (long long)s->n_decode_steps, (double)s->decode_ns / 1e6, rf_context_n_threads(c),
            rf_isa_name(rf_context_isa(c)), rf_context_widened(c) ? " (widened)" : "", o->seed);
}

/* One prompt, then exit. */
static int run_once(rf_context *c, rf_sampler *smp, const rf_model *m, const run_opts *o) {
    rf_error err = {0};
    rf_buf text;
    rf_buf_init(&text, 0);
    int32_t *ids = NULL;
    int64_t n = 0;
    run_stats stats = {0};
    rf_status st;
    if (o->chat) {
        rf_chat_msg msgs[2] = {{"system", o->system ? o->system : "", NULL, NULL},
                               {"user", o->prompt, NULL, NULL}};
        st = rf_chat_render(rf_model_chat_template(m), o->system ? msgs : msgs + 1,
                            o->system ? 2 : 1, NULL, true, &text, &err);
    } else {
        st = rf_buf_append_str(&text, o->prompt);
        if (!st) st = rf_buf_terminate(&text);
    }
    if (!st) st = tokenize(rf_model_tokenizer(m), (const char *)text.data, &ids, &n, &err);
    if (!st && n >= rf_context_n_ctx(c))
        st = rf_error_set(&err, RF_ERR_CONTEXT,
                          "the prompt has %lld tokens, more than the context of %d tokens (-c)",
                          (long long)n, rf_context_n_ctx(c));
    if (!st) {
        stats.n_prompt = n;
        int64_t t0 = rf_now_ns();
        st = prefill(c, ids, 0, n, out_mode(c, smp), &err);
        stats.prefill_ns = rf_now_ns() - t0;
        if (o->profile) rf_context_profile_enable(c, 1);
    }
    if (!st)
        st = generate(c, smp, rf_model_tokenizer(m), o->n_predict, o->ignore_eos, &stats, NULL,
                      NULL, &err);
    if (st) {
        cli_errorf("run", "%s", err.msg);
    } else {
        print_stats(&stats, o, c);
        if (o->profile) cli_print_profile(c, "decode profile");
    }
    free(ids);
    rf_buf_free(&text);
    return st ? cli_exit_for(st) : RF_EXIT_OK;
}

/* Interactive conversation: each turn re-renders the whole conversation and prefills only the
 * tokens past what the cache already holds. */
static int run_chat(rf_context *c, rf_sampler *smp, const rf_model *m, const run_opts *o) {
    const rf_tokenizer *tok = rf_model_tokenizer(m);
    rf_error err = {0};
    rf_chat_msg *msgs = NULL;
    size_t n_msgs = 0;
    int32_t *cached = NULL, *ids = NULL;
    int64_t n_cached = 0, n_ids = 0;
    char line[8192];
    rf_status st = RF_OK;
    run_stats total = {0};
    if (o->system) {
        msgs = malloc(sizeof *msgs);
        if (!msgs) return RF_EXIT_FAIL;
        msgs[0] = (rf_chat_msg){"system", strdup(o->system), NULL, NULL};
        n_msgs = 1;
    }
    fprintf(stderr, "roofline chat: type a message, an empty line or Ctrl-D ends.\n");
    for (;;) {
        fprintf(stderr, "> ");
        if (!fgets(line, sizeof line, stdin)) break;
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) break;
        rf_chat_msg *p = realloc(msgs, (n_msgs + 2) * sizeof *p);
        if (!p) break;
        msgs = p;
        msgs[n_msgs++] = (rf_chat_msg){"user", strdup(line), NULL, NULL};
        rf_buf text;
        rf_buf_init(&text, 0);
        st = rf_chat_render(rf_model_chat_template(m), msgs, n_msgs, NULL, true, &text, &err);
        if (!st) st = tokenize(tok, (const char *)text.data, &ids, &n_ids, &err);
        rf_buf_free(&text);
        if (st) break;
        if (n_ids >= rf_context_n_ctx(c)) {
            st = rf_error_set(&err, RF_ERR_CONTEXT,
                              "the conversation has %lld tokens, more than "
                              "the context of %d tokens (-c)",
                              (long long)n_ids, rf_context_n_ctx(c));
            break;
        }
        /* Reuse the cached prefix when the new rendering extends it; else start over. */
        int64_t keep = 0;
        while (keep < n_cached && keep < n_ids && cached[keep] == ids[keep]) keep++;
        if (keep == n_ids) keep--; /* the last prompt token must run to give logits */
        if (keep < n_cached && rf_context_seq_truncate(c, 0, (int32_t)keep, &err) != RF_OK) {
            rf_context_seq_reset(c, 0);
            keep = 0;
        }
        run_stats s = {0};
        s.n_prompt = n_ids - keep;
        int64_t t0 = rf_now_ns();
        st = prefill(c, ids, keep, n_ids, out_mode(c, smp), &err);
        s.prefill_ns = rf_now_ns() - t0;
        if (st) break;
        int32_t *nc = realloc(cached, (size_t)n_ids * sizeof *nc);
        if (!nc) break;
        cached = nc;
        memcpy(cached, ids, (size_t)n_ids * sizeof *ids);
        n_cached = n_ids;
        int64_t before = n_cached;
        st = generate(c, smp, tok, o->n_predict, o->ignore_eos, &s, &cached, &n_cached, &err);
        if (st) break;
        /* The reply (as decoded text) becomes the model turn; the cache holds all but the last
         * sampled token, so the next turn re-renders and re-prefills from the divergence. */
        char *reply = malloc((size_t)(n_cached - before) * 64 + 1);
        if (!reply) break;
        rf_tokenizer_decode(tok, cached + before, n_cached - before, false, reply,
                            (n_cached - before) * 64 + 1);
        msgs[n_msgs++] = (rf_chat_msg){"assistant", reply, NULL, NULL};
        n_cached = rf_context_seq_len(c, 0);
        fputs("\n", stdout);
        total.n_prompt += s.n_prompt;
        total.n_gen += s.n_gen;
        total.n_decode_steps += s.n_decode_steps;
        total.prefill_ns += s.prefill_ns;
        total.decode_ns += s.decode_ns;
    }
    if (st)
        cli_errorf("run", "%s", err.msg);
    else
        print_stats(&total, o, c);
    for (size_t i = 0; i < n_msgs; i++) free((void *)msgs[i].content);
    free(msgs);
    free(cached);
    free(ids);
    return st ? cli_exit_for(st) : RF_EXIT_OK;
}

int cli_run(int argc, char **argv) {
    run_opts o;
    int rc;
    if (!parse_args(argc, argv, &o, &rc)) return rc;
    rf_error err = {0};
    rf_model *m = NULL;
    rf_context *c = NULL;
    rf_sampler *smp = NULL;
    rf_status st = rf_model_load(o.model, &m, &err);
    if (!st && o.chat_template) {
        rf_chat_family fam;
        if (rf_chat_family_parse(o.chat_template, &fam))
            rf_model_set_chat_family(m, fam);
        else
            st = rf_error_set(&err, RF_ERR_ARG,
                              "--chat-template: unknown family '%s' (gemma, chatml, qwen)",
                              o.chat_template);
    }
    if (!st) {
        rf_context_params cp = rf_context_default_params();
        cp.n_ctx = (int32_t)o.n_ctx;
        cp.n_threads = (int32_t)o.threads;
        cp.n_outputs = 1;
        cp.isa = o.isa;
        cp.widen = o.widen;
        st = rf_context_new(m, &cp, &c, &err);
    }
    if (!st) {
        rf_sampler_params sp = {(float)o.temp, (int32_t)o.top_k, (float)o.top_p, o.seed, 0.0f,
                                0.0f};
        st = rf_sampler_new(&sp, rf_model_hparams(m)->n_vocab, &smp, &err);
    }
    if (st) {
        cli_errorf("run", "%s", err.msg);
        rc = cli_exit_for(st);
    } else {
        rc = o.prompt ? run_once(c, smp, m, &o) : run_chat(c, smp, m, &o);
    }
    rf_sampler_free(smp);
    rf_context_free(c);
    rf_model_free(m);
    return rc;
}
