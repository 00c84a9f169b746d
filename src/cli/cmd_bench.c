/* cmd_bench.c: `roofline bench`: the benchmark agent (src/bench/). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/runfile.h"
#include "cli.h"

static volatile sig_atomic_t g_interrupted; /* CLI-only state: set by SIGINT/SIGTERM */

static void on_signal(int sig) {
    (void)sig;
    g_interrupted = 1;
}

int cli_bench(int argc, char **argv) {
    rf_runfile rf;
    rf_error err = {0};
    int help = 0;
    rf_status st = rf_runfile_parse_args(argc, argv, &rf, &help, &err);
    if (help) {
        rf_runfile_help(stdout);
        rf_runfile_free(&rf);
        return RF_EXIT_OK;
    }
    if (st) {
        cli_errorf("bench", "%s", err.msg);
        rf_runfile_free(&rf);
        return RF_EXIT_BAD_INPUT;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    st = rf_bench_preflight(&rf.desc, &err);
    if (st) {
        cli_errorf("bench", "%s", err.msg);
        rf_runfile_free(&rf);
        return RF_EXIT_BAD_INPUT;
    }
    rf_bench *b = NULL;
    st = rf_bench_open(&rf.desc, &g_interrupted, &b, &err);
    if (st) {
        cli_errorf("bench", "%s", err.msg);
        rf_runfile_free(&rf);
        return cli_exit_for(st);
    }
    int rc = RF_EXIT_OK;
    st = rf_bench_run_all(b, &err);
    if (st) {
        cli_errorf("bench", "%s (the summary covers what finished)", err.msg);
        rc = RF_EXIT_FAIL;
    }
    rf_error ferr = {0};
    if (rf_bench_finish(b, &ferr)) {
        cli_errorf("bench", "%s", ferr.msg);
        rc = RF_EXIT_FAIL;
    }
    if (g_interrupted) {
        fprintf(stderr, "roofline bench: interrupted; partial results written\n");
        rc = 130;
    }
    rf_bench_close(b);
    rf_runfile_free(&rf);
    return rc;
}
