/* json_text.c: model output as a JSON string (bench.h: rf_json_text): invalid UTF-8 bytes
 * become U+FFFD and NUL bytes are dropped, so any reply can go into a record. */
#include "bench/bench.h"
#include "util/buf.h"
#include "util/utf8.h"

json_t *rf_json_text(const char *p, size_t len) {
    if (!p) return json_string("");
    rf_buf b;
    rf_buf_init(&b, 0);
    const unsigned char *u = (const unsigned char *)p;
    for (size_t i = 0; i < len;) {
        size_t k = rf_utf8_seq(p + i, len - i);
        if (k && u[i] != 0) {
            rf_buf_append(&b, u + i, k);
            i += k;
        } else {
            if (u[i]) rf_buf_append(&b, "\xEF\xBF\xBD", 3); /* NUL bytes are dropped */
            i++;
        }
    }
    json_t *s = json_stringn(b.data ? (const char *)b.data : "", b.len);
    rf_buf_free(&b);
    return s ? s : json_string("");
}
