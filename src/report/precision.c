/* precision.c: the precision study's section (see precision.h). */
#include "report/precision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/drift.h"
#include "report/speed_load.h"

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static double real_of(const json_t *x) {
    return json_is_number(x) ? json_number_value(x) : NAN;
}

static const json_t *at(const json_t *sum, const char *section, const char *label) {
    return json_object_get(json_object_get(sum, section), label);
}

/* The decode tok/s median and the top load level's output tok/s of a speed and load section. */
static double decode_of(const json_t *speed) {
    return real_of(json_object_get(json_object_get(speed, "decode_tok_s"), "median"));
}
static const json_t *top_level(const json_t *load) {
    const json_t *lv = json_object_get(load, "levels");
    return json_array_get(lv, json_array_size(lv) ? json_array_size(lv) - 1 : 0);
}

static double mean_finite(const double *v, int n) {
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) s += v[i], k++;
    return k ? s / k : NAN;
}

/* Answers identical to the as-shipped backend's, from the agreement pairs. */
static void identical_to(const json_t *sum, const char *a, const char *b, json_t *row) {
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(sum, "agreement"), i, p) {
        const char *pa = json_string_value(json_object_get(p, "a"));
        const char *pb = json_string_value(json_object_get(p, "b"));
        if (pa && pb &&
            ((!strcmp(pa, a) && !strcmp(pb, b)) || (!strcmp(pa, b) && !strcmp(pb, a)))) {
            json_object_set(row, "identical_to_shipped", json_object_get(p, "identical"));
            json_object_set(row, "identical_of", json_object_get(p, "total"));
            return;
        }
    }
    json_object_set_new(row, "identical_to_shipped", json_null());
    json_object_set_new(row, "identical_of", json_null());
}

/* The row of one backend; dec and tput are its decode and top-level tok/s (A: the mean of its
 * turns); eff_a is the as-shipped row's efficiency (NaN for that row itself). */
static json_t *row_of(const json_t *sum, const rf_bench_backend *bb, const char *label,
                      const char *a_label, double dec, double tput, double eff_a) {
    json_t *row = json_object();
    json_object_set_new(row, "name", json_string(label));
    json_object_set_new(row, "variant", json_string(bb->variant));
    const char *file = rf_backend_local_model(&bb->cfg); /* local:PATH (rf_run_desc_check) */
    json_object_set_new(row, "file", file ? json_string(file) : json_null());
    struct stat st;
    json_object_set_new(row, "file_bytes",
                        !file || stat(file, &st) ? json_null()
                                                 : json_integer((json_int_t)st.st_size));
    json_object_set_new(row, "widened", json_boolean(bb->cfg.widen));
    const json_t *roof = at(sum, "roofline", label);
    double bytes = real_of(json_object_get(roof, "bytes_per_token"));
    double ceiling = real_of(json_object_get(roof, "ceiling_tok_s"));
    json_object_set_new(row, "bytes_per_token", num(bytes));
    json_object_set_new(row, "ceiling_tok_s", num(ceiling));
    json_object_set_new(row, "decode_tok_s", num(dec));
    double eff = dec / ceiling;
    json_object_set_new(row, "efficiency", num(eff));
    json_object_set_new(row, "efficiency_vs_shipped", num(isnan(eff_a) ? 1.0 : eff / eff_a));
    const json_t *lv = top_level(at(sum, "load", label));
    json_object_set(row, "top_level", json_object_get(lv, "concurrency"));
    json_object_set_new(row, "output_tok_s_top", num(tput));
    const json_t *acc = at(sum, "accuracy", label);
    if (acc) {
        json_object_set(row, "accuracy_correct", json_object_get(acc, "correct"));
        json_object_set(row, "accuracy_total", json_object_get(acc, "total"));
        json_object_set(row, "accuracy_by_category", json_object_get(acc, "by_category"));
    }
    if (strcmp(label, a_label)) identical_to(sum, a_label, label, row);
    const json_t *ag = at(sum, "agent", label);
    if (ag) {
        json_object_set(row, "agent_ok", json_object_get(ag, "ok"));
        json_object_set(row, "agent_runs", json_object_get(ag, "runs"));
    }
    const json_t *mem = at(sum, "memory", label);
    json_object_set(row, "kv_tokens", json_object_get(mem, "kv_tokens"));
    json_object_set(row, "kv_mem_bytes", json_object_get(mem, "mem_bytes"));
    json_object_set(row, "kv_request_tokens", json_object_get(mem, "request_tokens"));
    return row;
}

static json_t *study(const rf_run *r, const rf_report_opts *o, const json_t *sum) {
    const rf_run_desc *d = &r->rf.desc;
    json_t *out = json_object();
    int ia = -1, nb = 0;
    for (int i = 0; i < d->n_backends; i++) {
        if (!d->backends[i].variant) continue;
        if (!strcmp(d->backends[i].variant, "shipped") && ia < 0)
            ia = i;
        else
            nb++;
    }
    if (ia < 0) {
        json_object_set_new(out, "error", json_string("the run has no as-shipped backend"));
        return out;
    }
    const rf_bench_backend *a = &d->backends[ia];
    const char *a_label = r->names[ia];
    json_object_set_new(out, "shipped", json_string(a_label));
    json_object_set_new(out, "order",
                        json_string("A B1 A B2 ... A: each variant between two as-shipped turns"));
    /* A's turns: the first without a phase, then "precision a2" ... */
    double *a_dec = calloc((size_t)nb + 1, sizeof *a_dec);
    double *a_tput = calloc((size_t)nb + 1, sizeof *a_tput);
    json_t *turns = json_array(), *rows = json_array();
    if (!a_dec || !a_tput) {
        free(a_dec), free(a_tput);
        json_decref(turns), json_decref(rows);
        json_object_set_new(out, "error", json_string("out of memory"));
        return out;
    }
    for (int k = 0; k <= nb; k++) {
        char phase[32] = "";
        if (k) snprintf(phase, sizeof phase, "precision a%d", k + 1);
        json_t *sp = rf_report_speed_section(r, phase, a);
        json_t *ld = rf_report_load_section(r, phase, a, &o->slo);
        a_dec[k] = decode_of(sp);
        a_tput[k] = real_of(json_object_get(top_level(ld), "output_tok_s"));
        json_t *t = json_object();
        json_object_set_new(t, "phase", json_string(phase));
        json_object_set_new(t, "decode_tok_s", num(a_dec[k]));
        json_object_set_new(t, "output_tok_s_top", num(a_tput[k]));
        json_array_append_new(turns, t);
        json_decref(sp);
        json_decref(ld);
    }
    json_object_set_new(out, "shipped_turns", turns);
    double dec_a = mean_finite(a_dec, nb + 1), tput_a = mean_finite(a_tput, nb + 1);
    double ceil_a = real_of(json_object_get(at(sum, "roofline", a_label), "ceiling_tok_s"));
    double eff_a = dec_a / ceil_a;
    json_object_set(out, "bandwidth_gbs",
                    json_object_get(at(sum, "roofline", a_label), "bandwidth_gbs"));
    json_array_append_new(rows, row_of(sum, a, a_label, a_label, dec_a, tput_a, NAN));
    double worst_track = NAN, widen_ratio = NAN;
    int k = 0;
    for (int i = 0; i < d->n_backends; i++) {
        const rf_bench_backend *bb = &d->backends[i];
        if (!bb->variant || i == ia) continue;
        const char *label = r->names[i];
        double dec = decode_of(at(sum, "speed", label));
        double tput = real_of(json_object_get(top_level(at(sum, "load", label)), "output_tok_s"));
        json_t *row = row_of(sum, bb, label, a_label, dec, tput, eff_a);
        rf_drift jd = rf_drift_judge(a_dec[k], dec, a_dec[k + 1]);
        rf_drift jt = rf_drift_judge(a_tput[k], tput, a_tput[k + 1]);
        json_object_set_new(row, "decode_vs_shipped", rf_drift_json(&jd));
        json_object_set_new(row, "output_tok_s_top_vs_shipped", rf_drift_json(&jt));
        double rel = real_of(json_object_get(row, "efficiency_vs_shipped"));
        if (bb->cfg.widen) {
            widen_ratio = dec / jd.base;
        } else if (isfinite(rel)) {
            double dev = fabs(rel - 1);
            worst_track = isnan(worst_track) || dev > worst_track ? dev : worst_track;
        }
        json_array_append_new(rows, row);
        k++;
    }
    json_object_set_new(out, "rows", rows);
    json_t *tr = json_object();
    json_object_set_new(tr, "tolerance", json_real(RF_PRECISION_TRACK_TOL));
    json_object_set_new(tr, "worst_efficiency_deviation", num(worst_track));
    json_object_set_new(tr, "native_track_bytes_per_token",
                        isfinite(worst_track) ? json_boolean(worst_track <= RF_PRECISION_TRACK_TOL)
                                              : json_null());
    json_object_set_new(tr, "widened_over_shipped_decode", num(widen_ratio));
    json_object_set_new(out, "tracking", tr);
    free(a_dec);
    free(a_tput);
    return out;
}

rf_status rf_precision_add(const rf_runset *rs, const rf_report_opts *o, json_t *sum,
                           rf_error *err) {
    (void)err;
    for (int i = 0; i < rs->n; i++) {
        if (!rs->runs[i].rf.desc.precision) continue;
        json_object_set_new(sum, "precision", study(&rs->runs[i], o, sum));
        break;
    }
    return RF_OK;
}
