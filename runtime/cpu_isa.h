/* The instruction-set level dqgraph's own kernels run at (internal): what
 * the CPU offers, capped by the DQG_MAX_ISA environment variable so tests
 * and `dqgraph selftest` can exercise every code path on one machine (as
 * ONEDNN_MAX_CPU_ISA does for oneDNN). */
#ifndef DQG_RUNTIME_CPU_ISA_H
#define DQG_RUNTIME_CPU_ISA_H

#include <stdbool.h>

typedef enum dqg_isa {
    DQG_ISA_SCALAR = 0,  /* plain C */
    DQG_ISA_AVX2,        /* AVX2 + FMA + F16C */
    DQG_ISA_AVX512,      /* AVX-512 F/BW/VL/DQ */
    DQG_ISA_AVX512_VNNI, /* + VNNI (vpdpbusd) */
    DQG_ISA_AVX512_BF16, /* + BF16 (vdpbf16ps) */
    DQG_ISA_AMX,         /* + AMX-INT8/BF16 tiles */
    DQG_ISA_COUNT
} dqg_isa;

/* The level own kernels use: the highest the CPU supports, capped by
 * DQG_MAX_ISA (read once per process: "scalar", "avx2", "avx512",
 * "avx512_vnni", "avx512_bf16", "amx", case-insensitive; oneDNN's names
 * AVX2, AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX
 * are accepted too). An unknown value is reported once on stderr and
 * ignored. */
dqg_isa dqg_cpu_isa(void);
/* Whether the level is available (CPU support and the cap). */
bool dqg_cpu_has(dqg_isa isa);
/* "avx512_vnni", ... */
const char *dqg_isa_name(dqg_isa isa);
/* Whether AVX-512 BF16 dot products (vdpbf16ps) beat f32 FMAs here, for
 * own kernels that could use either: the AVX512_BF16 level and an AMD CPU
 * (Zen 4 issues vdpbf16ps as fast as an FMA, twice the products); Intel
 * CPUs issue it at a quarter of the FMA's rate (measured on a Xeon of
 * family 6, model 207: 1.3 G against 5.3 G instructions per second on
 * one core). DQG_BF16_DOT=fast or slow overrides the vendor (read at each
 * call), so tests can run either copy on any CPU with the instructions. */
bool dqg_cpu_bf16_dot_fast(void);
/* Whether oneDNN's bf16 matmul and convolution beat its f32 ones here, the
 * condition for the opt-in fpmath bf16 mode to compute in bf16: AMX tiles
 * (as ONEDNN_MAX_CPU_ISA leaves them to oneDNN), or AVX512-BF16 dot
 * products issued as fast as FMAs (dqg_cpu_bf16_dot_fast). Without either
 * a bf16 matmul runs at about half the f32 rate (a quarter-rate vdpbf16ps
 * doing two products per lane), or on a reference loop where oneDNN has no
 * bf16 kernel at all. */
bool dqg_cpu_bf16_matmul_fast(void);

#endif
