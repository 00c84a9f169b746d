/* loop.h: the bench's single-threaded event loop. Every backend's requests are driven from one
 * thread: HTTP streams through libcurl's multi interface (many transfers, one thread), timers
 * for scheduled sends (absolute monotonic times, so a late loop shows as schedule lag instead of
 * shifting later sends), and work posted from other threads (the in-process engine's callbacks)
 * through a locked queue plus an eventfd. Sockets are watched with epoll and handed to libcurl
 * one at a time (curl_multi_socket_action), so handling an event does not walk
 * every open transfer (curl_multi_perform and curl_multi_poll do).
 *
 * Ownership: rf_loop_new returns a loop freed by rf_loop_free. Easy handles added with
 * rf_loop_add_easy stay owned by the caller; the loop removes them from the multi handle before
 * calling their done callback. Everything except rf_loop_post runs on the loop thread.
 */
#ifndef RF_BACKEND_LOOP_H
#define RF_BACKEND_LOOP_H

#include <stdint.h>

#include "roofline/status.h"

typedef struct rf_loop rf_loop;
typedef void (*rf_loop_fn)(void *user);
/* A finished transfer: curl_code is its CURLcode (0 = completed). */
typedef void (*rf_loop_done_fn)(void *user, void *easy, int curl_code);

rf_status rf_loop_new(rf_loop **out, rf_error *err);
void rf_loop_free(rf_loop *l);

/* The loop's libcurl multi handle (CURLM *), for backends that configure it. */
void *rf_loop_multi(rf_loop *l);

/* Starts a transfer on easy (a CURL *); done runs on the loop thread when it ends. */
rf_status rf_loop_add_easy(rf_loop *l, void *easy, rf_loop_done_fn done, void *user, rf_error *err);
/* Stops a transfer early (no done callback). */
void rf_loop_remove_easy(rf_loop *l, void *easy);

/* Calls fn(user) on the loop thread at monotonic time t_ns (or as soon as possible if past).
 * Timers fire in time order; equal times in the order added. */
rf_status rf_loop_at(rf_loop *l, int64_t t_ns, rf_loop_fn fn, void *user, rf_error *err);

/* From any thread: queue fn(user) to run on the loop thread and wake the loop. */
rf_status rf_loop_post(rf_loop *l, rf_loop_fn fn, void *user);

/* Runs until *until != 0 (checked after each batch of work), rf_loop_stop, or deadline_ns
 * (monotonic; 0: none). Returns RF_OK, or RF_ERR_INTERNAL on a libcurl failure. */
rf_status rf_loop_run(rf_loop *l, const volatile int *until, int64_t deadline_ns, rf_error *err);
/* Makes rf_loop_run return soon (from any thread, e.g. a SIGINT handler's flag watcher). */
void rf_loop_stop(rf_loop *l);

/* The loop's own punctuality, measured while a probe runs: a timer every period_ns records how
 * late it fired (a busy loop handles timers, sockets and posts in turn, so a timer is late by
 * as long as the loop was busy), and the loop thread's CPU time. A client reading many streams
 * in bursts shows here; its timestamps are then late by as much. Start and stop on the loop
 * thread; one probe at a time. */
typedef struct rf_loop_lag {
    int64_t samples;
    double p50_ms, p90_ms, p99_ms, max_ms;
    double cpu_s;  /* loop thread CPU time while the probe ran */
    double wall_s; /* the probe's wall time */
} rf_loop_lag;

void rf_loop_probe_start(rf_loop *l, int64_t period_ns);
void rf_loop_probe_stop(rf_loop *l, rf_loop_lag *out);

#endif
