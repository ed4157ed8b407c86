/* Force-included (-include) into the library's sources by cmake/fuzz.cmake
 * only, so that dqgraph builds with Clang 14 without touching its sources:
 * Clang 14's __builtin_cpu_supports does not know "f16c" (GCC's does), which
 * runtime/dq_kernel.c asks for, nor "avx512vnni" and "avx512bf16", which
 * runtime/cpu_isa.c asks for. The other feature strings dqgraph uses go to
 * the builtin; those three are read from CPUID (leaf 1 ECX bit 29; leaf 7
 * ECX bit 11; leaf 7 subleaf 1 EAX bit 5). */
#ifndef DQG_FUZZ_CLANG_COMPAT_H
#define DQG_FUZZ_CLANG_COMPAT_H

#if defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

static inline int dqg_fuzz_cpu_supports(const char *f)
{
    if (__builtin_strcmp(f, "f16c") == 0) {
        unsigned a, b, c, d;
        return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
    }
    if (__builtin_strcmp(f, "avx512vnni") == 0) {
        unsigned a, b, c, d;
        return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 11));
    }
    if (__builtin_strcmp(f, "avx512bf16") == 0) {
        unsigned a, b, c, d;
        return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
    }
    if (__builtin_strcmp(f, "avx2") == 0)
        return __builtin_cpu_supports("avx2");
    if (__builtin_strcmp(f, "avx512f") == 0)
        return __builtin_cpu_supports("avx512f");
    if (__builtin_strcmp(f, "avx512bw") == 0)
        return __builtin_cpu_supports("avx512bw");
    if (__builtin_strcmp(f, "avx512vl") == 0)
        return __builtin_cpu_supports("avx512vl");
    if (__builtin_strcmp(f, "avx512dq") == 0)
        return __builtin_cpu_supports("avx512dq");
    if (__builtin_strcmp(f, "fma") == 0)
        return __builtin_cpu_supports("fma");
    if (__builtin_strcmp(f, "avx512vbmi") == 0)
        return __builtin_cpu_supports("avx512vbmi");
    __builtin_trap(); /* a feature this shim does not know yet: add it */
}

#define __builtin_cpu_supports(feature) dqg_fuzz_cpu_supports(feature)
#endif

#endif
