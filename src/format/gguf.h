/* gguf.h: reading GGUF files (versions 2 and 3, little-endian).
 *
 * rf_gguf_open maps the file read-only and validates the whole header before returning: every
 * length, count, offset and size is bounds-checked against the bytes present, so a hostile file
 * yields an RF_ERR_FORMAT / RF_ERR_UNSUPPORTED error whose message starts with the file name and
 * names the field, never a crash, an abort or an out-of-bounds read. The checks, in order:
 *   - magic "GGUF"; version 2 or 3 (a byte-swapped, big-endian version is named as such);
 *   - metadata and tensor counts bounded by the bytes left (smallest entry 14 / 33 bytes);
 *   - every read bounds-checked ("truncated: ..."); strings at most RF_GGUF_MAX_STRING bytes;
 *     array counts bounded by the bytes left before anything is allocated;
 *   - keys non-empty and unique; value and element types in range; no arrays of arrays;
 *   - general.alignment, when present, a u32 power of two in [1, RF_GGUF_MAX_ALIGNMENT];
 *   - tensor names in [1, RF_GGUF_MAX_NAME) bytes and unique; n_dims in [1, 4]; every ne >= 1
 *     (zero-sized tensors are rejected); element count within int64; type id known;
 *     ne[0] a multiple of the type's block size; byte size within size_t;
 *   - every offset a multiple of the alignment and offset + size inside the data section
 *     (checked without wrapping); with tensors, the padded data start inside the file.
 * Not checked: that tensors do not overlap, or that offsets follow llama.cpp's packed order; the
 * meaning of metadata (model code checks that). The padding after the tensor infos is not
 * required when there are no tensors (data_offset is then clamped to the file size).
 * rf_gguf_open accepts only regular files (a directory, FIFO or device gives RF_ERR_IO naming the
 * path, without blocking). The file must not shrink while it is mapped (SIGBUS otherwise).
 * Tensor data is not copied: rf_gguf_tensor.data points into the mapping and stays valid until
 * rf_gguf_close.
 *
 * Ownership: the rf_gguf owns the mapping and every view handed out (rf_str, arrays, tensor
 * records); they are borrowed until rf_gguf_close. rf_gguf_open_memory borrows the caller's
 * buffer, which must outlive the rf_gguf.
 */
#ifndef RF_FORMAT_GGUF_H
#define RF_FORMAT_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

#define RF_GGUF_MAGIC             0x46554747u /* "GGUF" read as a little-endian u32 */
#define RF_GGUF_DEFAULT_ALIGNMENT 32
#define RF_GGUF_MAX_DIMS          4
#define RF_GGUF_MAX_NAME          64         /* tensor names are shorter than this */
#define RF_GGUF_MAX_STRING        (1u << 26) /* 64 MiB: longest string accepted */
#define RF_GGUF_MAX_ALIGNMENT     (1u << 20)

typedef enum rf_gguf_type {
    RF_GGUF_U8 = 0,
    RF_GGUF_I8 = 1,
    RF_GGUF_U16 = 2,
    RF_GGUF_I16 = 3,
    RF_GGUF_U32 = 4,
    RF_GGUF_I32 = 5,
    RF_GGUF_F32 = 6,
    RF_GGUF_BOOL = 7,
    RF_GGUF_STRING = 8,
    RF_GGUF_ARRAY = 9,
    RF_GGUF_U64 = 10,
    RF_GGUF_I64 = 11,
    RF_GGUF_F64 = 12,
    RF_GGUF_TYPE_COUNT
} rf_gguf_type;

/* A string view into the file: not NUL-terminated. */
typedef struct rf_str {
    const char *ptr;
    uint64_t len;
} rf_str;

typedef struct rf_gguf_kv {
    rf_str key;
    rf_gguf_type type;
    union {
        uint64_t u; /* U8, U16, U32, U64, BOOL (0/1) */
        int64_t i;  /* I8, I16, I32, I64 */
        double f;   /* F32, F64 */
        rf_str s;   /* STRING */
        struct {
            rf_gguf_type type; /* element type, never ARRAY */
            uint64_t n;
            const void *data;   /* raw little-endian elements (scalar element types) */
            const rf_str *strs; /* n views when type is STRING, else NULL */
        } arr;
    } v;
} rf_gguf_kv;

typedef struct rf_gguf_tensor {
    rf_str name;
    uint32_t n_dims;
    uint64_t ne[RF_GGUF_MAX_DIMS]; /* ne[0] contiguous; unused dims are 1 */
    uint32_t type;                 /* rf_type id */
    uint64_t offset;               /* relative to the data section */
    uint64_t nbytes;
    uint64_t nelements;
    const void *data; /* into the mapping */
} rf_gguf_tensor;

typedef struct rf_gguf rf_gguf;

/* Opens and validates path. On failure *out is NULL and err names the file and the field. */
rf_status rf_gguf_open(const char *path, rf_gguf **out, rf_error *err);

/* As rf_gguf_open over a caller-owned buffer (borrowed; used by tests and the fuzzer). name is
 * used in messages only (NULL: "(memory)"). Any size is accepted and validated (a short buffer
 * fails as truncated or with a bad magic); buf may be NULL only when size is 0. */
rf_status rf_gguf_open_memory(const void *buf, size_t size, const char *name, rf_gguf **out,
                              rf_error *err);

void rf_gguf_close(rf_gguf *g);

/* Asks the kernel to read the tensor data in ahead of use (madvise WILLNEED on the mapping;
 * asynchronous, a hint only): a model that will compute reads its weights now, not on the first
 * request's page faults. No-op for memory buffers. */
void rf_gguf_prefetch(const rf_gguf *g);

uint32_t rf_gguf_version(const rf_gguf *g);
uint64_t rf_gguf_file_size(const rf_gguf *g);
uint64_t rf_gguf_data_offset(const rf_gguf *g);
uint32_t rf_gguf_alignment(const rf_gguf *g);
const char *rf_gguf_name(const rf_gguf *g); /* path or the name given to open_memory */

uint64_t rf_gguf_n_kv(const rf_gguf *g);
const rf_gguf_kv *rf_gguf_kv_at(const rf_gguf *g, uint64_t i);
const rf_gguf_kv *rf_gguf_find_kv(const rf_gguf *g, const char *key); /* NULL if absent */

uint64_t rf_gguf_n_tensors(const rf_gguf *g);
const rf_gguf_tensor *rf_gguf_tensor_at(const rf_gguf *g, uint64_t i);
const rf_gguf_tensor *rf_gguf_find_tensor(const rf_gguf *g, const char *name);

/* Typed metadata getters. A missing key gives RF_ERR_MODEL when required, else RF_OK with *out
 * unchanged (so callers preset defaults). A key of the wrong type, or a value out of the
 * target's range, gives RF_ERR_MODEL naming the key. Any integer width is accepted for integers
 * (range-checked); F32 or F64 for floats (a finite F64 beyond the f32 range is an error; inf and
 * NaN pass through). On success err is left untouched. */
rf_status rf_gguf_get_u32(const rf_gguf *g, const char *key, bool required, uint32_t *out,
                          rf_error *err);
rf_status rf_gguf_get_i32(const rf_gguf *g, const char *key, bool required, int32_t *out,
                          rf_error *err);
rf_status rf_gguf_get_f32(const rf_gguf *g, const char *key, bool required, float *out,
                          rf_error *err);
rf_status rf_gguf_get_bool(const rf_gguf *g, const char *key, bool required, bool *out,
                           rf_error *err);
rf_status rf_gguf_get_str(const rf_gguf *g, const char *key, bool required, rf_str *out,
                          rf_error *err);
/* An array whose element type is elem (or any integer type when elem is I32/U32 and the values
 * are checked by the caller). *out is NULL when absent and not required. */
rf_status rf_gguf_get_arr(const rf_gguf *g, const char *key, rf_gguf_type elem, bool required,
                          const rf_gguf_kv **out, rf_error *err);

/* Element i of a scalar array as int64/double (no range check beyond the array bound). */
int64_t rf_gguf_arr_int(const rf_gguf_kv *kv, uint64_t i);
double rf_gguf_arr_float(const rf_gguf_kv *kv, uint64_t i);

/* Compare a view with a C string. */
bool rf_str_eq(rf_str s, const char *c);

/* Bytes of one value of a scalar metadata type; 0 for STRING, ARRAY and unknown types. */
size_t rf_gguf_type_size(uint32_t t);

/* Name of a metadata value type ("u32", "string", ...). */
const char *rf_gguf_type_name(uint32_t t);

#endif
