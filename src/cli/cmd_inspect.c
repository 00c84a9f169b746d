/* cmd_inspect.c: `roofline inspect [FILE]`: header, metadata, tensor table and type mix. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "format/gguf.h"
#include "kernels/types.h"

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

int cli_inspect(int argc, char **argv) {
    const char *path = NULL;
    int show_tensors = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: roofline inspect [FILE] [--no-tensors]\n"
                   "Prints a GGUF file's header, metadata, tensor table and type mix.\n"
                   "FILE defaults to the embedded model (%s).\n",
                   cli_default_model());
            return RF_EXIT_OK;
        } else if (strcmp(argv[i], "--no-tensors") == 0) {
            show_tensors = 0;
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
    return RF_EXIT_OK;
}
