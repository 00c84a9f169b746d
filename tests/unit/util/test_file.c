/* test_file.c: util/file and util/utf8: reading whole files with a size cap, atomic writes, and
 * printable excerpts of untrusted text (valid UTF-8 out, whatever comes in; no character cut at the
 * "..." boundary).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "util/file.h"
#include "util/utf8.h"

/* An independent structural check of UTF-8 (lead byte, then the right count of continuation
 * bytes). */
static int valid_utf8(const char *p) {
    const unsigned char *s = (const unsigned char *)p;
    while (*s) {
        int k = *s < 0x80 ? 1 : (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3 : (*s >> 3) == 30 ? 4 : 0;
        if (!k) return 0;
        for (int j = 1; j < k; j++)
            if ((s[j] & 0xC0) != 0x80) return 0;
        s += k;
    }
    return 1;
}

/* Entries of dir other than . and .. */
static int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d) closedir(d);
    return n;
}

/* Writes "part" then fails, as a writer that runs out of input would. */
static rf_status write_then_fail(void *arg, int fd, const char *name, rf_error *err) {
    (void)arg;
    rf_status st = rf_write_all(fd, "part", 4, name, err);
    return st ? st : rf_error_set(err, RF_ERR_FORMAT, "%s: the writer gave up", name);
}

/* rf_write_file_atomic(_with): content and mode on success; on failure (the writer's, a missing
 * directory, a rename onto a directory) the target as it was and no temporary file left. */
static void test_atomic_write(void) {
    char dir[] = "/tmp/roofline-atomic-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128], sub[128], missing[160];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(missing, sizeof missing, "%s/no/such/out.bin", dir);
    rf_error err = {0};
    CHECK(rf_write_file_atomic(path, "first", 5, &err) == RF_OK);
    char *data = NULL;
    size_t len = 0;
    CHECK(rf_read_file(path, 100, &data, &len, &err) == RF_OK && !strcmp(data, "first"));
    free(data);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644);
    CHECK(rf_write_file_atomic_with(path, write_then_fail, NULL, &err) == RF_ERR_FORMAT);
    CHECK(strstr(err.msg, "gave up") != NULL);
    data = NULL;
    CHECK(rf_read_file(path, 100, &data, &len, &err) == RF_OK && !strcmp(data, "first"));
    free(data);
    CHECK(rf_write_file_atomic(missing, "x", 1, &err) == RF_ERR_IO && strstr(err.msg, missing));
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(rf_write_file_atomic(sub, "x", 1, &err) == RF_ERR_IO && strstr(err.msg, "rename"));
    CHECK_MSG(dir_entries(dir) == 2, "%d entries in %s", dir_entries(dir), dir); /* out.bin, sub */
    char rel[8];
    rf_path_dir("out.bin", rel, sizeof rel);
    CHECK(!strcmp(rel, "."));
    rf_path_dir("/out.bin", rel, sizeof rel);
    CHECK(!strcmp(rel, "/"));
    rmdir(sub);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    char out[64];
    test_atomic_write();
    /* utf8_seq */
    CHECK(rf_utf8_seq("a", 1) == 1);
    CHECK(rf_utf8_seq("\xc3\xa9", 2) == 2);         /* é */
    CHECK(rf_utf8_seq("\xe4\xb8\xad", 3) == 3);     /* 中 */
    CHECK(rf_utf8_seq("\xf0\x9f\x98\x80", 4) == 4); /* emoji */
    CHECK(rf_utf8_seq("\xe4\xb8", 2) == 0);         /* cut short */
    CHECK(rf_utf8_seq("\xa9", 1) == 0);             /* stray continuation */
    CHECK(rf_utf8_seq("\xc0\xaf", 2) == 0);         /* overlong lead */
    CHECK(rf_utf8_seq("\xed\xa0\x80", 3) == 0);     /* surrogate U+D800 */
    CHECK(rf_utf8_seq("\xe0\x80\xaf", 3) == 0);     /* overlong 3-byte */
    CHECK(rf_utf8_seq("\xf4\x90\x80\x80", 4) == 0); /* above U+10FFFF */
    CHECK(rf_utf8_seq("\xf4\x8f\xbf\xbf", 4) == 4); /* U+10FFFF */
    CHECK(rf_utf8_seq("\xe4"
                      "a"
                      "\xad",
                      3) == 0); /* broken continuation */

    /* printable: ASCII with a control byte */
    CHECK(!strcmp(rf_printable("ab\ncd", 5, out, sizeof out), "ab?cd"));
    /* truncation of ASCII */
    const char *longa = "abcdefghijklmnopqrstuvwxyz";
    rf_printable(longa, strlen(longa), out, 12);
    CHECK(!strcmp(out, "abcdefgh..."));
    /* multibyte text at every cap: never cut, always valid */
    const char *cjk = "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\xf0\x9f\x98\x80\xc3\xa9x";
    for (size_t cap = 8; cap < 24; cap++) {
        rf_printable(cjk, strlen(cjk), out, cap);
        CHECK_MSG(valid_utf8(out) && strlen(out) < cap, "cap %zu: '%s'", cap, out);
    }
    /* invalid bytes become '?', the rest survives */
    CHECK(!strcmp(rf_printable("a\xff"
                               "b\xe4\xb8"
                               "c",
                               6, out, sizeof out),
                  "a?b??c"));
    /* random bytes: output is always valid UTF-8 and bounded */
    uint64_t rng = 42;
    for (int t = 0; t < 2000; t++) {
        char in[40];
        size_t n = (size_t)(rng_next(&rng) % sizeof in);
        for (size_t i = 0; i < n; i++) in[i] = (char)(rng_next(&rng) & 0xff);
        size_t cap = 8 + (size_t)(rng_next(&rng) % 40);
        rf_printable(in, n, out, cap);
        if (!valid_utf8(out) || strlen(out) >= cap) {
            CHECK_MSG(0, "random case %d not valid or too long", t);
            break;
        }
    }

    /* rf_read_file: content, size cap, missing file named */
    char path[] = "/tmp/roofline-file-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "hello", 5) == 5);
    close(fd);
    char *data = NULL;
    size_t len = 0;
    rf_error err = {0};
    CHECK(rf_read_file(path, 100, &data, &len, &err) == RF_OK && len == 5 &&
          !strcmp(data, "hello"));
    free(data);
    data = NULL;
    CHECK(rf_read_file(path, 4, &data, &len, &err) == RF_ERR_FORMAT && strstr(err.msg, path));
    free(data);
    data = NULL;
    unlink(path);
    CHECK(rf_read_file(path, 100, &data, &len, &err) == RF_ERR_IO && strstr(err.msg, path));
    free(data);
    return check_summary("test_file");
}
