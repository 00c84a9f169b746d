/* cmd_run.c: `roofline run`: generate text from a prompt, streaming it to stdout, with the
 * counts and speeds on stderr at the end. With --chat and no -p, an interactive conversation.
 *
 * Generation goes through the engine's public API (roofline/engine.h), one request at a time on
 * an engine of one slot: the engine's scheduler is the only decode-and-sample loop. A --chat
 * conversation is one request per turn; the engine's prefix cache keeps the conversation's KV
 * between turns (only the new tokens are prefilled) and each turn's seed continues the previous
 * turn's random stream (rf_event.next_seed), so the turns sample as one stream. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "roofline/engine.h"
#include "util/clock.h"
#include "util/cpu.h"

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

/* What the stats line reports, summed over a conversation's turns: prompt tokens prefilled
 * (those the prefix cache held are not), tokens generated, decode steps run. */
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

/* One request in flight: filled by the event callback on the engine's scheduler thread, read by
 * the main thread once `done` is set (under mu). */
typedef struct run_turn {
    rf_engine *e;
    long n_predict; /* -n; 0: the one token the engine generates is neither shown nor counted */
    bool profile;   /* profile the decode steps: from the first token event on */
    bool keep;      /* keep the generated ids (a --chat reply) */
    int32_t *ids;   /* generated ids, without the end-of-generation token that ended the turn */
    int64_t n_ids, cap_ids;
    bool nomem; /* ids could not grow */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    rf_event fin;    /* the final event (its pointers are not kept) */
    char error[256]; /* its error message */
} run_turn;

/* The engine's event callback: streams the text to stdout as it comes (as the old loop did,
 * writing from the thread that samples), keeps the ids, hands the final event over. */
static void on_event(void *user, const rf_event *ev) {
    run_turn *t = user;
    const bool show = t->n_predict != 0;
    if (show) {
        if (ev->text_len) fwrite(ev->text, 1, ev->text_len, stdout);
        fflush(stdout);
    }
    /* a final "stop" event's token is the end-of-generation token (no stop strings here) */
    if (show && t->keep && ev->token >= 0 && ev->finish != RF_FINISH_STOP) {
        if (t->n_ids == t->cap_ids) {
            int64_t cap = t->cap_ids ? 2 * t->cap_ids : 256;
            int32_t *p = realloc(t->ids, (size_t)cap * sizeof *p);
            if (p) {
                t->ids = p;
                t->cap_ids = cap;
            }
        }
        if (t->n_ids < t->cap_ids)
            t->ids[t->n_ids++] = ev->token;
        else
            t->nomem = true;
    }
    if (ev->finish == RF_FINISH_NONE) {
        if (t->profile && ev->n_generated == 1) rf_engine_profile_enable(t->e, true);
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->fin = *ev;
    t->fin.text = NULL;
    t->fin.error = NULL;
    t->fin.top_ids = NULL;
    t->fin.top_logprobs = NULL;
    snprintf(t->error, sizeof t->error, "%s", ev->error ? ev->error : "");
    t->done = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Generates after the prompt ids[0..n) (n < the context, checked by the caller) through the
 * engine, streaming the text to stdout, and adds the turn's counts and times to *stats. *seed:
 * the seed to sample with, then the one that continues the stream. With reply, the generated
 * ids go to *reply (malloc'd; the caller frees), *n_reply. */
static rf_status generate(rf_engine *e, const run_opts *o, const int32_t *ids, int64_t n,
                          bool profile, uint64_t *seed, int32_t **reply, int64_t *n_reply,
                          run_stats *stats, rf_error *err) {
    rf_engine_info info;
    rf_engine_get_info(e, &info);
    rf_request_params rp = rf_request_default_params();
    rp.temperature = (float)o->temp;
    rp.top_k = (int32_t)o->top_k;
    rp.top_p = (float)o->top_p;
    rp.seed = *seed;
    rp.ignore_eos = o->ignore_eos;
    /* The engine refuses a max_tokens past the n_ctx - n positions after the prompt, while -n
     * may run into the end of the context (the run stops there, with a note). An -n past them
     * asks for at least the n_ctx - n + 1 tokens the context makes room for, so it is -1 (until
     * the context is full): the same tokens. -n 0 only prefills: the engine generates at least
     * one token, which is neither shown nor counted. */
    if (o->n_predict == 0)
        rp.max_tokens = 1;
    else if (o->n_predict < 0 || n + o->n_predict > info.n_ctx)
        rp.max_tokens = -1;
    else
        rp.max_tokens = (int32_t)o->n_predict;
    run_turn t = {.e = e, .n_predict = o->n_predict, .profile = profile, .keep = reply != NULL};
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    rf_status st = rf_engine_submit(e, ids, (int32_t)n, &rp, on_event, &t, NULL, err);
    if (!st) { /* one final event comes for every accepted request */
        pthread_mutex_lock(&t.mu);
        while (!t.done) pthread_cond_wait(&t.cv, &t.mu);
        pthread_mutex_unlock(&t.mu);
    }
    pthread_mutex_destroy(&t.mu);
    pthread_cond_destroy(&t.cv);
    const rf_event *f = &t.fin;
    if (!st && f->finish == RF_FINISH_ERROR) /* non-finite logits, or a failed step */
        st = rf_error_set(err, RF_ERR_MODEL, "%s", t.error);
    else if (!st && f->finish == RF_FINISH_CANCELLED)
        st = rf_error_set(err, RF_ERR_INTERNAL, "the engine cancelled the generation");
    else if (!st && t.nomem)
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    if (!st) {
        int64_t gen = o->n_predict == 0 ? 0 : f->n_generated;
        if (f->finish == RF_FINISH_LENGTH && (o->n_predict < 0 || gen < o->n_predict))
            fprintf(stderr, "\n[context full: %d tokens]\n", info.n_ctx);
        stats->n_prompt += f->n_prompt - f->n_cached;
        stats->prefill_ns += f->t_first_ns - f->t_admit_ns;
        stats->n_gen += gen;
        if (gen > 0) {
            stats->n_decode_steps += gen - 1; /* each token after the first took a step */
            stats->decode_ns += f->t_ns - f->t_first_ns;
            *seed = f->next_seed;
        }
    }
    if (reply && !st) {
        *reply = t.ids;
        *n_reply = t.n_ids;
    } else {
        free(t.ids);
    }
    return st;
}

/* Tokenizes text into *ids (replacing what it held). */
static rf_status tokenize(const rf_engine *e, const char *text, int32_t **ids, int64_t *n,
                          rf_error *err) {
    int32_t *p = NULL;
    int64_t got = rf_engine_tokenize_alloc(e, text, strlen(text), true, true, &p, err);
    if (got < 0) return err->code ? err->code : RF_ERR_INTERNAL;
    free(*ids);
    *ids = p;
    *n = got;
    return RF_OK;
}

static void print_stats(const run_stats *s, const run_opts *o, const rf_engine *e) {
    rf_engine_info info;
    rf_engine_get_info(e, &info);
    double pf = s->prefill_ns > 0 ? (double)s->n_prompt * 1e9 / (double)s->prefill_ns : 0;
    double dc = s->decode_ns > 0 ? (double)s->n_decode_steps * 1e9 / (double)s->decode_ns : 0;
    fprintf(stderr,
            "\n\nprompt tokens: %lld, generated tokens: %lld, prefill: %.2f tok/s (%.1f ms), "
            "decode: %.2f tok/s (%lld steps, %.1f ms)\nthreads: %d, kernels: %s%s, seed: %llu\n",
            (long long)s->n_prompt, (long long)s->n_gen, pf, (double)s->prefill_ns / 1e6, dc,
            (long long)s->n_decode_steps, (double)s->decode_ns / 1e6, info.n_threads, info.kernels,
            info.widened ? " (widened)" : "", o->seed);
}

/* One prompt, then exit. */
static int run_once(rf_engine *e, const run_opts *o) {
    rf_error err = {0};
    char *text = NULL;
    int32_t *ids = NULL;
    int64_t n = 0;
    run_stats stats = {0};
    uint64_t seed = o->seed;
    rf_engine_info info;
    rf_engine_get_info(e, &info);
    rf_status st = RF_OK;
    if (o->chat) {
        rf_message msgs[2] = {{"system", o->system ? o->system : "", NULL, NULL},
                              {"user", o->prompt, NULL, NULL}};
        st = rf_engine_chat_prompt(e, o->system ? msgs : msgs + 1, o->system ? 2 : 1, NULL, true,
                                   &text, &err);
    } else if (!(text = strdup(o->prompt))) {
        st = rf_error_set(&err, RF_ERR_NOMEM, "out of memory");
    }
    if (!st) st = tokenize(e, text, &ids, &n, &err);
    if (!st && n >= info.n_ctx)
        st = rf_error_set(&err, RF_ERR_CONTEXT,
                          "the prompt has %lld tokens, more than the context of %d tokens (-c)",
                          (long long)n, info.n_ctx);
    if (!st) st = generate(e, o, ids, n, o->profile, &seed, NULL, NULL, &stats, &err);
    if (st) {
        cli_errorf("run", "%s", err.msg);
    } else {
        print_stats(&stats, o, e);
        if (o->profile) {
            rf_engine_profile p;
            rf_engine_get_profile(e, &p);
            cli_print_stages("decode profile", p.steps, p.tokens, p.n_stages, p.stage, p.ns);
        }
    }
    free(ids);
    free(text);
    return st ? cli_exit_for(st) : RF_EXIT_OK;
}

/* Interactive conversation: each turn re-renders the whole conversation and submits it; the
 * engine's prefix cache prefills only the tokens past what its KV already holds. */
static int run_chat(rf_engine *e, const run_opts *o) {
    rf_error err = {0};
    rf_message *msgs = NULL;
    size_t n_msgs = 0;
    int32_t *ids = NULL, *reply = NULL;
    int64_t n_ids = 0, n_reply = 0;
    char line[8192];
    rf_status st = RF_OK;
    run_stats total = {0};
    uint64_t seed = o->seed;
    rf_engine_info info;
    rf_engine_get_info(e, &info);
    if (o->system) {
        msgs = malloc(sizeof *msgs);
        char *sys = strdup(o->system);
        if (!msgs || !sys) {
            free(msgs);
            free(sys);
            cli_errorf("run", "out of memory");
            return RF_EXIT_FAIL;
        }
        msgs[0] = (rf_message){"system", sys, NULL, NULL};
        n_msgs = 1;
    }
    fprintf(stderr, "roofline chat: type a message, an empty line or Ctrl-D ends.\n");
    for (;;) {
        fprintf(stderr, "> ");
        if (!fgets(line, sizeof line, stdin)) break;
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) break;
        rf_message *p = realloc(msgs, (n_msgs + 2) * sizeof *p);
        char *user = strdup(line);
        if (p) msgs = p;
        if (!p || !user) {
            free(user);
            st = rf_error_set(&err, RF_ERR_NOMEM, "out of memory");
            break;
        }
        msgs[n_msgs++] = (rf_message){"user", user, NULL, NULL};
        char *text = NULL;
        st = rf_engine_chat_prompt(e, msgs, n_msgs, NULL, true, &text, &err);
        if (!st) st = tokenize(e, text, &ids, &n_ids, &err);
        free(text);
        if (st) break;
        if (n_ids >= info.n_ctx) {
            st = rf_error_set(&err, RF_ERR_CONTEXT,
                              "the conversation has %lld tokens, more than "
                              "the context of %d tokens (-c)",
                              (long long)n_ids, info.n_ctx);
            break;
        }
        free(reply);
        reply = NULL;
        st = generate(e, o, ids, n_ids, false, &seed, &reply, &n_reply, &total, &err);
        if (st) break;
        /* The reply (as decoded text) becomes the model turn: the next turn re-renders it and
         * the prefix cache reuses the KV up to where the rendering diverges. */
        int64_t len = rf_engine_detokenize(e, reply, n_reply, NULL, 0);
        char *text_reply = len >= 0 ? malloc((size_t)len + 1) : NULL;
        if (!text_reply) {
            st = rf_error_set(&err, RF_ERR_NOMEM, "out of memory");
            break;
        }
        rf_engine_detokenize(e, reply, n_reply, text_reply, len + 1);
        msgs[n_msgs++] = (rf_message){"assistant", text_reply, NULL, NULL};
        fputs("\n", stdout);
    }
    if (st)
        cli_errorf("run", "%s", err.msg);
    else
        print_stats(&total, o, e);
    for (size_t i = 0; i < n_msgs; i++) free((void *)msgs[i].content);
    free(msgs);
    free(reply);
    free(ids);
    return st ? cli_exit_for(st) : RF_EXIT_OK;
}

int cli_run(int argc, char **argv) {
    run_opts o;
    int rc;
    if (!parse_args(argc, argv, &o, &rc)) return rc;
    rf_error err = {0};
    rf_engine *e = NULL;
    rf_engine_params ep = rf_engine_default_params();
    ep.model_path = o.model;
    ep.n_threads = (int32_t)o.threads;
    ep.n_ctx = (int32_t)o.n_ctx;
    ep.max_seqs = 1; /* one request at a time: its KV stays for the next --chat turn */
    ep.isa = o.isa;
    ep.widen = o.widen;
    ep.chat_template = o.chat_template;
    rf_status st = rf_engine_open(&ep, &e, &err);
    if (st == RF_ERR_ARG && o.chat_template && !rf_engine_chat_template_known(o.chat_template))
        rf_error_set(&err, RF_ERR_ARG, "--chat-template: unknown family '%s' (gemma, chatml, qwen)",
                     o.chat_template); /* named by its option: the model loaded */
    if (st) {
        cli_errorf("run", "%s", err.msg);
        return cli_exit_for(st);
    }
    rc = o.prompt ? run_once(e, &o) : run_chat(e, &o);
    rf_engine_close(e);
    return rc;
}
