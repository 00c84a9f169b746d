/* kvcap.h: the KV cache of a model: its per-layer geometry, the bytes it stores and reads per
 * token, and its capacity in a memory budget, counted as vLLM counts it.
 *
 * Geometry (rf_kv_geom): per layer, the KV heads, the key and value head sizes, the sliding
 * window (0: a global layer) and whether the layer holds a cache of its own (Gemma 3n's last
 * layers reuse an earlier layer's cache: they read one but store none). The loaders fill it from
 * GGUF metadata or a Hugging Face config.json (analysis/facts.h); rf_model_token_bytes from the
 * engine's validated hyperparameters.
 *
 * One position of one layer costs n_kv_head x (head_dim_k + head_dim_v) values of the KV dtype.
 *   stored per token   = the sum over cache-holding layers (every layer keeps every position:
 *                        vLLM's "GPU KV cache size" divides its budget by this);
 *   per request of L   = the sum over cache-holding layers of min(L, window) positions (a
 *                        sliding layer needs at most its window);
 *   read at context c  = the sum over all attending layers (shared ones too) of min(c, window)
 *                        positions: what one decode step at position c reads.
 * Capacity (rf_kv_capacity): budget = floor(mem x util) - weights (vLLM: total GPU memory x
 * gpu_memory_utilization - the model's memory); tokens = floor(budget / stored per token);
 * concurrency = budget / per request of L. vLLM also subtracts its profiled activation peak and
 * non-torch memory, rounds to 16-token blocks and reserves window - 1 + max_num_batched_tokens
 * positions per sliding layer; these figures leave all of that out (docs/inspect.md).
 *
 * Ranges (checked by the loaders, relied on here so that no product overflows 64 bits): at most
 * RF_KV_MAX_LAYERS layers, n_kv_head <= RF_KV_MAX_HEADS, head sizes <= RF_KV_MAX_HEAD_DIM,
 * positions <= RF_KV_MAX_CTX. Pure functions; no state, nothing allocated.
 */
#ifndef RF_ANALYSIS_KVCAP_H
#define RF_ANALYSIS_KVCAP_H

#include <stdbool.h>
#include <stdint.h>

#include "roofline/status.h"

#define RF_KV_MAX_LAYERS   512
#define RF_KV_MAX_HEADS    1024
#define RF_KV_MAX_HEAD_DIM 2048
#define RF_KV_MAX_CTX      (INT64_C(1) << 27)

typedef enum rf_kv_dtype {
    RF_KV_F16 = 0, /* the default (vLLM "auto" for a bf16 or f16 model; llama.cpp f16) */
    RF_KV_BF16,
    RF_KV_F32,
    RF_KV_FP8,  /* vLLM fp8 / fp8_e4m3 / fp8_e5m2: 1 byte a value */
    RF_KV_Q8_0, /* llama.cpp q8_0: 34 bytes per 32 values */
    RF_KV_Q4_0, /* llama.cpp q4_0: 18 bytes per 32 values */
    RF_KV_DTYPE_COUNT
} rf_kv_dtype;

typedef struct rf_kv_layer {
    uint32_t n_kv_head; /* 0: the layer has no attention (no KV at all) */
    uint32_t head_dim_k;
    uint32_t head_dim_v;
    uint32_t window; /* sliding window in positions; 0: global */
    bool has_cache;  /* false: reuses another layer's cache (reads, stores nothing) */
} rf_kv_layer;

typedef struct rf_kv_geom {
    int32_t n_layer; /* 0: unknown (no KV figures) */
    rf_kv_layer layer[RF_KV_MAX_LAYERS];
} rf_kv_geom;

/* Parses "f16", "bf16", "f32", "fp8" (also "fp8_e4m3", "fp8_e5m2"), "q8_0", "q4_0"; false for
 * anything else. */
bool rf_kv_dtype_parse(const char *s, rf_kv_dtype *out);
const char *rf_kv_dtype_name(rf_kv_dtype t); /* "f16", ...; "?" out of range */

/* Bytes of n values of type t (rounded up to whole blocks for q8_0 / q4_0). */
uint64_t rf_kv_value_bytes(rf_kv_dtype t, uint64_t n);

/* Bytes of one position of layer il (K and V). */
uint64_t rf_kv_layer_row(const rf_kv_geom *g, int32_t il, rf_kv_dtype t);

uint64_t rf_kv_stored_per_token(const rf_kv_geom *g, rf_kv_dtype t);
uint64_t rf_kv_request_bytes(const rf_kv_geom *g, int64_t len, rf_kv_dtype t);
uint64_t rf_kv_read_bytes(const rf_kv_geom *g, int64_t ctx, rf_kv_dtype t);

/* Counts of global / sliding / cache-less (shared) layers, for printing. */
void rf_kv_layer_counts(const rf_kv_geom *g, int32_t *global, int32_t *sliding, int32_t *shared);
/* The largest sliding window (0: none). */
uint32_t rf_kv_max_window(const rf_kv_geom *g);

typedef struct rf_kv_capacity {
    uint64_t mem_bytes;       /* floor(mem x util): the memory vLLM lets itself use */
    uint64_t weights;         /* bytes subtracted for the weights */
    int64_t budget;           /* mem_bytes - weights; <= 0: no room for any KV */
    uint64_t per_token;       /* rf_kv_stored_per_token */
    uint64_t per_request;     /* rf_kv_request_bytes(len) */
    int64_t len;              /* tokens per request */
    uint64_t tokens;          /* floor(budget / per_token); 0 when budget <= 0 */
    double concurrency;       /* budget / per_request; 0 when budget <= 0 */
    uint64_t max_len_one_seq; /* the longest single request that fits (<= RF_KV_MAX_CTX) */
} rf_kv_capacity;

/* Capacity of a KV cache of type t in mem_bytes x util of memory holding weights bytes of
 * weights, for requests of len tokens. Errors (RF_ERR_ARG, naming the argument): util not in
 * (0, 1], mem_bytes not finite or not positive, len not in [1, RF_KV_MAX_CTX], a geometry with no
 * layers or no cache-holding layer. */
rf_status rf_kv_capacity_compute(const rf_kv_geom *g, double mem_bytes, double util,
                                 uint64_t weights, int64_t len, rf_kv_dtype t, rf_kv_capacity *out,
                                 rf_error *err);

#endif
