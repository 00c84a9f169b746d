/* gguf.c: the GGUF reader. Parses the header from a byte range (an mmap'd file or a caller's
 * buffer) with every read bounds-checked; see gguf.h for the contract and the list of checks. */
#include "format/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/types.h"
#include "util/file.h"

struct rf_gguf {
    const uint8_t *base; /* whole file */
    uint64_t size;
    int mapped; /* 1: base is our mmap, unmap on close */
    char *name;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    rf_gguf_kv *kv;
    const rf_gguf_kv **kv_sorted; /* by key, for lookup and the uniqueness check */
    uint64_t n_tensors;
    rf_gguf_tensor *tensors;
    const rf_gguf_tensor **tensor_sorted;
};

/* A bounds-checked cursor over the header bytes. */
typedef struct cursor {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    rf_error *err;
} cursor;

static uint64_t remaining(const cursor *c) {
    return c->size - c->pos;
}

static rf_status need(cursor *c, uint64_t n, const char *what) {
    if (n > remaining(c))
        return rf_error_set(c->err, RF_ERR_FORMAT,
                            "truncated: %s needs %llu bytes at offset %llu but the file has %llu",
                            what, (unsigned long long)n, (unsigned long long)c->pos,
                            (unsigned long long)c->size);
    return RF_OK;
}

static rf_status read_bytes(cursor *c, void *dst, uint64_t n, const char *what) {
    rf_status st = need(c, n, what);
    if (st) return st;
    memcpy(dst, c->base + c->pos, n);
    c->pos += n;
    return RF_OK;
}

static rf_status read_u32(cursor *c, uint32_t *v, const char *what) {
    uint8_t b[4];
    rf_status st = read_bytes(c, b, 4, what);
    if (st) return st;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return RF_OK;
}

static rf_status read_u64(cursor *c, uint64_t *v, const char *what) {
    uint32_t lo, hi;
    rf_status st = read_u32(c, &lo, what);
    if (!st) st = read_u32(c, &hi, what);
    if (st) return st;
    *v = (uint64_t)hi << 32 | lo;
    return RF_OK;
}

static rf_status read_str(cursor *c, rf_str *s, const char *what) {
    uint64_t len;
    rf_status st = read_u64(c, &len, what);
    if (st) return st;
    if (len > RF_GGUF_MAX_STRING)
        return rf_error_set(c->err, RF_ERR_FORMAT, "%s: string length %llu exceeds the limit %u",
                            what, (unsigned long long)len, RF_GGUF_MAX_STRING);
    st = need(c, len, what);
    if (st) return st;
    s->ptr = (const char *)(c->base + c->pos);
    s->len = len;
    c->pos += len;
    return RF_OK;
}

size_t rf_gguf_type_size(uint32_t t) {
    switch (t) {
    case RF_GGUF_U8:
    case RF_GGUF_I8:
    case RF_GGUF_BOOL:
        return 1;
    case RF_GGUF_U16:
    case RF_GGUF_I16:
        return 2;
    case RF_GGUF_U32:
    case RF_GGUF_I32:
    case RF_GGUF_F32:
        return 4;
    case RF_GGUF_U64:
    case RF_GGUF_I64:
    case RF_GGUF_F64:
        return 8;
    default:
        return 0;
    }
}

const char *rf_gguf_type_name(uint32_t t) {
    static const char *names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                  "bool", "string", "array", "u64", "i64", "f64"};
    return t < RF_GGUF_TYPE_COUNT ? names[t] : "unknown";
}

/* Decodes one little-endian scalar of type t at p. */
static void decode_scalar(rf_gguf_type t, const uint8_t *p, rf_gguf_kv *kv) {
    uint64_t u = 0;
    size_t n = rf_gguf_type_size(t);
    for (size_t i = 0; i < n; i++) u |= (uint64_t)p[i] << (8 * i);
    switch (t) {
    case RF_GGUF_U8:
    case RF_GGUF_U16:
    case RF_GGUF_U32:
    case RF_GGUF_U64:
        kv->v.u = u;
        break;
    case RF_GGUF_BOOL:
        kv->v.u = u != 0;
        break;
    case RF_GGUF_I8:
        kv->v.i = (int8_t)u;
        break;
    case RF_GGUF_I16:
        kv->v.i = (int16_t)u;
        break;
    case RF_GGUF_I32:
        kv->v.i = (int32_t)(uint32_t)u;
        break;
    case RF_GGUF_I64:
        kv->v.i = (int64_t)u;
        break;
    case RF_GGUF_F32: {
        uint32_t b = (uint32_t)u;
        float f;
        memcpy(&f, &b, 4);
        kv->v.f = f;
        break;
    }
    case RF_GGUF_F64:
        memcpy(&kv->v.f, &u, 8);
        break;
    default:
        break;
    }
}

static rf_status read_value(cursor *c, rf_gguf_kv *kv, const char *key) {
    if (kv->type == RF_GGUF_STRING) return read_str(c, &kv->v.s, key);
    if (kv->type != RF_GGUF_ARRAY) {
        size_t n = rf_gguf_type_size(kv->type);
        rf_status st = need(c, n, key);
        if (st) return st;
        decode_scalar(kv->type, c->base + c->pos, kv);
        c->pos += n;
        return RF_OK;
    }
    uint32_t et;
    uint64_t count;
    rf_status st = read_u32(c, &et, key);
    if (!st) st = read_u64(c, &count, key);
    if (st) return st;
    if (et == RF_GGUF_ARRAY)
        return rf_error_set(c->err, RF_ERR_FORMAT, "key '%s': arrays of arrays are not allowed",
                            key);
    if (et >= RF_GGUF_TYPE_COUNT)
        return rf_error_set(c->err, RF_ERR_FORMAT, "key '%s': array element type %u is invalid",
                            key, et);
    kv->v.arr.type = (rf_gguf_type)et;
    kv->v.arr.n = count;
    kv->v.arr.data = c->base + c->pos;
    kv->v.arr.strs = NULL;
    if (et != RF_GGUF_STRING) {
        size_t es = rf_gguf_type_size((rf_gguf_type)et);
        if (count > remaining(c) / es)
            return rf_error_set(
                c->err, RF_ERR_FORMAT,
                "truncated: key '%s' declares %llu elements of %zu bytes, only %llu "
                "bytes remain",
                key, (unsigned long long)count, es, (unsigned long long)remaining(c));
        c->pos += count * es;
        return RF_OK;
    }
    /* Every string takes at least its 8-byte length: bound the count before allocating. */
    if (count > remaining(c) / 8)
        return rf_error_set(c->err, RF_ERR_FORMAT,
                            "truncated: key '%s' declares %llu strings, only %llu bytes remain",
                            key, (unsigned long long)count, (unsigned long long)remaining(c));
    rf_str *strs = calloc(count ? count : 1, sizeof *strs);
    if (!strs) return rf_error_set(c->err, RF_ERR_NOMEM, "key '%s': out of memory", key);
    kv->v.arr.strs = strs; /* owned by the kv; freed on close even if parsing fails below */
    for (uint64_t i = 0; i < count; i++) {
        st = read_str(c, &strs[i], key);
        if (st) return st;
    }
    return RF_OK;
}

static int str_cmp(rf_str a, rf_str b) {
    uint64_t n = a.len < b.len ? a.len : b.len;
    int r = n ? memcmp(a.ptr, b.ptr, n) : 0;
    if (r) return r;
    return (a.len > b.len) - (a.len < b.len);
}

static int kv_ptr_cmp(const void *a, const void *b) {
    return str_cmp((*(const rf_gguf_kv *const *)a)->key, (*(const rf_gguf_kv *const *)b)->key);
}

static int tensor_ptr_cmp(const void *a, const void *b) {
    return str_cmp((*(const rf_gguf_tensor *const *)a)->name,
                   (*(const rf_gguf_tensor *const *)b)->name);
}

bool rf_str_eq(rf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

/* Copies a view into a NUL-terminated, printable buffer for messages. */
static rf_status parse_kvs(rf_gguf *g, cursor *c) {
    char kbuf[96];
    /* Smallest KV: 8-byte key length, 1 key byte, 4-byte type, 1-byte value. */
    if (g->n_kv > remaining(c) / 14)
        return rf_error_set(c->err, RF_ERR_FORMAT,
                            "metadata count %llu is more than the file can hold (%llu bytes "
                            "follow the header)",
                            (unsigned long long)g->n_kv, (unsigned long long)remaining(c));
    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->kv_sorted = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv_sorted);
    if (!g->kv || !g->kv_sorted) return rf_error_set(c->err, RF_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < g->n_kv; i++) {
        rf_gguf_kv *kv = &g->kv[i];
        char what[64];
        snprintf(what, sizeof what, "metadata entry %llu key", (unsigned long long)i);
        rf_status st = read_str(c, &kv->key, what);
        if (st) return st;
        if (kv->key.len == 0)
            return rf_error_set(c->err, RF_ERR_FORMAT, "metadata entry %llu has an empty key",
                                (unsigned long long)i);
        rf_printable(kv->key.ptr, (size_t)kv->key.len, kbuf, sizeof kbuf);
        uint32_t t;
        st = read_u32(c, &t, kbuf);
        if (st) return st;
        if (t >= RF_GGUF_TYPE_COUNT)
            return rf_error_set(c->err, RF_ERR_FORMAT, "key '%s': value type %u is invalid", kbuf,
                                t);
        kv->type = (rf_gguf_type)t;
        st = read_value(c, kv, kbuf);
        if (st) return st;
        g->kv_sorted[i] = kv;
    }
    qsort(g->kv_sorted, g->n_kv, sizeof *g->kv_sorted, kv_ptr_cmp);
    for (uint64_t i = 1; i < g->n_kv; i++)
        if (str_cmp(g->kv_sorted[i - 1]->key, g->kv_sorted[i]->key) == 0)
            return rf_error_set(c->err, RF_ERR_FORMAT, "duplicate metadata key '%s'",
                                rf_printable(g->kv_sorted[i]->key.ptr,
                                             (size_t)g->kv_sorted[i]->key.len, kbuf, sizeof kbuf));
    return RF_OK;
}

static rf_status parse_alignment(rf_gguf *g, rf_error *err) {
    g->alignment = RF_GGUF_DEFAULT_ALIGNMENT;
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, "general.alignment");
    if (!kv) return RF_OK;
    if (kv->type != RF_GGUF_U32)
        return rf_error_set(err, RF_ERR_FORMAT, "general.alignment must be u32, found %s",
                            rf_gguf_type_name(kv->type));
    uint64_t a = kv->v.u;
    if (a == 0 || (a & (a - 1)) || a > RF_GGUF_MAX_ALIGNMENT)
        return rf_error_set(err, RF_ERR_FORMAT,
                            "general.alignment %llu is not a power of two in [1, %u]",
                            (unsigned long long)a, RF_GGUF_MAX_ALIGNMENT);
    g->alignment = (uint32_t)a;
    return RF_OK;
}

static rf_status parse_tensor_info(rf_gguf *g, cursor *c, uint64_t i) {
    rf_gguf_tensor *t = &g->tensors[i];
    char what[64], nbuf[96];
    snprintf(what, sizeof what, "tensor info %llu", (unsigned long long)i);
    rf_status st = read_str(c, &t->name, what);
    if (st) return st;
    if (t->name.len == 0 || t->name.len >= RF_GGUF_MAX_NAME)
        return rf_error_set(
            c->err, RF_ERR_FORMAT, "tensor %llu: name length %llu is not in [1, %d)",
            (unsigned long long)i, (unsigned long long)t->name.len, RF_GGUF_MAX_NAME);
    rf_printable(t->name.ptr, (size_t)t->name.len, nbuf, sizeof nbuf);
    st = read_u32(c, &t->n_dims, nbuf);
    if (st) return st;
    if (t->n_dims < 1 || t->n_dims > RF_GGUF_MAX_DIMS)
        return rf_error_set(c->err, RF_ERR_FORMAT, "tensor '%s': n_dims %u is not in [1, %d]", nbuf,
                            t->n_dims, RF_GGUF_MAX_DIMS);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < RF_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d >= t->n_dims) continue;
        st = read_u64(c, &t->ne[d], nbuf);
        if (st) return st;
        if (t->ne[d] == 0)
            return rf_error_set(c->err, RF_ERR_FORMAT, "tensor '%s': dimension %u is zero", nbuf,
                                d);
        if (t->ne[d] > (uint64_t)INT64_MAX / nel)
            return rf_error_set(c->err, RF_ERR_FORMAT,
                                "tensor '%s': element count overflows int64 at dimension %u", nbuf,
                                d);
        nel *= t->ne[d];
    }
    t->nelements = nel;
    st = read_u32(c, &t->type, nbuf);
    if (!st) st = read_u64(c, &t->offset, nbuf);
    if (st) return st;
    const rf_type_info *ti = rf_type_get(t->type);
    if (!ti->name)
        return rf_error_set(c->err, RF_ERR_UNSUPPORTED, "tensor '%s': unknown tensor type %u", nbuf,
                            t->type);
    if (t->ne[0] % ti->block)
        return rf_error_set(c->err, RF_ERR_FORMAT,
                            "tensor '%s': row length %llu is not a multiple of the %s block "
                            "size %u",
                            nbuf, (unsigned long long)t->ne[0], ti->name, ti->block);
    uint64_t blocks = nel / ti->block;
    if (blocks > (uint64_t)SIZE_MAX / ti->bytes || blocks > UINT64_MAX / ti->bytes)
        return rf_error_set(c->err, RF_ERR_FORMAT, "tensor '%s': byte size overflows", nbuf);
    t->nbytes = blocks * ti->bytes;
    if (t->offset % g->alignment)
        return rf_error_set(c->err, RF_ERR_FORMAT,
                            "tensor '%s': offset %llu is not a multiple of the alignment %u", nbuf,
                            (unsigned long long)t->offset, g->alignment);
    return RF_OK;
}

static rf_status parse_tensors(rf_gguf *g, cursor *c) {
    char nbuf[96];
    /* Smallest tensor info: name length 8 + 1 byte, n_dims 4, one dim 8, type 4, offset 8. */
    if (g->n_tensors > remaining(c) / 33)
        return rf_error_set(c->err, RF_ERR_FORMAT,
                            "tensor count %llu is more than the file can hold (%llu bytes follow "
                            "the metadata)",
                            (unsigned long long)g->n_tensors, (unsigned long long)remaining(c));
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    g->tensor_sorted = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensor_sorted);
    if (!g->tensors || !g->tensor_sorted)
        return rf_error_set(c->err, RF_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        rf_status st = parse_tensor_info(g, c, i);
        if (st) return st;
        g->tensor_sorted[i] = &g->tensors[i];
    }
    qsort(g->tensor_sorted, g->n_tensors, sizeof *g->tensor_sorted, tensor_ptr_cmp);
    for (uint64_t i = 1; i < g->n_tensors; i++)
        if (str_cmp(g->tensor_sorted[i - 1]->name, g->tensor_sorted[i]->name) == 0)
            return rf_error_set(c->err, RF_ERR_FORMAT, "duplicate tensor name '%s'",
                                rf_printable(g->tensor_sorted[i]->name.ptr,
                                             (size_t)g->tensor_sorted[i]->name.len, nbuf,
                                             sizeof nbuf));

    /* The data section starts at the next multiple of the alignment. */
    uint64_t pad = (g->alignment - c->pos % g->alignment) % g->alignment;
    if (g->n_tensors > 0 && pad > remaining(c))
        return rf_error_set(c->err, RF_ERR_FORMAT,
                            "truncated: the data section would start at %llu, past the end of the "
                            "file (%llu bytes)",
                            (unsigned long long)(c->pos + pad), (unsigned long long)c->size);
    g->data_offset = c->pos + (pad <= remaining(c) ? pad : remaining(c));
    uint64_t avail = c->size - g->data_offset;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        rf_gguf_tensor *t = &g->tensors[i];
        if (t->offset > avail || t->nbytes > avail - t->offset)
            return rf_error_set(c->err, RF_ERR_FORMAT,
                                "tensor '%s': data [%llu, +%llu) lies past the end of the file "
                                "(data section has %llu bytes)",
                                rf_printable(t->name.ptr, (size_t)t->name.len, nbuf, sizeof nbuf),
                                (unsigned long long)t->offset, (unsigned long long)t->nbytes,
                                (unsigned long long)avail);
        t->data = g->base + g->data_offset + t->offset;
    }
    return RF_OK;
}

static rf_status parse(rf_gguf *g, rf_error *err) {
    cursor c = {g->base, g->size, 0, err};
    uint32_t magic;
    rf_status st = read_u32(&c, &magic, "magic");
    if (st) return st;
    if (magic != RF_GGUF_MAGIC)
        return rf_error_set(err, RF_ERR_FORMAT,
                            "not a GGUF file (magic %02x %02x %02x %02x, expected 47 47 55 46 "
                            "\"GGUF\")",
                            g->base[0], g->base[1], g->base[2], g->base[3]);
    st = read_u32(&c, &g->version, "version");
    if (st) return st;
    if (g->version != 2 && g->version != 3) {
        if ((g->version & 0xffffu) == 0 && g->version != 0)
            return rf_error_set(err, RF_ERR_UNSUPPORTED,
                                "byte-swapped (big-endian) GGUF files are not supported");
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "unsupported GGUF version %u (supported: 2 and 3)", g->version);
    }
    st = read_u64(&c, &g->n_tensors, "tensor count");
    if (!st) st = read_u64(&c, &g->n_kv, "metadata count");
    if (!st) st = parse_kvs(g, &c);
    if (!st) st = parse_alignment(g, err);
    if (!st) st = parse_tensors(g, &c);
    return st;
}

static rf_status finish_open(rf_gguf *g, rf_gguf **out, rf_error *err) {
    rf_status st = parse(g, err);
    if (st) {
        rf_error_prefix(err, "%s", g->name);
        rf_gguf_close(g);
        *out = NULL;
        return st;
    }
    *out = g;
    return RF_OK;
}

static rf_gguf *alloc_gguf(const char *name) {
    rf_gguf *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->name = strdup(name ? name : "(memory)");
    if (!g->name) {
        free(g);
        return NULL;
    }
    return g;
}

rf_status rf_gguf_open(const char *path, rf_gguf **out, rf_error *err) {
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return rf_error_set(err, RF_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return rf_error_set(err, RF_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) { /* mmap cannot map nothing */
        close(fd);
        return rf_error_set(err, RF_ERR_FORMAT, "%s: truncated: the file is empty", path);
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return rf_error_set(err, RF_ERR_IO, "%s: mmap failed: %s", path, strerror(e));
    rf_gguf *g = alloc_gguf(path);
    if (!g) {
        munmap(p, (size_t)sb.st_size);
        return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
    }
    g->base = p;
    g->size = (uint64_t)sb.st_size;
    g->mapped = 1;
    return finish_open(g, out, err);
}

rf_status rf_gguf_open_memory(const void *buf, size_t size, const char *name, rf_gguf **out,
                              rf_error *err) {
    *out = NULL;
    if (!buf && size)
        return rf_error_set(err, RF_ERR_ARG, "%s: NULL buffer of %zu bytes",
                            name ? name : "(memory)", size);
    static const uint8_t empty[1];
    if (!buf) buf = empty; /* size 0: fails as truncated without touching a byte */
    rf_gguf *g = alloc_gguf(name);
    if (!g) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    g->base = buf;
    g->size = size;
    return finish_open(g, out, err);
}

void rf_gguf_prefetch(const rf_gguf *g) {
    if (!g || !g->mapped || g->size <= g->data_offset) return;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)(g->base + g->data_offset)) & ~(uintptr_t)(page - 1);
    (void)madvise((void *)start, (size_t)((uintptr_t)(g->base + g->size) - start), MADV_WILLNEED);
}

void rf_gguf_close(rf_gguf *g) {
    if (!g) return;
    if (g->kv)
        for (uint64_t i = 0; i < g->n_kv; i++)
            if (g->kv[i].type == RF_GGUF_ARRAY) free((void *)g->kv[i].v.arr.strs);
    free(g->kv);
    free(g->kv_sorted);
    free(g->tensors);
    free(g->tensor_sorted);
    if (g->mapped) munmap((void *)g->base, (size_t)g->size);
    free(g->name);
    free(g);
}

uint32_t rf_gguf_version(const rf_gguf *g) {
    return g->version;
}
uint64_t rf_gguf_file_size(const rf_gguf *g) {
    return g->size;
}
uint64_t rf_gguf_data_offset(const rf_gguf *g) {
    return g->data_offset;
}
uint32_t rf_gguf_alignment(const rf_gguf *g) {
    return g->alignment;
}
const char *rf_gguf_name(const rf_gguf *g) {
    return g->name;
}
uint64_t rf_gguf_n_kv(const rf_gguf *g) {
    return g->n_kv;
}
uint64_t rf_gguf_n_tensors(const rf_gguf *g) {
    return g->n_tensors;
}

const rf_gguf_kv *rf_gguf_kv_at(const rf_gguf *g, uint64_t i) {
    return i < g->n_kv ? &g->kv[i] : NULL;
}

const rf_gguf_tensor *rf_gguf_tensor_at(const rf_gguf *g, uint64_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const rf_gguf_kv *rf_gguf_find_kv(const rf_gguf *g, const char *key) {
    rf_str k = {key, strlen(key)};
    uint64_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int r = str_cmp(g->kv_sorted[mid]->key, k);
        if (r == 0) return g->kv_sorted[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const rf_gguf_tensor *rf_gguf_find_tensor(const rf_gguf *g, const char *name) {
    rf_str k = {name, strlen(name)};
    uint64_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int r = str_cmp(g->tensor_sorted[mid]->name, k);
        if (r == 0) return g->tensor_sorted[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- typed getters ---- */

static rf_status missing(const rf_gguf *g, const char *key, bool required, rf_error *err) {
    if (!required) return RF_OK;
    return rf_error_set(err, RF_ERR_MODEL, "%s: missing metadata key '%s'", g->name, key);
}

static bool is_int_type(rf_gguf_type t) {
    return t == RF_GGUF_U8 || t == RF_GGUF_I8 || t == RF_GGUF_U16 || t == RF_GGUF_I16 ||
           t == RF_GGUF_U32 || t == RF_GGUF_I32 || t == RF_GGUF_U64 || t == RF_GGUF_I64;
}

static bool is_signed_type(rf_gguf_type t) {
    return t == RF_GGUF_I8 || t == RF_GGUF_I16 || t == RF_GGUF_I32 || t == RF_GGUF_I64;
}

/* Reads an integer key into [lo, hi]. */
static rf_status get_int(const rf_gguf *g, const char *key, bool required, int64_t lo, int64_t hi,
                         int64_t *out, bool *found, rf_error *err) {
    *found = false;
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return missing(g, key, required, err);
    if (!is_int_type(kv->type))
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' must be an integer, found %s", g->name,
                            key, rf_gguf_type_name(kv->type));
    bool in_range;
    if (is_signed_type(kv->type))
        in_range = kv->v.i >= lo && kv->v.i <= hi;
    else
        in_range = kv->v.u <= (uint64_t)hi;
    if (!in_range) { /* the value as stored, whatever its width and sign */
        char shown[24];
        if (is_signed_type(kv->type))
            snprintf(shown, sizeof shown, "%lld", (long long)kv->v.i);
        else
            snprintf(shown, sizeof shown, "%llu", (unsigned long long)kv->v.u);
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' value %s is out of range [%lld, %lld]",
                            g->name, key, shown, (long long)lo, (long long)hi);
    }
    *out = is_signed_type(kv->type) ? kv->v.i : (int64_t)kv->v.u;
    *found = true;
    return RF_OK;
}

rf_status rf_gguf_get_u32(const rf_gguf *g, const char *key, bool required, uint32_t *out,
                          rf_error *err) {
    int64_t v;
    bool found;
    rf_status st = get_int(g, key, required, 0, UINT32_MAX, &v, &found, err);
    if (!st && found) *out = (uint32_t)v;
    return st;
}

rf_status rf_gguf_get_i32(const rf_gguf *g, const char *key, bool required, int32_t *out,
                          rf_error *err) {
    int64_t v;
    bool found;
    rf_status st = get_int(g, key, required, INT32_MIN, INT32_MAX, &v, &found, err);
    if (!st && found) *out = (int32_t)v;
    return st;
}

rf_status rf_gguf_get_f32(const rf_gguf *g, const char *key, bool required, float *out,
                          rf_error *err) {
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return missing(g, key, required, err);
    if (kv->type != RF_GGUF_F32 && kv->type != RF_GGUF_F64)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' must be a float, found %s", g->name,
                            key, rf_gguf_type_name(kv->type));
    double v = kv->v.f;
    if (isfinite(v) && fabs(v) > FLT_MAX)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' value %g is out of the f32 range",
                            g->name, key, v);
    *out = (float)v;
    return RF_OK;
}

rf_status rf_gguf_get_bool(const rf_gguf *g, const char *key, bool required, bool *out,
                           rf_error *err) {
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return missing(g, key, required, err);
    if (kv->type != RF_GGUF_BOOL)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' must be a bool, found %s", g->name,
                            key, rf_gguf_type_name(kv->type));
    *out = kv->v.u != 0;
    return RF_OK;
}

rf_status rf_gguf_get_str(const rf_gguf *g, const char *key, bool required, rf_str *out,
                          rf_error *err) {
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return missing(g, key, required, err);
    if (kv->type != RF_GGUF_STRING)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' must be a string, found %s", g->name,
                            key, rf_gguf_type_name(kv->type));
    *out = kv->v.s;
    return RF_OK;
}

rf_status rf_gguf_get_arr(const rf_gguf *g, const char *key, rf_gguf_type elem, bool required,
                          const rf_gguf_kv **out, rf_error *err) {
    *out = NULL;
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return missing(g, key, required, err);
    bool ok = kv->type == RF_GGUF_ARRAY;
    if (ok && elem != kv->v.arr.type) {
        bool want_int = elem == RF_GGUF_I32 || elem == RF_GGUF_U32;
        ok = want_int && is_int_type(kv->v.arr.type);
    }
    if (!ok)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' must be an array of %s", g->name, key,
                            rf_gguf_type_name(elem));
    *out = kv;
    return RF_OK;
}

int64_t rf_gguf_arr_int(const rf_gguf_kv *kv, uint64_t i) {
    rf_gguf_kv tmp;
    rf_gguf_type t = kv->v.arr.type;
    decode_scalar(t, (const uint8_t *)kv->v.arr.data + i * rf_gguf_type_size(t), &tmp);
    return is_signed_type(t) ? tmp.v.i : (int64_t)tmp.v.u;
}

double rf_gguf_arr_float(const rf_gguf_kv *kv, uint64_t i) {
    rf_gguf_kv tmp;
    rf_gguf_type t = kv->v.arr.type;
    decode_scalar(t, (const uint8_t *)kv->v.arr.data + i * rf_gguf_type_size(t), &tmp);
    if (t == RF_GGUF_F32 || t == RF_GGUF_F64) return tmp.v.f;
    return is_signed_type(t) ? (double)tmp.v.i : (double)tmp.v.u;
}
