/* srv.h: the server's state and one request's state, shared by the files of src/server (not
 * for callers: they use server/http.h). Who does what:
 *   http.c                 the server's lifecycle (start, attach, stop) and the request's
 *                          (set up, the log line, freed) over src/httpd;
 *   routes.c               the route table, authentication, the 404/405/401/413 answers;
 *   reply.c                error replies (OpenAI error objects);
 *   generation.c           the engine side: submit, events, cancel, the outcome;
 *   handle_completions.c   POST /v1/chat/completions and /v1/completions (non-stream);
 *   completion_stream.c    their streams (SSE, tool calls split as they come);
 *   handle_tokenize.c      POST /tokenize and /detokenize;
 *   handle_info.c          GET /health, /metrics and /v1/models.
 * A new endpoint is a handler (rf_httpd_handler on a srv_req) and one line in routes.c's table.
 *
 * Ownership: a srv_req is an rf_httpd_req (its first member) and shares its reference count:
 * the connection's, the engine's (from a successful submit until the final event) and a
 * stream's reader's; the last one frees it (http.c's release frees what is below).
 * Locking: rf_srv.lock guards e (shared while a request uses the engine, exclusive in
 * rf_srv_stop and rf_srv_attach); a request's generation fields are under its mu once
 * submitted; its stream fields belong to the connection's thread.
 */
#ifndef RF_SERVER_SRV_H
#define RF_SERVER_SRV_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "httpd/httpd.h"
#include "openai/logprobs.h"
#include "openai/request.h"
#include "openai/response.h"
#include "roofline/engine.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/tool_stream.h"
#include "util/buf.h"

struct rf_srv {
    rf_httpd *d;
    pthread_rwlock_t lock; /* guards e */
    rf_engine *e;
    int32_t n_ctx, n_vocab;
    uint64_t bytes_per_token;
    rf_metrics *metrics; /* NULL: --no-metrics (/metrics is 404) */
    char model_id[256];
    const char *models[2]; /* model_id, NULL */
    char *api_key;
    size_t body_max;
    atomic_int active; /* generations submitted and not yet completed on the HTTP side */
    atomic_uint_fast64_t next_id;
};

typedef struct srv_req {
    rf_httpd_req h; /* first: the transport's part (body, t0, fd, status, references) */
    rf_srv *s;
    uint64_t rid;
    char method[16];
    char path[128];
    bool counted, gone;
    /* generation: guarded by mu once submitted */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool submitted, done, oom;
    uint64_t eid;
    rf_buf pending;    /* text from the engine not yet sent (non-stream: all of it) */
    bool want_lp;      /* logprobs asked for (set before submit) */
    rf_openai_lps lps; /* the tokens' logprobs not yet sent (non-stream: all of them) */
    rf_finish finish;
    int32_t n_prompt, n_gen, n_cached;
    int64_t t_submit, t_admit, t_first, t_end;
    rf_metrics_itl itl;
    char errmsg[256];
    /* stream state: the reader's thread only */
    rf_openai_meta meta;
    char id[48];
    bool include_usage, role_sent, ended;
    rf_buf out;
    size_t out_off;
    /* tool calls (chat with tools and a tool_choice other than none) */
    char *tools_json; /* owned copy, or NULL: no tools */
    rf_tsplit split;  /* stream: the reply split into content and calls as it comes */
    bool split_on, split_oom;
    rf_buf reply;          /* stream: the whole reply, for the final parse */
    rf_buf chunk;          /* stream: the text taken from pending for this round */
    rf_openai_lps lps_out; /* taken from lps (swapped, so both keep their capacity) */
    int64_t text_off;      /* completions: text_offset of the next token */
} srv_req;

/* routes.c: the transport's dispatch (the body is in). */
rf_httpd_ret rf_srv_dispatch(rf_httpd_req *h);

/* reply.c */
rf_httpd_ret rf_srv_reply_error(srv_req *r, const rf_openai_error *e, const char *hname,
                                const char *hval);
/* An error object of status http (429 and 503 with Retry-After: 1). */
rf_httpd_ret rf_srv_fail(srv_req *r, int http, const char *param, const char *code, const char *fmt,
                         ...) __attribute__((format(printf, 5, 6)));

/* generation.c */
/* Renders (chat) and tokenizes the prompt and submits it; on failure queues the error and
 * leaves *queued false. */
rf_httpd_ret rf_srv_submit(srv_req *r, const rf_openai_req *q, bool *queued);
void rf_srv_cancel(srv_req *r);
rf_openai_timings rf_srv_timings(const srv_req *r);
/* The CLOCK_REALTIME time ns from now, for a wait on a request's cv. */
struct timespec rf_srv_wake_in(int64_t ns);
/* After the final event: false when the generation succeeded, else true with *e filled. */
bool rf_srv_gen_failed(const srv_req *r, rf_openai_error *e);
const char *rf_srv_finish_reason(rf_finish f);
/* A call's id: unique per server run (the engine's request id) and call. */
void rf_srv_call_id(const srv_req *r, int32_t index, char *out, size_t cap);
/* The reply's calls as a message's tool_calls array (from index `from` on), or NULL when there
 * are none (or out of memory: *oom). */
json_t *rf_srv_tool_calls_json(const srv_req *r, const rf_reply *rep, int32_t from, bool *oom);
/* o with choices[0].logprobs made from l. */
json_t *rf_srv_with_logprobs(srv_req *r, json_t *o, const rf_openai_lps *l);

/* completion_stream.c */
/* The stream's content reader (rf_httpd_reader). */
ssize_t rf_srv_stream_read(rf_httpd_req *h, uint64_t pos, char *buf, size_t max);
/* The tool-call splitter's callback (rf_tsplit_fn) for a stream. */
void rf_srv_on_split(void *user, rf_tsplit_kind k, int32_t index, const char *text, size_t len);

/* the handlers (routes.c's table) */
rf_httpd_ret rf_srv_answer_chat(rf_httpd_req *h);
rf_httpd_ret rf_srv_answer_completions(rf_httpd_req *h);
rf_httpd_ret rf_srv_answer_tokenize(rf_httpd_req *h);
rf_httpd_ret rf_srv_answer_detokenize(rf_httpd_req *h);
rf_httpd_ret rf_srv_answer_health(rf_httpd_req *h);
rf_httpd_ret rf_srv_answer_metrics(rf_httpd_req *h);
rf_httpd_ret rf_srv_answer_models(rf_httpd_req *h);

#endif
