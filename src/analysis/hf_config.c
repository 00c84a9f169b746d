/* hf_config.c: config.json -> KV geometry, context and quantization (see hf_config.h). */
#include "analysis/hf_config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/file.h"
#include "util/json_kind.h"

typedef struct cfg_ctx {
    const char *name; /* file name for messages */
    rf_error *err;
} cfg_ctx;

/* An integer key of obj in [lo, hi]. Absent or null: *present false, RF_OK. */
static rf_status get_int(const cfg_ctx *c, const json_t *obj, const char *prefix, const char *key,
                         int64_t lo, int64_t hi, bool *present, int64_t *out) {
    *present = false;
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return RF_OK;
    if (!json_is_integer(v))
        return rf_error_set(c->err, RF_ERR_MODEL, "%s: %s%s is %s, not an integer", c->name, prefix,
                            key, rf_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return rf_error_set(c->err, RF_ERR_MODEL, "%s: %s%s = %lld is not in [%lld, %lld]", c->name,
                            prefix, key, (long long)x, (long long)lo, (long long)hi);
    *present = true;
    *out = x;
    return RF_OK;
}

static rf_status get_bool(const cfg_ctx *c, const json_t *obj, const char *prefix, const char *key,
                          int *out) {
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return RF_OK;
    if (!json_is_boolean(v))
        return rf_error_set(c->err, RF_ERR_MODEL, "%s: %s%s is %s, not true or false", c->name,
                            prefix, key, rf_json_kind(v));
    *out = json_is_true(v);
    return RF_OK;
}

/* A string key copied (as a printable excerpt) into out; absent: out unchanged. */
static rf_status get_str(const cfg_ctx *c, const json_t *obj, const char *prefix, const char *key,
                         char *out, size_t cap) {
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return RF_OK;
    if (!json_is_string(v))
        return rf_error_set(c->err, RF_ERR_MODEL, "%s: %s%s is %s, not a string", c->name, prefix,
                            key, rf_json_kind(v));
    rf_printable(json_string_value(v), json_string_length(v), out, cap);
    return RF_OK;
}

static rf_status read_quant(const cfg_ctx *c, const json_t *root, rf_hf_quant *q) {
    rf_status st = RF_OK;
    const json_t *qc = json_object_get(root, "quantization_config");
    if (!qc || json_is_null(qc)) return RF_OK;
    if (!json_is_object(qc))
        return rf_error_set(c->err, RF_ERR_MODEL, "%s: quantization_config is %s, not an object",
                            c->name, rf_json_kind(qc));
    q->present = true;
    const char *P = "quantization_config.";
    if ((st = get_str(c, qc, P, "quant_method", q->method, sizeof q->method))) return st;
    if ((st = get_str(c, qc, P, "format", q->format, sizeof q->format))) return st;
    const json_t *groups = json_object_get(qc, "config_groups");
    const json_t *g = NULL;
    char gp[96] = "";
    if (groups && json_is_object(groups) && json_object_size(groups) > 0) {
        void *it = json_object_iter((json_t *)groups);
        g = json_object_iter_value(it);
        char key[40];
        const char *k = json_object_iter_key(it);
        rf_printable(k, strlen(k), key, sizeof key);
        snprintf(gp, sizeof gp, "%sconfig_groups.%s.", P, key);
        if (!json_is_object(g))
            return rf_error_set(c->err, RF_ERR_MODEL, "%s: %.90s is %s, not an object", c->name, gp,
                                rf_json_kind(g));
    } else if (groups && !json_is_null(groups) && !json_is_object(groups)) {
        return rf_error_set(c->err, RF_ERR_MODEL, "%s: %sconfig_groups is %s, not an object",
                            c->name, P, rf_json_kind(groups));
    }
    if (g && !q->format[0])
        if ((st = get_str(c, g, gp, "format", q->format, sizeof q->format))) return st;
    const json_t *w = g ? json_object_get(g, "weights") : NULL;
    char wp[112];
    snprintf(wp, sizeof wp, "%sweights.", gp);
    if (w && !json_is_null(w)) {
        if (!json_is_object(w))
            return rf_error_set(c->err, RF_ERR_MODEL, "%s: %.100s is %s, not an object", c->name,
                                wp, rf_json_kind(w));
        bool have;
        int64_t v;
        if ((st = get_int(c, w, wp, "num_bits", 1, 32, &have, &v))) return st;
        if (have) q->bits = (uint32_t)v;
        if ((st = get_int(c, w, wp, "group_size", 1, 1 << 20, &have, &v))) return st;
        if (have) q->group_size = (uint32_t)v;
        if ((st = get_str(c, w, wp, "strategy", q->strategy, sizeof q->strategy))) return st;
        int sym = 1;
        if ((st = get_bool(c, w, wp, "symmetric", &sym))) return st;
        q->symmetric = sym != 0;
    }
    q->pack_quantized =
        strcmp(q->method, "compressed-tensors") == 0 && strcmp(q->format, "pack-quantized") == 0;
    if (q->pack_quantized) {
        if (q->bits == 0) q->bits = 4;
        if (q->bits != 2 && q->bits != 4 && q->bits != 8)
            return rf_error_set(c->err, RF_ERR_UNSUPPORTED,
                                "%s: %snum_bits = %u: pack-quantized weights of 2, 4 or 8 bits are "
                                "supported",
                                c->name, wp, q->bits);
        if (strcmp(q->strategy, "group") == 0 && q->group_size == 0)
            return rf_error_set(c->err, RF_ERR_MODEL,
                                "%s: %sstrategy is \"group\" but there is no group_size", c->name,
                                wp);
    }
    return RF_OK;
}

/* The sliding layers and window; sets kv.layer[].window and the note. */
static rf_status read_sliding(const cfg_ctx *c, const json_t *tc, const char *P, const char *mtype,
                              rf_hf_config *out) {
    rf_status st;
    rf_kv_geom *g = &out->kv;
    bool have_w, have;
    int64_t window = 0;
    if ((st = get_int(c, tc, P, "sliding_window", 1, RF_KV_MAX_CTX, &have_w, &window))) return st;
    const json_t *types = json_object_get(tc, "layer_types");
    if (types && !json_is_null(types)) {
        if (!json_is_array(types))
            return rf_error_set(c->err, RF_ERR_MODEL, "%s: %slayer_types is %s, not an array",
                                c->name, P, rf_json_kind(types));
        if (json_array_size(types) != (size_t)g->n_layer)
            return rf_error_set(c->err, RF_ERR_MODEL,
                                "%s: %slayer_types has %zu entries for %d layers "
                                "(num_hidden_layers)",
                                c->name, P, json_array_size(types), g->n_layer);
        int32_t no_kv = 0;
        for (int32_t il = 0; il < g->n_layer; il++) {
            const json_t *t = json_array_get(types, (size_t)il);
            if (!json_is_string(t))
                return rf_error_set(c->err, RF_ERR_MODEL,
                                    "%s: %slayer_types[%d] is %s, not a string", c->name, P, il,
                                    rf_json_kind(t));
            const char *s = json_string_value(t);
            if (strcmp(s, "full_attention") == 0) {
                g->layer[il].window = 0;
            } else if (strcmp(s, "sliding_attention") == 0 || strcmp(s, "chunked_attention") == 0) {
                int64_t w = window;
                if (strcmp(s, "chunked_attention") == 0) {
                    if ((st = get_int(c, tc, P, "attention_chunk_size", 1, RF_KV_MAX_CTX, &have,
                                      &w)))
                        return st;
                    if (!have) w = 0;
                }
                if (w <= 0)
                    return rf_error_set(c->err, RF_ERR_MODEL,
                                        "%s: %slayer_types[%d] is \"%s\" but the config gives no "
                                        "%s",
                                        c->name, P, il, s,
                                        strcmp(s, "chunked_attention") == 0 ? "attention_chunk_size"
                                                                            : "sliding_window");
                g->layer[il].window = (uint32_t)w;
            } else if (strcmp(s, "linear_attention") == 0 || strcmp(s, "mamba") == 0 ||
                       strcmp(s, "conv") == 0) {
                g->layer[il].n_kv_head = 0; /* a recurrent state, not a KV cache */
                g->layer[il].has_cache = false;
                no_kv++;
            } else {
                char shown[48];
                rf_printable(s, json_string_length(t), shown, sizeof shown);
                out->kv_known = false;
                snprintf(out->kv_note, sizeof out->kv_note,
                         "%slayer_types[%d] = \"%s\": a layer type roofline does not know", P, il,
                         shown);
                return RF_OK;
            }
        }
        snprintf(out->kv_note, sizeof out->kv_note, "sliding layers from layer_types%s",
                 no_kv ? "; linear-attention / recurrent layers hold no KV cache" : "");
        return RF_OK;
    }
    int use_sw = -1;
    if ((st = get_bool(c, tc, P, "use_sliding_window", &use_sw))) return st;
    if (!have_w || use_sw == 0) {
        snprintf(out->kv_note, sizeof out->kv_note, "%s",
                 have_w ? "use_sliding_window is false: every layer global"
                        : "no sliding_window: every layer global");
        return RF_OK;
    }
    int64_t period = 0;
    if ((st = get_int(c, tc, P, "sliding_window_pattern", 1, RF_KV_MAX_LAYERS, &have, &period)))
        return st;
    if (!have &&
        (st = get_int(c, tc, P, "_sliding_window_pattern", 1, RF_KV_MAX_LAYERS, &have, &period)))
        return st;
    if (!have && strcmp(mtype, "gemma2") == 0) {
        have = true;
        period = 2;
    }
    if (have) {
        for (int32_t il = 0; il < g->n_layer; il++)
            g->layer[il].window = (il + 1) % period ? (uint32_t)window : 0;
        snprintf(out->kv_note, sizeof out->kv_note,
                 "sliding_window_pattern %lld: every %lldth layer global", (long long)period,
                 (long long)period);
        return RF_OK;
    }
    if (use_sw == 1) {
        int64_t from = 0;
        if ((st = get_int(c, tc, P, "max_window_layers", 0, RF_KV_MAX_LAYERS, &have, &from)))
            return st;
        for (int32_t il = 0; il < g->n_layer; il++)
            g->layer[il].window = il >= from ? (uint32_t)window : 0;
        snprintf(out->kv_note, sizeof out->kv_note,
                 "use_sliding_window: layers from max_window_layers %lld slide", (long long)from);
        return RF_OK;
    }
    for (int32_t il = 0; il < g->n_layer; il++) g->layer[il].window = (uint32_t)window;
    snprintf(out->kv_note, sizeof out->kv_note,
             "sliding_window with no layer pattern: every layer slides");
    return RF_OK;
}

static rf_status read_geometry(const cfg_ctx *c, const json_t *root, rf_hf_config *out) {
    rf_status st;
    const json_t *tc = json_object_get(root, "text_config");
    const char *P = "text_config.";
    if (!tc || json_is_null(tc)) {
        tc = root;
        P = "";
    } else if (!json_is_object(tc)) {
        return rf_error_set(c->err, RF_ERR_MODEL, "%s: text_config is %s, not an object", c->name,
                            rf_json_kind(tc));
    }
    char mtype[48] = "";
    if ((st = get_str(c, tc, P, "model_type", mtype, sizeof mtype))) return st;
    bool have;
    int64_t n_layer = 0, n_head = 0, n_kv = 0, head_dim = 0, hidden = 0, v;
    if ((st = get_int(c, tc, P, "max_position_embeddings", 1, INT64_C(1) << 40, &have, &v)))
        return st;
    if (have) out->ctx_train = v;
    if ((st = get_int(c, tc, P, "num_hidden_layers", 1, RF_KV_MAX_LAYERS, &have, &n_layer)))
        return st;
    if (!have) {
        snprintf(out->kv_note, sizeof out->kv_note, "no %snum_hidden_layers in %s", P, c->name);
        return RF_OK;
    }
    bool have_heads, have_kv, have_hd, have_hidden;
    if ((st = get_int(c, tc, P, "num_attention_heads", 1, 1 << 16, &have_heads, &n_head)))
        return st;
    if ((st = get_int(c, tc, P, "num_key_value_heads", 1, RF_KV_MAX_HEADS, &have_kv, &n_kv)))
        return st;
    if ((st = get_int(c, tc, P, "head_dim", 1, RF_KV_MAX_HEAD_DIM, &have_hd, &head_dim))) return st;
    if ((st = get_int(c, tc, P, "hidden_size", 1, 1 << 20, &have_hidden, &hidden))) return st;
    int64_t dk, dv;
    const char *mla = "";
    int64_t lora = 0, rope = 0;
    if ((st = get_int(c, tc, P, "kv_lora_rank", 1, RF_KV_MAX_HEAD_DIM, &have, &lora))) return st;
    if (have) { /* DeepSeek MLA: one latent row (kv_lora_rank + qk_rope_head_dim) per layer */
        bool have_rope;
        if ((st = get_int(c, tc, P, "qk_rope_head_dim", 0, RF_KV_MAX_HEAD_DIM, &have_rope, &rope)))
            return st;
        if (lora + rope > RF_KV_MAX_HEAD_DIM)
            return rf_error_set(c->err, RF_ERR_MODEL,
                                "%s: %skv_lora_rank + qk_rope_head_dim = %lld is over %d", c->name,
                                P, (long long)(lora + rope), RF_KV_MAX_HEAD_DIM);
        n_kv = 1;
        dk = lora + rope;
        dv = 0;
        mla = "; MLA latent cache (kv_lora_rank + qk_rope_head_dim)";
    } else {
        if (!have_kv) {
            if (!have_heads) {
                snprintf(out->kv_note, sizeof out->kv_note,
                         "no %snum_key_value_heads or num_attention_heads in %s", P, c->name);
                return RF_OK;
            }
            if (n_head > RF_KV_MAX_HEADS)
                return rf_error_set(c->err, RF_ERR_MODEL,
                                    "%s: %snum_attention_heads = %lld (also the KV head count: no "
                                    "num_key_value_heads) is over %d",
                                    c->name, P, (long long)n_head, RF_KV_MAX_HEADS);
            n_kv = n_head;
        }
        if (!have_hd) {
            if (!have_hidden || !have_heads) {
                snprintf(out->kv_note, sizeof out->kv_note,
                         "no %shead_dim, and no hidden_size / num_attention_heads, in %s", P,
                         c->name);
                return RF_OK;
            }
            if (hidden % n_head || hidden / n_head > RF_KV_MAX_HEAD_DIM)
                return rf_error_set(c->err, RF_ERR_MODEL,
                                    "%s: %shidden_size %lld / num_attention_heads %lld is not a "
                                    "whole head size in [1, %d] (and there is no head_dim)",
                                    c->name, P, (long long)hidden, (long long)n_head,
                                    RF_KV_MAX_HEAD_DIM);
            head_dim = hidden / n_head;
        }
        dk = dv = head_dim;
    }
    rf_kv_geom *g = &out->kv;
    g->n_layer = (int32_t)n_layer;
    for (int32_t il = 0; il < g->n_layer; il++)
        g->layer[il] = (rf_kv_layer){.n_kv_head = (uint32_t)n_kv,
                                     .head_dim_k = (uint32_t)dk,
                                     .head_dim_v = (uint32_t)dv,
                                     .window = 0,
                                     .has_cache = true};
    out->kv_known = true;
    if ((st = read_sliding(c, tc, P, mtype, out))) return st;
    if (!out->kv_known) {
        g->n_layer = 0;
        return RF_OK;
    }
    int64_t shared = 0;
    if ((st = get_int(c, tc, P, "num_kv_shared_layers", 0, n_layer, &have, &shared))) return st;
    for (int64_t il = n_layer - shared; il < n_layer; il++) g->layer[il].has_cache = false;
    size_t used = strlen(out->kv_note);
    if (shared && used < sizeof out->kv_note)
        snprintf(out->kv_note + used, sizeof out->kv_note - used,
                 "; the last %lld layers share earlier layers' caches (num_kv_shared_layers)",
                 (long long)shared);
    used = strlen(out->kv_note);
    if (*mla && used < sizeof out->kv_note)
        snprintf(out->kv_note + used, sizeof out->kv_note - used, "%s", mla);
    return RF_OK;
}

rf_status rf_hf_config_parse(const char *text, size_t len, const char *name, rf_hf_config *out,
                             rf_error *err) {
    memset(out, 0, sizeof *out);
    out->tie_word_embeddings = -1;
    cfg_ctx c = {name ? name : "config.json", err};
    rf_status st = RF_OK;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char shown[200];
        rf_escaped(je.text, strlen(je.text), shown, sizeof shown);
        st = rf_error_set(err, RF_ERR_FORMAT, "%s: not valid JSON: %s (line %d, column %d)", c.name,
                          shown, je.line, je.column);
        goto out;
    }
    if (!json_is_object(root)) {
        st = rf_error_set(err, RF_ERR_FORMAT, "%s: the config is %s, not a JSON object", c.name,
                          rf_json_kind(root));
        goto out;
    }
    if ((st = get_str(&c, root, "", "model_type", out->model_type, sizeof out->model_type)))
        goto out;
    const json_t *archs = json_object_get(root, "architectures");
    if (archs && json_is_array(archs) && json_array_size(archs) > 0 &&
        json_is_string(json_array_get(archs, 0))) {
        const json_t *a = json_array_get(archs, 0);
        rf_printable(json_string_value(a), json_string_length(a), out->architecture,
                     sizeof out->architecture);
    }
    int tie = -1;
    if ((st = get_bool(&c, root, "", "tie_word_embeddings", &tie))) goto out;
    const json_t *tc = json_object_get(root, "text_config");
    if (tie < 0 && tc && json_is_object(tc) &&
        (st = get_bool(&c, tc, "text_config.", "tie_word_embeddings", &tie)))
        goto out;
    out->tie_word_embeddings = tie;
    if ((st = read_geometry(&c, root, out))) goto out;
    st = read_quant(&c, root, &out->quant);
out:
    json_decref(root);
    if (st) { /* nothing half-read survives a failure */
        memset(&out->kv, 0, sizeof out->kv);
        out->kv_known = false;
    }
    return st;
}

rf_status rf_hf_config_load(const char *path, rf_hf_config *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    out->tie_word_embeddings = -1;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return rf_error_set(err, RF_ERR_IO, "%s: not a regular file", path);
    char *text = NULL;
    size_t len = 0;
    rf_status st = rf_read_file(path, RF_HF_CONFIG_MAX_BYTES, &text, &len, err);
    if (st) return st;
    st = rf_hf_config_parse(text, len, path, out, err);
    free(text);
    return st;
}
