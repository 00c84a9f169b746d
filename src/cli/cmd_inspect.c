/* cmd_inspect.c: `roofline inspect [FILE]`: header, metadata, tensor table and type mix. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "format/gguf.h"
#include "analysis/membw.h"
#include "analysis/roofline.h"
#include "kernels/types.h"
#include "model/model.h"

static void print_str(rf_str s, size_t max) {
    putchar('"');
    for (uint64_t i = 0; i < s.len && i < max; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 32 || c == 127)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    if (s.len > max) printf("...(%llu bytes)", (unsigned long long)s.len);
}

static void print_kv(const rf_gguf_kv *kv) {
    printf("  %-45.*s %-7s ", (int)kv->key.len, kv->key.ptr, rf_gguf_type_name(kv->type));
    switch (kv->type) {
    case RF_GGUF_STRING:
        print_str(kv->v.s, 120);
        break;
    case RF_GGUF_F32:
    case RF_GGUF_F64:
        printf("%g", kv->v.f);
        break;
    case RF_GGUF_BOOL:
        printf("%s", kv->v.u ? "true" : "false");
        break;
    case RF_GGUF_I8:
    case RF_GGUF_I16:
    case RF_GGUF_I32:
    case RF_GGUF_I64:
        printf("%lld", (long long)kv->v.i);
        break;
    case RF_GGUF_ARRAY: {
        printf("[%s x %llu] ", rf_gguf_type_name(kv->v.arr.type), (unsigned long long)kv->v.arr.n);
        uint64_t show = kv->v.arr.n < 6 ? kv->v.arr.n : 6;
        for (uint64_t i = 0; i < show; i++) {
            if (i) fputs(", ", stdout);
            if (kv->v.arr.type == RF_GGUF_STRING)
                print_str(kv->v.arr.strs[i], 24);
            else if (kv->v.arr.type == RF_GGUF_F32 || kv->v.arr.type == RF_GGUF_F64)
                printf("%g", rf_gguf_arr_float(kv, i));
            else
                printf("%lld", (long long)rf_gguf_arr_int(kv, i));
        }
        if (show < kv->v.arr.n) fputs(", ...", stdout);
        break;
    }
    default:
        printf("%llu", (unsigned long long)kv->v.u);
        break;
    }
    putchar('\n');
}

static void print_shape(const rf_gguf_tensor *t) {
    char buf[96];
    int n = snprintf(buf, sizeof buf, "[");
    for (uint32_t d = 0; d < t->n_dims; d++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%llu", d ? ", " : "",
                      (unsigned long long)t->ne[d]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    printf("%-16s", buf);
}

/* Bytes per decoded token and the roofline ceiling, for a model roofline can load. */
static int print_roofline(const char *path, int32_t ctx, double bw) {
    rf_model *m = NULL;
    rf_error err = {0};
    rf_status st = rf_model_load(path, &m, &err);
    if (st) {
        printf("\n(not a model roofline runs: %s)\n", err.msg);
        return RF_EXIT_OK;
    }
    rf_token_bytes b = rf_model_token_bytes(m, ctx);
    printf("\nbytes read per decoded token (context %d)\n", ctx);
    printf("  %-22s %14llu B %8.2f MB\n", "matmul weights", (unsigned long long)b.matmul,
           (double)b.matmul / 1e6);
    printf("  %-22s %14llu B %8.2f MB%s\n", "output head", (unsigned long long)b.head,
           (double)b.head / 1e6, b.tied ? "  (tied to the embedding: read in full)" : "");
    if (!b.tied)
        printf("  %-22s %14llu B %8.2f MB\n", "embedding row", (unsigned long long)b.embed_row,
               (double)b.embed_row / 1e6);
    printf("  %-22s %14llu B %8.2f MB\n", "norms", (unsigned long long)b.norms,
           (double)b.norms / 1e6);
    printf("  %-22s %14llu B %8.2f MB\n", "KV cache (f16)", (unsigned long long)b.kv,
           (double)b.kv / 1e6);
    printf("  %-22s %14llu B %8.2f MB\n", "total", (unsigned long long)b.total,
           (double)b.total / 1e6);
    const char *how = "given with --bw";
    if (bw <= 0) {
        rf_membw_params mp = {0};
        mp.repeats = 5;
        rf_membw_result r;
        if (rf_membw_measure(&mp, &r, &err) == RF_OK) {
            bw = r.median_gbs;
            how = "measured: roofline membw, median of 5";
        }
    }
    if (bw > 0)
        printf("read bandwidth  %.2f GB/s (%s)\nroofline ceiling %.1f tok/s single-stream decode\n",
               bw, how, rf_roofline_tok_s(bw * 1e9, &b));
    rf_model_free(m);
    return RF_EXIT_OK;
}

int cli_inspect(int argc, char **argv) {
    const char *path = NULL;
    int show_tensors = 1;
    long ctx = 0;
    double bw = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf(
                "usage: roofline inspect [FILE] [--no-tensors] [--ctx N] [--bw GBS]\n"
                "Prints a GGUF file's header, metadata, tensor table and type mix; for a model\n"
                "roofline runs, the bytes read per decoded token by role at context N (default\n"
                "0) and the roofline ceiling tok/s = read bandwidth / bytes per token, with the\n"
                "bandwidth measured as `roofline membw` does unless --bw gives it (GB/s).\n"
                "FILE defaults to the embedded model (%s).\n",
                cli_default_model());
            return RF_EXIT_OK;
        } else if (strcmp(argv[i], "--no-tensors") == 0) {
            show_tensors = 0;
        } else if (strcmp(argv[i], "--ctx") == 0 && i + 1 < argc) {
            if (!cli_parse_int("inspect", "--ctx", argv[++i], 0, 1 << 24, &ctx))
                return RF_EXIT_BAD_INPUT;
        } else if (strcmp(argv[i], "--bw") == 0 && i + 1 < argc) {
            if (!cli_parse_float("inspect", "--bw", argv[++i], 0.001, 1e6, &bw))
                return RF_EXIT_BAD_INPUT;
        } else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (argv[i][0] == '-') {
            cli_errorf("inspect", "unknown option '%s'", argv[i]);
            return RF_EXIT_BAD_INPUT;
        } else {
            path = argv[i];
        }
    }
    if (!path) path = cli_default_model();
    rf_error err = {0};
    rf_gguf *g = NULL;
    rf_status st = rf_gguf_open(path, &g, &err);
    if (st) {
        cli_errorf("inspect", "%s", err.msg);
        return cli_exit_for(st);
    }
    printf("file        %s\n", path);
    printf("version     %u\nfile size   %llu bytes\nalignment   %u\ndata offset %llu\n",
           rf_gguf_version(g), (unsigned long long)rf_gguf_file_size(g), rf_gguf_alignment(g),
           (unsigned long long)rf_gguf_data_offset(g));
    printf("\nmetadata (%llu keys)\n", (unsigned long long)rf_gguf_n_kv(g));
    for (uint64_t i = 0; i < rf_gguf_n_kv(g); i++) print_kv(rf_gguf_kv_at(g, i));

    uint64_t count[RF_TYPE_COUNT] = {0}, bytes[RF_TYPE_COUNT] = {0}, total = 0;
    if (show_tensors)
        printf("\ntensors (%llu)\n  %-28s %-6s %-16s %12s %12s\n",
               (unsigned long long)rf_gguf_n_tensors(g), "name", "type", "shape", "offset",
               "bytes");
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        count[t->type]++;
        bytes[t->type] += t->nbytes;
        total += t->nbytes;
        if (!show_tensors) continue;
        printf("  %-28.*s %-6s ", (int)t->name.len, t->name.ptr, rf_type_get(t->type)->name);
        print_shape(t);
        printf(" %12llu %12llu\n", (unsigned long long)t->offset, (unsigned long long)t->nbytes);
    }
    printf("\ntype mix\n");
    for (int t = 0; t < RF_TYPE_COUNT; t++)
        if (count[t])
            printf("  %-6s %4llu tensors %12llu bytes (%5.1f%%)\n", rf_type_get((uint32_t)t)->name,
                   (unsigned long long)count[t], (unsigned long long)bytes[t],
                   total ? 100.0 * (double)bytes[t] / (double)total : 0.0);
    printf("  total  %4llu tensors %12llu bytes\n", (unsigned long long)rf_gguf_n_tensors(g),
           (unsigned long long)total);
    rf_gguf_close(g);
    return print_roofline(path, (int32_t)ctx, bw);
}
