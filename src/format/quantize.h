/* quantize.h: rewriting a GGUF model with its weight matrices in another tensor format
 * (`roofline quantize`), as llama.cpp's llama-quantize does without an importance matrix.
 *
 * Which tensors are converted follows llama.cpp (llama-quant.cpp): tensors of 2 or more
 * dimensions whose name ends in "weight", except norms ("_norm.weight"), the MoE router
 * (ffn_gate_inp), position and token-type embeddings, convolution and recurrent-state tensors
 * (ssm_conv1d, shortconv, time_mix_*), relative-position biases and the vision/audio towers'
 * patch and position tensors. Everything else (1-D tensors, norms, biases) is copied unchanged.
 * Weight matrices get opts.type; the token embedding (token_embd.weight,
 * per_layer_token_embd.weight), which a tied model also uses as its output head, gets
 * opts.emb_type. An untied output.weight is a weight matrix like the others.
 *
 * A row length that is not a multiple of the target's block falls back as llama.cpp does:
 * Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, and to F16 when even that (or a 32-value target)
 * does not divide it; each fallback is reported. The encoders are rf_ref_quantize_weights
 * (kernels/quant.h): F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 give llama-quantize's bytes;
 * the K-quants are round-to-nearest (no search), within the bounds stated in quant_ref.c. A
 * tensor already in its target type is copied byte for byte; any other is decoded to f32 and
 * encoded (so --force from Q4_K to Q8_0 or F32 dequantizes).
 *
 * "Input already smaller than the target": the input's dominant matrix type is the type holding
 * the most elements among the weight matrices other than the token embedding; when it has fewer
 * bits per weight than opts.type (bytes * 8 / block: Q5_0 5.5 < Q8_0 8.5), or the token
 * embedding has fewer than its target, rf_quantize_file fails with RF_ERR_ARG unless opts.force
 * (or opts.keep_mixed, which never widens a tensor). Equal widths (F16 <-> BF16) are allowed.
 * So the embedded Gemma Q4_K_M file (body mostly Q5_0, embedding Q8_0) needs force for Q8_0,
 * F16, BF16 or F32, and not for Q4_0 or Q5_0.
 *
 * The output keeps every metadata key in order and the input's GGUF version and alignment;
 * general.file_type is set to llama.cpp's ftype of the target (Q4_K: 15 = Q4_K_M, Q5_K: 17,
 * Q6_K: 18, ...) and general.quantization_version to 2, as llama-quantize does. It is written to
 * OUT.tmp-XXXXXX beside OUT, fsync'd and renamed over OUT (util/file.h): on any failure OUT is
 * untouched and no temporary file is left.
 *
 * Ownership: nothing is kept; the input is mapped and the output buffers freed before return.
 */
#ifndef RF_FORMAT_QUANTIZE_H
#define RF_FORMAT_QUANTIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/types.h"
#include "roofline/status.h"

typedef struct rf_quantize_opts {
    rf_type type;     /* target for every weight matrix */
    rf_type emb_type; /* token embedding and a tied output head; RF_TYPE_COUNT: same as type */
    bool keep_mixed;  /* requantize only tensors wider (more bits per weight) than the target */
    bool force;       /* allow a target wider than the input (e.g. Q4_K -> F32/Q8_0 dequantizes) */
    int32_t threads;  /* 0: all cores */
    const char *source_mark; /* when set: written as the string RF_QUANTIZE_KEY_SOURCE (an input's
                              * own one replaced), e.g. the source's path, so a caller can tell a
                              * file it built from one it must not overwrite; NULL: none */
} rf_quantize_opts;

/* The metadata key of rf_quantize_opts.source_mark. */
#define RF_QUANTIZE_KEY_SOURCE "roofline.quantized_from"

typedef struct rf_quantize_report {
    int32_t n_tensors, n_quantized, n_kept, n_fallback; /* quantized: converted to a new type */
    char fallback[1024]; /* names of tensors that fell back, with the type used, cut with "..." */
    int64_t bytes_in, bytes_out; /* tensor data bytes (without header and padding) */
    int64_t n_elements;          /* of all tensors: bits per weight = bytes * 8 / n_elements */
} rf_quantize_report;

/* Defaults: type Q8_0, emb_type RF_TYPE_COUNT, no keep_mixed, no force, threads 0, no mark. */
void rf_quantize_opts_init(rf_quantize_opts *o);

/* True for the types rf_quantize_file can write: F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1,
 * Q4_K, Q5_K, Q6_K. */
bool rf_quantize_type_ok(rf_type t);

/* llama.cpp's general.file_type (llama_ftype) for a file whose matrices are t; -1 if none. */
int32_t rf_quantize_ftype(rf_type t);

/* Reads in_path, converts it per *o and writes out_path atomically. rep (may be NULL) is filled
 * on success. Errors (err names the file, tensor or option):
 *   RF_ERR_ARG: a target type rf_quantize_type_ok refuses; a target wider than the input
 *     without force;
 *   RF_ERR_IO: in_path unreadable; out_path's directory not writable, or a write failed;
 *   RF_ERR_FORMAT / RF_ERR_UNSUPPORTED: in_path fails GGUF validation, or a tensor to convert is
 *     of a type roofline cannot decode (e.g. Q2_K);
 *   RF_ERR_NOMEM.
 * On failure out_path is as it was and nothing else is left behind. */
rf_status rf_quantize_file(const char *in_path, const char *out_path, const rf_quantize_opts *o,
                           rf_quantize_report *rep, rf_error *err);

#endif
