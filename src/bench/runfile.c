/* runfile.c: strict JSON run files (runfile.h): a file's text into the description, through the
 * field table (runfile_fields.c); the whole description's check; run.json. The bench's flags
 * are in runfile_args.c. */
#include "bench/runfile.h"
#include "bench/runfile_fields.h"
#include "util/file.h"
#include "util/json_read.h"
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

static const char *const variant_names[RF_VARIANT_COUNT] = {"shipped", "q8_0", "bf16",
                                                            "f16",     "q4_0", "widen"};

const char *rf_variant_name(int v) {
    return v >= 0 && v < RF_VARIANT_COUNT ? variant_names[v] : "?";
}

int rf_variant_parse(const char *s) {
    for (int v = 0; s && v < RF_VARIANT_COUNT; v++)
        if (!strcmp(s, variant_names[v])) return v;
    return -1;
}

/* A value left as the example run files' placeholders ("<your-region>"): the first string of v
 * (depth first) that holds one, its path in path. */
#define PLACEHOLDER "<your-"
static const char *find_placeholder(const json_t *v, char *path, size_t cap) {
    size_t n = strlen(path);
    if (json_is_string(v))
        return strstr(json_string_value(v), PLACEHOLDER) ? json_string_value(v) : NULL;
    if (json_is_object(v)) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            snprintf(path + n, cap - n, "%s%s", n ? "." : "", k);
            const char *s = find_placeholder(x, path, cap);
            if (s) return s;
        }
    } else if (json_is_array(v)) {
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) {
            snprintf(path + n, cap - n, "[%zu]", i);
            const char *s = find_placeholder(x, path, cap);
            if (s) return s;
        }
    }
    path[n] = 0;
    return NULL;
}

static rf_status check_placeholders(const char *name, const json_t *root, rf_error *err) {
    char path[256] = "";
    const char *s = find_placeholder(root, path, sizeof path);
    if (!s) return RF_OK;
    const char *p = strstr(s, PLACEHOLDER), *end = strchr(p, '>');
    int len = end ? (int)(end - p + 1) : (int)strlen(p);
    char shown[160];
    return rf_error_set(err, RF_ERR_ARG,
                        "%s: %s: '%s' still holds the placeholder '%.*s': replace it with your "
                        "own value (README.md, \"Reproducing the seeds on your own AWS account\")",
                        name, path, rf_escaped(s, strlen(s), shown, sizeof shown),
                        len > 60 ? 60 : len, p);
}

rf_status rf_runfile_parse_json(const char *name, const char *text, rf_runfile *rf, rf_error *err) {
    rf_jr c = rf_jr_make(name, RF_ERR_ARG, err);
    c.style = RF_JR_STYLE_PATH;
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rf_error_set(err, RF_ERR_ARG, "%s: line %d column %d: %s", name, je.line, je.column,
                            je.text);
    /* every file's tree lives until rf_runfile_free: the description's strings point into it */
    if (!rf->roots) rf->roots = json_array();
    if (!rf->roots || json_array_append_new(rf->roots, root)) {
        if (!rf->roots) json_decref(root);
        return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", name);
    }
    rf_status st = check_placeholders(name, root, err);
    if (st) return st;
    return rf_runfile_fields_parse(&c, root, &rf->desc);
}

/* A copy of a comma list from argv that the caller may cut (strtok), owned by rf. */
char *rf_runfile_own_copy(rf_runfile *rf, const char *v) {
    json_t *s = json_string_nocheck(v);
    if (!s) return NULL;
    if (!rf->roots) rf->roots = json_array();
    if (!rf->roots || json_array_append_new(rf->roots, s)) return NULL;
    return (char *)json_string_value(s);
}

/* Names end up in terminals, Markdown and JSON: valid UTF-8 without control characters. */
static bool clean_name(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = rf_utf8_seq(s + i, n - i);
        if (!k || (k == 1 && ((unsigned char)s[i] < 0x20 || s[i] == 0x7f))) return false;
        i += k;
    }
    return true;
}

rf_status rf_run_desc_check(const rf_run_desc *d, rf_error *err) {
    if (d->n_backends < 1) return rf_error_set(err, RF_ERR_ARG, "no backend to run against");
    for (int i = 0; i < d->n_backends; i++) {
        const rf_bench_backend *bb = &d->backends[i];
        char pb[96];
        if (!clean_name(bb->cfg.name) || !clean_name(bb->cfg.uri))
            return rf_error_set(err, RF_ERR_ARG,
                                "backend '%s': the name and URI must be UTF-8 text without "
                                "control characters",
                                rf_escaped(bb->cfg.name, strlen(bb->cfg.name), pb, sizeof pb));
        for (int j = 0; j < i; j++)
            if (!strcmp(d->backends[j].cfg.name, bb->cfg.name))
                return rf_error_set(err, RF_ERR_ARG, "two backends are named '%s'", bb->cfg.name);
        rf_status st = rf_backend_validate(&bb->cfg, err);
        if (st) return st;
    }
    for (int i = 0; i < d->n_backends; i++) {
        const rf_bench_backend *bb = &d->backends[i];
        if (bb->cfg.widen && !rf_backend_is_local(&bb->cfg))
            return rf_error_set(err, RF_ERR_ARG,
                                "backend '%s': \"widen\" is an engine option: local backends only",
                                bb->cfg.name);
        /* the precision study builds and opens the file a variant's URI names */
        if (bb->variant && !rf_backend_local_model(&bb->cfg))
            return rf_error_set(err, RF_ERR_ARG,
                                "backend '%s': a precision variant (\"variant\": \"%s\") names "
                                "its model file: its URI must be local:PATH, not '%s'",
                                bb->cfg.name, bb->variant, bb->cfg.uri);
    }
    if (!(d->speed || d->load || d->accuracy || d->agent || d->probe || d->aba || d->precision))
        return rf_error_set(err, RF_ERR_ARG, "no suite to run");
    if (d->aba) {
        const char *names[2] = {d->aba_a, d->aba_b};
        for (int k = 0; k < 2; k++) {
            int found = 0;
            for (int i = 0; names[k] && i < d->n_backends; i++)
                found |= !strcmp(d->backends[i].cfg.name, names[k]);
            if (!found)
                return rf_error_set(err, RF_ERR_ARG,
                                    "aba.%s: '%s' is not the name of a backend of this run",
                                    k ? "b" : "a", names[k] ? names[k] : "");
        }
        if (!strcmp(d->aba_a, d->aba_b))
            return rf_error_set(err, RF_ERR_ARG, "aba: a and b are the same backend '%s'",
                                d->aba_a);
    }
    if (d->rate > 0) {
        /* the whole schedule must fit the clock: n / rate seconds, as int64 nanoseconds */
        double span = (double)d->rate_requests / d->rate;
        if (!(span <= RF_BENCH_MAX_SCHEDULE_S))
            return rf_error_set(err, RF_ERR_ARG,
                                "load.rate: %d requests at %g/s span %.3g s, more than the %g s a "
                                "run may be scheduled over",
                                d->rate_requests, d->rate, span, RF_BENCH_MAX_SCHEDULE_S);
    }
    return RF_OK;
}

/* ---- the saved description ---- */

json_t *rf_run_desc_to_json(const rf_run_desc *d) {
    json_t *o = json_object();
    if (o) rf_runfile_fields_to_json(o, d);
    return o;
}

void rf_runfile_free(rf_runfile *rf) {
    json_decref(rf->roots);
    rf->roots = NULL;
}
