/* st_write.h: synthetic safetensors files for the tests: a header built entry by entry (offsets
 * laid out back to back, as writers do) or given verbatim, then the data section as a hole
 * (ftruncate: the reader never looks at tensor data, so a multi-GB checkpoint costs no disk).
 * The builder owns its buffer until stb_free; nothing is global.
 */
#ifndef RF_TEST_ST_WRITE_H
#define RF_TEST_ST_WRITE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"

typedef struct stb {
    rf_buf json;
    uint64_t off; /* bytes of data laid out so far */
    int n;        /* entries written */
} stb;

static inline void stb_init(stb *b) {
    rf_buf_init(&b->json, 0);
    rf_buf_append_str(&b->json, "{");
    b->off = 0;
    b->n = 0;
}

static inline void stb_free(stb *b) {
    rf_buf_free(&b->json);
}

/* Bytes of one element (the whole-byte dtypes the tests use). */
static inline uint64_t stb_elem(const char *dtype) {
    if (!strcmp(dtype, "F64") || !strcmp(dtype, "I64") || !strcmp(dtype, "U64")) return 8;
    if (!strcmp(dtype, "F32") || !strcmp(dtype, "I32") || !strcmp(dtype, "U32")) return 4;
    if (!strcmp(dtype, "F16") || !strcmp(dtype, "BF16") || !strcmp(dtype, "I16")) return 2;
    return 1;
}

/* Adds NAME: dtype, shape, the next nbytes(dtype x shape) of data. Returns the tensor's bytes. */
static inline uint64_t stb_add(stb *b, const char *name, const char *dtype, const uint64_t *shape,
                               int nd) {
    uint64_t n = stb_elem(dtype);
    rf_buf_printf(&b->json, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", b->n ? "," : "", name, dtype);
    for (int d = 0; d < nd; d++) {
        rf_buf_printf(&b->json, "%s%llu", d ? "," : "", (unsigned long long)shape[d]);
        n *= shape[d];
    }
    rf_buf_printf(&b->json, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)b->off,
                  (unsigned long long)(b->off + n));
    b->off += n;
    b->n++;
    return n;
}

static inline uint64_t stb_add2(stb *b, const char *name, const char *dtype, uint64_t d0,
                                uint64_t d1) {
    uint64_t s[2] = {d0, d1};
    return stb_add(b, name, dtype, s, 2);
}

/* Adds "__metadata__": {raw} (raw: the object's inside, e.g. "\"format\":\"pt\""). */
static inline void stb_meta(stb *b, const char *raw) {
    rf_buf_printf(&b->json, "%s\"__metadata__\":{%s}", b->n ? "," : "", raw);
    b->n++;
}

/* Closes the object and pads with spaces to a multiple of 8 (as the reference writer does). */
static inline const char *stb_finish(stb *b, size_t *len) {
    rf_buf_append_str(&b->json, "}");
    while (b->json.len % 8) rf_buf_append_str(&b->json, " ");
    rf_buf_terminate(&b->json);
    *len = b->json.len;
    return (const char *)b->json.data;
}

#define ST_LEN_PLUS_4 (UINT64_MAX - 1) /* claimed: the header's length + 4 (into the data) */

/* Writes the 8-byte length (claimed, or the header's real length when claimed is UINT64_MAX, or
 * that + 4 for ST_LEN_PLUS_4), the header, and extends the file to 8 + len + data bytes. */
static inline bool st_write_raw(const char *path, const char *json, size_t len, uint64_t claimed,
                                uint64_t data) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    uint64_t n = claimed == UINT64_MAX ? len : claimed == ST_LEN_PLUS_4 ? len + 4 : claimed;
    uint8_t pre[8];
    for (int i = 0; i < 8; i++) pre[i] = (uint8_t)(n >> (8 * i));
    bool ok = fwrite(pre, 1, 8, f) == 8 && fwrite(json, 1, len, f) == len;
    ok = fflush(f) == 0 && ok;
    ok = ftruncate(fileno(f), (off_t)(8 + len + data)) == 0 && ok;
    return fclose(f) == 0 && ok;
}

/* The builder's header with its own data size. */
static inline bool stb_write(stb *b, const char *path) {
    size_t len;
    const char *json = stb_finish(b, &len);
    return st_write_raw(path, json, len, UINT64_MAX, b->off);
}

static inline bool write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Seed 003's Gemma QAT checkpoint as model.safetensors + config.json in dir (made if needed);
 * returns the tensor bytes written (0 on a write failure). Shapes chosen to reproduce the seed's
 * byte figures (not the real checkpoint's): 35 layers of 7 pack-quantized projections (int4, group
 * 32: 0.5625 B a weight) in a 1536-wide body = 1.0557 GB; a [262144, 8960] per-layer table (35 x
 * 256 per row) = 4.698 GB; a [262144, 3072] vocabulary table = 1.611 GB; audio 0.6141 GB and vision
 * 0.3373 GB in BF16; 141 BF16 norms of 1536. */
static inline uint64_t st_write_seed003(const char *dir) {
    char p[512], n[160];
    mkdir(dir, 0700);
    stb b;
    stb_init(&b);
    stb_meta(&b, "\"format\":\"pt\"");
    uint64_t total = 0;
    total += stb_add2(&b, "model.language_model.embed_tokens.weight", "BF16", 262144, 3072);
    total +=
        stb_add2(&b, "model.language_model.embed_tokens_per_layer.weight", "BF16", 262144, 8960);
    static const struct {
        const char *name;
        uint64_t in, out;
    } lin[] = {{"self_attn.q_proj", 1536, 1024}, {"self_attn.k_proj", 1536, 256},
               {"self_attn.v_proj", 1536, 256},  {"self_attn.o_proj", 1024, 1536},
               {"mlp.gate_proj", 1536, 10784},   {"mlp.up_proj", 1536, 10784},
               {"mlp.down_proj", 10784, 1536}};
    static const char *const norms[] = {"input_layernorm", "post_attention_layernorm",
                                        "pre_feedforward_layernorm", "post_feedforward_layernorm"};
    for (int il = 0; il < 35; il++) {
        for (size_t k = 0; k < 7; k++) {
            snprintf(n, sizeof n, "model.language_model.layers.%d.%s.weight_packed", il,
                     lin[k].name);
            total += stb_add2(&b, n, "I32", lin[k].out, lin[k].in / 8);
            snprintf(n, sizeof n, "model.language_model.layers.%d.%s.weight_scale", il,
                     lin[k].name);
            total += stb_add2(&b, n, "BF16", lin[k].out, lin[k].in / 32);
            snprintf(n, sizeof n, "model.language_model.layers.%d.%s.weight_shape", il,
                     lin[k].name);
            uint64_t two[1] = {2};
            total += stb_add(&b, n, "I64", two, 1);
        }
        for (size_t k = 0; k < 4; k++) {
            snprintf(n, sizeof n, "model.language_model.layers.%d.%s.weight", il, norms[k]);
            uint64_t h[1] = {1536};
            total += stb_add(&b, n, "BF16", h, 1);
        }
    }
    uint64_t h[1] = {1536}, two_k[1] = {2000};
    total += stb_add(&b, "model.language_model.norm.weight", "BF16", h, 1);
    total += stb_add2(&b, "model.audio_tower.conformer.0.ffw.weight", "BF16", 1000, 307048);
    total += stb_add(&b, "model.audio_tower.conformer.0.norm.weight", "BF16", two_k, 1);
    total += stb_add2(&b, "model.vision_tower.timm_model.blocks.0.attn.qkv.weight", "BF16", 1000,
                      168648);
    total += stb_add(&b, "model.vision_tower.timm_model.blocks.0.norm1.weight", "BF16", two_k, 1);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    bool ok = stb_write(&b, p);
    stb_free(&b);
    /* a Gemma 3n-like text config: 4 sliding layers then a global one, the last 15 sharing */
    char cfg[8192];
    size_t k = (size_t)snprintf(
        cfg, sizeof cfg,
        "{\"architectures\":[\"Gemma3nForConditionalGeneration\"],\"model_type\":\"gemma3n\","
        "\"text_config\":{\"model_type\":\"gemma3n_text\",\"num_hidden_layers\":35,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":1,\"head_dim\":256,"
        "\"hidden_size\":1536,\"sliding_window\":512,\"max_position_embeddings\":32768,"
        "\"num_kv_shared_layers\":15,\"layer_types\":[");
    for (int il = 0; il < 35; il++)
        k += (size_t)snprintf(cfg + k, sizeof cfg - k, "%s\"%s\"", il ? "," : "",
                              il % 5 == 4 ? "full_attention" : "sliding_attention");
    snprintf(cfg + k, sizeof cfg - k,
             "]},\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":"
             "\"pack-quantized\",\"config_groups\":{\"group_0\":{\"weights\":{\"num_bits\":4,"
             "\"group_size\":32,\"strategy\":\"group\",\"symmetric\":true}}}}}");
    snprintf(p, sizeof p, "%s/config.json", dir);
    ok = write_text(p, cfg) && ok;
    return ok ? total : 0;
}

#endif
