/* test_hostile_files.c: the hostile-file table (tests/data/hostile_files.tsv), one row per check
 * of docs/reliability.md's GGUF list and per CVE shape it names, for the GGUF reader, the
 * tokenizer's and the model's meaning checks on what the reader accepted, and the safetensors
 * header reader.
 *
 * Each row: reader, name, recipe, the exact error message expected. A recipe is a list of
 * byte-writing steps separated by spaces (values take %HH escapes, so a value holds no space):
 *   magic                 the 4 bytes "GGUF"
 *   raw:TEXT              TEXT's bytes
 *   u32:N  u64:N          a little-endian integer (N decimal, 0x hex, or -N: 2^64 - N)
 *   str:TEXT  strlen:N    a GGUF string (u64 length, bytes); only the length
 *   hdr:V,NT,NKV          magic, version V, tensor count NT, metadata count NKV
 *   kv:KEY,TYPE,VALUE     a metadata entry (TYPE: u8 i8 u16 i16 u32 i32 f32 bool str u64 i64
 *                         f64, or a number written as is, with no value)
 *   arr:KEY,ELEM,A|B|...  an array entry of ELEM (a type name, or "arr": arrays of arrays)
 *   arrhdr:KEY,ELEM,N     an array entry's head claiming N elements, none written
 *   tinfo:NAME,TYPE,OFF,NE0|NE1...  a tensor info (n_dims from the dims; TYPE an rf_type id)
 *   tinfo_nd:NAME,N       a tensor info's name and n_dims N, nothing after them
 *   pad:A  zeros:N        zeros up to a multiple of A; N zero bytes
 *   st:JSON  stlen:N      a safetensors header: the u64 length and JSON; only the length
 * Readers: "gguf" (rf_gguf_open_memory over an exact-size heap copy, so ASan sees any overread),
 * "tokenizer" (the GGUF reader must accept the file; rf_tokenizer_from_gguf must refuse it),
 * "model" (the recipe is tiny_model.h overrides NAME=VALUE,...; rf_model_load refuses the file)
 * and "safetensors" (rf_st_open_memory). The message must equal "hostile.gguf: " (or
 * "hostile.safetensors: ", or the model file's path and ": ") followed by the expected text. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "tiny_model.h"
#include "util/buf.h"

/* Decodes %HH escapes of s[0, n) into out (NUL-terminated); returns the decoded length. */
static size_t unescape(const char *s, size_t n, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned v;
        if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%2x", &v) == 1) {
            out[k++] = (char)v;
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    out[k] = 0;
    return k;
}

static uint64_t num(const char *s) {
    if (s[0] == '-') return (uint64_t)0 - strtoull(s + 1, NULL, 0);
    return strtoull(s, NULL, 0);
}

static int type_id(const char *s) {
    static const char *const names[] = {"u8",   "i8",  "u16", "i16", "u32", "i32", "f32",
                                        "bool", "str", "arr", "u64", "i64", "f64"};
    for (int i = 0; i < 13; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return (int)strtol(s, NULL, 0);
}

static void put_str(rf_buf *b, const char *s, size_t n) {
    rf_buf_append_u64le(b, n);
    rf_buf_append(b, s, n);
}

/* One scalar or string value of GGUF type t. */
static bool put_value(rf_buf *b, int t, const char *v) {
    char tmp[512];
    size_t n = unescape(v, strlen(v), tmp, sizeof tmp);
    uint64_t u = num(tmp);
    switch (t) {
    case RF_GGUF_U8:
    case RF_GGUF_I8:
    case RF_GGUF_BOOL: {
        uint8_t x = (uint8_t)u;
        rf_buf_append(b, &x, 1);
        return true;
    }
    case RF_GGUF_U16:
    case RF_GGUF_I16: {
        uint8_t x[2] = {(uint8_t)u, (uint8_t)(u >> 8)};
        rf_buf_append(b, x, 2);
        return true;
    }
    case RF_GGUF_U32:
    case RF_GGUF_I32:
        rf_buf_append_u32le(b, (uint32_t)u);
        return true;
    case RF_GGUF_F32: {
        float f = strtof(tmp, NULL);
        uint32_t x;
        memcpy(&x, &f, 4);
        rf_buf_append_u32le(b, x);
        return true;
    }
    case RF_GGUF_U64:
    case RF_GGUF_I64:
        rf_buf_append_u64le(b, u);
        return true;
    case RF_GGUF_F64: {
        double f = strtod(tmp, NULL);
        uint64_t x;
        memcpy(&x, &f, 8);
        rf_buf_append_u64le(b, x);
        return true;
    }
    case RF_GGUF_STRING:
        put_str(b, tmp, n);
        return true;
    default:
        return false; /* an invalid type: nothing follows it */
    }
}

/* Splits s at the first n-1 commas into parts (s is modified). Returns the number of parts. */
static int split(char *s, char **parts, int n) {
    int k = 0;
    parts[k++] = s;
    while (k < n && (s = strchr(s, ',')) != NULL) {
        *s++ = 0;
        parts[k++] = s;
    }
    return k;
}

/* Appends one recipe step; false when the step is not understood. */
static bool step(rf_buf *b, char *op) {
    char *arg = strchr(op, ':');
    if (arg) *arg++ = 0;
    char tmp[4096], *p[4] = {NULL, NULL, NULL, NULL};
    if (strcmp(op, "magic") == 0) {
        rf_buf_append(b, "GGUF", 4);
    } else if (strcmp(op, "raw") == 0 && arg) {
        rf_buf_append(b, tmp, unescape(arg, strlen(arg), tmp, sizeof tmp));
    } else if (strcmp(op, "u32") == 0 && arg) {
        rf_buf_append_u32le(b, (uint32_t)num(arg));
    } else if (strcmp(op, "u64") == 0 && arg) {
        rf_buf_append_u64le(b, num(arg));
    } else if (strcmp(op, "str") == 0 && arg) {
        put_str(b, tmp, unescape(arg, strlen(arg), tmp, sizeof tmp));
    } else if (strcmp(op, "strlen") == 0 && arg) {
        rf_buf_append_u64le(b, num(arg));
    } else if (strcmp(op, "hdr") == 0 && arg && split(arg, p, 3) == 3) {
        rf_buf_append(b, "GGUF", 4);
        rf_buf_append_u32le(b, (uint32_t)num(p[0]));
        rf_buf_append_u64le(b, num(p[1]));
        rf_buf_append_u64le(b, num(p[2]));
    } else if (strcmp(op, "kv") == 0 && arg && split(arg, p, 3) >= 2) {
        put_str(b, tmp, unescape(p[0], strlen(p[0]), tmp, sizeof tmp));
        int t = type_id(p[1]);
        rf_buf_append_u32le(b, (uint32_t)t);
        if (p[2] && !put_value(b, t, p[2])) return false;
    } else if ((strcmp(op, "arr") == 0 || strcmp(op, "arrhdr") == 0) && arg &&
               split(arg, p, 3) == 3) {
        put_str(b, tmp, unescape(p[0], strlen(p[0]), tmp, sizeof tmp));
        int t = type_id(p[1]);
        rf_buf_append_u32le(b, RF_GGUF_ARRAY);
        rf_buf_append_u32le(b, (uint32_t)t);
        if (op[3] == 'h') {
            rf_buf_append_u64le(b, num(p[2]));
        } else {
            uint64_t count = 1;
            for (const char *c = p[2]; *c; c++) count += *c == '|';
            rf_buf_append_u64le(b, *p[2] ? count : 0);
            for (char *e = *p[2] ? p[2] : NULL; e;) {
                char *bar = strchr(e, '|');
                if (bar) *bar = 0;
                if (!put_value(b, t, e)) return false;
                e = bar ? bar + 1 : NULL;
            }
        }
    } else if (strcmp(op, "tinfo") == 0 && arg && split(arg, p, 4) == 4) {
        put_str(b, tmp, unescape(p[0], strlen(p[0]), tmp, sizeof tmp));
        uint64_t ne[8];
        uint32_t nd = 0;
        for (char *e = p[3]; e && nd < 8;) {
            ne[nd++] = num(e);
            e = strchr(e, '|');
            if (e) e++;
        }
        rf_buf_append_u32le(b, nd);
        for (uint32_t d = 0; d < nd; d++) rf_buf_append_u64le(b, ne[d]);
        rf_buf_append_u32le(b, (uint32_t)num(p[1]));
        rf_buf_append_u64le(b, num(p[2]));
    } else if (strcmp(op, "tinfo_nd") == 0 && arg && split(arg, p, 2) == 2) {
        put_str(b, tmp, unescape(p[0], strlen(p[0]), tmp, sizeof tmp));
        rf_buf_append_u32le(b, (uint32_t)num(p[1]));
    } else if (strcmp(op, "pad") == 0 && arg) {
        uint64_t a = num(arg);
        rf_buf_append_zeros(b, (size_t)((a - b->len % a) % a));
    } else if (strcmp(op, "zeros") == 0 && arg) {
        rf_buf_append_zeros(b, (size_t)num(arg));
    } else if (strcmp(op, "st") == 0 && arg) {
        size_t n = unescape(arg, strlen(arg), tmp, sizeof tmp);
        rf_buf_append_u64le(b, n);
        rf_buf_append(b, tmp, n);
    } else if (strcmp(op, "stlen") == 0 && arg) {
        rf_buf_append_u64le(b, num(arg));
    } else {
        return false;
    }
    return true;
}

static bool build(const char *recipe, rf_buf *b) {
    char *r = strdup(recipe);
    bool ok = true;
    for (char *save = NULL, *op = strtok_r(r, " ", &save); op && ok;
         op = strtok_r(NULL, " ", &save))
        ok = step(b, op);
    free(r);
    return ok;
}

/* tiny_model.h overrides: NAME=VALUE,... */
static bool tiny_overrides(const char *recipe, tiny_spec *s) {
    char *r = strdup(recipe);
    bool ok = true;
    for (char *save = NULL, *kv = strtok_r(r, ",", &save); kv && ok;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            ok = false;
            break;
        }
        *eq = 0;
        int v = atoi(eq + 1);
        if (!strcmp(kv, "n_layer"))
            s->n_layer = v;
        else if (!strcmp(kv, "n_embd"))
            s->n_embd = v;
        else if (!strcmp(kv, "n_ff"))
            s->n_ff = v;
        else if (!strcmp(kv, "n_head"))
            s->n_head = v;
        else if (!strcmp(kv, "n_head_kv"))
            s->n_head_kv = v;
        else if (!strcmp(kv, "head_dim"))
            s->head_dim = v;
        else if (!strcmp(kv, "n_vocab"))
            s->n_vocab = v;
        else if (!strcmp(kv, "n_embd_rows"))
            s->n_embd_rows = v;
        else
            ok = false;
    }
    free(r);
    return ok;
}

/* The message the reader gave for the row, or NULL when it accepted the file (or the row could
 * not be built: *why says so). msg is err's buffer. */
static const char *run_row(const char *reader, const char *recipe, rf_error *err, char *prefix,
                           size_t cap, const char **why) {
    *why = NULL;
    if (strcmp(reader, "model") == 0) {
        tiny_spec s = tiny_default();
        if (!tiny_overrides(recipe, &s)) return *why = "bad overrides", NULL;
        const char *path = tiny_write_file(&s, "hostile");
        if (!path) return *why = "cannot write the model", NULL;
        snprintf(prefix, cap, "%s: ", path);
        rf_model *m = NULL;
        rf_status st = rf_model_load(path, &m, err);
        unlink(path);
        if (st == RF_OK) {
            rf_model_free(m);
            return NULL;
        }
        return err->msg;
    }
    rf_buf b;
    rf_buf_init(&b, 0);
    if (!build(recipe, &b)) {
        rf_buf_free(&b);
        return *why = "bad recipe", NULL;
    }
    uint8_t *copy = malloc(b.len ? b.len : 1); /* exactly the file's bytes */
    if (b.len) memcpy(copy, b.data, b.len);
    size_t n = b.len;
    rf_buf_free(&b);
    const char *msg = NULL;
    if (strcmp(reader, "safetensors") == 0) {
        snprintf(prefix, cap, "hostile.safetensors: ");
        rf_st *f = NULL;
        if (rf_st_open_memory(copy, n, "hostile.safetensors", &f, err) != RF_OK)
            msg = err->msg;
        else
            rf_st_close(f);
    } else {
        snprintf(prefix, cap, "hostile.gguf: ");
        rf_gguf *g = NULL;
        rf_status st = rf_gguf_open_memory(copy, n, "hostile.gguf", &g, err);
        if (st != RF_OK) {
            msg = err->msg;
            if (strcmp(reader, "tokenizer") == 0) *why = "the GGUF reader refused the file";
        } else if (strcmp(reader, "tokenizer") == 0) {
            rf_tokenizer *t = NULL;
            if (rf_tokenizer_from_gguf(g, &t, err) != RF_OK)
                msg = err->msg;
            else
                rf_tokenizer_free(t);
        }
        rf_gguf_close(g);
    }
    free(copy);
    return msg;
}

int main(void) {
    const char *dir = getenv("ROOFLINE_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/hostile_files.tsv", dir ? dir : "tests/data");
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return 1;
    char line[8192];
    int rows = 0, lineno = 0;
    int per_reader[4] = {0};
    static const char *const readers[4] = {"gguf", "tokenizer", "model", "safetensors"};
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *col[4];
        int nc = 0;
        for (char *save = NULL, *c = strtok_r(line, "\t", &save); c && nc < 4;
             c = strtok_r(NULL, "\t", &save))
            col[nc++] = c;
        CHECK_MSG(nc == 4, "%s:%d: expected 4 tab-separated columns, found %d", path, lineno, nc);
        if (nc != 4) continue;
        int ri = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(col[0], readers[i]) == 0) ri = i;
        CHECK_MSG(ri >= 0, "%s:%d: unknown reader '%s'", path, lineno, col[0]);
        if (ri < 0) continue;
        rf_error err;
        memset(&err, 0, sizeof err);
        char prefix[320], want[1024];
        const char *why;
        const char *msg = run_row(col[0], col[2], &err, prefix, sizeof prefix, &why);
        snprintf(want, sizeof want, "%s%s", prefix, col[3]);
        CHECK_MSG(msg && !why && strcmp(msg, want) == 0,
                  "%s:%d (%s, %s):\n  expected: %s\n  got:      %s%s%s", path, lineno, col[0],
                  col[1], want, msg ? msg : "(accepted)", why ? " -- " : "", why ? why : "");
        rows++;
        per_reader[ri]++;
    }
    fclose(f);
    /* every reader has rows: a table cut short by a bad edit fails here */
    for (int i = 0; i < 4; i++) CHECK_MSG(per_reader[i] > 0, "no '%s' rows", readers[i]);
    printf("test_hostile_files: %d rows (gguf %d, tokenizer %d, model %d, safetensors %d), %d "
           "checks, %d failures\n",
           rows, per_reader[0], per_reader[1], per_reader[2], per_reader[3], g_check_count,
           g_check_failures);
    return g_check_failures ? 1 : 0;
}
