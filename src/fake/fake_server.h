/* fake_server.h: the bench's fake backend: a small OpenAI-compatible HTTP server (libmicrohttpd,
 * one thread per connection) that streams a programmable schedule and injects programmable
 * faults, so the bench's timing and error handling can be tested against known truth.
 *
 * Endpoints (also without the /v1 prefix):
 *   POST /v1/chat/completions   stream true: SSE chat.completion.chunk events; false: one
 *                               chat.completion body
 *   GET  /v1/models             {object:"list", data:[{id, object:"model", created, owned_by,
 *                               root, parent}]}
 *   GET  /health                200 {"status":"ok"}
 * Anything else is 404 (405 for a known path with the wrong method). Errors are OpenAI error
 * objects {"error":{"message","type","param","code"}} (openai/response.h): 400 for a body
 * that `roofline serve`'s parser refuses (openai/request.h: not JSON, not an object, no valid
 * non-empty "messages", a field of the wrong type or out of range, param naming it), except that
 * any model is answered, max_tokens may go up to 1000000, and tools, tool_choice,
 * response_format and logprobs are accepted (rf_openai_parse_ex, RF_OPENAI_ACCEPT_UNSUPPORTED); a
 * bad "fake" member (util/json_read.h, param its path); a body that would exceed one of the
 * size caps below (param names the field or fields, comma-separated; the
 * message gives the product and the cap), or has more than RF_FAKE_JSON_ITEMS_MAX structural
 * characters (code "too_many_json_items"); 413 for a body over 1 MiB.
 *
 * The schedule. Times are absolute CLOCK_MONOTONIC instants computed from the request's arrival
 * t0 (the access handler's first call, when the headers are in), so nothing drifts:
 *   content event i (0-based) is written at t0 + ttft_ms + i * gap_ms;
 *   the first content event carries the role "assistant" together with the first content (no
 *   role-only prelude: a prelude would make vLLM-style TTFT look near zero);
 *   right after the last content event, in one write: the finish_reason chunk (empty delta), the
 *   usage chunk (choices [], only when usage is on and the request asked for
 *   stream_options.include_usage; every other chunk then has "usage":null), then data: [DONE];
 *   with 0 tokens, the finish chunk carries the role and is written at t0 + ttft_ms.
 * A non-stream response is queued at the time its last content event would have been written,
 * t0 + ttft_ms + (events - 1) * gap_ms.
 * Content: `tokens` copies of token_text ("tok " by default), tokens_per_chunk tokens per event
 * (the last event may carry fewer); or a fixed reply split after each run of spaces ("The answer
 * is 8." -> "The ", "answer ", "is ", "8."; the pieces concatenate to the reply) with
 * tokens_per_chunk pieces per event; then, when a tool call is given, the call as OpenAI
 * tool-call deltas: the first (one event) with index 0, id, type "function", function.name and
 * arguments "", then the arguments in fragments of at most fragment_bytes bytes (UTF-8 safe), one
 * event each. Each content piece, the tool-call header and each arguments fragment count as one
 * token: usage.completion_tokens is exactly the number sent. usage.prompt_tokens is the number
 * of whitespace-separated words in the messages' text, unless fake.prompt_tokens says otherwise.
 * finish_reason: "tool_calls" with a tool call; "length" when the token count came from the
 * request's max_tokens; else "stop"; fake.finish_reason overrides.
 *
 * The request-level "fake" field (an object in the request body; every member optional; unknown
 * members are ignored; a member of the wrong type or out of range is a 400 naming it):
 *   "ttft_ms": number 0..600000      arrival to the first content event
 *   "gap_ms": number 0..600000       between content events
 *   "tokens": integer 0..1000000     output tokens (default: the server's tokens when > 0, else
 *                                    the request's max_completion_tokens or max_tokens, else 16)
 *   "tokens_per_chunk": int 1..10000 tokens per content event
 *   "usage": bool                    send usage (stream chunk and non-stream field)
 *   "token_text": string             each generated token's text (default "tok ")
 *   "reply": string                  fixed reply text instead of generated tokens
 *   "tool_call": {"name": string, "arguments": string or object (serialised compactly)}
 *   "fragment_bytes": int 1..65536   arguments bytes per tool-call delta (default 8)
 *   "finish_reason": string          overrides the finish_reason
 *   "prompt_tokens": int 0..10^9     usage.prompt_tokens
 *   "fault": string                  one of the kinds below, or "none" (no fault, even when
 *                                    the server injects faults at a rate)
 *   "fault_after": int 0..1000000    content events written before a mid-stream fault (default
 *                                    the server's, 2; clamped to the number of content events)
 *   "stall_ms": number 0..86400000   how long a stall lasts before the server drops the
 *                                    connection (default the server's, 60000)
 *   "retry_after": int 0..86400      the 429's Retry-After seconds (default the server's, 1)
 * token_text, tokens_per_chunk, tokens, tool_call, fragment_bytes, finish_reason and the
 * request's model (and max_tokens or max_completion_tokens when it sets the count) are held to
 * the size caps below.
 * Example: {"model":"m","messages":[...],"stream":true,
 *           "fake":{"ttft_ms":40,"gap_ms":15,"tokens":10,"fault":"truncate","fault_after":3}}
 *
 * With a reply or a tool call, "tokens" is ignored: the reply's pieces and the call's deltas
 * are the tokens (and the wrong_tool_* faults send only the call, after the reply if any).
 *
 * Size caps. The request chooses how big the response is, so every size the server builds from
 * request fields multiplied together is checked when the request is planned, before anything
 * is built or scheduled (products in size_t, checked before multiplying), and a request over a
 * cap gets the 400 above, e.g. param "fake.tokens_per_chunk,fake.token_text", message
 * "fake.tokens_per_chunk x len(fake.token_text) = 10000 x 100000 = 1000000000 bytes per event
 * (JSON-escaped) exceeds the 1048576-byte cap". Lengths are of the text as written, JSON-escaped
 * the way jansson writes it (a control character takes up to 6 bytes):
 *   RF_FAKE_EVENT_MAX (1 MiB): the content of one stream event, min(tokens_per_chunk, tokens)
 *     x len(token_text). A stream is built one event at a time, so a stream of many events is
 *     bounded per event, not in total. A reply's pieces and an arguments fragment come from the
 *     1 MiB request body (a fragment is at most 65536 bytes before escaping), so they are within
 *     this cap by construction. One event is at most this plus its envelope (id, model, ...: a
 *     few KiB, model being capped below).
 *   RF_FAKE_COMPLETION_MAX (64 MiB): a non-stream body's content plus tool-call arguments,
 *     tokens x len(token_text) (or the reply) + len(arguments); the body is built in memory at
 *     once, in one buffer reserved for its exact size (the token's text is escaped once and
 *     copied tokens times).
 *   RF_FAKE_NAME_MAX (1024 bytes, before escaping): the request's model (sent in every chunk),
 *     fake.finish_reason and the tool call's name (fake.tool_call.name, or the request's first
 *     tool's name for wrong_tool_call).
 *   RF_FAKE_DELTAS_MAX (1000000): a tool call's argument fragments, len(arguments) /
 *     fragment_bytes (a reply has at most 1000000 pieces too).
 *   RF_FAKE_JSON_ITEMS_MAX (65536): the request body's structural characters outside strings
 *     (',' ':' '[' '{'), counted before parsing, so a 1 MiB body of tiny values cannot make the
 *     parser allocate ~80 times its size; the parser also limits nesting to 2048 levels.
 * The server-wide params are checked when the server starts (tokens <= 1000000, tokens_per_chunk
 * <= 10000, model <= 127 bytes) and with the default token text "tok " stay far within these
 * caps (40000 bytes per event, 4 MB per body); combined with a request's fields they go through
 * the same per-request checks. The memory a request can make the server hold is thus about its
 * 1 MiB body, its parse (at most about 10 MiB), and one event (a few MiB while it is formatted)
 * or one non-stream body (64 MiB plus its envelope).
 *
 * Faults (fake.fault, or the server's fault kind applied to each request with probability
 * fault_rate, drawn from a seeded counter-based generator; refuse, 500 and 429 answer as soon
 * as the body is in, without waiting for the schedule):
 *   refuse           the connection is closed with no response at all (the handler closes
 *                    it once the body is in)
 *   500              HTTP 500, error body type "server_error", code "fake_internal_error"
 *   429              HTTP 429, Retry-After header, type "rate_limit_error", code
 *                    "rate_limit_exceeded"
 *   stall            stream: fault_after content events, then no byte at all until the client
 *                    goes away, the server stops, or stall_ms passes (then the connection is
 *                    dropped without the closing chunk); non-stream: no response until
 *                    stall_ms after arrival, then the connection is closed
 *   truncate         stream: fault_after content events, then a clean end of the chunked body
 *                    with no finish_reason, no usage and no [DONE]; non-stream: a 200 whose
 *                    Content-Length promises the full body but the connection drops halfway
 *   invalid_json     stream: a `data: {...` line of broken JSON at the time of content event
 *                    fault_after, then the normal stream continues (all tokens, [DONE]);
 *                    non-stream: a 200 body that is the first half of the JSON
 *   error_event      stream: fault_after content events, then `data: {"error":{...}}` (type
 *                    "server_error", code "fake_error_event") and data: [DONE], no finish;
 *                    non-stream: a 200 whose body is that error object
 *   wrong_tool_call  a tool call (name: fake.tool_call.name, else the request's first tool, else
 *                    "count_ids") whose arguments are not valid JSON; finish "tool_calls"
 *   wrong_tool_name  a tool call whose name is in no tool of the request ("no_such_tool",
 *                    else "no_such_tool_x", "no_such_tool_y"), arguments
 *                    fake.tool_call.arguments or "{}"; finish "tool_calls"
 *
 * Client disconnects: every wait for a scheduled time polls the connection's socket for a
 * peer close (POLLRDHUP) and the server's stop event, so a client that goes away mid-stream (or
 * during a stall, when no byte is written) is seen at once; a failed write ends the request
 * too. The stream stops, its state is freed, and client_disconnects counts it. (A client that
 * half-closes its sending side while still reading would count as gone.)
 *
 * Threads: rf_fake_start starts libmicrohttpd's listening thread; each connection gets its own
 * thread (connection limit 8192, 1 MiB stacks), which blocks in the stream's content reader until
 * the next event is due. rf_fake_stats may be called from any thread. The transport (the
 * daemon, the request's lifecycle, the waits) is src/httpd's.
 *
 * Ownership: rf_fake_start returns a server owned by the caller, released by rf_fake_stop,
 * which wakes every waiting stream (they end with an error), closes all connections, joins
 * all threads and frees everything. Params strings are copied.
 */
#ifndef RF_FAKE_FAKE_SERVER_H
#define RF_FAKE_FAKE_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "roofline/status.h"

typedef enum rf_fake_fault {
    RF_FAKE_FAULT_NONE = 0,
    RF_FAKE_FAULT_REFUSE,
    RF_FAKE_FAULT_500,
    RF_FAKE_FAULT_429,
    RF_FAKE_FAULT_STALL,
    RF_FAKE_FAULT_TRUNCATE,
    RF_FAKE_FAULT_INVALID_JSON,
    RF_FAKE_FAULT_ERROR_EVENT,
    RF_FAKE_FAULT_WRONG_TOOL_CALL,
    RF_FAKE_FAULT_WRONG_TOOL_NAME,
    RF_FAKE_FAULT_COUNT
} rf_fake_fault;

/* "none", "refuse", "500", "429", "stall", "truncate", "invalid_json", "error_event",
 * "wrong_tool_call", "wrong_tool_name"; "?" when out of range. */
const char *rf_fake_fault_name(rf_fake_fault f);
/* The kind named s (the names above); false when s names none. */
bool rf_fake_fault_parse(const char *s, rf_fake_fault *out);

/* Server-wide defaults; each may be overridden per request through the "fake" field. */
typedef struct rf_fake_params {
    int port;                 /* 0: an ephemeral port (rf_fake_port tells which) */
    double ttft_ms;           /* default 50 */
    double gap_ms;            /* default 10 */
    int32_t tokens;           /* 0: the request's max_(completion_)tokens, else 16 */
    int32_t tokens_per_chunk; /* default 1 */
    bool usage;               /* default true */
    rf_fake_fault fault;      /* injected into each request with probability fault_rate */
    double fault_rate;        /* 0..1; default 0 */
    int32_t fault_after;      /* content events before a mid-stream fault; default 2 */
    double stall_ms;          /* default 60000 */
    int32_t retry_after_s;    /* the 429's Retry-After; default 1 */
    uint64_t seed;            /* for the fault draw; default 1 */
    const char *model;        /* the served model id; NULL: "fake-model" */
} rf_fake_params;

/* The size caps (see the top comment). */
#define RF_FAKE_EVENT_MAX      (1u << 20)  /* content bytes (JSON-escaped) of one stream event */
#define RF_FAKE_COMPLETION_MAX (64u << 20) /* content + arguments bytes of a non-stream body */
#define RF_FAKE_NAME_MAX       1024        /* model, finish_reason, tool name (bytes) */
#define RF_FAKE_DELTAS_MAX     1000000     /* tool-call argument fragments */
#define RF_FAKE_JSON_ITEMS_MAX 65536       /* structural characters of a request body */

#define RF_FAKE_LATE_BINS 1001 /* 0.1 ms each; the last one collects 100 ms and over */

typedef struct rf_fake_stats {
    uint64_t requests;          /* HTTP requests received (any path) */
    uint64_t chat_requests;     /* valid POST /v1/chat/completions */
    uint64_t bad_requests;      /* answered 400/404/405/413 */
    uint64_t streams_started;   /* streaming responses queued */
    uint64_t streams_completed; /* streaming responses that reached their scheduled end and
                                 * were delivered in full (includes cleanly ending faulted
                                 * streams: truncate, invalid_json, error_event, wrong_tool_*) */
    uint64_t bodies_completed;  /* non-stream 200 responses delivered in full */
    uint64_t faults_injected;   /* requests given a fault (by fake.fault or the rate) */
    uint64_t faults_by_kind[RF_FAKE_FAULT_COUNT];
    uint64_t client_disconnects; /* requests whose client went away before the response ended */
    /* The server's own punctuality: for every streamed chunk, how late it was handed to the
     * socket against its programmed time, in 0.1 ms bins (the last bin: 100 ms or more). A
     * client's error is only its own beyond this. */
    uint64_t chunks_sent; /* the histogram's total */
    uint64_t late_hist[RF_FAKE_LATE_BINS];
    double late_max_ms;
    /* What was served: tokens of streams that reached their end, over the time from the first
     * chat request's arrival to the last stream's end (a throughput truth that includes the
     * server's own connection and start-up costs). */
    uint64_t streamed_tokens;
    double served_s;
} rf_fake_stats;

/* The q-quantile (0..1) of the chunk lateness in ms (bin upper edges); 0 with no chunks. */
double rf_fake_late_quantile(const rf_fake_stats *s, double q);

typedef struct rf_fake rf_fake;

rf_fake_params rf_fake_default_params(void);

/* Starts the server on 127.0.0.1. RF_ERR_ARG: a parameter out of range (message names it);
 * RF_ERR_IO: the port could not be bound or the daemon not started; RF_ERR_NOMEM. On failure
 * *out is NULL and nothing is left running. */
rf_status rf_fake_start(const rf_fake_params *p, rf_fake **out, rf_error *err);

/* The bound TCP port. */
int rf_fake_port(const rf_fake *f);

/* A snapshot of the counters (each read atomically; the set is not one instant). */
rf_fake_stats rf_fake_get_stats(const rf_fake *f);

/* Stops the server: streams in flight end at once (the connection is dropped), every thread is
 * joined, everything freed. NULL is a no-op. */
void rf_fake_stop(rf_fake *f);

#endif
