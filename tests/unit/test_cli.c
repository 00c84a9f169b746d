/* test_cli.c: the roofline binary on bad input. Every case must exit with status 2 and print one
 * line on stderr naming the file (or option) and what is wrong; under the sanitizer build this
 * also shows that nothing crashes or leaks. Files are tiny models written with our GGUF writer,
 * mutated copies of them, and hand-built headers. Also a good run on a tiny model (exit 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tiny_model.h"
#include "util/buf.h"

static const char *g_bin;
static char g_err[8192];

/* Runs `roofline ARGS` with stdout discarded; returns the exit status, stderr in g_err. */
static int run(const char *args) {
    char errpath[] = "/tmp/roofline-cli-err-XXXXXX";
    int fd = mkstemp(errpath);
    close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s' </dev/null", g_bin, args, errpath);
    int st = system(cmd);
    FILE *f = fopen(errpath, "r");
    size_t n = f ? fread(g_err, 1, sizeof g_err - 1, f) : 0;
    g_err[n] = 0;
    if (f) fclose(f);
    remove(errpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Expects exit 2, exactly one stderr line, containing every needle. */
static void expect_bad(const char *what, const char *args, const char *n1, const char *n2) {
    int rc = run(args);
    int ok =
        rc == 2 && lines(g_err) == 1 && (!n1 || strstr(g_err, n1)) && (!n2 || strstr(g_err, n2));
    CHECK_MSG(ok, "%s: exit %d, stderr: %s", what, rc, g_err);
    if (ok) fprintf(stderr, "  %-28s -> %s", what, g_err);
}

static char *write_bytes(const void *p, size_t n, const char *tag) {
    static char paths[32][128];
    static int k;
    char *path = paths[k++ % 32];
    snprintf(path, 128, "/tmp/roofline-cli-%s-XXXXXX", tag);
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
    return path;
}

static char *tiny_file(tiny_spec s, const char *tag) {
    void *buf = NULL;
    size_t n = 0;
    if (tiny_build(&s, &buf, &n)) return NULL;
    char *p = write_bytes(buf, n, tag);
    free(buf);
    return p;
}

/* A hand-built GGUF: one metadata key (general.architecture = gemma3) and one tensor with the
 * given type id, n_dims, ne[0] and offset; n_tensors and n_kv as given. */
static char *handmade(uint32_t version, uint64_t n_tensors, uint64_t n_kv, uint32_t type,
                      uint64_t ne0, uint64_t offset, const char *tag) {
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_buf_append(&b, "GGUF", 4);
    rf_buf_append_u32le(&b, version);
    rf_buf_append_u64le(&b, n_tensors);
    rf_buf_append_u64le(&b, n_kv);
    rf_buf_append_u64le(&b, 20);
    rf_buf_append_str(&b, "general.architecture");
    rf_buf_append_u32le(&b, RF_GGUF_STRING);
    rf_buf_append_u64le(&b, 6);
    rf_buf_append_str(&b, "gemma3");
    rf_buf_append_u64le(&b, 1);
    rf_buf_append_str(&b, "w");
    rf_buf_append_u32le(&b, 1);
    rf_buf_append_u64le(&b, ne0);
    rf_buf_append_u32le(&b, type);
    rf_buf_append_u64le(&b, offset);
    rf_buf_append_zeros(&b, (32 - b.len % 32) % 32 + 64);
    char *p = write_bytes(b.data, b.len, tag);
    rf_buf_free(&b);
    return p;
}

int main(void) {
    g_bin = getenv("ROOFLINE_BIN");
    if (!g_bin || access(g_bin, X_OK) != 0) {
        fprintf(stderr, "skipped: ROOFLINE_BIN not set\n");
        return 77;
    }
    char args[4096];
    tiny_spec s = tiny_default();
    char *good = tiny_file(s, "good");
    CHECK(good != NULL);

    /* the good tiny model works */
    snprintf(args, sizeof args, "run -m %s -p abc -n 4 --temp 0", good);
    CHECK_MSG(run(args) == 0, "good run: %s", g_err);
    CHECK(strstr(g_err, "prompt tokens: 4") != NULL);
    snprintf(args, sizeof args, "tokenize -m %s abc", good);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "inspect %s", good);
    CHECK(run(args) == 0);

    expect_bad("missing file", "run -m /nonexistent/model.gguf -p hi", "/nonexistent/model.gguf",
               "cannot open");
    expect_bad("directory", "inspect /tmp", "/tmp", "regular file");

    /* truncated, wrong magic, version, byte-swapped */
    void *buf = NULL;
    size_t n = 0;
    tiny_build(&s, &buf, &n);
    char *trunc = write_bytes(buf, n / 2, "trunc");
    snprintf(args, sizeof args, "run -m %s -p hi", trunc);
    expect_bad("truncated file", args, trunc, "past the end");
    char *tiny_head = write_bytes(buf, 100, "head");
    snprintf(args, sizeof args, "inspect %s", tiny_head);
    expect_bad("truncated header", args, tiny_head, "more than the file can hold");
    memcpy(buf, "GGML", 4);
    char *magic = write_bytes(buf, n, "magic");
    snprintf(args, sizeof args, "run -m %s -p hi", magic);
    expect_bad("wrong magic", args, magic, "not a GGUF file");
    memcpy(buf, "GGUF", 4);
    ((uint8_t *)buf)[4] = 1;
    char *v1 = write_bytes(buf, n, "v1");
    snprintf(args, sizeof args, "tokenize -m %s hi", v1);
    expect_bad("version 1", args, v1, "version 1");
    ((uint8_t *)buf)[4] = 0;
    ((uint8_t *)buf)[7] = 3;
    char *swapped = write_bytes(buf, n, "swap");
    snprintf(args, sizeof args, "run -m %s -p hi", swapped);
    expect_bad("byte-swapped", args, swapped, "big-endian");
    free(buf);

    /* hand-built headers: unknown tensor type, hostile counts, offsets */
    char *p = handmade(3, 1, 1, 99, 32, 0, "type");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("unknown tensor type", args, p, "unknown tensor type 99");
    p = handmade(3, 1ull << 62, 1, 0, 32, 0, "count");
    snprintf(args, sizeof args, "inspect %s", p);
    expect_bad("huge tensor count", args, p, "tensor count");
    p = handmade(3, 1, 1, 0, 32, 1ull << 40, "offset");
    snprintf(args, sizeof args, "inspect %s", p);
    expect_bad("offset past the end", args, p, "past the end");
    p = handmade(3, 1, 1, 8, 33, 0, "block");
    snprintf(args, sizeof args, "inspect %s", p);
    expect_bad("row not whole blocks", args, p, "multiple");

    /* model-level problems */
    tiny_spec a = s;
    a.arch = "llama";
    p = tiny_file(a, "arch");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("unsupported architecture", args, p, "unsupported architecture 'llama'");
    a = s;
    a.drop = "blk.1.ffn_up.weight";
    p = tiny_file(a, "drop");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("missing tensor", args, p, "missing tensor 'blk.1.ffn_up.weight'");
    a = s;
    a.reshape = "blk.0.attn_q.weight";
    p = tiny_file(a, "shape");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("shape mismatch", args, p, "blk.0.attn_q.weight");

    /* prompt longer than the context: refused before any work */
    snprintf(args, sizeof args, "run -m %s -c 8 -p 'abcdefghijklmnop'", good);
    expect_bad("prompt over context", args, "context", "17 tokens");

    /* options */
    expect_bad("unknown verb", "frobnicate", "unknown verb", NULL);
    snprintf(args, sizeof args, "run -m %s -p hi --temp banana", good);
    expect_bad("bad number", args, "--temp", "banana");
    snprintf(args, sizeof args, "run -m %s -p hi --bogus 1", good);
    expect_bad("unknown option", args, "--bogus", NULL);
    snprintf(args, sizeof args, "run -m %s -p hi -t 0", good);
    expect_bad("zero threads", args, "-t", NULL);

    /* remove the temp files */
    int rc = system("rm -f /tmp/roofline-cli-*");
    (void)rc;
    return check_summary("test_cli");
}
