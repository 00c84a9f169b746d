/* test_quantize.c: the weight encoders (rf_ref_quantize_weights) and the GGUF quantizer
 * (rf_quantize_file, `roofline quantize`).
 *
 *  1. Round trips on random rows: every format's decoded values within its stated bound (the
 *     bound of each encoder, from quant_ref.c, is printed with the largest error seen), and
 *     hand-computed blocks showing llama.cpp's reference roundings (Q8_0: roundf of x/d, halves
 *     away from zero; Q4_0: trunc(x/d + 8.5)).
 *  2. Tiny models written here: which tensors are converted (norms and 1-D stay F32), the K-quant
 *     fallback on rows of 96 (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0) and its report,
 *     --embeddings, --keep-mixed, --force, tensors copied byte for byte, the converted bytes
 *     equal to the encoder's, all metadata kept with general.file_type set, and the output loaded
 *     by the GGUF reader and the model loader and decoded (logits close to the F32 model's).
 *  3. Bad input through the binary (ROOFLINE_BIN): exit status 2 with a message naming the
 *     problem, no output and no temporary file left behind, an existing output untouched.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "quant_bounds.h"
#include "run_bin.h"
#include "format/gguf.h"
#include "format/quantize.h"
#include "model/context.h"
#include "model/model.h"
#include "tiny_model.h"
#include "util/half.h"

/* ------------------------------------------------------------------------------------------ */
/* 1. Encoders                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static void test_round_trips(void) {
    static const rf_type types[] = {RF_TYPE_F32,  RF_TYPE_F16,  RF_TYPE_BF16, RF_TYPE_Q8_0,
                                    RF_TYPE_Q5_0, RF_TYPE_Q5_1, RF_TYPE_Q4_0, RF_TYPE_Q4_1,
                                    RF_TYPE_Q4_K, RF_TYPE_Q5_K, RF_TYPE_Q6_K};
    const int64_t n = 4 * 256;
    float *x = xmalloc((size_t)n * sizeof *x), *y = xmalloc((size_t)n * sizeof *y);
    void *q = xmalloc((size_t)n * sizeof(float));
    uint64_t seed = 0x9a4751ull;
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const rf_type t = types[k];
        const int64_t bs = rf_type_get((uint32_t)t)->block;
        double worst = 0.0; /* largest error / bound seen */
        int bad = 0;
        for (int rep = 0; rep < 64; rep++) {
            /* weight-like rows: mostly small, some outliers, some one-signed, some tiny scales */
            const float scale = rep % 8 == 7 ? 1e-4f : 1.0f + (float)(rep % 5);
            for (int64_t i = 0; i < n; i++) {
                float v = rng_sym(&seed) * scale;
                if (rep % 4 == 1) v = fabsf(v) + 0.5f * scale; /* all positive, offset */
                if (rng_next(&seed) % 97 == 0) v *= 8.0f;      /* outliers */
                x[i] = v;
            }
            rf_ref_quantize_weights(t, x, q, n);
            rf_ref_dequantize_row(t, q, y, n);
            for (int64_t i = 0; i < n; i++) {
                const int64_t b0 = bs > 1 ? i / bs * bs : i;
                const float bound = quant_err_bound(t, x + b0, bs > 1 ? bs : 1, x[i]);
                const float e = fabsf(x[i] - y[i]);
                if (!(e <= bound) && bad++ < 3)
                    CHECK_MSG(0, "%s value %lld: x %.9g decoded %.9g bound %.3g",
                              rf_type_get((uint32_t)t)->name, (long long)i, (double)x[i],
                              (double)y[i], (double)bound);
                if (bound > 0 && e / bound > worst) worst = e / bound;
            }
        }
        CHECK_MSG(bad == 0, "%s: %d values outside the bound", rf_type_get((uint32_t)t)->name, bad);
        printf("  %-5s worst error %.3f of its bound\n", rf_type_get((uint32_t)t)->name, worst);
    }
    free(x);
    free(y);
    free(q);
}

/* llama.cpp's reference roundings, on blocks whose scale is exact. */
static void test_reference_rounding(void) {
    float x[32] = {0};
    /* Q8_0: amax 127 -> d = 1; 2.5 rounds away from zero to 3 (the activation encoder's
     * ties-to-even gives 2), -2.5 to -3 */
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.49f;
    rf_block_q8_0 w, a;
    rf_ref_quantize_weights(RF_TYPE_Q8_0, x, &w, 32);
    rf_ref_quantize_row(RF_TYPE_Q8_0, x, &a, 32);
    CHECK(rf_f16_to_f32(w.d) == 1.0f);
    CHECK(w.qs[0] == 127 && w.qs[1] == 3 && w.qs[2] == -3 && w.qs[3] == 0);
    CHECK(a.qs[1] == 2 && a.qs[2] == -2); /* the activations' ties to even */
    /* Q4_0: the signed extreme -8 -> d = 1 (stored as d = max / -8 = 1); level =
     * trunc(x + 8.5): 2.5 -> 11 (value 3), -0.5 -> 8 (0), 7.9 -> 15 (clamped: 7) */
    memset(x, 0, sizeof x);
    x[0] = -8.0f;
    x[1] = 2.5f;
    x[2] = -0.5f;
    x[17] = 7.9f;
    rf_block_q4_0 b;
    rf_ref_quantize_weights(RF_TYPE_Q4_0, x, &b, 32);
    CHECK(rf_f16_to_f32(b.d) == 1.0f);
    CHECK((b.qs[0] & 15) == 0 && (b.qs[1] & 15) == 11 && (b.qs[2] & 15) == 8);
    CHECK((b.qs[1] >> 4) == 15); /* value 17 is the high nibble of byte 1 */
    CHECK((b.qs[3] & 15) == 8);  /* zeros are level 8 */
}

/* ------------------------------------------------------------------------------------------ */
/* 2. Files                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static char g_dir[] = "/tmp/roofline-quantize-XXXXXX";

/* g_dir/name into out. */
#define TMP_PATH(var, name)                                                                        \
    char var[512];                                                                                 \
    snprintf(var, sizeof var, "%s/%s", g_dir, name)

/* Entries of g_dir other than . and .. */
static int dir_entries(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d) closedir(d);
    return n;
}

/* The tiny model of spec s at path. */
static bool write_tiny(const tiny_spec *s, const char *path) {
    const char *tmp = tiny_write_file(s, "quantize");
    return tmp && rename(tmp, path) == 0;
}

/* A tiny Gemma 3 with 256-wide rows (so the K-quants apply) and an FFN of 96 (their fallback). */
static tiny_spec spec256(void) {
    tiny_spec s = tiny_default();
    s.n_embd = 256;
    s.n_ff = 96;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 64;
    s.n_layer = 2;
    return s;
}

static bool is_norm_or_1d(const rf_gguf_tensor *t) {
    return t->n_dims == 1 || rf_str_eq(t->name, "x") ||
           (t->name.len > 12 && memcmp(t->name.ptr + t->name.len - 12, "_norm.weight", 12) == 0);
}

static bool name_has(const rf_gguf_tensor *t, const char *part) {
    char n[RF_GGUF_MAX_NAME];
    memcpy(n, t->name.ptr, t->name.len);
    n[t->name.len] = 0;
    return strstr(n, part) != NULL;
}

/* Every key of a is in b with the same type and value, except general.file_type (b: ftype) and
 * general.quantization_version (b: 2); b has no other keys. */
static void check_metadata(const rf_gguf *a, const rf_gguf *b, int32_t ftype) {
    uint64_t extra = 0;
    for (uint64_t i = 0; i < rf_gguf_n_kv(b); i++) {
        const rf_gguf_kv *kb = rf_gguf_kv_at(b, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)kb->key.len, kb->key.ptr);
        const rf_gguf_kv *ka = rf_gguf_find_kv(a, key);
        if (strcmp(key, "general.file_type") == 0) {
            CHECK(kb->type == RF_GGUF_U32 && kb->v.u == (uint64_t)ftype);
            extra += !ka;
            continue;
        }
        if (strcmp(key, "general.quantization_version") == 0) {
            CHECK(kb->type == RF_GGUF_U32 && kb->v.u == 2);
            extra += !ka;
            continue;
        }
        CHECK_MSG(ka != NULL, "output key %s not in the input", key);
        if (!ka) continue;
        CHECK_MSG(ka->type == kb->type, "key %s: type %d -> %d", key, ka->type, kb->type);
        if (ka->type == RF_GGUF_STRING)
            CHECK(ka->v.s.len == kb->v.s.len && memcmp(ka->v.s.ptr, kb->v.s.ptr, ka->v.s.len) == 0);
        else if (ka->type == RF_GGUF_ARRAY) {
            CHECK(ka->v.arr.type == kb->v.arr.type && ka->v.arr.n == kb->v.arr.n);
            if (ka->v.arr.type == RF_GGUF_STRING && ka->v.arr.n == kb->v.arr.n)
                for (uint64_t j = 0; j < ka->v.arr.n; j++)
                    CHECK(ka->v.arr.strs[j].len == kb->v.arr.strs[j].len &&
                          memcmp(ka->v.arr.strs[j].ptr, kb->v.arr.strs[j].ptr,
                                 ka->v.arr.strs[j].len) == 0);
            else if (ka->v.arr.n == kb->v.arr.n)
                CHECK(memcmp(ka->v.arr.data, kb->v.arr.data,
                             ka->v.arr.n * rf_gguf_type_size(ka->v.arr.type)) == 0);
        } else if (ka->type == RF_GGUF_F32 || ka->type == RF_GGUF_F64)
            CHECK(ka->v.f == kb->v.f);
        else
            CHECK(ka->v.u == kb->v.u);
    }
    CHECK(rf_gguf_n_kv(b) == rf_gguf_n_kv(a) + extra);
}

/* Decodes a few tokens with the model at path; fills logits[n_vocab] of the last. */
static bool decode_model(const char *path, float *logits, int n_vocab) {
    rf_model *m = NULL;
    rf_context *c = NULL;
    rf_error err = {0};
    bool ok = false;
    if (rf_model_load(path, &m, &err)) {
        fprintf(stderr, "load %s: %s\n", path, err.msg);
        goto out;
    }
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = 16;
    cp.n_batch = 4;
    cp.n_threads = 1;
    if (rf_context_new(m, &cp, &c, &err)) {
        fprintf(stderr, "context: %s\n", err.msg);
        goto out;
    }
    const int32_t tok[4] = {2, 300, 301, 302}, pos[4] = {0, 1, 2, 3}, seq[4] = {0, 0, 0, 0};
    const int8_t want[4] = {0, 0, 0, RF_OUT_LOGITS};
    rf_batch b = {4, tok, pos, seq, want};
    if (rf_decode(c, &b, &err)) {
        fprintf(stderr, "decode: %s\n", err.msg);
        goto out;
    }
    memcpy(logits, rf_context_logits(c, 0), (size_t)n_vocab * sizeof *logits);
    ok = true;
out:
    rf_context_free(c);
    rf_model_free(m);
    return ok;
}

/* max |a - b| / max |a| over n logits */
static double rel_diff(const float *a, const float *b, int n) {
    double d = 0.0, m = 0.0;
    for (int i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)a[i]));
    }
    return m > 0 ? d / m : d;
}

/* F32 tiny model -> each target: the types of every tensor, the fallbacks, the report, the
 * metadata, the bytes of the converted tensors, and a decode close to the F32 model's. */
static void test_model_types(void) {
    static const struct {
        rf_type type, ffn_down; /* ffn_down's rows are 96 wide */
        double logit_tol;       /* max |logit - F32's| / max |F32 logit|: ~3x what is seen */
    } cases[] = {
        {RF_TYPE_F16, RF_TYPE_F16, 0.001},  {RF_TYPE_BF16, RF_TYPE_BF16, 0.003},
        {RF_TYPE_Q8_0, RF_TYPE_Q8_0, 0.01}, {RF_TYPE_Q5_0, RF_TYPE_Q5_0, 0.05},
        {RF_TYPE_Q5_1, RF_TYPE_Q5_1, 0.05}, {RF_TYPE_Q4_0, RF_TYPE_Q4_0, 0.1},
        {RF_TYPE_Q4_1, RF_TYPE_Q4_1, 0.1},  {RF_TYPE_Q4_K, RF_TYPE_Q5_0, 0.1},
        {RF_TYPE_Q5_K, RF_TYPE_Q5_1, 0.05}, {RF_TYPE_Q6_K, RF_TYPE_Q8_0, 0.03},
        {RF_TYPE_F32, RF_TYPE_F32, 0.0},
    };
    tiny_spec s = spec256();
    TMP_PATH(in, "f32.gguf");
    CHECK(write_tiny(&s, in));
    rf_gguf *gi = NULL;
    rf_error err = {0};
    CHECK(rf_gguf_open(in, &gi, &err) == RF_OK);
    if (!gi) return;
    float *ref = xmalloc((size_t)s.n_vocab * sizeof *ref);
    float *got = xmalloc((size_t)s.n_vocab * sizeof *got);
    CHECK(decode_model(in, ref, s.n_vocab));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const rf_type T = cases[k].type;
        const char *tn = rf_type_get((uint32_t)T)->name;
        TMP_PATH(out, "out.gguf");
        rf_quantize_opts o;
        rf_quantize_opts_init(&o);
        o.type = T;
        o.threads = 2;
        rf_quantize_report rep;
        rf_status st = rf_quantize_file(in, out, &o, &rep, &err);
        CHECK_MSG(st == RF_OK, "%s: %s", tn, err.msg);
        if (st) continue;
        rf_gguf *go = NULL;
        CHECK_MSG(rf_gguf_open(out, &go, &err) == RF_OK, "%s: %s", tn, err.msg);
        if (!go) continue;
        CHECK(rf_gguf_n_tensors(go) == rf_gguf_n_tensors(gi));
        CHECK(rf_gguf_alignment(go) == rf_gguf_alignment(gi));
        check_metadata(gi, go, rf_quantize_ftype(T));
        int n_matrix = 0, n_fallback = 0;
        for (uint64_t i = 0; i < rf_gguf_n_tensors(gi); i++) {
            const rf_gguf_tensor *a = rf_gguf_tensor_at(gi, i), *b = rf_gguf_tensor_at(go, i);
            CHECK(a->name.len == b->name.len && memcmp(a->name.ptr, b->name.ptr, a->name.len) == 0);
            CHECK(a->n_dims == b->n_dims && memcmp(a->ne, b->ne, sizeof a->ne) == 0);
            if (is_norm_or_1d(a)) { /* kept: F32, the same bytes */
                CHECK_MSG(b->type == RF_TYPE_F32 && b->nbytes == a->nbytes &&
                              memcmp(a->data, b->data, a->nbytes) == 0,
                          "%s: %.*s changed", tn, (int)a->name.len, a->name.ptr);
                continue;
            }
            n_matrix++;
            const bool down = name_has(a, "ffn_down");
            const uint32_t want = down ? (uint32_t)cases[k].ffn_down : (uint32_t)T;
            n_fallback += want != (uint32_t)T;
            CHECK_MSG(b->type == want, "%s: %.*s is %s, want %s", tn, (int)a->name.len, a->name.ptr,
                      rf_type_get(b->type)->name, rf_type_get(want)->name);
            /* the bytes are the encoder's, row by row */
            const size_t row = rf_type_row_bytes(b->type, a->ne[0]);
            void *q = xmalloc(row);
            bool same = true;
            for (uint64_t r = 0; r < a->nelements / a->ne[0]; r++) {
                rf_ref_quantize_weights((rf_type)b->type, (const float *)a->data + r * a->ne[0], q,
                                        (int64_t)a->ne[0]);
                same = same && memcmp(q, (const uint8_t *)b->data + r * row, row) == 0;
            }
            CHECK_MSG(same, "%s: %.*s differs from the encoder's bytes", tn, (int)a->name.len,
                      a->name.ptr);
            free(q);
        }
        CHECK(n_matrix == 1 + 7 * s.n_layer); /* token_embd + q k v o gate up down */
        CHECK_MSG(rep.n_fallback == n_fallback, "%s: %d fallbacks reported, %d seen", tn,
                  rep.n_fallback, n_fallback);
        CHECK(rep.n_tensors == (int32_t)rf_gguf_n_tensors(gi));
        CHECK(rep.n_quantized == (T == RF_TYPE_F32 ? 0 : n_matrix));
        CHECK(rep.n_quantized + rep.n_kept == rep.n_tensors);
        if (n_fallback) {
            char want[128];
            snprintf(want, sizeof want, "blk.0.ffn_down.weight (%s)",
                     rf_type_get((uint32_t)cases[k].ffn_down)->name);
            CHECK_MSG(strstr(rep.fallback, want) != NULL, "%s: fallback list '%s'", tn,
                      rep.fallback);
        }
        struct stat sb;
        CHECK(stat(out, &sb) == 0 && (sb.st_mode & 0777) == 0644);
        rf_gguf_close(go);
        CHECK_MSG(decode_model(out, got, s.n_vocab), "%s: the output does not load", tn);
        const double rd = rel_diff(ref, got, s.n_vocab);
        CHECK_MSG(rd <= cases[k].logit_tol, "%s: logits differ from F32's by %.3g (tol %.3g)", tn,
                  rd, cases[k].logit_tol);
        printf("  %-5s logits within %.4f of the F32 model's (relative to its largest)\n", tn, rd);
        remove(out);
    }
    CHECK(dir_entries() == 1); /* only the input: no temporary file left */
    rf_gguf_close(gi);
    remove(in);
    free(ref);
    free(got);
}

/* Type of tensor name in the file at path (RF_TYPE_COUNT when absent). */
static uint32_t type_of(const char *path, const char *name) {
    rf_gguf *g = NULL;
    rf_error err = {0};
    if (rf_gguf_open(path, &g, &err)) return RF_TYPE_COUNT;
    const rf_gguf_tensor *t = rf_gguf_find_tensor(g, name);
    uint32_t ty = t ? t->type : RF_TYPE_COUNT;
    rf_gguf_close(g);
    return ty;
}

static void test_embeddings(void) {
    tiny_spec s = spec256();
    TMP_PATH(in, "emb-in.gguf");
    CHECK(write_tiny(&s, in));
    rf_quantize_opts o;
    rf_quantize_opts_init(&o);
    o.type = RF_TYPE_Q4_0;
    o.emb_type = RF_TYPE_Q8_0;
    rf_error err = {0};
    TMP_PATH(out, "emb-out.gguf");
    CHECK(rf_quantize_file(in, out, &o, NULL, &err) == RF_OK);
    CHECK(type_of(out, "token_embd.weight") == RF_TYPE_Q8_0);
    CHECK(type_of(out, "blk.0.attn_q.weight") == RF_TYPE_Q4_0);
    CHECK(type_of(out, "blk.1.ffn_down.weight") == RF_TYPE_Q4_0);
    /* an untied output.weight is a matrix like the others */
    s.untied = 1;
    CHECK(write_tiny(&s, in));
    o.emb_type = RF_TYPE_F16;
    CHECK(rf_quantize_file(in, out, &o, NULL, &err) == RF_OK);
    CHECK(type_of(out, "token_embd.weight") == RF_TYPE_F16);
    CHECK(type_of(out, "output.weight") == RF_TYPE_Q4_0);
    /* the embedding is held to its own target: Q4_0 body, Q4_0 embedding -> F16 embedding would
     * widen it */
    o.emb_type = RF_TYPE_COUNT;
    CHECK(rf_quantize_file(in, out, &o, NULL, &err) == RF_OK); /* all Q4_0 now */
    TMP_PATH(out2, "emb-out2.gguf");
    o.emb_type = RF_TYPE_F16;
    CHECK(rf_quantize_file(out, out2, &o, NULL, &err) == RF_ERR_ARG);
    CHECK(strstr(err.msg, "token_embd.weight") != NULL && strstr(err.msg, "--force") != NULL);
    CHECK(access(out2, F_OK) != 0);
    remove(in);
    remove(out);
    CHECK(dir_entries() == 0);
}

/* A mixed file: F32, F16 and Q4_0 matrices, Q6_K of 256, and a 1-D F32 tensor. */
static void write_mixed(const char *path) {
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err = {0};
    rf_gguf_writer_add_str(w, "general.architecture", "none", &err);
    rf_gguf_writer_add_u32(w, "general.alignment", 64, &err);
    rf_gguf_writer_add_u32(w, "general.file_type", 1, &err);
    static const struct {
        const char *name;
        rf_type type;
        uint64_t ne0, ne1;
    } ts[] = {
        {"a.weight", RF_TYPE_F32, 256, 4},  {"b.weight", RF_TYPE_F16, 256, 4},
        {"c.weight", RF_TYPE_Q4_0, 256, 4}, {"d.weight", RF_TYPE_Q6_K, 256, 4},
        {"e.weight", RF_TYPE_F32, 256, 1},  {"f.bias", RF_TYPE_F32, 256, 4},
    };
    uint64_t seed = 7;
    float x[1024];
    uint8_t q[4096];
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        for (int j = 0; j < 1024; j++) x[j] = rng_sym(&seed);
        const size_t row = rf_type_row_bytes(ts[i].type, ts[i].ne0);
        for (uint64_t r = 0; r < ts[i].ne1; r++)
            rf_ref_quantize_weights(ts[i].type, x + r * ts[i].ne0, q + r * row, (int64_t)ts[i].ne0);
        uint64_t ne[2] = {ts[i].ne0, ts[i].ne1};
        rf_gguf_writer_add_tensor(w, ts[i].name, ts[i].ne1 > 1 ? 2 : 1, ne, ts[i].type, q,
                                  row * ts[i].ne1, &err);
    }
    CHECK(rf_gguf_writer_to_file(w, path, &err) == RF_OK);
    rf_gguf_writer_free(w);
}

static bool same_tensor_bytes(const char *pa, const char *pb, const char *name) {
    rf_gguf *a = NULL, *b = NULL;
    rf_error err = {0};
    bool same = false;
    if (!rf_gguf_open(pa, &a, &err) && !rf_gguf_open(pb, &b, &err)) {
        const rf_gguf_tensor *ta = rf_gguf_find_tensor(a, name), *tb = rf_gguf_find_tensor(b, name);
        same = ta && tb && ta->type == tb->type && ta->nbytes == tb->nbytes &&
               memcmp(ta->data, tb->data, ta->nbytes) == 0;
    }
    rf_gguf_close(a);
    rf_gguf_close(b);
    return same;
}

static void test_keep_mixed_and_force(void) {
    TMP_PATH(in, "mixed.gguf");
    TMP_PATH(out, "mixed-out.gguf");
    write_mixed(in);
    rf_quantize_opts o;
    rf_quantize_opts_init(&o);
    rf_quantize_report rep;
    rf_error err = {0};
    /* --keep-mixed Q8_0: F32 and F16 (wider) become Q8_0; Q4_0 and Q6_K stay as they are */
    o.type = RF_TYPE_Q8_0;
    o.keep_mixed = true;
    CHECK(rf_quantize_file(in, out, &o, &rep, &err) == RF_OK);
    CHECK(type_of(out, "a.weight") == RF_TYPE_Q8_0);
    CHECK(type_of(out, "b.weight") == RF_TYPE_Q8_0);
    CHECK(same_tensor_bytes(in, out, "c.weight"));
    CHECK(same_tensor_bytes(in, out, "d.weight"));
    CHECK(same_tensor_bytes(in, out, "e.weight")); /* 1-D */
    CHECK(same_tensor_bytes(in, out, "f.bias"));   /* not a weight */
    CHECK(rep.n_quantized == 2 && rep.n_kept == 4 && rep.n_fallback == 0);
    CHECK(rep.bytes_out < rep.bytes_in);
    rf_gguf *g = NULL;
    CHECK(rf_gguf_open(out, &g, &err) == RF_OK);
    if (g) {
        CHECK(rf_gguf_alignment(g) == 64);
        uint32_t ft = 0;
        CHECK(rf_gguf_get_u32(g, "general.file_type", true, &ft, &err) == RF_OK && ft == 7);
        rf_gguf_close(g);
    }
    /* without --keep-mixed the dominant type (the most elements among the matrices: a tie of
     * 1024 each, the first, F32, wins) is wider than Q4_0: allowed, everything becomes Q4_0 */
    o.keep_mixed = false;
    o.type = RF_TYPE_Q4_0;
    CHECK(rf_quantize_file(in, out, &o, &rep, &err) == RF_OK);
    CHECK(type_of(out, "d.weight") == RF_TYPE_Q4_0 && type_of(out, "b.weight") == RF_TYPE_Q4_0);
    CHECK(same_tensor_bytes(in, out, "c.weight")); /* already Q4_0: copied */
    CHECK(rep.n_quantized == 3);
    /* an all-Q4_0 file to F16 or F32 needs --force, then dequantizes: Q4_0 -> F32 is exact */
    TMP_PATH(out2, "mixed-f32.gguf");
    o.type = RF_TYPE_F16;
    CHECK(rf_quantize_file(out, out2, &o, &rep, &err) == RF_ERR_ARG);
    CHECK(strstr(err.msg, "Q4_0") != NULL && strstr(err.msg, "F16") != NULL);
    CHECK(access(out2, F_OK) != 0);
    o.type = RF_TYPE_F32;
    o.force = true;
    CHECK(rf_quantize_file(out, out2, &o, &rep, &err) == RF_OK);
    rf_gguf *a = NULL, *b = NULL;
    if (!rf_gguf_open(out, &a, &err) && !rf_gguf_open(out2, &b, &err)) {
        const rf_gguf_tensor *ta = rf_gguf_find_tensor(a, "c.weight");
        const rf_gguf_tensor *tb = rf_gguf_find_tensor(b, "c.weight");
        CHECK(tb && tb->type == RF_TYPE_F32);
        if (ta && tb && tb->type == RF_TYPE_F32) {
            float y[1024];
            rf_ref_dequantize_row(RF_TYPE_Q4_0, ta->data, y, 1024);
            CHECK(memcmp(y, tb->data, sizeof y) == 0);
        }
    }
    rf_gguf_close(a);
    rf_gguf_close(b);
    remove(in);
    remove(out);
    remove(out2);
    CHECK(dir_entries() == 0);
}

/* Fallback of the K-quants on a row of 96, and to F16 where 32 does not divide the row. */
static void test_fallback_odd_rows(void) {
    TMP_PATH(in, "odd.gguf");
    TMP_PATH(out, "odd-out.gguf");
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err = {0};
    float x[96 * 3];
    uint64_t seed = 3;
    for (int i = 0; i < 96 * 3; i++) x[i] = rng_sym(&seed);
    const uint64_t ne96[2] = {96, 3}, ne48[2] = {48, 6};
    rf_gguf_writer_add_tensor(w, "r96.weight", 2, ne96, RF_TYPE_F32, x, sizeof x, &err);
    rf_gguf_writer_add_tensor(w, "r48.weight", 2, ne48, RF_TYPE_F32, x, sizeof x, &err);
    CHECK(rf_gguf_writer_to_file(w, in, &err) == RF_OK);
    rf_gguf_writer_free(w);
    static const struct {
        rf_type type, r96, r48;
    } cases[] = {{RF_TYPE_Q4_K, RF_TYPE_Q5_0, RF_TYPE_F16},
                 {RF_TYPE_Q5_K, RF_TYPE_Q5_1, RF_TYPE_F16},
                 {RF_TYPE_Q6_K, RF_TYPE_Q8_0, RF_TYPE_F16},
                 {RF_TYPE_Q4_0, RF_TYPE_Q4_0, RF_TYPE_F16}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        rf_quantize_opts o;
        rf_quantize_opts_init(&o);
        o.type = cases[k].type;
        rf_quantize_report rep;
        CHECK(rf_quantize_file(in, out, &o, &rep, &err) == RF_OK);
        CHECK(type_of(out, "r96.weight") == cases[k].r96);
        CHECK(type_of(out, "r48.weight") == cases[k].r48);
        const int want_fb = 1 + (cases[k].r96 != cases[k].type);
        CHECK_MSG(rep.n_fallback == want_fb, "%s: %d fallbacks",
                  rf_type_get((uint32_t)cases[k].type)->name, rep.n_fallback);
        CHECK(strstr(rep.fallback, "r48.weight (F16)") != NULL);
    }
    remove(in);
    remove(out);
}

/* The report's list stays within its buffer and ends in "..." when cut. */
static void test_fallback_list_cut(void) {
    TMP_PATH(in, "many.gguf");
    TMP_PATH(out, "many-out.gguf");
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err = {0};
    const float y[192] = {0};
    const uint64_t ne[2] = {96, 2};
    for (int i = 0; i < 80; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.a_rather_long_tensor_name.weight", i);
        rf_gguf_writer_add_tensor(w, name, 2, ne, RF_TYPE_F32, y, sizeof y, &err);
    }
    CHECK(rf_gguf_writer_to_file(w, in, &err) == RF_OK);
    rf_gguf_writer_free(w);
    rf_quantize_opts o;
    rf_quantize_opts_init(&o);
    o.type = RF_TYPE_Q6_K;
    rf_quantize_report rep;
    CHECK(rf_quantize_file(in, out, &o, &rep, &err) == RF_OK);
    CHECK(rep.n_fallback == 80);
    const size_t len = strlen(rep.fallback);
    CHECK(len < sizeof rep.fallback && len > 3 && strcmp(rep.fallback + len - 3, "...") == 0);
    CHECK(strncmp(rep.fallback, "blk.0.a_rather_long_tensor_name.weight (Q8_0), blk.1.", 52) == 0);
    remove(in);
    remove(out);
}

/* ------------------------------------------------------------------------------------------ */
/* 3. Bad input through the binary                                                             */
/* ------------------------------------------------------------------------------------------ */

static const char *g_bin;
static char g_err[4096];

static int run(const char *args) {
    char full[4096];
    snprintf(full, sizeof full, "quantize %s", args);
    return run_bin(g_bin, full, g_err, sizeof g_err);
}

/* `roofline quantize 'in' 'out' opts` must exit 2 with needle in its message. */
static void expect_bad(const char *in, const char *out, const char *opts, const char *needle) {
    char args[2048];
    snprintf(args, sizeof args, "'%s' '%s' %s", in, out, opts);
    int rc = run(args);
    CHECK_MSG(rc == 2, "quantize %s: exit %d, want 2 (%s)", args, rc, g_err);
    CHECK_MSG(strstr(g_err, needle) != NULL, "quantize %s: message '%s' lacks '%s'", args, g_err,
              needle);
}

static void test_cli(void) {
    g_bin = getenv("ROOFLINE_BIN");
    if (!g_bin || access(g_bin, X_OK) != 0) {
        printf("  (ROOFLINE_BIN not set: CLI cases skipped)\n");
        return;
    }
    tiny_spec s = spec256();
    s.wtype = RF_TYPE_Q4_0;
    char in[512], out[512], args[2048];
    snprintf(in, sizeof in, "%s/q4.gguf", g_dir);
    snprintf(out, sizeof out, "%s/out.gguf", g_dir);
    CHECK(write_tiny(&s, in));
    CHECK(run("--help") == 0);
    expect_bad(in, out, "--type Q2_K", "unsupported type 'Q2_K'");
    expect_bad(in, out, "--type IQ4_NL", "unsupported type 'IQ4_NL'");
    expect_bad(in, out, "--type Q8_0 --embeddings Q3", "--embeddings");
    expect_bad(in, out, "", "--type");
    expect_bad(in, out, "--type Q8_0 --bogus", "--bogus");
    /* already smaller than the target */
    expect_bad(in, out, "--type Q8_0", "--force");
    CHECK(strstr(g_err, "Q4_0") != NULL);
    CHECK(access(out, F_OK) != 0);
    /* an existing output stays as it was when a run fails */
    FILE *f = fopen(out, "w");
    fputs("keep me", f);
    fclose(f);
    expect_bad(in, out, "--type Q8_0", "smaller than the target");
    char back[16] = {0};
    f = fopen(out, "r");
    CHECK(f && fread(back, 1, sizeof back - 1, f) == 7 && strcmp(back, "keep me") == 0);
    if (f) fclose(f);
    remove(out);
    /* an output directory that does not exist, or is not writable (a plain file as its dir) */
    TMP_PATH(no_dir, "no/such/dir/out.gguf");
    expect_bad(in, no_dir, "--type Q4_0", "no/such/dir/out.gguf");
    char in_as_dir[600];
    snprintf(in_as_dir, sizeof in_as_dir, "%s/out.gguf", in);
    expect_bad(in, in_as_dir, "--type Q4_0", "cannot create");
    /* a failure after the whole file is written (OUT is a directory: the rename fails) leaves
     * no temporary file */
    TMP_PATH(out_dir, "a-directory");
    CHECK(mkdir(out_dir, 0755) == 0);
    expect_bad(in, out_dir, "--type Q4_0", "cannot rename into place");
    CHECK(rmdir(out_dir) == 0);
    /* inputs that fail: missing, not GGUF, truncated */
    TMP_PATH(missing, "missing.gguf");
    expect_bad(missing, out, "--type Q4_0", "missing.gguf");
    char bad[512];
    snprintf(bad, sizeof bad, "%s/bad.gguf", g_dir);
    f = fopen(bad, "w");
    fputs("this is not a gguf file at all", f);
    fclose(f);
    expect_bad(bad, out, "--type Q4_0", "bad.gguf");
    struct stat sb;
    CHECK(stat(in, &sb) == 0);
    CHECK(truncate(bad, 0) == 0);
    {
        FILE *src = fopen(in, "rb"), *dst = fopen(bad, "wb");
        char buf[4096];
        size_t left = (size_t)sb.st_size - 100, n;
        while (src && dst && left &&
               (n = fread(buf, 1, left < sizeof buf ? left : sizeof buf, src)))
            left -= fwrite(buf, 1, n, dst);
        if (src) fclose(src);
        if (dst) fclose(dst);
    }
    expect_bad(bad, out, "--type Q4_0", "bad.gguf");
    CHECK(access(out, F_OK) != 0);
    remove(bad);
    /* nothing but the input is left in the directory */
    CHECK_MSG(dir_entries() == 1, "%d entries left in %s", dir_entries(), g_dir);
    /* a good run: exit 0, then --force from Q4_0 up to Q8_0 */
    snprintf(args, sizeof args, "'%s' '%s' --type Q4_K --embeddings Q8_0 --force", in, out);
    CHECK(run(args) == 0);
    CHECK(type_of(out, "token_embd.weight") == RF_TYPE_Q8_0);
    CHECK(type_of(out, "blk.0.attn_q.weight") == RF_TYPE_Q4_K);
    CHECK(type_of(out, "blk.0.ffn_down.weight") == RF_TYPE_Q5_0);
    remove(out);
    remove(in);
}

int main(void) {
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trips();
    test_reference_rounding();
    test_model_types();
    test_embeddings();
    test_keep_mixed_and_force();
    test_fallback_odd_rows();
    test_fallback_list_cut();
    test_cli();
    rmdir(g_dir);
    printf("test_quantize: %d checks, %d failed\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
