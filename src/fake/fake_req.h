/* fake_req.h: the fake server's state and one request's state, shared by the files of src/fake
 * (not for callers: they use fake/fake_server.h). Who does what:
 *   fake_server.c     the server's lifecycle (start, stop, stats) and a request's (counted,
 *                     its outcome counted, freed) over src/httpd;
 *   fake_handlers.c   the route table and the handlers (chat completions, models, health), the
 *                     error replies and the faults that answer at once;
 *   fake_plan.c       a chat request's plan: the "fake" field, the fault draw, the tool call,
 *                     the events, the size caps;
 *   fake_stream.c     the plan written out: stream events at their times, the non-stream body.
 *
 * Ownership: a fake_req is an rf_httpd_req (its first member) and shares its reference count
 * (the connection's and a streaming response's reader's; the last one frees it, fake_server.c's
 * release freeing what is below). The plan's strings are borrowed from req (the parsed body).
 */
#ifndef RF_FAKE_FAKE_REQ_H
#define RF_FAKE_FAKE_REQ_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fake/fake_server.h"
#include "httpd/httpd.h"
#include "openai/request.h"
#include "util/buf.h"

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

struct rf_fake {
    rf_httpd *d;
    rf_fake_params p;
    char model[128];
    atomic_uint_least64_t ids; /* request ids */
    atomic_uint_least64_t draws;
    fake_counters c;
};

enum { END_NONE = 0, END_CLEAN, END_ABORT };

typedef struct fake_req {
    rf_httpd_req h; /* first: the transport's part (t0, the schedule's origin; fd; body) */
    rf_fake *srv;
    rf_openai_req req; /* the parsed request; the plan's strings are borrowed from it */
    json_t *root;      /* req.root */

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

/* fake_handlers.c: the transport's dispatch (the body is in). */
rf_httpd_ret rf_fake_dispatch(rf_httpd_req *h);

/* fake_plan.c */
/* A 400 of the plan: the message and the param it names ("" for none). */
typedef struct rf_fake_err {
    char msg[256];
    char param[64];
} rf_fake_err;
/* Builds r's plan from the parsed request r->root; false with e filled on a 400. */
bool rf_fake_plan(rf_fake *f, fake_req *r, rf_fake_err *e);
/* The body's structural JSON characters outside strings (',' ':' '[' '{'), counted up to
 * max + 1 (see fake_server.h: RF_FAKE_JSON_ITEMS_MAX). */
size_t rf_fake_json_items(const uint8_t *s, size_t n, size_t max);
/* a * b, or SIZE_MAX when that overflows (checked before multiplying). */
size_t rf_fake_mul_sat(size_t a, size_t b);

/* fake_stream.c */
/* Content event i's due time (the events past the last are due with the last). */
int64_t rf_fake_ev_time(const fake_req *r, int32_t i);
/* An OpenAI error object; its type follows http. */
json_t *rf_fake_error_obj(int http, const char *msg, const char *param, const char *code);
/* The stream's content reader (rf_httpd_reader): one SSE write at a time, each at its time. */
ssize_t rf_fake_stream_read(rf_httpd_req *h, uint64_t pos, char *buf, size_t max);
/* Non-stream truncate's reader: the first half of r->out, then a dropped connection. */
ssize_t rf_fake_truncated_read(rf_httpd_req *h, uint64_t pos, char *buf, size_t max);
/* The non-stream chat.completion body into r->out; false when out of memory. */
bool rf_fake_completion_body(fake_req *r);

#endif
