/* cmd_inspect.c: `roofline inspect [PATH]`: a GGUF file's header, metadata, tensor table and type
 * mix, or a safetensors checkpoint's files, metadata, tensors and dtype mix (headers only); then,
 * for both, the memory by role, the bytes read per decoded token by role, the roofline ceiling
 * and the KV cache capacity (analysis/facts.h does the accounting; this file only prints). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/facts.h"
#include "analysis/membw.h"
#include "cli.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "kernels/types.h"
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

static rf_str cstr(const char *s) {
    rf_str r = {s, s ? strlen(s) : 0};
    return r;
}

/* v with thousands separators ("1,234,567") into buf. */
static const char *commas(uint64_t v, char *buf, size_t cap) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t w = 0;
    for (int i = 0; i < n && w + 2 < cap; i++) {
        if (i && (n - i) % 3 == 0) buf[w++] = ',';
        buf[w++] = digits[i];
    }
    buf[w] = 0;
    return buf;
}

#define GB(x)  ((double)(x) / 1e9)
#define GIB(x) ((double)(x) / 1073741824.0)

typedef struct inspect_opts {
    const char *path;
    bool show_tensors;
    long ctx; /* -1: the default */
    double bw;
    double mem_gib; /* 0: this machine's memory */
    double util;
    rf_kv_dtype kv;
} inspect_opts;

/* ---- the shared analysis ------------------------------------------------------------------ */

static void print_roles(const rf_model_facts *f) {
    const rf_footprint *fp = &f->fp;
    char b[32];
    printf("\nmemory by role (tensor bytes; GB = 1e9 B, GiB = 2^30 B)\n");
    printf("  %-22s %7s %19s %11s %11s %7s\n", "role", "tensors", "bytes", "GB", "GiB", "share");
    for (int r = 0; r < RF_ROLE_COUNT; r++) {
        if (!fp->role_tensors[r]) continue;
        printf("  %-22s %7llu %17s B %8.3f GB %7.3f GiB %6.1f%%\n", rf_role_name((rf_role)r),
               (unsigned long long)fp->role_tensors[r], commas(fp->role_bytes[r], b, sizeof b),
               GB(fp->role_bytes[r]), GIB(fp->role_bytes[r]),
               fp->total_bytes ? 100.0 * (double)fp->role_bytes[r] / (double)fp->total_bytes : 0);
    }
    if (rf_footprint_tied(fp))
        printf("  %-22s %7s %19s   (tied to the token embeddings: not stored)\n", "output head",
               "-", "-");
    printf("  %-22s %7llu %17s B %8.3f GB %7.3f GiB %6.1f%%\n", "total",
           (unsigned long long)fp->total_tensors, commas(fp->total_bytes, b, sizeof b),
           GB(fp->total_bytes), GIB(fp->total_bytes), fp->total_bytes ? 100.0 : 0.0);
}

static void print_dtypes(const rf_footprint *fp, const char *title) {
    char b[32];
    printf("\n%s (GB = 1e9 B)\n", title);
    for (int i = 0; i < fp->n_dtype; i++)
        printf("  %-16s %6llu tensors %17s B %8.3f GB (%5.1f%%)\n", fp->dtype[i].label,
               (unsigned long long)fp->dtype[i].tensors, commas(fp->dtype[i].bytes, b, sizeof b),
               GB(fp->dtype[i].bytes),
               fp->total_bytes ? 100.0 * (double)fp->dtype[i].bytes / (double)fp->total_bytes : 0);
    printf("  %-16s %6llu tensors %17s B %8.3f GB\n", "total",
           (unsigned long long)fp->total_tensors, commas(fp->total_bytes, b, sizeof b),
           GB(fp->total_bytes));
}

/* "18 layers: 3 global, 15 sliding (window 512); 1 KV head x (256 + 256) values" */
static void print_geometry(const rf_kv_geom *g) {
    int32_t global, sliding, shared;
    rf_kv_layer_counts(g, &global, &sliding, &shared);
    printf("  %d layers: %d global, %d sliding", g->n_layer, global, sliding);
    if (sliding) printf(" (window %u)", rf_kv_max_window(g));
    if (shared) printf(", %d of them reading an earlier layer's cache", shared);
    if (global + sliding < g->n_layer)
        printf(", %d without attention", g->n_layer - global - sliding);
    const rf_kv_layer *first = NULL;
    bool same = true;
    for (int32_t il = 0; il < g->n_layer; il++) {
        const rf_kv_layer *l = &g->layer[il];
        if (!l->n_kv_head) continue;
        if (!first) first = l;
        same = same && l->n_kv_head == first->n_kv_head && l->head_dim_k == first->head_dim_k &&
               l->head_dim_v == first->head_dim_v;
    }
    if (first && same)
        printf("; %u KV head%s x (%u + %u) values", first->n_kv_head,
               first->n_kv_head == 1 ? "" : "s", first->head_dim_k, first->head_dim_v);
    else if (first)
        printf("; KV heads and head sizes vary by layer");
    putchar('\n');
}

static int64_t default_ctx(const rf_model_facts *f) {
    return f->ctx_train > 0 && f->ctx_train < 4096 ? f->ctx_train : 4096;
}

static void print_token_read(const rf_model_facts *f, const inspect_opts *o, int64_t ctx) {
    rf_token_read r = rf_model_facts_token_read(f, ctx, o->kv);
    char b[32];
    printf("\nbytes read per decoded token (text, context %lld%s; GB = 1e9 B)\n", (long long)ctx,
           o->ctx < 0 ? ": the default, min(trained context, 4096)" : "");
    for (int k = 0; k < RF_ROLE_COUNT; k++) {
        rf_role role = (rf_role)k;
        if (!f->fp.role_tensors[k] && !(role == RF_ROLE_HEAD && r.tied)) continue;
        const char *how = "in full";
        if (role == RF_ROLE_TOKEN_EMBD)
            how = r.tied ? "tied: read in full as the output head" : "one row per token";
        else if (role == RF_ROLE_PER_LAYER_EMBD)
            how = "one row of each table";
        else if (role == RF_ROLE_VISION || role == RF_ROLE_AUDIO)
            how = "not read to decode text";
        else if (role == RF_ROLE_HEAD && r.tied)
            how = "tied: the token embedding table, in full";
        printf("  %-22s %17s B %8.3f GB  %s\n", rf_role_name(role), commas(r.role[k], b, sizeof b),
               GB(r.role[k]), how);
    }
    if (r.kv_known)
        printf("  %-22s %17s B %8.3f GB  K and V (%s) at context %lld\n", "KV cache",
               commas(r.kv, b, sizeof b), GB(r.kv), rf_kv_dtype_name(o->kv), (long long)ctx);
    else
        printf("  %-22s %19s  not counted: %s\n", "KV cache", "-", f->kv_note);
    printf("  %-22s %17s B %8.3f GB %7.3f GiB\n", "total", commas(r.total, b, sizeof b),
           GB(r.total), GIB(r.total));

    double bw = o->bw;
    const char *how = "given with --bw";
    if (bw <= 0) {
        rf_membw_params mp = {0};
        mp.repeats = 5;
        rf_membw_result mr;
        rf_error err = {0};
        if (rf_membw_measure(&mp, &mr, &err) == RF_OK) {
            bw = mr.median_gbs;
            how = "measured: roofline membw, median of 5";
        }
    }
    if (bw <= 0) return;
    double bps = bw * 1e9;
    printf("roofline at %.2f GB/s (%s; GB/s = 1e9 B/s)\n", bw, how);
    printf("  ceiling %.1f tok/s single-stream decode = %.2f GB/s / %.3f GB per token\n",
           rf_ceiling_tok_s(bps, r.total), bw, GB(r.total));
    printf("  not the ceiling: every weight byte once per token (%.3f GB) %.1f tok/s; the "
           "transformer body alone (%.3f GB) %.1f tok/s\n",
           GB(f->fp.total_bytes), rf_ceiling_tok_s(bps, f->fp.total_bytes),
           GB(f->fp.role_bytes[RF_ROLE_BODY]),
           rf_ceiling_tok_s(bps, f->fp.role_bytes[RF_ROLE_BODY]));
}

static double machine_mem_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

static int print_kv_capacity(const rf_model_facts *f, const inspect_opts *o, int64_t ctx) {
    char b[32], c[32];
    printf("\nKV cache (%s; GiB = 2^30 B)\n", rf_kv_dtype_name(o->kv));
    if (f->kv.n_layer < 1) {
        printf("KV cache: not computed: %s\n", f->kv_note[0] ? f->kv_note : "no geometry");
        return RF_EXIT_OK;
    }
    print_geometry(&f->kv);
    if (f->kv_note[0]) printf("  (%s)\n", f->kv_note);
    double mem = o->mem_gib > 0 ? o->mem_gib * 1073741824.0 : machine_mem_bytes();
    const char *mem_how = o->mem_gib > 0 ? "--mem-gib" : "this machine's memory; --mem-gib sets it";
    if (ctx < 1) {
        printf("  stored per token: %s B (every cache-holding layer keeps every position)\n",
               commas(rf_model_facts_kv_per_token(f, o->kv), b, sizeof b));
        printf("KV cache: give --ctx N (N >= 1) for the capacity of N-token requests\n");
        return RF_EXIT_OK;
    }
    rf_kv_capacity cap;
    rf_error err = {0};
    rf_status st = rf_model_facts_kv_capacity(f, mem, o->util, ctx, o->kv, &cap, &err);
    if (st) {
        cli_errorf("inspect", "%s", err.msg);
        return cli_exit_for(st);
    }
    char d[32];
    printf("  stored per token: %s B (every cache-holding layer keeps every position); "
           "per %s-token request: %s B (sliding layers at min(L, window))\n",
           commas(cap.per_token, b, sizeof b), commas((uint64_t)ctx, c, sizeof c),
           commas(cap.per_request, d, sizeof d));
    printf("  budget: %.2f GiB (%s) x %.2f = %.3f GiB, minus the weights %.3f GiB = %.3f GiB "
           "(%s B)\n",
           mem / 1073741824.0, mem_how, o->util, GIB(cap.mem_bytes), GIB(cap.weights),
           (double)cap.budget / 1073741824.0,
           cap.budget > 0 ? commas((uint64_t)cap.budget, d, sizeof d) : "0");
    if (cap.budget <= 0) {
        printf("KV cache: none: the weights (%.3f GiB) do not fit in %.3f GiB\n", GIB(cap.weights),
               GIB(cap.mem_bytes));
        return RF_EXIT_OK;
    }
    printf("KV cache: %s tokens; maximum concurrency %.2fx for %s tokens per request\n",
           commas(cap.tokens, b, sizeof b), cap.concurrency, commas((uint64_t)ctx, c, sizeof c));
    printf("  (the longest single request that fits: %s tokens)\n",
           commas(cap.max_len_one_seq, b, sizeof b));
    return RF_EXIT_OK;
}

static int print_analysis(const rf_model_facts *f, const inspect_opts *o) {
    int64_t ctx = o->ctx >= 0 ? o->ctx : default_ctx(f);
    print_roles(f);
    print_token_read(f, o, ctx);
    int rc = print_kv_capacity(f, o, ctx);
    if (f->note[0]) {
        printf("\nnote: ");
        print_name(cstr(f->note), 0);
        putchar('\n');
    }
    return rc;
}

/* ---- GGUF --------------------------------------------------------------------------------- */

static int inspect_gguf(const inspect_opts *o) {
    rf_error err = {0};
    rf_gguf *g = NULL;
    rf_status st = rf_gguf_open(o->path, &g, &err);
    if (st) {
        cli_errorf("inspect", "%s", err.msg);
        return cli_exit_for(st);
    }
    printf("file        %s\n", o->path);
    printf("version     %u\nfile size   %llu bytes\nalignment   %u\ndata offset %llu\n",
           rf_gguf_version(g), (unsigned long long)rf_gguf_file_size(g), rf_gguf_alignment(g),
           (unsigned long long)rf_gguf_data_offset(g));
    printf("\nmetadata (%llu keys)\n", (unsigned long long)rf_gguf_n_kv(g));
    for (uint64_t i = 0; i < rf_gguf_n_kv(g); i++) print_kv(rf_gguf_kv_at(g, i));

    uint64_t count[RF_TYPE_COUNT] = {0}, bytes[RF_TYPE_COUNT] = {0}, total = 0;
    if (o->show_tensors)
        printf("\ntensors (%llu)\n  %-28s %-6s %-16s %12s %12s\n",
               (unsigned long long)rf_gguf_n_tensors(g), "name", "type", "shape", "offset",
               "bytes");
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        count[t->type]++;
        bytes[t->type] += t->nbytes;
        total += t->nbytes;
        if (!o->show_tensors) continue;
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
    rf_model_facts *f = NULL;
    st = rf_model_facts_from_gguf(g, &f, &err);
    rf_gguf_close(g);
    if (st) {
        cli_errorf("inspect", "%s", err.msg);
        return cli_exit_for(st);
    }
    int rc = print_analysis(f, o);
    rf_model_facts_free(f);
    return rc;
}

/* ---- safetensors -------------------------------------------------------------------------- */

static void print_dims(const uint64_t *shape, uint32_t n) {
    char buf[160];
    size_t k = (size_t)snprintf(buf, sizeof buf, "[");
    for (uint32_t d = 0; d < n && k < sizeof buf; d++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%llu", d ? ", " : "",
                              (unsigned long long)shape[d]);
    if (k < sizeof buf) snprintf(buf + k, sizeof buf - k, "]");
    printf("%-18s", buf);
}

static int inspect_safetensors(const inspect_opts *o) {
    rf_error err = {0};
    rf_model_facts *f = NULL;
    rf_status st = rf_model_facts_load(o->path, &f, &err);
    if (st) {
        cli_errorf("inspect", "%s", err.msg);
        return cli_exit_for(st);
    }
    char b[32];
    printf("path        ");
    print_name(cstr(o->path), 0);
    printf("\nformat      safetensors (headers only: no tensor data read)\n");
    if (f->index_path) {
        printf("index       ");
        print_name(cstr(f->index_path), 0);
        putchar('\n');
    }
    printf("config      ");
    if (f->config_path)
        print_name(cstr(f->config_path), 0);
    else
        fputs("none beside the checkpoint", stdout);
    if (f->arch[0]) {
        fputs(" (", stdout);
        print_name(cstr(f->arch), 0);
        putchar(')');
    }
    putchar('\n');
    if (f->quant[0]) {
        printf("quantization ");
        print_name(cstr(f->quant), 0);
        putchar('\n');
    }
    printf("\nfiles (%zu, %s bytes)\n", f->n_files, commas(f->file_bytes, b, sizeof b));
    for (size_t i = 0; i < f->n_files; i++) {
        const rf_facts_file *ff = &f->files[i];
        printf("  [%zu] ", i);
        print_name(cstr(ff->path), 0);
        printf("  %s bytes, header %llu, %llu tensors\n", commas(ff->size, b, sizeof b),
               (unsigned long long)ff->header, (unsigned long long)ff->tensors);
    }
    /* __metadata__ of the first file */
    rf_st *s = NULL;
    if (f->n_files && rf_st_open(f->files[0].path, &s, &err) == RF_OK) {
        printf("\n__metadata__ (%zu keys, first file)\n", rf_st_n_metadata(s));
        for (size_t i = 0; i < rf_st_n_metadata(s); i++) {
            const char *k, *v;
            rf_st_metadata_at(s, i, &k, &v);
            fputs("  ", stdout);
            print_name(cstr(k), 30);
            putchar(' ');
            print_str(cstr(v), 120);
            putchar('\n');
        }
        rf_st_close(s);
    }
    if (o->show_tensors) {
        printf("\ntensors (%zu; %llu as stored)\n  %-40s %-10s %-18s %15s %s\n", f->n_tensors,
               (unsigned long long)f->stored_tensors, "name", "dtype", "shape", "bytes",
               f->n_files > 1 ? "file" : "");
        for (size_t i = 0; i < f->n_tensors; i++) {
            const rf_facts_tensor *t = &f->tensors[i];
            fputs("  ", stdout);
            print_name(cstr(t->name), 40);
            printf(" %-10s ", t->dtype);
            print_dims(t->shape, t->n_dims);
            printf(" %15s", commas(t->nbytes, b, sizeof b));
            if (f->n_files > 1) printf(" [%u]", t->file);
            if (t->parts > 1) printf("  (%u stored tensors)", t->parts);
            putchar('\n');
        }
    }
    print_dtypes(&f->fp, "dtype mix");
    int rc = print_analysis(f, o);
    rf_model_facts_free(f);
    return rc;
}

static rf_status kv_dtype(void *dest, const char *opt, const char *v, rf_error *err) {
    if (!rf_kv_dtype_parse(v, dest))
        return rf_error_set(err, RF_ERR_ARG,
                            "%s expects f16, bf16, f32, fp8, q8_0 or q4_0, got '%s'", opt, v);
    return RF_OK;
}

/* PATH: the last one counts, as -m */
static rf_status set_path(void *ctx, const char *arg, rf_error *err) {
    (void)err;
    *(const char **)ctx = arg;
    return RF_OK;
}

int cli_inspect(int argc, char **argv) {
    inspect_opts o = {.show_tensors = true, .ctx = -1, .util = 0.9, .kv = RF_KV_F16};
    const rf_opt opts[] = {
        {"--no-tensors", NULL, RF_OPT_FALSE, RF_OPT_DEST(o.show_tensors),
         .help = "leave out the tensor table"},
        {"--ctx", NULL, RF_OPT_INT, RF_OPT_DEST(o.ctx), .lo = 0, .hi = (double)RF_KV_MAX_CTX,
         .metavar = "N", .help = "context / request length (default min(trained context, 4096))"},
        {"--bw", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(o.bw), .lo = 0.001, .hi = 1e6, .metavar = "GBS",
         .help = "read bandwidth in GB/s (1e9 B/s; default: measured)"},
        {"--mem-gib", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(o.mem_gib), .lo = 0.001, .hi = 1e6,
         .metavar = "G", .help = "memory in GiB (2^30 B; default: this machine's memory)"},
        {"--util", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(o.util), .lo = 0.01, .hi = 1, .metavar = "U",
         .help = "fraction of the memory used, in (0, 1] (default 0.9, vLLM's)"},
        {"--kv-dtype", NULL, RF_OPT_STRING, .dest = &o.kv, .fn = kv_dtype, .metavar = "T",
         .help = "f16 (default), bf16, f32, fp8, q8_0, q4_0"},
        {NULL, "-m", RF_OPT_STRING, RF_OPT_DEST(o.path), .metavar = "PATH",
         .help = "the same as PATH"},
    };
    char epilog[4200];
    snprintf(epilog, sizeof epilog, "PATH defaults to the embedded model (%s).\n",
             cli_default_model());
    const rf_opt_spec spec = {
        .prog = "roofline inspect",
        .args = "[PATH]",
        .about = "PATH: a GGUF file, a .safetensors file, a model.safetensors.index.json, or a\n"
                 "directory holding one (only headers are read). Prints the header, metadata,\n"
                 "tensor table and dtype mix; the memory by role; the bytes read per decoded\n"
                 "token by role at context N and the roofline ceiling tok/s = read bandwidth /\n"
                 "bytes per token; and the KV cache capacity as vLLM counts it:\n"
                 "  KV cache: T tokens; maximum concurrency X.XXx for N tokens per request\n"
                 "with budget = G GiB x U - weights.\n",
        .epilog = epilog,
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
        .positional = set_path,
        .ctx = &o.path,
    };
    int rc = cli_opts("inspect", &spec, argc, argv);
    if (rc >= 0) return rc;
    struct stat sb;
    if (!o.path || stat(o.path, &sb) != 0) { /* an embedded model's name, or the default */
        o.path = cli_model("inspect", o.path);
        if (!o.path) return RF_EXIT_BAD_INPUT;
    }
    bool dir = stat(o.path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!dir &&
        (rf_model_facts_path_is_gguf(o.path) || stat(o.path, &sb) != 0 || !S_ISREG(sb.st_mode)))
        return inspect_gguf(&o); /* its reader names a missing or irregular file */
    return inspect_safetensors(&o);
}
