/* prefix.c: choosing the slot whose cached KV a new request reuses, and keeping each slot's
 * tokens (see prefix.h). */
#include "engine/prefix.h"

#include <string.h>

/* Positions of slot si's cache that r may reuse. */
static int32_t usable(const rf_engine *e, int32_t si, const rf_req *r) {
    const rf_slot *s = &e->slots[si];
    int32_t len = rf_context_seq_len(e->ctx, si);
    int32_t lim = r->n_prompt - 1; /* the last prompt token is always recomputed */
    if (len < lim) lim = len;
    int32_t k = 0;
    while (k < lim && s->toks[k] == r->prompt[k]) k++;
    return k > 0 && rf_context_seq_can_keep(e->ctx, si, k) ? k : 0;
}

int32_t rf_prefix_pick(const rf_engine *e, const rf_req *r, int32_t *n_keep) {
    int32_t best = -1, best_keep = 0;
    for (int32_t i = 0; i < e->p.max_seqs; i++) {
        const rf_slot *s = &e->slots[i];
        if (s->state != SLOT_FREE) continue;
        int32_t k = e->p.prefix_cache ? usable(e, i, r) : 0;
        if (best < 0 || k > best_keep || (k == best_keep && s->used < e->slots[best].used)) {
            best = i;
            best_keep = k;
        }
    }
    *n_keep = best_keep;
    return best;
}

void rf_prefix_take(rf_engine *e, int32_t si, const rf_req *r, int32_t n_keep) {
    rf_slot *s = &e->slots[si];
    if (!n_keep || rf_context_seq_truncate(e->ctx, si, n_keep, NULL) != RF_OK) {
        rf_context_seq_reset(e->ctx, si); /* rf_prefix_pick checked: truncation cannot fail */
        n_keep = 0;
    }
    memcpy(s->toks, r->prompt, (size_t)r->n_prompt * sizeof *s->toks);
    s->n_toks = r->n_prompt;
    s->n_cached = n_keep;
    s->n_done = n_keep;
}

void rf_prefix_push(rf_engine *e, rf_slot *s, int32_t token) {
    if (s->n_toks <= e->p.n_ctx) s->toks[s->n_toks++] = token;
}

void rf_prefix_release(rf_engine *e, int32_t si, rf_finish fin) {
    rf_slot *s = &e->slots[si];
    if (!e->p.prefix_cache || fin == RF_FINISH_ERROR) {
        rf_context_seq_reset(e->ctx, si);
        s->n_toks = 0;
    }
    s->used = ++e->lru_tick;
}

void rf_prefix_account(rf_engine *e) {
    int64_t used = 0, cached = 0;
    for (int32_t i = 0; i < e->p.max_seqs; i++) {
        int64_t n = rf_context_seq_len(e->ctx, i);
        if (e->slots[i].state == SLOT_FREE)
            cached += n;
        else
            used += n;
    }
    e->stats.kv_used = used;
    e->stats.kv_cached = cached;
}
