/* daemon.h: the daemon's state, shared by the files of src/httpd (not for apps: they use
 * httpd/httpd.h). daemon.c owns the struct (start, stop, the request lifecycle); watchdog.c
 * owns the read deadline's connection list and thread; reply.c queues responses and waits.
 */
#ifndef RF_HTTPD_DAEMON_H
#define RF_HTTPD_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "httpd/httpd.h"

/* One accepted connection, for the read deadline (MHD's socket context). phase: CONN_HEADERS
 * until a request's headers are in, CONN_BODY while its body arrives (the deadline is checked
 * as each piece comes, on the connection's thread), CONN_DONE once it is read; back to
 * CONN_HEADERS with a new t_start when the request ends (keep-alive). */
enum { CONN_HEADERS, CONN_BODY, CONN_DONE };
typedef struct httpd_conn {
    struct httpd_conn *prev, *next; /* the daemon's list, under watch_mu */
    int fd;
    bool cut; /* the watchdog shut its socket (under watch_mu) */
    atomic_int phase;
    atomic_llong t_start; /* rf_now_ns of the accept or the previous request's end */
} httpd_conn;

struct rf_httpd {
    struct MHD_Daemon *mhd;
    rf_httpd_params p; /* the strings below replace the caller's */
    char name[64], log_tag[64];
    char *timeout_body; /* owned; NULL: a 408 without a body is not sent */
    int port;
    int stop_fd; /* eventfd: readable once rf_httpd_stop begins (never drained) */
    atomic_int stopping;
    int64_t read_ns; /* 0: no read deadline */
    /* the read deadline's watchdog: connections still sending headers past it are shut */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cv;
    httpd_conn *conns;
    bool watch_on, watch_quit;
    pthread_t watch;
};

/* watchdog.c */
/* MHD_OPTION_NOTIFY_CONNECTION: a connection joins (start) and leaves (end) the watched list. */
void rf_httpd_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);
bool rf_httpd_past_deadline(const rf_httpd *d, httpd_conn *k);
/* The 408 of a body still arriving at the deadline, written to r's socket. */
void rf_httpd_send_408(rf_httpd *d, rf_httpd_req *r);
/* Starts the watchdog thread (with a read deadline only); false when it cannot. */
bool rf_httpd_watch_start(rf_httpd *d);
/* Stops and joins it, and frees the list. */
void rf_httpd_watch_stop(rf_httpd *d);

#endif
