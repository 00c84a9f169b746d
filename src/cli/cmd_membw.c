/* cmd_membw.c: `roofline membw`: the machine's streaming read bandwidth. */
#include <stdio.h>
#include <string.h>

#include "analysis/membw.h"
#include "cli.h"

static rf_status kernels(void *dest, const char *opt, const char *v, rf_error *err) {
    const rf_kernels **k = dest;
    int isa = rf_isa_parse(v);
    if (isa < 0 || !(*k = rf_kernels_get((rf_isa)isa)))
        return rf_error_set(err, RF_ERR_ARG, "%s: kernels '%s' are not available here", opt, v);
    return RF_OK;
}

int cli_membw(int argc, char **argv) {
    rf_membw_params p = {0};
    long mib = 0;
    bool json = false;
    const rf_opt opts[] = {
        {NULL, "-t", RF_OPT_INT, RF_OPT_DEST(p.n_threads), .lo = 1, .hi = 1024,
         .metavar = "THREADS", .help = "threads (default: physical cores)"},
        {"--mib", NULL, RF_OPT_INT, RF_OPT_DEST(mib), .lo = 1, .hi = 1 << 20, .metavar = "SIZE",
         .help = "the buffer's MiB (default 1024)"},
        {NULL, "-r", RF_OPT_INT, RF_OPT_DEST(p.repeats), .lo = 1, .hi = RF_MEMBW_MAX_REPEATS,
         .metavar = "REPEATS", .help = "repetitions, of which the median (default 7)"},
        {"--kernels", NULL, RF_OPT_STRING, .dest = &p.k, .fn = kernels, .metavar = "K",
         .help = "the read kernel's set: scalar, avx2, avx512, neon (default: the best here)"},
        {"--json", NULL, RF_OPT_TRUE, RF_OPT_DEST(json), .help = "print the result as JSON"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline membw",
        .about = "Streaming read bandwidth of a buffer larger than the caches, split across\n"
                 "THREADS (default: physical cores), median of REPEATS (default 7) after a\n"
                 "warm-up read. SIZE defaults to 1024 MiB. GB/s are 1e9 bytes per second.\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
    };
    int rc = cli_opts("membw", &spec, argc, argv);
    if (rc >= 0) return rc;
    if (mib) p.bytes = (size_t)mib << 20;
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
