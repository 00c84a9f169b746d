/* test_cli.c: the roofline binary on bad input. Every case must exit with status 2 and print one
 * line on stderr naming the file (or option) and what is wrong; under the sanitizer build this
 * also shows that nothing crashes or leaks. Files are tiny models written with our GGUF writer,
 * mutated copies of them, and hand-built headers. Also a good run on a tiny model (exit 0), and
 * `inspect` of a file whose key and tensor names carry escape sequences and invalid UTF-8: what
 * it prints is plain valid UTF-8 text with no control byte but newlines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "run_bin.h"
#include "st_write.h"
#include "tiny_model.h"
#include "util/buf.h"
#include "util/utf8.h"

static const char *g_bin;
static char g_err[8192];

/* Runs `roofline ARGS` with stdout discarded; returns the exit status, stderr in g_err. */
static int run(const char *args) {
    return run_bin(g_bin, args, g_err, sizeof g_err);
}

/* As run, with stdout kept in *out (malloc'd, NUL-terminated; caller frees) and its length. */
static int run_capture(const char *args, char **out, size_t *out_len) {
    char outpath[] = "/tmp/roofline-cli-out-XXXXXX";
    int fd = mkstemp(outpath);
    close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>/dev/null </dev/null", g_bin, args, outpath);
    int st = system(cmd);
    rf_buf b;
    rf_buf_init(&b, 0);
    FILE *f = fopen(outpath, "rb");
    char chunk[4096];
    size_t got;
    while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0) rf_buf_append(&b, chunk, got);
    if (f) fclose(f);
    remove(outpath);
    rf_buf_terminate(&b);
    *out = (char *)rf_buf_take(&b, out_len);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Offset of the first byte a terminal could act on (a control byte other than newline, DEL, a
 * C1 control U+0080..U+009F, or a byte of no valid UTF-8 sequence); -1 when there is none. */
static long first_unsafe(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = rf_utf8_seq(s + i, n - i);
        if (k == 0 || (k == 1 && ((c < 0x20 && c != '\n') || c == 0x7f)) ||
            (k == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0))
            return (long)i;
        i += k;
    }
    return -1;
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
    a.arch = "mamba";
    p = tiny_file(a, "arch");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("unsupported architecture", args, p, "unsupported architecture 'mamba'");
    a.arch = "ll\x1b]0;owned\x07\xff"
             "ama"; /* file bytes in a message: a printable excerpt */
    p = tiny_file(a, "arch2");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("escapes in the architecture", args, p,
               "unsupported architecture 'll?]0;owned??ama'");
    CHECK_MSG(first_unsafe(g_err, strlen(g_err)) < 0, "unsafe byte in: %s", g_err);
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
    a = s;
    a.fold = "blk.0.attn_norm.weight"; /* the right number of values, as a 2-D tensor */
    p = tiny_file(a, "fold");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("2-D norm", args, "'blk.0.attn_norm.weight' has shape [32, 2]", "expected [64]");
    a = s;
    a.head_dim_v = 1024;
    p = tiny_file(a, "vlen");
    snprintf(args, sizeof args, "run -m %s -p hi", p);
    expect_bad("value_length too large", args, "attention.value_length 1024", "at most 512");

    /* float hyperparameters: non-finite or meaningless values are refused by key and value */
    static const struct {
        const char *key;
        float value;
        const char *shown; /* how the message prints the value */
    } bad_f32[] = {
        {"gemma3.rope.freq_base", INFINITY, "= inf"},
        {"gemma3.rope.freq_base", NAN, "nan"},
        {"gemma3.rope.freq_base", -INFINITY, "= -inf"},
        {"gemma3.rope.freq_base", 0.5f, "= 0.5"},
        {"gemma3.rope.freq_base_swa", INFINITY, "= inf"},
        {"gemma3.rope.freq_base_swa", NAN, "nan"},
        {"gemma3.attention.layer_norm_rms_epsilon", INFINITY, "= inf"},
        {"gemma3.attention.layer_norm_rms_epsilon", NAN, "nan"},
        {"gemma3.attention.layer_norm_rms_epsilon", 0.0f, "= 0"},
        {"gemma3.rope.scaling.factor", INFINITY, "= inf"},
        {"gemma3.rope.scaling.factor", NAN, "nan"},
        {"gemma3.rope.scaling.factor", -2.0f, "= -2"},
        {"gemma3.final_logit_softcapping", INFINITY, "= inf"},
        {"gemma3.final_logit_softcapping", NAN, "nan"},
        {"gemma3.final_logit_softcapping", -30.0f, "= -30"},
    };
    for (size_t i = 0; i < sizeof bad_f32 / sizeof bad_f32[0]; i++) {
        a = s;
        a.f32_key = bad_f32[i].key;
        a.f32_value = bad_f32[i].value;
        p = tiny_file(a, "f32");
        char what[128], needle[128];
        snprintf(what, sizeof what, "%s %s", bad_f32[i].key, bad_f32[i].shown);
        snprintf(needle, sizeof needle, "%s ", bad_f32[i].key);
        snprintf(args, sizeof args, "run -m %s -p hi -n 2", p);
        expect_bad(what, args, needle, bad_f32[i].shown);
    }

    /* NaN/Inf weights: the run ends with an error naming the position, not with garbage */
    static const struct {
        const char *tensor;
        int64_t at; /* -1: every value */
        float value;
        rf_type type;
    } poisons[] = {
        {"token_embd.weight", 64 * 300 + 5, NAN, RF_TYPE_F32},      /* one logit (tied head) */
        {"token_embd.weight", 64 * 310 + 1, INFINITY, RF_TYPE_F16}, /* one logit, F16 */
        {"output_norm.weight", 3, NAN, RF_TYPE_F32},                /* every logit */
        {"blk.1.ffn_down.weight", -1, INFINITY, RF_TYPE_F16},       /* the residual stream */
    };
    for (size_t i = 0; i < sizeof poisons / sizeof poisons[0]; i++) {
        static const char *const modes[] = {"--temp 0", "--temp 0.7 --top-k 0 --seed 1"};
        a = s;
        a.wtype = poisons[i].type;
        a.poison = poisons[i].tensor;
        a.poison_at = poisons[i].at;
        a.poison_value = poisons[i].value;
        p = tiny_file(a, "nan");
        for (int k = 0; k < 2; k++) { /* the fused top-k head, and full logits */
            char what[128];
            snprintf(what, sizeof what, "%s %s (%s)", isnan(poisons[i].value) ? "NaN" : "Inf",
                     poisons[i].tensor, modes[k]);
            snprintf(args, sizeof args, "run -m %s -p abc -n 4 %s", p, modes[k]);
            expect_bad(what, args, "non-finite logits at position 3", "NaN/Inf");
        }
    }

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

    /* inspect: names and values from the file reach the terminal escaped */
    a = s;
    a.odd_key = "evil.\x1b]0;owned\x07\x1b[31m.\xff\xfe.\xc3(.\xc2\x9b"
                "2J.tab\there";
    a.odd_value = "v\x1b[0m\xed\xa0\x80\n\x01";
    a.odd_tensor = "t\x1b[2J\xc0\xaf\x7f\r\xe2\x82";
    p = tiny_file(a, "names");
    snprintf(args, sizeof args, "inspect --bw 1 %s", p);
    char *out = NULL;
    size_t out_len = 0;
    int irc = run_capture(args, &out, &out_len);
    CHECK_MSG(irc == 0, "inspect of odd names: exit %d", irc);
    long bad = first_unsafe(out, out_len);
    CHECK_MSG(bad < 0, "inspect printed an unsafe byte 0x%02x at offset %ld: ...%.40s",
              bad >= 0 ? (unsigned char)out[bad] : 0, bad, bad >= 0 ? out + bad : "");
    CHECK_MSG(strstr(out, "evil.\\x1b]0;owned\\x07\\x1b[31m.\\xff\\xfe.\\xc3(") != NULL,
              "key name not escaped as expected:\n%s", out);
    CHECK_MSG(strstr(out, "t\\x1b[2J\\xc0\\xaf\\x7f\\x0d\\xe2\\x82") != NULL,
              "tensor name not escaped as expected:\n%s", out);
    free(out);

    /* inspect of safetensors checkpoints (headers only): seed 003's QAT breakdown, the roofline
     * at 300 GB/s and the KV capacity line in vLLM's form; hostile headers and indexes */
    char st_dir[] = "/tmp/roofline-cli-st-XXXXXX";
    CHECK(mkdtemp(st_dir) != NULL);
    char seed_dir[128], stp[256];
    snprintf(seed_dir, sizeof seed_dir, "%s/seed003", st_dir);
    CHECK(st_write_seed003(seed_dir) == 8315809168ull);
    snprintf(args, sizeof args, "inspect --no-tensors --bw 300 --ctx 0 %s", seed_dir);
    irc = run_capture(args, &out, &out_len);
    CHECK_MSG(irc == 0, "inspect seed003: exit %d", irc);
    static const char *const seed_lines[] = {
        "  token embeddings             1     1,610,612,736 B    1.611 GB   1.500 GiB   19.4%",
        "  per-layer embeddings         1     4,697,620,480 B    4.698 GB   4.375 GiB   56.5%",
        "  transformer body           245     1,055,742,800 B    1.056 GB   0.983 GiB   12.7%",
        "  vision tower                 2       337,300,000 B    0.337 GB   0.314 GiB    4.1%",
        "  audio tower                  2       614,100,000 B    0.614 GB   0.572 GiB    7.4%",
        "  total                      392     8,315,809,168 B    8.316 GB   7.745 GiB  100.0%",
        "  int4 g32            245 tensors     1,055,742,800 B    1.056 GB ( 12.7%)",
        "  BF16                147 tensors     7,260,066,368 B    7.260 GB ( 87.3%)",
        "  per-layer embeddings              17,920 B    0.000 GB  one row of each table",
        "  vision tower                           0 B    0.000 GB  not read to decode text",
        "  output head                1,610,612,736 B    1.611 GB  tied: the token embedding table",
        "  total                      2,666,806,608 B    2.667 GB   2.484 GiB",
        "model.safetensors  8,315,926,776 bytes, header 117608, 882 tensors",
        "quantization compressed-tensors pack-quantized: int4, group 32, symmetric",
        "ceiling 112.5 tok/s single-stream decode = 300.00 GB/s / 2.667 GB per token",
        "every weight byte once per token (8.316 GB) 36.1 tok/s",
        "the transformer body alone (1.056 GB) 284.2 tok/s",
        "35 layers: 7 global, 28 sliding (window 512), 15 of them reading an earlier layer's cache",
        "KV cache: give --ctx N",
    };
    for (size_t i = 0; out && i < sizeof seed_lines / sizeof seed_lines[0]; i++)
        CHECK_MSG(strstr(out, seed_lines[i]) != NULL, "inspect seed003: no line '%s' in:\n%s",
                  seed_lines[i], out);
    CHECK(out && first_unsafe(out, out_len) < 0);
    free(out);
    /* at 4096: 20 cache layers x 1,024 B = 20,480 B a token; budget floor(24 x 0.9 GiB) -
     * 8,315,809,168 = 14,877,014,230 B: 726,416 tokens; a request needs 4 global x 4096 x 1024 +
     * 16 sliding x 512 x 1024 = 25,165,824 B: 591.16x */
    snprintf(
        args, sizeof args,
        "inspect --no-tensors --bw 300 --ctx 4096 --mem-gib 24 --util 0.9 %s/model.safetensors",
        seed_dir);
    irc = run_capture(args, &out, &out_len);
    CHECK_MSG(irc == 0 && out &&
                  strstr(out, "KV cache: 726,416 tokens; maximum concurrency 591.16x for 4,096 "
                              "tokens per request"),
              "inspect seed003 --ctx 4096: exit %d\n%s", irc, out ? out : "");
    free(out);
    snprintf(args, sizeof args, "inspect --no-tensors --bw 300 --ctx 4096 --mem-gib 8 %s",
             seed_dir);
    irc = run_capture(args, &out, &out_len);
    CHECK_MSG(irc == 0 && out && strstr(out, "KV cache: none: the weights (7.745 GiB) do not fit"),
              "inspect seed003 in 8 GiB: exit %d\n%s", irc, out ? out : "");
    free(out);
    /* the real model: the capacity line against hand-computed figures (test_kvcap.c) */
    const char *real = getenv("ROOFLINE_TEST_MODEL");
    if (real && access(real, R_OK) == 0) {
        snprintf(args, sizeof args, "inspect --no-tensors --bw 300 --mem-gib 24 --ctx 4096 %s",
                 real);
        irc = run_capture(args, &out, &out_len);
        CHECK_MSG(irc == 0 && out &&
                      strstr(out, "KV cache: 1,244,912 tokens; maximum concurrency 1122.22x for "
                                  "4,096 tokens per request") &&
                      strstr(out, "total                      236       246,587,904 B"),
                  "inspect of the real model: exit %d\n%s", irc, out ? out : "");
        free(out);
    }
    snprintf(stp, sizeof stp, "%s/past.safetensors", st_dir);
    CHECK(st_write_raw(stp, "{}", 2, 4096, 0));
    snprintf(args, sizeof args, "inspect %s", stp);
    expect_bad("st length past the file", args, stp, "header length 4096 runs past the end");
    snprintf(stp, sizeof stp, "%s/overlap.safetensors", st_dir);
    const char *ov = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
    CHECK(st_write_raw(stp, ov, strlen(ov), UINT64_MAX, 12));
    snprintf(args, sizeof args, "inspect %s", stp);
    expect_bad("st offsets overlap", args, stp, "tensors 'a' (data_offsets [0, 8]) and 'b'");
    snprintf(stp, sizeof stp, "%s/noext", st_dir);
    CHECK(write_text(stp, "hello, this is not a model"));
    snprintf(args, sizeof args, "inspect %s", stp);
    expect_bad("neither GGUF nor safetensors", args, stp, "nor does it start with the GGUF magic");
    snprintf(stp, sizeof stp, "%s/model.safetensors.index.json", st_dir);
    CHECK(write_text(stp, "{\"weight_map\":{\"w\":\"model-00001-of-00009.safetensors\"}}"));
    snprintf(args, sizeof args, "inspect %s", st_dir);
    expect_bad("index names a missing shard", args, "model-00001-of-00009.safetensors",
               "cannot be opened");
    snprintf(args, sizeof args, "inspect --kv-dtype f8 %s", seed_dir);
    expect_bad("bad --kv-dtype", args, "--kv-dtype", "'f8'");
    snprintf(args, sizeof args, "inspect --util 0 %s", seed_dir);
    expect_bad("--util 0", args, "--util", "[0.01, 1]");
    snprintf(args, sizeof args, "rm -rf '%s'", st_dir);
    CHECK(system(args) == 0);

    /* remove the temp files */
    int rc = system("rm -f /tmp/roofline-cli-*");
    (void)rc;
    return check_summary("test_cli");
}
