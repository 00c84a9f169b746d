/* facts.h: the facts of a model checkpoint that sizing, rooflines and reports need, from its
 * headers alone (no tensor data is read): every tensor's role, dtype and real bytes, the memory
 * breakdown, bytes read per decoded token by role, and the KV cache geometry.
 *
 * rf_model_facts_load accepts
 *   - a GGUF file (any architecture: the tensor table plus {arch}.block_count, head counts, key
 *     and value lengths, sliding window and pattern, shared KV layers);
 *   - a single .safetensors file, with the config.json beside it when there is one;
 *   - a sharded checkpoint given by its model.safetensors.index.json (every shard it names is
 *     opened and cross-checked: each tensor of the index in its shard, each shard tensor in the
 *     index, and no shard name that leaves the index's directory);
 *   - a directory holding model.safetensors.index.json, model.safetensors, or exactly one
 *     *.safetensors.index.json or *.safetensors file.
 * A file is GGUF when it ends in .gguf, or ends in neither .json nor .safetensors and starts
 * with the GGUF magic; a .json file is an index; anything else is read as safetensors.
 * Compressed-tensors "pack-quantized" checkpoints (config.json quantization_config): the parts
 * NAME.weight_packed (int32, 32/bits values each), NAME.weight_scale, NAME.weight_zero_point,
 * NAME.weight_shape and NAME.weight_g_idx become one logical tensor NAME.weight of dtype
 * "int4 g32" (bits, group) with the logical shape and the real bytes of all its parts.
 * The roles come from analysis/roles.h and the accounting from analysis/footprint.h: the same
 * for both formats, and the same as rf_model_token_bytes (analysis/roofline.h) for a model the
 * engine runs. Errors name the file and the tensor or key (RF_ERR_IO, _FORMAT, _MODEL,
 * _UNSUPPORTED, _NOMEM).
 *
 * Ownership: rf_model_facts_load allocates the facts and everything they point to; the caller
 * frees them with rf_model_facts_free. Nothing refers to the files once loaded.
 *
 * The API for report code (the rest is the struct's fields):
 *   rf_model_facts_load(path, &f, &err)            load; rf_model_facts_free(f)
 *   rf_model_facts_weights(f)                      bytes of all weights (the memory they take)
 *   rf_model_facts_token_read(f, ctx, kv_dtype)    bytes read per decoded token, by role, + KV
 *   rf_model_facts_kv_per_token(f, kv_dtype)       KV bytes stored per token (all layers)
 *   rf_model_facts_kv_capacity(f, mem, util, len, kv_dtype, &cap, &err)
 *                                                  vLLM-style tokens and concurrency
 *   f->kv.n_layer, rf_kv_max_window(&f->kv), rf_kv_layer_counts(&f->kv, ...)
 */
#ifndef RF_ANALYSIS_FACTS_H
#define RF_ANALYSIS_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/footprint.h"
#include "analysis/kvcap.h"
#include "analysis/roles.h"
#include "format/gguf.h"
#include "roofline/status.h"

#define RF_FACTS_MAX_DIMS 16

typedef enum rf_facts_format { RF_FACTS_GGUF = 0, RF_FACTS_SAFETENSORS } rf_facts_format;

typedef struct rf_facts_tensor {
    char *name;                     /* owned; the logical name (NAME.weight for packed parts) */
    char dtype[RF_DTYPE_LABEL_MAX]; /* "BF16", "Q4_K", "int4 g32" */
    uint32_t n_dims;
    uint64_t shape[RF_FACTS_MAX_DIMS]; /* as the format lists it: GGUF ne[0] (contiguous) first,
                                        * safetensors outermost first; logical for packed */
    uint64_t nbytes;                   /* real bytes stored (all parts) */
    uint64_t row_bytes;                /* nbytes / rows (rows: elements / innermost dimension) */
    uint32_t parts;                    /* stored tensors this one stands for */
    uint32_t file;                     /* index into files[] */
    rf_role role;
} rf_facts_tensor;

typedef struct rf_facts_file {
    char *path; /* owned */
    uint64_t size;
    uint64_t header;  /* bytes before the tensor data */
    uint64_t tensors; /* as the file lists them */
} rf_facts_file;

typedef struct rf_model_facts {
    char *path; /* as given */
    rf_facts_format format;
    char arch[64];     /* general.architecture, or config.json model_type; "" when unknown */
    char *config_path; /* the config.json read (safetensors), or NULL */
    char *index_path;  /* the index read (sharded safetensors), or NULL */
    rf_facts_file *files;
    size_t n_files;
    uint64_t file_bytes; /* sum of the files' sizes */
    rf_facts_tensor *tensors;
    size_t n_tensors;        /* logical tensors */
    uint64_t stored_tensors; /* tensors as the files list them */
    rf_footprint fp;         /* bytes by role and dtype */
    rf_kv_geom kv;           /* n_layer 0: unknown (see kv_note) */
    char kv_note[192];       /* how the geometry was found, or why it was not */
    int64_t ctx_train;       /* trained context (0: unknown) */
    char quant[160];         /* "compressed-tensors pack-quantized: int4, group 32, symmetric" */
    char note[256];          /* anything else worth a line (an index total_size that differs) */
} rf_model_facts;

rf_status rf_model_facts_load(const char *path, rf_model_facts **out, rf_error *err);

/* From a GGUF already open (borrowed during the call; nothing kept). */
rf_status rf_model_facts_from_gguf(const rf_gguf *g, rf_model_facts **out, rf_error *err);

void rf_model_facts_free(rf_model_facts *f);

/* The rule above: path names a GGUF file (false for a directory or a missing file). */
bool rf_model_facts_path_is_gguf(const char *path);

static inline uint64_t rf_model_facts_weights(const rf_model_facts *f) {
    return f->fp.total_bytes;
}

/* Bytes read per decoded token at context ctx with a KV cache of type kvt (footprint.h). */
rf_token_read rf_model_facts_token_read(const rf_model_facts *f, int64_t ctx, rf_kv_dtype kvt);

static inline uint64_t rf_model_facts_kv_per_token(const rf_model_facts *f, rf_kv_dtype kvt) {
    return rf_kv_stored_per_token(&f->kv, kvt);
}

/* rf_kv_capacity_compute with the facts' geometry and weights; RF_ERR_ARG (naming why) also
 * when the geometry is unknown. */
rf_status rf_model_facts_kv_capacity(const rf_model_facts *f, double mem_bytes, double util,
                                     int64_t len, rf_kv_dtype kvt, rf_kv_capacity *out,
                                     rf_error *err);

/* The GGUF geometry reader on its own: {arch}.* keys of g into *out (n_layer 0 and a note when
 * the keys are missing; an error for a key of the wrong type or out of range). */
rf_status rf_kv_geom_from_gguf(const rf_gguf *g, rf_kv_geom *out, char *note, size_t note_cap,
                               rf_error *err);

#endif
