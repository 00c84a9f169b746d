/* roles.c: the tensor-name classifier (see roles.h for the patterns and their order). */
#include "analysis/roles.h"

#include <stdbool.h>
#include <string.h>

/* name[0..n) contains the NUL-terminated s */
static bool contains(const char *name, size_t n, const char *s) {
    size_t k = strlen(s);
    if (k > n) return false;
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(name + i, s, k) == 0) return true;
    return false;
}

static bool starts(const char *name, size_t n, const char *s) {
    size_t k = strlen(s);
    return k <= n && memcmp(name, s, k) == 0;
}

static bool seg_is(const char *seg, size_t n, const char *s) {
    return strlen(s) == n && memcmp(seg, s, n) == 0;
}

/* The '.'-separated segments of a name. */
typedef struct segs {
    const char *p[64];
    size_t n[64];
    size_t count;
} segs;

static void split(const char *name, size_t len, segs *s) {
    s->count = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len && s->count < 64; i++) {
        if (i == len || name[i] == '.') {
            s->p[s->count] = name + start;
            s->n[s->count] = i - start;
            s->count++;
            start = i + 1;
        }
    }
}

static bool any_seg(const segs *s, const char *const *names) {
    for (size_t i = 0; i < s->count; i++)
        for (const char *const *q = names; *q; q++)
            if (seg_is(s->p[i], s->n[i], *q)) return true;
    return false;
}

/* The segment before the last ("embed_tokens" in model.embed_tokens.weight) is one of names. */
static bool owner_is(const segs *s, const char *const *names) {
    if (s->count < 2) return false;
    size_t i = s->count - 2;
    for (const char *const *q = names; *q; q++)
        if (seg_is(s->p[i], s->n[i], *q)) return true;
    return false;
}

static bool is_norm(const segs *s) {
    for (size_t i = 0; i < s->count; i++) {
        if (contains(s->p[i], s->n[i], "norm")) return true;
        if (starts(s->p[i], s->n[i], "ln_")) return true; /* GPT-2 style ln_1, ln_f */
    }
    return false;
}

rf_role rf_role_classify(const char *name, size_t len) {
    static const char *const vision_words[] = {"vision_tower",
                                               "vision_model",
                                               "multi_modal_projector",
                                               "embed_vision",
                                               "mm_projector",
                                               "vision_embed",
                                               NULL};
    static const char *const vision_segs[] = {"visual", "vision", NULL};
    static const char *const audio_words[] = {"audio_tower", "audio_model", "embed_audio",
                                              "audio_encoder", NULL};
    static const char *const audio_segs[] = {"audio", NULL};
    static const char *const embd_owners[] = {
        "embed_tokens", "token_embd", "tok_embeddings", "wte", "word_embeddings", "embed_in", NULL};
    static const char *const head_owners[] = {"lm_head", "embed_out", NULL};
    segs s;
    split(name, len, &s);

    for (const char *const *w = vision_words; *w; w++)
        if (contains(name, len, *w)) return RF_ROLE_VISION;
    if (any_seg(&s, vision_segs) || starts(name, len, "v.") || starts(name, len, "mm."))
        return RF_ROLE_VISION;
    for (const char *const *w = audio_words; *w; w++)
        if (contains(name, len, *w)) return RF_ROLE_AUDIO;
    if (any_seg(&s, audio_segs) || starts(name, len, "a.")) return RF_ROLE_AUDIO;

    if (contains(name, len, "embed_tokens_per_layer") || starts(name, len, "per_layer_token_embd."))
        return RF_ROLE_PER_LAYER_EMBD;
    if (owner_is(&s, embd_owners)) return RF_ROLE_TOKEN_EMBD;
    if (owner_is(&s, head_owners) || (s.count == 2 && seg_is(s.p[0], s.n[0], "output")))
        return RF_ROLE_HEAD;
    if (is_norm(&s)) return RF_ROLE_NORMS;
    return RF_ROLE_BODY;
}

const char *rf_role_name(rf_role r) {
    static const char *const names[RF_ROLE_COUNT] = {"token embeddings", "per-layer embeddings",
                                                     "transformer body", "vision tower",
                                                     "audio tower",      "norms",
                                                     "output head"};
    return (unsigned)r < RF_ROLE_COUNT ? names[r] : "?";
}

const char *rf_role_key(rf_role r) {
    static const char *const keys[RF_ROLE_COUNT] = {
        "token_embd", "per_layer_embd", "body", "vision", "audio", "norms", "head"};
    return (unsigned)r < RF_ROLE_COUNT ? keys[r] : "?";
}
