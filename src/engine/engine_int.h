/* engine_int.h: the engine's state, shared by engine.c (the API: open, submit, cancel, text) and
 * scheduler.c (the thread that admits requests and runs the batched steps). Not for callers.
 *
 * Locking: `mu` guards the waiting queue, the cancel list, each slot's id/state as seen by
 * cancel, and the stats. The scheduler holds it only to move requests between the queue and the
 * slots; it builds and runs steps and calls callbacks without it.
 */
#ifndef RF_ENGINE_ENGINE_INT_H
#define RF_ENGINE_ENGINE_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "engine/constraint.h"
#include "engine/textstream.h"
#include "model/context.h"
#include "model/sampler.h"
#include "roofline/engine.h"

/* A request as submitted (queued until a slot and KV budget are free). */
typedef struct rf_req {
    uint64_t id;
    rf_event_fn fn;
    void *user;
    int32_t *prompt; /* owned */
    int32_t n_prompt;
    rf_request_params p; /* stop pointers are cleared: the strings live in stops */
    char stops[RF_MAX_STOPS][RF_MAX_STOP_LEN + 1];
    int n_stops;
    int64_t reserve; /* KV positions reserved on admission */
    int64_t t_submit_ns;
    rf_jschema *schema; /* json_schema / tool_choice compiled at submit (owned), or NULL */
} rf_req;

/* Frees a request and what it owns. */
void rf_req_free(rf_req *r);

/* Whether a slot holds a request: written only by the scheduler thread, always under mu, so
 * the API's threads may read it under mu. */
typedef enum { SLOT_FREE = 0, SLOT_BUSY } rf_slot_state;

typedef struct rf_slot {
    rf_slot_state state;
    bool decoding;  /* prompt done, generating (scheduler thread only; no lock) */
    rf_req *req;    /* owned while the slot is busy */
    int32_t n_done; /* prompt tokens in the cache */
    int32_t next;   /* sampled token to run next step (decoding) */
    int32_t n_gen;
    int8_t out_mode; /* RF_OUT_TOP or RF_OUT_LOGITS */
    int cancel;      /* set under mu by rf_engine_cancel */
    int64_t t_admit_ns, t_first_ns;
    rf_sampler *smp; /* one per slot, reconfigured per request */
    rf_textstream ts;
    /* prefix cache (prefix.c; scheduler thread only): the tokens whose KV the slot's sequence
     * holds (prompt, then generated), kept after the request ends */
    int32_t *toks; /* n_ctx + 1, from open */
    int32_t n_toks;
    int32_t n_cached; /* prompt positions this request reused */
    uint64_t used;    /* when its last request ended (lru_tick), for ties */
    /* logprobs >= 0: the last sampled token's log-probability and alternatives (for emit) */
    float lp;
    int32_t n_top;
    int32_t top_ids[RF_MAX_TOP_LOGPROBS];
    float top_lps[RF_MAX_TOP_LOGPROBS];
    rf_constraint *con; /* the request's constraint state, or NULL (scheduler thread only) */
    float *masked;      /* n_vocab logits with the constraint applied (allocated on first use) */
    uint64_t *mask;     /* n_vocab bits */
} rf_slot;

struct rf_engine {
    rf_engine_params p;
    rf_model *model;
    rf_context *ctx;
    char *model_name;
    uint64_t bytes_per_token;

    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;

    rf_req **queue; /* FIFO ring of max_queue */
    int32_t q_head, q_len;
    uint64_t *cancels; /* ids to cancel (queued or running), handled by the scheduler */
    int32_t n_cancels;
    uint64_t next_id;

    rf_slot *slots; /* max_seqs */
    int64_t kv_reserved;
    uint64_t lru_tick;

    /* step scratch, sized at open: nothing is allocated per step */
    int32_t *b_tok, *b_pos, *b_seq;
    int8_t *b_out;
    int32_t *out_slot; /* slot of each output row */
    char *text;        /* RF_TS_PENDING + RF_TS_PIECE_MAX */
    rf_req **dropped;  /* max_queue: queued requests cancelled in one step (their final events
                        * are sent after the lock is released) */

    rf_engine_stats stats; /* counters; running/waiting filled on read */
    int prof_req;          /* under mu: 1 turn profiling on, -1 off, 0 nothing asked (the
                            * scheduler applies it before its next step) */
    bool prof_on;          /* scheduler thread: the context is profiling */
    rf_profile prof;       /* under mu: the context's counters after the last step */
    rf_vocab_index *vidx;  /* built by the scheduler on the first constrained request */
};

/* The sampler's share of a request's parameters. */
static inline rf_sampler_params rf_req_sampler_params(const rf_request_params *p) {
    return (rf_sampler_params){.temperature = p->temperature,
                               .top_k = p->top_k,
                               .top_p = p->top_p,
                               .seed = p->seed,
                               .presence_penalty = p->presence_penalty,
                               .frequency_penalty = p->frequency_penalty};
}

/* The scheduler thread's body (scheduler.c). */
void *rf_scheduler_main(void *arg);

#endif
