/* cmd_quantize.c: `roofline quantize IN.gguf OUT.gguf --type T`: rewrites a model's weight
 * matrices in another format (format/quantize.h) and prints what changed. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "format/quantize.h"

static rf_status parse_type(void *dest, const char *opt, const char *v, rf_error *err) {
    rf_type t = rf_type_parse(v);
    if (t == RF_TYPE_COUNT || !rf_quantize_type_ok(t))
        return rf_error_set(err, RF_ERR_ARG,
                            "%s: unsupported type '%s' (F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, "
                            "Q4_1, Q4_K, Q5_K, Q6_K)",
                            opt, v);
    *(rf_type *)dest = t;
    return RF_OK;
}

/* IN.gguf, then OUT.gguf */
typedef struct path_args {
    const char *p[2];
    int n;
} path_args;

static rf_status add_path(void *ctx, const char *arg, rf_error *err) {
    path_args *ps = ctx;
    if (ps->n == 2)
        return rf_error_set(err, RF_ERR_ARG, "unexpected argument '%s': give IN.gguf and OUT.gguf",
                            arg);
    ps->p[ps->n++] = arg;
    return RF_OK;
}

static double bpw(int64_t bytes, int64_t n) {
    return n ? 8.0 * (double)bytes / (double)n : 0.0;
}

int cli_quantize(int argc, char **argv) {
    rf_quantize_opts o;
    rf_quantize_opts_init(&o);
    rf_type type = RF_TYPE_COUNT;
    path_args ps = {{NULL, NULL}, 0};
    const rf_opt opts[] = {
        {"--type", NULL, RF_OPT_STRING, .dest = &type, .fn = parse_type, .metavar = "T",
         .help = "F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K (F16, BF16, "
                 "Q8_0, Q4_0..Q5_1 give llama-quantize's bytes; the K-quants are "
                 "round-to-nearest). Rows no multiple of 256 fall back from Q4_K/Q5_K/Q6_K to "
                 "Q5_0/Q5_1/Q8_0 (F16 when 32 does not divide them either); the summary names "
                 "each fallback."},
        {"--embeddings", NULL, RF_OPT_STRING, .dest = &o.emb_type, .fn = parse_type,
         .metavar = "T2", .help = "type of the token embedding (and of a tied output head)"},
        {"--keep-mixed", NULL, RF_OPT_TRUE, RF_OPT_DEST(o.keep_mixed),
         .help = "convert only tensors wider (more bits per weight) than T"},
        {"--force", NULL, RF_OPT_TRUE, RF_OPT_DEST(o.force),
         .help = "allow a T wider than the input's weights (dequantizes: Q4_K -> Q8_0)"},
        {"--threads", NULL, RF_OPT_INT, RF_OPT_DEST(o.threads), .lo = 0, .hi = 1024, .metavar = "N",
         .help = "threads (default: all cores)"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline quantize",
        .usage = "IN.gguf OUT.gguf --type T [--embeddings T2] [--keep-mixed] [--force]\n"
                 "                         [--threads N]",
        .about = "Rewrites IN's weight matrices as T, as llama.cpp's llama-quantize does without "
                 "an\nimportance matrix (norms and 1-D tensors stay as they are; all metadata is "
                 "kept;\ngeneral.file_type is updated). OUT is written atomically: nothing is "
                 "left on failure.\n",
        .epilog = "Exit status: 0 done, 2 bad usage or input (unsupported T, input smaller than T\n"
                  "without --force, unreadable or invalid IN, OUT not writable).\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
        .positional = add_path,
        .ctx = &ps,
    };
    int rc = cli_opts("quantize", &spec, argc, argv);
    if (rc >= 0) return rc;
    if (ps.n != 2 || type == RF_TYPE_COUNT) {
        cli_errorf("quantize", "usage: roofline quantize IN.gguf OUT.gguf --type T (--help)");
        return RF_EXIT_BAD_INPUT;
    }
    o.type = type;
    const char *paths[2] = {ps.p[0], ps.p[1]};
    rf_quantize_report rep;
    rf_error err = {0};
    rf_status st = rf_quantize_file(paths[0], paths[1], &o, &rep, &err);
    if (st) {
        cli_errorf("quantize", "%s", err.msg);
        return cli_exit_for(st);
    }
    printf("%s -> %s: %d tensors: %d quantized, %d kept, %d fell back%s%s\n", paths[0], paths[1],
           rep.n_tensors, rep.n_quantized, rep.n_kept, rep.n_fallback, rep.n_fallback ? ": " : "",
           rep.fallback);
    printf("size: %.2f MiB (%.2f bits per weight) -> %.2f MiB (%.2f bits per weight)\n",
           (double)rep.bytes_in / 1048576.0, bpw(rep.bytes_in, rep.n_elements),
           (double)rep.bytes_out / 1048576.0, bpw(rep.bytes_out, rep.n_elements));
    return RF_EXIT_OK;
}
