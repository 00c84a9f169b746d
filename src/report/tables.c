/* tables.c: the report's tables from the summary (see tables.h). */
#include "report/tables.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- building blocks */

static rf_table *table_new(rf_tables *ts, const char *id, const char *title, const char *note,
                           int n_cols, const char *const *cols) {
    if (ts->n == ts->cap) {
        int cap = ts->cap ? ts->cap * 2 : 16;
        rf_table *t = realloc(ts->t, (size_t)cap * sizeof *t);
        if (!t) return NULL;
        ts->t = t;
        ts->cap = cap;
    }
    rf_table *t = &ts->t[ts->n++];
    memset(t, 0, sizeof *t);
    t->id = strdup(id);
    t->title = strdup(title);
    t->note = note ? strdup(note) : NULL;
    t->n_cols = n_cols;
    t->cols = calloc((size_t)n_cols, sizeof *t->cols);
    for (int i = 0; t->cols && i < n_cols; i++) t->cols[i] = strdup(cols[i]);
    return t;
}

/* A new row of unknown cells; returns its first cell (NULL when out of memory). */
static rf_cell *row_new(rf_table *t) {
    if (!t) return NULL;
    if (t->n_rows == t->cap_rows) {
        int cap = t->cap_rows ? t->cap_rows * 2 : 8;
        rf_cell *c = realloc(t->cells, (size_t)cap * (size_t)t->n_cols * sizeof *c);
        if (!c) return NULL;
        t->cells = c;
        t->cap_rows = cap;
    }
    rf_cell *r = &t->cells[(size_t)t->n_rows++ * (size_t)t->n_cols];
    memset(r, 0, (size_t)t->n_cols * sizeof *r);
    return r;
}

static void text(rf_cell *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text(rf_cell *c, const char *fmt, ...) {
    if (!c) return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    free(c->text);
    c->text = s;
    c->kind = s ? RF_CELL_TEXT : RF_CELL_UNKNOWN;
}

static void number(rf_cell *c, const char *fmt, double v) {
    if (!c) return;
    if (!isfinite(v)) {
        c->kind = RF_CELL_UNKNOWN;
        return;
    }
    c->kind = RF_CELL_NUM;
    c->fmt = fmt;
    c->v = v;
}

/* The number at o.a(.b), or NaN (null, absent). */
static double at(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

static const char *str(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void foot(rf_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void foot(rf_table *t, const char *fmt, ...) {
    if (!t) return;
    char **f = realloc(t->foot, (size_t)(t->n_foot + 1) * sizeof *f);
    if (!f) return;
    t->foot = f;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&t->foot[t->n_foot], fmt, ap) >= 0) t->n_foot++;
    va_end(ap);
}

static const char *level_name(const json_t *lv, char *buf, size_t cap) {
    if (!strcmp(str(lv, "mode"), "rate"))
        snprintf(buf, cap, "%.2f req/s", at(lv, "rate", NULL));
    else
        snprintf(buf, cap, "c=%d", (int)at(lv, "concurrency", NULL));
    return buf;
}

/* ---------------------------------------------------------------- the tables */

static void backends_table(rf_tables *ts, const json_t *sum) {
    static const char *cols[] = {"backend", "uri", "model", "hardware", "price", "status"};
    rf_table *t = table_new(ts, "backends", "Backends", NULL, 6, cols);
    const json_t *cost = json_object_get(json_object_get(sum, "cost"), "backends");
    const char *name;
    const json_t *o;
    json_object_foreach(json_object_get(sum, "backends"), name, o) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        text(&r[1], "%s", str(o, "uri"));
        if (*str(o, "model")) text(&r[2], "%s", str(o, "model"));
        text(&r[3], "%s", *str(o, "hardware") ? str(o, "hardware") : "-");
        const json_t *c = json_object_get(cost, name);
        if (!strcmp(str(c, "kind"), "instance"))
            text(&r[4], "$%.4f/hour%s", at(c, "usd_per_hour", NULL),
                 json_is_true(json_object_get(c, "assumption")) ? " (assumed)" : "");
        else if (!strcmp(str(c, "kind"), "per_token"))
            text(&r[4], "$%.3f/M in, $%.3f/M out", at(c, "usd_per_m_input", NULL),
                 at(c, "usd_per_m_output", NULL));
        text(&r[5], "%s", *str(o, "error") ? str(o, "error") : "ok");
    }
}

static void speed_table(rf_tables *ts, const json_t *sec) {
    static const char *cols[] = {"backend",          "runs ok", "TTFT ms (median)",
                                 "decode tok/s min", "median",  "max",
                                 "E2E s min",        "max",     "n/E2E tok/s median"};
    rf_table *t = table_new(ts, "speed", "Single-stream speed",
                            "Decode tok/s = (tokens - 1) / (last - first content event); n/E2E "
                            "tok/s = tokens / (send to last content).",
                            9, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        text(&r[1], "%d/%d", (int)at(o, "ok", NULL), (int)at(o, "runs", NULL));
        number(&r[2], "%.1f", at(o, "ttft_ms", "median"));
        number(&r[3], "%.1f", at(o, "decode_tok_s", "min"));
        number(&r[4], "%.1f", at(o, "decode_tok_s", "median"));
        number(&r[5], "%.1f", at(o, "decode_tok_s", "max"));
        number(&r[6], "%.2f", at(o, "e2e_s", "min"));
        number(&r[7], "%.2f", at(o, "e2e_s", "max"));
        number(&r[8], "%.1f", at(o, "e2e_tok_s", "median"));
    }
}

static void load_table(rf_tables *ts, const json_t *sum, const json_t *sec) {
    const json_t *slo = json_object_get(sum, "slo");
    static const char *cols[] = {
        "backend",       "level",  "ok",           "errors",     "output tok/s",  "req/s",
        "TTFT p50",      "p90",    "p99 ms",       "TPOT p50",   "p99 ms",        "tok/s/user p50",
        "token gap p50", "p99 ms", "queue p99 ms", "lag p99 ms", "goodput req/s", "good %"};
    int nc = slo ? 18 : 16;
    rf_table *t = table_new(ts, "load", "Load",
                            "TPOT = (E2E - TTFT) / (tokens - 1) (vLLM); tok/s/user = 1 / TPOT; "
                            "per-token gap = gap between content events / tokens in the later "
                            "one; queue latency = intended send to last content; lag = actual - "
                            "intended send.",
                            nc, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(o, "levels"), i, lv) {
            rf_cell *r = row_new(t);
            if (!r) return;
            char level[48];
            bool bound = json_is_true(json_object_get(json_object_get(lv, "client"), "bound"));
            text(&r[0], "%s", name);
            text(&r[1], "%s%s", level_name(lv, level, sizeof level),
                 bound ? " (client-bound)" : "");
            text(&r[2], "%d", (int)at(lv, "ok", NULL));
            double rs = at(lv, "resends", NULL), rt = at(lv, "retries", NULL); /* NaN: absent */
            int resent = rs > 0 ? (int)rs : 0, retried = rt > 0 ? (int)rt : 0;
            if (resent > 0 && retried > 0)
                text(&r[3], "%d (+%d resent, +%d retried)", (int)at(lv, "errors", NULL), resent,
                     retried);
            else if (resent > 0)
                text(&r[3], "%d (+%d resent)", (int)at(lv, "errors", NULL), resent);
            else if (retried > 0)
                text(&r[3], "%d (+%d retried)", (int)at(lv, "errors", NULL), retried);
            else
                text(&r[3], "%d", (int)at(lv, "errors", NULL));
            number(&r[4], "%.1f", at(lv, "output_tok_s", NULL));
            number(&r[5], "%.2f", at(lv, "request_rate", NULL));
            number(&r[6], "%.1f", at(lv, "ttft_ms", "p50"));
            number(&r[7], "%.1f", at(lv, "ttft_ms", "p90"));
            number(&r[8], "%.1f", at(lv, "ttft_ms", "p99"));
            number(&r[9], "%.2f", at(lv, "tpot_ms", "p50"));
            number(&r[10], "%.2f", at(lv, "tpot_ms", "p99"));
            number(&r[11], "%.1f", at(lv, "tok_s_per_user", "p50"));
            number(&r[12], "%.2f", at(lv, "per_token_gap_ms", "p50"));
            number(&r[13], "%.2f", at(lv, "per_token_gap_ms", "p99"));
            number(&r[14], "%.1f", at(lv, "queue_latency_ms", "p99"));
            number(&r[15], "%.2f", at(lv, "schedule_lag_ms", "p99"));
            if (slo) {
                number(&r[16], "%.2f", at(lv, "goodput", "goodput_req_s"));
                number(&r[17], "%.0f", 100 * at(lv, "goodput", "good_fraction"));
            }
            const json_t *c = json_object_get(lv, "client");
            if (bound)
                foot(t,
                     "**client-bound**: %s %s: %s; the times at this level measure the bench, "
                     "not the server.",
                     name, level, str(c, "warning"));
        }
        if (slo) {
            double best = at(o, "largest_level_meeting_slo", NULL);
            if (isfinite(best))
                foot(t, "%s: the largest level meeting the SLOs is c=%d.", name, (int)best);
            else
                foot(t, "%s: no level meets the SLOs.", name);
        }
    }
    if (slo) {
        char s[160] = "";
        size_t w = 0;
        if (at(slo, "ttft_ms", NULL) > 0)
            w += (size_t)snprintf(s + w, sizeof s - w, "TTFT <= %g ms ", at(slo, "ttft_ms", NULL));
        if (at(slo, "tpot_ms", NULL) > 0)
            w += (size_t)snprintf(s + w, sizeof s - w, "TPOT <= %g ms ", at(slo, "tpot_ms", NULL));
        if (at(slo, "e2e_ms", NULL) > 0)
            snprintf(s + w, sizeof s - w, "E2E <= %g ms ", at(slo, "e2e_ms", NULL));
        foot(t,
             "Goodput (vLLM): requests meeting every SLO (%s) per second of the level; a level "
             "meets the SLOs when at least %.0f%% of its requests do.",
             s, 100 * at(slo, "attainment", NULL));
    }
}

static void cost_tables(rf_tables *ts, const json_t *sum) {
    const json_t *cost = json_object_get(sum, "cost");
    const json_t *per = json_object_get(cost, "backends");
    if (!json_object_size((json_t *)per)) return;
    static const char *cols[] = {
        "backend", "price", "24x7 $/month", "1 stream tok/s", "$/M out (1 stream)", "source"};
    char note[256];
    snprintf(note, sizeof note,
             "$/M output tokens = ($/hour) / (output tok/s x 3600) x 1e6 (1 stream: n/E2E tok/s, "
             "median of the speed runs); $/month = $/hour x 730; per-token prices blended at %g "
             "input tokens per output token.",
             at(cost, "ratio", NULL));
    rf_table *t = table_new(ts, "cost", "Cost", note, 6, cols);
    static const char *lcols[] = {"backend", "level", "output tok/s", "$/M out"};
    rf_table *tl = table_new(ts, "cost_levels", "Cost per load level",
                             "$/M output tokens at each level's aggregate output tok/s.", 4, lcols);
    static const char *bcols[] = {"instance", "per-token backend", "blended $/M out",
                                  "break-even output tok/s (24x7)"};
    rf_table *tb = table_new(ts, "break_even", "Break-even against per-token prices",
                             "The sustained output rate at which the instance's 24x7 month costs "
                             "what the per-token backend would bill: $/month / (blended $/M x "
                             "1e-6) / (730 x 3600).",
                             4, bcols);
    const char *name;
    const json_t *c;
    json_object_foreach((json_t *)per, name, c) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        const char *kind = str(c, "kind");
        if (!strcmp(kind, "instance")) {
            text(&r[1], "$%.4f/hour%s", at(c, "usd_per_hour", NULL),
                 json_is_true(json_object_get(c, "assumption")) ? " (assumed)" : "");
            number(&r[2], "%.0f", at(c, "usd_per_month", NULL));
            number(&r[3], "%.1f", at(c, "single_stream", "tok_s"));
            number(&r[4], "%.2f", at(c, "single_stream", "usd_per_m_output"));
        } else if (!strcmp(kind, "per_token")) {
            text(&r[1], "$%.3f/M in, $%.3f/M out", at(c, "usd_per_m_input", NULL),
                 at(c, "usd_per_m_output", NULL));
            text(&r[2], "$0 idle");
            text(&r[3], "-");
            number(&r[4], "%.3f", at(c, "blended_usd_per_m_output", NULL));
        }
        text(&r[5], "%s", str(c, "source"));
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(c, "levels"), i, lv) {
            rf_cell *x = row_new(tl);
            if (!x) return;
            text(&x[0], "%s", name);
            if (json_object_get(lv, "rate"))
                text(&x[1], "%.2f req/s", at(lv, "rate", NULL));
            else
                text(&x[1], "c=%d", (int)at(lv, "concurrency", NULL));
            number(&x[2], "%.1f", at(lv, "tok_s", NULL));
            number(&x[3], "%.3f", at(lv, "usd_per_m_output", NULL));
        }
        json_array_foreach(json_object_get(c, "break_even"), i, lv) {
            rf_cell *x = row_new(tb);
            if (!x) return;
            text(&x[0], "%s", name);
            text(&x[1], "%s", str(lv, "against"));
            number(&x[2], "%.3f", at(lv, "blended_usd_per_m_output", NULL));
            number(&x[3], "%.1f", at(lv, "break_even_tok_s", NULL));
        }
    }
}

static void roofline_table(rf_tables *ts, const json_t *sum) {
    const json_t *roof = json_object_get(sum, "roofline");
    if (!json_object_size((json_t *)roof)) return;
    static const char *cols[] = {"backend",        "bandwidth GB/s", "bytes/token MB",
                                 "ceiling tok/s",  "decode tok/s",   "efficiency %",
                                 "bandwidth from", "bytes from"};
    rf_table *t = table_new(ts, "roofline", "Roofline",
                            "Ceiling tok/s = memory bandwidth / bytes read per decoded token "
                            "(weights read in full, one embedding row, the KV cache at the "
                            "context); efficiency = measured single-stream decode tok/s / "
                            "ceiling. GB and MB are 1e9 and 1e6 bytes.",
                            8, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)roof, name, o) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        number(&r[1], "%.2f", at(o, "bandwidth_gbs", NULL));
        number(&r[2], "%.1f", at(o, "bytes_per_token", NULL) / 1e6);
        number(&r[3], "%.1f", at(o, "ceiling_tok_s", NULL));
        number(&r[4], "%.1f", at(o, "decode_tok_s", NULL));
        number(&r[5], "%.1f", 100 * at(o, "efficiency", NULL));
        text(&r[6], "%s", str(o, "bandwidth_source"));
        text(&r[7], "%s", str(o, "bytes_per_token_source"));
        if (at(o, "efficiency", NULL) > 1)
            foot(t,
                 "%s: the measured decode rate is above the ceiling: the bandwidth or the bytes "
                 "per token are wrong for it, or its tokens are not all read from memory "
                 "(speculative decoding, a cache, batching inside the server).",
                 name);
    }
}

static void memory_table(rf_tables *ts, const json_t *sum) {
    const json_t *mem = json_object_get(sum, "memory");
    if (!json_object_size((json_t *)mem)) return;
    static const char *cols[] = {"backend",         "weights GB",      "memory GB",
                                 "KV per token KB", "KV cache tokens", "max concurrency",
                                 "per request",     "memory from"};
    rf_table *t =
        table_new(ts, "memory", "Memory and KV capacity",
                  "KV budget = memory x utilisation - weights (vLLM's rule); tokens = "
                  "budget / KV bytes per token (f16); concurrency = budget / the KV of one "
                  "request (sliding-window layers at their window). GB = 1e9 bytes, KB = "
                  "1e3.",
                  8, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)mem, name, o) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        number(&r[1], "%.3f", at(o, "weights_bytes", NULL) / 1e9);
        number(&r[2], "%.1f", at(o, "mem_bytes", NULL) / 1e9);
        number(&r[3], "%.1f", at(o, "kv_per_token_bytes", NULL) / 1e3);
        number(&r[4], "%.0f", at(o, "kv_tokens", NULL));
        number(&r[5], "%.2f", at(o, "max_concurrency", NULL));
        if (isfinite(at(o, "request_tokens", NULL)))
            text(&r[6], "%d tokens", (int)at(o, "request_tokens", NULL));
        text(&r[7], "%s", *str(o, "note") ? str(o, "note") : str(o, "mem_source"));
        if (*str(o, "vllm_line")) foot(t, "%s: %s", name, str(o, "vllm_line"));
    }
}

static void accuracy_tables(rf_tables *ts, const json_t *sec, const json_t *agree) {
    static const char *cols[] = {"backend", "correct", "categories", "errors"};
    rf_table *t = table_new(ts, "accuracy", "Accuracy", NULL, 4, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        text(&r[1], "%d/%d", (int)at(o, "correct", NULL), (int)at(o, "total", NULL));
        char cats[512] = "";
        size_t w = 0;
        const char *cat;
        const json_t *c;
        json_object_foreach(json_object_get(o, "by_category"), cat, c) if (w < sizeof cats) w +=
            (size_t)snprintf(cats + w, sizeof cats - w, "%s%s %d/%d", w ? "; " : "", cat,
                             (int)at(c, "correct", NULL), (int)at(c, "total", NULL));
        text(&r[2], "%s", cats);
        text(&r[3], "%d", (int)at(o, "errors", NULL));
    }
    if (!json_array_size(agree)) return;
    static const char *acols[] = {"pair", "identical", "differing items"};
    rf_table *ta = table_new(ts, "agreement", "Reply agreement",
                             "Character-for-character agreement of the replies.", 3, acols);
    size_t i;
    const json_t *a;
    json_array_foreach((json_t *)agree, i, a) {
        rf_cell *r = row_new(ta);
        if (!r) return;
        text(&r[0], "%s vs %s", str(a, "a"), str(a, "b"));
        text(&r[1], "%d/%d", (int)at(a, "identical", NULL), (int)at(a, "total", NULL));
        char ids[1024] = "";
        size_t w = 0, j;
        const json_t *id;
        json_array_foreach(json_object_get(a, "differing"), j, id) if (w < sizeof ids) w +=
            (size_t)snprintf(ids + w, sizeof ids - w, "%s%s", j ? ", " : "", json_string_value(id));
        text(&r[2], "%s", ids);
    }
}

static void agent_tables(rf_tables *ts, const json_t *sec) {
    static const char *lcols[] = {"line"};
    rf_table *tl = table_new(ts, "agent_runs", "Agent (tool calling)",
                             "Graded on the quoted number and, separately, on the filter "
                             "condition the model sent.",
                             1, lcols);
    if (tl) tl->pre = true;
    static const char *cols[] = {"backend", "runs", "number correct", "filter correct"};
    rf_table *t = table_new(ts, "agent", "Agent scores", NULL, 4, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        size_t i;
        const json_t *l;
        json_array_foreach(json_object_get(o, "lines"), i, l) {
            rf_cell *r = row_new(tl);
            if (!r) return;
            text(&r[0], "%s", json_string_value(l));
        }
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        if (json_object_get(o, "error")) {
            text(&r[1], "%s", str(o, "error"));
            continue;
        }
        text(&r[1], "%d", (int)at(o, "runs", NULL));
        text(&r[2], "%d", (int)at(o, "quoted_ok", NULL));
        text(&r[3], "%d", (int)at(o, "filter_ok", NULL));
    }
}

static void probe_table(rf_tables *ts, const json_t *sec) {
    static const char *cols[] = {"backend", "answer", "latency s", "tok/s"};
    rf_table *t = table_new(ts, "probe", "Probe", NULL, 4, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", name);
        text(&r[1], "%s",
             json_is_true(json_object_get(o, "ok")) ? str(o, "answer") : str(o, "error"));
        number(&r[2], "%.3f", at(o, "latency_s", NULL));
        number(&r[3], "%.1f", at(o, "tok_s", NULL));
    }
}

static void aba_table(rf_tables *ts, const json_t *sec) {
    char title[200];
    snprintf(title, sizeof title, "A/B/A: %s, %s, %s", str(sec, "a"), str(sec, "b"), str(sec, "a"));
    static const char *cols[] = {"metric",    "A",     "B",       "A again",      "A drift",
                                 "A drift %", "B - A", "B - A %", "exceeds drift"};
    rf_table *t = table_new(ts, "aba", title,
                            "A difference counts only when it exceeds the A-to-A drift.", 9, cols);
    if (json_object_get(sec, "error")) {
        foot(t, "%s", str(sec, "error"));
        return;
    }
    const char *keys[] = {"decode_tok_s", "output_tok_s_top_level"};
    for (int k = 0; k < 2; k++) {
        const json_t *o = json_object_get(sec, keys[k]);
        if (!o) continue;
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s", keys[k]);
        number(&r[1], "%.2f", at(o, "a1", NULL));
        number(&r[2], "%.2f", at(o, "b", NULL));
        number(&r[3], "%.2f", at(o, "a2", NULL));
        number(&r[4], "%.2f", at(o, "a_drift", NULL));
        number(&r[5], "%.1f", at(o, "a_drift_pct", NULL));
        number(&r[6], "%+.2f", at(o, "b_minus_a", NULL));
        number(&r[7], "%+.1f", at(o, "b_minus_a_pct", NULL));
        text(&r[8], "%s",
             json_is_true(json_object_get(o, "difference_exceeds_drift")) ? "yes" : "no");
    }
}

/* The precision study (report/precision.h): one row per variant, the as-shipped file first. */
static void precision_table(rf_tables *ts, const json_t *sec) {
    static const char *cols[] = {"variant",         "file MB",           "bytes/token MB",
                                 "decode tok/s",    "ceiling tok/s",     "efficiency %",
                                 "eff. vs shipped", "decode vs shipped", "tok/s at top level",
                                 "accuracy",        "same answers",      "agent",
                                 "KV tokens"};
    rf_table *t = table_new(
        ts, "precision", "Precision: one model, its variants",
        "Run A B1 A B2 ... A: each variant between two turns of the as-shipped file (A). A "
        "variant is faster or slower only when its difference from A exceeds A's drift across "
        "those two turns; otherwise \"within drift\". Ceiling = measured bandwidth / bytes "
        "read per token; efficiency = decode / ceiling (A: the mean over its turns). The widened "
        "variant reads the as-shipped file's bytes but decodes every weight to floats per call. "
        "MB = 1e6 bytes.",
        13, cols);
    if (json_object_get(sec, "error")) {
        foot(t, "%s", str(sec, "error"));
        return;
    }
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(sec, "rows"), i, o) {
        rf_cell *r = row_new(t);
        if (!r) return;
        text(&r[0], "%s%s", str(o, "variant"),
             json_is_true(json_object_get(o, "widened")) ? " (widened matmuls)" : "");
        number(&r[1], "%.1f", at(o, "file_bytes", NULL) / 1e6);
        number(&r[2], "%.1f", at(o, "bytes_per_token", NULL) / 1e6);
        number(&r[3], "%.2f", at(o, "decode_tok_s", NULL));
        number(&r[4], "%.1f", at(o, "ceiling_tok_s", NULL));
        number(&r[5], "%.1f", 100 * at(o, "efficiency", NULL));
        number(&r[6], "%.2f", at(o, "efficiency_vs_shipped", NULL));
        const json_t *dv = json_object_get(o, "decode_vs_shipped");
        if (dv)
            text(&r[7], "%+.1f%% (drift %.1f%%): %s", at(dv, "b_minus_a_pct", NULL),
                 at(dv, "a_drift_pct", NULL), str(dv, "verdict"));
        else
            text(&r[7], "A");
        const json_t *lv = json_object_get(o, "output_tok_s_top_vs_shipped");
        if (lv && isfinite(at(o, "output_tok_s_top", NULL)))
            text(&r[8], "%.1f at %d (%s)", at(o, "output_tok_s_top", NULL),
                 (int)at(o, "top_level", NULL), str(lv, "verdict"));
        else if (isfinite(at(o, "output_tok_s_top", NULL)))
            text(&r[8], "%.1f at %d", at(o, "output_tok_s_top", NULL),
                 (int)at(o, "top_level", NULL));
        char cats[256] = "";
        size_t w = 0;
        const char *cat;
        const json_t *c;
        json_object_foreach(json_object_get(o, "accuracy_by_category"), cat, c) if (w < sizeof cats)
            w += (size_t)snprintf(cats + w, sizeof cats - w, "%s%s %d/%d", w ? "; " : "", cat,
                                  (int)at(c, "correct", NULL), (int)at(c, "total", NULL));
        if (isfinite(at(o, "accuracy_total", NULL)))
            text(&r[9], "%d/%d (%s)", (int)at(o, "accuracy_correct", NULL),
                 (int)at(o, "accuracy_total", NULL), cats);
        if (isfinite(at(o, "identical_of", NULL)))
            text(&r[10], "%d/%d", (int)at(o, "identical_to_shipped", NULL),
                 (int)at(o, "identical_of", NULL));
        else if (!dv)
            text(&r[10], "-");
        if (isfinite(at(o, "agent_runs", NULL)))
            text(&r[11], "%d/%d", (int)at(o, "agent_ok", NULL), (int)at(o, "agent_runs", NULL));
        number(&r[12], "%.0f", at(o, "kv_tokens", NULL));
    }
    const json_t *tr = json_object_get(sec, "tracking");
    if (isfinite(at(tr, "worst_efficiency_deviation", NULL)))
        foot(
            t,
            "native variants: efficiency within %.0f%% of the as-shipped file's: %s (worst %.1f%%)",
            100 * at(tr, "tolerance", NULL),
            json_is_true(json_object_get(tr, "native_track_bytes_per_token")) ? "yes" : "no",
            100 * at(tr, "worst_efficiency_deviation", NULL));
    if (isfinite(at(tr, "widened_over_shipped_decode", NULL)))
        foot(t,
             "widened matmuls: %.2fx the as-shipped decode tok/s on the same file (same bytes "
             "read; the decode of every weight per call is the difference)",
             at(tr, "widened_over_shipped_decode", NULL));
    size_t k;
    const json_t *turn;
    json_array_foreach(json_object_get(sec, "shipped_turns"), k, turn) {
        char top[64] = "";
        if (isfinite(at(turn, "output_tok_s_top", NULL)))
            snprintf(top, sizeof top, ", top level %.1f tok/s", at(turn, "output_tok_s_top", NULL));
        foot(t, "A turn %zu: decode %.2f tok/s%s", k + 1, at(turn, "decode_tok_s", NULL), top);
    }
}

rf_status rf_tables_build(const json_t *sum, rf_tables *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    const json_t *run = json_object_get(sum, "run");
    if (asprintf(&out->heading, "run `%s`, %s%s", str(run, "dir"),
                 *str(run, "date") ? str(run, "date") : "date unknown",
                 json_is_true(json_object_get(sum, "interrupted"))
                     ? " (interrupted: partial results)"
                     : "") < 0) {
        out->heading = NULL;
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    const json_t *s;
    backends_table(out, sum);
    if ((s = json_object_get(sum, "speed"))) speed_table(out, s);
    if ((s = json_object_get(sum, "load"))) load_table(out, sum, s);
    cost_tables(out, sum);
    roofline_table(out, sum);
    memory_table(out, sum);
    if ((s = json_object_get(sum, "accuracy")))
        accuracy_tables(out, s, json_object_get(sum, "agreement"));
    if ((s = json_object_get(sum, "agent"))) agent_tables(out, s);
    if ((s = json_object_get(sum, "probe"))) probe_table(out, s);
    if ((s = json_object_get(sum, "aba"))) aba_table(out, s);
    if ((s = json_object_get(sum, "precision"))) precision_table(out, s);
    /* drop tables without rows (a section with nothing measured), but keep their footnotes */
    int w = 0;
    for (int i = 0; i < out->n; i++) {
        rf_table *t = &out->t[i];
        if (t->n_rows || t->n_foot) {
            out->t[w++] = *t;
            continue;
        }
        free(t->id), free(t->title), free(t->note);
        for (int c = 0; c < t->n_cols; c++) free(t->cols[c]);
        free(t->cols);
        free(t->cells);
        free(t->foot);
    }
    out->n = w;
    return RF_OK;
}

void rf_tables_free(rf_tables *ts) {
    for (int i = 0; i < ts->n; i++) {
        rf_table *t = &ts->t[i];
        for (int r = 0; r < t->n_rows * t->n_cols; r++) free(t->cells[r].text);
        for (int c = 0; c < t->n_cols; c++) free(t->cols[c]);
        for (int f = 0; f < t->n_foot; f++) free(t->foot[f]);
        free(t->cells), free(t->cols), free(t->foot), free(t->id), free(t->title), free(t->note);
    }
    free(ts->t);
    free(ts->heading);
    memset(ts, 0, sizeof *ts);
}

const char *rf_cell_str(const rf_cell *c, char *buf, size_t cap) {
    switch (c->kind) {
    case RF_CELL_NUM:
        snprintf(buf, cap, c->fmt, c->v);
        return buf;
    case RF_CELL_TEXT:
        return c->text ? c->text : "";
    case RF_CELL_UNKNOWN:
        break;
    }
    return "unknown";
}

const rf_table *rf_tables_find(const rf_tables *ts, const char *id) {
    for (int i = 0; i < ts->n; i++)
        if (!strcmp(ts->t[i].id, id)) return &ts->t[i];
    return NULL;
}
