/* test_forward_tiny.c: the forward pass of every architecture (gemma3, qwen2, llama) on tiny
 * random-weight models written by our GGUF writer, against a naive double-precision reference
 * written here from the model definitions (docs/gemma3.md, docs/engine.md): embeddings (scaled
 * for Gemma), RMSNorm, Gemma's q/k and post norms, RoPE (NEOX for gemma3/qwen2, interleaved pairs
 * for llama; partial rotation), per-layer bases and sliding-window vs global layers (Gemma),
 * q/k/v/o biases, grouped-query attention, GELU-tanh or SiLU gated FFNs, tied and untied heads.
 * Per model: one 30-token batch, chunks of 3 and one token at a time all match the reference and
 * give bit-identical logits (chunked prefill equals token-by-token decode), and every kernel
 * table this CPU runs gives the scalar table's logits within tolerance. Bad hyperparameters and
 * tensors of qwen2/llama files are refused by name (NaN base, zero eps, YaRN, Llama 3 rope factors,
 * vocab_size mismatch, bias shapes, missing tensors, odd rope dims, KV heads). Also: the KV ring
 * buffer (window 4, chunks of 3, 30 positions), batched multi-sequence steps equal to
 * single-sequence ones, truncation, rf_decode's argument checks, and NaN/Inf logits flagged per
 * output.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/context.h"
#include "model/model_int.h"
#include "tiny_model.h"

/* ---- naive reference ---- */

typedef struct ref {
    const rf_hparams *hp;
    const rf_model *m;
} ref;

/* Dequantized copy of a tensor (rows x cols floats); caller frees. */
static float *deq(const rf_model *m, const char *name, int64_t *rows, int64_t *cols) {
    const rf_gguf_tensor *t = rf_gguf_find_tensor(rf_model_gguf(m), name);
    if (!t) return NULL;
    int64_t c = (int64_t)t->ne[0], r = (int64_t)(t->nelements / t->ne[0]);
    float *out = malloc((size_t)(r * c) * sizeof *out);
    size_t rb = rf_type_row_bytes(t->type, t->ne[0]);
    for (int64_t i = 0; i < r; i++)
        rf_ref_dequantize_row((rf_type)t->type, (const uint8_t *)t->data + i * rb, out + i * c, c);
    if (rows) *rows = r;
    if (cols) *cols = c;
    return out;
}

static float *layer_w(const rf_model *m, int il, const char *name) {
    char n[64];
    snprintf(n, sizeof n, "blk.%d.%s.weight", il, name);
    return deq(m, n, NULL, NULL);
}

static void rms(const double *x, const float *w, double *y, int n, double eps) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    double sc = 1.0 / sqrt(s / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * sc * w[i];
}

/* y[r] = sum_c W[r][c] x[c] */
static void mv(const float *W, const double *x, double *y, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int c = 0; c < cols; c++) s += (double)W[(size_t)r * cols + c] * x[c];
        y[r] = s;
    }
}

/* RoPE of the first n_rot values: NEOX pairs (i, i + n_rot/2), or (llama) pairs (2i, 2i + 1). */
static void rope(double *x, int pos, double base, int n_rot, int neox) {
    int h = n_rot / 2;
    for (int i = 0; i < h; i++) {
        double th = pos * pow(base, -2.0 * i / n_rot);
        double *a = neox ? x + i : x + 2 * i, *b = neox ? x + i + h : x + 2 * i + 1;
        double va = *a, vb = *b;
        *a = va * cos(th) - vb * sin(th);
        *b = va * sin(th) + vb * cos(th);
    }
}

/* Logits [n][V] for tokens[0..n) of one sequence, computed from scratch. */
static double *ref_forward(const rf_model *m, const int32_t *tok, int n) {
    const rf_hparams *hp = rf_model_hparams(m);
    const int E = hp->n_embd, F = hp->n_ff, H = hp->n_head, Hk = hp->n_head_kv, D = hp->head_dim_k;
    const int V = hp->n_vocab, nrot = hp->n_rot;
    const int gemma = strcmp(hp->arch, "gemma3") == 0, neox = strcmp(hp->arch, "llama") != 0;
    int64_t r, c;
    float *emb = deq(m, "token_embd.weight", &r, &c);
    float *head = deq(m, "output.weight", NULL, NULL); /* NULL: tied */
    float *onorm = deq(m, "output_norm.weight", NULL, NULL);
    double *x = calloc((size_t)n * E, sizeof *x), *h = calloc((size_t)E, sizeof *h);
    double *q = calloc((size_t)n * H * D, sizeof *q), *k = calloc((size_t)n * Hk * D, sizeof *k);
    double *v = calloc((size_t)n * Hk * D, sizeof *v), *att = calloc((size_t)H * D, sizeof *att);
    double *o = calloc((size_t)E, sizeof *o), *g = calloc((size_t)F, sizeof *g);
    double *u = calloc((size_t)F, sizeof *u), *sc = calloc((size_t)n, sizeof *sc);
    double *logits = calloc((size_t)n * V, sizeof *logits);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < E; i++)
            x[t * E + i] = emb[(size_t)tok[t] * E + i] * (gemma ? sqrt((double)E) : 1.0);
    for (int il = 0; il < hp->n_layer; il++) {
        float *an = layer_w(m, il, "attn_norm"), *wq = layer_w(m, il, "attn_q"),
              *wk = layer_w(m, il, "attn_k"), *wv = layer_w(m, il, "attn_v"),
              *qn = layer_w(m, il, "attn_q_norm"), *kn = layer_w(m, il, "attn_k_norm"),
              *wo = layer_w(m, il, "attn_output"), *pan = layer_w(m, il, "post_attention_norm"),
              *fn = layer_w(m, il, "ffn_norm"), *wg = layer_w(m, il, "ffn_gate"),
              *wu = layer_w(m, il, "ffn_up"), *wd = layer_w(m, il, "ffn_down"),
              *pfn = layer_w(m, il, "post_ffw_norm");
        char bn[64]; /* biases (NULL when absent) */
        snprintf(bn, sizeof bn, "blk.%d.attn_q.bias", il);
        float *bq = deq(m, bn, NULL, NULL);
        snprintf(bn, sizeof bn, "blk.%d.attn_k.bias", il);
        float *bk = deq(m, bn, NULL, NULL);
        snprintf(bn, sizeof bn, "blk.%d.attn_v.bias", il);
        float *bv = deq(m, bn, NULL, NULL);
        snprintf(bn, sizeof bn, "blk.%d.attn_output.bias", il);
        float *bo = deq(m, bn, NULL, NULL);
        const int swa = gemma && il % 3 < 2; /* tiny_model writes sliding_window_pattern 3 */
        const double base = swa ? 10000.0 : hp->rope_base;
        for (int t = 0; t < n; t++) {
            rms(x + t * E, an, h, E, hp->rms_eps);
            mv(wq, h, q + t * H * D, H * D, E);
            mv(wk, h, k + t * Hk * D, Hk * D, E);
            mv(wv, h, v + t * Hk * D, Hk * D, E);
            for (int i = 0; bq && i < H * D; i++) q[t * H * D + i] += bq[i];
            for (int i = 0; bk && i < Hk * D; i++) k[t * Hk * D + i] += bk[i];
            for (int i = 0; bv && i < Hk * D; i++) v[t * Hk * D + i] += bv[i];
            for (int j = 0; j < H; j++) {
                if (qn) rms(q + (t * H + j) * D, qn, q + (t * H + j) * D, D, hp->rms_eps);
                rope(q + (t * H + j) * D, t, base, nrot, neox);
            }
            for (int j = 0; j < Hk; j++) {
                if (kn) rms(k + (t * Hk + j) * D, kn, k + (t * Hk + j) * D, D, hp->rms_eps);
                rope(k + (t * Hk + j) * D, t, base, nrot, neox);
            }
        }
        for (int t = 0; t < n; t++) {
            for (int j = 0; j < H; j++) {
                int jk = j / (H / Hk);
                int lo = swa && t >= hp->sliding_window ? t - hp->sliding_window + 1 : 0;
                double mx = -1e300, sum = 0;
                for (int p = lo; p <= t; p++) {
                    double s = 0;
                    for (int i = 0; i < D; i++)
                        s += q[(t * H + j) * D + i] * k[(p * Hk + jk) * D + i] / sqrt((double)D);
                    sc[p] = s;
                    if (s > mx) mx = s;
                }
                for (int p = lo; p <= t; p++) sum += (sc[p] = exp(sc[p] - mx));
                for (int i = 0; i < D; i++) {
                    double a = 0;
                    for (int p = lo; p <= t; p++) a += sc[p] / sum * v[(p * Hk + jk) * D + i];
                    att[j * D + i] = a;
                }
            }
            mv(wo, att, o, E, H * D);
            for (int i = 0; bo && i < E; i++) o[i] += bo[i];
            if (pan) rms(o, pan, o, E, hp->rms_eps);
            for (int i = 0; i < E; i++) x[t * E + i] += o[i];
            rms(x + t * E, fn, h, E, hp->rms_eps);
            mv(wg, h, g, F, E);
            mv(wu, h, u, F, E);
            for (int i = 0; i < F; i++)
                g[i] =
                    (gemma
                         ? 0.5 * g[i] *
                               (1 + tanh(0.7978845608028654 * g[i] * (1 + 0.044715 * g[i] * g[i])))
                         : g[i] / (1 + exp(-g[i]))) *
                    u[i];
            mv(wd, g, o, E, F);
            if (pfn) rms(o, pfn, o, E, hp->rms_eps);
            for (int i = 0; i < E; i++) x[t * E + i] += o[i];
        }
        free(an);
        free(wq);
        free(wk);
        free(wv);
        free(qn);
        free(kn);
        free(wo);
        free(pan);
        free(fn);
        free(wg);
        free(wu);
        free(wd);
        free(pfn);
        free(bq);
        free(bk);
        free(bv);
        free(bo);
    }
    for (int t = 0; t < n; t++) {
        rms(x + t * E, onorm, h, E, hp->rms_eps);
        mv(head ? head : emb, h, logits + (size_t)t * V, V, E);
    }
    free(emb);
    free(head);
    free(onorm);
    free(x);
    free(h);
    free(q);
    free(k);
    free(v);
    free(att);
    free(o);
    free(g);
    free(u);
    free(sc);
    return logits;
}

/* ---- engine helpers ---- */

static rf_model *load_tiny(const tiny_spec *s, void **buf) {
    *buf = NULL;
    rf_error err = {0};
    /* rf_model_load wants a path: write a temp file */
    const char *path = tiny_write_file(s, "fwd");
    rf_model *m = NULL;
    if (!path || rf_model_load(path, &m, &err)) {
        fprintf(stderr, "load tiny: %s\n", err.msg);
        m = NULL;
    }
    if (path) remove(path); /* the mapping stays valid */
    return m;
}

/* A context on kernel table isa (-1: ROOFLINE_TEST_KERNELS, else the best). */
static rf_context *ctx_new_isa(const rf_model *m, int n_ctx, int n_batch, int n_seq, int isa) {
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_seq = n_seq;
    cp.n_threads = 2;
    const char *k = getenv("ROOFLINE_TEST_KERNELS");
    if (k && *k) cp.isa = rf_isa_parse(k);
    if (isa >= 0) cp.isa = isa;
    rf_context *c = NULL;
    rf_error err = {0};
    if (rf_context_new(m, &cp, &c, &err)) fprintf(stderr, "context: %s\n", err.msg);
    return c;
}

static rf_context *ctx_new(const rf_model *m, int n_ctx, int n_batch, int n_seq) {
    return ctx_new_isa(m, n_ctx, n_batch, n_seq, -1);
}

/* Feeds tok[0..n) to sequence 0 in chunks of `chunk`, storing every position's logits. */
static float *run_chunks(rf_context *c, const int32_t *tok, int n, int chunk, int V) {
    float *out = malloc((size_t)n * V * sizeof *out);
    int32_t pos[64], seq[64] = {0};
    int8_t lg[64];
    rf_error err = {0};
    for (int i0 = 0; i0 < n; i0 += chunk) {
        int len = n - i0 < chunk ? n - i0 : chunk;
        for (int j = 0; j < len; j++) {
            pos[j] = i0 + j;
            lg[j] = 1;
        }
        rf_batch b = {len, tok + i0, pos, seq, lg};
        CHECK_MSG(rf_decode(c, &b, &err) == RF_OK, "%s", err.msg);
        for (int j = 0; j < len; j++)
            memcpy(out + (size_t)(i0 + j) * V, rf_context_logits(c, j), (size_t)V * sizeof *out);
    }
    return out;
}

/* max |a - b| / (1 + max |b|) over n values */
static double rel_err(const float *a, const double *b, size_t n) {
    double md = 0, mb = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (d > md) md = d;
        if (fabs(b[i]) > mb) mb = fabs(b[i]);
    }
    return md / (1 + mb);
}

/* The model of spec s against the naive reference: one 30-token batch, chunks of 3 (through the
 * Gemma ring: window 4 + batch 3 = 7 slots) and one token at a time, each within tol of the
 * reference and all three bit-identical (batched and chunked prefill equal token-by-token
 * decode); then every other kernel table this CPU runs against the scalar table, within
 * table_tol (they differ by float order and, for the 8-bit activations, by the roundings that
 * order flips). */
static void test_against_reference(const tiny_spec *s, double tol, double table_tol) {
    void *buf = NULL;
    rf_model *m = load_tiny(s, &buf);
    CHECK_MSG(m != NULL, "%s %s: model does not load", s->arch, rf_type_get(s->wtype)->name);
    if (!m) return;
    const int V = rf_model_hparams(m)->n_vocab, n = 30;
    const char *tn = rf_type_get(s->wtype)->name;
    int32_t tok[30];
    uint64_t st = 7;
    for (int i = 0; i < n; i++) tok[i] = (int32_t)(rng_next(&st) % (uint64_t)V);
    double *want = ref_forward(m, tok, n);
    const int chunks[] = {30, 3, 1};
    float *got[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        rf_context *c = ctx_new(m, 40, chunks[i] < 30 ? chunks[i] : 32, 1);
        CHECK(c != NULL);
        if (!c) continue;
        if (chunks[i] == 3 && !tiny_llama_style(s)) CHECK(c->kv.cap[0] == 7 && c->kv.cap[2] == 40);
        got[i] = run_chunks(c, tok, n, chunks[i], V);
        double e = rel_err(got[i], want, (size_t)n * V);
        fprintf(stderr, "  %-6s %s E=%d chunk %2d: max rel error vs reference %.2e (tol %.0e)\n",
                s->arch, tn, s->n_embd, chunks[i], e, tol);
        CHECK_MSG(e <= tol, "%s %s chunk %d: error %.3e > %.1e", s->arch, tn, chunks[i], e, tol);
        if (i > 0 && got[0])
            CHECK_MSG(memcmp(got[i], got[0], (size_t)n * V * sizeof(float)) == 0,
                      "%s %s: chunks of %d give other logits than one batch", s->arch, tn,
                      chunks[i]);
        rf_context_free(c);
    }
    /* every table against the scalar one (one batch of 30) */
    rf_context *cs = ctx_new_isa(m, 40, 32, 1, RF_ISA_SCALAR);
    float *base = cs ? run_chunks(cs, tok, n, 30, V) : NULL;
    rf_context_free(cs);
    for (int isa = RF_ISA_SCALAR + 1; base && isa <= RF_ISA_NEON; isa++) {
        if (!rf_kernels_get((rf_isa)isa)) continue;
        rf_context *c = ctx_new_isa(m, 40, 32, 1, isa);
        if (!c) continue;
        float *o = run_chunks(c, tok, n, 30, V);
        double md = 0, mb = 0;
        for (size_t i = 0; i < (size_t)n * V; i++) {
            md = fmax(md, fabs((double)o[i] - base[i]));
            mb = fmax(mb, fabs((double)base[i]));
        }
        const double e = md / (1 + mb);
        fprintf(stderr, "  %-6s %s E=%d %s table vs scalar: max rel difference %.2e (tol %.0e)\n",
                s->arch, tn, s->n_embd, rf_isa_name((rf_isa)isa), e, table_tol);
        CHECK_MSG(e <= table_tol, "%s %s: %s table differs from scalar by %.3e", s->arch, tn,
                  rf_isa_name((rf_isa)isa), e);
        free(o);
        rf_context_free(c);
    }
    free(base);
    for (int i = 0; i < 3; i++) free(got[i]);
    free(want);
    rf_model_free(m);
    free(buf);
}

/* A spec of architecture arch with weights of type wtype and sizes E, F, head size D. */
static tiny_spec spec_of(const char *arch, rf_type wtype, int E, int F, int D) {
    tiny_spec s = tiny_default();
    s.arch = arch;
    s.wtype = wtype;
    s.n_embd = E;
    s.n_ff = F;
    s.head_dim = D;
    return s;
}

/* B sequences at different positions in one batch give exactly the logits they give alone. */
static void test_batched_equals_single(void) {
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q8_0;
    void *buf = NULL;
    rf_model *m = load_tiny(&s, &buf);
    CHECK(m != NULL);
    if (!m) return;
    const int V = rf_model_hparams(m)->n_vocab;
    enum { B = 3, N = 12 };
    int32_t tok[B][N];
    uint64_t st = 11;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++) tok[b][i] = (int32_t)(rng_next(&st) % (uint64_t)V);
    /* alone */
    float *alone[B];
    for (int b = 0; b < B; b++) {
        rf_context *c = ctx_new(m, 32, 8, 1);
        alone[b] = run_chunks(c, tok[b], N, 1, V);
        rf_context_free(c);
    }
    /* together: sequence b starts b steps late, so every step mixes positions */
    rf_context *c = ctx_new(m, 32, 8, B);
    int done[B] = {0};
    rf_error err = {0};
    int exact = 1;
    for (int step = 0; step < N + B; step++) {
        int32_t bt[B], bp[B], bs[B];
        int8_t bl[B];
        int n = 0;
        for (int b = 0; b < B; b++) {
            if (step < b || done[b] >= N) continue;
            bt[n] = tok[b][done[b]];
            bp[n] = done[b];
            bs[n] = b;
            bl[n] = 1;
            n++;
        }
        if (!n) continue;
        rf_batch batch = {n, bt, bp, bs, bl};
        CHECK_MSG(rf_decode(c, &batch, &err) == RF_OK, "%s", err.msg);
        for (int i = 0; i < n; i++) {
            int b = bs[i];
            exact &= memcmp(rf_context_logits(c, i), alone[b] + (size_t)done[b] * V,
                            (size_t)V * sizeof(float)) == 0;
            done[b]++;
        }
    }
    CHECK_MSG(exact, "batched logits differ from single-sequence logits");
    for (int b = 0; b < B; b++) free(alone[b]);
    rf_context_free(c);
    rf_model_free(m);
    free(buf);
}

static void test_decode_checks_and_truncate(void) {
    tiny_spec s = tiny_default();
    void *buf = NULL;
    rf_model *m = load_tiny(&s, &buf);
    CHECK(m != NULL);
    if (!m) return;
    const int V = rf_model_hparams(m)->n_vocab;
    rf_context *c = ctx_new(m, 16, 4, 2);
    rf_error err = {0};
    int32_t tok[4] = {2, 10, 20, 30}, pos[4] = {0, 1, 2, 3}, seq[4] = {0, 0, 0, 0};
    int8_t lg[4] = {0, 0, 0, 1};
    rf_batch b = {4, tok, pos, seq, lg};
    CHECK(rf_decode(c, &b, &err) == RF_OK);
    float *l4 = malloc((size_t)V * sizeof *l4);
    memcpy(l4, rf_context_logits(c, 0), (size_t)V * sizeof *l4);
    CHECK(rf_context_n_outputs(c) == 1 && rf_context_logits(c, 1) == NULL);

    /* bad batches change nothing */
    int32_t bt = V, bp = 4, bs = 0;
    int8_t one = 1;
    rf_batch bad = {1, &bt, &bp, &bs, &one};
    CHECK(rf_decode(c, &bad, &err) == RF_ERR_ARG && strstr(err.msg, "id"));
    bt = 5;
    bp = 7;
    CHECK(rf_decode(c, &bad, &err) == RF_ERR_ARG && strstr(err.msg, "position"));
    bp = 4;
    bs = 2;
    CHECK(rf_decode(c, &bad, &err) == RF_ERR_ARG && strstr(err.msg, "sequence"));
    bs = 0;
    rf_batch big = {5, tok, pos, seq, lg};
    CHECK(rf_decode(c, &big, &err) == RF_ERR_ARG);
    CHECK(rf_context_seq_len(c, 0) == 4);

    /* context overflow on sequence 1 */
    int32_t p15[4] = {0, 1, 2, 3}, s1[4] = {1, 1, 1, 1};
    rf_batch b1 = {4, tok, p15, s1, lg};
    for (int k = 0; k < 4; k++) {
        for (int j = 0; j < 4; j++) p15[j] = 4 * k + j;
        CHECK(rf_decode(c, &b1, &err) == RF_OK);
    }
    int32_t p16 = 16, t1 = 3, q1 = 1;
    rf_batch over = {1, &t1, &p16, &q1, &one};
    CHECK(rf_decode(c, &over, &err) == RF_ERR_CONTEXT && strstr(err.msg, "context"));

    /* truncate sequence 0 to 3 positions and redo position 3: same logits */
    CHECK(rf_context_seq_truncate(c, 0, 3, &err) == RF_OK);
    int32_t t3 = 30, p3 = 3, s0 = 0;
    rf_batch redo = {1, &t3, &p3, &s0, &one};
    CHECK(rf_decode(c, &redo, &err) == RF_OK);
    CHECK(memcmp(rf_context_logits(c, 0), l4, (size_t)V * sizeof *l4) == 0);
    CHECK(rf_context_seq_truncate(c, 0, 9, &err) == RF_ERR_ARG);
    /* sequence 1 holds 16 positions; its ring (window 4 + batch 4 = 8 slots) no longer holds
     * what position 2 would need */
    CHECK(rf_context_seq_truncate(c, 1, 2, &err) == RF_ERR_ARG && strstr(err.msg, "window"));
    CHECK(!rf_context_seq_can_keep(c, 1, 2) && rf_context_seq_can_keep(c, 1, 12));
    CHECK(rf_context_seq_truncate(c, 1, 12, &err) == RF_OK);
    /* the ring now holds positions 8..11 only (its slots for 4..7 held 12..15): a second
     * truncation may not go back to 10, whose window starts at 7, though 12 - 8 = 4 would
     * suggest so; 11 (window from 8) is fine */
    CHECK(!rf_context_seq_can_keep(c, 1, 10));
    CHECK(rf_context_seq_truncate(c, 1, 10, &err) == RF_ERR_ARG && strstr(err.msg, "window"));
    CHECK(rf_context_seq_truncate(c, 1, 11, &err) == RF_OK && rf_context_seq_len(c, 1) == 11);
    CHECK(rf_context_seq_truncate(c, 1, 0, &err) == RF_OK && rf_context_seq_can_keep(c, 1, 0));
    free(l4);
    rf_context_free(c);
    rf_model_free(m);
    free(buf);
}

/* RF_OUT_TOP rows give exactly the best n_top (id, logit) pairs of the full logits, whether the
 * batch is all-top (fused head) or mixed with RF_OUT_LOGITS rows. */
static void test_top_outputs(void) {
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q8_0;
    void *buf = NULL;
    rf_model *m = load_tiny(&s, &buf);
    CHECK(m != NULL);
    if (!m) return;
    const int V = rf_model_hparams(m)->n_vocab;
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = 16;
    cp.n_batch = 4;
    cp.n_seq = 3;
    cp.n_top = 10;
    cp.n_threads = 2;
    rf_context *c = NULL;
    rf_error err = {0};
    CHECK(rf_context_new(m, &cp, &c, &err) == RF_OK);
    int32_t tok[3] = {30, 40, 50}, pos[3] = {0, 0, 0}, seq[3] = {0, 1, 2};
    int8_t full[3] = {RF_OUT_LOGITS, RF_OUT_LOGITS, RF_OUT_LOGITS};
    rf_batch b = {3, tok, pos, seq, full};
    CHECK(rf_decode(c, &b, &err) == RF_OK);
    float *want = malloc((size_t)3 * V * sizeof *want);
    for (int i = 0; i < 3; i++)
        memcpy(want + (size_t)i * V, rf_context_logits(c, i), (size_t)V * 4);
    const int8_t modes[2][3] = {{RF_OUT_TOP, RF_OUT_TOP, RF_OUT_TOP},
                                {RF_OUT_TOP, RF_OUT_LOGITS, RF_OUT_TOP}};
    for (int v = 0; v < 2; v++) {
        for (int i = 0; i < 3; i++) rf_context_seq_reset(c, i);
        rf_batch bt = {3, tok, pos, seq, modes[v]};
        CHECK(rf_decode(c, &bt, &err) == RF_OK);
        for (int i = 0; i < 3; i++) {
            const int32_t *ids;
            const float *vals;
            int32_t k = rf_context_top(c, i, &ids, &vals);
            if (modes[v][i] == RF_OUT_LOGITS) {
                CHECK(k == 0 && rf_context_logits(c, i) != NULL);
                continue;
            }
            CHECK(k == 10 && rf_context_logits(c, i) == NULL);
            const float *l = want + (size_t)i * V;
            int ok = 1;
            for (int j = 0; j < k; j++) {
                ok &= ids[j] >= 0 && ids[j] < V && vals[j] == l[ids[j]];
                if (j)
                    ok &= vals[j] < vals[j - 1] || (vals[j] == vals[j - 1] && ids[j] > ids[j - 1]);
            }
            /* nothing outside the list beats its last entry */
            int beaten = 0;
            for (int t = 0; t < V; t++) {
                int in = 0;
                for (int j = 0; j < k; j++) in |= ids[j] == t;
                beaten += !in && l[t] > vals[k - 1];
            }
            CHECK_MSG(ok && !beaten, "variant %d row %d: top list wrong", v, i);
        }
    }
    int8_t bad = 3;
    int32_t p1 = 1;
    rf_batch bb = {1, tok, &p1, seq, &bad};
    CHECK(rf_decode(c, &bb, &err) == RF_ERR_ARG && strstr(err.msg, "output mode"));
    free(want);
    rf_context_free(c);
    rf_model_free(m);
    free(buf);
}

/* rf_context_output_finite: false exactly for the outputs with a NaN or an infinity anywhere
 * among their logits, in every output mode (fused top-k head, full logits, mixed batches). A
 * single NaN logit is not among the best ones (NaN loses every comparison), so only a check of
 * every value finds it. */
static void test_nonfinite_outputs(void) {
    static const struct {
        const char *what;
        rf_type wtype;
        int untied;
        int64_t at; /* poisoned value of token_embd.weight (row 300), -1: none */
        float value;
        int finite[3]; /* expected per sequence; sequence 1 reads token 300 */
    } cases[] = {
        {"clean", RF_TYPE_F32, 0, -1, 0, {1, 1, 1}},
        {"tied, one NaN weight: one NaN logit in every row",
         RF_TYPE_F32,
         0,
         64 * 300 + 7,
         NAN,
         {0, 0, 0}},
        {"tied, one Inf weight (F16)", RF_TYPE_F16, 0, 64 * 300 + 7, INFINITY, {0, 0, 0}},
        {"untied, NaN input row: only its sequence", RF_TYPE_F32, 1, 64 * 300 + 7, NAN, {1, 0, 1}},
        {"untied, Inf input row (F16): only its sequence",
         RF_TYPE_F16,
         1,
         64 * 300 + 7,
         INFINITY,
         {1, 0, 1}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        tiny_spec s = tiny_default();
        s.wtype = cases[ci].wtype;
        s.untied = cases[ci].untied;
        if (cases[ci].at >= 0) {
            s.poison = "token_embd.weight";
            s.poison_at = cases[ci].at;
            s.poison_value = cases[ci].value;
        }
        void *buf = NULL;
        rf_model *m = load_tiny(&s, &buf);
        CHECK(m != NULL);
        if (!m) continue;
        rf_context_params cp = rf_context_default_params();
        cp.n_ctx = 16;
        cp.n_batch = 4;
        cp.n_seq = 3;
        cp.n_top = 8;
        cp.n_threads = 2;
        rf_context *c = NULL;
        rf_error err = {0};
        CHECK(rf_context_new(m, &cp, &c, &err) == RF_OK);
        if (!c) {
            rf_model_free(m);
            continue;
        }
        int32_t tok[3] = {30, 300, 50}, pos[3] = {0, 0, 0}, seq[3] = {0, 1, 2};
        const int8_t modes[3][3] = {{RF_OUT_TOP, RF_OUT_TOP, RF_OUT_TOP},
                                    {RF_OUT_LOGITS, RF_OUT_LOGITS, RF_OUT_LOGITS},
                                    {RF_OUT_TOP, RF_OUT_LOGITS, RF_OUT_TOP}};
        for (int v = 0; v < 3; v++) {
            for (int i = 0; i < 3; i++) rf_context_seq_reset(c, i);
            rf_batch b = {3, tok, pos, seq, modes[v]};
            CHECK(rf_decode(c, &b, &err) == RF_OK);
            for (int i = 0; i < 3; i++)
                CHECK_MSG(rf_context_output_finite(c, i) == (cases[ci].finite[i] != 0),
                          "%s, modes %d, sequence %d: finite %d, want %d", cases[ci].what, v, i,
                          rf_context_output_finite(c, i), cases[ci].finite[i]);
            CHECK(!rf_context_output_finite(c, 3) && !rf_context_output_finite(c, -1));
        }
        rf_context_free(c);
        rf_model_free(m);
        free(buf);
    }
}

/* Bad hyperparameters and tensors of the Llama-style architectures: refused with the key or
 * tensor named under the file's own prefix, never loaded. */
static void test_hostile_archs(void) {
    static const struct {
        const char *what, *arch;
        const char *f32_key;
        float f32_value;
        const char *odd_key, *odd_value, *odd_tensor, *u32_key;
        uint32_t u32_value;
        const char *drop, *reshape;
        int n_rot, n_head, n_head_kv;
        rf_status want;
        const char *msg;
    } cases[] = {
        {"NaN rope base", "qwen2", "qwen2.rope.freq_base", NAN, NULL, NULL, NULL, NULL, 0, NULL,
         NULL, 0, 0, 0, RF_ERR_MODEL, "qwen2.rope.freq_base = nan"},
        {"zero eps", "llama", "llama.attention.layer_norm_rms_epsilon", 0.0f, NULL, NULL, NULL,
         NULL, 0, NULL, NULL, 0, 0, 0, RF_ERR_MODEL, "llama.attention.layer_norm_rms_epsilon = 0"},
        {"YaRN scaling", "llama", NULL, 0, "llama.rope.scaling.type", "yarn", NULL, NULL, 0, NULL,
         NULL, 0, 0, 0, RF_ERR_UNSUPPORTED, "'yarn' is not supported"},
        {"Llama 3 rope factors", "llama", NULL, 0, NULL, NULL, "rope_freqs.weight", NULL, 0, NULL,
         NULL, 0, 0, 0, RF_ERR_UNSUPPORTED, "rope_freqs.weight"},
        {"vocab_size mismatch", "llama", NULL, 0, NULL, NULL, NULL, "llama.vocab_size", 999, NULL,
         NULL, 0, 0, 0, RF_ERR_MODEL, "llama.vocab_size = 999"},
        {"bias of the wrong shape", "qwen2", NULL, 0, NULL, NULL, NULL, NULL, 0, NULL,
         "blk.0.attn_q.bias", 0, 0, 0, RF_ERR_MODEL, "blk.0.attn_q.bias"},
        {"missing FFN gate", "qwen2", NULL, 0, NULL, NULL, NULL, NULL, 0, "blk.1.ffn_gate.weight",
         NULL, 0, 0, 0, RF_ERR_MODEL, "missing tensor 'blk.1.ffn_gate.weight'"},
        {"odd rope dims", "llama", NULL, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, 15, 0, 0,
         RF_ERR_MODEL, "llama.rope.dimension_count 15"},
        {"KV heads not dividing", "qwen2", NULL, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0, 6, 4,
         RF_ERR_MODEL, "head_count 6 is not a multiple of head_count_kv 4"},
        {"control: a sane file loads", "qwen2", NULL, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0,
         0, 0, RF_OK, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tiny_spec s = spec_of(cases[i].arch, RF_TYPE_F32, 96, 128, 16);
        s.n_head = cases[i].n_head ? cases[i].n_head : 6;
        s.n_head_kv = cases[i].n_head_kv ? cases[i].n_head_kv : 2;
        s.biases = 1;
        s.f32_key = cases[i].f32_key;
        s.f32_value = cases[i].f32_value;
        s.odd_key = cases[i].odd_key;
        s.odd_value = cases[i].odd_value;
        s.odd_tensor = cases[i].odd_tensor;
        s.u32_key = cases[i].u32_key;
        s.u32_value = cases[i].u32_value;
        s.drop = cases[i].drop;
        s.reshape = cases[i].reshape;
        s.n_rot = cases[i].n_rot;
        const char *path = tiny_write_file(&s, "hostile");
        CHECK(path != NULL);
        if (!path) continue;
        rf_model *m = NULL;
        rf_error err = {0};
        rf_status st = rf_model_load(path, &m, &err);
        remove(path);
        CHECK_MSG(st == cases[i].want, "%s: status %d, want %d (%s)", cases[i].what, st,
                  cases[i].want, err.msg);
        if (cases[i].msg)
            CHECK_MSG(strstr(err.msg, cases[i].msg) != NULL, "%s: message '%s' lacks '%s'",
                      cases[i].what, err.msg, cases[i].msg);
        rf_model_free(m);
    }
}

int main(void) {
    /* Tolerances: ~1.5-3x the error seen (f16 KV cache, GELU through f16, and for the quantized
     * types 8-bit activations make the difference from the double-precision reference). Between
     * kernel tables: float-order differences (~1e-7; up to ~1e-4 for F32 weights, dotted in float
     * lanes where the reference sums in double) for the float types and the 32-value formats on
     * these seeds; F16 activations and the K-quants' Q8_K rounding flip a few values (up to
     * ~7e-3). */
    static const struct {
        rf_type t;
        int E, F, D;
        double tol, table_tol;
    } g3[] = {
        {RF_TYPE_F32, 64, 96, 32, 1e-3, 5e-4},     {RF_TYPE_F16, 64, 96, 32, 1.5e-3, 5e-4},
        {RF_TYPE_BF16, 64, 96, 32, 8e-3, 1e-4},    {RF_TYPE_Q8_0, 64, 96, 32, 2e-2, 1e-2},
        {RF_TYPE_Q5_0, 64, 96, 32, 2e-2, 1e-2},    {RF_TYPE_Q4_K, 256, 256, 128, 1e-2, 1e-2},
        {RF_TYPE_Q6_K, 256, 256, 128, 1e-2, 1e-2},
    };
    for (size_t i = 0; i < sizeof g3 / sizeof g3[0]; i++) {
        tiny_spec s = spec_of("gemma3", g3[i].t, g3[i].E, g3[i].F, g3[i].D);
        test_against_reference(&s, g3[i].tol, g3[i].table_tol);
    }
    /* Qwen2-style: biases, GQA (6 heads over 2 KV heads), an untied head; Q5_0/Q8_0 as the real
     * file's body, Q4_K on 256-wide rows, F32 for the exact path */
    static const struct {
        const char *arch;
        rf_type t;
        int E, F, D, H, Hkv, n_rot, biases, untied;
        double tol, table_tol;
    } ll[] = {
        {"qwen2", RF_TYPE_F32, 96, 128, 16, 6, 2, 0, 1, 1, 1e-3, 5e-4},
        {"qwen2", RF_TYPE_Q5_0, 96, 128, 16, 6, 2, 0, 1, 1, 2e-2, 1e-2},
        {"qwen2", RF_TYPE_Q8_0, 96, 128, 16, 6, 2, 0, 1, 0, 2e-2, 1e-2},
        {"qwen2", RF_TYPE_Q4_K, 256, 256, 64, 4, 2, 0, 1, 1, 2e-2, 1e-2},
        /* Llama-style (SmolLM2): interleaved RoPE, GQA 3:1, tied head; Q4_1 is SmolLM2's body,
         * a partial rotation (n_rot 16 of 32) and biases on one model */
        {"llama", RF_TYPE_F32, 96, 128, 32, 3, 1, 0, 0, 0, 1e-3, 5e-4},
        {"llama", RF_TYPE_Q4_1, 96, 128, 32, 3, 1, 0, 0, 0, 3e-2, 1e-2},
        {"llama", RF_TYPE_Q8_0, 96, 128, 32, 3, 1, 16, 1, 1, 2e-2, 1e-2},
        {"llama", RF_TYPE_F16, 64, 96, 16, 4, 4, 0, 0, 1, 1.5e-3, 5e-4},
    };
    for (size_t i = 0; i < sizeof ll / sizeof ll[0]; i++) {
        tiny_spec s = spec_of(ll[i].arch, ll[i].t, ll[i].E, ll[i].F, ll[i].D);
        s.n_head = ll[i].H;
        s.n_head_kv = ll[i].Hkv;
        s.n_rot = ll[i].n_rot;
        s.biases = ll[i].biases;
        s.untied = ll[i].untied;
        s.rope_base = 1e4f;
        test_against_reference(&s, ll[i].tol, ll[i].table_tol);
    }
    test_hostile_archs();
    test_batched_equals_single();
    test_decode_checks_and_truncate();
    test_top_outputs();
    test_nonfinite_outputs();
    return check_summary("test_forward_tiny");
}
