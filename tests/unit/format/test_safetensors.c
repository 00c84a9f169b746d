/* test_safetensors.c: the safetensors header reader and the safetensors facts loaders.
 *
 * 1. A valid file read back field by field (dtypes, shapes, offsets, __metadata__, lookup by
 *    name, a zero-size tensor, a scalar, F4 values, space padding), from disk and from memory.
 * 2. Hostile headers, each written by the test (8-byte length + JSON, the data a hole made by
 *    ftruncate) and read both through rf_st_open and from an exact-size heap copy (so ASan sees
 *    any overread): each gives RF_ERR_FORMAT (RF_ERR_IO for the file itself) and a message that
 *    names the file and the tensor and says what is wrong (the specific text is asserted).
 * 3. Sharded checkpoints: a good index of two shards (the sum over shards, files listed); an
 *    index naming a missing shard, a shard holding a tensor the index does not list, an index
 *    tensor its shard lacks, a tensor mapped to the other shard, a shard name leaving the
 *    directory, no weight_map; a directory holding the index.
 * 4. compressed-tensors pack-quantized (w4a16): NAME.weight_packed / _scale / _shape become one
 *    logical int4 tensor with the real bytes of all parts; a missing scale, a scale of the wrong
 *    shape and a packed tensor that is not I32 are errors naming the tensor.
 * 5. Seed 003's Gemma QAT checkpoint mirrored by a synthetic header (shapes chosen to give its
 *    byte figures): the role breakdown in GB and percent, the 8.316 GB = 7.74 GiB total, the
 *    dtype split (only the body int4), the roofline at 300 GB/s (whole 36, body 284, body + tied
 *    vocabulary head 112 tok/s) and the seed's GiB-as-GB slip (44.2 and 98.0, not 47 and 105).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/facts.h"
#include "check.h"
#include "format/safetensors.h"
#include "st_write.h"

static char g_dir[64];

static void path_in(char *out, size_t cap, const char *sub, const char *name) {
    if (sub)
        snprintf(out, cap, "%s/%s/%s", g_dir, sub, name);
    else
        snprintf(out, cap, "%s/%s", g_dir, name);
}

static void mk_sub(const char *sub) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, sub);
    mkdir(p, 0700);
}

/* Reads path whole into an exact-size heap buffer (NULL when larger than cap). */
static uint8_t *slurp(const char *path, size_t cap, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (sz < 0 || (size_t)sz > cap) {
        fclose(f);
        return NULL;
    }
    uint8_t *b = xmalloc((size_t)sz);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

/* ---- 1. a valid file ----------------------------------------------------------------------- */

static void test_valid(void) {
    char p[256];
    path_in(p, sizeof p, NULL, "good.safetensors");
    const char *json = "{\"__metadata__\":{\"format\":\"pt\",\"who\":\"test\"},"
                       "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                       "\"empty\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[28,28]},"
                       "\"s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[28,29]},"
                       "\"f4\":{\"dtype\":\"F4\",\"shape\":[6],\"data_offsets\":[29,32]}}   ";
    CHECK(st_write_raw(p, json, strlen(json), UINT64_MAX, 32));
    for (int mem = 0; mem < 2; mem++) {
        rf_st *f = NULL;
        rf_error err = {0};
        rf_status st;
        uint8_t *buf = NULL;
        if (mem) {
            size_t n = 0;
            buf = slurp(p, 1 << 20, &n);
            st = rf_st_open_memory(buf, n, "mem.safetensors", &f, &err);
        } else {
            st = rf_st_open(p, &f, &err);
        }
        CHECK_MSG(st == RF_OK, "valid file (%s): %s", mem ? "memory" : "disk", err.msg);
        if (st) {
            free(buf);
            continue;
        }
        CHECK(rf_st_n_tensors(f) == 5);
        CHECK(rf_st_header_size(f) == strlen(json));
        CHECK(rf_st_data_size(f) == 32);
        const rf_st_tensor *t0 = rf_st_tensor_at(f, 0); /* the header's order */
        CHECK(t0 && strcmp(t0->name, "b") == 0 && t0->dtype == RF_ST_BF16 && t0->n_dims == 2 &&
              t0->shape[0] == 2 && t0->shape[1] == 3 && t0->begin == 16 && t0->end == 28);
        CHECK(t0 && rf_st_tensor_bytes(t0) == 12);
        const rf_st_tensor *a = rf_st_find(f, "a");
        CHECK(a && a->dtype == RF_ST_F32 && a->nelements == 4 && rf_st_tensor_bytes(a) == 16);
        const rf_st_tensor *e = rf_st_find(f, "empty");
        CHECK(e && e->nelements == 0 && rf_st_tensor_bytes(e) == 0);
        const rf_st_tensor *s = rf_st_find(f, "s");
        CHECK(s && s->n_dims == 0 && s->nelements == 1);
        const rf_st_tensor *f4 = rf_st_find(f, "f4");
        CHECK(f4 && rf_st_tensor_bytes(f4) == 3);
        CHECK(rf_st_find(f, "missing") == NULL);
        CHECK(rf_st_n_metadata(f) == 2);
        CHECK(rf_st_metadata_get(f, "format") && !strcmp(rf_st_metadata_get(f, "format"), "pt"));
        CHECK(rf_st_metadata_get(f, "nope") == NULL);
        rf_st_close(f);
        free(buf);
    }
    /* a file of no tensors at all: "{}" padded */
    path_in(p, sizeof p, NULL, "empty.safetensors");
    CHECK(st_write_raw(p, "{}      ", 8, UINT64_MAX, 0));
    rf_st *f = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_st_open(p, &f, &err) == RF_OK && rf_st_n_tensors(f) == 0, "{}: %s", err.msg);
    rf_st_close(f);
}

/* ---- 2. hostile headers -------------------------------------------------------------------- */

typedef struct hostile {
    const char *what;
    const char *json; /* NULL: raw bytes below */
    uint64_t claimed; /* UINT64_MAX: the JSON's length */
    uint64_t data;    /* data bytes after the header */
    rf_status code;
    const char *n1, *n2; /* both must appear in the message */
} hostile;

#define T(name, dtype, shape, b, e)                                                                \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_hostile(void) {
    static const hostile cases[] = {
        {"length 0", "{}", 0, 0, RF_ERR_FORMAT, "header length 0", "at least"},
        {"length 1", "{}", 1, 0, RF_ERR_FORMAT, "header length 1", "too short"},
        {"length huge", "{}", 1ull << 40, 0, RF_ERR_FORMAT, "header length 1099511627776",
         "over the 100000000-byte limit"},
        {"length past the file", "{}", 4096, 10, RF_ERR_FORMAT, "header length 4096",
         "runs past the end of the file (20 bytes"},
        {"length cuts the JSON", "{" T("w", "F32", "[4]", 0, 16) "}", 20, 16 + 32, RF_ERR_FORMAT,
         "not valid JSON", "header length"},
        {"length takes in data", "{" T("w", "F32", "[1]", 0, 4) "}", ST_LEN_PLUS_4, 4,
         RF_ERR_FORMAT, "not valid JSON", "runs into tensor data"},
        {"not JSON", "{this is not json}", UINT64_MAX, 0, RF_ERR_FORMAT, "is not valid JSON",
         "byte"},
        {"not an object", "[1, 2, 3]", UINT64_MAX, 0, RF_ERR_FORMAT, "does not start with '{'",
         "0x5b"},
        {"duplicate name", "{" T("w", "U8", "[1]", 0, 1) "," T("w", "U8", "[1]", 1, 2) "}",
         UINT64_MAX, 2, RF_ERR_FORMAT, "not valid JSON", "duplicate"},
        {"offsets overlap", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 4, 12) "}",
         UINT64_MAX, 12, RF_ERR_FORMAT, "tensors 'a' (data_offsets [0, 8]) and 'b' ([4, 12])",
         "overlap"},
        {"offsets past the data", "{" T("w", "F32", "[4]", 0, 16) "}", UINT64_MAX, 8, RF_ERR_FORMAT,
         "tensor 'w': data_offsets [0, 16] run past the data section (8 bytes", NULL},
        {"offsets != dtype x shape", "{" T("w", "F32", "[4]", 0, 8) "}", UINT64_MAX, 8,
         RF_ERR_FORMAT, "tensor 'w': data_offsets [0, 8] hold 8 bytes, but F32 [4] is 16 bytes",
         NULL},
        {"end before begin", "{" T("w", "U8", "[0]", 8, 4) "}", UINT64_MAX, 8, RF_ERR_FORMAT,
         "tensor 'w': data_offsets [8, 4] end before they begin", NULL},
        {"unknown dtype", "{" T("w", "F17", "[4]", 0, 16) "}", UINT64_MAX, 16, RF_ERR_FORMAT,
         "tensor 'w': unknown dtype \"F17\"", "known: BOOL"},
        {"negative shape", "{" T("w", "F32", "[4, -3]", 0, 16) "}", UINT64_MAX, 16, RF_ERR_FORMAT,
         "tensor 'w': shape[1] = -3 is negative", NULL},
        {"overflowing shape", "{" T("w", "U8", "[4294967296, 4294967296, 2]", 0, 16) "}",
         UINT64_MAX, 16, RF_ERR_FORMAT,
         "tensor 'w': shape [4294967296, 4294967296, 2] has more than 2^64 elements", NULL},
        {"overflowing bytes", "{" T("w", "F64", "[2305843009213693952, 2]", 0, 16) "}", UINT64_MAX,
         16, RF_ERR_FORMAT, "tensor 'w': F64 [2305843009213693952, 2]", "more than 2^64 bits"},
        {"shape not integers", "{" T("w", "F32", "[4.0]", 0, 16) "}", UINT64_MAX, 16, RF_ERR_FORMAT,
         "tensor 'w': shape[0] is a number with a fraction", NULL},
        {"17 dimensions", "{" T("w", "U8", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", 0, 1) "}",
         UINT64_MAX, 1, RF_ERR_FORMAT, "tensor 'w': shape has 17 dimensions (at most 16)", NULL},
        {"half a byte", "{" T("w", "F4", "[3]", 0, 2) "}", UINT64_MAX, 2, RF_ERR_FORMAT,
         "tensor 'w': 3 F4 values ([3]) are not a whole number of bytes", NULL},
        {"a gap", "{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 8, 12) "}", UINT64_MAX, 12,
         RF_ERR_FORMAT, "data bytes [4, 8) belong to no tensor (a gap between 'a' and 'b')", NULL},
        {"data before the first", "{" T("a", "U8", "[4]", 4, 8) "}", UINT64_MAX, 8, RF_ERR_FORMAT,
         "data bytes [0, 4) belong to no tensor: the first, 'a'", NULL},
        {"file extended", "{" T("a", "U8", "[4]", 0, 4) "}", UINT64_MAX, 100, RF_ERR_FORMAT,
         "the tensors end at byte 4 of the 100-byte data section (the last is 'a')",
         "96 bytes at the end"},
        {"no tensors, data", "{}", UINT64_MAX, 4, RF_ERR_FORMAT,
         "the header lists no tensor, but 4 bytes follow it", NULL},
        {"metadata not strings", "{\"__metadata__\":{\"n\":3}}", UINT64_MAX, 0, RF_ERR_FORMAT,
         "__metadata__ \"n\" is an integer", "must be strings"},
        {"entry not an object", "{\"w\":[1,2]}", UINT64_MAX, 0, RF_ERR_FORMAT,
         "tensor 'w': its entry is an array, not an object", NULL},
        {"no data_offsets", "{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", UINT64_MAX, 1,
         RF_ERR_FORMAT, "tensor 'w': no \"data_offsets\"", NULL},
        {"offsets of three", "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}",
         UINT64_MAX, 1, RF_ERR_FORMAT, "tensor 'w': \"data_offsets\" is an array of another length",
         "not [begin, end]"},
        {"dtype not a string", "{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,1]}}",
         UINT64_MAX, 1, RF_ERR_FORMAT, "tensor 'w': \"dtype\" is an integer, not a string", NULL},
        {"escapes in a name", "{" T("t\\u001b[2J", "F17", "[1]", 0, 1) "}", UINT64_MAX, 1,
         RF_ERR_FORMAT, "tensor 't\\x1b[2J': unknown dtype", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const hostile *h = &cases[i];
        char p[256];
        snprintf(p, sizeof p, "%s/hostile-%02zu.safetensors", g_dir, i);
        CHECK(st_write_raw(p, h->json, strlen(h->json), h->claimed, h->data));
        for (int mem = 0; mem < 2; mem++) {
            rf_st *f = NULL;
            rf_error err = {0};
            rf_status st;
            size_t n = 0;
            uint8_t *buf = NULL;
            if (mem) {
                buf = slurp(p, 1 << 20, &n);
                st = rf_st_open_memory(buf, n, p, &f, &err);
            } else {
                st = rf_st_open(p, &f, &err);
            }
            bool ok = st == h->code && f == NULL && strstr(err.msg, p) == err.msg &&
                      strstr(err.msg, h->n1) && (!h->n2 || strstr(err.msg, h->n2));
            CHECK_MSG(ok, "%s (%s): status %d, message: %s", h->what, mem ? "memory" : "file", st,
                      err.msg);
            if (ok && !mem) fprintf(stderr, "  %-26s -> %s\n", h->what, err.msg);
            rf_st_close(f);
            free(buf);
        }
    }
    /* the file itself: too short, missing, a directory */
    char p[256];
    path_in(p, sizeof p, NULL, "short.safetensors");
    CHECK(write_text(p, "abc"));
    rf_st *f = NULL;
    rf_error err = {0};
    CHECK(rf_st_open(p, &f, &err) == RF_ERR_FORMAT &&
          strstr(err.msg, "3 bytes: too short for the 8-byte header length"));
    CHECK(rf_st_open_memory("abc", 3, "m", &f, &err) == RF_ERR_FORMAT && strstr(err.msg, "m: 3"));
    path_in(p, sizeof p, NULL, "missing.safetensors");
    CHECK(rf_st_open(p, &f, &err) == RF_ERR_IO && strstr(err.msg, "cannot open"));
    CHECK(rf_st_open(g_dir, &f, &err) == RF_ERR_IO && strstr(err.msg, "not a regular file"));
    /* every prefix of a small valid file fails cleanly (no crash, no overread) */
    const char *json = "{" T("a", "F32", "[2]", 0, 8) "," T("b", "U8", "[3]", 8, 11) "}";
    size_t jl = strlen(json), total = 8 + jl + 11;
    uint8_t *whole = xmalloc(total);
    for (int k = 0; k < 8; k++) whole[k] = (uint8_t)((uint64_t)jl >> (8 * k));
    memcpy(whole + 8, json, jl);
    memset(whole + 8 + jl, 0, 11);
    int accepted = 0;
    for (size_t n = 0; n <= total; n++) {
        uint8_t *cut = xmalloc(n ? n : 1);
        memcpy(cut, whole, n);
        rf_st *g = NULL;
        rf_status st = rf_st_open_memory(cut, n, "prefix", &g, &err);
        accepted += st == RF_OK;
        CHECK(st == RF_OK ? n == total : g == NULL);
        rf_st_close(g);
        free(cut);
    }
    CHECK(accepted == 1);
    free(whole);
}

/* ---- 3. sharded checkpoints --------------------------------------------------------------- */

static void write_shards(const char *sub, bool stray, bool drop) {
    char p[256];
    mk_sub(sub);
    stb b;
    stb_init(&b);
    stb_add2(&b, "model.embed_tokens.weight", "BF16", 1000, 64);
    stb_add2(&b, "model.layers.0.self_attn.q_proj.weight", "BF16", 64, 64);
    if (stray) stb_add2(&b, "model.layers.0.stray.weight", "BF16", 4, 4);
    path_in(p, sizeof p, sub, "model-00001-of-00002.safetensors");
    CHECK(stb_write(&b, p));
    stb_free(&b);
    stb_init(&b);
    uint64_t norm[1] = {64};
    stb_add(&b, "model.norm.weight", "BF16", norm, 1);
    if (!drop) stb_add2(&b, "lm_head.weight", "BF16", 1000, 64);
    path_in(p, sizeof p, sub, "model-00002-of-00002.safetensors");
    CHECK(stb_write(&b, p));
    stb_free(&b);
}

static const char *k_index =
    "{\"metadata\":{\"total_size\":%s},\"weight_map\":{"
    "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
    "\"model.layers.0.self_attn.q_proj.weight\":\"model-00001-of-00002.safetensors\","
    "\"model.norm.weight\":\"model-00002-of-00002.safetensors\","
    "\"lm_head.weight\":\"%s\"}}";

static void write_index(const char *sub, const char *total, const char *head_shard) {
    char p[256], text[2048];
    snprintf(text, sizeof text, k_index, total, head_shard);
    path_in(p, sizeof p, sub, "model.safetensors.index.json");
    CHECK(write_text(p, text));
}

static void expect_index_error(const char *what, const char *sub, rf_status code, const char *n1,
                               const char *n2) {
    char p[256];
    path_in(p, sizeof p, sub, "model.safetensors.index.json");
    rf_model_facts *f = NULL;
    rf_error err = {0};
    rf_status st = rf_model_facts_load(p, &f, &err);
    bool ok = st == code && !f && strstr(err.msg, n1) && (!n2 || strstr(err.msg, n2));
    CHECK_MSG(ok, "%s: status %d, message: %s", what, st, err.msg);
    if (ok) fprintf(stderr, "  %-26s -> %s\n", what, err.msg);
    rf_model_facts_free(f);
}

static void test_sharded(void) {
    /* good: 2 shards, tensor bytes summed over both */
    uint64_t want = 1000 * 64 * 2 + 64 * 64 * 2 + 64 * 2 + 1000 * 64 * 2;
    char total[32];
    snprintf(total, sizeof total, "%llu", (unsigned long long)want);
    write_shards("sh", false, false);
    write_index("sh", total, "model-00002-of-00002.safetensors");
    char p[256];
    path_in(p, sizeof p, "sh", "model.safetensors.index.json");
    rf_model_facts *f = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_model_facts_load(p, &f, &err) == RF_OK, "good index: %s", err.msg);
    if (f) {
        CHECK(f->n_files == 2 && f->n_tensors == 4 && f->stored_tensors == 4);
        CHECK(rf_model_facts_weights(f) == want);
        CHECK(f->fp.role_bytes[RF_ROLE_HEAD] == 1000 * 64 * 2);
        CHECK(f->fp.role_bytes[RF_ROLE_TOKEN_EMBD] == 1000 * 64 * 2);
        CHECK(f->fp.role_bytes[RF_ROLE_NORMS] == 128);
        CHECK(f->note[0] == 0); /* total_size agrees */
        rf_token_read r = rf_model_facts_token_read(f, 0, RF_KV_F16);
        CHECK(!r.tied && r.role[RF_ROLE_TOKEN_EMBD] == 128); /* one row of 64 BF16 */
        CHECK(r.weights == want - 1000 * 64 * 2 + 128);
        CHECK(f->kv.n_layer == 0 && strstr(f->kv_note, "no config.json"));
    }
    rf_model_facts_free(f);
    /* the directory holding the index loads the same */
    char d[256];
    snprintf(d, sizeof d, "%s/sh", g_dir);
    f = NULL;
    CHECK_MSG(rf_model_facts_load(d, &f, &err) == RF_OK && f && f->n_files == 2 &&
                  rf_model_facts_weights(f) == want,
              "directory: %s", err.msg);
    rf_model_facts_free(f);
    /* total_size that differs: a note, not an error */
    write_index("sh", "12345", "model-00002-of-00002.safetensors");
    f = NULL;
    CHECK(rf_model_facts_load(p, &f, &err) == RF_OK && f &&
          strstr(f->note, "total_size is 12345 B"));
    rf_model_facts_free(f);

    write_index("sh", total, "model-00003-of-00002.safetensors");
    expect_index_error("index names a missing shard", "sh", RF_ERR_IO,
                       "names shard 'model-00003-of-00002.safetensors' (for tensor "
                       "'lm_head.weight'), which cannot be opened",
                       "No such file");
    write_index("sh", total, "model-00001-of-00002.safetensors");
    expect_index_error("tensor mapped elsewhere", "sh", RF_ERR_FORMAT,
                       "model-00002-of-00002.safetensors: holds tensor 'lm_head.weight', which the "
                       "index",
                       "maps to shard 'model-00001-of-00002.safetensors'");
    write_index("sh", total, "../sh/model-00002-of-00002.safetensors");
    expect_index_error("shard outside the dir", "sh", RF_ERR_FORMAT,
                       "names shard \"../sh/model-00002-of-00002.safetensors\"",
                       "a shard must be a file name beside the index");
    write_shards("stray", true, false);
    write_index("stray", total, "model-00002-of-00002.safetensors");
    expect_index_error("shard tensor not in index", "stray", RF_ERR_FORMAT,
                       "model-00001-of-00002.safetensors: holds tensor "
                       "'model.layers.0.stray.weight', which the index",
                       "does not list");
    write_shards("drop", false, true);
    write_index("drop", total, "model-00002-of-00002.safetensors");
    expect_index_error("index tensor not in shard", "drop", RF_ERR_FORMAT,
                       "maps tensor 'lm_head.weight' to shard 'model-00002-of-00002.safetensors', "
                       "which does not hold it",
                       NULL);
    mk_sub("nomap");
    path_in(p, sizeof p, "nomap", "model.safetensors.index.json");
    CHECK(write_text(p, "{\"metadata\":{}}"));
    expect_index_error("no weight_map", "nomap", RF_ERR_FORMAT, "no \"weight_map\" object", NULL);
    CHECK(write_text(p, "{\"weight_map\":{\"a\":7}}"));
    expect_index_error("shard not a string", "nomap", RF_ERR_FORMAT,
                       "weight_map[\"a\"] is not a string", NULL);
    CHECK(write_text(p, "{\"weight_map\": {"));
    expect_index_error("index not JSON", "nomap", RF_ERR_FORMAT, "not valid JSON", "line 1");
    /* a shard whose own header is hostile: its message names the shard */
    mk_sub("badshard");
    write_shards("badshard", false, false);
    path_in(p, sizeof p, "badshard", "model-00002-of-00002.safetensors");
    CHECK(st_write_raw(p, "{}", 2, 5000, 0));
    write_index("badshard", total, "model-00002-of-00002.safetensors");
    expect_index_error("hostile shard", "badshard", RF_ERR_FORMAT,
                       "model-00002-of-00002.safetensors: header length 5000 runs past", NULL);
}

/* ---- 4. pack-quantized --------------------------------------------------------------------- */

static const char *k_w4a16_config =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\","
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
    "\"hidden_size\":512,\"max_position_embeddings\":2048,\"tie_word_embeddings\":false,"
    "\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":"
    "\"pack-quantized\",\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":"
    "{\"num_bits\":4,\"group_size\":%d,\"strategy\":\"group\",\"symmetric\":true,\"type\":"
    "\"int\"}}},\"ignore\":[\"lm_head\"]}}";

static void write_w4a16(const char *sub, const char *packed_dtype, bool scale, uint64_t scale_cols,
                        int group) {
    char p[256], cfg[2048];
    mk_sub(sub);
    stb b;
    stb_init(&b);
    stb_add2(&b, "model.embed_tokens.weight", "BF16", 1000, 512);
    for (int il = 0; il < 2; il++) {
        char n[128];
        snprintf(n, sizeof n, "model.layers.%d.mlp.down_proj.weight_shape", il);
        uint64_t two[1] = {2};
        stb_add(&b, n, "I64", two, 1); /* a part listed before its packed tensor */
        snprintf(n, sizeof n, "model.layers.%d.mlp.down_proj.weight_packed", il);
        stb_add2(&b, n, il == 0 ? packed_dtype : "I32", 512, 256); /* 2048 int4 values a row */
        if (scale || il == 1) {
            snprintf(n, sizeof n, "model.layers.%d.mlp.down_proj.weight_scale", il);
            stb_add2(&b, n, "BF16", 512, il == 0 ? scale_cols : 2048 / 32);
        }
        uint64_t h[1] = {512};
        snprintf(n, sizeof n, "model.layers.%d.input_layernorm.weight", il);
        stb_add(&b, n, "BF16", h, 1);
    }
    stb_add2(&b, "lm_head.weight", "BF16", 1000, 512);
    path_in(p, sizeof p, sub, "model.safetensors");
    CHECK(stb_write(&b, p));
    stb_free(&b);
    snprintf(cfg, sizeof cfg, k_w4a16_config, group);
    path_in(p, sizeof p, sub, "config.json");
    CHECK(write_text(p, cfg));
}

static void test_pack_quantized(void) {
    write_w4a16("w4", "I32", true, 2048 / 32, 32);
    char p[256];
    path_in(p, sizeof p, "w4", "model.safetensors");
    rf_model_facts *f = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_model_facts_load(p, &f, &err) == RF_OK, "w4a16: %s", err.msg);
    if (f) {
        uint64_t part = 512 * 256 * 4 + 512 * 64 * 2 + 2 * 8; /* packed + scales + shape */
        CHECK(f->stored_tensors == 10 && f->n_tensors == 6);
        const rf_facts_tensor *t = NULL;
        for (size_t i = 0; i < f->n_tensors; i++)
            if (!strcmp(f->tensors[i].name, "model.layers.0.mlp.down_proj.weight"))
                t = &f->tensors[i];
        CHECK(t != NULL);
        if (t) {
            CHECK_MSG(!strcmp(t->dtype, "int4 g32"), "dtype %s", t->dtype);
            CHECK(t->n_dims == 2 && t->shape[0] == 512 && t->shape[1] == 2048);
            CHECK(t->nbytes == part && t->parts == 3 && t->role == RF_ROLE_BODY);
        }
        CHECK(f->fp.role_bytes[RF_ROLE_BODY] == 2 * part);
        bool int4 = false;
        for (int i = 0; i < f->fp.n_dtype; i++)
            if (!strcmp(f->fp.dtype[i].label, "int4 g32"))
                int4 = f->fp.dtype[i].bytes == 2 * part && f->fp.dtype[i].tensors == 2;
        CHECK(int4);
        CHECK(strstr(f->quant, "pack-quantized: int4, group 32, symmetric") != NULL);
        CHECK(f->config_path && strstr(f->config_path, "config.json"));
        CHECK(f->kv.n_layer == 2 && f->kv.layer[0].n_kv_head == 2 &&
              f->kv.layer[0].head_dim_k == 128); /* 512 / 4 heads */
        CHECK(f->ctx_train == 2048 && !strcmp(f->arch, "llama"));
        rf_token_read r = rf_model_facts_token_read(f, 0, RF_KV_F16);
        CHECK(!r.tied && r.role[RF_ROLE_HEAD] == 1000 * 512 * 2 &&
              r.role[RF_ROLE_TOKEN_EMBD] == 1024);
    }
    rf_model_facts_free(f);

    /* group 128: the scales are [512, 16] */
    write_w4a16("w4g128", "I32", true, 2048 / 128, 128);
    path_in(p, sizeof p, "w4g128", "model.safetensors");
    f = NULL;
    CHECK(rf_model_facts_load(p, &f, &err) == RF_ERR_MODEL &&
          strstr(err.msg, "'model.layers.1.mlp.down_proj.weight_scale' has shape [512, 64]") &&
          strstr(err.msg, "group 128 scales as [512, 16]"));
    rf_model_facts_free(f);

    static const struct {
        const char *what, *packed;
        bool scale;
        uint64_t cols;
        const char *n1, *n2;
    } bad[] = {
        {"no scale", "I32", false, 0,
         "'model.layers.0.mlp.down_proj.weight_packed' has no "
         "'model.layers.0.mlp.down_proj.weight_scale'",
         "need their scales"},
        {"scale shape", "I32", true, 63,
         "'model.layers.0.mlp.down_proj.weight_scale' has shape "
         "[512, 63]",
         "512 x 2048 int4 values, which group 32 scales as [512, 64]"},
        {"packed not I32", "F16", true, 64,
         "'model.layers.0.mlp.down_proj.weight_packed' is F16 "
         "[512, 256]",
         "pack-quantized weights are 2-D I32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char sub[32];
        snprintf(sub, sizeof sub, "w4bad%zu", i);
        write_w4a16(sub, bad[i].packed, bad[i].scale, bad[i].cols, 32);
        path_in(p, sizeof p, sub, "model.safetensors");
        f = NULL;
        rf_status st = rf_model_facts_load(p, &f, &err);
        bool ok = st == RF_ERR_MODEL && !f && strstr(err.msg, p) && strstr(err.msg, bad[i].n1) &&
                  strstr(err.msg, bad[i].n2);
        CHECK_MSG(ok, "%s: %d %s", bad[i].what, st, err.msg);
        if (ok) fprintf(stderr, "  %-26s -> %s\n", bad[i].what, err.msg);
        rf_model_facts_free(f);
    }
    /* without a pack-quantized config the parts are reported as stored, with a note */
    path_in(p, sizeof p, "w4", "config.json");
    CHECK(write_text(p, "{\"num_hidden_layers\":2,\"num_key_value_heads\":2,\"head_dim\":128}"));
    path_in(p, sizeof p, "w4", "model.safetensors");
    f = NULL;
    CHECK(rf_model_facts_load(p, &f, &err) == RF_OK && f && f->n_tensors == 10 &&
          strstr(f->note, "2 tensors named *.weight_packed"));
    rf_model_facts_free(f);
}

/* ---- 5. seed 003's QAT checkpoint ----------------------------------------------------------- */

static bool fmt_is(const char *fmt, double v, const char *want) {
    char got[64];
    snprintf(got, sizeof got, fmt, v);
    bool ok = strcmp(got, want) == 0;
    if (!ok) fprintf(stderr, "  formatted %s, want %s\n", got, want);
    return ok;
}

static void test_seed003(void) {
    char d[256];
    snprintf(d, sizeof d, "%s/seed003", g_dir);
    CHECK(st_write_seed003(d) == 8315809168ull);
    rf_model_facts *f = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_model_facts_load(d, &f, &err) == RF_OK, "seed 003: %s", err.msg);
    if (!f) return;
    const rf_footprint *fp = &f->fp;
    double all = (double)fp->total_bytes;
    CHECK(fp->total_bytes == 8315809168ull);
    CHECK(f->stored_tensors == 35 * 7 * 3 + 141 + 6 && f->n_tensors == 35 * 7 + 141 + 6);
    /* the seed's breakdown: GB (1e9 B) to 3 decimals and shares to 1 */
    static const struct {
        rf_role role;
        uint64_t bytes;
        const char *gb, *pct;
    } want[] = {
        {RF_ROLE_BODY, 1055742800ull, "1.056", "12.7"},
        {RF_ROLE_PER_LAYER_EMBD, 4697620480ull, "4.698", "56.5"},
        {RF_ROLE_TOKEN_EMBD, 1610612736ull, "1.611", "19.4"},
        {RF_ROLE_AUDIO, 614100000ull, "0.614", "7.4"},
        {RF_ROLE_VISION, 337300000ull, "0.337", "4.1"},
        {RF_ROLE_NORMS, 433152ull, "0.000", "0.0"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t got = fp->role_bytes[want[i].role];
        CHECK_MSG(got == want[i].bytes, "%s: %llu B", rf_role_name(want[i].role),
                  (unsigned long long)got);
        CHECK(fmt_is("%.3f", (double)got / 1e9, want[i].gb));
        CHECK(fmt_is("%.1f", 100.0 * (double)got / all, want[i].pct));
    }
    CHECK(fp->role_tensors[RF_ROLE_HEAD] == 0 && rf_footprint_tied(fp));
    CHECK(fmt_is("%.3f", all / 1e9, "8.316"));         /* GB */
    CHECK(fmt_is("%.2f", all / 1073741824.0, "7.74")); /* GiB */
    /* dtypes: the body is the only int4; everything else BF16 */
    uint64_t int4 = 0, bf16 = 0;
    for (int i = 0; i < fp->n_dtype; i++) {
        if (!strcmp(fp->dtype[i].label, "int4 g32")) int4 = fp->dtype[i].bytes;
        if (!strcmp(fp->dtype[i].label, "BF16")) bf16 = fp->dtype[i].bytes;
    }
    CHECK(fp->n_dtype == 2 && int4 == 1055742800ull && bf16 == fp->total_bytes - int4);
    /* the roofline at 300 GB/s */
    double bw = 300e9;
    rf_token_read r = rf_model_facts_token_read(f, 0, RF_KV_F16);
    CHECK(r.tied && r.role[RF_ROLE_HEAD] == 1610612736ull && r.role[RF_ROLE_TOKEN_EMBD] == 0);
    CHECK(r.role[RF_ROLE_PER_LAYER_EMBD] == 8960 * 2); /* one row */
    CHECK(r.role[RF_ROLE_VISION] == 0 && r.role[RF_ROLE_AUDIO] == 0 && r.kv == 0);
    CHECK(r.total == 1055742800ull + 1610612736ull + 433152ull + 17920ull);
    CHECK(fmt_is("%.3f", (double)r.total / 1e9, "2.667"));
    CHECK(fmt_is("%.0f", rf_ceiling_tok_s(bw, r.total), "112"));
    CHECK(fmt_is("%.0f", rf_ceiling_tok_s(bw, fp->total_bytes), "36"));
    CHECK(fmt_is("%.0f", rf_ceiling_tok_s(bw, fp->role_bytes[RF_ROLE_BODY]), "284"));
    /* seed 000's unit slip: GiB taken for GB */
    CHECK(fmt_is("%.1f", rf_ceiling_tok_s(bw, (uint64_t)(6.32 * 1073741824.0)), "44.2"));
    CHECK(fmt_is("%.1f", rf_ceiling_tok_s(bw, (uint64_t)(2.85 * 1073741824.0)), "98.0"));
    CHECK(fmt_is("%.0f", bw / (6.32 * 1e9), "47")); /* the slip itself: 47 with GB */
    CHECK(fabs(rf_ceiling_tok_s(bw, (uint64_t)(6.32 * 1073741824.0)) - 47.0) > 2.5);
    /* KV from the config: 35 layers, 7 global (every 5th), the last 15 sharing caches */
    int32_t global, sliding, shared;
    rf_kv_layer_counts(&f->kv, &global, &sliding, &shared);
    CHECK(f->kv.n_layer == 35 && global == 7 && sliding == 28 && shared == 15);
    CHECK(rf_model_facts_kv_per_token(f, RF_KV_F16) == 20 * 1024);
    CHECK(strstr(f->quant, "int4, group 32") != NULL);
    rf_model_facts_free(f);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/roofline-st-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_valid();
    test_hostile();
    test_sharded();
    test_pack_quantized();
    test_seed003();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    int rc = system(cmd);
    (void)rc;
    return check_summary("test_safetensors");
}
