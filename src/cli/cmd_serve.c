/* cmd_serve.c: `roofline serve`: the OpenAI-compatible HTTP server (src/server/http.h) on the
 * engine. The server listens first (GET /health answers 503 "loading" while the model loads),
 * then the engine is opened and handed to it. SIGINT/SIGTERM are blocked before any thread
 * starts and taken with sigwait on the main thread: the server stops accepting, in-flight
 * requests get up to --drain-ms to finish, the rest are cancelled, and the command exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "roofline/engine.h"
#include "server/http.h"
#include "util/file.h"

/* The first line of file F, without its line end (caller frees); NULL after a message. */
static char *read_key(const char *verb, const char *path) {
    char *text = NULL;
    size_t len = 0;
    rf_error err = {0};
    if (rf_read_file(path, 4096, &text, &len, &err)) {
        cli_errorf(verb, "--api-key-file: %s", err.msg);
        return NULL;
    }
    text[strcspn(text, "\r\n")] = 0;
    if (!*text) {
        cli_errorf(verb, "--api-key-file %s: the key is empty", path);
        free(text);
        return NULL;
    }
    return text;
}

int cli_serve(int argc, char **argv) {
    static const char *const verb = "serve";
    const char *model = NULL, *key_file = NULL;
    rf_srv_params sp = rf_srv_default_params();
    rf_engine_params ep = rf_engine_default_params();
    long drain_ms = 10000;
    char model_help[4200];
    snprintf(model_help, sizeof model_help, "GGUF file or embedded model's name (default: %s)",
             cli_default_model());
    const rf_opt opts[] = {
        {NULL, "-m", RF_OPT_STRING, RF_OPT_DEST(model), .metavar = "MODEL", .help = model_help},
        {"--host", NULL, RF_OPT_STRING, RF_OPT_DEST(sp.host), .metavar = "ADDR",
         .help = "the IPv4 address to bind (default 127.0.0.1)"},
        {"--port", NULL, RF_OPT_INT, RF_OPT_DEST(sp.port), .lo = 0, .hi = 65535, .metavar = "N",
         .help = "the port (default 8080; 0: a free one)"},
        {"--parallel", NULL, RF_OPT_INT, RF_OPT_DEST(ep.max_seqs), .lo = 1, .hi = 1024,
         .metavar = "N", .help = "requests decoded together (default 16)"},
        {"--ctx", NULL, RF_OPT_INT, RF_OPT_DEST(ep.n_ctx), .lo = 16, .hi = 1 << 20, .metavar = "N",
         .help = "the most positions one request may use (prompt + output)"},
        {"--max-queue", NULL, RF_OPT_INT, RF_OPT_DEST(ep.max_queue), .lo = 1, .hi = 1 << 20,
         .metavar = "N", .help = "waiting requests beyond which a request gets 429 (default 256)"},
        {"--api-key", NULL, RF_OPT_STRING, RF_OPT_DEST(sp.api_key), .metavar = "KEY",
         .help = "every endpoint but /health needs 'Authorization: Bearer KEY'"},
        {"--api-key-file", NULL, RF_OPT_STRING, RF_OPT_DEST(key_file), .metavar = "F",
         .help = "the key is F's first line"},
        {NULL, "-t", RF_OPT_INT, RF_OPT_DEST(ep.n_threads), .lo = 0, .hi = 4096,
         .metavar = "THREADS", .help = "threads (default: physical cores)"},
        {"--model-id", NULL, RF_OPT_STRING, RF_OPT_DEST(sp.model_id), .metavar = "ID",
         .help = "the model id clients name (default: as -m named it, else the model's name)"},
        {"--drain-ms", NULL, RF_OPT_INT, RF_OPT_DEST(drain_ms), .lo = 0, .hi = 3600000,
         .metavar = "MS",
         .help = "on SIGINT or SIGTERM, how long in-flight requests may take to "
                 "finish (default 10000)"},
        {"--body-max", NULL, RF_OPT_INT, RF_OPT_DEST(sp.body_max), .lo = 1024, .hi = 1L << 30,
         .metavar = "BYTES", .help = "request body limit (default 4 MiB)"},
        {"--no-prefix-cache", NULL, RF_OPT_FALSE, RF_OPT_DEST(ep.prefix_cache),
         .help = "every prompt is computed in full (no KV reused from earlier requests)"},
        {"--metrics", NULL, RF_OPT_TRUE, RF_OPT_DEST(sp.metrics),
         .help = "serve GET /metrics (the default)"},
        {"--no-metrics", NULL, RF_OPT_FALSE, RF_OPT_DEST(sp.metrics),
         .help = "/metrics answers 404"},
        {"--widen", NULL, RF_OPT_TRUE, RF_OPT_DEST(ep.widen),
         .help = "every matmul decodes its weight rows to floats on every call instead of the "
                 "native integer kernels (docs/kernels.md)"},
        {"--max-connections", NULL, RF_OPT_INT, RF_OPT_DEST(sp.conn_limit), .lo = 1, .hi = 65536,
         .metavar = "N", .help = "open connections (a thread each; default 2048)"},
        {"--idle-timeout", NULL, RF_OPT_INT, RF_OPT_DEST(sp.idle_timeout_s), .lo = 0, .hi = 86400,
         .metavar = "S",
         .help = "seconds without traffic before a connection is closed (default 30; 0 never)"},
        {"--read-timeout", NULL, RF_OPT_INT, RF_OPT_DEST(sp.read_timeout_s), .lo = 0, .hi = 86400,
         .metavar = "S",
         .help = "seconds a request's headers and body may take to arrive (default 30; 0 no "
                 "limit): past it, 408 once the headers are in, else the connection closes"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline serve",
        .about =
            "An OpenAI-compatible server: POST /v1/chat/completions, POST /v1/completions,\n"
            "GET /v1/models, GET /health, GET /metrics (Prometheus), POST /tokenize,\n"
            "POST /detokenize (docs/server.md). Binds 127.0.0.1 unless --host says otherwise.\n"
            "With an API key every endpoint but /health needs 'Authorization: Bearer KEY'.\n"
            "SIGINT or SIGTERM: stop accepting, let in-flight requests finish (up to\n"
            "--drain-ms), exit 0.\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
    };
    int prc = cli_opts(verb, &spec, argc, argv);
    if (prc >= 0) return prc;
    if (sp.api_key && key_file) {
        cli_errorf(verb, "give --api-key or --api-key-file, not both");
        return RF_EXIT_BAD_INPUT;
    }
    char *key = key_file ? read_key(verb, key_file) : NULL;
    if (key_file && !key) return RF_EXIT_BAD_INPUT;
    if (key) sp.api_key = key;
    const char *path = cli_model(verb, model);
    if (!path) {
        free(key);
        return RF_EXIT_BAD_INPUT;
    }
    ep.model_path = path;
    /* clients name the model as -m did (an embedded model's name; a path's file name without
     * .gguf); with no -m, the model's own name */
    char id[256];
    if (!sp.model_id && model) {
        const char *base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
        size_t n = strlen(base);
        if (n > 5 && !strcmp(base + n - 5, ".gguf")) n -= 5;
        snprintf(id, sizeof id, "%.*s", (int)n, base);
        sp.model_id = id;
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    cli_raise_fd_limit(verb); /* a descriptor per connection: --max-connections of them */

    int rc = RF_EXIT_OK;
    rf_srv *srv = NULL;
    rf_engine *e = NULL;
    rf_error err = {0};
    rf_status st = rf_srv_start(&sp, &srv, &err);
    if (st) {
        cli_errorf(verb, "%s", err.msg);
        rc = cli_exit_for(st);
        goto out;
    }
    fprintf(stderr, "serve: loading %s\n", path);
    st = rf_engine_open(&ep, &e, &err);
    if (st) {
        cli_errorf(verb, "%s", err.msg);
        rc = cli_exit_for(st);
        goto out;
    }
    rf_engine_info info;
    rf_engine_get_info(e, &info);
    rf_srv_attach(srv, e); /* the server owns the engine from here */
    printf("listening on http://%s:%d/v1 (model %s, ctx %d, parallel %d, kernels %s)\n", sp.host,
           rf_srv_port(srv), sp.model_id ? sp.model_id : info.model_name, (int)info.n_ctx,
           (int)info.max_seqs, info.kernels);
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "serve: %s: draining (up to %ld ms)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
            drain_ms);
out:
    rf_srv_stop(srv, (int)drain_ms);
    free(key);
    return rc;
}
