/* test_load_truncated.c: short reads and I/O errors at byte N while loading a model. The loader
 * maps the file (src/format/gguf.c: mmap, then every read is a bounds-checked look at the
 * mapping), so a read that ends early at byte N is the same as a file of N bytes: for every N
 * in [0, 4096) and then every 61st byte up to the end (the header, metadata and tensor table
 * byte by byte, the tensor data on a stride; the last byte always), the first N bytes of the
 * tiny model are written to a file and rf_model_load must fail with a message naming that file
 * (never crash, never succeed). An I/O error of the device under a mapping (SIGBUS) cannot be
 * made without a faulty device or FUSE and is not covered; a file that cannot be opened, a
 * directory and an empty file are. The number of N tried is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "model/model.h"
#include "tiny_model.h"

static bool load_fails_naming(const char *path) {
    rf_model *m = NULL;
    rf_error err = {0};
    rf_status st = rf_model_load(path, &m, &err);
    rf_model_free(m);
    return st != RF_OK && m == NULL && strstr(err.msg, path) != NULL;
}

int main(void) {
    tiny_spec spec = tiny_default();
    spec.wtype = RF_TYPE_Q8_0;
    void *buf = NULL;
    size_t size = 0;
    CHECK(tiny_build(&spec, &buf, &size) == 0);
    if (!buf) return check_summary("test_load_truncated");
    char path[] = "/tmp/roofline-trunc-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    long tried = 0, failed = 0;
    for (size_t n = 0; fd >= 0 && n < size; n = n < 4096        ? n + 1
                                                : n + 61 < size ? n + 61
                                                                : size - 1) {
        /* a new file each time: truncating a file that was just mapped waits on the kernel */
        close(fd);
        remove(path);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0 && pwrite(fd, buf, n, 0) == (ssize_t)n);
        tried++;
        if (!load_fails_naming(path)) {
            if (failed++ < 10)
                CHECK_MSG(0, "a file cut at byte %zu of %zu did not fail by name", n, size);
        }
        if (n == size - 1) break; /* the last byte short, always */
    }
    CHECK_MSG(failed == 0, "%ld of %ld truncations", failed, tried);
    /* the whole file loads: the loop above tested the loader, not a broken file */
    CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, buf, size, 0) == (ssize_t)size);
    rf_model *m = NULL;
    rf_error err = {0};
    CHECK_MSG(rf_model_load(path, &m, &err) == RF_OK, "%s", err.msg);
    rf_model_free(m);
    fprintf(stderr, "truncated loads: %ld points over %zu bytes, %ld wrong\n", tried, size, failed);
    /* a path that cannot be opened, a directory */
    CHECK(load_fails_naming("/nonexistent/roofline-model.gguf"));
    CHECK(load_fails_naming("/tmp"));
    if (fd >= 0) close(fd);
    remove(path);
    free(buf);
    return check_summary("test_load_truncated");
}
