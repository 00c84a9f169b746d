/* http.c: see http.h. */
#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/metrics.h"
#include "openai/logprobs.h"
#include "openai/request.h"
#include "openai/response.h"
#include "server/tool_stream.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/json_dump.h"

#define PING_NS      1000000000ll /* a stream's keep-alive comment after 1 s of silence */
#define POLL_MS      200          /* a non-stream wait's check for a client that went away */
#define READER_BLOCK 16384
#define STACK_BYTES  ((size_t)1 << 20) /* per connection thread: 2048 of them stay cheap */
#define WATCH_MS     200               /* the read deadline watchdog's period */

/* One accepted connection, for the read deadline (MHD's socket context). phase: CONN_HEADERS
 * until a request's headers are in, CONN_BODY while its body arrives (the deadline is checked
 * as each piece comes, on the connection's thread), CONN_DONE once it is read; back to
 * CONN_HEADERS with a new t_start when the request ends (keep-alive). */
enum { CONN_HEADERS, CONN_BODY, CONN_DONE };
typedef struct srv_conn {
    struct srv_conn *prev, *next; /* the server's list, under watch_mu */
    int fd;
    bool cut; /* the watchdog shut its socket (under watch_mu) */
    atomic_int phase;
    atomic_llong t_start; /* rf_now_ns of the accept or the previous request's end */
} srv_conn;

struct rf_srv {
    struct MHD_Daemon *d;
    pthread_rwlock_t lock; /* guards e */
    rf_engine *e;
    int32_t n_ctx, n_vocab;
    uint64_t bytes_per_token;
    rf_metrics *metrics; /* NULL: --no-metrics (/metrics is 404) */
    char model_id[256];
    const char *models[2]; /* model_id, NULL */
    char *api_key;
    size_t body_max;
    int port;
    unsigned idle_s;
    int64_t read_ns; /* 0: no read deadline */
    /* the read deadline's watchdog: connections still sending headers past it are shut */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cv;
    srv_conn *conns;
    bool watch_on, watch_quit;
    pthread_t watch;
    atomic_int stopping;
    atomic_int active; /* generations submitted and not yet completed on the HTTP side */
    atomic_uint_fast64_t next_id;
};

typedef struct srv_req {
    rf_srv *s;
    atomic_int refs; /* MHD's con_cls, the engine until its final event, a stream's reader */
    uint64_t rid;
    char method[16];
    char path[128];
    int64_t t0;
    int status;
    int fd;
    srv_conn *conn; /* NULL when its tracking could not be allocated */
    rf_buf body;
    bool too_large, counted, gone;
    /* generation: guarded by mu once submitted */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool submitted, done, oom;
    uint64_t eid;
    rf_buf pending; /* text from the engine not yet sent (non-stream: all of it) */
    bool want_lp;   /* logprobs asked for (set before submit) */
    rf_oai_lps lps; /* the tokens' logprobs not yet sent (non-stream: all of them) */
    rf_finish finish;
    int32_t n_prompt, n_gen, n_cached;
    int64_t t_submit, t_admit, t_first, t_end;
    rf_metrics_itl itl;
    char errmsg[256];
    /* stream state: the reader's thread only */
    rf_oai_meta meta;
    char id[48];
    bool include_usage, role_sent, ended;
    rf_buf out;
    size_t out_off;
    /* tool calls (chat with tools and a tool_choice other than none) */
    char *tools_json; /* owned copy, or NULL: no tools */
    rf_tsplit split;  /* stream: the reply split into content and calls as it comes */
    bool split_on, split_oom;
    rf_buf reply;       /* stream: the whole reply, for the final parse */
    rf_buf chunk;       /* stream: the text taken from pending for this round */
    rf_oai_lps lps_out; /* taken from lps (swapped, so both keep their capacity) */
    int64_t text_off;   /* completions: text_offset of the next token */
} srv_req;

rf_srv_params rf_srv_default_params(void) {
    rf_srv_params p = {0};
    p.host = "127.0.0.1";
    p.port = 8080;
    p.body_max = (size_t)4 << 20;
    p.conn_limit = 2048;
    p.idle_timeout_s = 30;
    p.read_timeout_s = 30;
    p.metrics = true;
    return p;
}

/* The CLOCK_REALTIME time ns from now, for pthread_cond_timedwait. */
static struct timespec wake_in(int64_t ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ns += ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000ll);
    ts.tv_nsec = (long)(ns % 1000000000ll);
    return ts;
}

static void req_unref(srv_req *r) {
    if (atomic_fetch_sub(&r->refs, 1) != 1) return;
    rf_buf_free(&r->body);
    rf_buf_free(&r->pending);
    rf_buf_free(&r->out);
    rf_buf_free(&r->reply);
    rf_buf_free(&r->chunk);
    if (r->split_on) rf_tsplit_free(&r->split);
    free(r->tools_json);
    rf_oai_lps_free(&r->lps);
    rf_oai_lps_free(&r->lps_out);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

static const char *finish_reason(rf_finish f) {
    return f == RF_FINISH_LENGTH ? "length" : "stop";
}

/* A call's id: unique per server run (the engine's request id) and call. */
static void call_id(const srv_req *r, int32_t index, char *out, size_t cap) {
    snprintf(out, cap, "call_%llu_%d", (unsigned long long)r->eid, (int)index);
}

/* The reply's calls as a message's tool_calls array (from index `from` on), or NULL when there
 * are none (or out of memory: *oom). */
static json_t *tool_calls_json(const srv_req *r, const rf_reply *rep, int32_t from, bool *oom) {
    if (rep->n_calls <= from) return NULL;
    json_t *arr = json_array();
    for (int32_t i = from; arr && i < rep->n_calls; i++) {
        char id[64];
        call_id(r, i, id, sizeof id);
        json_t *one = rf_oai_tool_calls_json(id, rep->calls[i].name, rep->calls[i].arguments);
        if (!one || json_array_extend(arr, one)) {
            json_decref(arr);
            arr = NULL;
        }
        json_decref(one);
    }
    if (!arr) *oom = true;
    return arr;
}

/* ---- plain responses ---- */

static enum MHD_Result queue_json(srv_req *r, struct MHD_Connection *c, int status, json_t *o,
                                  const char *hname, const char *hval) {
    char *s = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (hname) MHD_add_response_header(resp, hname, hval);
    r->status = status;
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result queue_error(srv_req *r, struct MHD_Connection *c, const rf_oai_error *e,
                                   const char *hname, const char *hval) {
    return queue_json(r, c, e->http, rf_oai_error_json(e), hname, hval);
}

static enum MHD_Result fail(srv_req *r, struct MHD_Connection *c, int http, const char *param,
                            const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static enum MHD_Result fail(srv_req *r, struct MHD_Connection *c, int http, const char *param,
                            const char *code, const char *fmt, ...) {
    rf_oai_error e;
    char msg[sizeof e.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rf_oai_error_set(&e, http, param, code, "%s", msg);
    return queue_error(r, c, &e, http == 429 || http == 503 ? "Retry-After" : NULL, "1");
}

/* ---- engine side ---- */

/* Scheduler thread: copies the event's text and counts into the request and signals. */
static void on_event(void *user, const rf_event *ev) {
    srv_req *r = user;
    pthread_mutex_lock(&r->mu);
    if (ev->text_len && rf_buf_append(&r->pending, ev->text, ev->text_len)) r->oom = true;
    if (r->want_lp && ev->token >= 0 && rf_oai_lps_push(&r->lps, ev)) r->oom = true;
    if (!r->t_first && ev->token >= 0) r->t_first = ev->t_ns;
    if (ev->t_admit_ns) r->t_admit = ev->t_admit_ns;
    r->t_submit = ev->t_submit_ns;
    r->n_prompt = ev->n_prompt;
    r->n_gen = ev->n_generated;
    r->n_cached = ev->n_cached;
    if (ev->token >= 0) rf_metrics_itl_add(&r->itl, ev->t_ns);
    bool fin = ev->finish != RF_FINISH_NONE;
    rf_metrics *m = r->s->metrics;
    if (m && ev->token >= 0) rf_metrics_token(m, ev->t_ns);
    if (fin) {
        r->done = true;
        r->finish = ev->finish;
        r->t_end = ev->t_ns;
        if (ev->error) snprintf(r->errmsg, sizeof r->errmsg, "%s", ev->error);
        /* recorded before anyone sees done: a client that got its reply finds it counted */
        rf_metrics_req mr = {r->finish,  r->n_prompt, r->n_gen, r->t0,  r->t_submit,
                             r->t_admit, r->t_first,  r->t_end, &r->itl};
        if (m) rf_metrics_request(m, &mr);
    }
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (fin) req_unref(r);
}

static void cancel_req(srv_req *r) {
    pthread_mutex_lock(&r->mu);
    bool live = r->submitted && !r->done;
    pthread_mutex_unlock(&r->mu);
    if (!live) return;
    pthread_rwlock_rdlock(&r->s->lock);
    if (r->s->e) rf_engine_cancel(r->s->e, r->eid);
    pthread_rwlock_unlock(&r->s->lock);
}

static rf_oai_timings timings_of(const srv_req *r) {
    rf_oai_timings t = {0};
    t.prompt_n = r->n_prompt - r->n_cached; /* as llama-server: the prompt tokens computed */
    t.predicted_n = r->n_gen;
    t.cache_n = r->n_cached;
    if (r->t_first && r->t_admit) t.prompt_ms = (double)(r->t_first - r->t_admit) / 1e6;
    if (r->t_first && r->t_end) t.predicted_ms = (double)(r->t_end - r->t_first) / 1e6;
    return t;
}

/* After the final event: false when the generation succeeded, else true with *e filled (503
 * for a request cancelled by the server's shutdown, 500 for an engine failure). */
static bool gen_failed(const srv_req *r, rf_oai_error *e) {
    if (r->oom) {
        rf_oai_error_set(e, 500, NULL, NULL, "generation failed: out of memory");
    } else if (r->finish == RF_FINISH_CANCELLED) {
        rf_oai_error_set(e, 503, NULL, "cancelled",
                         "generation cancelled: the server stopped before the reply was finished");
    } else if (r->finish == RF_FINISH_ERROR) {
        rf_oai_error_set(e, 500, NULL, NULL, "generation failed: %s", r->errmsg);
    } else {
        return false;
    }
    return true;
}

/* ---- logprobs ---- */

static int64_t engine_piece(void *user, int32_t id, char *buf, int64_t cap) {
    return rf_engine_detokenize(user, &id, 1, buf, cap);
}

/* o with choices[0].logprobs made from l (pieces from the engine; none once it is gone). */
static json_t *with_logprobs(srv_req *r, json_t *o, const rf_oai_lps *l) {
    pthread_rwlock_rdlock(&r->s->lock);
    json_t *lp = rf_oai_logprobs_json(r->meta.kind, l->v, l->n, r->s->e ? engine_piece : NULL,
                                      r->s->e, &r->text_off);
    pthread_rwlock_unlock(&r->s->lock);
    return rf_oai_with_logprobs(o, lp);
}

/* ---- streaming ---- */

/* The splitter's pieces as stream chunks, appended to the reader's output. */
static void on_split(void *user, rf_tsplit_kind k, int32_t index, const char *text, size_t len) {
    srv_req *r = user;
    json_t *o = NULL;
    if (k == RF_TSPLIT_CONTENT) {
        o = rf_oai_chunk_json(&r->meta, NULL, text, len, NULL, NULL);
    } else {
        char id[64], name[80];
        call_id(r, index, id, sizeof id);
        snprintf(name, sizeof name, "%.*s", (int)len, text);
        json_t *calls = k == RF_TSPLIT_CALL
                            ? rf_oai_tool_call_delta_json(index, id, name, "", 0)
                            : rf_oai_tool_call_delta_json(index, NULL, NULL, text, len);
        json_t *delta = calls ? json_pack("{s:o}", "tool_calls", calls) : NULL;
        o = delta ? rf_oai_delta_chunk_json(&r->meta, delta, NULL) : NULL;
    }
    if (rf_oai_sse_event(&r->out, o)) r->split_oom = true;
}

/* After the reply's end: what the splitter held back, and the calls it did not stream, from
 * the parse of the whole reply. Returns the number of calls in all. */
static int32_t stream_finish_tools(srv_req *r) {
    const char *held;
    size_t held_len;
    int32_t streamed = r->split.n_calls;
    if (!rf_tsplit_finish(&r->split, &held, &held_len)) return streamed;
    rf_reply rep;
    rf_error err = {0};
    int32_t total = streamed;
    pthread_rwlock_rdlock(&r->s->lock);
    rf_status st = r->s->e ? rf_engine_parse_reply(r->s->e, (const char *)r->reply.data,
                                                   r->reply.len, r->tools_json, &rep, &err)
                           : RF_ERR_INTERNAL;
    pthread_rwlock_unlock(&r->s->lock);
    if (st) {
        r->split_oom = true;
        return streamed;
    }
    if (rep.n_calls > streamed) {
        for (int32_t i = streamed; i < rep.n_calls; i++) {
            char id[64];
            call_id(r, i, id, sizeof id);
            const char *a = rep.calls[i].arguments;
            json_t *calls = rf_oai_tool_call_delta_json(i, id, rep.calls[i].name, a, strlen(a));
            json_t *delta = calls ? json_pack("{s:o}", "tool_calls", calls) : NULL;
            if (rf_oai_sse_event(&r->out,
                                 delta ? rf_oai_delta_chunk_json(&r->meta, delta, NULL) : NULL))
                r->split_oom = true;
        }
        total = rep.n_calls;
    } else if (held_len) {
        on_split(r, RF_TSPLIT_CONTENT, -1, held, held_len);
    }
    rf_reply_free(&rep);
    return total;
}

static bool stream_next(srv_req *r) {
    const rf_oai_meta *m = &r->meta;
    if (!r->role_sent) {
        r->role_sent = true;
        if (m->kind == RF_OAI_CHAT)
            return !rf_oai_sse_event(&r->out,
                                     rf_oai_chunk_json(m, "assistant", NULL, 0, NULL, NULL));
    }
    pthread_mutex_lock(&r->mu);
    if (!r->done && r->pending.len == 0 && r->lps.n == 0) {
        struct timespec ts = wake_in(PING_NS);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    rf_status st = RF_OK;
    if (r->split_on) {
        r->lps.n = 0;         /* a reply read for tool calls carries no logprobs */
        if (r->pending.len) { /* split outside the lock: take the text by swapping buffers */
            rf_buf took = r->pending;
            r->pending = r->chunk;
            rf_buf_reset(&r->pending);
            r->chunk = took;
            pthread_mutex_unlock(&r->mu);
            if (!st) st = rf_buf_append(&r->reply, r->chunk.data, r->chunk.len);
            if (!st) st = rf_tsplit_push(&r->split, (const char *)r->chunk.data, r->chunk.len);
            if (!st && r->split_oom) st = RF_ERR_NOMEM;
            pthread_mutex_lock(&r->mu);
            r->lps.n = 0;
        }
    } else if (r->pending.len ||
               r->lps.n) { /* logprobs go with the chunk their tokens' events made */
        json_t *o =
            rf_oai_chunk_json(m, NULL, (const char *)r->pending.data, r->pending.len, NULL, NULL);
        rf_buf_reset(&r->pending);
        rf_oai_lps took = r->lps;
        r->lps = r->lps_out;
        r->lps.n = 0;
        r->lps_out = took;
        pthread_mutex_unlock(&r->mu);
        if (r->want_lp) o = with_logprobs(r, o, &r->lps_out);
        st = rf_oai_sse_event(&r->out, o); /* formatted outside the lock */
        pthread_mutex_lock(&r->mu);
    }
    bool done = r->done && r->pending.len == 0 && r->lps.n == 0;
    pthread_mutex_unlock(&r->mu);
    if (st) return false;
    if (!done) {
        if (r->out.len == 0) return !rf_buf_append_str(&r->out, ": ping\n\n");
        return true;
    }
    /* done: the engine thread writes nothing more, so the fields are stable */
    r->ended = true;
    rf_oai_error e;
    if (gen_failed(r, &e)) {
        st = rf_oai_sse_event(&r->out, rf_oai_error_json(&e));
        return !st && !rf_oai_sse_done(&r->out);
    }
    rf_oai_timings t = timings_of(r);
    const char *fin = finish_reason(r->finish);
    if (r->split_on) {
        int32_t calls = stream_finish_tools(r);
        if (r->split_oom) return false;
        if (calls > 0 && r->finish == RF_FINISH_STOP) fin = "tool_calls";
    }
    st = rf_oai_sse_event(&r->out, rf_oai_chunk_json(m, NULL, NULL, 0, fin, &t));
    if (!st && r->include_usage)
        st = rf_oai_sse_event(&r->out,
                              rf_oai_usage_chunk_json(m, r->n_prompt, r->n_gen, r->n_cached));
    return !st && !rf_oai_sse_done(&r->out);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    srv_req *r = cls;
    (void)pos;
    while (r->out_off >= r->out.len) {
        if (r->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        rf_buf_reset(&r->out);
        r->out_off = 0;
        if (!stream_next(r)) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = r->out.len - r->out_off;
    if (n > max) n = max;
    memcpy(buf, r->out.data + r->out_off, n);
    r->out_off += n;
    return (ssize_t)n;
}

static void reader_free(void *cls) {
    req_unref(cls);
}

/* ---- completions ---- */

static bool client_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Renders (chat) and tokenizes the prompt and submits it; on failure queues the error. */
static enum MHD_Result submit(srv_req *r, struct MHD_Connection *c, const rf_oai_req *q,
                              bool *queued) {
    rf_srv *s = r->s;
    rf_error err = {0};
    char *prompt = NULL;
    int32_t *ids = NULL;
    enum MHD_Result ret = MHD_YES;
    *queued = false;
    pthread_rwlock_rdlock(&s->lock);
    if (!s->e || atomic_load(&s->stopping)) {
        ret = fail(r, c, 503, NULL, "server_unavailable", "the server is %s",
                   s->e ? "shutting down" : "loading the model");
        goto out;
    }
    const char *text = q->prompt;
    if (q->kind == RF_OAI_CHAT) {
        const char *tools = q->tool_choice != RF_TOOL_CHOICE_NONE ? q->tools_json : NULL;
        rf_status st = rf_engine_chat_prompt(s->e, q->msgs, q->n_msgs, tools, true, &prompt, &err);
        if (st) {
            ret = fail(r, c, st == RF_ERR_NOMEM ? 500 : 400, "messages", NULL, "%s", err.msg);
            goto out;
        }
        text = prompt;
    }
    rf_request_params p = rf_oai_engine_params(q);
    if (p.tools_json && !(r->tools_json = strdup(p.tools_json))) {
        ret = fail(r, c, 500, NULL, NULL, "out of memory");
        goto out;
    }
    int64_t n = rf_engine_tokenize_alloc(s->e, text, strlen(text), true, true, &ids, &err);
    if (n < 0) {
        ret = fail(r, c, 500, NULL, NULL, "tokenizing the prompt: %s", err.msg);
        goto out;
    }
    int64_t want = q->max_tokens > 0 ? q->max_tokens : 1;
    if (n < 1 || n + want > s->n_ctx || n > INT32_MAX) {
        ret = fail(r, c, 400, q->kind == RF_OAI_CHAT ? "messages" : "prompt",
                   "context_length_exceeded",
                   "This model's maximum context length is %d tokens. However, you requested "
                   "%lld tokens (%lld in the %s, %lld in the completion).",
                   (int)s->n_ctx, (long long)(n + want), (long long)n,
                   q->kind == RF_OAI_CHAT ? "messages" : "prompt", (long long)want);
        goto out;
    }
    r->want_lp = p.logprobs >= 0;
    atomic_fetch_add(&r->refs, 1); /* the engine's, until the final event */
    r->submitted = true;
    rf_status st = rf_engine_submit(s->e, ids, (int32_t)n, &p, on_event, r, &r->eid, &err);
    if (st) {
        r->submitted = false;
        atomic_fetch_sub(&r->refs, 1);
        if (st == RF_ERR_BUSY)
            ret = fail(r, c, 429, NULL, "server_is_overloaded", "%s", err.msg);
        else if (st == RF_ERR_CONTEXT)
            ret = fail(r, c, 400, "messages", "context_length_exceeded", "%s", err.msg);
        else if (st == RF_ERR_UNSUPPORTED || st == RF_ERR_ARG) /* the constraint, compiled */
            ret = fail(
                r, c, 400, p.json_schema ? "response_format" : (p.tools_json ? "tools" : NULL),
                st == RF_ERR_UNSUPPORTED ? "unsupported_schema" : "invalid_value", "%s", err.msg);
        else
            ret = fail(r, c, 500, NULL, NULL, "%s", err.msg);
        goto out;
    }
    r->counted = true;
    atomic_fetch_add(&s->active, 1);
    *queued = true;
out:
    pthread_rwlock_unlock(&s->lock);
    free(prompt);
    free(ids);
    return ret;
}

/* A non-stream chat reply to a request with tools: read for calls in the model's format. */
static enum MHD_Result answer_tool_reply(srv_req *r, struct MHD_Connection *c,
                                         const rf_oai_timings *t) {
    rf_reply rep;
    rf_error err = {0};
    pthread_rwlock_rdlock(&r->s->lock);
    rf_status st = r->s->e ? rf_engine_parse_reply(r->s->e, (const char *)r->pending.data,
                                                   r->pending.len, r->tools_json, &rep, &err)
                           : RF_ERR_INTERNAL;
    pthread_rwlock_unlock(&r->s->lock);
    if (st) return fail(r, c, 500, NULL, NULL, "reading the reply's tool calls: %s", err.msg);
    bool oom = false;
    json_t *calls = tool_calls_json(r, &rep, 0, &oom);
    const char *fin = finish_reason(r->finish);
    if (calls && r->finish == RF_FINISH_STOP) fin = "tool_calls";
    json_t *o = NULL;
    if (!oom) {
        if (calls) {
            const char *content = rep.content;
            o = rf_oai_tool_response_json(&r->meta, content, content ? strlen(content) : 0, calls,
                                          fin, t);
        } else {
            o = rf_oai_response_json(&r->meta, (const char *)r->pending.data, r->pending.len, fin,
                                     t);
        }
    }
    rf_reply_free(&rep);
    return queue_json(r, c, 200, o, NULL, NULL);
}

static enum MHD_Result answer_completion(srv_req *r, struct MHD_Connection *c, rf_oai_kind kind) {
    rf_srv *s = r->s;
    rf_oai_req q;
    rf_oai_error e;
    rf_oai_limits lim = {s->models, s->n_ctx};
    if (rf_oai_parse(kind, (const char *)r->body.data, r->body.len, &lim, &q, &e))
        return queue_error(r, c, &e, NULL, NULL);
    bool queued = false;
    enum MHD_Result ret = submit(r, c, &q, &queued);
    bool stream = q.stream;
    r->include_usage = q.include_usage;
    rf_oai_req_free(&q);
    if (!queued) return ret;
    snprintf(r->id, sizeof r->id, "%s-%llu", kind == RF_OAI_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)r->eid);
    r->meta = (rf_oai_meta){kind, r->id, (int64_t)time(NULL), s->model_id};
    if (stream && r->tools_json) {
        const char *open = NULL, *close = NULL;
        pthread_rwlock_rdlock(&s->lock);
        if (s->e) rf_engine_tool_markers(s->e, &open, &close);
        pthread_rwlock_unlock(&s->lock);
        rf_error err = {0};
        if (rf_tsplit_init(&r->split, open, close, r->tools_json, on_split, r, &err)) {
            cancel_req(r);
            return MHD_NO;
        }
        r->split_on = true;
    }
    if (stream) {
        atomic_fetch_add(&r->refs, 1); /* the reader's */
        struct MHD_Response *resp = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, READER_BLOCK, stream_reader, r, reader_free);
        if (!resp) {
            atomic_fetch_sub(&r->refs, 1);
            cancel_req(r);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        r->status = 200;
        ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    /* non-stream: wait on this connection's thread, watching the socket. The generation is no
     * idle time: MHD's timeout is off meanwhile (set again after, which restarts its clock). */
    if (s->idle_s) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    pthread_mutex_lock(&r->mu);
    while (!r->done) {
        struct timespec ts = wake_in(POLL_MS * 1000000ll);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        if (!r->done && !r->gone && client_gone(r->fd)) {
            r->gone = true;
            pthread_mutex_unlock(&r->mu);
            cancel_req(r);
            pthread_mutex_lock(&r->mu);
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (s->idle_s) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, s->idle_s);
    if (r->gone) {
        r->status = 499; /* as nginx logs it: the client closed the request */
        return MHD_NO;
    }
    if (gen_failed(r, &e)) return queue_error(r, c, &e, e.http == 503 ? "Retry-After" : NULL, "1");
    rf_oai_timings t = timings_of(r);
    if (r->tools_json) return answer_tool_reply(r, c, &t);
    json_t *o = rf_oai_response_json(&r->meta, (const char *)r->pending.data, r->pending.len,
                                     finish_reason(r->finish), &t);
    if (r->want_lp) o = with_logprobs(r, o, &r->lps);
    return queue_json(r, c, 200, o, NULL, NULL);
}

/* ---- small endpoints ---- */

static json_t *parse_body(srv_req *r, struct MHD_Connection *c, enum MHD_Result *ret) {
    json_error_t je;
    json_t *root = json_loadb(r->body.len ? (const char *)r->body.data : "", r->body.len,
                              JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        *ret = fail(r, c, 400, NULL, "invalid_json", "the body must be a JSON object%s%s",
                    root ? "" : ": ", root ? "" : je.text);
        return NULL;
    }
    return root;
}

static enum MHD_Result answer_tokenize(srv_req *r, struct MHD_Connection *c) {
    enum MHD_Result ret = MHD_YES;
    json_t *root = parse_body(r, c, &ret);
    if (!root) return ret;
    const json_t *content = json_object_get(root, "content");
    const json_t *as = json_object_get(root, "add_special");
    const json_t *ps = json_object_get(root, "parse_special");
    int32_t *ids = NULL;
    if (!json_is_string(content)) {
        ret = fail(r, c, 400, "content", "invalid_type", "'content' must be a string");
        goto out;
    }
    if ((as && !json_is_boolean(as)) || (ps && !json_is_boolean(ps))) {
        ret = fail(r, c, 400, as && !json_is_boolean(as) ? "add_special" : "parse_special",
                   "invalid_type", "add_special and parse_special must be booleans");
        goto out;
    }
    rf_error err = {0};
    pthread_rwlock_rdlock(&r->s->lock);
    int64_t n = r->s->e ? rf_engine_tokenize_alloc(r->s->e, json_string_value(content),
                                                   json_string_length(content), json_is_true(as),
                                                   !ps || json_is_true(ps), &ids, &err)
                        : -2;
    pthread_rwlock_unlock(&r->s->lock);
    if (n < 0) {
        ret = n == -2 ? fail(r, c, 503, NULL, "server_unavailable", "the model is loading")
                      : fail(r, c, 500, NULL, NULL, "tokenizing: %s", err.msg);
        goto out;
    }
    json_t *arr = json_array();
    for (int64_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_integer(ids[i]))) {
            json_decref(arr);
            arr = NULL;
        }
    ret = arr ? queue_json(r, c, 200, json_pack("{s:o}", "tokens", arr), NULL, NULL) : MHD_NO;
out:
    free(ids);
    json_decref(root);
    return ret;
}

static enum MHD_Result answer_detokenize(srv_req *r, struct MHD_Connection *c) {
    enum MHD_Result ret = MHD_YES;
    json_t *root = parse_body(r, c, &ret);
    if (!root) return ret;
    const json_t *toks = json_object_get(root, "tokens");
    int32_t *ids = NULL;
    char *text = NULL;
    if (!json_is_array(toks)) {
        ret = fail(r, c, 400, "tokens", "invalid_type", "'tokens' must be an array of integers");
        goto out;
    }
    size_t n = json_array_size(toks);
    ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        ret = MHD_NO;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(toks, i);
        json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
        if (x < 0 || x >= r->s->n_vocab) {
            ret = fail(r, c, 400, "tokens", "invalid_value",
                       "tokens[%zu] must be an integer id in [0, %d)", i, (int)r->s->n_vocab);
            goto out;
        }
        ids[i] = (int32_t)x;
    }
    pthread_rwlock_rdlock(&r->s->lock);
    int64_t len = r->s->e ? rf_engine_detokenize(r->s->e, ids, (int64_t)n, NULL, 0) : -2;
    if (len >= 0) {
        text = malloc((size_t)len + 1);
        if (!text || rf_engine_detokenize(r->s->e, ids, (int64_t)n, text, len + 1) != len) len = -1;
    }
    pthread_rwlock_unlock(&r->s->lock);
    if (len < 0)
        ret = len == -2 ? fail(r, c, 503, NULL, "server_unavailable", "the model is loading")
                        : fail(r, c, 400, "tokens", "invalid_value", "the tokens do not decode");
    else
        ret = queue_json(r, c, 200, json_pack("{s:s%}", "content", text, (size_t)len), NULL, NULL);
out:
    free(text);
    free(ids);
    json_decref(root);
    return ret;
}

static enum MHD_Result answer_health(srv_req *r, struct MHD_Connection *c) {
    pthread_rwlock_rdlock(&r->s->lock);
    bool ready = r->s->e != NULL;
    pthread_rwlock_unlock(&r->s->lock);
    if (ready && !atomic_load(&r->s->stopping))
        return queue_json(r, c, 200, json_pack("{s:s}", "status", "ok"), NULL, NULL);
    return queue_json(r, c, 503, json_pack("{s:s}", "status", ready ? "stopping" : "loading"),
                      "Retry-After", "1");
}

/* ---- routing ---- */

static enum MHD_Result answer_metrics(srv_req *r, struct MHD_Connection *c) {
    rf_srv *s = r->s;
    if (!s->metrics) return fail(r, c, 404, NULL, "not_found", "metrics are off (--no-metrics)");
    rf_engine_stats st;
    pthread_rwlock_rdlock(&s->lock);
    bool ready = s->e != NULL;
    if (ready) rf_engine_get_stats(s->e, &st);
    uint64_t bpt = s->bytes_per_token;
    pthread_rwlock_unlock(&s->lock);
    rf_buf b;
    rf_buf_init(&b, 0);
    if (rf_metrics_render(s->metrics, ready ? &st : NULL, bpt, rf_now_ns(), &b)) {
        rf_buf_free(&b);
        return MHD_NO;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_COPY);
    rf_buf_free(&b);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    r->status = 200;
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* ---- the read deadline ---- */

/* MHD's connection start and end: the connection joins and leaves the watchdog's list. The
 * end is notified before MHD closes the socket, so a shutdown under watch_mu never reaches a
 * descriptor reused by another connection. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    rf_srv *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        srv_conn *k = calloc(1, sizeof *k);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!k) return; /* no deadline for this one */
        k->fd = ci ? (int)ci->connect_fd : -1;
        atomic_init(&k->phase, CONN_HEADERS);
        atomic_init(&k->t_start, rf_now_ns());
        pthread_mutex_lock(&s->watch_mu);
        k->next = s->conns;
        if (s->conns) s->conns->prev = k;
        s->conns = k;
        pthread_mutex_unlock(&s->watch_mu);
        *socket_context = k;
        return;
    }
    srv_conn *k = *socket_context;
    if (!k) return;
    *socket_context = NULL;
    pthread_mutex_lock(&s->watch_mu);
    if (k->prev)
        k->prev->next = k->next;
    else
        s->conns = k->next;
    if (k->next) k->next->prev = k->prev;
    pthread_mutex_unlock(&s->watch_mu);
    free(k);
}

static bool past_deadline(const rf_srv *s, srv_conn *k) {
    return s->read_ns && k && rf_now_ns() - atomic_load(&k->t_start) > s->read_ns;
}

/* A body still arriving at the deadline. libmicrohttpd 0.9 queues a response only before the
 * body is read or after all of it, so this 408 is written to the socket directly, on the
 * connection's own thread (nothing else writes to it then); the caller returns MHD_NO and MHD
 * closes the connection. */
static void send_408(srv_req *r) {
    rf_oai_error e;
    rf_oai_error_set(&e, 408, NULL, "request_timeout",
                     "the request was not received within %u s (--read-timeout)",
                     (unsigned)(r->s->read_ns / 1000000000ll));
    json_t *o = rf_oai_error_json(&e);
    char *body = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    r->status = 408;
    if (!body || r->fd < 0) {
        free(body);
        return;
    }
    char head[160];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     strlen(body));
    if (send(r->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
        (void)send(r->fd, body, strlen(body), MSG_NOSIGNAL | MSG_DONTWAIT);
    free(body);
}

/* Shuts the socket of every connection still sending its headers past the deadline (MHD's own
 * timeout is an idle one: a byte now and then resets it). Its thread then sees the socket
 * closed and ends the connection. */
static void *watchdog(void *arg) {
    rf_srv *s = arg;
    pthread_mutex_lock(&s->watch_mu);
    while (!s->watch_quit) {
        struct timespec ts = wake_in(WATCH_MS * 1000000ll);
        pthread_cond_timedwait(&s->watch_cv, &s->watch_mu, &ts);
        for (srv_conn *k = s->conns; k; k = k->next) {
            if (k->cut || k->fd < 0 || atomic_load(&k->phase) != CONN_HEADERS ||
                !past_deadline(s, k))
                continue;
            k->cut = true;
            shutdown(k->fd, SHUT_RDWR);
            fprintf(stderr, "serve: a connection closed: its request's headers did not arrive "
                            "within the read timeout\n");
        }
    }
    pthread_mutex_unlock(&s->watch_mu);
    return NULL;
}

/* ---- routing ---- */

typedef enum route { R_NONE, R_CHAT, R_COMPL, R_MODELS, R_HEALTH, R_TOK, R_DETOK, R_METRICS } route;

static route route_of(const char *url, bool *post) {
    static const struct {
        const char *path;
        route r;
        bool post;
    } routes[] = {{"/chat/completions", R_CHAT, true}, {"/completions", R_COMPL, true},
                  {"/models", R_MODELS, false},        {"/health", R_HEALTH, false},
                  {"/tokenize", R_TOK, true},          {"/detokenize", R_DETOK, true},
                  {"/metrics", R_METRICS, false}};
    const char *p = strncmp(url, "/v1/", 4) == 0 ? url + 3 : url;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(p, routes[i].path)) {
            *post = routes[i].post;
            return routes[i].r;
        }
    return R_NONE;
}

static bool authorized(const rf_srv *s, struct MHD_Connection *c) {
    if (!s->api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7) != 0) return false;
    const char *k = h + 7, *want = s->api_key;
    size_t kl = strlen(k), wl = strlen(want);
    unsigned diff = kl != wl;
    for (size_t i = 0; i < wl; i++) diff |= (unsigned)(want[i] ^ (i < kl ? k[i] : 0));
    return diff == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    rf_srv *s = cls;
    srv_req *r = *con_cls;
    (void)version;
    if (!r) { /* the headers are in */
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->s = s;
        atomic_init(&r->refs, 1);
        r->rid = atomic_fetch_add(&s->next_id, 1);
        r->t0 = rf_now_ns();
        snprintf(r->method, sizeof r->method, "%s", method);
        snprintf(r->path, sizeof r->path, "%s", url);
        pthread_mutex_init(&r->mu, NULL);
        pthread_cond_init(&r->cv, NULL);
        rf_buf_init(&r->body, s->body_max);
        rf_buf_init(&r->pending, 0);
        rf_buf_init(&r->out, 0);
        rf_buf_init(&r->reply, 0);
        rf_buf_init(&r->chunk, 0);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        r->fd = ci ? (int)ci->connect_fd : -1;
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        r->conn = ci ? ci->socket_context : NULL;
        if (r->conn) atomic_store(&r->conn->phase, CONN_BODY);
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (past_deadline(s, r->conn)) {
            send_408(r);
            return MHD_NO; /* MHD closes the connection */
        }
        if (!r->too_large && rf_buf_append(&r->body, upload_data, *upload_data_size) != RF_OK)
            r->too_large = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->conn) atomic_store(&r->conn->phase, CONN_DONE);
    bool want_post = false;
    route rt = route_of(url, &want_post);
    if (rt == R_NONE)
        return fail(r, c, 404, NULL, "not_found", "no route for %.20s %.100s", method, url);
    if (strcmp(method, want_post ? MHD_HTTP_METHOD_POST : MHD_HTTP_METHOD_GET) != 0) {
        rf_oai_error e;
        rf_oai_error_set(&e, 405, NULL, "method_not_allowed",
                         "method %.20s is not allowed on %.100s", method, url);
        return queue_error(r, c, &e, MHD_HTTP_HEADER_ALLOW, want_post ? "POST" : "GET");
    }
    if (rt == R_HEALTH) return answer_health(r, c);
    if (rt == R_METRICS) return answer_metrics(r, c); /* open, as /health (and vLLM's) */
    if (!authorized(s, c))
        return fail(r, c, 401, NULL, "invalid_api_key",
                    "a valid 'Authorization: Bearer' API key "
                    "is required");
    if (r->too_large)
        return fail(r, c, 413, NULL, "request_too_large", "the body exceeds %zu bytes",
                    s->body_max);
    switch (rt) {
    case R_CHAT:
        return answer_completion(r, c, RF_OAI_CHAT);
    case R_COMPL:
        return answer_completion(r, c, RF_OAI_COMPLETION);
    case R_MODELS:
        return queue_json(r, c, 200, rf_oai_models_json(s->model_id, (int64_t)time(NULL)), NULL,
                          NULL);
    case R_TOK:
        return answer_tokenize(r, c);
    case R_DETOK:
        return answer_detokenize(r, c);
    default:
        return fail(r, c, 404, NULL, "not_found", "no route for %.100s", url);
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    rf_srv *s = cls;
    srv_req *r = *con_cls;
    (void)c;
    if (!r) return;
    *con_cls = NULL;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) cancel_req(r);
    pthread_mutex_lock(&r->mu);
    int32_t np = r->n_prompt, ng = r->n_gen;
    int64_t tf = r->t_first;
    pthread_mutex_unlock(&r->mu);
    fprintf(stderr,
            "serve: req=%llu %s %s status=%d prompt_tokens=%d completion_tokens=%d ttft_ms=%.1f "
            "duration_ms=%.1f%s\n",
            (unsigned long long)r->rid, r->method, r->path, r->status, (int)np, (int)ng,
            tf ? (double)(tf - r->t0) / 1e6 : 0.0, (double)(rf_now_ns() - r->t0) / 1e6,
            toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (client gone)");
    if (r->counted) atomic_fetch_sub(&s->active, 1);
    if (r->conn) { /* a kept-alive connection's next request has its own deadline */
        atomic_store(&r->conn->t_start, rf_now_ns());
        atomic_store(&r->conn->phase, CONN_HEADERS);
    }
    req_unref(r);
}

/* ---- lifecycle ---- */

rf_status rf_srv_start(const rf_srv_params *p, rf_srv **out, rf_error *err) {
    *out = NULL;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    if (p->port < 0 || p->port > 65535)
        return rf_error_set(err, RF_ERR_ARG, "server: port %d is not in [0, 65535]", p->port);
    sa.sin_port = htons((uint16_t)p->port);
    const char *host = p->host ? p->host : "127.0.0.1";
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return rf_error_set(err, RF_ERR_ARG, "server: host '%s' is not an IPv4 address", host);
    rf_srv *s = calloc(1, sizeof *s);
    if (!s) return rf_error_set(err, RF_ERR_NOMEM, "server: out of memory");
    pthread_rwlock_init(&s->lock, NULL);
    pthread_mutex_init(&s->watch_mu, NULL);
    pthread_cond_init(&s->watch_cv, NULL);
    s->idle_s = p->idle_timeout_s;
    s->read_ns = (int64_t)p->read_timeout_s * 1000000000ll;
    s->body_max = p->body_max ? p->body_max : (size_t)4 << 20;
    snprintf(s->model_id, sizeof s->model_id, "%s", p->model_id ? p->model_id : "");
    s->models[0] = s->model_id;
    rf_status st = RF_OK;
    if ((p->api_key && *p->api_key && !(s->api_key = strdup(p->api_key))) ||
        (p->metrics && !(s->metrics = rf_metrics_new()))) {
        st = rf_error_set(err, RF_ERR_NOMEM, "server: out of memory");
        goto fail;
    }
    atomic_init(&s->stopping, 0);
    atomic_init(&s->active, 0);
    atomic_init(&s->next_id, 1);
    json_object_seed(0); /* before any connection thread makes a JSON object */
    s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                MHD_USE_POLL | MHD_USE_ITC,
                            (uint16_t)p->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
                            p->conn_limit ? p->conn_limit : 2048u, MHD_OPTION_CONNECTION_TIMEOUT,
                            p->idle_timeout_s, MHD_OPTION_THREAD_STACK_SIZE, STACK_BYTES,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->d) {
        st = rf_error_set(err, RF_ERR_IO, "server: cannot listen on %s:%d (port in use?)", host,
                          p->port);
        goto fail;
    }
    if (s->read_ns && pthread_create(&s->watch, NULL, watchdog, s)) {
        MHD_stop_daemon(s->d);
        st = rf_error_set(err, RF_ERR_INTERNAL, "server: cannot start the read-timeout thread");
        goto fail;
    }
    s->watch_on = s->read_ns != 0;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di && di->port ? di->port : p->port;
    *out = s;
    return RF_OK;
fail:
    rf_metrics_free(s->metrics);
    free(s->api_key);
    pthread_mutex_destroy(&s->watch_mu);
    pthread_cond_destroy(&s->watch_cv);
    pthread_rwlock_destroy(&s->lock);
    free(s);
    return st;
}

int rf_srv_port(const rf_srv *s) {
    return s->port;
}

void rf_srv_attach(rf_srv *s, rf_engine *e) {
    rf_engine_info info;
    rf_engine_get_info(e, &info);
    pthread_rwlock_wrlock(&s->lock);
    s->e = e;
    s->n_ctx = info.n_ctx;
    s->n_vocab = info.n_vocab;
    s->bytes_per_token = info.bytes_per_token;
    if (!s->model_id[0]) snprintf(s->model_id, sizeof s->model_id, "%s", info.model_name);
    pthread_rwlock_unlock(&s->lock);
}

void rf_srv_stop(rf_srv *s, int drain_ms) {
    if (!s) return;
    atomic_store(&s->stopping, 1);
    MHD_socket lfd = MHD_quiesce_daemon(s->d); /* no new connections */
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    int64_t deadline = rf_now_ns() + (int64_t)drain_ms * 1000000;
    while (atomic_load(&s->active) > 0 && rf_now_ns() < deadline) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    pthread_rwlock_wrlock(&s->lock);
    rf_engine *e = s->e;
    s->e = NULL;
    pthread_rwlock_unlock(&s->lock);
    rf_engine_close(e); /* what is left gets its final (cancelled) event */
    MHD_stop_daemon(s->d);
    if (s->watch_on) {
        pthread_mutex_lock(&s->watch_mu);
        s->watch_quit = true;
        pthread_cond_signal(&s->watch_cv);
        pthread_mutex_unlock(&s->watch_mu);
        pthread_join(s->watch, NULL);
    }
    while (s->conns) { /* none unless MHD ended one without notifying its end */
        srv_conn *k = s->conns;
        s->conns = k->next;
        free(k);
    }
    pthread_mutex_destroy(&s->watch_mu);
    pthread_cond_destroy(&s->watch_cv);
    pthread_rwlock_destroy(&s->lock);
    rf_metrics_free(s->metrics);
    free(s->api_key);
    free(s);
}
