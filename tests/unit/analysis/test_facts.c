/* test_facts.c: the role classifier, the shared accounting, and the facts of GGUF files.
 *
 * 1. Role of every tensor-name convention the inspector claims (GGUF llama/qwen2/gemma3/gemma3n,
 *    mmproj; HF llama/qwen2/gemma3/gemma3n multimodal, lm_head, towers, norms): a table.
 * 2. The footprint read rules on hand-made sums: untied (one embedding row, head in full), tied
 *    (table in full as the head, no extra row), per-layer rows, towers not read, KV added.
 * 3. GGUF geometry from metadata, on files written by the GGUF writer: per-layer head counts,
 *    a bool sliding pattern, a period, the gemma3 default period, shared KV layers, *_swa head
 *    sizes, a window with no pattern for an unknown architecture, and keys of the wrong type or
 *    out of range (errors naming the file and the key).
 * 4. The real GGUF files in models/ (each skipped when absent): the role breakdown sums to the
 *    file's tensor bytes, tied heads where there is no output.weight, the KV geometry from the
 *    metadata; for a model the engine loads, the geometry equals the engine's hyperparameters and
 *    rf_model_token_bytes equals the facts' figures (one accounting).
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/facts.h"
#include "analysis/roofline.h"
#include "check.h"
#include "format/gguf_write.h"
#include "kernels/types.h"
#include "model/model.h"

static void test_roles(void) {
    static const struct {
        const char *name;
        rf_role role;
    } cases[] = {
        /* GGUF */
        {"token_embd.weight", RF_ROLE_TOKEN_EMBD},
        {"output.weight", RF_ROLE_HEAD},
        {"output_norm.weight", RF_ROLE_NORMS},
        {"blk.0.attn_q.weight", RF_ROLE_BODY},
        {"blk.0.attn_q.bias", RF_ROLE_BODY},
        {"blk.3.attn_output.weight", RF_ROLE_BODY},
        {"blk.0.attn_norm.weight", RF_ROLE_NORMS},
        {"blk.0.attn_q_norm.weight", RF_ROLE_NORMS},
        {"blk.0.post_ffw_norm.weight", RF_ROLE_NORMS},
        {"rope_freqs.weight", RF_ROLE_BODY},
        {"per_layer_token_embd.weight", RF_ROLE_PER_LAYER_EMBD},
        {"per_layer_model_proj.weight", RF_ROLE_BODY},
        {"per_layer_proj_norm.weight", RF_ROLE_NORMS},
        {"altup_unembd_proj.weight", RF_ROLE_BODY},
        {"v.blk.0.attn_q.weight", RF_ROLE_VISION},
        {"v.post_ln.weight", RF_ROLE_VISION},
        {"mm.input_projection.weight", RF_ROLE_VISION},
        {"a.blk.0.ffn_up.weight", RF_ROLE_AUDIO},
        /* Hugging Face */
        {"model.embed_tokens.weight", RF_ROLE_TOKEN_EMBD},
        {"model.language_model.embed_tokens.weight", RF_ROLE_TOKEN_EMBD},
        {"language_model.model.embed_tokens.weight", RF_ROLE_TOKEN_EMBD},
        {"lm_head.weight", RF_ROLE_HEAD},
        {"language_model.lm_head.weight", RF_ROLE_HEAD},
        {"model.norm.weight", RF_ROLE_NORMS},
        {"model.layers.0.input_layernorm.weight", RF_ROLE_NORMS},
        {"model.layers.0.self_attn.k_norm.weight", RF_ROLE_NORMS},
        {"model.layers.0.self_attn.q_proj.weight", RF_ROLE_BODY},
        {"model.layers.0.mlp.down_proj.weight_packed", RF_ROLE_BODY},
        {"model.layers.0.mlp.down_proj.weight_scale", RF_ROLE_BODY},
        {"model.language_model.layers.9.mlp.gate_proj.weight", RF_ROLE_BODY},
        {"model.language_model.embed_tokens_per_layer.weight", RF_ROLE_PER_LAYER_EMBD},
        {"model.language_model.per_layer_model_projection.weight", RF_ROLE_BODY},
        {"model.language_model.per_layer_projection_norm.weight", RF_ROLE_NORMS},
        {"model.language_model.layers.0.per_layer_input_gate.weight", RF_ROLE_BODY},
        {"model.language_model.altup_projections.0.weight", RF_ROLE_BODY},
        {"vision_tower.vision_model.encoder.layers.0.layer_norm1.weight", RF_ROLE_VISION},
        {"model.vision_tower.timm_model.blocks.0.attn.qkv.weight", RF_ROLE_VISION},
        {"multi_modal_projector.mm_input_projection_weight", RF_ROLE_VISION},
        {"model.embed_vision.embedding_projection.weight", RF_ROLE_VISION},
        {"visual.blocks.0.attn.qkv.weight", RF_ROLE_VISION},
        {"model.audio_tower.conformer.0.norm.weight", RF_ROLE_AUDIO},
        {"model.embed_audio.embedding.weight", RF_ROLE_AUDIO},
        {"transformer.wte.weight", RF_ROLE_TOKEN_EMBD},
        {"transformer.h.0.ln_1.weight", RF_ROLE_NORMS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rf_role r = rf_role_classify(cases[i].name, strlen(cases[i].name));
        CHECK_MSG(r == cases[i].role, "%s: %s, want %s", cases[i].name, rf_role_name(r),
                  rf_role_name(cases[i].role));
    }
    /* not NUL-terminated: only len bytes count */
    CHECK(rf_role_classify("output.weightXYZ", 13) == RF_ROLE_HEAD);
    CHECK(!strcmp(rf_role_name(RF_ROLE_PER_LAYER_EMBD), "per-layer embeddings"));
    CHECK(!strcmp(rf_role_key(RF_ROLE_HEAD), "head") && !strcmp(rf_role_name(RF_ROLE_COUNT), "?"));
}

static void test_footprint(void) {
    rf_footprint fp;
    rf_footprint_init(&fp);
    rf_footprint_add(&fp, RF_ROLE_TOKEN_EMBD, "BF16", 1000 * 64 * 2, 128);
    rf_footprint_add(&fp, RF_ROLE_BODY, "int4 g32", 5000, 0);
    rf_footprint_add(&fp, RF_ROLE_BODY, "BF16", 700, 0);
    rf_footprint_add(&fp, RF_ROLE_NORMS, "BF16", 128, 128);
    rf_footprint_add(&fp, RF_ROLE_PER_LAYER_EMBD, "BF16", 1000 * 300 * 2, 600);
    rf_footprint_add(&fp, RF_ROLE_VISION, "BF16", 9999, 0);
    rf_footprint_add(&fp, RF_ROLE_AUDIO, "F32", 7777, 0);
    CHECK(fp.total_tensors == 7 && fp.n_dtype == 3);
    CHECK(fp.total_bytes == 128000 + 5700 + 128 + 600000 + 9999 + 7777);
    CHECK(rf_footprint_tied(&fp));
    rf_token_read r = rf_footprint_read(&fp, NULL, 100, RF_KV_F16);
    CHECK(r.tied && r.role[RF_ROLE_HEAD] == 128000 && r.role[RF_ROLE_TOKEN_EMBD] == 0);
    CHECK(r.role[RF_ROLE_PER_LAYER_EMBD] == 600 && r.role[RF_ROLE_VISION] == 0 &&
          r.role[RF_ROLE_AUDIO] == 0);
    CHECK(r.weights == 128000 + 5700 + 128 + 600 && !r.kv_known && r.kv == 0);
    /* a stored head: the embedding is one row, the head in full */
    rf_footprint_add(&fp, RF_ROLE_HEAD, "BF16", 128000, 128);
    static rf_kv_geom g;
    g.n_layer = 2;
    g.layer[0] = g.layer[1] = (rf_kv_layer){1, 64, 64, 0, true};
    r = rf_footprint_read(&fp, &g, 100, RF_KV_F16);
    CHECK(!r.tied && r.role[RF_ROLE_TOKEN_EMBD] == 128 && r.role[RF_ROLE_HEAD] == 128000);
    CHECK(r.kv_known && r.kv == 2 * 100 * 256 && r.total == r.weights + r.kv);
    /* many dtypes: the last entry becomes "other" and nothing is lost */
    rf_footprint_init(&fp);
    for (int i = 0; i < RF_FOOTPRINT_MAX_DTYPES + 5; i++) {
        char label[16];
        snprintf(label, sizeof label, "T%d", i);
        rf_footprint_add(&fp, RF_ROLE_BODY, label, 10, 0);
    }
    uint64_t sum = 0;
    for (int i = 0; i < fp.n_dtype; i++) sum += fp.dtype[i].bytes;
    CHECK(fp.n_dtype == RF_FOOTPRINT_MAX_DTYPES && sum == fp.total_bytes &&
          !strcmp(fp.dtype[RF_FOOTPRINT_MAX_DTYPES - 1].label, "other"));
}

/* ---- GGUF metadata geometry ---------------------------------------------------------------- */

typedef rf_status (*kv_fn)(rf_gguf_writer *w, rf_error *err);

static rf_gguf *gguf_with(const char *arch, uint32_t n_layer, kv_fn extra, void **buf) {
    rf_error err = {0};
    rf_gguf_writer *w = rf_gguf_writer_new();
    char key[96];
    rf_gguf_writer_add_str(w, "general.architecture", arch, &err);
    snprintf(key, sizeof key, "%s.block_count", arch);
    rf_gguf_writer_add_u32(w, key, n_layer, &err);
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    rf_gguf_writer_add_u32(w, key, 512, &err);
    snprintf(key, sizeof key, "%s.attention.head_count", arch);
    rf_gguf_writer_add_u32(w, key, 8, &err);
    if (extra) extra(w, &err);
    float v[64] = {0};
    uint64_t ne[2] = {64, 4};
    rf_gguf_writer_add_tensor(w, "token_embd.weight", 2, ne, RF_TYPE_F32, v, sizeof v * 4 / 4,
                              &err);
    size_t n = 0;
    *buf = NULL;
    rf_gguf *g = NULL;
    if (rf_gguf_writer_to_memory(w, buf, &n, &err) == RF_OK)
        rf_gguf_open_memory(*buf, n, "geom.gguf", &g, &err);
    rf_gguf_writer_free(w);
    return g;
}

static rf_status kv_arrays(rf_gguf_writer *w, rf_error *err) {
    uint32_t kvh[4] = {2, 0, 4, 2}; /* layer 1 has no attention */
    uint8_t pat[4] = {1, 0, 1, 0};
    rf_gguf_writer_add_arr(w, "x.attention.head_count_kv", RF_GGUF_U32, kvh, 4, err);
    rf_gguf_writer_add_u32(w, "x.attention.sliding_window", 128, err);
    rf_gguf_writer_add_u32(w, "x.attention.key_length_swa", 32, err);
    return rf_gguf_writer_add_arr(w, "x.attention.sliding_window_pattern", RF_GGUF_BOOL, pat, 4,
                                  err);
}

static rf_status kv_gemma3(rf_gguf_writer *w, rf_error *err) {
    rf_gguf_writer_add_u32(w, "gemma3.attention.head_count_kv", 1, err);
    rf_gguf_writer_add_u32(w, "gemma3.attention.key_length", 256, err);
    rf_gguf_writer_add_u32(w, "gemma3.attention.value_length", 256, err);
    return rf_gguf_writer_add_u32(w, "gemma3.attention.sliding_window", 512, err);
}

static rf_status kv_gemma3n(rf_gguf_writer *w, rf_error *err) {
    rf_gguf_writer_add_u32(w, "gemma3n.attention.head_count_kv", 2, err);
    rf_gguf_writer_add_u32(w, "gemma3n.attention.key_length", 256, err);
    rf_gguf_writer_add_u32(w, "gemma3n.attention.sliding_window", 512, err);
    return rf_gguf_writer_add_u32(w, "gemma3n.attention.shared_kv_layers", 10, err);
}

static rf_status kv_nopattern(rf_gguf_writer *w, rf_error *err) {
    return rf_gguf_writer_add_u32(w, "mystery.attention.sliding_window", 4096, err);
}

static rf_status kv_badtype(rf_gguf_writer *w, rf_error *err) {
    return rf_gguf_writer_add_str(w, "x.attention.head_count_kv", "two", err);
}

static rf_status kv_badrange(rf_gguf_writer *w, rf_error *err) {
    return rf_gguf_writer_add_u32(w, "x.attention.key_length", 100000, err);
}

static rf_status kv_badpattern(rf_gguf_writer *w, rf_error *err) {
    uint8_t pat[3] = {1, 0, 1};
    rf_gguf_writer_add_u32(w, "x.attention.sliding_window", 128, err);
    return rf_gguf_writer_add_arr(w, "x.attention.sliding_window_pattern", RF_GGUF_BOOL, pat, 3,
                                  err);
}

static void test_gguf_geometry(void) {
    static rf_kv_geom g;
    char note[192];
    rf_error err = {0};
    void *buf;
    rf_gguf *f = gguf_with("x", 4, kv_arrays, &buf);
    CHECK(f != NULL);
    if (f) {
        CHECK_MSG(rf_kv_geom_from_gguf(f, &g, note, sizeof note, &err) == RF_OK, "%s", err.msg);
        CHECK(g.n_layer == 4 && g.layer[0].n_kv_head == 2 && g.layer[1].n_kv_head == 0 &&
              !g.layer[1].has_cache && g.layer[2].n_kv_head == 4);
        CHECK(g.layer[0].window == 128 && g.layer[0].head_dim_k == 32 &&
              g.layer[0].head_dim_v == 32); /* *_swa sizes on sliding layers */
        CHECK(g.layer[3].window == 0 && g.layer[3].head_dim_k == 64); /* 512 / 8 */
        /* sliding layers 0 and 2: 2 and 4 heads x (32 + 32) x 2 B; global layer 3: 2 x 128 x 2 */
        CHECK(rf_kv_stored_per_token(&g, RF_KV_F16) == 2 * 64 * 2 + 4 * 64 * 2 + 2 * 128 * 2);
        rf_gguf_close(f);
    }
    free(buf);
    f = gguf_with("gemma3", 18, kv_gemma3, &buf);
    if (f) {
        CHECK(rf_kv_geom_from_gguf(f, &g, note, sizeof note, &err) == RF_OK);
        int32_t gl, sl, sh;
        rf_kv_layer_counts(&g, &gl, &sl, &sh);
        CHECK(gl == 3 && sl == 15 && g.layer[5].window == 0 && strstr(note, "llama.cpp"));
        rf_gguf_close(f);
    }
    free(buf);
    f = gguf_with("gemma3n", 30, kv_gemma3n, &buf);
    if (f) {
        CHECK(rf_kv_geom_from_gguf(f, &g, note, sizeof note, &err) == RF_OK);
        int32_t gl, sl, sh;
        rf_kv_layer_counts(&g, &gl, &sl, &sh);
        CHECK(gl == 6 && sl == 24 && sh == 10 && !g.layer[20].has_cache && g.layer[19].has_cache);
        CHECK(rf_kv_stored_per_token(&g, RF_KV_F16) == 20 * 2048);
        rf_gguf_close(f);
    }
    free(buf);
    f = gguf_with("mystery", 2, kv_nopattern, &buf);
    if (f) {
        CHECK(rf_kv_geom_from_gguf(f, &g, note, sizeof note, &err) == RF_OK);
        CHECK(g.layer[0].window == 0 && g.layer[1].window == 0 &&
              strstr(note, "without a layer pattern"));
        rf_gguf_close(f);
    }
    free(buf);
    static const struct {
        const char *what;
        kv_fn fn;
        const char *needle;
    } bad[] = {
        {"head_count_kv a string", kv_badtype,
         "key 'x.attention.head_count_kv' must be an "
         "integer"},
        {"key_length too big", kv_badrange,
         "key 'x.attention.key_length' = 100000 is not in "
         "[1, 2048]"},
        {"pattern of 3 for 4 layers", kv_badpattern,
         "x.attention.sliding_window_pattern must be "
         "a u32 period or 4 bools"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = gguf_with("x", 4, bad[i].fn, &buf);
        rf_status st = f ? rf_kv_geom_from_gguf(f, &g, note, sizeof note, &err) : RF_ERR_INTERNAL;
        bool ok =
            st == RF_ERR_MODEL && strstr(err.msg, "geom.gguf") && strstr(err.msg, bad[i].needle);
        CHECK_MSG(ok, "%s: %d %s", bad[i].what, st, err.msg);
        if (ok) fprintf(stderr, "  %-26s -> %s\n", bad[i].what, err.msg);
        rf_gguf_close(f);
        free(buf);
    }
}

/* ---- the real models ------------------------------------------------------------------------ */

static void check_real(const char *path) {
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "  (skipped: %s absent)\n", path);
        return;
    }
    rf_gguf *g = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_gguf_open(path, &g, &err) == RF_OK, "%s", err.msg);
    if (!g) return;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) sum += rf_gguf_tensor_at(g, i)->nbytes;
    bool has_output = rf_gguf_find_tensor(g, "output.weight") != NULL;
    rf_gguf_close(g);

    rf_model_facts *f = NULL;
    CHECK_MSG(rf_model_facts_load(path, &f, &err) == RF_OK, "%s", err.msg);
    if (!f) return;
    uint64_t roles = 0, dtypes = 0, tensors = 0;
    for (int r = 0; r < RF_ROLE_COUNT; r++) {
        roles += f->fp.role_bytes[r];
        tensors += f->fp.role_tensors[r];
    }
    for (int i = 0; i < f->fp.n_dtype; i++) dtypes += f->fp.dtype[i].bytes;
    CHECK_MSG(roles == sum && dtypes == sum && rf_model_facts_weights(f) == sum,
              "%s: roles %llu, dtypes %llu, tensors %llu", path, (unsigned long long)roles,
              (unsigned long long)dtypes, (unsigned long long)sum);
    CHECK(tensors == f->n_tensors && f->stored_tensors == f->n_tensors);
    CHECK(rf_footprint_tied(&f->fp) == !has_output);
    CHECK(f->fp.role_tensors[RF_ROLE_TOKEN_EMBD] == 1 && f->fp.role_tensors[RF_ROLE_BODY] > 0 &&
          f->fp.role_tensors[RF_ROLE_NORMS] > 0);
    CHECK_MSG(f->kv.n_layer > 0, "%s: %s", path, f->kv_note);
    rf_token_read r = rf_model_facts_token_read(f, 0, RF_KV_F16);
    CHECK(r.kv == 0 && r.weights == r.total);
    CHECK(r.total ==
          sum -
              (has_output ? f->fp.role_bytes[RF_ROLE_TOKEN_EMBD] - r.role[RF_ROLE_TOKEN_EMBD] : 0));
    fprintf(stderr, "  %s: %llu tensor bytes; %d layers; %llu B read per token at context 0\n",
            path, (unsigned long long)sum, f->kv.n_layer, (unsigned long long)r.total);

    /* when the engine runs it: the same geometry and the same bytes per token */
    rf_model *m = NULL;
    if (rf_model_load(path, &m, &err) == RF_OK) {
        static rf_kv_geom mg;
        rf_model_kv_geom(m, &mg);
        CHECK(mg.n_layer == f->kv.n_layer);
        bool same = true;
        for (int32_t il = 0; il < mg.n_layer; il++)
            same = same && mg.layer[il].n_kv_head == f->kv.layer[il].n_kv_head &&
                   mg.layer[il].head_dim_k == f->kv.layer[il].head_dim_k &&
                   mg.layer[il].head_dim_v == f->kv.layer[il].head_dim_v &&
                   mg.layer[il].window == f->kv.layer[il].window;
        CHECK_MSG(same, "%s: metadata geometry differs from the engine's hyperparameters", path);
        for (int32_t ctx = 0; ctx <= 8192; ctx += 4096) {
            rf_token_bytes tb = rf_model_token_bytes(m, ctx);
            rf_token_read fr = rf_model_facts_token_read(f, ctx, RF_KV_F16);
            CHECK(tb.total == fr.total && tb.kv == fr.kv && tb.head == fr.role[RF_ROLE_HEAD] &&
                  tb.matmul == fr.role[RF_ROLE_BODY] && tb.tied == (int)fr.tied);
        }
        rf_model_free(m);
    } else {
        fprintf(stderr, "  (the engine does not run it: %s)\n", err.msg);
    }
    rf_model_facts_free(f);
}

int main(void) {
    test_roles();
    test_footprint();
    test_gguf_geometry();
    const char *model = getenv("ROOFLINE_TEST_MODEL");
    if (model) {
        char copy[1024];
        snprintf(copy, sizeof copy, "%s", model);
        const char *dir = dirname(copy);
        static const char *const names[] = {
            "gemma-3-270m-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "smollm2-135m-instruct-q4_1.gguf"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char p[1200];
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            check_real(p);
        }
    }
    return check_summary("test_facts");
}
