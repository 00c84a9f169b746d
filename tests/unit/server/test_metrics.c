/* test_metrics.c: the Prometheus text of server/metrics.h, parsed line by line: every sample's
 * metric has # HELP and # TYPE before it, counters end in _total, histogram buckets are
 * cumulative with increasing bounds and end at +Inf, which equals _count; the values are those
 * fed (requests by finish reason, tokens, latencies into the right buckets, the weight-bytes
 * counter and its recent rate, the engine's gauges); many threads feeding at once lose nothing. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "server/metrics.h"

#define MAXM 64

typedef struct seen {
    char name[96], type[16];
    int help;
} seen;

typedef struct parsed {
    seen m[MAXM];
    int n, samples, bad;
} parsed;

static seen *find(parsed *p, const char *name, size_t len) {
    for (int i = 0; i < p->n; i++)
        if (strlen(p->m[i].name) == len && !strncmp(p->m[i].name, name, len)) return &p->m[i];
    return NULL;
}

/* Checks the whole text; returns the number of problems (each reported). */
static int check_format(const char *text) {
    static parsed p;
    memset(&p, 0, sizeof p);
    char base[96] = "";
    double last_le = -INFINITY, last_cum = -1, inf_count = -1;
    char *copy = strdup(text), *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "# HELP ", 7) || !strncmp(l, "# TYPE ", 7)) {
            const char *nm = l + 7, *sp = strchr(nm, ' ');
            if (!sp) {
                CHECK_MSG(0, "bad comment line '%s'", l);
                p.bad++;
                continue;
            }
            seen *s = find(&p, nm, (size_t)(sp - nm));
            if (!s && p.n < MAXM) {
                s = &p.m[p.n++];
                snprintf(s->name, sizeof s->name, "%.*s", (int)(sp - nm), nm);
            }
            if (l[2] == 'H')
                s->help = 1;
            else
                snprintf(s->type, sizeof s->type, "%s", sp + 1);
            continue;
        }
        p.samples++;
        const char *end = l + strcspn(l, "{ ");
        size_t len = (size_t)(end - l);
        seen *s = find(&p, l, len);
        const char *suffixes[] = {"_bucket", "_sum", "_count"};
        const char *suf = NULL;
        for (int k = 0; !s && k < 3; k++) {
            size_t sl = strlen(suffixes[k]);
            if (len > sl && !strncmp(end - sl, suffixes[k], sl)) {
                s = find(&p, l, len - sl);
                suf = suffixes[k];
            }
        }
        const char *val = strrchr(l, ' ');
        char *vend = NULL;
        double v = val ? strtod(val + 1, &vend) : NAN;
        CHECK_MSG(val && vend && !*vend && isfinite(v), "bad value in '%s'", l);
        CHECK_MSG(s && s->help && s->type[0], "sample '%s' without HELP and TYPE", l);
        if (!s) {
            p.bad++;
            continue;
        }
        CHECK_MSG(!strncmp(s->name, "roofline:", 9), "'%s' lacks the prefix", s->name);
        if (!strcmp(s->type, "counter"))
            CHECK_MSG(strlen(s->name) > 6 && !strcmp(s->name + strlen(s->name) - 6, "_total"),
                      "counter '%s' does not end in _total", s->name);
        if (strcmp(s->type, "histogram")) {
            CHECK_MSG(!suf, "'%s' has a histogram suffix but is a %s", l, s->type);
            continue;
        }
        CHECK_MSG(suf != NULL, "histogram sample '%s' without _bucket/_sum/_count", l);
        if (suf && !strcmp(suf, "_bucket")) {
            if (strcmp(base, s->name)) { /* a new histogram */
                snprintf(base, sizeof base, "%s", s->name);
                last_le = -INFINITY;
                last_cum = -1;
                inf_count = -1;
            }
            const char *le = strstr(l, "{le=\"");
            CHECK_MSG(le != NULL, "bucket without le: '%s'", l);
            if (!le) continue;
            double b = !strncmp(le + 5, "+Inf\"", 5) ? INFINITY : strtod(le + 5, NULL);
            CHECK_MSG(b > last_le, "%s: bucket bounds not increasing at '%s'", base, l);
            CHECK_MSG(v >= last_cum, "%s: buckets not cumulative at '%s'", base, l);
            last_le = b;
            last_cum = v;
            if (isinf(b)) inf_count = v;
        } else if (suf && !strcmp(suf, "_count")) {
            CHECK_MSG(!strcmp(base, s->name) && isinf(last_le) && v == inf_count,
                      "%s_count %g differs from its +Inf bucket %g (or the buckets are missing)",
                      s->name, v, inf_count);
        }
    }
    free(copy);
    CHECK(p.samples > 0);
    return p.bad;
}

/* The value of sample `name` (labels as written), NAN when absent. */
static double value(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') return strtod(l + n + 1, NULL);
    return NAN;
}

#define MS 1000000ll
#define T0 (1000ll * 1000000000ll) /* a monotonic clock far from 0 */

static void *feed(void *arg) {
    rf_metrics *m = arg;
    for (int i = 0; i < 1000; i++) {
        rf_metrics_token(m, T0 + i * MS);
        rf_metrics_req r = {RF_FINISH_STOP, 3, 1, T0, T0, T0 + MS, T0 + 2 * MS, T0 + 2 * MS, NULL};
        rf_metrics_request(m, &r);
    }
    return NULL;
}

int main(void) {
    rf_metrics *m = rf_metrics_new();
    CHECK(m != NULL);
    if (!m) return check_summary("test_metrics");
    rf_buf b;
    rf_buf_init(&b, 0);
    /* empty, no engine yet */
    CHECK(rf_metrics_render(m, NULL, 1000, T0, &b) == RF_OK && rf_buf_terminate(&b) == RF_OK);
    CHECK(check_format((const char *)b.data) == 0);
    CHECK(value((char *)b.data, "roofline:num_requests_running") == 0.0);

    /* a request of 4 tokens 20 ms apart: arrival T0, submit +1 ms, admit +3 ms, first +50 ms */
    rf_metrics_itl itl = {0};
    for (int i = 0; i < 4; i++) {
        rf_metrics_itl_add(&itl, T0 + 50 * MS + i * 20 * MS);
        rf_metrics_token(m, T0 + 50 * MS + i * 20 * MS);
    }
    rf_metrics_req r = {RF_FINISH_LENGTH, 7,   4, T0, T0 + MS, T0 + 3 * MS, T0 + 50 * MS,
                        T0 + 110 * MS,    &itl};
    rf_metrics_request(m, &r);
    rf_metrics_req c = {RF_FINISH_CANCELLED, 5, 0, T0, T0 + MS, 0, 0, T0 + 9 * MS, NULL};
    rf_metrics_request(m, &c); /* counted by reason and tokens, not in the latency histograms */
    rf_engine_stats st = {.running = 2,
                          .waiting = 3,
                          .kv_used = 25,
                          .kv_reserved = 60,
                          .kv_budget = 100,
                          .kv_cached = 40,
                          .prefix_queries = 12,
                          .prefix_hits = 6};
    rf_buf_reset(&b);
    /* rendered 2 s after the tokens: they fall in the recent-rate window */
    CHECK(rf_metrics_render(m, &st, 1000, T0 + 2000 * MS, &b) == RF_OK &&
          rf_buf_terminate(&b) == RF_OK);
    const char *t = (const char *)b.data;
    CHECK(check_format(t) == 0);
    CHECK(value(t, "roofline:num_requests_running") == 2.0);
    CHECK(value(t, "roofline:num_requests_waiting") == 3.0);
    CHECK(value(t, "roofline:kv_cache_usage_perc") == 0.25);
    CHECK(value(t, "roofline:kv_cache_reserved_tokens") == 60.0);
    CHECK(value(t, "roofline:kv_cache_cached_tokens") == 40.0);
    CHECK(value(t, "roofline:prefix_cache_hits_total") == 6.0);
    CHECK(value(t, "roofline:prompt_tokens_total") == 12.0);
    CHECK(value(t, "roofline:generation_tokens_total") == 4.0);
    CHECK(value(t, "roofline:request_success_total{finished_reason=\"length\"}") == 1.0);
    CHECK(value(t, "roofline:request_success_total{finished_reason=\"abort\"}") == 1.0);
    CHECK(value(t, "roofline:weight_bytes_read_total") == 4000.0);
    CHECK(value(t, "roofline:weight_bytes_read_per_second") == 4000.0 / 5);
    /* TTFT 50 ms: above 0.04, within 0.06 */
    CHECK(value(t, "roofline:time_to_first_token_seconds_bucket{le=\"0.04\"}") == 0.0);
    CHECK(value(t, "roofline:time_to_first_token_seconds_bucket{le=\"0.06\"}") == 1.0);
    CHECK(value(t, "roofline:time_to_first_token_seconds_count") == 1.0);
    /* three 20 ms gaps: within 0.025, not 0.01 */
    CHECK(value(t, "roofline:inter_token_latency_seconds_bucket{le=\"0.01\"}") == 0.0);
    CHECK(value(t, "roofline:inter_token_latency_seconds_bucket{le=\"0.025\"}") == 3.0);
    CHECK(fabs(value(t, "roofline:inter_token_latency_seconds_sum") - 0.06) < 1e-9);
    CHECK(fabs(value(t, "roofline:request_queue_time_seconds_sum") - 0.002) < 1e-9);
    CHECK(fabs(value(t, "roofline:request_decode_time_seconds_sum") - 0.06) < 1e-9);
    CHECK(value(t, "roofline:e2e_request_latency_seconds_count") == 1.0);
    /* much later: the recent rate falls back to 0, the counter stays */
    rf_buf_reset(&b);
    CHECK(rf_metrics_render(m, &st, 1000, T0 + 60000 * MS, &b) == RF_OK &&
          rf_buf_terminate(&b) == RF_OK);
    CHECK(value((char *)b.data, "roofline:weight_bytes_read_per_second") == 0.0);
    CHECK(value((char *)b.data, "roofline:weight_bytes_read_total") == 4000.0);

    /* four threads feeding at once */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, feed, m);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    rf_buf_reset(&b);
    CHECK(rf_metrics_render(m, &st, 1, T0, &b) == RF_OK && rf_buf_terminate(&b) == RF_OK);
    t = (const char *)b.data;
    CHECK(check_format(t) == 0);
    CHECK(value(t, "roofline:request_success_total{finished_reason=\"stop\"}") == 4000.0);
    CHECK(value(t, "roofline:generation_tokens_total") == 4004.0);
    CHECK(value(t, "roofline:weight_bytes_read_total") == 4004.0);
    CHECK(value(t, "roofline:request_prefill_time_seconds_count") == 4001.0);
    rf_buf_free(&b);
    rf_metrics_free(m);
    return check_summary("test_metrics");
}
