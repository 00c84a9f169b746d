/* runfile.c: strict JSON run files and the bench's flags. */
#include "bench/runfile.h"
#include "util/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void rf_runfile_help(FILE *f) {
    fputs(
        "usage: roofline bench [--run FILE] [options]\n"
        "\n"
        "Sends the same work to one or more backends and writes a scoreboard. With no arguments:\n"
        "the embedded model in-process (backend \"local\"), suites speed, load (1, 4, 16),\n"
        "accuracy, agent and probe. Results go to runs/<UTC time>/: records.jsonl (one line per\n"
        "request, appended and flushed as each completes), summary.json and scoreboard.md. Ctrl-C\n"
        "stops the run and writes the summary of what finished.\n"
        "\n"
        "Options (they override the run file's values):\n"
        "  --run FILE            a JSON run description (schema below)\n"
        "  --backend NAME=URI    add a backend (repeatable); URI: local, local:MODEL.gguf,\n"
        "                        openai:http://HOST:PORT/v1 (llama-server, vLLM, roofline serve, "
        "...)\n"
        "  --model NAME          model name sent to openai backends (default: the server's first)\n"
        "  --api-key-env VAR     environment variable holding the API key (default "
        "OPENAI_API_KEY, when set)\n"
        "  --suites LIST         comma list of speed,load,accuracy,agent,probe\n"
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
        "  --out DIR             run directory (runs/<UTC time>)\n"
        "  --no-progress         plain progress lines even on a terminal\n"
        "\n"
        "Run file (JSON; unknown keys are errors):\n"
        "{\n"
        "  \"backends\": [{\"name\": \"g6\", \"uri\": \"openai:http://10.0.0.5:8000/v1\",\n"
        "                \"model\": null, \"api_key_env\": \"OPENAI_API_KEY\",\n"
        "                \"threads\": 0, \"max_seqs\": 16, \"n_ctx\": 0,          (local only)\n"
        "                \"timeout_s\": 600, \"stall_s\": 60,\n"
        "                \"extra_body\": {\"cache_prompt\": false},   (merged into HTTP bodies)\n"
        "                \"price\": {\"usd_per_hour\": 0.8048, \"usd_per_m_input\": 0,\n"
        "                          \"usd_per_m_output\": 0},\n"
        "                \"hardware\": {\"name\": \"NVIDIA L4\", \"mem_bw_gbs\": 300}}],\n"
        "  \"suites\": [\"speed\", \"load\", \"accuracy\", \"agent\", \"probe\"],\n"
        "  \"speed\": {\"runs\": 3, \"max_tokens\": 512, \"prompt\": \"...\"},\n"
        "  \"load\": {\"levels\": [1, 4, 16], \"requests\": 0, \"max_tokens\": 128, \"warmup\": "
        "1,\n"
        "           \"rate\": 0, \"rate_requests\": 32, \"max_concurrency\": 0, \"seed\": 1},\n"
        "  \"accuracy\": {\"questions\": \"data/accuracy/seed40.jsonl\", \"max_tokens\": 48,\n"
        "               \"concurrency\": 8},\n"
        "  \"agent\": {\"task\": \"data/agent/count_ids.json\", \"runs\": 3},\n"
        "  \"probe\": {\"question\": \"What is the capital of France? Answer with one word.\"},\n"
        "  \"aba\": {\"a\": \"NAME\", \"b\": \"NAME\", \"suites\": [\"speed\"]},\n"
        "  \"out\": \"runs/my-run\"\n"
        "}\n",
        f);
}

/* ---- JSON ---- */

typedef struct ctx {
    const char *name;
    rf_error *err;
} ctx;

static rf_status bad(ctx *c, const char *path, const char *what) {
    return rf_error_set(c->err, RF_ERR_ARG, "%s: %s: %s", c->name, path, what);
}

/* Every key of o must be in allowed (NULL-terminated). */
static rf_status only_keys(ctx *c, const char *path, json_t *o, const char *const *allowed) {
    if (!json_is_object(o)) return bad(c, path, "expected an object");
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        int ok = 0;
        for (int i = 0; allowed[i]; i++) ok |= !strcmp(k, allowed[i]);
        if (!ok) {
            char p[256];
            snprintf(p, sizeof p, "%s.%s", path, k);
            return bad(c, p, "unknown key");
        }
    }
    return RF_OK;
}

static rf_status get_int(ctx *c, const char *path, json_t *o, const char *key, long lo, long hi,
                         int *out) {
    json_t *v = json_object_get(o, key);
    if (!v) return RF_OK;
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!json_is_integer(v)) return bad(c, p, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        char m[96];
        snprintf(m, sizeof m, "%lld is not in [%ld, %ld]", (long long)x, lo, hi);
        return bad(c, p, m);
    }
    *out = (int)x;
    return RF_OK;
}

static rf_status get_num(ctx *c, const char *path, json_t *o, const char *key, double lo, double hi,
                         double *out) {
    json_t *v = json_object_get(o, key);
    if (!v) return RF_OK;
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!json_is_number(v)) return bad(c, p, "expected a number");
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi)) {
        char m[96];
        snprintf(m, sizeof m, "%g is not in [%g, %g]", x, lo, hi);
        return bad(c, p, m);
    }
    *out = x;
    return RF_OK;
}

static rf_status get_str(ctx *c, const char *path, json_t *o, const char *key, const char **out) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return RF_OK;
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!json_is_string(v) || !*json_string_value(v))
        return bad(c, p, "expected a non-empty string");
    *out = json_string_value(v);
    return RF_OK;
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
    else {
        char m[160];
        snprintf(m, sizeof m, "unknown suite '%.40s' (speed, load, accuracy, agent, probe)", s);
        return bad(c, path, m);
    }
    return RF_OK;
}

static rf_status parse_backend(ctx *c, json_t *o, int i, rf_bench_backend *bb) {
    char path[64];
    snprintf(path, sizeof path, "backends[%d]", i);
    static const char *const keys[] = {
        "name",      "uri",     "model", "api_key_env", "threads",    "max_seqs", "n_ctx",
        "timeout_s", "stall_s", "price", "hardware",    "extra_body", NULL};
    rf_status st = only_keys(c, path, o, keys);
    if (!st) st = get_str(c, path, o, "name", &bb->cfg.name);
    if (!st) st = get_str(c, path, o, "uri", &bb->cfg.uri);
    if (!st) st = get_str(c, path, o, "model", &bb->cfg.model);
    if (!st) st = get_str(c, path, o, "api_key_env", &bb->cfg.api_key_env);
    if (!st) st = get_int(c, path, o, "threads", 0, 1024, &bb->cfg.threads);
    if (!st) st = get_int(c, path, o, "max_seqs", 0, 256, &bb->cfg.max_seqs);
    if (!st) st = get_int(c, path, o, "n_ctx", 0, 1 << 24, &bb->cfg.n_ctx);
    if (!st) st = get_num(c, path, o, "timeout_s", 0, 86400, &bb->cfg.timeout_s);
    if (!st) st = get_num(c, path, o, "stall_s", 0, 86400, &bb->cfg.stall_s);
    if (st) return st;
    json_t *xb = json_object_get(o, "extra_body");
    if (xb && !json_is_null(xb)) {
        char p[96];
        snprintf(p, sizeof p, "%s.extra_body", path);
        if (!json_is_object(xb)) return bad(c, p, "expected a JSON object");
        /* kept as text, owned by the run file's tree like every other string of the desc */
        char *txt = json_dumps(xb, JSON_COMPACT);
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
                                         NULL};
        st = only_keys(c, p, price, pk);
        if (!st) st = get_num(c, p, price, "usd_per_hour", 0, 1e6, &bb->usd_per_hour);
        if (!st) st = get_num(c, p, price, "usd_per_m_input", 0, 1e6, &bb->usd_per_m_input);
        if (!st) st = get_num(c, p, price, "usd_per_m_output", 0, 1e6, &bb->usd_per_m_output);
        if (st) return st;
    }
    json_t *hw = json_object_get(o, "hardware");
    if (hw) {
        char p[96];
        snprintf(p, sizeof p, "%s.hardware", path);
        static const char *const hk[] = {"name", "mem_bw_gbs", NULL};
        st = only_keys(c, p, hw, hk);
        if (!st) st = get_str(c, p, hw, "name", &bb->hardware);
        if (!st) st = get_num(c, p, hw, "mem_bw_gbs", 0, 1e7, &bb->mem_bw_gbs);
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

rf_status rf_runfile_parse_json(const char *name, const char *text, rf_runfile *rf, rf_error *err) {
    ctx c = {name, err};
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rf_error_set(err, RF_ERR_ARG, "%s: line %d column %d: %s", name, je.line, je.column,
                            je.text);
    json_decref(rf->root);
    rf->root = root;
    rf_run_desc *d = &rf->desc;
    static const char *const keys[] = {"backends", "suites", "speed", "load", "accuracy",
                                       "agent",    "probe",  "aba",   "out",  NULL};
    rf_status st = only_keys(&c, "run", root, keys);
    if (st) return st;
    json_t *bs = json_object_get(root, "backends");
    if (bs) {
        if (!json_is_array(bs) || json_array_size(bs) > RF_BENCH_MAX_BACKENDS)
            return bad(&c, "backends", "expected an array of at most 16 backends");
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
        d->speed = d->load = d->accuracy = d->agent = d->probe = false;
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
        st = only_keys(&c, "speed", o, k);
        if (!st) st = get_int(&c, "speed", o, "runs", 1, 1000, &d->speed_runs);
        if (!st) st = get_int(&c, "speed", o, "max_tokens", 1, 1 << 20, &d->speed_tokens);
        if (!st) st = get_str(&c, "speed", o, "prompt", &d->speed_prompt);
        if (st) return st;
    }
    if ((o = json_object_get(root, "load"))) {
        static const char *const k[] = {"levels",          "requests", "max_tokens",
                                        "warmup",          "rate",     "rate_requests",
                                        "max_concurrency", "seed",     NULL};
        st = only_keys(&c, "load", o, k);
        if (!st && json_object_get(o, "levels"))
            st = parse_levels(&c, json_object_get(o, "levels"), d);
        if (!st) st = get_int(&c, "load", o, "requests", 0, 1 << 20, &d->load_requests);
        if (!st) st = get_int(&c, "load", o, "max_tokens", 1, 1 << 20, &d->load_tokens);
        if (!st) st = get_int(&c, "load", o, "warmup", 0, 1 << 20, &d->load_warmup);
        if (!st) st = get_num(&c, "load", o, "rate", 0, 1e6, &d->rate);
        if (!st) st = get_int(&c, "load", o, "rate_requests", 1, 1 << 20, &d->rate_requests);
        if (!st)
            st = get_int(&c, "load", o, "max_concurrency", 0, 1 << 20, &d->rate_max_concurrency);
        int seed = (int)d->rate_seed;
        if (!st) st = get_int(&c, "load", o, "seed", 0, 1 << 30, &seed);
        d->rate_seed = (uint64_t)seed;
        if (st) return st;
    }
    if ((o = json_object_get(root, "accuracy"))) {
        static const char *const k[] = {"questions", "max_tokens", "concurrency", NULL};
        st = only_keys(&c, "accuracy", o, k);
        if (!st) st = get_str(&c, "accuracy", o, "questions", &d->questions);
        if (!st) st = get_int(&c, "accuracy", o, "max_tokens", 1, 1 << 20, &d->accuracy_tokens);
        if (!st) st = get_int(&c, "accuracy", o, "concurrency", 1, 4096, &d->accuracy_concurrency);
        if (st) return st;
    }
    if ((o = json_object_get(root, "agent"))) {
        static const char *const k[] = {"task", "runs", NULL};
        st = only_keys(&c, "agent", o, k);
        if (!st) st = get_str(&c, "agent", o, "task", &d->agent_task);
        if (!st) st = get_int(&c, "agent", o, "runs", 1, 1000, &d->agent_runs);
        if (st) return st;
    }
    if ((o = json_object_get(root, "probe"))) {
        static const char *const k[] = {"question", NULL};
        st = only_keys(&c, "probe", o, k);
        if (!st) st = get_str(&c, "probe", o, "question", &d->probe_question);
        if (st) return st;
    }
    if ((o = json_object_get(root, "aba"))) {
        static const char *const k[] = {"a", "b", "suites", NULL};
        st = only_keys(&c, "aba", o, k);
        if (!st) st = get_str(&c, "aba", o, "a", &d->aba_a);
        if (!st) st = get_str(&c, "aba", o, "b", &d->aba_b);
        if (st) return st;
        if (!d->aba_a || !d->aba_b) return bad(&c, "aba", "needs \"a\" and \"b\" backend names");
        d->aba = true;
        d->aba_speed = true;
        json_t *s = json_object_get(o, "suites");
        if (s) {
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
    st = get_str(&c, "run", root, "out", &d->out_dir);
    return st;
}

static rf_status flag_int(const char *flag, const char *v, long lo, long hi, int *out,
                          rf_error *err) {
    char *end = NULL;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < lo || x > hi)
        return rf_error_set(err, RF_ERR_ARG, "%s expects an integer in [%ld, %ld], got '%s'", flag,
                            lo, hi, v ? v : "");
    *out = (int)x;
    return RF_OK;
}

rf_status rf_runfile_parse_args(int argc, char **argv, rf_runfile *rf, int *want_help,
                                rf_error *err) {
    memset(rf, 0, sizeof *rf);
    rf_run_desc *d = &rf->desc;
    rf_run_desc_defaults(d);
    *want_help = 0;
    int suites_given = 0, threads = -1;
    const char *model = NULL, *key_env = NULL;
    /* the run file first, so flags override it */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--run")) {
            if (i + 1 >= argc) return rf_error_set(err, RF_ERR_ARG, "--run needs a file");
            char *text = NULL;
            size_t len = 0;
            rf_status rst = rf_read_file(argv[i + 1], 16u << 20, &text, &len, err);
            if (rst) return rf_error_set(err, RF_ERR_ARG, "%s", err->msg);
            rf_status st = rf_runfile_parse_json(argv[i + 1], text, rf, err);
            free(text);
            if (st) return st;
            suites_given = d->speed || d->load || d->accuracy || d->agent || d->probe || d->aba;
        }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        rf_status st = RF_OK;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *want_help = 1;
            return RF_OK;
        } else if (!strcmp(a, "--no-progress")) {
            d->progress = false;
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
            const char *eq = strchr(v, '=');
            if (d->n_backends >= RF_BENCH_MAX_BACKENDS)
                return rf_error_set(err, RF_ERR_ARG, "--backend: at most 16 backends");
            rf_bench_backend *bb = &d->backends[d->n_backends++];
            memset(bb, 0, sizeof *bb);
            if (eq) {
                ((char *)eq)[0] = 0; /* argv is ours to cut */
                bb->cfg.name = v;
                bb->cfg.uri = eq + 1;
            } else {
                bb->cfg.name = bb->cfg.uri = v;
            }
            if (!*bb->cfg.uri || !*bb->cfg.name)
                return rf_error_set(err, RF_ERR_ARG, "--backend expects NAME=URI, got '%s'", v);
        } else if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--api-key-env"))
            key_env = v;
        else if (!strcmp(a, "--suites")) {
            d->speed = d->load = d->accuracy = d->agent = d->probe = false;
            suites_given = 1;
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            ctx c = {"--suites", err};
            for (char *tok = strtok(buf, ","); tok && !st; tok = strtok(NULL, ","))
                st = set_suite(&c, d, "value", tok);
        } else if (!strcmp(a, "--speed-runs"))
            st = flag_int(a, v, 1, 1000, &d->speed_runs, err);
        else if (!strcmp(a, "--speed-tokens"))
            st = flag_int(a, v, 1, 1 << 20, &d->speed_tokens, err);
        else if (!strcmp(a, "--levels")) {
            d->n_levels = 0;
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok && !st; tok = strtok(NULL, ",")) {
                if (d->n_levels >= RF_BENCH_MAX_LEVELS)
                    return rf_error_set(err, RF_ERR_ARG, "--levels: at most 16 levels");
                st = flag_int(a, tok, 1, 4096, &d->levels[d->n_levels++], err);
            }
            if (!d->n_levels) st = rf_error_set(err, RF_ERR_ARG, "--levels: empty list");
        } else if (!strcmp(a, "--requests"))
            st = flag_int(a, v, 1, 1 << 20, &d->load_requests, err);
        else if (!strcmp(a, "--load-tokens"))
            st = flag_int(a, v, 1, 1 << 20, &d->load_tokens, err);
        else if (!strcmp(a, "--warmup"))
            st = flag_int(a, v, 0, 1 << 20, &d->load_warmup, err);
        else if (!strcmp(a, "--rate")) {
            char *end = NULL;
            d->rate = strtod(v, &end);
            if (*end || !(d->rate > 0 && d->rate <= 1e6))
                st = rf_error_set(err, RF_ERR_ARG,
                                  "--rate expects requests per second > 0, got '%s'", v);
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
            char *comma = strchr(v, ',');
            if (!comma || comma == v || !comma[1])
                return rf_error_set(err, RF_ERR_ARG,
                                    "--aba expects A,B (two backend names), got '%s'", v);
            *comma = 0;
            d->aba_a = v;
            d->aba_b = comma + 1;
            d->aba = d->aba_speed = true;
        } else if (!strcmp(a, "--threads"))
            st = flag_int(a, v, 0, 1024, &threads, err);
        else if (!strcmp(a, "--out"))
            d->out_dir = v;
        else
            return rf_error_set(err, RF_ERR_ARG, "unknown option '%s' (roofline bench --help)", a);
        if (st) return st;
    }
    if (!d->n_backends) { /* the default: the embedded model in-process */
        d->backends[0].cfg.name = "local";
        d->backends[0].cfg.uri = "local";
        d->n_backends = 1;
    }
    for (int i = 0; i < d->n_backends; i++) {
        rf_bench_backend *bb = &d->backends[i];
        if (model && !bb->cfg.model) bb->cfg.model = model;
        if (key_env && !bb->cfg.api_key_env) bb->cfg.api_key_env = key_env;
        /* the default variable only when set: a keyless local server needs no key; a
         * variable named explicitly (flag or run file) must be set */
        if (!bb->cfg.api_key_env && getenv("OPENAI_API_KEY"))
            bb->cfg.api_key_env = "OPENAI_API_KEY";
        if (threads >= 0) bb->cfg.threads = threads;
        for (int j = 0; j < i; j++)
            if (!strcmp(d->backends[j].cfg.name, bb->cfg.name))
                return rf_error_set(err, RF_ERR_ARG, "two backends are named '%s'", bb->cfg.name);
    }
    if (!suites_given) d->speed = d->load = d->accuracy = d->agent = d->probe = true;
    return RF_OK;
}

void rf_runfile_free(rf_runfile *rf) {
    json_decref(rf->root);
    rf->root = NULL;
}
