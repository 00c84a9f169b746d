/* prefix.h: the engine's prefix cache. A slot that finishes keeps its sequence's KV and the
 * tokens in it (rf_slot.toks); a new request is admitted to the free slot whose cached tokens
 * share the longest prefix with its prompt (ties: the least recently used), and prefill starts
 * after that prefix.
 *
 * Rules: the prompt's last token is always recomputed (its logits give the first output); on a
 * model with sliding-window layers a prefix is reused only when the rings still hold the window
 * its next position needs (rf_context_seq_can_keep), else the slot starts from 0; a request that
 * ends with an error leaves nothing cached (its KV may hold NaNs).
 *
 * Called by the scheduler thread only (under the engine's lock during admission). Nothing is
 * allocated: toks is sized n_ctx + 1 per slot at open.
 */
#ifndef RF_ENGINE_PREFIX_H
#define RF_ENGINE_PREFIX_H

#include "engine/engine_int.h"

/* The free slot to admit r into and, in *n_keep, how many of its cached positions r reuses (0
 * when the cache is off or nothing matches). -1 when no slot is free. */
int32_t rf_prefix_pick(const rf_engine *e, const rf_req *r, int32_t *n_keep);

/* Prepares slot si for r: keeps n_keep positions of its KV (drops the rest) and records r's
 * prompt as the slot's tokens. */
void rf_prefix_take(rf_engine *e, int32_t si, const rf_req *r, int32_t n_keep);

/* Records the token just sampled for slot s (it goes into the KV at the next step). */
void rf_prefix_push(rf_engine *e, rf_slot *s, int32_t token);

/* Slot si's request ended with fin: keeps its KV for reuse, or forgets it (errors, cache off). */
void rf_prefix_release(rf_engine *e, int32_t si, rf_finish fin);

/* Under the lock: kv_used (running slots) and kv_cached (idle slots) in e->stats. */
void rf_prefix_account(rf_engine *e);

#endif
