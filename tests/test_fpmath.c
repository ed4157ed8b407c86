/* fpmath: strict keeps f32 math; the opt-in bf16 mode runs f32 MatMuls on
 * oneDNN's bf16 kernels (the operands rounded to bf16, accumulation and
 * epilogue in f32), within the bound that rounding implies: each operand
 * is off by at most 2^-9 of itself, so a product by at most about 2^-8, and
 * |y - reference| <= 2^-8 * sum_k |a_k * b_k| (plus f32 accumulation). */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>

#include "test_common.h"

static uint32_t rs = 77;
static float rf(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return (float)(rs % 20001) / 10000.0f - 1.0f;
}

static bool cpu_has_bf16(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

/* y = relu(a @ b + bias) with a [M, K] an input and b [K, N] a constant or
 * a second input. */
static void check(int64_t M, int64_t K, int64_t N, bool b_runtime, dqg_fpmath_mode mode)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t ad[] = {M, K}, bd[] = {K, N};
    float *a = malloc((size_t)(M * K) * sizeof *a), *b = malloc((size_t)(K * N) * sizeof *b);
    float *bias = malloc((size_t)N * sizeof *bias);
    for (int64_t i = 0; i < M * K; i++)
        a[i] = rf();
    for (int64_t i = 0; i < K * N; i++)
        b[i] = rf();
    for (int64_t i = 0; i < N; i++)
        bias[i] = rf();
    dqg_tensor_id ta = dqg_input(g, "a", DQG_F32, 2, ad);
    dqg_tensor_id tb =
        b_runtime ? dqg_input(g, "b", DQG_F32, 2, bd)
                  : dqg_constant(g, "b", DQG_F32, 2, bd, b, (size_t)(K * N) * sizeof(float));
    dqg_tensor_id y = dqg_matmul(g, "mm", ta, tb, NULL);
    y = dqg_relu(g, NULL,
                 dqg_add(g, NULL, y,
                         dqg_constant(g, "bias", DQG_F32, 1, &N, bias, (size_t)N * sizeof(float))));
    dqg_output(g, y, "y");
    finalize_ok(g);
    dqg_compile_options o = dqg_compile_options_default();
    o.fpmath = mode;
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    const char *info = dqg_compiled_partition_info(c, 0);
    if (mode == DQG_FPMATH_BF16 && cpu_has_bf16())
        cr_assert(strstr(info, "bf16"), "bf16 mode without a bf16 kernel: %s", info);
    if (mode == DQG_FPMATH_STRICT)
        cr_assert(!strstr(info, "bf16"), "strict mode on a bf16 kernel: %s", info);
    float *out = malloc((size_t)(M * N) * sizeof *out);
    dqg_buffer in[2] = {{.name = "a", .data = a, .size = (size_t)(M * K) * sizeof(float)},
                        {.name = "b", .data = b, .size = (size_t)(K * N) * sizeof(float)}};
    dqg_buffer ob = {.name = "y", .data = out, .size = (size_t)(M * N) * sizeof(float)};
    cr_assert_eq(dqg_execute(c, in, b_runtime ? 2 : 1, &ob, 1), DQG_OK, "%s", dqg_last_error());
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double ref = bias[n], mag = fabs(bias[n]);
            for (int64_t k = 0; k < K; k++) {
                ref += (double)a[m * K + k] * b[k * N + n];
                mag += fabs((double)a[m * K + k] * b[k * N + n]);
            }
            ref = ref > 0 ? ref : 0;
            double bound = mode == DQG_FPMATH_BF16 ? ldexp(mag, -8) : 1e-6 * mag;
            cr_assert(fabs(out[m * N + n] - ref) <= bound + 1e-6,
                      "[%lld,%lld] %g vs %g (bound %g) %s", (long long)m, (long long)n,
                      out[m * N + n], ref, bound, info);
        }
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    free(a);
    free(b);
    free(bias);
    free(out);
}

Test(fpmath, bf16_matmul_with_constant_weights)
{
    check(1, 256, 64, false, DQG_FPMATH_BF16);
    check(33, 100, 17, false, DQG_FPMATH_BF16);
}

Test(fpmath, bf16_matmul_of_two_runtime_operands)
{
    check(16, 128, 48, true, DQG_FPMATH_BF16);
}

Test(fpmath, strict_stays_f32)
{
    check(8, 64, 32, false, DQG_FPMATH_STRICT);
    check(8, 64, 32, true, DQG_FPMATH_STRICT);
}
