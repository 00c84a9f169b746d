/* kvcap.c: KV bytes per token, per request and per decode step, and the capacity of a budget. */
#include "analysis/kvcap.h"

#include <math.h>
#include <string.h>

bool rf_kv_dtype_parse(const char *s, rf_kv_dtype *out) {
    static const struct {
        const char *name;
        rf_kv_dtype t;
    } names[] = {
        {"f16", RF_KV_F16},      {"fp16", RF_KV_F16},      {"float16", RF_KV_F16},
        {"bf16", RF_KV_BF16},    {"bfloat16", RF_KV_BF16}, {"f32", RF_KV_F32},
        {"fp32", RF_KV_F32},     {"float32", RF_KV_F32},   {"fp8", RF_KV_FP8},
        {"fp8_e4m3", RF_KV_FP8}, {"fp8_e5m2", RF_KV_FP8},  {"q8_0", RF_KV_Q8_0},
        {"q4_0", RF_KV_Q4_0},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].t;
            return true;
        }
    return false;
}

const char *rf_kv_dtype_name(rf_kv_dtype t) {
    static const char *const names[RF_KV_DTYPE_COUNT] = {"f16", "bf16", "f32",
                                                         "fp8", "q8_0", "q4_0"};
    return (unsigned)t < RF_KV_DTYPE_COUNT ? names[t] : "?";
}

uint64_t rf_kv_value_bytes(rf_kv_dtype t, uint64_t n) {
    switch (t) {
    case RF_KV_F32:
        return 4 * n;
    case RF_KV_FP8:
        return n;
    case RF_KV_Q8_0:
        return (n + 31) / 32 * 34;
    case RF_KV_Q4_0:
        return (n + 31) / 32 * 18;
    case RF_KV_F16:
    case RF_KV_BF16:
    default:
        return 2 * n;
    }
}

/* K and V are separate rows (llama.cpp quantizes each in its own blocks). */
uint64_t rf_kv_layer_row(const rf_kv_geom *g, int32_t il, rf_kv_dtype t) {
    const rf_kv_layer *l = &g->layer[il];
    uint64_t h = l->n_kv_head;
    return rf_kv_value_bytes(t, h * l->head_dim_k) + rf_kv_value_bytes(t, h * l->head_dim_v);
}

static uint64_t positions(const rf_kv_layer *l, int64_t len) {
    uint64_t p = len > 0 ? (uint64_t)len : 0;
    if (l->window > 0 && p > l->window) p = l->window;
    return p;
}

uint64_t rf_kv_stored_per_token(const rf_kv_geom *g, rf_kv_dtype t) {
    uint64_t sum = 0;
    for (int32_t il = 0; il < g->n_layer; il++)
        if (g->layer[il].has_cache) sum += rf_kv_layer_row(g, il, t);
    return sum;
}

uint64_t rf_kv_request_bytes(const rf_kv_geom *g, int64_t len, rf_kv_dtype t) {
    uint64_t sum = 0;
    for (int32_t il = 0; il < g->n_layer; il++)
        if (g->layer[il].has_cache)
            sum += positions(&g->layer[il], len) * rf_kv_layer_row(g, il, t);
    return sum;
}

uint64_t rf_kv_read_bytes(const rf_kv_geom *g, int64_t ctx, rf_kv_dtype t) {
    uint64_t sum = 0;
    for (int32_t il = 0; il < g->n_layer; il++)
        sum += positions(&g->layer[il], ctx) * rf_kv_layer_row(g, il, t);
    return sum;
}

void rf_kv_layer_counts(const rf_kv_geom *g, int32_t *global, int32_t *sliding, int32_t *shared) {
    *global = *sliding = *shared = 0;
    for (int32_t il = 0; il < g->n_layer; il++) {
        const rf_kv_layer *l = &g->layer[il];
        if (!l->n_kv_head) continue;
        if (l->window)
            (*sliding)++;
        else
            (*global)++;
        if (!l->has_cache) (*shared)++;
    }
}

uint32_t rf_kv_max_window(const rf_kv_geom *g) {
    uint32_t w = 0;
    for (int32_t il = 0; il < g->n_layer; il++)
        if (g->layer[il].window > w) w = g->layer[il].window;
    return w;
}

rf_status rf_kv_capacity_compute(const rf_kv_geom *g, double mem_bytes, double util,
                                 uint64_t weights, int64_t len, rf_kv_dtype t, rf_kv_capacity *out,
                                 rf_error *err) {
    memset(out, 0, sizeof *out);
    if (!(util > 0 && util <= 1))
        return rf_error_set(err, RF_ERR_ARG, "memory utilisation %g is not in (0, 1]", util);
    if (!(isfinite(mem_bytes) && mem_bytes > 0 && mem_bytes < 0x1p62))
        return rf_error_set(err, RF_ERR_ARG, "memory size %g bytes is not in (0, 2^62)", mem_bytes);
    if (len < 1 || len > RF_KV_MAX_CTX)
        return rf_error_set(err, RF_ERR_ARG, "request length %lld is not in [1, %lld]",
                            (long long)len, (long long)RF_KV_MAX_CTX);
    if (!g || g->n_layer < 1 || g->n_layer > RF_KV_MAX_LAYERS)
        return rf_error_set(err, RF_ERR_ARG, "no KV cache geometry (layer count unknown)");
    uint64_t per_token = rf_kv_stored_per_token(g, t);
    if (per_token == 0)
        return rf_error_set(err, RF_ERR_ARG, "the model has no layer that stores a KV cache");
    out->mem_bytes = (uint64_t)floor(mem_bytes * util);
    out->weights = weights;
    out->per_token = per_token;
    out->len = len;
    out->per_request = rf_kv_request_bytes(g, len, t);
    if (weights >= out->mem_bytes) {
        out->budget =
            -(int64_t)(weights - out->mem_bytes > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX
                                                                      : weights - out->mem_bytes);
        return RF_OK;
    }
    uint64_t budget = out->mem_bytes - weights;
    out->budget = (int64_t)budget;
    out->tokens = budget / per_token;
    out->concurrency = (double)budget / (double)out->per_request;
    /* the longest single request: request bytes grow with the length (binary search) */
    int64_t lo = 0, hi = RF_KV_MAX_CTX;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (rf_kv_request_bytes(g, mid, t) <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    out->max_len_one_seq = (uint64_t)lo;
    return RF_OK;
}
