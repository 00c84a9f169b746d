/* loop.c: timers, cross-thread posts and libcurl multi transfers on one thread.
 *
 * Readiness comes from epoll: libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION)
 * and when it next needs a timeout call (CURLMOPT_TIMERFUNCTION), and each ready socket is
 * handed back with curl_multi_socket_action, so the work per event does not grow with the
 * number of open streams (curl_multi_perform/poll walk every transfer on every wake-up). Posts
 * from other threads wake the loop through an eventfd in the same epoll set. */
#include "backend/loop.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

typedef struct timer {
    int64_t t;
    uint64_t seq; /* ties fire in the order added */
    rf_loop_fn fn;
    void *user;
} timer;

typedef struct posted {
    rf_loop_fn fn;
    void *user;
} posted;

typedef struct xfer {
    rf_loop_done_fn done;
    void *user;
} xfer;

struct rf_loop {
    CURLM *multi;
    timer *timers; /* min-heap by (t, seq) */
    size_t n_timers, cap_timers;
    uint64_t seq;
    pthread_mutex_t mu; /* guards the posted queue */
    posted *posts, *draining;
    size_t n_posts, cap_posts, cap_draining;
    atomic_int stop;
    int running;        /* transfers in the multi handle */
    int epfd, evfd;     /* the epoll set; the eventfd that wakes it */
    int64_t curl_at;    /* when libcurl wants its timeout call (monotonic ns); -1: never */
    bool pwait2_absent; /* the kernel lacks epoll_pwait2: wait in whole ms */
    /* the punctuality probe (rf_loop_probe_start) */
    bool probing;
    uint64_t probe_gen; /* a stopped probe's pending timer sees another generation and ends */
    int64_t probe_period, probe_t0, probe_cpu0, probe_next;
    uint32_t *lag_hist; /* 10 us bins up to 100 ms, then 1 ms bins up to 10 s, then one */
    double lag_max_ms;
    int64_t lag_n;
};

#define LAG_FINE   10000 /* 10 us bins: [0, 100 ms) */
#define LAG_COARSE 9900  /* 1 ms bins: [100 ms, 10 s) */
#define LAG_BINS   (LAG_FINE + LAG_COARSE + 1)

/* libcurl: watch (or stop watching) one socket. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *user, void *sockp) {
    (void)easy;
    (void)sockp;
    rf_loop *l = user;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL); /* fails harmlessly if already closed */
        return 0;
    }
    struct epoll_event ev = {0};
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    ev.data.fd = fd;
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT)
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

/* libcurl: call curl_multi_socket_action(CURL_SOCKET_TIMEOUT) in timeout_ms (-1: never). */
static int on_timer(CURLM *multi, long timeout_ms, void *user) {
    (void)multi;
    rf_loop *l = user;
    l->curl_at = timeout_ms < 0 ? -1 : rf_now_ns() + (int64_t)timeout_ms * 1000000;
    return 0;
}

static int timer_before(const timer *a, const timer *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void curl_init_once(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

rf_status rf_loop_new(rf_loop **out, rf_error *err) {
    *out = NULL;
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* libcurl's process-wide setup, once */
    pthread_once(&once, curl_init_once);
    rf_loop *l = calloc(1, sizeof *l);
    if (!l) return rf_error_set(err, RF_ERR_NOMEM, "loop: out of memory");
    l->multi = curl_multi_init();
    if (!l->multi) {
        free(l);
        return rf_error_set(err, RF_ERR_INTERNAL, "loop: curl_multi_init failed");
    }
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = l->evfd};
    if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev) != 0) {
        int e = errno;
        if (l->epfd >= 0) close(l->epfd);
        if (l->evfd >= 0) close(l->evfd);
        curl_multi_cleanup(l->multi);
        free(l);
        return rf_error_set(err, RF_ERR_INTERNAL, "loop: epoll/eventfd: %s", strerror(e));
    }
    l->curl_at = -1;
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
    pthread_mutex_init(&l->mu, NULL);
    *out = l;
    return RF_OK;
}

static void wake(rf_loop *l) {
    uint64_t one = 1;
    ssize_t w = write(l->evfd, &one, sizeof one); /* EAGAIN: the counter is already set */
    (void)w;
}

static void probe_fire(void *user);

void rf_loop_free(rf_loop *l) {
    if (!l) return;
    for (size_t i = 0; i < l->n_timers; i++) /* a probe's pending tick is the loop's own */
        if (l->timers[i].fn == probe_fire) free(l->timers[i].user);
    curl_multi_cleanup(l->multi);
    close(l->epfd);
    close(l->evfd);
    pthread_mutex_destroy(&l->mu);
    free(l->timers);
    free(l->lag_hist);
    free(l->posts);
    free(l->draining);
    free(l);
}

void *rf_loop_multi(rf_loop *l) {
    return l->multi;
}

rf_status rf_loop_add_easy(rf_loop *l, void *easy, rf_loop_done_fn done, void *user,
                           rf_error *err) {
    xfer *x = malloc(sizeof *x);
    if (!x) return rf_error_set(err, RF_ERR_NOMEM, "loop: out of memory");
    x->done = done;
    x->user = user;
    curl_easy_setopt(easy, CURLOPT_PRIVATE, x);
    CURLMcode mc = curl_multi_add_handle(l->multi, easy);
    if (mc != CURLM_OK) {
        free(x);
        return rf_error_set(err, RF_ERR_INTERNAL, "loop: curl_multi_add_handle: %s",
                            curl_multi_strerror(mc));
    }
    l->running++;
    return RF_OK;
}

void rf_loop_remove_easy(rf_loop *l, void *easy) {
    xfer *x = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    if (curl_multi_remove_handle(l->multi, easy) == CURLM_OK && x) l->running--;
    curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
    free(x);
}

rf_status rf_loop_at(rf_loop *l, int64_t t_ns, rf_loop_fn fn, void *user, rf_error *err) {
    if (l->n_timers == l->cap_timers) {
        size_t cap = l->cap_timers ? l->cap_timers * 2 : 64;
        timer *t = realloc(l->timers, cap * sizeof *t);
        if (!t) return rf_error_set(err, RF_ERR_NOMEM, "loop: out of memory");
        l->timers = t;
        l->cap_timers = cap;
    }
    size_t i = l->n_timers++;
    l->timers[i] = (timer){t_ns, l->seq++, fn, user};
    while (i > 0 && timer_before(&l->timers[i], &l->timers[(i - 1) / 2])) {
        timer tmp = l->timers[i];
        l->timers[i] = l->timers[(i - 1) / 2];
        l->timers[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
    return RF_OK;
}

static timer pop_timer(rf_loop *l) {
    timer top = l->timers[0];
    l->timers[0] = l->timers[--l->n_timers];
    size_t i = 0, n = l->n_timers;
    for (;;) {
        size_t a = 2 * i + 1, b = a + 1, m = i;
        if (a < n && timer_before(&l->timers[a], &l->timers[m])) m = a;
        if (b < n && timer_before(&l->timers[b], &l->timers[m])) m = b;
        if (m == i) break;
        timer tmp = l->timers[i];
        l->timers[i] = l->timers[m];
        l->timers[m] = tmp;
        i = m;
    }
    return top;
}

rf_status rf_loop_post(rf_loop *l, rf_loop_fn fn, void *user) {
    pthread_mutex_lock(&l->mu);
    if (l->n_posts == l->cap_posts) {
        size_t cap = l->cap_posts ? l->cap_posts * 2 : 256;
        posted *p = realloc(l->posts, cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&l->mu);
            return RF_ERR_NOMEM;
        }
        l->posts = p;
        l->cap_posts = cap;
    }
    /* Only the post that finds the queue empty wakes the loop: the others are drained with it
     * (one eventfd write per batch of engine events, not one per token). */
    const bool first = l->n_posts == 0;
    l->posts[l->n_posts++] = (posted){fn, user};
    pthread_mutex_unlock(&l->mu);
    if (first) wake(l);
    return RF_OK;
}

void rf_loop_stop(rf_loop *l) {
    atomic_store(&l->stop, 1);
    wake(l);
}

/* Runs the posted work queued so far (swapping buffers so posts made meanwhile wait). */
static int drain_posts(rf_loop *l) {
    pthread_mutex_lock(&l->mu);
    size_t n = l->n_posts;
    if (n) {
        posted *tmp = l->draining;
        size_t cap = l->cap_draining;
        l->draining = l->posts;
        l->cap_draining = l->cap_posts;
        l->posts = tmp;
        l->cap_posts = cap;
        l->n_posts = 0;
    }
    pthread_mutex_unlock(&l->mu);
    for (size_t i = 0; i < n; i++) l->draining[i].fn(l->draining[i].user);
    return (int)n;
}

static void reap(rf_loop *l) {
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(l->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        CURL *easy = m->easy_handle;
        int code = (int)m->data.result;
        xfer *x = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(l->multi, easy);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        l->running--;
        if (x) {
            xfer done = *x;
            free(x);
            done.done(done.user, easy, code);
        }
    }
}

/* Hands libcurl one socket event (or its timeout) and finishes what completed. */
static rf_status act(rf_loop *l, curl_socket_t fd, int flags, rf_error *err) {
    int still = 0;
    CURLMcode mc = curl_multi_socket_action(l->multi, fd, flags, &still);
    if (mc != CURLM_OK)
        return rf_error_set(err, RF_ERR_INTERNAL, "loop: curl_multi_socket_action: %s",
                            curl_multi_strerror(mc));
    reap(l);
    return RF_OK;
}

/* Waits at most wait_ns for events; returns their count (or -1 with errno). */
static int wait_events(rf_loop *l, struct epoll_event *evs, int n, int64_t wait_ns) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
    if (!l->pwait2_absent) {
        struct timespec ts = {wait_ns / 1000000000, wait_ns % 1000000000};
        int k = epoll_pwait2(l->epfd, evs, n, &ts, NULL);
        if (k >= 0 || errno != ENOSYS) return k;
        l->pwait2_absent = true;
    }
#endif
    return epoll_wait(l->epfd, evs, n, (int)((wait_ns + 999999) / 1000000));
}

rf_status rf_loop_run(rf_loop *l, const volatile int *until, int64_t deadline_ns, rf_error *err) {
    atomic_store(&l->stop, 0);
    struct epoll_event evs[64];
    rf_status st;
    for (;;) {
        int64_t now = rf_now_ns();
        while (l->n_timers && l->timers[0].t <= now) {
            timer t = pop_timer(l);
            t.fn(t.user);
        }
        drain_posts(l);
        if (l->curl_at >= 0 && l->curl_at <= rf_now_ns()) {
            l->curl_at = -1;
            if ((st = act(l, CURL_SOCKET_TIMEOUT, 0, err))) return st;
        }
        if ((until && *until) || atomic_load(&l->stop)) return RF_OK;
        now = rf_now_ns();
        if (deadline_ns && now >= deadline_ns) return RF_OK;
        int64_t wait = 1000000000; /* 1 s at most: re-check the stop conditions */
        if (l->n_timers && l->timers[0].t - now < wait) wait = l->timers[0].t - now;
        if (l->curl_at >= 0 && l->curl_at - now < wait) wait = l->curl_at - now;
        if (deadline_ns && deadline_ns - now < wait) wait = deadline_ns - now;
        if (wait < 0) wait = 0;
        int k = wait_events(l, evs, 64, wait);
        if (k < 0 && errno != EINTR)
            return rf_error_set(err, RF_ERR_INTERNAL, "loop: epoll_wait: %s", strerror(errno));
        for (int i = 0; i < k; i++) {
            int fd = evs[i].data.fd;
            if (fd == l->evfd) {
                uint64_t v;
                ssize_t r = read(l->evfd, &v, sizeof v);
                (void)r;
                continue;
            }
            uint32_t e = evs[i].events;
            int flags = (e & EPOLLIN ? CURL_CSELECT_IN : 0) |
                        (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (e & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            if ((st = act(l, fd, flags, err))) return st;
        }
    }
}

/* ---------------------------------------------------------------- punctuality probe */

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct probe_tick {
    rf_loop *l;
    uint64_t gen;
} probe_tick;

static void probe_fire(void *user) {
    probe_tick *pt = user;
    rf_loop *l = pt->l;
    if (!l->probing || pt->gen != l->probe_gen) {
        free(pt);
        return;
    }
    int64_t now = rf_now_ns();
    double late_ms = (double)(now - l->probe_next) / 1e6;
    if (late_ms < 0) late_ms = 0;
    size_t bin = late_ms < 100     ? (size_t)(late_ms * 100)
                 : late_ms < 10000 ? LAG_FINE + (size_t)(late_ms - 100)
                                   : LAG_BINS - 1;
    if (bin >= LAG_BINS) bin = LAG_BINS - 1;
    l->lag_hist[bin]++;
    l->lag_n++;
    if (late_ms > l->lag_max_ms) l->lag_max_ms = late_ms;
    /* the next tick a period after this one fired: a late tick does not make the next one
     * due at once (that would count one stall many times) */
    l->probe_next = now + l->probe_period;
    if (rf_loop_at(l, l->probe_next, probe_fire, pt, NULL) != RF_OK) free(pt);
}

void rf_loop_probe_start(rf_loop *l, int64_t period_ns) {
    if (!l->lag_hist) l->lag_hist = calloc(LAG_BINS, sizeof *l->lag_hist);
    probe_tick *pt = malloc(sizeof *pt);
    if (!l->lag_hist || !pt) {
        free(pt);
        return; /* no probe: the stop reports no samples */
    }
    memset(l->lag_hist, 0, LAG_BINS * sizeof *l->lag_hist);
    l->lag_n = 0;
    l->lag_max_ms = 0;
    l->probing = true;
    l->probe_gen++;
    l->probe_period = period_ns > 0 ? period_ns : 5000000;
    l->probe_t0 = rf_now_ns();
    l->probe_cpu0 = thread_cpu_ns();
    l->probe_next = l->probe_t0 + l->probe_period;
    pt->l = l;
    pt->gen = l->probe_gen;
    if (rf_loop_at(l, l->probe_next, probe_fire, pt, NULL) != RF_OK) {
        free(pt);
        l->probing = false;
    }
}

/* The upper edge (ms) of the bin holding the q-quantile. */
static double lag_quantile(const rf_loop *l, double q) {
    if (!l->lag_n) return 0;
    int64_t want = (int64_t)(q * (double)l->lag_n + 0.999999), acc = 0;
    if (want < 1) want = 1;
    for (size_t i = 0; i < LAG_BINS; i++) {
        acc += l->lag_hist[i];
        if (acc >= want) {
            double edge = i < LAG_FINE       ? (double)(i + 1) / 100
                          : i < LAG_BINS - 1 ? 100 + (double)(i - LAG_FINE + 1)
                                             : l->lag_max_ms;
            return edge < l->lag_max_ms ? edge : l->lag_max_ms;
        }
    }
    return l->lag_max_ms;
}

void rf_loop_probe_stop(rf_loop *l, rf_loop_lag *out) {
    memset(out, 0, sizeof *out);
    if (!l->probing) return;
    l->probing = false; /* the pending tick frees itself when it fires (or at rf_loop_free) */
    out->samples = l->lag_n;
    out->p50_ms = lag_quantile(l, 0.5);
    out->p90_ms = lag_quantile(l, 0.9);
    out->p99_ms = lag_quantile(l, 0.99);
    out->max_ms = l->lag_max_ms;
    out->cpu_s = (double)(thread_cpu_ns() - l->probe_cpu0) / 1e9;
    out->wall_s = (double)(rf_now_ns() - l->probe_t0) / 1e9;
}
