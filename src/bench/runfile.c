/* runfile.c: strict JSON run files and the bench's flags. */
#include "bench/runfile.h"
#include "model/registry.h"
#include "util/file.h"
#include "util/json_dump.h"
#include "util/json_read.h"
#include "util/utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rf_runfile_help(FILE *f) {
    fputs(
        "usage: roofline bench [--run FILE] [options]\n"
        "\n"
        "Sends the same work to one or more backends and writes a scoreboard and a report. With\n"
        "no --run and no --backend: data/runs/default.json, the embedded models in-process side\n"
        "by side (Qwen2.5-Coder 0.5B and Gemma 3 270M: speed, load at 1, 4, 16, accuracy, agent,\n"
        "probe; SmolLM2 135M: speed and accuracy), then a short precision study of SmolLM2\n"
        "(as shipped, Q8_0, widened: speed, load, accuracy, A B A B A). Results go to runs/<UTC "
        "time>/: run.json,\n"
        "records.jsonl (one line per request, written as each completes), runlog.jsonl, and the\n"
        "report computed from them: summary.json, report.md (printed), report.html, csv/.\n"
        "Ctrl-C stops the run and reports what finished; --resume continues it.\n"
        "\n"
        "Options (they override the run file's values):\n"
        "  --run FILE            a JSON run description (schema below)\n"
        "  --backend NAME=URI    add a backend (repeatable); URI: local, local:MODEL.gguf,\n"
        "                        openai:http://HOST:PORT/v1 (llama-server, vLLM, roofline serve, "
        "...)\n"
        "                        sagemaker:REGION/ENDPOINT, bedrock:REGION/MODEL_ID (AWS; "
        "docs/aws.md)\n"
        "  --model NAME          model name sent to openai backends (default: the server's first)\n"
        "  --api-key-env VAR     environment variable holding the API key (default "
        "OPENAI_API_KEY, when set)\n"
        "  --suites LIST         comma list of speed,load,accuracy,agent,probe,precision\n"
        "                        (precision: the run file's study, else Qwen2.5-Coder 0.5B's\n"
        "                        five variants; docs/bench.md)\n"
        "  --speed-runs N        speed runs (3)          --speed-tokens N  tokens per run (512)\n"
        "  --levels LIST         load concurrency levels (1,4,16)\n"
        "  --requests N          load requests per level (max(8, 2*level))\n"
        "  --load-tokens N       tokens per load request (128)\n"
        "  --warmup N            warm-up requests per level, left out of statistics (1)\n"
        "  --rate R              Poisson load at R requests/s instead of fixed concurrency\n"
        "  --rate-requests N     requests in the Poisson run (32)\n"
        "  --max-concurrency N   cap on in-flight requests in the Poisson run (0 = none)\n"
        "  --questions FILE      accuracy question file (data/accuracy/seed40.jsonl)\n"
        "  --accuracy-tokens N   (48)                    --accuracy-concurrency N (8)\n"
        "  --agent-task FILE     agent task (data/agent/count_ids.json)\n"
        "  --agent-runs N        runs per backend (the task's, 3)\n"
        "  --probe TEXT          the probe question\n"
        "  --aba A,B             run A, then B, then A again on the speed suite (and load with\n"
        "                        --aba-load) and report whether B-A exceeds the A-to-A drift\n"
        "  --threads N           engine threads for local backends (physical cores)\n"
        "  --max-reply-bytes N   reply text kept per request (1048576); more is counted, not kept\n"
        "  --out DIR             run directory (default runs/<UTC time>-<ms>); it must not\n"
        "                        already hold a run\n"
        "  --resume DIR          continue the run in DIR from its saved run.json, skipping\n"
        "                        every request already in its records.jsonl (only\n"
        "                        --no-progress may be given with it)\n"
        "  --no-progress         plain progress lines even on a terminal\n"
        "  --slo SPEC            goodput SLOs in ms, e.g. ttft:500,tpot:50,e2e:8000: per level,\n"
        "                        good requests / duration (vLLM), and the largest level whose\n"
        "                        requests are at least 90% good\n"
        "  --no-membw            do not measure the memory bandwidth for local backends (the\n"
        "                        roofline efficiency is then unknown)\n"
        "\n"
        "Exit status: 0 ok; 1 a run-time failure (e.g. records.jsonl could not be written); 2 bad\n"
        "input; 3 the run finished but some suite got no successful reply from some backend (or a\n"
        "backend could not be opened); 130 interrupted.\n"
        "\n"
        "Run file (JSON; unknown keys are errors):\n"
        "{\n"
        "  \"backends\": [{\"name\": \"g6\", \"uri\": \"openai:http://10.0.0.5:8000/v1\",\n"
        "                \"model\": null, \"api_key_env\": \"OPENAI_API_KEY\",\n"
        "                \"threads\": 0, \"max_seqs\": 16, \"n_ctx\": 0,          (local only)\n"
        "                \"timeout_s\": 600, \"stall_s\": 60, \"max_reply_bytes\": 1048576,\n"
        "                \"retry_max\": 3, \"retry_base_s\": 1, \"retry_cap_s\": 20,\n"
        "                          (throttled requests, AWS backends; 0: default, -1: none)\n"
        "                \"extra_body\": {\"cache_prompt\": false},   (merged into HTTP bodies)\n"
        "                \"price\": {\"usd_per_hour\": 0.8048, \"usd_per_m_input\": 0,\n"
        "                          \"usd_per_m_output\": 0, \"instance\": \"g6.xlarge\"},\n"
        "                          (instance: a name of data/prices.json)\n"
        "                \"instance\": \"g6.xlarge\",  (short for price.instance)\n"
        "                \"hardware\": {\"name\": \"NVIDIA L4\", \"mem_bw_gbs\": 300, \"mem_gb\": "
        "24},\n"
        "                \"model_file\": \"gemma.gguf\", \"bytes_per_token\": 0,\n"
        "                \"widen\": false,  (local only: the engine's widened matmul path)\n"
        "                \"suites\": [\"speed\"],  (the suites this backend is in; default all)\n"
        "                \"stream\": true}],  (false: one whole body per request, no stream)\n"
        "                (model_file or bytes_per_token: the roofline's bytes per decoded token)\n"
        "  \"suites\": [\"speed\", \"load\", \"accuracy\", \"agent\", \"probe\"],   (not empty)\n"
        "  \"speed\": {\"runs\": 3, \"max_tokens\": 512, \"prompt\": \"...\"},\n"
        "  \"load\": {\"levels\": [1, 4, 16], \"requests\": 0, \"max_tokens\": 128, \"warmup\": "
        "1,\n"
        "           \"rate\": 0, \"rate_requests\": 32, \"max_concurrency\": 0, \"seed\": 1},\n"
        "  \"accuracy\": {\"questions\": \"data/accuracy/seed40.jsonl\", \"max_tokens\": 48,\n"
        "               \"concurrency\": 8},\n"
        "  \"agent\": {\"task\": \"data/agent/count_ids.json\", \"runs\": 3},\n"
        "  \"probe\": {\"question\": \"What is the capital of France? Answer with one word.\"},\n"
        "  \"aba\": {\"a\": \"NAME\", \"b\": \"NAME\", \"suites\": [\"speed\"]},\n"
        "  \"slo\": {\"ttft_ms\": 500, \"tpot_ms\": 50, \"e2e_ms\": 0, \"attainment\": 0.9},\n"
        "  \"precision\": {\"model\": \"qwen2.5-coder-0.5b\", \"dir\": \"runs/variants\",\n"
        "                \"variants\": [\"q8_0\", \"bf16\", \"f16\", \"q4_0\", \"widen\"],\n"
        "                \"suites\": [\"speed\", \"load\", \"accuracy\", \"agent\"]},\n"
        "                (the precision study: a backend per variant, run A B1 A B2 ... A;\n"
        "                 docs/bench.md)\n"
        "  \"out\": \"runs/my-run\", \"membw\": true\n"
        "}\n"
        "Several --run files merge in order: a key of a later file replaces the earlier value\n"
        "(a later \"backends\" list replaces the whole list); flags override both. The run\n"
        "directory gets run.json, this schema filled in with every value the run used.\n",
        f);
}

/* ---- JSON ---- */

typedef rf_jr ctx;

static rf_status bad(ctx *c, const char *path, const char *what) {
    return rf_jr_fail(c, RF_JR_OTHER, path, "%s", what);
}

static int suite_of(const char *s) {
    static const char *const names[RF_SUITE_COUNT] = {"speed", "load", "accuracy", "agent",
                                                      "probe"};
    for (int k = 0; s && k < RF_SUITE_COUNT; k++)
        if (!strcmp(s, names[k])) return k;
    return -1;
}

static rf_status set_suite(ctx *c, rf_run_desc *d, const char *path, const char *s) {
    if (!strcmp(s, "speed"))
        d->speed = true;
    else if (!strcmp(s, "load"))
        d->load = true;
    else if (!strcmp(s, "accuracy"))
        d->accuracy = true;
    else if (!strcmp(s, "agent"))
        d->agent = true;
    else if (!strcmp(s, "probe"))
        d->probe = true;
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

/* The variants and suites a precision study may name (-1: not one of them). */
static int study_variant(const char *s) {
    int v = rf_variant_parse(s);
    return v > RF_VARIANT_SHIPPED ? v : -1;
}
static int study_suite(const char *s) {
    int k = suite_of(s);
    return k == RF_SUITE_PROBE ? -1 : k;
}

/* precision.KEY, when present: a non-empty array of names, as a bit per name into *bits. */
static rf_status name_bits(ctx *c, const json_t *o, const char *key, int (*parse)(const char *),
                           const char *expected, unsigned *bits) {
    char path[64];
    snprintf(path, sizeof path, "precision.%s", key);
    const json_t *a = json_object_get(o, key);
    if (!a) return RF_OK;
    char m[200];
    snprintf(m, sizeof m, "expected %s", expected);
    if (!json_is_array(a) || !json_array_size(a)) return bad(c, path, m);
    *bits = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v) {
        int x = parse(json_string_value(v));
        if (x < 0) return bad(c, path, m);
        *bits |= 1u << x;
    }
    return RF_OK;
}

/* "precision": {"model", "dir", "variants": [...], "suites": [...]} */
static rf_status parse_precision(ctx *c, json_t *o, rf_run_desc *d) {
    static const char *const k[] = {"model", "dir", "variants", "suites", NULL};
    rf_status st = rf_jr_keys(c, o, "precision", k);
    if (!st)
        st = rf_jr_str(c, o, "precision", "model", RF_JR_NULLABLE | RF_JR_NONEMPTY,
                       &d->precision_model);
    if (!st)
        st =
            rf_jr_str(c, o, "precision", "dir", RF_JR_NULLABLE | RF_JR_NONEMPTY, &d->precision_dir);
    if (st) return st;
    st = name_bits(c, o, "variants", study_variant,
                   "a non-empty array of q8_0, bf16, f16, q4_0, widen (the as-shipped file is "
                   "always the A of the study)",
                   &d->precision_variants);
    if (!st)
        st = name_bits(c, o, "suites", study_suite,
                       "a non-empty array of speed, load, accuracy, agent", &d->precision_suites);
    if (st) return st;
    d->precision = true;
    return RF_OK;
}

static rf_status parse_backend(ctx *c, json_t *o, int i, rf_bench_backend *bb) {
    char path[64];
    snprintf(path, sizeof path, "backends[%d]", i);
    static const char *const keys[] = {
        "name",        "uri",        "model",           "api_key_env", "threads",
        "max_seqs",    "n_ctx",      "timeout_s",       "stall_s",     "price",
        "hardware",    "extra_body", "max_reply_bytes", "model_file",  "bytes_per_token",
        "suites",      "instance",   "stream",          "retry_max",   "retry_base_s",
        "retry_cap_s", "widen",      "variant",         NULL};
    rf_status st = rf_jr_keys(c, o, path, keys);
    if (!st) st = rf_jr_str(c, o, path, "name", RF_JR_NULLABLE | RF_JR_NONEMPTY, &bb->cfg.name);
    if (!st) st = rf_jr_str(c, o, path, "uri", RF_JR_NULLABLE | RF_JR_NONEMPTY, &bb->cfg.uri);
    if (!st) st = rf_jr_str(c, o, path, "model", RF_JR_NULLABLE | RF_JR_NONEMPTY, &bb->cfg.model);
    if (!st)
        st = rf_jr_str(c, o, path, "api_key_env", RF_JR_NULLABLE | RF_JR_NONEMPTY,
                       &bb->cfg.api_key_env);
    if (!st) st = rf_jr_i32(c, o, path, "threads", 0, 0, 1024, &bb->cfg.threads);
    if (!st) st = rf_jr_i32(c, o, path, "max_seqs", 0, 0, 256, &bb->cfg.max_seqs);
    if (!st) st = rf_jr_i32(c, o, path, "n_ctx", 0, 0, 1 << 24, &bb->cfg.n_ctx);
    if (!st) st = rf_jr_num(c, o, path, "timeout_s", 0, 0, 86400, &bb->cfg.timeout_s);
    if (!st) st = rf_jr_num(c, o, path, "stall_s", 0, 0, 86400, &bb->cfg.stall_s);
    if (!st) st = rf_jr_i32(c, o, path, "retry_max", 0, -1, 100, &bb->cfg.retry_max);
    if (!st) st = rf_jr_num(c, o, path, "retry_base_s", 0, 0, 3600, &bb->cfg.retry_base_s);
    if (!st) st = rf_jr_num(c, o, path, "retry_cap_s", 0, 0, 3600, &bb->cfg.retry_cap_s);
    double cap = (double)bb->cfg.max_reply_bytes;
    if (!st) st = rf_jr_num(c, o, path, "max_reply_bytes", 0, 0, (double)((int64_t)1 << 40), &cap);
    if (!st && cap != (double)(int64_t)cap) {
        char p[96];
        snprintf(p, sizeof p, "%s.max_reply_bytes", path);
        st = bad(c, p, "expected a whole number of bytes");
    }
    if (!st)
        st = rf_jr_str(c, o, path, "model_file", RF_JR_NULLABLE | RF_JR_NONEMPTY, &bb->model_file);
    json_t *bs = json_object_get(o, "suites");
    if (!st && bs) {
        char p[96];
        snprintf(p, sizeof p, "%s.suites", path);
        if (!json_is_array(bs) || !json_array_size(bs))
            return bad(c, p, "expected a non-empty array of suite names");
        size_t si;
        json_t *v;
        json_array_foreach(bs, si, v) {
            int k = suite_of(json_string_value(v));
            if (k < 0) return bad(c, p, "unknown suite (speed, load, accuracy, agent, probe)");
            bb->suites |= 1u << k;
        }
    }
    if (!st) st = rf_jr_num(c, o, path, "bytes_per_token", 0, 0, 1e15, &bb->bytes_per_token);
    if (!st) st = rf_jr_bool(c, o, path, "widen", 0, &bb->cfg.widen);
    if (!st) st = rf_jr_str(c, o, path, "variant", RF_JR_NULLABLE, &bb->variant);
    bool stream = !bb->no_stream;
    if (!st) st = rf_jr_bool(c, o, path, "stream", 0, &stream);
    bb->no_stream = !stream;
    if (st) return st;
    if (bb->variant && rf_variant_parse(bb->variant) < 0) {
        char p[96];
        snprintf(p, sizeof p, "%s.variant", path);
        return bad(c, p, "unknown variant (shipped, q8_0, bf16, f16, q4_0, widen)");
    }
    bb->cfg.max_reply_bytes = (int64_t)cap;
    json_t *xb = json_object_get(o, "extra_body");
    if (xb && !json_is_null(xb)) {
        char p[96];
        snprintf(p, sizeof p, "%s.extra_body", path);
        if (!json_is_object(xb)) return bad(c, p, "expected a JSON object");
        /* kept as text, owned by the run file's tree like every other string of the desc */
        char *txt = rf_json_dumps(xb, JSON_COMPACT);
        json_t *js = txt ? json_string(txt) : NULL;
        free(txt);
        if (!js || json_object_set_new(o, "extra_body", js)) return bad(c, p, "out of memory");
        bb->cfg.extra_body = json_string_value(js);
    }
    if (!bb->cfg.uri) return bad(c, path, "missing \"uri\"");
    if (!bb->cfg.name) bb->cfg.name = bb->cfg.uri;
    json_t *price = json_object_get(o, "price");
    if (price) {
        char p[96];
        snprintf(p, sizeof p, "%s.price", path);
        static const char *const pk[] = {"usd_per_hour", "usd_per_m_input", "usd_per_m_output",
                                         "instance", NULL};
        st = rf_jr_keys(c, price, p, pk);
        if (!st)
            st = rf_jr_str(c, price, p, "instance", RF_JR_NULLABLE | RF_JR_NONEMPTY,
                           &bb->price_instance);
        if (!st) st = rf_jr_num(c, price, p, "usd_per_hour", 0, 0, 1e6, &bb->usd_per_hour);
        if (!st) st = rf_jr_num(c, price, p, "usd_per_m_input", 0, 0, 1e6, &bb->usd_per_m_input);
        if (!st) st = rf_jr_num(c, price, p, "usd_per_m_output", 0, 0, 1e6, &bb->usd_per_m_output);
        if (st) return st;
    }
    /* "instance": "g6.xlarge", the short form of price.instance */
    const char *inst = NULL;
    st = rf_jr_str(c, o, path, "instance", RF_JR_NULLABLE | RF_JR_NONEMPTY, &inst);
    if (st) return st;
    if (inst && bb->price_instance && strcmp(inst, bb->price_instance)) {
        char p[96];
        snprintf(p, sizeof p, "%s.instance", path);
        return bad(c, p, "names another instance type than price.instance");
    }
    if (inst) bb->price_instance = inst;
    json_t *hw = json_object_get(o, "hardware");
    if (hw) {
        char p[96];
        snprintf(p, sizeof p, "%s.hardware", path);
        static const char *const hk[] = {"name", "mem_bw_gbs", "mem_gb", NULL};
        st = rf_jr_keys(c, hw, p, hk);
        if (!st) st = rf_jr_str(c, hw, p, "name", RF_JR_NULLABLE | RF_JR_NONEMPTY, &bb->hardware);
        if (!st) st = rf_jr_num(c, hw, p, "mem_bw_gbs", 0, 0, 1e7, &bb->mem_bw_gbs);
        if (!st) st = rf_jr_num(c, hw, p, "mem_gb", 0, 0, 1e7, &bb->mem_gb);
        if (st) return st;
    }
    return RF_OK;
}

static rf_status parse_levels(ctx *c, json_t *a, rf_run_desc *d) {
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
    ctx c = rf_jr_make(name, RF_ERR_ARG, err);
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
    rf_run_desc *d = &rf->desc;
    rf_status pst = check_placeholders(name, root, err);
    if (pst) return pst;
    static const char *const keys[] = {"backends", "suites",    "speed", "load", "accuracy",
                                       "agent",    "probe",     "aba",   "out",  "membw",
                                       "slo",      "precision", NULL};
    rf_status st = rf_jr_keys(&c, root, "run", keys);
    if (st) return st;
    json_t *bs = json_object_get(root, "backends");
    if (bs) {
        if (!json_is_array(bs) || json_array_size(bs) > RF_BENCH_MAX_BACKENDS)
            return bad(&c, "backends", "expected an array of at most 16 backends");
        if (!json_array_size(bs))
            return bad(&c, "backends",
                       "empty: name at least one backend (or leave the key out "
                       "for the embedded model)");
        d->n_backends = 0; /* a later file's list replaces an earlier one */
        size_t i;
        json_t *o;
        json_array_foreach(bs, i, o) {
            if (d->n_backends >= RF_BENCH_MAX_BACKENDS) return bad(&c, "backends", "too many");
            rf_bench_backend *bb = &d->backends[d->n_backends++];
            memset(bb, 0, sizeof *bb);
            st = parse_backend(&c, o, (int)i, bb);
            if (st) return st;
        }
    }
    json_t *su = json_object_get(root, "suites");
    if (su) {
        if (!json_is_array(su)) return bad(&c, "suites", "expected an array of suite names");
        if (!json_array_size(su))
            return bad(&c, "suites",
                       "empty: list at least one of speed, load, accuracy, agent, probe (or "
                       "leave the key out for all of them)");
        d->speed = d->load = d->accuracy = d->agent = d->probe = false;
        d->suites_set = true;
        size_t i;
        json_t *v;
        json_array_foreach(su, i, v) {
            if (!json_is_string(v)) return bad(&c, "suites", "expected strings");
            st = set_suite(&c, d, "suites", json_string_value(v));
            if (st) return st;
        }
    }
    json_t *o;
    if ((o = json_object_get(root, "speed"))) {
        static const char *const k[] = {"runs", "max_tokens", "prompt", NULL};
        st = rf_jr_keys(&c, o, "speed", k);
        if (!st) st = rf_jr_i32(&c, o, "speed", "runs", 0, 1, 1000, &d->speed_runs);
        if (!st) st = rf_jr_i32(&c, o, "speed", "max_tokens", 0, 1, 1 << 20, &d->speed_tokens);
        if (!st)
            st = rf_jr_str(&c, o, "speed", "prompt", RF_JR_NULLABLE | RF_JR_NONEMPTY,
                           &d->speed_prompt);
        if (st) return st;
    }
    if ((o = json_object_get(root, "load"))) {
        static const char *const k[] = {"levels",          "requests", "max_tokens",
                                        "warmup",          "rate",     "rate_requests",
                                        "max_concurrency", "seed",     NULL};
        st = rf_jr_keys(&c, o, "load", k);
        if (!st && json_object_get(o, "levels"))
            st = parse_levels(&c, json_object_get(o, "levels"), d);
        if (!st) st = rf_jr_i32(&c, o, "load", "requests", 0, 0, 1 << 20, &d->load_requests);
        if (!st) st = rf_jr_i32(&c, o, "load", "max_tokens", 0, 1, 1 << 20, &d->load_tokens);
        if (!st) st = rf_jr_i32(&c, o, "load", "warmup", 0, 0, 1 << 20, &d->load_warmup);
        if (!st) st = rf_jr_num(&c, o, "load", "rate", 0, 0, RF_BENCH_MAX_RATE, &d->rate);
        if (!st && d->rate > 0 && d->rate < RF_BENCH_MIN_RATE)
            st = bad(&c, "load.rate", "below 0.001 requests per second (0: fixed concurrency)");
        if (!st) st = rf_jr_i32(&c, o, "load", "rate_requests", 0, 1, 1 << 20, &d->rate_requests);
        if (!st)
            st = rf_jr_i32(&c, o, "load", "max_concurrency", 0, 0, 1 << 20,
                           &d->rate_max_concurrency);
        int seed = (int)d->rate_seed;
        if (!st) st = rf_jr_i32(&c, o, "load", "seed", 0, 0, 1 << 30, &seed);
        d->rate_seed = (uint64_t)seed;
        if (st) return st;
    }
    if ((o = json_object_get(root, "accuracy"))) {
        static const char *const k[] = {"questions", "max_tokens", "concurrency", NULL};
        st = rf_jr_keys(&c, o, "accuracy", k);
        if (!st)
            st = rf_jr_str(&c, o, "accuracy", "questions", RF_JR_NULLABLE | RF_JR_NONEMPTY,
                           &d->questions);
        if (!st)
            st = rf_jr_i32(&c, o, "accuracy", "max_tokens", 0, 1, 1 << 20, &d->accuracy_tokens);
        if (!st)
            st = rf_jr_i32(&c, o, "accuracy", "concurrency", 0, 1, 4096, &d->accuracy_concurrency);
        if (st) return st;
    }
    if ((o = json_object_get(root, "agent"))) {
        static const char *const k[] = {"task", "runs", NULL};
        st = rf_jr_keys(&c, o, "agent", k);
        if (!st)
            st = rf_jr_str(&c, o, "agent", "task", RF_JR_NULLABLE | RF_JR_NONEMPTY, &d->agent_task);
        if (!st) st = rf_jr_i32(&c, o, "agent", "runs", 0, 1, 1000, &d->agent_runs);
        if (st) return st;
    }
    if ((o = json_object_get(root, "probe"))) {
        static const char *const k[] = {"question", NULL};
        st = rf_jr_keys(&c, o, "probe", k);
        if (!st)
            st = rf_jr_str(&c, o, "probe", "question", RF_JR_NULLABLE | RF_JR_NONEMPTY,
                           &d->probe_question);
        if (st) return st;
    }
    if ((o = json_object_get(root, "aba"))) {
        static const char *const k[] = {"a", "b", "suites", NULL};
        st = rf_jr_keys(&c, o, "aba", k);
        if (!st) st = rf_jr_str(&c, o, "aba", "a", RF_JR_NULLABLE | RF_JR_NONEMPTY, &d->aba_a);
        if (!st) st = rf_jr_str(&c, o, "aba", "b", RF_JR_NULLABLE | RF_JR_NONEMPTY, &d->aba_b);
        if (st) return st;
        if (!d->aba_a || !d->aba_b) return bad(&c, "aba", "needs \"a\" and \"b\" backend names");
        d->aba = true;
        d->aba_speed = true;
        d->aba_load = false;
        json_t *s = json_object_get(o, "suites");
        if (s) {
            if (!json_is_array(s) || !json_array_size(s))
                return bad(&c, "aba.suites", "expected a non-empty array of \"speed\", \"load\"");
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
                    return bad(&c, "aba.suites", "only speed and load can run in A/B/A");
            }
        }
    }
    st = rf_jr_str(&c, root, "run", "out", RF_JR_NULLABLE | RF_JR_NONEMPTY, &d->out_dir);
    if (!st && (o = json_object_get(root, "slo"))) {
        static const char *const k[] = {"ttft_ms", "tpot_ms", "e2e_ms", "attainment", NULL};
        st = rf_jr_keys(&c, o, "slo", k);
        if (!st) st = rf_jr_num(&c, o, "slo", "ttft_ms", 0, 0, 1e9, &d->slo_ttft_ms);
        if (!st) st = rf_jr_num(&c, o, "slo", "tpot_ms", 0, 0, 1e9, &d->slo_tpot_ms);
        if (!st) st = rf_jr_num(&c, o, "slo", "e2e_ms", 0, 0, 1e9, &d->slo_e2e_ms);
        if (!st) st = rf_jr_num(&c, o, "slo", "attainment", 0, 0, 1, &d->slo_attainment);
        if (st) return st;
    }
    if (!st && (o = json_object_get(root, "precision"))) st = parse_precision(&c, o, d);
    json_t *mb = json_object_get(root, "membw");
    if (!st && mb) {
        if (!json_is_boolean(mb)) return bad(&c, "membw", "expected true or false");
        d->membw = json_is_true(mb);
    }
    return st;
}

static rf_status flag_int(const char *flag, const char *v, long lo, long hi, int *out,
                          rf_error *err) {
    char *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi)
        return rf_error_set(err, RF_ERR_ARG, "%s expects an integer in [%ld, %ld], got '%s'", flag,
                            lo, hi, v ? v : "");
    *out = (int)x;
    return RF_OK;
}

/* --slo ttft:MS,tpot:MS,e2e:MS (vLLM's --goodput form). */
static rf_status parse_slo_flag(const char *v, rf_run_desc *d, rf_error *err) {
    const char *p = v;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char part[64];
        if (n >= sizeof part) return rf_error_set(err, RF_ERR_ARG, "--slo: '%s' is too long", v);
        memcpy(part, p, n);
        part[n] = 0;
        char *colon = strchr(part, ':'), *num_end = NULL;
        double x = colon ? strtod(colon + 1, &num_end) : 0;
        if (!colon || num_end == colon + 1 || *num_end || !(x > 0 && x <= 1e9))
            return rf_error_set(err, RF_ERR_ARG,
                                "--slo expects NAME:MS,... (ttft, tpot, e2e), got '%s'", v);
        *colon = 0;
        if (!strcmp(part, "ttft"))
            d->slo_ttft_ms = x;
        else if (!strcmp(part, "tpot"))
            d->slo_tpot_ms = x;
        else if (!strcmp(part, "e2e") || !strcmp(part, "e2el"))
            d->slo_e2e_ms = x;
        else
            return rf_error_set(err, RF_ERR_ARG, "--slo: unknown metric '%s' (ttft, tpot, e2e)",
                                part);
        if (!end) break;
        p = end + 1;
    }
    return RF_OK;
}

/* The flags that describe a run: none of them may be given with --resume. */
static bool resume_compatible(const char *flag) {
    return !strcmp(flag, "--resume") || !strcmp(flag, "--no-progress");
}

/* Reads one run file (or a run directory's saved run.json) into rf. */
static rf_status load_file(const char *path, rf_runfile *rf, rf_error *err) {
    char *text = NULL;
    size_t len = 0;
    rf_error ferr = {0};
    if (rf_read_file(path, RF_RUNFILE_MAX, &text, &len, &ferr))
        return rf_error_set(err, RF_ERR_ARG, "%s", ferr.msg);
    rf_status st = rf_runfile_parse_json(path, text, rf, err);
    free(text);
    return st;
}

/* A copy of a comma list from argv that the caller may cut (strtok), owned by rf. */
static char *own_copy(rf_runfile *rf, const char *v) {
    json_t *s = json_string_nocheck(v);
    if (!s) return NULL;
    if (!rf->roots) rf->roots = json_array();
    if (!rf->roots || json_array_append_new(rf->roots, s)) return NULL;
    return (char *)json_string_value(s);
}

static rf_status parse_args(int argc, char **argv, rf_runfile *rf, int *want_help, rf_error *err);

/* The precision study's backends, appended to the run: the as-shipped file (A) and one per
 * variant, unless the description has them already (a saved run.json). Built variants live in
 * DIR/<model file's base name>-<variant>.gguf; the widened one runs the as-shipped file. */
static rf_status expand_precision(rf_runfile *rf, rf_error *err) {
    rf_run_desc *d = &rf->desc;
    if (!d->precision) return RF_OK;
    for (int i = 0; i < d->n_backends; i++)
        if (d->backends[i].variant) return RF_OK;
    char src[RF_BENCH_PATH_MAX];
    rf_status st = rf_model_resolve(d->precision_model ? d->precision_model : "qwen2.5-coder-0.5b",
                                    src, sizeof src, err);
    if (st) {
        rf_error_prefix(err, "precision.model");
        return st;
    }
    const char *dir = d->precision_dir ? d->precision_dir : "runs/variants";
    const char *slash = strrchr(src, '/');
    const char *base = slash ? slash + 1 : src;
    size_t blen = strlen(base);
    if (blen > 5 && !strcmp(base + blen - 5, ".gguf")) blen -= 5;
    unsigned want = d->precision_variants ? d->precision_variants : ~0u;
    for (int v = 0; v < RF_VARIANT_COUNT; v++) {
        if (v != RF_VARIANT_SHIPPED && !(want >> v & 1u)) continue;
        if (d->n_backends >= RF_BENCH_MAX_BACKENDS)
            return rf_error_set(err, RF_ERR_ARG, "precision: more than %d backends in the run",
                                RF_BENCH_MAX_BACKENDS);
        char name[64], uri[RF_BENCH_PATH_MAX + 16];
        snprintf(name, sizeof name, "prec/%s", rf_variant_name(v));
        int n = v == RF_VARIANT_SHIPPED || v == RF_VARIANT_WIDEN
                    ? snprintf(uri, sizeof uri, "local:%s", src)
                    : snprintf(uri, sizeof uri, "local:%s/%.*s-%s.gguf", dir, (int)blen, base,
                               rf_variant_name(v));
        if (n < 0 || (size_t)n >= sizeof uri)
            return rf_error_set(err, RF_ERR_ARG, "precision: the variant path is too long");
        rf_bench_backend *bb = &d->backends[d->n_backends];
        memset(bb, 0, sizeof *bb);
        bb->cfg.name = own_copy(rf, name);
        bb->cfg.uri = own_copy(rf, uri);
        if (!bb->cfg.name || !bb->cfg.uri) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        bb->variant = rf_variant_name(v);
        bb->cfg.widen = v == RF_VARIANT_WIDEN;
        d->n_backends++;
    }
    return RF_OK;
}

rf_status rf_runfile_parse_args(int argc, char **argv, rf_runfile *rf, int *want_help,
                                rf_error *err) {
    rf_status st = parse_args(argc, argv, rf, want_help, err);
    if (st) rf_runfile_free(rf); /* nothing of a refused description is kept */
    return st;
}

static rf_status parse_args(int argc, char **argv, rf_runfile *rf, int *want_help, rf_error *err) {
    memset(rf, 0, sizeof *rf);
    rf_run_desc *d = &rf->desc;
    rf_run_desc_defaults(d);
    *want_help = 0;
    int threads = -1;
    int64_t reply_cap = -1;
    const char *model = NULL, *key_env = NULL, *resume = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            *want_help = 1;
            return RF_OK;
        }
        if (!strcmp(argv[i], "--resume")) {
            if (i + 1 >= argc) return rf_error_set(err, RF_ERR_ARG, "--resume needs a directory");
            resume = argv[i + 1];
        }
    }
    if (resume) { /* the saved description is the run: nothing else may change it */
        for (int i = 1; i < argc; i++) {
            const char *a = argv[i];
            if (a[0] == '-' && !resume_compatible(a))
                return rf_error_set(err, RF_ERR_ARG,
                                    "--resume continues the run as its run.json describes it; "
                                    "'%s' cannot be given with it",
                                    a);
            if (!strcmp(a, "--resume")) i++;
        }
        char *path = NULL;
        if (asprintf(&path, "%s/run.json", resume) < 0)
            return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        rf_status st = load_file(path, rf, err);
        free(path);
        if (st) {
            rf_error_prefix(err, "--resume %s", resume);
            return st;
        }
        d->out_dir = resume;
        d->resume = true;
        for (int i = 1; i < argc; i++)
            if (!strcmp(argv[i], "--no-progress")) d->progress = false;
    }
    /* no run file and no backend: the default run (data/runs/default.json: the embedded models
     * side by side), which the flags then adjust */
    bool described = resume != NULL;
    for (int i = 1; i < argc; i++)
        described |= !strcmp(argv[i], "--run") || !strcmp(argv[i], "--backend");
    if (!described) {
        char path[RF_BENCH_PATH_MAX];
        const char *def = rf_bench_data_path(NULL, "runs/default.json", path, sizeof path, err);
        if (!def) return err->code;
        if (access(def, R_OK) == 0) {
            rf_status st = load_file(def, rf, err);
            if (st) return st;
        }
    }
    /* the run files first, in order, so flags override them */
    for (int i = 1; i < argc && !resume; i++)
        if (!strcmp(argv[i], "--run")) {
            if (i + 1 >= argc) return rf_error_set(err, RF_ERR_ARG, "--run needs a file");
            rf_status st = load_file(argv[i + 1], rf, err);
            if (st) return st;
            i++;
        }
    for (int i = 1; i < argc && !resume; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        rf_status st = RF_OK;
        if (!strcmp(a, "--no-progress")) {
            d->progress = false;
            continue;
        } else if (!strcmp(a, "--no-membw")) {
            d->membw = false;
            continue;
        } else if (!strcmp(a, "--aba-load")) {
            d->aba_load = true;
            continue;
        }
        if (!v)
            return rf_error_set(err, RF_ERR_ARG,
                                "unknown option or missing value: '%s' "
                                "(roofline bench --help)",
                                a);
        i++;
        if (!strcmp(a, "--run"))
            continue;
        else if (!strcmp(a, "--backend")) {
            if (!rf->flag_backends) d->n_backends = 0; /* flags replace the run files' list */
            rf->flag_backends = true;
            if (d->n_backends >= RF_BENCH_MAX_BACKENDS)
                return rf_error_set(err, RF_ERR_ARG, "--backend: at most 16 backends");
            char *nv = own_copy(rf, v);
            if (!nv) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            rf_bench_backend *bb = &d->backends[d->n_backends++];
            memset(bb, 0, sizeof *bb);
            char *eq = strchr(nv, '=');
            if (eq) {
                *eq = 0;
                bb->cfg.name = nv;
                bb->cfg.uri = eq + 1;
            } else {
                bb->cfg.name = bb->cfg.uri = nv;
            }
            if (!*bb->cfg.uri || !*bb->cfg.name)
                return rf_error_set(err, RF_ERR_ARG, "--backend expects NAME=URI, got '%s'%s", v,
                                    !*bb->cfg.name ? " (no name before '=')"
                                                   : " (no URI after '=')");
        } else if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--api-key-env"))
            key_env = v;
        else if (!strcmp(a, "--suites")) {
            d->speed = d->load = d->accuracy = d->agent = d->probe = d->precision = false;
            d->suites_set = true;
            char *buf = own_copy(rf, v);
            if (!buf) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            ctx c = rf_jr_make("--suites", RF_ERR_ARG, err);
            c.style = RF_JR_STYLE_PATH;
            int n = 0;
            for (char *tok = strtok(buf, ","); tok && !st; tok = strtok(NULL, ","), n++)
                st = set_suite(&c, d, "value", tok);
            if (!st && !n) st = rf_error_set(err, RF_ERR_ARG, "--suites: empty list");
        } else if (!strcmp(a, "--speed-runs"))
            st = flag_int(a, v, 1, 1000, &d->speed_runs, err);
        else if (!strcmp(a, "--speed-tokens"))
            st = flag_int(a, v, 1, 1 << 20, &d->speed_tokens, err);
        else if (!strcmp(a, "--levels")) {
            d->n_levels = 0;
            char *buf = own_copy(rf, v);
            if (!buf) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            for (char *tok = strtok(buf, ","); tok && !st; tok = strtok(NULL, ",")) {
                if (d->n_levels >= RF_BENCH_MAX_LEVELS)
                    return rf_error_set(err, RF_ERR_ARG, "--levels: at most 16 levels");
                st = flag_int(a, tok, 1, 4096, &d->levels[d->n_levels++], err);
            }
            if (!st && !d->n_levels) st = rf_error_set(err, RF_ERR_ARG, "--levels: empty list");
        } else if (!strcmp(a, "--requests"))
            st = flag_int(a, v, 1, 1 << 20, &d->load_requests, err);
        else if (!strcmp(a, "--load-tokens"))
            st = flag_int(a, v, 1, 1 << 20, &d->load_tokens, err);
        else if (!strcmp(a, "--warmup"))
            st = flag_int(a, v, 0, 1 << 20, &d->load_warmup, err);
        else if (!strcmp(a, "--rate")) {
            char *end = NULL;
            d->rate = strtod(v, &end);
            if (!*v || *end || !(d->rate >= RF_BENCH_MIN_RATE && d->rate <= RF_BENCH_MAX_RATE))
                st = rf_error_set(err, RF_ERR_ARG,
                                  "--rate expects requests per second in [%g, %g], got '%s'",
                                  RF_BENCH_MIN_RATE, RF_BENCH_MAX_RATE, v);
        } else if (!strcmp(a, "--rate-requests"))
            st = flag_int(a, v, 1, 1 << 20, &d->rate_requests, err);
        else if (!strcmp(a, "--max-concurrency"))
            st = flag_int(a, v, 0, 1 << 20, &d->rate_max_concurrency, err);
        else if (!strcmp(a, "--questions"))
            d->questions = v;
        else if (!strcmp(a, "--accuracy-tokens"))
            st = flag_int(a, v, 1, 1 << 20, &d->accuracy_tokens, err);
        else if (!strcmp(a, "--accuracy-concurrency"))
            st = flag_int(a, v, 1, 4096, &d->accuracy_concurrency, err);
        else if (!strcmp(a, "--agent-task"))
            d->agent_task = v;
        else if (!strcmp(a, "--agent-runs"))
            st = flag_int(a, v, 1, 1000, &d->agent_runs, err);
        else if (!strcmp(a, "--probe"))
            d->probe_question = v;
        else if (!strcmp(a, "--aba")) {
            char *buf = own_copy(rf, v);
            if (!buf) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            char *comma = strchr(buf, ',');
            if (!comma || comma == buf || !comma[1])
                return rf_error_set(err, RF_ERR_ARG,
                                    "--aba expects A,B (two backend names), got '%s'", v);
            *comma = 0;
            d->aba_a = buf;
            d->aba_b = comma + 1;
            d->aba = d->aba_speed = true;
        } else if (!strcmp(a, "--threads"))
            st = flag_int(a, v, 0, 1024, &threads, err);
        else if (!strcmp(a, "--max-reply-bytes")) {
            char *end = NULL;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (!*v || *end || errno || x < 1 || x > ((long long)1 << 40))
                st = rf_error_set(err, RF_ERR_ARG,
                                  "--max-reply-bytes expects bytes in [1, 2^40], got '%s'", v);
            reply_cap = x;
        } else if (!strcmp(a, "--out"))
            d->out_dir = v;
        else if (!strcmp(a, "--slo"))
            st = parse_slo_flag(v, d, err);
        else
            return rf_error_set(err, RF_ERR_ARG, "unknown option '%s' (roofline bench --help)", a);
        if (st) return st;
    }
    if (!d->n_backends && !d->precision) { /* the default: the embedded model in-process */
        d->backends[0].cfg.name = "local";
        d->backends[0].cfg.uri = "local";
        d->n_backends = 1;
    }
    rf_status pst = expand_precision(rf, err);
    if (pst) return pst;
    for (int i = 0; i < d->n_backends; i++) {
        rf_bench_backend *bb = &d->backends[i];
        if (model && !bb->cfg.model) bb->cfg.model = model;
        if (key_env && !bb->cfg.api_key_env) bb->cfg.api_key_env = key_env;
        /* the default variable only when set: a keyless local server needs no key; a
         * variable named explicitly (flag or run file) must be set */
        if (!bb->cfg.api_key_env && getenv("OPENAI_API_KEY"))
            bb->cfg.api_key_env = "OPENAI_API_KEY";
        if (threads >= 0) bb->cfg.threads = threads;
        if (reply_cap > 0) bb->cfg.max_reply_bytes = reply_cap;
    }
    if (!d->suites_set && !d->aba) d->speed = d->load = d->accuracy = d->agent = d->probe = true;
    return rf_run_desc_check(d, err);
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

static void set_str_opt(json_t *o, const char *k, const char *v) {
    if (v) json_object_set_new(o, k, json_string_nocheck(v));
}

json_t *rf_run_desc_to_json(const rf_run_desc *d) {
    json_t *o = json_object();
    json_t *bs = json_array();
    for (int i = 0; i < d->n_backends; i++) {
        const rf_bench_backend *bb = &d->backends[i];
        const rf_backend_cfg *c = &bb->cfg;
        json_t *b = json_object();
        set_str_opt(b, "name", c->name);
        set_str_opt(b, "uri", c->uri);
        set_str_opt(b, "model", c->model);
        set_str_opt(b, "api_key_env", c->api_key_env);
        json_object_set_new(b, "threads", json_integer(c->threads));
        json_object_set_new(b, "max_seqs", json_integer(c->max_seqs));
        json_object_set_new(b, "n_ctx", json_integer(c->n_ctx));
        json_object_set_new(b, "timeout_s", json_real(c->timeout_s));
        json_object_set_new(b, "stall_s", json_real(c->stall_s));
        json_object_set_new(b, "retry_max", json_integer(c->retry_max));
        json_object_set_new(b, "retry_base_s", json_real(c->retry_base_s));
        json_object_set_new(b, "retry_cap_s", json_real(c->retry_cap_s));
        json_object_set_new(
            b, "max_reply_bytes",
            json_integer(c->max_reply_bytes ? c->max_reply_bytes : RF_BK_DEFAULT_REPLY_CAP));
        if (c->extra_body) {
            json_t *x = json_loads(c->extra_body, 0, NULL);
            if (x) json_object_set_new(b, "extra_body", x);
        }
        json_t *pr = json_object();
        json_object_set_new(pr, "usd_per_hour", json_real(bb->usd_per_hour));
        json_object_set_new(pr, "usd_per_m_input", json_real(bb->usd_per_m_input));
        json_object_set_new(pr, "usd_per_m_output", json_real(bb->usd_per_m_output));
        set_str_opt(pr, "instance", bb->price_instance);
        json_object_set_new(b, "price", pr);
        if (bb->hardware || bb->mem_bw_gbs > 0 || bb->mem_gb > 0) {
            json_t *hw = json_object();
            set_str_opt(hw, "name", bb->hardware);
            json_object_set_new(hw, "mem_bw_gbs", json_real(bb->mem_bw_gbs));
            json_object_set_new(hw, "mem_gb", json_real(bb->mem_gb));
            json_object_set_new(b, "hardware", hw);
        }
        set_str_opt(b, "model_file", bb->model_file);
        if (bb->suites) {
            static const char *const names[RF_SUITE_COUNT] = {"speed", "load", "accuracy", "agent",
                                                              "probe"};
            json_t *ss = json_array();
            for (int k = 0; k < RF_SUITE_COUNT; k++)
                if (bb->suites >> k & 1u) json_array_append_new(ss, json_string(names[k]));
            json_object_set_new(b, "suites", ss);
        }
        if (bb->bytes_per_token > 0)
            json_object_set_new(b, "bytes_per_token", json_real(bb->bytes_per_token));
        if (c->widen) json_object_set_new(b, "widen", json_true());
        set_str_opt(b, "variant", bb->variant);
        if (bb->no_stream) json_object_set_new(b, "stream", json_false());
        json_array_append_new(bs, b);
    }
    json_object_set_new(o, "backends", bs);
    json_t *su = json_array();
    const struct {
        bool on;
        const char *name;
    } suites[] = {{d->speed, "speed"}, {d->load, "load"},   {d->accuracy, "accuracy"},
                  {d->agent, "agent"}, {d->probe, "probe"}, {d->precision, "precision"}};
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        if (suites[i].on) json_array_append_new(su, json_string(suites[i].name));
    if (json_array_size(su))
        json_object_set_new(o, "suites", su);
    else
        json_decref(su); /* an A/B/A-only run: the key is left out */
    json_t *sp = json_object();
    json_object_set_new(sp, "runs", json_integer(d->speed_runs));
    json_object_set_new(sp, "max_tokens", json_integer(d->speed_tokens));
    set_str_opt(sp, "prompt", d->speed_prompt);
    json_object_set_new(o, "speed", sp);
    json_t *ld = json_object(), *lv = json_array();
    for (int i = 0; i < d->n_levels; i++) json_array_append_new(lv, json_integer(d->levels[i]));
    json_object_set_new(ld, "levels", lv);
    json_object_set_new(ld, "requests", json_integer(d->load_requests));
    json_object_set_new(ld, "max_tokens", json_integer(d->load_tokens));
    json_object_set_new(ld, "warmup", json_integer(d->load_warmup));
    json_object_set_new(ld, "rate", json_real(d->rate));
    json_object_set_new(ld, "rate_requests", json_integer(d->rate_requests));
    json_object_set_new(ld, "max_concurrency", json_integer(d->rate_max_concurrency));
    json_object_set_new(ld, "seed", json_integer((json_int_t)d->rate_seed));
    json_object_set_new(o, "load", ld);
    char buf[RF_BENCH_PATH_MAX];
    json_t *ac = json_object();
    set_str_opt(ac, "questions",
                rf_bench_data_path(d->questions, "accuracy/seed40.jsonl", buf, sizeof buf, NULL));
    json_object_set_new(ac, "max_tokens", json_integer(d->accuracy_tokens));
    json_object_set_new(ac, "concurrency", json_integer(d->accuracy_concurrency));
    json_object_set_new(o, "accuracy", ac);
    json_t *ag = json_object();
    set_str_opt(ag, "task",
                rf_bench_data_path(d->agent_task, "agent/count_ids.json", buf, sizeof buf, NULL));
    if (d->agent_runs) json_object_set_new(ag, "runs", json_integer(d->agent_runs));
    json_object_set_new(o, "agent", ag);
    json_t *pb = json_object();
    set_str_opt(pb, "question", d->probe_question);
    json_object_set_new(o, "probe", pb);
    if (d->aba) {
        json_t *ab = json_object(), *as = json_array();
        set_str_opt(ab, "a", d->aba_a);
        set_str_opt(ab, "b", d->aba_b);
        if (d->aba_speed) json_array_append_new(as, json_string("speed"));
        if (d->aba_load) json_array_append_new(as, json_string("load"));
        json_object_set_new(ab, "suites", as);
        json_object_set_new(o, "aba", ab);
    }
    if (d->precision) {
        static const char *const sn[RF_SUITE_COUNT] = {"speed", "load", "accuracy", "agent",
                                                       "probe"};
        json_t *pr = json_object(), *vs = json_array(), *ps = json_array();
        set_str_opt(pr, "model", d->precision_model);
        set_str_opt(pr, "dir", d->precision_dir);
        for (int v = RF_VARIANT_SHIPPED + 1; v < RF_VARIANT_COUNT; v++)
            if (!d->precision_variants || d->precision_variants >> v & 1u)
                json_array_append_new(vs, json_string(rf_variant_name(v)));
        for (int k = 0; k < RF_SUITE_PROBE; k++)
            if (!d->precision_suites || d->precision_suites >> k & 1u)
                json_array_append_new(ps, json_string(sn[k]));
        json_object_set_new(pr, "variants", vs);
        json_object_set_new(pr, "suites", ps);
        json_object_set_new(o, "precision", pr);
    }
    set_str_opt(o, "out", d->out_dir);
    json_object_set_new(o, "membw", json_boolean(d->membw));
    if (d->slo_ttft_ms > 0 || d->slo_tpot_ms > 0 || d->slo_e2e_ms > 0) {
        json_t *slo = json_object();
        if (d->slo_ttft_ms > 0) json_object_set_new(slo, "ttft_ms", json_real(d->slo_ttft_ms));
        if (d->slo_tpot_ms > 0) json_object_set_new(slo, "tpot_ms", json_real(d->slo_tpot_ms));
        if (d->slo_e2e_ms > 0) json_object_set_new(slo, "e2e_ms", json_real(d->slo_e2e_ms));
        if (d->slo_attainment > 0)
            json_object_set_new(slo, "attainment", json_real(d->slo_attainment));
        json_object_set_new(o, "slo", slo);
    }
    return o;
}

void rf_runfile_free(rf_runfile *rf) {
    json_decref(rf->roots);
    rf->roots = NULL;
}
