/* gguf_write.c: the GGUF writer. Metadata is serialised as it is added; tensors are copied and
 * laid out at write time. Every value is encoded little-endian byte by byte, so the output does
 * not depend on the host's byte order. A failed add leaves the writer exactly as it was. */
#include "format/gguf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/types.h"
#include "util/buf.h"
#include "util/file.h"

typedef struct wtensor {
    char name[RF_GGUF_MAX_NAME];
    uint32_t n_dims;
    uint64_t ne[RF_GGUF_MAX_DIMS];
    uint32_t type;
    const uint8_t *data; /* owned (freed with the writer) unless borrowed */
    bool borrowed;
    uint64_t nbytes;
} wtensor;

struct rf_gguf_writer {
    uint32_t version;
    uint32_t alignment;
    uint64_t n_kv;
    rf_buf kv;   /* serialised KV pairs */
    char **keys; /* for the uniqueness check */
    wtensor *tensors;
    uint64_t n_tensors, cap_tensors;
};

#define ALIGNMENT_KEY "general.alignment"

rf_gguf_writer *rf_gguf_writer_new(void) {
    rf_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->version = 3;
    w->alignment = RF_GGUF_DEFAULT_ALIGNMENT;
    rf_buf_init(&w->kv, 0);
    return w;
}

void rf_gguf_writer_free(rf_gguf_writer *w) {
    if (!w) return;
    rf_buf_free(&w->kv);
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    for (uint64_t i = 0; i < w->n_tensors; i++)
        if (!w->tensors[i].borrowed) free((void *)w->tensors[i].data);
    free(w->tensors);
    free(w);
}

void rf_gguf_writer_set_version(rf_gguf_writer *w, uint32_t version) {
    w->version = version;
}

/* key for messages: never NULL */
#define KN(key) ((key) ? (key) : "(null)")

static rf_status nomem(rf_error *err) {
    return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
}

static bool valid_alignment(uint64_t a) {
    return a != 0 && (a & (a - 1)) == 0 && a <= RF_GGUF_MAX_ALIGNMENT;
}

static rf_status check_alignment(const char *key, uint64_t a, rf_error *err) {
    if (strcmp(key, ALIGNMENT_KEY) == 0 && !valid_alignment(a))
        return rf_error_set(err, RF_ERR_ARG,
                            "gguf writer: " ALIGNMENT_KEY " %llu is not a power of two in [1, %u]",
                            (unsigned long long)a, RF_GGUF_MAX_ALIGNMENT);
    return RF_OK;
}

static rf_status put_le(rf_buf *b, uint64_t v, size_t n) {
    uint8_t x[8];
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(v >> (8 * i));
    return rf_buf_append(b, x, n);
}

static rf_status put_string(rf_buf *b, const char *s, uint64_t len) {
    if (rf_buf_append_u64le(b, len) || rf_buf_append(b, s, (size_t)len)) return RF_ERR_NOMEM;
    return RF_OK;
}

/* Registers key and appends its string and type; the caller appends the value, and on failure
 * calls undo_kv(w, mark) with the kv length taken before begin_kv. */
static rf_status begin_kv(rf_gguf_writer *w, const char *key, rf_gguf_type t, rf_error *err) {
    if (!key || !*key) return rf_error_set(err, RF_ERR_ARG, "gguf writer: empty key");
    size_t len = strlen(key);
    if (len > RF_GGUF_MAX_STRING)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: key of %zu bytes is too long", len);
    if (strcmp(key, ALIGNMENT_KEY) == 0 && t != RF_GGUF_U32)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: " ALIGNMENT_KEY " must be u32, not %s",
                            rf_gguf_type_name(t));
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0)
            return rf_error_set(err, RF_ERR_ARG, "gguf writer: duplicate key '%s'", key);
    char **keys = realloc(w->keys, (w->n_kv + 1) * sizeof *keys);
    if (!keys) return nomem(err);
    w->keys = keys;
    char *copy = strdup(key);
    if (!copy) return nomem(err);
    size_t mark = w->kv.len;
    if (rf_buf_append_u64le(&w->kv, len) || rf_buf_append(&w->kv, key, len) ||
        rf_buf_append_u32le(&w->kv, (uint32_t)t)) {
        w->kv.len = mark;
        free(copy);
        return nomem(err);
    }
    keys[w->n_kv++] = copy;
    return RF_OK;
}

/* Forgets the key begin_kv registered last and the bytes written since mark. */
static rf_status undo_kv(rf_gguf_writer *w, size_t mark, rf_error *err) {
    w->kv.len = mark;
    free(w->keys[--w->n_kv]);
    return nomem(err);
}

static rf_status put_scalar(rf_gguf_writer *w, const char *key, rf_gguf_type t, uint64_t bits,
                            size_t n, rf_error *err) {
    size_t mark = w->kv.len;
    rf_status st = begin_kv(w, key, t, err);
    if (st) return st;
    return put_le(&w->kv, bits, n) ? undo_kv(w, mark, err) : RF_OK;
}

rf_status rf_gguf_writer_add_u32(rf_gguf_writer *w, const char *key, uint32_t v, rf_error *err) {
    rf_status st = key ? check_alignment(key, v, err) : RF_OK;
    if (!st) st = put_scalar(w, key, RF_GGUF_U32, v, 4, err);
    if (!st && strcmp(key, ALIGNMENT_KEY) == 0) w->alignment = v;
    return st;
}

rf_status rf_gguf_writer_add_i32(rf_gguf_writer *w, const char *key, int32_t v, rf_error *err) {
    return put_scalar(w, key, RF_GGUF_I32, (uint32_t)v, 4, err);
}

rf_status rf_gguf_writer_add_u64(rf_gguf_writer *w, const char *key, uint64_t v, rf_error *err) {
    return put_scalar(w, key, RF_GGUF_U64, v, 8, err);
}

rf_status rf_gguf_writer_add_f32(rf_gguf_writer *w, const char *key, float v, rf_error *err) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return put_scalar(w, key, RF_GGUF_F32, bits, 4, err);
}

rf_status rf_gguf_writer_add_bool(rf_gguf_writer *w, const char *key, bool v, rf_error *err) {
    return put_scalar(w, key, RF_GGUF_BOOL, v ? 1 : 0, 1, err);
}

rf_status rf_gguf_writer_add_str(rf_gguf_writer *w, const char *key, const char *v, rf_error *err) {
    if (!v) return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': NULL string", KN(key));
    size_t len = strlen(v);
    if (len > RF_GGUF_MAX_STRING)
        return rf_error_set(err, RF_ERR_ARG,
                            "gguf writer: key '%s': string of %zu bytes is too "
                            "long",
                            KN(key), len);
    size_t mark = w->kv.len;
    rf_status st = begin_kv(w, key, RF_GGUF_STRING, err);
    if (st) return st;
    return put_string(&w->kv, v, len) ? undo_kv(w, mark, err) : RF_OK;
}

rf_status rf_gguf_writer_add_arr(rf_gguf_writer *w, const char *key, rf_gguf_type elem,
                                 const void *data, uint64_t n, rf_error *err) {
    size_t es = rf_gguf_type_size(elem);
    if (!es)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': %s is not a scalar type",
                            KN(key), rf_gguf_type_name(elem));
    if (n > SIZE_MAX / es || (n && !data))
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': bad array of %llu elements",
                            KN(key), (unsigned long long)n);
    size_t mark = w->kv.len;
    rf_status st = begin_kv(w, key, RF_GGUF_ARRAY, err);
    if (st) return st;
    if (rf_buf_append_u32le(&w->kv, (uint32_t)elem) || rf_buf_append_u64le(&w->kv, n) ||
        rf_buf_append(&w->kv, data, (size_t)(n * es)))
        return undo_kv(w, mark, err);
    return RF_OK;
}

rf_status rf_gguf_writer_add_arr_str(rf_gguf_writer *w, const char *key, const char *const *v,
                                     const uint64_t *lens, uint64_t n, rf_error *err) {
    if (n && !v)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': NULL string array", KN(key));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = lens ? lens[i] : v[i] ? strlen(v[i]) : 0;
        if ((!v[i] && (!lens || len)) || len > RF_GGUF_MAX_STRING)
            return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': bad string %llu", KN(key),
                                (unsigned long long)i);
    }
    size_t mark = w->kv.len;
    rf_status st = begin_kv(w, key, RF_GGUF_ARRAY, err);
    if (st) return st;
    if (rf_buf_append_u32le(&w->kv, RF_GGUF_STRING) || rf_buf_append_u64le(&w->kv, n))
        return undo_kv(w, mark, err);
    for (uint64_t i = 0; i < n; i++)
        if (put_string(&w->kv, v[i], lens ? lens[i] : strlen(v[i]))) return undo_kv(w, mark, err);
    return RF_OK;
}

rf_status rf_gguf_writer_copy_kv(rf_gguf_writer *w, const rf_gguf_kv *kv, rf_error *err) {
    char key[256];
    if (kv->key.len == 0 || kv->key.len >= sizeof key || memchr(kv->key.ptr, 0, kv->key.len))
        return rf_error_set(err, RF_ERR_ARG,
                            "gguf writer: key of %llu bytes is empty, longer than %zu bytes or "
                            "holds a NUL byte",
                            (unsigned long long)kv->key.len, sizeof key - 1);
    memcpy(key, kv->key.ptr, kv->key.len);
    key[kv->key.len] = 0;
    bool is_arr = kv->type == RF_GGUF_ARRAY;
    rf_gguf_type et = is_arr ? kv->v.arr.type : kv->type;
    if ((unsigned)kv->type >= RF_GGUF_TYPE_COUNT || (unsigned)et >= RF_GGUF_TYPE_COUNT ||
        et == RF_GGUF_ARRAY)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': invalid type", key);
    if (is_arr && et != RF_GGUF_STRING && kv->v.arr.n > SIZE_MAX / rf_gguf_type_size(et))
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': array too large", key);
    if (kv->type == RF_GGUF_STRING && kv->v.s.len > RF_GGUF_MAX_STRING)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': string too long", key);
    if (is_arr && et == RF_GGUF_STRING)
        for (uint64_t i = 0; i < kv->v.arr.n; i++)
            if (kv->v.arr.strs[i].len > RF_GGUF_MAX_STRING)
                return rf_error_set(err, RF_ERR_ARG, "gguf writer: key '%s': string too long", key);
    rf_status st = kv->type == RF_GGUF_U32 ? check_alignment(key, kv->v.u, err) : RF_OK;
    size_t mark = w->kv.len;
    if (!st) st = begin_kv(w, key, kv->type, err);
    if (st) return st;
    rf_buf *b = &w->kv;
    switch (kv->type) {
    case RF_GGUF_STRING:
        st = put_string(b, kv->v.s.ptr, kv->v.s.len);
        break;
    case RF_GGUF_ARRAY:
        st = rf_buf_append_u32le(b, et);
        if (!st) st = rf_buf_append_u64le(b, kv->v.arr.n);
        if (et == RF_GGUF_STRING)
            for (uint64_t i = 0; !st && i < kv->v.arr.n; i++)
                st = put_string(b, kv->v.arr.strs[i].ptr, kv->v.arr.strs[i].len);
        else if (!st) /* raw little-endian elements as stored in the file */
            st = rf_buf_append(b, kv->v.arr.data, (size_t)(kv->v.arr.n * rf_gguf_type_size(et)));
        break;
    case RF_GGUF_F32: {
        float f = (float)kv->v.f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        st = put_le(b, bits, 4);
        break;
    }
    case RF_GGUF_F64: {
        uint64_t bits;
        memcpy(&bits, &kv->v.f, 8);
        st = put_le(b, bits, 8);
        break;
    }
    default: /* the low bytes of the two's complement value for signed types */
        st = put_le(b, kv->type == RF_GGUF_BOOL ? kv->v.u != 0 : kv->v.u,
                    rf_gguf_type_size(kv->type));
        break;
    }
    if (st) return undo_kv(w, mark, err);
    if (kv->type == RF_GGUF_U32 && strcmp(key, ALIGNMENT_KEY) == 0)
        w->alignment = (uint32_t)kv->v.u;
    return RF_OK;
}

static rf_status add_tensor(rf_gguf_writer *w, const char *name, uint32_t n_dims,
                            const uint64_t *ne, uint32_t type, const void *data, uint64_t nbytes,
                            bool borrow, rf_error *err) {
    if (!name) return rf_error_set(err, RF_ERR_ARG, "gguf writer: NULL tensor name");
    size_t nl = strlen(name);
    if (nl == 0 || nl >= RF_GGUF_MAX_NAME)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: tensor name '%s' length not in [1, 64)",
                            name);
    if (n_dims < 1 || n_dims > RF_GGUF_MAX_DIMS || !ne)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: tensor '%s': n_dims %u", name, n_dims);
    for (uint64_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return rf_error_set(err, RF_ERR_ARG, "gguf writer: duplicate tensor '%s'", name);
    /* The reader's rules: every dim >= 1 and the element count fits int64. */
    uint64_t nel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX / nel)
            return rf_error_set(err, RF_ERR_ARG,
                                "gguf writer: tensor '%s': dimension %u (%llu) is zero or the "
                                "element count overflows",
                                name, d, (unsigned long long)ne[d]);
        nel *= ne[d];
    }
    const rf_type_info *ti = rf_type_get(type);
    if (!ti->name)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: tensor '%s': unknown tensor type %u",
                            name, type);
    if (ne[0] % ti->block)
        return rf_error_set(err, RF_ERR_ARG,
                            "gguf writer: tensor '%s': row length %llu is not a multiple of the "
                            "%s block size %u",
                            name, (unsigned long long)ne[0], ti->name, ti->block);
    uint64_t blocks = nel / ti->block; /* computed here: rf_type_row_bytes would wrap */
    if (blocks > SIZE_MAX / ti->bytes)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: tensor '%s': byte size overflows", name);
    uint64_t need = blocks * ti->bytes;
    if (need != nbytes || (nbytes && !data))
        return rf_error_set(err, RF_ERR_ARG,
                            "gguf writer: tensor '%s': %llu bytes given, %s %llu elements need "
                            "%llu",
                            name, (unsigned long long)nbytes, ti->name, (unsigned long long)nel,
                            (unsigned long long)need);
    if (w->n_tensors == w->cap_tensors) {
        uint64_t cap = w->cap_tensors ? w->cap_tensors * 2 : 16;
        wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t) return nomem(err);
        w->tensors = t;
        w->cap_tensors = cap;
    }
    wtensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, nl + 1);
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < RF_GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->type = type;
    t->nbytes = nbytes;
    t->borrowed = borrow;
    if (borrow) {
        t->data = data;
    } else {
        uint8_t *copy = malloc(nbytes ? nbytes : 1);
        if (!copy) return nomem(err);
        if (nbytes) memcpy(copy, data, nbytes);
        t->data = copy;
    }
    w->n_tensors++;
    return RF_OK;
}

rf_status rf_gguf_writer_add_tensor(rf_gguf_writer *w, const char *name, uint32_t n_dims,
                                    const uint64_t *ne, uint32_t type, const void *data,
                                    uint64_t nbytes, rf_error *err) {
    return add_tensor(w, name, n_dims, ne, type, data, nbytes, false, err);
}

rf_status rf_gguf_writer_add_tensor_ref(rf_gguf_writer *w, const char *name, uint32_t n_dims,
                                        const uint64_t *ne, uint32_t type, const void *data,
                                        uint64_t nbytes, rf_error *err) {
    return add_tensor(w, name, n_dims, ne, type, data, nbytes, true, err);
}

static uint64_t pad_to(uint64_t x, uint64_t a) {
    return (a - x % a) % a;
}

/* The header: magic, counts, metadata, tensor infos and the padding up to the data section. */
static rf_status serialise_header(const rf_gguf_writer *w, rf_buf *b) {
    rf_status st = rf_buf_append_u32le(b, RF_GGUF_MAGIC);
    if (!st) st = rf_buf_append_u32le(b, w->version);
    if (!st) st = rf_buf_append_u64le(b, w->n_tensors);
    if (!st) st = rf_buf_append_u64le(b, w->n_kv);
    if (!st) st = rf_buf_append(b, w->kv.data, w->kv.len);
    uint64_t off = 0;
    for (uint64_t i = 0; !st && i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        st = put_string(b, t->name, strlen(t->name));
        if (!st) st = rf_buf_append_u32le(b, t->n_dims);
        for (uint32_t d = 0; !st && d < t->n_dims; d++) st = rf_buf_append_u64le(b, t->ne[d]);
        if (!st) st = rf_buf_append_u32le(b, t->type);
        if (!st) st = rf_buf_append_u64le(b, off);
        off += t->nbytes + pad_to(t->nbytes, w->alignment);
    }
    if (!st) st = rf_buf_append_zeros(b, (size_t)pad_to(b->len, w->alignment));
    return st;
}

static rf_status serialise(const rf_gguf_writer *w, rf_buf *b) {
    rf_status st = serialise_header(w, b);
    for (uint64_t i = 0; !st && i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        st = rf_buf_append(b, t->data, (size_t)t->nbytes);
        if (!st) st = rf_buf_append_zeros(b, (size_t)pad_to(t->nbytes, w->alignment));
    }
    return st;
}

rf_status rf_gguf_writer_to_memory(const rf_gguf_writer *w, void **buf, size_t *size,
                                   rf_error *err) {
    *buf = NULL;
    *size = 0;
    if (w->version != 2 && w->version != 3)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: version %u is not 2 or 3", w->version);
    rf_buf b;
    rf_buf_init(&b, 0);
    if (serialise(w, &b)) {
        rf_buf_free(&b);
        return nomem(err);
    }
    *buf = rf_buf_take(&b, size);
    return RF_OK;
}

rf_status rf_gguf_writer_to_fd(const rf_gguf_writer *w, int fd, const char *name, rf_error *err) {
    static const uint8_t zeros[RF_GGUF_MAX_ALIGNMENT > 4096 ? 4096 : RF_GGUF_MAX_ALIGNMENT];
    if (w->version != 2 && w->version != 3)
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: version %u is not 2 or 3", w->version);
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_status st = serialise_header(w, &b) ? nomem(err) : RF_OK;
    if (!st) st = rf_write_all(fd, b.data, b.len, name, err);
    rf_buf_free(&b);
    for (uint64_t i = 0; !st && i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        st = rf_write_all(fd, t->data, (size_t)t->nbytes, name, err);
        for (uint64_t pad = pad_to(t->nbytes, w->alignment); !st && pad;) {
            size_t k = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
            st = rf_write_all(fd, zeros, k, name, err);
            pad -= k;
        }
    }
    return st;
}

rf_status rf_gguf_writer_to_file(const rf_gguf_writer *w, const char *path, rf_error *err) {
    if (w->version != 2 && w->version != 3) /* before anything at path is touched */
        return rf_error_set(err, RF_ERR_ARG, "gguf writer: version %u is not 2 or 3", w->version);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    struct stat sb;
    bool regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    rf_status st = rf_gguf_writer_to_fd(w, fd, path, err);
    if (close(fd) != 0 && !st)
        st = rf_error_set(err, RF_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    /* No half-written file left behind (and never unlink a device such as /dev/full). */
    if (st && regular) unlink(path);
    return st;
}
