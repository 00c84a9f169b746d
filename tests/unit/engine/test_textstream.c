/* test_textstream.c: stop strings split across pieces, UTF-8 characters split across byte
 * tokens, the earliest of several stop strings, and flushing. */
#include <string.h>

#include "check.h"
#include "engine/textstream.h"

/* Feeds the pieces, returns the concatenated released text and whether a stop fired. */
static int feed(const char *const *stops, const char *const *pieces, char *all, int *stopped) {
    rf_textstream ts;
    rf_ts_init(&ts, stops);
    char out[RF_TS_PENDING];
    size_t len, total = 0;
    *stopped = 0;
    for (int i = 0; pieces[i]; i++) {
        *stopped = rf_ts_push(&ts, pieces[i], strlen(pieces[i]), out, &len);
        memcpy(all + total, out, len);
        total += len;
        if (*stopped) break;
    }
    if (!*stopped) total += rf_ts_flush(&ts, all + total);
    all[total] = 0;
    return (int)total;
}

int main(void) {
    char all[1024];
    int stopped;
    const char *none[] = {NULL};
    const char *p1[] = {"Hello", " wor", "ld", NULL};
    feed(none, p1, all, &stopped);
    CHECK(!stopped && !strcmp(all, "Hello world"));

    /* stop string split over three pieces */
    const char *s1[] = {"END", NULL};
    const char *p2[] = {"abc E", "N", "Dxyz", NULL};
    feed(s1, p2, all, &stopped);
    CHECK(stopped && !strcmp(all, "abc "));

    /* a near-miss prefix is released once it cannot match */
    const char *p3[] = {"abc EN", "x", NULL};
    feed(s1, p3, all, &stopped);
    CHECK(!stopped && !strcmp(all, "abc ENx"));

    /* the earliest of two stop strings wins */
    const char *s2[] = {"lo", "He", NULL};
    const char *p4[] = {"Hello", NULL};
    feed(s2, p4, all, &stopped);
    CHECK(stopped && !strcmp(all, ""));

    /* held-back text is not released early: after "ab" with stop "bc", only "a" is out */
    rf_textstream ts;
    const char *s3[] = {"bc", NULL};
    rf_ts_init(&ts, s3);
    char out[RF_TS_PENDING];
    size_t len;
    CHECK(!rf_ts_push(&ts, "ab", 2, out, &len) && len == 1 && out[0] == 'a');
    CHECK(!rf_ts_push(&ts, "d", 1, out, &len) && len == 2 && !memcmp(out, "bd", 2));

    /* a 3-byte character split over byte tokens comes out whole */
    rf_ts_init(&ts, none);
    CHECK(!rf_ts_push(&ts, "x\xe4", 2, out, &len) && len == 1);
    CHECK(!rf_ts_push(&ts, "\xb8", 1, out, &len) && len == 0);
    CHECK(!rf_ts_push(&ts, "\xad", 1, out, &len) && len == 3 && !memcmp(out, "\xe4\xb8\xad", 3));
    /* an incomplete character at the end is flushed as it is */
    CHECK(!rf_ts_push(&ts, "\xf0\x9f", 2, out, &len) && len == 0);
    CHECK(rf_ts_flush(&ts, out) == 2);

    /* empty and over-long stop strings are ignored */
    char longs[RF_MAX_STOP_LEN + 2];
    memset(longs, 'a', sizeof longs - 1);
    longs[sizeof longs - 1] = 0;
    const char *s4[] = {"", longs, NULL};
    rf_ts_init(&ts, s4);
    CHECK(ts.n_stop == 0);
    return check_summary("test_textstream");
}
