/* cmd_report.c: `roofline report`: the report of one or more run directories, recomputed from
 * their files (src/report/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/report.h"

/* The run directories given. */
typedef struct dir_list {
    const char **dirs;
    int n;
} dir_list;

static rf_status add_dir(void *ctx, const char *arg, rf_error *err) {
    (void)err;
    dir_list *l = ctx;
    l->dirs[l->n++] = arg;
    return RF_OK;
}

int cli_report(int argc, char **argv) {
    rf_report_opts o;
    rf_report_opts_default(&o);
    const char *out = NULL, *slo = NULL;
    bool quiet = false;
    double att = 0.9;
    dir_list l = {calloc((size_t)argc + 1, sizeof(const char *)), 0};
    if (!l.dirs) return RF_EXIT_FAIL;
    const rf_opt opts[] = {
        {"--out", NULL, RF_OPT_STRING, RF_OPT_DEST(out), .metavar = "DIR",
         .help = "where the report goes (default: the run directory; needed for several runs)"},
        {"--prices", NULL, RF_OPT_STRING, RF_OPT_DEST(o.prices_path), .metavar = "FILE",
         .help = "instance and per-token prices (data/prices.json)"},
        {"--accelerators", NULL, RF_OPT_STRING, RF_OPT_DEST(o.accel_path), .metavar = "FILE",
         .help = "accelerator bandwidths (data/accelerators.json)"},
        {"--ratio", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(o.ratio), .lo = 0, .hi = 1e6, .metavar = "R",
         .help = "input tokens per output token for per-token prices (5)"},
        {"--slo", NULL, RF_OPT_STRING, RF_OPT_DEST(slo), .metavar = "SPEC",
         .help = "goodput SLOs, e.g. ttft:500,tpot:50,e2e:8000 (ms)"},
        {"--attainment", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(att), .lo = 0.01, .hi = 1, .metavar = "A",
         .help = "a level meets the SLOs when this share is good (0.9)"},
        {"--mem-util", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(o.mem_util), .lo = 0.01, .hi = 1,
         .metavar = "U", .help = "share of memory for weights and KV cache (0.9)"},
        {"--quiet", NULL, RF_OPT_TRUE, RF_OPT_DEST(quiet), .help = "do not print the scoreboard"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline report",
        .args = "RUN_DIR [RUN_DIR...]",
        .about =
            "Recomputes every figure of the runs from their files (records.jsonl, runlog.jsonl,\n"
            "run.json) and writes summary.json, report.md, report.html and csv/<table>.csv; "
            "several\nruns are merged side by side (a backend name two runs share becomes "
            "NAME@RUN).\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
        .positional = add_dir,
        .ctx = &l,
    };
    int rc = cli_opts("report", &spec, argc, argv);
    if (rc >= 0) {
        free(l.dirs);
        return rc;
    }
    const char **dirs = l.dirs;
    int n = l.n;
    if (!n || (n > 1 && !out)) {
        cli_errorf("report", n ? "several runs need --out DIR for the merged report"
                               : "give a run directory (roofline report --help)");
        free(dirs);
        return RF_EXIT_BAD_INPUT;
    }
    rf_error err = {0};
    o.slo.attainment = att;
    if (slo && rf_slo_parse(slo, &o.slo, &err)) {
        cli_errorf("report", "%s", err.msg);
        free(dirs);
        return RF_EXIT_BAD_INPUT;
    }
    rf_status st = rf_report_build(dirs, n, &o, out, NULL, &err);
    if (st) {
        cli_errorf("report", "%s", err.msg);
        free(dirs);
        return cli_exit_for(st);
    }
    const char *dir = out ? out : dirs[0];
    if (!quiet) {
        char path[4096];
        snprintf(path, sizeof path, "%s/report.md", dir);
        FILE *f = fopen(path, "r");
        char buf[8192];
        size_t k;
        while (f && (k = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, k, stdout);
        if (f) fclose(f);
    }
    printf("\nreport: %s/report.html (and report.md, summary.json, csv/)\n", dir);
    free(dirs);
    return RF_EXIT_OK;
}
