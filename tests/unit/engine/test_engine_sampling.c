/* test_engine_sampling.c: the engine's logprobs and penalties on a tiny model. Logprobs: every
 * token event of a request that asks carries values <= 0 whose exponentials sum to at most 1,
 * the greedy token is the first alternative with the same log-probability, and all of them equal
 * a log-softmax of the full logits of the same position computed here on a context (teacher
 * forcing the engine's tokens); asking for them changes no token, also batched beside a request
 * that does not ask. Penalties: frequency_penalty 2 changes a greedy output that repeats itself
 * and makes it repeat less; a penalised request leaves the one batched beside it unchanged; the
 * parameters' range checks. The seed a request ends on (rf_event.next_seed) continues its random
 * stream: two requests, the second seeded with it and continuing the first's tokens, sample what
 * one request twice as long samples. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "model/context.h"
#include "model/sampler.h"
#include "roofline/engine.h"
#include "tiny_model.h"

#define GEN 24

typedef struct lrec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, done, bad_events;
    int32_t tok[GEN];
    float lp[GEN];
    int32_t n_top[GEN];
    int32_t ids[GEN][RF_MAX_TOP_LOGPROBS];
    float lps[GEN][RF_MAX_TOP_LOGPROBS];
    rf_finish finish;
    uint64_t next_seed; /* the final event's */
} lrec;

static void lrec_init(lrec *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void on_event(void *user, const rf_event *ev) {
    lrec *r = user;
    pthread_mutex_lock(&r->mu);
    if (ev->token >= 0 && r->n < GEN) {
        int i = r->n++;
        r->tok[i] = ev->token;
        r->lp[i] = ev->logprob;
        r->n_top[i] = ev->n_top;
        if (ev->n_top > RF_MAX_TOP_LOGPROBS || (ev->n_top > 0 && !ev->top_ids)) r->bad_events++;
        for (int j = 0; j < ev->n_top && j < RF_MAX_TOP_LOGPROBS; j++) {
            r->ids[i][j] = ev->top_ids[j];
            r->lps[i][j] = ev->top_logprobs[j];
        }
    }
    if (ev->finish != RF_FINISH_NONE) {
        r->finish = ev->finish;
        r->next_seed = ev->next_seed;
        r->done = 1;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

static void lrec_wait(lrec *r) {
    pthread_mutex_lock(&r->mu);
    while (!r->done) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static const char *g_model;

static rf_engine *open_engine(void) {
    rf_engine_params p = rf_engine_default_params();
    p.model_path = g_model;
    p.n_threads = 2;
    p.max_seqs = 4;
    p.n_ctx = 96;
    p.max_step_tokens = 64;
    rf_engine *e = NULL;
    rf_error err = {0};
    if (rf_engine_open(&p, &e, &err)) fprintf(stderr, "open: %s\n", err.msg);
    return e;
}

static rf_request_params greedy(void) {
    rf_request_params p = rf_request_default_params();
    p.max_tokens = GEN;
    p.ignore_eos = true; /* random weights: keep going so lengths are known */
    return p;
}

/* Submits each request (prompt, params) at once, so they share steps, and waits for all. */
static void run_together(rf_engine *e, const int32_t *const *prompts, const int *lens,
                         const rf_request_params *ps, lrec *out, int n) {
    rf_error err = {0};
    for (int i = 0; i < n; i++) {
        lrec_init(&out[i]);
        CHECK(rf_engine_submit(e, prompts[i], lens[i], &ps[i], on_event, &out[i], NULL, &err) ==
              RF_OK);
    }
    for (int i = 0; i < n; i++) lrec_wait(&out[i]);
}

/* Teacher-forces r's tokens through a context and checks r's logprobs against a log-softmax of
 * each position's full logits. */
static void check_against_context(const int32_t *prompt, int n_prompt, const lrec *r, int k) {
    rf_model *m = NULL;
    rf_error err = {0};
    CHECK(rf_model_load(g_model, &m, &err) == RF_OK);
    if (!m) return;
    const int32_t nv = rf_model_hparams(m)->n_vocab;
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = 96;
    cp.n_batch = 64;
    cp.n_threads = 2;
    rf_context *c = NULL;
    CHECK(rf_context_new(m, &cp, &c, &err) == RF_OK);
    int32_t pos[64], seq[64] = {0};
    int8_t lg[64] = {0};
    for (int i = 0; i < n_prompt; i++) pos[i] = i;
    lg[n_prompt - 1] = RF_OUT_LOGITS;
    rf_batch b = {n_prompt, prompt, pos, seq, lg};
    CHECK(rf_decode(c, &b, &err) == RF_OK);
    int32_t ids[RF_MAX_TOP_LOGPROBS];
    float vals[RF_MAX_TOP_LOGPROBS];
    int bad_lp = 0, bad_top = 0, bad_greedy = 0, bad_mass = 0;
    for (int i = 0; i < r->n; i++) {
        const float *row = rf_context_logits(c, 0);
        double mx = row[rf_argmax(row, nv)], z = 0;
        for (int32_t v = 0; v < nv; v++) z += exp((double)row[v] - mx);
        double lse = mx + log(z);
        bad_lp += fabs(r->lp[i] - ((double)row[r->tok[i]] - lse)) > 1e-4 || r->lp[i] > 0;
        CHECK(r->n_top[i] == k);
        rf_top_k(row, nv, k, ids, vals);
        double mass = 0;
        for (int j = 0; j < k && j < r->n_top[i]; j++) {
            bad_top += r->ids[i][j] != ids[j] || fabs(r->lps[i][j] - (vals[j] - lse)) > 1e-4 ||
                       r->lps[i][j] > 0;
            mass += exp(r->lps[i][j]);
        }
        bad_mass += mass > 1.0 + 1e-5;
        if (k > 0) bad_greedy += r->tok[i] != r->ids[i][0] || r->lp[i] != r->lps[i][0];
        bad_greedy += r->tok[i] != rf_argmax(row, nv);
        int32_t p = n_prompt + i;
        int8_t one = RF_OUT_LOGITS;
        rf_batch d = {1, &r->tok[i], &p, seq, &one};
        CHECK(rf_decode(c, &d, &err) == RF_OK);
    }
    CHECK_MSG(bad_lp == 0, "%d of %d token logprobs differ from the log-softmax", bad_lp, r->n);
    CHECK_MSG(bad_top == 0, "%d top alternatives differ from the log-softmax (k %d)", bad_top, k);
    CHECK_MSG(bad_mass == 0, "%d positions whose alternatives hold more than all the mass",
              bad_mass);
    CHECK_MSG(bad_greedy == 0, "%d greedy tokens are not the first alternative / the argmax",
              bad_greedy);
    rf_context_free(c);
    rf_model_free(m);
}

static void test_logprobs(void) {
    rf_engine *e = open_engine();
    CHECK(e != NULL);
    if (!e) return;
    int32_t prompt[7] = {2, 40, 41, 42, 43, 44, 45};
    const int32_t *prompts[3] = {prompt, prompt, prompt};
    int lens[3] = {7, 7, 7};
    rf_request_params ps[3] = {greedy(), greedy(), greedy()};
    ps[0].logprobs = 5;
    ps[1].logprobs = -1; /* batched beside: the fused top-k head for this one */
    ps[2].logprobs = 0;  /* only the token's own */
    lrec r[3];
    run_together(e, prompts, lens, ps, r, 3);
    for (int i = 0; i < 3; i++)
        CHECK(r[i].finish == RF_FINISH_LENGTH && r[i].n == GEN && r[i].bad_events == 0);
    CHECK(memcmp(r[0].tok, r[1].tok, sizeof r[0].tok) == 0); /* logprobs change no token */
    CHECK(memcmp(r[0].tok, r[2].tok, sizeof r[0].tok) == 0);
    int none = 1;
    for (int i = 0; i < GEN; i++) none &= r[1].n_top[i] == 0 && r[1].lp[i] == 0;
    CHECK(none);
    check_against_context(prompt, 7, &r[0], 5);
    check_against_context(prompt, 7, &r[2], 0);
    /* the most alternatives there are */
    ps[0].logprobs = RF_MAX_TOP_LOGPROBS;
    run_together(e, prompts, lens, ps, r, 1);
    check_against_context(prompt, 7, &r[0], RF_MAX_TOP_LOGPROBS);
    rf_engine_close(e);
}

/* Generated tokens that already appeared earlier in the output. */
static int repeats(const lrec *r) {
    int n = 0;
    for (int i = 0; i < r->n; i++)
        for (int j = 0; j < i; j++)
            if (r->tok[j] == r->tok[i]) {
                n++;
                break;
            }
    return n;
}

static void test_penalties(void) {
    rf_engine *e = open_engine();
    CHECK(e != NULL);
    if (!e) return;
    int32_t prompt[12] = {2, 40, 41, 40, 41, 40, 41, 40, 41, 40, 41, 40};
    const int32_t *prompts[3] = {prompt, prompt, prompt};
    int lens[3] = {12, 12, 12};
    rf_request_params ps[3] = {greedy(), greedy(), greedy()};
    ps[1].frequency_penalty = 2.0f;
    ps[2].presence_penalty = 0.0f; /* explicitly 0: the same as no penalty */
    lrec r[3];
    run_together(e, prompts, lens, ps, r, 3);
    CHECK(r[0].n == GEN && r[1].n == GEN && r[2].n == GEN);
    int plain = repeats(&r[0]), pen = repeats(&r[1]);
    CHECK_MSG(plain > 0, "the plain greedy output does not repeat (%d): no test", plain);
    CHECK(memcmp(r[0].tok, r[1].tok, sizeof r[0].tok) != 0);
    CHECK_MSG(pen < plain, "repeated tokens: %d with frequency_penalty 2, %d without", pen, plain);
    CHECK(memcmp(r[0].tok, r[2].tok, sizeof r[0].tok) == 0);
    /* the penalised request ran beside the plain ones: alone, it gives the same tokens */
    lrec solo;
    run_together(e, prompts, lens, &ps[1], &solo, 1);
    CHECK(memcmp(solo.tok, r[1].tok, sizeof solo.tok) == 0);
    /* the range checks */
    rf_error err = {0};
    rf_request_params q = greedy();
    q.presence_penalty = 2.5f;
    CHECK(rf_engine_check_request(e, &q, &err) == RF_ERR_ARG && strstr(err.msg, "presence"));
    q = greedy();
    q.frequency_penalty = -2.5f;
    CHECK(rf_engine_check_request(e, &q, &err) == RF_ERR_ARG && strstr(err.msg, "frequency"));
    q = greedy();
    q.logprobs = RF_MAX_TOP_LOGPROBS + 1;
    CHECK(rf_engine_check_request(e, &q, &err) == RF_ERR_ARG && strstr(err.msg, "logprobs"));
    q.logprobs = -2;
    CHECK(rf_engine_check_request(e, &q, &err) == RF_ERR_ARG);
    q = greedy();
    q.presence_penalty = -2.0f;
    q.frequency_penalty = 2.0f;
    q.logprobs = RF_MAX_TOP_LOGPROBS;
    CHECK(rf_engine_check_request(e, &q, &err) == RF_OK);
    rf_engine_close(e);
}

static void test_next_seed(void) {
    enum { H = GEN / 2 };
    rf_engine *e = open_engine();
    CHECK(e != NULL);
    if (!e) return;
    int32_t prompt[7 + GEN] = {2, 40, 41, 42, 43, 44, 45};
    const int32_t *prompts[1] = {prompt};
    int len = 7;
    rf_request_params p = greedy();
    p.temperature = 1.0f;
    p.top_k = 0;
    p.seed = 1234;
    lrec whole, first, second;
    run_together(e, prompts, &len, &p, &whole, 1);
    p.max_tokens = H;
    run_together(e, prompts, &len, &p, &first, 1);
    CHECK(whole.n == GEN && first.n == H &&
          memcmp(first.tok, whole.tok, H * sizeof *first.tok) == 0);
    CHECK(first.next_seed != 1234); /* it drew */
    memcpy(prompt + 7, first.tok, H * sizeof *prompt);
    len = 7 + H;
    p.seed = first.next_seed;
    run_together(e, prompts, &len, &p, &second, 1);
    CHECK_MSG(second.n == H && memcmp(second.tok, whole.tok + H, H * sizeof *second.tok) == 0,
              "the request seeded with next_seed does not continue the stream");
    rf_engine_close(e);
}

int main(void) {
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q8_0;
    const char *p = tiny_write_file(&s, "engine-sampling");
    CHECK(p != NULL);
    static char path[256];
    snprintf(path, sizeof path, "%s", p ? p : "");
    g_model = path;
    test_logprobs();
    test_penalties();
    test_next_seed();
    remove(path);
    return check_summary("test_engine_sampling");
}
