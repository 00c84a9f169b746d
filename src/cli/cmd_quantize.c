/* cmd_quantize.c: `roofline quantize IN.gguf OUT.gguf --type T`: rewrites a model's weight
 * matrices in another format (format/quantize.h) and prints what changed. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "format/quantize.h"

static void help(void) {
    printf(
        "usage: roofline quantize IN.gguf OUT.gguf --type T [--embeddings T2] [--keep-mixed]\n"
        "                         [--force] [--threads N]\n"
        "Rewrites IN's weight matrices as T, as llama.cpp's llama-quantize does without an\n"
        "importance matrix (norms and 1-D tensors stay as they are; all metadata is kept;\n"
        "general.file_type is updated). OUT is written atomically: nothing is left on failure.\n"
        "  --type T        F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K\n"
        "                  (F16, BF16, Q8_0, Q4_0..Q5_1 give llama-quantize's bytes; the\n"
        "                  K-quants are round-to-nearest). Rows no multiple of 256 fall back\n"
        "                  from Q4_K/Q5_K/Q6_K to Q5_0/Q5_1/Q8_0 (F16 when 32 does not divide\n"
        "                  them either); the summary names each fallback.\n"
        "  --embeddings T2 type of the token embedding (and of a tied output head)\n"
        "  --keep-mixed    convert only tensors wider (more bits per weight) than T\n"
        "  --force         allow a T wider than the input's weights (dequantizes: Q4_K -> Q8_0)\n"
        "  --threads N     threads (default: all cores)\n"
        "Exit status: 0 done, 2 bad usage or input (unsupported T, input smaller than T\n"
        "without --force, unreadable or invalid IN, OUT not writable).\n");
}

static bool parse_type(const char *opt, const char *s, rf_type *out) {
    rf_type t = rf_type_parse(s);
    if (t == RF_TYPE_COUNT || !rf_quantize_type_ok(t)) {
        cli_errorf("quantize",
                   "%s: unsupported type '%s' (F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, "
                   "Q4_K, Q5_K, Q6_K)",
                   opt, s);
        return false;
    }
    *out = t;
    return true;
}

static double bpw(int64_t bytes, int64_t n) {
    return n ? 8.0 * (double)bytes / (double)n : 0.0;
}

int cli_quantize(int argc, char **argv) {
    rf_quantize_opts o;
    rf_quantize_opts_init(&o);
    const char *paths[2] = {NULL, NULL};
    int n_paths = 0;
    bool have_type = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool val = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help();
            return RF_EXIT_OK;
        } else if (strcmp(a, "--type") == 0 && val) {
            if (!parse_type(a, argv[++i], &o.type)) return RF_EXIT_BAD_INPUT;
            have_type = true;
        } else if (strcmp(a, "--embeddings") == 0 && val) {
            if (!parse_type(a, argv[++i], &o.emb_type)) return RF_EXIT_BAD_INPUT;
        } else if (strcmp(a, "--keep-mixed") == 0) {
            o.keep_mixed = true;
        } else if (strcmp(a, "--force") == 0) {
            o.force = true;
        } else if (strcmp(a, "--threads") == 0 && val) {
            long n;
            if (!cli_parse_int("quantize", a, argv[++i], 0, 1024, &n)) return RF_EXIT_BAD_INPUT;
            o.threads = (int32_t)n;
        } else if (a[0] == '-' && a[1]) {
            cli_errorf("quantize", "unknown option '%s' (or it lacks its value)", a);
            return RF_EXIT_BAD_INPUT;
        } else if (n_paths < 2) {
            paths[n_paths++] = a;
        } else {
            cli_errorf("quantize", "unexpected argument '%s': give IN.gguf and OUT.gguf", a);
            return RF_EXIT_BAD_INPUT;
        }
    }
    if (n_paths != 2 || !have_type) {
        cli_errorf("quantize", "usage: roofline quantize IN.gguf OUT.gguf --type T (--help)");
        return RF_EXIT_BAD_INPUT;
    }
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
