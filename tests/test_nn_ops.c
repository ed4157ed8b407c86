/* The unary functions, Sub/Div/Pow, Softmax, Concat and LRN: each builder
 * rule with its message, hand-worked values on the reference interpreter,
 * and the compiled kernels (oneDNN eltwise/softmax/LRN/binary, dqgraph's
 * own Erf, HardSigmoid and Concat) against the reference on seeded random
 * inputs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "runtime/cpu_isa.h"
#include "runtime/gelu_kernel.h"
#include "test_common.h"

/* Compiles g (one input x, one output y) and runs it. */
static dqg_status compile_run(dqg_graph *g, const void *x, size_t xs, void *y, size_t ys)
{
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    dqg_status st = dqg_compile(g, &o, &c);
    if (st != DQG_OK)
        return st;
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = xs};
    dqg_buffer out = {.name = "y", .data = y, .size = ys};
    st = dqg_execute(c, &in, 1, &out, 1);
    dqg_compiled_destroy(c);
    return st;
}

static float uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)(test_rnd() % 1000001) / 1000000.0f;
}

/* Largest |got - ref| / (rel |ref| + abs) over n values: at most 1 when
 * every value is within the tolerance. */
static double worst_ratio(const float *got, const float *ref, int64_t n, double rel, double abs)
{
    double w = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(ref[i])) {
            cr_assert(isnan(got[i]), "element %lld: %g, expected NaN", (long long)i, got[i]);
            continue;
        }
        if (isinf(ref[i])) {
            cr_assert_eq(got[i], ref[i], "element %lld: %g, expected %g", (long long)i, got[i],
                         ref[i]);
            continue;
        }
        double e = fabs((double)got[i] - ref[i]) / (rel * fabs(ref[i]) + abs);
        if (e > w) {
            w = e;
            if (getenv("DQG_TEST_VERBOSE"))
                fprintf(stderr, "worst so far: [%lld] got %.9g ref %.9g\n", (long long)i, got[i],
                        ref[i]);
        }
    }
    return w;
}

/* ---- Builder rules -------------------------------------------------------- */

Test(unary, rules)
{
    dqg_graph *g;
    int64_t d[] = {4};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_unary(g, "u", (dqg_unary_op)99, x, 0, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Unary 'u'", "function 99");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    dqg_tensor_id i = dqg_input(g, "i", DQG_S8, 1, d);
    cr_assert_eq(dqg_unary(g, "s", DQG_UNARY_SIGMOID, i, 0, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Sigmoid 's'", "input 0 (x)", "s8");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_unary(g, "e", DQG_UNARY_ELU, x, NAN, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Elu 'e'", "alpha", "finite");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_unary(g, "h", DQG_UNARY_HARD_SIGMOID, x, 0.2f, INFINITY), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "HardSigmoid 'h'", "beta", "finite");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_unary(g, "c", DQG_UNARY_CELU, x, 0.0f, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Celu 'c'", "alpha is 0");
    dqg_graph_destroy(g);

    /* A parameter the function does not use is ignored, even NaN. */
    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_neq(dqg_unary(g, "t", DQG_UNARY_TANH, x, NAN, NAN), DQG_NONE);
    dqg_graph_destroy(g);
    cr_assert_str_eq(dqg_unary_op_name(DQG_UNARY_GELU_ERF), "Gelu");
    cr_assert_str_eq(dqg_unary_op_name(DQG_UNARY_COUNT), "Unknown");
}

Test(softmax, rules)
{
    dqg_graph *g;
    int64_t d[] = {2, 3};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_softmax(g, "sm", x, 2, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Softmax 'sm'", "axis 2", "[-2, 2)");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 0, NULL);
    cr_assert_eq(dqg_softmax(g, "ls", x, 0, true), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LogSoftmax 'ls'", "scalar");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_U8, 2, d);
    cr_assert_eq(dqg_softmax(g, "sm", x, -1, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Softmax 'sm'", "u8");
    dqg_graph_destroy(g);
}

Test(concat, rules)
{
    dqg_graph *g;
    int64_t d23[] = {2, 3}, d24[] = {2, 4}, d34[] = {3, 4}, d2[] = {2};
    dqg_graph_create(&g);
    cr_assert_eq(dqg_concat(g, "c", 0, NULL, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Concat 'c'", "0 inputs");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, d23), b = dqg_input(g, "b", DQG_F32, 2, d34);
    cr_assert_eq(dqg_concat(g, "c", 2, (dqg_tensor_id[]){a, b}, 1), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Concat 'c'", "input 1", "[3,4]",
                 "[2,3]", "only on axis 1");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    a = dqg_input(g, "a", DQG_F32, 2, d23);
    b = dqg_input(g, "b", DQG_F16, 2, d24);
    cr_assert_eq(dqg_concat(g, "c", 2, (dqg_tensor_id[]){a, b}, 1), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Concat 'c'", "input 1 is f16",
                 "input 0 is f32");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    a = dqg_input(g, "a", DQG_F32, 2, d23);
    b = dqg_input(g, "b", DQG_F32, 1, d2);
    cr_assert_eq(dqg_concat(g, "c", 2, (dqg_tensor_id[]){a, b}, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Concat 'c'", "input 1 has rank 1");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    a = dqg_input(g, "a", DQG_F32, 2, d23);
    cr_assert_eq(dqg_concat(g, "c", 1, &a, -3), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Concat 'c'", "axis -3");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    cr_assert_eq(dqg_concat(g, "c", 1, (dqg_tensor_id[]){77}, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Concat 'c'", "unknown tensor id 77");
    dqg_graph_destroy(g);
}

Test(lrn, rules)
{
    dqg_graph *g;
    int64_t d4[] = {1, 3, 2, 2}, d2[] = {3, 4};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d2);
    cr_assert_eq(dqg_lrn(g, "n", x, 3, 1e-4f, 0.75f, 1.0f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LRN 'n'", "rank 2", "NCX");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 4, d4);
    cr_assert_eq(dqg_lrn(g, "n", x, 0, 1e-4f, 0.75f, 1.0f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LRN 'n'", "size 0");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 4, d4);
    cr_assert_eq(dqg_lrn(g, "n", x, 3, 1e-4f, 0.75f, 0.0f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LRN 'n'", "bias 0", "> 0");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 4, d4);
    cr_assert_eq(dqg_lrn(g, "n", x, 3, INFINITY, 0.75f, 1.0f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LRN 'n'", "finite");
    dqg_graph_destroy(g);
}

Test(binary, pow_takes_floats_only)
{
    dqg_graph *g;
    int64_t d[] = {4};
    dqg_graph_create(&g);
    dqg_tensor_id a = dqg_input(g, "a", DQG_S32, 1, d), b = dqg_input(g, "b", DQG_S32, 1, d);
    cr_assert_eq(dqg_pow(g, "p", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Pow 'p'", "input 0 (a)", "s32");
    dqg_graph_destroy(g);
}

/* ---- Values on the reference, and compiled -------------------------------- */

/* y = a op b for an integer type, on the reference and compiled. */
static void int_binary(dqg_tensor_id (*fn)(dqg_graph *, const char *, dqg_tensor_id, dqg_tensor_id),
                       dqg_dtype dt, const void *a, const void *b, int n, void *ref, void *got,
                       size_t es)
{
    dqg_graph *g;
    int64_t d[] = {n};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", dt, 1, d);
    dqg_tensor_id c = dqg_constant(g, "b", dt, 1, d, b, (size_t)n * es);
    dqg_output(g, fn(g, "op", x, c), "y");
    finalize_ok(g);
    dqg_tensor_id y = dqg_graph_output_id(g, 0);
    cr_assert_eq(run_ref_1(g, dqg_graph_input_id(g, 0), (void *)a, n * es, y, ref, n * es), DQG_OK,
                 "%s", dqg_last_error());
    cr_assert_eq(compile_run(g, a, n * es, got, n * es), DQG_OK, "%s", dqg_last_error());
    dqg_graph_destroy(g);
}

Test(binary, integer_sub_wraps_and_div_truncates)
{
    const int8_t a[] = {-128, 7, -7, 100, -128, 5};
    const int8_t b[] = {1, 2, 2, -3, -1, 127};
    int8_t ref[6], got[6];
    int_binary(dqg_sub, DQG_S8, a, b, 6, ref, got, 1);
    const int8_t sub[] = {127, 5, -9, 103, -127, -122};
    cr_assert_arr_eq(ref, sub, 6);
    cr_assert_arr_eq(got, sub, 6);
    int_binary(dqg_div, DQG_S8, a, b, 6, ref, got, 1);
    /* Toward zero; -128 / -1 wraps to -128. */
    const int8_t div[] = {-128, 3, -3, -33, -128, 0};
    cr_assert_arr_eq(ref, div, 6);
    cr_assert_arr_eq(got, div, 6);
}

Test(binary, integer_division_by_zero_is_an_error)
{
    const int32_t a[] = {1, 2, 3}, b[] = {1, 0, 1};
    int32_t y[3];
    dqg_graph *g;
    int64_t d[] = {3};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_S32, 1, d);
    dqg_tensor_id c = dqg_constant(g, "b", DQG_S32, 1, d, b, sizeof b);
    dqg_output(g, dqg_div(g, "d", x, c), "y");
    finalize_ok(g);
    expect_error(run_ref_1(g, x, (void *)a, sizeof a, dqg_graph_output_id(g, 0), y, sizeof y),
                 DQG_INVALID_ARGUMENT, "Div 'd'", "input 1 (b)", "element 1", "division by zero");
    expect_error(compile_run(g, a, sizeof a, y, sizeof y), DQG_INVALID_ARGUMENT, "Div 'd'",
                 "element 1");
    dqg_graph_destroy(g);
}

Test(binary, float_sub_div_pow_broadcast_both_ways)
{
    /* a [2,3] with b [3], and a [3] with b [2,3] (the broadcast first
     * operand runs on the reference kernel for Sub and Div). */
    const float a[] = {1, -2, 3, 4, 0.5f, -6}, b[] = {2, 4, 0.5f};
    for (int flip = 0; flip < 2; flip++)
        for (int k = 0; k < 3; k++) {
            dqg_graph *g;
            int64_t d23[] = {2, 3}, d3[] = {3};
            dqg_graph_create(&g);
            dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d23);
            dqg_tensor_id c = test_const_f32(g, 1, d3, b);
            dqg_tensor_id (*fn)(dqg_graph *, const char *, dqg_tensor_id, dqg_tensor_id) =
                k == 0   ? dqg_sub
                : k == 1 ? dqg_div
                         : dqg_pow;
            dqg_output(g, flip ? fn(g, "op", c, x) : fn(g, "op", x, c), "y");
            finalize_ok(g);
            float got[6];
            cr_assert_eq(compile_run(g, a, sizeof a, got, sizeof got), DQG_OK, "%s",
                         dqg_last_error());
            for (int i = 0; i < 6; i++) {
                double p = flip ? b[i % 3] : a[i], q = flip ? a[i] : b[i % 3];
                double want = k == 0 ? p - q : k == 1 ? p / q : pow(p, q);
                if (isnan(want))
                    cr_assert(isnan(got[i]), "k %d flip %d [%d]: %g", k, flip, i, got[i]);
                else
                    cr_assert_float_eq(got[i], want, 1e-6 * fabs(want) + 1e-30,
                                       "k %d flip %d [%d]: %g, expected %g", k, flip, i, got[i],
                                       want);
            }
            dqg_graph_destroy(g);
        }
}

Test(unary, hand_worked_values)
{
    const float x[] = {-3.0f, -0.5f, 0.0f, 0.25f, 2.0f, 4.0f};
    struct {
        dqg_unary_op op;
        float alpha, beta;
        float want[6];
    } cases[] = {
        {DQG_UNARY_NEG, 0, 0, {3.0f, 0.5f, -0.0f, -0.25f, -2.0f, -4.0f}},
        {DQG_UNARY_ABS, 0, 0, {3.0f, 0.5f, 0.0f, 0.25f, 2.0f, 4.0f}},
        {DQG_UNARY_RECIPROCAL, 0, 0, {-1.0f / 3, -2.0f, INFINITY, 4.0f, 0.5f, 0.25f}},
        {DQG_UNARY_HARD_SIGMOID, 0.2f, 0.5f, {0.0f, 0.4f, 0.5f, 0.55f, 0.9f, 1.0f}},
        {DQG_UNARY_HARD_SWISH,
         0,
         0,
         {0.0f, -0.5f * 2.5f / 6, 0.0f, 0.25f * 3.25f / 6, 2.0f * 5 / 6, 4.0f}},
        {DQG_UNARY_LEAKY_RELU, 0.1f, 0, {-0.3f, -0.05f, 0.0f, 0.25f, 2.0f, 4.0f}},
        {DQG_UNARY_POW, 2.0f, 0, {9.0f, 0.25f, 0.0f, 0.0625f, 4.0f, 16.0f}},
        {DQG_UNARY_SQRT, 0, 0, {NAN, NAN, 0.0f, 0.5f, 1.41421356f, 2.0f}},
        {DQG_UNARY_FLOOR, 0, 0, {-3.0f, -1.0f, 0.0f, 0.0f, 2.0f, 4.0f}},
        {DQG_UNARY_CEIL, 0, 0, {-3.0f, -0.0f, 0.0f, 1.0f, 2.0f, 4.0f}},
        {DQG_UNARY_ROUND, 0, 0, {-3.0f, -0.0f, 0.0f, 0.0f, 2.0f, 4.0f}},
        {DQG_UNARY_SIGN, 0, 0, {-1.0f, -1.0f, 0.0f, 1.0f, 1.0f, 1.0f}},
        {DQG_UNARY_COS,
         0,
         0,
         {-0.989992497f, 0.877582562f, 1.0f, 0.968912422f, -0.416146837f, -0.653643621f}},
        {DQG_UNARY_SIN,
         0,
         0,
         {-0.141120008f, -0.479425539f, 0.0f, 0.247403959f, 0.909297427f, -0.756802495f}},
        {DQG_UNARY_SOFTPLUS,
         0,
         0,
         {0.048587352f, 0.474076984f, 0.693147181f, 0.825939420f, 2.126928011f, 4.018149928f}},
        {DQG_UNARY_SELU,
         1.67326319217681884765625f,
         1.05070102214813232421875f,
         {-1.67056873f, -0.69175819f, 0.0f, 0.262675256f, 2.10140204f, 4.20280409f}},
        {DQG_UNARY_SOFTSIGN, 0, 0, {-0.75f, -0.333333333f, 0.0f, 0.2f, 0.666666667f, 0.8f}},
        {DQG_UNARY_THRESHOLDED_RELU, 0.25f, 0, {0.0f, 0.0f, 0.0f, 0.0f, 2.0f, 4.0f}},
        {DQG_UNARY_CELU, 0.5f, 0, {-0.498760624f, -0.316060279f, 0.0f, 0.25f, 2.0f, 4.0f}},
        {DQG_UNARY_MISH,
         0,
         0,
         {-0.145647461f, -0.220743775f, 0.0f, 0.16957241f, 1.94395896f, 3.99741281f}},
        {DQG_UNARY_TAN,
         0,
         0,
         {0.142546543f, -0.54630249f, 0.0f, 0.255341921f, -2.18503986f, 1.15782128f}},
        {DQG_UNARY_ASIN, 0, 0, {NAN, -0.523598776f, 0.0f, 0.252680255f, NAN, NAN}},
        {DQG_UNARY_ACOS, 0, 0, {NAN, 2.0943951f, 1.57079633f, 1.31811607f, NAN, NAN}},
        {DQG_UNARY_ATAN,
         0,
         0,
         {-1.24904577f, -0.463647609f, 0.0f, 0.244978663f, 1.10714872f, 1.32581766f}},
        {DQG_UNARY_SINH,
         0,
         0,
         {-10.0178749f, -0.521095305f, 0.0f, 0.252612317f, 3.62686041f, 27.2899172f}},
        {DQG_UNARY_COSH,
         0,
         0,
         {10.067662f, 1.12762597f, 1.0f, 1.0314131f, 3.76219569f, 27.3082328f}},
        {DQG_UNARY_ASINH,
         0,
         0,
         {-1.81844646f, -0.481211825f, 0.0f, 0.247466462f, 1.44363548f, 2.09471255f}},
        {DQG_UNARY_ACOSH, 0, 0, {NAN, NAN, NAN, NAN, 1.3169579f, 2.06343707f}},
        {DQG_UNARY_ATANH, 0, 0, {NAN, -0.549306144f, 0.0f, 0.255412812f, NAN, NAN}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g;
        int64_t d[] = {6};
        dqg_graph_create(&g);
        dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 1, d);
        dqg_output(g, dqg_unary(g, "u", cases[k].op, in, cases[k].alpha, cases[k].beta), "y");
        finalize_ok(g);
        float ref[6], got[6];
        cr_assert_eq(
            run_ref_1(g, in, (void *)x, sizeof x, dqg_graph_output_id(g, 0), ref, sizeof ref),
            DQG_OK);
        cr_assert_eq(compile_run(g, x, sizeof x, got, sizeof got), DQG_OK, "%s", dqg_last_error());
        for (int i = 0; i < 6; i++) {
            float w = cases[k].want[i];
            const char *fn = dqg_unary_op_name(cases[k].op);
            if (isnan(w)) {
                cr_assert(isnan(ref[i]) && isnan(got[i]), "%s[%d]", fn, i);
            } else if (isinf(w)) {
                cr_assert(ref[i] == w && got[i] == w, "%s[%d]: %g and %g, want %g", fn, i, ref[i],
                          got[i], w);
            } else {
                cr_assert_float_eq(ref[i], w, 1e-6f * fabsf(w) + 1e-7f, "%s[%d] ref %g, want %g",
                                   fn, i, ref[i], w);
                cr_assert_float_eq(got[i], w, 1e-6f * fabsf(w) + 1e-7f, "%s[%d] got %g, want %g",
                                   fn, i, got[i], w);
            }
        }
        dqg_graph_destroy(g);
    }
}

/* The compiled kernels' error is at most 2e-6 |y| + 5e-7: oneDNN's eltwise
 * functions are polynomial approximations correct to a few float32 ulps
 * (2^-23 = 1.2e-7 relative each; 2e-6 is 16), except near the functions'
 * zeros and in GELU's negative tail, where oneDNN's erf is accurate to
 * about 3e-7 absolute (measured: 2.5e-7 on -3.9e-3 at x = -3). Inputs uniform in [-8, 8] ([0.01, 8]
 * where the function needs positive ones). */
Test(unary, compiled_matches_reference_for_every_function)
{
    test_rng = 12345;
    enum { N = 4099 };
    float *x = malloc(N * sizeof *x), *ref = malloc(N * sizeof *ref),
          *got = malloc(N * sizeof *got);
    for (int op = 0; op < DQG_UNARY_COUNT; op++) {
        bool positive = op == DQG_UNARY_SQRT || op == DQG_UNARY_LOG || op == DQG_UNARY_POW;
        for (int i = 0; i < N; i++)
            x[i] = positive ? uniform(0.01f, 8.0f) : uniform(-8.0f, 8.0f);
        float alpha = op == DQG_UNARY_POW ? 1.5f : op == DQG_UNARY_HARD_SIGMOID ? 0.2f : 0.7f;
        dqg_graph *g;
        int64_t d[] = {N};
        dqg_graph_create(&g);
        dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 1, d);
        dqg_output(g, dqg_unary(g, "u", (dqg_unary_op)op, in, alpha, 0.5f), "y");
        finalize_ok(g);
        cr_assert_eq(
            run_ref_1(g, in, x, N * sizeof *x, dqg_graph_output_id(g, 0), ref, N * sizeof *ref),
            DQG_OK);
        cr_assert_eq(compile_run(g, x, N * sizeof *x, got, N * sizeof *got), DQG_OK, "%s",
                     dqg_last_error());
        double w = worst_ratio(got, ref, N, 2e-6, 5e-7);
        cr_assert(w <= 1.0, "%s: worst error %.3g times the tolerance", dqg_unary_op_name(op), w);
        dqg_graph_destroy(g);
    }
    free(x);
    free(ref);
    free(got);
}

/* (Log)Softmax of x (type t, dims d, rank 3) along axis, on the reference
 * (ref) and compiled (got). */
static void softmax_both(dqg_dtype t, const int64_t *d, int axis, bool log, const void *x,
                         size_t bytes, void *ref, void *got)
{
    dqg_graph *g;
    dqg_graph_create(&g);
    dqg_tensor_id in = dqg_input(g, "x", t, 3, d);
    dqg_output(g, dqg_softmax(g, "sm", in, axis, log), "y");
    finalize_ok(g);
    cr_assert_eq(run_ref_1(g, in, (void *)x, bytes, dqg_graph_output_id(g, 0), ref, bytes), DQG_OK);
    cr_assert_eq(compile_run(g, x, bytes, got, bytes), DQG_OK, "%s", dqg_last_error());
    dqg_graph_destroy(g);
}

/* Softmax and LogSoftmax on every axis of a [3, 5, 17] tensor, with one
 * row of large values (the max subtraction keeps them finite). */
Test(softmax, compiled_matches_reference_on_every_axis)
{
    test_rng = 777;
    enum { N = 3 * 5 * 17 };
    float x[N], ref[N], got[N];
    for (int i = 0; i < N; i++)
        x[i] = i < 17 ? 80.0f + uniform(0, 10) : uniform(-6, 6);
    for (int log = 0; log < 2; log++)
        for (int axis = -3; axis < 3; axis++) {
            int64_t d[] = {3, 5, 17};
            softmax_both(DQG_F32, d, axis, log, x, sizeof x, ref, got);
            /* Each softmax output is one exp and one division from the
             * sum: a few ulps, 2e-6 |y| + 1e-9 (the smallest outputs are
             * e^-20). LogSoftmax's (x - max) - log(sum) has three
             * roundings of values up to 16 in magnitude, ulp(16) = 1.9e-6:
             * 4e-6 absolute plus 2e-6 relative. */
            double w =
                log ? worst_ratio(got, ref, N, 2e-6, 4e-6) : worst_ratio(got, ref, N, 2e-6, 1e-9);
            cr_assert(w <= 1.0, "log %d axis %d: worst error %.3g times the tolerance", log, axis,
                      w);
            if (!log) {
                /* Rows sum to 1. */
                int ax = axis < 0 ? axis + 3 : axis;
                int64_t inner = ax == 2 ? 1 : ax == 1 ? 17 : 85, n = d[ax];
                double s = 0;
                for (int64_t k = 0; k < n; k++)
                    s += ref[k * inner];
                cr_assert_float_eq(s, 1.0, 1e-6, "axis %d: sum %g", axis, s);
            }
        }
}

/* Softmax and LogSoftmax along the last axis, the rows dqgraph's own
 * AVX-512 kernel takes: row lengths around the vector width and past it,
 * row counts past the threshold where the rows are split between
 * threads, and rows of every kind the kernel treats apart: an offset of
 * 1e4 (the maximum's subtraction), a -inf or -1e9 attention mask (exactly
 * 0, as the reference), outputs that underflow to denormals or 0, and
 * rows holding NaN or an infinity (the reference's NaNs). */
Test(softmax, last_axis_rows_match_the_reference)
{
    test_rng = 4242;
    const int64_t lens[] = {1, 3, 15, 16, 17, 31, 128, 1000};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t n = lens[li], rows = 40000 / n + 9;
        float *x = malloc(sizeof(float) * rows * n), *ref = malloc(sizeof(float) * rows * n),
              *got = malloc(sizeof(float) * rows * n);
        cr_assert(x && ref && got);
        for (int64_t r = 0; r < rows; r++) {
            float *row = x + r * n;
            int kind = (int)(r % 9);
            for (int64_t k = 0; k < n; k++) {
                float v = uniform(-6, 6);
                row[k] = kind == 1   ? 1e4f + v
                         : kind == 2 ? (k % 3 == 1 ? -INFINITY : v)
                         : kind == 3 ? (k % 4 == 2 ? -1e9f : v)
                         : kind == 4 ? uniform(-120, 0)
                                     : v;
            }
            if (kind == 5)
                row[n / 2] = NAN;
            if (kind == 6)
                row[n - 1] = INFINITY;
            if (kind == 7 && r % 2 == 1)
                for (int64_t k = 0; k < n; k++)
                    row[k] = -INFINITY;
        }
        for (int log = 0; log < 2; log++) {
            dqg_graph *g;
            int64_t d[] = {rows, n};
            dqg_graph_create(&g);
            dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 2, d);
            dqg_output(g, dqg_softmax(g, "sm", in, 1, log), "y");
            finalize_ok(g);
            size_t bytes = sizeof(float) * rows * n;
            cr_assert_eq(run_ref_1(g, in, x, bytes, dqg_graph_output_id(g, 0), ref, bytes), DQG_OK);
            dqg_compile_options o = dqg_compile_options_default();
            dqg_compiled *c;
            cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
            if (dqg_cpu_has(DQG_ISA_AVX512))
                cr_assert(strstr(dqg_compiled_partition_info(c, 0),
                                 log ? "own:avx512:logsoftmax" : "own:avx512:softmax"),
                          "%s", dqg_compiled_partition_info(c, 0));
            dqg_buffer ib = {.name = "x", .data = x, .size = bytes};
            dqg_buffer ob = {.name = "y", .data = got, .size = bytes};
            cr_assert_eq(dqg_execute(c, &ib, 1, &ob, 1), DQG_OK, "%s", dqg_last_error());
            dqg_compiled_destroy(c);
            /* The exponential is within 3 ulp of e^d, then one division
             * by the sum (float, against the reference's double: n ulps
             * at most, 1000 * 6e-8): 1e-4 relative for n = 1000, 2e-6 for
             * the short rows; outputs near FLT_MIN within 1e-37 (oneDNN,
             * below AVX-512, flushes them to 0). LogSoftmax:
             * (x - max) - log(sum), a few roundings of values up to 120
             * in magnitude (the -1e9 masks, relative). */
            double rel = n >= 1000 ? 1e-4 : 2e-6;
            double w = log ? worst_ratio(got, ref, rows * n, rel, 4e-5)
                           : worst_ratio(got, ref, rows * n, rel, 1e-37);
            cr_assert(w <= 1.0, "n %lld log %d: worst error %.3g times the tolerance", (long long)n,
                      log, w);
            /* Masked positions are exactly 0. */
            for (int64_t i = 0; i < rows * n; i++)
                if (!log && (x[i] == -INFINITY || x[i] == -1e9f) && ref[i] == 0.0f)
                    cr_assert_eq(got[i], 0.0f, "n %lld: element %lld is %g, expected 0",
                                 (long long)n, (long long)i, got[i]);
            dqg_graph_destroy(g);
        }
        free(x);
        free(ref);
        free(got);
    }
}

/* Softmax across a middle axis (oneDNN's kernel) with a NaN in one
 * column and +inf / -inf in others: those columns are the reference's
 * (NaN; -inf alone leaves a finite maximum and gives 0 there). The
 * last-axis test above covers the rows oneDNN itself gets wrong. */
Test(softmax, middle_axis_rows_with_nan_or_infinity_are_the_references)
{
    test_rng = 99;
    enum { N = 2 * 5 * 3 };
    float x[N], ref[N], got[N];
    for (int i = 0; i < N; i++)
        x[i] = uniform(-4, 4);
    x[0 * 15 + 2 * 3 + 0] = NAN;       /* outer 0, column 0 */
    x[0 * 15 + 4 * 3 + 2] = INFINITY;  /* outer 0, column 2 */
    x[1 * 15 + 1 * 3 + 1] = -INFINITY; /* outer 1, column 1 */
    for (int log = 0; log < 2; log++) {
        dqg_graph *g;
        int64_t d[] = {2, 5, 3};
        dqg_graph_create(&g);
        dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 3, d);
        dqg_output(g, dqg_softmax(g, "sm", in, 1, log), "y");
        finalize_ok(g);
        cr_assert_eq(run_ref_1(g, in, x, sizeof x, dqg_graph_output_id(g, 0), ref, sizeof ref),
                     DQG_OK);
        cr_assert_eq(compile_run(g, x, sizeof x, got, sizeof got), DQG_OK, "%s", dqg_last_error());
        for (int k = 0; k < 5; k++) {
            cr_assert(isnan(got[k * 3 + 0]) && isnan(got[k * 3 + 2]), "log %d row %d", log, k);
            cr_assert(isfinite(got[k * 3 + 1]) && isfinite(got[15 + k * 3]), "log %d row %d", log,
                      k);
        }
        if (!log)
            cr_assert_eq(got[15 + 1 * 3 + 1], 0.0f);
        else
            cr_assert(isinf(got[15 + 1 * 3 + 1]) && got[15 + 1 * 3 + 1] < 0);
        cr_assert(worst_ratio(got, ref, N, 2e-6, 4e-6) <= 1.0, "log %d", log);
        dqg_graph_destroy(g);
    }
}

/* bf16 Softmax runs on oneDNN's kernel, which gives 0 where a row holding
 * +inf has the reference's NaN: such rows (here one per 4-row block, on
 * the last axis and across the middle one) come out as the reference's
 * bit for bit, the others within bf16 rounding. */
Test(softmax, bf16_rows_with_infinity_are_the_references)
{
    test_rng = 31;
    enum { N = 4 * 6 * 5 };
    uint16_t x[N], ref[N], got[N];
    for (int i = 0; i < N; i++) {
        float f = uniform(-3, 3);
        uint32_t u;
        memcpy(&u, &f, 4);
        x[i] = (uint16_t)(u >> 16);
    }
    x[0 * 30 + 2 * 5 + 1] = 0x7f80; /* +inf */
    x[2 * 30 + 4 * 5 + 4] = 0xff80; /* -inf */
    x[3 * 30 + 0 * 5 + 3] = 0x7fc0; /* NaN */
    for (int axis = 1; axis < 3; axis++)
        for (int log = 0; log < 2; log++) {
            int64_t d[] = {4, 6, 5};
            softmax_both(DQG_BF16, d, axis, log, x, sizeof x, ref, got);
            for (int i = 0; i < N; i++) {
                uint32_t a = (uint32_t)got[i] << 16, b = (uint32_t)ref[i] << 16;
                float fa, fb;
                memcpy(&fa, &a, 4);
                memcpy(&fb, &b, 4);
                if (isnan(fb) || isinf(fb)) {
                    cr_assert(got[i] == ref[i] || (isnan(fa) && isnan(fb)),
                              "axis %d log %d: element %d is %g, the reference's %g", axis, log, i,
                              fa, fb);
                    continue;
                }
                /* bf16 keeps 8 bits: a rounding or two of 2^-8 relative. */
                cr_assert(fabsf(fa - fb) <= 1.6e-2f * fabsf(fb) + 1e-6f,
                          "axis %d log %d: element %d is %g, the reference's %g", axis, log, i, fa,
                          fb);
            }
        }
}

/* NaN propagates through ReLU, Clip, every unary function and Max/Min
 * reductions as the reference has it (oneDNN's kernels map it to a bound,
 * to infinity or skip it), in f32 and bf16; infinities and finite values
 * as the reference's within float rounding. */
Test(nan, propagates_through_relu_clip_unary_and_reductions)
{
    static const float vals[16] = {NAN,  INFINITY, -INFINITY, 0,      1,     -1,  3e38f, -3e38f,
                                   0.5f, 2,        -2,        1e-30f, -0.0f, 100, -100,  7};
    for (int bf = 0; bf < 2; bf++)
        for (int kind = 0; kind < DQG_UNARY_COUNT + 4; kind++) {
            dqg_dtype dt = bf ? DQG_BF16 : DQG_F32;
            size_t es = bf ? 2 : 4;
            uint8_t x[64];
            for (int i = 0; i < 16; i++) {
                uint32_t u;
                memcpy(&u, &vals[i], 4);
                if (bf) {
                    uint16_t h = (uint16_t)(u >> 16);
                    memcpy(x + 2 * i, &h, 2);
                } else {
                    memcpy(x + 4 * i, &u, 4);
                }
            }
            dqg_graph *g;
            int64_t d[] = {2, 8}, ax = 1;
            dqg_graph_create(&g);
            dqg_tensor_id in = dqg_input(g, "x", dt, 2, d), y;
            if (kind < DQG_UNARY_COUNT) {
                dqg_unary_op u = (dqg_unary_op)kind;
                float a = u == DQG_UNARY_POW ? 2.0f : u == DQG_UNARY_HARD_SIGMOID ? 0.2f : 1.0f;
                y = dqg_unary(g, "f", u, in, a, u == DQG_UNARY_HARD_SIGMOID ? 0.5f : 0.0f);
            } else if (kind == DQG_UNARY_COUNT) {
                y = dqg_relu(g, "f", in);
            } else if (kind == DQG_UNARY_COUNT + 1) {
                y = dqg_clip(g, "f", in, -1.0f, 1.0f);
            } else {
                y = dqg_reduce(g, "f",
                               kind == DQG_UNARY_COUNT + 2 ? DQG_REDUCE_MAX : DQG_REDUCE_MIN, in, 1,
                               &ax, true);
            }
            dqg_output(g, y, "y");
            finalize_ok(g);
            dqg_tensor_id yid = dqg_graph_output_id(g, 0);
            size_t n = (size_t)dqg_tensor_element_count(g, yid);
            uint8_t ref[64], got[64];
            cr_assert_eq(run_ref_1(g, in, x, 16 * es, yid, ref, n * es), DQG_OK);
            cr_assert_eq(compile_run(g, x, 16 * es, got, n * es), DQG_OK, "%s", dqg_last_error());
            for (size_t i = 0; i < n; i++) {
                float r, o;
                uint32_t ur = 0, uo = 0;
                if (bf) {
                    uint16_t hr, ho;
                    memcpy(&hr, ref + 2 * i, 2);
                    memcpy(&ho, got + 2 * i, 2);
                    ur = (uint32_t)hr << 16;
                    uo = (uint32_t)ho << 16;
                } else {
                    memcpy(&ur, ref + 4 * i, 4);
                    memcpy(&uo, got + 4 * i, 4);
                }
                memcpy(&r, &ur, 4);
                memcpy(&o, &uo, 4);
                cr_assert(isnan(r) == isnan(o) && (isnan(r) || isinf(r) == isinf(o)),
                          "kind %d %s: element %zu is %g, the reference's %g", kind,
                          bf ? "bf16" : "f32", i, o, r);
                if (isfinite(r))
                    cr_assert(fabs((double)o - r) <= (bf ? 1.6e-2 : 1e-5) * fabs(r) + 1e-6,
                              "kind %d %s: element %zu is %g, the reference's %g", kind,
                              bf ? "bf16" : "f32", i, o, r);
            }
            dqg_graph_destroy(g);
        }
}

/* A chain of unary functions, whose intermediates the planner could let a
 * kernel overwrite: the NaN still reaches the output (the repair after
 * oneDNN reads the input, so those kernels never run in place). */
Test(nan, propagates_through_a_chain_of_unary_functions)
{
    float x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = i == 5 ? NAN : (float)(i - 8) * 0.25f;
    dqg_graph *g;
    int64_t d[] = {16};
    dqg_graph_create(&g);
    dqg_tensor_id t = dqg_input(g, "x", DQG_F32, 1, d);
    t = dqg_unary(g, "e1", DQG_UNARY_EXP, t, 0, 0);
    t = dqg_unary(g, "e2", DQG_UNARY_EXP, t, 0, 0);
    t = dqg_unary(g, "s", DQG_UNARY_SIGMOID, t, 0, 0);
    dqg_output(g, t, "y");
    finalize_ok(g);
    cr_assert_eq(compile_run(g, x, sizeof x, y, sizeof y), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < 16; i++)
        cr_assert(i == 5 ? isnan(y[i]) : (y[i] > 0.5f && y[i] <= 1.0f), "element %d is %g", i,
                  y[i]);
    dqg_graph_destroy(g);
}

/* LRN of odd sizes on oneDNN, even sizes (an uneven window in ONNX) on the
 * reference kernel; both against a direct evaluation of ONNX's formula. */
Test(lrn, compiled_matches_the_onnx_formula)
{
    test_rng = 99;
    enum { C = 7, S = 3 * 5, N = 2 * C * S };
    float x[N], got[N];
    for (int i = 0; i < N; i++)
        x[i] = uniform(-3, 3);
    for (int size = 1; size <= 6; size++) {
        dqg_graph *g;
        int64_t d[] = {2, C, 3, 5};
        dqg_graph_create(&g);
        dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 4, d);
        dqg_output(g, dqg_lrn(g, "n", in, size, 0.3f, 0.75f, 1.5f), "y");
        finalize_ok(g);
        cr_assert_eq(compile_run(g, x, sizeof x, got, sizeof got), DQG_OK, "%s", dqg_last_error());
        for (int n = 0; n < 2; n++)
            for (int c = 0; c < C; c++)
                for (int s = 0; s < S; s++) {
                    double sum = 0;
                    for (int j = c - (size - 1) / 2; j <= c + size / 2; j++)
                        if (j >= 0 && j < C)
                            sum += (double)x[(n * C + j) * S + s] * x[(n * C + j) * S + s];
                    int i = (n * C + c) * S + s;
                    double want = x[i] / pow(1.5 + 0.3 / size * sum, 0.75);
                    cr_assert_float_eq(got[i], want, 2e-6 * fabs(want) + 1e-7,
                                       "size %d [%d]: %g, expected %g", size, i, got[i], want);
                }
        dqg_graph_destroy(g);
    }
}

/* conv -> LRN -> conv (GoogLeNet's and AlexNet's normalisations): the
 * LRN's tensors are stored channels-last as the convolutions' are, and
 * oneDNN's LRN reads them so, with no reorder; against the reference. */
Test(lrn, runs_channels_last_between_convolutions)
{
    test_rng = 7;
    enum { C = 20, H = 6, W = 7, N = C * H * W };
    dqg_graph *g;
    dqg_graph_create(&g);
    int64_t xd[] = {1, C, H, W}, wd[] = {C, C, 1, 1};
    float w[C * C], x[N], got[N], want[N];
    for (int i = 0; i < C * C; i++)
        w[i] = uniform(-0.5f, 0.5f);
    for (int i = 0; i < N; i++)
        x[i] = uniform(-3, 3);
    dqg_conv_attrs ca = {.spatial_rank = 2};
    dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 4, xd);
    dqg_tensor_id h = dqg_convolution(g, "c1", in, test_const_f32(g, 4, wd, w), DQG_NONE, &ca);
    h = dqg_lrn(g, "n", h, 5, 1e-2f, 0.75f, 1.0f);
    dqg_output(g, dqg_convolution(g, "c2", h, test_const_f32(g, 4, wd, w), DQG_NONE, &ca), "y");
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert(test_explain_mentions(c, "layout: 2 activation tensors stored channels-last"));
    dqg_compiled_destroy(c);
    dqg_tensor_id yi = dqg_graph_output_id(g, 0);
    cr_assert_eq(run_ref_1(g, in, x, sizeof x, yi, want, sizeof want), DQG_OK, "%s",
                 dqg_last_error());
    cr_assert_eq(compile_run(g, x, sizeof x, got, sizeof got), DQG_OK, "%s", dqg_last_error());
    float big = 0;
    for (int i = 0; i < N; i++)
        big = fmaxf(big, fabsf(want[i]));
    for (int i = 0; i < N; i++)
        cr_assert_float_eq(got[i], want[i], 1e-5f * big, "[%d]: %g, reference %g", i, got[i],
                           want[i]);
    dqg_graph_destroy(g);
}

/* Concat of three inputs (one a constant) along each axis, f32 and u8 on
 * the copy kernel, s4 on the reference: exact. */
Test(concat, every_axis_and_type)
{
    const dqg_dtype types[] = {DQG_F32, DQG_U8, DQG_S4};
    for (int t = 0; t < 3; t++)
        for (int ax = 0; ax < 3; ax++) {
            int64_t da[] = {2, 3, 4}, db[] = {2, 3, 4}, dc[] = {2, 3, 4};
            da[ax] = 1;
            db[ax] = 2;
            dc[ax] = 3;
            int64_t na = 2 * 3 * 4 / (ax == 0 ? 2 : ax == 1 ? 3 : 4);
            int64_t nb = 2 * na, nc = 3 * na, ny = na + nb + nc;
            uint8_t A[64], B[128], C[192], Y[512], R[512];
            /* Small integers: exact in every one of the types. */
            float va[16], vb[32], vc[48];
            for (int i = 0; i < 48; i++) {
                if (i < 16)
                    va[i] = (float)(i % 15 - 7);
                if (i < 32)
                    vb[i] = (float)((i * 5) % 15 - 7);
                vc[i] = (float)((i * 3) % 15 - 7);
            }
            if (types[t] == DQG_U8)
                for (int i = 0; i < 48; i++) {
                    if (i < 16)
                        va[i] += 100;
                    if (i < 32)
                        vb[i] += 100;
                    vc[i] += 100;
                }
            dqg_dtype_encode(types[t], va, na, A, 0, true);
            dqg_dtype_encode(types[t], vb, nb, B, 0, true);
            dqg_dtype_encode(types[t], vc, nc, C, 0, true);
            dqg_graph *g;
            dqg_graph_create(&g);
            dqg_dtype dt = types[t];
            dqg_tensor_id a = dqg_input(g, "x", dt, 3, da);
            dqg_tensor_id b = dqg_constant(g, "b", dt, 3, db, B, dqg_dtype_storage_size(dt, nb));
            dqg_tensor_id cc = dqg_constant(g, "c", dt, 3, dc, C, dqg_dtype_storage_size(dt, nc));
            dqg_output(g, dqg_concat(g, "cat", 3, (dqg_tensor_id[]){a, b, cc}, ax - 3), "y");
            finalize_ok(g);
            size_t ya = dqg_dtype_storage_size(dt, ny), xa = dqg_dtype_storage_size(dt, na);
            cr_assert_eq(compile_run(g, A, xa, Y, ya), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(run_ref_1(g, a, A, xa, dqg_graph_output_id(g, 0), R, ya), DQG_OK);
            cr_assert_arr_eq(Y, R, ya, "type %d axis %d", t, ax);
            /* Element by element against the definition. */
            int64_t outer = 1, inner = 1;
            for (int d = 0; d < ax; d++)
                outer *= da[d];
            for (int d = ax + 1; d < 3; d++)
                inner *= da[d];
            float fy[512], fa[64], fb[128], fc[128];
            dqg_dtype_decode(dt, Y, 0, ny, fy);
            dqg_dtype_decode(dt, A, 0, na, fa);
            dqg_dtype_decode(dt, B, 0, nb, fb);
            dqg_dtype_decode(dt, C, 0, nc, fc);
            for (int64_t o = 0; o < outer; o++)
                for (int64_t k = 0; k < 6 * inner; k++) {
                    int64_t j = k / inner, in = k % inner;
                    float want = j < 1   ? fa[(o * 1 + j) * inner + in]
                                 : j < 3 ? fb[(o * 2 + j - 1) * inner + in]
                                         : fc[(o * 3 + j - 3) * inner + in];
                    cr_assert_eq(fy[o * 6 * inner + k], want, "type %d axis %d o %lld k %lld", t,
                                 ax, (long long)o, (long long)k);
                }
            dqg_graph_destroy(g);
        }
}

/* ---- LayerNorm and the reductions ------------------------------------------ */

Test(layer_norm, rules)
{
    dqg_graph *g;
    int64_t d[] = {2, 3, 4}, d4[] = {4}, d3[] = {3};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, d);
    dqg_tensor_id s3 = test_const_f32(g, 1, d3, (const float[]){1, 1, 1});
    cr_assert_eq(dqg_layer_norm(g, "ln", x, s3, DQG_NONE, -1, 1e-5f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LayerNorm 'ln'", "input 1 (scale)",
                 "[3]", "axis 2", "[4]");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 3, d);
    dqg_tensor_id s4 = test_const_f32(g, 1, d4, (const float[]){1, 1, 1, 1});
    cr_assert_eq(dqg_layer_norm(g, "ln", x, s4, DQG_NONE, 3, 1e-5f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LayerNorm 'ln'", "axis 3");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 3, d);
    s4 = test_const_f32(g, 1, d4, (const float[]){1, 1, 1, 1});
    cr_assert_eq(dqg_layer_norm(g, "ln", x, s4, DQG_NONE, -1, -1.0f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LayerNorm 'ln'", "epsilon");
    dqg_graph_destroy(g);
}

/* LayerNorm over the last axis and over the last two, with and without a
 * bias: oneDNN's mean and variance are float sums of 4 to 60 values, a few
 * ulps of the normalized value each: 4e-6 |y| + 2e-6. */
Test(layer_norm, compiled_matches_reference)
{
    test_rng = 4242;
    enum { N = 5 * 3 * 20 };
    float x[N], ref[N], got[N], sc[60], bi[60];
    for (int i = 0; i < N; i++)
        x[i] = uniform(-4, 4) + (i / 60) * 3.0f; /* rows of different means */
    for (int i = 0; i < 60; i++) {
        sc[i] = uniform(0.5f, 1.5f);
        bi[i] = uniform(-1, 1);
    }
    for (int axis = 1; axis <= 2; axis++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            dqg_graph *g;
            int64_t d[] = {5, 3, 20};
            dqg_graph_create(&g);
            dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 3, d);
            dqg_tensor_id s = test_const_f32(g, 3 - axis, d + axis, sc);
            dqg_tensor_id b = with_bias ? test_const_f32(g, 3 - axis, d + axis, bi) : DQG_NONE;
            dqg_output(g, dqg_layer_norm(g, "ln", in, s, b, axis, 1e-5f), "y");
            finalize_ok(g);
            cr_assert_eq(run_ref_1(g, in, x, sizeof x, dqg_graph_output_id(g, 0), ref, sizeof ref),
                         DQG_OK);
            cr_assert_eq(compile_run(g, x, sizeof x, got, sizeof got), DQG_OK, "%s",
                         dqg_last_error());
            double w = worst_ratio(got, ref, N, 4e-6, 2e-6);
            cr_assert(w <= 1.0, "axis %d bias %d: %.3g times the tolerance", axis, with_bias, w);
            dqg_graph_destroy(g);
        }
}

Test(reduce, rules)
{
    dqg_graph *g;
    int64_t d[] = {2, 3};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_reduce(g, "r", DQG_REDUCE_MEAN, x, 2, (const int64_t[]){1, -1}, true),
                 DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReduceMean 'r'", "axis 1", "twice");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_reduce(g, "r", DQG_REDUCE_SUM, x, 1, (const int64_t[]){2}, true), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReduceSum 'r'", "axis 2", "[-2, 2)");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_S32, 2, d);
    cr_assert_eq(dqg_reduce(g, "r", DQG_REDUCE_MAX, x, 0, NULL, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReduceMax 'r'", "s32");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_reduce(g, "r", (dqg_reduce_op)9, x, 0, NULL, false), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Reduce 'r'", "reduction 9");
    dqg_graph_destroy(g);
}

/* Every reduction over every subset of the axes of a [3, 4, 5] tensor,
 * and of a [3, 1, 5] one (reducing only its dimension of 1, which oneDNN's
 * reduction does not take, is a copy), keeping or dropping them: oneDNN
 * sums in float (up to 60 terms of magnitude <= 2: an error under
 * 60 * 2 * 2^-24 * 60 = 4e-4 at worst, far less in practice), products of
 * values near 1. */
Test(reduce, compiled_matches_reference_on_every_axis_set)
{
    test_rng = 31337;
    enum { N = 3 * 4 * 5 };
    float x[N], ref[N], got[N];
    for (int shape = 0; shape < 2; shape++) {
        for (int i = 0; i < N; i++)
            x[i] = uniform(-2, 2);
        for (int op = 0; op < DQG_REDUCE_COUNT; op++) {
            if (op == DQG_REDUCE_PROD)
                for (int i = 0; i < N; i++)
                    x[i] = uniform(0.9f, 1.1f);
            for (int mask = 0; mask < 8; mask++)
                for (int keep = 0; keep < 2; keep++) {
                    int64_t axes[3];
                    int n = 0;
                    for (int a = 0; a < 3; a++)
                        if (mask & (1 << a))
                            axes[n++] = a;
                    dqg_graph *g;
                    int64_t d[] = {3, shape ? 1 : 4, 5};
                    size_t xb = (size_t)(d[0] * d[1] * d[2]) * sizeof(float);
                    dqg_graph_create(&g);
                    dqg_tensor_id in = dqg_input(g, "x", DQG_F32, 3, d);
                    dqg_tensor_id y = dqg_reduce(g, "r", (dqg_reduce_op)op, in, n, axes, keep);
                    dqg_output(g, y, "y");
                    finalize_ok(g);
                    int64_t ny = dqg_tensor_element_count(g, y);
                    size_t yb = (size_t)ny * sizeof(float);
                    cr_assert_eq(run_ref_1(g, in, x, xb, y, ref, yb), DQG_OK);
                    cr_assert_eq(compile_run(g, x, xb, got, yb), DQG_OK, "%s", dqg_last_error());
                    double w = worst_ratio(got, ref, ny, 1e-6, 1e-5);
                    cr_assert(w <= 1.0, "shape %d op %d mask %d keep %d: %.3g times the tolerance",
                              shape, op, mask, keep, w);
                    dqg_graph_destroy(g);
                }
        }
    }
}

/* ---- Slice ------------------------------------------------------------------ */

Test(slice, rules)
{
    dqg_graph *g;
    int64_t d[] = {4, 6};
    const int64_t s0[] = {0}, e4[] = {4}, z[] = {0}, ax[] = {1, -1};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_slice(g, "s", x, 1, NULL, s0, e4, z), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Slice 's'", "step 0");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(
        dqg_slice(g, "s", x, 2, ax, (const int64_t[]){0, 0}, (const int64_t[]){1, 1}, NULL),
        DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Slice 's'", "axis 1", "twice");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_slice(g, "s", x, 1, (const int64_t[]){1}, (const int64_t[]){5},
                           (const int64_t[]){2}, NULL),
                 DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Slice 's'", "selects no element");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_slice(g, "s", x, 1, (const int64_t[]){2}, s0, e4, NULL), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Slice 's'", "axis 2");
    dqg_graph_destroy(g);
}

/* Random slices (negative and clamped bounds, steps -3 to 3) of a
 * [5, 6, 7] tensor of f32, u8 and s4, compiled against the reference and
 * against the definition: exact. */
Test(slice, random_windows_match_the_definition)
{
    test_rng = 2024;
    const dqg_dtype types[] = {DQG_F32, DQG_U8, DQG_S4};
    float xv[210];
    for (int i = 0; i < 210; i++)
        xv[i] = (float)(i % 15 - 7);
    for (int iter = 0; iter < 60; iter++) {
        dqg_dtype dt = types[iter % 3];
        int64_t d[] = {5, 6, 7}, axes[3], starts[3], ends[3], steps[3];
        int n = 1 + (int)(test_rnd() % 3);
        bool used[3] = {false};
        for (int i = 0; i < n; i++) {
            int a;
            do
                a = (int)(test_rnd() % 3);
            while (used[a]);
            used[a] = true;
            axes[i] = a - (test_rnd() % 2 ? 3 : 0);
            int64_t dim = d[a];
            steps[i] = (int64_t)(test_rnd() % 3) + 1;
            if (test_rnd() % 3 == 0)
                steps[i] = -steps[i];
            /* A nonempty window: start within the axis, end past it in the
             * step's direction, sometimes out of range or negative. */
            int64_t s = (int64_t)(test_rnd() % (uint32_t)dim);
            int64_t e = steps[i] > 0 ? s + 1 + (int64_t)(test_rnd() % (uint32_t)dim)
                                     : s - 1 - (int64_t)(test_rnd() % (uint32_t)dim);
            starts[i] = test_rnd() % 2 ? s - dim : s;
            ends[i] = e >= dim ? INT64_MAX : e < 0 ? (steps[i] < 0 ? INT64_MIN : e) : e;
        }
        uint8_t X[840], Y[840], R[840];
        /* The unused half of an odd s4 tensor's last byte stays as set. */
        memset(Y, 0, sizeof Y);
        memset(R, 0, sizeof R);
        dqg_dtype_encode(dt, xv, 210, X, 0, true);
        if (dt == DQG_U8)
            for (int i = 0; i < 210; i++)
                X[i] = (uint8_t)(X[i] + 100);
        dqg_graph *g;
        dqg_graph_create(&g);
        dqg_tensor_id x = dqg_input(g, "x", dt, 3, d);
        dqg_tensor_id y = dqg_slice(g, "s", x, n, axes, starts, ends, steps);
        cr_assert_neq(y, DQG_NONE, "iter %d: %s", iter, dqg_last_error());
        dqg_output(g, y, "y");
        finalize_ok(g);
        int64_t yd[3];
        dqg_tensor_dims(g, y, yd);
        int64_t ny = yd[0] * yd[1] * yd[2];
        size_t xb = dqg_dtype_storage_size(dt, 210), yb = dqg_dtype_storage_size(dt, ny);
        cr_assert_eq(compile_run(g, X, xb, Y, yb), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(run_ref_1(g, x, X, xb, y, R, yb), DQG_OK);
        cr_assert_arr_eq(Y, R, yb, "iter %d", iter);
        /* The definition: start + k * step per axis, starts and ends
         * clamped as ONNX does. */
        int64_t st[3] = {0, 0, 0}, sp[3] = {1, 1, 1};
        for (int i = 0; i < n; i++) {
            int a = (int)(axes[i] < 0 ? axes[i] + 3 : axes[i]);
            int64_t s = starts[i] < 0 ? starts[i] + d[a] : starts[i];
            st[a] = steps[i] > 0 ? (s > d[a] ? d[a] : s) : (s > d[a] - 1 ? d[a] - 1 : s);
            sp[a] = steps[i];
        }
        float fy[210], fx[210];
        dqg_dtype_decode(dt, Y, 0, ny, fy);
        dqg_dtype_decode(dt, X, 0, 210, fx);
        for (int64_t i = 0; i < ny; i++) {
            int64_t c2 = i % yd[2], c1 = (i / yd[2]) % yd[1], c0 = i / (yd[1] * yd[2]);
            int64_t src = ((st[0] + c0 * sp[0]) * 6 + st[1] + c1 * sp[1]) * 7 + st[2] + c2 * sp[2];
            cr_assert_eq(fy[i], fx[src], "iter %d element %lld", iter, (long long)i);
        }
        dqg_graph_destroy(g);
    }
}

/* Steps of any size, INT64_MIN and INT64_MAX included, take one element per
 * axis they run past (ONNX: start, then nothing within the axis). */
Test(slice, extreme_steps_take_one_element)
{
    const int64_t steps[] = {INT64_MIN, INT64_MIN + 1, -7, 7, INT64_MAX};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        dqg_graph *g;
        dqg_graph_create(&g);
        int64_t d[] = {5}, ax[] = {0}, st[] = {steps[i] < 0 ? 3 : 1},
                en[] = {steps[i] < 0 ? INT64_MIN : INT64_MAX};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
        dqg_tensor_id y = dqg_slice(g, "s", x, 1, ax, st, en, &steps[i]);
        cr_assert_neq(y, DQG_NONE, "step %lld: %s", (long long)steps[i], dqg_last_error());
        int64_t yd[1];
        dqg_tensor_dims(g, y, yd);
        cr_assert_eq(yd[0], 1, "step %lld: %lld elements", (long long)steps[i], (long long)yd[0]);
        dqg_output(g, y, "y");
        finalize_ok(g);
        float X[5] = {10, 11, 12, 13, 14}, Y[1] = {0}, R[1] = {0};
        cr_assert_eq(compile_run(g, X, sizeof X, Y, sizeof Y), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(run_ref_1(g, x, X, sizeof X, y, R, sizeof R), DQG_OK);
        cr_assert_eq(Y[0], X[st[0]], "step %lld", (long long)steps[i]);
        cr_assert_eq(R[0], X[st[0]], "step %lld", (long long)steps[i]);
        dqg_graph_destroy(g);
    }
}

/* ---- Recognized functions and their post-ops -------------------------------- */

static bool explained(const dqg_compiled *c, const char *what)
{
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        if (strstr(dqg_compiled_explain(c, i), what))
            return true;
    return false;
}

/* y = x W (f32 weights [K, N], constant) followed by `tail`. */
static dqg_tensor_id f32_matmul(dqg_graph *g, dqg_tensor_id x, int64_t K, int64_t N, float seed)
{
    float *w = malloc((size_t)(K * N) * sizeof *w);
    for (int64_t i = 0; i < K * N; i++)
        w[i] = sinf((float)i * 0.37f + seed) * 0.2f;
    int64_t wd[] = {K, N};
    dqg_tensor_id wt = test_const_f32(g, 2, wd, w);
    free(w);
    dqg_matmul_attrs a = {0};
    return dqg_matmul(g, NULL, x, wt, &a);
}

static dqg_tensor_id scalar_c(dqg_graph *g, float v)
{
    return dqg_constant(g, NULL, DQG_F32, 0, NULL, &v, sizeof v);
}

/* The Erf form of GELU in its two usual orders, and SiLU, after an f32
 * MatMul: each becomes one op, fused into the matmul's partition (the GELU
 * as dqgraph's own pass after the primitive where the CPU has AVX-512, as
 * oneDNN's post-op below), and the result agrees with the reference
 * (oneDNN's gelu_erf: 5e-7 absolute, as above, on values up to ~3; the own
 * pass 2e-7 |x|), at a small size and at one the pass splits between
 * threads. */
Test(recognize, gelu_and_silu_become_one_post_op)
{
    static const int64_t sizes[][3] = {{6, 16, 24}, {64, 32, 600}};
    for (int form = 0; form < 6; form++) {
        const int64_t M = sizes[form / 3][0], K = sizes[form / 3][1], N = sizes[form / 3][2];
        dqg_graph *g;
        int64_t xd[] = {M, K};
        dqg_graph_create(&g);
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
        dqg_tensor_id h = f32_matmul(g, x, K, N, 0.5f), y;
        if (form % 3 < 2) {
            dqg_tensor_id d = dqg_div(g, "d", h, scalar_c(g, sqrtf(2.0f)));
            dqg_tensor_id e = dqg_unary(g, "erf", DQG_UNARY_ERF, d, 0, 0);
            dqg_tensor_id a = dqg_add(g, "a", scalar_c(g, 1.0f), e);
            if (form % 3 == 0) /* (h * A) * 0.5 */
                y = dqg_mul(g, "half", dqg_mul(g, "m", h, a), scalar_c(g, 0.5f));
            else /* (h * 0.5) * A */
                y = dqg_mul(g, "fin", dqg_mul(g, "h", scalar_c(g, 0.5f), h), a);
        } else {
            y = dqg_mul(g, "silu", dqg_unary(g, "sig", DQG_UNARY_SIGMOID, h, 0, 0), h);
        }
        dqg_output(g, y, "y");
        finalize_ok(g);
        float *xv = malloc((size_t)(M * K) * sizeof *xv), *ref = malloc((size_t)(M * N) * 4),
              *got = malloc((size_t)(M * N) * 4);
        size_t xb = (size_t)(M * K) * sizeof *xv, yb = (size_t)(M * N) * 4;
        for (int i = 0; i < M * K; i++)
            xv[i] = cosf((float)i) * 2.0f;
        cr_assert_eq(run_ref_1(g, x, xv, xb, dqg_graph_output_id(g, 0), ref, yb), DQG_OK);
        dqg_compile_options o = dqg_compile_options_default();
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        cr_assert(explained(c, form % 3 < 2 ? "compute Gelu" : "compute Swish"), "form %d", form);
        cr_assert_eq(dqg_compiled_partition_count(c), 1, "form %d: %s", form,
                     dqg_compiled_partition_info(c, 1));
        cr_assert_eq(strstr(dqg_compiled_partition_info(c, 0), "+own:avx512:gelu") != NULL,
                     form % 3 < 2 && dqg_gelu_own_available(), "form %d: %s", form,
                     dqg_compiled_partition_info(c, 0));
        dqg_buffer in = {.name = "x", .data = xv, .size = xb};
        dqg_buffer out = {.name = "y", .data = got, .size = yb};
        cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        double w = worst_ratio(got, ref, M * N, 2e-6, 5e-7);
        cr_assert(w <= 1.0, "form %d: %.3g times the tolerance", form, w);
        dqg_compiled_destroy(c);
        /* Unfused: nothing recognized, the same values within the same
         * bound (the Erf chain runs op by op). */
        o.disable_fusion = true;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        cr_assert(!explained(c, "recognized"));
        cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        w = worst_ratio(got, ref, M * N, 2e-6, 5e-7);
        cr_assert(w <= 1.0, "form %d unfused: %.3g times the tolerance", form, w);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
        free(xv);
        free(ref);
        free(got);
    }
}

/* dqgraph's own GELU pass (runtime/gelu_kernel.h) against GELU in double:
 * within 2e-7 |x| everywhere (h = erfc(|x| / sqrt 2) / 2 from its piece's
 * polynomial, interpolation error under 1e-9, plus the rounding of five
 * fused multiply-adds near 0.5, of 1 - h and of the product: 1.6e-7 |x|
 * at most; measured 8.9e-8, and half a denormal where the result rounds
 * to one), on every piece's edges and either side of
 * them, a dense sweep of [-20, 20], lengths that leave a tail of each size
 * and one split between threads. Special values exactly: NaN stays NaN,
 * GELU(inf) = inf, GELU(-inf) = NaN as the reference's formula gives, the
 * sign of zero kept, x for x >= 8 and -0 for x <= -8. */
Test(gelu, own_pass_is_within_its_bound)
{
    if (!dqg_gelu_own_available())
        cr_skip_test("no AVX-512 here (or DQG_MAX_ISA below it)");
    enum { N = 40000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    int n = 0;
    for (int p = 0; p <= 33; p++)
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            float e = sgn * p / 4.0f;
            x[n++] = e;
            x[n++] = nextafterf(e, -INFINITY);
            x[n++] = nextafterf(e, INFINITY);
        }
    while (n < N - 1000)
        x[n] = -20.0f + 40.0f * (float)n / (N - 1000), n++;
    test_rng = 77;
    while (n < N)
        x[n++] = ((float)(test_rnd() % 2000001) - 1e6f) * 1e-5f;
    for (int len = 1; len <= N; len = len < 80 ? len + 1 : len * 3) {
        memcpy(y, x, (size_t)len * sizeof *y);
        dqg_gelu_erf_inplace(y, len);
        for (int i = 0; i < len; i++) {
            double v = x[i], ref = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
            cr_assert(fabs(y[i] - ref) <= 2e-7 * fabs(v) + 1e-45,
                      "len %d: GELU(%.9g) = %.9g, want %.9g", len, v, y[i], ref);
        }
    }
    memcpy(y, x, N * sizeof *y);
    dqg_gelu_erf_inplace(y, N);
    for (int i = 0; i < N; i++) {
        double v = x[i], ref = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        cr_assert(fabs(y[i] - ref) <= 2e-7 * fabs(v) + 1e-45, "GELU(%.9g) = %.9g, want %.9g", v,
                  y[i], ref);
    }
    float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 8.0f, 1e30f, -8.0f, -1e30f, 1e-40f};
    memcpy(y, sp, sizeof sp);
    dqg_gelu_erf_inplace(y, 10);
    cr_assert(isnan(y[0]) && y[1] == INFINITY && isnan(y[2]));
    cr_assert(y[3] == 0.0f && !signbit(y[3]) && y[4] == 0.0f && signbit(y[4]));
    cr_assert(y[5] == 8.0f && y[6] == 1e30f);
    cr_assert(y[7] == 0.0f && signbit(y[7]) && y[8] == 0.0f && signbit(y[8]));
    cr_assert_float_eq(y[9], 5e-41f, 1e-45f);
    free(x);
    free(y);
}

/* Mul(gate, up) of two matmuls' results: one partition takes it (both
 * used to, and the second ran it again on the first's output). */
Test(recognize, a_product_of_two_matmuls_is_taken_once)
{
    const int64_t M = 2, K = 16, N = 8;
    dqg_graph *g;
    int64_t xd[] = {M, K};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_tensor_id gate = f32_matmul(g, x, K, N, 0.1f), up = f32_matmul(g, x, K, N, 0.9f);
    dqg_tensor_id act =
        dqg_mul(g, "silu", gate, dqg_unary(g, "sig", DQG_UNARY_SIGMOID, gate, 0, 0));
    dqg_output(g, dqg_mul(g, "mlp", act, up), "y");
    finalize_ok(g);
    float xv[M * K], ref[M * N], got[M * N];
    for (int i = 0; i < M * K; i++)
        xv[i] = sinf((float)i);
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, dqg_graph_output_id(g, 0), ref, sizeof ref),
                 DQG_OK);
    cr_assert_eq(compile_run(g, xv, sizeof xv, got, sizeof got), DQG_OK, "%s", dqg_last_error());
    double w = worst_ratio(got, ref, M * N, 2e-6, 5e-7);
    cr_assert(w <= 1.0, "%.3g times the tolerance", w);
    dqg_graph_destroy(g);
}

Test(gather, rules)
{
    dqg_graph *g;
    int64_t d[] = {4, 3}, di[] = {2};
    const int32_t bad[] = {1, 4};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d);
    dqg_tensor_id f = dqg_input(g, "f", DQG_F32, 1, di);
    cr_assert_eq(dqg_gather(g, "gt", x, f, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Gather 'gt'", "input 1 (indices)",
                 "f32");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, d);
    dqg_tensor_id c = dqg_constant(g, "c", DQG_S32, 1, di, bad, sizeof bad);
    cr_assert_eq(dqg_gather(g, "gt", x, c, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Gather 'gt'", "element 1 is 4",
                 "[-4, 4)");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, d);
    c = dqg_constant(g, "c", DQG_S32, 1, di, bad, sizeof bad);
    cr_assert_eq(dqg_gather(g, "gt", x, c, 2), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Gather 'gt'", "axis 2");
    dqg_graph_destroy(g);
}

/* RMS normalization as Llama exporters write it: x / Sqrt(ReduceMean(x^2)
 * + eps) * gamma. Built here with the square as Pow or Mul(x, x), the
 * division as Div, Mul by Reciprocal or Mul by Div(1, root), gamma on
 * either side. */
typedef struct rms_form {
    int64_t rank, dims[4];
    int n_axes; /* the trailing axes reduced */
    int square, inverse, gamma_first;
} rms_form;

static dqg_tensor_id rms_graph(dqg_graph *g, dqg_tensor_id x, const rms_form *f, dqg_tensor_id eps,
                               dqg_tensor_id gamma)
{
    dqg_tensor_id sq = f->square ? dqg_mul(g, "sq", x, x) : dqg_pow(g, "sq", x, scalar_c(g, 2.0f));
    int64_t axes[4];
    for (int i = 0; i < f->n_axes; i++)
        axes[i] = f->rank - f->n_axes + i;
    dqg_tensor_id ms = dqg_reduce(g, "ms", DQG_REDUCE_MEAN, sq, f->n_axes, axes, true);
    dqg_tensor_id root = dqg_unary(g, "root", DQG_UNARY_SQRT, dqg_add(g, "plus", ms, eps), 0, 0);
    dqg_tensor_id n =
        f->inverse == 0 ? dqg_div(g, "n", x, root)
        : f->inverse == 1
            ? dqg_mul(g, "n", x, dqg_unary(g, "inv", DQG_UNARY_RECIPROCAL, root, 0, 0))
            : dqg_mul(g, "n", dqg_div(g, "inv", scalar_c(g, 1.0f), root), x);
    return f->gamma_first ? dqg_mul(g, "y", gamma, n) : dqg_mul(g, "y", n, gamma);
}

/* Each form becomes one LayerNorm with its rms flag on dqgraph's own
 * kernel, which rounds as the ops do (squares, mean, root, quotient and
 * product in f32, the sum in double): within 2 ulp of the op-by-op
 * reference, whose double sum runs in another order (op by op on oneDNN,
 * whose reduction sums in f32, within 1e-6). Rows of 2048 (a
 * Llama layer's), of 40 (a tail after two vectors), over two trailing
 * axes, and a tensor split between threads; zero rows (the root is then
 * sqrt(eps)) and large values whose squares leave f32 as the ops' do. */
Test(recognize, rms_normalization_becomes_one_op)
{
    static const rms_form forms[] = {
        {2, {1, 2048}, 1, 0, 0, 0},  {3, {3, 5, 40}, 1, 1, 1, 1}, {4, {2, 3, 4, 6}, 2, 0, 2, 0},
        {2, {64, 1024}, 1, 1, 0, 1}, {2, {4, 17}, 1, 0, 1, 0},    {2, {3, 33}, 1, 1, 2, 1},
    };
    for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
        const rms_form *f = &forms[fi];
        int64_t n = 1, inner = 1;
        for (int i = 0; i < f->rank; i++)
            n *= f->dims[i];
        for (int i = (int)f->rank - f->n_axes; i < f->rank; i++)
            inner *= f->dims[i];
        float *xv = malloc((size_t)n * sizeof *xv), *ref = malloc((size_t)n * sizeof *ref),
              *got = malloc((size_t)n * sizeof *got), *gv = malloc((size_t)inner * sizeof *gv);
        test_rng = 500 + (uint32_t)fi;
        for (int64_t i = 0; i < n; i++)
            xv[i] = uniform(-3.0f, 3.0f);
        for (int64_t i = 0; i < inner; i++)
            gv[i] = uniform(0.5f, 1.5f);
        for (int64_t i = 0; i < inner; i++) /* a row of zeros */
            xv[i] = 0.0f;
        if (n > inner) /* a row of squares beyond f32: the ops give 0 */
            for (int64_t i = inner; i < 2 * inner; i++)
                xv[i] = (i % 2 ? 3e19f : -2e20f);
        dqg_graph *g;
        dqg_graph_create(&g);
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, (int)f->rank, f->dims);
        dqg_tensor_id gamma = test_const_f32(g, f->n_axes, f->dims + f->rank - f->n_axes, gv);
        dqg_output(g, rms_graph(g, x, f, scalar_c(g, 1e-6f), gamma), "y");
        finalize_ok(g);
        size_t bytes = (size_t)n * sizeof *xv;
        cr_assert_eq(run_ref_1(g, x, xv, bytes, dqg_graph_output_id(g, 0), ref, bytes), DQG_OK);
        dqg_compile_options o = dqg_compile_options_default();
        for (int fused = 1; fused >= 0; fused--) {
            o.disable_fusion = !fused;
            dqg_compiled *c;
            cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(explained(c, "compute RMS normalization"), fused, "form %zu", fi);
            if (fused) {
                cr_assert_eq(dqg_compiled_partition_count(c), 1, "form %zu: %s", fi,
                             dqg_compiled_partition_info(c, 1));
                cr_assert(strstr(dqg_compiled_partition_info(c, 0), "rms-norm"), "form %zu: %s", fi,
                          dqg_compiled_partition_info(c, 0));
            }
            dqg_buffer in = {.name = "x", .data = xv, .size = bytes};
            dqg_buffer out = {.name = "y", .data = got, .size = bytes};
            cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
            /* unfused, oneDNN's reduction sums in f32: a few ulp */
            double w = worst_ratio(got, ref, n, fused ? 2.4e-7 : 1e-6, 1e-37);
            cr_assert(w <= 1.0, "form %zu, fused %d: %.3g times the tolerance", fi, fused, w);
            for (int64_t i = 0; i < inner; i++)
                cr_assert(got[i] == 0.0f, "form %zu: a zero row gives %g", fi, got[i]);
            /* Fused, the only difference is the double sum's order, which
             * moves a row's f32 mean only at a rounding boundary: all but
             * a rare row bit-identical (a quotient taken as a product by
             * the reciprocal, or the reverse, changes a fifth of them). */
            int64_t same = 0;
            for (int64_t i = 0; i < n; i++)
                same += memcmp(&got[i], &ref[i], sizeof got[i]) == 0;
            cr_assert(!fused || same >= n - n / 100, "form %zu: %lld of %lld bit-identical", fi,
                      (long long)same, (long long)n);
            dqg_compiled_destroy(c);
        }
        dqg_graph_destroy(g);
        free(xv);
        free(ref);
        free(got);
        free(gv);
    }
}

/* What is not RMS normalization stays op by op (and right): epsilon given
 * at run time, a cube, a mean over a leading axis, a square that is also
 * an output, a gamma that broadcasts x. */
Test(recognize, near_rms_normalizations_stay_as_they_are)
{
    const rms_form f = {2, {4, 24}, 1, 0, 0, 0};
    for (int v = 0; v < 5; v++) {
        dqg_graph *g;
        dqg_graph_create(&g);
        int64_t one = 1, gd[2] = {v == 4 ? 4 : 1, 24};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, f.dims);
        dqg_tensor_id eps = v == 0 ? dqg_input(g, "eps", DQG_F32, 1, &one) : scalar_c(g, 1e-5f);
        float gv[4 * 24];
        for (int i = 0; i < 4 * 24; i++)
            gv[i] = 1.0f + 0.01f * (float)i;
        dqg_tensor_id gamma = test_const_f32(g, 2, gd, gv), y;
        if (v == 1 || v == 2) {
            dqg_tensor_id sq =
                v == 1 ? dqg_pow(g, "sq", x, scalar_c(g, 3.0f)) : dqg_mul(g, "sq", x, x);
            int64_t ax = v == 2 ? 0 : 1;
            dqg_tensor_id ms = dqg_reduce(g, "ms", DQG_REDUCE_MEAN, sq, 1, &ax, true);
            dqg_tensor_id root =
                dqg_unary(g, "root", DQG_UNARY_SQRT, dqg_add(g, "plus", ms, eps), 0, 0);
            y = dqg_mul(g, "y", dqg_div(g, "n", x, root), gamma);
        } else if (v == 3) {
            dqg_tensor_id sq = dqg_mul(g, "sq", x, x);
            dqg_output(g, sq, "sq");
            int64_t ax = 1;
            dqg_tensor_id ms = dqg_reduce(g, "ms", DQG_REDUCE_MEAN, sq, 1, &ax, true);
            dqg_tensor_id root =
                dqg_unary(g, "root", DQG_UNARY_SQRT, dqg_add(g, "plus", ms, eps), 0, 0);
            y = dqg_mul(g, "y", dqg_div(g, "n", x, root), gamma);
        } else {
            y = rms_graph(g, x, &f, eps, gamma);
        }
        dqg_output(g, y, "y");
        finalize_ok(g);
        float xv[4 * 24], eps_v = 1e-5f, ref[4 * 24], got[4 * 24], sq_out[4 * 24];
        for (int i = 0; i < 4 * 24; i++)
            xv[i] = sinf((float)i) * 2.0f;
        dqg_buffer in[2] = {{.name = "x", .data = xv, .size = sizeof xv},
                            {.name = "eps", .data = &eps_v, .size = sizeof eps_v}};
        dqg_buffer out[2] = {{.name = "y", .data = ref, .size = sizeof ref},
                             {.name = "sq", .data = sq_out, .size = sizeof sq_out}};
        int n_in = v == 0 ? 2 : 1, n_out = v == 3 ? 2 : 1;
        cr_assert_eq(dqg_reference_run(g, in, n_in, out, n_out), DQG_OK, "%s", dqg_last_error());
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        cr_assert(!explained(c, "RMS normalization"), "variant %d was taken", v);
        out[0].data = got;
        cr_assert_eq(dqg_execute(c, in, n_in, out, n_out), DQG_OK, "%s", dqg_last_error());
        double w = worst_ratio(got, ref, 4 * 24, 1e-6, 1e-30);
        cr_assert(w <= 1.0, "variant %d: %.3g times the tolerance", v, w);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* Two Swish functions of different alpha after a MatMul: oneDNN 2.6 would
 * run the second post-op with the first one's alpha (its defect E), so the
 * second runs on its own, and the result matches the reference. */
Test(recognize, two_swish_post_ops_of_different_alpha)
{
    const int64_t M = 3, K = 8, N = 16;
    dqg_graph *g;
    int64_t xd[] = {M, K};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_tensor_id h = f32_matmul(g, x, K, N, 0.3f);
    h = dqg_unary(g, "s1", DQG_UNARY_SWISH, h, 0.5f, 0);
    dqg_output(g, dqg_unary(g, "s2", DQG_UNARY_SWISH, h, 2.0f, 0), "y");
    finalize_ok(g);
    float xv[M * K], ref[M * N], got[M * N];
    for (int i = 0; i < M * K; i++)
        xv[i] = sinf((float)i * 1.3f) * 3.0f;
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, dqg_graph_output_id(g, 0), ref, sizeof ref),
                 DQG_OK);
    cr_assert_eq(compile_run(g, xv, sizeof xv, got, sizeof got), DQG_OK, "%s", dqg_last_error());
    double w = worst_ratio(got, ref, M * N, 2e-6, 5e-7);
    cr_assert(w <= 1.0, "%.3g times the tolerance", w);
    dqg_graph_destroy(g);
}

/* Indices computed from constants (folded when the graph compiles) are
 * checked once, when the Gather kernel is built: an index outside the
 * axis fails the compile with the element named, as the reference fails
 * the run. */
Test(gather, folded_indices_are_checked_when_compiled)
{
    dqg_graph *g;
    int64_t d[] = {4, 3}, di[] = {2};
    const int32_t a[] = {1, 2}, b[] = {0, 3};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d);
    dqg_tensor_id ix = dqg_add(g, "ix", dqg_constant(g, "a", DQG_S32, 1, di, a, sizeof a),
                               dqg_constant(g, "b", DQG_S32, 1, di, b, sizeof b));
    dqg_output(g, dqg_gather(g, "gt", x, ix, 0), "y");
    finalize_ok(g);
    float xv[12] = {0}, y[6];
    expect_error(run_ref_1(g, x, xv, sizeof xv, dqg_graph_output_id(g, 0), y, sizeof y),
                 DQG_INVALID_ARGUMENT, "Gather 'gt'", "element 1 is 5");
    dqg_compiled *c = NULL;
    expect_error(dqg_compile(g, NULL, &c), DQG_INVALID_ARGUMENT, "Gather 'gt'", "element 1 is 5");
    dqg_graph_destroy(g);
}

/* Attention scores: MatMul(a [B, M, K], b [B, K, N]), then the ops of
 * `variant` between it and a (Log)Softmax over the last axis, built with
 * a graph input for each run-time operand. Variants: 0 Div by 8; 1 Div by
 * sqrt(128) (not a power of two); 2 Mul by 0.125, then Add of a mask per
 * column holding -10000 and -inf; 3 Div by a run-time scalar, then Add of
 * a run-time mask of the scores' shape (one row all -inf, one -1e9); 4
 * nothing; 5 Add of a mask per column, then Div by 8 (the order kept); 6
 * ReLU, then Add of a constant scalar (the ReLU stays a oneDNN post-op);
 * 7 Div by 8, then Add of a constant causal mask [M, N] shared by every
 * batch (the softmax reads its row r % M); 8 Add of a run-time mask [1,
 * M, N] shared the same way, then Div by 8. */
#define ATTN_VARIANTS 9
typedef struct attn_graph {
    dqg_graph *g;
    dqg_tensor_id in[4]; /* a, b, then the run-time divisor and mask (variant 3) */
    int n_in;
    size_t in_bytes[4];
    float *in_data[4];
    int64_t out_elems;
} attn_graph;

static void attn_free(attn_graph *t)
{
    for (int i = 0; i < t->n_in; i++)
        free(t->in_data[i]);
    dqg_graph_destroy(t->g);
}

static float *attn_input(attn_graph *t, const char *name, int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    int k = t->n_in++;
    t->in[k] = dqg_input(t->g, name, DQG_F32, rank, d);
    t->in_bytes[k] = (size_t)n * sizeof(float);
    t->in_data[k] = malloc(t->in_bytes[k]);
    cr_assert(t->in_data[k]);
    return t->in_data[k];
}

static attn_graph attn_build(int64_t B, int64_t M, int64_t K, int64_t N, int variant, bool log)
{
    attn_graph t = {0};
    dqg_graph_create(&t.g);
    dqg_graph *g = t.g;
    int64_t da[] = {B, M, K}, db[] = {B, K, N}, dn[] = {N}, dy[] = {B, M, N}, one[] = {1};
    float *a = attn_input(&t, "a", 3, da), *b = attn_input(&t, "b", 3, db);
    for (int64_t i = 0; i < B * M * K; i++)
        a[i] = uniform(-2, 2);
    for (int64_t i = 0; i < B * K * N; i++)
        b[i] = uniform(-2, 2);
    dqg_tensor_id y = dqg_matmul(g, "scores", t.in[0], t.in[1], NULL);
    float *col = malloc((size_t)N * sizeof *col);
    cr_assert(col);
    for (int64_t j = 0; j < N; j++)
        col[j] = j % 5 == 4 ? -10000.0f : j % 7 == 6 ? -INFINITY : uniform(-1, 1);
    dqg_tensor_id colmask = dqg_constant(g, "colmask", DQG_F32, 1, dn, col, (size_t)N * 4);
    free(col);
    float eight = 8.0f, sq = sqrtf(128.0f), eighth = 0.125f, c = 0.75f;
    switch (variant) {
    case 0:
        y = dqg_div(g, "scale", y, dqg_constant(g, "d", DQG_F32, 0, one, &eight, 4));
        break;
    case 1:
        y = dqg_div(g, "scale", y, dqg_constant(g, "d", DQG_F32, 0, one, &sq, 4));
        break;
    case 2:
        y = dqg_mul(g, "scale", dqg_constant(g, "d", DQG_F32, 0, one, &eighth, 4), y);
        y = dqg_add(g, "mask", y, colmask);
        break;
    case 3: {
        float *d = attn_input(&t, "d", 0, one);
        d[0] = 5.5f;
        float *mask = attn_input(&t, "m", 3, dy);
        for (int64_t i = 0; i < B * M * N; i++) {
            int64_t row = i / N;
            mask[i] = row == 1 ? -INFINITY : row == 2 && i % 3 == 0 ? -1e9f : uniform(-1, 0);
        }
        y = dqg_div(g, "scale", y, t.in[2]);
        y = dqg_add(g, "mask", t.in[3], y);
        break;
    }
    case 5:
        y = dqg_add(g, "mask", colmask, y);
        y = dqg_div(g, "scale", y, dqg_constant(g, "d", DQG_F32, 0, one, &eight, 4));
        break;
    case 6:
        y = dqg_relu(g, "relu", y);
        y = dqg_add(g, "shift", y, dqg_constant(g, "c", DQG_F32, 0, one, &c, 4));
        break;
    case 7:
    case 8: {
        int64_t dm[] = {1, M, N};
        float *mask = variant == 8 ? attn_input(&t, "m", 3, dm) : malloc((size_t)(M * N) * 4);
        cr_assert(mask);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                mask[i * N + j] = j > i + N - M ? -1e9f : uniform(-0.5f, 0.0f);
        dqg_tensor_id dt = dqg_constant(g, "d", DQG_F32, 0, one, &eight, 4);
        if (variant == 7) {
            dqg_tensor_id mt =
                dqg_constant(g, "causal", DQG_F32, 2, dm + 1, mask, (size_t)(M * N) * 4);
            free(mask);
            y = dqg_add(g, "mask", dqg_div(g, "scale", y, dt), mt);
        } else {
            y = dqg_div(g, "scale", dqg_add(g, "mask", t.in[t.n_in - 1], y), dt);
        }
        break;
    }
    default:
        break;
    }
    dqg_output(g, dqg_softmax(g, "probs", y, 2, log), "y");
    finalize_ok(g);
    t.out_elems = B * M * N;
    return t;
}

/* Runs t compiled (fused) and on the reference; returns the compiled
 * graph's partition count and writes its first partition's description. */
static size_t attn_run(attn_graph *t, float *ref, float *got, char *info, size_t info_size)
{
    size_t bytes = (size_t)t->out_elems * sizeof(float);
    dqg_buffer in[4];
    for (int i = 0; i < t->n_in; i++)
        in[i] = (dqg_buffer){.id = t->in[i], .data = t->in_data[i], .size = t->in_bytes[i]};
    dqg_buffer out = {.id = dqg_graph_output_id(t->g, 0), .data = ref, .size = bytes};
    cr_assert_eq(dqg_reference_run(t->g, in, t->n_in, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(t->g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    out.data = got;
    cr_assert_eq(dqg_execute(c, in, t->n_in, &out, 1), DQG_OK, "%s", dqg_last_error());
    size_t parts = dqg_compiled_partition_count(c);
    snprintf(info, info_size, "%s", dqg_compiled_partition_info(c, 0));
    dqg_compiled_destroy(c);
    return parts;
}

/* The softmax joins the scores' matmul in one partition, with the binary
 * ops before it applied to each row by the softmax (dqgraph's own kernel
 * on AVX-512, oneDNN's below): every variant, shape and (Log)Softmax agrees
 * with the reference. The scores are sums of K products of values in
 * [-2, 2] (error K 2^-24 4 each: under 2e-5 for K <= 64, relative to a
 * row's spread), which the softmax turns into the same relative error of
 * its outputs, plus the exponential's 3 ulp and the sum's n ulp: within
 * 1e-4 of the output's largest magnitude, the contract for f32 parts (at
 * least 1e-4: rows of one element, whose LogSoftmax is 0, come out of
 * oneDNN's kernel as 1.4e-6), and masked positions (-inf, -10000, -1e9) exactly 0. Rows whose
 * scores are all -inf are the reference's NaN. */
Test(softmax, attention_scores_join_their_matmul)
{
    test_rng = 0xa77e;
    const int64_t shapes[][4] = {{1, 1, 8, 1},   {2, 3, 5, 7},     {1, 17, 64, 16},
                                 {3, 9, 33, 33}, {2, 31, 64, 128}, {12, 16, 64, 100}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int variant = 0; variant < ATTN_VARIANTS; variant++)
            for (int log = 0; log < 2; log++) {
                const int64_t *s = shapes[si];
                if (variant == 3 && s[0] * s[1] < 3)
                    continue; /* its mask needs three rows */
                attn_graph t = attn_build(s[0], s[1], s[2], s[3], variant, log);
                size_t bytes = (size_t)t.out_elems * sizeof(float);
                float *ref = malloc(bytes), *got = malloc(bytes);
                cr_assert(ref && got);
                char info[512];
                size_t parts = attn_run(&t, ref, got, info, sizeof info);
                const char *want = !dqg_cpu_has(DQG_ISA_AVX512) ? "+softmax"
                                   : log                        ? "+own:avx512:logsoftmax"
                                                                : "+own:avx512:softmax";
                if (!dqg_cpu_has(DQG_ISA_AVX512) && log)
                    want = "+logsoftmax";
                cr_assert(parts == 1 && strstr(info, want),
                          "shape %zu variant %d log %d: %zu partitions, [0] %s", si, variant, log,
                          parts, info);
                double mx = 1;
                for (int64_t i = 0; i < t.out_elems; i++)
                    if (isfinite(ref[i]))
                        mx = fmax(mx, fabs(ref[i]));
                for (int64_t i = 0; i < t.out_elems; i++) {
                    if (isnan(ref[i])) {
                        cr_assert(isnan(got[i]), "shape %zu variant %d log %d: y[%lld] %g, not NaN",
                                  si, variant, log, (long long)i, got[i]);
                        continue;
                    }
                    if (!log && ref[i] == 0.0f)
                        cr_assert_eq(got[i], 0.0f, "shape %zu variant %d: y[%lld] %g, not 0", si,
                                     variant, (long long)i, got[i]);
                    if (isinf(ref[i]))
                        cr_assert_eq(got[i], ref[i], "shape %zu variant %d log %d: y[%lld] %g", si,
                                     variant, log, (long long)i, got[i]);
                    else
                        cr_assert(fabs((double)got[i] - ref[i]) <= 1e-4 * mx,
                                  "shape %zu variant %d log %d: y[%lld] %.9g, ref %.9g (max %g)",
                                  si, variant, log, (long long)i, got[i], ref[i], mx);
                }
                free(ref);
                free(got);
                attn_free(&t);
            }
}

/* What stays apart: a Softmax over another axis than the last, one whose
 * input is also a graph output, and one after an Add whose operand [2, 1,
 * 6] varies by batch but not by row (neither the epilogue nor the
 * softmax's row pre-ops take it) keep their own partitions. */
Test(softmax, attention_softmax_joins_only_its_own_rows)
{
    for (int kase = 0; kase < 3; kase++) {
        dqg_graph *g;
        dqg_graph_create(&g);
        int64_t da[] = {2, 4, 8}, db[] = {2, 8, 6}, dm[] = {2, 1, 6};
        dqg_tensor_id y = dqg_matmul(g, "scores", dqg_input(g, "a", DQG_F32, 3, da),
                                     dqg_input(g, "b", DQG_F32, 3, db), NULL);
        if (kase == 1)
            dqg_output(g, y, "scores_out");
        if (kase == 2)
            y = dqg_add(g, "mask", y, dqg_input(g, "m", DQG_F32, 3, dm));
        dqg_output(g, dqg_softmax(g, "probs", y, kase == 0 ? 1 : 2, false), "y");
        finalize_ok(g);
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_compiled_partition_count(c), kase == 2 ? 3 : 2, "case %d", kase);
        cr_assert(!test_explain_mentions(c, "then its softmax"), "case %d", kase);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* ---- Rotary embedding -------------------------------------------------- */

/* One rotary embedding graph: y = x cos + rotate_half(x) sin with x
 * [dims] (the last even), cos and sin of cdims (an input each when
 * `runtime`, else constants of cv, sv). `variant` writes a near miss:
 * 1 Concat(x[..., :h], -x[..., h:]), 2 Concat(-x[..., :h], x[..., h:]),
 * 3 the concat also a graph output, 4 the slices along the first axis,
 * 5 Sub for the Add, 6 the rotated x squared for the sin product;
 * `swap` puts every commutative op's operands the other way. */
typedef struct rope_form {
    int rank, crank;
    int64_t dims[4], cdims[4];
    bool runtime, swap;
} rope_form;

static dqg_graph *rope_graph(const rope_form *f, const float *cv, const float *sv, int variant)
{
    dqg_graph *g;
    dqg_graph_create(&g);
    int r = f->rank, ax = variant == 4 ? 0 : r - 1;
    int64_t d = f->dims[ax], h = d / 2;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, r, f->dims);
    dqg_tensor_id c = f->runtime ? dqg_input(g, "cos", DQG_F32, f->crank, f->cdims)
                                 : test_const_f32(g, f->crank, f->cdims, cv);
    dqg_tensor_id s = f->runtime ? dqg_input(g, "sin", DQG_F32, f->crank, f->cdims)
                                 : test_const_f32(g, f->crank, f->cdims, sv);
    int64_t axes[1] = {ax}, hs[1] = {h}, he[1] = {d}, ls[1] = {0}, le[1] = {h};
    if (variant == 2) { /* Concat(-x[..., :h], x[..., h:]) */
        hs[0] = 0;
        he[0] = h;
        ls[0] = h;
        le[0] = d;
    }
    dqg_tensor_id hi = dqg_slice(g, "slice_hi", x, 1, axes, hs, he, NULL);
    dqg_tensor_id lo = dqg_slice(g, "slice_lo", x, 1, axes, ls, le, NULL);
    dqg_tensor_id n = dqg_unary(g, "neg", DQG_UNARY_NEG, hi, 0, 0);
    dqg_tensor_id parts[2] = {n, lo};
    if (variant == 1) {
        parts[0] = lo;
        parts[1] = n;
    }
    dqg_tensor_id cat = dqg_concat(g, "rotated", 2, parts, ax);
    dqg_tensor_id a = f->swap ? dqg_mul(g, "mul_cos", c, x) : dqg_mul(g, "mul_cos", x, c);
    dqg_tensor_id b = variant == 6 ? dqg_mul(g, "mul_sin", cat, cat)
                      : f->swap    ? dqg_mul(g, "mul_sin", s, cat)
                                   : dqg_mul(g, "mul_sin", cat, s);
    dqg_tensor_id y = variant == 5 ? dqg_sub(g, "add", a, b)
                      : f->swap    ? dqg_add(g, "add", b, a)
                                   : dqg_add(g, "add", a, b);
    dqg_output(g, y, "y");
    if (variant == 3)
        dqg_output(g, cat, "rotated");
    finalize_ok(g);
    return g;
}

/* x, cos and sin values: uniform, with a NaN, infinities, -0, products
 * that overflow and ones that fall to denormals. */
static void rope_values(float *v, int64_t n, uint32_t seed)
{
    test_rng = seed;
    for (int64_t i = 0; i < n; i++)
        v[i] = uniform(-2.0f, 2.0f);
    static const float special[] = {NAN,   INFINITY, -INFINITY, -0.0f,
                                    3e38f, -2e38f,   1e-30f,    -3e-20f};
    for (int64_t i = 0; i < n && i < 8; i++)
        v[(i * 7919 + seed) % n] = special[i];
}

/* Bit for bit (any NaN matching any NaN). */
static bool same_bits(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static void rope_check(const rope_form *f, int variant, bool expect_fused, const char *what)
{
    int64_t n = 1, cn = 1;
    for (int i = 0; i < f->rank; i++)
        n *= f->dims[i];
    for (int i = 0; i < f->crank; i++)
        cn *= f->cdims[i];
    float *xv = malloc((size_t)n * sizeof *xv), *cv = malloc((size_t)cn * sizeof *cv),
          *sv = malloc((size_t)cn * sizeof *sv), *ref = malloc((size_t)n * sizeof *ref),
          *got = malloc((size_t)n * sizeof *got), *side = malloc((size_t)n * sizeof *side);
    rope_values(xv, n, 11);
    rope_values(cv, cn, 12);
    rope_values(sv, cn, 13);
    dqg_graph *g = rope_graph(f, cv, sv, variant);
    dqg_buffer in[3] = {{.name = "x", .data = xv, .size = (size_t)n * sizeof(float)},
                        {.name = "cos", .data = cv, .size = (size_t)cn * sizeof(float)},
                        {.name = "sin", .data = sv, .size = (size_t)cn * sizeof(float)}};
    size_t n_in = f->runtime ? 3 : 1;
    dqg_buffer out[2] = {{.name = "y", .data = ref, .size = (size_t)n * sizeof(float)},
                         {.name = "rotated", .data = side, .size = (size_t)n * sizeof(float)}};
    size_t n_out = variant == 3 ? 2 : 1;
    cr_assert_eq(dqg_reference_run(g, in, n_in, out, n_out), DQG_OK, "%s: %s", what,
                 dqg_last_error());
    dqg_compile_options o = dqg_compile_options_default();
    for (int fused = 1; fused >= 0; fused--) {
        o.disable_fusion = !fused;
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s: %s", what, dqg_last_error());
        bool rope = explained(c, "rotary embedding");
        cr_assert_eq(rope, fused && expect_fused, "%s, fused %d", what, fused);
        if (rope) {
            bool found = false;
            for (size_t p = 0; p < dqg_compiled_partition_count(c); p++)
                found |= strstr(dqg_compiled_partition_info(c, p), "rotary-embedding") != NULL;
            cr_assert(found, "%s: no rotary kernel", what);
        }
        out[0].data = got;
        cr_assert_eq(dqg_execute(c, in, n_in, out, n_out), DQG_OK, "%s: %s", what,
                     dqg_last_error());
        for (int64_t i = 0; i < n; i++)
            cr_assert(same_bits(got[i], ref[i]), "%s, fused %d: y[%lld] = %.9g, reference %.9g",
                      what, fused, (long long)i, got[i], ref[i]);
        out[0].data = ref;
        dqg_compiled_destroy(c);
    }
    dqg_graph_destroy(g);
    free(xv);
    free(cv);
    free(sv);
    free(ref);
    free(got);
    free(side);
}

/* x cos + Concat(-x[..., h:], x[..., :h]) sin becomes one partition whose
 * result is the ops' bit for bit: heads of 64 and 128, a half that is not
 * a multiple of 16, cos and sin per position or shared, constants or
 * inputs, one value per row (last axis broadcast), operands either way,
 * enough rows to split between threads. */
Test(recognize, rotary_embedding_becomes_one_partition)
{
    static const rope_form forms[] = {
        {4, 2, {1, 4, 3, 64}, {3, 64}, false, false},
        {3, 2, {8, 5, 128}, {5, 128}, true, false},
        {4, 4, {1, 2, 3, 34}, {1, 1, 3, 34}, false, true},
        {2, 1, {4, 32}, {32}, true, true},
        {3, 2, {2, 6, 10}, {6, 1}, false, false},
        {4, 2, {1, 32, 32, 128}, {32, 128}, false, false},
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char what[32];
        snprintf(what, sizeof what, "form %zu", i);
        rope_check(&forms[i], 0, true, what);
    }
}

/* What is not a rotary embedding stays op by op (and right): the halves
 * concatenated the other way, the other half negated, the rotated tensor
 * also an output, the rotation along another axis, a difference for the
 * sum, the rotated tensor times itself. */
Test(recognize, near_rotary_embeddings_stay_as_they_are)
{
    const rope_form f = {3, 2, {6, 4, 16}, {4, 16}, false, false};
    for (int v = 1; v <= 6; v++) {
        char what[32];
        snprintf(what, sizeof what, "variant %d", v);
        rope_form form = f;
        if (v == 4) { /* along axis 0 (6 rows: halves of 3), cos over it too */
            form.crank = 3;
            form.cdims[0] = 6;
            form.cdims[1] = 4;
            form.cdims[2] = 16;
        }
        rope_check(&form, v, false, what);
    }
}
