/* fake_server.c: the fake OpenAI backend (see fake_server.h for the schedule, the "fake" field
 * and the faults).
 *
 * Shape: libmicrohttpd in thread-per-connection mode. Each request gets a fake_req, created on
 * the access handler's first call (t0, the schedule's origin) and shared, by a reference count,
 * between the connection (released in the completion callback) and the response (released in
 * the content reader's free callback). A stream's content reader produces one SSE write at a
 * time: it formats the next event, then blocks in wait_until() until that event's absolute
 * due time. wait_until() is a ppoll on two descriptors: the server's stop eventfd (written once
 * by rf_fake_stop, never drained, so it wakes every waiter) and the client socket for
 * POLLRDHUP, which reports a peer close without writing a byte (a stall must stay silent).
 */
#include "fake/fake_server.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "openai/request.h"
#include "openai/response.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/json_dump.h"
#include "util/json_read.h"

#define BODY_MAX        (1u << 20)        /* request bodies above this get a 413 */
#define CONN_LIMIT      8192u             /* a load level of 4,000 streams fits */
#define STACK_BYTES     ((size_t)1 << 20) /* per connection thread: 8,192 stay cheap */
#define DEFAULT_TOKENS  16
#define DEFAULT_FRAG    8
#define MAX_TOKENS      1000000
#define MAX_MS          600000.0
#define MAX_STALL_MS    86400000.0
#define FINGERPRINT     "fp_roofline_fake"
#define BAD_TOOL_ARGS   "{\"ids\": [3, 14, 15"
#define DEFAULT_TOK_TXT "tok "
#define MAX_FRAG_BYTES  65536

/* The caps a request cannot reach by construction (see fake_server.h): a reply is a string of
 * the request body, and a string's JSON-escaped length is never more than it took in the body
 * (raw control characters are not valid JSON), so even a whole reply fits one event; an
 * arguments fragment is at most MAX_FRAG_BYTES bytes (or one UTF-8 character), each at most 6
 * escaped. */
_Static_assert(BODY_MAX <= RF_FAKE_EVENT_MAX, "a reply must fit one event");
_Static_assert(6u * MAX_FRAG_BYTES <= RF_FAKE_EVENT_MAX, "a fragment must fit one event");
_Static_assert(MAX_TOKENS <= RF_FAKE_DELTAS_MAX, "reply pieces are capped at MAX_TOKENS");

typedef struct fake_counters {
    atomic_uint_least64_t requests, chat_requests, bad_requests, streams_started, streams_completed,
        bodies_completed, faults_injected, client_disconnects;
    atomic_uint_least64_t by_kind[RF_FAKE_FAULT_COUNT];
    atomic_uint_least64_t late_max_ns;
    /* served throughput: the first chat request's arrival, the last stream's end, the tokens of
     * streams that reached their end */
    atomic_uint_least64_t first_arrival_ns, last_end_ns, streamed_tokens;
    atomic_uint_least64_t late_hist[RF_FAKE_LATE_BINS];
} fake_counters;

/* Counts one chunk handed to the socket late_ns after its programmed time. */
static void note_late(fake_counters *c, int64_t late_ns) {
    if (late_ns < 0) late_ns = 0;
    int64_t bin = late_ns / 100000;
    if (bin >= RF_FAKE_LATE_BINS) bin = RF_FAKE_LATE_BINS - 1;
    atomic_fetch_add(&c->late_hist[bin], 1);
    uint64_t prev = atomic_load(&c->late_max_ns);
    while ((uint64_t)late_ns > prev &&
           !atomic_compare_exchange_weak(&c->late_max_ns, &prev, (uint64_t)late_ns)) {
    }
}

struct rf_fake {
    struct MHD_Daemon *d;
    rf_fake_params p;
    char model[128];
    int port;
    int stop_fd; /* eventfd: readable once rf_fake_stop begins */
    atomic_int stopping;
    atomic_uint_least64_t ids; /* request ids */
    atomic_uint_least64_t draws;
    fake_counters c;
};

enum { END_NONE = 0, END_CLEAN, END_ABORT };
enum { WAIT_DUE = 0, WAIT_STOP, WAIT_GONE };

typedef struct fake_req {
    rf_fake *srv;
    atomic_int refs;
    int64_t t0; /* arrival: monotonic ns */
    int fd;     /* the connection's socket, polled for a peer close */
    rf_buf body;
    bool too_large;
    rf_oai_req req; /* the parsed request; the plan's strings are borrowed from it */
    json_t *root;   /* req.root */

    /* the plan */
    bool stream, include_usage, usage;
    int64_t ttft_ns, gap_ns, stall_ns;
    rf_fake_fault fault;
    int32_t fault_at, retry_after, tpc;
    const char *model, *token_text, *reply, *finish;
    size_t token_text_len;
    int32_t n_content; /* content tokens */
    size_t *reply_off; /* reply mode: n_content + 1 piece offsets */
    bool has_tool;
    const char *tool_name;
    char *tool_args;  /* owned */
    size_t *frag_off; /* n_frag + 1 offsets into tool_args */
    int32_t n_frag;
    int32_t n_cev, n_ev; /* content events, all events (content + tool deltas) */
    int32_t completion_tokens, prompt_tokens;
    char id[48], call_id[48];
    long long created;

    /* the response being written */
    rf_buf out;
    size_t out_off;
    int32_t next_ev;
    bool fault_done;
    int end; /* END_*: what to do once out is drained */

    /* outcome, for the counters */
    bool stream_resp, body_resp, reached_end, ended_by_us, client_gone;
} fake_req;

/* ---- names, params ---- */

static const char *const g_fault_names[RF_FAKE_FAULT_COUNT] = {
    "none",
    "refuse",
    "500",
    "429",
    "stall",
    "truncate",
    "invalid_json",
    "error_event",
    "wrong_tool_call",
    "wrong_tool_name",
};

const char *rf_fake_fault_name(rf_fake_fault f) {
    return (unsigned)f < RF_FAKE_FAULT_COUNT ? g_fault_names[f] : "?";
}

bool rf_fake_fault_parse(const char *s, rf_fake_fault *out) {
    for (int i = 0; s && i < RF_FAKE_FAULT_COUNT; i++)
        if (strcmp(s, g_fault_names[i]) == 0) {
            *out = (rf_fake_fault)i;
            return true;
        }
    return false;
}

rf_fake_params rf_fake_default_params(void) {
    rf_fake_params p;
    memset(&p, 0, sizeof p);
    p.ttft_ms = 50;
    p.gap_ms = 10;
    p.tokens_per_chunk = 1;
    p.usage = true;
    p.fault_after = 2;
    p.stall_ms = 60000;
    p.retry_after_s = 1;
    p.seed = 1;
    return p;
}

static uint64_t splitmix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t ms_to_ns(double ms) {
    return (int64_t)llround(ms * 1e6);
}

/* ---- request state ---- */

static void req_unref(fake_req *r) {
    if (atomic_fetch_sub(&r->refs, 1) != 1) return;
    rf_buf_free(&r->body);
    rf_buf_free(&r->out);
    free(r->reply_off);
    free(r->frag_off);
    free(r->tool_args);
    rf_oai_req_free(&r->req);
    free(r);
}

static int64_t ev_time(const fake_req *r, int32_t i) {
    int32_t last = r->n_ev > 0 ? r->n_ev - 1 : 0;
    if (i > last) i = last;
    if (i < 0) i = 0;
    return r->t0 + r->ttft_ns + (int64_t)i * r->gap_ns;
}

/* Sleeps until monotonic due_ns; wakes early for the server's stop (WAIT_STOP) or the client
 * closing its end (WAIT_GONE). Polls once even when due_ns is past, so a gone client is seen
 * before a write. */
static int wait_until(rf_fake *f, int fd, int64_t due_ns) {
    for (;;) {
        struct pollfd pf[2] = {{f->stop_fd, POLLIN, 0}, {fd, POLLRDHUP, 0}};
        int64_t left = due_ns - rf_now_ns();
        if (left < 0) left = 0;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        int n = ppoll(pf, fd >= 0 ? 2 : 1, &ts, NULL);
        if (n < 0 && errno != EINTR) return WAIT_DUE; /* cannot wait: fall back to writing */
        if (n > 0 && pf[0].revents) return WAIT_STOP;
        if (n > 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) return WAIT_GONE;
        if (rf_now_ns() >= due_ns) return WAIT_DUE;
    }
}

/* ---- JSON output ---- */

/* Appends `data: <o compact>\n\n` and releases o; false on allocation failure. */
static bool sse_append(rf_buf *out, json_t *o) {
    return rf_oai_sse_event(out, o) == RF_OK;
}

/* An OpenAI error object; its type follows http (server_error for 500, rate_limit_error for
 * 429, invalid_request_error for the 4xx). */
static json_t *error_obj(int http, const char *msg, const char *param, const char *code) {
    rf_oai_error e;
    rf_oai_error_set(&e, http, param, code, "%s", msg);
    return rf_oai_error_json(&e);
}

static json_t *usage_obj(const fake_req *r) {
    return rf_oai_usage_json(r->prompt_tokens, r->completion_tokens, -1);
}

static rf_oai_meta meta_of(const fake_req *r) {
    return (rf_oai_meta){RF_OAI_CHAT, r->id, r->created, r->model};
}

/* o with the fake's fingerprint, and without "usage" unless the request asked for usage
 * chunks (then every chunk has "usage": null); NULL stays NULL. */
static json_t *fake_envelope(const fake_req *r, json_t *o) {
    if (o && json_object_set_new(o, "system_fingerprint", json_string(FINGERPRINT))) {
        json_decref(o);
        return NULL;
    }
    if (o && !r->include_usage) json_object_del(o, "usage");
    return o;
}

/* The chunk of one delta (stolen). */
static json_t *delta_chunk(const fake_req *r, json_t *delta, const char *finish) {
    rf_oai_meta m = meta_of(r);
    return fake_envelope(r, rf_oai_delta_chunk_json(&m, delta, finish));
}

/* The text of content tokens [a, b). */
static bool content_text(const fake_req *r, int32_t a, int32_t b, rf_buf *t) {
    for (int32_t j = a; j < b; j++) {
        rf_status st = r->reply ? rf_buf_append(t, r->reply + r->reply_off[j],
                                                r->reply_off[j + 1] - r->reply_off[j])
                                : rf_buf_append(t, r->token_text, r->token_text_len);
        if (st) return false;
    }
    return true;
}

static json_t *tool_header(const fake_req *r) {
    return rf_oai_tool_call_delta_json(0, r->call_id, r->tool_name, "", 0);
}

/* The delta of event ev (content chunk, tool-call header, or arguments fragment). */
static json_t *event_delta(const fake_req *r, int32_t ev) {
    json_t *d = json_object();
    if (!d) return NULL;
    if (ev == 0) json_object_set_new(d, "role", json_string("assistant"));
    if (ev < r->n_cev) {
        rf_buf t;
        rf_buf_init(&t, 0);
        int32_t a = ev * r->tpc, b = a + r->tpc < r->n_content ? a + r->tpc : r->n_content;
        json_t *s = content_text(r, a, b, &t)
                        ? json_stringn(t.len ? (const char *)t.data : "", t.len)
                        : NULL;
        rf_buf_free(&t);
        if (!s || json_object_set_new(d, "content", s)) goto fail;
    } else if (ev == r->n_cev) {
        if (ev == 0) json_object_set_new(d, "content", json_null());
        if (json_object_set_new(d, "tool_calls", tool_header(r))) goto fail;
    } else {
        int32_t j = ev - r->n_cev - 1;
        json_t *tc = rf_oai_tool_call_delta_json(0, NULL, NULL, r->tool_args + r->frag_off[j],
                                                 r->frag_off[j + 1] - r->frag_off[j]);
        if (json_object_set_new(d, "tool_calls", tc)) goto fail;
    }
    return d;
fail:
    json_decref(d);
    return NULL;
}

static bool is_mid_stream_fault(rf_fake_fault f) {
    return f == RF_FAKE_FAULT_STALL || f == RF_FAKE_FAULT_TRUNCATE ||
           f == RF_FAKE_FAULT_INVALID_JSON || f == RF_FAKE_FAULT_ERROR_EVENT;
}

/* Formats the stream's next write into r->out and sets *due; may set r->end. False when out of
 * memory. */
static bool stream_next(fake_req *r, int64_t *due) {
    if (!r->fault_done && is_mid_stream_fault(r->fault) && r->next_ev == r->fault_at) {
        r->fault_done = true;
        *due = ev_time(r, r->fault_at);
        switch (r->fault) {
        case RF_FAKE_FAULT_TRUNCATE:
            r->end = END_CLEAN;
            *due = 0;
            return true;
        case RF_FAKE_FAULT_STALL:
            r->end = END_ABORT;
            *due += r->stall_ns;
            return true;
        case RF_FAKE_FAULT_INVALID_JSON: {
            char line[256];
            snprintf(line, sizeof line,
                     "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"choices\":"
                     "[{\"index\":0,\"delta\":{\"content\":\"tok\n\n",
                     r->id);
            return rf_buf_append_str(&r->out, line) == RF_OK;
        }
        case RF_FAKE_FAULT_ERROR_EVENT:
            r->end = END_CLEAN;
            return sse_append(&r->out, error_obj(500, "fake error event after the 200 header", NULL,
                                                 "fake_error_event")) &&
                   rf_oai_sse_done(&r->out) == RF_OK;
        default:
            break;
        }
    }
    if (r->next_ev < r->n_ev) {
        *due = ev_time(r, r->next_ev);
        json_t *d = event_delta(r, r->next_ev);
        r->next_ev++;
        return d && sse_append(&r->out, delta_chunk(r, d, NULL));
    }
    /* the tail: finish chunk, usage chunk, [DONE] */
    *due = ev_time(r, r->n_ev);
    r->end = END_CLEAN;
    json_t *d = json_object();
    if (d && r->n_ev == 0) json_object_set_new(d, "role", json_string("assistant"));
    if (!d || !sse_append(&r->out, delta_chunk(r, d, r->finish))) return false;
    if (r->include_usage && r->usage) {
        rf_oai_meta m = meta_of(r);
        json_t *u = fake_envelope(
            r, rf_oai_usage_chunk_json(&m, (int32_t)r->prompt_tokens, r->completion_tokens, -1));
        if (!sse_append(&r->out, u)) return false;
    }
    return rf_oai_sse_done(&r->out) == RF_OK;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    fake_req *r = cls;
    (void)pos;
    while (r->out_off >= r->out.len) {
        if (r->end == END_CLEAN) {
            if (!r->reached_end) {
                fake_counters *c = &r->srv->c;
                uint64_t now = (uint64_t)rf_now_ns(), prev = atomic_load(&c->last_end_ns);
                while (now > prev && !atomic_compare_exchange_weak(&c->last_end_ns, &prev, now)) {
                }
                atomic_fetch_add(&c->streamed_tokens, (uint64_t)r->completion_tokens);
            }
            r->reached_end = true;
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        rf_buf_reset(&r->out);
        r->out_off = 0;
        int64_t due = 0;
        if (r->end == END_ABORT || !stream_next(r, &due)) {
            r->ended_by_us = true;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        int w = wait_until(r->srv, r->fd, due);
        if (w == WAIT_STOP) {
            r->ended_by_us = true;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (w == WAIT_GONE) {
            r->client_gone = true;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (r->end == END_ABORT) { /* the stall ran its course */
            r->ended_by_us = true;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        note_late(&r->srv->c, rf_now_ns() - due);
    }
    size_t n = r->out.len - r->out_off;
    if (n > max) n = max;
    memcpy(buf, r->out.data + r->out_off, n);
    r->out_off += n;
    return (ssize_t)n;
}

/* Non-stream truncate: the first half of r->out, then a dropped connection. */
static ssize_t truncated_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    fake_req *r = cls;
    size_t half = r->out.len / 2;
    if (pos >= half) {
        r->ended_by_us = true;
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = half - (size_t)pos;
    if (n > max) n = max;
    memcpy(buf, r->out.data + pos, n);
    return (ssize_t)n;
}

static void reader_free(void *cls) {
    req_unref(cls);
}

/* ---- responses ---- */

static enum MHD_Result queue_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                                  const char *text, size_t len, const char *hname,
                                  const char *hval) {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (hname) MHD_add_response_header(resp, hname, hval);
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Queues o (released) as a JSON body. */
static enum MHD_Result queue_json(struct MHD_Connection *c, unsigned status, json_t *o,
                                  const char *hname, const char *hval) {
    char *s = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) return MHD_NO;
    enum MHD_Result ret = queue_text(c, status, "application/json", s, strlen(s), hname, hval);
    free(s);
    return ret;
}

static enum MHD_Result queue_error(rf_fake *f, struct MHD_Connection *c, unsigned status,
                                   const char *param, const char *code, const char *msg) {
    if (status >= 400 && status < 500 && status != 429) atomic_fetch_add(&f->c.bad_requests, 1);
    return queue_json(c, status, error_obj((int)status, msg, param, code), NULL, NULL);
}

/* ---- request parsing ---- */

typedef struct req_err {
    char msg[256];
    char param[64];
} req_err;

static bool fail(req_err *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(req_err *e, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    return false;
}

/* The 400 of a member read that failed (util/json_read.h): param is its path. */
static bool jr_fail(req_err *e, const rf_jr *j) {
    return fail(e, j->path, "%s", j->err->msg);
}

static int32_t count_words(const char *s) {
    int32_t n = 0;
    bool in = false;
    for (; *s; s++) {
        bool sp = *s == ' ' || *s == '\n' || *s == '\t' || *s == '\r';
        if (!sp && !in) n++;
        in = !sp;
    }
    return n;
}

static bool is_space(char ch) {
    return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r';
}

/* The pieces of a reply: each ends after a run of spaces. Returns their number; with off, also
 * writes their n + 1 boundary offsets. */
static size_t reply_walk(const char *s, size_t len, size_t *off) {
    size_t n = 0;
    if (off) off[0] = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && is_space(s[i])) i++;
        while (i < len && !is_space(s[i])) i++;
        while (i < len && is_space(s[i])) i++;
        n++;
        if (off) off[n] = i;
    }
    return n;
}

/* Fragments of at most fb bytes, never cut inside a UTF-8 sequence (a character longer than fb
 * is one fragment). Returns their number; with off, also writes their n + 1 offsets. */
static size_t frag_walk(const char *s, size_t len, size_t fb, size_t *off) {
    size_t n = 0;
    if (off) off[0] = 0;
    for (size_t i = 0; i < len;) {
        size_t j = len - i > fb ? i + fb : len;
        while (j > i && j < len && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
        if (j == i) { /* fb smaller than this character: take the whole character */
            j = i + 1;
            while (j < len && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
        }
        n++;
        if (off) off[n] = j;
        i = j;
    }
    return n;
}

/* The n + 1 offsets of n pieces in one exact allocation (caller frees); NULL when out of
 * memory. */
static size_t *offsets_alloc(size_t n) {
    return n < SIZE_MAX / sizeof(size_t) - 1 ? malloc((n + 1) * sizeof(size_t)) : NULL;
}

/* Bytes of s (len bytes of UTF-8) inside a JSON string as jansson writes it (no
 * JSON_ENSURE_ASCII, no JSON_ESCAPE_SLASH): '"', '\\', \b \f \n \r \t take 2 bytes, the other
 * control characters 6 (\u00XX), everything else itself. */
static size_t json_escaped_len(const char *s, size_t len) {
    size_t n = len;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\' || ch == '\b' || ch == '\f' || ch == '\n' || ch == '\r' ||
            ch == '\t')
            n += 1;
        else if (ch < 0x20)
            n += 5;
    }
    return n;
}

/* a * b, or SIZE_MAX when that overflows (checked before multiplying). */
static size_t mul_sat(size_t a, size_t b) {
    return a && b > SIZE_MAX / a ? SIZE_MAX : a * b;
}

static size_t add_sat(size_t a, size_t b) {
    return b > SIZE_MAX - a ? SIZE_MAX : a + b;
}

/* The body's structural JSON characters outside strings (',' ':' '[' '{'), counted up to
 * max + 1: a bound on the values and members the parser would allocate (each costs it up to a
 * few hundred bytes, so a body of tiny values would otherwise cost ~80 times its size). A
 * malformed body is counted too; the parser rejects it afterwards. */
static size_t json_items(const uint8_t *s, size_t n, size_t max) {
    size_t k = 0;
    bool in = false;
    for (size_t i = 0; i < n && k <= max; i++) {
        uint8_t ch = s[i];
        if (in) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in = false;
        } else if (ch == '"') {
            in = true;
        } else if (ch == ',' || ch == ':' || ch == '[' || ch == '{') {
            k++;
        }
    }
    return k;
}

static bool tools_have(json_t *tools, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *nm = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (nm && strcmp(nm, name) == 0) return true;
    }
    return false;
}

/* A name sent back (model, finish_reason, tool name): at most RF_FAKE_NAME_MAX bytes. */
static bool check_name(const char *s, const char *param, req_err *e) {
    size_t n = s ? strlen(s) : 0;
    if (n <= RF_FAKE_NAME_MAX) return true;
    return fail(e, param, "%s is %zu bytes, over the %d-byte cap", param, n, RF_FAKE_NAME_MAX);
}

/* Where the sizes' factors came from, for the errors: the request field that set the token
 * count (NULL: none) and its name, and whether tokens_per_chunk and token_text were given. */
typedef struct size_sources {
    const char *tokens_field, *tokens_label;
    bool has_tpc, has_text;
} size_sources;

/* "a,b" from the request fields among a and b (either may be NULL). */
static void join_params(char *out, size_t cap, const char *a, const char *b) {
    snprintf(out, cap, "%s%s%s", a ? a : "", a && b ? "," : "", b ? b : "");
}

/* The size caps on what the plan would build (see fake_server.h), before anything is built:
 * a stream's largest content event, or a non-stream body's content and arguments. */
static bool check_sizes(const fake_req *r, const size_sources *src, size_t args_len, req_err *e) {
    const char *text_label = src->has_text ? "len(fake.token_text)" : "len(the default token_text)";
    const char *text_field = src->has_text ? "fake.token_text" : NULL;
    size_t text = json_escaped_len(r->token_text, r->token_text_len);
    char param[64];
    if (r->stream) {
        /* a reply's pieces and the arguments fragments fit one event by construction */
        if (r->reply || r->n_content == 0) return true;
        bool by_tpc = r->tpc <= r->n_content; /* the first event is the largest */
        size_t k = (size_t)(by_tpc ? r->tpc : r->n_content), bytes = mul_sat(k, text);
        if (bytes <= RF_FAKE_EVENT_MAX) return true;
        const char *k_field =
            by_tpc ? (src->has_tpc ? "fake.tokens_per_chunk" : NULL) : src->tokens_field;
        const char *k_label =
            by_tpc ? (src->has_tpc ? "fake.tokens_per_chunk" : "the server's tokens_per_chunk")
                   : src->tokens_label;
        join_params(param, sizeof param, k_field, text_field);
        return fail(e, param,
                    "%s x %s = %zu x %zu = %zu bytes per event (JSON-escaped) exceeds the "
                    "%u-byte cap",
                    k_label, text_label, k, text, bytes, RF_FAKE_EVENT_MAX);
    }
    size_t content = r->reply ? json_escaped_len(r->reply, strlen(r->reply))
                              : mul_sat((size_t)r->n_content, text);
    size_t args = r->has_tool ? json_escaped_len(r->tool_args, args_len) : 0;
    if (add_sat(content, args) <= RF_FAKE_COMPLETION_MAX) return true;
    if (!r->reply && content > RF_FAKE_COMPLETION_MAX) {
        join_params(param, sizeof param, src->tokens_field, text_field);
        return fail(e, param,
                    "%s x %s = %d x %zu = %zu bytes of non-stream content (JSON-escaped) exceeds "
                    "the %u-byte cap (a stream is not capped in total)",
                    src->tokens_label, text_label, (int)r->n_content, text, content,
                    RF_FAKE_COMPLETION_MAX);
    }
    join_params(param, sizeof param, r->reply ? "fake.reply" : NULL,
                r->has_tool ? "fake.tool_call.arguments" : NULL);
    return fail(e, param,
                "the non-stream content (%zu bytes) and tool-call arguments (%zu bytes, "
                "JSON-escaped) exceed the %u-byte cap",
                content, args, RF_FAKE_COMPLETION_MAX);
}

/* Builds r's plan from the parsed request r->root; false with e filled on a 400. */
static bool plan_request(rf_fake *f, fake_req *r, req_err *e) {
    const rf_fake_params *p = &f->p;
    json_t *root = r->root;

    /* the OpenAI fields, checked by rf_oai_parse */
    int32_t words = 0;
    for (size_t i = 0; i < r->req.n_msgs; i++)
        if (r->req.msgs[i].content) words += count_words(r->req.msgs[i].content);
    r->model = r->req.model ? r->req.model : f->model;
    r->stream = r->req.stream;
    r->include_usage = r->req.include_usage;
    bool has_mct = rf_jr_has(root, "max_completion_tokens");
    bool has_max = has_mct || rf_jr_has(root, "max_tokens");
    int32_t max_tokens = r->req.max_tokens;
    rf_error jerr;
    rf_jr j = rf_jr_make(NULL, RF_ERR_ARG, &jerr);
    const unsigned opt = RF_JR_NULLABLE;
    json_t *tools = NULL, *fk = NULL;
    if (rf_jr_array(&j, root, NULL, "tools", opt, &tools)) return jr_fail(e, &j);

    /* the "fake" field */
    if (rf_jr_object(&j, root, NULL, "fake", opt, &fk)) return jr_fail(e, &j);
    double ttft = p->ttft_ms, gap = p->gap_ms, stall = p->stall_ms;
    if (rf_jr_num(&j, fk, "fake", "ttft_ms", opt, 0, MAX_MS, &ttft) ||
        rf_jr_num(&j, fk, "fake", "gap_ms", opt, 0, MAX_MS, &gap) ||
        rf_jr_num(&j, fk, "fake", "stall_ms", opt, 0, MAX_STALL_MS, &stall))
        return jr_fail(e, &j);
    r->ttft_ns = ms_to_ns(ttft);
    r->gap_ns = ms_to_ns(gap);
    r->stall_ns = ms_to_ns(stall);
    int32_t tokens = 0;
    bool has_tokens = rf_jr_has(fk, "tokens");
    if (rf_jr_i32(&j, fk, "fake", "tokens", opt, 0, MAX_TOKENS, &tokens)) return jr_fail(e, &j);
    bool from_max = false;
    /* where the count came from: the request's field (NULL: none) and its name in errors */
    const char *tokens_field = "fake.tokens", *tokens_label = "fake.tokens";
    if (!has_tokens) {
        tokens_field = NULL;
        if (p->tokens > 0) {
            tokens = p->tokens, tokens_label = "the server's tokens";
        } else if (has_max) {
            tokens = max_tokens, from_max = true;
            tokens_field = tokens_label = has_mct ? "max_completion_tokens" : "max_tokens";
        } else {
            tokens = DEFAULT_TOKENS, tokens_label = "the default tokens";
        }
    }
    r->tpc = p->tokens_per_chunk > 0 ? p->tokens_per_chunk : 1;
    r->usage = p->usage;
    r->fault_at = p->fault_after;
    r->retry_after = p->retry_after_s;
    r->token_text = DEFAULT_TOK_TXT;
    int32_t frag = DEFAULT_FRAG;
    bool has_tpc = rf_jr_has(fk, "tokens_per_chunk"), has_frag = rf_jr_has(fk, "fragment_bytes");
    r->prompt_tokens = words;
    if (rf_jr_i32(&j, fk, "fake", "tokens_per_chunk", opt, 1, 10000, &r->tpc) ||
        rf_jr_bool(&j, fk, "fake", "usage", opt, &r->usage) ||
        rf_jr_str(&j, fk, "fake", "token_text", opt, &r->token_text) ||
        rf_jr_str(&j, fk, "fake", "reply", opt, &r->reply) ||
        rf_jr_i32(&j, fk, "fake", "fragment_bytes", opt, 1, MAX_FRAG_BYTES, &frag) ||
        rf_jr_i32(&j, fk, "fake", "prompt_tokens", opt, 0, 1000000000, &r->prompt_tokens) ||
        rf_jr_i32(&j, fk, "fake", "fault_after", opt, 0, MAX_TOKENS, &r->fault_at) ||
        rf_jr_i32(&j, fk, "fake", "retry_after", opt, 0, 86400, &r->retry_after) ||
        rf_jr_str(&j, fk, "fake", "finish_reason", opt, &r->finish))
        return jr_fail(e, &j);
    r->token_text_len = strlen(r->token_text);

    /* the fault: the request's, else a draw at the server's rate */
    const char *fault_s = NULL;
    if (rf_jr_str(&j, fk, "fake", "fault", opt, &fault_s)) return jr_fail(e, &j);
    r->fault = RF_FAKE_FAULT_NONE;
    if (fault_s) {
        if (!rf_fake_fault_parse(fault_s, &r->fault))
            return fail(e, "fake.fault",
                        "fake.fault '%s' is not one of none, refuse, 500, 429, stall, truncate, "
                        "invalid_json, error_event, wrong_tool_call, wrong_tool_name",
                        fault_s);
    } else if (p->fault != RF_FAKE_FAULT_NONE && p->fault_rate > 0) {
        uint64_t k = atomic_fetch_add(&f->draws, 1);
        double u = (double)(splitmix(p->seed ^ splitmix(k)) >> 11) * 0x1.0p-53;
        if (u < p->fault_rate) r->fault = p->fault;
    }

    /* the tool call */
    json_t *tc = NULL;
    const char *args = NULL;
    if (rf_jr_object(&j, fk, "fake", "tool_call", opt, &tc)) return jr_fail(e, &j);
    if (tc) {
        if (rf_jr_str(&j, tc, "fake.tool_call", "name", RF_JR_REQUIRED, &r->tool_name))
            return jr_fail(e, &j);
        json_t *a = json_object_get(tc, "arguments");
        if (json_is_object(a)) {
            r->tool_args = rf_json_dumps(a, JSON_COMPACT);
            if (!r->tool_args) return fail(e, NULL, "out of memory");
        } else if (rf_jr_str(&j, tc, "fake.tool_call", "arguments", opt, &args)) {
            return jr_fail(e, &j);
        }
        r->has_tool = true;
    }
    if (r->fault == RF_FAKE_FAULT_WRONG_TOOL_CALL) {
        if (!r->tool_name) {
            r->tool_name = json_string_value(
                json_object_get(json_object_get(json_array_get(tools, 0), "function"), "name"));
            if (!r->tool_name) r->tool_name = "count_ids";
        }
        free(r->tool_args);
        r->tool_args = NULL;
        args = BAD_TOOL_ARGS;
        r->has_tool = true;
    } else if (r->fault == RF_FAKE_FAULT_WRONG_TOOL_NAME) {
        static const char *const names[] = {"no_such_tool", "no_such_tool_x", "no_such_tool_y"};
        size_t k = 0;
        while (k + 1 < 3 && tools_have(tools, names[k])) k++;
        r->tool_name = names[k];
        r->has_tool = true;
    }
    if (r->has_tool && !r->tool_args) {
        r->tool_args = strdup(args ? args : "{}");
        if (!r->tool_args) return fail(e, NULL, "out of memory");
    }

    /* the names sent back (the model in every chunk) */
    const char *tool_name_src = tc ? "fake.tool_call.name" : "tools[0].function.name";
    if (!check_name(r->model, "model", e) || !check_name(r->finish, "fake.finish_reason", e) ||
        !check_name(r->tool_name, tool_name_src, e))
        return false;

    /* content tokens and events */
    if (r->reply) {
        size_t len = strlen(r->reply), n_pieces = reply_walk(r->reply, len, NULL);
        if (n_pieces > MAX_TOKENS)
            return fail(e, "fake.reply", "fake.reply has %zu pieces, more than %d", n_pieces,
                        MAX_TOKENS);
        if (!(r->reply_off = offsets_alloc(n_pieces))) return fail(e, NULL, "out of memory");
        reply_walk(r->reply, len, r->reply_off);
        r->n_content = (int32_t)n_pieces;
    } else {
        r->n_content = r->has_tool ? 0 : tokens;
    }
    r->n_cev = (int32_t)(((int64_t)r->n_content + r->tpc - 1) / r->tpc);
    r->n_ev = r->n_cev;
    r->completion_tokens = r->n_content;
    size_t args_len = r->has_tool ? strlen(r->tool_args) : 0;
    if (r->has_tool) {
        size_t n_frag = frag_walk(r->tool_args, args_len, (size_t)frag, NULL);
        if (n_frag > RF_FAKE_DELTAS_MAX)
            return fail(e,
                        has_frag ? "fake.tool_call.arguments,fake.fragment_bytes"
                                 : "fake.tool_call.arguments",
                        "len(fake.tool_call.arguments) / %s = %zu / %d = %zu tool-call deltas "
                        "exceeds the %d-delta cap",
                        has_frag ? "fake.fragment_bytes" : "the default fragment_bytes", args_len,
                        (int)frag, n_frag, RF_FAKE_DELTAS_MAX);
        if (!(r->frag_off = offsets_alloc(n_frag))) return fail(e, NULL, "out of memory");
        frag_walk(r->tool_args, args_len, (size_t)frag, r->frag_off);
        r->n_frag = (int32_t)n_frag;
        r->n_ev += 1 + r->n_frag;
        r->completion_tokens += 1 + r->n_frag;
    }
    size_sources src = {tokens_field, tokens_label, has_tpc,
                        json_is_string(json_object_get(fk, "token_text"))};
    if (!check_sizes(r, &src, args_len, e)) return false;
    if (r->fault_at > r->n_ev) r->fault_at = r->n_ev;
    if (!r->finish)
        r->finish = r->has_tool ? "tool_calls" : (from_max && !r->reply) ? "length" : "stop";
    unsigned long long id = (unsigned long long)atomic_fetch_add(&f->ids, 1);
    snprintf(r->id, sizeof r->id, "chatcmpl-fake-%llu", id);
    snprintf(r->call_id, sizeof r->call_id, "call_fake_%llu", id);
    r->created = (long long)time(NULL);
    return true;
}

/* The non-stream chat.completion body, into r->out, built once in one buffer reserved for its
 * exact size: jansson writes the envelope with an empty content string, and the content is
 * spliced in between its quotes (the reply, or the token text escaped once and copied
 * n_content times), so no copy of the content is made on the way. False when out of memory. */
static bool completion_body(fake_req *r) {
    static const char key[] = "\"content\":\"\"";
    bool has_content = r->n_content > 0 || !r->has_tool;
    json_t *msg = rf_oai_assistant_json(
        has_content ? "" : NULL, 0,
        r->has_tool ? rf_oai_tool_calls_json(r->call_id, r->tool_name, r->tool_args) : NULL);
    rf_oai_meta m = meta_of(r);
    json_t *o = rf_oai_chat_body_json(&m, msg, r->finish, r->usage ? usage_obj(r) : NULL);
    if (o && json_object_set_new(o, "system_fingerprint", json_string(FINGERPRINT))) {
        json_decref(o);
        o = NULL;
    }
    char *env = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!env) return false;
    size_t env_len = strlen(env), at = env_len, piece_len = 0, reps = 0;
    char *piece = NULL; /* the content, escaped, with its quotes */
    if (has_content && r->n_content > 0) {
        /* Inside a string every '"' is escaped, so `"content":""` can only be the key and its
         * empty value. */
        const char *k = strstr(env, key);
        json_t *str =
            r->reply ? json_string(r->reply) : json_stringn(r->token_text, r->token_text_len);
        piece = k && str ? rf_json_dumps(str, JSON_ENCODE_ANY) : NULL;
        json_decref(str);
        if (!piece) {
            free(env);
            return false;
        }
        at = (size_t)(k - env) + sizeof key - 2; /* just before the closing quote */
        piece_len = strlen(piece) - 2;
        reps = r->reply ? 1 : (size_t)r->n_content;
    }
    /* plan_request checked reps * piece_len against RF_FAKE_COMPLETION_MAX; checked again here
     * so that no estimate can let a body past it */
    rf_buf_reset(&r->out);
    bool ok = mul_sat(reps, piece_len) <= RF_FAKE_COMPLETION_MAX &&
              rf_buf_reserve(&r->out, env_len + reps * piece_len) == RF_OK &&
              rf_buf_append(&r->out, env, at) == RF_OK;
    for (size_t i = 0; ok && i < reps; i++)
        ok = rf_buf_append(&r->out, piece + 1, piece_len) == RF_OK;
    ok = ok && rf_buf_append(&r->out, env + at, env_len - at) == RF_OK;
    free(piece);
    free(env);
    return ok;
}

/* Queues the first len bytes of r->out as the body, handing its buffer to libmicrohttpd. */
static enum MHD_Result queue_out(struct MHD_Connection *c, fake_req *r, size_t len) {
    uint8_t *data = rf_buf_take(&r->out, NULL);
    struct MHD_Response *resp =
        data ? MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!resp) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result queue_stream(rf_fake *f, fake_req *r, struct MHD_Connection *c) {
    atomic_fetch_add(&r->refs, 1);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, r, reader_free);
    if (!resp) {
        req_unref(r);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    r->stream_resp = true;
    atomic_fetch_add(&f->c.streams_started, 1);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A non-stream chat response: waits for the schedule, then the body (or its fault). */
static enum MHD_Result answer_body(rf_fake *f, fake_req *r, struct MHD_Connection *c) {
    int64_t due = r->fault == RF_FAKE_FAULT_STALL ? r->t0 + r->stall_ns : ev_time(r, r->n_ev);
    int w = wait_until(f, r->fd, due);
    if (w == WAIT_GONE) r->client_gone = true;
    if (w != WAIT_DUE || r->fault == RF_FAKE_FAULT_STALL) {
        r->ended_by_us = w != WAIT_GONE;
        return MHD_NO;
    }
    if (r->fault == RF_FAKE_FAULT_ERROR_EVENT)
        return queue_json(c, MHD_HTTP_OK,
                          error_obj(500, "fake error in a 200 body", NULL, "fake_error_event"),
                          NULL, NULL);
    if (!completion_body(r)) return MHD_NO;
    if (r->fault == RF_FAKE_FAULT_INVALID_JSON) return queue_out(c, r, r->out.len / 2);
    if (r->fault == RF_FAKE_FAULT_TRUNCATE) {
        atomic_fetch_add(&r->refs, 1);
        struct MHD_Response *resp =
            MHD_create_response_from_callback(r->out.len, 4096, truncated_reader, r, reader_free);
        if (!resp) {
            req_unref(r);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    r->body_resp = true;
    return queue_out(c, r, r->out.len);
}

static enum MHD_Result answer_chat(rf_fake *f, fake_req *r, struct MHD_Connection *c) {
    if (r->too_large)
        return queue_error(f, c, MHD_HTTP_CONTENT_TOO_LARGE, NULL, "request_too_large",
                           "request body is larger than 1 MiB");
    if (json_items(r->body.data, r->body.len, RF_FAKE_JSON_ITEMS_MAX) > RF_FAKE_JSON_ITEMS_MAX) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "request body has more than %d structural JSON characters (',' ':' '[' '{' "
                 "outside strings)",
                 RF_FAKE_JSON_ITEMS_MAX);
        rf_buf_free(&r->body);
        return queue_error(f, c, MHD_HTTP_BAD_REQUEST, NULL, "too_many_json_items", msg);
    }
    /* the OpenAI fields: the server's parser, with its limits; any model is answered; tool
     * calls are the fake's to answer */
    rf_oai_limits lim = {NULL, MAX_TOKENS};
    rf_oai_error oe;
    rf_status pst =
        rf_oai_parse(RF_OAI_CHAT, (const char *)r->body.data, r->body.len, &lim, &r->req, &oe);
    rf_buf_free(&r->body);
    if (pst) {
        if (oe.http == 400 || oe.http == 404) atomic_fetch_add(&f->c.bad_requests, 1);
        return queue_json(c, (unsigned)oe.http, rf_oai_error_json(&oe), NULL, NULL);
    }
    r->root = r->req.root;
    req_err e;
    if (!plan_request(f, r, &e))
        return queue_error(f, c, MHD_HTTP_BAD_REQUEST, e.param[0] ? e.param : NULL, NULL, e.msg);
    atomic_fetch_add(&f->c.chat_requests, 1);
    uint64_t zero = 0; /* the first chat request's arrival: set once */
    atomic_compare_exchange_strong(&f->c.first_arrival_ns, &zero, (uint64_t)r->t0);
    if (r->fault != RF_FAKE_FAULT_NONE) {
        atomic_fetch_add(&f->c.faults_injected, 1);
        atomic_fetch_add(&f->c.by_kind[r->fault], 1);
    }
    switch (r->fault) {
    case RF_FAKE_FAULT_REFUSE:
        r->ended_by_us = true;
        return MHD_NO;
    case RF_FAKE_FAULT_500:
        return queue_json(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          error_obj(500, "fake internal server error", NULL, "fake_internal_error"),
                          NULL, NULL);
    case RF_FAKE_FAULT_429: {
        char ra[24];
        snprintf(ra, sizeof ra, "%d", (int)r->retry_after);
        return queue_json(
            c, MHD_HTTP_TOO_MANY_REQUESTS,
            error_obj(429, "fake rate limit: retry later", NULL, "rate_limit_exceeded"),
            MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    default:
        break;
    }
    return r->stream ? queue_stream(f, r, c) : answer_body(f, r, c);
}

static enum MHD_Result answer_models(rf_fake *f, struct MHD_Connection *c) {
    json_t *o = rf_oai_models_json(f->model, (int64_t)time(NULL));
    json_t *m = json_array_get(json_object_get(o, "data"), 0);
    if (!m || json_object_set_new(m, "owned_by", json_string("roofline-fake")) ||
        json_object_set_new(m, "parent", json_null()) ||
        json_object_set_new(m, "max_model_len", json_integer(32768))) {
        json_decref(o);
        return MHD_NO;
    }
    return queue_json(c, MHD_HTTP_OK, o, NULL, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    rf_fake *f = cls;
    fake_req *r = *con_cls;
    (void)version;
    if (!r) { /* headers are in: the request has arrived */
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->t0 = rf_now_ns();
        r->srv = f;
        atomic_init(&r->refs, 1);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        r->fd = ci ? (int)ci->connect_fd : -1;
        if (r->fd >= 0) { /* each event goes out when due: no Nagle wait for the last ACK */
            int one = 1;
            setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        rf_buf_init(&r->body, BODY_MAX);
        rf_buf_init(&r->out, 0);
        *con_cls = r;
        atomic_fetch_add(&f->c.requests, 1);
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!r->too_large && rf_buf_append(&r->body, upload_data, *upload_data_size) != RF_OK)
            r->too_large = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    const char *path = strncmp(url, "/v1/", 4) == 0 ? url + 3 : url;
    bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    if (strcmp(path, "/chat/completions") == 0) {
        if (post) return answer_chat(f, r, c);
    } else if (strcmp(path, "/models") == 0) {
        if (get) return answer_models(f, c);
    } else if (strcmp(path, "/health") == 0) {
        if (get)
            return queue_text(c, MHD_HTTP_OK, "application/json", "{\"status\":\"ok\"}", 15, NULL,
                              NULL);
    } else {
        char msg[200];
        snprintf(msg, sizeof msg, "no route for %.20s %.120s", method, url);
        return queue_error(f, c, MHD_HTTP_NOT_FOUND, NULL, "not_found", msg);
    }
    char msg[200];
    snprintf(msg, sizeof msg, "method %.20s is not allowed on %.120s", method, url);
    return queue_error(f, c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "method_not_allowed", msg);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    rf_fake *f = cls;
    fake_req *r = *con_cls;
    (void)c;
    if (!r) return;
    *con_cls = NULL;
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    if (r->client_gone || (!ok && toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN &&
                           !r->ended_by_us && !atomic_load(&f->stopping)))
        atomic_fetch_add(&f->c.client_disconnects, 1);
    if (ok && r->stream_resp && r->reached_end) atomic_fetch_add(&f->c.streams_completed, 1);
    if (ok && r->body_resp) atomic_fetch_add(&f->c.bodies_completed, 1);
    req_unref(r);
}

/* ---- lifecycle ---- */

rf_status rf_fake_start(const rf_fake_params *p, rf_fake **out, rf_error *err) {
    *out = NULL;
    if (p->port < 0 || p->port > 65535)
        return rf_error_set(err, RF_ERR_ARG, "fake server: port %d is not in [0, 65535]", p->port);
    if (!(p->ttft_ms >= 0 && p->ttft_ms <= MAX_MS) || !(p->gap_ms >= 0 && p->gap_ms <= MAX_MS))
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: ttft_ms and gap_ms must be in [0, %g], got %g and %g",
                            MAX_MS, p->ttft_ms, p->gap_ms);
    if (p->tokens < 0 || p->tokens > MAX_TOKENS || p->tokens_per_chunk < 0 ||
        p->tokens_per_chunk > 10000)
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: tokens must be in [0, %d] and tokens_per_chunk in "
                            "[0, 10000], got %d and %d",
                            MAX_TOKENS, (int)p->tokens, (int)p->tokens_per_chunk);
    if ((unsigned)p->fault >= RF_FAKE_FAULT_COUNT || !(p->fault_rate >= 0 && p->fault_rate <= 1))
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: fault %d / fault_rate %g out of range (rate in [0, 1])",
                            (int)p->fault, p->fault_rate);
    if (p->fault_after < 0 || !(p->stall_ms >= 0 && p->stall_ms <= MAX_STALL_MS) ||
        p->retry_after_s < 0)
        return rf_error_set(err, RF_ERR_ARG,
                            "fake server: fault_after, stall_ms and retry_after_s must be >= 0 "
                            "(stall_ms <= %g)",
                            MAX_STALL_MS);
    const char *model = p->model ? p->model : "fake-model";
    if (strlen(model) >= sizeof(((rf_fake *)0)->model) || !*model)
        return rf_error_set(err, RF_ERR_ARG, "fake server: model name must be 1..127 bytes");

    rf_fake *f = calloc(1, sizeof *f);
    if (!f) return rf_error_set(err, RF_ERR_NOMEM, "fake server: out of memory");
    f->p = *p;
    f->p.model = NULL;
    snprintf(f->model, sizeof f->model, "%s", model);
    atomic_init(&f->stopping, 0);
    f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (f->stop_fd < 0) {
        free(f);
        return rf_error_set(err, RF_ERR_IO, "fake server: eventfd: %s", strerror(errno));
    }
    json_object_seed(0); /* before any connection thread makes a JSON object */

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)p->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL,
        (uint16_t)p->port, NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_LIMIT, CONN_LIMIT, MHD_OPTION_THREAD_STACK_SIZE, STACK_BYTES,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, f, MHD_OPTION_END);
    if (!f->d) {
        close(f->stop_fd);
        free(f);
        return rf_error_set(err, RF_ERR_IO,
                            "fake server: cannot listen on 127.0.0.1:%d (port in use?)", p->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    f->port = di && di->port ? di->port : p->port;
    *out = f;
    return RF_OK;
}

int rf_fake_port(const rf_fake *f) {
    return f->port;
}

rf_fake_stats rf_fake_get_stats(const rf_fake *f) {
    rf_fake *m = (rf_fake *)f; /* atomic loads take non-const pointers on some compilers */
    rf_fake_stats s;
    memset(&s, 0, sizeof s);
    s.requests = atomic_load(&m->c.requests);
    s.chat_requests = atomic_load(&m->c.chat_requests);
    s.bad_requests = atomic_load(&m->c.bad_requests);
    s.streams_started = atomic_load(&m->c.streams_started);
    s.streams_completed = atomic_load(&m->c.streams_completed);
    s.bodies_completed = atomic_load(&m->c.bodies_completed);
    s.faults_injected = atomic_load(&m->c.faults_injected);
    for (int i = 0; i < RF_FAKE_FAULT_COUNT; i++)
        s.faults_by_kind[i] = atomic_load(&m->c.by_kind[i]);
    s.client_disconnects = atomic_load(&m->c.client_disconnects);
    for (int i = 0; i < RF_FAKE_LATE_BINS; i++) {
        s.late_hist[i] = atomic_load(&m->c.late_hist[i]);
        s.chunks_sent += s.late_hist[i];
    }
    s.late_max_ms = (double)atomic_load(&m->c.late_max_ns) / 1e6;
    s.streamed_tokens = atomic_load(&m->c.streamed_tokens);
    uint64_t a = atomic_load(&m->c.first_arrival_ns), z = atomic_load(&m->c.last_end_ns);
    s.served_s = a && z > a ? (double)(z - a) / 1e9 : 0;
    return s;
}

double rf_fake_late_quantile(const rf_fake_stats *s, double q) {
    const uint64_t n = s->chunks_sent;
    if (!n) return 0;
    uint64_t want = (uint64_t)ceil(q * (double)n), acc = 0;
    if (want < 1) want = 1;
    for (int i = 0; i < RF_FAKE_LATE_BINS; i++) {
        acc += s->late_hist[i];
        if (acc >= want) return i == RF_FAKE_LATE_BINS - 1 ? s->late_max_ms : (i + 1) * 0.1;
    }
    return s->late_max_ms;
}

void rf_fake_stop(rf_fake *f) {
    if (!f) return;
    atomic_store(&f->stopping, 1);
    uint64_t one = 1;
    ssize_t wr = write(f->stop_fd, &one, sizeof one); /* wakes every wait_until */
    (void)wr;
    MHD_stop_daemon(f->d);
    close(f->stop_fd);
    free(f);
}
