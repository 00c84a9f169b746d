/* test_gguf.c: the GGUF reader and writer.
 *
 * 1. Writer round trips: every metadata type (scalars, arrays of each scalar type and of strings,
 *    empty strings and arrays), alignments unset/32/64/1, F32/F16/Q8_0/Q4_K tensors of 1..4 dims,
 *    versions 2 and 3, to memory and to a temp file, read back and checked field by field; copying
 *    every kv and tensor of a file into a new writer reproduces it byte for byte; the typed getters
 *    (widths, ranges, wrong types, missing keys); the writer's argument checks and rollback.
 * 2. Hostile files, each built byte by byte and read both from an exact-size heap copy (so ASan
 *    sees any overread) and through rf_gguf_open (the mmap path): every check of
 *    docs/reliability.md, each with its status code and a message naming the problem and the file.
 * 3. Every prefix of a small valid file fails cleanly; a byte-overwrite sweep of a header never
 *    crashes, and whatever it accepts stays inside the buffer.
 * 4. The real model when present (33 KVs, 236 tensors, data at 6525120) and a 1 MB truncated copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "format/gguf_write.h"
#include "kernels/types.h"
#include "util/buf.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static char g_tmpdir[64]; /* mkdtemp'd; removed at the end */

static bool contains(const char *msg, const char *needle) {
    return strstr(msg, needle) != NULL;
}

/* An exact-size heap copy, so a read one byte past the end is an ASan error. */
static uint8_t *exact_copy(const void *p, size_t n) {
    uint8_t *c = malloc(n ? n : 1);
    if (!c) abort();
    if (n) memcpy(c, p, n);
    return c;
}

static bool write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Writes n bytes to a fresh mkstemp file in the temp dir; path receives its name. */
static bool temp_file(char *path, size_t cap, const void *p, size_t n) {
    snprintf(path, cap, "%s/f_XXXXXX", g_tmpdir);
    int fd = mkstemp(path);
    if (fd < 0) return false;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, (const uint8_t *)p + done, n - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    close(fd);
    return done == n;
}

static uint8_t pattern_byte(uint32_t seed, size_t i) {
    uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u + 1;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (uint8_t)x;
}

static volatile uint8_t g_sink;

static void touch(const void *p, uint64_t n) {
    if (!n) return;
    const volatile uint8_t *b = p;
    g_sink ^= b[0];
    g_sink ^= b[n - 1];
}

/* Reads every view an accepted file hands out and checks it lies inside [base, base + size):
 * what a consumer may do with any file the reader accepts. Returns false on a violation. */
static bool walk_inside(const rf_gguf *g, const uint8_t *base, size_t size) {
    const uint8_t *end = base + size;
#define INSIDE(p, n)                                                                               \
    ((const uint8_t *)(p) >= base && (const uint8_t *)(p) <= end &&                                \
     (uint64_t)(end - (const uint8_t *)(p)) >= (n))
    for (uint64_t i = 0; i < rf_gguf_n_kv(g); i++) {
        const rf_gguf_kv *kv = rf_gguf_kv_at(g, i);
        if (!kv || !INSIDE(kv->key.ptr, kv->key.len) || kv->key.len == 0) return false;
        touch(kv->key.ptr, kv->key.len);
        if (kv->type == RF_GGUF_STRING) {
            if (!INSIDE(kv->v.s.ptr, kv->v.s.len)) return false;
            touch(kv->v.s.ptr, kv->v.s.len);
        } else if (kv->type == RF_GGUF_ARRAY) {
            if (kv->v.arr.type == RF_GGUF_STRING) {
                for (uint64_t j = 0; j < kv->v.arr.n; j++) {
                    rf_str s = kv->v.arr.strs[j];
                    if (!INSIDE(s.ptr, s.len)) return false;
                    touch(s.ptr, s.len);
                }
            } else if (kv->v.arr.n) {
                g_sink ^= (uint8_t)rf_gguf_arr_int(kv, 0);
                g_sink ^= (uint8_t)rf_gguf_arr_int(kv, kv->v.arr.n - 1);
                g_sink ^= (uint8_t)(rf_gguf_arr_float(kv, kv->v.arr.n - 1) != 0);
            }
        } else if ((unsigned)kv->type >= RF_GGUF_TYPE_COUNT) {
            return false;
        }
    }
    uint64_t avail = size - rf_gguf_data_offset(g);
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        if (!t || !INSIDE(t->data, t->nbytes) || !INSIDE(t->name.ptr, t->name.len)) return false;
        if (t->offset > avail || t->nbytes > avail - t->offset) return false;
        if (t->n_dims < 1 || t->n_dims > 4 || t->nbytes == 0) return false;
        if (t->offset % rf_gguf_alignment(g)) return false;
        touch(t->data, t->nbytes);
    }
#undef INSIDE
    return rf_gguf_data_offset(g) <= size;
}

/* ---- raw byte builder for hostile files ------------------------------------------------- */

static void b_u8(rf_buf *b, uint8_t v) {
    rf_buf_append(b, &v, 1);
}
static void b_u32(rf_buf *b, uint32_t v) {
    rf_buf_append_u32le(b, v);
}
static void b_u64(rf_buf *b, uint64_t v) {
    rf_buf_append_u64le(b, v);
}
static void b_strn(rf_buf *b, const char *s, size_t n) {
    b_u64(b, n);
    rf_buf_append(b, s, n);
}
static void b_str(rf_buf *b, const char *s) {
    b_strn(b, s, strlen(s));
}

static void b_header(rf_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b_u32(b, RF_GGUF_MAGIC);
    b_u32(b, version);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}

static void b_kv_u32(rf_buf *b, const char *key, uint32_t v) {
    b_str(b, key);
    b_u32(b, RF_GGUF_U32);
    b_u32(b, v);
}

static void b_kv_str(rf_buf *b, const char *key, const char *v) {
    b_str(b, key);
    b_u32(b, RF_GGUF_STRING);
    b_str(b, v);
}

static void b_tinfo(rf_buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                    uint64_t off) {
    b_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims && d <= RF_GGUF_MAX_DIMS; d++) b_u64(b, ne[d]); /* ne[5] */
    b_u32(b, type);
    b_u64(b, off);
}

static void b_pad(rf_buf *b, uint32_t a) {
    while (b->len % a) b_u8(b, 0);
}

static void b_data(rf_buf *b, size_t n) {
    for (size_t i = 0; i < n; i++) b_u8(b, pattern_byte(7, i));
}

/* v3, one kv (general.architecture), one tensor as given, padding to 32, data_len data bytes. */
static void one_tensor(rf_buf *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                       uint32_t type, uint64_t off, size_t data_len) {
    rf_buf_reset(b);
    b_header(b, 3, 1, 1);
    b_kv_str(b, "general.architecture", "test");
    b_tinfo(b, name, n_dims, ne, type, off);
    b_pad(b, 32);
    b_data(b, data_len);
}

/* ---- expecting failures ----------------------------------------------------------------- */

static int g_hostile_cases;

/* Opens the bytes from an exact heap copy and from a temp file; both must fail with code and a
 * message that names the file and contains needle. */
static void expect_fail_at(int line, const void *p, size_t n, rf_status code, const char *needle) {
    g_hostile_cases++;
    uint8_t *copy = exact_copy(p, n);
    rf_error err;
    memset(&err, 0, sizeof err);
    rf_gguf *g = (rf_gguf *)&err; /* must be reset to NULL */
    rf_status st = rf_gguf_open_memory(copy, n, "hostile.gguf", &g, &err);
    CHECK_MSG(st == code, "line %d: memory: status %s, want %s: %s", line, rf_status_str(st),
              rf_status_str(code), err.msg);
    CHECK_MSG(g == NULL, "line %d: *out not NULL on failure", line);
    CHECK_MSG(err.code == st, "line %d: err.code %d, status %d", line, err.code, st);
    CHECK_MSG(contains(err.msg, needle), "line %d: message lacks '%s': %s", line, needle, err.msg);
    CHECK_MSG(strncmp(err.msg, "hostile.gguf: ", 14) == 0, "line %d: message lacks the name: %s",
              line, err.msg);
    if (st == RF_OK) rf_gguf_close(g);
    free(copy);

    char path[128];
    CHECK(temp_file(path, sizeof path, p, n));
    memset(&err, 0, sizeof err);
    g = (rf_gguf *)&err;
    st = rf_gguf_open(path, &g, &err);
    CHECK_MSG(st == code, "line %d: file: status %s, want %s: %s", line, rf_status_str(st),
              rf_status_str(code), err.msg);
    CHECK_MSG(g == NULL, "line %d: file: *out not NULL on failure", line);
    CHECK_MSG(contains(err.msg, needle), "line %d: file: message lacks '%s': %s", line, needle,
              err.msg);
    CHECK_MSG(contains(err.msg, path), "line %d: file: message lacks the path: %s", line, err.msg);
    if (st == RF_OK) rf_gguf_close(g);
    unlink(path);
}

#define EXPECT_FAIL(b, code, needle) expect_fail_at(__LINE__, (b)->data, (b)->len, code, needle)

static void expect_ok_at(int line, const rf_buf *b) {
    uint8_t *copy = exact_copy(b->data, b->len);
    rf_error err;
    rf_gguf *g = NULL;
    rf_status st = rf_gguf_open_memory(copy, b->len, "valid.gguf", &g, &err);
    CHECK_MSG(st == RF_OK, "line %d: a valid file was rejected: %s", line, err.msg);
    if (st == RF_OK) {
        CHECK_MSG(walk_inside(g, copy, b->len), "line %d: views outside the buffer", line);
        rf_gguf_close(g);
    }
    free(copy);
}

#define EXPECT_OK(b) expect_ok_at(__LINE__, b)

/* ---- 1. writer round trip --------------------------------------------------------------- */

static const uint8_t A_U8[] = {0, 1, 255};
static const int8_t A_I8[] = {-128, 0, 127};
static const uint16_t A_U16[] = {0, 65535, 4660};
static const int16_t A_I16[] = {-32768, 32767, -1};
static const uint32_t A_U32[] = {0, UINT32_MAX, 7};
static const int32_t A_I32[] = {INT32_MIN, -1, INT32_MAX};
static const float A_F32[] = {0.5f, -2.25f, 3.0e38f};
static const uint8_t A_BOOL[] = {1, 0, 1};
static const uint64_t A_U64[] = {UINT64_MAX, 0, 1};
static const int64_t A_I64[] = {INT64_MIN, INT64_MAX, -5};
static const double A_F64[] = {3.141592653589793, -0.0, 1e-300};

typedef struct arr_case {
    const char *key;
    rf_gguf_type type;
    const void *data;
    uint64_t n;
} arr_case;

static const arr_case ARRS[] = {
    {"a.u8", RF_GGUF_U8, A_U8, 3},         {"a.i8", RF_GGUF_I8, A_I8, 3},
    {"a.u16", RF_GGUF_U16, A_U16, 3},      {"a.i16", RF_GGUF_I16, A_I16, 3},
    {"a.u32", RF_GGUF_U32, A_U32, 3},      {"a.i32", RF_GGUF_I32, A_I32, 3},
    {"a.f32", RF_GGUF_F32, A_F32, 3},      {"a.bool", RF_GGUF_BOOL, A_BOOL, 3},
    {"a.u64", RF_GGUF_U64, A_U64, 3},      {"a.i64", RF_GGUF_I64, A_I64, 3},
    {"a.f64", RF_GGUF_F64, A_F64, 3},      {"a.empty.u32", RF_GGUF_U32, NULL, 0},
    {"a.empty.f64", RF_GGUF_F64, NULL, 0},
};
#define N_ARRS (sizeof ARRS / sizeof ARRS[0])

/* Element i of a source array as int64 / double. */
static int64_t src_int(const arr_case *a, uint64_t i) {
    switch (a->type) {
    case RF_GGUF_U8:
    case RF_GGUF_BOOL:
        return ((const uint8_t *)a->data)[i];
    case RF_GGUF_I8:
        return ((const int8_t *)a->data)[i];
    case RF_GGUF_U16:
        return ((const uint16_t *)a->data)[i];
    case RF_GGUF_I16:
        return ((const int16_t *)a->data)[i];
    case RF_GGUF_U32:
        return ((const uint32_t *)a->data)[i];
    case RF_GGUF_I32:
        return ((const int32_t *)a->data)[i];
    case RF_GGUF_U64:
        return (int64_t)((const uint64_t *)a->data)[i];
    case RF_GGUF_I64:
        return ((const int64_t *)a->data)[i];
    default:
        return 0;
    }
}

static double src_float(const arr_case *a, uint64_t i) {
    if (a->type == RF_GGUF_F32) return ((const float *)a->data)[i];
    if (a->type == RF_GGUF_F64) return ((const double *)a->data)[i];
    if (a->type == RF_GGUF_U64) return (double)((const uint64_t *)a->data)[i];
    return (double)src_int(a, i);
}

static const char *const S_ARR[] = {"a", "", "longer string with spaces", "x\0y", "caf\xc3\xa9"};
#define N_SARR 5

typedef struct tcase {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
} tcase;

static const tcase TENSORS[] = {
    {"f32.1d", RF_TYPE_F32, 1, {5, 1, 1, 1}},
    {"f16.2d", RF_TYPE_F16, 2, {3, 2, 1, 1}},
    {"q8_0.3d", RF_TYPE_Q8_0, 3, {64, 2, 3, 1}},
    {"q4_k.4d", RF_TYPE_Q4_K, 4, {256, 1, 2, 2}},
    {"blk.0.attn_q.weight", RF_TYPE_F16, 2, {32, 3, 1, 1}},
    {"f32.last", RF_TYPE_F32, 1, {8, 1, 1, 1}},
};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

static uint64_t tcase_nbytes(const tcase *t) {
    uint64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    return rf_type_row_bytes(t->type, t->ne[0]) * rows;
}

static uint8_t *tcase_data(size_t i) {
    uint64_t n = tcase_nbytes(&TENSORS[i]);
    uint8_t *d = malloc(n);
    for (uint64_t j = 0; j < n; j++) d[j] = pattern_byte((uint32_t)i + 100, j);
    return d;
}

/* Scalars written through copy_kv (the writer has no add_ for these widths). */
static rf_gguf_kv scalar_kv(const char *key, rf_gguf_type t) {
    rf_gguf_kv kv;
    memset(&kv, 0, sizeof kv);
    kv.key = (rf_str){key, strlen(key)};
    kv.type = t;
    return kv;
}

/* align: 0 leaves general.alignment unset. */
static rf_gguf_writer *build_all(uint32_t version, uint32_t align) {
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err;
    bool ok = w != NULL;
    if (!ok) return NULL;
    rf_gguf_writer_set_version(w, version);
    ok = ok && rf_gguf_writer_add_str(w, "general.architecture", "roundtrip", &err) == RF_OK;
    if (align) ok = ok && rf_gguf_writer_add_u32(w, "general.alignment", align, &err) == RF_OK;
    rf_gguf_kv kv = scalar_kv("t.u8", RF_GGUF_U8);
    kv.v.u = 200;
    ok = ok && rf_gguf_writer_copy_kv(w, &kv, &err) == RF_OK;
    kv = scalar_kv("t.i8", RF_GGUF_I8);
    kv.v.i = -100;
    ok = ok && rf_gguf_writer_copy_kv(w, &kv, &err) == RF_OK;
    kv = scalar_kv("t.u16", RF_GGUF_U16);
    kv.v.u = 60000;
    ok = ok && rf_gguf_writer_copy_kv(w, &kv, &err) == RF_OK;
    kv = scalar_kv("t.i16", RF_GGUF_I16);
    kv.v.i = -30000;
    ok = ok && rf_gguf_writer_copy_kv(w, &kv, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_u32(w, "t.u32", 4000000000u, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_i32(w, "t.i32", -2000000000, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_u64(w, "t.u64", 0xFEDCBA9876543210ull, &err) == RF_OK;
    kv = scalar_kv("t.i64", RF_GGUF_I64);
    kv.v.i = INT64_MIN + 1;
    ok = ok && rf_gguf_writer_copy_kv(w, &kv, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_f32(w, "t.f32", -1.5f, &err) == RF_OK;
    kv = scalar_kv("t.f64", RF_GGUF_F64);
    kv.v.f = 1e300;
    ok = ok && rf_gguf_writer_copy_kv(w, &kv, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_bool(w, "t.bool.t", true, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_bool(w, "t.bool.f", false, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_str(w, "t.str", "hello, gguf", &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_str(w, "t.str.empty", "", &err) == RF_OK;
    for (size_t i = 0; i < N_ARRS; i++)
        ok = ok && rf_gguf_writer_add_arr(w, ARRS[i].key, ARRS[i].type, ARRS[i].data, ARRS[i].n,
                                          &err) == RF_OK;
    uint64_t lens[N_SARR];
    for (size_t i = 0; i < N_SARR; i++) lens[i] = strlen(S_ARR[i]);
    lens[3] = 3; /* "x\0y" */
    ok = ok && rf_gguf_writer_add_arr_str(w, "a.str", S_ARR, lens, N_SARR, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_arr_str(w, "a.str.cstr", S_ARR, NULL, N_SARR, &err) == RF_OK;
    ok = ok && rf_gguf_writer_add_arr_str(w, "a.empty.str", NULL, NULL, 0, &err) == RF_OK;
    for (size_t i = 0; i < N_TENSORS; i++) {
        uint8_t *d = tcase_data(i);
        ok = ok && rf_gguf_writer_add_tensor(w, TENSORS[i].name, TENSORS[i].n_dims, TENSORS[i].ne,
                                             TENSORS[i].type, d, tcase_nbytes(&TENSORS[i]),
                                             &err) == RF_OK;
        free(d);
    }
    CHECK_MSG(ok, "building the round-trip writer failed: %s", err.msg);
    if (!ok) {
        rf_gguf_writer_free(w);
        return NULL;
    }
    return w;
}

static const rf_gguf_kv *find_typed(const rf_gguf *g, const char *key, rf_gguf_type t) {
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    CHECK_MSG(kv != NULL, "key '%s' missing", key);
    if (kv)
        CHECK_MSG(kv->type == t, "key '%s' type %s, want %s", key, rf_gguf_type_name(kv->type),
                  rf_gguf_type_name(t));
    return kv && kv->type == t ? kv : NULL;
}

/* base: the buffer g was opened from (NULL for a file). */
static void verify_all(const rf_gguf *g, const uint8_t *base, size_t size, uint32_t version,
                       uint32_t align) {
    uint32_t a = align ? align : 32;
    CHECK(rf_gguf_version(g) == version);
    CHECK(rf_gguf_alignment(g) == a);
    CHECK(rf_gguf_file_size(g) == size);
    CHECK(rf_gguf_data_offset(g) % a == 0);
    /* 1 + alignment + 14 scalars + arrays + 3 string arrays */
    uint64_t want_kv = 1 + (align ? 1 : 0) + 14 + N_ARRS + 3;
    CHECK_MSG(rf_gguf_n_kv(g) == want_kv, "n_kv %llu, want %llu",
              (unsigned long long)rf_gguf_n_kv(g), (unsigned long long)want_kv);
    /* Insertion order is kept. */
    const rf_gguf_kv *k0 = rf_gguf_kv_at(g, 0);
    CHECK(k0 && rf_str_eq(k0->key, "general.architecture"));
    if (align) {
        const rf_gguf_kv *k1 = rf_gguf_kv_at(g, 1);
        CHECK(k1 && rf_str_eq(k1->key, "general.alignment") && k1->type == RF_GGUF_U32 &&
              k1->v.u == align);
    }
    const rf_gguf_kv *last = rf_gguf_kv_at(g, want_kv - 1);
    CHECK(last && rf_str_eq(last->key, "a.empty.str"));
    CHECK(rf_gguf_kv_at(g, want_kv) == NULL);
    for (uint64_t i = 0; i < rf_gguf_n_kv(g); i++) {
        const rf_gguf_kv *kv = rf_gguf_kv_at(g, i);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
        CHECK(rf_gguf_find_kv(g, key) == kv);
    }

    const rf_gguf_kv *kv;
    if ((kv = find_typed(g, "general.architecture", RF_GGUF_STRING)))
        CHECK(rf_str_eq(kv->v.s, "roundtrip"));
    if ((kv = find_typed(g, "t.u8", RF_GGUF_U8))) CHECK(kv->v.u == 200);
    if ((kv = find_typed(g, "t.i8", RF_GGUF_I8))) CHECK(kv->v.i == -100);
    if ((kv = find_typed(g, "t.u16", RF_GGUF_U16))) CHECK(kv->v.u == 60000);
    if ((kv = find_typed(g, "t.i16", RF_GGUF_I16))) CHECK(kv->v.i == -30000);
    if ((kv = find_typed(g, "t.u32", RF_GGUF_U32))) CHECK(kv->v.u == 4000000000u);
    if ((kv = find_typed(g, "t.i32", RF_GGUF_I32))) CHECK(kv->v.i == -2000000000);
    if ((kv = find_typed(g, "t.u64", RF_GGUF_U64))) CHECK(kv->v.u == 0xFEDCBA9876543210ull);
    if ((kv = find_typed(g, "t.i64", RF_GGUF_I64))) CHECK(kv->v.i == INT64_MIN + 1);
    if ((kv = find_typed(g, "t.f32", RF_GGUF_F32))) CHECK(kv->v.f == -1.5);
    if ((kv = find_typed(g, "t.f64", RF_GGUF_F64))) CHECK(kv->v.f == 1e300);
    if ((kv = find_typed(g, "t.bool.t", RF_GGUF_BOOL))) CHECK(kv->v.u == 1);
    if ((kv = find_typed(g, "t.bool.f", RF_GGUF_BOOL))) CHECK(kv->v.u == 0);
    if ((kv = find_typed(g, "t.str", RF_GGUF_STRING))) CHECK(rf_str_eq(kv->v.s, "hello, gguf"));
    if ((kv = find_typed(g, "t.str.empty", RF_GGUF_STRING))) CHECK(kv->v.s.len == 0);

    for (size_t i = 0; i < N_ARRS; i++) {
        const arr_case *ac = &ARRS[i];
        if (!(kv = find_typed(g, ac->key, RF_GGUF_ARRAY))) continue;
        CHECK_MSG(kv->v.arr.type == ac->type, "%s: element type %s", ac->key,
                  rf_gguf_type_name(kv->v.arr.type));
        CHECK_MSG(kv->v.arr.n == ac->n, "%s: n %llu", ac->key, (unsigned long long)kv->v.arr.n);
        CHECK(kv->v.arr.strs == NULL);
        if (kv->v.arr.type != ac->type || kv->v.arr.n != ac->n) continue;
        if (ac->n)
            CHECK(memcmp(kv->v.arr.data, ac->data, ac->n * rf_gguf_type_size(ac->type)) == 0);
        for (uint64_t j = 0; j < ac->n; j++) {
            if (ac->type == RF_GGUF_F32 || ac->type == RF_GGUF_F64) {
                CHECK_MSG(rf_gguf_arr_float(kv, j) == src_float(ac, j), "%s[%llu]", ac->key,
                          (unsigned long long)j);
            } else {
                CHECK_MSG(rf_gguf_arr_int(kv, j) == src_int(ac, j), "%s[%llu] = %lld", ac->key,
                          (unsigned long long)j, (long long)rf_gguf_arr_int(kv, j));
                CHECK(rf_gguf_arr_float(kv, j) == src_float(ac, j));
            }
        }
    }
    if ((kv = find_typed(g, "a.str", RF_GGUF_ARRAY))) {
        CHECK(kv->v.arr.type == RF_GGUF_STRING && kv->v.arr.n == N_SARR && kv->v.arr.strs);
        if (kv->v.arr.strs && kv->v.arr.n == N_SARR) {
            CHECK(rf_str_eq(kv->v.arr.strs[0], "a"));
            CHECK(kv->v.arr.strs[1].len == 0);
            CHECK(rf_str_eq(kv->v.arr.strs[2], "longer string with spaces"));
            CHECK(kv->v.arr.strs[3].len == 3 && memcmp(kv->v.arr.strs[3].ptr, "x\0y", 3) == 0);
            CHECK(rf_str_eq(kv->v.arr.strs[4], "caf\xc3\xa9"));
        }
    }
    if ((kv = find_typed(g, "a.str.cstr", RF_GGUF_ARRAY))) {
        CHECK(kv->v.arr.type == RF_GGUF_STRING && kv->v.arr.n == N_SARR);
        if (kv->v.arr.strs && kv->v.arr.n == N_SARR) CHECK(rf_str_eq(kv->v.arr.strs[3], "x"));
    }
    if ((kv = find_typed(g, "a.empty.str", RF_GGUF_ARRAY)))
        CHECK(kv->v.arr.type == RF_GGUF_STRING && kv->v.arr.n == 0);

    /* Tensors: order, shape, type, packed aligned offsets, sizes, bytes. */
    CHECK(rf_gguf_n_tensors(g) == N_TENSORS);
    CHECK(rf_gguf_tensor_at(g, N_TENSORS) == NULL);
    uint64_t off = 0;
    for (size_t i = 0; i < N_TENSORS && i < rf_gguf_n_tensors(g); i++) {
        const tcase *tc = &TENSORS[i];
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        CHECK_MSG(rf_str_eq(t->name, tc->name), "tensor %zu name", i);
        CHECK(rf_gguf_find_tensor(g, tc->name) == t);
        CHECK(t->n_dims == tc->n_dims);
        uint64_t nel = 1;
        for (int d = 0; d < 4; d++) {
            CHECK_MSG(t->ne[d] == tc->ne[d], "%s ne[%d] = %llu", tc->name, d,
                      (unsigned long long)t->ne[d]);
            nel *= tc->ne[d];
        }
        CHECK(t->nelements == nel);
        CHECK(t->type == tc->type);
        uint64_t nb = tcase_nbytes(tc);
        CHECK_MSG(t->nbytes == nb, "%s nbytes %llu, want %llu", tc->name,
                  (unsigned long long)t->nbytes, (unsigned long long)nb);
        CHECK_MSG(t->offset % a == 0, "%s offset %llu not aligned to %u", tc->name,
                  (unsigned long long)t->offset, a);
        CHECK_MSG(t->offset == off, "%s offset %llu, want %llu", tc->name,
                  (unsigned long long)t->offset, (unsigned long long)off);
        CHECK((rf_gguf_data_offset(g) + t->offset) % a == 0);
        if (base) CHECK(t->data == base + rf_gguf_data_offset(g) + t->offset);
        uint8_t *want = tcase_data(i);
        CHECK_MSG(memcmp(t->data, want, nb) == 0, "%s data bytes differ", tc->name);
        free(want);
        off += (nb + a - 1) / a * a;
    }
    CHECK(rf_gguf_find_tensor(g, "absent") == NULL);
    CHECK(rf_gguf_find_tensor(g, "f32") == NULL);
    CHECK(rf_gguf_find_tensor(g, "f32.1d.") == NULL);
    CHECK_MSG(rf_gguf_data_offset(g) + off == size, "file size %zu, data end %llu", size,
              (unsigned long long)(rf_gguf_data_offset(g) + off));
    if (base) CHECK(walk_inside(g, base, size));
}

/* Copies every kv and tensor of g into a new writer; its output must equal the original. */
static void check_copy(const rf_gguf *g, const void *orig, size_t orig_size) {
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err;
    bool ok = true;
    rf_gguf_writer_set_version(w, rf_gguf_version(g));
    for (uint64_t i = 0; ok && i < rf_gguf_n_kv(g); i++) {
        ok = rf_gguf_writer_copy_kv(w, rf_gguf_kv_at(g, i), &err) == RF_OK;
        CHECK_MSG(ok, "copy_kv %llu: %s", (unsigned long long)i, err.msg);
    }
    for (uint64_t i = 0; ok && i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        char name[RF_GGUF_MAX_NAME];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        ok = rf_gguf_writer_add_tensor(w, name, t->n_dims, t->ne, t->type, t->data, t->nbytes,
                                       &err) == RF_OK;
        CHECK_MSG(ok, "add_tensor %s: %s", name, err.msg);
    }
    void *buf = NULL;
    size_t size = 0;
    if (ok) CHECK(rf_gguf_writer_to_memory(w, &buf, &size, &err) == RF_OK);
    CHECK_MSG(buf && size == orig_size && memcmp(buf, orig, size) == 0,
              "copied file differs (%zu vs %zu bytes)", size, orig_size);
    free(buf);
    rf_gguf_writer_free(w);
}

static void test_roundtrip(void) {
    static const uint32_t aligns[] = {0, 32, 64, 1};
    for (uint32_t version = 2; version <= 3; version++) {
        for (size_t ai = 0; ai < sizeof aligns / sizeof aligns[0]; ai++) {
            uint32_t align = aligns[ai];
            rf_gguf_writer *w = build_all(version, align);
            if (!w) continue;
            rf_error err;
            void *buf = NULL;
            size_t size = 0;
            CHECK(rf_gguf_writer_to_memory(w, &buf, &size, &err) == RF_OK);
            /* memory */
            uint8_t *copy = exact_copy(buf, size);
            rf_gguf *g = NULL;
            rf_status st = rf_gguf_open_memory(copy, size, "rt.gguf", &g, &err);
            CHECK_MSG(st == RF_OK, "v%u align %u: %s", version, align, err.msg);
            if (st == RF_OK) {
                CHECK(strcmp(rf_gguf_name(g), "rt.gguf") == 0);
                verify_all(g, copy, size, version, align);
                check_copy(g, buf, size);
                rf_gguf_close(g);
            }
            free(copy);
            /* file */
            char path[128];
            snprintf(path, sizeof path, "%s/rt_XXXXXX", g_tmpdir);
            int fd = mkstemp(path);
            CHECK(fd >= 0);
            if (fd >= 0) close(fd);
            CHECK(rf_gguf_writer_to_file(w, path, &err) == RF_OK);
            FILE *f = fopen(path, "rb");
            uint8_t *disk = malloc(size + 1);
            size_t got = f ? fread(disk, 1, size + 1, f) : 0;
            if (f) fclose(f);
            CHECK_MSG(got == size && memcmp(disk, buf, size) == 0, "file bytes differ");
            free(disk);
            g = NULL;
            st = rf_gguf_open(path, &g, &err);
            CHECK_MSG(st == RF_OK, "v%u align %u file: %s", version, align, err.msg);
            if (st == RF_OK) {
                CHECK(strcmp(rf_gguf_name(g), path) == 0);
                verify_all(g, NULL, size, version, align);
                rf_gguf_close(g);
            }
            CHECK(unlink(path) == 0);
            free(buf);
            rf_gguf_writer_free(w);
        }
    }
    /* The smallest file: no tensors, no metadata, 24 bytes padded to 32. */
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err;
    void *buf = NULL;
    size_t size = 0;
    CHECK(rf_gguf_writer_to_memory(w, &buf, &size, &err) == RF_OK);
    CHECK(size == 32);
    rf_gguf *g = NULL;
    CHECK(rf_gguf_open_memory(buf, size, NULL, &g, &err) == RF_OK);
    if (g) {
        CHECK(rf_gguf_n_kv(g) == 0 && rf_gguf_n_tensors(g) == 0);
        CHECK(strcmp(rf_gguf_name(g), "(memory)") == 0);
        CHECK(rf_gguf_find_kv(g, "x") == NULL && rf_gguf_find_tensor(g, "x") == NULL);
        CHECK(rf_gguf_data_offset(g) == 32);
        rf_gguf_close(g);
    }
    /* Without the padding: a tensorless file needs none. */
    CHECK(rf_gguf_open_memory(buf, 24, NULL, &g, &err) == RF_OK);
    if (g) {
        CHECK(rf_gguf_data_offset(g) == 24);
        rf_gguf_close(g);
    }
    free(buf);
    rf_gguf_writer_free(w);
    rf_gguf_close(NULL); /* a no-op */
}

/* ---- typed getters ------------------------------------------------------------------------ */

static rf_gguf *getter_file(void **buf) {
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err;
    bool ok = true;
    rf_gguf_kv kv = scalar_kv("g.u8", RF_GGUF_U8);
    kv.v.u = 200;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.i8", RF_GGUF_I8);
    kv.v.i = -100;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.u16", RF_GGUF_U16);
    kv.v.u = 60000;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.i16", RF_GGUF_I16);
    kv.v.i = -30000;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    ok = ok && !rf_gguf_writer_add_u32(w, "g.u32", 4000000000u, &err);
    ok = ok && !rf_gguf_writer_add_i32(w, "g.i32", -2000000000, &err);
    ok = ok && !rf_gguf_writer_add_i32(w, "g.i32.pos", 5, &err);
    ok = ok && !rf_gguf_writer_add_u64(w, "g.u64.big", 1ull << 40, &err);
    ok = ok && !rf_gguf_writer_add_u64(w, "g.u64.small", 5, &err);
    ok = ok && !rf_gguf_writer_add_u64(w, "g.u64.2^31", 1ull << 31, &err);
    ok = ok && !rf_gguf_writer_add_u64(w, "g.u64.2^31-1", (1ull << 31) - 1, &err);
    ok = ok && !rf_gguf_writer_add_u64(w, "g.u64.u32max", UINT32_MAX, &err);
    ok = ok && !rf_gguf_writer_add_u64(w, "g.u64.u32max+1", (uint64_t)UINT32_MAX + 1, &err);
    ok = ok && !rf_gguf_writer_add_u64(w, "g.u64.max", UINT64_MAX, &err);
    kv = scalar_kv("g.i64.min32", RF_GGUF_I64);
    kv.v.i = INT32_MIN;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.i64.below", RF_GGUF_I64);
    kv.v.i = (int64_t)INT32_MIN - 1;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.i64.neg", RF_GGUF_I64);
    kv.v.i = -1;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.i64.7", RF_GGUF_I64);
    kv.v.i = 7;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.i64.min", RF_GGUF_I64);
    kv.v.i = INT64_MIN;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    ok = ok && !rf_gguf_writer_add_f32(w, "g.f32", -1.5f, &err);
    kv = scalar_kv("g.f64", RF_GGUF_F64);
    kv.v.f = 0.1;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.f64.big", RF_GGUF_F64);
    kv.v.f = 1e300;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    kv = scalar_kv("g.f64.inf", RF_GGUF_F64);
    kv.v.f = -INFINITY;
    ok = ok && !rf_gguf_writer_copy_kv(w, &kv, &err);
    ok = ok && !rf_gguf_writer_add_bool(w, "g.bool", true, &err);
    ok = ok && !rf_gguf_writer_add_str(w, "g.str", "hello", &err);
    ok = ok && !rf_gguf_writer_add_str(w, "g.str.empty", "", &err);
    ok = ok && !rf_gguf_writer_add_arr(w, "g.arr.u8", RF_GGUF_U8, A_U8, 3, &err);
    ok = ok && !rf_gguf_writer_add_arr(w, "g.arr.i64", RF_GGUF_I64, A_I64, 3, &err);
    ok = ok && !rf_gguf_writer_add_arr(w, "g.arr.f32", RF_GGUF_F32, A_F32, 3, &err);
    ok = ok && !rf_gguf_writer_add_arr_str(w, "g.arr.str", S_ARR, NULL, 2, &err);
    size_t size = 0;
    ok = ok && !rf_gguf_writer_to_memory(w, buf, &size, &err);
    rf_gguf_writer_free(w);
    CHECK_MSG(ok, "getter file: %s", err.msg);
    rf_gguf *g = NULL;
    if (ok) CHECK(rf_gguf_open_memory(*buf, size, "getters.gguf", &g, &err) == RF_OK);
    return g;
}

/* Getter result: status and, on failure, a message that names the key. */
static void expect_get_at(int line, rf_status st, const rf_error *err, rf_status want,
                          const char *key, const char *needle) {
    CHECK_MSG(st == want, "line %d: key %s: status %s, want %s (%s)", line, key, rf_status_str(st),
              rf_status_str(want), st ? err->msg : "");
    if (want != RF_OK) {
        CHECK_MSG(contains(err->msg, key), "line %d: message lacks the key: %s", line, err->msg);
        CHECK_MSG(contains(err->msg, needle), "line %d: message lacks '%s': %s", line, needle,
                  err->msg);
        CHECK_MSG(contains(err->msg, "getters.gguf"), "line %d: message lacks the file: %s", line,
                  err->msg);
    }
}
#define EXPECT_GET(st, want, key, needle) expect_get_at(__LINE__, st, &err, want, key, needle)

static void test_getters(void) {
    void *buf = NULL;
    rf_gguf *g = getter_file(&buf);
    if (!g) {
        free(buf);
        return;
    }
    rf_error err;
    uint32_t u;
    int32_t i;
    float f;
    bool b;
    rf_str s;
    const rf_gguf_kv *arr;

    /* u32 from every integer width, range-checked; a value out of range is shown as stored. */
    static const struct {
        const char *key;
        bool ok;
        uint32_t v;
        const char *shown; /* in the message when !ok */
    } u32s[] = {{"g.u8", true, 200, NULL},
                {"g.i8", false, 0, "value -100 "},
                {"g.u16", true, 60000, NULL},
                {"g.i16", false, 0, "value -30000 "},
                {"g.u32", true, 4000000000u, NULL},
                {"g.i32", false, 0, "value -2000000000 "},
                {"g.i32.pos", true, 5, NULL},
                {"g.u64.big", false, 0, "value 1099511627776 "},
                {"g.u64.small", true, 5, NULL},
                {"g.u64.u32max", true, UINT32_MAX, NULL},
                {"g.u64.u32max+1", false, 0, "value 4294967296 "},
                {"g.u64.max", false, 0, "value 18446744073709551615 "},
                {"g.i64.neg", false, 0, "value -1 "},
                {"g.i64.min", false, 0, "value -9223372036854775808 "},
                {"g.i64.7", true, 7, NULL}};
    for (size_t k = 0; k < sizeof u32s / sizeof u32s[0]; k++) {
        u = 12345;
        rf_status st = rf_gguf_get_u32(g, u32s[k].key, true, &u, &err);
        EXPECT_GET(st, u32s[k].ok ? RF_OK : RF_ERR_MODEL, u32s[k].key, "out of range");
        if (!u32s[k].ok) EXPECT_GET(st, RF_ERR_MODEL, u32s[k].key, u32s[k].shown);
        CHECK_MSG(u == (u32s[k].ok ? u32s[k].v : 12345u), "%s: %u", u32s[k].key, u);
    }
    static const struct {
        const char *key;
        bool ok;
        int32_t v;
        const char *shown;
    } i32s[] = {{"g.u8", true, 200, NULL},
                {"g.i8", true, -100, NULL},
                {"g.u16", true, 60000, NULL},
                {"g.i16", true, -30000, NULL},
                {"g.u32", false, 0, "value 4000000000 "},
                {"g.i32", true, -2000000000, NULL},
                {"g.u64.big", false, 0, "value 1099511627776 "},
                {"g.u64.2^31", false, 0, "value 2147483648 "},
                {"g.u64.2^31-1", true, INT32_MAX, NULL},
                {"g.u64.max", false, 0, "value 18446744073709551615 "},
                {"g.i64.min32", true, INT32_MIN, NULL},
                {"g.i64.below", false, 0, "value -2147483649 "},
                {"g.i64.min", false, 0, "value -9223372036854775808 "},
                {"g.i64.neg", true, -1, NULL}};
    for (size_t k = 0; k < sizeof i32s / sizeof i32s[0]; k++) {
        i = 12345;
        rf_status st = rf_gguf_get_i32(g, i32s[k].key, false, &i, &err);
        EXPECT_GET(st, i32s[k].ok ? RF_OK : RF_ERR_MODEL, i32s[k].key, "out of range");
        if (!i32s[k].ok) EXPECT_GET(st, RF_ERR_MODEL, i32s[k].key, i32s[k].shown);
        CHECK_MSG(i == (i32s[k].ok ? i32s[k].v : 12345), "%s: %d", i32s[k].key, i);
    }
    /* Non-integers into integers. */
    static const char *const not_int[] = {"g.f32", "g.f64", "g.bool", "g.str", "g.arr.u8"};
    for (size_t k = 0; k < 5; k++) {
        EXPECT_GET(rf_gguf_get_u32(g, not_int[k], true, &u, &err), RF_ERR_MODEL, not_int[k],
                   "must be an integer");
        EXPECT_GET(rf_gguf_get_i32(g, not_int[k], true, &i, &err), RF_ERR_MODEL, not_int[k],
                   "must be an integer");
    }
    /* Floats. */
    f = 0;
    EXPECT_GET(rf_gguf_get_f32(g, "g.f32", true, &f, &err), RF_OK, "g.f32", "");
    CHECK(f == -1.5f);
    EXPECT_GET(rf_gguf_get_f32(g, "g.f64", true, &f, &err), RF_OK, "g.f64", "");
    CHECK(f == 0.1f);
    EXPECT_GET(rf_gguf_get_f32(g, "g.f64.inf", true, &f, &err), RF_OK, "g.f64.inf", "");
    CHECK(isinf(f) && f < 0);
    f = 7;
    EXPECT_GET(rf_gguf_get_f32(g, "g.f64.big", true, &f, &err), RF_ERR_MODEL, "g.f64.big",
               "f32 range");
    CHECK(f == 7);
    EXPECT_GET(rf_gguf_get_f32(g, "g.u32", true, &f, &err), RF_ERR_MODEL, "g.u32",
               "must be a float");
    EXPECT_GET(rf_gguf_get_f32(g, "g.str", true, &f, &err), RF_ERR_MODEL, "g.str",
               "must be a float");
    /* bool */
    b = false;
    EXPECT_GET(rf_gguf_get_bool(g, "g.bool", true, &b, &err), RF_OK, "g.bool", "");
    CHECK(b);
    EXPECT_GET(rf_gguf_get_bool(g, "g.u8", true, &b, &err), RF_ERR_MODEL, "g.u8", "must be a bool");
    /* str */
    EXPECT_GET(rf_gguf_get_str(g, "g.str", true, &s, &err), RF_OK, "g.str", "");
    CHECK(rf_str_eq(s, "hello"));
    EXPECT_GET(rf_gguf_get_str(g, "g.str.empty", true, &s, &err), RF_OK, "g.str.empty", "");
    CHECK(s.len == 0 && rf_str_eq(s, ""));
    EXPECT_GET(rf_gguf_get_str(g, "g.u32", true, &s, &err), RF_ERR_MODEL, "g.u32",
               "must be a string");
    EXPECT_GET(rf_gguf_get_str(g, "g.arr.str", true, &s, &err), RF_ERR_MODEL, "g.arr.str",
               "must be a string");
    /* arrays */
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.u8", RF_GGUF_U8, true, &arr, &err), RF_OK, "", "");
    CHECK(arr && arr->v.arr.n == 3 && rf_gguf_arr_int(arr, 2) == 255);
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.u8", RF_GGUF_I32, true, &arr, &err), RF_OK, "", "");
    CHECK(arr != NULL);
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.i64", RF_GGUF_U32, true, &arr, &err), RF_OK, "", "");
    CHECK(arr && rf_gguf_arr_int(arr, 0) == INT64_MIN);
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.f32", RF_GGUF_F32, true, &arr, &err), RF_OK, "", "");
    CHECK(arr && rf_gguf_arr_float(arr, 1) == -2.25);
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.str", RF_GGUF_STRING, true, &arr, &err), RF_OK, "", "");
    CHECK(arr && arr->v.arr.n == 2 && rf_str_eq(arr->v.arr.strs[0], "a"));
    arr = (const rf_gguf_kv *)&err;
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.f32", RF_GGUF_I32, true, &arr, &err), RF_ERR_MODEL,
               "g.arr.f32", "must be an array of i32");
    CHECK(arr == NULL);
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.u8", RF_GGUF_F32, true, &arr, &err), RF_ERR_MODEL,
               "g.arr.u8", "must be an array of f32");
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.str", RF_GGUF_I32, true, &arr, &err), RF_ERR_MODEL,
               "g.arr.str", "array");
    EXPECT_GET(rf_gguf_get_arr(g, "g.arr.u8", RF_GGUF_STRING, true, &arr, &err), RF_ERR_MODEL,
               "g.arr.u8", "array of string");
    EXPECT_GET(rf_gguf_get_arr(g, "g.str", RF_GGUF_STRING, true, &arr, &err), RF_ERR_MODEL, "g.str",
               "array");
    EXPECT_GET(rf_gguf_get_arr(g, "g.u8", RF_GGUF_U8, true, &arr, &err), RF_ERR_MODEL, "g.u8",
               "array");

    /* Missing keys: required is an error naming the key; optional leaves *out as it was. */
    u = 11;
    i = -11;
    f = 1.25f;
    b = true;
    s = (rf_str){"dflt", 4};
    EXPECT_GET(rf_gguf_get_u32(g, "g.none", true, &u, &err), RF_ERR_MODEL, "g.none", "missing");
    EXPECT_GET(rf_gguf_get_i32(g, "g.none", true, &i, &err), RF_ERR_MODEL, "g.none", "missing");
    EXPECT_GET(rf_gguf_get_f32(g, "g.none", true, &f, &err), RF_ERR_MODEL, "g.none", "missing");
    EXPECT_GET(rf_gguf_get_bool(g, "g.none", true, &b, &err), RF_ERR_MODEL, "g.none", "missing");
    EXPECT_GET(rf_gguf_get_str(g, "g.none", true, &s, &err), RF_ERR_MODEL, "g.none", "missing");
    EXPECT_GET(rf_gguf_get_arr(g, "g.none", RF_GGUF_U8, true, &arr, &err), RF_ERR_MODEL, "g.none",
               "missing");
    /* A prefix or extension of a key is not the key. */
    EXPECT_GET(rf_gguf_get_u32(g, "g.u", true, &u, &err), RF_ERR_MODEL, "g.u", "missing");
    EXPECT_GET(rf_gguf_get_u32(g, "g.u8x", true, &u, &err), RF_ERR_MODEL, "g.u8x", "missing");
    EXPECT_GET(rf_gguf_get_u32(g, "", true, &u, &err), RF_ERR_MODEL, "", "missing");
    /* On success err is untouched. */
    err.code = RF_ERR_INTERNAL;
    strcpy(err.msg, "sentinel");
    CHECK(rf_gguf_get_u32(g, "g.none", false, &u, &err) == RF_OK);
    CHECK(rf_gguf_get_i32(g, "g.none", false, &i, &err) == RF_OK);
    CHECK(rf_gguf_get_f32(g, "g.none", false, &f, &err) == RF_OK);
    CHECK(rf_gguf_get_bool(g, "g.none", false, &b, &err) == RF_OK);
    CHECK(rf_gguf_get_str(g, "g.none", false, &s, &err) == RF_OK);
    arr = (const rf_gguf_kv *)&err;
    CHECK(rf_gguf_get_arr(g, "g.none", RF_GGUF_U8, false, &arr, &err) == RF_OK);
    CHECK(arr == NULL);
    CHECK(u == 11 && i == -11 && f == 1.25f && b && rf_str_eq(s, "dflt"));
    CHECK(rf_gguf_get_u32(g, "g.u8", true, &u, &err) == RF_OK && u == 200);
    CHECK(err.code == RF_ERR_INTERNAL && strcmp(err.msg, "sentinel") == 0);

    /* Names and helpers. */
    CHECK(strcmp(rf_gguf_type_name(RF_GGUF_U32), "u32") == 0);
    CHECK(strcmp(rf_gguf_type_name(RF_GGUF_F64), "f64") == 0);
    CHECK(strcmp(rf_gguf_type_name(RF_GGUF_ARRAY), "array") == 0);
    CHECK(strcmp(rf_gguf_type_name(13), "unknown") == 0);
    CHECK(strcmp(rf_gguf_type_name(UINT32_MAX), "unknown") == 0);
    CHECK(rf_str_eq((rf_str){"abc", 3}, "abc"));
    CHECK(!rf_str_eq((rf_str){"abc", 2}, "abc"));
    CHECK(!rf_str_eq((rf_str){"abc", 3}, "abd"));
    CHECK(rf_str_eq((rf_str){NULL, 0}, ""));
    rf_gguf_close(g);
    free(buf);
}

/* ---- writer argument checks -------------------------------------------------------------- */

static void snapshot(const rf_gguf_writer *w, void **buf, size_t *size) {
    rf_error err;
    CHECK(rf_gguf_writer_to_memory(w, buf, size, &err) == RF_OK);
}

static void test_writer_args(void) {
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err;
    CHECK(rf_gguf_writer_add_str(w, "k", "v", &err) == RF_OK);
    float data[8] = {0};
    uint64_t ne4[1] = {4};
    CHECK(rf_gguf_writer_add_tensor(w, "t", 1, ne4, RF_TYPE_F32, data, 16, &err) == RF_OK);
    void *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    snapshot(w, &before, &nb);

#define EXPECT_ARG(call, needle)                                                                   \
    do {                                                                                           \
        err.msg[0] = 0;                                                                            \
        rf_status st_ = (call);                                                                    \
        CHECK_MSG(st_ == RF_ERR_ARG, "%s: status %s", #call, rf_status_str(st_));                  \
        CHECK_MSG(contains(err.msg, needle), "%s: message lacks '%s': %s", #call, needle,          \
                  err.msg);                                                                        \
    } while (0)

    EXPECT_ARG(rf_gguf_writer_add_u32(w, "", 1, &err), "empty key");
    EXPECT_ARG(rf_gguf_writer_add_u32(w, NULL, 1, &err), "empty key");
    EXPECT_ARG(rf_gguf_writer_add_str(w, "k", "again", &err), "duplicate");
    EXPECT_ARG(rf_gguf_writer_add_u32(w, "k", 1, &err), "duplicate");
    EXPECT_ARG(rf_gguf_writer_add_str(w, "k2", NULL, &err), "NULL");
    EXPECT_ARG(rf_gguf_writer_add_u32(w, "general.alignment", 0, &err), "alignment");
    EXPECT_ARG(rf_gguf_writer_add_u32(w, "general.alignment", 3, &err), "alignment");
    EXPECT_ARG(rf_gguf_writer_add_u32(w, "general.alignment", 1u << 21, &err), "alignment");
    EXPECT_ARG(rf_gguf_writer_add_u64(w, "general.alignment", 32, &err), "must be u32");
    EXPECT_ARG(rf_gguf_writer_add_str(w, "general.alignment", "32", &err), "must be u32");
    EXPECT_ARG(rf_gguf_writer_add_arr(w, "general.alignment", RF_GGUF_U32, A_U32, 1, &err),
               "must be u32");
    EXPECT_ARG(rf_gguf_writer_add_arr(w, "arr", RF_GGUF_STRING, S_ARR, 1, &err), "scalar");
    EXPECT_ARG(rf_gguf_writer_add_arr(w, "arr", RF_GGUF_ARRAY, A_U8, 1, &err), "scalar");
    EXPECT_ARG(rf_gguf_writer_add_arr(w, "arr", (rf_gguf_type)99, A_U8, 1, &err), "scalar");
    EXPECT_ARG(rf_gguf_writer_add_arr(w, "arr", RF_GGUF_U8, NULL, 1, &err), "bad array");
    EXPECT_ARG(rf_gguf_writer_add_arr(w, "arr", RF_GGUF_U64, A_U64, UINT64_MAX / 4, &err),
               "bad array");
    const char *with_null[2] = {"a", NULL};
    EXPECT_ARG(rf_gguf_writer_add_arr_str(w, "sarr", with_null, NULL, 2, &err), "bad string 1");
    EXPECT_ARG(rf_gguf_writer_add_arr_str(w, "sarr", NULL, NULL, 2, &err), "NULL");
    rf_gguf_kv kv = scalar_kv("", RF_GGUF_U8);
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "empty");
    kv = scalar_kv("x", RF_GGUF_U8);
    kv.key.len = 3; /* "x\0..." holds a NUL */
    kv.key.ptr = "x\0y";
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "NUL");
    kv = scalar_kv("bad.type", (rf_gguf_type)13);
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "invalid type");
    kv = scalar_kv("bad.nested", RF_GGUF_ARRAY);
    kv.v.arr.type = RF_GGUF_ARRAY;
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "invalid type");
    kv = scalar_kv("long.str", RF_GGUF_STRING); /* lengths are checked before any byte is read */
    kv.v.s = (rf_str){"x", (uint64_t)RF_GGUF_MAX_STRING + 1};
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "string too long");
    rf_str long_strs[2] = {{"a", 1}, {"b", (uint64_t)RF_GGUF_MAX_STRING + 1}};
    kv = scalar_kv("long.arr", RF_GGUF_ARRAY);
    kv.v.arr.type = RF_GGUF_STRING;
    kv.v.arr.n = 2;
    kv.v.arr.strs = long_strs;
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "string too long");
    kv = scalar_kv("huge.arr", RF_GGUF_ARRAY);
    kv.v.arr.type = RF_GGUF_U64;
    kv.v.arr.n = UINT64_MAX / 2;
    kv.v.arr.data = A_U64;
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "array too large");
    kv = scalar_kv("general.alignment", RF_GGUF_U32);
    kv.v.u = 48;
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "alignment");
    kv = scalar_kv("general.alignment", RF_GGUF_I32);
    kv.v.i = 32;
    EXPECT_ARG(rf_gguf_writer_copy_kv(w, &kv, &err), "must be u32");

    char longname[80];
    memset(longname, 'n', 64);
    longname[64] = 0;
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, longname, 1, ne4, RF_TYPE_F32, data, 16, &err),
               "length");
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "", 1, ne4, RF_TYPE_F32, data, 16, &err), "length");
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, NULL, 1, ne4, RF_TYPE_F32, data, 16, &err), "NULL");
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t", 1, ne4, RF_TYPE_F32, data, 16, &err), "duplicate");
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t0", 0, ne4, RF_TYPE_F32, data, 16, &err), "n_dims");
    uint64_t ne5[5] = {4, 1, 1, 1, 1};
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t5", 5, ne5, RF_TYPE_F32, data, 16, &err), "n_dims");
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 1, ne4, RF_TYPE_F32, data, 12, &err),
               "bytes given");
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 1, ne4, 99, data, 16, &err),
               "unknown tensor type 99");
    uint64_t ne_q8[1] = {33};
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 1, ne_q8, RF_TYPE_Q8_0, data, 34, &err),
               "block size");
    uint64_t ne_zero[2] = {4, 0};
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 2, ne_zero, RF_TYPE_F32, data, 0, &err), "zero");
    uint64_t ne_big[2] = {(uint64_t)INT64_MAX, 2};
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 2, ne_big, RF_TYPE_F32, data, 0, &err),
               "overflows");
    uint64_t ne_wrap[2] = {1ull << 32, 1ull << 31}; /* 2^63 elements */
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 2, ne_wrap, RF_TYPE_F32, data, 0, &err),
               "overflows");
    uint64_t ne_bytes[1] = {1ull << 62}; /* fits int64, but 2^64 bytes */
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 1, ne_bytes, RF_TYPE_F32, data, 0, &err),
               "overflows");
    /* 4 * (2^62 + 1) wraps to 4 in 64 bits: must not be taken for a 1-element tensor. */
    uint64_t ne_wrap4[1] = {(1ull << 62) + 1};
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 1, ne_wrap4, RF_TYPE_F32, data, 4, &err),
               "overflows");
    EXPECT_ARG(rf_gguf_writer_add_tensor(w, "t1", 1, ne4, RF_TYPE_F32, NULL, 16, &err),
               "bytes given");

    /* None of the refused calls changed the output. */
    snapshot(w, &after, &na);
    CHECK_MSG(na == nb && memcmp(before, after, nb) == 0, "a refused add changed the writer");
    free(after);

    rf_gguf_writer_set_version(w, 1);
    void *out = (void *)&err;
    size_t osz = 99;
    EXPECT_ARG(rf_gguf_writer_to_memory(w, &out, &osz, &err), "version 1");
    CHECK(out == NULL && osz == 0);
    rf_gguf_writer_set_version(w, 4);
    EXPECT_ARG(rf_gguf_writer_to_memory(w, &out, &osz, &err), "version 4");
    rf_gguf_writer_set_version(w, 3);

    /* to_file: an unwritable path is RF_ERR_IO naming it, and leaves nothing behind. */
    char path[160];
    snprintf(path, sizeof path, "%s/no/such/dir/x.gguf", g_tmpdir);
    CHECK(rf_gguf_writer_to_file(w, path, &err) == RF_ERR_IO);
    CHECK(contains(err.msg, path));
    CHECK(rf_gguf_writer_to_file(w, g_tmpdir, &err) == RF_ERR_IO); /* a directory */
    if (access("/dev/full", W_OK) == 0) {
        CHECK(rf_gguf_writer_to_file(w, "/dev/full", &err) == RF_ERR_IO);
        CHECK(contains(err.msg, "/dev/full"));
    }
    /* The rest of the writer still works after the failures. */
    CHECK(rf_gguf_writer_add_u32(w, "general.alignment", 64, &err) == RF_OK);
    CHECK(rf_gguf_writer_add_u32(w, "k2", 5, &err) == RF_OK);
    snapshot(w, &after, &na);
    rf_gguf *g = NULL;
    CHECK(rf_gguf_open_memory(after, na, "w.gguf", &g, &err) == RF_OK);
    if (g) {
        CHECK(rf_gguf_n_kv(g) == 3 && rf_gguf_alignment(g) == 64);
        CHECK(rf_gguf_data_offset(g) % 64 == 0);
        rf_gguf_close(g);
    }
    free(after);
    free(before);
    rf_gguf_writer_free(w);
    rf_gguf_writer_free(NULL);
#undef EXPECT_ARG
}

/* ---- 2. hostile files --------------------------------------------------------------------- */

static void test_hostile_header(rf_buf *b) {
    /* Tiny inputs. */
    expect_fail_at(__LINE__, "", 0, RF_ERR_FORMAT, "truncated");
    expect_fail_at(__LINE__, "GGU", 3, RF_ERR_FORMAT, "truncated");
    expect_fail_at(__LINE__, "GGUF", 4, RF_ERR_FORMAT, "truncated");
    expect_fail_at(__LINE__, "GGUF\3\0\0\0", 8, RF_ERR_FORMAT, "truncated");
    expect_fail_at(__LINE__, "hello, world", 12, RF_ERR_FORMAT, "magic");
    CHECK(rf_gguf_open_memory(NULL, 5, "null.gguf", &(rf_gguf *){NULL}, NULL) == RF_ERR_ARG);

    /* Wrong magic. */
    rf_buf_reset(b);
    b_header(b, 3, 0, 0);
    memcpy(b->data, "GGML", 4);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "magic");
    memcpy(b->data, "FUGG", 4);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "magic");
    memset(b->data, 0, 4);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "magic");

    /* Versions. */
    static const uint32_t bad_versions[] = {0, 1, 4, 0xFFFFFFFFu, 0x00030001u};
    for (size_t i = 0; i < sizeof bad_versions / sizeof bad_versions[0]; i++) {
        rf_buf_reset(b);
        b_header(b, bad_versions[i], 0, 0);
        EXPECT_FAIL(b, RF_ERR_UNSUPPORTED, "version");
    }
    rf_buf_reset(b);
    b_header(b, 0x03000000u, 0, 0); /* version 3 written big-endian */
    EXPECT_FAIL(b, RF_ERR_UNSUPPORTED, "byte-swapped");
    rf_buf_reset(b);
    b_header(b, 0x02000000u, 0, 0);
    EXPECT_FAIL(b, RF_ERR_UNSUPPORTED, "byte-swapped");
    for (uint32_t v = 2; v <= 3; v++) {
        rf_buf_reset(b);
        b_header(b, v, 0, 0);
        EXPECT_OK(b);
    }

    /* Counts: huge, and larger than the bytes present allow. */
    static const uint64_t huge[] = {1ull << 63, UINT64_MAX, 1ull << 32, 1000};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        rf_buf_reset(b);
        b_header(b, 3, 0, huge[i]);
        b_kv_u32(b, "a", 1);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "metadata count");
        rf_buf_reset(b);
        b_header(b, 3, huge[i], 1);
        b_kv_u32(b, "a", 1);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "tensor count");
    }
    /* 2 kvs declared, 1 present: passes the count bound, then runs out. */
    rf_buf_reset(b);
    b_header(b, 3, 0, 2);
    b_kv_str(b, "general.architecture", "a fairly long value");
    EXPECT_FAIL(b, RF_ERR_FORMAT, "truncated");
    /* 2 tensors declared, 1 present. */
    rf_buf_reset(b);
    b_header(b, 3, 2, 0);
    b_tinfo(b, "w", 1, (uint64_t[]){8}, RF_TYPE_F32, 0);
    b_str(b, "a-second-tensor-with-a-longer-name-here"); /* then n_dims and ne, no type */
    b_u32(b, 1);
    b_u64(b, 8);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "truncated");
}

static void test_hostile_kv(rf_buf *b) {
    /* String lengths: huge and past the end, for a key and for a value. */
    static const uint64_t huge_lens[] = {1ull << 63, UINT64_MAX, (1ull << 26) + 1};
    for (size_t i = 0; i < 3; i++) {
        rf_buf_reset(b);
        b_header(b, 3, 0, 1);
        b_u64(b, huge_lens[i]);
        b_data(b, 32);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "string length");
        rf_buf_reset(b);
        b_header(b, 3, 0, 1);
        b_str(b, "key");
        b_u32(b, RF_GGUF_STRING);
        b_u64(b, huge_lens[i]);
        b_data(b, 32);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "string length");
    }
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_u64(b, 100); /* key length past the end */
    b_data(b, 20);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "truncated");
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "key");
    b_u32(b, RF_GGUF_STRING);
    b_u64(b, 11); /* value one byte short */
    b_data(b, 10);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "truncated");
    /* A scalar value cut short. */
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "key");
    b_u32(b, RF_GGUF_U64);
    b_u32(b, 0);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "truncated");

    /* Array counts: huge for scalar and string elements (including counts whose byte size wraps
     * 2^64 exactly), and just one too many. */
    static const struct {
        uint32_t et;
        uint64_t n;
        const char *needle;
    } arrs[] = {
        {RF_GGUF_U8, 1ull << 63, "elements"},
        {RF_GGUF_U8, UINT64_MAX, "elements"},
        {RF_GGUF_U64, 1ull << 61, "elements"},
        {RF_GGUF_U32, 1ull << 62, "elements"},
        {RF_GGUF_U16, 1ull << 63, "elements"},
        {RF_GGUF_F64, 1ull << 61, "elements"},
        {RF_GGUF_U32, 9, "elements"},
        {RF_GGUF_STRING, 1ull << 63, "strings"},
        {RF_GGUF_STRING, 1ull << 60, "strings"},
        {RF_GGUF_STRING, UINT64_MAX, "strings"},
        {RF_GGUF_STRING, 5, "strings"},
    };
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        rf_buf_reset(b);
        b_header(b, 3, 0, 1);
        b_str(b, "arr");
        b_u32(b, RF_GGUF_ARRAY);
        b_u32(b, arrs[i].et);
        b_u64(b, arrs[i].n);
        b_data(b, 32);
        EXPECT_FAIL(b, RF_ERR_FORMAT, arrs[i].needle);
    }
    /* A string array whose 3rd string runs past the end. */
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "arr");
    b_u32(b, RF_GGUF_ARRAY);
    b_u32(b, RF_GGUF_STRING);
    b_u64(b, 3);
    b_str(b, "one");
    b_str(b, "two");
    b_u64(b, 1000);
    b_data(b, 30);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "truncated");
    /* ... and one whose string length is over the cap. */
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "arr");
    b_u32(b, RF_GGUF_ARRAY);
    b_u32(b, RF_GGUF_STRING);
    b_u64(b, 2);
    b_str(b, "one");
    b_u64(b, 1ull << 40);
    b_data(b, 30);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "string length");

    /* Arrays of arrays, invalid element and value types. */
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "arr");
    b_u32(b, RF_GGUF_ARRAY);
    b_u32(b, RF_GGUF_ARRAY);
    b_u64(b, 1);
    b_u32(b, RF_GGUF_U8);
    b_u64(b, 1);
    b_u8(b, 0);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "arrays of arrays");
    static const uint32_t bad_types[] = {13, 14, 255, 0x80000000u, UINT32_MAX};
    for (size_t i = 0; i < 5; i++) {
        rf_buf_reset(b);
        b_header(b, 3, 0, 1);
        b_str(b, "arr");
        b_u32(b, RF_GGUF_ARRAY);
        b_u32(b, bad_types[i]);
        b_u64(b, 1);
        b_data(b, 16);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "element type");
        rf_buf_reset(b);
        b_header(b, 3, 0, 1);
        b_str(b, "val");
        b_u32(b, bad_types[i]);
        b_data(b, 16);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "value type");
    }

    /* Keys: empty, duplicate (adjacent, apart, different types). */
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_kv_u32(b, "", 1);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "empty key");
    rf_buf_reset(b);
    b_header(b, 3, 0, 2);
    b_kv_u32(b, "general.name", 1);
    b_kv_u32(b, "general.name", 1);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "duplicate metadata key 'general.name'");
    rf_buf_reset(b);
    b_header(b, 3, 0, 4);
    b_kv_u32(b, "b", 1);
    b_kv_str(b, "a", "x");
    b_kv_u32(b, "c", 1);
    b_kv_str(b, "b", "y");
    EXPECT_FAIL(b, RF_ERR_FORMAT, "duplicate");
    /* Keys that differ only past an embedded NUL or by a prefix are distinct. */
    rf_buf_reset(b);
    b_header(b, 3, 0, 3);
    b_strn(b, "k\0a", 3);
    b_u32(b, RF_GGUF_U8);
    b_u8(b, 1);
    b_strn(b, "k\0b", 3);
    b_u32(b, RF_GGUF_U8);
    b_u8(b, 2);
    b_kv_u32(b, "k", 3);
    EXPECT_OK(b);

    /* Alignment: 0, 3, 2^21, UINT32_MAX; of type u64, i32, string, array. */
    static const uint32_t bad_align[] = {0, 3, 48, 1u << 21, UINT32_MAX};
    for (size_t i = 0; i < 5; i++) {
        rf_buf_reset(b);
        b_header(b, 3, 0, 1);
        b_kv_u32(b, "general.alignment", bad_align[i]);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "general.alignment");
        EXPECT_FAIL(b, RF_ERR_FORMAT, "power of two");
    }
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "general.alignment");
    b_u32(b, RF_GGUF_U64);
    b_u64(b, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "general.alignment must be u32, found u64");
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "general.alignment");
    b_u32(b, RF_GGUF_I32);
    b_u32(b, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "alignment must be u32");
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_kv_str(b, "general.alignment", "32");
    EXPECT_FAIL(b, RF_ERR_FORMAT, "general.alignment must be u32, found string");
    rf_buf_reset(b);
    b_header(b, 3, 0, 1);
    b_str(b, "general.alignment");
    b_u32(b, RF_GGUF_ARRAY);
    b_u32(b, RF_GGUF_U32);
    b_u64(b, 1);
    b_u32(b, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "alignment must be u32");
    /* The largest alignment is accepted (1 MiB of padding). */
    rf_buf_reset(b);
    b_header(b, 3, 1, 1);
    b_kv_u32(b, "general.alignment", 1u << 20);
    b_tinfo(b, "w", 1, (uint64_t[]){8}, RF_TYPE_F32, 0);
    b_pad(b, 1u << 20);
    b_data(b, 32);
    EXPECT_OK(b);
}

static void test_hostile_tensors(rf_buf *b) {
    uint64_t ne8[1] = {8};
    /* Baseline: the builder makes valid files. */
    one_tensor(b, "w", 1, ne8, RF_TYPE_F32, 0, 32);
    EXPECT_OK(b);

    /* Names: empty, 64 bytes, huge length, duplicate; 63 bytes is fine. */
    one_tensor(b, "", 1, ne8, RF_TYPE_F32, 0, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "name length 0");
    char name[80];
    memset(name, 'x', 64);
    name[64] = 0;
    one_tensor(b, name, 1, ne8, RF_TYPE_F32, 0, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "name length 64");
    name[63] = 0;
    one_tensor(b, name, 1, ne8, RF_TYPE_F32, 0, 32);
    EXPECT_OK(b);
    memset(name, 'y', 70);
    name[70] = 0;
    one_tensor(b, name, 1, ne8, RF_TYPE_F32, 0, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "name length 70");
    rf_buf_reset(b);
    b_header(b, 3, 1, 0);
    b_u64(b, 1ull << 62);
    b_data(b, 64);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "string length");
    rf_buf_reset(b);
    b_header(b, 3, 3, 0);
    b_tinfo(b, "w", 1, ne8, RF_TYPE_F32, 0);
    b_tinfo(b, "v", 1, ne8, RF_TYPE_F32, 32);
    b_tinfo(b, "w", 1, ne8, RF_TYPE_F32, 64);
    b_pad(b, 32);
    b_data(b, 96);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "duplicate tensor name 'w'");

    /* n_dims 0, 5, huge. */
    static const uint32_t bad_dims[] = {0, 5, 64, UINT32_MAX};
    uint64_t ne_many[5] = {8, 1, 1, 1, 1};
    for (size_t i = 0; i < 4; i++) {
        one_tensor(b, "w", bad_dims[i], ne_many, RF_TYPE_F32, 0, 64);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "n_dims");
    }
    /* 4 dims is the most and is fine. */
    one_tensor(b, "w", 4, (uint64_t[]){2, 2, 2, 1}, RF_TYPE_F32, 0, 32);
    EXPECT_OK(b);

    /* ne containing 0. */
    one_tensor(b, "w", 1, (uint64_t[]){0}, RF_TYPE_F32, 0, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "dimension 0 is zero");
    one_tensor(b, "w", 3, (uint64_t[]){8, 1, 0}, RF_TYPE_F32, 0, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "dimension 2 is zero");

    /* Element-count overflows (ggml_nelements with ne = (INT64_MAX, 2), and friends). */
    static const struct {
        uint32_t n_dims;
        uint64_t ne[4];
        uint32_t type;
    } ovf[] = {
        {2, {(uint64_t)INT64_MAX, 2}, RF_TYPE_F32},
        {2, {2, (uint64_t)INT64_MAX}, RF_TYPE_F32},
        {1, {UINT64_MAX}, RF_TYPE_F32},
        {1, {(uint64_t)INT64_MAX + 1}, RF_TYPE_F32},
        {2, {1ull << 32, 1ull << 32}, RF_TYPE_F32},
        {4, {1ull << 16, 1ull << 16, 1ull << 16, 1ull << 16}, RF_TYPE_F32},
        {3, {1ull << 21, 1ull << 21, 1ull << 21}, RF_TYPE_F16},
        {2, {(uint64_t)INT64_MAX - 31, 2}, RF_TYPE_Q8_0},
        /* fits int64 but the byte size does not fit 64 bits */
        {1, {1ull << 62}, RF_TYPE_F32},
        {2, {1ull << 31, 1ull << 31}, RF_TYPE_F32},
        {1, {(uint64_t)INT64_MAX}, RF_TYPE_F32},
    };
    for (size_t i = 0; i < sizeof ovf / sizeof ovf[0]; i++) {
        one_tensor(b, "w", ovf[i].n_dims, ovf[i].ne, ovf[i].type, 0, 32);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "overflow");
    }
    /* Large but representable: past the end instead. */
    one_tensor(b, "w", 1, (uint64_t[]){1ull << 40}, RF_TYPE_F32, 0, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");
    one_tensor(b, "w", 1, (uint64_t[]){(1ull << 61) - 1}, RF_TYPE_F32, 0, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");

    /* Unknown type ids. */
    static const uint32_t bad_types[] = {4, 5, 16, 29, 31, 39, 40, 99, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        one_tensor(b, "w", 1, ne8, bad_types[i], 0, 32);
        EXPECT_FAIL(b, RF_ERR_UNSUPPORTED, "unknown tensor type");
    }
    /* Every known type with a whole block is accepted. */
    for (uint32_t t = 0; t < RF_TYPE_COUNT; t++) {
        const rf_type_info *ti = rf_type_get(t);
        if (!ti->name) continue;
        one_tensor(b, "w", 1, (uint64_t[]){ti->block}, t, 0, (ti->bytes + 31) / 32 * 32);
        EXPECT_OK(b);
    }

    /* ne[0] not a multiple of the block size. */
    one_tensor(b, "w", 1, (uint64_t[]){33}, RF_TYPE_Q8_0, 0, 64);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "block size");
    one_tensor(b, "w", 2, (uint64_t[]){640, 1}, RF_TYPE_Q4_K, 0, 1024);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "block size");
    one_tensor(b, "w", 2, (uint64_t[]){16, 32}, RF_TYPE_Q4_0, 0, 1024);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "not a multiple of the Q4_0 block size");

    /* Offsets: unaligned, past the end, wrapping, and the data start past the end. */
    one_tensor(b, "w", 1, ne8, RF_TYPE_F32, 4, 64);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "alignment");
    one_tensor(b, "w", 1, ne8, RF_TYPE_F32, 1, 64);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "not a multiple of the alignment 32");
    rf_buf_reset(b); /* aligned to 32 but not to the file's 64 */
    b_header(b, 3, 1, 1);
    b_kv_u32(b, "general.alignment", 64);
    b_tinfo(b, "w", 1, ne8, RF_TYPE_F32, 32);
    b_pad(b, 64);
    b_data(b, 128);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "alignment 64");
    one_tensor(b, "w", 1, ne8, RF_TYPE_F32, 32, 32);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");
    one_tensor(b, "w", 1, ne8, RF_TYPE_F32, 0, 31);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");
    static const uint64_t huge_off[] = {UINT64_MAX - 31, UINT64_MAX - 63, 1ull << 63,
                                        (1ull << 63) - 32, 1ull << 40};
    for (size_t i = 0; i < 5; i++) {
        one_tensor(b, "w", 1, ne8, RF_TYPE_F32, huge_off[i], 64);
        EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");
    }
    /* offset + size wraps to a small number: 2^64 - 32 + 64 = 32. */
    one_tensor(b, "w", 1, (uint64_t[]){16}, RF_TYPE_F32, UINT64_MAX - 31, 96);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");
    /* The second tensor is the one past the end. */
    rf_buf_reset(b);
    b_header(b, 3, 2, 0);
    b_tinfo(b, "a", 1, ne8, RF_TYPE_F32, 0);
    b_tinfo(b, "b", 1, ne8, RF_TYPE_F32, 32);
    b_pad(b, 32);
    b_data(b, 48);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "tensor 'b'");
    /* The data section would start past the end: the file stops inside the padding. */
    rf_buf_reset(b);
    b_header(b, 3, 1, 0);
    b_tinfo(b, "w", 1, ne8, RF_TYPE_F32, 0);
    CHECK(b->len % 32 != 0);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "data section would start");
    EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");
    b_u8(b, 0);
    EXPECT_FAIL(b, RF_ERR_FORMAT, "past the end");
}

/* rf_gguf_open on things that are not readable GGUF files. */
static void test_open_paths(rf_buf *b) {
    rf_error err;
    rf_gguf *g = (rf_gguf *)&err;
    char path[160];
    snprintf(path, sizeof path, "%s/does-not-exist.gguf", g_tmpdir);
    CHECK(rf_gguf_open(path, &g, &err) == RF_ERR_IO);
    CHECK(g == NULL);
    CHECK_MSG(contains(err.msg, path) && contains(err.msg, "cannot open"), "%s", err.msg);
    g = (rf_gguf *)&err;
    CHECK(rf_gguf_open(g_tmpdir, &g, &err) == RF_ERR_IO);
    CHECK(g == NULL);
    CHECK_MSG(contains(err.msg, g_tmpdir) && contains(err.msg, "not a regular file"), "%s",
              err.msg);
    snprintf(path, sizeof path, "%s/fifo", g_tmpdir);
    if (mkfifo(path, 0600) == 0) { /* must not block waiting for a writer */
        CHECK(rf_gguf_open(path, &g, &err) == RF_ERR_IO);
        CHECK_MSG(contains(err.msg, path) && contains(err.msg, "not a regular file"), "%s",
                  err.msg);
        unlink(path);
    }
    if (access("/dev/null", R_OK) == 0) {
        CHECK(rf_gguf_open("/dev/null", &g, &err) == RF_ERR_IO);
        CHECK(contains(err.msg, "/dev/null"));
    }
    /* An empty regular file. */
    expect_fail_at(__LINE__, "", 0, RF_ERR_FORMAT, "truncated");
    /* An unreadable file (skipped as root, who can read anything). */
    one_tensor(b, "w", 1, (uint64_t[]){8}, RF_TYPE_F32, 0, 32);
    CHECK(temp_file(path, sizeof path, b->data, b->len));
    if (chmod(path, 0) == 0 && access(path, R_OK) != 0) {
        CHECK(rf_gguf_open(path, &g, &err) == RF_ERR_IO);
        CHECK(contains(err.msg, path));
    }
    unlink(path);
}

/* ---- 3. truncation and byte-overwrite sweeps --------------------------------------------- */

static void *sweep_file(size_t *size) {
    rf_gguf_writer *w = rf_gguf_writer_new();
    rf_error err;
    bool ok = !rf_gguf_writer_add_str(w, "general.architecture", "gemma3", &err);
    ok = ok && !rf_gguf_writer_add_u32(w, "gemma3.block_count", 1, &err);
    ok = ok && !rf_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", S_ARR, NULL, 3, &err);
    ok = ok && !rf_gguf_writer_add_arr(w, "tokenizer.ggml.scores", RF_GGUF_F32, A_F32, 3, &err);
    ok = ok && !rf_gguf_writer_add_f32(w, "eps", 1e-6f, &err);
    ok = ok && !rf_gguf_writer_add_bool(w, "flag", true, &err);
    uint8_t q[34 * 2];
    for (size_t i = 0; i < sizeof q; i++) q[i] = pattern_byte(3, i);
    float f[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ok = ok && !rf_gguf_writer_add_tensor(w, "q", 2, (uint64_t[]){32, 2}, RF_TYPE_Q8_0, q, sizeof q,
                                          &err);
    /* 32 bytes last: the file ends exactly at the last tensor's data, no trailing padding. */
    ok = ok && !rf_gguf_writer_add_tensor(w, "f", 1, (uint64_t[]){8}, RF_TYPE_F32, f, 32, &err);
    void *buf = NULL;
    ok = ok && !rf_gguf_writer_to_memory(w, &buf, size, &err);
    CHECK_MSG(ok, "sweep file: %s", err.msg);
    rf_gguf_writer_free(w);
    return buf;
}

static void test_truncation(void) {
    size_t size = 0;
    uint8_t *full = sweep_file(&size);
    if (!full) return;
    rf_error err;
    rf_gguf *g = NULL;
    CHECK(rf_gguf_open_memory(full, size, "full.gguf", &g, &err) == RF_OK);
    rf_gguf_close(g);
    int bad = 0, truncated_msgs = 0;
    char path[128];
    snprintf(path, sizeof path, "%s/trunc_XXXXXX", g_tmpdir);
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    for (size_t n = 0; n < size; n++) {
        uint8_t *p = exact_copy(full, n);
        g = (rf_gguf *)&err;
        err.msg[0] = 0;
        rf_status st = rf_gguf_open_memory(p, n, "cut.gguf", &g, &err);
        if (st != RF_ERR_FORMAT || g != NULL || !contains(err.msg, "cut.gguf: ")) {
            if (bad++ < 5)
                fprintf(stderr, "prefix %zu/%zu: status %s: %s\n", n, size, rf_status_str(st),
                        err.msg);
            if (st == RF_OK) rf_gguf_close(g);
        }
        if (contains(err.msg, "truncated") || contains(err.msg, "past the end") ||
            contains(err.msg, "count"))
            truncated_msgs++;
        free(p);
        /* The same prefix through the file path (mmap). */
        CHECK(write_file(path, full, n));
        g = (rf_gguf *)&err;
        st = rf_gguf_open(path, &g, &err);
        if (st != RF_ERR_FORMAT || g != NULL || !contains(err.msg, path)) {
            if (bad++ < 5)
                fprintf(stderr, "file prefix %zu/%zu: status %s: %s\n", n, size, rf_status_str(st),
                        err.msg);
            if (st == RF_OK) rf_gguf_close(g);
        }
    }
    CHECK_MSG(bad == 0, "%d prefixes did not fail cleanly", bad);
    CHECK_MSG(truncated_msgs == (int)size, "%d of %zu prefix messages name the truncation",
              truncated_msgs, size);
    CHECK(write_file(path, full, size));
    CHECK(rf_gguf_open(path, &g, &err) == RF_OK);
    rf_gguf_close(g);
    unlink(path);
    fprintf(stderr, "truncation sweep: %zu prefixes, all rejected (memory and file)\n", size);
    free(full);
}

static void test_byte_sweep(void) {
    size_t size = 0;
    uint8_t *full = sweep_file(&size);
    if (!full) return;
    rf_error err;
    rf_gguf *g = NULL;
    CHECK(rf_gguf_open_memory(full, size, "full.gguf", &g, &err) == RF_OK);
    uint64_t header = g ? rf_gguf_data_offset(g) : 0;
    rf_gguf_close(g);
    static const uint8_t vals[] = {0xFF, 0x00, 0x80, 0x01};
    int variants = 0, rejected = 0, accepted = 0, escaped = 0;
    int by_code[RF_ERR_INTERNAL + 1] = {0};
    for (size_t i = 0; i < header; i++) {
        for (size_t k = 0; k < sizeof vals; k++) {
            if (full[i] == vals[k]) continue;
            uint8_t *p = exact_copy(full, size);
            p[i] = vals[k];
            variants++;
            g = NULL;
            rf_status st = rf_gguf_open_memory(p, size, "flip.gguf", &g, &err);
            if (st == RF_OK) {
                accepted++;
                if (!walk_inside(g, p, size)) escaped++;
                rf_gguf_close(g);
            } else {
                rejected++;
                if (st <= RF_ERR_INTERNAL) by_code[st]++;
                CHECK(g == NULL);
                CHECK(st == RF_ERR_FORMAT || st == RF_ERR_UNSUPPORTED);
                CHECK(contains(err.msg, "flip.gguf: "));
            }
            free(p);
        }
    }
    CHECK_MSG(escaped == 0, "%d accepted variants hand out views outside the buffer", escaped);
    CHECK(rejected > 0 && accepted > 0);
    fprintf(stderr,
            "byte-overwrite sweep: %llu header bytes x {ff,00,80,01}: %d variants, %d rejected "
            "(%d format, %d unsupported), %d accepted and walked safely\n",
            (unsigned long long)header, variants, rejected, by_code[RF_ERR_FORMAT],
            by_code[RF_ERR_UNSUPPORTED], accepted);
    free(full);
}

/* ---- 4. the real model --------------------------------------------------------------------- */

static void test_real_model(void) {
    const char *path = getenv("ROOFLINE_TEST_MODEL");
    if (!path || access(path, R_OK) != 0) {
        fprintf(stderr, "real model: skipped (%s not readable)\n", path ? path : "unset");
        return;
    }
    rf_error err;
    rf_gguf *g = NULL;
    rf_status st = rf_gguf_open(path, &g, &err);
    CHECK_MSG(st == RF_OK, "%s", err.msg);
    if (st) return;
    CHECK(rf_gguf_version(g) == 3);
    CHECK_MSG(rf_gguf_n_kv(g) == 33, "n_kv %llu", (unsigned long long)rf_gguf_n_kv(g));
    CHECK_MSG(rf_gguf_n_tensors(g) == 236, "n_tensors %llu",
              (unsigned long long)rf_gguf_n_tensors(g));
    CHECK_MSG(rf_gguf_data_offset(g) == 6525120, "data offset %llu",
              (unsigned long long)rf_gguf_data_offset(g));
    CHECK(rf_gguf_alignment(g) == 32);
    CHECK(rf_gguf_file_size(g) == 253113024);
    const rf_gguf_tensor *t = rf_gguf_find_tensor(g, "token_embd.weight");
    CHECK(t != NULL);
    if (t) {
        CHECK(t->type == RF_TYPE_Q8_0);
        CHECK(t->n_dims == 2 && t->ne[0] == 640 && t->ne[1] == 262144);
        CHECK(t->nbytes == 178257920);
    }
    rf_str arch;
    CHECK(rf_gguf_get_str(g, "general.architecture", true, &arch, &err) == RF_OK &&
          rf_str_eq(arch, "gemma3"));
    uint32_t blocks = 0;
    CHECK(rf_gguf_get_u32(g, "gemma3.block_count", true, &blocks, &err) == RF_OK && blocks == 18);
    const rf_gguf_kv *tok = NULL;
    CHECK(rf_gguf_get_arr(g, "tokenizer.ggml.tokens", RF_GGUF_STRING, true, &tok, &err) == RF_OK);
    CHECK(tok && tok->v.arr.n == 262144);
    /* Tensors are packed in order with padded sizes, as llama.cpp requires. */
    uint64_t off = 0;
    bool packed = true;
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *ti = rf_gguf_tensor_at(g, i);
        packed = packed && ti->offset == off;
        off += (ti->nbytes + 31) / 32 * 32;
    }
    CHECK(packed);
    CHECK(rf_gguf_data_offset(g) + off == rf_gguf_file_size(g));
    CHECK(off == 246587904);
    rf_gguf_close(g);

    /* The first 1 MB: fails inside the metadata, naming the copy. */
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    size_t n = 1u << 20;
    uint8_t *head = malloc(n);
    size_t got = fread(head, 1, n, f);
    fclose(f);
    CHECK(got == n);
    char tpath[128];
    CHECK(temp_file(tpath, sizeof tpath, head, got));
    g = (rf_gguf *)&err;
    st = rf_gguf_open(tpath, &g, &err);
    CHECK(st == RF_ERR_FORMAT && g == NULL);
    CHECK_MSG(contains(err.msg, tpath) && contains(err.msg, "truncated"), "%s", err.msg);
    fprintf(stderr, "real model truncated to 1 MB: %s\n", err.msg);
    /* The same bytes from memory. */
    st = rf_gguf_open_memory(head, got, "head.gguf", &g, &err);
    CHECK(st == RF_ERR_FORMAT && contains(err.msg, "head.gguf: truncated"));
    unlink(tpath);
    free(head);
}

int main(void) {
    snprintf(g_tmpdir, sizeof g_tmpdir, "/tmp/rf_test_gguf_XXXXXX");
    if (!mkdtemp(g_tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    rf_buf b;
    rf_buf_init(&b, 0);
    test_roundtrip();
    test_getters();
    test_writer_args();
    test_hostile_header(&b);
    test_hostile_kv(&b);
    test_hostile_tensors(&b);
    test_open_paths(&b);
    test_truncation();
    test_byte_sweep();
    test_real_model();
    rf_buf_free(&b);
    fprintf(stderr, "hostile cases: %d (each read from memory and from a file)\n", g_hostile_cases);
    if (rmdir(g_tmpdir) != 0) {
        fprintf(stderr, "%s left behind: %s\n", g_tmpdir, strerror(errno));
        CHECK(0);
    }
    return check_summary("test_gguf");
}
