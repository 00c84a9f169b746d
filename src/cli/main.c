/* main.c: the roofline command: dispatches to one verb per file. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "model/context.h"
#include "model/registry.h"

typedef struct verb_entry {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} verb_entry;

static const verb_entry g_verbs[] = {
    {"bench", cli_bench, "the benchmark agent: suites over backends, scoreboard and report"},
    {"run", cli_run, "generate text from a prompt (streams to stdout)"},
    {"serve", cli_serve, "an OpenAI-compatible HTTP server on the engine (docs/server.md)"},
    {"tokenize", cli_tokenize, "print the token ids of a text"},
    {"inspect", cli_inspect, "a GGUF or safetensors checkpoint: tensors, memory, bytes/token, KV"},
    {"quantize", cli_quantize, "rewrite a GGUF model's weights as F16, Q8_0, Q4_0, Q4_K, ..."},
    {"membw", cli_membw, "measure the machine's memory read bandwidth"},
    {"speed", cli_speed, "engine throughput: prefill, decode, batched decode (as llama-bench)"},
    {"fake-backend", cli_fake, "a fake OpenAI server with a programmed schedule and faults"},
    {"report", cli_report, "the report of run directories: figures, cost, roofline, HTML"},
    {"cost", cli_cost, "the cost model: $/M tokens, $/month, break-even against per-token prices"},
    {"prices", cli_prices, "on-demand AWS prices (Price List API) into the prices file"},
    {"models", cli_models, "the embedded models, their files, licences, and which are installed"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: roofline VERB [options]   (roofline VERB --help for a verb's options)\n\n");
    for (size_t i = 0; i < sizeof g_verbs / sizeof g_verbs[0]; i++)
        fprintf(f, "  %-10s %s\n", g_verbs[i].name, g_verbs[i].help);
    fprintf(f, "\nWith no -m, verbs use the embedded default model:\n  %s\n", cli_default_model());
}

static char g_model_path[4096]; /* CLI-only state: the last model path resolved */

const char *cli_model(const char *verb, const char *given) {
    rf_error err = {0};
    if (rf_model_resolve(given, g_model_path, sizeof g_model_path, &err)) {
        cli_errorf(verb, "%s", err.msg);
        return NULL;
    }
    return g_model_path;
}

const char *cli_default_model(void) {
    rf_error err = {0};
    if (rf_model_resolve(NULL, g_model_path, sizeof g_model_path, &err))
        snprintf(g_model_path, sizeof g_model_path, "%s (%s)", RF_MODEL_DEFAULT_NAME, err.msg);
    return g_model_path;
}

void cli_errorf(const char *verb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "roofline %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_print_stages(const char *title, int64_t steps, int64_t tokens, int n,
                      const char *const *names, const int64_t *ns) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += ns[i];
    if (!steps || !total) return;
    fprintf(stderr, "%s (%lld steps, %lld tokens):\n", title, (long long)steps, (long long)tokens);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %-10s %8.3f ms/step %5.1f%%\n", names[i],
                (double)ns[i] / 1e6 / (double)steps, 100.0 * (double)ns[i] / (double)total);
    fprintf(stderr, "  %-10s %8.3f ms/step\n", "total", (double)total / 1e6 / (double)steps);
}

void cli_print_profile(const rf_context *c, const char *title) {
    rf_profile p = rf_context_profile(c);
    const char *names[RF_PROF_COUNT];
    for (int i = 0; i < RF_PROF_COUNT; i++) names[i] = rf_prof_stage_name((rf_prof_stage)i);
    cli_print_stages(title, p.calls, p.tokens, RF_PROF_COUNT, names, p.ns);
}

int cli_exit_for(rf_status st) {
    switch (st) {
    case RF_OK:
        return RF_EXIT_OK;
    case RF_ERR_IO:
    case RF_ERR_FORMAT:
    case RF_ERR_UNSUPPORTED:
    case RF_ERR_MODEL:
    case RF_ERR_ARG:
    case RF_ERR_CONTEXT:
        return RF_EXIT_BAD_INPUT;
    default:
        return RF_EXIT_FAIL;
    }
}

void cli_raise_fd_limit(const char *verb) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max) return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        cli_errorf(verb, "cannot raise the descriptor limit from %llu: %s", (unsigned long long)was,
                   strerror(errno));
}

int cli_opts(const char *verb, const rf_opt_spec *spec, int argc, char **argv) {
    bool help = false;
    rf_error err = {0};
    if (rf_opt_parse(spec, argc, argv, &help, &err)) {
        cli_errorf(verb, "%s", err.msg);
        return RF_EXIT_BAD_INPUT;
    }
    if (help) {
        rf_opt_help(stdout, spec);
        return RF_EXIT_OK;
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? RF_EXIT_BAD_INPUT : RF_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("roofline %s\n", ROOFLINE_VERSION);
        return RF_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof g_verbs / sizeof g_verbs[0]; i++)
        if (strcmp(argv[1], g_verbs[i].name) == 0) return g_verbs[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "roofline: unknown verb '%s' (roofline --help lists the verbs)\n", argv[1]);
    return RF_EXIT_BAD_INPUT;
}
