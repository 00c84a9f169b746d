/* http.h: roofline's OpenAI-compatible HTTP server (libmicrohttpd) on the engine's public API.
 *
 * Endpoints: POST /v1/chat/completions and POST /v1/completions (stream and non-stream),
 * GET /v1/models, GET /health (503 {"status":"loading"} until an engine is attached, then 200
 * {"status":"ok"}), GET /metrics (Prometheus, server/metrics.h; 404 when off), POST /tokenize
 * {"content"} -> {"tokens"} and POST /detokenize {"tokens"}
 * -> {"content"} (llama-server's shapes). The /v1 prefix is optional. Unknown paths are 404, a
 * known path with the wrong method 405, a body over body_max 413, a missing or wrong
 * `Authorization: Bearer KEY` 401 (when api_key is set; /health is always open), a full engine
 * queue 429 with Retry-After, a prompt that does not fit the context 400
 * context_length_exceeded. Every error is an OpenAI error object. One line per request goes to
 * stderr: id, method, path, status, prompt and completion tokens, TTFT and duration in ms.
 *
 * Threads: libmicrohttpd with one thread per connection (MHD_USE_THREAD_PER_CONNECTION with its
 * internal polling thread). A non-stream completion blocks its connection's thread until the
 * engine's final event (polling the socket, so a client that goes away cancels the request). A
 * stream's content reader blocks on the request's condition variable, fed by the engine's event
 * callback (which only appends text to a per-request buffer and signals); after 1 s without
 * news it writes an SSE comment ": ping" so a dead client shows up as a failed write. When MHD
 * reports the request ended other than COMPLETED_OK before the engine's final event, the
 * request is cancelled (rf_engine_cancel). The engine pointer is guarded by a read-write lock:
 * handlers hold it shared while they use the engine, rf_srv_stop takes it exclusively. The
 * transport (the daemon, the request's lifecycle, the deadlines) is src/httpd's.
 * Deadlines: libmicrohttpd's idle timeout (idle_timeout_s, off while a non-stream generation
 * runs), and a read deadline per request (read_timeout_s): checked on the connection's thread
 * as body bytes arrive (a 408), and by a watchdog thread for connections still sending headers
 * (their socket is shut down).
 *
 * Ownership: rf_srv_start returns a server owned by the caller; rf_srv_attach hands it the
 * engine (the server owns it from then and closes it in rf_srv_stop). rf_srv_stop stops
 * accepting connections, waits up to drain_ms for in-flight generations, closes the engine
 * (cancelling what is left; each gets its final event), stops the daemon, joins its threads and
 * frees everything. Params strings are copied.
 */
#ifndef RF_SERVER_HTTP_H
#define RF_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/engine.h"
#include "roofline/status.h"

typedef struct rf_srv rf_srv;

typedef struct rf_srv_params {
    const char *host;    /* IPv4 address to bind; default "127.0.0.1" */
    int port;            /* 0: an ephemeral port (rf_srv_port) */
    const char *api_key; /* NULL: no authentication */
    size_t body_max;     /* request body limit; default 4 MiB */
    unsigned conn_limit; /* connections (one thread each, 1 MiB stacks); default 2048 */
    /* A connection with no traffic for idle_timeout_s seconds is closed (libmicrohttpd's
     * timeout; a generation in progress does not count as idle); default 30, 0: never. */
    unsigned idle_timeout_s;
    /* A request's headers and body must arrive within read_timeout_s of its connection's
     * accept (or the previous request's end on a kept-alive connection): past it, a request
     * whose headers are in gets a 408 (code request_timeout) and the connection is closed; one
     * still sending headers is closed (a watchdog thread shuts its socket). Default 30, 0: no
     * deadline. */
    unsigned read_timeout_s;
    const char *model_id; /* the id served in /v1/models and responses; NULL: the model name */
    bool metrics;         /* GET /metrics (Prometheus text, open like /health); default on */
} rf_srv_params;

rf_srv_params rf_srv_default_params(void);

/* Starts listening (the health check answers 503 "loading" until rf_srv_attach). Errors:
 * RF_ERR_ARG (bad host or port), RF_ERR_IO (cannot listen). */
rf_status rf_srv_start(const rf_srv_params *p, rf_srv **out, rf_error *err);
int rf_srv_port(const rf_srv *s);
/* Hands the engine to the server (owned by it from now); requests are served from now. */
void rf_srv_attach(rf_srv *s, rf_engine *e);
/* See the top comment. NULL is a no-op. */
void rf_srv_stop(rf_srv *s, int drain_ms);

#endif
