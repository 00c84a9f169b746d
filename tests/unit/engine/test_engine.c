/* test_engine.c: the engine's scheduler on a tiny model: results equal a plain greedy loop,
 * batched requests equal solo ones token for token, concurrent submissions from several
 * threads, cancellation (queued and running), the KV budget (admission never overcommits,
 * impossible requests refused), a full queue, stop strings, max_tokens, close with requests in
 * flight, no slot or budget left behind, NaN/Inf logits ending only the requests they poison,
 * with an error, and the prefix cache (reuse, truncation, cancel and error, sliding-window rings,
 * outputs equal to cold runs), and the per-stage profile (off by default; on: every forward
 * step counted; turned on from a first token event: only the steps after it; off keeps it). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model/context.h"
#include "model/sampler.h"
#include "roofline/engine.h"
#include "tiny_model.h"

#define MAXTOK 512

typedef struct rec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int32_t tokens[MAXTOK];
    int n;
    char text[4096];
    size_t text_len;
    rf_finish finish;
    int done;
    int finals; /* must end at exactly 1 */
    int64_t t_first;
    rf_engine *e;          /* for checks made from inside the callback */
    uint64_t cancel_after; /* cancel itself after this many tokens (0: never) */
    int64_t max_reserved;
    char error[256];  /* the final event's error message, if any */
    int32_t n_cached; /* the first event's n_cached */
    int events;
    int cached_varies; /* an event's n_cached differed from the first's */
    int slow_us;       /* the callback sleeps this long per event (holding up the scheduler) */
    int profile_first; /* turn profiling on from the first token event (needs e) */
} rec;

static void rec_init(rec *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void on_event(void *user, const rf_event *ev) {
    rec *r = user;
    pthread_mutex_lock(&r->mu);
    if (r->events++ == 0)
        r->n_cached = ev->n_cached;
    else if (ev->n_cached != r->n_cached)
        r->cached_varies = 1;
    if (ev->token >= 0 && r->n < MAXTOK &&
        (ev->finish == RF_FINISH_NONE || ev->finish == RF_FINISH_LENGTH))
        r->tokens[r->n++] = ev->token;
    if (r->text_len + ev->text_len < sizeof r->text) {
        memcpy(r->text + r->text_len, ev->text, ev->text_len);
        r->text_len += ev->text_len;
    }
    if (r->e) {
        rf_engine_stats st;
        rf_engine_get_stats(r->e, &st);
        if (st.kv_reserved > r->max_reserved) r->max_reserved = st.kv_reserved;
        if (r->cancel_after && (uint64_t)r->n == r->cancel_after && ev->finish == RF_FINISH_NONE)
            rf_engine_cancel(r->e, ev->id); /* from inside a callback: allowed */
        if (r->profile_first && r->events == 1 && ev->finish == RF_FINISH_NONE)
            rf_engine_profile_enable(r->e, true); /* from inside a callback: the next steps */
    }
    if (ev->finish != RF_FINISH_NONE) {
        if (ev->error) snprintf(r->error, sizeof r->error, "%s", ev->error);
        r->finish = ev->finish;
        r->finals++;
        r->done = 1;
        pthread_cond_broadcast(&r->cv);
    }
    int slow = r->slow_us;
    pthread_mutex_unlock(&r->mu);
    if (slow) usleep((useconds_t)slow);
}

static void rec_wait(rec *r) {
    pthread_mutex_lock(&r->mu);
    while (!r->done) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static const char *g_model;

static rf_engine *open_engine_cache(int max_seqs, int64_t budget, int max_queue, bool cache) {
    rf_engine_params p = rf_engine_default_params();
    p.prefix_cache = cache;
    p.model_path = g_model;
    p.n_threads = 2;
    p.max_seqs = max_seqs;
    p.n_ctx = 96;
    p.kv_budget = budget;
    p.max_step_tokens = 64;
    p.prefill_chunk = 8;
    p.max_queue = max_queue;
    rf_engine *e = NULL;
    rf_error err = {0};
    if (rf_engine_open(&p, &e, &err)) fprintf(stderr, "open: %s\n", err.msg);
    return e;
}

static rf_engine *open_engine(int max_seqs, int64_t budget, int max_queue) {
    return open_engine_cache(max_seqs, budget, max_queue, true);
}

static rf_request_params greedy(int max_tokens) {
    rf_request_params p = rf_request_default_params();
    p.max_tokens = max_tokens;
    p.ignore_eos = true; /* random weights: keep going so lengths are known */
    return p;
}

/* Plain greedy loop on a context: the oracle. */
static int reference(const int32_t *prompt, int n_prompt, int n_gen, int32_t *out) {
    rf_model *m = NULL;
    rf_error err = {0};
    if (rf_model_load(g_model, &m, &err)) return -1;
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = 96;
    cp.n_batch = 64;
    cp.n_threads = 2;
    rf_context *c = NULL;
    rf_context_new(m, &cp, &c, &err);
    int32_t pos[64], seq[64] = {0};
    int8_t lg[64] = {0};
    for (int at = 0; at < n_prompt; at += 64) { /* prefill in chunks of the batch size */
        int n = n_prompt - at < 64 ? n_prompt - at : 64;
        for (int i = 0; i < n; i++) pos[i] = at + i;
        lg[n - 1] = at + n == n_prompt ? RF_OUT_LOGITS : RF_OUT_NONE;
        rf_batch b = {n, prompt + at, pos, seq, lg};
        rf_decode(c, &b, &err);
        lg[n - 1] = RF_OUT_NONE;
    }
    for (int i = 0; i < n_gen; i++) {
        out[i] = rf_argmax(rf_context_logits(c, 0), rf_model_hparams(m)->n_vocab);
        int32_t p = n_prompt + i;
        int8_t one = RF_OUT_LOGITS;
        rf_batch d = {1, &out[i], &p, seq, &one};
        rf_decode(c, &d, &err);
    }
    rf_context_free(c);
    rf_model_free(m);
    return 0;
}

static void make_prompt(int32_t *p, int n, uint64_t seed) {
    p[0] = 2;
    for (int i = 1; i < n; i++) p[i] = 6 + (int32_t)(rng_next(&seed) % 280);
}

static void test_single_and_batched(void) {
    enum { R = 6, GEN = 20 };
    int32_t prompts[R][40], want[R][GEN];
    int lens[R] = {3, 17, 40, 9, 25, 1 + 1};
    for (int i = 0; i < R; i++) {
        make_prompt(prompts[i], lens[i], (uint64_t)i + 100);
        CHECK(reference(prompts[i], lens[i], GEN, want[i]) == 0);
    }
    /* one at a time */
    rf_engine *e = open_engine(4, 0, 16);
    CHECK(e != NULL);
    if (!e) return;
    rec r;
    rf_request_params p = greedy(GEN);
    rf_error err = {0};
    for (int i = 0; i < 2; i++) {
        rec_init(&r);
        CHECK(rf_engine_submit(e, prompts[i], lens[i], &p, on_event, &r, NULL, &err) == RF_OK);
        rec_wait(&r);
        CHECK(r.finish == RF_FINISH_LENGTH && r.n == GEN && r.finals == 1);
        CHECK(memcmp(r.tokens, want[i], sizeof want[i]) == 0);
    }
    /* all together: 6 requests on 4 slots, prompts prefilled in chunks of 8 between decodes */
    static rec rs[R];
    for (int i = 0; i < R; i++) {
        rec_init(&rs[i]);
        CHECK(rf_engine_submit(e, prompts[i], lens[i], &p, on_event, &rs[i], NULL, &err) == RF_OK);
    }
    int same = 0;
    for (int i = 0; i < R; i++) {
        rec_wait(&rs[i]);
        same += rs[i].n == GEN && memcmp(rs[i].tokens, want[i], sizeof want[i]) == 0;
        CHECK(rs[i].finals == 1);
    }
    CHECK_MSG(same == R, "%d/%d batched requests equal their solo runs", same, R);
    rf_engine_stats st;
    usleep(20000);
    rf_engine_get_stats(e, &st);
    CHECK(st.running == 0 && st.waiting == 0 && st.kv_reserved == 0);
    CHECK(st.finished[RF_FINISH_LENGTH] == R + 2);
    rf_engine_close(e);
}

typedef struct submitter {
    rf_engine *e;
    int k;
    rec recs[8];
    int ok;
} submitter;

static void *submit_many(void *arg) {
    submitter *s = arg;
    rf_error err = {0};
    for (int i = 0; i < 8; i++) {
        int32_t prompt[12];
        make_prompt(prompt, 12, (uint64_t)(s->k * 31 + i));
        rf_request_params p = greedy(5 + i);
        p.temperature = (i % 2) ? 0.8f : 0.0f;
        p.seed = (uint64_t)i;
        rec_init(&s->recs[i]);
        s->ok += rf_engine_submit(s->e, prompt, 12, &p, on_event, &s->recs[i], NULL, &err) == RF_OK;
    }
    return NULL;
}

static void test_concurrent_submitters(void) {
    rf_engine *e = open_engine(8, 0, 64);
    CHECK(e != NULL);
    if (!e) return;
    static submitter subs[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        subs[k].e = e;
        subs[k].k = k;
        subs[k].ok = 0;
        pthread_create(&th[k], NULL, submit_many, &subs[k]);
    }
    for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
    int good = 0;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 8; i++) {
            rec_wait(&subs[k].recs[i]);
            good += subs[k].recs[i].finals == 1 && subs[k].recs[i].n == 5 + i &&
                    subs[k].recs[i].finish == RF_FINISH_LENGTH;
        }
    CHECK(subs[0].ok + subs[1].ok + subs[2].ok + subs[3].ok == 32);
    CHECK_MSG(good == 32, "%d/32 requests completed as asked", good);
    rf_engine_close(e);
}

static void test_cancel(void) {
    rf_engine *e = open_engine(1, 0, 8);
    CHECK(e != NULL);
    if (!e) return;
    int32_t prompt[8];
    make_prompt(prompt, 8, 5);
    rf_request_params p = greedy(80);
    rf_error err = {0};
    static rec running, queued, self;
    rec_init(&running);
    rec_init(&queued);
    rec_init(&self);
    running.slow_us = 2000; /* 80 tokens take 160 ms or more: time to cancel on a busy machine */
    uint64_t id_run = 0, id_q = 0;
    CHECK(rf_engine_submit(e, prompt, 8, &p, on_event, &running, &id_run, &err) == RF_OK);
    CHECK(rf_engine_submit(e, prompt, 8, &p, on_event, &queued, &id_q, &err) == RF_OK);
    /* the second waits for the only slot; cancel it while queued, and the first mid-stream */
    CHECK(rf_engine_cancel(e, id_q) == RF_OK);
    while (1) {
        pthread_mutex_lock(&running.mu);
        int n = running.n;
        pthread_mutex_unlock(&running.mu);
        if (n >= 3) break;
        usleep(1000);
    }
    CHECK(rf_engine_cancel(e, id_run) == RF_OK);
    rec_wait(&running);
    rec_wait(&queued);
    CHECK(running.finish == RF_FINISH_CANCELLED && running.n < 80 && running.finals == 1);
    CHECK(queued.finish == RF_FINISH_CANCELLED && queued.n == 0 && queued.finals == 1);
    CHECK(rf_engine_cancel(e, id_run) == RF_ERR_ARG); /* already finished */
    CHECK(rf_engine_cancel(e, 987654) == RF_ERR_ARG);
    /* a callback cancelling its own request after 4 tokens */
    self.e = e;
    self.cancel_after = 4;
    CHECK(rf_engine_submit(e, prompt, 8, &p, on_event, &self, NULL, &err) == RF_OK);
    rec_wait(&self);
    CHECK(self.finish == RF_FINISH_CANCELLED && self.n >= 4 && self.n <= 6);
    rf_engine_stats st;
    rf_engine_get_stats(e, &st);
    CHECK(st.kv_reserved == 0 && st.running == 0);
    rf_engine_close(e);
}

static void test_budget_and_queue(void) {
    /* budget of 100 positions: each request reserves 10 + 30 = 40, so at most two run at once */
    rf_engine *e = open_engine(4, 100, 4);
    CHECK(e != NULL);
    if (!e) return;
    int32_t prompt[10];
    make_prompt(prompt, 10, 9);
    rf_request_params p = greedy(30);
    rf_error err = {0};
    static rec rs[4];
    for (int i = 0; i < 4; i++) {
        rec_init(&rs[i]);
        rs[i].e = e;
        CHECK(rf_engine_submit(e, prompt, 10, &p, on_event, &rs[i], NULL, &err) == RF_OK);
    }
    /* more than the whole budget (or the context) is refused outright, with the reason */
    rf_request_params big = greedy(95);
    CHECK(rf_engine_submit(e, prompt, 10, &big, on_event, &rs[0], NULL, &err) == RF_ERR_CONTEXT);
    CHECK(strstr(err.msg, "positions") != NULL);
    CHECK(strstr(err.msg, "context of 96") != NULL);
    int64_t peak = 0;
    for (int i = 0; i < 4; i++) {
        rec_wait(&rs[i]);
        CHECK(rs[i].finish == RF_FINISH_LENGTH && rs[i].n == 30);
        if (rs[i].max_reserved > peak) peak = rs[i].max_reserved;
    }
    CHECK_MSG(peak <= 100 && peak >= 80, "peak reserved %lld", (long long)peak);
    rf_engine_close(e);

    /* within the context (96) but over the whole KV budget (60): refused by the budget alone,
     * and the message names both numbers, needed and available */
    e = open_engine(2, 60, 4);
    CHECK(e != NULL);
    if (e) {
        rf_request_params over = greedy(60); /* 10 + 60 = 70 <= 96 */
        CHECK(rf_engine_submit(e, prompt, 10, &over, on_event, &rs[0], NULL, &err) ==
              RF_ERR_CONTEXT);
        CHECK_MSG(strstr(err.msg, "needs 70 positions") && strstr(err.msg, "KV budget of 60"), "%s",
                  err.msg);
        rf_request_params fits = greedy(50); /* 60: exactly the budget, accepted */
        rec_init(&rs[1]);
        rs[1].e = e;
        CHECK(rf_engine_submit(e, prompt, 10, &fits, on_event, &rs[1], NULL, &err) == RF_OK);
        rec_wait(&rs[1]);
        CHECK(rs[1].finish == RF_FINISH_LENGTH && rs[1].n == 50);
        rf_engine_close(e);
    }

    /* a queue of 2 behind one slot: the third waiting request is refused with RF_ERR_BUSY */
    e = open_engine(1, 0, 2);
    static rec q[4];
    rf_request_params slow = greedy(60);
    int busy = 0, accepted = 0;
    for (int i = 0; i < 4; i++) {
        rec_init(&q[i]);
        rf_status st = rf_engine_submit(e, prompt, 10, &slow, on_event, &q[i], NULL, &err);
        busy += st == RF_ERR_BUSY;
        accepted += st == RF_OK;
    }
    CHECK_MSG(busy >= 1 && accepted >= 2, "busy %d accepted %d", busy, accepted);
    rf_engine_stats st;
    rf_engine_get_stats(e, &st);
    CHECK(st.refused_busy == (uint64_t)busy);
    /* close with requests in flight: each accepted one gets exactly one final event */
    rf_engine_close(e);
    for (int i = 0; i < 4; i++)
        if (q[i].done) CHECK(q[i].finals == 1);
    int finals = 0;
    for (int i = 0; i < 4; i++) finals += q[i].finals;
    CHECK(finals == accepted);
}

static void test_stop_and_args(void) {
    rf_engine *e = open_engine(2, 0, 8);
    CHECK(e != NULL);
    if (!e) return;
    int32_t prompt[6];
    make_prompt(prompt, 6, 77);
    rf_request_params p = greedy(24);
    rf_error err = {0};
    static rec a, b;
    rec_init(&a);
    CHECK(rf_engine_submit(e, prompt, 6, &p, on_event, &a, NULL, &err) == RF_OK);
    rec_wait(&a);
    CHECK(a.text_len > 6);
    /* stop on a 3-byte piece of that output: the text ends right before its first occurrence */
    char stop[4];
    memcpy(stop, a.text + 3, 3);
    stop[3] = 0;
    const char *first = strstr(a.text, stop);
    p.stop[0] = stop;
    rec_init(&b);
    CHECK(rf_engine_submit(e, prompt, 6, &p, on_event, &b, NULL, &err) == RF_OK);
    rec_wait(&b);
    CHECK(b.finish == RF_FINISH_STOP);
    CHECK(first && b.text_len == (size_t)(first - a.text) &&
          memcmp(b.text, a.text, b.text_len) == 0);

    /* bad arguments: nothing queued, a clear error */
    int32_t bad_tok = 999999;
    CHECK(rf_engine_submit(e, &bad_tok, 1, &p, on_event, &b, NULL, &err) == RF_ERR_ARG);
    CHECK(rf_engine_submit(e, prompt, 0, &p, on_event, &b, NULL, &err) == RF_ERR_ARG);
    rf_request_params q = greedy(4);
    q.top_p = 2;
    CHECK(rf_engine_submit(e, prompt, 6, &q, on_event, &b, NULL, &err) == RF_ERR_ARG &&
          strstr(err.msg, "top_p"));
    q = greedy(4);
    char longstop[RF_MAX_STOP_LEN + 2];
    memset(longstop, 'x', sizeof longstop - 1);
    longstop[sizeof longstop - 1] = 0;
    q.stop[0] = longstop;
    CHECK(rf_engine_submit(e, prompt, 6, &q, on_event, &b, NULL, &err) == RF_ERR_ARG);
    q = greedy(0);
    CHECK(rf_engine_submit(e, prompt, 6, &q, on_event, &b, NULL, &err) == RF_ERR_ARG);
    rf_engine_close(e);
}

/* A model with a NaN in the embedding row of token 300 (the head is untied, so only sequences
 * that read token 300 get NaN logits): the request that reads it ends with RF_FINISH_ERROR naming
 * the position, in the same steps as clean requests that finish normally; greedy (fused top-k head)
 * and temperature sampling (full logits) alike. */
static void test_nonfinite_logits(void) {
    tiny_spec s = tiny_default();
    s.untied = 1;
    s.poison = "token_embd.weight";
    s.poison_at = 64 * 300 + 3; /* one value of row 300: its embedding, hence its residual */
    s.poison_value = NAN;
    s.odd_key = "general.name";
    s.odd_value = "nan \x1b]0;x\x07 model";
    const char *path = tiny_write_file(&s, "engine-nan");
    CHECK(path != NULL);
    if (!path) return;
    static char nan_path[256];
    snprintf(nan_path, sizeof nan_path, "%s", path);
    const char *saved = g_model;
    g_model = nan_path;
    rf_engine *e = open_engine(4, 0, 16);
    CHECK(e != NULL);
    if (e) {
        rf_engine_info info;
        rf_engine_get_info(e, &info); /* general.name as a printable excerpt */
        CHECK_MSG(strcmp(info.model_name, "nan ?]0;x? model") == 0, "model name '%s'",
                  info.model_name);
        int32_t clean[5] = {2, 40, 41, 42, 43}, late[6] = {2, 40, 41, 42, 43, 300};
        int32_t first[2] = {2, 300};
        rf_request_params greedy8 = greedy(8), hot = greedy(8);
        hot.temperature = 0.9f;
        hot.top_k = 0;
        hot.seed = 5;
        static rec r[4];
        rf_error err = {0};
        const int32_t *prompts[4] = {clean, late, first, clean};
        const int lens[4] = {5, 6, 2, 5};
        const rf_request_params *ps[4] = {&greedy8, &greedy8, &hot, &hot};
        for (int i = 0; i < 4; i++) {
            rec_init(&r[i]);
            CHECK(rf_engine_submit(e, prompts[i], lens[i], ps[i], on_event, &r[i], NULL, &err) ==
                  RF_OK);
        }
        for (int i = 0; i < 4; i++) rec_wait(&r[i]);
        CHECK_MSG(r[0].finish == RF_FINISH_LENGTH && r[0].n == 8, "clean greedy: %s, %d tokens",
                  rf_finish_name(r[0].finish), r[0].n);
        CHECK_MSG(r[3].finish == RF_FINISH_LENGTH && r[3].n == 8, "clean sampled: %s, %d tokens",
                  rf_finish_name(r[3].finish), r[3].n);
        CHECK_MSG(r[1].finish == RF_FINISH_ERROR && r[1].n == 0 &&
                      strstr(r[1].error, "non-finite logits at position 5") &&
                      strstr(r[1].error, "NaN/Inf"),
                  "poisoned greedy: %s (%s), %d tokens", rf_finish_name(r[1].finish), r[1].error,
                  r[1].n);
        CHECK_MSG(r[2].finish == RF_FINISH_ERROR && r[2].n == 0 &&
                      strstr(r[2].error, "non-finite logits at position 1"),
                  "poisoned sampled: %s (%s), %d tokens", rf_finish_name(r[2].finish), r[2].error,
                  r[2].n);
        for (int i = 0; i < 4; i++) CHECK(r[i].finals == 1);
        rf_engine_stats st;
        usleep(20000);
        rf_engine_get_stats(e, &st);
        CHECK(st.running == 0 && st.kv_reserved == 0 && st.finished[RF_FINISH_ERROR] == 2);
        /* an errored request leaves no KV to reuse: the poisoned prompt continued reuses at
         * most the 5 clean tokens another slot holds, and fails again (at its last token) */
        int32_t again[7] = {2, 40, 41, 42, 43, 300, 50};
        static rec r2;
        rec_init(&r2);
        CHECK(rf_engine_submit(e, again, 7, &greedy8, on_event, &r2, NULL, &err) == RF_OK);
        rec_wait(&r2);
        CHECK_MSG(r2.finish == RF_FINISH_ERROR && r2.n_cached <= 5 &&
                      strstr(r2.error, "non-finite logits at position 6"),
                  "after an error: %s, n_cached %d", rf_finish_name(r2.finish), r2.n_cached);
        rf_engine_close(e);
    }
    g_model = saved;
    remove(nan_path);
}

/* Runs one greedy request to its end on e; returns its final n_cached (the same in every event). */
static int32_t run_one(rf_engine *e, const int32_t *prompt, int n, int gen, rec *r) {
    rf_request_params p = greedy(gen);
    rf_error err = {0};
    rec_init(r);
    CHECK_MSG(rf_engine_submit(e, prompt, n, &p, on_event, r, NULL, &err) == RF_OK, "submit: %s",
              err.msg);
    rec_wait(r);
    CHECK(!r->cached_varies && r->finals == 1);
    return r->n_cached;
}

/* Whether r generated exactly what a cold greedy run of prompt gives. */
static int same_as_cold(const rec *r, const int32_t *prompt, int n, int gen) {
    int32_t want[MAXTOK];
    if (reference(prompt, n, gen, want)) return 0;
    return r->n == gen && memcmp(r->tokens, want, (size_t)gen * sizeof *want) == 0;
}

/* The prefix cache: a request continuing a finished one's tokens reuses its KV (n_cached is the
 * common prefix, the prompt's last token recomputed), a shorter prompt truncates the cached
 * sequence, unrelated prompts reuse nothing, a cancelled request's KV is reused only as far as
 * it was computed; every output equals a cold run's; the stats count queries, hits and the idle
 * positions kept; with the cache off nothing is reused. */
static void test_prefix_cache(void) {
    enum { NA = 20, GA = 10 };
    int32_t a[64], b[64], c[64], d[64], x[64];
    make_prompt(a, NA, 900);
    rf_engine *e = open_engine(2, 0, 8);
    CHECK(e != NULL);
    if (!e) return;
    static rec r;
    CHECK(run_one(e, a, NA, GA, &r) == 0 && same_as_cold(&r, a, NA, GA));
    rf_engine_stats st;
    rf_engine_get_stats(e, &st);
    CHECK_MSG(st.prefix_queries == NA && st.prefix_hits == 0 && st.kv_cached == NA + GA - 1 &&
                  st.kv_reserved == 0 && st.kv_used == 0,
              "after one request: queries %llu hits %llu cached %lld used %lld",
              (unsigned long long)st.prefix_queries, (unsigned long long)st.prefix_hits,
              (long long)st.kv_cached, (long long)st.kv_used);
    /* the next turn: a's prompt, its reply, 5 more tokens; the KV holds a + the first GA - 1
     * generated tokens (the last one sampled was never run) */
    memcpy(b, a, NA * sizeof *a);
    memcpy(b + NA, r.tokens, GA * sizeof *a);
    for (int i = 0; i < 5; i++) b[NA + GA + i] = 7 + i;
    const int NB = NA + GA + 5;
    int32_t got = run_one(e, b, NB, 12, &r);
    CHECK_MSG(got == NA + GA - 1, "continued conversation: n_cached %d, want %d", got, NA + GA - 1);
    CHECK_MSG(same_as_cold(&r, b, NB, 12), "continued conversation differs from a cold run");
    rf_engine_get_stats(e, &st);
    CHECK(st.prefix_queries == (uint64_t)(NA + NB) && st.prefix_hits == (uint64_t)(NA + GA - 1));
    /* a prompt shorter than the cached sequence: a prefix of b; its last token is recomputed */
    got = run_one(e, b, 15, 6, &r);
    CHECK_MSG(got == 14 && same_as_cold(&r, b, 15, 6), "prefix of a cached prompt: n_cached %d",
              got);
    /* shares 12 tokens, then differs */
    memcpy(c, b, 12 * sizeof *c);
    for (int i = 12; i < 18; i++) c[i] = 200 + i;
    got = run_one(e, c, 18, 6, &r);
    CHECK_MSG(got == 12 && same_as_cold(&r, c, 18, 6), "diverging prompt: n_cached %d", got);
    /* nothing in common (not even the first token) */
    make_prompt(d, 9, 901);
    d[0] = 3;
    got = run_one(e, d, 9, 6, &r);
    CHECK_MSG(got == 0 && same_as_cold(&r, d, 9, 6), "unrelated prompt: n_cached %d", got);
    /* a cancelled request: its KV holds what was computed before the cancel, no more */
    make_prompt(x, 30, 902);
    x[0] = 4;
    rf_request_params p = greedy(40);
    rf_error err = {0};
    rec_init(&r);
    r.e = e;
    r.cancel_after = 3;
    CHECK(rf_engine_submit(e, x, 30, &p, on_event, &r, NULL, &err) == RF_OK);
    rec_wait(&r);
    CHECK(r.finish == RF_FINISH_CANCELLED && r.n >= 3 && r.n < 40);
    int cancelled_n = r.n;
    int32_t y[64];
    memcpy(y, x, 30 * sizeof *x);
    memcpy(y + 30, r.tokens, (size_t)cancelled_n * sizeof *x);
    for (int i = 0; i < 4; i++) y[30 + cancelled_n + i] = 9 + i;
    const int NY = 30 + cancelled_n + 4;
    got = run_one(e, y, NY, 8, &r);
    CHECK_MSG(got == 30 + cancelled_n - 1 && same_as_cold(&r, y, NY, 8),
              "after a cancel: n_cached %d (want %d)", got, 30 + cancelled_n - 1);
    rf_engine_get_stats(e, &st);
    CHECK(st.running == 0 && st.kv_reserved == 0 && st.kv_cached > 0);
    rf_engine_close(e);

    /* the cache off: the same continued conversation computes everything */
    e = open_engine_cache(2, 0, 8, false);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(run_one(e, a, NA, GA, &r) == 0);
    CHECK(run_one(e, b, NB, 12, &r) == 0 && same_as_cold(&r, b, NB, 12));
    rf_engine_get_stats(e, &st);
    CHECK(st.prefix_queries == 0 && st.prefix_hits == 0 && st.kv_cached == 0);
    rf_engine_close(e);
}

/* On sliding-window layers a ring keeps the last window + batch positions (4 + 64 = 68 here):
 * a long cached sequence can be continued, but a short prefix of it can no longer be kept, so
 * it is not reused (one slot, so there is no other to choose). */
static void test_prefix_cache_ring(void) {
    rf_engine *e = open_engine(1, 0, 8);
    CHECK(e != NULL);
    if (!e) return;
    int32_t x[96], z[96], y[32];
    make_prompt(x, 40, 903);
    static rec r;
    CHECK(run_one(e, x, 40, 40, &r) == 0); /* 79 positions: the rings hold 11..78 */
    memcpy(z, x, 40 * sizeof *x);
    memcpy(z + 40, r.tokens, 30 * sizeof *x);
    z[70] = r.tokens[30] == 5 ? 6 : 5;
    z[71] = 8;
    int32_t got = run_one(e, z, 72, 8, &r);
    CHECK_MSG(got == 70 && same_as_cold(&r, z, 72, 8), "long continuation: n_cached %d", got);
    memcpy(y, x, 10 * sizeof *x);
    for (int i = 10; i < 20; i++) y[i] = 100 + i;
    got = run_one(e, y, 20, 8, &r);
    CHECK_MSG(got == 0 && same_as_cold(&r, y, 20, 8), "short prefix of a long sequence: %d", got);
    rf_engine_close(e);
}

static void test_profile(void) {
    rf_engine *e = open_engine(1, 0, 8);
    CHECK(e != NULL);
    if (!e) return;
    int32_t x[32], y[32], z[32];
    make_prompt(x, 20, 904);
    make_prompt(y, 20, 905);
    make_prompt(z, 20, 906);
    static rec r;
    rf_engine_profile p;
    run_one(e, x, 20, 6, &r);
    rf_engine_get_profile(e, &p);
    CHECK(p.steps == 0 && p.tokens == 0);
    CHECK(p.n_stages > 0 && p.n_stages <= RF_ENGINE_PROF_STAGES && !strcmp(p.stage[0], "embed"));
    rf_engine_profile_enable(e, true);
    int32_t cached = run_one(e, y, 20, 6, &r); /* one prefill step, 5 decode steps */
    rf_engine_get_profile(e, &p);
    int64_t total = 0;
    for (int i = 0; i < p.n_stages; i++) total += p.ns[i];
    CHECK_MSG(p.steps == 6 && p.tokens == 20 - cached + 5 && total > 0,
              "profiled %lld steps, %lld tokens (%d cached)", (long long)p.steps,
              (long long)p.tokens, cached);
    rf_engine_profile_enable(e, false);
    rec_init(&r);
    r.e = e;
    r.profile_first = 1;
    rf_request_params q = greedy(6);
    rf_error err = {0};
    CHECK(rf_engine_submit(e, z, 20, &q, on_event, &r, NULL, &err) == RF_OK);
    rec_wait(&r);
    rf_engine_get_profile(e, &p);
    CHECK_MSG(p.steps == 5 && p.tokens == 5, "from the first token: %lld steps, %lld tokens",
              (long long)p.steps, (long long)p.tokens);
    rf_engine_profile_enable(e, false);
    run_one(e, x, 20, 6, &r);
    rf_engine_get_profile(e, &p);
    CHECK(p.steps == 5 && p.tokens == 5); /* off: kept, not counting */
    rf_engine_close(e);
}

int main(void) {
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q8_0;
    g_model = tiny_write_file(&s, "engine");
    CHECK(g_model != NULL);
    static char path[256];
    snprintf(path, sizeof path, "%s", g_model);
    g_model = path;
    test_single_and_batched();
    test_concurrent_submitters();
    test_cancel();
    test_budget_and_queue();
    test_stop_and_args();
    test_nonfinite_logits();
    test_prefix_cache();
    test_prefix_cache_ring();
    test_profile();
    remove(path);
    return check_summary("test_engine");
}
