/* cmd_bench.c: `roofline bench`: the benchmark agent (src/bench/). */
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/runfile.h"
#include "report/econ.h"
#include "report/report.h"
#include "cli.h"

static volatile sig_atomic_t g_interrupted; /* CLI-only state: set by SIGINT/SIGTERM */

static void on_signal(int sig) {
    (void)sig;
    g_interrupted = 1;
}

/* The scoreboard (report.md) to stdout, and where the files are. */
static void print_scoreboard(const char *dir) {
    char *path = NULL;
    if (asprintf(&path, "%s/report.md", dir) < 0) return;
    FILE *f = fopen(path, "r");
    char buf[8192];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
    if (f) fclose(f);
    free(path);
    printf("\nrun directory: %s (records.jsonl, runlog.jsonl, run.json, summary.json, report.md, "
           "csv/)\nreport: %s/report.html\n",
           dir, dir);
    fflush(stdout);
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
    cli_raise_fd_limit("bench");

    st = rf_econ_check_prices(&rf.desc, NULL, &err);
    if (!st) st = rf_bench_preflight(&rf.desc, &err);
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
    /* the figures, from the run directory's files: what `roofline report DIR` computes */
    char *dir = strdup(rf_bench_dir(b));
    rf_bench_close(b);
    if (dir) {
        rf_report_opts ro;
        rf_report_opts_default(&ro);
        const char *dirs[1] = {dir};
        json_t *sum = NULL;
        rf_error rerr = {0};
        if (rf_report_build(dirs, 1, &ro, NULL, &sum, &rerr)) {
            cli_errorf("bench", "report: %s", rerr.msg);
            if (rc == RF_EXIT_OK) rc = RF_EXIT_FAIL;
        } else {
            print_scoreboard(dir);
        }
        json_decref(sum);
        free(dir);
    }
    rf_runfile_free(&rf);
    return rc;
}
