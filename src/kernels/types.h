/* types.h: the tensor element formats of the GGUF file format (ggml type ids as stored), their
 * block geometry (values and bytes per block) and names: facts of the file format, used by the
 * GGUF reader and writer and by everything that sizes rows. Which formats the engine can compute
 * with is the kernels' business (kernels/quant.h: rf_vec_dot_type).
 * Pure data; no state, nothing allocated. */
#ifndef RF_KERNELS_TYPES_H
#define RF_KERNELS_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef enum rf_type {
    RF_TYPE_F32 = 0,
    RF_TYPE_F16 = 1,
    RF_TYPE_Q4_0 = 2,
    RF_TYPE_Q4_1 = 3,
    RF_TYPE_Q5_0 = 6,
    RF_TYPE_Q5_1 = 7,
    RF_TYPE_Q8_0 = 8,
    RF_TYPE_Q8_1 = 9,
    RF_TYPE_Q2_K = 10,
    RF_TYPE_Q3_K = 11,
    RF_TYPE_Q4_K = 12,
    RF_TYPE_Q5_K = 13,
    RF_TYPE_Q6_K = 14,
    RF_TYPE_Q8_K = 15,
    RF_TYPE_BF16 = 30,
    RF_TYPE_COUNT = 40, /* ids below this may appear in files; unknown ids are rejected */
} rf_type;

typedef struct rf_type_info {
    const char *name; /* "Q4_K"; NULL for ids roofline does not know */
    uint32_t block;   /* values per block */
    uint32_t bytes;   /* bytes per block */
} rf_type_info;

/* Geometry of type t; name is NULL for an unknown id. Never NULL itself. */
const rf_type_info *rf_type_get(uint32_t t);

/* Bytes of a row of n values of type t, or 0 when n is not a multiple of the block size, t is
 * unknown, or the size does not fit size_t. */
size_t rf_type_row_bytes(uint32_t t, uint64_t n);

/* The type named name ("Q4_K", "q8_0", case-insensitive), or RF_TYPE_COUNT when none is. */
rf_type rf_type_parse(const char *name);

#endif
