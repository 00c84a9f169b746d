/* model.c: loading a model file: architecture lookup (the registry RF_ARCHS below), tokenizer,
 * hyperparameters and tensors (hparams.c, weights.c), chat template; the model's accessors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"
#include "model/weights.h"
#include "util/file.h"

/* The architecture registry: a new architecture is its file, src/model/NAME.c, defining
 * `const rf_arch rf_arch_NAME` (its tensors and layer over the shared blocks), and one line here.
 * A file is matched on general.architecture against each rf_arch's .name, in this order. */
#define RF_ARCHS(X)                                                                                \
    X(gemma3)                                                                                      \
    X(qwen2)                                                                                       \
    X(llama)

#define RF_ARCH_DECLARE(name) extern const rf_arch rf_arch_##name;
RF_ARCHS(RF_ARCH_DECLARE)
#define RF_ARCH_ENTRY(name) &rf_arch_##name,
static const rf_arch *const g_archs[] = {RF_ARCHS(RF_ARCH_ENTRY)};

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
    st = rf_weights_bind(m, err);
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
    rf_weights_free(m->weights);
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
