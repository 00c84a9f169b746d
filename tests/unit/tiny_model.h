/* tiny_model.h: builds a tiny random-weight GGUF of one of roofline's architectures with
 * roofline's writer, for tests that must not depend on the real models: layer-by-layer checks
 * against a naive reference, KV ring buffer edge cases, batching, and malformed-model errors (a
 * tensor dropped, a shape changed, another architecture). Header-only test helper.
 *
 * Architectures (spec.arch): "gemma3" (default: q/k norms, post norms, sliding-window layers with
 * pattern 3, GeGLU) or the Llama-style "qwen2" / "llama" (attention and FFN norms only, SwiGLU,
 * no sliding window), each with its hyperparameters under its own key prefix; any other name
 * writes the gemma3 layout under that prefix (an unsupported architecture). Grouped-query
 * attention through n_head / n_head_kv, partial RoPE through n_rot, q/k/v (and, for llama,
 * attn_output) biases through biases, an untied head through untied, an extra u32 key through
 * u32_key.
 *
 * The vocabulary: <pad> <eos> <bos> <unk> (control), <start_of_turn> <end_of_turn> (control),
 * the 256 byte tokens <0x00>..<0xFF>, then single letters a-z and "▁" words, padded with
 * normal tokens "tokN" up to n_vocab.
 *
 * Hostile variants (fields after seed, zero by default): a tensor dropped, reshaped or folded to
 * 2-D, an odd value_length, extra keys or tensors with arbitrary names, a float hyperparameter
 * overridden (NaN, inf, ...), NaN/Inf poured into a tensor's values, and an untied output head.
 */
#ifndef RF_TEST_TINY_MODEL_H
#define RF_TEST_TINY_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/gguf_write.h"
#include "kernels/quant.h"

typedef struct tiny_spec {
    int n_vocab, n_embd, n_layer, n_ff, n_head, n_head_kv, head_dim, window, n_ctx_train;
    rf_type wtype;       /* type of the matrices (token_embd too) */
    const char *arch;    /* general.architecture, default "gemma3" */
    const char *drop;    /* a tensor name to leave out, or NULL */
    const char *reshape; /* a tensor name to give a wrong shape, or NULL */
    uint64_t seed;
    const char *fold;       /* a 1-D tensor to write as 2-D [n/2, 2] (same values), or NULL */
    int head_dim_v;         /* attention.value_length when not 0 (else head_dim) */
    const char *odd_key;    /* an extra string key with this name and odd_value, or NULL */
    const char *odd_value;  /* NULL: "x" */
    const char *odd_tensor; /* an extra 1-D F32 tensor of 8 values with this name, or NULL */
    const char *f32_key;    /* a float key ("gemma3." included) written as f32_value, or NULL */
    float f32_value;
    const char *poison;  /* a tensor whose values become poison_value before encoding, or NULL */
    int64_t poison_at;   /* the value's index (row-major); -1: every value */
    float poison_value;  /* NAN or INFINITY (F32 and F16 keep them) */
    int untied;          /* 1: an output.weight of its own (else the head is token_embd) */
    int n_rot;           /* rope.dimension_count when not 0 (else head_dim) */
    int biases;          /* 1: attn_q/k/v.bias (llama: attn_output.bias too), Llama-style archs */
    float rope_base;     /* rope.freq_base when not 0 (else 1e6) */
    const char *u32_key; /* an extra u32 key (prefix included) written as u32_value, or NULL */
    uint32_t u32_value;
    int n_embd_rows; /* token_embd.weight's rows when not 0 (else n_vocab): a vocabulary that
                      * does not match the embedding */
} tiny_spec;

/* 1 for the Llama-style layouts (qwen2, llama): no q/k or post norms, SwiGLU, no window. */
static inline int tiny_llama_style(const tiny_spec *s) {
    return s->arch && (strcmp(s->arch, "qwen2") == 0 || strcmp(s->arch, "llama") == 0);
}

static inline tiny_spec tiny_default(void) {
    tiny_spec s = {.n_vocab = 320,
                   .n_embd = 64,
                   .n_layer = 3,
                   .n_ff = 96,
                   .n_head = 2,
                   .n_head_kv = 1,
                   .head_dim = 32,
                   .window = 4,
                   .n_ctx_train = 128,
                   .wtype = RF_TYPE_F32,
                   .arch = "gemma3",
                   .seed = 1};
    return s;
}

/* Adds a tensor of n_dims dims with random values scaled by scale (+ offset), encoded as type. */
static inline int tiny_add(rf_gguf_writer *w, const tiny_spec *s, const char *name, rf_type type,
                           int n_dims, uint64_t ne0, uint64_t ne1, float scale, float offset,
                           uint64_t *st) {
    if (s->drop && strcmp(s->drop, name) == 0) return 0;
    uint64_t ne[2] = {ne0, ne1};
    if (s->reshape && strcmp(s->reshape, name) == 0) ne[0] = ne0 * 2; /* wrong shape */
    if (s->fold && strcmp(s->fold, name) == 0 && n_dims == 1) {       /* same values, 2-D */
        n_dims = 2;
        ne[0] = ne0 / 2;
        ne[1] = 2;
    }
    size_t n = (size_t)(ne[0] * (n_dims > 1 ? ne[1] : 1));
    float *x = malloc(n * sizeof *x);
    size_t bytes = rf_type_row_bytes(type, ne[0]) * (n_dims > 1 ? ne[1] : 1);
    void *q = malloc(bytes);
    for (size_t i = 0; i < n; i++) x[i] = offset + scale * rng_sym(st);
    if (s->poison && strcmp(s->poison, name) == 0) {
        for (size_t i = 0; i < n; i++)
            if (s->poison_at < 0 || (size_t)s->poison_at == i) x[i] = s->poison_value;
    }
    size_t row = rf_type_row_bytes(type, ne[0]);
    for (uint64_t r = 0; r < (n_dims > 1 ? ne[1] : 1); r++)
        rf_ref_quantize_row(type, x + r * ne[0], (uint8_t *)q + r * row, (int64_t)ne[0]);
    rf_error err = {0};
    int rc = rf_gguf_writer_add_tensor(w, name, (uint32_t)n_dims, ne, type, q, bytes, &err);
    if (rc) fprintf(stderr, "tiny_add %s: %s\n", name, err.msg);
    free(x);
    free(q);
    return rc;
}

/* Builds the model into a malloc'd buffer (*buf, *size); 0 on success. */
static inline int tiny_build(const tiny_spec *s, void **buf, size_t *size) {
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err = {0};
    uint64_t st = s->seed;
    char key[128];
    const char *arch = s->arch ? s->arch : "gemma3";
    rf_gguf_writer_add_str(w, "general.architecture", arch, &err);
#define KEY(k) (snprintf(key, sizeof key, "%s." k, arch), key)
    rf_gguf_writer_add_u32(w, KEY("context_length"), (uint32_t)s->n_ctx_train, &err);
    rf_gguf_writer_add_u32(w, KEY("embedding_length"), (uint32_t)s->n_embd, &err);
    rf_gguf_writer_add_u32(w, KEY("block_count"), (uint32_t)s->n_layer, &err);
    rf_gguf_writer_add_u32(w, KEY("feed_forward_length"), (uint32_t)s->n_ff, &err);
    rf_gguf_writer_add_u32(w, KEY("attention.head_count"), (uint32_t)s->n_head, &err);
    rf_gguf_writer_add_u32(w, KEY("attention.head_count_kv"), (uint32_t)s->n_head_kv, &err);
    rf_gguf_writer_add_u32(w, KEY("attention.key_length"), (uint32_t)s->head_dim, &err);
    rf_gguf_writer_add_u32(w, KEY("attention.value_length"),
                           (uint32_t)(s->head_dim_v ? s->head_dim_v : s->head_dim), &err);
    if (s->n_rot) rf_gguf_writer_add_u32(w, KEY("rope.dimension_count"), (uint32_t)s->n_rot, &err);
    const int llama_style = tiny_llama_style(s);
    int f32_done = 0;
#define F32(k, v)                                                                                  \
    do {                                                                                           \
        const char *k_ = KEY(k);                                                                   \
        int over_ = s->f32_key && strcmp(s->f32_key, k_) == 0;                                     \
        f32_done |= over_;                                                                         \
        rf_gguf_writer_add_f32(w, k_, over_ ? s->f32_value : (v), &err);                           \
    } while (0)
    F32("attention.layer_norm_rms_epsilon", 1e-6f);
    F32("rope.freq_base", s->rope_base ? s->rope_base : 1e6f);
#undef F32
    if (s->f32_key && !f32_done) rf_gguf_writer_add_f32(w, s->f32_key, s->f32_value, &err);
    if (s->odd_key) rf_gguf_writer_add_str(w, s->odd_key, s->odd_value ? s->odd_value : "x", &err);
    if (s->u32_key) rf_gguf_writer_add_u32(w, s->u32_key, s->u32_value, &err);
    if (!llama_style) {
        rf_gguf_writer_add_u32(w, KEY("attention.sliding_window"), (uint32_t)s->window, &err);
        rf_gguf_writer_add_u32(w, KEY("attention.sliding_window_pattern"), 3, &err);
    }
#undef KEY
    /* vocabulary */
    int nv = s->n_vocab;
    char **tok = calloc((size_t)nv, sizeof *tok);
    float *scores = calloc((size_t)nv, sizeof *scores);
    int32_t *types = calloc((size_t)nv, sizeof *types);
    const char *specials[] = {"<pad>", "<eos>",           "<bos>",
                              "<unk>", "<start_of_turn>", "<end_of_turn>"};
    int id = 0;
    for (; id < 6; id++) {
        tok[id] = strdup(specials[id]);
        types[id] = 3;
        scores[id] = -1000;
    }
    for (int b = 0; b < 256 && id < nv; b++, id++) {
        tok[id] = malloc(16);
        snprintf(tok[id], 16, "<0x%02X>", (unsigned)b);
        types[id] = 6;
    }
    for (int c = 0; c < 26 && id < nv; c++, id++) {
        tok[id] = malloc(2);
        tok[id][0] = (char)('a' + c);
        tok[id][1] = 0;
        types[id] = 1;
        scores[id] = -(float)c;
    }
    for (int k = 0; id < nv; k++, id++) {
        tok[id] = malloc(32);
        snprintf(tok[id], 32, "\xe2\x96\x81tok%d", k);
        types[id] = 1;
        scores[id] = -100.0f - (float)k;
    }
    rf_gguf_writer_add_str(w, "tokenizer.ggml.model", "llama", &err);
    rf_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok, NULL,
                               (uint64_t)nv, &err);
    rf_gguf_writer_add_arr(w, "tokenizer.ggml.scores", RF_GGUF_F32, scores, (uint64_t)nv, &err);
    rf_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", RF_GGUF_I32, types, (uint64_t)nv, &err);
    rf_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 2, &err);
    rf_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 1, &err);
    rf_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", 3, &err);
    rf_gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", 0, &err);
    rf_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", true, &err);
    rf_gguf_writer_add_bool(w, "tokenizer.ggml.add_space_prefix", false, &err);
    for (int i = 0; i < nv; i++) free(tok[i]);
    free(tok);
    free(scores);
    free(types);

    /* tensors */
    const int E = s->n_embd, F = s->n_ff, QD = s->n_head * s->head_dim,
              KD = s->n_head_kv * s->head_dim;
    const float ws = 1.0f / sqrtf((float)E);
    int rc = 0;
    rc |= tiny_add(w, s, "token_embd.weight", s->wtype, 2, (uint64_t)E,
                   (uint64_t)(s->n_embd_rows ? s->n_embd_rows : nv), 0.5f, 0, &st);
    rc |= tiny_add(w, s, "output_norm.weight", RF_TYPE_F32, 1, (uint64_t)E, 1, 0.2f, 1.0f, &st);
    if (s->untied)
        rc |= tiny_add(w, s, "output.weight", s->wtype, 2, (uint64_t)E, (uint64_t)nv, 0.5f, 0, &st);
    for (int il = 0; il < s->n_layer; il++) {
        char n[64];
#define T(name, type, nd, a, b, sc, off)                                                           \
    do {                                                                                           \
        snprintf(n, sizeof n, "blk.%d." name ".weight", il);                                       \
        rc |= tiny_add(w, s, n, type, nd, (uint64_t)(a), (uint64_t)(b), sc, off, &st);             \
    } while (0)
#define B(name, len)                                                                               \
    do {                                                                                           \
        snprintf(n, sizeof n, "blk.%d." name ".bias", il);                                         \
        rc |= tiny_add(w, s, n, RF_TYPE_F32, 1, (uint64_t)(len), 1, 0.3f, 0, &st);                 \
    } while (0)
        T("attn_norm", RF_TYPE_F32, 1, E, 1, 0.2f, 1.0f);
        T("attn_q", s->wtype, 2, E, QD, ws, 0);
        T("attn_k", s->wtype, 2, E, KD, ws, 0);
        T("attn_v", s->wtype, 2, E, KD, ws, 0);
        if (llama_style && s->biases) {
            B("attn_q", QD);
            B("attn_k", KD);
            B("attn_v", KD);
            if (strcmp(s->arch, "llama") == 0) B("attn_output", E);
        }
        if (!llama_style) {
            T("attn_q_norm", RF_TYPE_F32, 1, s->head_dim, 1, 0.2f, 1.0f);
            T("attn_k_norm", RF_TYPE_F32, 1, s->head_dim, 1, 0.2f, 1.0f);
        }
        T("attn_output", s->wtype, 2, QD, E, 1.0f / sqrtf((float)QD), 0);
        if (!llama_style) T("post_attention_norm", RF_TYPE_F32, 1, E, 1, 0.2f, 1.0f);
        T("ffn_norm", RF_TYPE_F32, 1, E, 1, 0.2f, 1.0f);
        T("ffn_gate", s->wtype, 2, E, F, ws, 0);
        T("ffn_up", s->wtype, 2, E, F, ws, 0);
        T("ffn_down", s->wtype, 2, F, E, 1.0f / sqrtf((float)F), 0);
        if (!llama_style) T("post_ffw_norm", RF_TYPE_F32, 1, E, 1, 0.2f, 1.0f);
#undef T
#undef B
    }
    if (s->odd_tensor) rc |= tiny_add(w, s, s->odd_tensor, RF_TYPE_F32, 1, 8, 1, 1.0f, 0, &st);
    if (!rc) rc = rf_gguf_writer_to_memory(w, buf, size, &err);
    rf_gguf_writer_free(w);
    return rc;
}

/* Writes the model to a fresh temp file; returns its path (static buffer) or NULL. */
static inline const char *tiny_write_file(const tiny_spec *s, const char *tag) {
    static char path[256];
    void *buf = NULL;
    size_t size = 0;
    if (tiny_build(s, &buf, &size)) return NULL;
    snprintf(path, sizeof path, "/tmp/roofline-tiny-%s-XXXXXX", tag);
    int fd = mkstemp(path);
    if (fd < 0) {
        free(buf);
        return NULL;
    }
    FILE *f = fdopen(fd, "wb");
    size_t wr = fwrite(buf, 1, size, f);
    fclose(f);
    free(buf);
    return wr == size ? path : NULL;
}

#endif
