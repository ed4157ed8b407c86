/* The machine's arithmetic ceilings: the register-only rates of the
 * instructions dqgraph's int8 and f32 paths are built on, with no memory
 * traffic at all. f32: 512-bit FMAs (vfmadd231ps, 16 per instruction);
 * int8: 512-bit VNNI dot products (vpdpbusd, 64 u8 x s8 multiply-adds per
 * instruction). Each thread runs 16 independent accumulation chains, enough
 * to hide the instructions' latency on two ports. A kernel's share of these
 * rates is how close it is to what the CPU can do: docs/BENCHMARKS.md quotes
 * the int8 networks and the BERT layer against them. Each figure is the
 * median of 7 repetitions. */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench_util.h"

#define REPS  7
#define ITERS 20000000L /* loop trips per thread and repetition */

/* One statement per chain, written out: a loop over an array of vectors
 * would leave the chains in memory. */
#define SIXTEEN(S)                                                                                 \
    S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)
#define FMA_STEP(i)  x[i] = _mm512_fmadd_ps(x[i], b, c);
#define VNNI_STEP(i) x[i] = _mm512_dpbusd_epi32(x[i], a, w);

/* 16 chains of x = x * b + c, 16 lanes each. Returns a sum of the chains
 * so that none is dead code. */
__attribute__((target("avx512f"), noinline)) static float fma_chains(long iters)
{
    __m512 x[16];
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++)
        x[i] = _mm512_set1_ps((float)i);
    for (long k = 0; k < iters; k++) {
        SIXTEEN(FMA_STEP)
    }
    float s = 0.0f;
    for (int i = 0; i < 16; i++)
        s += _mm512_reduce_add_ps(x[i]);
    return s;
}

/* 16 chains of acc += dot4(u8 a, s8 w) per 32-bit lane. */
__attribute__((target("avx512f,avx512vnni"), noinline)) static float vnni_chains(long iters)
{
    __m512i x[16];
    const __m512i a = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-2);
    for (int i = 0; i < 16; i++)
        x[i] = _mm512_set1_epi32(i);
    for (long k = 0; k < iters; k++) {
        SIXTEEN(VNNI_STEP)
    }
    float s = 0.0f;
    for (int i = 0; i < 16; i++)
        s += (float)_mm512_reduce_add_epi32(x[i]);
    return s;
}

/* Operations per second (G) of `per_iter` operations a loop trip, on
 * `threads` threads at once: the median of REPS repetitions. */
static double rate(float (*chains)(long), double per_iter, int threads, float *sink)
{
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        float s = 0.0f;
        double t0 = bench_now_s();
#pragma omp parallel num_threads(threads) reduction(+ : s)
        s += chains(ITERS);
        t[r] = bench_now_s() - t0;
        *sink += s;
    }
    qsort(t, REPS, sizeof *t, bench_cmp_double);
    return per_iter * (double)ITERS * threads / t[REPS / 2] * 1e-9;
}

int main(void)
{
    __builtin_cpu_init();
    int n = omp_get_max_threads();
    float sink = 0.0f;
    printf("Register-only rates, 16 independent chains per thread, median of %d runs.\n\n", REPS);
    printf("| instruction | 1 thread | %d threads |\n|---|---|---|\n", n);
    if (__builtin_cpu_supports("avx512f"))
        printf("| f32 FMA, 512-bit (G multiply-adds/s) | %.1f | %.1f |\n",
               rate(fma_chains, 16 * 16, 1, &sink), rate(fma_chains, 16 * 16, n, &sink));
    else
        printf("| f32 FMA, 512-bit | no AVX-512 | |\n");
    if (__builtin_cpu_supports("avx512vnni"))
        printf("| int8 VNNI vpdpbusd, 512-bit (G u8 x s8 multiply-adds/s) | %.1f | %.1f |\n",
               rate(vnni_chains, 16 * 64, 1, &sink), rate(vnni_chains, 16 * 64, n, &sink));
    else
        printf("| int8 VNNI, 512-bit | no AVX512-VNNI | |\n");
    /* (the sums only keep the chains alive) */
    return sink == 0.5f ? 1 : 0;
}
