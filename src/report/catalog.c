/* catalog.c: prices and accelerators (see catalog.h). */
#include "report/catalog.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/file.h"
#include "util/json_dump.h"

static json_t *load(const char *given, const char *name, char *err, size_t cap, char *used,
                    size_t used_cap) {
    char path[4096];
    const char *dir = getenv("ROOFLINE_DATA");
    if (!given) {
        snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : ROOFLINE_DATA_DIR, name);
        given = path;
    }
    if (used) snprintf(used, used_cap, "%s", given);
    json_error_t je;
    json_t *o = json_load_file(given, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(o)) {
        int n = snprintf(err, cap, "%.300s: %s", given, o ? "not a JSON object" : je.text);
        (void)n;
        json_decref(o);
        return NULL;
    }
    return o;
}

void rf_catalog_load(rf_catalog *c, const char *prices_path, const char *accel_path) {
    memset(c, 0, sizeof *c);
    c->prices = load(prices_path, "prices.json", c->prices_error, sizeof c->prices_error,
                     c->prices_path, sizeof c->prices_path);
    c->accelerators =
        load(accel_path, "accelerators.json", c->accel_error, sizeof c->accel_error, NULL, 0);
}

void rf_catalog_free(rf_catalog *c) {
    json_decref(c->prices);
    json_decref(c->accelerators);
    memset(c, 0, sizeof *c);
}

static double pos(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    double x = json_is_number(v) ? json_number_value(v) : 0;
    return x > 0 ? x : 0;
}

static void fill(const json_t *e, const char *name, rf_price *out) {
    memset(out, 0, sizeof *out);
    out->usd_per_hour = pos(e, "usd_per_hour");
    out->usd_per_m_input = pos(e, "usd_per_m_input");
    out->usd_per_m_output = pos(e, "usd_per_m_output");
    out->name = json_string_value(json_object_get(e, "name"));
    if (!out->name) out->name = name;
    out->source = json_string_value(json_object_get(e, "source"));
    out->date = json_string_value(json_object_get(e, "date"));
    out->assumption = json_is_true(json_object_get(e, "assumption"));
}

bool rf_catalog_instance(const rf_catalog *c, const char *name, rf_price *out) {
    const json_t *e = json_object_get(json_object_get(c->prices, "instances"), name ? name : "");
    if (!json_is_object(e) || !(pos(e, "usd_per_hour") > 0)) return false;
    fill(e, name, out);
    return true;
}

rf_status rf_catalog_need_instance(const rf_catalog *c, const char *name, rf_price *out,
                                   rf_error *err) {
    if (!c->prices)
        return rf_error_set(err, RF_ERR_ARG,
                            "instance type '%s': the prices file cannot be used: %s", name,
                            c->prices_error);
    if (rf_catalog_instance(c, name, out)) return RF_OK;
    return rf_error_set(err, RF_ERR_ARG,
                        "instance type '%s' is not in the prices file %s (add it with roofline "
                        "prices %s %s, or give the backend a price.usd_per_hour)",
                        name, c->prices_path,
                        strncmp(name, "ml.", 3) ? "--instance" : "--sagemaker-instance", name);
}

bool rf_catalog_local(const rf_catalog *c, rf_price *out) {
    const char *inst =
        json_string_value(json_object_get(json_object_get(c->prices, "local"), "instance"));
    return inst && rf_catalog_instance(c, inst, out);
}

bool rf_catalog_per_token(const rf_catalog *c, const char *text, rf_price *out) {
    const char *key;
    const json_t *e;
    json_object_foreach(json_object_get(c->prices, "per_token"), key, e) {
        if (text && strstr(text, key) && pos(e, "usd_per_m_output") > 0) {
            fill(e, key, out);
            return true;
        }
    }
    return false;
}

/* needle occurs in hay, case-insensitively, not inside a longer word */
static bool has_words(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    if (!n) return false;
    for (const char *p = hay; *p; p++) {
        if (strncasecmp(p, needle, n)) continue;
        bool left = p == hay || !isalnum((unsigned char)p[-1]);
        bool right = !isalnum((unsigned char)p[n]);
        if (left && right) return true;
    }
    return false;
}

bool rf_catalog_accelerator(const rf_catalog *c, const char *hardware, rf_accel *out) {
    if (!hardware) return false;
    size_t best = 0, i;
    const json_t *e, *found = NULL;
    json_array_foreach(json_object_get(c->accelerators, "accelerators"), i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!name || !has_words(hardware, name) || strlen(name) <= best) continue;
        best = strlen(name);
        found = e;
    }
    if (!found || !(pos(found, "mem_bw_gbs") > 0)) return false;
    out->name = json_string_value(json_object_get(found, "name"));
    out->source = json_string_value(json_object_get(found, "source"));
    out->mem_bw_gbs = pos(found, "mem_bw_gbs");
    out->mem_gb = pos(found, "mem_gb");
    return true;
}

/* ---- editing ---- */

rf_status rf_prices_load(const char *path, bool missing_ok, json_t **out, rf_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f && missing_ok) {
        *out = json_pack("{s:s}", "about",
                         "Prices the report uses when a run file gives a backend none. Every "
                         "entry names its source and date.");
        return *out ? RF_OK : rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    if (!f) return rf_error_set(err, RF_ERR_IO, "%s: cannot be read", path);
    json_error_t je;
    json_t *o = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!json_is_object(o)) {
        json_decref(o);
        return rf_error_set(err, RF_ERR_FORMAT, "%s: %s", path, o ? "not a JSON object" : je.text);
    }
    *out = o;
    return RF_OK;
}

/* The entry prices[section][key], created when absent. */
static json_t *entry(json_t *prices, const char *section, const char *key, rf_error *err) {
    json_t *sec = json_object_get(prices, section);
    if (!sec) {
        sec = json_object();
        if (!sec || json_object_set_new(prices, section, sec)) goto nomem;
    }
    if (!json_is_object(sec)) {
        rf_error_set(err, RF_ERR_FORMAT, "prices file: \"%s\" is not an object", section);
        return NULL;
    }
    json_t *e = json_object_get(sec, key);
    if (!json_is_object(e)) {
        e = json_object();
        if (!e || json_object_set_new(sec, key, e)) goto nomem;
    }
    return e;
nomem:
    rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    return NULL;
}

static rf_status stamp(json_t *e, const char *source, const char *date, const char *region,
                       rf_error *err) {
    json_object_del(e, "assumption");
    int bad = json_object_set_new(e, "source", json_string(source));
    bad |= json_object_set_new(e, "date", json_string(date));
    if (region) bad |= json_object_set_new(e, "region", json_string(region));
    return bad ? rf_error_set(err, RF_ERR_NOMEM, "out of memory") : RF_OK;
}

rf_status rf_prices_set_instance(json_t *prices, const char *name, double usd_per_hour,
                                 const char *source, const char *date, const char *region,
                                 rf_error *err) {
    json_t *e = entry(prices, "instances", name, err);
    if (!e) return err ? err->code : RF_ERR_NOMEM;
    if (json_object_set_new(e, "usd_per_hour", json_real(usd_per_hour)))
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    return stamp(e, source, date, region, err);
}

rf_status rf_prices_set_per_token(json_t *prices, const char *model_id, double usd_per_m_input,
                                  double usd_per_m_output, const char *name, const char *source,
                                  const char *date, const char *region, rf_error *err) {
    json_t *e = entry(prices, "per_token", model_id, err);
    if (!e) return err ? err->code : RF_ERR_NOMEM;
    int bad = json_object_set_new(e, "usd_per_m_input", json_real(usd_per_m_input));
    bad |= json_object_set_new(e, "usd_per_m_output", json_real(usd_per_m_output));
    if (name && !json_object_get(e, "name"))
        bad |= json_object_set_new(e, "name", json_string(name));
    if (bad) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    return stamp(e, source, date, region, err);
}

rf_status rf_prices_save(const json_t *prices, const char *path, rf_error *err) {
    char *text = rf_json_dumps(prices, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    if (!text) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    size_t n = strlen(text);
    char *t2 = realloc(text, n + 2);
    if (!t2) {
        free(text);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    t2[n] = '\n';
    t2[n + 1] = 0;
    rf_status st = rf_write_file_atomic(path, t2, n + 1, err);
    free(t2);
    return st;
}
