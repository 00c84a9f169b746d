/* event_collect.h: a request's events gathered for a test: the text of every event appended
 * (up to the buffer), the finish of the final one, and a wait for it. One per request; the
 * caller owns it (ec_init before submit, ec_wait then ec_destroy). */
#ifndef RF_TEST_EVENT_COLLECT_H
#define RF_TEST_EVENT_COLLECT_H

#include <pthread.h>
#include <string.h>

#include "roofline/engine.h"

typedef struct ec_out {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char text[8192];
    size_t len;
    rf_finish finish;
    int done;
} ec_out;

static inline void ec_init(ec_out *o) {
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
}

/* The rf_event_fn: user is an ec_out. */
static inline void ec_on_event(void *user, const rf_event *ev) {
    ec_out *o = user;
    pthread_mutex_lock(&o->mu);
    if (o->len + ev->text_len < sizeof o->text) {
        memcpy(o->text + o->len, ev->text, ev->text_len);
        o->len += ev->text_len;
        o->text[o->len] = 0;
    }
    if (ev->finish != RF_FINISH_NONE) {
        o->finish = ev->finish;
        o->done = 1;
        pthread_cond_signal(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
}

static inline void ec_wait(ec_out *o) {
    pthread_mutex_lock(&o->mu);
    while (!o->done) pthread_cond_wait(&o->cv, &o->mu);
    pthread_mutex_unlock(&o->mu);
}

static inline void ec_destroy(ec_out *o) {
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
}

#endif
