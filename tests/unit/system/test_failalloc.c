/* test_failalloc.c: fault injection in the style of SQLite's malloc tests and curl's torture
 * mode: for N = 1, 2, ... until a run completes with no injected failure, the N-th allocation
 * fails (failalloc.h) on
 *   (a) the model-load path: rf_model_load of the tiny model fails with a message, or succeeds;
 *   (b) the engine's open/submit/step path: open fails cleanly, or every submit either refuses
 *       (no event) or is accepted, and every accepted request gets exactly one final event
 *       (nothing after it), a failure being RF_FINISH_ERROR with a message;
 *   (c) the bench's request path (rf_bench_open, run, finish over an openai: backend against the
 *       in-process fake server; counted on the bench's own thread only, so the fake server's
 *       threads are not failed): the run ends, every request has at most one record, all of
 *       them when the run reports success, and a failed run names its error;
 *   (d) the server's request path (rf_srv over an engine on the tiny model, one chat request
 *       through libcurl; counted on every thread but the client's, so libmicrohttpd and the
 *       engine are failed, libcurl is not): the answer is a 200 with a complete body, an OpenAI
 *       error object, or a dropped connection, and the next request is answered in full
 *       (checked after every spoiled request and every 16th N).
 * No crash; no leak: in the sanitizer build the hook forwards to AddressSanitizer's allocator
 * and LeakSanitizer checks the whole process at exit. The number of N tried per path is printed
 * (ctest --output-on-failure -V shows it). */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "fake/fake_server.h"
#include "bench/runfile.h"
#include "check.h"
#include "failalloc.h"
#include "http_client.h"
#include "model/model.h"
#include "roofline/engine.h"
#include "server/http.h"
#include "tiny_model.h"
#include "util/buf.h"

#define MAX_N 200000 /* a run that keeps failing past this is a bug in the loop itself */

/* ---- (a) model load ---- */

static long path_load(const char *model) {
    long n;
    for (n = 1; n < MAX_N; n++) {
        rf_model *m = NULL;
        rf_error err = {0};
        failalloc_arm(n, FA_ALL);
        rf_status st = rf_model_load(model, &m, &err);
        failalloc_disarm();
        bool fired = failalloc_fired();
        if (st) {
            CHECK_MSG(fired, "load failed without an injected failure: %s", err.msg);
            CHECK_MSG(m == NULL && err.msg[0], "N=%ld: failed load left a model or no message", n);
        }
        rf_model_free(m);
        if (!fired) {
            CHECK_MSG(st == RF_OK, "clean load: %s", err.msg);
            break;
        }
    }
    return n;
}

/* ---- (b) engine open/submit/step ---- */

static rf_engine_params small_engine(const char *model) {
    rf_engine_params ep = rf_engine_default_params();
    ep.model_path = model;
    ep.n_threads = 2;
    ep.n_ctx = 64;
    ep.max_seqs = 2;
    return ep;
}

enum { NREQ = 3 };

typedef struct tally {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int finals, after_final, errors_without_msg, errors;
} tally;

static void on_event(void *user, const rf_event *ev) {
    tally *t = user;
    pthread_mutex_lock(&t->mu);
    if (t->finals) t->after_final++;
    if (ev->finish != RF_FINISH_NONE) {
        t->finals++;
        if (ev->finish == RF_FINISH_ERROR) {
            t->errors++;
            if (!ev->error || !ev->error[0]) t->errors_without_msg++;
        }
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
}

/* Waits up to 20 s for a final event. */
static void wait_final(tally *t) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 20;
    pthread_mutex_lock(&t->mu);
    while (!t->finals && pthread_cond_timedwait(&t->cv, &t->mu, &dl) == 0) {
    }
    pthread_mutex_unlock(&t->mu);
}

static long path_engine(const char *model) {
    long n;
    for (n = 1; n < MAX_N; n++) {
        static tally t[NREQ];
        bool accepted[NREQ] = {false};
        for (int i = 0; i < NREQ; i++) {
            memset(&t[i], 0, sizeof t[i]);
            pthread_mutex_init(&t[i].mu, NULL);
            pthread_cond_init(&t[i].cv, NULL);
        }
        rf_engine_params ep = small_engine(model);
        rf_engine *e = NULL;
        rf_error err = {0};
        failalloc_arm(n, FA_ALL);
        rf_status st = rf_engine_open(&ep, &e, &err);
        if (st) {
            CHECK_MSG(e == NULL && err.msg[0], "N=%ld: failed open left an engine or no message",
                      n);
        } else {
            const int32_t prompt[4] = {2, 40, 41, 42};
            for (int i = 0; i < NREQ; i++) {
                rf_request_params rp = rf_request_default_params();
                rp.max_tokens = 6;
                rp.ignore_eos = true;
                if (i == 1) { /* sampling, penalties, logprobs: the full-row path */
                    rp.temperature = 0.8f;
                    rp.seed = 3;
                    rp.presence_penalty = 0.5f;
                    rp.logprobs = 2;
                    rp.stop[0] = "zz";
                }
                if (i == 2) rp.json_schema = "{\"type\":\"object\"}"; /* matcher, vocab index */
                rf_error serr = {0};
                rf_status s2 = rf_engine_submit(e, prompt, 4, &rp, on_event, &t[i], NULL, &serr);
                accepted[i] = s2 == RF_OK;
                if (s2) CHECK_MSG(serr.msg[0], "N=%ld: a refused submit without a message", n);
            }
            for (int i = 0; i < NREQ; i++)
                if (accepted[i]) wait_final(&t[i]);
            for (int i = 0; i < NREQ; i++)
                CHECK_MSG(!accepted[i] || t[i].finals == 1,
                          "N=%ld: accepted request %d has %d final events before close", n, i,
                          t[i].finals);
            rf_engine_close(e);
        }
        failalloc_disarm();
        bool fired = failalloc_fired();
        int errors = 0;
        for (int i = 0; i < NREQ; i++) {
            CHECK_MSG(!accepted[i] || t[i].finals == 1,
                      "N=%ld: accepted request %d got %d final events", n, i, t[i].finals);
            CHECK_MSG(t[i].after_final == 0 && t[i].errors_without_msg == 0,
                      "N=%ld: request %d: %d events after its final one, %d errors without a "
                      "message",
                      n, i, t[i].after_final, t[i].errors_without_msg);
            CHECK_MSG(accepted[i] || t[i].finals == 0, "N=%ld: refused request %d got events", n,
                      i);
            errors += t[i].errors;
            pthread_mutex_destroy(&t[i].mu);
            pthread_cond_destroy(&t[i].cv);
        }
        if (!fired) {
            CHECK_MSG(st == RF_OK && accepted[0] && accepted[1] && accepted[2] && errors == 0,
                      "the clean run failed: %s", err.msg);
            break;
        }
    }
    return n;
}

/* ---- (c) the bench's request path ---- */

static int count_records(const char *dir, int *bad) {
    char path[256];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    FILE *f = fopen(path, "r");
    int n = 0;
    int seen[16] = {0};
    *bad = 0;
    char line[1 << 16];
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        json_int_t idx = json_integer_value(json_object_get(o, "index"));
        if (!o || idx < 0 || idx >= 16 || seen[idx]++) {
            fprintf(stderr, "  bad or repeated record: %.300s", line);
            (*bad)++;
        }
        n++;
        json_decref(o);
    }
    if (f) fclose(f);
    return n;
}

static long path_bench(int port) {
    enum { REQS = 2 };
    long n;
    char uri[128], runjson[1024];
    snprintf(uri, sizeof uri, "openai:http://127.0.0.1:%d/v1", port);
    for (n = 1; n < MAX_N; n++) {
        char dir[] = "/tmp/roofline-failalloc-XXXXXX";
        if (!mkdtemp(dir)) {
            CHECK(0);
            break;
        }
        snprintf(runjson, sizeof runjson,
                 "{\"backends\": [{\"name\": \"fake\", \"uri\": \"%s\", \"timeout_s\": 20}], "
                 "\"suites\": [\"load\"], \"load\": {\"levels\": [2], \"requests\": %d, "
                 "\"max_tokens\": 4, \"warmup\": 0}, \"out\": \"%s\"}",
                 uri, REQS, dir);
        rf_runfile rf;
        memset(&rf, 0, sizeof rf);
        rf_run_desc_defaults(&rf.desc);
        rf_error err = {0};
        CHECK_MSG(rf_runfile_parse_json("run.json", runjson, &rf, &err) == RF_OK, "%s", err.msg);
        rf.desc.progress = false;
        volatile sig_atomic_t stop = 0;
        rf_bench *b = NULL;
        rf_status st_run = RF_OK;
        failalloc_arm(n, FA_THIS);
        rf_status st = rf_bench_open(&rf.desc, &stop, &b, &err);
        if (st) {
            CHECK_MSG(b == NULL && err.msg[0], "N=%ld: failed bench open: no message", n);
        } else {
            st_run = rf_bench_run_all(b, &err);
            rf_error ferr = {0};
            rf_status st_fin = rf_bench_finish(b, &ferr);
            if (!st_run) st_run = st_fin;
            if (st_run && !err.msg[0]) err = ferr;
            rf_bench_close(b);
        }
        failalloc_disarm();
        bool fired = failalloc_fired();
        rf_runfile_free(&rf);
        int bad = 0, recs = st ? 0 : count_records(dir, &bad);
        CHECK_MSG(bad == 0 && recs <= REQS, "N=%ld: %d records, %d bad or repeated", n, recs, bad);
        if (!st && !st_run)
            CHECK_MSG(recs == REQS, "N=%ld: the run succeeded with %d of %d records", n, recs,
                      REQS);
        if (st_run) CHECK_MSG(err.msg[0], "N=%ld: a failed run without a message", n);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
        if (!fired) {
            CHECK_MSG(!st && !st_run && recs == REQS, "the clean bench run failed: %s", err.msg);
            break;
        }
    }
    return n;
}

/* ---- (d) the server's request path ---- */

static const char *const CHAT_BODY[2] = {
    "{\"messages\":[{\"role\":\"user\",\"content\":\"ab cd\"}],\"max_tokens\":2,"
    "\"ignore_eos\":true,\"logprobs\":true,\"top_logprobs\":2}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"ab cd\"}],\"max_tokens\":2,"
    "\"stream\":true,\"ignore_eos\":true}",
};

/* One chat request (non-stream with logprobs, or stream); the status, 0: transport error. */
static long chat(int port, bool stream, rf_buf *out) {
    return http_client_request(port, "POST", "/v1/chat/completions", CHAT_BODY[stream], NULL, out);
}

/* A complete answer: a chat.completion with a choice, or a stream ending in [DONE]. */
static bool complete(const rf_buf *b, bool stream) {
    const char *t = b->len ? (const char *)b->data : "";
    if (stream) return strstr(t, "data: [DONE]") != NULL && !strstr(t, "\"error\"");
    json_t *o = json_loads(t, 0, NULL);
    bool ok = json_is_object(json_array_get(json_object_get(o, "choices"), 0));
    json_decref(o);
    return ok;
}

static bool error_object(const rf_buf *b) {
    json_t *o = json_loads(b->len ? (const char *)b->data : "", 0, NULL);
    bool ok = json_is_string(json_object_get(json_object_get(o, "error"), "message"));
    json_decref(o);
    return ok;
}

static long path_server(const char *model, bool stream) {
    rf_srv_params sp = rf_srv_default_params();
    sp.port = 0;
    rf_srv *s = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_srv_start(&sp, &s, &err) == RF_OK, "%s", err.msg);
    if (!s) return 0;
    rf_engine_params ep = small_engine(model);
    rf_engine *e = NULL;
    CHECK(rf_engine_open(&ep, &e, &err) == RF_OK);
    if (!e) {
        rf_srv_stop(s, 0);
        return 0;
    }
    rf_srv_attach(s, e);
    const int port = rf_srv_port(s);
    rf_buf b;
    rf_buf_init(&b, 0);
    CHECK(chat(port, stream, &b) == 200 && complete(&b, stream)); /* warm: lazy state built */
    failalloc_ignore_thread(true); /* the client (libcurl) is not under test */
    long n;
    for (n = 1; n < MAX_N; n++) {
        failalloc_arm(n, FA_ALL);
        long status = chat(port, stream, &b);
        failalloc_disarm();
        bool fired = failalloc_fired();
        const bool whole = status == 200 && complete(&b, stream);
        /* a stream's 200 is sent before its tokens: a failure after it ends the stream early
         * (the client sees no [DONE], or an error event); anything else is checked here */
        bool ok = whole || (status == 200 && stream) || (status >= 400 && error_object(&b)) ||
                  status == 0;
        CHECK_MSG(ok, "N=%ld: status %ld, body %.200s", n, status, b.len ? (char *)b.data : "");
        /* the server still serves: after every request the failure spoiled (and every 16th
         * N, in case one it absorbed left something broken) */
        if (!whole || n % 16 == 0) {
            long again = chat(port, stream, &b);
            CHECK_MSG(again == 200 && complete(&b, stream), "N=%ld: the next request got %ld", n,
                      again);
        }
        if (!fired) {
            CHECK_MSG(status == 200, "the clean request got %ld", status);
            break;
        }
    }
    failalloc_ignore_thread(false);
    rf_buf_free(&b);
    rf_srv_stop(s, 1000);
    return n;
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL; /* a path's name: run only that one */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    tiny_spec spec = tiny_default();
    spec.wtype = RF_TYPE_Q8_0;
    const char *p = tiny_write_file(&spec, "failalloc");
    CHECK(p != NULL);
    static char model[256];
    snprintf(model, sizeof model, "%s", p ? p : "");
    if (!only || !strcmp(only, "load"))
        fprintf(stderr, "model load: %ld allocation-failure points\n", path_load(model));
    if (!only || !strcmp(only, "engine"))
        fprintf(stderr, "engine open/submit/step: %ld allocation-failure points\n",
                path_engine(model));
    if (!only || !strcmp(only, "bench")) {
        rf_fake_params fp = rf_fake_default_params();
        fp.ttft_ms = 0;
        fp.gap_ms = 0;
        rf_fake *fk = NULL;
        rf_error err = {0};
        CHECK_MSG(rf_fake_start(&fp, &fk, &err) == RF_OK, "%s", err.msg);
        if (fk) {
            fprintf(stderr, "bench request path: %ld allocation-failure points\n",
                    path_bench(rf_fake_port(fk)));
            rf_fake_stop(fk);
        }
    }
    if (!only || !strcmp(only, "server")) {
        fprintf(stderr, "server request path (non-stream): %ld allocation-failure points\n",
                path_server(model, false));
        fprintf(stderr, "server request path (stream): %ld allocation-failure points\n",
                path_server(model, true));
    }
    remove(model);
    curl_global_cleanup();
    return check_summary("test_failalloc");
}
