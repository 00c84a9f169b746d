/* safetensors.h: reading the header of a safetensors file (Hugging Face's tensor container),
 * never its tensor data.
 *
 * Layout: an 8-byte little-endian length N, then N bytes of JSON,
 *   {"NAME": {"dtype": "BF16", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...,
 *    "__metadata__": {"key": "string value", ...}}
 * then the data section: every tensor's bytes at [begin, end) relative to byte 8 + N.
 *
 * rf_st_open reads the 8 bytes and the header (pread; the data is not touched) and validates it
 * all, as the reference reader (the safetensors crate) does and more; every failure is
 * RF_ERR_FORMAT (RF_ERR_IO for the file itself) with a message that starts with the file name and
 * names the tensor:
 *   - the file holds the 8-byte length; N >= 2 and N <= RF_ST_MAX_HEADER (100,000,000, the
 *     crate's cap); 8 + N within the file;
 *   - the header starts with '{', is valid UTF-8 JSON (jansson), has no duplicate keys, and is an
 *     object; __metadata__, when present, an object of strings;
 *   - each tensor entry an object with "dtype" (a known name), "shape" (at most RF_ST_MAX_DIMS
 *     non-negative integers whose product, and that times the dtype's bits, fit 64 bits; sub-byte
 *     dtypes a whole number of bytes) and "data_offsets" (two non-negative integers, begin <=
 *     end, end within the data section, end - begin equal to the bytes dtype x shape needs);
 *   - sorted by offset, the tensors neither overlap nor leave a gap, and they end exactly at the
 *     end of the file (the crate's rule: the data section is fully indexed).
 * Accepted: zero-size tensors (a 0 in the shape, begin == end), scalars (shape []), trailing
 * spaces after the JSON (writers pad the header to 8 bytes), any key order, an empty name.
 *
 * Ownership: the rf_st owns every name, metadata string and tensor record it hands out; they are
 * borrowed until rf_st_close. Nothing is mapped; the file is closed before rf_st_open returns.
 */
#ifndef RF_FORMAT_SAFETENSORS_H
#define RF_FORMAT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

#define RF_ST_MAX_HEADER 100000000u /* bytes of JSON accepted (the safetensors crate's cap) */
#define RF_ST_MAX_DIMS   16

typedef enum rf_st_dtype {
    RF_ST_BOOL = 0,
    RF_ST_U8,
    RF_ST_I8,
    RF_ST_F8_E5M2,
    RF_ST_F8_E4M3,
    RF_ST_F8_E8M0,
    RF_ST_I16,
    RF_ST_U16,
    RF_ST_F16,
    RF_ST_BF16,
    RF_ST_I32,
    RF_ST_U32,
    RF_ST_F32,
    RF_ST_F64,
    RF_ST_I64,
    RF_ST_U64,
    RF_ST_C64,     /* complex64: 8 bytes */
    RF_ST_F4,      /* float4 e2m1: 4 bits */
    RF_ST_F6_E2M3, /* 6 bits */
    RF_ST_F6_E3M2, /* 6 bits */
    RF_ST_DTYPE_COUNT
} rf_st_dtype;

typedef struct rf_st_tensor {
    const char *name; /* NUL-terminated (JSON strings hold no NUL), valid UTF-8 */
    size_t name_len;
    rf_st_dtype dtype;
    uint32_t n_dims;
    uint64_t shape[RF_ST_MAX_DIMS]; /* outermost first (row-major) */
    uint64_t nelements;
    uint64_t begin, end; /* data_offsets: relative to the data section */
} rf_st_tensor;

typedef struct rf_st rf_st;

/* Opens, reads and validates the header of path; *out NULL on failure. Only regular files (a
 * directory, FIFO or device is RF_ERR_IO naming the path, without blocking). */
rf_status rf_st_open(const char *path, rf_st **out, rf_error *err);

/* The same over a caller's buffer holding the whole file (borrowed during the call only; tests
 * and fuzzing). name is used in messages (NULL: "(memory)"). */
rf_status rf_st_open_memory(const void *buf, size_t size, const char *name, rf_st **out,
                            rf_error *err);

void rf_st_close(rf_st *f);

const char *rf_st_name(const rf_st *f);
uint64_t rf_st_file_size(const rf_st *f);
uint64_t rf_st_header_size(const rf_st *f); /* N */
uint64_t rf_st_data_size(const rf_st *f);   /* file size - 8 - N */

/* Tensors in the header's order. */
size_t rf_st_n_tensors(const rf_st *f);
const rf_st_tensor *rf_st_tensor_at(const rf_st *f, size_t i);
const rf_st_tensor *rf_st_find(const rf_st *f, const char *name); /* NULL if absent */

/* __metadata__ entries in the header's order. */
size_t rf_st_n_metadata(const rf_st *f);
void rf_st_metadata_at(const rf_st *f, size_t i, const char **key, const char **value);
const char *rf_st_metadata_get(const rf_st *f, const char *key); /* NULL if absent */

/* Bytes of a tensor: nelements x bits / 8. */
uint64_t rf_st_tensor_bytes(const rf_st_tensor *t);

const char *rf_st_dtype_name(rf_st_dtype t); /* "BF16"; "?" out of range */
unsigned rf_st_dtype_bits(rf_st_dtype t);    /* 16 for BF16, 4 for F4; 0 out of range */

#endif
