/* fuzz_safetensors.c: the libFuzzer target for the safetensors header reader
 * (src/format/safetensors.c), over memory (rf_st_open_memory: no temp files).
 *
 * A refused input must give RF_ERR_FORMAT with a message naming the file. An accepted one must
 * keep every promise of safetensors.h: the data section is what follows the header, every tensor
 * lies inside it with end - begin equal to its dtype x shape bytes, the tensors sorted by offset
 * tile it exactly, names are terminated and found by lookup, metadata strings are terminated. */
#include <stdlib.h>
#include <string.h>

#include "format/safetensors.h"
#include "fuzz_util.h"

static int by_begin(const void *a, const void *b) {
    const rf_st_tensor *x = *(const rf_st_tensor *const *)a, *y = *(const rf_st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rf_st *f = NULL;
    rf_error err = {0};
    rf_status st = rf_st_open_memory(data, size, "fuzz.safetensors", &f, &err);
    if (st) {
        REQUIRE(f == NULL && st == RF_ERR_FORMAT);
        REQUIRE(fuzz_msg_ok(err.msg, sizeof err.msg, "fuzz.safetensors"));
        return 0;
    }
    REQUIRE(f != NULL && rf_st_file_size(f) == size);
    REQUIRE(rf_st_header_size(f) <= size - 8 &&
            rf_st_data_size(f) == size - 8 - rf_st_header_size(f));
    size_t n = rf_st_n_tensors(f);
    const rf_st_tensor **sorted = calloc(n ? n : 1, sizeof *sorted);
    REQUIRE(sorted != NULL);
    for (size_t i = 0; i < n; i++) {
        const rf_st_tensor *t = rf_st_tensor_at(f, i);
        REQUIRE(t && t->name && strlen(t->name) == t->name_len);
        REQUIRE(t->dtype < RF_ST_DTYPE_COUNT && t->n_dims <= RF_ST_MAX_DIMS);
        REQUIRE(t->begin <= t->end && t->end <= rf_st_data_size(f));
        REQUIRE(rf_st_tensor_bytes(t) == t->end - t->begin);
        uint64_t nel = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) nel *= t->shape[d];
        REQUIRE(nel == t->nelements);
        REQUIRE(rf_st_find(f, t->name) != NULL);
        REQUIRE(strcmp(rf_st_dtype_name(t->dtype), "?") != 0 && rf_st_dtype_bits(t->dtype) > 0);
        sorted[i] = t;
    }
    qsort(sorted, n, sizeof *sorted, by_begin);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        REQUIRE(sorted[i]->begin == at);
        at = sorted[i]->end;
    }
    REQUIRE(at == rf_st_data_size(f));
    free(sorted);
    for (size_t i = 0; i < rf_st_n_metadata(f); i++) {
        const char *k = NULL, *v = NULL;
        rf_st_metadata_at(f, i, &k, &v);
        REQUIRE(k && v);
        REQUIRE(rf_st_metadata_get(f, k) != NULL);
    }
    rf_st_close(f);
    return 0;
}
