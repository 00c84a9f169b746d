/* report_md.c: Markdown scoreboard from the summary object. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "bench/report.h"
#include "util/utf8.h"

static double num(const json_t *o, const char *k) {
    const json_t *x = json_object_get(o, k);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

static double num2(const json_t *o, const char *a, const char *b) {
    return num(json_object_get(o, a), b);
}

/* "12.3" or "-" */
static void cell(FILE *f, const char *fmt, double v) {
    if (isnan(v) || v < 0)
        fputs(" - |", f);
    else {
        fputc(' ', f);
        fprintf(f, fmt, v);
        fputs(" |", f);
    }
}

/* Markdown-safe one-line excerpt of model text: at most max characters, never a character cut
 * in two, bytes of no valid UTF-8 sequence as '?', so the file stays valid UTF-8. */
static void excerpt(FILE *f, const char *s, size_t max) {
    size_t n = 0, len = s ? strlen(s) : 0, i = 0;
    fputc(' ', f);
    for (; i < len && n < max; n++) {
        size_t k = rf_utf8_seq(s + i, len - i);
        if (k > 1) {
            fwrite(s + i, 1, k, f);
            i += k;
            continue;
        }
        char c = k ? s[i] : '?';
        i++;
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
        if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';
        if (c == '|')
            fputs("\\|", f);
        else
            fputc(c, f);
    }
    if (i < len) fputs("...", f);
    fputs(" |", f);
}

static void speed_table(const json_t *sec, FILE *f) {
    fputs("\n## Single-stream speed\n\n"
          "Decode tok/s = (tokens - 1) / (last - first content event); n/E2E tok/s = tokens / "
          "(send to last content).\n\n"
          "| backend | runs ok | TTFT ms (median) | decode tok/s min | median | max | E2E s min "
          "| max | n/E2E tok/s median |\n|---|---|---|---|---|---|---|---|---|\n",
          f);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        fprintf(f, "| %s | %d/%d |", name, (int)num(o, "ok"), (int)num(o, "runs"));
        cell(f, "%.1f", num2(o, "ttft_ms", "median"));
        cell(f, "%.1f", num2(o, "decode_tok_s", "min"));
        cell(f, "%.1f", num2(o, "decode_tok_s", "median"));
        cell(f, "%.1f", num2(o, "decode_tok_s", "max"));
        cell(f, "%.2f", num2(o, "e2e_s", "min"));
        cell(f, "%.2f", num2(o, "e2e_s", "max"));
        cell(f, "%.1f", num2(o, "e2e_tok_s", "median"));
        fputc('\n', f);
    }
}

static void load_table(const json_t *sec, FILE *f) {
    fputs("\n## Load\n\n"
          "TPOT = (E2E - TTFT) / (tokens - 1) (vLLM); per-token gap = gap between content events "
          "/ tokens in the later one; queue latency = intended send to last content; lag = "
          "actual - intended send.\n\n"
          "| backend | level | ok | errors | output tok/s | req/s | TTFT p50 | p90 | p99 ms | TPOT "
          "p50 | p99 ms | token gap p50 | p99 ms | queue p99 ms | lag p99 ms |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
          f);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(o, "levels"), i, lv) {
            const char *mode = json_string_value(json_object_get(lv, "mode"));
            char level[32];
            if (mode && !strcmp(mode, "rate"))
                snprintf(level, sizeof level, "%.2f req/s", num(lv, "rate"));
            else
                snprintf(level, sizeof level, "c=%d", (int)num(lv, "concurrency"));
            bool bound = json_is_true(json_object_get(json_object_get(lv, "client"), "bound"));
            fprintf(f, "| %s | %s%s | %d | %d", name, level, bound ? " (client-bound)" : "",
                    (int)num(lv, "ok"), (int)num(lv, "errors"));
            /* requests the transport resent after a connection closed with no reply */
            if (num(lv, "resends") > 0) fprintf(f, " (+%d resent)", (int)num(lv, "resends"));
            fputs(" |", f);
            cell(f, "%.1f", num(lv, "output_tok_s"));
            cell(f, "%.2f", num(lv, "request_rate"));
            cell(f, "%.1f", num2(lv, "ttft_ms", "p50"));
            cell(f, "%.1f", num2(lv, "ttft_ms", "p90"));
            cell(f, "%.1f", num2(lv, "ttft_ms", "p99"));
            cell(f, "%.2f", num2(lv, "tpot_ms", "p50"));
            cell(f, "%.2f", num2(lv, "tpot_ms", "p99"));
            cell(f, "%.2f", num2(lv, "per_token_gap_ms", "p50"));
            cell(f, "%.2f", num2(lv, "per_token_gap_ms", "p99"));
            cell(f, "%.1f", num2(lv, "queue_latency_ms", "p99"));
            cell(f, "%.2f", num2(lv, "schedule_lag_ms", "p99"));
            fputc('\n', f);
        }
    }
    /* levels whose figures are the client's: its loop ran late or it used a whole core */
    json_object_foreach((json_t *)sec, name, o) {
        size_t i;
        const json_t *lv;
        json_array_foreach(json_object_get(o, "levels"), i, lv) {
            const json_t *c = json_object_get(lv, "client");
            if (!json_is_true(json_object_get(c, "bound"))) continue;
            fprintf(f, "\n**client-bound**: %s level %zu:", name, i + 1);
            const char *w = json_string_value(json_object_get(c, "warning"));
            fprintf(f, " %s;", w ? w : "");
            fputs(" the times at this level measure the bench, not the server.\n", f);
        }
    }
}

static void accuracy_table(const json_t *sec, const json_t *agree, FILE *f) {
    fputs("\n## Accuracy\n\n| backend | correct | categories | errors |\n|---|---|---|---|\n", f);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        fprintf(f, "| %s | %d/%d |", name, (int)num(o, "correct"), (int)num(o, "total"));
        const char *cat;
        const json_t *c;
        fputc(' ', f);
        json_object_foreach(json_object_get(o, "by_category"), cat, c)
            fprintf(f, "%s %d/%d; ", cat, (int)num(c, "correct"), (int)num(c, "total"));
        fprintf(f, "| %d |\n", (int)num(o, "errors"));
    }
    if (json_array_size(agree)) {
        fputs("\nCharacter-for-character agreement of the replies:\n\n| pair | identical | "
              "differing items |\n|---|---|---|\n",
              f);
        size_t i;
        const json_t *a;
        json_array_foreach((json_t *)agree, i, a) {
            fprintf(f, "| %s vs %s | %d/%d | ", json_string_value(json_object_get(a, "a")),
                    json_string_value(json_object_get(a, "b")), (int)num(a, "identical"),
                    (int)num(a, "total"));
            size_t j;
            const json_t *id;
            json_array_foreach(json_object_get(a, "differing"), j, id)
                fprintf(f, "%s%s", j ? ", " : "", json_string_value(id));
            fputs(" |\n", f);
        }
    }
}

static void agent_table(const json_t *sec, FILE *f) {
    fputs("\n## Agent (tool calling)\n\nGraded on the quoted number and, separately, on the "
          "filter condition the model sent.\n\n```\n",
          f);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        size_t i;
        const json_t *l;
        json_array_foreach(json_object_get(o, "lines"), i, l)
            fprintf(f, "%s\n", json_string_value(l));
    }
    fputs("```\n\n| backend | runs | number correct | filter correct |\n|---|---|---|---|\n", f);
    json_object_foreach((json_t *)sec, name, o)
        fprintf(f, "| %s | %d | %d | %d |\n", name, (int)num(o, "runs"), (int)num(o, "quoted_ok"),
                (int)num(o, "filter_ok"));
}

static void probe_table(const json_t *sec, FILE *f) {
    fputs("\n## Probe\n\n| backend | answer | latency s | tok/s |\n|---|---|---|---|\n", f);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)sec, name, o) {
        fprintf(f, "| %s |", name);
        excerpt(f, json_string_value(json_object_get(o, "answer")), 60);
        cell(f, "%.3f", num(o, "latency_s"));
        cell(f, "%.1f", num(o, "tok_s"));
        fputc('\n', f);
    }
}

static void aba_table(const json_t *sec, FILE *f) {
    fprintf(f, "\n## A/B/A: %s, %s, %s\n\n", json_string_value(json_object_get(sec, "a")),
            json_string_value(json_object_get(sec, "b")),
            json_string_value(json_object_get(sec, "a")));
    if (json_object_get(sec, "error")) {
        fprintf(f, "%s\n", json_string_value(json_object_get(sec, "error")));
        return;
    }
    fputs("| metric | A | B | A again | A drift | B - A | exceeds drift "
          "|\n|---|---|---|---|---|---|---|\n",
          f);
    const char *keys[] = {"decode_tok_s", "output_tok_s_top_level"};
    for (int k = 0; k < 2; k++) {
        const json_t *o = json_object_get(sec, keys[k]);
        if (!o) continue;
        fprintf(f, "| %s |", keys[k]);
        cell(f, "%.2f", num(o, "a1"));
        cell(f, "%.2f", num(o, "b"));
        cell(f, "%.2f", num(o, "a2"));
        fprintf(f, " %.2f (%.1f%%) | %+.2f (%+.1f%%) | %s |\n", num(o, "a_drift"),
                num(o, "a_drift_pct"), num(o, "b_minus_a"), num(o, "b_minus_a_pct"),
                json_is_true(json_object_get(o, "difference_exceeds_drift")) ? "yes" : "no");
    }
}

void rf_report_markdown(const json_t *summary, FILE *f) {
    const json_t *run = json_object_get(summary, "run");
    fprintf(f, "# roofline bench scoreboard\n\nrun `%s`, %s%s\n\n",
            json_string_value(json_object_get(run, "dir")),
            json_string_value(json_object_get(run, "date")),
            json_is_true(json_object_get(summary, "interrupted"))
                ? " (interrupted: partial results)"
                : "");
    fputs("| backend | uri | model | hardware | $/hour | status |\n|---|---|---|---|---|---|\n", f);
    const char *name;
    const json_t *o;
    json_object_foreach(json_object_get(summary, "backends"), name, o) {
        const json_t *e = json_object_get(o, "error");
        fprintf(f, "| %s | %s | %s | %s |", name, json_string_value(json_object_get(o, "uri")),
                json_string_value(json_object_get(o, "model")),
                json_object_get(o, "hardware") ? json_string_value(json_object_get(o, "hardware"))
                                               : "-");
        cell(f, "%.4f", num(o, "usd_per_hour") > 0 ? num(o, "usd_per_hour") : NAN);
        if (e)
            excerpt(f, json_string_value(e), 80);
        else
            fputs(" ok |", f);
        fputc('\n', f);
    }
    const json_t *s;
    if ((s = json_object_get(summary, "speed"))) speed_table(s, f);
    if ((s = json_object_get(summary, "load"))) load_table(s, f);
    if ((s = json_object_get(summary, "accuracy")))
        accuracy_table(s, json_object_get(summary, "agreement"), f);
    if ((s = json_object_get(summary, "agent"))) agent_table(s, f);
    if ((s = json_object_get(summary, "probe"))) probe_table(s, f);
    if ((s = json_object_get(summary, "aba"))) aba_table(s, f);
}
