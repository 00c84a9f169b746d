/* cpu.c: CPUID feature detection and core counting. */
#include "util/cpu.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

rf_cpu_features rf_cpu_detect(void) {
    rf_cpu_features f = {0};
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    int osxsave = (c >> 27) & 1;
    int avx = (c >> 28) & 1;
    f.fma = (c >> 12) & 1;
    f.f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return f;
    unsigned long long xcr0 = xgetbv0();
    int ymm_ok = (xcr0 & 6) == 6;
    int zmm_ok = (xcr0 & 0xe6) == 0xe6;
    if (!ymm_ok) return f;
    if (__get_cpuid_max(0, NULL) < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = (b >> 5) & 1;
    if (zmm_ok) {
        f.avx512f = (b >> 16) & 1;
        f.avx512bw = (b >> 30) & 1;
        f.avx512vl = (b >> 31) & 1;
        f.avx512vnni = (c >> 11) & 1;
    }
    const unsigned max_sub = a; /* leaf 7 subleaf 0: EAX is the highest subleaf */
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        f.avxvnni = (a >> 4) & 1;
        if (zmm_ok) f.avx512bf16 = (a >> 5) & 1;
    }
    return f;
}
#else
rf_cpu_features rf_cpu_detect(void) {
    rf_cpu_features f = {0};
    return f;
}
#endif

rf_isa rf_isa_best(void) {
#if defined(__aarch64__)
    return RF_ISA_NEON;
#endif
    rf_cpu_features f = rf_cpu_detect();
    if (!(f.avx2 && f.fma && f.f16c)) return RF_ISA_SCALAR;
    if (f.avx512f && f.avx512bw && f.avx512vl) return RF_ISA_AVX512;
    return RF_ISA_AVX2;
}

const char *rf_isa_name(rf_isa isa) {
    switch (isa) {
    case RF_ISA_SCALAR:
        return "scalar";
    case RF_ISA_AVX2:
        return "avx2";
    case RF_ISA_AVX512:
        return "avx512";
    case RF_ISA_NEON:
        return "neon";
    }
    return "unknown";
}

int rf_isa_parse(const char *s) {
    if (!strcmp(s, "scalar")) return RF_ISA_SCALAR;
    if (!strcmp(s, "avx2")) return RF_ISA_AVX2;
    if (!strcmp(s, "avx512")) return RF_ISA_AVX512;
    if (!strcmp(s, "neon")) return RF_ISA_NEON;
    return -1;
}

/* Counts distinct (package, core) pairs among the CPUs this process may run on. */
int rf_cpu_physical_cores(void) {
    cpu_set_t set;
    int logical = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (logical < 1) logical = 1;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return logical;
    int allowed = CPU_COUNT(&set);
    enum { MAXC = 1024 };
    static const int none = -1;
    long keys[MAXC];
    int n = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && n < MAXC; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        char path[128];
        int core = none, pkg = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        FILE *f = fopen(path, "r");
        if (!f) return allowed > 0 ? allowed : logical;
        if (fscanf(f, "%d", &core) != 1) core = none;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
                 cpu);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%d", &pkg) != 1) pkg = 0;
            fclose(f);
        }
        if (core == none) return allowed > 0 ? allowed : logical;
        long key = (long)pkg * 65536 + core;
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= keys[i] == key;
        if (!seen) keys[n++] = key;
    }
    return n > 0 ? n : (allowed > 0 ? allowed : logical);
}

void rf_cpu_model_name(char *out, size_t cap) {
    if (!cap) return;
    snprintf(out, cap, "%s", rf_isa_name(rf_isa_best()));
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strcspn(v, "\n");
        snprintf(out, cap, "%.*s", (int)n, v);
        break;
    }
    fclose(f);
}
