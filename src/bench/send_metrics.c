/* send_metrics.c: the figures of one finished request derived from its result's times and
 * counts (bench.h: rf_send_metrics), for its record (records.c) and the report. */
#include "bench/bench.h"

void rf_send_metrics_of(const rf_send *s, rf_send_metrics *m) {
    const rf_bk_result *r = &s->req.res;
    m->ok = r->err == RF_BK_OK;
    m->tokens = r->completion_tokens >= 0 ? r->completion_tokens
                : r->client_tokens >= 0   ? r->client_tokens
                                          : (int32_t)(r->n_ev + r->n_ev_dropped);
    m->ttft_ms = m->e2e_ms = m->tpot_ms = m->decode_tok_s = m->e2e_tok_s = -1;
    m->queue_e2e_ms = m->lag_ms = -1;
    if (r->t_sent && r->t_first_content)
        m->ttft_ms = (double)(r->t_first_content - r->t_sent) / 1e6;
    if (r->t_sent && r->t_last_content) m->e2e_ms = (double)(r->t_last_content - r->t_sent) / 1e6;
    if (m->tokens > 1 && m->e2e_ms >= 0 && m->ttft_ms >= 0)
        m->tpot_ms = (m->e2e_ms - m->ttft_ms) / (m->tokens - 1);
    if (m->tokens > 1 && r->t_last_content > r->t_first_content)
        m->decode_tok_s = (m->tokens - 1) * 1e9 / (double)(r->t_last_content - r->t_first_content);
    if (m->tokens > 0 && m->e2e_ms > 0) m->e2e_tok_s = m->tokens * 1e3 / m->e2e_ms;
    int64_t intended = s->t_intended ? s->t_intended : r->t_sent;
    if (intended && r->t_last_content)
        m->queue_e2e_ms = (double)(r->t_last_content - intended) / 1e6;
    if (s->t_intended && r->t_sent) m->lag_ms = (double)(r->t_sent - s->t_intended) / 1e6;
}
