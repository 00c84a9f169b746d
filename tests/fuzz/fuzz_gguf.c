/* fuzz_gguf.c: the libFuzzer target for the GGUF reader.
 *
 * Opens the input with rf_gguf_open_memory (no temp files) and, when it is accepted, does what a
 * consumer may do with any accepted file: reads every key, value, string and array element,
 * looks every key and tensor up by name, runs the typed getters, and touches the first and last
 * byte of every tensor's data. ASan catches any view that lies outside the input; a broken
 * invariant (a lookup that misses, a view outside the input, a rejection without a message) traps.
 * Deterministic, no state between runs, no exit or abort on any input.
 *
 * Built two ways: with -fsanitize=fuzzer (ROOFLINE_FUZZ=ON, clang) as the fuzzer, and with
 * replay.c as a plain program that runs the corpus (CTest fuzz_gguf_replay). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/gguf.h"
#include "fuzz_util.h"

static volatile uint8_t g_sink;

static void touch(const void *p, uint64_t n) {
    if (!n) return;
    const volatile uint8_t *b = p;
    g_sink ^= b[0];
    g_sink ^= b[n - 1];
}

static bool inside(const uint8_t *base, size_t size, const void *p, uint64_t n) {
    const uint8_t *q = p;
    return q >= base && q <= base + size && (uint64_t)(base + size - q) >= n;
}

static void exercise_getters(const rf_gguf *g, const char *key) {
    rf_error err;
    uint32_t u = 0;
    int32_t i = 0;
    float f = 0;
    bool b = false;
    rf_str s = {NULL, 0};
    const rf_gguf_kv *arr = NULL;
    rf_gguf_get_u32(g, key, true, &u, &err);
    rf_gguf_get_i32(g, key, false, &i, &err);
    rf_gguf_get_f32(g, key, true, &f, &err);
    rf_gguf_get_bool(g, key, true, &b, &err);
    if (rf_gguf_get_str(g, key, true, &s, &err) == RF_OK) touch(s.ptr, s.len);
    static const rf_gguf_type elems[] = {RF_GGUF_I32, RF_GGUF_U32, RF_GGUF_F32, RF_GGUF_STRING};
    for (size_t k = 0; k < sizeof elems / sizeof elems[0]; k++)
        if (rf_gguf_get_arr(g, key, elems[k], false, &arr, &err) == RF_OK && arr)
            REQUIRE(arr->type == RF_GGUF_ARRAY);
    g_sink ^= (uint8_t)(u ^ (uint32_t)i ^ (uint32_t)b ^ (f != f));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rf_gguf *g = NULL;
    rf_error err;
    err.msg[0] = 0;
    rf_status st = rf_gguf_open_memory(data, size, "fuzz", &g, &err);
    if (st != RF_OK) {
        REQUIRE(g == NULL);
        REQUIRE(err.code == st && memchr(err.msg, 0, sizeof err.msg) != NULL);
        REQUIRE(strncmp(err.msg, "fuzz: ", 6) == 0);
        return 0;
    }
    REQUIRE(g != NULL);
    REQUIRE(rf_gguf_data_offset(g) <= size);
    uint32_t align = rf_gguf_alignment(g);
    REQUIRE(align != 0 && (align & (align - 1)) == 0);
    char key[256];
    for (uint64_t i = 0; i < rf_gguf_n_kv(g); i++) {
        const rf_gguf_kv *kv = rf_gguf_kv_at(g, i);
        REQUIRE(kv && kv->key.len > 0 && inside(data, size, kv->key.ptr, kv->key.len));
        touch(kv->key.ptr, kv->key.len);
        switch (kv->type) {
        case RF_GGUF_STRING:
            REQUIRE(inside(data, size, kv->v.s.ptr, kv->v.s.len));
            touch(kv->v.s.ptr, kv->v.s.len);
            break;
        case RF_GGUF_ARRAY:
            REQUIRE(kv->v.arr.type < RF_GGUF_TYPE_COUNT && kv->v.arr.type != RF_GGUF_ARRAY);
            if (kv->v.arr.type == RF_GGUF_STRING) {
                for (uint64_t j = 0; j < kv->v.arr.n; j++) {
                    rf_str s = kv->v.arr.strs[j];
                    REQUIRE(inside(data, size, s.ptr, s.len));
                    touch(s.ptr, s.len);
                }
            } else if (kv->v.arr.n) {
                uint64_t last = kv->v.arr.n - 1;
                g_sink ^= (uint8_t)rf_gguf_arr_int(kv, 0);
                g_sink ^= (uint8_t)rf_gguf_arr_int(kv, last);
                g_sink ^= (uint8_t)(rf_gguf_arr_float(kv, last) > 0);
            }
            break;
        default:
            REQUIRE(kv->type < RF_GGUF_TYPE_COUNT);
            break;
        }
        /* Keys with a NUL byte cannot be looked up by C string; the rest must be found. */
        if (kv->key.len < sizeof key && !memchr(kv->key.ptr, 0, kv->key.len)) {
            memcpy(key, kv->key.ptr, kv->key.len);
            key[kv->key.len] = 0;
            REQUIRE(rf_gguf_find_kv(g, key) == kv);
            exercise_getters(g, key);
        }
    }
    uint64_t avail = size - rf_gguf_data_offset(g);
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++) {
        const rf_gguf_tensor *t = rf_gguf_tensor_at(g, i);
        REQUIRE(t && t->n_dims >= 1 && t->n_dims <= RF_GGUF_MAX_DIMS && t->nbytes > 0);
        REQUIRE(t->name.len > 0 && t->name.len < RF_GGUF_MAX_NAME);
        REQUIRE(t->offset % align == 0 && t->offset <= avail && t->nbytes <= avail - t->offset);
        REQUIRE(inside(data, size, t->data, t->nbytes));
        touch(t->data, t->nbytes);
        touch(t->name.ptr, t->name.len);
        if (!memchr(t->name.ptr, 0, t->name.len)) {
            memcpy(key, t->name.ptr, t->name.len);
            key[t->name.len] = 0;
            REQUIRE(rf_gguf_find_tensor(g, key) == t);
        }
    }
    rf_gguf_close(g);
    return 0;
}
