/* test_sampler.c: greedy, temperature, top-k, top-p (a nucleus that must exclude tokens) and
 * seeds; the selection helpers; sample_top equal to full sampling at temperature > 0. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "model/sampler.h"

#define V 262144

static float g_logits[V];

static rf_sampler *mk(float temp, int32_t k, float p, uint64_t seed) {
    rf_sampler_params sp = {temp, k, p, seed, 0.0f, 0.0f};
    rf_sampler *s = NULL;
    rf_error err = {0};
    CHECK(rf_sampler_new(&sp, V, &s, &err) == RF_OK);
    return s;
}

static void fill(uint64_t seed) {
    for (int i = 0; i < V; i++) g_logits[i] = 3.0f * rng_sym(&seed);
}

int main(void) {
    fill(1);
    /* a few clear leaders */
    g_logits[1000] = 20.0f;
    g_logits[2000] = 19.0f;
    g_logits[3000] = 18.5f;

    /* argmax and top-k helpers, ties to the lower index */
    CHECK(rf_argmax(g_logits, V) == 1000);
    float t[5] = {1, 3, 3, 2, 3};
    CHECK(rf_argmax(t, 5) == 1);
    int32_t idx[3];
    float val[3];
    CHECK(rf_top_k(t, 5, 3, idx, val) == 3);
    CHECK(idx[0] == 1 && idx[1] == 2 && idx[2] == 4 && val[0] == 3);

    /* greedy */
    rf_sampler *g = mk(0, 40, 0.95f, 0);
    for (int i = 0; i < 10; i++) CHECK(rf_sampler_sample(g, g_logits) == 1000);
    rf_sampler_free(g);

    /* top-k 1 is greedy whatever the temperature */
    rf_sampler *k1 = mk(5.0f, 1, 1.0f, 3);
    for (int i = 0; i < 100; i++) CHECK(rf_sampler_sample(k1, g_logits) == 1000);
    rf_sampler_free(k1);

    /* top-k 3 at temperature 1: only the three leaders, with frequencies near softmax */
    rf_sampler *k3 = mk(1.0f, 3, 1.0f, 7);
    int cnt[3] = {0}, other = 0;
    for (int i = 0; i < 4000; i++) {
        int32_t id = rf_sampler_sample(k3, g_logits);
        if (id == 1000)
            cnt[0]++;
        else if (id == 2000)
            cnt[1]++;
        else if (id == 3000)
            cnt[2]++;
        else
            other++;
    }
    double z = 1 + exp(-1.0) + exp(-1.5);
    CHECK(other == 0);
    CHECK_NEAR(cnt[0] / 4000.0, 1 / z, 0.03);
    CHECK_NEAR(cnt[1] / 4000.0, exp(-1.0) / z, 0.03);
    CHECK_NEAR(cnt[2] / 4000.0, exp(-1.5) / z, 0.03);
    rf_sampler_free(k3);

    /* top-p: with p = 0.5 the leader alone holds 1/z = 0.63 of the top-3 mass */
    rf_sampler *p5 = mk(1.0f, 3, 0.5f, 9);
    for (int i = 0; i < 200; i++) CHECK(rf_sampler_sample(p5, g_logits) == 1000);
    rf_sampler_free(p5);

    /* top-p alone (no top-k) over the full vocabulary: with leaders at 12, 11, 10.5 the
     * 262141-token tail holds most of the mass, so the nucleus of 0.9 spans both kinds */
    g_logits[1000] = 12.0f;
    g_logits[2000] = 11.0f;
    g_logits[3000] = 10.5f;
    rf_sampler *pn = mk(1.0f, 0, 0.9f, 11);
    int lead = 0, tail = 0;
    for (int i = 0; i < 300; i++) {
        int32_t id = rf_sampler_sample(pn, g_logits);
        if (id == 1000 || id == 2000 || id == 3000)
            lead++;
        else
            tail++;
    }
    CHECK(lead > 0 && tail > 0);
    rf_sampler_free(pn);

    /* top-p must exclude (a 4096-token vocabulary, so that many draws stay cheap): A, B, C hold
     * 0.5, 0.3, 0.15 of the mass and the other 4093 tokens 0.05 between them, so the nucleus of
     * 0.7 is {A, B} (0.5 < 0.7 <= 0.8): C and the tail never come, A and B come 5 : 3. Ignoring
     * top-p would give C ~15% of the draws. */
    enum { VS = 4096 };
    static float small[VS];
    rf_error serr = {0};
    for (int i = 0; i < VS; i++) small[i] = logf(0.05f / (float)(VS - 3));
    small[10] = logf(0.5f);
    small[20] = logf(0.3f);
    small[30] = logf(0.15f);
    rf_sampler_params spp = {1.0f, 0, 0.7f, 13, 0.0f, 0.0f};
    rf_sampler *p7 = NULL;
    CHECK(rf_sampler_new(&spp, VS, &p7, &serr) == RF_OK);
    int na = 0, nb = 0, excluded = 0;
    for (int i = 0; p7 && i < 2000; i++) {
        int32_t id = rf_sampler_sample(p7, small);
        na += id == 10;
        nb += id == 20;
        excluded += id != 10 && id != 20;
    }
    CHECK_MSG(excluded == 0, "top-p 0.7: %d of 2000 draws outside the nucleus", excluded);
    CHECK_NEAR(na / 2000.0, 0.625, 0.04); /* 3.7 standard deviations (and seeded) */
    CHECK_NEAR(nb / 2000.0, 0.375, 0.04);
    rf_sampler_free(p7);

    /* rf_sampler_sample_top equals rf_sampler_sample at temperature > 0 (top-k within the
     * candidates given, with top-p): two samplers of the same seed, one on the full logits,
     * one on the 64 best candidates, draw the same token every time, over 300 rows */
    {
        enum { NTOP = 64 };
        rf_sampler_params sps = {0.8f, 20, 0.9f, 77, 0.0f, 0.0f};
        rf_sampler *full = NULL, *top = NULL;
        CHECK(rf_sampler_new(&sps, VS, &full, &serr) == RF_OK);
        CHECK(rf_sampler_new(&sps, VS, &top, &serr) == RF_OK);
        CHECK(top && rf_sampler_fits_top(top, NTOP));
        int32_t ids[NTOP];
        float vals[NTOP];
        int agree = 0, distinct = 0, prev = -1;
        uint64_t rs = 1000;
        for (int row = 0; full && top && row < 300; row++) {
            for (int i = 0; i < VS; i++) small[i] = 3.0f * rng_sym(&rs);
            for (int j = 0; j < 8; j++) small[(row * 7919 + j * 1031) % VS] = 4.0f + 0.1f * j;
            int32_t n = rf_top_k(small, VS, NTOP, ids, vals);
            int32_t a = rf_sampler_sample(full, small);
            int32_t b = rf_sampler_sample_top(top, ids, vals, n);
            agree += a == b;
            distinct += a != prev;
            prev = a;
        }
        CHECK_MSG(agree == 300, "sample_top agreed with full sampling %d of 300 times", agree);
        CHECK(distinct > 100); /* the draws were random, not one greedy token */
        rf_sampler_free(full);
        rf_sampler_free(top);
    }

    /* same seed, same stream; another seed, another stream; reset restarts */
    fill(5);
    rf_sampler *a = mk(0.9f, 40, 0.95f, 1234), *b = mk(0.9f, 40, 0.95f, 1234),
               *c = mk(0.9f, 40, 0.95f, 99);
    int32_t sa[64], differ = 0;
    int same = 1;
    for (int i = 0; i < 64; i++) {
        sa[i] = rf_sampler_sample(a, g_logits);
        same &= sa[i] == rf_sampler_sample(b, g_logits);
        differ += sa[i] != rf_sampler_sample(c, g_logits);
    }
    CHECK(same);
    CHECK(differ > 0);
    rf_sampler_reset(a);
    for (int i = 0; i < 64; i++) same &= sa[i] == rf_sampler_sample(a, g_logits);
    CHECK(same);
    rf_sampler_free(a);
    rf_sampler_free(b);
    rf_sampler_free(c);

    /* parameter checks */
    rf_sampler_params bad = {1.0f, 40, 1.5f, 0, 0.0f, 0.0f};
    rf_sampler *s = NULL;
    rf_error err = {0};
    CHECK(rf_sampler_new(&bad, V, &s, &err) == RF_ERR_ARG && s == NULL && strstr(err.msg, "top_p"));
    bad.top_p = 0.9f;
    bad.top_k = -1;
    CHECK(rf_sampler_new(&bad, V, &s, &err) == RF_ERR_ARG && strstr(err.msg, "top_k"));
    bad.top_k = 40;
    bad.temperature = NAN;
    CHECK(rf_sampler_new(&bad, V, &s, &err) == RF_ERR_ARG);
    return check_summary("test_sampler");
}
