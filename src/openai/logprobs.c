/* logprobs.c: see logprobs.h. */
#include "openai/logprobs.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/utf8.h"

#define LP_FLOOR -9999.0

rf_status rf_openai_lps_push(rf_openai_lps *l, const rf_event *ev) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        rf_openai_lp *v = realloc(l->v, cap * sizeof *v);
        if (!v) return RF_ERR_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    rf_openai_lp *e = &l->v[l->n++];
    e->token = ev->token;
    e->logprob = ev->logprob;
    e->n_top = ev->top_ids && ev->top_logprobs && ev->n_top > 0 ? ev->n_top : 0;
    if (e->n_top > RF_MAX_TOP_LOGPROBS) e->n_top = RF_MAX_TOP_LOGPROBS;
    for (int32_t i = 0; i < e->n_top; i++) {
        e->top_ids[i] = ev->top_ids[i];
        e->top_lps[i] = ev->top_logprobs[i];
    }
    return RF_OK;
}

void rf_openai_lps_free(rf_openai_lps *l) {
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* One token as shown: its raw piece bytes and a valid UTF-8 rendering of them. */
typedef struct tok_piece {
    char raw[256];
    char *bytes; /* raw, or a larger allocation */
    size_t len;
    rf_buf text; /* the piece with each bad byte as U+FFFD, NUL-terminated */
    int64_t chars;
} tok_piece;

static void piece_free(tok_piece *p) {
    if (p->bytes != p->raw) free(p->bytes);
    rf_buf_free(&p->text);
}

static rf_status piece_get(tok_piece *p, int32_t id, rf_openai_piece_fn fn, void *user) {
    p->bytes = p->raw;
    p->len = 0;
    p->chars = 0;
    rf_buf_init(&p->text, 0);
    int64_t n = fn ? fn(user, id, p->raw, (int64_t)sizeof p->raw) : -1;
    if (n >= (int64_t)sizeof p->raw) {
        p->bytes = malloc((size_t)n + 1);
        if (!p->bytes || fn(user, id, p->bytes, n + 1) != n) return RF_ERR_NOMEM;
    }
    p->len = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < p->len; p->chars++) {
        size_t k = rf_utf8_seq(p->bytes + i, p->len - i);
        rf_status st = k ? rf_buf_append(&p->text, p->bytes + i, k)
                         : rf_buf_append_str(&p->text, "\xEF\xBF\xBD");
        if (st) return st;
        i += k ? k : 1;
    }
    return rf_buf_terminate(&p->text);
}

static const char *piece_text(const tok_piece *p) {
    return p->text.len ? (const char *)p->text.data : "";
}

static json_t *lp_real(float lp) {
    return json_real(isfinite(lp) && lp > LP_FLOOR ? (double)lp : LP_FLOOR);
}

static json_t *bytes_json(const tok_piece *p) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < p->len; i++)
        if (json_array_append_new(a, json_integer((unsigned char)p->bytes[i]))) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

/* {"token", "logprob", "bytes"}, or NULL when out of memory. */
static json_t *chat_token(int32_t id, float lp, rf_openai_piece_fn fn, void *user) {
    tok_piece p;
    json_t *o = NULL;
    if (!piece_get(&p, id, fn, user))
        o = json_pack("{s:s%, s:o, s:o}", "token", piece_text(&p), p.text.len, "logprob",
                      lp_real(lp), "bytes", bytes_json(&p));
    piece_free(&p);
    return o;
}

static json_t *chat_json(const rf_openai_lp *v, size_t n, rf_openai_piece_fn fn, void *user) {
    json_t *content = json_array();
    for (size_t i = 0; content && i < n; i++) {
        json_t *tok = chat_token(v[i].token, v[i].logprob, fn, user);
        json_t *tops = tok ? json_array() : NULL;
        bool ok = tops != NULL;
        for (int32_t j = 0; ok && j < v[i].n_top; j++) /* the value is taken, also on failure */
            ok = !json_array_append_new(tops,
                                        chat_token(v[i].top_ids[j], v[i].top_lps[j], fn, user));
        if (ok) ok = !json_object_set_new(tok, "top_logprobs", json_incref(tops));
        if (ok) ok = !json_array_append_new(content, json_incref(tok));
        json_decref(tops);
        json_decref(tok);
        if (!ok) {
            json_decref(content);
            return NULL;
        }
    }
    return content ? json_pack("{s:o, s:n}", "content", content, "refusal") : NULL;
}

/* Adds {text: lp} to o unless o already has a token of that text (a higher one: the
 * alternatives come in descending order). */
static bool add_alt(json_t *o, int32_t id, float lp, rf_openai_piece_fn fn, void *user) {
    tok_piece p;
    bool ok = !piece_get(&p, id, fn, user);
    const char *t = piece_text(&p);
    if (ok && !json_object_getn(o, t, p.text.len))
        ok = !json_object_setn_new(o, t, p.text.len, lp_real(lp));
    piece_free(&p);
    return ok;
}

static json_t *completion_json(const rf_openai_lp *v, size_t n, rf_openai_piece_fn fn, void *user,
                               int64_t *off) {
    json_t *o = json_pack("{s:[], s:[], s:[], s:[]}", "tokens", "token_logprobs", "top_logprobs",
                          "text_offset");
    if (!o) return NULL;
    json_t *tokens = json_object_get(o, "tokens"), *lps = json_object_get(o, "token_logprobs"),
           *tops = json_object_get(o, "top_logprobs"), *offs = json_object_get(o, "text_offset");
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        tok_piece p;
        ok = !piece_get(&p, v[i].token, fn, user);
        ok = ok && !json_array_append_new(tokens, json_stringn(piece_text(&p), p.text.len)) &&
             !json_array_append_new(lps, lp_real(v[i].logprob)) &&
             !json_array_append_new(offs, json_integer(*off));
        *off += p.chars;
        piece_free(&p);
        json_t *alts = ok ? json_object() : NULL;
        ok = alts != NULL;
        for (int32_t j = 0; ok && j < v[i].n_top; j++)
            ok = add_alt(alts, v[i].top_ids[j], v[i].top_lps[j], fn, user);
        ok = ok && add_alt(alts, v[i].token, v[i].logprob, fn, user); /* the sampled one too */
        if (ok) ok = !json_array_append_new(tops, json_incref(alts));
        json_decref(alts);
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *rf_openai_logprobs_json(rf_openai_kind kind, const rf_openai_lp *v, size_t n,
                                rf_openai_piece_fn piece, void *user, int64_t *text_offset) {
    int64_t off = 0;
    if (kind == RF_OPENAI_CHAT) return chat_json(v, n, piece, user);
    return completion_json(v, n, piece, user, text_offset ? text_offset : &off);
}

json_t *rf_openai_with_logprobs(json_t *o, json_t *lp) {
    json_t *choice = json_array_get(json_object_get(o, "choices"), 0);
    if (!o || !lp || !choice || json_object_set_new(choice, "logprobs", lp)) {
        if (!choice) json_decref(lp);
        json_decref(o);
        return NULL;
    }
    return o;
}
