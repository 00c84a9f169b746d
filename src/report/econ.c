/* econ.c: cost and roofline sections (see econ.h). */
#include "report/econ.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/facts.h"
#include "model/registry.h"
#include "report/catalog.h"
#include "report/cost.h"

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static double real_at(const json_t *o, const char *a, const char *b) {
    const json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

typedef struct priced {
    const char *label;
    rf_price p;
    bool known, per_token;
    char source[512];
} priced;

static void price_of(const rf_catalog *cat, const rf_bench_backend *bb, const char *model,
                     priced *out) {
    memset(&out->p, 0, sizeof out->p);
    out->known = out->per_token = false;
    out->source[0] = 0;
    if (bb->usd_per_hour > 0) {
        out->p.usd_per_hour = bb->usd_per_hour;
        snprintf(out->source, sizeof out->source, "run file");
        out->known = true;
    } else if (bb->usd_per_m_output > 0) {
        out->p.usd_per_m_input = bb->usd_per_m_input;
        out->p.usd_per_m_output = bb->usd_per_m_output;
        snprintf(out->source, sizeof out->source, "run file");
        out->known = out->per_token = true;
    } else if (bb->price_instance) {
        rf_error e = {0};
        if (rf_catalog_need_instance(cat, bb->price_instance, &out->p, &e)) {
            snprintf(out->source, sizeof out->source, "%s", e.msg); /* known stays false */
            return;
        }
        snprintf(out->source, sizeof out->source, "prices file: %s (%s, %s)", bb->price_instance,
                 out->p.source ? out->p.source : "no source",
                 out->p.date ? out->p.date : "no date");
        out->known = true;
    } else if (rf_backend_is_local(&bb->cfg) && rf_catalog_local(cat, &out->p)) {
        snprintf(out->source, sizeof out->source, "prices file, local backend: %s (%s)",
                 out->p.name ? out->p.name : "?", out->p.source ? out->p.source : "no source");
        out->known = true;
    } else if (rf_catalog_per_token(cat, model, &out->p) ||
               rf_catalog_per_token(cat, bb->cfg.uri, &out->p)) {
        snprintf(out->source, sizeof out->source, "prices file: %s (%s)",
                 out->p.name ? out->p.name : "?", out->p.source ? out->p.source : "no source");
        out->known = out->per_token = true;
    }
}

/* The facts of the model file a backend names (headers only; GGUF or safetensors). */
static rf_model_facts *facts_of(const char *what, char *why, size_t cap) {
    char path[4096];
    rf_error err = {0};
    rf_model_facts *f = NULL;
    if (rf_model_resolve(what, path, sizeof path, &err) || rf_model_facts_load(path, &f, &err)) {
        snprintf(why, cap, "%s", err.msg);
        return NULL;
    }
    return f;
}

static json_t *roofline_of(const rf_catalog *cat, const rf_run *r, const rf_bench_backend *bb,
                           const json_t *speed, const rf_model_facts *facts,
                           const char *facts_err) {
    json_t *o = json_object();
    bool local = rf_backend_is_local(&bb->cfg);
    double bw = NAN;
    char bw_src[512] = "unknown: no measurement, run-file figure or known accelerator";
    rf_accel acc;
    if (local && r->machine && r->membw_n > 0) {
        bw = r->membw_median;
        const long long reps = json_integer_value(json_object_get(r->machine, "membw_repeats"));
        const long long mib = json_integer_value(json_object_get(r->machine, "membw_bytes")) >> 20;
        if (r->membw_n == 1)
            snprintf(bw_src, sizeof bw_src,
                     "measured by the run: roofline membw, median of %lld reads of %lld MiB", reps,
                     mib);
        else
            snprintf(bw_src, sizeof bw_src,
                     "measured by the run: roofline membw, the median of %d samples (%.1f to "
                     "%.1f GB/s), each the median of %lld reads of %lld MiB",
                     r->membw_n, r->membw_low, r->membw_high, reps, mib);
    } else if (bb->mem_bw_gbs > 0) {
        bw = bb->mem_bw_gbs;
        snprintf(bw_src, sizeof bw_src, "run file");
    } else if (rf_catalog_accelerator(cat, bb->hardware, &acc)) {
        bw = acc.mem_bw_gbs;
        snprintf(bw_src, sizeof bw_src, "accelerator table: %s (%s)", acc.name,
                 acc.source ? acc.source : "no source");
    } else if (local) {
        snprintf(bw_src, sizeof bw_src, "unknown: the run did not measure it (--no-membw)");
    }
    /* the speed runs' mean context: the prompt plus half the generated tokens */
    const rf_run_desc *d = &r->rf.desc;
    double prompt = real_at(speed, "prompt_tokens", NULL);
    int32_t ctx = (int32_t)(isfinite(prompt) ? prompt : 0) + d->speed_tokens / 2;
    double bytes = NAN;
    char by_src[512] = "unknown: no model file or bytes_per_token for this backend";
    if (bb->bytes_per_token > 0) {
        bytes = bb->bytes_per_token;
        snprintf(by_src, sizeof by_src, "run file");
    } else if (facts) {
        rf_token_read tr = rf_model_facts_token_read(facts, ctx, RF_KV_F16);
        bytes = tr.total > 0 ? (double)tr.total : NAN;
        snprintf(by_src, sizeof by_src, "%.300s at context %d (KV f16%s)", facts->path, ctx,
                 tr.kv_known ? "" : ": geometry unknown, KV not counted");
    } else if (facts_err && facts_err[0]) {
        snprintf(by_src, sizeof by_src, "unknown: %s", facts_err);
    }
    double ceiling = isfinite(bw) && isfinite(bytes) && bytes > 0 ? bw * 1e9 / bytes : NAN;
    double decode = real_at(speed, "decode_tok_s", "median");
    json_object_set_new(o, "bandwidth_gbs", num(bw));
    json_object_set_new(o, "bandwidth_source", json_string(bw_src));
    json_object_set_new(o, "bytes_per_token", num(bytes));
    json_object_set_new(o, "bytes_per_token_source", json_string(by_src));
    json_object_set_new(o, "ctx", json_integer(ctx));
    json_object_set_new(o, "ceiling_tok_s", num(ceiling));
    json_object_set_new(o, "decode_tok_s", num(decode));
    json_object_set_new(o, "efficiency", num(decode / ceiling));
    json_object_set_new(o, "units", json_string("GB = 1e9 bytes"));
    return o;
}

/* Memory: the weights, the memory they sit in, and what is left for the KV cache, in tokens and
 * in concurrent requests of len tokens (vLLM's form). */
static json_t *memory_of(const rf_catalog *cat, const rf_run *r, const rf_bench_backend *bb,
                         const rf_model_facts *facts, const char *facts_err,
                         const rf_report_opts *o) {
    json_t *m = json_object();
    bool local = rf_backend_is_local(&bb->cfg);
    double mem = NAN;
    char src[256] = "unknown: no memory size for this backend (hardware.mem_gb)";
    rf_accel acc;
    if (local && r->machine && json_is_integer(json_object_get(r->machine, "mem_total_bytes"))) {
        mem = (double)json_integer_value(json_object_get(r->machine, "mem_total_bytes"));
        snprintf(src, sizeof src, "the machine's memory (the run's runlog)");
    } else if (bb->mem_gb > 0) {
        mem = bb->mem_gb * 1e9;
        snprintf(src, sizeof src, "run file");
    } else if (rf_catalog_accelerator(cat, bb->hardware, &acc) && acc.mem_gb > 0) {
        mem = acc.mem_gb * 1e9;
        snprintf(src, sizeof src, "accelerator table: %s", acc.name);
    }
    json_object_set_new(m, "mem_bytes", num(mem));
    json_object_set_new(m, "mem_source", json_string(src));
    json_object_set_new(m, "util", json_real(o->mem_util));
    if (!facts) {
        json_object_set_new(m, "weights_bytes", json_null());
        json_object_set_new(
            m, "note",
            json_string(facts_err && facts_err[0] ? facts_err : "no model file for this backend"));
        return m;
    }
    json_object_set_new(m, "weights_bytes",
                        json_integer((json_int_t)rf_model_facts_weights(facts)));
    json_t *roles = json_object();
    for (int k = 0; k < RF_ROLE_COUNT; k++)
        if (facts->fp.role_bytes[k])
            json_object_set_new(roles, rf_role_name((rf_role)k),
                                json_integer((json_int_t)facts->fp.role_bytes[k]));
    json_object_set_new(m, "by_role", roles);
    json_object_set_new(
        m, "kv_per_token_bytes",
        facts->kv.n_layer ? json_integer((json_int_t)rf_model_facts_kv_per_token(facts, RF_KV_F16))
                          : json_null());
    int64_t len = o->kv_ctx > 0 ? o->kv_ctx : 4096;
    if (facts->ctx_train > 0 && facts->ctx_train < len) len = facts->ctx_train;
    json_object_set_new(m, "request_tokens", json_integer(len));
    rf_kv_capacity cap;
    rf_error err = {0};
    if (isfinite(mem) &&
        rf_model_facts_kv_capacity(facts, mem, o->mem_util, len, RF_KV_F16, &cap, &err) == RF_OK) {
        json_object_set_new(m, "kv_budget_bytes", json_integer(cap.budget));
        json_object_set_new(m, "kv_tokens", json_integer((json_int_t)cap.tokens));
        json_object_set_new(m, "max_concurrency", json_real(cap.concurrency));
        char line[160];
        snprintf(line, sizeof line,
                 "KV cache: %llu tokens; maximum concurrency %.2fx for %lld tokens per request",
                 (unsigned long long)cap.tokens, cap.concurrency, (long long)len);
        json_object_set_new(m, "vllm_line", json_string(line));
    } else {
        json_object_set_new(m, "kv_tokens", json_null());
        json_object_set_new(m, "max_concurrency", json_null());
        if (err.msg[0]) json_object_set_new(m, "note", json_string(err.msg));
    }
    return m;
}

rf_status rf_econ_check_prices(const rf_run_desc *d, const char *prices_path, rf_error *err) {
    rf_catalog cat;
    bool loaded = false;
    rf_status st = RF_OK;
    for (int i = 0; i < d->n_backends && !st; i++) {
        const rf_bench_backend *bb = &d->backends[i];
        if (!bb->price_instance || bb->usd_per_hour > 0 || bb->usd_per_m_output > 0) continue;
        if (!loaded) rf_catalog_load(&cat, prices_path, NULL);
        loaded = true;
        rf_price p;
        rf_error e = {0};
        if (rf_catalog_need_instance(&cat, bb->price_instance, &p, &e))
            st = rf_error_set(err, RF_ERR_ARG, "backend '%s': %s", bb->cfg.name, e.msg);
    }
    if (loaded) rf_catalog_free(&cat);
    return st;
}

rf_status rf_econ_add(const rf_runset *rs, const rf_report_opts *opt, json_t *sum, rf_error *err) {
    (void)err;
    rf_catalog cat;
    rf_catalog_load(&cat, opt->prices_path, opt->accel_path);
    json_t *notes = json_object_get(sum, "notes");
    if (!cat.prices) json_array_append_new(notes, json_string(cat.prices_error));
    if (!cat.accelerators) json_array_append_new(notes, json_string(cat.accel_error));
    int total = 0;
    for (int i = 0; i < rs->n; i++) total += rs->runs[i].rf.desc.n_backends;
    priced *pr = calloc((size_t)total + 1, sizeof *pr);
    if (!pr) {
        rf_catalog_free(&cat);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    int k = 0;
    json_t *backends = json_object_get(sum, "backends");
    for (int i = 0; i < rs->n; i++)
        for (int b = 0; b < rs->runs[i].rf.desc.n_backends; b++, k++) {
            pr[k].label = rs->runs[i].names[b];
            const char *model =
                json_string_value(json_object_get(json_object_get(backends, pr[k].label), "model"));
            price_of(&cat, &rs->runs[i].rf.desc.backends[b], model, &pr[k]);
        }
    json_t *cost = json_object(), *roof = json_object(), *mem = json_object();
    json_object_set_new(sum, "cost", cost);
    json_object_set_new(sum, "roofline", roof);
    json_object_set_new(sum, "memory", mem);
    json_object_set_new(cost, "ratio", json_real(opt->ratio));
    json_t *per = json_object();
    json_object_set_new(cost, "backends", per);
    k = 0;
    for (int i = 0; i < rs->n; i++) {
        const rf_run *r = &rs->runs[i];
        for (int b = 0; b < r->rf.desc.n_backends; b++, k++) {
            const rf_bench_backend *bb = &r->rf.desc.backends[b];
            const char *label = pr[k].label;
            const json_t *speed = json_object_get(json_object_get(sum, "speed"), label);
            const json_t *load = json_object_get(json_object_get(sum, "load"), label);
            char ferr[512] = "";
            bool local = rf_backend_is_local(&bb->cfg);
            rf_model_facts *facts =
                local || bb->model_file
                    ? facts_of(local ? rf_backend_local_model(&bb->cfg) : bb->model_file, ferr,
                               sizeof ferr)
                    : NULL;
            json_object_set_new(roof, label, roofline_of(&cat, r, bb, speed, facts, ferr));
            json_object_set_new(mem, label, memory_of(&cat, r, bb, facts, ferr, opt));
            rf_model_facts_free(facts);
            json_t *c = json_object();
            json_object_set_new(per, label, c);
            if (!pr[k].known) {
                json_object_set_new(c, "kind", json_string("unknown"));
                json_object_set_new(c, "source",
                                    json_string(pr[k].source[0]
                                                    ? pr[k].source
                                                    : "no price in the run file or the prices "
                                                      "file"));
                if (pr[k].source[0])
                    json_array_append_new(json_object_get(sum, "notes"), json_string(pr[k].source));
                continue;
            }
            json_object_set_new(c, "source", json_string(pr[k].source));
            /* the price used, as the prices file gave it (value, source, date) */
            if (bb->price_instance && !(bb->usd_per_hour > 0) && !(bb->usd_per_m_output > 0)) {
                json_t *used = json_object();
                json_object_set_new(used, "instance", json_string(bb->price_instance));
                json_object_set_new(used, "usd_per_hour", json_real(pr[k].p.usd_per_hour));
                json_object_set_new(used, "source",
                                    pr[k].p.source ? json_string(pr[k].p.source) : json_null());
                json_object_set_new(used, "date",
                                    pr[k].p.date ? json_string(pr[k].p.date) : json_null());
                json_object_set_new(c, "price", used);
            }
            json_object_set_new(c, "assumption", json_boolean(pr[k].p.assumption));
            if (pr[k].per_token) {
                double blended =
                    rf_cost_blended(pr[k].p.usd_per_m_input, pr[k].p.usd_per_m_output, opt->ratio);
                json_object_set_new(c, "kind", json_string("per_token"));
                json_object_set_new(c, "usd_per_m_input", json_real(pr[k].p.usd_per_m_input));
                json_object_set_new(c, "usd_per_m_output", json_real(pr[k].p.usd_per_m_output));
                json_object_set_new(c, "blended_usd_per_m_output", num(blended));
                json_object_set_new(c, "idle_usd_per_month", json_real(0));
                continue;
            }
            double hour = pr[k].p.usd_per_hour, month = rf_cost_usd_per_month(hour);
            json_object_set_new(c, "kind", json_string("instance"));
            json_object_set_new(c, "usd_per_hour", json_real(hour));
            json_object_set_new(c, "usd_per_month", num(month));
            double single = real_at(speed, "e2e_tok_s", "median");
            json_t *ss = json_object();
            json_object_set_new(ss, "tok_s", num(single));
            json_object_set_new(ss, "tok_s_definition",
                                json_string("n / E2E, median of the speed runs"));
            json_object_set_new(ss, "usd_per_m_output",
                                num(rf_cost_usd_per_m_output(hour, single)));
            json_object_set_new(c, "single_stream", ss);
            json_t *lv = json_array();
            size_t li;
            json_t *level;
            json_array_foreach(json_object_get(load, "levels"), li, level) {
                double tps = real_at(level, "output_tok_s", NULL);
                json_t *x = json_object();
                json_object_set(x, "concurrency", json_object_get(level, "concurrency"));
                if (json_object_get(level, "rate"))
                    json_object_set(x, "rate", json_object_get(level, "rate"));
                json_object_set_new(x, "tok_s", num(tps));
                json_object_set_new(x, "usd_per_m_output",
                                    num(rf_cost_usd_per_m_output(hour, tps)));
                json_array_append_new(lv, x);
            }
            json_object_set_new(c, "levels", lv);
            json_t *be = json_array();
            for (int j = 0; j < total; j++) {
                if (!pr[j].known || !pr[j].per_token) continue;
                double blended =
                    rf_cost_blended(pr[j].p.usd_per_m_input, pr[j].p.usd_per_m_output, opt->ratio);
                json_t *x = json_object();
                json_object_set_new(x, "against", json_string(pr[j].label));
                json_object_set_new(x, "blended_usd_per_m_output", num(blended));
                json_object_set_new(x, "break_even_tok_s",
                                    num(rf_cost_break_even_tok_s(month, blended)));
                json_array_append_new(be, x);
            }
            json_object_set_new(c, "break_even", be);
        }
    }
    free(pr);
    rf_catalog_free(&cat);
    return RF_OK;
}
