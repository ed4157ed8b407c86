/* Reference results of MatMul, Convolution, BiasAdd and the element-wise
 * and layout ops against hand-computed values, and each op's build rules. */
#include <math.h>

#include "test_common.h"

static dqg_graph *G(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

/* Finalizes, runs the reference with inputs a (and b unless DQG_NONE) and
 * checks the f32 output against `want`. */
static void run2(dqg_graph *g, dqg_tensor_id a, const void *da, dqg_tensor_id b, const void *db,
                 dqg_tensor_id y, const float *want, int n)
{
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    dqg_buffer in[2] = {{.id = a, .data = (void *)da, .size = dqg_tensor_byte_size(g, a)},
                        {.id = b, .data = (void *)db, .size = dqg_tensor_byte_size(g, b)}};
    float out[256];
    cr_assert_eq(dqg_tensor_element_count(g, y), n);
    dqg_buffer o = {.id = y, .data = out, .size = (size_t)n * sizeof(float)};
    dqg_status st = dqg_reference_run(g, in, b == DQG_NONE ? 1 : 2, &o, 1);
    cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < n; i++)
        cr_assert_float_eq(out[i], want[i], 1e-6, "element %d: got %g, want %g", i, out[i],
                           want[i]);
    dqg_graph_destroy(g);
}

Test(matmul, two_d)
{
    dqg_graph *g = G();
    int64_t ad[] = {2, 3}, bd[] = {3, 2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 2, bd);
    float A[] = {1, 2, 3, 4, 5, 6}, B[] = {7, 8, 9, 10, 11, 12};
    float want[] = {58, 64, 139, 154};
    run2(g, a, A, b, B, dqg_matmul(g, "mm", a, b, NULL), want, 4);
}

Test(matmul, transpose_b_and_a)
{
    dqg_graph *g = G();
    int64_t ad[] = {3, 2}, bd[] = {2, 3};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 2, bd);
    /* a^T = [[1,3,5],[2,4,6]], b^T = [[7,10],[8,11],[9,12]] */
    float A[] = {1, 2, 3, 4, 5, 6}, B[] = {7, 8, 9, 10, 11, 12};
    float want[] = {1 * 7 + 3 * 8 + 5 * 9, 1 * 10 + 3 * 11 + 5 * 12, 2 * 7 + 4 * 8 + 6 * 9,
                    2 * 10 + 4 * 11 + 6 * 12};
    dqg_matmul_attrs at = {.transpose_a = true, .transpose_b = true};
    run2(g, a, A, b, B, dqg_matmul(g, "mm", a, b, &at), want, 4);
}

Test(matmul, batched_broadcast)
{
    /* a [2,1,1,2] x b [3,2,1] -> [2,3,1,1] */
    dqg_graph *g = G();
    int64_t ad[] = {2, 1, 1, 2}, bd[] = {3, 2, 1};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 4, ad), b = dqg_input(g, "b", DQG_F32, 3, bd);
    float A[] = {1, 2, 3, 4}, B[] = {1, 1, 2, 0, 0, 3};
    float want[] = {3, 2, 6, 7, 6, 12};
    dqg_tensor_id y = dqg_matmul(g, "mm", a, b, NULL);
    int64_t dims[8];
    cr_assert_eq(dqg_tensor_dims(g, y, dims), 4);
    cr_assert(dims[0] == 2 && dims[1] == 3 && dims[2] == 1 && dims[3] == 1);
    run2(g, a, A, b, B, y, want, 6);
}

Test(matmul, vector_operands)
{
    dqg_graph *g = G();
    int64_t vd[] = {3}, md[] = {3, 2};
    dqg_tensor_id v = dqg_input(g, "v", DQG_F32, 1, vd), m = dqg_input(g, "m", DQG_F32, 2, md);
    float V[] = {1, 2, 3}, M[] = {1, 2, 3, 4, 5, 6};
    float want[] = {22, 28};
    dqg_tensor_id y = dqg_matmul(g, "vm", v, m, NULL);
    cr_assert_eq(dqg_tensor_rank(g, y), 1, "the promoted dimension is removed");
    run2(g, v, V, m, M, y, want, 2);
}

Test(matmul, bf16_output_rounds_once)
{
    dqg_graph *g = G();
    int64_t ad[] = {1, 2}, bd[] = {2, 1};
    dqg_tensor_id a = dqg_input(g, "a", DQG_BF16, 2, ad), b = dqg_input(g, "b", DQG_BF16, 2, bd);
    /* 1 * 1 + 1 * 2^-8 = 1.00390625: halfway between bf16 1.0 and 1.0078125 -> even (1.0). */
    uint16_t A[] = {0x3F80, 0x3F80}, B[] = {0x3F80, 0x3B80};
    dqg_tensor_id y = dqg_matmul(g, "mm", a, b, NULL);
    dqg_output(g, y, "y");
    finalize_ok(g);
    uint16_t out[1];
    dqg_buffer in[2] = {{.id = a, .data = A, .size = 4}, {.id = b, .data = B, .size = 4}};
    dqg_buffer o = {.id = y, .data = out, .size = 2};
    cr_assert_eq(dqg_reference_run(g, in, 2, &o, 1), DQG_OK);
    cr_assert_eq(out[0], 0x3F80);
    dqg_graph_destroy(g);
}

Test(matmul, k_mismatch)
{
    dqg_graph *g = G();
    int64_t ad[] = {4, 64}, bd[] = {32, 8};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 2, bd);
    cr_assert_eq(dqg_matmul(g, "fc1", a, b, NULL), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT,
                 "MatMul 'fc1': inner dimensions differ: input 0 has K=64, input 1 has K=32");
    dqg_graph_destroy(g);
}

Test(matmul, integer_input_rejected)
{
    dqg_graph *g = G();
    int64_t d[] = {2, 2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_S8, 2, d), b = dqg_input(g, "b", DQG_F32, 2, d);
    dqg_matmul(g, "mm", a, b, NULL);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "MatMul 'mm'", "input 0 (a)",
                 "data type s8");
    dqg_graph_destroy(g);
}

Test(matmul, rank0_and_mixed_types)
{
    dqg_graph *g = G();
    int64_t d[] = {2, 2};
    dqg_tensor_id s = dqg_input(g, "s", DQG_F32, 0, NULL), b = dqg_input(g, "b", DQG_F32, 2, d);
    dqg_matmul(g, "mm", s, b, NULL);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "rank 0 is not allowed");
    dqg_graph_destroy(g);
    g = G();
    dqg_tensor_id a = dqg_input(g, "a", DQG_F16, 2, d);
    b = dqg_input(g, "b", DQG_F32, 2, d);
    dqg_matmul(g, "mm", a, b, NULL);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "different data types", "f16", "f32");
    dqg_graph_destroy(g);
}

Test(matmul, batch_not_broadcastable)
{
    dqg_graph *g = G();
    int64_t ad[] = {2, 3, 4}, bd[] = {3, 4, 5};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 3, ad), b = dqg_input(g, "b", DQG_F32, 3, bd);
    dqg_matmul(g, "mm", a, b, NULL);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "batch dimensions do not broadcast");
    dqg_graph_destroy(g);
}

static dqg_conv_attrs conv2d(int64_t s, int64_t p, int64_t d, int64_t groups, dqg_data_format f)
{
    return (dqg_conv_attrs){.spatial_rank = 2,
                            .strides = {s, s},
                            .pads_begin = {p, p},
                            .pads_end = {p, p},
                            .dilations = {d, d},
                            .groups = groups,
                            .data_format = f};
}

/* x [1,1,3,3] = 1..9, w [1,1,2,2] = [1,0,0,1] (x[i][j] + x[i+1][j+1]) */
Test(convolution, valid_2x2)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 1, 3, 3}, wd[] = {1, 1, 2, 2};
    float X[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, W[] = {1, 0, 0, 1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_conv_attrs a = conv2d(1, 0, 1, 1, DQG_FORMAT_NCX);
    float want[] = {6, 8, 12, 14};
    run2(g, x, X, w, W, dqg_convolution(g, "c", x, w, DQG_NONE, &a), want, 4);
}

Test(convolution, padding_and_stride)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 1, 3, 3}, wd[] = {1, 1, 2, 2};
    float X[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, W[] = {1, 0, 0, 1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_conv_attrs a = conv2d(2, 1, 1, 1, DQG_FORMAT_NCX);
    /* padded 5x5, output 2x2 at (0,0),(0,2),(2,0),(2,2): [1, 3+0... ] */
    /* out(0,0) = pad + x[0][0] = 1; out(0,1) = x(-1,1)+x(0,2)=3; out(1,0)=x(1,-1)+x(2,0)=7;
     * out(1,1) = x(1,1)+x(2,2) = 5+9 = 14 */
    float want[] = {1, 3, 7, 14};
    run2(g, x, X, w, W, dqg_convolution(g, "c", x, w, DQG_NONE, &a), want, 4);
}

Test(convolution, dilation)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 1, 3, 3}, wd[] = {1, 1, 2, 2};
    float X[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, W[] = {1, 1, 1, 1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_conv_attrs a = conv2d(1, 0, 2, 1, DQG_FORMAT_NCX);
    float want[] = {1 + 3 + 7 + 9};
    run2(g, x, X, w, W, dqg_convolution(g, "c", x, w, DQG_NONE, &a), want, 1);
}

Test(convolution, groups_and_bias)
{
    /* 2 channels, 2 groups (depthwise), 1x1 kernels with weights 2 and 3, bias 10, 20. */
    dqg_graph *g = G();
    int64_t xd[] = {1, 2, 1, 2}, wd[] = {2, 1, 1, 1}, bd[] = {2};
    float X[] = {1, 2, 3, 4}, W[] = {2, 3}, B[] = {10, 20};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_tensor_id b = dqg_constant(g, "b", DQG_F32, 1, bd, B, sizeof B);
    dqg_conv_attrs a = conv2d(1, 0, 1, 2, DQG_FORMAT_NCX);
    float want[] = {12, 14, 29, 32};
    run2(g, x, X, w, W, dqg_convolution(g, "c", x, w, b, &a), want, 4);
}

Test(convolution, nxc_matches_ncx)
{
    /* NHWC [1,2,2,2]: pixel-major, channels last. One output channel summing
     * both input channels with weights 1 and 10, kernel 1x1. */
    dqg_graph *g = G();
    int64_t xd[] = {1, 2, 2, 2}, wd[] = {1, 2, 1, 1};
    float X[] = {1, 2, 3, 4, 5, 6, 7, 8}, W[] = {1, 10};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_conv_attrs a = conv2d(1, 0, 1, 1, DQG_FORMAT_NXC);
    float want[] = {21, 43, 65, 87};
    run2(g, x, X, w, W, dqg_convolution(g, "c", x, w, DQG_NONE, &a), want, 4);
}

Test(convolution, one_d_and_three_d)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 1, 5}, wd[] = {1, 1, 3};
    float X[] = {1, 2, 3, 4, 5}, W[] = {1, 2, 3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd), w = dqg_input(g, "w", DQG_F32, 3, wd);
    dqg_conv_attrs a = {.spatial_rank = 1, .data_format = DQG_FORMAT_NCX};
    float want[] = {14, 20, 26};
    run2(g, x, X, w, W, dqg_convolution(g, "c1", x, w, DQG_NONE, &a), want, 3);

    g = G();
    int64_t xd3[] = {1, 1, 2, 2, 2}, wd3[] = {1, 1, 2, 2, 2};
    float X3[] = {1, 2, 3, 4, 5, 6, 7, 8}, W3[] = {1, 1, 1, 1, 1, 1, 1, 1};
    x = dqg_input(g, "x", DQG_F32, 5, xd3);
    w = dqg_input(g, "w", DQG_F32, 5, wd3);
    dqg_conv_attrs a3 = {.spatial_rank = 3, .data_format = DQG_FORMAT_NCX};
    float want3[] = {36};
    run2(g, x, X3, w, W3, dqg_convolution(g, "c3", x, w, DQG_NONE, &a3), want3, 1);
}

static void conv_error(dqg_conv_attrs a, int64_t C, int64_t O, int64_t Cg, int64_t K,
                       const char *key)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, C, 4, 4}, wd[] = {O, Cg, K, K};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
    cr_assert_eq(dqg_convolution(g, "conv", x, w, DQG_NONE, &a), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Convolution 'conv'", key);
    dqg_graph_destroy(g);
}

Test(convolution, invalid_builds)
{
    conv_error(conv2d(1, 0, 1, 4, DQG_FORMAT_NCX), 6, 4, 1, 1,
               "input channels 6 are not divisible by groups 4");
    conv_error(conv2d(1, 0, 1, 2, DQG_FORMAT_NCX), 4, 3, 2, 1,
               "output channels 3 are not divisible by groups 2");
    conv_error(conv2d(1, 0, 1, 1, DQG_FORMAT_NCX), 4, 4, 3, 1, "dimension 1 is 3");
    conv_error(conv2d(-1, 0, 1, 1, DQG_FORMAT_NCX), 4, 4, 4, 1, "stride -1");
    conv_error(conv2d(1, -1, 1, 1, DQG_FORMAT_NCX), 4, 4, 4, 1, "negative pad");
    conv_error(conv2d(1, 0, 1, 1, DQG_FORMAT_NCX), 4, 4, 4, 5, "output size at spatial dim 0");
    conv_error(conv2d(1, 0, 3, 1, DQG_FORMAT_NCX), 4, 4, 4, 3, "dilated kernel 7");
    dqg_conv_attrs bad = conv2d(1, 0, 1, 1, DQG_FORMAT_NCX);
    bad.spatial_rank = 3;
    conv_error(bad, 4, 4, 4, 1, "does not match spatial_rank 3");
    bad = conv2d(1, 0, 1, 1, (dqg_data_format)9);
    conv_error(bad, 4, 4, 4, 1, "data_format 9");
}

Test(convolution, null_attrs_and_bad_bias)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 2, 3, 3}, wd[] = {4, 2, 1, 1}, bd[] = {3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd), w = dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_convolution(g, "conv", x, w, DQG_NONE, NULL);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "attrs is NULL");
    dqg_graph_destroy(g);
    g = G();
    x = dqg_input(g, "x", DQG_F32, 4, xd);
    w = dqg_input(g, "w", DQG_F32, 4, wd);
    dqg_tensor_id b = dqg_input(g, "b", DQG_F32, 1, bd);
    dqg_conv_attrs a = conv2d(1, 0, 1, 1, DQG_FORMAT_NCX);
    dqg_convolution(g, "conv", x, w, b, &a);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "input 2 (bias)", "length 4");
    dqg_graph_destroy(g);
}

Test(bias_add, ncx_and_nxc)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 2, 2}, bd[] = {2};
    float X[] = {1, 2, 3, 4}, B[] = {10, 20};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd), b = dqg_input(g, "b", DQG_F32, 1, bd);
    float want_ncx[] = {11, 12, 23, 24};
    run2(g, x, X, b, B, dqg_bias_add(g, "ba", x, b, DQG_FORMAT_NCX), want_ncx, 4);
    g = G();
    x = dqg_input(g, "x", DQG_F32, 3, xd);
    b = dqg_input(g, "b", DQG_F32, 1, bd);
    float want_nxc[] = {11, 22, 13, 24};
    run2(g, x, X, b, B, dqg_bias_add(g, "ba", x, b, DQG_FORMAT_NXC), want_nxc, 4);
}

Test(bias_add, wrong_length)
{
    dqg_graph *g = G();
    int64_t xd[] = {2, 3}, bd[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd), b = dqg_input(g, "b", DQG_F32, 1, bd);
    dqg_bias_add(g, "ba", x, b, DQG_FORMAT_NXC);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "BiasAdd 'ba'", "length 3");
    dqg_graph_destroy(g);
}

Test(elementwise, add_mul_broadcast)
{
    dqg_graph *g = G();
    int64_t ad[] = {2, 3}, bd[] = {3};
    float A[] = {1, 2, 3, 4, 5, 6}, B[] = {10, 20, 30};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 1, bd);
    float want[] = {11, 22, 33, 14, 25, 36};
    run2(g, a, A, b, B, dqg_add(g, "add", a, b), want, 6);
    g = G();
    int64_t cd[] = {2, 1}, dd[] = {1, 3};
    float C[] = {2, 3}, D[] = {1, 10, 100};
    dqg_tensor_id c = dqg_input(g, "c", DQG_F32, 2, cd), d = dqg_input(g, "d", DQG_F32, 2, dd);
    float want2[] = {2, 20, 200, 3, 30, 300};
    run2(g, c, C, d, D, dqg_mul(g, "mul", c, d), want2, 6);
}

Test(elementwise, scalar_operand)
{
    dqg_graph *g = G();
    int64_t ad[] = {3};
    float A[] = {1, -2, 3}, S[] = {-0.5f};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, ad), s = dqg_input(g, "s", DQG_F32, 0, NULL);
    float want[] = {-0.5f, 1, -1.5f};
    run2(g, a, A, s, S, dqg_mul(g, "mul", a, s), want, 3);
}

Test(elementwise, clip_values_and_nan)
{
    dqg_graph *g = G();
    int64_t d[] = {5};
    float X[] = {-3, 0.5f, 7, NAN, 6};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id y = dqg_clip(g, "c", x, 0, 6);
    dqg_output(g, y, "y");
    finalize_ok(g);
    float out[5];
    cr_assert_eq(run_ref_1(g, x, X, sizeof X, y, out, sizeof out), DQG_OK);
    cr_assert_eq(out[0], 0);
    cr_assert_eq(out[1], 0.5f);
    cr_assert_eq(out[2], 6);
    cr_assert(isnan(out[3]));
    cr_assert_eq(out[4], 6);
    dqg_graph_destroy(g);
}

Test(elementwise, invalid_builds)
{
    dqg_graph *g = G();
    int64_t ad[] = {2, 3}, bd[] = {4};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 1, bd);
    dqg_add(g, "add", a, b);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Add 'add'", "do not broadcast");
    dqg_graph_destroy(g);
    g = G();
    a = dqg_input(g, "a", DQG_F32, 2, ad);
    dqg_clip(g, "c", a, 6, 0);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Clip 'c'",
                 "min 6 is greater than max 0");
    dqg_graph_destroy(g);
    g = G();
    a = dqg_input(g, "a", DQG_F32, 2, ad);
    dqg_clip(g, "c", a, NAN, 1);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "must not be NaN");
    dqg_graph_destroy(g);
    g = G();
    a = dqg_input(g, "a", DQG_U4, 2, ad);
    b = dqg_input(g, "b", DQG_U4, 2, ad);
    dqg_mul(g, "m", a, b);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Mul 'm'", "data type u4");
    dqg_graph_destroy(g);
}

Test(shape_ops, reshape_zero_and_minus_one)
{
    dqg_graph *g = G();
    int64_t xd[] = {2, 3, 4}, shape[] = {0, -1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
    dqg_tensor_id y = dqg_reshape(g, "r", x, 2, shape);
    int64_t d[8];
    cr_assert_eq(dqg_tensor_dims(g, y, d), 2);
    cr_assert_eq(d[0], 2);
    cr_assert_eq(d[1], 12);
    dqg_graph_destroy(g);
}

Test(shape_ops, reshape_errors)
{
    struct {
        int rank;
        int64_t shape[9];
        const char *key;
    } cases[] = {
        {2, {4, 2}, "element count differs: input [2,3] has 6 elements, shape [4,2] has 8"},
        {2, {-1, -1}, "more than one -1"},
        {3, {1, 1, 0}, "shape[2] is 0"},
        {2, {-2, 3}, "only -1 may be negative"},
        {9, {1, 1, 1, 1, 1, 1, 1, 1, 6}, "target rank 9"},
        {2, {-1, 4}, "cannot infer the -1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dqg_graph *g = G();
        int64_t xd[] = {2, 3};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
        cr_assert_eq(dqg_reshape(g, "r", x, cases[i].rank, cases[i].shape), DQG_NONE);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Reshape 'r'", cases[i].key);
        dqg_graph_destroy(g);
    }
}

Test(shape_ops, transpose_3d)
{
    dqg_graph *g = G();
    int64_t xd[] = {2, 1, 3}, perm[] = {2, 0, 1};
    float X[] = {1, 2, 3, 4, 5, 6};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
    float want[] = {1, 4, 2, 5, 3, 6}; /* [3,2,1] */
    run2(g, x, X, DQG_NONE, NULL, dqg_transpose(g, "t", x, perm), want, 6);
}

Test(shape_ops, transpose_s4_odd)
{
    dqg_graph *g = G();
    int64_t xd[] = {3, 1};
    /* s4 values 1, -2, 3 -> nibbles 0x1, 0xE, 0x3 */
    uint8_t X[] = {0xE1, 0x03};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S4, 2, xd);
    dqg_tensor_id y = dqg_typecast(g, "f", dqg_transpose(g, "t", x, NULL), DQG_F32);
    float want[] = {1, -2, 3};
    run2(g, x, X, DQG_NONE, NULL, y, want, 3);
}

Test(shape_ops, transpose_bad_perm)
{
    int64_t perms[][3] = {{0, 0, 1}, {0, 1, 3}};
    for (int i = 0; i < 2; i++) {
        dqg_graph *g = G();
        int64_t xd[] = {2, 2, 2};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
        dqg_transpose(g, "t", x, perms[i]);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Transpose 't'",
                     "is not a permutation of 0..2");
        dqg_graph_destroy(g);
    }
}

Test(shape_ops, typecast_rounding)
{
    dqg_graph *g = G();
    int64_t d[] = {2};
    int32_t X[] = {16777217, -16777219};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S32, 1, d);
    float want[] = {16777216.0f, -16777220.0f};
    run2(g, x, X, DQG_NONE, NULL, dqg_typecast(g, "c", x, DQG_F32), want, 2);
}

Test(shape_ops, typecast_to_integer_rounds_half_even_and_saturates)
{
    dqg_graph *g = G();
    int64_t d[] = {8};
    float X[] = {2.5f, 3.5f, -2.5f, -129.7f, 200.0f, NAN, -0.4f, 127.49f};
    const int8_t want[] = {2, 4, -2, -128, 127, 0, 0, 127};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id y = dqg_typecast(g, "c", x, DQG_S8);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    dqg_buffer in = {.id = x, .data = X, .size = sizeof X};
    for (int backend = 0; backend < 3; backend++) {
        int8_t out[8];
        memset(out, 0x55, sizeof out);
        dqg_buffer o = {.id = y, .data = out, .size = sizeof out};
        if (backend == 0) {
            cr_assert_eq(dqg_reference_run(g, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
        } else {
            dqg_compile_options opt = dqg_compile_options_default();
            opt.backend = backend == 1 ? DQG_BACKEND_ONEDNN : DQG_BACKEND_REFERENCE;
            dqg_compiled *c = NULL;
            cr_assert_eq(dqg_compile(g, &opt, &c), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(dqg_execute(c, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
            dqg_compiled_destroy(c);
        }
        for (int i = 0; i < 8; i++)
            cr_assert_eq(out[i], want[i], "backend %d element %d: %d, want %d", backend, i, out[i],
                         want[i]);
    }
    dqg_graph_destroy(g);
}

Test(shape_ops, typecast_to_s32_saturates_and_s4_is_rejected)
{
    dqg_graph *g = G();
    int64_t d[] = {3};
    float X[] = {3e9f, -3e9f, 65536.5f};
    const int32_t want[] = {INT32_MAX, INT32_MIN, 65536};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id y = dqg_typecast(g, "c", x, DQG_S32);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    int32_t out[3];
    dqg_buffer in = {.id = x, .data = X, .size = sizeof X},
               o = {.id = y, .data = out, .size = sizeof out};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < 3; i++)
        cr_assert_eq(out[i], want[i], "element %d: %d", i, out[i]);
    dqg_graph_destroy(g);

    g = G();
    x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_typecast(g, "c4", x, DQG_S4);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "TypeCast 'c4'", "target type s4");
    dqg_graph_destroy(g);
}
