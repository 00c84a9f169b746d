/* catalog.c: prices and accelerators (see catalog.h). */
#include "report/catalog.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static json_t *load(const char *given, const char *name, char *err, size_t cap) {
    char path[4096];
    const char *dir = getenv("ROOFLINE_DATA");
    if (!given) {
        snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : ROOFLINE_DATA_DIR, name);
        given = path;
    }
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
    c->prices = load(prices_path, "prices.json", c->prices_error, sizeof c->prices_error);
    c->accelerators = load(accel_path, "accelerators.json", c->accel_error, sizeof c->accel_error);
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
