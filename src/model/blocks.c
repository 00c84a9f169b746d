/* blocks.c: the building blocks of every architecture's forward pass (blocks.h): the scratch
 * layout, embeddings, RMSNorm, RoPE, the projections with shared activation quantization,
 * attention over a KV group through the cache, the gated FFN, the residual adds and the output
 * head. It reads the weights weights.c bound and calls nothing of model.c.
 */
#include "model/blocks.h"

#include <float.h>
#include <math.h>

/* ------------------------------------------------------------------------------------------ */
/* Scratch                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Attention tiles (see attend_item): keys per tile, (query, head) pairs and queries per item. */
#define RF_ATT_TILE 64
#define RF_ATT_QH   64
#define RF_ATT_QMAX 16

/* Floats of per-thread attention scratch: RF_ATT_QH accumulators of Dv. */
static size_t att_scratch_floats(const rf_hparams *hp) {
    return (size_t)RF_ATT_QH * (size_t)hp->head_dim_v;
}

static size_t carve(const rf_hparams *hp, int32_t n, int32_t n_threads, float *base,
                    rf_scratch *s) {
    const size_t E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    const size_t sizes[] = {n * E,
                            n * E,
                            (size_t)n * hp->n_head * hp->head_dim_k,
                            (size_t)n * hp->n_head_kv * hp->head_dim_k,
                            (size_t)n * hp->n_head_kv * hp->head_dim_v,
                            (size_t)n * hp->n_head * hp->head_dim_v,
                            n * E,
                            n * F,
                            n * F,
                            (size_t)n * 2 * (size_t)hp->n_rot,
                            n * E,
                            (size_t)n_threads * att_scratch_floats(hp)};
    float **ptrs[] = {&s->x, &s->h, &s->q, &s->k,    &s->v,  &s->att,
                      &s->o, &s->g, &s->u, &s->rope, &s->xo, &s->acc};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (base) *ptrs[i] = base + off;
        off += (sizes[i] + 15) & ~(size_t)15; /* 64-byte aligned slices */
    }
    return off;
}

size_t rf_blk_scratch_floats(const rf_hparams *hp, int32_t n_batch, int32_t n_threads) {
    rf_scratch s;
    return carve(hp, n_batch, n_threads, NULL, &s); /* attention works in tiles: no n_ctx term */
}

int64_t rf_blk_max_cols(const rf_hparams *hp) {
    int64_t cols = hp->n_embd;
    if (hp->n_ff > cols) cols = hp->n_ff;
    if ((int64_t)hp->n_head * hp->head_dim_v > cols) cols = (int64_t)hp->n_head * hp->head_dim_v;
    return cols;
}

size_t rf_blk_act_bytes(const rf_hparams *hp, int32_t n_batch) {
    /* F32 activations (for F32 weights) are the widest at 4 bytes per value. */
    return (size_t)n_batch * (size_t)rf_blk_max_cols(hp) * 4;
}

/* ------------------------------------------------------------------------------------------ */
/* Elementwise pieces                                                                          */
/* ------------------------------------------------------------------------------------------ */

/* y = x / sqrt(mean(x^2) + eps) * w; the sum of squares in double, as llama.cpp does. */
static void rms_norm(const float *x, const float *w, float *y, int n, float eps) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * scale * w[i];
}

/* cos/sin of position pos for n_rot/2 frequencies: theta_i = scale * pos * base^(-2i/n_rot), the
 * power stepped by repeated float multiplication as llama.cpp does. */
static void rope_table(float *cs, int32_t pos, float base, float scale, int n_rot) {
    int half = n_rot / 2;
    float step = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int i = 0; i < half; i++) {
        const float t = scale * theta;
        cs[i] = cosf(t);
        cs[half + i] = sinf(t);
        theta *= step;
    }
}

/* Rotation of the first n_rot values of one head by the angles of cs. */
static void rope_apply(float *x, const float *cs, int n_rot, rf_rope_style style) {
    const int half = n_rot / 2;
    const int stride = style == RF_ROPE_NEOX ? 1 : 2;   /* where pair i starts */
    const int other = style == RF_ROPE_NEOX ? half : 1; /* its second value */
    for (int i = 0; i < half; i++) {
        float *p = x + i * stride;
        const float a = p[0], b = p[other], c = cs[i], s = cs[half + i];
        p[0] = a * c - b * s;
        p[other] = a * s + b * c;
    }
}

static void add_bias(float *x, const float *b, int n) {
    for (int i = 0; i < n; i++) x[i] += b[i];
}

/* ------------------------------------------------------------------------------------------ */
/* Per-token work over the pool                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef struct tok_job {
    rf_fwd *f;
    void (*fn)(rf_fwd *f, int t, const void *arg);
    const void *arg;
} tok_job;

static void tok_worker(void *arg, int ith, int nth) {
    tok_job *j = arg;
    long b, e;
    rf_split((long)j->f->b->n, ith, nth, &b, &e);
    for (long t = b; t < e; t++) j->fn(j->f, (int)t, j->arg);
}

/* fn for every token of the batch: inline for one token, over the pool for more. */
static void per_token(rf_fwd *f, void (*fn)(rf_fwd *f, int t, const void *arg), const void *arg) {
    if (f->b->n == 1) {
        fn(f, 0, arg);
        return;
    }
    tok_job j = {f, fn, arg};
    rf_pool_run(f->c->pool, tok_worker, &j);
}

/* ------------------------------------------------------------------------------------------ */
/* Projections with shared activation quantization                                             */
/* ------------------------------------------------------------------------------------------ */

/* dst[i] = W[i] src for nw weights reading the same n activation rows: src is quantized once
 * per activation type (and not again while it stays current), and weights that share that type
 * run in one pool dispatch. */
static void project_n(rf_fwd *f, const rf_weight *const *w, int nw, const float *src, int64_t n,
                      float *const *dst, rf_prof_stage stage) {
    rf_context *c = f->c;
    if (c->widen.rows) { /* widened: the f32 rows as they are, every weight decoded per call */
        int64_t t = c->profiling ? rf_now_ns() : 0;
        const int64_t cols = w[0]->cols;
        rf_act x = {RF_TYPE_F32, cols, n, (size_t)cols * sizeof(float), (void *)(uintptr_t)src};
        int64_t stride[8];
        for (int i = 0; i < nw; i++) stride[i] = w[i]->rows;
        rf_matmul_n_widened(c->k, c->pool, w, nw, &x, dst, stride, &c->widen);
        rf_prof_mark(c, t, stage);
        return;
    }
    for (int i0 = 0; i0 < nw;) {
        int64_t t = c->profiling ? rf_now_ns() : 0;
        rf_type at = rf_vec_dot_type(w[i0]->type);
        int i1 = i0 + 1;
        while (i1 < nw && rf_vec_dot_type(w[i1]->type) == at) i1++;
        rf_act act = {at, w[i0]->cols, n, rf_type_row_bytes(at, (uint64_t)w[i0]->cols), c->act};
        if (f->act_src != src || f->act_type != at) {
            rf_act_quantize(c->k, c->pool, at, src, w[i0]->cols, w[i0]->cols, n, &act);
            f->act_src = src;
            f->act_type = at;
            t = rf_prof_mark(c, t, RF_PROF_QUANT);
        }
        int64_t stride[8];
        for (int i = i0; i < i1; i++) stride[i - i0] = w[i]->rows;
        rf_matmul_n(c->k, c->pool, w + i0, i1 - i0, &act, dst + i0, stride);
        rf_prof_mark(c, t, stage);
        i0 = i1;
    }
}

void rf_blk_project(rf_fwd *f, const rf_weight *w, const float *src, float *dst,
                    rf_prof_stage stage) {
    project_n(f, &w, 1, src, f->b->n, &dst, stage);
}

/* ------------------------------------------------------------------------------------------ */
/* Norms and residuals                                                                         */
/* ------------------------------------------------------------------------------------------ */

static void tok_norm(rf_fwd *f, int t, const void *arg) {
    const int E = f->hp->n_embd;
    rms_norm(f->s.x + (size_t)t * E, arg, f->s.h + (size_t)t * E, E, f->hp->rms_eps);
}

void rf_blk_norm(rf_fwd *f, const float *w) {
    int64_t t = f->c->profiling ? rf_now_ns() : 0;
    per_token(f, tok_norm, w);
    rf_prof_mark(f->c, t, RF_PROF_NORM);
}

typedef struct residual_arg {
    const float *bias, *post, *next;
} residual_arg;

static void tok_residual(rf_fwd *f, int t, const void *arg) {
    const residual_arg *r = arg;
    const int E = f->hp->n_embd;
    float *x = f->s.x + (size_t)t * E, *o = f->s.o + (size_t)t * E;
    if (r->bias) add_bias(o, r->bias, E);
    if (r->post) rms_norm(o, r->post, o, E, f->hp->rms_eps);
    for (int i = 0; i < E; i++) x[i] += o[i];
    if (r->next) rms_norm(x, r->next, f->s.h + (size_t)t * E, E, f->hp->rms_eps);
}

void rf_blk_residual(rf_fwd *f, const float *bias, const float *post_norm, const float *next_norm) {
    int64_t t = f->c->profiling ? rf_now_ns() : 0;
    residual_arg r = {bias, post_norm, next_norm};
    per_token(f, tok_residual, &r);
    rf_prof_mark(f->c, t, RF_PROF_NORM);
}

/* ------------------------------------------------------------------------------------------ */
/* Attention                                                                                   */
/* ------------------------------------------------------------------------------------------ */

void rf_blk_qkv(rf_fwd *f) {
    const rf_layer *L = f->L;
    const rf_weight *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *out[3] = {f->s.q, f->s.k, f->s.v};
    project_n(f, qkv, 3, f->s.h, f->b->n, out, RF_PROF_QKV);
}

static void tok_rope_cache(rf_fwd *f, int t, const void *arg) {
    const rf_rope_style style = *(const rf_rope_style *)arg;
    const rf_hparams *hp = f->hp;
    const rf_layer *L = f->L;
    const int H = hp->n_head, Hkv = hp->n_head_kv, Dk = hp->head_dim_k, Dv = hp->head_dim_v;
    const int QD = H * Dk, KD = Hkv * Dk, VD = Hkv * Dv, nr = hp->n_rot;
    const float *cs = f->s.rope + (size_t)t * 2 * nr + (hp->swa[f->il] ? 0 : nr);
    float *qt = f->s.q + (size_t)t * QD, *kt = f->s.k + (size_t)t * KD;
    float *vt = f->s.v + (size_t)t * VD;
    if (L->bq) add_bias(qt, L->bq, QD);
    if (L->bk) add_bias(kt, L->bk, KD);
    if (L->bv) add_bias(vt, L->bv, VD);
    for (int h = 0; h < H; h++) {
        float *q = qt + (size_t)h * Dk;
        if (L->q_norm) rms_norm(q, L->q_norm, q, Dk, hp->rms_eps);
        rope_apply(q, cs, nr, style);
        for (int i = 0; i < Dk; i++) q[i] *= hp->attn_scale;
    }
    uint16_t *kc = rf_kv_k(&f->c->kv, f->il, f->b->seq[t], f->b->pos[t]);
    uint16_t *vc = rf_kv_v(&f->c->kv, f->il, f->b->seq[t], f->b->pos[t]);
    for (int h = 0; h < Hkv; h++) {
        float *k = kt + (size_t)h * Dk;
        if (L->k_norm) rms_norm(k, L->k_norm, k, Dk, hp->rms_eps);
        rope_apply(k, cs, nr, style);
    }
    /* the kernels' F16 activation encoder: rf_f32_to_f16's bits, vectorised */
    f->c->k->quantize_act(RF_TYPE_F16, kt, kc, KD);
    f->c->k->quantize_act(RF_TYPE_F16, vt, vc, VD);
}

void rf_blk_rope_cache(rf_fwd *f, rf_rope_style style) {
    int64_t t = f->c->profiling ? rf_now_ns() : 0;
    per_token(f, tok_rope_cache, &style);
    rf_prof_mark(f->c, t, RF_PROF_ROPE);
}

/* Attention works on items: a block of nq query tokens of one sequence at consecutive positions
 * (consecutive in the batch: a prefill chunk; one token in decode) times g query heads sharing KV
 * head hk. Keys are visited in tiles of RF_ATT_TILE aligned positions. Per (query, head) the
 * arithmetic is that of one query alone (llama.cpp's tiled CPU flash attention,
 * docs/correctness.md): over the part of each tile the query sees, scores q.K (the kernels'
 * dot_f32 of the widened f16 row), the tile's max, the running max and sum rescaled by
 * exp(M_old - M_new) when it grows, exp_sum of the tile's scores, then the weighted sum of V in
 * key order (axpy_f32 of the widened rows), divided by the softmax sum at the end. So a token's
 * output has the same bits whatever block it is computed in: prefill chunks, batched decode and
 * single-token decode agree exactly. The row kernels (dot_f32_f16_rows, axpy_f16_rows) read the
 * f16 cache directly, a run of rows per call (the cache ring breaks a tile into runs). */

typedef struct att_item {
    int t0, nq; /* batch rows t0..t0+nq-1 */
    int h0, g;  /* query heads h0..h0+g-1, all of KV head h0 / group */
} att_item;

/* Rows from position j on that lie consecutively in layer il's cache (up to jmax). */
static int32_t kv_run(const rf_kv_cache *kv, int il, int32_t j, int32_t jmax) {
    const int32_t to_wrap = kv->cap[il] - j % kv->cap[il];
    return jmax - j + 1 < to_wrap ? jmax - j + 1 : to_wrap;
}

static void attend_item(const rf_fwd *f, const att_item *it, float *acc) {
    const rf_hparams *hp = f->hp;
    const rf_kernels *k = f->c->k;
    const rf_kv_cache *kv = &f->c->kv;
    const int H = hp->n_head, Dk = hp->head_dim_k, Dv = hp->head_dim_v, il = f->il;
    const int hk = it->h0 / (H / hp->n_head_kv), nq = it->nq, g = it->g, nqh = nq * g;
    const int32_t seq = f->b->seq[it->t0], p0 = f->b->pos[it->t0];
    float p[RF_ATT_QH][RF_ATT_TILE], S[RF_ATT_QH], M[RF_ATT_QH];
    int32_t lo[RF_ATT_QMAX];
    int32_t lo_min = p0;
    for (int i = 0; i < nq; i++) {
        const int32_t pos = p0 + i;
        lo[i] = hp->swa[il] && hp->sliding_window > 0 && pos >= hp->sliding_window
                    ? pos - hp->sliding_window + 1
                    : 0;
        if (lo[i] < lo_min) lo_min = lo[i];
    }
    for (int j = 0; j < nqh; j++) {
        S[j] = 0;
        M[j] = -INFINITY;
        for (int d = 0; d < Dv; d++) acc[(size_t)j * Dv + d] = 0;
    }
    const int32_t pos_max = p0 + nq - 1;
    for (int32_t t0 = lo_min - lo_min % RF_ATT_TILE; t0 <= pos_max; t0 += RF_ATT_TILE) {
        const int32_t tb = t0 + RF_ATT_TILE - 1 < pos_max ? t0 + RF_ATT_TILE - 1 : pos_max;
        for (int i = 0; i < nq; i++) {
            const int32_t a = t0 < lo[i] ? lo[i] : t0, b = tb < p0 + i ? tb : p0 + i;
            if (a > b) continue;
            const float *q = f->s.q + ((size_t)(it->t0 + i) * H + it->h0) * Dk;
            for (int h = 0; h < g; h++) {
                const int qh = i * g + h;
                for (int32_t j = a, r; j <= b; j += r) {
                    r = kv_run(kv, il, j, b);
                    k->dot_f32_f16_rows(q + (size_t)h * Dk,
                                        rf_kv_k(kv, il, seq, j) + (size_t)hk * Dk,
                                        (size_t)kv->k_row, r, Dk, p[qh] + (j - a));
                }
                float tmax = -INFINITY;
                for (int32_t j = a; j <= b; j++) /* as fmaxf: a NaN score leaves tmax */
                    tmax = p[qh][j - a] > tmax ? p[qh][j - a] : tmax;
                const float Mnew = fmaxf(M[qh], tmax);
                if (Mnew > M[qh]) {
                    const float ms = expf(M[qh] - Mnew);
                    for (int d = 0; d < Dv; d++) acc[(size_t)qh * Dv + d] *= ms;
                    S[qh] *= ms;
                }
                M[qh] = Mnew;
                S[qh] += k->exp_sum(p[qh], b - a + 1, Mnew);
                for (int32_t j = a, r; j <= b; j += r) {
                    r = kv_run(kv, il, j, b);
                    k->axpy_f16_rows(acc + (size_t)qh * Dv,
                                     rf_kv_v(kv, il, seq, j) + (size_t)hk * Dv, (size_t)kv->v_row,
                                     p[qh] + (j - a), r, Dv);
                }
            }
        }
    }
    for (int i = 0; i < nq; i++) {
        float *out = f->s.att + ((size_t)(it->t0 + i) * H + it->h0) * Dv;
        for (int h = 0; h < g; h++) {
            const int qh = i * g + h;
            const float inv = S[qh] == 0.0f ? 0.0f : 1.0f / S[qh];
            for (int d = 0; d < Dv; d++) out[(size_t)h * Dv + d] = acc[(size_t)qh * Dv + d] * inv;
        }
    }
}

/* The items of the batch, in order: blocks of consecutive rows of one sequence at consecutive
 * positions (at most qmax rows) times the head groups (g heads each). Every thread enumerates
 * the same list and computes the items whose index is ith modulo nth: interleaved, so the long
 * rows at the end of a causal prefill are spread over the threads. */
static void attention_worker(void *arg, int ith, int nth) {
    rf_fwd *f = arg;
    const rf_hparams *hp = f->hp;
    const rf_batch *b = f->b;
    const int H = hp->n_head, group = H / hp->n_head_kv;
    /* whole KV groups when there are enough items to keep every thread busy (prefill, batches),
     * else single heads so a single-token decode still spreads its heads evenly over the threads
     * (SmolLM2's 3 KV groups on 2 threads would split 2:1). The bits are the same either way. */
    const int g = (long)b->n * hp->n_head_kv >= 4L * nth && group <= RF_ATT_QH ? group : 1;
    const int qmax = RF_ATT_QH / g < RF_ATT_QMAX ? RF_ATT_QH / g : RF_ATT_QMAX;
    float *scratch = f->s.acc + (size_t)ith * att_scratch_floats(hp);
    long item = 0;
    for (int t = 0; t < b->n;) {
        int nq = 1;
        while (nq < qmax && t + nq < b->n && b->seq[t + nq] == b->seq[t] &&
               b->pos[t + nq] == b->pos[t] + nq)
            nq++;
        for (int h0 = 0; h0 < H; h0 += g, item++) {
            if (item % nth != ith) continue;
            const att_item it = {t, nq, h0, g};
            attend_item(f, &it, scratch);
        }
        t += nq;
    }
}

void rf_blk_attention(rf_fwd *f) {
    int64_t t = f->c->profiling ? rf_now_ns() : 0;
    rf_pool_run(f->c->pool, attention_worker, f);
    rf_prof_mark(f->c, t, RF_PROF_ATTN);
}

/* ------------------------------------------------------------------------------------------ */
/* FFN                                                                                         */
/* ------------------------------------------------------------------------------------------ */

static void tok_glu(rf_fwd *f, int t, const void *arg) {
    const size_t F = (size_t)f->hp->n_ff;
    float *g = f->s.g + t * F, *u = f->s.u + t * F;
    if (*(const rf_glu *)arg == RF_GLU_GELU)
        f->c->k->geglu(f->w->gelu, g, u, g, (int64_t)F);
    else
        f->c->k->swiglu(g, u, g, (int64_t)F);
}

void rf_blk_ffn(rf_fwd *f, rf_glu glu) {
    const rf_layer *L = f->L;
    const rf_weight *gu[2] = {&L->gate, &L->up};
    float *gu_out[2] = {f->s.g, f->s.u};
    project_n(f, gu, 2, f->s.h, f->b->n, gu_out, RF_PROF_UP);
    int64_t t = f->c->profiling ? rf_now_ns() : 0;
    per_token(f, tok_glu, &glu);
    rf_prof_mark(f->c, t, RF_PROF_GLU);
    rf_blk_project(f, &L->down, f->s.g, f->s.o, RF_PROF_DOWN);
}

void rf_blk_gqa_swiglu_layer(rf_fwd *f, rf_rope_style style) {
    const rf_layer *L = f->L;
    rf_blk_norm(f, L->attn_norm);
    rf_blk_qkv(f);
    rf_blk_rope_cache(f, style); /* + bq, bk, bv when present */
    rf_blk_attention(f);
    rf_blk_project(f, &L->wo, f->s.att, f->s.o, RF_PROF_WO);
    rf_blk_residual(f, L->bo, NULL, L->ffn_norm);
    rf_blk_ffn(f, RF_GLU_SILU);
    rf_blk_residual(f, NULL, NULL, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* The step                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* The head, only for the rows that asked for outputs: logits = W_out rms(x) * output_norm, then
 * the final softcap when the model has one. */
static void head(rf_fwd *f) {
    rf_context *c = f->c;
    const rf_hparams *hp = f->hp;
    const rf_weights *w = f->w;
    const rf_batch *b = f->b;
    const int n = b->n, E = hp->n_embd;
    int64_t tm = c->profiling ? rf_now_ns() : 0;
    int n_out = 0, all_top = 1;
    for (int t = 0; t < n; t++) {
        if (!b->logits || !b->logits[t]) continue;
        rms_norm(f->s.x + (size_t)t * E, w->output_norm, f->s.xo + (size_t)n_out * E, E,
                 hp->rms_eps);
        c->out_mode[n_out++] = b->logits[t];
        all_top &= b->logits[t] == RF_OUT_TOP;
    }
    c->n_out = n_out;
    rf_prof_mark(c, tm, RF_PROF_HEAD);
    if (!n_out) return;
    const size_t V = (size_t)hp->n_vocab, K = (size_t)c->n_top;
    if (all_top) {
        /* fused: no logits are written, each thread keeps its best candidates per row */
        int64_t th = c->profiling ? rf_now_ns() : 0;
        if (c->widen.rows) {
            rf_act x = {RF_TYPE_F32, E, n_out, (size_t)E * sizeof(float), f->s.xo};
            rf_matmul_topk_widened(c->k, c->pool, &w->output, &x, c->n_top, c->top_scratch,
                                   c->top_ids, c->top_vals, c->out_finite, &c->widen);
        } else {
            rf_type at = rf_vec_dot_type(w->output.type);
            rf_act act = {at, E, n_out, rf_type_row_bytes(at, (uint64_t)E), c->act};
            rf_act_quantize(c->k, c->pool, at, f->s.xo, E, E, n_out, &act);
            rf_matmul_topk(c->k, c->pool, &w->output, &act, c->n_top, c->top_scratch, c->top_ids,
                           c->top_vals, c->out_finite);
        }
        rf_prof_mark(c, th, RF_PROF_HEAD);
    } else {
        project_n(f, (const rf_weight *const[]){&w->output}, 1, f->s.xo, n_out,
                  (float *const[]){c->logits}, RF_PROF_HEAD);
        for (int i = 0; i < n_out; i++) {
            c->out_finite[i] = rf_all_finite(c->logits + i * V, (int64_t)V);
            if (c->out_mode[i] == RF_OUT_TOP)
                rf_topk_select(c->logits + i * V, (int64_t)V, c->n_top, c->top_scratch,
                               c->top_ids + i * K, c->top_vals + i * K);
        }
    }
    if (hp->final_softcap > 0) { /* monotonic: the selection above is unchanged by it */
        float cap = hp->final_softcap;
        for (int i = 0; i < n_out; i++) {
            if (c->out_mode[i] == RF_OUT_TOP)
                for (size_t j = 0; j < K; j++)
                    c->top_vals[i * K + j] = cap * tanhf(c->top_vals[i * K + j] / cap);
            else
                for (size_t j = 0; j < V; j++)
                    c->logits[i * V + j] = cap * tanhf(c->logits[i * V + j] / cap);
        }
    }
}

void rf_blk_forward(rf_context *c, const rf_batch *b) {
    rf_fwd f = {0};
    f.c = c;
    f.hp = &c->model->hp;
    f.w = c->model->weights;
    f.b = b;
    carve(f.hp, c->n_batch, c->n_threads, c->scratch, &f.s);
    const rf_hparams *hp = f.hp;
    const rf_weights *w = f.w;
    const int E = hp->n_embd, nr = hp->n_rot;
    int any_swa = 0;
    for (int il = 0; il < hp->n_layer; il++) any_swa |= hp->swa[il];
    int64_t tm = c->profiling ? rf_now_ns() : 0;
    for (int t = 0; t < b->n; t++) {
        const uint8_t *row =
            (const uint8_t *)w->tok_embd.data + (size_t)b->token[t] * w->tok_embd.row_bytes;
        float *x = f.s.x + (size_t)t * E;
        rf_ref_dequantize_row(w->tok_embd.type, row, x, E);
        if (hp->embd_scale != 1.0f)
            for (int i = 0; i < E; i++) x[i] *= hp->embd_scale;
        float *cs = f.s.rope + (size_t)t * 2 * nr;
        if (any_swa) rope_table(cs, b->pos[t], hp->rope_base_swa, 1.0f, nr);
        rope_table(cs + nr, b->pos[t], hp->rope_base, hp->rope_scale, nr);
    }
    rf_prof_mark(c, tm, RF_PROF_EMBED);
    for (int il = 0; il < hp->n_layer; il++) {
        f.il = il;
        f.L = &w->layers[il];
        c->model->arch->layer(&f);
    }
    head(&f);
}
