/* loop.c: timers, cross-thread posts and libcurl multi transfers on one thread. */
#include "bench/loop.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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
    int running; /* transfers in the multi handle */
};

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
    pthread_mutex_init(&l->mu, NULL);
    *out = l;
    return RF_OK;
}

void rf_loop_free(rf_loop *l) {
    if (!l) return;
    curl_multi_cleanup(l->multi);
    pthread_mutex_destroy(&l->mu);
    free(l->timers);
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
    l->posts[l->n_posts++] = (posted){fn, user};
    pthread_mutex_unlock(&l->mu);
    curl_multi_wakeup(l->multi);
    return RF_OK;
}

void rf_loop_stop(rf_loop *l) {
    atomic_store(&l->stop, 1);
    curl_multi_wakeup(l->multi);
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

rf_status rf_loop_run(rf_loop *l, const volatile int *until, int64_t deadline_ns, rf_error *err) {
    atomic_store(&l->stop, 0);
    for (;;) {
        int64_t now = rf_now_ns();
        while (l->n_timers && l->timers[0].t <= now) {
            timer t = pop_timer(l);
            t.fn(t.user);
        }
        drain_posts(l);
        int still = 0;
        CURLMcode mc = curl_multi_perform(l->multi, &still);
        if (mc != CURLM_OK)
            return rf_error_set(err, RF_ERR_INTERNAL, "loop: curl_multi_perform: %s",
                                curl_multi_strerror(mc));
        reap(l);
        if ((until && *until) || atomic_load(&l->stop)) return RF_OK;
        now = rf_now_ns();
        if (deadline_ns && now >= deadline_ns) return RF_OK;
        int64_t wait = 1000000000; /* 1 s at most: re-check the stop conditions */
        if (l->n_timers) {
            int64_t dt = l->timers[0].t - now;
            if (dt < wait) wait = dt;
        }
        if (deadline_ns && deadline_ns - now < wait) wait = deadline_ns - now;
        if (wait <= 0) continue;
        int ms = (int)((wait + 999999) / 1000000);
        mc = curl_multi_poll(l->multi, NULL, 0, ms, NULL);
        if (mc != CURLM_OK)
            return rf_error_set(err, RF_ERR_INTERNAL, "loop: curl_multi_poll: %s",
                                curl_multi_strerror(mc));
    }
}
