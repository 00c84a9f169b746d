/* weights.c: binding a model's tensors to rf_weights (weights.h): the embedding, the head and
 * every layer's tensors from the architecture's table, each checked for shape and type. */
#include "model/weights.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t dim_of(const rf_hparams *hp, rf_dim d) {
    switch (d) {
    case RF_DIM_E:
        return hp->n_embd;
    case RF_DIM_F:
        return hp->n_ff;
    case RF_DIM_Q:
        return (int64_t)hp->n_head * hp->head_dim_k;
    case RF_DIM_K:
        return (int64_t)hp->n_head_kv * hp->head_dim_k;
    case RF_DIM_V:
        return (int64_t)hp->n_head_kv * hp->head_dim_v;
    case RF_DIM_O:
        return (int64_t)hp->n_head * hp->head_dim_v;
    case RF_DIM_DK:
        return hp->head_dim_k;
    }
    return 0;
}

/* "[ne0, ne1, ...]" of t's n_dims dims, for messages. */
static const char *shape_str(const rf_gguf_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%llu", d ? ", " : "",
                              (unsigned long long)t->ne[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

static rf_status find_tensor(const rf_model *m, const char *name, const rf_gguf_tensor **t,
                             rf_error *err) {
    *t = rf_gguf_find_tensor(m->gguf, name);
    if (!*t) return rf_error_set(err, RF_ERR_MODEL, "%s: missing tensor '%s'", m->path, name);
    return RF_OK;
}

/* Binds tensor `name` as a matrix weight of shape [cols, rows] with a computable type. */
static rf_status bind_matrix(const rf_model *m, const char *name, int64_t cols, int64_t rows,
                             rf_weight *w, rf_error *err) {
    const rf_gguf_tensor *t;
    rf_status st = find_tensor(m, name, &t, err);
    if (st) return st;
    char shape[96];
    if (t->n_dims != 2 || t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)rows)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: tensor '%s' has shape %s, expected [%lld, %lld]", m->path, name,
                            shape_str(t, shape, sizeof shape), (long long)cols, (long long)rows);
    const rf_type_info *ti = rf_type_get(t->type);
    if (rf_vec_dot_type((rf_type)t->type) == RF_TYPE_COUNT)
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "%s: tensor '%s' has type %s, which roofline cannot compute with",
                            m->path, name, ti->name ? ti->name : "unknown");
    w->type = (rf_type)t->type;
    w->cols = cols;
    w->rows = rows;
    w->row_bytes = rf_type_row_bytes(t->type, (uint64_t)cols);
    w->data = t->data;
    return RF_OK;
}

/* Binds an F32 vector of n values. */
static rf_status bind_vector(const rf_model *m, const char *name, int64_t n, const float **out,
                             rf_error *err) {
    const rf_gguf_tensor *t;
    rf_status st = find_tensor(m, name, &t, err);
    if (st) return st;
    char shape[96];
    if (t->nelements != (uint64_t)n || t->ne[0] != (uint64_t)n) /* [n] or [n, 1, ...] */
        return rf_error_set(err, RF_ERR_MODEL, "%s: tensor '%s' has shape %s, expected [%lld]",
                            m->path, name, shape_str(t, shape, sizeof shape), (long long)n);
    if (t->type != RF_TYPE_F32)
        return rf_error_set(err, RF_ERR_UNSUPPORTED, "%s: tensor '%s' must be F32, found %s",
                            m->path, name, rf_type_get(t->type)->name);
    if ((uintptr_t)t->data % sizeof(float))
        return rf_error_set(err, RF_ERR_FORMAT, "%s: tensor '%s' data is not 4-byte aligned",
                            m->path, name);
    *out = t->data;
    return RF_OK;
}

/* n_vocab from token_embd's rows, checked against <arch>.vocab_size when the file has it. */
static rf_status read_n_vocab(rf_model *m, rf_error *err) {
    rf_hparams *hp = &m->hp;
    const rf_gguf_tensor *emb = rf_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!emb)
        return rf_error_set(err, RF_ERR_MODEL, "%s: missing tensor 'token_embd.weight'", m->path);
    if (emb->n_dims != 2 || emb->ne[1] > INT32_MAX)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: tensor 'token_embd.weight' must be 2-D with at most 2^31 rows",
                            m->path);
    hp->n_vocab = (int32_t)emb->ne[1];
    char key[96];
    snprintf(key, sizeof key, "%s.vocab_size", m->arch->name);
    uint32_t nv = (uint32_t)hp->n_vocab;
    rf_status st = rf_gguf_get_u32(m->gguf, key, false, &nv, err);
    if (st) return st;
    if (nv != (uint32_t)hp->n_vocab)
        return rf_error_set(err, RF_ERR_MODEL, "%s: %s = %u but token_embd.weight has %d rows",
                            m->path, key, nv, hp->n_vocab);
    return RF_OK;
}

/* token_embd, output (or the embedding again: a tied head) and output_norm. */
static rf_status bind_ends(const rf_model *m, rf_weights *w, rf_error *err) {
    const int64_t E = m->hp.n_embd, V = m->hp.n_vocab;
    rf_status st = bind_matrix(m, "token_embd.weight", E, V, &w->tok_embd, err);
    if (st) return st;
    if (rf_gguf_find_tensor(m->gguf, "output.weight")) {
        st = bind_matrix(m, "output.weight", E, V, &w->output, err);
        if (st) return st;
    } else {
        w->output = w->tok_embd;
        w->tied = 1;
    }
    return bind_vector(m, "output_norm.weight", E, &w->output_norm, err);
}

/* The tensors of layer il from the architecture's table. */
static rf_status bind_layer(const rf_model *m, int il, rf_layer *layer, rf_error *err) {
    const rf_arch *a = m->arch;
    char *L = (char *)layer;
    for (int i = 0; i < a->n_tensors; i++) {
        const rf_tensor_spec *ts = &a->tensors[i];
        char n[64];
        snprintf(n, sizeof n, "blk.%d.%s", il, ts->name);
        if (ts->optional && !rf_gguf_find_tensor(m->gguf, n)) continue;
        rf_status st;
        if (ts->matrix)
            st = bind_matrix(m, n, dim_of(&m->hp, ts->cols), dim_of(&m->hp, ts->rows),
                             (rf_weight *)(void *)(L + ts->field), err);
        else
            st = bind_vector(m, n, dim_of(&m->hp, ts->cols),
                             (const float **)(void *)(L + ts->field), err);
        if (st) return st;
    }
    return RF_OK;
}

rf_status rf_weights_bind(rf_model *m, rf_error *err) {
    const rf_hparams *hp = &m->hp;
    rf_weights *w = calloc(1, sizeof *w + (size_t)hp->n_layer * sizeof(rf_layer));
    if (!w) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    m->weights = w;
    if (m->arch->glu == RF_GLU_GELU) {
        w->gelu = malloc(65536 * sizeof *w->gelu);
        if (!w->gelu) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        rf_gelu_table(w->gelu);
    }
    rf_status st = read_n_vocab(m, err);
    if (st) return st;
    st = bind_ends(m, w, err);
    if (st) return st;
    for (int il = 0; il < hp->n_layer; il++) {
        st = bind_layer(m, il, &w->layers[il], err);
        if (st) return st;
    }
    return RF_OK;
}

void rf_weights_free(rf_weights *w) {
    if (!w) return;
    free(w->gelu);
    free(w);
}
