/* cmd_membw.c: `roofline membw`: the machine's streaming read bandwidth. */
#include <stdio.h>
#include <string.h>

#include "analysis/membw.h"
#include "cli.h"

int cli_membw(int argc, char **argv) {
    rf_membw_params p = {0};
    long v;
    bool json = false;
    int isa = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: roofline membw [-t THREADS] [--mib SIZE] [-r REPEATS] [--kernels K] "
                   "[--json]\n"
                   "Streaming read bandwidth of a buffer larger than the caches, split across\n"
                   "THREADS (default: physical cores), median of REPEATS (default 7) after a\n"
                   "warm-up read. SIZE defaults to 1024 MiB. GB/s are 1e9 bytes per second.\n");
            return RF_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "-t") && val) {
            if (!cli_parse_int("membw", "-t", val, 1, 1024, &v)) return RF_EXIT_BAD_INPUT;
            p.n_threads = (int)v;
            i++;
        } else if (!strcmp(a, "--mib") && val) {
            if (!cli_parse_int("membw", "--mib", val, 1, 1 << 20, &v)) return RF_EXIT_BAD_INPUT;
            p.bytes = (size_t)v << 20;
            i++;
        } else if (!strcmp(a, "-r") && val) {
            if (!cli_parse_int("membw", "-r", val, 1, RF_MEMBW_MAX_REPEATS, &v))
                return RF_EXIT_BAD_INPUT;
            p.repeats = (int)v;
            i++;
        } else if (!strcmp(a, "--kernels") && val) {
            isa = rf_isa_parse(val);
            if (isa < 0 || !(p.k = rf_kernels_get((rf_isa)isa))) {
                cli_errorf("membw", "kernels '%s' are not available here", val);
                return RF_EXIT_BAD_INPUT;
            }
            i++;
        } else {
            cli_errorf("membw", "unknown option '%s' (roofline membw --help)", a);
            return RF_EXIT_BAD_INPUT;
        }
    }
    rf_membw_result r;
    rf_error err = {0};
    rf_status st = rf_membw_measure(&p, &r, &err);
    if (st) {
        cli_errorf("membw", "%s", err.msg);
        return cli_exit_for(st);
    }
    if (json) {
        printf("{\"median_gbs\": %.3f, \"min_gbs\": %.3f, \"max_gbs\": %.3f, \"threads\": %d, "
               "\"bytes\": %zu, \"repeats\": %d, \"kernel\": \"%s\", \"runs_gbs\": [",
               r.median_gbs, r.min_gbs, r.max_gbs, r.n_threads, r.bytes, r.repeats, r.kernel);
        for (int i = 0; i < r.repeats; i++) printf(i ? ", %.3f" : "%.3f", r.runs_gbs[i]);
        printf("]}\n");
    } else {
        printf("read bandwidth: %.2f GB/s median (min %.2f, max %.2f) over %d runs of %zu MiB, "
               "%d threads, %s read kernel\n",
               r.median_gbs, r.min_gbs, r.max_gbs, r.repeats, r.bytes >> 20, r.n_threads, r.kernel);
    }
    return RF_EXIT_OK;
}
