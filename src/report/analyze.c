/* analyze.c: the summary from the records (see analyze.h). */
#include "report/analyze.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/agent_task.h"
#include "bench/bench.h"
#include "bench/graders.h"
#include "bench/questions.h"
#include "bench/records.h"
#include "report/drift.h"
#include "report/econ.h"
#include "report/precision.h"
#include "report/speed_load.h"

static const char *str_of(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* ---------------------------------------------------------------- accuracy */

static json_t *accuracy_section(const rf_run *r, const rf_bench_backend *bb) {
    const rf_run_desc *d = &r->rf.desc;
    char pbuf[RF_BENCH_PATH_MAX];
    const char *path =
        rf_bench_data_path(d->questions, "accuracy/seed40.jsonl", pbuf, sizeof pbuf, NULL);
    rf_question *qs = NULL;
    int32_t nq = 0;
    rf_error qerr = {0};
    bool have_qs = path && rf_questions_load(path, NULL, &qs, &nq, &qerr) == RF_OK;
    json_t *recs = rf_run_records(r, "", "accuracy", bb->cfg.name, -1);
    size_t n = json_array_size(recs);
    int32_t total = have_qs ? nq : (int32_t)n;
    int correct = 0, errors = 0, missing = 0;
    json_t *cats = json_object(), *replies = json_object(), *items = json_array();
    for (int32_t i = 0; i < total; i++) {
        const json_t *rec = rf_run_record(r, "", "accuracy", bb->cfg.name, 0, i);
        if (!have_qs) rec = json_array_get(recs, (size_t)i);
        const char *id = have_qs ? qs[i].id : str_of(rec, "item");
        const char *cat = have_qs ? qs[i].category : str_of(rec, "category");
        if (!rec) missing++;
        bool ok_rec = rec && !strcmp(str_of(rec, "status"), "ok");
        int ok = rec && json_is_true(json_object_get(rec, "correct"));
        correct += ok;
        errors += rec && !ok_rec;
        json_t *c = json_object_get(cats, cat);
        if (!c) {
            c = json_pack("{s:i,s:i}", "correct", 0, "total", 0);
            json_object_set_new(cats, cat, c);
        }
        json_object_set_new(c, "correct",
                            json_integer(json_integer_value(json_object_get(c, "correct")) + ok));
        json_object_set_new(c, "total",
                            json_integer(json_integer_value(json_object_get(c, "total")) + 1));
        if (ok_rec) json_object_set(replies, id, json_object_get(rec, "reply"));
        json_t *it = json_object();
        json_object_set_new(it, "id", json_string(id));
        json_object_set_new(it, "correct", json_boolean(ok));
        json_t *ex = rec ? json_object_get(rec, "extracted") : NULL;
        json_object_set(it, "extracted", ex ? ex : json_null());
        if (!rec) json_object_set_new(it, "missing", json_true());
        json_array_append_new(items, it);
    }
    json_t *out = json_object();
    json_object_set_new(out, "questions", json_string(path ? path : ""));
    if (!have_qs) json_object_set_new(out, "questions_error", json_string(qerr.msg));
    json_object_set_new(out, "total", json_integer(total));
    json_object_set_new(out, "correct", json_integer(correct));
    json_object_set_new(out, "errors", json_integer(errors));
    if (missing) json_object_set_new(out, "missing", json_integer(missing));
    json_object_set_new(out, "by_category", cats);
    json_object_set_new(out, "items", items);
    json_object_set_new(out, "replies", replies);
    json_decref(recs);
    rf_questions_free(qs, nq);
    return out;
}

/* Every pair of backends that ran the suite: identical replies, and the ids that differ. */
static json_t *agreement(json_t *acc) {
    json_t *pairs = json_array();
    void *it = json_object_iter(acc);
    for (; it; it = json_object_iter_next(acc, it)) {
        const char *na = json_object_iter_key(it);
        json_t *a = json_object_iter_value(it);
        for (void *it2 = json_object_iter_next(acc, it); it2;
             it2 = json_object_iter_next(acc, it2)) {
            const char *nb = json_object_iter_key(it2);
            json_t *bo = json_object_iter_value(it2);
            json_t *ia = json_object_get(a, "items");
            size_t n = json_array_size(ia);
            const char **ids = calloc(n + 1, sizeof *ids);
            rf_reply_ref *ra = calloc(n + 1, sizeof *ra), *rb = calloc(n + 1, sizeof *rb);
            if (!ids || !ra || !rb) {
                free(ids), free(ra), free(rb);
                continue;
            }
            for (size_t i = 0; i < n; i++) {
                const char *id = json_string_value(json_object_get(json_array_get(ia, i), "id"));
                ids[i] = id;
                json_t *x = json_object_get(json_object_get(a, "replies"), id);
                json_t *y = json_object_get(json_object_get(bo, "replies"), id);
                if (x) ra[i] = (rf_reply_ref){json_string_value(x), json_string_length(x)};
                if (y) rb[i] = (rf_reply_ref){json_string_value(y), json_string_length(y)};
            }
            rf_agreement ag;
            rf_error err = {0};
            if (rf_agreement_compare(ids, ra, rb, (int32_t)n, &ag, &err) == RF_OK) {
                json_t *p = json_object();
                json_object_set_new(p, "a", json_string(na));
                json_object_set_new(p, "b", json_string(nb));
                json_object_set_new(p, "total", json_integer(ag.n_items));
                json_object_set_new(p, "identical", json_integer(ag.n_identical));
                json_t *diff = json_array();
                for (int32_t k = 0; k < ag.n_diff; k++)
                    json_array_append_new(diff, json_string(ag.diff_ids[k]));
                json_object_set_new(p, "differing", diff);
                json_array_append_new(pairs, p);
                rf_agreement_free(&ag);
            }
            free(ids), free(ra), free(rb);
        }
    }
    return pairs;
}

/* ---------------------------------------------------------------- agent */

/* Grades each run again from its turns' records: every call of every turn, and the text of the
 * last turn that made no call (the final answer). */
static json_t *agent_section(const rf_run *r, const rf_bench_backend *bb, const char *label,
                             int name_w) {
    const rf_run_desc *d = &r->rf.desc;
    json_t *out = json_object();
    char buf[RF_BENCH_PATH_MAX];
    const char *path =
        rf_bench_data_path(d->agent_task, "agent/count_ids.json", buf, sizeof buf, NULL);
    rf_agent_task t;
    rf_error err = {0};
    if (!path || rf_agent_task_load(path, &t, &err)) {
        json_object_set_new(out, "error",
                            json_string(path ? err.msg : "the agent task's path is too long"));
        return out;
    }
    int runs = d->agent_runs ? d->agent_runs : t.runs;
    json_t *lines = json_array(), *details = json_array();
    int quoted_ok = 0, filter_ok = 0, ok = 0, recorded = 0;
    for (int run = 1; run <= runs; run++) {
        rf_agent_call calls[64];
        int32_t n_calls = 0;
        const char *final = "", *status = NULL;
        double secs = 0;
        int turns = 0;
        for (int k = 0; k < t.max_turns; k++) {
            const json_t *rec =
                rf_run_record(r, "", "agent", bb->cfg.name, 0, (run - 1) * t.max_turns + k);
            if (!rec) break;
            turns++;
            double sent = json_number_value(json_object_get(rec, "t_sent_ms"));
            double done = json_number_value(json_object_get(rec, "t_done_ms"));
            if (done > sent) secs += (done - sent) / 1e3;
            if (strcmp(str_of(rec, "status"), "ok")) {
                status = str_of(rec, "error_class");
                break;
            }
            final = str_of(rec, "reply");
            json_t *tc = json_object_get(rec, "tool_calls");
            if (!json_array_size(tc)) break;
            size_t i;
            json_t *c;
            json_array_foreach(tc, i, c) {
                if (n_calls >= 64) break;
                const char *args = str_of(c, "arguments");
                calls[n_calls++] = (rf_agent_call){str_of(c, "name"), args, strlen(args)};
            }
            final = "";
        }
        if (!turns) continue; /* not run (interrupted) */
        recorded++;
        rf_agent_grade g;
        rf_agent_grade_run(&t, calls, n_calls, final, strlen(final), &g);
        quoted_ok += g.quoted_ok;
        filter_ok += g.filters_ok;
        ok += g.ok && !status;
        rf_buf line;
        rf_buf_init(&line, 0);
        rf_agent_format_run(label, run, runs, &g, status, secs, name_w, 4, &line);
        rf_buf_terminate(&line);
        json_array_append_new(lines, json_string(line.data ? (const char *)line.data : ""));
        rf_buf_free(&line);
        json_t *dj = json_object();
        json_object_set_new(dj, "run", json_integer(run));
        json_object_set_new(dj, "ok", json_boolean(g.ok && !status));
        json_object_set_new(dj, "quoted", json_string(g.quoted));
        json_object_set_new(dj, "quoted_ok", json_boolean(g.quoted_ok));
        json_object_set_new(dj, "filters_ok", json_boolean(g.filters_ok));
        json_object_set_new(dj, "calls", json_integer(g.n_calls));
        json_t *fl = json_array();
        for (int32_t i = 0; i < g.n_calls && i < RF_AGENT_GRADED_CALLS; i++)
            json_array_append_new(fl, json_string(g.calls[i].filter));
        json_object_set_new(dj, "filters", fl);
        if (status) json_object_set_new(dj, "error", json_string(status));
        if (g.reason[0]) json_object_set_new(dj, "reason", json_string(g.reason));
        json_object_set_new(dj, "seconds", json_real(secs));
        json_array_append_new(details, dj);
    }
    json_object_set_new(out, "task", json_string(t.name));
    json_object_set_new(out, "runs", json_integer(runs));
    json_object_set_new(out, "recorded", json_integer(recorded));
    json_object_set_new(out, "ok", json_integer(ok));
    json_object_set_new(out, "quoted_ok", json_integer(quoted_ok));
    json_object_set_new(out, "filter_ok", json_integer(filter_ok));
    json_object_set_new(out, "lines", lines);
    json_object_set_new(out, "details", details);
    rf_agent_task_free(&t);
    return out;
}

/* ---------------------------------------------------------------- probe */

static json_t *probe_section(const rf_run *r, const rf_bench_backend *bb) {
    json_t *out = json_object();
    const json_t *rec = rf_run_record(r, "", "probe", bb->cfg.name, 0, 0);
    if (!rec) {
        json_object_set_new(out, "ok", json_false());
        json_object_set_new(out, "error", json_string("not run"));
        return out;
    }
    rf_send s;
    rf_bench_backend sbb;
    memset(&s, 0, sizeof s);
    memset(&sbb, 0, sizeof sbb);
    rf_bk_result_init(&s.req.res);
    s.bb = &sbb;
    rf_error e = {0};
    rf_record_restore(rec, &s, 0, &e);
    rf_send_metrics m;
    rf_send_metrics_of(&s, &m);
    json_object_set_new(out, "ok", json_boolean(m.ok));
    if (!m.ok) json_object_set_new(out, "error", json_string(str_of(rec, "error_class")));
    json_object_set(out, "answer", json_object_get(rec, "reply"));
    json_object_set_new(out, "latency_s", m.e2e_ms >= 0 ? json_real(m.e2e_ms / 1e3) : json_null());
    json_object_set_new(out, "tokens", json_integer(m.tokens));
    json_object_set_new(out, "tok_s", m.e2e_tok_s >= 0 ? json_real(m.e2e_tok_s) : json_null());
    rf_bk_result_free(&s.req.res);
    return out;
}

/* ---------------------------------------------------------------- A/B/A */

static const rf_bench_backend *find_backend(const rf_run_desc *d, const char *name) {
    for (int i = 0; name && i < d->n_backends; i++)
        if (!strcmp(d->backends[i].cfg.name, name)) return &d->backends[i];
    return NULL;
}

static double get_real(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

static json_t *aba_section(const rf_run *r, const rf_slo *slo, const char *const *names) {
    const rf_run_desc *d = &r->rf.desc;
    const rf_bench_backend *a = find_backend(d, d->aba_a), *bk = find_backend(d, d->aba_b);
    json_t *out = json_object();
    if (!a || !bk) {
        json_object_set_new(out, "error", json_string("aba needs two backends (aba.a, aba.b)"));
        return out;
    }
    json_object_set_new(out, "a", json_string(names[a - d->backends]));
    json_object_set_new(out, "b", json_string(names[bk - d->backends]));
    json_t *phases = json_array();
    json_object_set_new(out, "phases", phases);
    static const char *const phase_names[3] = {"aba 1", "aba 2", "aba 3"};
    const rf_bench_backend *order[3] = {a, bk, a};
    double dec[3], tput[3];
    for (int p = 0; p < 3; p++) {
        json_t *ph = json_object();
        json_array_append_new(phases, ph);
        json_object_set_new(ph, "backend", json_string(names[order[p] - d->backends]));
        dec[p] = tput[p] = NAN;
        if (d->aba_speed || !d->aba_load) {
            json_t *sp = rf_report_speed_section(r, phase_names[p], order[p]);
            dec[p] = get_real(sp, "decode_tok_s", "median");
            json_object_set_new(ph, "speed", sp);
        }
        if (d->aba_load) {
            json_t *ld = rf_report_load_section(r, phase_names[p], order[p], slo);
            json_t *lv = json_object_get(ld, "levels");
            tput[p] = get_real(json_array_get(lv, json_array_size(lv) - 1), "output_tok_s", NULL);
            json_object_set_new(ph, "load", ld);
        }
    }
    const char *keys[2] = {"decode_tok_s", "output_tok_s_top_level"};
    double *vals[2] = {dec, tput};
    for (int k = 0; k < 2; k++) {
        rf_drift j = rf_drift_judge(vals[k][0], vals[k][1], vals[k][2]);
        if (j.verdict != RF_DRIFT_UNKNOWN) json_object_set_new(out, keys[k], rf_drift_json(&j));
    }
    return out;
}

/* ---------------------------------------------------------------- the whole */

static const char *model_of(const rf_run *r, const char *backend) {
    size_t i;
    json_t *rec;
    json_array_foreach(r->recs, i, rec) {
        if (!strcmp(str_of(rec, "backend"), backend) && *str_of(rec, "model"))
            return str_of(rec, "model");
    }
    return NULL;
}

static bool ran(const rf_run *r, const char *suite, const char *backend) {
    size_t i;
    json_t *rec;
    json_array_foreach(r->recs, i, rec) {
        if (!strcmp(str_of(rec, "suite"), suite) && !strcmp(str_of(rec, "backend"), backend) &&
            !json_object_get(rec, "phase"))
            return true;
    }
    return false;
}

static json_t *section(json_t *sum, const char *name) {
    json_t *s = json_object_get(sum, name);
    if (!s) {
        s = json_object();
        json_object_set_new(sum, name, s);
    }
    return s;
}

json_t *rf_analyze(const rf_runset *rs, const rf_report_opts *opts, rf_error *err) {
    /* the SLOs given to the report, else the first run's */
    rf_report_opts eff = *opts;
    const rf_report_opts *o = &eff;
    if (!rf_slo_given(&eff.slo) && rs->n) {
        const rf_run_desc *d0 = &rs->runs[0].rf.desc;
        eff.slo.ttft_ms = d0->slo_ttft_ms;
        eff.slo.tpot_ms = d0->slo_tpot_ms;
        eff.slo.e2e_ms = d0->slo_e2e_ms;
        if (d0->slo_attainment > 0) eff.slo.attainment = d0->slo_attainment;
    }
    if (!(eff.slo.attainment > 0)) eff.slo.attainment = 0.9;
    json_t *sum = json_object(), *runs = json_array(), *backends = json_object();
    json_t *notes = json_array();
    if (!sum || !runs || !backends || !notes) {
        json_decref(sum), json_decref(runs), json_decref(backends), json_decref(notes);
        rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    json_object_set_new(sum, "schema", json_integer(RF_RECORD_SCHEMA));
    json_object_set_new(sum, "runs", runs);
    json_object_set_new(sum, "backends", backends);
    bool interrupted = false;
    int name_w = 4;
    for (int i = 0; i < rs->n; i++)
        for (int b = 0; b < rs->runs[i].rf.desc.n_backends; b++) {
            int w = (int)strlen(rs->runs[i].names[b]);
            if (w > name_w) name_w = w;
        }
    for (int i = 0; i < rs->n; i++) {
        const rf_run *r = &rs->runs[i];
        const rf_run_desc *d = &r->rf.desc;
        json_t *ro = json_object();
        json_object_set_new(ro, "dir", json_string(r->dir));
        json_object_set_new(ro, "run_id", json_string(r->run_id));
        json_object_set_new(ro, "sessions", json_integer(r->sessions));
        json_object_set_new(ro, "resumed", json_boolean(r->sessions > 1));
        json_object_set_new(ro, "ended", json_boolean(r->ended));
        json_object_set_new(ro, "interrupted", json_boolean(!r->ended || r->interrupted));
        if (r->error) json_object_set_new(ro, "error", json_string(r->error));
        json_object_set_new(ro, "records", json_integer(r->lines));
        json_object_set_new(ro, "requests", json_integer((json_int_t)json_array_size(r->recs)));
        json_object_set_new(ro, "superseded", json_integer(r->superseded));
        json_object_set_new(ro, "skipped", json_integer(r->skipped));
        json_object_set_new(ro, "torn_last_line", json_boolean(r->torn));
        if (r->machine) json_object_set(ro, "machine", r->machine);
        const json_t *start = NULL;
        size_t k;
        json_t *ev;
        json_array_foreach(r->log, k, ev) if (!strcmp(str_of(ev, "kind"), "session") && !start)
            start = ev;
        if (start) json_object_set(ro, "date", json_object_get(start, "started"));
        const json_t *end = NULL; /* the last session's end, with what its resume reused */
        json_array_foreach(r->log, k, ev) if (!strcmp(str_of(ev, "kind"), "session_end")) end = ev;
        static const char *const carried[] = {"records_reused", "records_superseded",
                                              "torn_bytes_cut", "duration_s"};
        for (size_t c = 0; end && c < sizeof carried / sizeof carried[0]; c++)
            if (json_object_get(end, carried[c]))
                json_object_set(ro, carried[c], json_object_get(end, carried[c]));
        if (r->warning[0]) {
            json_object_set_new(ro, "warning", json_string(r->warning));
            json_array_append_new(notes, json_string(r->warning));
        }
        json_array_append_new(runs, ro);
        interrupted |= !r->ended || r->interrupted;
        for (int b = 0; b < d->n_backends; b++) {
            const rf_bench_backend *bb = &d->backends[b];
            const char *label = r->names[b];
            json_t *bo = json_object();
            json_object_set_new(bo, "name", json_string(bb->cfg.name));
            json_object_set_new(bo, "run", json_string(r->dir));
            json_object_set_new(bo, "uri", json_string(bb->cfg.uri));
            const char *model = model_of(r, bb->cfg.name);
            json_object_set_new(bo, "model", model ? json_string(model) : json_null());
            if (bb->hardware) json_object_set_new(bo, "hardware", json_string(bb->hardware));
            json_object_set_new(bo, "usd_per_hour",
                                bb->usd_per_hour > 0 ? json_real(bb->usd_per_hour) : json_null());
            json_object_set_new(bo, "usd_per_m_input",
                                bb->usd_per_m_input > 0 ? json_real(bb->usd_per_m_input)
                                                        : json_null());
            json_object_set_new(bo, "usd_per_m_output",
                                bb->usd_per_m_output > 0 ? json_real(bb->usd_per_m_output)
                                                         : json_null());
            json_object_set_new(bo, "mem_bw_gbs",
                                bb->mem_bw_gbs > 0 ? json_real(bb->mem_bw_gbs) : json_null());
            if (!model && json_array_size(r->recs))
                json_object_set_new(bo, "error",
                                    json_string("no request was recorded (the backend "
                                                "could not be opened?)"));
            json_object_set_new(backends, label, bo);
            const bool pv = bb->variant != NULL; /* precision variants: the suites it ran */
            if ((d->speed || pv) && ran(r, "speed", bb->cfg.name))
                json_object_set_new(section(sum, "speed"), label,
                                    rf_report_speed_section(r, "", bb));
            if ((d->load || pv) && ran(r, "load", bb->cfg.name))
                json_object_set_new(section(sum, "load"), label,
                                    rf_report_load_section(r, "", bb, &o->slo));
            if ((d->accuracy || pv) && ran(r, "accuracy", bb->cfg.name))
                json_object_set_new(section(sum, "accuracy"), label, accuracy_section(r, bb));
            if ((d->agent || pv) && ran(r, "agent", bb->cfg.name))
                json_object_set_new(section(sum, "agent"), label,
                                    agent_section(r, bb, label, name_w));
            if (d->probe && ran(r, "probe", bb->cfg.name))
                json_object_set_new(section(sum, "probe"), label, probe_section(r, bb));
        }
        if (d->aba && !json_object_get(sum, "aba"))
            json_object_set_new(sum, "aba", aba_section(r, &o->slo, (const char *const *)r->names));
    }
    if (json_object_get(sum, "accuracy"))
        json_object_set_new(sum, "agreement", agreement(json_object_get(sum, "accuracy")));
    if (rf_slo_given(&o->slo)) {
        json_t *s = json_object();
        if (o->slo.ttft_ms > 0) json_object_set_new(s, "ttft_ms", json_real(o->slo.ttft_ms));
        if (o->slo.tpot_ms > 0) json_object_set_new(s, "tpot_ms", json_real(o->slo.tpot_ms));
        if (o->slo.e2e_ms > 0) json_object_set_new(s, "e2e_ms", json_real(o->slo.e2e_ms));
        json_object_set_new(s, "attainment", json_real(o->slo.attainment));
        json_object_set_new(sum, "slo", s);
    }
    json_object_set_new(sum, "interrupted", json_boolean(interrupted));
    /* the first run, as the scoreboard's heading (all runs are in "runs") */
    json_object_set_new(sum, "run", json_deep_copy(json_array_get(runs, 0)));
    json_object_set_new(sum, "notes", notes);
    rf_status st = rf_econ_add(rs, o, sum, err);
    if (!st) st = rf_precision_add(rs, o, sum, err);
    if (st) {
        json_decref(sum);
        return NULL;
    }
    return sum;
}
