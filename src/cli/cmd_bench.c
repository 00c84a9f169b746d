/* cmd_bench.c: `roofline bench`: the benchmark agent (src/bench/). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "bench/bench.h"
#include "bench/runfile.h"
#include "cli.h"

static volatile sig_atomic_t g_interrupted; /* CLI-only state: set by SIGINT/SIGTERM */

static void on_signal(int sig) {
    (void)sig;
    g_interrupted = 1;
}

/* Each open stream is a descriptor: the soft limit (often 1024) goes up to the hard one, so a
 * level of a thousand streams is not refused by this process's own default. */
static void raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max) return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        fprintf(stderr, "roofline bench: cannot raise the descriptor limit from %llu: %s\n",
                (unsigned long long)was, strerror(errno));
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
    raise_fd_limit();

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
    char why[1024];
    if (g_interrupted) {
        fprintf(stderr,
                "roofline bench: interrupted; partial results written (continue with "
                "roofline bench --resume %s)\n",
                rf_bench_dir(b));
        rc = 130;
    } else if (rc == RF_EXIT_OK && rf_bench_unanswered(b, why, sizeof why)) {
        cli_errorf("bench", "%s (exit status %d)", why, RF_EXIT_UNANSWERED);
        rc = RF_EXIT_UNANSWERED;
    }
    rf_bench_close(b);
    rf_runfile_free(&rf);
    return rc;
}
