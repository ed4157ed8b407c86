/* Assertions shared by the Criterion tests. */
#ifndef DQG_TEST_COMMON_H
#define DQG_TEST_COMMON_H

#include <criterion/criterion.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"

/* Asserts that `st` is `expected` and that dqg_last_error() contains every
 * one of the NULL-terminated key phrases. */
#define expect_error(st, expected, ...)                                                            \
    do {                                                                                           \
        dqg_status st_ = (st);                                                                     \
        cr_assert_eq(st_, (expected), "status %s, expected %s; message: %s", dqg_status_name(st_), \
                     dqg_status_name(expected), dqg_last_error());                                 \
        const char *keys_[] = {__VA_ARGS__, NULL};                                                 \
        for (int k_ = 0; keys_[k_]; k_++)                                                          \
            cr_assert(strstr(dqg_last_error(), keys_[k_]) != NULL, "message \"%s\" lacks \"%s\"",  \
                      dqg_last_error(), keys_[k_]);                                                \
    } while (0)

/* Finalizes g and asserts success. */
#define finalize_ok(g)                                                                             \
    do {                                                                                           \
        dqg_status fst_ = dqg_graph_finalize(g);                                                   \
        cr_assert_eq(fst_, DQG_OK, "finalize: %s: %s", dqg_status_name(fst_), dqg_last_error());   \
    } while (0)

/* Runs the reference interpreter with one input and one output buffer bound by id. */
static inline dqg_status run_ref_1(dqg_graph *g, dqg_tensor_id in, void *in_data, size_t in_size,
                                   dqg_tensor_id out, void *out_data, size_t out_size)
{
    dqg_buffer i = {.id = in, .data = in_data, .size = in_size};
    dqg_buffer o = {.id = out, .data = out_data, .size = out_size};
    return dqg_reference_run(g, &i, in == DQG_NONE ? 0 : 1, &o, 1);
}

/* Whether dqgraph fuses int8 layers on this CPU (within ONEDNN_MAX_CPU_ISA):
 * oneDNN's u8 x s8 kernels are exact only with VNNI or AMX, so without them
 * dqgraph refuses the int8 kernel, giving TEST_NO_INT8_REASON, and the layer
 * runs exactly in f32. */
static inline bool test_int8_fusion(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
           (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
}
#define TEST_NO_INT8_REASON "has no VNNI or AMX"

/* Whether oneDNN runs at AVX2-VNNI (a CPU with AVX-VNNI and no AVX-512, or
 * ONEDNN_MAX_CPU_ISA=AVX2_VNNI), whose depthwise int8 kernel dqgraph
 * refuses with a binary post-op (oneDNN 2.6 defect I). */
static inline bool test_avx2_vnni(void)
{
    return dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx2_vnni;
}

/* Whether a line of c's explain log holds `text`. */
static inline bool test_explain_mentions(const dqg_compiled *c, const char *text)
{
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        if (strstr(dqg_compiled_explain(c, i), text))
            return true;
    return false;
}

/* A seeded xorshift32 stream for randomized tests (one per test file). */
static uint32_t test_rng = 1;
static inline uint32_t test_rnd(void)
{
    test_rng ^= test_rng << 13;
    test_rng ^= test_rng >> 17;
    test_rng ^= test_rng << 5;
    return test_rng;
}
/* Uniform in [lo, hi] (integers) and in [lo, hi) (floats), from test_rnd. */
static inline int64_t test_rin(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(test_rnd() % (uint32_t)(hi - lo + 1));
}
static inline float test_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)(test_rnd() >> 8) / (float)(1u << 24);
}

/* The seeds a randomized suite runs: *first and *count as given, unless
 * the environment variable `env` says FIRST:COUNT (a longer search). */
static inline void test_seed_range(const char *env, uint32_t *first, uint32_t *count)
{
    const char *v = getenv(env);
    if (v)
        sscanf(v, "%u:%u", first, count);
}

/* An f32 constant of the given shape (name generated). */
static inline dqg_tensor_id test_const_f32(dqg_graph *g, int rank, const int64_t *dims,
                                           const float *values)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return dqg_constant(g, NULL, DQG_F32, rank, dims, values, (size_t)n * sizeof(float));
}

/* A scalar f32 constant, and a scalar 8-bit one of type t (u8 or s8). */
static inline dqg_tensor_id test_scalar_f32(dqg_graph *g, float v)
{
    int64_t one = 1;
    return dqg_constant(g, NULL, DQG_F32, 0, &one, &v, sizeof v);
}
static inline dqg_tensor_id test_scalar_8bit(dqg_graph *g, dqg_dtype t, int v)
{
    int64_t one = 1;
    uint8_t b = (uint8_t)v;
    return dqg_constant(g, NULL, t, 0, &one, &b, 1);
}

/* The largest difference, in units, between two u8 or s8 (`s8`) arrays. */
static inline int test_max_diff_8bit(const void *a, const void *b, size_t n, bool s8)
{
    const uint8_t *x = a, *y = b;
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int u = s8 ? (int8_t)x[i] : x[i], v = s8 ? (int8_t)y[i] : y[i];
        worst = abs(u - v) > worst ? abs(u - v) : worst;
    }
    return worst;
}

#endif
