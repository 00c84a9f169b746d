/* metrics.c: see metrics.h. */
#include "server/metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* vLLM's bucket boundaries (seconds); inter-token latency gets three finer ones below vLLM's
 * first (10 ms), where a CPU engine on a small model decodes. */
static const double TTFT_B[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double ITL_B[RF_METRICS_ITL_BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,
    0.4,   0.5,    0.75,  1.0,  2.5,   5.0,  7.5,   10.0, 20.0, 40.0, 80.0};
static const double REQ_B[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                               5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MAX_B 24

enum { H_TTFT, H_ITL, H_E2E, H_QUEUE, H_PREFILL, H_DECODE, H_COUNT };

typedef struct hist {
    uint64_t counts[MAX_B + 1]; /* per bucket; [nb]: above the last bound */
    uint64_t n;
    double sum;
} hist;

static const struct {
    const char *name, *help;
    const double *b;
    int nb;
} HISTS[H_COUNT] = {
    {"time_to_first_token_seconds", "Time from the request's arrival to its first token.", TTFT_B,
     NB(TTFT_B)},
    {"inter_token_latency_seconds", "Time between consecutive tokens of a request.", ITL_B,
     NB(ITL_B)},
    {"e2e_request_latency_seconds", "Time from the request's arrival to its last token.", REQ_B,
     NB(REQ_B)},
    {"request_queue_time_seconds", "Time a request waited for a batch slot and KV budget.", REQ_B,
     NB(REQ_B)},
    {"request_prefill_time_seconds", "Time from admission to the first token (prompt prefill).",
     REQ_B, NB(REQ_B)},
    {"request_decode_time_seconds", "Time from the first token to the last.", REQ_B, NB(REQ_B)},
};

/* recent-rate window: tokens per whole second, the last RATE_N seconds */
#define RATE_N    8
#define RATE_SPAN 5 /* seconds averaged (complete ones, before the current second) */

typedef struct counters {
    uint64_t tokens;        /* generated, counted as they come */
    uint64_t prompt_tokens; /* of finished requests */
    uint64_t gen_tokens;    /* of finished requests */
    uint64_t finished[5];   /* by rf_finish */
    hist h[H_COUNT];
    int64_t rate_sec[RATE_N]; /* which second each cell counts */
    uint64_t rate_tok[RATE_N];
} counters;

struct rf_metrics {
    pthread_mutex_t mu;
    counters c;
};

static int bucket_of(const double *b, int nb, double v) {
    int i = 0;
    while (i < nb && v > b[i]) i++;
    return i;
}

void rf_metrics_itl_add(rf_metrics_itl *itl, int64_t t_ns) {
    if (itl->last_ns && t_ns >= itl->last_ns) {
        double s = (double)(t_ns - itl->last_ns) / 1e9;
        itl->counts[bucket_of(ITL_B, RF_METRICS_ITL_BUCKETS, s)]++;
        itl->n++;
        itl->sum += s;
    }
    itl->last_ns = t_ns;
}

rf_metrics *rf_metrics_new(void) {
    rf_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mu, NULL);
    for (int i = 0; i < RATE_N; i++) m->c.rate_sec[i] = -1;
    return m;
}

void rf_metrics_free(rf_metrics *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void rf_metrics_token(rf_metrics *m, int64_t t_ns) {
    int64_t sec = t_ns / 1000000000ll;
    int cell = (int)(sec % RATE_N);
    pthread_mutex_lock(&m->mu);
    counters *c = &m->c;
    c->tokens++;
    if (c->rate_sec[cell] != sec) {
        c->rate_sec[cell] = sec;
        c->rate_tok[cell] = 0;
    }
    c->rate_tok[cell]++;
    pthread_mutex_unlock(&m->mu);
}

static void observe(hist *h, int k, int64_t from, int64_t to) {
    if (!from || !to || to < from) return;
    double s = (double)(to - from) / 1e9;
    h->counts[bucket_of(HISTS[k].b, HISTS[k].nb, s)]++;
    h->n++;
    h->sum += s;
}

void rf_metrics_request(rf_metrics *m, const rf_metrics_req *r) {
    pthread_mutex_lock(&m->mu);
    counters *c = &m->c;
    if ((unsigned)r->finish < 5) c->finished[r->finish]++;
    c->prompt_tokens += (uint64_t)(r->n_prompt > 0 ? r->n_prompt : 0);
    c->gen_tokens += (uint64_t)(r->n_gen > 0 ? r->n_gen : 0);
    if (r->finish == RF_FINISH_STOP || r->finish == RF_FINISH_LENGTH) {
        observe(&c->h[H_TTFT], H_TTFT, r->t_arrival, r->t_first);
        observe(&c->h[H_E2E], H_E2E, r->t_arrival, r->t_end);
        observe(&c->h[H_QUEUE], H_QUEUE, r->t_submit, r->t_admit);
        observe(&c->h[H_PREFILL], H_PREFILL, r->t_admit, r->t_first);
        observe(&c->h[H_DECODE], H_DECODE, r->t_first, r->t_end);
        if (r->itl) {
            hist *h = &c->h[H_ITL];
            for (int i = 0; i <= RF_METRICS_ITL_BUCKETS; i++) h->counts[i] += r->itl->counts[i];
            h->n += r->itl->n;
            h->sum += r->itl->sum;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

#define PFX "roofline:"

static rf_status head(rf_buf *o, const char *name, const char *type, const char *help) {
    return rf_buf_printf(o, "# HELP " PFX "%s %s\n# TYPE " PFX "%s %s\n", name, help, name, type);
}

static rf_status scalar(rf_buf *o, const char *name, const char *type, const char *help, double v) {
    rf_status st = head(o, name, type, help);
    return st ? st : rf_buf_printf(o, PFX "%s %.17g\n", name, v);
}

static rf_status histogram(rf_buf *o, int k, const hist *h) {
    rf_status st = head(o, HISTS[k].name, "histogram", HISTS[k].help);
    uint64_t cum = 0;
    for (int i = 0; !st && i < HISTS[k].nb; i++) {
        cum += h->counts[i];
        st = rf_buf_printf(o, PFX "%s_bucket{le=\"%g\"} %llu\n", HISTS[k].name, HISTS[k].b[i],
                           (unsigned long long)cum);
    }
    if (!st)
        st = rf_buf_printf(
            o, PFX "%s_bucket{le=\"+Inf\"} %llu\n" PFX "%s_sum %.17g\n" PFX "%s_count %llu\n",
            HISTS[k].name, (unsigned long long)h->n, HISTS[k].name, h->sum, HISTS[k].name,
            (unsigned long long)h->n);
    return st;
}

rf_status rf_metrics_render(rf_metrics *m, const rf_engine_stats *st_in, uint64_t bpt,
                            int64_t now_ns, rf_buf *o) {
    rf_engine_stats es = {0};
    if (st_in) es = *st_in;
    pthread_mutex_lock(&m->mu);
    counters cp = m->c; /* a consistent copy, rendered outside the lock */
    pthread_mutex_unlock(&m->mu);
    int64_t sec = now_ns / 1000000000ll;
    uint64_t recent = 0;
    for (int i = 0; i < RATE_N; i++)
        if (cp.rate_sec[i] < sec && cp.rate_sec[i] >= sec - RATE_SPAN) recent += cp.rate_tok[i];
    double usage = es.kv_budget > 0 ? (double)es.kv_used / (double)es.kv_budget : 0.0;
    rf_status st = RF_OK;
#define S(name, type, help, v)                                                                     \
    if (!st) st = scalar(o, name, type, help, (double)(v))
    S("num_requests_running", "gauge", "Requests in a batch slot (prefill or decode).", es.running);
    S("num_requests_waiting", "gauge", "Requests queued for a slot or KV budget.", es.waiting);
    S("kv_cache_usage_perc", "gauge",
      "KV positions stored by running requests over the KV budget (1 = full).", usage);
    S("kv_cache_used_tokens", "gauge", "KV positions stored by running requests.", es.kv_used);
    S("kv_cache_reserved_tokens", "gauge",
      "KV positions reserved by running requests (prompt + max_tokens each).", es.kv_reserved);
    S("kv_cache_budget_tokens", "gauge", "KV positions the engine admits requests against.",
      es.kv_budget);
    S("kv_cache_cached_tokens", "gauge",
      "KV positions idle slots keep for prefix reuse (not reserved).", es.kv_cached);
    S("prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
      es.prefix_queries);
    S("prefix_cache_hits_total", "counter", "Prompt tokens whose KV came from the prefix cache.",
      es.prefix_hits);
    S("prompt_tokens_total", "counter", "Prompt tokens of finished requests.", cp.prompt_tokens);
    S("generation_tokens_total", "counter", "Generated tokens of finished requests.",
      cp.gen_tokens);
    S("weight_bytes_read_total", "counter",
      "Estimated bytes read for generated tokens (bytes per decoded token at an empty context "
      "times tokens, counted as they are made); rate() gives bytes/s.",
      (double)cp.tokens * (double)bpt);
    S("weight_bytes_read_per_second", "gauge",
      "weight_bytes_read_total's rate over the last 5 complete seconds.",
      (double)recent * (double)bpt / RATE_SPAN);
    S("engine_steps_total", "counter", "Forward steps the engine ran.", es.steps);
#undef S
    if (!st) st = head(o, "request_success_total", "counter", "Finished requests by reason.");
    static const struct {
        rf_finish f;
        const char *reason;
    } R[] = {{RF_FINISH_STOP, "stop"},
             {RF_FINISH_LENGTH, "length"},
             {RF_FINISH_CANCELLED, "abort"},
             {RF_FINISH_ERROR, "error"}};
    for (size_t i = 0; !st && i < sizeof R / sizeof R[0]; i++)
        st = rf_buf_printf(o, PFX "request_success_total{finished_reason=\"%s\"} %llu\n",
                           R[i].reason, (unsigned long long)cp.finished[R[i].f]);
    for (int k = 0; !st && k < H_COUNT; k++) st = histogram(o, k, &cp.h[k]);
    return st;
}
