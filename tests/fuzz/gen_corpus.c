/* gen_corpus.c: writes the fuzzer's seed corpus (tiny valid GGUF files from our own writer,
 * each well under 10 KB) into the directory given, e.g.
 *   build/tests/fuzz/gguf_gen_corpus tests/fuzz/corpus/gguf
 * The committed corpus was made this way; saved crashers sit next to it as crash-*.gguf. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf_write.h"
#include "kernels/types.h"

static int g_failed;

static void ok(rf_status st, const rf_error *err) {
    if (st) {
        fprintf(stderr, "gen_corpus: %s\n", err->msg);
        g_failed = 1;
    }
}

static void fill(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 131u + seed * 17u) >> 1);
}

static void save(rf_gguf_writer *w, const char *dir, const char *name) {
    char path[1024];
    rf_error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ok(rf_gguf_writer_to_file(w, path, &err), &err);
    rf_gguf_writer_free(w);
}

static void tensor(rf_gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                   uint32_t type) {
    uint64_t rows = 1;
    for (uint32_t d = 1; d < n_dims; d++) rows *= ne[d];
    size_t n = rf_type_row_bytes(type, ne[0]) * rows;
    uint8_t *p = malloc(n);
    fill(p, n, (uint32_t)n);
    rf_error err;
    ok(rf_gguf_writer_add_tensor(w, name, n_dims, ne, type, p, n, &err), &err);
    free(p);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    rf_error err;

    /* 1. The empty file: header only. */
    save(rf_gguf_writer_new(), dir, "empty-v3.gguf");

    /* 2. Every metadata type, no tensors, version 2. */
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_gguf_writer_set_version(w, 2);
    ok(rf_gguf_writer_add_str(w, "general.architecture", "gemma3", &err), &err);
    ok(rf_gguf_writer_add_u32(w, "u32", 7, &err), &err);
    ok(rf_gguf_writer_add_i32(w, "i32", -7, &err), &err);
    ok(rf_gguf_writer_add_u64(w, "u64", 1ull << 40, &err), &err);
    ok(rf_gguf_writer_add_f32(w, "f32", 1e-6f, &err), &err);
    ok(rf_gguf_writer_add_bool(w, "bool", 1, &err), &err);
    ok(rf_gguf_writer_add_str(w, "empty", "", &err), &err);
    static const struct {
        const char *key;
        rf_gguf_type t;
        uint8_t bytes;
    } scal[] = {{"u8", RF_GGUF_U8, 1},   {"i8", RF_GGUF_I8, 1},   {"u16", RF_GGUF_U16, 2},
                {"i16", RF_GGUF_I16, 2}, {"i64", RF_GGUF_I64, 8}, {"f64", RF_GGUF_F64, 8}};
    for (size_t i = 0; i < sizeof scal / sizeof scal[0]; i++) {
        rf_gguf_kv kv;
        memset(&kv, 0, sizeof kv);
        kv.key = (rf_str){scal[i].key, strlen(scal[i].key)};
        kv.type = scal[i].t;
        if (scal[i].t == RF_GGUF_F64)
            kv.v.f = 0.25;
        else
            kv.v.u = 3;
        ok(rf_gguf_writer_copy_kv(w, &kv, &err), &err);
    }
    uint8_t raw[64];
    fill(raw, sizeof raw, 1);
    static const rf_gguf_type arr_types[] = {RF_GGUF_U8,  RF_GGUF_I8,  RF_GGUF_U16, RF_GGUF_I16,
                                             RF_GGUF_U32, RF_GGUF_I32, RF_GGUF_F32, RF_GGUF_BOOL,
                                             RF_GGUF_U64, RF_GGUF_I64, RF_GGUF_F64};
    for (size_t i = 0; i < sizeof arr_types / sizeof arr_types[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "arr.%s", rf_gguf_type_name(arr_types[i]));
        if (arr_types[i] == RF_GGUF_BOOL) memset(raw, 1, 4);
        ok(rf_gguf_writer_add_arr(w, key, arr_types[i], raw, 4, &err), &err);
    }
    ok(rf_gguf_writer_add_arr(w, "arr.empty", RF_GGUF_U32, NULL, 0, &err), &err);
    static const char *const toks[] = {"<pad>", "<eos>", "<bos>", "", "\xe2\x96\x81the"};
    ok(rf_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 5, &err), &err);
    save(w, dir, "kv-all-types-v2.gguf");

    /* 3. F32 and Q8_0 tensors at the default alignment. */
    w = rf_gguf_writer_new();
    ok(rf_gguf_writer_add_str(w, "general.architecture", "test", &err), &err);
    tensor(w, "output_norm.weight", 1, (uint64_t[]){8}, RF_TYPE_F32);
    tensor(w, "token_embd.weight", 2, (uint64_t[]){32, 3}, RF_TYPE_Q8_0);
    save(w, dir, "tensors-f32-q8_0.gguf");

    /* 4. Alignment 64: Q4_K 4-d, F16 3-d. */
    w = rf_gguf_writer_new();
    ok(rf_gguf_writer_add_u32(w, "general.alignment", 64, &err), &err);
    tensor(w, "blk.0.ffn_down.weight", 4, (uint64_t[]){256, 1, 2, 1}, RF_TYPE_Q4_K);
    tensor(w, "blk.0.attn_k.weight", 3, (uint64_t[]){4, 2, 2}, RF_TYPE_F16);
    save(w, dir, "align64-q4_k-f16.gguf");

    /* 5. Alignment 1: no padding anywhere. */
    w = rf_gguf_writer_new();
    ok(rf_gguf_writer_add_u32(w, "general.alignment", 1, &err), &err);
    ok(rf_gguf_writer_add_str(w, "general.name", "a1", &err), &err);
    tensor(w, "a", 1, (uint64_t[]){3}, RF_TYPE_F32);
    tensor(w, "b", 2, (uint64_t[]){1, 5}, RF_TYPE_F16);
    tensor(w, "c", 1, (uint64_t[]){32}, RF_TYPE_Q4_0);
    save(w, dir, "align1.gguf");

    /* 6. A tiny gemma3-shaped model header (hyperparameters, tokenizer, two tensors). */
    w = rf_gguf_writer_new();
    ok(rf_gguf_writer_add_str(w, "general.architecture", "gemma3", &err), &err);
    ok(rf_gguf_writer_add_u32(w, "gemma3.block_count", 1, &err), &err);
    ok(rf_gguf_writer_add_u32(w, "gemma3.embedding_length", 32, &err), &err);
    ok(rf_gguf_writer_add_u32(w, "gemma3.attention.head_count", 1, &err), &err);
    ok(rf_gguf_writer_add_f32(w, "gemma3.attention.layer_norm_rms_epsilon", 1e-6f, &err), &err);
    ok(rf_gguf_writer_add_str(w, "tokenizer.ggml.model", "llama", &err), &err);
    ok(rf_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 5, &err), &err);
    float scores[5] = {0, 0, 0, -1, -2};
    ok(rf_gguf_writer_add_arr(w, "tokenizer.ggml.scores", RF_GGUF_F32, scores, 5, &err), &err);
    int32_t types[5] = {3, 3, 3, 1, 1};
    ok(rf_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", RF_GGUF_I32, types, 5, &err), &err);
    ok(rf_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 2, &err), &err);
    tensor(w, "token_embd.weight", 2, (uint64_t[]){32, 5}, RF_TYPE_Q8_0);
    tensor(w, "output_norm.weight", 1, (uint64_t[]){32}, RF_TYPE_F32);
    save(w, dir, "gemma3-tiny.gguf");

    return g_failed;
}
