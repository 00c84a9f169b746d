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

static void usage(void) {
    printf("usage: roofline serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--parallel 16]\n"
           "         [--ctx N] [--max-queue N] [--api-key KEY | --api-key-file F] [-t THREADS]\n"
           "         [--model-id ID] [--drain-ms MS] [--body-max BYTES] [--no-prefix-cache]\n"
           "         [--metrics | --no-metrics] [--widen] [--max-connections N]\n"
           "         [--idle-timeout S] [--read-timeout S]\n"
           "An OpenAI-compatible server: POST /v1/chat/completions, POST /v1/completions,\n"
           "GET /v1/models, GET /health, GET /metrics (Prometheus), POST /tokenize,\n"
           "POST /detokenize (docs/server.md). --no-prefix-cache: every prompt is computed in\n"
           "full (no KV reused from earlier requests); --no-metrics: /metrics answers 404\n"
           "(--metrics, the default, serves it). --widen: every matmul decodes its weight rows to\n"
           "floats on every call instead of the native integer kernels (docs/kernels.md).\n"
           "Binds 127.0.0.1 unless --host says otherwise. --parallel: requests decoded together;\n"
           "--max-queue: waiting requests beyond which a request gets 429. With an API key every\n"
           "endpoint but /health needs 'Authorization: Bearer KEY'. SIGINT or SIGTERM: stop\n"
           "accepting, let in-flight requests finish (up to --drain-ms, default 10000), exit 0.\n"
           "--max-connections: open connections (a thread each; default 2048); --idle-timeout:\n"
           "seconds without traffic before a connection is closed (default 30; 0 never);\n"
           "--read-timeout: seconds a request's headers and body may take to arrive (default\n"
           "30; 0 no limit): past it, 408 once the headers are in, else the connection closes.\n"
           "With no -m, the embedded model (%s).\n",
           cli_default_model());
}

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
    long v, drain_ms = 10000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return RF_EXIT_OK;
        } else if (!strcmp(a, "--no-prefix-cache")) {
            ep.prefix_cache = false;
            continue;
        } else if (!strcmp(a, "--widen")) {
            ep.widen = true;
            continue;
        } else if (!strcmp(a, "--no-metrics") || !strcmp(a, "--metrics")) {
            sp.metrics = !strcmp(a, "--metrics");
            continue;
        } else if (!val) {
            cli_errorf(verb, "unknown option or missing value '%s' (roofline %s --help)", a, verb);
            return RF_EXIT_BAD_INPUT;
        }
        i++;
        if (!strcmp(a, "-m")) {
            model = val;
        } else if (!strcmp(a, "--host")) {
            sp.host = val;
        } else if (!strcmp(a, "--port")) {
            if (!cli_parse_int(verb, a, val, 0, 65535, &v)) return RF_EXIT_BAD_INPUT;
            sp.port = (int)v;
        } else if (!strcmp(a, "--parallel")) {
            if (!cli_parse_int(verb, a, val, 1, 1024, &v)) return RF_EXIT_BAD_INPUT;
            ep.max_seqs = (int32_t)v;
        } else if (!strcmp(a, "--ctx")) {
            if (!cli_parse_int(verb, a, val, 16, 1 << 20, &v)) return RF_EXIT_BAD_INPUT;
            ep.n_ctx = (int32_t)v;
        } else if (!strcmp(a, "--max-queue")) {
            if (!cli_parse_int(verb, a, val, 1, 1 << 20, &v)) return RF_EXIT_BAD_INPUT;
            ep.max_queue = (int32_t)v;
        } else if (!strcmp(a, "-t")) {
            if (!cli_parse_int(verb, a, val, 0, 4096, &v)) return RF_EXIT_BAD_INPUT;
            ep.n_threads = (int32_t)v;
        } else if (!strcmp(a, "--api-key")) {
            sp.api_key = val;
        } else if (!strcmp(a, "--api-key-file")) {
            key_file = val;
        } else if (!strcmp(a, "--model-id")) {
            sp.model_id = val;
        } else if (!strcmp(a, "--drain-ms")) {
            if (!cli_parse_int(verb, a, val, 0, 3600000, &drain_ms)) return RF_EXIT_BAD_INPUT;
        } else if (!strcmp(a, "--max-connections")) {
            if (!cli_parse_int(verb, a, val, 1, 65536, &v)) return RF_EXIT_BAD_INPUT;
            sp.conn_limit = (unsigned)v;
        } else if (!strcmp(a, "--idle-timeout")) {
            if (!cli_parse_int(verb, a, val, 0, 86400, &v)) return RF_EXIT_BAD_INPUT;
            sp.idle_timeout_s = (unsigned)v;
        } else if (!strcmp(a, "--read-timeout")) {
            if (!cli_parse_int(verb, a, val, 0, 86400, &v)) return RF_EXIT_BAD_INPUT;
            sp.read_timeout_s = (unsigned)v;
        } else if (!strcmp(a, "--body-max")) {
            if (!cli_parse_int(verb, a, val, 1024, 1L << 30, &v)) return RF_EXIT_BAD_INPUT;
            sp.body_max = (size_t)v;
        } else {
            cli_errorf(verb, "unknown option '%s' (roofline %s --help)", a, verb);
            return RF_EXIT_BAD_INPUT;
        }
    }
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
