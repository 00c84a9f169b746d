/* safetensors.c: the safetensors header reader and its checks (see safetensors.h). */
#include "format/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/json_kind.h"

typedef struct st_meta {
    char *key;
    char *value;
} st_meta;

struct rf_st {
    char *name;
    uint64_t file_size;
    uint64_t header_size;
    rf_st_tensor *tensors;
    size_t n_tensors;
    size_t *by_name; /* indices sorted by name, for rf_st_find */
    st_meta *meta;
    size_t n_meta;
};

static const struct {
    const char *name;
    unsigned bits;
} g_dtypes[RF_ST_DTYPE_COUNT] = {
    [RF_ST_BOOL] = {"BOOL", 8},       [RF_ST_U8] = {"U8", 8},
    [RF_ST_I8] = {"I8", 8},           [RF_ST_F8_E5M2] = {"F8_E5M2", 8},
    [RF_ST_F8_E4M3] = {"F8_E4M3", 8}, [RF_ST_F8_E8M0] = {"F8_E8M0", 8},
    [RF_ST_I16] = {"I16", 16},        [RF_ST_U16] = {"U16", 16},
    [RF_ST_F16] = {"F16", 16},        [RF_ST_BF16] = {"BF16", 16},
    [RF_ST_I32] = {"I32", 32},        [RF_ST_U32] = {"U32", 32},
    [RF_ST_F32] = {"F32", 32},        [RF_ST_F64] = {"F64", 64},
    [RF_ST_I64] = {"I64", 64},        [RF_ST_U64] = {"U64", 64},
    [RF_ST_C64] = {"C64", 64},        [RF_ST_F4] = {"F4", 4},
    [RF_ST_F6_E2M3] = {"F6_E2M3", 6}, [RF_ST_F6_E3M2] = {"F6_E3M2", 6},
};

const char *rf_st_dtype_name(rf_st_dtype t) {
    return (unsigned)t < RF_ST_DTYPE_COUNT ? g_dtypes[t].name : "?";
}

unsigned rf_st_dtype_bits(rf_st_dtype t) {
    return (unsigned)t < RF_ST_DTYPE_COUNT ? g_dtypes[t].bits : 0;
}

uint64_t rf_st_tensor_bytes(const rf_st_tensor *t) {
    return t->nelements / 8 * rf_st_dtype_bits(t->dtype) +
           t->nelements % 8 * rf_st_dtype_bits(t->dtype) / 8;
}

void rf_st_close(rf_st *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_tensors; i++) free((char *)f->tensors[i].name);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->tensors);
    free(f->by_name);
    free(f->meta);
    free(f->name);
    free(f);
}

const char *rf_st_name(const rf_st *f) {
    return f->name;
}
uint64_t rf_st_file_size(const rf_st *f) {
    return f->file_size;
}
uint64_t rf_st_header_size(const rf_st *f) {
    return f->header_size;
}
uint64_t rf_st_data_size(const rf_st *f) {
    return f->file_size - 8 - f->header_size;
}
size_t rf_st_n_tensors(const rf_st *f) {
    return f->n_tensors;
}
size_t rf_st_n_metadata(const rf_st *f) {
    return f->n_meta;
}

const rf_st_tensor *rf_st_tensor_at(const rf_st *f, size_t i) {
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

void rf_st_metadata_at(const rf_st *f, size_t i, const char **key, const char **value) {
    *key = i < f->n_meta ? f->meta[i].key : NULL;
    *value = i < f->n_meta ? f->meta[i].value : NULL;
}

const char *rf_st_metadata_get(const rf_st *f, const char *key) {
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

const rf_st_tensor *rf_st_find(const rf_st *f, const char *name) {
    size_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[f->by_name[mid]].name, name);
        if (c == 0) return &f->tensors[f->by_name[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- parsing ------------------------------------------------------------------------------ */

typedef struct parser {
    rf_st *f;
    rf_error *err;
    char tname[200]; /* the tensor being checked, escaped for messages */
} parser;

static void fmt_shape(const rf_st_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%llu", d ? ", " : "",
                              (unsigned long long)t->shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        st = rf_error_set(p->err, RF_ERR_FORMAT, __VA_ARGS__);                                     \
        goto out;                                                                                  \
    } while (0)

/* A JSON integer >= 0, or an error naming what (e.g. "shape[2]"). */
static rf_status get_count(parser *p, const json_t *v, const char *what, size_t idx,
                           uint64_t *out) {
    rf_status st = RF_OK;
    if (!json_is_integer(v))
        FAIL("%s: tensor '%s': %s[%zu] is %s, not an integer", p->f->name, p->tname, what, idx,
             rf_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < 0)
        FAIL("%s: tensor '%s': %s[%zu] = %lld is negative", p->f->name, p->tname, what, idx,
             (long long)x);
    *out = (uint64_t)x;
out:
    return st;
}

static rf_status parse_dtype(parser *p, const json_t *v, rf_st_dtype *out) {
    rf_status st = RF_OK;
    if (!json_is_string(v))
        FAIL("%s: tensor '%s': \"dtype\" is %s, not a string", p->f->name, p->tname,
             rf_json_kind(v));
    const char *s = json_string_value(v);
    for (int i = 0; i < RF_ST_DTYPE_COUNT; i++)
        if (strcmp(s, g_dtypes[i].name) == 0) {
            *out = (rf_st_dtype)i;
            return RF_OK;
        }
    char shown[64];
    rf_escaped(s, json_string_length(v), shown, sizeof shown);
    FAIL("%s: tensor '%s': unknown dtype \"%s\" (known: BOOL, U8, I8, I16, U16, I32, U32, I64, "
         "U64, F16, BF16, F32, F64, F8_E4M3, F8_E5M2, F8_E8M0, F4, F6_E2M3, F6_E3M2, C64)",
         p->f->name, p->tname, shown);
out:
    return st;
}

static rf_status parse_tensor(parser *p, const char *key, size_t key_len, const json_t *v,
                              uint64_t data_size, rf_st_tensor *t) {
    rf_status st = RF_OK;
    rf_st *f = p->f;
    if (!json_is_object(v))
        FAIL("%s: tensor '%s': its entry is %s, not an object with dtype, shape and "
             "data_offsets",
             f->name, p->tname, rf_json_kind(v));
    const json_t *jd = json_object_get(v, "dtype");
    const json_t *js = json_object_get(v, "shape");
    const json_t *jo = json_object_get(v, "data_offsets");
    if (!jd || !js || !jo)
        FAIL("%s: tensor '%s': no \"%s\" (each tensor needs dtype, shape and data_offsets)",
             f->name, p->tname,
             !jd   ? "dtype"
             : !js ? "shape"
                   : "data_offsets");
    st = parse_dtype(p, jd, &t->dtype);
    if (st) goto out;
    if (!json_is_array(js))
        FAIL("%s: tensor '%s': \"shape\" is %s, not an array", f->name, p->tname, rf_json_kind(js));
    size_t nd = json_array_size(js);
    if (nd > RF_ST_MAX_DIMS)
        FAIL("%s: tensor '%s': shape has %zu dimensions (at most %d)", f->name, p->tname, nd,
             RF_ST_MAX_DIMS);
    t->n_dims = (uint32_t)nd;
    bool zero = false;
    for (size_t d = 0; d < nd; d++) {
        st = get_count(p, json_array_get(js, d), "shape", d, &t->shape[d]);
        if (st) goto out;
        zero = zero || t->shape[d] == 0;
    }
    char shape[160];
    fmt_shape(t, shape, sizeof shape);
    uint64_t n = zero ? 0 : 1;
    for (size_t d = 0; d < nd && !zero; d++)
        if (__builtin_mul_overflow(n, t->shape[d], &n))
            FAIL("%s: tensor '%s': shape %s has more than 2^64 elements", f->name, p->tname, shape);
    t->nelements = n;
    uint64_t bits;
    if (__builtin_mul_overflow(n, (uint64_t)g_dtypes[t->dtype].bits, &bits))
        FAIL("%s: tensor '%s': %s %s is more than 2^64 bits", f->name, p->tname,
             g_dtypes[t->dtype].name, shape);
    if (bits % 8)
        FAIL("%s: tensor '%s': %llu %s values (%s) are not a whole number of bytes", f->name,
             p->tname, (unsigned long long)n, g_dtypes[t->dtype].name, shape);
    uint64_t nbytes = bits / 8;
    if (!json_is_array(jo) || json_array_size(jo) != 2)
        FAIL("%s: tensor '%s': \"data_offsets\" is %s%s, not [begin, end]", f->name, p->tname,
             rf_json_kind(jo), json_is_array(jo) ? " of another length" : "");
    st = get_count(p, json_array_get(jo, 0), "data_offsets", 0, &t->begin);
    if (!st) st = get_count(p, json_array_get(jo, 1), "data_offsets", 1, &t->end);
    if (st) goto out;
    if (t->begin > t->end)
        FAIL("%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", f->name, p->tname,
             (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > data_size)
        FAIL("%s: tensor '%s': data_offsets [%llu, %llu] run past the data section (%llu bytes: "
             "the file is %llu bytes, the header 8 + %llu)",
             f->name, p->tname, (unsigned long long)t->begin, (unsigned long long)t->end,
             (unsigned long long)data_size, (unsigned long long)f->file_size,
             (unsigned long long)f->header_size);
    if (t->end - t->begin != nbytes)
        FAIL("%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, but %s %s is %llu bytes",
             f->name, p->tname, (unsigned long long)t->begin, (unsigned long long)t->end,
             (unsigned long long)(t->end - t->begin), g_dtypes[t->dtype].name, shape,
             (unsigned long long)nbytes);
    char *name = malloc(key_len + 1);
    if (!name) {
        st = rf_error_set(p->err, RF_ERR_NOMEM, "%s: out of memory", f->name);
        goto out;
    }
    memcpy(name, key, key_len + 1);
    t->name = name;
    t->name_len = key_len;
out:
    return st;
}

static rf_status parse_metadata(parser *p, const json_t *m) {
    rf_status st = RF_OK;
    rf_st *f = p->f;
    if (!json_is_object(m))
        FAIL("%s: \"__metadata__\" is %s, not an object of strings", f->name, rf_json_kind(m));
    size_t n = json_object_size(m);
    f->meta = calloc(n ? n : 1, sizeof *f->meta);
    if (!f->meta) {
        st = rf_error_set(p->err, RF_ERR_NOMEM, "%s: out of memory", f->name);
        goto out;
    }
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)m, key, val) {
        if (!json_is_string(val)) {
            char shown[80];
            rf_escaped(key, strlen(key), shown, sizeof shown);
            FAIL("%s: __metadata__ \"%s\" is %s; metadata values must be strings", f->name, shown,
                 rf_json_kind(val));
        }
        st_meta *e = &f->meta[f->n_meta];
        e->key = strdup(key);
        e->value = strdup(json_string_value(val));
        f->n_meta++;
        if (!e->key || !e->value) {
            st = rf_error_set(p->err, RF_ERR_NOMEM, "%s: out of memory", f->name);
            goto out;
        }
    }
out:
    return st;
}

/* qsort contexts cannot carry a pointer: sort index pairs instead. */
typedef struct by_off {
    uint64_t begin, end;
    size_t i;
} by_off;

static int cmp_off(const void *a, const void *b) {
    const by_off *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

typedef struct by_nm {
    const char *name;
    size_t i;
} by_nm;

static int cmp_nm(const void *a, const void *b) {
    return strcmp(((const by_nm *)a)->name, ((const by_nm *)b)->name);
}

static void escape_name(const rf_st_tensor *t, char *out, size_t cap) {
    rf_escaped(t->name, t->name_len, out, cap);
}

/* The offsets tile the data section: sorted by (begin, end), each begins where the one before
 * ended, and the last ends at the end of the file. */
static rf_status check_layout(parser *p, uint64_t data_size) {
    rf_status st = RF_OK;
    rf_st *f = p->f;
    by_off *o = NULL;
    by_nm *nm = NULL;
    if (f->n_tensors) {
        o = malloc(f->n_tensors * sizeof *o);
        nm = malloc(f->n_tensors * sizeof *nm);
        f->by_name = malloc(f->n_tensors * sizeof *f->by_name);
        if (!o || !nm || !f->by_name) {
            st = rf_error_set(p->err, RF_ERR_NOMEM, "%s: out of memory", f->name);
            goto out;
        }
    }
    for (size_t i = 0; i < f->n_tensors; i++) {
        o[i] = (by_off){f->tensors[i].begin, f->tensors[i].end, i};
        nm[i] = (by_nm){f->tensors[i].name, i};
    }
    if (f->n_tensors) {
        qsort(o, f->n_tensors, sizeof *o, cmp_off);
        qsort(nm, f->n_tensors, sizeof *nm, cmp_nm);
    }
    for (size_t i = 0; i < f->n_tensors; i++) f->by_name[i] = nm[i].i;
    uint64_t at = 0;
    for (size_t k = 0; k < f->n_tensors; k++) {
        const rf_st_tensor *t = &f->tensors[o[k].i];
        char a[160], b[160];
        if (t->begin < at) {
            const rf_st_tensor *prev = &f->tensors[o[k - 1].i];
            escape_name(prev, a, sizeof a);
            escape_name(t, b, sizeof b);
            FAIL("%s: tensors '%s' (data_offsets [%llu, %llu]) and '%s' ([%llu, %llu]) overlap",
                 f->name, a, (unsigned long long)prev->begin, (unsigned long long)prev->end, b,
                 (unsigned long long)t->begin, (unsigned long long)t->end);
        }
        if (t->begin > at) {
            escape_name(t, b, sizeof b);
            if (k == 0)
                FAIL("%s: data bytes [0, %llu) belong to no tensor: the first, '%s', begins at "
                     "%llu",
                     f->name, (unsigned long long)t->begin, b, (unsigned long long)t->begin);
            escape_name(&f->tensors[o[k - 1].i], a, sizeof a);
            FAIL("%s: data bytes [%llu, %llu) belong to no tensor (a gap between '%s' and '%s')",
                 f->name, (unsigned long long)at, (unsigned long long)t->begin, a, b);
        }
        at = t->end;
    }
    if (at != data_size) {
        if (f->n_tensors == 0 && data_size)
            FAIL("%s: the header lists no tensor, but %llu bytes follow it", f->name,
                 (unsigned long long)data_size);
        if (f->n_tensors) {
            char a[160];
            escape_name(&f->tensors[o[f->n_tensors - 1].i], a, sizeof a);
            FAIL("%s: the tensors end at byte %llu of the %llu-byte data section (the last is "
                 "'%s'): %llu bytes at the end belong to no tensor (the header length or the "
                 "offsets are wrong, or the file was extended)",
                 f->name, (unsigned long long)at, (unsigned long long)data_size, a,
                 (unsigned long long)(data_size - at));
        }
    }
out:
    free(o);
    free(nm);
    return st;
}

static rf_status parse_header(parser *p, const char *hdr, uint64_t n) {
    rf_status st = RF_OK;
    rf_st *f = p->f;
    json_t *root = NULL;
    uint64_t data_size = f->file_size - 8 - n;
    if (hdr[0] != '{')
        FAIL("%s: the header does not start with '{' (byte 0x%02x): not a safetensors file",
             f->name, (unsigned char)hdr[0]);
    json_error_t je;
    root = json_loadb(hdr, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char text[200];
        rf_escaped(je.text, strlen(je.text), text, sizeof text);
        FAIL("%s: the %llu-byte header is not valid JSON: %s (byte %d; a wrong header length "
             "cuts the JSON short or runs into tensor data)",
             f->name, (unsigned long long)n, text, je.position);
    }
    if (!json_is_object(root))
        FAIL("%s: the header is %s, not an object", f->name, rf_json_kind(root));
    size_t count = json_object_size(root);
    const json_t *meta = json_object_get(root, "__metadata__");
    if (meta) {
        st = parse_metadata(p, meta);
        if (st) goto out;
        count--;
    }
    f->tensors = calloc(count ? count : 1, sizeof *f->tensors);
    if (!f->tensors) {
        st = rf_error_set(p->err, RF_ERR_NOMEM, "%s: out of memory", f->name);
        goto out;
    }
    const char *key;
    size_t key_len;
    json_t *val;
    json_object_keylen_foreach(root, key, key_len, val) {
        if (strcmp(key, "__metadata__") == 0) continue;
        rf_escaped(key, key_len, p->tname, sizeof p->tname);
        st = parse_tensor(p, key, key_len, val, data_size, &f->tensors[f->n_tensors]);
        if (st) goto out;
        f->n_tensors++;
    }
    st = check_layout(p, data_size);
out:
    json_decref(root);
    return st;
}

/* The checks on the length prefix; *n receives it. */
static rf_status check_length(rf_st *f, const uint8_t prefix[8], rf_error *err, uint64_t *n) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | prefix[i];
    *n = v;
    if (v < 2)
        return rf_error_set(err, RF_ERR_FORMAT,
                            "%s: header length %llu: too short for a JSON object (a safetensors "
                            "header is at least \"{}\", 2 bytes)",
                            f->name, (unsigned long long)v);
    if (v > RF_ST_MAX_HEADER)
        return rf_error_set(err, RF_ERR_FORMAT,
                            "%s: header length %llu is over the %u-byte limit (not a safetensors "
                            "file, or a corrupt one)",
                            f->name, (unsigned long long)v, RF_ST_MAX_HEADER);
    if (v > f->file_size - 8)
        return rf_error_set(err, RF_ERR_FORMAT,
                            "%s: header length %llu runs past the end of the file (%llu bytes: "
                            "at most %llu bytes of header)",
                            f->name, (unsigned long long)v, (unsigned long long)f->file_size,
                            (unsigned long long)(f->file_size - 8));
    return RF_OK;
}

static rf_st *st_new(const char *name, rf_error *err) {
    rf_st *f = calloc(1, sizeof *f);
    if (f) f->name = strdup(name ? name : "(memory)");
    if (!f || !f->name) {
        free(f);
        rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", name ? name : "(memory)");
        return NULL;
    }
    return f;
}

static rf_status too_short(const rf_st *f, rf_error *err) {
    return rf_error_set(err, RF_ERR_FORMAT,
                        "%s: %llu bytes: too short for the 8-byte header length of a "
                        "safetensors file",
                        f->name, (unsigned long long)f->file_size);
}

rf_status rf_st_open_memory(const void *buf, size_t size, const char *name, rf_st **out,
                            rf_error *err) {
    *out = NULL;
    rf_st *f = st_new(name, err);
    if (!f) return RF_ERR_NOMEM;
    rf_status st;
    parser p = {.f = f, .err = err};
    f->file_size = size;
    uint64_t n = 0;
    if (size < 8) {
        st = too_short(f, err);
        goto out;
    }
    st = check_length(f, buf, err, &n);
    if (st) goto out;
    f->header_size = n;
    st = parse_header(&p, (const char *)buf + 8, n);
out:
    if (st)
        rf_st_close(f);
    else
        *out = f;
    return st;
}

rf_status rf_st_open(const char *path, rf_st **out, rf_error *err) {
    *out = NULL;
    rf_status st = RF_OK;
    char *hdr = NULL;
    rf_st *f = st_new(path, err);
    if (!f) return RF_ERR_NOMEM;
    parser p = {.f = f, .err = err};
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = rf_error_set(err, RF_ERR_IO, "%s: not a regular file", path);
        goto out;
    }
    f->file_size = (uint64_t)sb.st_size;
    if (f->file_size < 8) {
        st = too_short(f, err);
        goto out;
    }
    uint8_t prefix[8];
    if (pread(fd, prefix, 8, 0) != 8) {
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot read the header length: %s", path,
                          strerror(errno));
        goto out;
    }
    uint64_t n = 0;
    st = check_length(f, prefix, err, &n);
    if (st) goto out;
    f->header_size = n;
    hdr = malloc((size_t)n);
    if (!hdr) {
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory for a %llu-byte header", path,
                          (unsigned long long)n);
        goto out;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, hdr + done, (size_t)n - done, (off_t)(8 + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            st = rf_error_set(err, RF_ERR_IO, "%s: short read of the %llu-byte header: %s", path,
                              (unsigned long long)n, r < 0 ? strerror(errno) : "end of file");
            goto out;
        }
        done += (size_t)r;
    }
    st = parse_header(&p, hdr, n);
out:
    if (fd >= 0) close(fd);
    free(hdr);
    if (st)
        rf_st_close(f);
    else
        *out = f;
    return st;
}
