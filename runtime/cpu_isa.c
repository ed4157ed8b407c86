/* CPU feature detection for dqgraph's own kernels, with the DQG_MAX_ISA cap. */
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "runtime/cpu_isa.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static dqg_isa level;

static const char *const names[DQG_ISA_COUNT] = {"scalar",      "avx2",        "avx512",
                                                 "avx512_vnni", "avx512_bf16", "amx"};
/* oneDNN's ONEDNN_MAX_CPU_ISA spellings of the same levels. */
static const char *const onednn_names[DQG_ISA_COUNT] = {
    "none", "avx2", "avx512_core", "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx"};

static dqg_isa detect(void)
{
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
          __builtin_cpu_supports("f16c")))
        return DQG_ISA_SCALAR;
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")))
        return DQG_ISA_AVX2;
    if (!__builtin_cpu_supports("avx512vnni"))
        return DQG_ISA_AVX512;
    if (!__builtin_cpu_supports("avx512bf16"))
        return DQG_ISA_AVX512_VNNI;
#if defined(__GNUC__) && __GNUC__ >= 11
    if (__builtin_cpu_supports("amx-int8") && __builtin_cpu_supports("amx-bf16"))
        return DQG_ISA_AMX;
#endif
    return DQG_ISA_AVX512_BF16;
}

static void init(void)
{
    level = detect();
    const char *v = getenv("DQG_MAX_ISA");
    if (!v || !*v)
        return;
    for (int i = 0; i < DQG_ISA_COUNT; i++)
        if (strcasecmp(v, names[i]) == 0 || strcasecmp(v, onednn_names[i]) == 0) {
            if ((dqg_isa)i < level)
                level = (dqg_isa)i;
            return;
        }
    fprintf(stderr,
            "dqgraph: DQG_MAX_ISA='%s' is not one of scalar, avx2, avx512, avx512_vnni, "
            "avx512_bf16, amx; ignored\n",
            v);
}

dqg_isa dqg_cpu_isa(void)
{
    pthread_once(&once, init);
    return level;
}

bool dqg_cpu_has(dqg_isa isa)
{
    return isa <= dqg_cpu_isa();
}

const char *dqg_isa_name(dqg_isa isa)
{
    return isa >= 0 && isa < DQG_ISA_COUNT ? names[isa] : "?";
}

bool dqg_cpu_bf16_dot_fast(void)
{
    if (!dqg_cpu_has(DQG_ISA_AVX512_BF16))
        return false;
    const char *v = getenv("DQG_BF16_DOT");
    if (v && strcasecmp(v, "fast") == 0)
        return true;
    if (v && strcasecmp(v, "slow") == 0)
        return false;
    return __builtin_cpu_is("amd");
}

bool dqg_cpu_bf16_matmul_fast(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if ((isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx)
        return true;
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16 &&
           dqg_cpu_bf16_dot_fast();
}
