/* cmd_inspect.c: `roofline inspect [FILE]`: header, metadata, tensor table and type mix. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "format/gguf.h"
#include "analysis/membw.h"
#include "analysis/roofline.h"
#include "kernels/types.h"
#include "model/model.h"
#include "util/utf8.h"

/* Writes the first bytes of s, at most max, to stdout so that a terminal shows them and acts on
 * none: valid UTF-8 characters as they are, except the controls (C0, DEL and C1), '"' and '\\',
 * which are escaped (\n, \", \\, \xNN), as is every byte of no valid UTF-8 sequence. Never cuts
 * a character. Returns the bytes of s consumed (< s.len: cut) and adds the columns written to
 * *cols. Keys, tensor names and string values all come from the file: all go through here. */
static uint64_t put_escaped(rf_str s, uint64_t max, int *cols) {
    uint64_t i = 0;
    while (i < s.len) {
        const unsigned char *c = (const unsigned char *)s.ptr + i;
        size_t k = rf_utf8_seq(s.ptr + i, (size_t)(s.len - i));
        if (i + (k ? k : 1) > max) break;
        if (k == 0 || (k == 1 && (c[0] < 0x20 || c[0] == 0x7f)) ||
            (k == 2 && c[0] == 0xc2 && c[1] < 0xa0)) { /* invalid, C0/DEL, C1 (U+0080..U+009F) */
            size_t n = k ? k : 1;
            if (c[0] == '\n') {
                fputs("\\n", stdout);
                *cols += 2;
            } else {
                for (size_t j = 0; j < n; j++) printf("\\x%02x", c[j]);
                *cols += 4 * (int)n;
            }
            i += n;
        } else if (c[0] == '"' || c[0] == '\\') {
            printf("\\%c", c[0]);
            *cols += 2;
            i++;
        } else {
            fwrite(c, 1, k, stdout);
            *cols += 1;
            i += k;
        }
    }
    return i;
}

static void print_str(rf_str s, size_t max) {
    int cols = 0;
    putchar('"');
    uint64_t done = put_escaped(s, max, &cols);
    putchar('"');
    if (done < s.len) printf("...(%llu bytes)", (unsigned long long)s.len);
}

/* A key or tensor name, escaped, padded with spaces to width columns. */
static void print_name(rf_str s, int width) {
    int cols = 0;
    if (put_escaped(s, 160, &cols) < s.len) {
        int n = printf("...(%llu bytes)", (unsigned long long)s.len);
        cols += n > 0 ? n : 0;
    }
    printf("%*s", cols < width ? width - cols : 0, "");
}

static void print_kv(const rf_gguf_kv *kv) {
    fputs("  ", stdout);
    print_name(kv->key, 45);
    printf(" %-7s ", rf_gguf_type_name(kv->type));
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
        fputs("  ", stdout);
        print_name(t->name, 28);
        printf(" %-6s ", rf_type_get(t->type)->name);
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
