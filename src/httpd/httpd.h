/* httpd.h: the one libmicrohttpd request lifecycle of roofline's HTTP servers (`roofline serve`,
 * src/server, and the bench's fake backend, src/fake). Transport only: it knows nothing of
 * OpenAI, engines or schedules.
 *
 * What it does for the app (the server or the fake):
 *   - the daemon: libmicrohttpd with one thread per connection (its internal polling thread
 *     accepts), bound to an IPv4 address, with a connection limit, a thread stack size, an idle
 *     timeout (libmicrohttpd's) and, optionally, TCP_NODELAY on every connection;
 *   - the request: one app-sized, zeroed struct per request whose first member is an
 *     rf_httpd_req, created when the headers are in (t0), holding the body as it arrives up to
 *     body_max bytes (past it, or when the body cannot be stored, too_large is set and the rest
 *     is dropped), shared by reference count between the connection, the app (rf_httpd_ref)
 *     and a streaming response's reader; the app's dispatch runs once the whole body is in;
 *   - the read deadline (read_timeout_s): a request's headers and body must arrive within it of
 *     its connection's accept (or the previous request's end on a kept-alive connection). A
 *     body still arriving past it gets the app's 408 body (timeout_body), written straight to
 *     the socket, and the connection is closed; a connection still sending headers is shut by a
 *     watchdog thread (one line on stderr: "<log_tag>: a connection closed: ...");
 *   - responses: a whole body (copied or taken), a JSON value, or a stream fed by a reader
 *     callback on the connection's thread; waits that wake for the server's stop or a client
 *     that went away (rf_httpd_wait, rf_httpd_client_gone), and the idle timeout held off while
 *     the app works without traffic (rf_httpd_hold);
 *   - routing: a route table type and its lookup (the app answers a miss its own way).
 *
 * Threads: every callback runs on the request's connection thread, except release, which runs
 * on whichever thread drops the last reference (a connection thread, or an app thread that
 * holds one, such as an engine's scheduler).
 *
 * Ownership: rf_httpd_start returns a daemon owned by the caller, released by rf_httpd_stop
 * (which wakes every rf_httpd_wait, closes every connection, joins every thread, and frees the
 * daemon). A request is freed when its last reference goes: release(r) frees what the app
 * added, then httpd frees the body and the struct. Params strings are copied.
 */
#ifndef RF_HTTPD_HTTPD_H
#define RF_HTTPD_HTTPD_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "roofline/status.h"
#include "util/buf.h"

typedef struct rf_httpd rf_httpd;
struct MHD_Connection;
struct httpd_conn;

/* What a handler returns: OK (a response was queued, or the request goes on), or CLOSE (the
 * connection is closed with no further response). */
typedef enum rf_httpd_ret { RF_HTTPD_CLOSE = 0, RF_HTTPD_OK = 1 } rf_httpd_ret;

/* How a request ended (the done callback): its response sent in full, the daemon stopping, or
 * anything else (the client went away, a reader's error, a timeout, CLOSE). */
typedef enum rf_httpd_end {
    RF_HTTPD_END_OK,
    RF_HTTPD_END_SHUTDOWN,
    RF_HTTPD_END_ABORTED
} rf_httpd_end;

/* The first member of the app's per-request struct. Fields are read-only for the app except
 * status (the app may set it, e.g. for its log line) and body (the app may free it once read). */
typedef struct rf_httpd_req {
    rf_httpd *d;
    void *app;                /* rf_httpd_params.app */
    int64_t t0;               /* rf_now_ns when the headers were in */
    int fd;                   /* the connection's socket; -1 when unknown */
    const char *method, *url; /* libmicrohttpd's strings: valid in start and dispatch only */
    rf_buf body;              /* the body, at most body_max bytes */
    bool too_large;           /* the body went past body_max (or could not be stored) */
    int status;               /* the status queued (rf_httpd_reply*, rf_httpd_stream); 0: none */
    /* httpd's own */
    atomic_int refs;
    struct httpd_conn *conn;   /* the read deadline's tracking; NULL: none */
    struct MHD_Connection *mc; /* valid in dispatch only */
    ssize_t (*reader)(struct rf_httpd_req *, uint64_t, char *, size_t);
    void (*release)(struct rf_httpd_req *);
} rf_httpd_req;

typedef rf_httpd_ret (*rf_httpd_handler)(rf_httpd_req *r);

typedef struct rf_httpd_params {
    const char *name;         /* error messages: "<name>: cannot listen on ..." */
    const char *log_tag;      /* the watchdog's stderr line; NULL: name */
    const char *host;         /* IPv4 address; NULL: "127.0.0.1" */
    int port;                 /* 0: an ephemeral port (rf_httpd_port) */
    size_t body_max;          /* request bodies over it: too_large; 0: no limit */
    unsigned conn_limit;      /* connections at once */
    size_t stack_bytes;       /* per connection thread */
    unsigned idle_timeout_s;  /* a connection with no traffic this long is closed; 0: never */
    unsigned read_timeout_s;  /* the read deadline (top comment); 0: none */
    const char *timeout_body; /* the 408's JSON body (with read_timeout_s) */
    bool nodelay;             /* TCP_NODELAY on every connection: each write goes out at once */
    bool quiesce;             /* rf_httpd_quiesce will be called */
    size_t req_size;          /* the app's per-request struct (rf_httpd_req first) */
    void *app;                /* handed to every request (rf_httpd_req.app) */
    /* The headers are in (method and url readable): set up the app's fields. NULL: no hook. */
    void (*start)(rf_httpd_req *r);
    /* The body is in: route and answer (rf_httpd_reply*, rf_httpd_stream), or CLOSE. */
    rf_httpd_handler dispatch;
    /* The request ended (before the connection's reference goes). NULL: no hook. */
    void (*done)(rf_httpd_req *r, rf_httpd_end how);
    /* The last reference went: free what the app added (not the body nor r). NULL: nothing. */
    void (*release)(rf_httpd_req *r);
} rf_httpd_params;

/* Starts listening. RF_ERR_ARG: bad host or port; RF_ERR_IO: cannot listen; RF_ERR_NOMEM;
 * RF_ERR_INTERNAL: the watchdog thread could not start. On failure *out is NULL and nothing is
 * left running. */
rf_status rf_httpd_start(const rf_httpd_params *p, rf_httpd **out, rf_error *err);
int rf_httpd_port(const rf_httpd *d);
/* Stops accepting connections (those open go on); marks the daemon stopping. */
void rf_httpd_quiesce(rf_httpd *d);
/* True once rf_httpd_quiesce or rf_httpd_stop began. */
bool rf_httpd_stopping(const rf_httpd *d);
/* See the top comment. NULL is a no-op. */
void rf_httpd_stop(rf_httpd *d);

void rf_httpd_ref(rf_httpd_req *r);
void rf_httpd_unref(rf_httpd_req *r);

/* ---- requests and responses (from dispatch, on the connection's thread) ---- */

/* A request header's value (name in any case), or NULL. */
const char *rf_httpd_header(const rf_httpd_req *r, const char *name);

typedef enum rf_httpd_mem {
    RF_HTTPD_COPY, /* the bytes are copied */
    RF_HTTPD_TAKE  /* the bytes (malloc'd) are httpd's from now, freed also on failure */
} rf_httpd_mem;

/* Queues a whole body with its Content-Type and one optional header (hname NULL: none). */
rf_httpd_ret rf_httpd_reply(rf_httpd_req *r, int status, const char *ctype, const void *data,
                            size_t len, rf_httpd_mem mem, const char *hname, const char *hval);
/* o (released; NULL: CLOSE) as a compact application/json body. */
rf_httpd_ret rf_httpd_reply_json(rf_httpd_req *r, int status, json_t *o, const char *hname,
                                 const char *hval);

/* A reader returns bytes written into buf (at most max, > 0), or one of these. */
#define RF_HTTPD_READ_END     ((ssize_t)-1) /* the body is complete */
#define RF_HTTPD_READ_ERROR   ((ssize_t)-2) /* the connection is dropped */
#define RF_HTTPD_SIZE_UNKNOWN UINT64_MAX    /* a stream's length: chunked encoding */
typedef ssize_t (*rf_httpd_reader)(rf_httpd_req *r, uint64_t pos, char *buf, size_t max);

/* Queues a body produced by read on the connection's thread, block bytes at a time; the reader
 * holds a reference on r until the response is done. */
rf_httpd_ret rf_httpd_stream(rf_httpd_req *r, int status, uint64_t size, size_t block,
                             rf_httpd_reader read, const char *ctype, const char *hname,
                             const char *hval);

/* ---- waits ---- */

/* True when the client closed its end (seen without reading or writing a byte). */
bool rf_httpd_client_gone(const rf_httpd_req *r);

typedef enum rf_httpd_wait_result {
    RF_HTTPD_WAIT_DUE = 0, /* due_ns came (or waiting failed) */
    RF_HTTPD_WAIT_STOP,    /* the daemon is stopping */
    RF_HTTPD_WAIT_GONE     /* the client went away */
} rf_httpd_wait_result;
/* Sleeps until monotonic due_ns (rf_now_ns), waking early for the daemon's stop or the client
 * closing its end; looks once even when due_ns is past, so a gone client is seen before a
 * write. */
rf_httpd_wait_result rf_httpd_wait(const rf_httpd_req *r, int64_t due_ns);

/* on: the app works on r without traffic (a generation), so the idle timeout is off; off:
 * the idle timeout again, its clock restarted. From dispatch only. */
void rf_httpd_hold(rf_httpd_req *r, bool on);

/* ---- routing ---- */

typedef struct rf_httpd_route {
    const char *path;   /* matched with or without a "/v1" prefix: "/chat/completions" */
    const char *method; /* "GET", "POST" */
    rf_httpd_handler fn;
    unsigned flags; /* the app's */
} rf_httpd_route;

typedef enum rf_httpd_match {
    RF_HTTPD_ROUTED,    /* *out: the route */
    RF_HTTPD_NO_ROUTE,  /* no route has this path (a 404) */
    RF_HTTPD_BAD_METHOD /* *out: the path's route, whose method is the one allowed (a 405) */
} rf_httpd_match;
rf_httpd_match rf_httpd_route_find(const rf_httpd_route *table, size_t n, const char *url,
                                   const char *method, const rf_httpd_route **out);

#endif
