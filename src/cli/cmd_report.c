/* cmd_report.c: `roofline report`: the report of one or more run directories, recomputed from
 * their files (src/report/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/report.h"

static void help(FILE *f) {
    fputs("usage: roofline report RUN_DIR [RUN_DIR...] [options]\n"
          "\n"
          "Recomputes every figure of the runs from their files (records.jsonl, runlog.jsonl,\n"
          "run.json) and writes summary.json, report.md, report.html and csv/<table>.csv; several\n"
          "runs are merged side by side (a backend name two runs share becomes NAME@RUN).\n"
          "\n"
          "  --out DIR            where the report goes (default: the run directory; needed for\n"
          "                       several runs)\n"
          "  --prices FILE        instance and per-token prices (data/prices.json)\n"
          "  --accelerators FILE  accelerator bandwidths (data/accelerators.json)\n"
          "  --ratio R            input tokens per output token for per-token prices (5)\n"
          "  --slo SPEC           goodput SLOs, e.g. ttft:500,tpot:50,e2e:8000 (ms)\n"
          "  --attainment A       a level meets the SLOs when this share is good (0.9)\n"
          "  --mem-util U         share of memory for weights and KV cache (0.9)\n"
          "  --quiet              do not print the scoreboard\n",
          f);
}

int cli_report(int argc, char **argv) {
    rf_report_opts o;
    rf_report_opts_default(&o);
    const char *out = NULL, *slo = NULL;
    const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    int n = 0, quiet = 0;
    double att = 0.9;
    if (!dirs) return RF_EXIT_FAIL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            free(dirs);
            return RF_EXIT_OK;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        } else if (a[0] != '-') {
            dirs[n++] = a;
            continue;
        }
        if (!v) {
            cli_errorf("report", "'%s' needs a value (roofline report --help)", a);
            free(dirs);
            return RF_EXIT_BAD_INPUT;
        }
        i++;
        bool ok = true;
        if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--prices"))
            o.prices_path = v;
        else if (!strcmp(a, "--accelerators"))
            o.accel_path = v;
        else if (!strcmp(a, "--ratio"))
            ok = cli_parse_float("report", a, v, 0, 1e6, &o.ratio);
        else if (!strcmp(a, "--slo"))
            slo = v;
        else if (!strcmp(a, "--attainment"))
            ok = cli_parse_float("report", a, v, 0.01, 1, &att);
        else if (!strcmp(a, "--mem-util"))
            ok = cli_parse_float("report", a, v, 0.01, 1, &o.mem_util);
        else {
            cli_errorf("report", "unknown option '%s' (roofline report --help)", a);
            ok = false;
        }
        if (!ok) {
            free(dirs);
            return RF_EXIT_BAD_INPUT;
        }
    }
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
