/* tokenizer_gguf.c: rf_tokenizer_from_gguf, a thin reader of the tokenizer.ggml.* keys of a GGUF
 * file into a description for rf_tokenizer_from_desc (tokenizer_desc.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer_impl.h"

/* Reads a special id key (any integer type) into *out, checked against the n_tokens of the
 * vocabulary here, where the value is known as stored (a u64 past INT64_MAX, an i64 equal to
 * RF_TOK_ID_ABSENT); absent -> RF_TOK_ID_ABSENT. */
static rf_status read_id(const rf_gguf *g, const char *key, uint64_t n_tokens, int64_t *out,
                         rf_error *err) {
    *out = RF_TOK_ID_ABSENT;
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return RF_OK;
    char shown[24];
    switch (kv->type) {
    case RF_GGUF_U8:
    case RF_GGUF_U16:
    case RF_GGUF_U32:
    case RF_GGUF_U64:
        if (kv->v.u >= n_tokens) {
            snprintf(shown, sizeof shown, "%llu", (unsigned long long)kv->v.u);
            return rf_tok_id_range_error(rf_gguf_name(g), key, shown, n_tokens, err);
        }
        *out = (int64_t)kv->v.u;
        return RF_OK;
    case RF_GGUF_I8:
    case RF_GGUF_I16:
    case RF_GGUF_I32:
    case RF_GGUF_I64:
        if (kv->v.i < 0 || (uint64_t)kv->v.i >= n_tokens) {
            snprintf(shown, sizeof shown, "%lld", (long long)kv->v.i);
            return rf_tok_id_range_error(rf_gguf_name(g), key, shown, n_tokens, err);
        }
        *out = kv->v.i;
        return RF_OK;
    default:
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' must be an integer, found %s",
                            rf_gguf_name(g), key, rf_gguf_type_name(kv->type));
    }
}

static rf_status read_flag(const rf_gguf *g, const char *key, int *out, rf_error *err) {
    *out = -1;
    if (!rf_gguf_find_kv(g, key)) return RF_OK;
    bool v = false;
    rf_status st = rf_gguf_get_bool(g, key, true, &v, err);
    if (st) return st;
    *out = v ? 1 : 0;
    return RF_OK;
}

rf_status rf_tokenizer_from_gguf(const rf_gguf *g, rf_tokenizer **out, rf_error *err) {
    *out = NULL;
    rf_tokenizer_desc d = rf_tokenizer_desc_init();
    d.name = rf_gguf_name(g);
    rf_str model;
    rf_status st = rf_gguf_get_str(g, "tokenizer.ggml.model", true, &model, err);
    if (st) return st;
    char model_buf[65];
    size_t ml = model.len < 64 ? (size_t)model.len : 64;
    memcpy(model_buf, model.ptr, ml);
    model_buf[ml] = 0;
    if (model.len > 64 || memchr(model_buf, 0, ml)) model_buf[0] = '?';
    d.model = model_buf;

    const rf_gguf_kv *tokens = NULL, *scores = NULL, *types = NULL;
    if ((st = rf_gguf_get_arr(g, "tokenizer.ggml.tokens", RF_GGUF_STRING, true, &tokens, err)))
        return st;
    d.n_tokens = tokens->v.arr.n;
    d.tokens = tokens->v.arr.strs;

    /* Scores: f32 (or integers, which llama.cpp also accepts); optional. */
    scores = rf_gguf_find_kv(g, "tokenizer.ggml.scores");
    if (scores) {
        rf_gguf_type et = scores->type == RF_GGUF_ARRAY ? scores->v.arr.type : RF_GGUF_TYPE_COUNT;
        if (et != RF_GGUF_F32 && et != RF_GGUF_I32)
            return rf_error_set(err, RF_ERR_MODEL,
                                "%s: key 'tokenizer.ggml.scores' must be an array of f32", d.name);
    }
    if ((st = rf_gguf_get_arr(g, "tokenizer.ggml.token_type", RF_GGUF_I32, false, &types, err)))
        return st;
    /* Byte-level BPE: the pre-tokenizer and the merges (the family checks what it needs). */
    const rf_gguf_kv *merges = NULL;
    if ((st = rf_gguf_get_str(g, "tokenizer.ggml.pre", false, &d.pre, err)) ||
        (st = rf_gguf_get_arr(g, "tokenizer.ggml.merges", RF_GGUF_STRING, false, &merges, err)))
        return st;
    if (merges) {
        d.n_merges = merges->v.arr.n;
        d.merges = merges->v.arr.strs;
    }

    float *sc = NULL;
    int32_t *ty = NULL;
    if (scores) {
        d.n_scores = scores->v.arr.n;
        sc = malloc((d.n_scores ? d.n_scores : 1) * sizeof *sc);
        if (!sc) return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory");
        for (uint64_t i = 0; i < d.n_scores; i++) sc[i] = (float)rf_gguf_arr_float(scores, i);
        d.scores = sc;
    }
    if (types) {
        d.n_types = types->v.arr.n;
        ty = malloc((d.n_types ? d.n_types : 1) * sizeof *ty);
        if (!ty) {
            free(sc);
            return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory");
        }
        for (uint64_t i = 0; i < d.n_types; i++) {
            int64_t v = rf_gguf_arr_int(types, i);
            ty[i] = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
        }
        d.types = ty;
    }

    if ((st = read_id(g, "tokenizer.ggml.bos_token_id", d.n_tokens, &d.bos, err)) ||
        (st = read_id(g, "tokenizer.ggml.eos_token_id", d.n_tokens, &d.eos, err)) ||
        (st = read_id(g, "tokenizer.ggml.unknown_token_id", d.n_tokens, &d.unk, err)) ||
        (st = read_id(g, "tokenizer.ggml.padding_token_id", d.n_tokens, &d.pad, err)) ||
        (st = read_id(g, "tokenizer.ggml.eot_token_id", d.n_tokens, &d.eot, err)) ||
        (st = read_id(g, "tokenizer.ggml.eom_token_id", d.n_tokens, &d.eom, err)) ||
        (st = read_flag(g, "tokenizer.ggml.add_bos_token", &d.add_bos, err)) ||
        (st = read_flag(g, "tokenizer.ggml.add_eos_token", &d.add_eos, err)) ||
        (st = read_flag(g, "tokenizer.ggml.add_space_prefix", &d.add_space_prefix, err)))
        goto done;
    st = rf_tokenizer_from_desc(&d, out, err);
done:
    free(sc);
    free(ty);
    return st;
}
