/* test_loop.c: the bench's event loop: timers fire in time order (ties in the order added) and
 * not early, work posted from other threads runs on the loop thread, and a run with nothing to do
 * sleeps instead of spinning. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backend/loop.h"
#include "check.h"
#include "util/clock.h"

typedef struct tctx {
    int order[16];
    int n;
    int64_t due[16], fired[16];
    volatile int done;
} tctx;

typedef struct targ {
    tctx *c;
    int id;
} targ;

static void on_timer(void *user) {
    targ *a = user;
    a->c->fired[a->id] = rf_now_ns();
    a->c->order[a->c->n++] = a->id;
    if (a->c->n == 6) a->c->done = 1;
}

static pthread_t g_loop_thread;
static atomic_int g_posted, g_wrong_thread;
static volatile int g_posts_done;

static void on_post(void *user) {
    (void)user;
    if (!pthread_equal(pthread_self(), g_loop_thread)) atomic_fetch_add(&g_wrong_thread, 1);
    if (atomic_fetch_add(&g_posted, 1) + 1 == 4000) g_posts_done = 1;
}

static void *poster(void *arg) {
    rf_loop *l = arg;
    for (int i = 0; i < 1000; i++) rf_loop_post(l, on_post, NULL);
    return NULL;
}

int main(void) {
    rf_loop *l = NULL;
    rf_error err = {0};
    CHECK(rf_loop_new(&l, &err) == RF_OK);
    g_loop_thread = pthread_self();
    tctx c = {0};
    targ args[6];
    int64_t now = rf_now_ns();
    const int64_t offs[6] = {30, 10, 20, 10, 5, 40}; /* ms; ids 1 and 3 tie */
    for (int i = 0; i < 6; i++) {
        args[i] = (targ){&c, i};
        c.due[i] = now + offs[i] * 1000000;
        CHECK(rf_loop_at(l, c.due[i], on_timer, &args[i], &err) == RF_OK);
    }
    CHECK(rf_loop_run(l, &c.done, now + 2000000000, &err) == RF_OK);
    const int want[6] = {4, 1, 3, 2, 0, 5};
    for (int i = 0; i < 6; i++) CHECK(c.n == 6 && c.order[i] == want[i]);
    int early = 0;
    int64_t worst = 0;
    for (int i = 0; i < 6; i++) {
        early += c.fired[i] < c.due[i];
        if (c.fired[i] - c.due[i] > worst) worst = c.fired[i] - c.due[i];
    }
    CHECK(early == 0);
    /* how late is too late: 20 ms plus how late a plain sleep wakes up right now */
    const double allow = 20 + check_sleep_lateness_ms(20);
    fprintf(stderr, "timers: latest fired %.3f ms after its time (allowed %.1f)\n",
            (double)worst / 1e6, allow);
    CHECK_MSG((double)worst / 1e6 < allow, "a timer fired %.1f ms late", (double)worst / 1e6);

    /* posts from four threads, all run on this thread */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, poster, l);
    CHECK(rf_loop_run(l, &g_posts_done, rf_now_ns() + 5000000000ll, &err) == RF_OK);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    CHECK(atomic_load(&g_posted) == 4000 && atomic_load(&g_wrong_thread) == 0);

    /* idle: a 300 ms run with nothing to do uses (almost) no CPU */
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    volatile int never = 0;
    CHECK(rf_loop_run(l, &never, rf_now_ns() + 300000000, &err) == RF_OK);
    getrusage(RUSAGE_SELF, &b);
    double cpu = (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec) +
                 (double)(b.ru_utime.tv_usec - a.ru_utime.tv_usec) / 1e6 +
                 (double)(b.ru_stime.tv_sec - a.ru_stime.tv_sec) +
                 (double)(b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e6;
    CHECK_MSG(cpu < 0.05, "idle loop used %.3f s of CPU in 0.3 s", cpu);
    rf_loop_free(l);
    return check_summary("test_loop");
}
