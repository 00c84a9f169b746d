/* cpu.h: facts about the machine the process runs on: instruction-set level (for run-time kernel
 * dispatch) and the number of physical cores (the default thread count). No state. */
#ifndef RF_UTIL_CPU_H
#define RF_UTIL_CPU_H

#include <stddef.h>

typedef enum rf_isa {
    RF_ISA_SCALAR = 0, /* portable C */
    RF_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    RF_ISA_AVX512 = 2, /* AVX-512 F/BW/VL (+VNNI when present) on top of AVX2 */
    RF_ISA_NEON = 3,   /* AArch64 Advanced SIMD (every AArch64 CPU has it) */
} rf_isa;

typedef struct rf_cpu_features {
    int avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni, avxvnni;
    int avx512bf16; /* VDPBF16PS and friends (CPUID 7.1 EAX bit 5), with the ZMM state enabled */
} rf_cpu_features;

rf_cpu_features rf_cpu_detect(void);
/* The best level this CPU supports. */
rf_isa rf_isa_best(void);
const char *rf_isa_name(rf_isa isa);
/* Parses "scalar", "avx2", "avx512", "neon"; -1 when unknown. */
int rf_isa_parse(const char *s);
/* Physical cores available to this process (>= 1). */
int rf_cpu_physical_cores(void);
/* The CPU's model name (/proc/cpuinfo "model name", or the ISA level when unknown) into out. */
void rf_cpu_model_name(char *out, size_t cap);

#endif
