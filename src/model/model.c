/* model.c: loading a model file: architecture lookup (the registry below), tokenizer,
 * hyperparameters and tensors (hparams.c, blocks.c), tensor binding helpers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/blocks.h"
#include "model/model_int.h"
#include "util/file.h"

static const rf_arch *const g_archs[] = {&rf_arch_gemma3, &rf_arch_qwen2, &rf_arch_llama};

static char *dup_str(rf_str s) {
    char *p = malloc(s.len + 1);
    if (!p) return NULL;
    memcpy(p, s.ptr, s.len);
    p[s.len] = 0;
    return p;
}

/* The chat template: the file's own, recognised (model/chat.h), else the architecture's. */
static void detect_chat(rf_model *m) {
    const rf_gguf_kv *kv = rf_gguf_find_kv(m->gguf, "tokenizer.chat_template");
    char *t = kv && kv->type == RF_GGUF_STRING ? dup_str(kv->v.s) : NULL;
    rf_chat_template_detect(t, !strcmp(m->hp.arch, "gemma3") ? RF_CHAT_GEMMA : RF_CHAT_UNKNOWN,
                            &m->chat);
    free(t);
}

rf_status rf_model_load(const char *path, rf_model **out, rf_error *err) {
    *out = NULL;
    rf_status st;
    rf_model *m = calloc(1, sizeof *m);
    if (!m) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    m->path = strdup(path);
    if (!m->path) {
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    st = rf_gguf_open(path, &m->gguf, err);
    if (st) goto fail;
    rf_str arch = {0};
    st = rf_gguf_get_str(m->gguf, "general.architecture", true, &arch, err);
    if (st) goto fail;
    for (size_t i = 0; i < sizeof g_archs / sizeof g_archs[0]; i++)
        if (rf_str_eq(arch, g_archs[i]->name)) m->arch = g_archs[i];
    if (!m->arch) {
        char shown[80]; /* the file's bytes: a printable excerpt */
        st = rf_error_set(err, RF_ERR_UNSUPPORTED,
                          "%s: unsupported architecture '%s' (supported: gemma3, qwen2, llama)",
                          path, rf_printable(arch.ptr, (size_t)arch.len, shown, sizeof shown));
        goto fail;
    }
    snprintf(m->hp.arch, sizeof m->hp.arch, "%s", m->arch->name);
    st = rf_tokenizer_from_gguf(m->gguf, &m->tok, err);
    if (st) goto fail;
    st = rf_hparams_load(m, err);
    if (st) goto fail;
    st = rf_blk_bind(m, err);
    if (st) goto fail;
    if (m->hp.n_vocab != rf_tokenizer_n_vocab(m->tok)) {
        st = rf_error_set(err, RF_ERR_MODEL,
                          "%s: the vocabulary has %d tokens but the embedding has %d rows", path,
                          rf_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
        goto fail;
    }
    detect_chat(m);
    rf_gguf_prefetch(m->gguf); /* the weights will be read: start reading them now */
    *out = m;
    return RF_OK;
fail:
    rf_model_free(m);
    return st;
}

void rf_model_free(rf_model *m) {
    if (!m) return;
    rf_blk_free_weights(m->weights);
    rf_tokenizer_free(m->tok);
    rf_chat_template_free(&m->chat);
    rf_gguf_close(m->gguf);
    free(m->path);
    free(m);
}

const rf_hparams *rf_model_hparams(const rf_model *m) {
    return &m->hp;
}
const rf_tokenizer *rf_model_tokenizer(const rf_model *m) {
    return m->tok;
}
const rf_gguf *rf_model_gguf(const rf_model *m) {
    return m->gguf;
}
const rf_chat_template *rf_model_chat_template(const rf_model *m) {
    return &m->chat;
}
void rf_model_set_chat_family(rf_model *m, int family) {
    m->chat.family = (rf_chat_family)family;
}
const char *rf_model_path(const rf_model *m) {
    return m->path;
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

rf_status rf_model_bind_matrix(const rf_model *m, const char *name, int64_t cols, int64_t rows,
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

rf_status rf_model_bind_vector(const rf_model *m, const char *name, int64_t n, const float **out,
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
