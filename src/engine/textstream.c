/* textstream.c: stop strings and UTF-8 hold-back over a small pending buffer. */
#include "engine/textstream.h"

#include <string.h>

void rf_ts_init(rf_textstream *ts, const char *const *stops) {
    ts->n_stop = 0;
    ts->n_pend = 0;
    for (int i = 0; stops && i < RF_MAX_STOPS && stops[i]; i++) {
        size_t n = strlen(stops[i]);
        if (n == 0 || n > RF_MAX_STOP_LEN) continue;
        memcpy(ts->stop[ts->n_stop], stops[i], n + 1);
        ts->stop_len[ts->n_stop++] = n;
    }
}

/* Length of an incomplete UTF-8 sequence at the end of p[0..n) (0 when it ends cleanly). */
static size_t utf8_tail(const char *p, size_t n) {
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = (unsigned char)p[n - back];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte: keep looking for the lead */
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

bool rf_ts_push(rf_textstream *ts, const char *piece, size_t n, char *out, size_t *out_len) {
    if (n > RF_TS_PIECE_MAX) n = RF_TS_PIECE_MAX;
    memcpy(ts->pend + ts->n_pend, piece, n);
    ts->n_pend += n;
    /* a completed stop string: release what precedes the earliest one */
    size_t cut = ts->n_pend + 1;
    for (int i = 0; i < ts->n_stop; i++) {
        size_t L = ts->stop_len[i];
        for (size_t k = 0; k + L <= ts->n_pend && k < cut; k++)
            if (memcmp(ts->pend + k, ts->stop[i], L) == 0) {
                cut = k;
                break;
            }
    }
    if (cut <= ts->n_pend) {
        memcpy(out, ts->pend, cut);
        *out_len = cut;
        ts->n_pend = 0;
        return true;
    }
    /* hold back the longest suffix that is a proper prefix of a stop string */
    size_t hold = 0;
    for (int i = 0; i < ts->n_stop; i++) {
        size_t L = ts->stop_len[i];
        for (size_t h = (L - 1 < ts->n_pend ? L - 1 : ts->n_pend); h > hold; h--)
            if (memcmp(ts->pend + ts->n_pend - h, ts->stop[i], h) == 0) {
                hold = h;
                break;
            }
    }
    size_t u = utf8_tail(ts->pend, ts->n_pend - hold);
    hold += u;
    size_t emit = ts->n_pend - hold;
    memcpy(out, ts->pend, emit);
    *out_len = emit;
    memmove(ts->pend, ts->pend + emit, hold);
    ts->n_pend = hold;
    return false;
}

size_t rf_ts_flush(rf_textstream *ts, char *out) {
    size_t n = ts->n_pend;
    memcpy(out, ts->pend, n);
    ts->n_pend = 0;
    return n;
}
