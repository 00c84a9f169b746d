/* daemon.c: the daemon's start and stop and the request lifecycle (see httpd.h): the access
 * handler (the request's struct when the headers are in, the body as it arrives, the app's
 * dispatch once it is in), the completion callback and the reference count.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "httpd/daemon.h"
#include "util/clock.h"

void rf_httpd_ref(rf_httpd_req *r) {
    atomic_fetch_add(&r->refs, 1);
}

void rf_httpd_unref(rf_httpd_req *r) {
    if (atomic_fetch_sub(&r->refs, 1) != 1) return;
    if (r->release) r->release(r);
    rf_buf_free(&r->body);
    free(r);
}

/* The headers are in: the request's struct (the app's size, zeroed). */
static enum MHD_Result req_begin(rf_httpd *d, struct MHD_Connection *c, const char *url,
                                 const char *method, void **con_cls) {
    rf_httpd_req *r = calloc(1, d->p.req_size);
    if (!r) return MHD_NO;
    r->d = d;
    r->app = d->p.app;
    r->release = d->p.release;
    atomic_init(&r->refs, 1);
    r->t0 = rf_now_ns();
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->fd = ci ? (int)ci->connect_fd : -1;
    if (d->p.nodelay && r->fd >= 0) { /* each write goes out when made: no Nagle wait */
        int one = 1;
        setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    rf_buf_init(&r->body, d->p.body_max);
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->conn = ci ? ci->socket_context : NULL;
    r->method = method;
    r->url = url;
    if (d->p.start) d->p.start(r);
    r->method = r->url = NULL;
    if (r->conn) atomic_store(&r->conn->phase, CONN_BODY);
    *con_cls = r;
    return MHD_YES;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls) {
    rf_httpd *d = cls;
    rf_httpd_req *r = *con_cls;
    (void)version;
    if (!r) return req_begin(d, c, url, method, con_cls);
    if (*upload_data_size) {
        if (rf_httpd_past_deadline(d, r->conn)) {
            rf_httpd_send_408(d, r);
            return MHD_NO; /* MHD closes the connection */
        }
        if (!r->too_large && rf_buf_append(&r->body, upload_data, *upload_data_size) != RF_OK)
            r->too_large = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->conn) atomic_store(&r->conn->phase, CONN_DONE);
    r->mc = c;
    r->method = method;
    r->url = url;
    rf_httpd_ret ret = d->p.dispatch(r);
    r->mc = NULL;
    r->method = r->url = NULL;
    return ret == RF_HTTPD_OK ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    rf_httpd *d = cls;
    rf_httpd_req *r = *con_cls;
    (void)c;
    if (!r) return;
    *con_cls = NULL;
    rf_httpd_end how = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK      ? RF_HTTPD_END_OK
                       : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? RF_HTTPD_END_SHUTDOWN
                                                                       : RF_HTTPD_END_ABORTED;
    if (d->p.done) d->p.done(r, how);
    if (r->conn) { /* a kept-alive connection's next request has its own deadline */
        atomic_store(&r->conn->t_start, rf_now_ns());
        atomic_store(&r->conn->phase, CONN_HEADERS);
    }
    rf_httpd_unref(r);
}

static void daemon_free(rf_httpd *d) {
    if (d->stop_fd >= 0) close(d->stop_fd);
    pthread_mutex_destroy(&d->watch_mu);
    pthread_cond_destroy(&d->watch_cv);
    free(d->timeout_body);
    free(d);
}

rf_status rf_httpd_start(const rf_httpd_params *p, rf_httpd **out, rf_error *err) {
    *out = NULL;
    const char *name = p->name ? p->name : "httpd";
    if (p->port < 0 || p->port > 65535)
        return rf_error_set(err, RF_ERR_ARG, "%s: port %d is not in [0, 65535]", name, p->port);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)p->port);
    const char *host = p->host ? p->host : "127.0.0.1";
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return rf_error_set(err, RF_ERR_ARG, "%s: host '%s' is not an IPv4 address", name, host);
    if (p->req_size < sizeof(rf_httpd_req) || !p->dispatch)
        return rf_error_set(err, RF_ERR_ARG, "%s: no request size or dispatch", name);
    rf_httpd *d = calloc(1, sizeof *d);
    if (!d) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", name);
    d->p = *p;
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->log_tag, sizeof d->log_tag, "%s", p->log_tag ? p->log_tag : name);
    d->p.name = d->name;
    d->p.log_tag = d->log_tag;
    d->p.host = NULL;
    d->p.timeout_body = NULL;
    d->read_ns = (int64_t)p->read_timeout_s * 1000000000ll;
    atomic_init(&d->stopping, 0);
    pthread_mutex_init(&d->watch_mu, NULL);
    pthread_cond_init(&d->watch_cv, NULL);
    d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    rf_status st = RF_OK;
    if (d->stop_fd < 0) {
        st = rf_error_set(err, RF_ERR_IO, "%s: eventfd: %s", name, strerror(errno));
        goto fail;
    }
    if (p->timeout_body && !(d->timeout_body = strdup(p->timeout_body))) {
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    json_object_seed(0); /* before any connection thread makes a JSON object */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | (p->quiesce ? MHD_USE_ITC : 0);
    d->mhd = MHD_start_daemon(
        flags, (uint16_t)p->port, NULL, NULL, on_access, d, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, p->conn_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, p->idle_timeout_s, MHD_OPTION_THREAD_STACK_SIZE,
        p->stack_bytes, MHD_OPTION_NOTIFY_COMPLETED, on_completed, d, MHD_OPTION_NOTIFY_CONNECTION,
        rf_httpd_conn_notify, d, MHD_OPTION_END);
    if (!d->mhd) {
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot listen on %s:%d (port in use?)", name, host,
                          p->port);
        goto fail;
    }
    if (!rf_httpd_watch_start(d)) {
        MHD_stop_daemon(d->mhd);
        st = rf_error_set(err, RF_ERR_INTERNAL, "%s: cannot start the read-timeout thread", name);
        goto fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_BIND_PORT);
    d->port = di && di->port ? di->port : p->port;
    *out = d;
    return RF_OK;
fail:
    daemon_free(d);
    return st;
}

int rf_httpd_port(const rf_httpd *d) {
    return d->port;
}

void rf_httpd_quiesce(rf_httpd *d) {
    atomic_store(&d->stopping, 1);
    MHD_socket lfd = MHD_quiesce_daemon(d->mhd); /* no new connections */
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
}

bool rf_httpd_stopping(const rf_httpd *d) {
    return atomic_load(&((rf_httpd *)d)->stopping) != 0;
}

void rf_httpd_stop(rf_httpd *d) {
    if (!d) return;
    atomic_store(&d->stopping, 1);
    uint64_t one = 1;
    ssize_t wr = write(d->stop_fd, &one, sizeof one); /* wakes every rf_httpd_wait */
    (void)wr;
    MHD_stop_daemon(d->mhd);
    rf_httpd_watch_stop(d);
    daemon_free(d);
}
