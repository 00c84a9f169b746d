/* test_widen.c: the widened matmul path (rf_context_params.widen, `--widen`) against the native
 * integer kernels, on tiny random models (tests/unit/tiny_model.h) of every supported weight
 * format and both layer layouts (Gemma 3 and Llama-style):
 *  - the logits of a prompt and of the steps after it agree with the native path's within the
 *    error the native path's Q8 activations add (|widened - native| <= 2% of the row's largest
 *    |logit|, plus a small absolute floor), and the widened and native argmax agree on most
 *    steps;
 *  - F32 weights (where the native path also computes in floats) agree within float
 *    summation order;
 *  - the widened path is batch-invariant: a sequence's logits in a batch with another one are
 *    bit-identical to its logits alone;
 *  - the widened fused top-k head gives the same best candidates as the widened full logits;
 *  - the widened path on the scalar table agrees with the best table's (same decoded weights,
 *    the float dot and the other vector pieces differ only in summation order: within 0.1%).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/context.h"
#include "model/model.h"
#include "tiny_model.h"

#define N_PROMPT 6
#define N_STEPS  8
#define N_ROWS   (N_PROMPT + N_STEPS)

/* Greedy-feeds the same token sequence to a context, collecting every position's logits
 * (n_vocab each) into out[N_ROWS][n_vocab]. The tokens after the prompt are fixed (not sampled),
 * so two contexts see the same inputs whatever their logits. */
static int run_logits(const rf_model *m, bool widen, int isa, float *out, int32_t n_vocab) {
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 16;
    cp.n_threads = 2;
    cp.widen = widen;
    cp.isa = isa;
    rf_context *c = NULL;
    rf_error err = {0};
    if (rf_context_new(m, &cp, &c, &err) != RF_OK) {
        CHECK_MSG(0, "context: %s", err.msg);
        return -1;
    }
    CHECK(rf_context_widened(c) == widen);
    int32_t tok[N_PROMPT], pos[N_PROMPT], seq[N_PROMPT] = {0};
    int8_t lg[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) {
        tok[i] = 2 + 37 * i % (n_vocab - 2);
        pos[i] = i;
        lg[i] = RF_OUT_LOGITS;
    }
    rf_batch b = {N_PROMPT, tok, pos, seq, lg};
    int rc = rf_decode(c, &b, &err) == RF_OK ? 0 : -1;
    for (int i = 0; !rc && i < N_PROMPT; i++)
        memcpy(out + (size_t)i * n_vocab, rf_context_logits(c, i), (size_t)n_vocab * 4);
    for (int s = 0; !rc && s < N_STEPS; s++) {
        int32_t t = 5 + 11 * s % (n_vocab - 5), p = N_PROMPT + s, q = 0;
        int8_t l = RF_OUT_LOGITS;
        rf_batch one = {1, &t, &p, &q, &l};
        rc = rf_decode(c, &one, &err) == RF_OK ? 0 : -1;
        if (!rc)
            memcpy(out + (size_t)(N_PROMPT + s) * n_vocab, rf_context_logits(c, 0),
                   (size_t)n_vocab * 4);
    }
    CHECK_MSG(rc == 0, "decode: %s", err.msg);
    rf_context_free(c);
    return rc;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* max over rows of max |a - b| / max(|b|) */
static double max_rel_diff(const float *a, const float *b, int rows, int n) {
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        double amax = 1e-3, d = 0;
        for (int i = 0; i < n; i++) {
            const double bb = fabs(b[(size_t)r * n + i]);
            const double dd = fabs((double)a[(size_t)r * n + i] - b[(size_t)r * n + i]);
            amax = bb > amax ? bb : amax;
            d = dd > d ? dd : d;
        }
        worst = d / amax > worst ? d / amax : worst;
    }
    return worst;
}

/* Writes the tiny model of spec s to a temporary file (its path into path) and loads it. */
static rf_model *load_tiny(const tiny_spec *s, const char *tag, char *path, size_t cap) {
    const char *p = tiny_write_file(s, tag);
    CHECK(p != NULL);
    if (!p) return NULL;
    snprintf(path, cap, "%s", p);
    rf_model *m = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_model_load(path, &m, &err) == RF_OK, "%s", err.msg);
    if (!m) remove(path);
    return m;
}

static void test_type(const char *arch, rf_type wt) {
    tiny_spec s = tiny_default();
    s.arch = arch;
    s.wtype = wt;
    if (rf_type_get((uint32_t)wt)->block == 256) { /* K-quants: rows of whole super-blocks */
        s.n_embd = 256;
        s.n_ff = 512;
        s.head_dim = 128;
    }
    char path[256];
    rf_model *m = load_tiny(&s, "widen", path, sizeof path);
    if (!m) return;
    const int32_t V = rf_model_hparams(m)->n_vocab;
    const size_t sz = (size_t)N_ROWS * (size_t)V;
    float *nat = malloc(sz * 4), *wid = malloc(sz * 4), *wsc = malloc(sz * 4);
    CHECK(nat && wid && wsc);
    if (nat && wid && wsc && !run_logits(m, false, -1, nat, V) &&
        !run_logits(m, true, -1, wid, V) && !run_logits(m, true, RF_ISA_SCALAR, wsc, V)) {
        const double rel = max_rel_diff(wid, nat, N_ROWS, V);
        const double tol = wt == RF_TYPE_F32 ? 1e-4 : 0.02;
        int same = 0;
        for (int r = 0; r < N_ROWS; r++)
            same += argmax(wid + (size_t)r * V, V) == argmax(nat + (size_t)r * V, V);
        const double rel_sc = max_rel_diff(wsc, wid, N_ROWS, V);
        printf("  %-7s %-5s widened vs native: max diff %.3g of max |logit|, argmax %d/%d; "
               "scalar vs best widened %.3g\n",
               arch, rf_type_get((uint32_t)wt)->name, rel, same, N_ROWS, rel_sc);
        CHECK_MSG(rel <= tol, "%s %s: widened logits differ from native by %.3g (> %.3g)", arch,
                  rf_type_get((uint32_t)wt)->name, rel, tol);
        CHECK_MSG(same >= N_ROWS - 2, "%s %s: argmax agrees on %d of %d rows", arch,
                  rf_type_get((uint32_t)wt)->name, same, N_ROWS);
        CHECK_MSG(rel_sc <= 1e-3, "%s %s: scalar widened vs best widened %.3g", arch,
                  rf_type_get((uint32_t)wt)->name, rel_sc);
        /* a widened path that computed nothing would still agree with itself: it must differ
         * from the native one somewhere when the activations are quantized natively */
        if (wt != RF_TYPE_F32 && wt != RF_TYPE_F16 && wt != RF_TYPE_BF16)
            CHECK_MSG(rel > 0, "%s %s: widened logits are bit-identical to native", arch,
                      rf_type_get((uint32_t)wt)->name);
    }
    free(nat), free(wid), free(wsc);
    rf_model_free(m);
    remove(path);
}

/* Batch invariance and the fused top-k head, widened. */
static void test_batch_and_top(void) {
    tiny_spec s = tiny_default();
    s.wtype = RF_TYPE_Q4_0;
    char path[256];
    rf_model *m = load_tiny(&s, "widen-b", path, sizeof path);
    if (!m) return;
    rf_error err = {0};
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = 32;
    cp.n_batch = 8;
    cp.n_seq = 2;
    cp.n_threads = 2;
    cp.widen = true;
    rf_context *solo = NULL, *pair = NULL;
    CHECK(rf_context_new(m, &cp, &solo, &err) == RF_OK);
    CHECK(rf_context_new(m, &cp, &pair, &err) == RF_OK);
    if (solo && pair) {
        const int32_t V = rf_model_hparams(m)->n_vocab;
        float *a = malloc((size_t)V * 4);
        int bit_same = 1, top_ok = 1;
        for (int step = 0; step < 6 && a; step++) {
            int32_t t0 = 3 + step, t1 = 90 + 7 * step, pos = step, s0 = 0, s1 = 1;
            int8_t lg = RF_OUT_LOGITS;
            rf_batch one = {1, &t0, &pos, &s0, &lg};
            CHECK(rf_decode(solo, &one, &err) == RF_OK);
            memcpy(a, rf_context_logits(solo, 0), (size_t)V * 4);
            int32_t tk[2] = {t0, t1}, ps[2] = {pos, pos}, sq[2] = {s0, s1};
            int8_t tops[2] = {RF_OUT_LOGITS, RF_OUT_LOGITS};
            rf_batch two = {2, tk, ps, sq, tops};
            CHECK(rf_decode(pair, &two, &err) == RF_OK);
            bit_same &= memcmp(a, rf_context_logits(pair, 0), (size_t)V * 4) == 0;
            /* the fused head on the solo context's next step, against its own full logits */
            rf_context_seq_truncate(solo, 0, pos, &err);
            int8_t top = RF_OUT_TOP;
            rf_batch again = {1, &t0, &pos, &s0, &top};
            CHECK(rf_decode(solo, &again, &err) == RF_OK);
            const int32_t *ids;
            const float *vals;
            int32_t k = rf_context_top(solo, 0, &ids, &vals);
            CHECK(k > 0);
            top_ok &= k > 0 && ids[0] == argmax(a, V) && vals[0] == a[ids[0]];
        }
        CHECK_MSG(bit_same, "widened logits change with what else is in the batch");
        CHECK_MSG(top_ok, "widened fused top-k disagrees with the widened full logits");
        free(a);
    }
    rf_context_free(solo);
    rf_context_free(pair);
    rf_model_free(m);
    remove(path);
}

int main(void) {
    static const rf_type types[] = {RF_TYPE_Q8_0, RF_TYPE_Q4_0, RF_TYPE_Q5_0, RF_TYPE_Q4_1,
                                    RF_TYPE_Q5_1, RF_TYPE_Q4_K, RF_TYPE_Q6_K, RF_TYPE_F16,
                                    RF_TYPE_BF16, RF_TYPE_F32};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        test_type("gemma3", types[i]);
        test_type("qwen2", types[i]);
    }
    test_batch_and_top();
    return check_summary("test_widen");
}
