/* runfile_fields.c: the table of run-file fields and the walkers that read, write and describe
 * them (runfile_fields.h). Rows are in run.json's order; a section's rows follow its own row. */
#include "bench/runfile_fields.h"
#include "util/json_dump.h"
#include "util/opt.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef rf_jr ctx;

/* How a field is stored (and read and written, unless the row has its own parse and save). */
typedef enum fkind {
    F_OBJ,    /* a section: the rows whose sect is this row's path */
    F_INT,    /* int32_t */
    F_U64,    /* uint64_t, read as an integer in [lo, hi] */
    F_NUM,    /* double */
    F_STR,    /* const char *, into the file's tree */
    F_BOOL,   /* bool */
    F_CUSTOM, /* only the row's parse and save know */
} fkind;

enum {
    IF_SET = 1u << 0,    /* written to run.json only when set (non-zero, true) */
    INVERTED = 1u << 1,  /* F_BOOL: stored as its negation ("stream" in no_stream) */
    NOT_SAVED = 1u << 2, /* never written to run.json (a short form of another field) */
    DEF_KEPT = 1u << 3,  /* F_STR: def is the value a new description holds */
};

typedef struct field field;
struct field {
    const char *sect; /* the section: "" (the top), "speed", ..., "backends[]", ... */
    const char *key;
    fkind kind;
    size_t off; /* in rf_run_desc, or rf_bench_backend under "backends[]" */
    double lo, hi;
    unsigned flags;
    const char *type; /* the help's JSON type, for F_OBJ and F_CUSTOM */
    const char *def;  /* the default as the help shows it; for F_INT, F_U64, F_NUM and F_BOOL
                       * outside backends[] also the value rf_run_desc_defaults stores (the
                       * number it starts with, or "true"); NULL: none (zero) */
    const char *help;
    /* when set, read key of obj (absent is fine) into base / write it into o, instead of the
     * kind's own way (F_CUSTOM: always set) */
    rf_status (*parse)(ctx *c, const field *f, json_t *obj, const char *path, void *base);
    void (*save)(json_t *o, const field *f, const void *base);
    /* F_OBJ: whether run.json has the section (NULL: always); its checks once read */
    bool (*present)(const void *base);
    rf_status (*finish)(ctx *c, json_t *obj, const char *path, void *base);
};

#define D(m)             offsetof(rf_run_desc, m)
#define B(m)             offsetof(rf_bench_backend, m)
#define BC(m)            offsetof(rf_bench_backend, cfg.m)
#define AT(base, f, T)   ((T *)((char *)(base) + (f)->off))
#define AT_C(base, f, T) ((const T *)((const char *)(base) + (f)->off))

static rf_status bad(ctx *c, const char *path, const char *what) {
    return rf_jr_fail(c, RF_JR_OTHER, path, "%s", what);
}

/* ---- suites and variants by name ---- */

static const char *const g_suites[RF_SUITE_COUNT] = {"speed", "load", "accuracy", "agent", "probe"};

static int suite_of(const char *s) {
    for (int k = 0; s && k < RF_SUITE_COUNT; k++)
        if (!strcmp(s, g_suites[k])) return k;
    return -1;
}

rf_status rf_runfile_set_suite(ctx *c, rf_run_desc *d, const char *path, const char *s) {
    bool *on[] = {&d->speed, &d->load, &d->accuracy, &d->agent, &d->probe};
    int k = suite_of(s);
    if (k >= 0)
        *on[k] = true;
    else if (!strcmp(s, "precision"))
        d->precision = true;
    else {
        char m[160];
        snprintf(m, sizeof m,
                 "unknown suite '%.40s' (speed, load, accuracy, agent, probe, precision)", s);
        return bad(c, path, m);
    }
    return RF_OK;
}

/* The variants and suites a precision study may name (-1: not one of them). */
static int study_variant(const char *s) {
    int v = rf_variant_parse(s);
    return v > RF_VARIANT_SHIPPED ? v : -1;
}
static int study_suite(const char *s) {
    int k = suite_of(s);
    return k == RF_SUITE_PROBE ? -1 : k;
}

/* obj.key, when present: a non-empty array of names, as a bit per name into *bits. */
static rf_status name_bits(ctx *c, const json_t *o, const char *path, const char *key,
                           int (*parse)(const char *), const char *expected, unsigned *bits) {
    char p[96];
    rf_jr_path(p, sizeof p, path, key);
    const json_t *a = json_object_get(o, key);
    if (!a) return RF_OK;
    if (!json_is_array(a) || !json_array_size(a)) return bad(c, p, expected);
    *bits = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v) {
        int x = parse(json_string_value(v));
        if (x < 0) return bad(c, p, expected);
        *bits |= 1u << x;
    }
    return RF_OK;
}

static json_t *names_of(unsigned bits, int from, int to, const char *(*name)(int)) {
    json_t *a = json_array();
    for (int k = from; k < to; k++)
        if (!bits || bits >> k & 1u) json_array_append_new(a, json_string(name(k)));
    return a;
}

static const char *suite_name(int k) {
    return g_suites[k];
}

/* ---- custom fields ---- */

static rf_status parse_backends(ctx *c, const field *f, json_t *obj, const char *path, void *base);
static void save_backends(json_t *o, const field *f, const void *base);

static rf_status parse_suites(ctx *c, const field *f, json_t *obj, const char *path, void *base) {
    (void)path;
    rf_run_desc *d = base;
    json_t *su = json_object_get(obj, f->key);
    if (!su) return RF_OK;
    if (!json_is_array(su)) return bad(c, "suites", "expected an array of suite names");
    if (!json_array_size(su))
        return bad(c, "suites",
                   "empty: list at least one of speed, load, accuracy, agent, probe (or "
                   "leave the key out for all of them)");
    d->speed = d->load = d->accuracy = d->agent = d->probe = false;
    d->suites_set = true;
    size_t i;
    json_t *v;
    json_array_foreach(su, i, v) {
        if (!json_is_string(v)) return bad(c, "suites", "expected strings");
        rf_status st = rf_runfile_set_suite(c, d, "suites", json_string_value(v));
        if (st) return st;
    }
    return RF_OK;
}

static void save_suites(json_t *o, const field *f, const void *base) {
    const rf_run_desc *d = base;
    const bool on[] = {d->speed, d->load, d->accuracy, d->agent, d->probe, d->precision};
    json_t *su = json_array();
    for (int k = 0; k < 6; k++)
        if (on[k]) json_array_append_new(su, json_string(k < 5 ? g_suites[k] : "precision"));
    if (json_array_size(su))
        json_object_set_new(o, f->key, su);
    else
        json_decref(su); /* an A/B/A-only run: the key is left out */
}

static rf_status parse_levels(ctx *c, const field *f, json_t *obj, const char *path, void *base) {
    (void)path;
    rf_run_desc *d = base;
    json_t *a = json_object_get(obj, f->key);
    if (!a) return RF_OK;
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > RF_BENCH_MAX_LEVELS)
        return bad(c, "load.levels", "expected an array of 1 to 16 integers");
    d->n_levels = 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 4096)
            return bad(c, "load.levels", "every level must be an integer in [1, 4096]");
        d->levels[d->n_levels++] = (int)json_integer_value(v);
    }
    return RF_OK;
}

static void save_levels(json_t *o, const field *f, const void *base) {
    const rf_run_desc *d = base;
    json_t *lv = json_array();
    for (int i = 0; i < d->n_levels; i++) json_array_append_new(lv, json_integer(d->levels[i]));
    json_object_set_new(o, f->key, lv);
}

/* accuracy.questions and agent.task: the data file, saved resolved (def: under data/) */
static void save_data_file(json_t *o, const field *f, const void *base) {
    char buf[RF_BENCH_PATH_MAX];
    const char *p = rf_bench_data_path(*AT_C(base, f, const char *), f->def, buf, sizeof buf, NULL);
    if (p) json_object_set_new(o, f->key, json_string_nocheck(p));
}

static rf_status parse_aba_suites(ctx *c, const field *f, json_t *obj, const char *path,
                                  void *base) {
    (void)path;
    rf_run_desc *d = base;
    d->aba_speed = true;
    d->aba_load = false;
    json_t *s = json_object_get(obj, f->key);
    if (!s) return RF_OK;
    if (!json_is_array(s) || !json_array_size(s))
        return bad(c, "aba.suites", "expected a non-empty array of \"speed\", \"load\"");
    d->aba_speed = false;
    size_t i;
    json_t *v;
    json_array_foreach(s, i, v) {
        const char *n = json_string_value(v);
        if (n && !strcmp(n, "speed"))
            d->aba_speed = true;
        else if (n && !strcmp(n, "load"))
            d->aba_load = true;
        else
            return bad(c, "aba.suites", "only speed and load can run in A/B/A");
    }
    return RF_OK;
}

static void save_aba_suites(json_t *o, const field *f, const void *base) {
    const rf_run_desc *d = base;
    json_t *as = json_array();
    if (d->aba_speed) json_array_append_new(as, json_string("speed"));
    if (d->aba_load) json_array_append_new(as, json_string("load"));
    json_object_set_new(o, f->key, as);
}

static rf_status parse_variants(ctx *c, const field *f, json_t *obj, const char *path, void *base) {
    return name_bits(c, obj, path, f->key, study_variant,
                     "expected a non-empty array of q8_0, bf16, f16, q4_0, widen (the as-shipped "
                     "file is always the A of the study)",
                     AT(base, f, unsigned));
}

static void save_variants(json_t *o, const field *f, const void *base) {
    json_object_set_new(o, f->key,
                        names_of(*AT_C(base, f, unsigned), RF_VARIANT_SHIPPED + 1, RF_VARIANT_COUNT,
                                 rf_variant_name));
}

static rf_status parse_study_suites(ctx *c, const field *f, json_t *obj, const char *path,
                                    void *base) {
    return name_bits(c, obj, path, f->key, study_suite,
                     "expected a non-empty array of speed, load, accuracy, agent",
                     AT(base, f, unsigned));
}

static void save_study_suites(json_t *o, const field *f, const void *base) {
    json_object_set_new(o, f->key,
                        names_of(*AT_C(base, f, unsigned), 0, RF_SUITE_PROBE, suite_name));
}

static rf_status parse_membw(ctx *c, const field *f, json_t *obj, const char *path, void *base) {
    (void)path;
    json_t *mb = json_object_get(obj, f->key);
    if (!mb) return RF_OK;
    if (!json_is_boolean(mb)) return bad(c, "membw", "expected true or false");
    *AT(base, f, bool) = json_is_true(mb);
    return RF_OK;
}

static void save_str(json_t *o, const field *f, const void *base) {
    const char *v = *AT_C(base, f, const char *);
    if (v) json_object_set_new(o, f->key, json_string_nocheck(v));
}

/* backends[i].max_reply_bytes: a whole number of bytes (0: the default) */
static rf_status parse_reply_cap(ctx *c, const field *f, json_t *obj, const char *path,
                                 void *base) {
    int64_t *cap = AT(base, f, int64_t);
    double x = (double)*cap;
    rf_status st = rf_jr_num(c, obj, path, f->key, 0, f->lo, f->hi, &x);
    if (!st && x != (double)(int64_t)x) {
        char p[96];
        st = bad(c, rf_jr_path(p, sizeof p, path, f->key), "expected a whole number of bytes");
    }
    if (!st) *cap = (int64_t)x;
    return st;
}

static void save_reply_cap(json_t *o, const field *f, const void *base) {
    int64_t cap = *AT_C(base, f, int64_t);
    json_object_set_new(o, f->key, json_integer(cap ? cap : RF_BK_DEFAULT_REPLY_CAP));
}

/* backends[i].extra_body: an object, kept as text in the file's tree */
static rf_status parse_extra_body(ctx *c, const field *f, json_t *obj, const char *path,
                                  void *base) {
    json_t *xb = json_object_get(obj, f->key);
    if (!xb || json_is_null(xb)) return RF_OK;
    char p[96];
    rf_jr_path(p, sizeof p, path, f->key);
    if (!json_is_object(xb)) return bad(c, p, "expected a JSON object");
    char *txt = rf_json_dumps(xb, JSON_COMPACT);
    json_t *js = txt ? json_string(txt) : NULL;
    free(txt);
    if (!js || json_object_set_new(obj, f->key, js)) return bad(c, p, "out of memory");
    *AT(base, f, const char *) = json_string_value(js);
    return RF_OK;
}

static void save_extra_body(json_t *o, const field *f, const void *base) {
    const char *text = *AT_C(base, f, const char *);
    json_t *x = text ? json_loads(text, 0, NULL) : NULL;
    if (x) json_object_set_new(o, f->key, x);
}

/* backends[i].suites: a bit per suite */
static rf_status parse_backend_suites(ctx *c, const field *f, json_t *obj, const char *path,
                                      void *base) {
    json_t *bs = json_object_get(obj, f->key);
    if (!bs) return RF_OK;
    char p[96];
    rf_jr_path(p, sizeof p, path, f->key);
    if (!json_is_array(bs) || !json_array_size(bs))
        return bad(c, p, "expected a non-empty array of suite names");
    unsigned *bits = AT(base, f, unsigned);
    size_t i;
    json_t *v;
    json_array_foreach(bs, i, v) {
        int k = suite_of(json_string_value(v));
        if (k < 0) return bad(c, p, "unknown suite (speed, load, accuracy, agent, probe)");
        *bits |= 1u << k;
    }
    return RF_OK;
}

static void save_backend_suites(json_t *o, const field *f, const void *base) {
    unsigned bits = *AT_C(base, f, unsigned);
    if (bits) json_object_set_new(o, f->key, names_of(bits, 0, RF_SUITE_COUNT, suite_name));
}

static rf_status parse_variant(ctx *c, const field *f, json_t *obj, const char *path, void *base) {
    const char **v = AT(base, f, const char *);
    rf_status st = rf_jr_str(c, obj, path, f->key, RF_JR_NULLABLE, v);
    if (!st && *v && rf_variant_parse(*v) < 0) {
        char p[96];
        return bad(c, rf_jr_path(p, sizeof p, path, f->key),
                   "unknown variant (shipped, q8_0, bf16, f16, q4_0, widen)");
    }
    return st;
}

/* backends[i].instance: the short form of price.instance */
static rf_status parse_instance(ctx *c, const field *f, json_t *obj, const char *path, void *base) {
    rf_bench_backend *bb = base;
    const char *inst = NULL;
    rf_status st = rf_jr_str(c, obj, path, f->key, RF_JR_NULLABLE | RF_JR_NONEMPTY, &inst);
    if (st) return st;
    if (inst && bb->price_instance && strcmp(inst, bb->price_instance)) {
        char p[96];
        return bad(c, rf_jr_path(p, sizeof p, path, f->key),
                   "names another instance type than price.instance");
    }
    if (inst) bb->price_instance = inst;
    return RF_OK;
}

/* ---- sections ---- */

static bool has_aba(const void *base) {
    return ((const rf_run_desc *)base)->aba;
}
static bool has_precision(const void *base) {
    return ((const rf_run_desc *)base)->precision;
}
static bool has_slo(const void *base) {
    const rf_run_desc *d = base;
    return d->slo_ttft_ms > 0 || d->slo_tpot_ms > 0 || d->slo_e2e_ms > 0;
}
static bool has_hardware(const void *base) {
    const rf_bench_backend *bb = base;
    return bb->hardware || bb->mem_bw_gbs > 0 || bb->mem_gb > 0;
}

static rf_status finish_load(ctx *c, json_t *obj, const char *path, void *base) {
    (void)obj, (void)path;
    const rf_run_desc *d = base;
    if (d->rate > 0 && d->rate < RF_BENCH_MIN_RATE)
        return bad(c, "load.rate", "below 0.001 requests per second (0: fixed concurrency)");
    return RF_OK;
}

static rf_status finish_aba(ctx *c, json_t *obj, const char *path, void *base) {
    (void)obj, (void)path;
    rf_run_desc *d = base;
    if (!d->aba_a || !d->aba_b) return bad(c, "aba", "needs \"a\" and \"b\" backend names");
    d->aba = true;
    return RF_OK;
}

static rf_status finish_precision(ctx *c, json_t *obj, const char *path, void *base) {
    (void)c, (void)obj, (void)path;
    ((rf_run_desc *)base)->precision = true;
    return RF_OK;
}

static const field g_fields[] = {
    {"", "backends", F_CUSTOM, 0, 0, RF_BENCH_MAX_BACKENDS, 0, "array of 1 to 16 backends",
     "the embedded model", "the backends the work goes to (fields below)", parse_backends,
     save_backends, NULL, NULL},
    {"backends[]", "name", F_STR, BC(name), .def = "the URI", .help = "the backend's name"},
    {"backends[]", "uri", F_STR, BC(uri), .def = "required",
     .help = "local, local:MODEL.gguf, openai:http://HOST:PORT/v1, sagemaker:REGION/ENDPOINT, "
             "bedrock:REGION/MODEL_ID"},
    {"backends[]", "model", F_STR, BC(model), .def = "the server's first",
     .help = "model name sent to openai backends"},
    {"backends[]", "api_key_env", F_STR, BC(api_key_env), .def = "OPENAI_API_KEY, when set",
     .help = "environment variable holding the API key"},
    {"backends[]", "threads", F_INT, BC(threads), 0, 1024, .def = "0: physical cores",
     .help = "engine threads (local only)"},
    {"backends[]", "max_seqs", F_INT, BC(max_seqs), 0, 256, .def = "0: 16",
     .help = "requests decoded together (local only)"},
    {"backends[]", "n_ctx", F_INT, BC(n_ctx), 0, 1 << 24, .def = "0: the engine's",
     .help = "context per request (local only)"},
    {"backends[]", "timeout_s", F_NUM, BC(timeout_s), 0, 86400, .def = "0: 600",
     .help = "a request's time limit"},
    {"backends[]", "stall_s", F_NUM, BC(stall_s), 0, 86400, .def = "0: 60",
     .help = "the longest wait between two events of a stream"},
    {"backends[]", "retry_max", F_INT, BC(retry_max), -1, 100, .def = "0: 3; -1: none",
     .help = "retries of a throttled request (AWS backends)"},
    {"backends[]", "retry_base_s", F_NUM, BC(retry_base_s), 0, 3600, .def = "0: 1",
     .help = "the first retry's back-off"},
    {"backends[]", "retry_cap_s", F_NUM, BC(retry_cap_s), 0, 3600, .def = "0: 20",
     .help = "the longest back-off"},
    {"backends[]", "max_reply_bytes", F_CUSTOM, BC(max_reply_bytes), 0, (double)((int64_t)1 << 40),
     .type = "integer in [0, 2^40]", .def = "0: 1048576",
     .help = "reply text kept per request; more is counted, not kept", .parse = parse_reply_cap,
     .save = save_reply_cap},
    {"backends[]", "extra_body", F_STR, BC(extra_body), .type = "object",
     .help = "merged into every HTTP request body, e.g. {\"cache_prompt\": false}",
     .parse = parse_extra_body, .save = save_extra_body},
    {"backends[]", "price", F_OBJ, .type = "object", .help = "what the backend costs"},
    {"backends[].price", "usd_per_hour", F_NUM, B(usd_per_hour), 0, 1e6, .def = "0: unknown",
     .help = "instance price, $ per hour"},
    {"backends[].price", "usd_per_m_input", F_NUM, B(usd_per_m_input), 0, 1e6, .def = "0: unknown",
     .help = "per-token price, $ per million input tokens"},
    {"backends[].price", "usd_per_m_output", F_NUM, B(usd_per_m_output), 0, 1e6,
     .def = "0: unknown", .help = "per-token price, $ per million output tokens"},
    {"backends[].price", "instance", F_STR, B(price_instance),
     .help = "an instance type of data/prices.json, e.g. g6.xlarge"},
    {"backends[]", "instance", F_CUSTOM, 0, .flags = NOT_SAVED, .type = "string",
     .help = "short for price.instance", .parse = parse_instance},
    {"backends[]", "hardware", F_OBJ, .type = "object", .help = "the machine behind the backend",
     .present = has_hardware},
    {"backends[].hardware", "name", F_STR, B(hardware), .help = "e.g. \"NVIDIA L4\""},
    {"backends[].hardware", "mem_bw_gbs", F_NUM, B(mem_bw_gbs), 0, 1e7, .def = "0: unknown",
     .help = "memory bandwidth, GB/s"},
    {"backends[].hardware", "mem_gb", F_NUM, B(mem_gb), 0, 1e7, .def = "0: unknown",
     .help = "memory, GB"},
    {"backends[]", "model_file", F_STR, B(model_file),
     .help = "the served model's weights (GGUF or safetensors): the roofline's bytes per token"},
    {"backends[]", "suites", F_CUSTOM, B(suites), .type = "array of suite names", .def = "all",
     .help = "the suites this backend is in", .parse = parse_backend_suites,
     .save = save_backend_suites},
    {"backends[]", "bytes_per_token", F_NUM, B(bytes_per_token), 0, 1e15, IF_SET,
     .def = "0: unknown", .help = "or the bytes read per decoded token, given"},
    {"backends[]", "widen", F_BOOL, BC(widen), .flags = IF_SET, .def = "false",
     .help = "the engine's widened matmul path (local only)"},
    {"backends[]", "variant", F_STR, B(variant),
     .help = "a precision-study variant (shipped, q8_0, bf16, f16, q4_0, widen)",
     .parse = parse_variant, .save = save_str},
    {"backends[]", "stream", F_BOOL, B(no_stream), .flags = IF_SET | INVERTED, .def = "true",
     .help = "false: one whole body per request, no stream"},
    {"", "suites", F_CUSTOM, 0, .type = "array of suite names", .def = "all but precision",
     .help = "speed, load, accuracy, agent, probe, precision (not empty)", .parse = parse_suites,
     .save = save_suites},
    {"", "speed", F_OBJ, .type = "object", .help = "the single-stream speed suite"},
    {"speed", "runs", F_INT, D(speed_runs), 1, 1000, .def = "3", .help = "speed runs"},
    {"speed", "max_tokens", F_INT, D(speed_tokens), 1, 1 << 20, .def = "512",
     .help = "tokens per run"},
    {"speed", "prompt", F_STR, D(speed_prompt), .flags = DEF_KEPT,
     .def = "Write a long story about a lighthouse keeper who finds a message in a bottle.",
     .help = "the prompt"},
    {"", "load", F_OBJ, .type = "object", .help = "the load suite", .finish = finish_load},
    {"load", "levels", F_CUSTOM, 0, .type = "array of 1 to 16 integers in [1, 4096]",
     .def = "[1, 4, 16]", .help = "concurrency levels", .parse = parse_levels, .save = save_levels},
    {"load", "requests", F_INT, D(load_requests), 0, 1 << 20, .def = "0: max(8, 2*level)",
     .help = "requests per level"},
    {"load", "max_tokens", F_INT, D(load_tokens), 1, 1 << 20, .def = "128",
     .help = "tokens per request"},
    {"load", "warmup", F_INT, D(load_warmup), 0, 1 << 20, .def = "1",
     .help = "warm-up requests per level, left out of statistics"},
    {"load", "rate", F_NUM, D(rate), 0, RF_BENCH_MAX_RATE, .def = "0: fixed concurrency",
     .help = "Poisson load at this many requests per second (at least 0.001)"},
    {"load", "rate_requests", F_INT, D(rate_requests), 1, 1 << 20, .def = "32",
     .help = "requests in the Poisson run"},
    {"load", "max_concurrency", F_INT, D(rate_max_concurrency), 0, 1 << 20, .def = "0: none",
     .help = "cap on in-flight requests in the Poisson run"},
    {"load", "seed", F_U64, D(rate_seed), 0, 1 << 30, .def = "1",
     .help = "the Poisson schedule's seed"},
    {"", "accuracy", F_OBJ, .type = "object", .help = "the accuracy suite"},
    {"accuracy", "questions", F_STR, D(questions), .def = "accuracy/seed40.jsonl",
     .help = "the question file (JSONL)", .save = save_data_file},
    {"accuracy", "max_tokens", F_INT, D(accuracy_tokens), 1, 1 << 20, .def = "48",
     .help = "tokens per answer"},
    {"accuracy", "concurrency", F_INT, D(accuracy_concurrency), 1, 4096, .def = "8",
     .help = "requests in flight"},
    {"", "agent", F_OBJ, .type = "object", .help = "the agent suite"},
    {"agent", "task", F_STR, D(agent_task), .def = "agent/count_ids.json", .help = "the agent task",
     .save = save_data_file},
    {"agent", "runs", F_INT, D(agent_runs), 1, 1000, IF_SET, .def = "the task's, 3",
     .help = "runs per backend"},
    {"", "probe", F_OBJ, .type = "object", .help = "the probe suite"},
    {"probe", "question", F_STR, D(probe_question), .flags = DEF_KEPT,
     .def = "What is the capital of France? Answer with one word.", .help = "the question"},
    {"", "aba", F_OBJ, .type = "object", .help = "an A/B/A comparison of two backends",
     .present = has_aba, .finish = finish_aba},
    {"aba", "a", F_STR, D(aba_a), .def = "required", .help = "a backend's name"},
    {"aba", "b", F_STR, D(aba_b), .def = "required", .help = "another backend's name"},
    {"aba", "suites", F_CUSTOM, 0, .type = "array of \"speed\", \"load\"", .def = "[\"speed\"]",
     .help = "the suites run in each phase", .parse = parse_aba_suites, .save = save_aba_suites},
    {"", "precision", F_OBJ, .type = "object",
     .help = "the precision study: a backend per variant, run A B1 A B2 ... A (docs/bench.md)",
     .present = has_precision, .finish = finish_precision},
    {"precision", "model", F_STR, D(precision_model), .def = "qwen2.5-coder-0.5b",
     .help = "the model studied"},
    {"precision", "dir", F_STR, D(precision_dir), .def = "runs/variants",
     .help = "where the variant files are built"},
    {"precision", "variants", F_CUSTOM, D(precision_variants), .type = "array of names",
     .def = "all", .help = "q8_0, bf16, f16, q4_0, widen", .parse = parse_variants,
     .save = save_variants},
    {"precision", "suites", F_CUSTOM, D(precision_suites), .type = "array of names", .def = "all",
     .help = "speed, load, accuracy, agent", .parse = parse_study_suites,
     .save = save_study_suites},
    {"", "out", F_STR, D(out_dir), .def = "runs/<UTC time>-<ms>", .help = "the run directory"},
    {"", "membw", F_BOOL, D(membw), .def = "true",
     .help = "measure the memory bandwidth for local backends", .parse = parse_membw},
    {"", "slo", F_OBJ, .type = "object", .help = "goodput SLOs for the report", .present = has_slo},
    {"slo", "ttft_ms", F_NUM, D(slo_ttft_ms), 0, 1e9, IF_SET, .def = "0: none",
     .help = "time to first token"},
    {"slo", "tpot_ms", F_NUM, D(slo_tpot_ms), 0, 1e9, IF_SET, .def = "0: none",
     .help = "time per output token"},
    {"slo", "e2e_ms", F_NUM, D(slo_e2e_ms), 0, 1e9, IF_SET, .def = "0: none",
     .help = "a request's whole time"},
    {"slo", "attainment", F_NUM, D(slo_attainment), 0, 1, IF_SET, .def = "0: 0.9",
     .help = "the share of good requests a level needs"},
};
#define N_FIELDS (sizeof g_fields / sizeof g_fields[0])

/* "speed" under "" is "speed"; "price" under "backends[]" is "backends[].price" */
static void child_sect(char *out, size_t cap, const char *sect, const char *key) {
    snprintf(out, cap, "%s%s%s", sect, *sect ? "." : "", key);
}

/* The section sect of obj (named path in messages) into base. */
static rf_status parse_section(ctx *c, json_t *obj, const char *sect, const char *path,
                               void *base) {
    const char *keys[40];
    size_t n = 0;
    for (size_t k = 0; k < N_FIELDS && n + 1 < sizeof keys / sizeof keys[0]; k++)
        if (!strcmp(g_fields[k].sect, sect)) keys[n++] = g_fields[k].key;
    keys[n] = NULL;
    rf_status st = rf_jr_keys(c, obj, path, keys);
    for (size_t k = 0; k < N_FIELDS && !st; k++) {
        const field *f = &g_fields[k];
        if (strcmp(f->sect, sect)) continue;
        if (f->parse && f->kind != F_OBJ) {
            st = f->parse(c, f, obj, path, base);
            continue;
        }
        switch (f->kind) {
        case F_INT:
            st = rf_jr_i32(c, obj, path, f->key, 0, (int32_t)f->lo, (int32_t)f->hi,
                           AT(base, f, int32_t));
            break;
        case F_U64: {
            uint64_t *u = AT(base, f, uint64_t);
            int32_t v = (int32_t)*u;
            st = rf_jr_i32(c, obj, path, f->key, 0, (int32_t)f->lo, (int32_t)f->hi, &v);
            *u = (uint64_t)v;
            break;
        }
        case F_NUM:
            st = rf_jr_num(c, obj, path, f->key, 0, f->lo, f->hi, AT(base, f, double));
            break;
        case F_STR:
            st = rf_jr_str(c, obj, path, f->key, RF_JR_NULLABLE | RF_JR_NONEMPTY,
                           AT(base, f, const char *));
            break;
        case F_BOOL: {
            bool *b = AT(base, f, bool), v = f->flags & INVERTED ? !*b : *b;
            st = rf_jr_bool(c, obj, path, f->key, 0, &v);
            *b = f->flags & INVERTED ? !v : v;
            break;
        }
        case F_CUSTOM:
            break;
        case F_OBJ: {
            json_t *child = json_object_get(obj, f->key);
            if (!child) break;
            char cs[64], cp[96];
            child_sect(cs, sizeof cs, sect, f->key);
            if (*sect)
                rf_jr_path(cp, sizeof cp, path, f->key);
            else
                snprintf(cp, sizeof cp, "%s", f->key); /* "speed", not "run.speed" */
            st = parse_section(c, child, cs, cp, base);
            if (!st && f->finish) st = f->finish(c, child, cp, base);
            break;
        }
        }
    }
    return st;
}

/* The section sect of base into o. */
static void save_section(json_t *o, const char *sect, const void *base) {
    for (size_t k = 0; k < N_FIELDS; k++) {
        const field *f = &g_fields[k];
        if (strcmp(f->sect, sect) || f->flags & NOT_SAVED) continue;
        if (f->save && f->kind != F_OBJ) {
            f->save(o, f, base);
            continue;
        }
        switch (f->kind) {
        case F_INT: {
            int32_t v = *AT_C(base, f, int32_t);
            if (v || !(f->flags & IF_SET)) json_object_set_new(o, f->key, json_integer(v));
            break;
        }
        case F_U64:
            json_object_set_new(o, f->key, json_integer((json_int_t)*AT_C(base, f, uint64_t)));
            break;
        case F_NUM: {
            double v = *AT_C(base, f, double);
            if (v > 0 || !(f->flags & IF_SET)) json_object_set_new(o, f->key, json_real(v));
            break;
        }
        case F_STR:
            save_str(o, f, base);
            break;
        case F_BOOL: {
            bool v = *AT_C(base, f, bool);
            if (v || !(f->flags & IF_SET))
                json_object_set_new(o, f->key, json_boolean(f->flags & INVERTED ? !v : v));
            break;
        }
        case F_CUSTOM:
            break;
        case F_OBJ: {
            if (f->present && !f->present(base)) break;
            char cs[64];
            child_sect(cs, sizeof cs, sect, f->key);
            json_t *child = json_object();
            save_section(child, cs, base);
            json_object_set_new(o, f->key, child);
            break;
        }
        }
    }
}

/* backends[i]: the backend's own section, then its checks */
static rf_status parse_backend(ctx *c, json_t *o, int i, rf_bench_backend *bb) {
    char path[64];
    snprintf(path, sizeof path, "backends[%d]", i);
    rf_status st = parse_section(c, o, "backends[]", path, bb);
    if (st) return st;
    if (!bb->cfg.uri) return bad(c, path, "missing \"uri\"");
    if (!bb->cfg.name) bb->cfg.name = bb->cfg.uri;
    return RF_OK;
}

static rf_status parse_backends(ctx *c, const field *f, json_t *obj, const char *path, void *base) {
    (void)path;
    rf_run_desc *d = base;
    json_t *bs = json_object_get(obj, f->key);
    if (!bs) return RF_OK;
    if (!json_is_array(bs) || json_array_size(bs) > RF_BENCH_MAX_BACKENDS)
        return bad(c, "backends", "expected an array of at most 16 backends");
    if (!json_array_size(bs))
        return bad(c, "backends",
                   "empty: name at least one backend (or leave the key out "
                   "for the embedded model)");
    d->n_backends = 0; /* a later file's list replaces an earlier one */
    size_t i;
    json_t *o;
    json_array_foreach(bs, i, o) {
        rf_bench_backend *bb = &d->backends[d->n_backends++];
        memset(bb, 0, sizeof *bb);
        rf_status st = parse_backend(c, o, (int)i, bb);
        if (st) return st;
    }
    return RF_OK;
}

static void save_backends(json_t *o, const field *f, const void *base) {
    const rf_run_desc *d = base;
    json_t *bs = json_array();
    for (int i = 0; i < d->n_backends; i++) {
        json_t *b = json_object();
        save_section(b, "backends[]", &d->backends[i]);
        json_array_append_new(bs, b);
    }
    json_object_set_new(o, f->key, bs);
}

rf_status rf_runfile_fields_parse(ctx *c, json_t *root, rf_run_desc *d) {
    return parse_section(c, root, "", "run", d);
}

void rf_runfile_fields_to_json(json_t *o, const rf_run_desc *d) {
    save_section(o, "", d);
}

/* ---- defaults ---- */

void rf_run_desc_defaults(rf_run_desc *d) {
    memset(d, 0, sizeof *d);
    for (size_t k = 0; k < N_FIELDS; k++) {
        const field *f = &g_fields[k];
        if (!f->def || !strncmp(f->sect, "backends", 8)) continue; /* a backend starts zeroed */
        char *end = NULL;
        double v = strtod(f->def, &end);
        if (end == f->def) v = 0;
        switch (f->kind) {
        case F_INT:
            *AT(d, f, int32_t) = (int32_t)v;
            break;
        case F_U64:
            *AT(d, f, uint64_t) = (uint64_t)v;
            break;
        case F_NUM:
            *AT(d, f, double) = v;
            break;
        case F_BOOL:
            *AT(d, f, bool) = !strcmp(f->def, "true") != !!(f->flags & INVERTED);
            break;
        case F_STR:
            if (f->flags & DEF_KEPT) *AT(d, f, const char *) = f->def;
            break;
        default:
            break;
        }
    }
    static const int levels[] = {1, 4, 16}; /* load.levels' default */
    memcpy(d->levels, levels, sizeof levels);
    d->n_levels = 3;
    d->progress = true;
}

/* ---- help ---- */

static const char *type_of(const field *f, char *buf, size_t cap) {
    switch (f->kind) {
    case F_INT:
    case F_U64:
        snprintf(buf, cap, "integer in [%.0f, %.0f]", f->lo, f->hi);
        return buf;
    case F_NUM:
        snprintf(buf, cap, "number in [%g, %g]", f->lo, f->hi);
        return buf;
    case F_STR:
        return f->type ? f->type : "string";
    case F_BOOL:
        return "boolean";
    default:
        return f->type;
    }
}

void rf_runfile_fields_help(FILE *out) {
    fputs("Run file (JSON; unknown keys are errors; a key's path, type, default and meaning):\n",
          out);
    for (size_t k = 0; k < N_FIELDS; k++) {
        const field *f = &g_fields[k];
        char path[96], tb[96], text[600];
        child_sect(path, sizeof path, f->sect, f->key);
        if (f->kind == F_CUSTOM && f->save == save_backends)
            snprintf(path, sizeof path, "%s[]", f->key);
        const char *def = f->def;
        char db[96];
        if (f->save == save_data_file) /* def: under the data directory */
            def = (snprintf(db, sizeof db, "data/%s", f->def), db);
        bool req = def && !strcmp(def, "required");
        snprintf(text, sizeof text, "%s%s%s%s: %s", type_of(f, tb, sizeof tb),
                 req   ? ", required"
                 : def ? " (default "
                       : "",
                 req   ? ""
                 : def ? def
                       : "",
                 def && !req ? ")" : "", f->help);
        rf_opt_help_item(out, path, text, 36);
    }
    fputs("Several --run files merge in order: a key of a later file replaces the earlier value\n"
          "(a later \"backends\" list replaces the whole list); flags override both. The run\n"
          "directory gets run.json, every field filled in with the value the run used.\n",
          out);
}
