/* types.c: the format table. Block sizes and byte counts are the GGUF/ggml on-disk facts. */
#include "kernels/types.h"

#include <strings.h>

static const rf_type_info g_unknown = {NULL, 0, 0};

static const rf_type_info g_types[RF_TYPE_COUNT] = {
    [RF_TYPE_F32] = {"F32", 1, 4},       [RF_TYPE_F16] = {"F16", 1, 2},
    [RF_TYPE_Q4_0] = {"Q4_0", 32, 18},   [RF_TYPE_Q4_1] = {"Q4_1", 32, 20},
    [RF_TYPE_Q5_0] = {"Q5_0", 32, 22},   [RF_TYPE_Q5_1] = {"Q5_1", 32, 24},
    [RF_TYPE_Q8_0] = {"Q8_0", 32, 34},   [RF_TYPE_Q8_1] = {"Q8_1", 32, 36},
    [RF_TYPE_Q2_K] = {"Q2_K", 256, 84},  [RF_TYPE_Q3_K] = {"Q3_K", 256, 110},
    [RF_TYPE_Q4_K] = {"Q4_K", 256, 144}, [RF_TYPE_Q5_K] = {"Q5_K", 256, 176},
    [RF_TYPE_Q6_K] = {"Q6_K", 256, 210}, [RF_TYPE_Q8_K] = {"Q8_K", 256, 292},
    [RF_TYPE_BF16] = {"BF16", 1, 2},
};

const rf_type_info *rf_type_get(uint32_t t) {
    if (t >= RF_TYPE_COUNT || !g_types[t].name) return &g_unknown;
    return &g_types[t];
}

size_t rf_type_row_bytes(uint32_t t, uint64_t n) {
    const rf_type_info *ti = rf_type_get(t);
    if (!ti->name || n % ti->block) return 0;
    uint64_t blocks = n / ti->block;
    if (blocks > SIZE_MAX / ti->bytes) return 0; /* would wrap */
    return (size_t)blocks * ti->bytes;
}

rf_type rf_type_parse(const char *name) {
    for (uint32_t t = 0; name && t < RF_TYPE_COUNT; t++)
        if (g_types[t].name && strcasecmp(g_types[t].name, name) == 0) return (rf_type)t;
    return RF_TYPE_COUNT;
}
