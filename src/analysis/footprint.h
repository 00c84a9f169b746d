/* footprint.h: the one accounting of a model's weights that every format and every caller share:
 * bytes stored by role and by dtype, and bytes read per decoded token by role.
 *
 * A loader adds each tensor once (its role from analysis/roles.h, a dtype label, its real bytes
 * and the bytes of one row); rf_footprint_read then applies the decode rules:
 *   - transformer body, norms and the output head: read in full every step;
 *   - the token embedding table: one row per token, unless there is no output head, when the
 *     table is the tied head and read in full (the looked-up row is then not counted twice);
 *   - per-layer embedding tables (Gemma 3n): one row per token;
 *   - vision and audio towers: not read to decode text;
 *   - plus the KV cache read at the context (analysis/kvcap.h).
 * Plain values: nothing allocated, no state; the dtype table is a fixed array (labels beyond
 * RF_FOOTPRINT_MAX_DTYPES go to one "other" entry).
 */
#ifndef RF_ANALYSIS_FOOTPRINT_H
#define RF_ANALYSIS_FOOTPRINT_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/kvcap.h"
#include "analysis/roles.h"

#define RF_FOOTPRINT_MAX_DTYPES 24
#define RF_DTYPE_LABEL_MAX      48

typedef struct rf_dtype_bytes {
    char label[RF_DTYPE_LABEL_MAX]; /* "BF16", "Q4_K", "int4 g32 (pack-quantized)" */
    uint64_t tensors;
    uint64_t bytes;
} rf_dtype_bytes;

typedef struct rf_footprint {
    uint64_t role_bytes[RF_ROLE_COUNT];
    uint64_t role_tensors[RF_ROLE_COUNT];
    uint64_t role_rows[RF_ROLE_COUNT]; /* bytes of one row, summed over the role's tables (used
                                        * for the embedding roles) */
    uint64_t total_bytes;
    uint64_t total_tensors;
    rf_dtype_bytes dtype[RF_FOOTPRINT_MAX_DTYPES];
    int n_dtype;
} rf_footprint;

void rf_footprint_init(rf_footprint *fp);

/* Adds one (logical) tensor: nbytes stored, row_bytes the bytes of one row (nbytes / rows, rows
 * being the element count over the innermost dimension). Sums saturate at UINT64_MAX. */
void rf_footprint_add(rf_footprint *fp, rf_role role, const char *dtype_label, uint64_t nbytes,
                      uint64_t row_bytes);

/* The head is tied to the token embedding table: a table but no stored head. */
bool rf_footprint_tied(const rf_footprint *fp);

typedef struct rf_token_read {
    uint64_t role[RF_ROLE_COUNT]; /* weight bytes read per decoded token, by role; a tied table's
                                   * full read is under RF_ROLE_HEAD, RF_ROLE_TOKEN_EMBD then 0 */
    uint64_t weights;             /* the sum of role[] */
    uint64_t kv;                  /* KV cache read at ctx */
    uint64_t total;               /* weights + kv */
    int64_t ctx;
    rf_kv_dtype kv_dtype;
    bool tied;
    bool kv_known; /* false: no geometry, kv is 0 */
} rf_token_read;

/* Bytes per decoded token at context ctx (>= 0; the KV positions each layer sees) with a KV
 * cache of type kvt; geom may be NULL or have n_layer 0 (kv then 0, kv_known false). */
rf_token_read rf_footprint_read(const rf_footprint *fp, const rf_kv_geom *geom, int64_t ctx,
                                rf_kv_dtype kvt);

/* tok/s ceiling = bandwidth (bytes/s) / bytes read per token; 0 when nothing is read. */
static inline double rf_ceiling_tok_s(double bytes_per_s, uint64_t bytes_per_token) {
    return bytes_per_token ? bytes_per_s / (double)bytes_per_token : 0;
}

#endif
