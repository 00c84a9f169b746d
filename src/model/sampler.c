/* sampler.c: greedy, temperature, top-k, top-p sampling with a seeded generator; penalties;
 * log-probabilities. */
#include "model/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/penalty.h"

typedef struct cand {
    int32_t id;
    float v;
} cand;

struct rf_sampler {
    rf_sampler_params p;
    int32_t n_vocab;
    uint64_t rng;
    cand *heap;  /* [n_vocab] top-k candidates */
    float *prob; /* [n_vocab] unnormalised probabilities (top-p without top-k) */
    float *work; /* [n_vocab] selection scratch */
    float *pen;  /* [n_vocab] the penalised copy of the logits */
    rf_penalty counts;
};

rf_sampler_params rf_sampler_default_params(void) {
    rf_sampler_params p = {0.8f, 40, 0.95f, 0, 0.0f, 0.0f};
    return p;
}

rf_status rf_sampler_check(const rf_sampler_params *p, rf_error *err) {
    if (!(p->top_p > 0 && p->top_p <= 1))
        return rf_error_set(err, RF_ERR_ARG, "top_p %g is not in (0, 1]", (double)p->top_p);
    if (p->top_k < 0) return rf_error_set(err, RF_ERR_ARG, "top_k %d is negative", p->top_k);
    if (!isfinite(p->temperature))
        return rf_error_set(err, RF_ERR_ARG, "temperature is not a finite number");
    if (!(p->presence_penalty >= -2.0f && p->presence_penalty <= 2.0f))
        return rf_error_set(err, RF_ERR_ARG, "presence_penalty %g is not in [-2, 2]",
                            (double)p->presence_penalty);
    if (!(p->frequency_penalty >= -2.0f && p->frequency_penalty <= 2.0f))
        return rf_error_set(err, RF_ERR_ARG, "frequency_penalty %g is not in [-2, 2]",
                            (double)p->frequency_penalty);
    return RF_OK;
}

void rf_sampler_configure(rf_sampler *s, const rf_sampler_params *p) {
    s->p = *p;
    rf_sampler_reset(s);
    rf_penalty_clear(&s->counts);
}

rf_status rf_sampler_new(const rf_sampler_params *p, int32_t n_vocab, rf_sampler **out,
                         rf_error *err) {
    *out = NULL;
    if (n_vocab < 1) return rf_error_set(err, RF_ERR_ARG, "sampler: empty vocabulary");
    rf_status st = rf_sampler_check(p, err);
    if (st) return st;
    rf_sampler *s = calloc(1, sizeof *s);
    if (!s) return rf_error_set(err, RF_ERR_NOMEM, "sampler: out of memory");
    s->heap = malloc((size_t)n_vocab * sizeof *s->heap);
    s->prob = malloc((size_t)n_vocab * sizeof *s->prob);
    s->work = malloc((size_t)n_vocab * sizeof *s->work);
    s->pen = malloc((size_t)n_vocab * sizeof *s->pen);
    if (!s->heap || !s->prob || !s->work || !s->pen ||
        rf_penalty_init(&s->counts, n_vocab, NULL) != RF_OK) {
        rf_sampler_free(s);
        return rf_error_set(err, RF_ERR_NOMEM, "sampler: out of memory");
    }
    s->p = *p;
    s->n_vocab = n_vocab;
    rf_sampler_reset(s);
    *out = s;
    return RF_OK;
}

void rf_sampler_free(rf_sampler *s) {
    if (!s) return;
    free(s->heap);
    free(s->prob);
    free(s->work);
    free(s->pen);
    rf_penalty_free(&s->counts);
    free(s);
}

#define SEED_MIX 0x9E3779B97F4A7C15ull

void rf_sampler_reset(rf_sampler *s) {
    s->rng = s->p.seed ^ SEED_MIX;
}

uint64_t rf_sampler_stream_seed(const rf_sampler *s) {
    return s->rng ^ SEED_MIX; /* rf_sampler_reset turns it back into this state */
}

/* splitmix64 */
static uint64_t next_u64(uint64_t *st) {
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double next_unit(uint64_t *st) {
    return (double)(next_u64(st) >> 11) * 0x1.0p-53;
}

int32_t rf_argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* "a ranks below b": smaller value, or equal value and larger index. */
static int below(cand a, cand b) {
    return a.v < b.v || (a.v == b.v && a.id > b.id);
}

static void sift_down(cand *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && below(h[l], h[m])) m = l;
        if (r < n && below(h[r], h[m])) m = r;
        if (m == i) return;
        cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Keeps the k best of x in a min-heap h (root = weakest kept), then sorts h descending. */
static int32_t select_top(const float *x, int32_t n, int32_t k, cand *h) {
    if (k > n) k = n;
    if (k <= 0) return 0; /* no heap to compare against */
    for (int32_t i = 0; i < k; i++) h[i] = (cand){i, x[i]};
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(h, k, i);
    for (int32_t i = k; i < n; i++) {
        cand c = {i, x[i]};
        if (below(h[0], c)) {
            h[0] = c;
            sift_down(h, k, 0);
        }
    }
    /* heap sort: repeatedly move the weakest to the end -> descending order */
    for (int32_t end = k - 1; end > 0; end--) {
        cand t = h[0];
        h[0] = h[end];
        h[end] = t;
        sift_down(h, end, 0);
    }
    return k;
}

int32_t rf_top_k(const float *x, int32_t n, int32_t k, int32_t *idx, float *val) {
    cand *h = malloc((size_t)(k < n ? k : n) * sizeof *h + 1);
    if (!h) return 0;
    int32_t m = select_top(x, n, k, h);
    for (int32_t i = 0; i < m; i++) {
        idx[i] = h[i].id;
        val[i] = h[i].v;
    }
    free(h);
    return m;
}

/* The smallest value t such that the values >= t in a[0..m) hold at least `need` of mass:
 * expected linear time, by three-way partitioning around a pivot and keeping the side that holds
 * the boundary (a is reordered). */
static float mass_threshold(float *a, int32_t m, double need) {
    for (;;) {
        float pivot = a[m / 2];
        int32_t hi = 0, lo = m; /* [0, hi) > pivot, [lo, m) < pivot */
        double mass_hi = 0, mass_eq = 0;
        for (int32_t i = 0; i < lo;) {
            float v = a[i];
            if (v > pivot) {
                a[i] = a[hi];
                a[hi++] = v;
                mass_hi += v;
                i++;
            } else if (v < pivot) {
                a[i] = a[--lo];
                a[lo] = v;
            } else {
                mass_eq += v;
                i++;
            }
        }
        if (mass_hi >= need && hi > 0) {
            m = hi; /* the boundary is among the larger values */
        } else if (mass_hi + mass_eq >= need || lo == m) {
            return pivot;
        } else {
            need -= mass_hi + mass_eq; /* all of >= pivot is in; look below */
            memmove(a, a + lo, (size_t)(m - lo) * sizeof *a);
            m -= lo;
        }
    }
}

/* top-p without top-k: the nucleus is every token whose probability reaches the threshold that
 * holds top_p of the mass (found in linear time, no sort); draw within it in id order. */
static int32_t sample_nucleus(rf_sampler *s, const float *logits, float mx, float inv_t) {
    const int32_t n = s->n_vocab;
    double total = 0;
    for (int32_t i = 0; i < n; i++) {
        s->prob[i] = expf((logits[i] - mx) * inv_t);
        total += s->prob[i];
    }
    memcpy(s->work, s->prob, (size_t)n * sizeof *s->work);
    float t = mass_threshold(s->work, n, s->p.top_p * total);
    double kept = 0;
    for (int32_t i = 0; i < n; i++)
        if (s->prob[i] >= t) kept += s->prob[i];
    double u = next_unit(&s->rng) * kept, run = 0;
    int32_t last = 0;
    for (int32_t i = 0; i < n; i++) {
        if (s->prob[i] < t) continue;
        run += s->prob[i];
        last = i;
        if (run > u) return i;
    }
    return last;
}

static double weight(const cand *c, float mx, float inv_t) {
    return exp((double)((c->v - mx) * inv_t));
}

/* Top-k candidates s->heap[0..m) in descending order: the nucleus is the shortest prefix
 * reaching top_p of their (tempered) mass, at least one token; draw within it. */
static int32_t draw_top(rf_sampler *s, int32_t m, float mx, float inv_t) {
    double mass = 0;
    for (int32_t i = 0; i < m; i++) mass += weight(&s->heap[i], mx, inv_t);
    double need = s->p.top_p * mass, acc = 0;
    int32_t keep = 0;
    while (keep < m && (keep == 0 || acc < need)) acc += weight(&s->heap[keep++], mx, inv_t);
    double u = next_unit(&s->rng) * acc, run = 0;
    for (int32_t i = 0; i < keep; i++) {
        run += weight(&s->heap[i], mx, inv_t);
        if (run > u) return s->heap[i].id;
    }
    return s->heap[keep - 1].id;
}

static bool penalised(const rf_sampler *s) {
    return s->p.presence_penalty != 0.0f || s->p.frequency_penalty != 0.0f;
}

void rf_sampler_accept(rf_sampler *s, int32_t token) {
    if (penalised(s)) rf_penalty_add(&s->counts, token);
}

int32_t rf_sampler_sample(rf_sampler *s, const float *logits) {
    const int32_t n = s->n_vocab;
    if (penalised(s) && s->counts.n_seen > 0) {
        memcpy(s->pen, logits, (size_t)n * sizeof *s->pen);
        rf_penalty_apply(&s->counts, s->p.presence_penalty, s->p.frequency_penalty, s->pen);
        logits = s->pen;
    }
    if (s->p.temperature <= 0) return rf_argmax(logits, n);
    const float inv_t = 1.0f / s->p.temperature;
    const float mx = logits[rf_argmax(logits, n)];
    const int32_t k = s->p.top_k > 0 && s->p.top_k < n ? s->p.top_k : 0;
    if (k > 0) return draw_top(s, select_top(logits, n, k, s->heap), mx, inv_t);
    if (s->p.top_p < 1.0f) return sample_nucleus(s, logits, mx, inv_t);
    /* Plain sampling from the whole distribution: one pass for the sum, one to draw. */
    double total = 0;
    for (int32_t i = 0; i < n; i++) total += exp((double)((logits[i] - mx) * inv_t));
    double u = next_unit(&s->rng) * total, acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += exp((double)((logits[i] - mx) * inv_t));
        if (acc > u) return i;
    }
    return n - 1;
}

bool rf_sampler_fits_top(const rf_sampler *s, int32_t n_top) {
    return !penalised(s) && (s->p.temperature <= 0 || (s->p.top_k > 0 && s->p.top_k <= n_top));
}

int32_t rf_sampler_sample_top(rf_sampler *s, const int32_t *ids, const float *vals, int32_t n) {
    if (s->p.temperature <= 0 || n <= 1) return ids[0];
    int32_t m = s->p.top_k < n ? s->p.top_k : n;
    for (int32_t i = 0; i < m; i++) s->heap[i] = (cand){ids[i], vals[i]};
    return draw_top(s, m, vals[0], 1.0f / s->p.temperature);
}

int32_t rf_sampler_logprobs(rf_sampler *s, const float *logits, int32_t token, int32_t k,
                            int32_t *ids, float *lps, float *token_lp) {
    const int32_t n = s->n_vocab;
    const float mx = logits[rf_argmax(logits, n)];
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)(logits[i] - mx));
    const double lse = (double)mx + log(sum);
    int32_t m = k > 0 ? select_top(logits, n, k, s->heap) : 0;
    for (int32_t i = 0; i < m; i++) {
        ids[i] = s->heap[i].id;
        lps[i] = (float)((double)s->heap[i].v - lse);
    }
    *token_lp = token >= 0 && token < n ? (float)((double)logits[token] - lse) : -INFINITY;
    return m;
}
