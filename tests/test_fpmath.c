/* fpmath: strict keeps f32 math; the opt-in bf16 mode runs f32 MatMuls on
 * oneDNN's bf16 kernels (the operands rounded to bf16, accumulation and
 * epilogue in f32), within the bound that rounding implies: each operand
 * is off by at most 2^-9 of itself, so a product by at most about 2^-8, and
 * |y - reference| <= 2^-8 * sum_k |a_k * b_k| (plus f32 accumulation).
 * The mode computes in bf16 only where that is faster than f32 (AMX, or
 * AVX512-BF16 dot products as fast as FMAs: DQG_BF16_DOT=fast says so on
 * any CPU with the instructions); elsewhere it is strict, exact. */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/cpu_isa.h"
#include "test_common.h"

static uint32_t rs = 77;
static float rf(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 17;
    rs ^= rs << 5;
    return (float)(rs % 20001) / 10000.0f - 1.0f;
}

static bool onednn_has(dnnl_cpu_isa_t level)
{
    return (dnnl_get_effective_cpu_isa() & level) == level;
}

/* Whether the bf16 mode computes in bf16 here: AMX, or AVX512-BF16 (for
 * oneDNN and dqgraph's own level) with DQG_BF16_DOT=fast or an AMD CPU. */
static bool bf16_math_expected(void)
{
    if (onednn_has(dnnl_cpu_isa_avx512_core_amx))
        return true;
    const char *v = getenv("DQG_BF16_DOT");
    bool fast = v ? strcmp(v, "fast") == 0 : __builtin_cpu_is("amd");
    return onednn_has(dnnl_cpu_isa_avx512_core_bf16) && dqg_cpu_has(DQG_ISA_AVX512_BF16) && fast;
}

/* out [M, N] against a @ b (+ bias, then relu, when bias is given) in
 * double: within the bf16 bound or, for f32 math, 1e-6 of the products'
 * magnitudes. */
static void expect_product(const float *out, const float *a, const float *b, const float *bias,
                           int64_t M, int64_t K, int64_t N, bool bf16, const char *info)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double ref = bias ? bias[n] : 0.0, mag = fabs(ref);
            for (int64_t k = 0; k < K; k++) {
                ref += (double)a[m * K + k] * b[k * N + n];
                mag += fabs((double)a[m * K + k] * b[k * N + n]);
            }
            ref = bias && ref < 0 ? 0 : ref;
            double bound = bf16 ? ldexp(mag, -8) : 1e-6 * mag;
            cr_assert(fabs(out[m * N + n] - ref) <= bound + 1e-6,
                      "[%lld,%lld] %g vs %g (bound %g) %s", (long long)m, (long long)n,
                      out[m * N + n], ref, bound, info);
        }
}

/* g with output y ("y"), finalized and compiled under `mode`. */
static dqg_compiled *finish_and_compile(dqg_graph *g, dqg_tensor_id y, dqg_fpmath_mode mode)
{
    dqg_output(g, y, "y");
    finalize_ok(g);
    dqg_compile_options o = dqg_compile_options_default();
    o.fpmath = mode;
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    return c;
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
    dqg_compiled *c = finish_and_compile(g, y, mode);
    const char *info = dqg_compiled_partition_info(c, 0);
    bool bf16 = mode == DQG_FPMATH_BF16 && bf16_math_expected();
    if (bf16)
        cr_assert(strstr(info, "bf16"), "bf16 mode without a bf16 kernel: %s", info);
    else
        cr_assert(!strstr(info, "bf16"), "f32 math on a bf16 kernel: %s", info);
    /* The explain log says when the bf16 mode kept f32 math. */
    bool said = false;
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        said |= strstr(dqg_compiled_explain(c, i), "fpmath bf16: f32 math kept") != NULL;
    cr_assert_eq(said, mode == DQG_FPMATH_BF16 && !bf16, "explain log: f32 kept %d, bf16 %d", said,
                 bf16);
    float *out = malloc((size_t)(M * N) * sizeof *out);
    dqg_buffer in[2] = {{.name = "a", .data = a, .size = (size_t)(M * K) * sizeof(float)},
                        {.name = "b", .data = b, .size = (size_t)(K * N) * sizeof(float)}};
    dqg_buffer ob = {.name = "y", .data = out, .size = (size_t)(M * N) * sizeof(float)};
    cr_assert_eq(dqg_execute(c, in, b_runtime ? 2 : 1, &ob, 1), DQG_OK, "%s", dqg_last_error());
    expect_product(out, a, b, bias, M, K, N, bf16, info);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    free(a);
    free(b);
    free(bias);
    free(out);
}

Test(fpmath, bf16_matmul_with_constant_weights)
{
    setenv("DQG_BF16_DOT", "fast", 1); /* bf16 on any CPU with AVX512-BF16 */
    check(1, 256, 64, false, DQG_FPMATH_BF16);
    check(33, 100, 17, false, DQG_FPMATH_BF16);
}

Test(fpmath, bf16_matmul_of_two_runtime_operands)
{
    setenv("DQG_BF16_DOT", "fast", 1);
    check(16, 128, 48, true, DQG_FPMATH_BF16);
}

/* Where bf16 dot products are slow and there is no AMX (an Intel CPU
 * without AMX, one without AVX512-BF16), bf16 would be slower: the mode
 * keeps f32 math, exact, and says so; the same graph compiled again once
 * bf16 is known fast is another plan (the cache key tells them apart). */
Test(fpmath, bf16_mode_keeps_f32_where_bf16_is_slower)
{
    setenv("DQG_BF16_DOT", "slow", 1);
    check(33, 100, 17, false, DQG_FPMATH_BF16);
    check(16, 128, 48, true, DQG_FPMATH_BF16);
    setenv("DQG_BF16_DOT", "fast", 1);
    check(33, 100, 17, false, DQG_FPMATH_BF16);
    unsetenv("DQG_BF16_DOT");
    check(33, 100, 17, false, DQG_FPMATH_BF16);
}

/* A weight-only MatMul above 16 rows (s4 weights in K-blocks of 32, f32
 * scales): where bf16 is faster, the bf16 mode runs oneDNN's bf16 matmul
 * on the weights decoded to bf16 (each off by at most 2^-9 of itself, as
 * the activations: the bound above); elsewhere the exact own kernel. */
static void check_weight_only(int64_t M, int64_t K, int64_t N)
{
    const int64_t B = 32, nb = (K + B - 1) / B;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int8_t *q = malloc((size_t)(K * N));
    uint8_t *packed = calloc((size_t)(K * N + 1) / 2, 1);
    float *sc = malloc((size_t)(nb * N) * sizeof *sc), *a = malloc((size_t)(M * K) * sizeof *a);
    for (int64_t i = 0; i < K * N; i++) {
        q[i] = (int8_t)(rs % 16) - 8;
        rf();
        packed[i / 2] |= (uint8_t)((q[i] & 15) << (i % 2 * 4));
    }
    for (int64_t i = 0; i < nb * N; i++)
        sc[i] = 0.01f + 0.02f * fabsf(rf());
    for (int64_t i = 0; i < M * K; i++)
        a[i] = rf();
    int64_t ad[] = {M, K}, wd[] = {K, N}, sd[] = {nb, N};
    dqg_tensor_id ta = dqg_input(g, "a", DQG_F32, 2, ad);
    dqg_tensor_id tw = dqg_constant(g, "w", DQG_S4, 2, wd, packed, (size_t)(K * N + 1) / 2);
    dqg_tensor_id ts = dqg_constant(g, "s", DQG_F32, 2, sd, sc, (size_t)(nb * N) * sizeof(float));
    dqg_dequantize_linear_attrs at = {.opset = 21, .has_axis = true, .axis = 0, .block_size = B};
    dqg_tensor_id y =
        dqg_matmul(g, "mm", ta, dqg_dequantize_linear(g, "dq", tw, ts, DQG_NONE, &at), NULL);
    dqg_compiled *c = finish_and_compile(g, y, DQG_FPMATH_BF16);
    const char *info = dqg_compiled_partition_info(c, 0);
    bool bf16 = bf16_math_expected();
    cr_assert_eq(strstr(info, "bf16") != NULL, bf16, "bf16 expected %d: %s", bf16, info);
    float *out = malloc((size_t)(M * N) * sizeof *out);
    dqg_buffer in = {.name = "a", .data = a, .size = (size_t)(M * K) * sizeof(float)};
    dqg_buffer ob = {.name = "y", .data = out, .size = (size_t)(M * N) * sizeof(float)};
    cr_assert_eq(dqg_execute(c, &in, 1, &ob, 1), DQG_OK, "%s", dqg_last_error());
    float *w = malloc((size_t)(K * N) * sizeof *w); /* the dequantized weights */
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++)
            w[k * N + n] = (float)q[k * N + n] * sc[k / B * N + n];
    expect_product(out, a, w, NULL, M, K, N, bf16, info);
    free(w);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    free(q);
    free(packed);
    free(sc);
    free(a);
    free(out);
}

Test(fpmath, bf16_weight_only_matmul_above_16_rows)
{
    setenv("DQG_BF16_DOT", "fast", 1);
    check_weight_only(33, 96, 40);
    setenv("DQG_BF16_DOT", "slow", 1);
    check_weight_only(33, 96, 40);
}

Test(fpmath, strict_stays_f32)
{
    check(8, 64, 32, false, DQG_FPMATH_STRICT);
    check(8, 64, 32, true, DQG_FPMATH_STRICT);
}

/* oneDNN's process-wide default fpmath mode (what ONEDNN_DEFAULT_FPMATH_MODE
 * sets) does not reach dqgraph's strict primitives: with the default at
 * bf16, no primitive of an f32 convolution, MatMul or LSTM is created
 * with bf16 math (oneDNN's verbose log says which mode each ran with),
 * and the results stay within 1e-5 of the reference. */
Test(fpmath, strict_ignores_onednn_default_mode)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 16, 12, 12}, wd[] = {16, 16, 3, 3}, ad[] = {8, 32}, bd[] = {32, 24};
    int64_t sd[] = {4, 1, 8}, ld[] = {1, 16, 8}, rd[] = {1, 16, 4};
    float w[16 * 16 * 9], b[32 * 24], lw[16 * 8], lr[16 * 4];
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        w[i] = rf() * 0.3f;
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        b[i] = rf();
    for (size_t i = 0; i < 16 * 8; i++)
        lw[i] = rf() * 0.4f;
    for (size_t i = 0; i < 16 * 4; i++)
        lr[i] = rf() * 0.4f;
    dqg_conv_attrs ca = {.spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    dqg_output(g,
               dqg_convolution(g, "conv", dqg_input(g, "x", DQG_F32, 4, xd),
                               test_const_f32(g, 4, wd, w), DQG_NONE, &ca),
               "y");
    dqg_output(
        g,
        dqg_matmul(g, "mm", dqg_input(g, "a", DQG_F32, 2, ad), test_const_f32(g, 2, bd, b), NULL),
        "z");
    dqg_rnn_attrs la = {.cell = DQG_RNN_CELL_LSTM, .hidden_size = 4};
    dqg_output(g,
               dqg_rnn(g, "lstm", &la, dqg_input(g, "s", DQG_F32, 3, sd),
                       test_const_f32(g, 3, ld, lw), test_const_f32(g, 3, rd, lr), DQG_NONE,
                       DQG_NONE, DQG_NONE, DQG_NONE, DQG_NONE, NULL, NULL),
               "h");
    finalize_ok(g);
    float x[16 * 144], a[8 * 32], s[32], y[2][16 * 144], z[2][8 * 24], h[2][16];
    for (size_t i = 0; i < 16 * 144; i++)
        x[i] = rf();
    for (size_t i = 0; i < 8 * 32; i++)
        a[i] = rf();
    for (size_t i = 0; i < 32; i++)
        s[i] = rf();
    dqg_buffer in[3] = {{.name = "x", .data = x, .size = sizeof x},
                        {.name = "a", .data = a, .size = sizeof a},
                        {.name = "s", .data = s, .size = sizeof s}};
    for (int k = 0; k < 2; k++) {
        dqg_buffer out[3] = {{.name = "y", .data = y[k], .size = sizeof y[k]},
                             {.name = "z", .data = z[k], .size = sizeof z[k]},
                             {.name = "h", .data = h[k], .size = sizeof h[k]}};
        if (k == 0) {
            cr_assert_eq(dqg_reference_run(g, in, 3, out, 3), DQG_OK, "%s", dqg_last_error());
            continue;
        }
        /* oneDNN's verbose log of primitive creation and execution, into a file */
        cr_assert_eq(dnnl_set_default_fpmath_mode(dnnl_fpmath_mode_bf16), dnnl_success);
        fflush(stdout);
        int saved = dup(1);
        FILE *log = tmpfile();
        cr_assert(saved >= 0 && log);
        dup2(fileno(log), 1);
        dnnl_set_verbose(2);
        dqg_compile_options o = dqg_compile_options_default();
        dqg_compiled *c;
        dqg_status st = dqg_compile(g, &o, &c);
        if (st == DQG_OK)
            st = dqg_execute(c, in, 3, out, 3);
        dnnl_set_verbose(0);
        fflush(stdout);
        dup2(saved, 1);
        close(saved);
        dnnl_set_default_fpmath_mode(dnnl_fpmath_mode_strict);
        cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
        dqg_compiled_destroy(c);
        rewind(log);
        char line[2048];
        int execs = 0;
        while (fgets(line, sizeof line, log)) {
            execs += strstr(line, ",exec,") != NULL;
            cr_assert(strstr(line, "fpmath_mode_bf16") == NULL, "%s", line);
        }
        fclose(log);
        cr_assert(execs >= 3, "%d primitives in oneDNN's log", execs);
    }
    double my = 0, ey = 0, mz = 0, ez = 0, mh = 0, eh = 0;
    for (size_t i = 0; i < 16 * 144; i++) {
        my = fmax(my, fabs(y[0][i]));
        ey = fmax(ey, fabs(y[0][i] - y[1][i]));
    }
    for (size_t i = 0; i < 8 * 24; i++) {
        mz = fmax(mz, fabs(z[0][i]));
        ez = fmax(ez, fabs(z[0][i] - z[1][i]));
    }
    for (size_t i = 0; i < 16; i++) {
        mh = fmax(mh, fabs(h[0][i]));
        eh = fmax(eh, fabs(h[0][i] - h[1][i]));
    }
    cr_assert(ey <= 1e-5 * my && ez <= 1e-5 * mz && eh <= 1e-5 * mh, "errors %g %g %g", ey, ez, eh);
    dqg_graph_destroy(g);
}
