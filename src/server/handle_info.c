/* handle_info.c: GET /health (503 {"status":"loading"} until an engine is attached, then 200
 * {"status":"ok"}; "stopping" while the server stops), GET /metrics (Prometheus,
 * server/metrics.h; 404 when off) and GET /v1/models (see srv.h).
 */
#include <time.h>

#include "server/srv.h"
#include "util/clock.h"

rf_httpd_ret rf_srv_answer_health(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    pthread_rwlock_rdlock(&r->s->lock);
    bool ready = r->s->e != NULL;
    pthread_rwlock_unlock(&r->s->lock);
    if (ready && !rf_httpd_stopping(h->d))
        return rf_httpd_reply_json(h, 200, json_pack("{s:s}", "status", "ok"), NULL, NULL);
    return rf_httpd_reply_json(h, 503, json_pack("{s:s}", "status", ready ? "stopping" : "loading"),
                               "Retry-After", "1");
}

rf_httpd_ret rf_srv_answer_metrics(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    rf_srv *s = r->s;
    if (!s->metrics)
        return rf_srv_fail(r, 404, NULL, "not_found", "metrics are off (--no-metrics)");
    rf_engine_stats st;
    pthread_rwlock_rdlock(&s->lock);
    bool ready = s->e != NULL;
    if (ready) rf_engine_get_stats(s->e, &st);
    uint64_t bpt = s->bytes_per_token;
    pthread_rwlock_unlock(&s->lock);
    rf_buf b;
    rf_buf_init(&b, 0);
    if (rf_metrics_render(s->metrics, ready ? &st : NULL, bpt, rf_now_ns(), &b)) {
        rf_buf_free(&b);
        return RF_HTTPD_CLOSE;
    }
    rf_httpd_ret ret = rf_httpd_reply(h, 200, "text/plain; version=0.0.4; charset=utf-8", b.data,
                                      b.len, RF_HTTPD_COPY, NULL, NULL);
    rf_buf_free(&b);
    return ret;
}

rf_httpd_ret rf_srv_answer_models(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    return rf_httpd_reply_json(h, 200, rf_openai_models_json(r->s->model_id, (int64_t)time(NULL)),
                               NULL, NULL);
}
