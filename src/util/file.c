/* file.c: whole-file reads and printable excerpts. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/utf8.h"

rf_status rf_make_parents(const char *path, rf_error *err) {
    char *tmp = strdup(path);
    if (!tmp) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    rf_status st = RF_OK;
    for (char *p = tmp + 1; *p && !st; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST)
            st = rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        *p = '/';
    }
    free(tmp);
    return st;
}

rf_status rf_read_file(const char *path, size_t max, char **data, size_t *len, rf_error *err) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return rf_error_set(err, RF_ERR_IO, "%s: is a directory, not a file", path);
    }
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
    if (!st && ferror(f))
        st = rf_error_set(err, RF_ERR_IO, "%s: read error: %s", path, strerror(errno));
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

/* One excerpt writer for both forms: '?' for a byte that cannot be shown, or its \xNN escape. */
static const char *excerpt(const char *s, size_t n, char *out, size_t cap, bool escape) {
    size_t w = 0, limit = cap - 4;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = rf_utf8_seq(s + i, n - i);
        bool broken = k == 0; /* a byte of no valid sequence */
        if (broken) k = 1;
        bool hidden = broken || (k == 1 && (c < 0x20 || c == 0x7f));
        size_t need = hidden && escape ? 4 : k;
        if (w + need > limit) { /* never cut a character (or an escape) in two */
            memcpy(out + w, "...", 3);
            w += 3;
            break;
        }
        if (hidden && escape) {
            static const char hex[] = "0123456789abcdef";
            out[w++] = '\\';
            out[w++] = 'x';
            out[w++] = hex[c >> 4];
            out[w++] = hex[c & 15];
        } else if (hidden) {
            out[w++] = '?';
        } else {
            memcpy(out + w, s + i, k);
            w += k;
        }
        i += k;
    }
    out[w] = 0;
    return out;
}

rf_status rf_write_all(int fd, const void *data, size_t len, const char *name, rf_error *err) {
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return rf_error_set(err, RF_ERR_IO, "%s: write failed: %s", name,
                                n < 0 ? strerror(errno) : "no progress");
        p += n;
        len -= (size_t)n;
    }
    return RF_OK;
}

void rf_path_dir(const char *path, char *out, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

rf_status rf_write_file_atomic_with(const char *path, rf_write_fn fn, void *arg, rf_error *err) {
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp-XXXXXX", path) < 0)
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    rf_status st = RF_OK;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot create a file beside it: %s", path,
                          strerror(errno));
        free(tmp);
        return st;
    }
    if (fchmod(fd, 0644)) /* mkstemp makes it 0600; the result is an ordinary file */
        st = rf_error_set(err, RF_ERR_IO, "%s: chmod failed: %s", tmp, strerror(errno));
    if (!st) st = fn(arg, fd, tmp, err);
    if (!st && fsync(fd))
        st = rf_error_set(err, RF_ERR_IO, "%s: fsync failed: %s", path, strerror(errno));
    if (close(fd) && !st)
        st = rf_error_set(err, RF_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    if (!st && rename(tmp, path))
        st =
            rf_error_set(err, RF_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
    if (st) {
        unlink(tmp);
    } else { /* make the rename itself durable; a failure here loses nothing */
        char dir[4096];
        rf_path_dir(path, dir, sizeof dir);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    free(tmp);
    return st;
}

typedef struct bytes_arg {
    const void *data;
    size_t len;
} bytes_arg;

static rf_status write_bytes(void *arg, int fd, const char *name, rf_error *err) {
    const bytes_arg *b = arg;
    return rf_write_all(fd, b->data, b->len, name, err);
}

rf_status rf_write_file_atomic(const char *path, const void *data, size_t len, rf_error *err) {
    bytes_arg b = {data, len};
    return rf_write_file_atomic_with(path, write_bytes, &b, err);
}

const char *rf_printable(const char *s, size_t n, char *out, size_t cap) {
    return excerpt(s, n, out, cap, false);
}

const char *rf_escaped(const char *s, size_t n, char *out, size_t cap) {
    return excerpt(s, n, out, cap, true);
}
