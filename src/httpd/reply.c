/* reply.c: responses (a whole body, a JSON value, a stream fed by a reader) and the waits of a
 * handler (see httpd.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpd/daemon.h"
#include "util/clock.h"
#include "util/json_dump.h"

const char *rf_httpd_header(const rf_httpd_req *r, const char *name) {
    return MHD_lookup_connection_value(r->mc, MHD_HEADER_KIND, name);
}

/* Adds the headers to resp, queues it on r's connection and releases it. */
static rf_httpd_ret queue(rf_httpd_req *r, int status, struct MHD_Response *resp, const char *ctype,
                          const char *hname, const char *hval) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (hname) MHD_add_response_header(resp, hname, hval);
    r->status = status;
    enum MHD_Result ret = MHD_queue_response(r->mc, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret == MHD_YES ? RF_HTTPD_OK : RF_HTTPD_CLOSE;
}

rf_httpd_ret rf_httpd_reply(rf_httpd_req *r, int status, const char *ctype, const void *data,
                            size_t len, rf_httpd_mem mem, const char *hname, const char *hval) {
    if (!data && len) return RF_HTTPD_CLOSE;
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)data, mem == RF_HTTPD_TAKE ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
    if (!resp) {
        if (mem == RF_HTTPD_TAKE) free((void *)data);
        return RF_HTTPD_CLOSE;
    }
    return queue(r, status, resp, ctype, hname, hval);
}

rf_httpd_ret rf_httpd_reply_json(rf_httpd_req *r, int status, json_t *o, const char *hname,
                                 const char *hval) {
    char *s = o ? rf_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) return RF_HTTPD_CLOSE;
    return rf_httpd_reply(r, status, "application/json", s, strlen(s), RF_HTTPD_TAKE, hname, hval);
}

/* libmicrohttpd's content reader: the app's, with its end codes mapped. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    rf_httpd_req *r = cls;
    ssize_t n = r->reader(r, pos, buf, max);
    if (n == RF_HTTPD_READ_END) return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void stream_free(void *cls) {
    rf_httpd_unref(cls);
}

rf_httpd_ret rf_httpd_stream(rf_httpd_req *r, int status, uint64_t size, size_t block,
                             rf_httpd_reader read, const char *ctype, const char *hname,
                             const char *hval) {
    rf_httpd_ref(r); /* the reader's */
    r->reader = read;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(size == RF_HTTPD_SIZE_UNKNOWN ? MHD_SIZE_UNKNOWN : size,
                                          block, stream_read, r, stream_free);
    if (!resp) {
        rf_httpd_unref(r);
        return RF_HTTPD_CLOSE;
    }
    return queue(r, status, resp, ctype, hname, hval);
}

bool rf_httpd_client_gone(const rf_httpd_req *r) {
    if (r->fd < 0) return false;
    struct pollfd p = {r->fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* A ppoll on two descriptors: the daemon's stop eventfd (written once by rf_httpd_stop, never
 * drained, so it wakes every waiter) and the client socket for POLLRDHUP, which reports a peer
 * close without writing a byte (a stall must stay silent). */
rf_httpd_wait_result rf_httpd_wait(const rf_httpd_req *r, int64_t due_ns) {
    for (;;) {
        struct pollfd pf[2] = {{r->d->stop_fd, POLLIN, 0}, {r->fd, POLLRDHUP, 0}};
        int64_t left = due_ns - rf_now_ns();
        if (left < 0) left = 0;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        int n = ppoll(pf, r->fd >= 0 ? 2 : 1, &ts, NULL);
        if (n < 0 && errno != EINTR) return RF_HTTPD_WAIT_DUE; /* cannot wait: go on */
        if (n > 0 && pf[0].revents) return RF_HTTPD_WAIT_STOP;
        if (n > 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
            return RF_HTTPD_WAIT_GONE;
        if (rf_now_ns() >= due_ns) return RF_HTTPD_WAIT_DUE;
    }
}

void rf_httpd_hold(rf_httpd_req *r, bool on) {
    unsigned idle = r->d->p.idle_timeout_s;
    if (idle) MHD_set_connection_option(r->mc, MHD_CONNECTION_OPTION_TIMEOUT, on ? 0u : idle);
}
