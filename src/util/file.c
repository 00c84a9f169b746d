/* file.c: whole-file reads and printable excerpts. */
#include "util/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "util/buf.h"
#include "util/utf8.h"

rf_status rf_read_file(const char *path, size_t max, char **data, size_t *len, rf_error *err) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    rf_buf b;
    rf_buf_init(&b, max);
    char chunk[65536];
    size_t got;
    rf_status st = RF_OK;
    while (!st && (got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        st = rf_buf_append(&b, chunk, got);
        if (st == RF_ERR_ARG)
            st = rf_error_set(err, RF_ERR_FORMAT, "%s: larger than %zu bytes", path, max);
        else if (st)
            st = rf_error_set(err, st, "%s: out of memory", path);
    }
    if (!st && ferror(f)) st = rf_error_set(err, RF_ERR_IO, "%s: read error", path);
    fclose(f);
    if (!st && rf_buf_terminate(&b))
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
    if (st) {
        rf_buf_free(&b);
        return st;
    }
    *data = (char *)rf_buf_take(&b, len);
    return RF_OK;
}

const char *rf_printable(const char *s, size_t n, char *out, size_t cap) {
    size_t w = 0, limit = cap - 4;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = rf_utf8_seq(s + i, n - i);
        bool broken = k == 0; /* a byte of no valid sequence prints as '?' */
        if (broken) k = 1;
        if (w + k > limit) { /* never cut a character in two */
            memcpy(out + w, "...", 3);
            w += 3;
            break;
        }
        if (k > 1) {
            memcpy(out + w, s + i, k);
            w += k;
        } else {
            out[w++] = (broken || c < 0x20 || c == 0x7f) ? '?' : (char)c;
        }
        i += k;
    }
    out[w] = 0;
    return out;
}
