/* context.c: context creation, batch validation and the decode entry point. */
#include <stdlib.h>
#include <string.h>

#include "model/blocks.h"
#include "model/model_int.h"

rf_context_params rf_context_default_params(void) {
    rf_context_params p = {0};
    p.n_seq = 1;
    p.n_batch = 512;
    p.isa = -1;
    return p;
}

rf_status rf_context_new(const rf_model *m, const rf_context_params *p, rf_context **out,
                         rf_error *err) {
    *out = NULL;
    const rf_hparams *hp = &m->hp;
    rf_status st;
    int32_t n_ctx = p->n_ctx ? p->n_ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    if (n_ctx < 1 || n_ctx > (1 << 24))
        return rf_error_set(err, RF_ERR_ARG, "context size %d is not in [1, 2^24]", n_ctx);
    if (p->n_seq < 1 || p->n_seq > 4096)
        return rf_error_set(err, RF_ERR_ARG, "sequence count %d is not in [1, 4096]", p->n_seq);
    if (p->n_batch < 1 || p->n_batch > 65536)
        return rf_error_set(err, RF_ERR_ARG, "batch size %d is not in [1, 65536]", p->n_batch);
    int32_t n_outputs = p->n_outputs ? p->n_outputs : p->n_batch;
    if (n_outputs < 1 || n_outputs > p->n_batch)
        return rf_error_set(err, RF_ERR_ARG, "output count %d is not in [1, n_batch]", n_outputs);
    int32_t n_threads = p->n_threads ? p->n_threads : rf_cpu_physical_cores();
    if (p->n_top < 0 || p->n_top > 4096)
        return rf_error_set(err, RF_ERR_ARG, "n_top %d is not in [0, 4096]", p->n_top);
    if (n_threads < 1 || n_threads > 1024)
        return rf_error_set(err, RF_ERR_ARG, "thread count %d is not in [1, 1024]", n_threads);
    const rf_kernels *k = p->isa < 0 ? rf_kernels_best() : rf_kernels_get((rf_isa)p->isa);
    if (!k)
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "kernels '%s' are not available on this CPU "
                            "or in this build",
                            rf_isa_name((rf_isa)p->isa));

    rf_context *c = calloc(1, sizeof *c);
    if (!c) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    c->model = m;
    c->k = k;
    c->n_ctx = n_ctx;
    c->n_batch = p->n_batch;
    c->n_outputs = n_outputs;
    c->n_threads = n_threads;
    st = rf_pool_new(n_threads, &c->pool, err);
    if (st) goto fail;
    st = rf_kv_cache_init(&c->kv, hp, p->n_seq, n_ctx, p->n_batch, err);
    if (st) goto fail;
    c->scratch_n = rf_blk_scratch_floats(hp, p->n_batch, n_threads);
    c->act_n = rf_blk_act_bytes(hp, p->n_batch);
    c->scratch = aligned_alloc(64, ((c->scratch_n * sizeof(float)) + 63) & ~(size_t)63);
    c->act = aligned_alloc(64, (c->act_n + 63) & ~(size_t)63);
    c->logits = malloc((size_t)n_outputs * (size_t)hp->n_vocab * sizeof(float));
    c->n_top = p->n_top ? p->n_top : 64;
    c->top_ids = malloc((size_t)n_outputs * (size_t)c->n_top * sizeof(int32_t));
    c->top_vals = malloc((size_t)n_outputs * (size_t)c->n_top * sizeof(float));
    c->out_mode = calloc((size_t)n_outputs, 1);
    c->out_finite = calloc((size_t)n_outputs, 1);
    c->top_scratch = malloc(rf_matmul_topk_scratch_bytes(n_threads, n_outputs, c->n_top));
    if (p->widen) {
        c->widen.cols = (rf_blk_max_cols(hp) + 15) & ~(int64_t)15; /* 64-byte aligned rows */
        c->widen.rows =
            aligned_alloc(64, (size_t)n_threads * (size_t)c->widen.cols * sizeof(float));
    }
    if (!c->scratch || !c->act || !c->logits || !c->top_ids || !c->top_vals || !c->out_mode ||
        !c->out_finite || !c->top_scratch || (p->widen && !c->widen.rows)) {
        st = rf_error_set(err, RF_ERR_NOMEM, "context buffers: out of memory");
        goto fail;
    }
    *out = c;
    return RF_OK;
fail:
    rf_context_free(c);
    return st;
}

void rf_context_free(rf_context *c) {
    if (!c) return;
    rf_pool_free(c->pool);
    rf_kv_cache_free(&c->kv);
    free(c->scratch);
    free(c->act);
    free(c->logits);
    free(c->top_ids);
    free(c->top_vals);
    free(c->out_mode);
    free(c->out_finite);
    free(c->top_scratch);
    free(c->widen.rows);
    free(c);
}

/* Checks the batch against the context without changing anything. Positions of each sequence
 * must continue its cache in order: the k-th token of sequence s in the batch is at
 * seq_len[s] + k. */
static rf_status validate(const rf_context *c, const rf_batch *b, rf_error *err) {
    const int32_t n_vocab = c->model->hp.n_vocab;
    if (b->n < 1 || b->n > c->n_batch)
        return rf_error_set(err, RF_ERR_ARG, "batch of %d tokens is not in [1, %d]", b->n,
                            c->n_batch);
    int32_t n_out = 0;
    for (int32_t i = 0; i < b->n; i++) {
        int32_t s = b->seq[i];
        if (b->token[i] < 0 || b->token[i] >= n_vocab)
            return rf_error_set(err, RF_ERR_ARG, "batch token %d: id %d is not in [0, %d)", i,
                                b->token[i], n_vocab);
        if (s < 0 || s >= c->kv.n_seq)
            return rf_error_set(err, RF_ERR_ARG, "batch token %d: sequence %d is not in [0, %d)", i,
                                s, c->kv.n_seq);
        int32_t expect = c->kv.seq_len[s];
        for (int32_t j = 0; j < i; j++) expect += b->seq[j] == s;
        if (b->pos[i] != expect)
            return rf_error_set(err, RF_ERR_ARG,
                                "batch token %d: position %d, but sequence %d continues at %d", i,
                                b->pos[i], s, expect);
        if (b->pos[i] >= c->n_ctx)
            return rf_error_set(err, RF_ERR_CONTEXT,
                                "sequence %d: position %d does not fit the context of %d tokens", s,
                                b->pos[i], c->n_ctx);
        if (b->logits && b->logits[i]) {
            if (b->logits[i] != RF_OUT_LOGITS && b->logits[i] != RF_OUT_TOP)
                return rf_error_set(err, RF_ERR_ARG,
                                    "batch token %d: output mode %d is not one "
                                    "of RF_OUT_*",
                                    i, b->logits[i]);
            n_out++;
        }
    }
    if (n_out > c->n_outputs)
        return rf_error_set(err, RF_ERR_ARG, "batch asks for %d outputs, the context holds %d",
                            n_out, c->n_outputs);
    return RF_OK;
}

rf_status rf_decode(rf_context *c, const rf_batch *b, rf_error *err) {
    rf_status st = validate(c, b, err);
    if (st) return st;
    rf_blk_forward(c, b);
    if (c->profiling) {
        c->prof.calls++;
        c->prof.tokens += b->n;
    }
    for (int32_t i = 0; i < b->n; i++) c->kv.seq_len[b->seq[i]]++;
    return RF_OK;
}

const float *rf_context_logits(const rf_context *c, int32_t i) {
    if (i < 0 || i >= c->n_out || c->out_mode[i] != RF_OUT_LOGITS) return NULL;
    return c->logits + (size_t)i * (size_t)c->model->hp.n_vocab;
}

int32_t rf_context_top(const rf_context *c, int32_t i, const int32_t **ids, const float **vals) {
    if (i < 0 || i >= c->n_out || c->out_mode[i] != RF_OUT_TOP) return 0;
    *ids = c->top_ids + (size_t)i * (size_t)c->n_top;
    *vals = c->top_vals + (size_t)i * (size_t)c->n_top;
    return c->n_top;
}

bool rf_context_output_finite(const rf_context *c, int32_t i) {
    return i >= 0 && i < c->n_out && c->out_finite[i];
}

int32_t rf_context_n_top(const rf_context *c) {
    return c->n_top;
}

int32_t rf_context_n_outputs(const rf_context *c) {
    return c->n_out;
}

void rf_context_seq_reset(rf_context *c, int32_t seq) {
    if (seq >= 0 && seq < c->kv.n_seq) c->kv.seq_len[seq] = c->kv.ring_lo[seq] = 0;
}

/* The oldest position every sliding-window ring of seq still holds: its last cap positions,
 * but none below the floor a previous truncation left (the slots past that end held later
 * positions, since overwritten or stale). */
static int32_t ring_low(const rf_context *c, int32_t seq) {
    const rf_hparams *hp = &c->model->hp;
    int32_t len = c->kv.seq_len[seq], lo = c->kv.ring_lo[seq];
    for (int il = 0; il < hp->n_layer; il++) {
        int32_t cap = c->kv.cap[il];
        if (cap >= c->n_ctx || !hp->swa[il]) continue;
        if (len - cap > lo) lo = len - cap;
    }
    return lo;
}

bool rf_context_seq_can_keep(const rf_context *c, int32_t seq, int32_t n_keep) {
    if (seq < 0 || seq >= c->kv.n_seq) return false;
    if (n_keep < 0 || n_keep > c->kv.seq_len[seq]) return false;
    int32_t need = n_keep - c->model->hp.sliding_window + 1; /* oldest key position n_keep sees */
    if (need < 0) need = 0;
    return n_keep == 0 || need >= ring_low(c, seq);
}

rf_status rf_context_seq_truncate(rf_context *c, int32_t seq, int32_t n_keep, rf_error *err) {
    if (seq < 0 || seq >= c->kv.n_seq)
        return rf_error_set(err, RF_ERR_ARG, "sequence %d is not in [0, %d)", seq, c->kv.n_seq);
    int32_t len = c->kv.seq_len[seq];
    if (n_keep < 0 || n_keep > len)
        return rf_error_set(err, RF_ERR_ARG, "cannot keep %d positions of a sequence of %d", n_keep,
                            len);
    if (!rf_context_seq_can_keep(c, seq, n_keep))
        return rf_error_set(
            err, RF_ERR_ARG,
            "cannot truncate sequence %d from %d to %d positions: the sliding "
            "window ring no longer holds position %d",
            seq, len, n_keep,
            n_keep < c->model->hp.sliding_window ? 0 : n_keep - c->model->hp.sliding_window + 1);
    c->kv.ring_lo[seq] = n_keep ? ring_low(c, seq) : 0;
    c->kv.seq_len[seq] = n_keep;
    return RF_OK;
}

int32_t rf_context_seq_len(const rf_context *c, int32_t seq) {
    return seq >= 0 && seq < c->kv.n_seq ? c->kv.seq_len[seq] : -1;
}

int32_t rf_context_n_ctx(const rf_context *c) {
    return c->n_ctx;
}
int32_t rf_context_n_batch(const rf_context *c) {
    return c->n_batch;
}
int32_t rf_context_n_threads(const rf_context *c) {
    return c->n_threads;
}
rf_isa rf_context_isa(const rf_context *c) {
    return c->k->isa;
}
bool rf_context_widened(const rf_context *c) {
    return c->widen.rows != NULL;
}
const rf_model *rf_context_model(const rf_context *c) {
    return c->model;
}

void rf_context_profile_enable(rf_context *c, int on) {
    c->profiling = on;
    memset(&c->prof, 0, sizeof c->prof);
}

rf_profile rf_context_profile(const rf_context *c) {
    return c->prof;
}

const char *rf_prof_stage_name(rf_prof_stage s) {
    static const char *names[RF_PROF_COUNT] = {"embed",     "act quant", "q/k/v", "norm+rope",
                                               "attention", "wo",        "norms", "gate/up",
                                               "glu",       "down",      "head"};
    return s < RF_PROF_COUNT ? names[s] : "?";
}

uint64_t rf_context_kv_bytes(const rf_context *c) {
    return c->kv.bytes;
}
