/* watchdog.c: the read deadline (see httpd.h): the list of open connections, the 408 of a body
 * that arrives too late, and the watchdog thread that shuts connections still sending headers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "httpd/daemon.h"
#include "util/clock.h"

#define WATCH_MS 200 /* the watchdog's period */

/* MHD's connection start and end: the connection joins and leaves the watchdog's list. The
 * end is notified before MHD closes the socket, so a shutdown under watch_mu never reaches a
 * descriptor reused by another connection. */
void rf_httpd_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    rf_httpd *d = cls;
    if (!d->read_ns) return; /* no deadline: nothing to watch */
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        httpd_conn *k = calloc(1, sizeof *k);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!k) return; /* no deadline for this one */
        k->fd = ci ? (int)ci->connect_fd : -1;
        atomic_init(&k->phase, CONN_HEADERS);
        atomic_init(&k->t_start, rf_now_ns());
        pthread_mutex_lock(&d->watch_mu);
        k->next = d->conns;
        if (d->conns) d->conns->prev = k;
        d->conns = k;
        pthread_mutex_unlock(&d->watch_mu);
        *socket_context = k;
        return;
    }
    httpd_conn *k = *socket_context;
    if (!k) return;
    *socket_context = NULL;
    pthread_mutex_lock(&d->watch_mu);
    if (k->prev)
        k->prev->next = k->next;
    else
        d->conns = k->next;
    if (k->next) k->next->prev = k->prev;
    pthread_mutex_unlock(&d->watch_mu);
    free(k);
}

bool rf_httpd_past_deadline(const rf_httpd *d, httpd_conn *k) {
    return d->read_ns && k && rf_now_ns() - atomic_load(&k->t_start) > d->read_ns;
}

/* A body still arriving at the deadline. libmicrohttpd 0.9 queues a response only before the
 * body is read or after all of it, so this 408 is written to the socket directly, on the
 * connection's own thread (nothing else writes to it then); the caller returns MHD_NO and MHD
 * closes the connection. */
void rf_httpd_send_408(rf_httpd *d, rf_httpd_req *r) {
    r->status = 408;
    const char *body = d->timeout_body;
    if (!body || r->fd < 0) return;
    char head[160];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     strlen(body));
    if (send(r->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
        (void)send(r->fd, body, strlen(body), MSG_NOSIGNAL | MSG_DONTWAIT);
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

/* Shuts the socket of every connection still sending its headers past the deadline (MHD's own
 * timeout is an idle one: a byte now and then resets it). Its thread then sees the socket
 * closed and ends the connection. */
static void *watchdog(void *arg) {
    rf_httpd *d = arg;
    pthread_mutex_lock(&d->watch_mu);
    while (!d->watch_quit) {
        struct timespec ts = wake_in(WATCH_MS * 1000000ll);
        pthread_cond_timedwait(&d->watch_cv, &d->watch_mu, &ts);
        for (httpd_conn *k = d->conns; k; k = k->next) {
            if (k->cut || k->fd < 0 || atomic_load(&k->phase) != CONN_HEADERS ||
                !rf_httpd_past_deadline(d, k))
                continue;
            k->cut = true;
            shutdown(k->fd, SHUT_RDWR);
            fprintf(stderr,
                    "%s: a connection closed: its request's headers did not arrive "
                    "within the read timeout\n",
                    d->log_tag);
        }
    }
    pthread_mutex_unlock(&d->watch_mu);
    return NULL;
}

bool rf_httpd_watch_start(rf_httpd *d) {
    if (!d->read_ns) return true;
    if (pthread_create(&d->watch, NULL, watchdog, d)) return false;
    d->watch_on = true;
    return true;
}

void rf_httpd_watch_stop(rf_httpd *d) {
    if (d->watch_on) {
        pthread_mutex_lock(&d->watch_mu);
        d->watch_quit = true;
        pthread_cond_signal(&d->watch_cv);
        pthread_mutex_unlock(&d->watch_mu);
        pthread_join(d->watch, NULL);
        d->watch_on = false;
    }
    while (d->conns) { /* none unless MHD ended one without notifying its end */
        httpd_conn *k = d->conns;
        d->conns = k->next;
        free(k);
    }
}
