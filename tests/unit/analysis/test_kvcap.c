/* test_kvcap.c: KV cache bytes and capacity (analysis/kvcap.h) and the geometry read from a
 * Hugging Face config.json (analysis/hf_config.h). Every expected number is worked by hand in
 * the comment beside it.
 *
 * 1. Bytes per value of each KV dtype; per token, per request and per decode step for a uniform
 *    model, a Gemma 3 pattern (sliding layers at min(L, window)), Gemma 3n shared layers (they
 *    read but store nothing), an all-sliding Mistral and MLA.
 * 2. Capacity as vLLM counts it: budget = floor(mem x util) - weights; tokens and concurrency
 *    (exact figures for the uniform and sliding cases, fp8 and q8_0), the longest single
 *    request, no room when the weights do not fit, and the argument checks.
 * 3. config.json: layer_types, sliding_window_pattern, use_sliding_window false (Qwen2) and
 *    true with max_window_layers, a window with no pattern (Mistral), model_type gemma2,
 *    num_kv_shared_layers, head_dim from hidden_size / heads, MLA, text_config nesting; bad
 *    values each named with their key.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/hf_config.h"
#include "analysis/kvcap.h"
#include "check.h"

#define GIB 1073741824.0

static void uniform(rf_kv_geom *g, int32_t n_layer, uint32_t kvh, uint32_t hd, uint32_t window) {
    memset(g, 0, sizeof *g);
    g->n_layer = n_layer;
    for (int32_t il = 0; il < n_layer; il++)
        g->layer[il] = (rf_kv_layer){kvh, hd, hd, window, true};
}

static void test_bytes(void) {
    CHECK(rf_kv_value_bytes(RF_KV_F16, 1024) == 2048);
    CHECK(rf_kv_value_bytes(RF_KV_BF16, 1024) == 2048);
    CHECK(rf_kv_value_bytes(RF_KV_F32, 1024) == 4096);
    CHECK(rf_kv_value_bytes(RF_KV_FP8, 1024) == 1024);
    CHECK(rf_kv_value_bytes(RF_KV_Q8_0, 1024) == 32 * 34);
    CHECK(rf_kv_value_bytes(RF_KV_Q4_0, 1024) == 32 * 18);
    CHECK(rf_kv_value_bytes(RF_KV_Q8_0, 33) == 2 * 34); /* a partial block rounds up */
    rf_kv_dtype t;
    CHECK(rf_kv_dtype_parse("fp8_e4m3", &t) && t == RF_KV_FP8);
    CHECK(rf_kv_dtype_parse("bf16", &t) && t == RF_KV_BF16);
    CHECK(!rf_kv_dtype_parse("f8", &t) && !rf_kv_dtype_parse("", &t));
    CHECK(!strcmp(rf_kv_dtype_name(RF_KV_Q4_0), "q4_0"));

    static rf_kv_geom g;
    /* Llama-like: 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B a token */
    uniform(&g, 32, 8, 128, 0);
    CHECK(rf_kv_layer_row(&g, 0, RF_KV_F16) == 4096);
    CHECK(rf_kv_stored_per_token(&g, RF_KV_F16) == 131072);
    CHECK(rf_kv_request_bytes(&g, 8192, RF_KV_F16) == 8192ull * 131072); /* 1 GiB */
    CHECK(rf_kv_read_bytes(&g, 100, RF_KV_F16) == 100ull * 131072);
    CHECK(rf_kv_request_bytes(&g, 0, RF_KV_F16) == 0);

    /* Gemma 3 270M: 18 layers, 1 KV head x (256 + 256) x 2 B = 1,024 B a layer, window 512,
     * layer il global when il % 6 == 5 (3 global, 15 sliding). At 4096:
     * 3 x 4096 x 1024 + 15 x 512 x 1024 = 12,582,912 + 7,864,320 = 20,447,232 B. */
    uniform(&g, 18, 1, 256, 512);
    for (int il = 5; il < 18; il += 6) g.layer[il].window = 0;
    CHECK(rf_kv_stored_per_token(&g, RF_KV_F16) == 18 * 1024);
    CHECK(rf_kv_request_bytes(&g, 4096, RF_KV_F16) == 20447232);
    CHECK(rf_kv_read_bytes(&g, 4096, RF_KV_F16) == 20447232);
    CHECK(rf_kv_request_bytes(&g, 300, RF_KV_F16) == 18ull * 300 * 1024); /* under the window */
    int32_t gl, sl, sh;
    rf_kv_layer_counts(&g, &gl, &sl, &sh);
    CHECK(gl == 3 && sl == 15 && sh == 0 && rf_kv_max_window(&g) == 512);

    /* Gemma 3n-like: 30 layers, 2 KV heads x (256 + 256) x 2 B = 2,048 B a layer, window 512,
     * every 5th layer global, the last 10 sharing earlier caches. Stored: 20 layers x 2,048 =
     * 40,960 B a token; a 4096-token request: 4 global x 4096 x 2048 + 16 sliding x 512 x 2048 =
     * 33,554,432 + 16,777,216 = 50,331,648 B; one step at 4096 reads all 30 layers:
     * 6 x 4096 x 2048 + 24 x 512 x 2048 = 75,497,472 B. */
    uniform(&g, 30, 2, 256, 512);
    for (int il = 4; il < 30; il += 5) g.layer[il].window = 0;
    for (int il = 20; il < 30; il++) g.layer[il].has_cache = false;
    CHECK(rf_kv_stored_per_token(&g, RF_KV_F16) == 40960);
    CHECK(rf_kv_request_bytes(&g, 4096, RF_KV_F16) == 50331648);
    CHECK(rf_kv_read_bytes(&g, 4096, RF_KV_F16) == 75497472);
    rf_kv_layer_counts(&g, &gl, &sl, &sh);
    CHECK(gl == 6 && sl == 24 && sh == 10);
}

static void test_capacity(void) {
    static rf_kv_geom g;
    rf_kv_capacity c;
    rf_error err = {0};
    /* Llama-like on 80 GiB at 0.9 with 16 GiB of weights: floor(72 GiB) - 16 GiB = 56 GiB =
     * 60,129,542,144 B; / 131,072 = 458,752 tokens; / 1 GiB per 8192-token request = 56.00x */
    uniform(&g, 32, 8, 128, 0);
    CHECK(rf_kv_capacity_compute(&g, 80 * GIB, 0.9, 16ull << 30, 8192, RF_KV_F16, &c, &err) ==
          RF_OK);
    CHECK(c.mem_bytes == 77309411328ull && c.budget == 60129542144ll);
    CHECK(c.tokens == 458752 && fabs(c.concurrency - 56.0) < 1e-9);
    CHECK(c.max_len_one_seq == 458752); /* uniform: one request can take every token */
    /* fp8 halves a token: 917,504 tokens, 112.00x */
    CHECK(rf_kv_capacity_compute(&g, 80 * GIB, 0.9, 16ull << 30, 8192, RF_KV_FP8, &c, &err) ==
          RF_OK);
    CHECK(c.tokens == 917504 && fabs(c.concurrency - 112.0) < 1e-9);
    /* q8_0: 2 x 32 blocks x 34 B = 2,176 B a layer, 69,632 B a token: 863,533 tokens */
    CHECK(rf_kv_capacity_compute(&g, 80 * GIB, 0.9, 16ull << 30, 8192, RF_KV_Q8_0, &c, &err) ==
          RF_OK);
    CHECK(c.per_token == 69632 && c.tokens == 863533);

    /* Gemma 3 270M on 24 GiB at 0.9 with its 246,587,904 B of weights:
     * floor(23,192,823,398.4) - 246,587,904 = 22,946,235,494 B; / 18,432 = 1,244,912 tokens;
     * / 20,447,232 = 1122.217x for 4096-token requests (more than tokens / 4096 = 303.9x: the
     * sliding layers keep only 512 positions) */
    uniform(&g, 18, 1, 256, 512);
    for (int il = 5; il < 18; il += 6) g.layer[il].window = 0;
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 0.9, 246587904, 4096, RF_KV_F16, &c, &err) == RF_OK);
    CHECK(c.mem_bytes == 23192823398ull && c.budget == 22946235494ll);
    CHECK(c.tokens == 1244912);
    char s[32];
    snprintf(s, sizeof s, "%.2f", c.concurrency);
    CHECK_MSG(!strcmp(s, "1122.22"), "%s", s);
    CHECK(c.concurrency > (double)c.tokens / 4096 * 3.5);

    /* Gemma 3n-like with seed 003's 8,315,809,168 B of weights on 24 GiB: budget
     * 23,192,823,398 - 8,315,809,168 = 14,877,014,230 B; / 40,960 = 363,208 tokens;
     * / 50,331,648 = 295.58x at 4096; at 256 (< window) / (20 x 256 x 2048) = 1418.78x */
    uniform(&g, 30, 2, 256, 512);
    for (int il = 4; il < 30; il += 5) g.layer[il].window = 0;
    for (int il = 20; il < 30; il++) g.layer[il].has_cache = false;
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 0.9, 8315809168ull, 4096, RF_KV_F16, &c, &err) ==
          RF_OK);
    CHECK(c.budget == 14877014230ll && c.tokens == 363208);
    snprintf(s, sizeof s, "%.2f", c.concurrency);
    CHECK_MSG(!strcmp(s, "295.58"), "%s", s);
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 0.9, 8315809168ull, 256, RF_KV_F16, &c, &err) ==
          RF_OK);
    snprintf(s, sizeof s, "%.2f", c.concurrency);
    CHECK_MSG(!strcmp(s, "1418.78"), "%s", s);
    /* under the window every layer keeps every position: concurrency x L = tokens */
    CHECK(fabs(c.concurrency * 256 - (double)c.tokens) < 1.0);

    /* Mistral-like, every layer sliding at 4096: a request never needs more than
     * 32 x 4096 x 4096 B = 512 MiB, so any length fits one request */
    uniform(&g, 32, 8, 128, 4096);
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 0.9, 14ull << 30, 32768, RF_KV_F16, &c, &err) ==
          RF_OK);
    CHECK(c.per_request == 536870912ull && c.max_len_one_seq == (uint64_t)RF_KV_MAX_CTX);

    /* weights that do not fit: no KV at all */
    uniform(&g, 32, 8, 128, 0);
    CHECK(rf_kv_capacity_compute(&g, 16 * GIB, 0.9, 16ull << 30, 4096, RF_KV_F16, &c, &err) ==
          RF_OK);
    CHECK(c.budget < 0 && c.tokens == 0 && c.concurrency == 0);

    /* arguments */
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 0, 0, 4096, RF_KV_F16, &c, &err) == RF_ERR_ARG &&
          strstr(err.msg, "utilisation 0 is not in (0, 1]"));
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 1.5, 0, 4096, RF_KV_F16, &c, &err) == RF_ERR_ARG);
    CHECK(rf_kv_capacity_compute(&g, NAN, 0.9, 0, 4096, RF_KV_F16, &c, &err) == RF_ERR_ARG &&
          strstr(err.msg, "memory size"));
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 0.9, 0, 0, RF_KV_F16, &c, &err) == RF_ERR_ARG &&
          strstr(err.msg, "request length 0"));
    rf_kv_geom none = {0};
    CHECK(rf_kv_capacity_compute(&none, 24 * GIB, 0.9, 0, 4096, RF_KV_F16, &c, &err) ==
              RF_ERR_ARG &&
          strstr(err.msg, "no KV cache geometry"));
    for (int il = 0; il < 32; il++) g.layer[il].has_cache = false;
    CHECK(rf_kv_capacity_compute(&g, 24 * GIB, 0.9, 0, 4096, RF_KV_F16, &c, &err) == RF_ERR_ARG &&
          strstr(err.msg, "no layer that stores"));
}

static rf_hf_config g_cfg; /* large: one instance, reused by the cases below (test only) */

static rf_status parse(const char *json, rf_error *err) {
    return rf_hf_config_parse(json, strlen(json), "config.json", &g_cfg, err);
}

static void test_config(void) {
    rf_error err = {0};
    const rf_kv_geom *g = &g_cfg.kv;
    int32_t gl, sl, sh;
    /* layer_types (Gemma 3n), nested in text_config, with shared layers */
    CHECK_MSG(parse("{\"model_type\":\"gemma3n\",\"text_config\":{\"num_hidden_layers\":5,"
                    "\"num_attention_heads\":8,\"num_key_value_heads\":2,\"head_dim\":256,"
                    "\"sliding_window\":512,\"num_kv_shared_layers\":2,"
                    "\"layer_types\":[\"sliding_attention\",\"sliding_attention\","
                    "\"full_attention\",\"sliding_attention\",\"full_attention\"]}}",
                    &err) == RF_OK,
              "%s", err.msg);
    CHECK(g_cfg.kv_known && g->n_layer == 5 && g->layer[0].window == 512 &&
          g->layer[2].window == 0 && !g->layer[3].has_cache && g->layer[2].has_cache);
    CHECK(rf_kv_stored_per_token(g, RF_KV_F16) == 3 * 2 * 512 * 2);
    CHECK(!strcmp(g_cfg.model_type, "gemma3n"));
    /* Gemma 3 (older configs): sliding_window_pattern 6 */
    CHECK(parse("{\"num_hidden_layers\":12,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
                "\"head_dim\":256,\"sliding_window\":1024,\"sliding_window_pattern\":6}",
                &err) == RF_OK);
    rf_kv_layer_counts(g, &gl, &sl, &sh);
    CHECK(gl == 2 && sl == 10 && g->layer[5].window == 0 && g->layer[11].window == 0 &&
          g->layer[4].window == 1024);
    /* Qwen2: a sliding_window that is off; head_dim from hidden_size / heads = 896 / 14 = 64 */
    CHECK(parse("{\"num_hidden_layers\":24,\"num_attention_heads\":14,\"num_key_value_heads\":2,"
                "\"hidden_size\":896,\"sliding_window\":32768,\"use_sliding_window\":false,"
                "\"max_window_layers\":21,\"max_position_embeddings\":32768}",
                &err) == RF_OK);
    rf_kv_layer_counts(g, &gl, &sl, &sh);
    CHECK(gl == 24 && sl == 0 && g->layer[0].head_dim_k == 64 && g_cfg.ctx_train == 32768);
    CHECK(rf_kv_stored_per_token(g, RF_KV_F16) == 24 * 2 * 128 * 2); /* 12,288 B */
    /* ... and on: layers from max_window_layers slide */
    CHECK(parse("{\"num_hidden_layers\":28,\"num_attention_heads\":12,\"num_key_value_heads\":2,"
                "\"hidden_size\":1536,\"sliding_window\":4096,\"use_sliding_window\":true,"
                "\"max_window_layers\":21}",
                &err) == RF_OK);
    rf_kv_layer_counts(g, &gl, &sl, &sh);
    CHECK(gl == 21 && sl == 7 && g->layer[21].window == 4096);
    /* Mistral: a window and no pattern: every layer slides */
    CHECK(parse("{\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
                "\"hidden_size\":4096,\"sliding_window\":4096}",
                &err) == RF_OK);
    rf_kv_layer_counts(g, &gl, &sl, &sh);
    CHECK(gl == 0 && sl == 32 && strstr(g_cfg.kv_note, "every layer slides"));
    /* Llama: no window; no num_key_value_heads: as many as the attention heads */
    CHECK(parse("{\"num_hidden_layers\":2,\"num_attention_heads\":8,\"hidden_size\":512}", &err) ==
          RF_OK);
    CHECK(g->layer[0].n_kv_head == 8 && g->layer[1].head_dim_v == 64);
    /* Gemma 2 configs without a pattern alternate */
    CHECK(parse("{\"model_type\":\"gemma2\",\"num_hidden_layers\":4,\"num_attention_heads\":8,"
                "\"num_key_value_heads\":4,\"head_dim\":256,\"sliding_window\":4096}",
                &err) == RF_OK);
    CHECK(g->layer[0].window == 4096 && g->layer[1].window == 0 && g->layer[2].window == 4096);
    /* DeepSeek MLA: one latent row of 512 + 64 values a layer: 61 x 576 x 2 = 70,272 B */
    CHECK(parse("{\"num_hidden_layers\":61,\"num_attention_heads\":128,\"num_key_value_heads\":128,"
                "\"kv_lora_rank\":512,\"qk_rope_head_dim\":64}",
                &err) == RF_OK);
    CHECK(rf_kv_stored_per_token(g, RF_KV_F16) == 70272 && strstr(g_cfg.kv_note, "MLA"));
    /* no layer count: no geometry, with the reason */
    CHECK(parse("{\"model_type\":\"bert\"}", &err) == RF_OK && !g_cfg.kv_known &&
          strstr(g_cfg.kv_note, "no num_hidden_layers"));
    /* an unknown layer type: geometry unknown, named */
    CHECK(parse("{\"num_hidden_layers\":1,\"num_key_value_heads\":1,\"head_dim\":8,"
                "\"layer_types\":[\"wormhole_attention\"]}",
                &err) == RF_OK &&
          !g_cfg.kv_known && strstr(g_cfg.kv_note, "layer_types[0] = \"wormhole_attention\""));
    /* quantization_config */
    CHECK(
        parse("{\"num_hidden_layers\":1,\"num_key_value_heads\":1,\"head_dim\":8,"
              "\"quantization_config\":{\"quant_method\":\"compressed-tensors\","
              "\"config_groups\":{\"group_0\":{\"format\":\"pack-quantized\",\"weights\":"
              "{\"num_bits\":4,\"group_size\":128,\"strategy\":\"group\",\"symmetric\":false}}}}}",
              &err) == RF_OK);
    CHECK(g_cfg.quant.pack_quantized && g_cfg.quant.bits == 4 && g_cfg.quant.group_size == 128 &&
          !g_cfg.quant.symmetric);

    static const struct {
        const char *what, *json;
        rf_status code;
        const char *needle;
    } bad[] = {
        {"kv heads 0",
         "{\"text_config\":{\"num_hidden_layers\":2,\"num_key_value_heads\":0,\"head_dim\":8}}",
         RF_ERR_MODEL, "config.json: text_config.num_key_value_heads = 0 is not in [1, 1024]"},
        {"layers 1000", "{\"num_hidden_layers\":1000}", RF_ERR_MODEL,
         "num_hidden_layers = 1000 is not in [1, 512]"},
        {"head_dim a string",
         "{\"num_hidden_layers\":2,\"num_key_value_heads\":1,\"head_dim\":\"256\"}", RF_ERR_MODEL,
         "head_dim is a string, not an integer"},
        {"layer_types short",
         "{\"num_hidden_layers\":3,\"num_key_value_heads\":1,\"head_dim\":8,\"sliding_window\":4,"
         "\"layer_types\":[\"full_attention\"]}",
         RF_ERR_MODEL, "layer_types has 1 entries for 3 layers"},
        {"sliding without window",
         "{\"num_hidden_layers\":1,\"num_key_value_heads\":1,\"head_dim\":8,"
         "\"layer_types\":[\"sliding_attention\"]}",
         RF_ERR_MODEL,
         "layer_types[0] is \"sliding_attention\" but the config gives no "
         "sliding_window"},
        {"hidden not divisible",
         "{\"num_hidden_layers\":1,\"num_attention_heads\":3,\"hidden_size\":100}", RF_ERR_MODEL,
         "hidden_size 100 / num_attention_heads 3 is not a whole head size"},
        {"3-bit packs",
         "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":"
         "\"pack-quantized\",\"config_groups\":{\"g\":{\"weights\":{\"num_bits\":3}}}}}",
         RF_ERR_UNSUPPORTED, "num_bits = 3: pack-quantized weights of 2, 4 or 8 bits"},
        {"not JSON", "{\"num_hidden_layers\": }", RF_ERR_FORMAT, "config.json: not valid JSON"},
        {"not an object", "[1]", RF_ERR_FORMAT, "the config is an array, not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rf_status st = parse(bad[i].json, &err);
        bool ok = st == bad[i].code && strstr(err.msg, bad[i].needle) && !g_cfg.kv_known;
        CHECK_MSG(ok, "%s: status %d, %s", bad[i].what, st, err.msg);
        if (ok) fprintf(stderr, "  %-24s -> %s\n", bad[i].what, err.msg);
    }
    CHECK(rf_hf_config_load("/nonexistent/config.json", &g_cfg, &err) == RF_ERR_IO &&
          strstr(err.msg, "/nonexistent/config.json: cannot open"));
    CHECK(rf_hf_config_load("/tmp", &g_cfg, &err) == RF_ERR_IO &&
          strstr(err.msg, "not a regular file"));
}

int main(void) {
    test_bytes();
    test_capacity();
    test_config();
    return check_summary("test_kvcap");
}
