/* quantize.c: the GGUF quantizer (quantize.h). One pass plans every tensor's output type (which
 * tensors are weights, the embedding type, keep-mixed, the K-quant fallbacks), a second converts
 * the tensors that change, rows split over a thread pool, and the writer streams the result into
 * a temporary file that is renamed into place. Unchanged tensors are borrowed from the input
 * mapping, so only the converted tensors are ever held in memory. */
#include "format/quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "format/gguf_write.h"
#include "kernels/quant.h"
#include "util/cpu.h"
#include "util/file.h"
#include "util/threadpool.h"

#define KEY_FILE_TYPE "general.file_type"
#define KEY_QUANT_VER "general.quantization_version"
#define QUANT_VERSION 2 /* GGML_QNT_VERSION: the block layouts of quant.h */

void rf_quantize_opts_init(rf_quantize_opts *o) {
    memset(o, 0, sizeof *o);
    o->type = RF_TYPE_Q8_0;
    o->emb_type = RF_TYPE_COUNT;
}

int32_t rf_quantize_ftype(rf_type t) {
    switch (t) { /* llama_ftype values (llama.h) */
    case RF_TYPE_F32:
        return 0;
    case RF_TYPE_F16:
        return 1;
    case RF_TYPE_Q4_0:
        return 2;
    case RF_TYPE_Q4_1:
        return 3;
    case RF_TYPE_Q8_0:
        return 7;
    case RF_TYPE_Q5_0:
        return 8;
    case RF_TYPE_Q5_1:
        return 9;
    case RF_TYPE_Q4_K:
        return 15; /* Q4_K_M, what llama-quantize calls "Q4_K" */
    case RF_TYPE_Q5_K:
        return 17; /* Q5_K_M */
    case RF_TYPE_Q6_K:
        return 18;
    case RF_TYPE_BF16:
        return 32;
    default:
        return -1;
    }
}

bool rf_quantize_type_ok(rf_type t) {
    return rf_quantize_ftype(t) >= 0;
}

/* A type roofline can decode to f32 (the engine's computable types). */
static bool decodable(uint32_t t) {
    return t < RF_TYPE_COUNT && rf_vec_dot_type((rf_type)t) != RF_TYPE_COUNT;
}

static double bits_per_weight(uint32_t t) {
    const rf_type_info *ti = rf_type_get(t);
    return ti->block ? 8.0 * ti->bytes / ti->block : 0.0;
}

static bool has(const char *name, const char *part) {
    return strstr(name, part) != NULL;
}

static bool ends_with(const char *name, const char *tail) {
    size_t n = strlen(name), t = strlen(tail);
    return n >= t && strcmp(name + n - t, tail) == 0;
}

/* llama.cpp's tensor_allows_quantization (llama-quant.cpp), the architecture-independent part. */
static bool is_weight_matrix(const rf_gguf_tensor *t, const char *name) {
    static const char *const never[] = {
        "_norm.weight",
        "ffn_gate_inp.weight",
        "ffn_gate_tid2eid.weight",
        "altup",
        "laurel",
        "per_layer_model_proj",
        "ssm_conv1d",
        "shortconv.conv.weight",
        "indexer.k_proj.weight",
        "indexer.q_proj.weight",
        "time_mix_first.weight",
        "time_mix_w0.weight",
        "time_mix_w1.weight",
        "time_mix_w2.weight",
        "time_mix_v0.weight",
        "time_mix_v1.weight",
        "time_mix_v2.weight",
        "time_mix_a0.weight",
        "time_mix_a1.weight",
        "time_mix_a2.weight",
        "time_mix_g1.weight",
        "time_mix_g2.weight",
        "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight",
        "attn_rel_b.weight",
        ".position_embd",
        "sam.pos_embd",
        "sam.neck.",
        "sam.net_",
        ".rel_pos",
        ".patch_embd",
        ".patch_merger",
        "a.rvq.codebook",
        "mm.a.code_embd",
    };
    uint32_t dims = t->n_dims; /* ggml_n_dims: trailing dimensions of 1 do not count */
    while (dims > 1 && t->ne[dims - 1] == 1) dims--;
    if (dims < 2 || !ends_with(name, "weight")) return false;
    if (strcmp(name, "position_embd.weight") == 0 || strcmp(name, "token_types.weight") == 0)
        return false;
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (has(name, never[i])) return false;
    return true;
}

static bool is_token_embd(const char *name) {
    return strcmp(name, "token_embd.weight") == 0 ||
           strcmp(name, "per_layer_token_embd.weight") == 0;
}

/* llama.cpp's tensor_type_fallback: the type used when the row length ne0 is no multiple of
 * target's block. */
static rf_type fallback_type(rf_type target, uint64_t ne0) {
    rf_type t = target;
    if (ne0 % rf_type_get(t)->block == 0) return t;
    if (target == RF_TYPE_Q4_K) t = RF_TYPE_Q5_0;
    if (target == RF_TYPE_Q5_K) t = RF_TYPE_Q5_1;
    if (target == RF_TYPE_Q6_K) t = RF_TYPE_Q8_0;
    if (ne0 % rf_type_get(t)->block) t = RF_TYPE_F16;
    return t;
}

typedef struct plan {
    const rf_gguf_tensor *t;
    char name[RF_GGUF_MAX_NAME];
    uint32_t out_type;
    bool convert;  /* decode and encode (else the bytes are copied) */
    bool fallback; /* out_type is a fallback for the row length */
    void *data;    /* the converted tensor (owned), or NULL */
} plan;

/* Appends "name (TYPE)" to the report's fallback list, cutting it with "..." when full. */
static void note_fallback(rf_quantize_report *rep, const char *name, uint32_t type) {
    size_t len = strlen(rep->fallback), cap = sizeof rep->fallback;
    if (ends_with(rep->fallback, "...")) return; /* already cut (items end in ")") */
    char item[RF_GGUF_MAX_NAME + 24];
    snprintf(item, sizeof item, "%s%s (%s)", len ? ", " : "", name, rf_type_get(type)->name);
    if (len + strlen(item) + 4 <= cap)
        memcpy(rep->fallback + len, item, strlen(item) + 1);
    else
        snprintf(rep->fallback + len, cap - len, "%s...", len ? ", " : "");
}

/* RF_ERR_ARG when converting `have` (the token embedding's type when emb names it, else the
 * dominant matrix type) to `want` would widen it and neither force nor keep_mixed allows that. */
static rf_status check_not_wider(const rf_gguf *g, const rf_quantize_opts *o, const char *emb,
                                 uint32_t have, rf_type want, rf_error *err) {
    if (o->force || o->keep_mixed || bits_per_weight(have) >= bits_per_weight(want)) return RF_OK;
    return rf_error_set(err, RF_ERR_ARG,
                        "%s: %s%s %s %s (%.2f bits per weight), smaller than the target %s (%.2f):"
                        " converting would only dequantize (--force does it anyway)",
                        rf_gguf_name(g), emb ? "the token embedding " : "most weight matrices",
                        emb ? emb : "", emb ? "is" : "are", rf_type_get(have)->name,
                        bits_per_weight(have), rf_type_get(want)->name, bits_per_weight(want));
}

static rf_status make_plan(const rf_gguf *g, const rf_quantize_opts *o, plan *p,
                           rf_quantize_report *rep, rf_error *err) {
    const uint64_t n = rf_gguf_n_tensors(g);
    const rf_type emb = o->emb_type == RF_TYPE_COUNT ? o->type : o->emb_type;
    /* elements per input type among the weight matrices other than the token embedding, for the
     * dominant type; the embedding is checked against its own target */
    uint64_t per_type[RF_TYPE_COUNT] = {0};
    rf_status st = RF_OK;
    for (uint64_t i = 0; i < n; i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        p[i].t = t;
        if (memchr(t->name.ptr, 0, t->name.len))
            return rf_error_set(err, RF_ERR_FORMAT, "%s: tensor %llu: name holds a NUL byte",
                                rf_gguf_name(g), (unsigned long long)i);
        memcpy(p[i].name, t->name.ptr, t->name.len); /* < RF_GGUF_MAX_NAME: the reader checks */
        p[i].name[t->name.len] = 0;
        p[i].out_type = t->type;
        rep->bytes_in += (int64_t)t->nbytes;
        rep->n_elements += (int64_t)t->nelements;
        if (!is_weight_matrix(t, p[i].name)) continue;
        const bool is_emb = is_token_embd(p[i].name);
        const rf_type want = is_emb ? emb : o->type;
        if (is_emb)
            st = check_not_wider(g, o, p[i].name, t->type, want, err);
        else
            per_type[t->type] += t->nelements;
        if (st) return st;
        if (o->keep_mixed && bits_per_weight(t->type) <= bits_per_weight(want)) continue;
        uint32_t out = fallback_type(want, t->ne[0]);
        p[i].fallback = out != (uint32_t)want;
        p[i].out_type = out;
        p[i].convert = out != t->type;
        if (p[i].convert && !decodable(t->type))
            return rf_error_set(err, RF_ERR_UNSUPPORTED,
                                "%s: tensor '%s' is %s, which roofline cannot decode to convert",
                                rf_gguf_name(g), p[i].name, rf_type_get(t->type)->name);
    }
    uint32_t dominant = RF_TYPE_COUNT;
    for (uint32_t t = 0; t < RF_TYPE_COUNT; t++)
        if (per_type[t] && (dominant == RF_TYPE_COUNT || per_type[t] > per_type[dominant]))
            dominant = t;
    if (dominant != RF_TYPE_COUNT) st = check_not_wider(g, o, NULL, dominant, o->type, err);
    if (st) return st;
    for (uint64_t i = 0; i < n; i++) {
        rep->n_tensors++;
        if (p[i].convert)
            rep->n_quantized++;
        else
            rep->n_kept++;
        if (p[i].fallback) {
            rep->n_fallback++;
            note_fallback(rep, p[i].name, p[i].out_type);
        }
    }
    return RF_OK;
}

/* One tensor's conversion, rows split over the pool. */
typedef struct convert_job {
    const plan *p;
    int64_t n_per_row, n_rows;
    size_t src_row, dst_row;
    float **scratch; /* one row of floats per thread */
} convert_job;

static void convert_rows(void *arg, int ith, int nth) {
    const convert_job *j = arg;
    long r0, r1;
    rf_split((long)j->n_rows, ith, nth, &r0, &r1);
    const uint8_t *src = j->p->t->data;
    uint8_t *dst = j->p->data;
    float *row = j->scratch[ith];
    for (long r = r0; r < r1; r++) {
        rf_ref_dequantize_row((rf_type)j->p->t->type, src + (size_t)r * j->src_row, row,
                              j->n_per_row);
        rf_ref_quantize_weights((rf_type)j->p->out_type, row, dst + (size_t)r * j->dst_row,
                                j->n_per_row);
    }
}

static rf_status convert_all(rf_pool *pool, plan *p, uint64_t n, rf_error *err) {
    const int nth = rf_pool_size(pool);
    float **scratch = calloc((size_t)nth, sizeof *scratch);
    rf_status st = scratch ? RF_OK : rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; !st && i < n; i++) {
        if (!p[i].convert) continue;
        const rf_gguf_tensor *t = p[i].t;
        const int64_t n_per_row = (int64_t)t->ne[0];
        const uint64_t bytes =
            (t->nelements / t->ne[0]) * rf_type_row_bytes(p[i].out_type, t->ne[0]);
        p[i].data = malloc(bytes ? bytes : 1);
        if (!p[i].data) {
            st = rf_error_set(err, RF_ERR_NOMEM, "tensor '%s': out of memory (%llu bytes)",
                              p[i].name, (unsigned long long)bytes);
            break;
        }
        for (int k = 0; k < nth; k++) {
            float *row = realloc(scratch[k], (size_t)n_per_row * sizeof(float));
            if (!row) {
                st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
                break;
            }
            scratch[k] = row;
        }
        if (st) break;
        convert_job job = {&p[i],
                           n_per_row,
                           (int64_t)(t->nelements / t->ne[0]),
                           rf_type_row_bytes(t->type, t->ne[0]),
                           rf_type_row_bytes(p[i].out_type, t->ne[0]),
                           scratch};
        rf_pool_run(pool, convert_rows, &job);
    }
    for (int k = 0; scratch && k < nth; k++) free(scratch[k]);
    free(scratch);
    return st;
}

/* Metadata as the input has it, with general.file_type and general.quantization_version set in
 * place (appended when absent), as llama-quantize writes them, and the source mark appended when
 * there is one (the input's own mark left out). */
static rf_status copy_metadata(const rf_gguf *g, rf_gguf_writer *w, rf_type type, const char *mark,
                               rf_error *err) {
    bool had_ftype = false, had_qver = false;
    rf_status st = RF_OK;
    for (uint64_t i = 0; !st && i < rf_gguf_n_kv(g); i++) {
        const rf_gguf_kv *kv = rf_gguf_kv_at(g, i);
        if (mark && rf_str_eq(kv->key, RF_QUANTIZE_KEY_SOURCE)) {
            continue;
        } else if (rf_str_eq(kv->key, KEY_FILE_TYPE)) {
            had_ftype = true;
            st = rf_gguf_writer_add_u32(w, KEY_FILE_TYPE, (uint32_t)rf_quantize_ftype(type), err);
        } else if (rf_str_eq(kv->key, KEY_QUANT_VER)) {
            had_qver = true;
            st = rf_gguf_writer_add_u32(w, KEY_QUANT_VER, QUANT_VERSION, err);
        } else {
            st = rf_gguf_writer_copy_kv(w, kv, err);
        }
    }
    if (!st && !had_qver) st = rf_gguf_writer_add_u32(w, KEY_QUANT_VER, QUANT_VERSION, err);
    if (!st && !had_ftype)
        st = rf_gguf_writer_add_u32(w, KEY_FILE_TYPE, (uint32_t)rf_quantize_ftype(type), err);
    if (!st && mark) st = rf_gguf_writer_add_str(w, RF_QUANTIZE_KEY_SOURCE, mark, err);
    return st;
}

static rf_status write_gguf(void *arg, int fd, const char *name, rf_error *err) {
    return rf_gguf_writer_to_fd(arg, fd, name, err);
}

rf_status rf_quantize_file(const char *in_path, const char *out_path, const rf_quantize_opts *o,
                           rf_quantize_report *rep, rf_error *err) {
    rf_quantize_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    if (!rf_quantize_type_ok(o->type))
        return rf_error_set(err, RF_ERR_ARG, "unsupported target type %s",
                            rf_type_get(o->type)->name ? rf_type_get(o->type)->name : "(unknown)");
    if (o->emb_type != RF_TYPE_COUNT && !rf_quantize_type_ok(o->emb_type))
        return rf_error_set(err, RF_ERR_ARG, "unsupported embedding type %s",
                            rf_type_get(o->emb_type)->name ? rf_type_get(o->emb_type)->name
                                                           : "(unknown)");
    if (o->threads < 0 || o->threads > 1024)
        return rf_error_set(err, RF_ERR_ARG, "threads %d not in [0, 1024]", (int)o->threads);
    rf_gguf *g = NULL;
    rf_gguf_writer *w = NULL;
    rf_pool *pool = NULL;
    plan *p = NULL;
    uint64_t n = 0;
    rf_status st = rf_gguf_open(in_path, &g, err);
    if (st) goto out;
    n = rf_gguf_n_tensors(g);
    p = calloc(n ? n : 1, sizeof *p);
    w = rf_gguf_writer_new();
    if (!p || !w) {
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        goto out;
    }
    st = make_plan(g, o, p, rep, err);
    if (st) goto out;
    st = rf_pool_new(o->threads ? o->threads : rf_cpu_physical_cores(), &pool, err);
    if (st) goto out;
    st = convert_all(pool, p, n, err);
    if (st) goto out;
    rf_gguf_writer_set_version(w, rf_gguf_version(g));
    st = copy_metadata(g, w, o->type, o->source_mark, err);
    for (uint64_t i = 0; !st && i < n; i++) {
        const rf_gguf_tensor *t = p[i].t;
        const uint64_t bytes =
            p[i].convert ? (t->nelements / t->ne[0]) * rf_type_row_bytes(p[i].out_type, t->ne[0])
                         : t->nbytes;
        rep->bytes_out += (int64_t)bytes;
        st = rf_gguf_writer_add_tensor_ref(w, p[i].name, t->n_dims, t->ne, p[i].out_type,
                                           p[i].convert ? p[i].data : t->data, bytes, err);
    }
    if (st) goto out;
    st = rf_write_file_atomic_with(out_path, write_gguf, w, err);
out:
    rf_gguf_writer_free(w);
    for (uint64_t i = 0; p && i < n; i++) free(p[i].data);
    free(p);
    rf_pool_free(pool);
    rf_gguf_close(g);
    if (st) memset(rep, 0, sizeof *rep);
    return st;
}
