/* scheduler.c: continuous batching. One thread loops:
 *   1. under the lock: apply cancellations; admit queued requests (FIFO) while a slot is free and
 *      the KV budget holds their worst case (prompt + max_tokens), so admission never
 *      overcommits;
 *   2. build one step: a token for every decoding request, then prompt chunks (at most
 *      prefill_chunk tokens in all while anything is decoding, so running streams keep their
 *      pace; up to max_step_tokens when nothing is);
 *   3. run it (rf_decode: each weight read once for the whole step);
 *   4. sample for every request that produced an output (penalised by the tokens it generated
 *      so far; with its log-probabilities when asked; a constrained one: the sample if the
 *      constraint allows it, else a sample from the masked logits), stream its text, finish
 *      requests when their constrained value is complete, on an end-of-generation token, a
 *      stop string, max_tokens or a full context (or with an error when the output's logits
 *      are not all finite numbers).
 * Nothing is allocated per step: the batch arrays, text buffer and samplers exist from open (a
 * constrained request's matcher state is made at admission, its mask scratch at its first full
 * mask; the vocabulary index once, at the first constrained request: engine/constraint.h).
 * A finished request's KV stays in its slot for the prefix cache (prefix.c): admission picks the
 * free slot sharing the longest prefix with the prompt and prefill starts after it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "engine/prefix.h"
#include "util/clock.h"

static void emit(rf_engine *e, rf_slot *s, int32_t token, const char *text, size_t len,
                 rf_finish fin, const char *error) {
    rf_event ev = {0};
    ev.id = s->req->id;
    ev.token = token;
    ev.text = text;
    ev.text_len = len;
    ev.t_ns = rf_now_ns();
    ev.finish = fin;
    ev.n_prompt = s->req->n_prompt;
    ev.n_generated = s->n_gen;
    ev.t_submit_ns = s->req->t_submit_ns;
    ev.t_admit_ns = s->t_admit_ns;
    ev.t_first_ns = s->t_first_ns;
    ev.n_cached = s->n_cached;
    ev.error = error;
    ev.next_seed = s->smp ? rf_sampler_stream_seed(s->smp) : s->req->p.seed;
    if (token >= 0 && s->req->p.logprobs >= 0) { /* set by advance for this token */
        ev.logprob = s->lp;
        ev.n_top = s->n_top;
        ev.top_ids = s->top_ids;
        ev.top_logprobs = s->top_lps;
    }
    (void)e;
    s->req->fn(s->req->user, &ev);
}

/* Ends the request in slot s: frees the slot and its KV budget first, so that when the final
 * event arrives the request is already gone (a cancel answers "unknown", the stats are settled),
 * then sends the final event. The slot's KV stays for the prefix cache. */
static void finish(rf_engine *e, rf_slot *s, int32_t token, const char *text, size_t len,
                   rf_finish fin, const char *error) {
    rf_prefix_release(e, (int32_t)(s - e->slots), fin);
    pthread_mutex_lock(&e->mu);
    e->kv_reserved -= s->req->reserve;
    e->stats.finished[fin]++;
    e->stats.generated_tokens += (uint64_t)s->n_gen;
    s->state = SLOT_FREE;
    s->cancel = 0;
    rf_prefix_account(e);
    pthread_mutex_unlock(&e->mu);
    emit(e, s, token, text, len, fin, error); /* s->req is still ours: only this thread admits */
    rf_req_free(s->req);
    s->req = NULL;
    rf_constraint_free(s->con);
    s->con = NULL;
}

/* Final event for a request that never reached a slot. */
static void finish_queued(rf_engine *e, rf_req *r, rf_finish fin) {
    pthread_mutex_lock(&e->mu);
    e->stats.finished[fin]++;
    pthread_mutex_unlock(&e->mu);
    rf_slot tmp = {0};
    tmp.req = r;
    emit(e, &tmp, -1, "", 0, fin, NULL);
    rf_req_free(r);
}

static int is_cancelled(rf_engine *e, uint64_t id) {
    for (int32_t i = 0; i < e->n_cancels; i++)
        if (e->cancels[i] == id) {
            e->cancels[i] = e->cancels[--e->n_cancels];
            return 1;
        }
    return 0;
}

/* Under the lock: cancellations and admissions. Queued requests that were cancelled are moved to
 * `dropped` (their final events are sent after the lock is released). Returns how many. */
static int32_t admit(rf_engine *e, rf_req **dropped) {
    int32_t nd = 0;
    for (int32_t i = 0; i < e->p.max_seqs; i++)
        if (e->slots[i].state != SLOT_FREE && is_cancelled(e, e->slots[i].req->id))
            e->slots[i].cancel = 1;
    /* compact the queue, dropping cancelled requests (or all of them when stopping) */
    int32_t kept = 0;
    for (int32_t i = 0; i < e->q_len; i++) {
        rf_req *r = e->queue[(e->q_head + i) % e->p.max_queue];
        if (e->stop || is_cancelled(e, r->id))
            dropped[nd++] = r;
        else
            e->queue[(e->q_head + kept++) % e->p.max_queue] = r;
    }
    e->q_len = kept;
    e->n_cancels = 0; /* ids that matched nothing have finished meanwhile */
    while (e->q_len > 0 && !e->stop) {
        rf_req *r = e->queue[e->q_head];
        if (e->kv_reserved + r->reserve > e->p.kv_budget) break; /* FIFO: wait for room */
        int32_t keep = 0;
        int32_t free_slot = rf_prefix_pick(e, r, &keep);
        if (free_slot < 0) break;
        e->q_head = (e->q_head + 1) % e->p.max_queue;
        e->q_len--;
        rf_slot *s = &e->slots[free_slot];
        s->req = r;
        s->state = SLOT_BUSY;
        s->decoding = false;
        rf_prefix_take(e, free_slot, r, keep); /* n_done: the positions reused */
        s->n_gen = 0;
        s->cancel = 0;
        s->t_admit_ns = rf_now_ns();
        s->t_first_ns = 0;
        e->kv_reserved += r->reserve;
        e->stats.prompt_tokens += (uint64_t)r->n_prompt;
        if (e->p.prefix_cache) {
            e->stats.prefix_queries += (uint64_t)r->n_prompt;
            e->stats.prefix_hits += (uint64_t)s->n_cached;
        }
        rf_prefix_account(e);
    }
    return nd;
}

/* A constrained request's state: the engine's vocabulary index (built on first use), the
 * slot's masked-logits scratch, the request's matcher. NULL, or what failed. */
static const char *start_constraint(rf_engine *e, rf_slot *s) {
    const rf_tokenizer *tok = rf_model_tokenizer(e->model);
    const size_t nv = (size_t)rf_tokenizer_n_vocab(tok);
    rf_error err = {0};
    if (!e->vidx && rf_vocab_index_build(tok, &e->vidx, &err)) return "constraint: out of memory";
    if (!s->masked) s->masked = malloc(nv * sizeof *s->masked);
    if (!s->mask) s->mask = malloc((nv + 63) / 64 * sizeof *s->mask);
    if (!s->masked || !s->mask || rf_constraint_new(s->req->schema, e->vidx, &s->con, &err))
        return "constraint: out of memory";
    s->out_mode = RF_OUT_LOGITS; /* a rejected sample is redrawn from the masked logits */
    return NULL;
}

/* Per-request setup outside the lock: sampler and text stream. Returns NULL, or what failed. */
static const char *start_slot(rf_engine *e, rf_slot *s) {
    const rf_request_params *p = &s->req->p;
    rf_sampler_params sp = rf_req_sampler_params(p);
    rf_sampler_configure(s->smp, &sp);
    const char *stops[RF_MAX_STOPS + 1] = {0};
    for (int i = 0; i < s->req->n_stops; i++) stops[i] = s->req->stops[i];
    rf_ts_init(&s->ts, stops);
    /* logprobs need the whole row (a log-sum-exp over the vocabulary); penalties too (the
     * sampler does not fit the top then) */
    s->out_mode = p->logprobs < 0 && rf_sampler_fits_top(s->smp, rf_context_n_top(e->ctx))
                      ? RF_OUT_TOP
                      : RF_OUT_LOGITS;
    return s->req->schema ? start_constraint(e, s) : NULL;
}

/* A constrained request's next token: the sample when the constraint allows it (the lazy
 * check), else a sample from the logits with every token it forbids removed (exact for
 * sampling: p(t) / p(allowed)). -1 when nothing is allowed. */
static int32_t sample_constrained(rf_engine *e, rf_slot *s, int32_t row) {
    const rf_tokenizer *tok = rf_model_tokenizer(e->model);
    const float *lg = rf_context_logits(e->ctx, row);
    const bool eog_ok = !s->req->p.ignore_eos; /* ignore_eos: the constraint never ends early */
    int32_t t = rf_sampler_sample(s->smp, lg);
    if ((eog_ok || !rf_tokenizer_is_eog(tok, t)) && rf_constraint_allows(s->con, t)) return t;
    int32_t n = rf_constraint_mask(s->con, s->mask);
    for (int32_t i = 0; !eog_ok && i < e->vidx->n_eog; i++) {
        uint64_t bit = 1ull << (e->vidx->eog[i] % 64);
        if (s->mask[e->vidx->eog[i] / 64] & bit) n--;
        s->mask[e->vidx->eog[i] / 64] &= ~bit;
    }
    if (n <= 0) return -1;
    const int32_t nv = rf_tokenizer_n_vocab(tok);
    for (int32_t i = 0; i < nv; i++)
        s->masked[i] = (s->mask[i / 64] >> (i % 64)) & 1u ? lg[i] : -INFINITY;
    t = rf_sampler_sample(s->smp, s->masked);
    return rf_constraint_allows(s->con, t) ? t : -1;
}

/* Builds the next step into the batch arrays; returns its size and fills out_slot for the rows
 * that produce outputs, in order. */
static int32_t build_step(rf_engine *e, int32_t *n_out) {
    int32_t n = 0, no = 0, decoding = 0;
    for (int32_t i = 0; i < e->p.max_seqs; i++) {
        rf_slot *s = &e->slots[i];
        if (s->state == SLOT_FREE || !s->decoding) continue;
        e->b_tok[n] = s->next;
        e->b_pos[n] = rf_context_seq_len(e->ctx, i);
        e->b_seq[n] = i;
        e->b_out[n] = s->out_mode;
        e->out_slot[no++] = i;
        n++;
        decoding++;
    }
    int32_t room = e->p.max_step_tokens - n;
    if (decoding && room > e->p.prefill_chunk) room = e->p.prefill_chunk;
    for (int32_t i = 0; i < e->p.max_seqs && room > 0; i++) {
        rf_slot *s = &e->slots[i];
        if (s->state == SLOT_FREE || s->decoding) continue;
        int32_t left = s->req->n_prompt - s->n_done;
        int32_t take = left < room ? left : room;
        for (int32_t j = 0; j < take; j++, n++) {
            e->b_tok[n] = s->req->prompt[s->n_done + j];
            e->b_pos[n] = s->n_done + j;
            e->b_seq[n] = i;
            e->b_out[n] = RF_OUT_NONE;
        }
        s->n_done += take;
        room -= take;
        if (s->n_done == s->req->n_prompt) { /* the prompt's last token gives the first output */
            e->b_out[n - 1] = s->out_mode;
            e->out_slot[no++] = i;
        }
    }
    *n_out = no;
    return n;
}

/* Samples and streams the output of slot index si (output row `row`). An output with a NaN or
 * an infinity among its logits ends the request with an error instead: whatever it sampled would
 * be garbage. */
static void advance(rf_engine *e, int32_t si, int32_t row) {
    rf_slot *s = &e->slots[si];
    if (!rf_context_output_finite(e->ctx, row)) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "non-finite logits at position %d (the model's weights or activations are "
                 "NaN/Inf)",
                 rf_context_seq_len(e->ctx, si) - 1);
        finish(e, s, -1, "", 0, RF_FINISH_ERROR, msg);
        return;
    }
    const rf_tokenizer *tok = rf_model_tokenizer(rf_context_model(e->ctx));
    const int32_t *ids;
    const float *vals;
    int32_t k = rf_context_top(e->ctx, row, &ids, &vals);
    int32_t t = s->con ? sample_constrained(e, s, row)
                : k    ? rf_sampler_sample_top(s->smp, ids, vals, k)
                       : rf_sampler_sample(s->smp, rf_context_logits(e->ctx, row));
    if (t < 0 || (s->con && !rf_constraint_accept(s->con, t))) {
        finish(e, s, -1, "", 0, RF_FINISH_ERROR,
               "constraint: no token of the vocabulary continues the output");
        return;
    }
    rf_sampler_accept(s->smp, t);
    if (s->req->p.logprobs >= 0) { /* full logits: start_slot asked for them */
        s->n_top = rf_sampler_logprobs(s->smp, rf_context_logits(e->ctx, row), t,
                                       s->req->p.logprobs, s->top_ids, s->top_lps, &s->lp);
    }
    s->n_gen++;
    rf_prefix_push(e, s, t);
    if (!s->t_first_ns) s->t_first_ns = rf_now_ns();
    s->decoding = true;
    s->next = t;
    char *out = e->text;
    size_t len = 0;
    if (!s->req->p.ignore_eos && rf_tokenizer_is_eog(tok, t)) {
        len = rf_ts_flush(&s->ts, out);
        finish(e, s, t, out, len, RF_FINISH_STOP, NULL);
        return;
    }
    char piece[RF_TS_PIECE_MAX];
    int32_t pl = rf_tokenizer_piece(tok, t, false, piece, (int32_t)sizeof piece);
    if (pl < 0) pl = 0;
    if (pl > (int32_t)sizeof piece) pl = (int32_t)sizeof piece;
    if (rf_ts_push(&s->ts, piece, (size_t)pl, out, &len)) {
        finish(e, s, t, out, len, RF_FINISH_STOP, NULL);
        return;
    }
    if (s->con && rf_constraint_done(s->con)) { /* the value or call is complete */
        len += rf_ts_flush(&s->ts, out + len);
        finish(e, s, t, out, len, RF_FINISH_STOP, NULL);
        return;
    }
    int full = rf_context_seq_len(e->ctx, si) >= e->p.n_ctx;
    if ((s->req->p.max_tokens > 0 && s->n_gen >= s->req->p.max_tokens) || full) {
        len += rf_ts_flush(&s->ts, out + len);
        finish(e, s, t, out, len, RF_FINISH_LENGTH, NULL);
        return;
    }
    emit(e, s, t, out, len, RF_FINISH_NONE, NULL);
}

void *rf_scheduler_main(void *arg) {
    rf_engine *e = arg;
    rf_req **dropped = e->dropped; /* made at open: a thread that cannot start its work fails
                                    * rf_engine_open, never a request */
    rf_error err = {0};
    for (;;) {
        pthread_mutex_lock(&e->mu);
        int32_t busy = 0;
        for (;;) {
            busy = 0;
            for (int32_t i = 0; i < e->p.max_seqs; i++) busy += e->slots[i].state != SLOT_FREE;
            if (busy || e->q_len || e->n_cancels || e->stop) break;
            pthread_cond_wait(&e->cv, &e->mu);
        }
        if (e->prof_req) { /* rf_engine_profile_enable: between steps, on this thread */
            e->prof_on = e->prof_req > 0;
            rf_context_profile_enable(e->ctx, e->prof_on);
            if (e->prof_on) e->prof = rf_context_profile(e->ctx); /* zeros */
            e->prof_req = 0;
        }
        rf_slot_state before[256];
        for (int32_t i = 0; i < e->p.max_seqs; i++) before[i] = e->slots[i].state;
        int32_t nd = admit(e, dropped);
        int stopping = e->stop;
        pthread_mutex_unlock(&e->mu);

        for (int32_t i = 0; i < nd; i++) finish_queued(e, dropped[i], RF_FINISH_CANCELLED);
        for (int32_t i = 0; i < e->p.max_seqs; i++) {
            rf_slot *s = &e->slots[i];
            const char *fail = NULL;
            if (before[i] == SLOT_FREE && s->state == SLOT_BUSY) fail = start_slot(e, s);
            if (fail) finish(e, s, -1, "", 0, RF_FINISH_ERROR, fail);
            if (s->state != SLOT_FREE && (s->cancel || stopping))
                finish(e, s, -1, "", 0, RF_FINISH_CANCELLED, NULL);
        }
        if (stopping) break;

        int32_t n_out = 0;
        int32_t n = build_step(e, &n_out);
        if (n == 0) continue;
        rf_batch b = {n, e->b_tok, e->b_pos, e->b_seq, e->b_out};
        rf_status st = rf_decode(e->ctx, &b, &err);
        pthread_mutex_lock(&e->mu);
        e->stats.steps++;
        if (e->prof_on) e->prof = rf_context_profile(e->ctx);
        rf_prefix_account(e);
        pthread_mutex_unlock(&e->mu);
        if (st) { /* a bug or an invariant broken: fail the requests of this step, keep serving */
            for (int32_t i = 0; i < e->p.max_seqs; i++)
                if (e->slots[i].state != SLOT_FREE)
                    finish(e, &e->slots[i], -1, "", 0, RF_FINISH_ERROR, err.msg);
            continue;
        }
        for (int32_t r = 0; r < n_out; r++) advance(e, e->out_slot[r], r);
    }
    return NULL;
}
