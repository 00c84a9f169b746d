/* gguf_write.h: building GGUF files (version 3 by default, or 2), for tests, tiny models and the
 * quantizer.
 *
 * The writer copies every key, value and tensor it is given (except tensors added with
 * rf_gguf_writer_add_tensor_ref, which are borrowed), so callers may free their buffers right
 * after each call. Tensors are laid out in the order added, each at an offset padded to
 * the alignment (general.alignment when set as u32, else 32), as llama.cpp expects; the data of
 * every tensor, the last included, is followed by zero padding to the alignment.
 *
 * It writes only files rf_gguf_open accepts: whatever the reader would reject is refused with
 * RF_ERR_ARG when added (empty, duplicate or over-long keys; general.alignment of another type
 * than u32 or not a power of two in [1, RF_GGUF_MAX_ALIGNMENT]; strings over RF_GGUF_MAX_STRING;
 * tensor dims of 0 or an element count past int64; unknown tensor types), and a failed add
 * leaves the writer unchanged. Values are encoded little-endian whatever the host.
 *
 * Ownership: rf_gguf_writer_new returns a writer the caller frees with rf_gguf_writer_free;
 * rf_gguf_writer_to_memory returns a malloc'd buffer the caller frees.
 */
#ifndef RF_FORMAT_GGUF_WRITE_H
#define RF_FORMAT_GGUF_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/gguf.h"
#include "roofline/status.h"

typedef struct rf_gguf_writer rf_gguf_writer;

rf_gguf_writer *rf_gguf_writer_new(void); /* NULL when out of memory */
void rf_gguf_writer_free(rf_gguf_writer *w);

/* 2 or 3 (default 3); the two versions share one little-endian layout. Any other value makes
 * rf_gguf_writer_to_memory / _to_file fail with RF_ERR_ARG. */
void rf_gguf_writer_set_version(rf_gguf_writer *w, uint32_t version);

/* Metadata. Keys must be non-empty and unique (RF_ERR_ARG otherwise). */
rf_status rf_gguf_writer_add_u32(rf_gguf_writer *w, const char *key, uint32_t v, rf_error *err);
rf_status rf_gguf_writer_add_i32(rf_gguf_writer *w, const char *key, int32_t v, rf_error *err);
rf_status rf_gguf_writer_add_u64(rf_gguf_writer *w, const char *key, uint64_t v, rf_error *err);
rf_status rf_gguf_writer_add_f32(rf_gguf_writer *w, const char *key, float v, rf_error *err);
rf_status rf_gguf_writer_add_bool(rf_gguf_writer *w, const char *key, bool v, rf_error *err);
rf_status rf_gguf_writer_add_str(rf_gguf_writer *w, const char *key, const char *v, rf_error *err);
/* An array of n scalar elements of type elem (little-endian values, elem's size each). */
rf_status rf_gguf_writer_add_arr(rf_gguf_writer *w, const char *key, rf_gguf_type elem,
                                 const void *data, uint64_t n, rf_error *err);
/* An array of n strings; lens may be NULL for NUL-terminated strings. */
rf_status rf_gguf_writer_add_arr_str(rf_gguf_writer *w, const char *key, const char *const *v,
                                     const uint64_t *lens, uint64_t n, rf_error *err);
/* Copies the metadata entry kv (any type) from a file being read; used by the quantizer. */
rf_status rf_gguf_writer_copy_kv(rf_gguf_writer *w, const rf_gguf_kv *kv, rf_error *err);

/* A tensor of n_dims dims (ne[0] contiguous) of type t; nbytes must equal the type's size for
 * those dims. Names must be unique and shorter than 64 bytes. */
rf_status rf_gguf_writer_add_tensor(rf_gguf_writer *w, const char *name, uint32_t n_dims,
                                    const uint64_t *ne, uint32_t type, const void *data,
                                    uint64_t nbytes, rf_error *err);

/* As rf_gguf_writer_add_tensor, but data is borrowed, not copied: it must stay valid and
 * unchanged until the writer is written or freed (the quantizer passes tensors of the mapped
 * input file and its own output buffers, so a model is never held twice). */
rf_status rf_gguf_writer_add_tensor_ref(rf_gguf_writer *w, const char *name, uint32_t n_dims,
                                        const uint64_t *ne, uint32_t type, const void *data,
                                        uint64_t nbytes, rf_error *err);

/* Serialises everything. *buf is malloc'd (caller frees). */
rf_status rf_gguf_writer_to_memory(const rf_gguf_writer *w, void **buf, size_t *size,
                                   rf_error *err);
/* Writes the file; on failure no partial regular file is left at path (it is removed). */
rf_status rf_gguf_writer_to_file(const rf_gguf_writer *w, const char *path, rf_error *err);
/* Streams the file to the open descriptor fd from its current position, tensor by tensor (only
 * the header is buffered); name is used in messages. The caller owns fd (and removes what was
 * written on failure). */
rf_status rf_gguf_writer_to_fd(const rf_gguf_writer *w, int fd, const char *name, rf_error *err);

#endif
