/* run_bin.h: runs the roofline binary from a unit test (test_cli.c, test_quantize.c): stdout
 * discarded, stderr captured. Header-only test helper. */
#ifndef RF_TEST_RUN_BIN_H
#define RF_TEST_RUN_BIN_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs `'bin' args` (args already shell-quoted) with stdin from /dev/null; returns the exit
 * status (128 + signal when killed) and stderr, cut to cap - 1 bytes, in err. */
static inline int run_bin(const char *bin, const char *args, char *err, size_t cap) {
    char errpath[] = "/tmp/roofline-cli-err-XXXXXX";
    int fd = mkstemp(errpath);
    if (fd >= 0) close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s' </dev/null", bin, args, errpath);
    int st = system(cmd);
    FILE *f = fopen(errpath, "r");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    err[n] = 0;
    if (f) fclose(f);
    remove(errpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

#endif
