/* bench.h: the benchmark agent's run: the run description (backends with their price and
 * hardware fields, suites and their parameters), the running state shared by the suites, and
 * the request helper every suite sends through.
 *
 * Flow: rf_run_desc (from flags or JSON files, runfile.c) -> rf_bench_open (run directory,
 * run.json, records.jsonl, runlog.jsonl, event loop, backends) -> suites (suite_*.c), each
 * sending rf_send requests -> rf_bench_finish (the session's end in the run log). The bench
 * measures and records; every figure (speed, load levels, accuracy, agreement, agent grades,
 * A/B/A drift, cost, roofline efficiency, goodput) is computed from the run directory by the
 * report (src/report/), which `roofline bench` runs at the end and `roofline report` runs again.
 * Every finished request is appended to records.jsonl (records.h: one write per line) before its
 * suite sees it, so an interrupted or killed run keeps everything it measured; an interrupt
 * (SIGINT) stops the loop and the suites return early. A record that cannot be written stops
 * the run the same way, and rf_bench_wait returns the error. `--resume DIR` continues a killed
 * run from DIR/run.json: requests already recorded are restored, not sent.
 *
 * Ownership: the rf_bench owns the loop, the backends, the records and run-log files; suites
 * own their rf_send arrays. All of it runs on one thread (the loop's).
 */
#ifndef RF_BENCH_BENCH_H
#define RF_BENCH_BENCH_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "backend/loop.h"
#include "util/stats.h"

#define RF_BENCH_MAX_BACKENDS   16
#define RF_BENCH_MAX_LEVELS     16
#define RF_BENCH_MIN_RATE       1e-3 /* requests per second */
#define RF_BENCH_MAX_RATE       1e6
#define RF_BENCH_MAX_SCHEDULE_S 1e7 /* a Poisson schedule's span (115 days) */
#define RF_BENCH_PATH_MAX       4096

/* The suite table: one line per suite, in the order a run runs them. A new suite is its file
 * (suite_NAME.c) and a line here (and the run file's switch for it, a bool NAME in rf_run_desc).
 *   X(ID, name, run, preflight, study)
 *   ID        RF_SUITE_<ID>: its position, and its bit in rf_bench_backend.suites and
 *             rf_run_desc.precision_suites
 *   name      its name in run files, flags and records, and its switch: rf_run_desc.name
 *   run       rf_status run(rf_bench *, rf_bench_backend *, rf_error *): the suite on one
 *             backend (declared here from this line)
 *   preflight rf_status preflight(const rf_run_desc *, rf_error *): loads the suite's data files
 *             before anything runs, so a bad file stops the run unmeasured (NULL: none)
 *   study     its turns in the precision study (suite_precision.c): RF_STUDY_NONE, every turn
 *             (RF_STUDY_EVERY), or each backend's first turn only (RF_STUDY_FIRST)
 * Consumers expand it: the enum below, the names (bench.c), the dispatch table (suites.c). */
#define RF_SUITES(X)                                                                               \
    X(SPEED, speed, rf_suite_speed, NULL, RF_STUDY_EVERY)                                          \
    X(LOAD, load, rf_suite_load, NULL, RF_STUDY_EVERY)                                             \
    X(ACCURACY, accuracy, rf_suite_accuracy, rf_accuracy_preflight, RF_STUDY_FIRST)                \
    X(AGENT, agent, rf_suite_agent, rf_agent_preflight, RF_STUDY_FIRST)                            \
    X(PROBE, probe, rf_suite_probe, NULL, RF_STUDY_NONE)

#define RF_SUITE_ENUM_(ID, name, run, preflight, study) RF_SUITE_##ID,
enum { RF_SUITES(RF_SUITE_ENUM_) RF_SUITE_COUNT };
#undef RF_SUITE_ENUM_

/* The precision study's variants of one model file (suite_precision.c). */
enum {
    RF_VARIANT_SHIPPED, /* the file as shipped: A of the A/B/A sequence */
    RF_VARIANT_Q8_0,    /* every tensor Q8_0 */
    RF_VARIANT_BF16,
    RF_VARIANT_F16,
    RF_VARIANT_Q4_0,  /* every tensor Q4_0, the embeddings too */
    RF_VARIANT_WIDEN, /* the as-shipped file on the engine's widened matmul path */
    RF_VARIANT_COUNT
};
/* "shipped", "q8_0", "bf16", "f16", "q4_0", "widen"; rf_variant_parse: -1 for anything else */
const char *rf_variant_name(int v);
int rf_variant_parse(const char *s);

typedef struct rf_bench_backend {
    rf_backend_cfg cfg;     /* name, uri, model, api_key_env, threads, ... */
    double usd_per_hour;    /* instance price (0: unknown) */
    double usd_per_m_input; /* per-token prices (0: unknown) */
    double usd_per_m_output;
    const char *price_instance; /* an instance of the prices file (data/prices.json) */
    const char *hardware;       /* e.g. "NVIDIA L4", "2-core AMD EPYC" */
    double mem_bw_gbs;          /* the hardware's memory bandwidth (0: unknown) */
    double mem_gb;              /* the hardware's memory in GB (0: unknown) */
    const char *model_file;     /* the served model's weights (GGUF or safetensors), for the
                                 * roofline's bytes per token of a remote backend */
    double bytes_per_token;     /* or the bytes read per decoded token, given (0: unknown) */
    unsigned suites;            /* the run's suites this backend takes part in: a bit per
                                 * RF_SUITE_* (0: all of them) */
    const char *variant;        /* a precision-study variant ("shipped", "q8_0", ..., "widen";
                                 * suite_precision.c): in no other suite, opened only for its
                                 * turns in the study; NULL for an ordinary backend */
    bool no_stream;             /* run file "stream": false: every request asks for one whole
                                 * body (SageMaker InvokeEndpoint, Converse) instead of a stream;
                                 * TTFT is then the whole reply's time */
    rf_backend *b;              /* NULL when it failed to open (open_error says why) */
    char open_error[RF_ERROR_MSG_MAX];
} rf_bench_backend;

/* Whether backend bb takes part in suite k (RF_SUITE_*). */
static inline bool rf_bench_backend_runs(const rf_bench_backend *bb, int k) {
    return !bb->suites || (bb->suites >> k) & 1u;
}

typedef struct rf_run_desc {
    rf_bench_backend backends[RF_BENCH_MAX_BACKENDS];
    int n_backends;
    /* suites to run, in this order */
    bool speed, load, accuracy, agent, probe, aba;
    /* speed: the seeds' single-stream measurement */
    int speed_runs;   /* default 3 */
    int speed_tokens; /* default 512 */
    const char *speed_prompt;
    /* load: fixed concurrency levels, or a Poisson request rate */
    int levels[RF_BENCH_MAX_LEVELS];
    int n_levels;             /* default 1, 4, 16 */
    int load_requests;        /* per level; 0: max(8, 2 * level) */
    int load_tokens;          /* default 128 */
    int load_warmup;          /* requests per level excluded from statistics; default 1 */
    double rate;              /* > 0: Poisson mode, requests per second */
    int rate_requests;        /* Poisson mode: how many; default 32 */
    int rate_max_concurrency; /* Poisson mode: 0 = unbounded */
    uint64_t rate_seed;
    /* accuracy */
    const char *questions;    /* JSONL file; default data/accuracy/seed40.jsonl */
    int accuracy_tokens;      /* default 48 */
    int accuracy_concurrency; /* default 8 */
    /* agent */
    const char *agent_task; /* default data/agent/count_ids.json */
    int agent_runs;         /* default: the task's (3) */
    /* probe */
    const char *probe_question;
    /* aba */
    const char *aba_a, *aba_b; /* backend names */
    bool aba_speed, aba_load;  /* suites run in each A/B/A phase */
    /* precision: the model's variants, each a backend (variant set), run A B1 A B2 ... A */
    bool precision;
    const char *precision_model; /* default: qwen2.5-coder-0.5b (the embedded instruct model) */
    const char *precision_dir;   /* where variant files are built; default runs/variants */
    unsigned precision_variants; /* a bit per RF_VARIANT_* (0: all) */
    unsigned precision_suites;   /* a bit per RF_SUITE_* of speed, load, accuracy, agent (0: all) */
    bool suites_set;             /* a suite list was given (file or flag) */
    /* output */
    const char *out_dir; /* runs/<timestamp> by default */
    bool resume;         /* continue the run in out_dir (its records are kept and reused) */
    bool membw;          /* measure the memory bandwidth once per run for local backends */
    /* goodput SLOs for the report (ms; 0: not given), and the share of good requests a level
     * needs to meet them (0: 0.9) */
    double slo_ttft_ms, slo_tpot_ms, slo_e2e_ms, slo_attainment;
    bool progress;        /* progress bar (terminal) or plain lines */
    const char *data_dir; /* where default data files live */
} rf_run_desc;

/* The defaults of every field (the run-file field table, runfile_fields.c). */
void rf_run_desc_defaults(rf_run_desc *d);

typedef struct rf_bench rf_bench;

/* A request a suite sends: inputs, where it belongs, and its result. */
typedef struct rf_send rf_send;
typedef void (*rf_send_done_fn)(rf_send *s);

#define RF_SEND_MAX_MSGS 8
struct rf_send {
    rf_bk_request req; /* messages, sampling, result */
    rf_bk_message msgs[RF_SEND_MAX_MSGS];
    rf_bench *bench;
    rf_bench_backend *bb;
    const char *suite;  /* "speed", "load", ... */
    char item[64];      /* question id, "run 2", ... */
    int index;          /* the request's stable index in its suite, backend and level: with
                         * them (and the A/B/A phase) the key that --resume matches records by */
    int level;          /* concurrency level or 0 */
    int level_index;    /* the level's position in the run's list of levels (0 outside load) */
    int warmup;         /* excluded from statistics */
    int64_t t_intended; /* scheduled send time (monotonic ns); 0: sent when started */
    int started, finished;
    rf_send_done_fn on_result; /* before the record is written: attach a grade (optional) */
    rf_send_done_fn on_done;   /* after the record is written; may start another send */
    void *user;
    /* graded suites fill these before the record is written */
    json_t *grade;    /* object merged into the record (owned; freed with the send) */
    int inflight_idx; /* position in the bench's in-flight list while started */
    int session;      /* the run session whose clock the result's times are on */
    bool reused;      /* the result was restored from records.jsonl (--resume), not sent */
};

/* ---- running ---- */

rf_status rf_bench_open(rf_run_desc *d, volatile sig_atomic_t *interrupted, rf_bench **out,
                        rf_error *err);
/* Ends the session in the run log (duration, records, interrupted, the error that stopped it).
 * The figures are the report's: src/report/ reads the run directory. */
rf_status rf_bench_finish(rf_bench *b, rf_error *err);
void rf_bench_close(rf_bench *b);

rf_run_desc *rf_bench_run(rf_bench *b);
const char *rf_bench_dir(const rf_bench *b);
int rf_bench_interrupted(const rf_bench *b); /* the user stopped the run (SIGINT/SIGTERM) */
/* The run is stopping: interrupted, or a record could not be written. Suites start nothing
 * more once it is set. */
int rf_bench_stopped(const rf_bench *b);
rf_loop *rf_bench_loop(rf_bench *b);
/* The A/B/A phase ("aba 1".."aba 3"; NULL or "" outside it): part of every request's key. */
void rf_bench_set_phase(rf_bench *b, const char *phase);
/* The (suite, backend) pairs that finished requests of which none succeeded, and backends that
 * could not be opened, as a count and a message ("load on g6: 0 of 18 requests succeeded"). */
int rf_bench_unanswered(const rf_bench *b, char *msg, size_t cap);
/* Appends ev ({"kind": ...}, owned: freed here) to the run log (runlog.jsonl) with the session
 * number; a failed write stops the run as a failed record write does. */
void rf_bench_log_event(rf_bench *b, json_t *ev);
/* One more memory read bandwidth sample ("membw" in the run log, labelled when: "end", a
 * precision turn) when the run has a local backend and measures the bandwidth. The machine's
 * bandwidth moves when other tenants share it; the report's ceiling is the samples' median. */
void rf_bench_sample_membw(rf_bench *b, const char *when);
int64_t rf_bench_t0(const rf_bench *b);

/* Prepares s for a chat request to bb (one user message; more can be set in s->msgs). */
void rf_send_init(rf_send *s, rf_bench *b, rf_bench_backend *bb, const char *suite,
                  const char *prompt, int max_tokens);
/* Sends s at monotonic time t (0: now). Exactly one on_done follows, on the loop thread, and
 * never inside this call (so an on_done that sends again does not nest). On --resume, a request
 * whose record exists is not sent: its result is restored from the record and completes at
 * once. */
void rf_send_at(rf_send *s, int64_t t);
/* Whether s (suite, backend, level, index set) is already recorded (--resume); when it is,
 * its result is restored into s (s->reused). A record of the same key for another item stops
 * the run. */
bool rf_send_recorded(rf_send *s);
/* Calls fn(user) on the loop at monotonic time t (scheduled sends). */
rf_status rf_bench_loop_at(rf_bench *b, int64_t t, rf_loop_fn fn, void *user, rf_error *err);
/* JSON string of len bytes of model output: invalid UTF-8 bytes become U+FFFD. */
json_t *rf_json_text(const char *p, size_t len);
/* Runs the loop until *outstanding reaches 0 or the run is interrupted. */
rf_status rf_bench_wait(rf_bench *b, const volatile int *outstanding, rf_error *err);
/* Sends s now and runs the loop until it is done (sets s->on_done and s->user). */
rf_status rf_send_one(rf_send *s, rf_error *err);
/* Frees what the backend and the grade left in s (call once the suite is done with it). */
void rf_send_free(rf_send *s);

/* Derived per-request metrics (ms; -1 when not defined). */
typedef struct rf_send_metrics {
    int ok;
    int32_t tokens;      /* output tokens: server usage, else client count, else events */
    double ttft_ms;      /* sent -> first content event */
    double e2e_ms;       /* sent -> last content event */
    double tpot_ms;      /* (e2e - ttft) / (tokens - 1), tokens > 1 (vLLM's TPOT) */
    double decode_tok_s; /* (tokens - 1) / (last - first content event) */
    double e2e_tok_s;    /* tokens / e2e */
    double queue_e2e_ms; /* intended send -> last content (queue-inclusive latency) */
    double lag_ms;       /* actual send - intended send (schedule lag) */
} rf_send_metrics;

void rf_send_metrics_of(const rf_send *s, rf_send_metrics *m);

/* Progress: a bar on a terminal, a line per step otherwise. */
void rf_bench_progress(rf_bench *b, const char *what, int done, int total);
void rf_bench_log(rf_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- suites (suite_*.c): each sends its requests; the records are its output ---- */
typedef rf_status (*rf_suite_fn)(rf_bench *b, rf_bench_backend *bb, rf_error *err);
typedef rf_status (*rf_suite_preflight_fn)(const rf_run_desc *d, rf_error *err);
enum { RF_STUDY_NONE, RF_STUDY_EVERY, RF_STUDY_FIRST };

/* Every suite's run function, declared from its line of RF_SUITES. */
#define RF_SUITE_DECL_(ID, name, run, preflight, study)                                            \
    rf_status run(rf_bench *b, rf_bench_backend *bb, rf_error *err);
RF_SUITES(RF_SUITE_DECL_)
#undef RF_SUITE_DECL_
/* The preflights of the suites that have data files (RF_SUITES' preflight column). */
rf_status rf_accuracy_preflight(const rf_run_desc *d, rf_error *err);
rf_status rf_agent_preflight(const rf_run_desc *d, rf_error *err);

/* A line of RF_SUITES as data (suites.c). */
typedef struct rf_suite_def {
    int id;                          /* RF_SUITE_* */
    const char *name;                /* "speed", "load", ... */
    size_t on;                       /* offsetof(rf_run_desc, <name>): the bool that runs it */
    rf_suite_fn run;                 /* one backend */
    rf_suite_preflight_fn preflight; /* NULL: no data files */
    int study;                       /* RF_STUDY_* */
} rf_suite_def;

/* The suite table, RF_SUITE_COUNT lines in RF_SUITES' order (static; never freed). */
const rf_suite_def *rf_suite_table(void);
/* Whether the run description d switches suite s on. */
bool rf_suite_on(const rf_suite_def *s, const rf_run_desc *d);
/* The precision study (suite_precision.c): builds each variant's file when missing or older
 * than the source, then runs the configured suites on A (the as-shipped file) and each variant
 * in the order A B1 A B2 ... A, opening each backend only for its turn. */
rf_status rf_suite_precision(rf_bench *b, rf_error *err);

/* given, or ROOFLINE_DATA (default: the source tree's data/) + rel, written into buf; NULL (and
 * err, when not NULL) when that does not fit in cap bytes (data_path.c). */
const char *rf_bench_data_path(const char *given, const char *rel, char *buf, size_t cap,
                               rf_error *err);
/* Loads the data files the configured suites need (question file, agent task: each suite's
 * preflight, in the table's order) before anything runs, so a bad file stops the run with the
 * file and line named and nothing half-measured. */
rf_status rf_bench_preflight(const rf_run_desc *d, rf_error *err);

/* Runs the configured suites over every backend (and the A/B/A sequence when asked). */
rf_status rf_bench_run_all(rf_bench *b, rf_error *err);

#endif
