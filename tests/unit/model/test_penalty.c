/* test_penalty.c: the sampler's presence and frequency penalties (the argmax moves when
 * a penalty says it should, frequency scales with the count, negative penalties promote, the
 * counts are per request, every sampling mode sees penalised logits, the caller's logits stay
 * untouched, range checks) and its log-probabilities (against a log-softmax computed here). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "model/penalty.h"
#include "model/sampler.h"

#define NV 16

static rf_sampler *mk(float temp, int32_t k, float presence, float frequency) {
    rf_sampler_params sp = {temp, k, 1.0f, 3, presence, frequency};
    rf_sampler *s = NULL;
    rf_error err = {0};
    CHECK(rf_sampler_new(&sp, NV, &s, &err) == RF_OK);
    return s;
}

static void base_logits(float *x) {
    for (int i = 0; i < NV; i++) x[i] = -1.0f - 0.1f * (float)i;
}

static void test_penalty_struct(void) {
    rf_penalty p;
    rf_error err = {0};
    CHECK(rf_penalty_init(&p, NV, &err) == RF_OK);
    float x[NV];
    base_logits(x);
    rf_penalty_add(&p, 3);
    rf_penalty_add(&p, 3);
    rf_penalty_add(&p, 3);
    rf_penalty_add(&p, 7);
    rf_penalty_add(&p, -1); /* out of range: ignored */
    rf_penalty_add(&p, NV);
    CHECK(p.n_seen == 2 && p.count[3] == 3 && p.count[7] == 1);
    rf_penalty_apply(&p, 0.5f, 0.25f, x);
    CHECK_NEAR(x[3], -1.3f - (0.5f + 3 * 0.25f), 1e-6); /* presence once, frequency per count */
    CHECK_NEAR(x[7], -1.7f - (0.5f + 0.25f), 1e-6);
    CHECK_NEAR(x[4], -1.4f, 1e-6); /* unseen tokens keep their logits */
    rf_penalty_clear(&p);
    CHECK(p.n_seen == 0 && p.count[3] == 0 && p.count[7] == 0);
    rf_penalty_free(&p);
}

static void test_presence_moves_argmax(void) {
    float x[NV];
    base_logits(x);
    x[0] = 5.0f;
    x[1] = 4.5f;
    float saved[NV];
    memcpy(saved, x, sizeof x);
    rf_sampler *off = mk(0, 0, 0, 0), *on = mk(0, 0, 1.0f, 0);
    CHECK(rf_sampler_sample(off, x) == 0 && rf_sampler_sample(on, x) == 0);
    rf_sampler_accept(off, 0);
    rf_sampler_accept(on, 0);
    CHECK(rf_sampler_sample(off, x) == 0);  /* no penalty: still token 0 */
    CHECK(rf_sampler_sample(on, x) == 1);   /* 5 - 1 = 4 < 4.5 */
    CHECK(memcmp(saved, x, sizeof x) == 0); /* the caller's logits are not written */
    rf_sampler_accept(on, 0);               /* presence does not grow with the count */
    x[1] = 3.9f;
    CHECK(rf_sampler_sample(on, x) == 0); /* 5 - 1 = 4 > 3.9 */
    /* a new request (configure) forgets the counts */
    rf_sampler_params sp = {0, 0, 1.0f, 3, 1.0f, 0};
    x[1] = 4.5f;
    rf_sampler_configure(on, &sp);
    CHECK(rf_sampler_sample(on, x) == 0);
    CHECK(rf_sampler_fits_top(off, 64) && !rf_sampler_fits_top(on, 64));
    rf_sampler_free(off);
    rf_sampler_free(on);
}

static void test_frequency_scales(void) {
    float x[NV];
    base_logits(x);
    x[0] = 5.0f;
    x[1] = 4.0f;
    rf_sampler *s = mk(0, 0, 0, 0.4f);
    int switched_at = -1;
    for (int n = 1; n <= 4 && switched_at < 0; n++) {
        rf_sampler_accept(s, 0);
        if (rf_sampler_sample(s, x) == 1) switched_at = n; /* 5 - 0.4 n < 4 from n = 3 */
    }
    CHECK_MSG(switched_at == 3, "switched after %d counts", switched_at);
    rf_sampler_free(s);
}

static void test_negative_promotes(void) {
    float x[NV];
    base_logits(x);
    x[0] = 5.0f;
    x[1] = 5.5f;
    rf_sampler *pres = mk(0, 0, -1.0f, 0), *freq = mk(0, 0, 0, -0.3f);
    CHECK(rf_sampler_sample(pres, x) == 1 && rf_sampler_sample(freq, x) == 1);
    rf_sampler_accept(pres, 0);
    rf_sampler_accept(freq, 0);
    CHECK(rf_sampler_sample(pres, x) == 0); /* 5 + 1 = 6 > 5.5 */
    CHECK(rf_sampler_sample(freq, x) == 1); /* 5 + 0.3 = 5.3 < 5.5 */
    rf_sampler_accept(freq, 0);
    CHECK(rf_sampler_sample(freq, x) == 0); /* 5 + 0.6 = 5.6 > 5.5 */
    rf_sampler_free(pres);
    rf_sampler_free(freq);
}

/* top-k and plain temperature sampling draw from the penalised distribution: a token penalised
 * by 2 per count after 3 counts (-6.5 in all) is never drawn again at temperature 0.05. */
static void test_sampling_modes_see_penalties(void) {
    float x[NV];
    base_logits(x);
    x[5] = 3.0f;
    x[9] = 2.0f;
    rf_sampler *topk = mk(0.05f, 2, 0.5f, 2.0f), *full = mk(0.05f, 0, 0.5f, 2.0f);
    int before_k = 0, before_f = 0;
    for (int i = 0; i < 50; i++) {
        before_k += rf_sampler_sample(topk, x) == 5;
        before_f += rf_sampler_sample(full, x) == 5;
    }
    CHECK(before_k == 50 && before_f == 50);
    for (int i = 0; i < 3; i++) {
        rf_sampler_accept(topk, 5);
        rf_sampler_accept(full, 5);
    }
    int after_k = 0, after_f = 0;
    for (int i = 0; i < 50; i++) {
        after_k += rf_sampler_sample(topk, x) == 9;
        after_f += rf_sampler_sample(full, x) == 9;
    }
    CHECK_MSG(after_k == 50 && after_f == 50, "token 9 drawn %d (top-k) and %d (full) of 50",
              after_k, after_f);
    rf_sampler_free(topk);
    rf_sampler_free(full);
}

static void test_checks(void) {
    rf_sampler *s = NULL;
    rf_error err = {0};
    rf_sampler_params bad = {1.0f, 0, 1.0f, 0, 2.5f, 0};
    CHECK(rf_sampler_new(&bad, NV, &s, &err) == RF_ERR_ARG && !s &&
          strstr(err.msg, "presence_penalty"));
    bad = (rf_sampler_params){1.0f, 0, 1.0f, 0, 0, -2.01f};
    CHECK(rf_sampler_check(&bad, &err) == RF_ERR_ARG && strstr(err.msg, "frequency_penalty"));
    bad.frequency_penalty = NAN;
    CHECK(rf_sampler_check(&bad, &err) == RF_ERR_ARG);
    bad = (rf_sampler_params){1.0f, 0, 1.0f, 0, -2.0f, 2.0f}; /* the ends are allowed */
    CHECK(rf_sampler_check(&bad, &err) == RF_OK);
}

static void test_logprobs(void) {
    float x[NV];
    uint64_t seed = 42;
    for (int i = 0; i < NV; i++) x[i] = 4.0f * rng_sym(&seed);
    x[11] = x[4]; /* a tie: the lower id comes first */
    double mx = x[0];
    for (int i = 1; i < NV; i++) mx = x[i] > mx ? x[i] : mx;
    double z = 0;
    for (int i = 0; i < NV; i++) z += exp(x[i] - mx);
    double lse = mx + log(z);
    rf_sampler *s = mk(0, 0, 1.5f, 1.5f); /* penalties do not change logprobs */
    rf_sampler_accept(s, rf_argmax(x, NV));
    int32_t ids[NV + 4];
    float lps[NV + 4], lp = 0;
    int32_t m = rf_sampler_logprobs(s, x, 7, NV + 4, ids, lps, &lp);
    CHECK(m == NV); /* capped at the vocabulary */
    CHECK_NEAR(lp, x[7] - lse, 1e-5);
    double mass = 0;
    int sorted = 1, ties = 1, seen7 = 0;
    for (int i = 0; i < m; i++) {
        CHECK_NEAR(lps[i], x[ids[i]] - lse, 1e-5);
        CHECK(lps[i] <= 0);
        mass += exp(lps[i]);
        if (i) sorted &= lps[i] <= lps[i - 1];
        if (i && lps[i] == lps[i - 1]) ties &= ids[i] > ids[i - 1];
        seen7 |= ids[i] == 7;
    }
    CHECK(sorted && ties && seen7);
    CHECK_NEAR(mass, 1.0, 1e-5); /* the whole vocabulary sums to 1 */
    CHECK(ids[0] == rf_argmax(x, NV));
    /* fewer alternatives: the same leading ones; k = 0 gives only the token's */
    int32_t ids3[3];
    float lps3[3];
    CHECK(rf_sampler_logprobs(s, x, 7, 3, ids3, lps3, &lp) == 3);
    CHECK(memcmp(ids3, ids, sizeof ids3) == 0 && memcmp(lps3, lps, sizeof lps3) == 0);
    CHECK(rf_sampler_logprobs(s, x, 2, 0, ids3, lps3, &lp) == 0);
    CHECK(rf_top_k(x, NV, 0, ids3, lps3) == 0); /* k = 0: nothing (and nothing read) */
    CHECK_NEAR(lp, x[2] - lse, 1e-5);
    CHECK(rf_sampler_logprobs(s, x, NV, 0, ids3, lps3, &lp) == 0 && isinf(lp) && lp < 0);
    /* large logits: no overflow (the maximum is subtracted first) */
    for (int i = 0; i < NV; i++) x[i] = 1000.0f + (float)i;
    rf_sampler_logprobs(s, x, NV - 1, 1, ids3, lps3, &lp);
    CHECK(isfinite(lp) && lp < 0 && lp > -1.0f && ids3[0] == NV - 1 && lps3[0] == lp);
    rf_sampler_free(s);
}

int main(void) {
    test_penalty_struct();
    test_presence_moves_argmax();
    test_frequency_scales();
    test_negative_promotes();
    test_sampling_modes_see_penalties();
    test_checks();
    test_logprobs();
    return check_summary("test_penalty");
}
