/* tokenizer_desc.c: building a tokenizer from a description (rf_tokenizer_from_desc, see
 * tokenizer_int.h): the family registry and its defaults, the checks of the vocabulary (array
 * lengths, texts, scores, types, special ids and flags), the text -> id hash table and the byte
 * fallback; then the end-of-generation set (tokenizer_eog.c), the special-token automaton
 * (tokenizer_special.c) and the family's own tables (its vtable's init).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer_impl.h"
#include "util/file.h"

/* The families. A new one adds its vtable here. */
static const rf_tokenizer_vtable *const k_families[] = {&rf_tokenizer_spm_vtable,
                                                        &rf_tokenizer_bpe_vtable};

/* Per-family defaults for keys the file leaves out (llama.cpp's). */
typedef struct family_defaults {
    const char *model;
    int64_t bos, eos, unk;
    bool add_bos, add_eos, add_space_prefix;
} family_defaults;

static const family_defaults k_defaults[] = {
    {"llama", 1, 2, 0, true, false, true},
    {"gpt2", 11, 11, -1, false, false, false},
};

rf_tokenizer_desc rf_tokenizer_desc_init(void) {
    rf_tokenizer_desc d;
    memset(&d, 0, sizeof d);
    d.bos = d.eos = d.unk = d.pad = d.eot = d.eom = RF_TOK_ID_ABSENT;
    d.add_bos = d.add_eos = d.add_space_prefix = -1;
    return d;
}

static bool is_upper_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* A special id out of range: shown is the value as it was stored. */
rf_status rf_tok_id_range_error(const char *name, const char *key, const char *shown, uint64_t n,
                                rf_error *err) {
    return rf_error_set(err, RF_ERR_MODEL,
                        "%s: key '%s' = %s is out of range (vocabulary of %llu tokens)",
                        name ? name : "tokenizer", key, shown, (unsigned long long)n);
}

static rf_status check_id(const rf_tokenizer_desc *d, const char *key, int64_t v, int64_t dflt,
                          uint64_t n, int32_t *out, rf_error *err) {
    if (v == RF_TOK_ID_ABSENT) {
        *out = (dflt >= 0 && (uint64_t)dflt < n) ? (int32_t)dflt : -1;
        return RF_OK;
    }
    if (v < 0 || (uint64_t)v >= n) {
        char shown[24];
        snprintf(shown, sizeof shown, "%lld", (long long)v);
        return rf_tok_id_range_error(d->name, key, shown, n, err);
    }
    *out = (int32_t)v;
    return RF_OK;
}

/* The text -> id table; fails when two tokens have the same text. */
static rf_status build_hash(rf_tokenizer *t, const char *name, rf_error *err) {
    uint64_t slots = 1;
    while (slots < 2 * (uint64_t)t->n_vocab) slots *= 2;
    t->hash = malloc(slots * sizeof *t->hash);
    if (!t->hash) return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (hash table)");
    memset(t->hash, 0xff, slots * sizeof *t->hash);
    t->hash_mask = slots - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *s = t->pool + t->off[id];
        size_t n = rf_tok_len(t, id);
        uint64_t i = rf_tok_hash_bytes(s, n) & t->hash_mask;
        while (t->hash[i] >= 0) {
            int32_t o = t->hash[i];
            if (rf_tok_len(t, o) == n && memcmp(t->pool + t->off[o], s, n) == 0) {
                char shown[80];
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: key 'tokenizer.ggml.tokens': tokens %d and %d have the "
                                    "same text '%s'",
                                    name, o, id, rf_printable(s, n, shown, sizeof shown));
            }
            i = (i + 1) & t->hash_mask;
        }
        t->hash[i] = id;
    }
    return RF_OK;
}

/* The family of d->model (its vtable, and its defaults for absent keys: NULL when none). */
static rf_status find_family(const rf_tokenizer_desc *d, const char *name,
                             const rf_tokenizer_vtable **vt_out, const family_defaults **df_out,
                             rf_error *err) {
    if (!d->model)
        return rf_error_set(err, RF_ERR_MODEL, "%s: missing metadata key 'tokenizer.ggml.model'",
                            name);
    const rf_tokenizer_vtable *vt = NULL;
    for (size_t i = 0; i < RF_TOK_COUNT(k_families); i++)
        if (strcmp(k_families[i]->model, d->model) == 0) vt = k_families[i];
    if (!vt) {
        char shown[80], list[128] = "";
        for (size_t i = 0; i < RF_TOK_COUNT(k_families); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     k_families[i]->model);
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "%s: key 'tokenizer.ggml.model': unsupported tokenizer model '%s' "
                            "(supported: %s)",
                            name, rf_printable(d->model, strlen(d->model), shown, sizeof shown),
                            list);
    }
    const family_defaults *df = NULL;
    for (size_t i = 0; i < RF_TOK_COUNT(k_defaults); i++)
        if (strcmp(k_defaults[i].model, d->model) == 0) df = &k_defaults[i];
    *vt_out = vt;
    *df_out = df;
    return RF_OK;
}

/* The array lengths: tokens present and not too many, scores and types as many as tokens. */
static rf_status check_lengths(const rf_tokenizer_desc *d, const char *name, rf_error *err) {
    uint64_t n = d->n_tokens;
    if (n == 0 || !d->tokens)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.tokens' is empty", name);
    if (n > (uint64_t)INT32_MAX - 1)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.tokens' has %llu tokens",
                            name, (unsigned long long)n);
    if (d->scores && d->n_scores != n)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: key 'tokenizer.ggml.scores' has %llu entries, "
                            "'tokenizer.ggml.tokens' %llu",
                            name, (unsigned long long)d->n_scores, (unsigned long long)n);
    if (d->types && d->n_types != n)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: key 'tokenizer.ggml.token_type' has %llu entries, "
                            "'tokenizer.ggml.tokens' %llu",
                            name, (unsigned long long)d->n_types, (unsigned long long)n);
    return RF_OK;
}

/* Texts: allocates the vocabulary's arrays and copies every text into the pool; empty ones
 * become "[EMPTY_<id>]" as in llama.cpp. */
static rf_status copy_texts(rf_tokenizer *t, const rf_tokenizer_desc *d, const char *name,
                            rf_error *err) {
    uint64_t n = d->n_tokens;
    size_t pool_size = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = d->tokens[i].len;
        if (len > 0 && !d->tokens[i].ptr)
            return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.tokens'[%llu] is NULL",
                                name, (unsigned long long)i);
        if (len > UINT32_MAX)
            return rf_error_set(err, RF_ERR_MODEL,
                                "%s: key 'tokenizer.ggml.tokens'[%llu] is too long", name,
                                (unsigned long long)i);
        pool_size += (len ? len : 24) + 1;
    }
    t->pool = malloc(pool_size);
    t->off = malloc((n + 1) * sizeof *t->off);
    t->scores = malloc(n * sizeof *t->scores);
    t->types = malloc(n);
    t->attr = malloc(n);
    if (!t->pool || !t->off || !t->scores || !t->types || !t->attr)
        return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (%llu tokens)",
                            (unsigned long long)n);
    size_t pos = 0;
    for (uint64_t i = 0; i < n; i++) {
        t->off[i] = pos;
        const rf_str s = d->tokens[i];
        if (s.len) {
            memcpy(t->pool + pos, s.ptr, s.len);
            pos += s.len;
        } else {
            pos += (size_t)sprintf(t->pool + pos, "[EMPTY_%llu]", (unsigned long long)i);
        }
        t->pool[pos++] = 0;
    }
    t->off[n] = pos;
    return RF_OK;
}

/* Scores (no NaN), stored types and the attributes they give; byte tokens must read <0xHH>. */
static rf_status copy_scores_types(rf_tokenizer *t, const rf_tokenizer_desc *d, const char *name,
                                   rf_error *err) {
    static const uint8_t k_attr[7] = {0,
                                      RF_TOKATTR_NORMAL,
                                      RF_TOKATTR_UNKNOWN,
                                      RF_TOKATTR_CONTROL,
                                      RF_TOKATTR_USER_DEFINED,
                                      RF_TOKATTR_UNUSED,
                                      RF_TOKATTR_BYTE};
    for (uint64_t i = 0; i < d->n_tokens; i++) {
        float sc = d->scores ? d->scores[i] : 0.0f;
        if (isnan(sc))
            return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.scores'[%llu] is NaN",
                                name, (unsigned long long)i);
        t->scores[i] = sc;
        int32_t ty = d->types ? d->types[i] : RF_TOKEN_NORMAL;
        if (ty < 0 || ty > RF_TOKEN_BYTE) ty = RF_TOKEN_UNDEFINED; /* as llama.cpp */
        t->types[i] = (uint8_t)ty;
        t->attr[i] = k_attr[ty];
        if (ty == RF_TOKEN_BYTE) {
            const char *s = t->pool + t->off[i];
            size_t len = rf_tok_len(t, (int32_t)i);
            if (len != 6 || memcmp(s, "<0x", 3) != 0 || !is_upper_hex(s[3]) ||
                !is_upper_hex(s[4]) || s[5] != '>') {
                char shown[24];
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: key 'tokenizer.ggml.tokens'[%llu] is a byte token "
                                    "(token_type 6) but its text '%s' is not <0xHH>",
                                    name, (unsigned long long)i,
                                    rf_printable(s, len, shown, sizeof shown));
            }
        }
    }
    return RF_OK;
}

/* Special ids and flags: the file's, else the family's defaults (df may be NULL). */
static rf_status read_specials(rf_tokenizer *t, const rf_tokenizer_desc *d,
                               const family_defaults *df, const char *name, rf_error *err) {
    uint64_t n = d->n_tokens;
    int64_t dbos = df ? df->bos : -1, deos = df ? df->eos : -1, dunk = df ? df->unk : -1;
    rf_status st;
    if ((st = check_id(d, "tokenizer.ggml.bos_token_id", d->bos, dbos, n, &t->special.bos, err)) ||
        (st = check_id(d, "tokenizer.ggml.eos_token_id", d->eos, deos, n, &t->special.eos, err)) ||
        (st = check_id(d, "tokenizer.ggml.unknown_token_id", d->unk, dunk, n, &t->special.unk,
                       err)) ||
        (st =
             check_id(d, "tokenizer.ggml.padding_token_id", d->pad, -1, n, &t->special.pad, err)) ||
        (st = check_id(d, "tokenizer.ggml.eot_token_id", d->eot, -1, n, &t->special.eot, err)) ||
        (st = check_id(d, "tokenizer.ggml.eom_token_id", d->eom, -1, n, &t->eom, err)))
        return st;
    t->add_bos = d->add_bos >= 0 ? d->add_bos != 0 : (df ? df->add_bos : false);
    t->add_eos = d->add_eos >= 0 ? d->add_eos != 0 : (df ? df->add_eos : false);
    t->add_space_prefix =
        d->add_space_prefix >= 0 ? d->add_space_prefix != 0 : (df ? df->add_space_prefix : false);
    if (t->add_bos && t->special.bos < 0)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: key 'tokenizer.ggml.add_bos_token' is true but the vocabulary "
                            "has no BOS token",
                            name);
    if (t->add_eos && t->special.eos < 0)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: key 'tokenizer.ggml.add_eos_token' is true but the vocabulary "
                            "has no EOS token",
                            name);
    return RF_OK;
}

/* Byte fallback: "<0xHH>", else the single byte as a token (llama.cpp's order). */
static void build_byte_ids(rf_tokenizer *t) {
    for (int b = 0; b < 256; b++) {
        char buf[7];
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        int32_t id = rf_tok_lookup(t, buf, 6);
        if (id < 0) {
            char c = (char)b;
            id = rf_tok_lookup(t, &c, 1);
        }
        t->byte_id[b] = id;
    }
}

rf_status rf_tokenizer_from_desc(const rf_tokenizer_desc *d, rf_tokenizer **out, rf_error *err) {
    *out = NULL;
    const char *name = d->name ? d->name : "tokenizer";
    const rf_tokenizer_vtable *vt = NULL;
    const family_defaults *df = NULL;
    rf_status st = find_family(d, name, &vt, &df, err);
    if (st) return st;
    st = check_lengths(d, name, err);
    if (st) return st;

    rf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory");
    t->vt = vt;
    t->n_vocab = (int32_t)d->n_tokens;
    if ((st = copy_texts(t, d, name, err)) || (st = copy_scores_types(t, d, name, err)) ||
        (st = read_specials(t, d, df, name, err)) || (st = build_hash(t, name, err)))
        goto fail;
    rf_tok_mark_eog(t);
    t->special.start_of_turn = rf_tok_find_text(t, "<start_of_turn>");
    if ((st = rf_tok_build_specials(t, name, err))) goto fail;
    build_byte_ids(t);
    if (vt->init && (st = vt->init(t, d, &t->family, err))) goto fail;
    *out = t;
    return RF_OK;

fail:
    rf_tokenizer_free(t);
    return st;
}
