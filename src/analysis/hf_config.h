/* hf_config.h: what the inspector needs from a Hugging Face config.json: the KV cache geometry,
 * the trained context, and the compressed-tensors quantization of the checkpoint.
 *
 * The text model's settings are read from "text_config" when present (multimodal wrappers:
 * Gemma 3, Gemma 3n, ...), else from the top level:
 *   num_hidden_layers (required for KV figures), num_attention_heads, num_key_value_heads
 *   (default: num_attention_heads), head_dim (default: hidden_size / num_attention_heads),
 *   max_position_embeddings;
 *   sliding layers: "layer_types" ("sliding_attention" / "full_attention", one per layer) when
 *   present; else use_sliding_window false means none; else sliding_window_pattern P (Gemma 3:
 *   layer i slides unless (i + 1) % P == 0); else Qwen2's use_sliding_window with
 *   max_window_layers (layers from there on slide); else a sliding_window with no pattern makes
 *   every layer slide (Mistral);
 *   num_kv_shared_layers (Gemma 3n): the last that many layers store no cache of their own.
 * Quantization: quantization_config with quant_method "compressed-tensors"; its "format" (or the
 * first config group's) "pack-quantized" marks int32-packed weights; bits and group size from
 * the first config group's "weights" (num_bits, group_size, strategy, symmetric).
 *
 * Every value is range-checked; one out of range or of the wrong JSON type is RF_ERR_MODEL with
 * a message naming the file and the key ("config.json: text_config.num_key_value_heads = 0 is not
 * in [1, 1024]"); invalid JSON is RF_ERR_FORMAT. Plain value; nothing kept allocated.
 */
#ifndef RF_ANALYSIS_HF_CONFIG_H
#define RF_ANALYSIS_HF_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/kvcap.h"
#include "roofline/status.h"

#define RF_HF_CONFIG_MAX_BYTES (16u << 20)

typedef struct rf_hf_quant {
    bool present;        /* a quantization_config was found */
    char method[32];     /* quant_method ("compressed-tensors", "gptq", ...), printable */
    char format[32];     /* "pack-quantized", "float-quantized", ... */
    bool pack_quantized; /* weights stored as NAME.weight_packed int32 */
    uint32_t bits;       /* weight bits (pack-quantized: 2, 4 or 8) */
    uint32_t group_size; /* 0: per channel or per tensor */
    char strategy[16];   /* "group", "channel", "tensor" */
    bool symmetric;
} rf_hf_quant;

typedef struct rf_hf_config {
    char model_type[48];   /* printable excerpt; "" if absent */
    char architecture[80]; /* architectures[0]; "" if absent */
    bool kv_known;         /* the geometry could be worked out */
    char kv_note[160];     /* why not, or how the sliding layers were found */
    rf_kv_geom kv;
    int64_t ctx_train;       /* max_position_embeddings; 0 if absent */
    int tie_word_embeddings; /* 1, 0, or -1 when absent */
    rf_hf_quant quant;
} rf_hf_config;

/* Reads path (a regular file of at most RF_HF_CONFIG_MAX_BYTES). */
rf_status rf_hf_config_load(const char *path, rf_hf_config *out, rf_error *err);

/* The same over a NUL-terminated text (name used in messages). */
rf_status rf_hf_config_parse(const char *text, size_t len, const char *name, rf_hf_config *out,
                             rf_error *err);

#endif
