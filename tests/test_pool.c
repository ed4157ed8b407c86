/* Pooling: each build rule with its message, reference values computed by
 * hand from ONNX's definitions (ceil_mode, count_include_pad both ways,
 * pads, dilations, 1-D to 3-D, global, int8 rounding), the compiled kernels
 * against the reference on random shapes and types (channels-last through
 * a convolution in front), and the int8 path DQ -> pool -> Q. */
#include <math.h>
#include <stdlib.h>

#include "runtime/cpu_isa.h"
#include "test_common.h"

static dqg_graph *G(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

/* ---- Build rules ------------------------------------------------------------ */

/* Builds a pool over x [1, 2, 5, 5] (or the given rank) and expects the
 * error with the key phrases. */
#define expect_pool_error(dtype, rank, attrs, ...)                                                 \
    do {                                                                                           \
        dqg_graph *g_ = G();                                                                       \
        int64_t d_[] = {1, 2, 5, 5, 5, 5};                                                         \
        dqg_tensor_id x_ = dqg_input(g_, "x", dtype, rank, d_);                                    \
        cr_assert_eq(dqg_pool(g_, "p", x_, attrs), DQG_NONE);                                      \
        expect_error(dqg_graph_finalize(g_), DQG_INVALID_ARGUMENT, __VA_ARGS__);                   \
        dqg_graph_destroy(g_);                                                                     \
    } while (0)

static dqg_pool_attrs max2d(void)
{
    return (dqg_pool_attrs){.algorithm = DQG_POOL_MAX, .spatial_rank = 2, .kernel = {2, 2}};
}

Test(pool_rules, attrs_null)
{
    expect_pool_error(DQG_F32, 4, NULL, "Pool 'p'", "attrs is NULL");
}

Test(pool_rules, unknown_algorithm)
{
    dqg_pool_attrs a = max2d();
    a.algorithm = (dqg_pool_algorithm)7;
    expect_pool_error(DQG_F32, 4, &a, "Pool 'p'", "algorithm 7");
}

Test(pool_rules, type_not_poolable)
{
    dqg_pool_attrs a = max2d();
    expect_pool_error(DQG_S32, 4, &a, "MaxPool 'p'", "input 0 (x)", "s32");
}

Test(pool_rules, rank_outside_3_to_5)
{
    dqg_pool_attrs a = max2d();
    expect_pool_error(DQG_F32, 2, &a, "MaxPool 'p'", "rank 2", "rank 3 to 5");
    expect_pool_error(DQG_F32, 6, &a, "MaxPool 'p'", "rank 6", "rank 3 to 5");
}

Test(pool_rules, spatial_rank_outside_1_to_3)
{
    dqg_pool_attrs a = max2d();
    a.spatial_rank = 0;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "spatial_rank 0 is outside [1, 3]");
}

Test(pool_rules, spatial_rank_must_match_input)
{
    dqg_pool_attrs a = max2d();
    a.spatial_rank = 1;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "rank 4 does not match spatial_rank 1");
}

Test(pool_rules, kernel_at_least_1)
{
    dqg_pool_attrs a = max2d();
    a.kernel[1] = 0;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "kernel 0 at spatial dim 1 must be >= 1");
}

Test(pool_rules, stride_at_least_1)
{
    dqg_pool_attrs a = max2d();
    a.strides[0] = -2;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "stride -2 at spatial dim 0 must be >= 1");
}

Test(pool_rules, dilation_at_least_1)
{
    dqg_pool_attrs a = max2d();
    a.dilations[1] = -1;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "dilation -1 at spatial dim 1 must be >= 1");
}

Test(pool_rules, pads_not_negative)
{
    dqg_pool_attrs a = max2d();
    a.pads_end[1] = -1;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "negative pad at spatial dim 1");
}

Test(pool_rules, pads_smaller_than_kernel)
{
    dqg_pool_attrs a = max2d();
    a.pads_begin[0] = 2;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "pads 2+0 at spatial dim 0",
                      "smaller than the kernel 2");
}

Test(pool_rules, dilation_only_for_max)
{
    dqg_pool_attrs a = max2d();
    a.algorithm = DQG_POOL_AVG_EXCLUDE_PAD;
    a.dilations[0] = 2;
    expect_pool_error(DQG_F32, 4, &a, "AveragePool 'p'", "dilation 2 at spatial dim 0",
                      "only max pooling takes dilations");
}

Test(pool_rules, values_within_32_bits)
{
    dqg_pool_attrs a = max2d();
    a.strides[1] = (int64_t)1 << 32;
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "exceeds the limit 2147483647");
}

Test(pool_rules, output_at_least_1)
{
    dqg_pool_attrs a = max2d();
    a.kernel[0] = 4;
    a.dilations[0] = 2; /* window 7 over an input of 5 */
    expect_pool_error(DQG_F32, 4, &a, "MaxPool 'p'", "output size at spatial dim 0 would be 0",
                      "window 7");
}

Test(pool_rules, global_takes_no_window)
{
    dqg_pool_attrs a = {.algorithm = DQG_POOL_AVG_EXCLUDE_PAD, .global = true, .kernel = {2}};
    expect_pool_error(DQG_F32, 4, &a, "GlobalAveragePool 'p'", "global pooling takes no kernel");
    dqg_pool_attrs b = {.algorithm = DQG_POOL_MAX, .global = true, .ceil_mode = true};
    expect_pool_error(DQG_F32, 4, &b, "GlobalMaxPool 'p'", "ceil_mode");
}

Test(pool_rules, global_spatial_rank_must_match)
{
    dqg_pool_attrs a = {.algorithm = DQG_POOL_MAX, .global = true, .spatial_rank = 3};
    expect_pool_error(DQG_F32, 4, &a, "GlobalMaxPool 'p'", "spatial_rank 3 does not match");
}

Test(pool_rules, unknown_input)
{
    dqg_graph *g = G();
    dqg_pool_attrs a = max2d();
    cr_assert_eq(dqg_pool(g, "p", 42, &a), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "MaxPool 'p'", "unknown tensor id");
    dqg_graph_destroy(g);
}

/* ---- Reference values ------------------------------------------------------- */

/* Pools x (f32, dims xd) with attrs, checks the output shape and values on
 * the reference and on the compiled graph (exact: every expected value is a
 * float the pooling computes exactly). */
static void check_f32(int rank, const int64_t *xd, const float *x, const dqg_pool_attrs *a,
                      const int64_t *want_dims, const float *want)
{
    dqg_graph *g = G();
    dqg_tensor_id in = dqg_input(g, "x", DQG_F32, rank, xd);
    dqg_tensor_id y = dqg_pool(g, "p", in, a);
    cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
    int64_t yd[DQG_MAX_RANK];
    cr_assert_eq(dqg_tensor_dims(g, y, yd), rank);
    int64_t n = 1, nx = 1;
    for (int i = 0; i < rank; i++) {
        cr_assert_eq(yd[i], want_dims[i], "dim %d is %lld, want %lld", i, (long long)yd[i],
                     (long long)want_dims[i]);
        n *= yd[i];
        nx *= xd[i];
    }
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
    finalize_ok(g);
    float out[64];
    cr_assert_eq(run_ref_1(g, in, (void *)x, (size_t)nx * 4, y, out, (size_t)n * 4), DQG_OK, "%s",
                 dqg_last_error());
    for (int64_t i = 0; i < n; i++)
        cr_assert_float_eq(out[i], want[i], 1e-6, "reference y[%lld] = %g, want %g", (long long)i,
                           out[i], want[i]);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    dqg_buffer bi = {.id = in, .data = (void *)x, .size = (size_t)nx * 4};
    dqg_buffer bo = {.id = y, .data = out, .size = (size_t)n * 4};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    for (int64_t i = 0; i < n; i++)
        cr_assert_float_eq(out[i], want[i], 1e-6, "compiled y[%lld] = %g, want %g (%s)",
                           (long long)i, out[i], want[i], dqg_compiled_partition_info(c, 0));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(pool_values, max_2x2_stride_2)
{
    int64_t xd[] = {1, 1, 4, 4}, yd[] = {1, 1, 2, 2};
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + 1);
    dqg_pool_attrs a = {
        .algorithm = DQG_POOL_MAX, .spatial_rank = 2, .kernel = {2, 2}, .strides = {2, 2}};
    check_f32(4, xd, x, &a, yd, (const float[]){6, 8, 14, 16});
}

Test(pool_values, max_ignores_padding)
{
    /* x[r][c] = -(4r + c + 1); 3x3 windows, stride 2, pads 1: a zero pad
     * would win every window. */
    int64_t xd[] = {1, 1, 4, 4}, yd[] = {1, 1, 2, 2};
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = -(float)(i + 1);
    dqg_pool_attrs a = {.algorithm = DQG_POOL_MAX,
                        .spatial_rank = 2,
                        .kernel = {3, 3},
                        .strides = {2, 2},
                        .pads_begin = {1, 1},
                        .pads_end = {1, 1}};
    check_f32(4, xd, x, &a, yd, (const float[]){-1, -2, -5, -6});
}

Test(pool_values, average_counts_padding_or_not)
{
    /* x = [1 2 3 4], window 3, pads 1 and 1: windows [p 1 2] [1 2 3]
     * [2 3 4] [3 4 p]. */
    int64_t xd[] = {1, 1, 4}, yd[] = {1, 1, 4};
    const float x[] = {1, 2, 3, 4};
    dqg_pool_attrs a = {.algorithm = DQG_POOL_AVG_INCLUDE_PAD,
                        .spatial_rank = 1,
                        .kernel = {3},
                        .pads_begin = {1},
                        .pads_end = {1}};
    check_f32(3, xd, x, &a, yd, (const float[]){1, 2, 3, 7.0f / 3.0f});
    a.algorithm = DQG_POOL_AVG_EXCLUDE_PAD;
    check_f32(3, xd, x, &a, yd, (const float[]){1.5f, 2, 3, 3.5f});
}

Test(pool_values, ceil_mode_adds_a_window_cut_at_pads_end)
{
    /* x = [1..6], window 3, stride 2, pads 1 and 1: floor gives 3 windows,
     * ceil 4; the last, [6 p .], counts the pad (inside pads_end) but not
     * the position past it. */
    int64_t xd[] = {1, 1, 6}, y3[] = {1, 1, 3}, y4[] = {1, 1, 4};
    const float x[] = {1, 2, 3, 4, 5, 6};
    dqg_pool_attrs a = {.algorithm = DQG_POOL_AVG_INCLUDE_PAD,
                        .spatial_rank = 1,
                        .kernel = {3},
                        .strides = {2},
                        .pads_begin = {1},
                        .pads_end = {1}};
    check_f32(3, xd, x, &a, y3, (const float[]){1, 3, 5});
    a.ceil_mode = true;
    check_f32(3, xd, x, &a, y4, (const float[]){1, 3, 5, 3});
    a.algorithm = DQG_POOL_AVG_EXCLUDE_PAD;
    check_f32(3, xd, x, &a, y4, (const float[]){1.5f, 3, 5, 6});
    a.algorithm = DQG_POOL_MAX;
    check_f32(3, xd, x, &a, y4, (const float[]){2, 4, 6, 6});
}

Test(pool_values, ceil_mode_2d_include_pad_on_both_edges)
{
    /* 5x5 of ones, window 2, stride 2, no pads: ceil_mode adds a last row
     * and column of windows holding 2 (edges) or 1 (corner) elements; an
     * include-padding average counts no padding there (pads_end is 0), so
     * every window averages to 1. */
    int64_t xd[] = {1, 2, 5, 5}, yd[] = {1, 2, 3, 3};
    float x[50], want[18];
    for (int i = 0; i < 50; i++)
        x[i] = 1.0f;
    for (int i = 0; i < 18; i++)
        want[i] = 1.0f;
    dqg_pool_attrs a = {.algorithm = DQG_POOL_AVG_INCLUDE_PAD,
                        .spatial_rank = 2,
                        .kernel = {2, 2},
                        .strides = {2, 2},
                        .ceil_mode = true};
    check_f32(4, xd, x, &a, yd, want);
}

Test(pool_values, ceil_mode_never_starts_a_window_in_right_padding)
{
    /* x of 4, window 3, stride 3, pads 2 and 2: ceil((4 + 4 - 3) / 3) + 1 = 3,
     * but the third window would start at 6 - 2 = 4, past the input: 2. */
    int64_t xd[] = {1, 1, 4}, yd[] = {1, 1, 2};
    const float x[] = {1, 2, 3, 4};
    dqg_pool_attrs a = {.algorithm = DQG_POOL_MAX,
                        .spatial_rank = 1,
                        .kernel = {3},
                        .strides = {3},
                        .pads_begin = {2},
                        .pads_end = {2},
                        .ceil_mode = true};
    check_f32(3, xd, x, &a, yd, (const float[]){1, 4});
}

Test(pool_values, max_with_dilation)
{
    int64_t xd[] = {1, 1, 8}, yd[] = {1, 1, 6};
    const float x[] = {3, 1, 4, 1, 5, 9, 2, 6};
    dqg_pool_attrs a = {
        .algorithm = DQG_POOL_MAX, .spatial_rank = 1, .kernel = {2}, .dilations = {2}};
    check_f32(3, xd, x, &a, yd, (const float[]){4, 1, 5, 9, 5, 9});
}

Test(pool_values, three_d_and_global)
{
    int64_t xd[] = {1, 1, 2, 2, 2}, yd[] = {1, 1, 1, 1, 1};
    const float x[] = {1, 2, 3, 4, 5, 6, 7, 8};
    dqg_pool_attrs a = {
        .algorithm = DQG_POOL_AVG_INCLUDE_PAD, .spatial_rank = 3, .kernel = {2, 2, 2}};
    check_f32(5, xd, x, &a, yd, (const float[]){4.5f});
    dqg_pool_attrs gm = {.algorithm = DQG_POOL_MAX, .global = true};
    check_f32(5, xd, x, &gm, yd, (const float[]){8});
    /* Global average per channel of [1, 2, 2, 2]. */
    int64_t xd4[] = {1, 2, 2, 2}, yd4[] = {1, 2, 1, 1};
    dqg_pool_attrs ga = {.algorithm = DQG_POOL_AVG_EXCLUDE_PAD, .global = true};
    check_f32(4, xd4, x, &ga, yd4, (const float[]){2.5f, 6.5f});
}

/* u8/s8 averages: the exact mean rounded to nearest, ties to even. */
static void check_int8(dqg_dtype t, const void *x, int64_t n, const dqg_pool_attrs *a,
                       const int8_t *want, int64_t n_out)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 1, n};
    dqg_tensor_id in = dqg_input(g, "x", t, 3, xd);
    dqg_tensor_id y = dqg_pool(g, "p", in, a);
    cr_assert_eq(dqg_tensor_element_count(g, y), n_out);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    uint8_t out[32];
    cr_assert_eq(run_ref_1(g, in, (void *)x, (size_t)n, y, out, (size_t)n_out), DQG_OK, "%s",
                 dqg_last_error());
    for (int64_t i = 0; i < n_out; i++) {
        int v = t == DQG_S8 ? (int)(int8_t)out[i] : (int)out[i];
        int w = t == DQG_S8 ? (int)want[i] : (int)(uint8_t)want[i];
        cr_assert_eq(v, w, "reference y[%lld] = %d, want %d", (long long)i, v, w);
    }
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    dqg_buffer bi = {.id = in, .data = (void *)x, .size = (size_t)n};
    dqg_buffer bo = {.id = y, .data = out, .size = (size_t)n_out};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    for (int64_t i = 0; i < n_out; i++) {
        int v = t == DQG_S8 ? (int)(int8_t)out[i] : (int)out[i];
        int w = t == DQG_S8 ? (int)want[i] : (int)(uint8_t)want[i];
        cr_assert_eq(v, w, "compiled y[%lld] = %d, want %d (%s)", (long long)i, v, w,
                     dqg_compiled_partition_info(c, 0));
    }
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(pool_values, int8_average_rounds_half_to_even)
{
    dqg_pool_attrs a = {
        .algorithm = DQG_POOL_AVG_EXCLUDE_PAD, .spatial_rank = 1, .kernel = {2}, .strides = {2}};
    /* 1.5 -> 2, 2.5 -> 2, 0.5 -> 0, 3.5 -> 4, 255 */
    const uint8_t xu[] = {1, 2, 2, 3, 0, 1, 3, 4, 255, 255};
    check_int8(DQG_U8, xu, 10, &a, (const int8_t[]){2, 2, 0, 4, (int8_t)255}, 5);
    /* -1.5 -> -2, -2.5 -> -2, 5.5 -> 6, -128, 127 */
    const int8_t xs[] = {-1, -2, -3, -2, 5, 6, -128, -128, 127, 127};
    check_int8(DQG_S8, xs, 10, &a, (const int8_t[]){-2, -2, 6, -128, 127}, 5);
    /* Thirds: [p 1 2] -> 1, [3 4 p] -> 7/3 -> 2, include padding. */
    dqg_pool_attrs b = {.algorithm = DQG_POOL_AVG_INCLUDE_PAD,
                        .spatial_rank = 1,
                        .kernel = {3},
                        .strides = {2},
                        .pads_begin = {1},
                        .pads_end = {1}};
    const uint8_t x3[] = {1, 2, 3, 4};
    check_int8(DQG_U8, x3, 4, &b, (const int8_t[]){1, 3}, 2);
    dqg_pool_attrs m = {.algorithm = DQG_POOL_MAX, .spatial_rank = 1, .kernel = {3}};
    const int8_t xm[] = {-5, -7, -6, 3, -128};
    check_int8(DQG_S8, xm, 5, &m, (const int8_t[]){-5, 3, 3}, 3);
}

/* A global int8 average of n elements, all `v`: the mean is v exactly. oneDNN
 * sums the window in 32-bit integers, so windows of more than 2^31 / 255
 * (u8) or 2^31 / 128 (s8) elements run on the reference kernel, which the
 * partition's kernel line names. */
static void long_window(dqg_dtype t, int64_t n, int v, bool on_onednn)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 1, n};
    dqg_tensor_id in = dqg_input(g, "x", t, 3, xd);
    dqg_pool_attrs a = {.algorithm = DQG_POOL_AVG_EXCLUDE_PAD, .global = true, .spatial_rank = 1};
    dqg_tensor_id y = dqg_pool(g, "p", in, &a);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    const char *info = dqg_compiled_partition_info(c, 0);
    cr_assert_eq(strstr(info, "reference (oneDNN sums") == NULL, on_onednn, "%lld: %s",
                 (long long)n, info);
    uint8_t *x = malloc((size_t)n), out = 0;
    memset(x, v, (size_t)n);
    dqg_buffer bi = {.id = in, .data = x, .size = (size_t)n};
    dqg_buffer bo = {.id = y, .data = &out, .size = 1};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(out, (uint8_t)v, "%s average of %lld elements: %d (%s)", dqg_dtype_name(t),
                 (long long)n, out, info);
    free(x);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(pool_values, int8_averages_too_long_for_32_bit_sums_run_on_the_reference)
{
    long_window(DQG_U8, INT32_MAX / 255, 255, true);
    long_window(DQG_U8, INT32_MAX / 255 + 1, 255, false);
    long_window(DQG_U8, 17640000, 255, false); /* 255 x n wraps 2^32 */
    long_window(DQG_S8, INT32_MAX / 128 + 1, 0x80, false);
}

/* ---- Compiled against the reference ----------------------------------------------------------
 */

static float rnd_unit(void)
{
    return (float)(test_rnd() % 20001) / 10000.0f - 1.0f;
}

static void fill(dqg_dtype t, void *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float f = rnd_unit() * 8.0f;
        switch (t) {
        case DQG_U8:
            ((uint8_t *)p)[i] = (uint8_t)(test_rnd() & 0xff);
            break;
        case DQG_S8:
            ((int8_t *)p)[i] = (int8_t)(test_rnd() & 0xff);
            break;
        default:
            dqg_dtype_encode(t, &f, 1, p, i, false);
            break;
        }
    }
}

/* Compares the compiled graph's single output with the reference's:
 * maxima exactly, averages within 1e-5 of the largest magnitude (f32), one
 * bf16 step of it (bf16) or exactly (u8/s8). Returns the partition info. */
static void compare_run(dqg_graph *g, dqg_tensor_id in, dqg_tensor_id y, bool is_max,
                        const char *what)
{
    dqg_dtype xt = dqg_tensor_dtype(g, in), yt = dqg_tensor_dtype(g, y);
    size_t xn = dqg_tensor_byte_size(g, in), yn = dqg_tensor_byte_size(g, y);
    int64_t ne = dqg_tensor_element_count(g, y);
    void *x = malloc(xn), *r = malloc(yn), *o = malloc(yn);
    fill(xt, x, dqg_tensor_element_count(g, in));
    cr_assert_eq(run_ref_1(g, in, x, xn, y, r, yn), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: %s", what, dqg_last_error());
    dqg_buffer bi = {.id = in, .data = x, .size = xn}, bo = {.id = y, .data = o, .size = yn};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s: %s", what, dqg_last_error());
    float *rf = malloc((size_t)ne * 4), *of = malloc((size_t)ne * 4);
    dqg_dtype_decode(yt, r, 0, ne, rf);
    dqg_dtype_decode(yt, o, 0, ne, of);
    float big = 0.0f;
    for (int64_t i = 0; i < ne; i++)
        big = fabsf(rf[i]) > big ? fabsf(rf[i]) : big;
    float tol = is_max || yt == DQG_U8 || yt == DQG_S8 ? 0.0f
                : yt == DQG_F32                        ? 1e-5f * big
                                                       : big / 128.0f;
    char info[1024] = "";
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++) {
        size_t len = strlen(info);
        snprintf(info + len, sizeof info - len, "%s | ", dqg_compiled_partition_info(c, p));
    }
    for (int64_t i = 0; i < ne; i++)
        cr_assert(fabsf(rf[i] - of[i]) <= tol, "%s: y[%lld] compiled %g, reference %g (%s)", what,
                  (long long)i, of[i], rf[i], info);
    free(rf);
    free(of);
    free(x);
    free(r);
    free(o);
    dqg_compiled_destroy(c);
}

/* A random pooling of a random input: attrs valid for dims xd. */
static void random_attrs(int sr, const int64_t *xd, dqg_pool_attrs *a, bool allow_dilation)
{
    for (;;) {
        memset(a, 0, sizeof *a);
        a->algorithm = (dqg_pool_algorithm)(test_rnd() % 3);
        a->spatial_rank = sr;
        a->ceil_mode = test_rnd() % 2;
        bool ok = true;
        for (int i = 0; i < sr; i++) {
            a->kernel[i] = 1 + test_rnd() % 4;
            a->strides[i] = 1 + test_rnd() % 3;
            a->pads_begin[i] = test_rnd() % a->kernel[i];
            a->pads_end[i] = test_rnd() % a->kernel[i];
            a->dilations[i] =
                allow_dilation && a->algorithm == DQG_POOL_MAX ? 1 + test_rnd() % 2 : 1;
            int64_t span = (a->kernel[i] - 1) * a->dilations[i] + 1;
            ok &= xd[2 + i] + a->pads_begin[i] + a->pads_end[i] >= span;
        }
        if (ok)
            return;
    }
}

Test(pool_differential, random_shapes_and_types)
{
    test_rng = 20240611u;
    static const dqg_dtype types[] = {DQG_F32, DQG_U8, DQG_S8, DQG_BF16, DQG_F16};
    for (int iter = 0; iter < 150; iter++) {
        int sr = 1 + (int)(test_rnd() % 3);
        int64_t xd[5] = {1 + test_rnd() % 2, 1 + test_rnd() % 19};
        for (int i = 0; i < sr; i++)
            xd[2 + i] = 1 + test_rnd() % (sr == 3 ? 6 : 12);
        dqg_dtype t = types[iter % 5];
        dqg_pool_attrs a;
        bool global = test_rnd() % 8 == 0;
        if (global)
            a = (dqg_pool_attrs){.algorithm = (dqg_pool_algorithm)(test_rnd() % 3), .global = true};
        else
            random_attrs(sr, xd, &a, true);
        dqg_graph *g = G();
        dqg_tensor_id x = dqg_input(g, "x", t, sr + 2, xd);
        dqg_tensor_id y = dqg_pool(g, "p", x, &a);
        cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
        finalize_ok(g);
        char what[200];
        snprintf(what, sizeof what, "iter %d %s sr %d alg %d ceil %d global %d", iter,
                 dqg_dtype_name(t), sr, (int)a.algorithm, (int)a.ceil_mode, (int)global);
        compare_run(g, x, y, a.algorithm == DQG_POOL_MAX, what);
        dqg_graph_destroy(g);
    }
}

/* Whether every window along one axis has a tap inside the image. */
static bool windows_reach_the_image(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d,
                                    int64_t pb)
{
    for (int64_t o = 0; o < out; o++) {
        bool inside = false;
        for (int64_t t = 0; t < k; t++)
            inside |= o * s - pb + t * d >= 0 && o * s - pb + t * d < in;
        if (!inside)
            return false;
    }
    return true;
}

/* u8/s8 max pooling of 2-D tensors: dqgraph's own kernel where the CPU
 * (and DQG_MAX_ISA) has AVX-512, with channels past one 64-byte register
 * and tails, dilations, padding and ceil_mode, exactly as the reference.
 * The graph's NCHW input and output are reordered around the kernel,
 * which pools channels-last (between int8 convolutions it reads and
 * writes their channels-last tensors: see the tests below). */
Test(pool_differential, int8_max_pooling_on_the_own_kernel)
{
    test_rng = 4211u;
    bool own_expected = dqg_cpu_has(DQG_ISA_AVX512);
    int own = 0, reach = 0;
    for (int iter = 0; iter < 120; iter++) {
        static const int64_t channels[] = {1, 5, 16, 63, 64, 65, 100, 128, 192, 200};
        int64_t C = channels[test_rnd() % 10];
        int64_t h = 1 + test_rnd() % 15, w = 1 + test_rnd() % 15;
        int64_t xd[4] = {1 + test_rnd() % 2, C, h, w};
        dqg_pool_attrs a;
        do
            random_attrs(2, xd, &a, true);
        while (a.algorithm != DQG_POOL_MAX);
        if (test_rnd() % 10 == 0)
            a = (dqg_pool_attrs){.algorithm = DQG_POOL_MAX, .global = true};
        dqg_dtype t = test_rnd() % 2 ? DQG_S8 : DQG_U8;
        dqg_graph *g = G();
        dqg_tensor_id x = dqg_input(g, "x", t, 4, xd);
        dqg_tensor_id y = dqg_pool(g, "p", x, &a);
        cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
        finalize_ok(g);
        char what[200];
        snprintf(what, sizeof what,
                 "iter %d %s C%lld %lldx%lld k%lldx%lld s%lldx%lld d%lldx%lld p%lld,%lld/%lld,"
                 "%lld ceil %d global %d",
                 iter, dqg_dtype_name(t), (long long)C, (long long)h, (long long)w,
                 (long long)a.kernel[0], (long long)a.kernel[1], (long long)a.strides[0],
                 (long long)a.strides[1], (long long)a.dilations[0], (long long)a.dilations[1],
                 (long long)a.pads_begin[0], (long long)a.pads_begin[1], (long long)a.pads_end[0],
                 (long long)a.pads_end[1], (int)a.ceil_mode, (int)a.global);
        compare_run(g, x, y, true, what);
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK);
        own += strstr(dqg_compiled_partition_info(c, 0), "int8-max-pool") != NULL;
        int64_t yd[4];
        dqg_tensor_dims(g, y, yd);
        reach += a.global || (windows_reach_the_image(h, yd[2], a.kernel[0], a.strides[0],
                                                      a.dilations[0], a.pads_begin[0]) &&
                              windows_reach_the_image(w, yd[3], a.kernel[1], a.strides[1],
                                                      a.dilations[1], a.pads_begin[1]));
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
    /* With AVX-512 the own kernel takes every pooling whose windows all
     * reach into the image (a dilated window may step over a small one). */
    cr_assert_eq(own, own_expected ? reach : 0, "the own kernel pooled %d of 120, %d reachable",
                 own, reach);
    cr_assert_geq(reach, 100);
}

/* conv -> pool -> conv and conv -> pool -> output: the layout pass stores
 * the convolution results channels-last, and the pooling reads (and
 * writes) them so. */
Test(pool_differential, channels_last_after_a_convolution)
{
    test_rng = 77u;
    for (int iter = 0; iter < 40; iter++) {
        int sr = 1 + (int)(test_rnd() % 3);
        int64_t C = 2 + test_rnd() % 16; /* at most 17: the weight arrays */
        int64_t xd[5] = {1 + test_rnd() % 2, 3};
        for (int i = 0; i < sr; i++)
            xd[2 + i] = 2 + test_rnd() % (sr == 3 ? 5 : 11);
        dqg_pool_attrs a;
        random_attrs(sr, xd, &a, true);
        bool second_conv = iter % 2;
        dqg_graph *g = G();
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, sr + 2, xd);
        int64_t wd[5] = {C, 3, 1, 1, 1}, wd2[5] = {4, C, 1, 1, 1};
        float w[3 * 17], w2[4 * 17];
        for (int i = 0; i < 3 * 17; i++)
            w[i] = rnd_unit();
        for (int i = 0; i < 4 * 17; i++)
            w2[i] = rnd_unit();
        dqg_conv_attrs ca = {.spatial_rank = sr};
        dqg_tensor_id h =
            dqg_convolution(g, "c1", x, test_const_f32(g, sr + 2, wd, w), DQG_NONE, &ca);
        dqg_tensor_id y = dqg_pool(g, "p", h, &a);
        if (second_conv)
            y = dqg_convolution(g, "c2", y, test_const_f32(g, sr + 2, wd2, w2), DQG_NONE, &ca);
        cr_assert_neq(y, DQG_NONE, "%s", dqg_last_error());
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
        finalize_ok(g);
        char what[200];
        snprintf(what, sizeof what, "iter %d sr %d alg %d ceil %d", iter, sr, (int)a.algorithm,
                 (int)a.ceil_mode);
        compare_run(g, x, y, false, what);
        dqg_graph_destroy(g);
    }
}

Test(pool_differential, layout_pass_keeps_pool_channels_last)
{
    /* conv -> MaxPool -> conv, 2-D: the pooling's input and output are
     * stored channels-last, so it runs with no reorder. */
    dqg_graph *g = G();
    int64_t xd[] = {1, 8, 12, 12}, wd[] = {8, 8, 1, 1};
    float w[64];
    for (int i = 0; i < 64; i++)
        w[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd);
    dqg_conv_attrs ca = {.spatial_rank = 2};
    dqg_pool_attrs pa = {.algorithm = DQG_POOL_MAX,
                         .spatial_rank = 2,
                         .kernel = {3, 3},
                         .strides = {2, 2},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1}};
    dqg_tensor_id h = dqg_convolution(g, "c1", x, test_const_f32(g, 4, wd, w), DQG_NONE, &ca);
    h = dqg_pool(g, "pool", h, &pa);
    dqg_tensor_id y = dqg_convolution(g, "c2", h, test_const_f32(g, 4, wd, w), DQG_NONE, &ca);
    dqg_output(g, y, "y");
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    bool found = false;
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++) {
        const char *info = dqg_compiled_partition_info(c, p);
        if (!strstr(info, "Pool"))
            continue;
        found = true;
        cr_assert(strstr(info, "onednn:pool:f32") && !strstr(info, "reorder"), "%s", info);
    }
    cr_assert(found);
    dqg_compiled_destroy(c);
    compare_run(g, x, y, false, "conv-pool-conv");
    dqg_graph_destroy(g);
}

/* ---- int8: DQ -> pool -> Q -------------------------------------------------- */

static dqg_graph *qdq_pool(dqg_dtype t, float s_in, int zp_in, float s_out, int zp_out,
                           const dqg_pool_attrs *a, const int64_t *xd, int rank,
                           dqg_tensor_id *x_out, dqg_tensor_id *y_out)
{
    dqg_graph *g = G();
    int64_t one = 1;
    uint8_t zi = (uint8_t)zp_in, zo = (uint8_t)zp_out;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id x = dqg_input(g, "x", t, rank, xd);
    dqg_tensor_id f = dqg_dequantize_linear(g, "x_dq", x, test_const_f32(g, 0, &one, &s_in),
                                            dqg_constant(g, NULL, t, 0, &one, &zi, 1), &da);
    dqg_tensor_id p = dqg_pool(g, "pool", f, a);
    dqg_tensor_id y = dqg_quantize_linear(g, "y_q", p, test_const_f32(g, 0, &one, &s_out),
                                          dqg_constant(g, NULL, t, 0, &one, &zo, 1), &qa);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    *x_out = x;
    *y_out = y;
    return g;
}

static bool explained(const dqg_compiled *c, const char *a, const char *b)
{
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++) {
        const char *line = dqg_compiled_explain(c, i);
        if (strstr(line, a) && strstr(line, b))
            return true;
    }
    return false;
}

/* Runs the int8 graph compiled and on the reference; returns the largest
 * difference in quantized steps. */
static int run_int8(dqg_graph *g, dqg_tensor_id x, dqg_tensor_id y, const char *explain_a,
                    const char *explain_b)
{
    size_t xn = dqg_tensor_byte_size(g, x), yn = dqg_tensor_byte_size(g, y);
    uint8_t *xb = malloc(xn), *r = malloc(yn), *o = malloc(yn);
    for (size_t i = 0; i < xn; i++)
        xb[i] = (uint8_t)test_rnd();
    cr_assert_eq(run_ref_1(g, x, xb, xn, y, r, yn), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    if (explain_a)
        cr_assert(explained(c, explain_a, explain_b), "explain lacks \"%s\" ... \"%s\"", explain_a,
                  explain_b);
    dqg_buffer bi = {.id = x, .data = xb, .size = xn}, bo = {.id = y, .data = o, .size = yn};
    cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
    int worst = test_max_diff_8bit(o, r, yn, dqg_tensor_dtype(g, y) == DQG_S8);
    free(xb);
    free(r);
    free(o);
    dqg_compiled_destroy(c);
    return worst;
}

/* 3x3 windows, stride 2, padding 1 and ceil_mode: overlapping windows,
 * padded edges and ceil_mode's extra one. */
static dqg_pool_attrs window_3x3_s2(dqg_pool_algorithm alg)
{
    return (dqg_pool_attrs){.algorithm = alg,
                            .spatial_rank = 2,
                            .kernel = {3, 3},
                            .strides = {2, 2},
                            .pads_begin = {1, 1},
                            .pads_end = {1, 1},
                            .ceil_mode = true};
}

/* g compiles to one partition: oneDNN's pooling on the int8 tensor. */
/* Whether a partition's kernel pools u8/s8 (t): oneDNN's pooling, or the
 * own max pooling. */
static bool int8_pool_kernel(const char *info, dqg_dtype t)
{
    return strstr(info, t == DQG_S8 ? "onednn:pool:s8" : "onednn:pool:u8") ||
           strstr(info, t == DQG_S8 ? "int8-max-pool:s8" : "int8-max-pool:u8");
}

static void assert_one_int8_pool(const dqg_graph *g, dqg_dtype t)
{
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK);
    cr_assert_eq(dqg_compiled_partition_count(c), 1);
    cr_assert(int8_pool_kernel(dqg_compiled_partition_info(c, 0), t), "%s",
              dqg_compiled_partition_info(c, 0));
    dqg_compiled_destroy(c);
}

Test(pool_int8, max_pool_between_dq_and_q_is_exact_u8_and_s8)
{
    test_rng = 5u;
    int64_t xd[] = {2, 16, 13, 13};
    dqg_pool_attrs a = window_3x3_s2(DQG_POOL_MAX);
    for (int k = 0; k < 2; k++) {
        dqg_dtype t = k ? DQG_S8 : DQG_U8;
        dqg_tensor_id x, y;
        dqg_graph *g = qdq_pool(t, 0.0371f, k ? -3 : 131, 0.0371f, k ? -3 : 131, &a, xd, 4, &x, &y);
        cr_assert_eq(run_int8(g, x, y, "fused: Dequantize 'x_dq' -> MaxPool 'pool'",
                              k ? "s8 max pooling" : "u8 max pooling"),
                     0, "max pooling in int8 must be exact");
        assert_one_int8_pool(g, t);
        dqg_graph_destroy(g);
    }
}

Test(pool_int8, average_pool_within_one_step)
{
    /* The fused average rounds the exact mean once; the float path
     * dequantizes, averages and quantizes, so where the mean lies within
     * float rounding of a half the two may differ by one step. */
    test_rng = 6u;
    int64_t xd[] = {1, 24, 9, 11};
    dqg_pool_attrs a = {.algorithm = DQG_POOL_AVG_EXCLUDE_PAD,
                        .spatial_rank = 2,
                        .kernel = {3, 2},
                        .strides = {2, 2},
                        .pads_begin = {1, 0},
                        .pads_end = {1, 1},
                        .ceil_mode = true};
    dqg_tensor_id x, y;
    dqg_graph *g = qdq_pool(DQG_U8, 0.02f, 128, 0.02f, 128, &a, xd, 4, &x, &y);
    cr_assert_leq(run_int8(g, x, y, "AveragePool 'pool'", "u8 average pooling"), 1);
    dqg_graph_destroy(g);
    /* Include-padding with zero point 0 fuses too. */
    a.algorithm = DQG_POOL_AVG_INCLUDE_PAD;
    g = qdq_pool(DQG_S8, 0.5f, 0, 0.5f, 0, &a, xd, 4, &x, &y);
    cr_assert_leq(run_int8(g, x, y, "AveragePool 'pool'", "s8 average pooling"), 1);
    dqg_graph_destroy(g);
    dqg_pool_attrs ga = {.algorithm = DQG_POOL_AVG_EXCLUDE_PAD, .global = true};
    g = qdq_pool(DQG_U8, 0.1f, 7, 0.1f, 7, &ga, xd, 4, &x, &y);
    cr_assert_leq(run_int8(g, x, y, "GlobalAveragePool 'pool'", "u8 average pooling"), 1);
    dqg_graph_destroy(g);
}

/* A quantize with another scale or zero point than the dequantize (ONNX
 * Runtime's quantizer writes AveragePool and GlobalAveragePool so): the
 * average is requantized in the same u8/s8 pooling, rounded once, within
 * one step of the float path; a wider and a narrower output scale, with
 * padding and ceil_mode (counted or not), the global average, and s8. */
Test(pool_int8, average_pool_requantized_to_other_parameters_within_one_step)
{
    test_rng = 10u;
    int64_t xd[] = {1, 40, 14, 15};
    dqg_pool_attrs a = window_3x3_s2(DQG_POOL_AVG_EXCLUDE_PAD);
    dqg_pool_attrs ga = {.algorithm = DQG_POOL_AVG_EXCLUDE_PAD, .global = true};
    /* include-padding: its ceil_mode edges are redone by the kernel */
    dqg_pool_attrs ai = window_3x3_s2(DQG_POOL_AVG_INCLUDE_PAD);
    const struct {
        dqg_dtype t;
        float s, so;
        int zx, zo;
        const dqg_pool_attrs *a;
    } cases[] = {
        {DQG_U8, 0.02f, 0.013f, 128, 3, &a}, {DQG_U8, 0.02f, 0.05f, 7, 200, &a},
        {DQG_U8, 0.1f, 0.061f, 0, 0, &ga},   {DQG_S8, 0.3f, 0.17f, -5, 9, &a},
        {DQG_S8, 0.03f, 0.07f, 0, -20, &ga}, {DQG_U8, 0.02f, 0.031f, 0, 11, &ai},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dqg_tensor_id x, y;
        dqg_graph *g = qdq_pool(cases[i].t, cases[i].s, cases[i].zx, cases[i].so, cases[i].zo,
                                cases[i].a, xd, 4, &x, &y);
        cr_assert_leq(run_int8(g, x, y, "AveragePool 'pool'", "requantized to the quantize's"), 1,
                      "case %zu", i);
        assert_one_int8_pool(g, cases[i].t);
        dqg_graph_destroy(g);
    }
}

Test(pool_int8, refusals_are_explained)
{
    test_rng = 8u;
    int64_t xd[] = {1, 4, 6, 6};
    dqg_pool_attrs mx = {.algorithm = DQG_POOL_MAX, .spatial_rank = 2, .kernel = {2, 2}};
    dqg_tensor_id x, y;
    /* Other output parameters: the pooling runs in f32 between them. */
    dqg_graph *g = qdq_pool(DQG_U8, 0.05f, 128, 0.1f, 128, &mx, xd, 4, &x, &y);
    cr_assert_leq(run_int8(g, x, y, "not fused: Dequantize 'x_dq' -> MaxPool 'pool'", "differ"), 0);
    dqg_graph_destroy(g);
    /* Include-padding average with a non-zero zero point. */
    dqg_pool_attrs av = {.algorithm = DQG_POOL_AVG_INCLUDE_PAD,
                         .spatial_rank = 2,
                         .kernel = {3, 3},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1}};
    g = qdq_pool(DQG_U8, 0.05f, 128, 0.05f, 128, &av, xd, 4, &x, &y);
    cr_assert_leq(run_int8(g, x, y, "not fused", "zero point 128"), 0);
    dqg_graph_destroy(g);
    /* A requantizing average whose quantize scale is denormal: each
     * scale named as the rule's. */
    dqg_pool_attrs ex = window_3x3_s2(DQG_POOL_AVG_EXCLUDE_PAD);
    g = qdq_pool(DQG_U8, 0.05f, 128, 1e-40f, 0, &ex, xd, 4, &x, &y);
    cr_assert_leq(run_int8(g, x, y, "not fused", "the quantize's scale"), 0);
    dqg_graph_destroy(g);
    g = qdq_pool(DQG_U8, 1e-40f, 128, 0.05f, 0, &ex, xd, 4, &x, &y);
    cr_assert_leq(run_int8(g, x, y, "not fused", "the dequantize's scale"), 0);
    dqg_graph_destroy(g);
}

Test(pool_int8, fusion_off_keeps_the_float_path)
{
    test_rng = 9u;
    int64_t xd[] = {1, 4, 6, 6};
    dqg_pool_attrs mx = {.algorithm = DQG_POOL_MAX, .spatial_rank = 2, .kernel = {2, 2}};
    dqg_tensor_id x, y;
    dqg_graph *g = qdq_pool(DQG_U8, 0.05f, 128, 0.05f, 128, &mx, xd, 4, &x, &y);
    dqg_compile_options o = dqg_compile_options_default();
    o.disable_fusion = true;
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_compiled_partition_count(c), 3);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* u8 conv -> Q -> DQ -> MaxPool -> Q -> DQ -> conv: both convolutions run
 * as int8 primitives, the pooling between them on the u8 tensor they
 * exchange, channels-last, with no reorder; the result matches the
 * reference exactly where the reference's float path is exact (max). */
static dqg_tensor_id qconv(dqg_graph *g, const char *name, dqg_tensor_id x, int64_t cin,
                           int64_t cout, float s, uint8_t z)
{
    int64_t wd[] = {cout, cin, 3, 3}, one = 1;
    int8_t w[16 * 16 * 9];
    for (int64_t i = 0; i < cout * cin * 9; i++)
        w[i] = (int8_t)((int)(test_rnd() % 255) - 127);
    float ws = 0.002f;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id sc = test_const_f32(g, 0, &one, &s),
                  zp = dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1);
    dqg_tensor_id xf = dqg_dequantize_linear(g, NULL, x, sc, zp, &da);
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, NULL, dqg_constant(g, NULL, DQG_S8, 4, wd, w, (size_t)(cout * cin * 9)),
        test_const_f32(g, 0, &one, &ws), DQG_NONE, &da);
    dqg_conv_attrs a = {.spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    dqg_tensor_id y = dqg_convolution(g, name, xf, wf, DQG_NONE, &a);
    return dqg_quantize_linear(g, NULL, y, sc, zp, &qa);
}

Test(pool_int8, pooling_between_int8_convolutions_stays_int8_and_channels_last)
{
    if (!test_int8_fusion())
        cr_skip_test("this CPU " TEST_NO_INT8_REASON);
    test_rng = 11u;
    dqg_graph *g = G();
    int64_t xd[] = {1, 16, 14, 14}, one = 1;
    float s = 0.05f;
    uint8_t z = 128;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
    dqg_tensor_id h = qconv(g, "c1", x, 16, 16, s, z);
    dqg_pool_attrs pa = {.algorithm = DQG_POOL_MAX,
                         .spatial_rank = 2,
                         .kernel = {3, 3},
                         .strides = {2, 2},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1}};
    dqg_tensor_id sc = test_const_f32(g, 0, &one, &s),
                  zp = dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1);
    h = dqg_pool(g, "pool", dqg_dequantize_linear(g, "pool_dq", h, sc, zp, &da), &pa);
    h = dqg_quantize_linear(g, "pool_q", h, sc, zp, &qa);
    dqg_tensor_id y = qconv(g, "c2", h, 16, 8, s, z);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_compiled_partition_count(c), 3);
    const char *info = dqg_compiled_partition_info(c, 1);
    cr_assert(int8_pool_kernel(info, DQG_U8) && !strstr(info, "reorder"), "%s", info);
    cr_assert(explained(c, "fused: Dequantize 'pool_dq' -> MaxPool 'pool'", "u8 max pooling"));
    dqg_compiled_destroy(c);
    cr_assert_leq(run_int8(g, x, y, NULL, NULL), 1);
    dqg_graph_destroy(g);
}

/* A NaN in a window makes the window's maximum NaN, as the reference has
 * it (oneDNN's max pooling skips it: max(NaN, v) is v there); infinity is
 * an ordinary maximum. Average pooling carries NaN by its sum. f32, bf16
 * and f16, overlapping windows with padding, non-overlapping ones and the
 * global maximum. */
Test(pool_values, max_propagates_nan_as_the_reference)
{
    static const dqg_dtype types[] = {DQG_F32, DQG_BF16, DQG_F16};
    dqg_pool_attrs padded = {.algorithm = DQG_POOL_MAX,
                             .spatial_rank = 2,
                             .kernel = {3, 3},
                             .strides = {2, 2},
                             .pads_begin = {1, 1},
                             .pads_end = {1, 1}},
                   avg = padded;
    avg.algorithm = DQG_POOL_AVG_EXCLUDE_PAD;
    const dqg_pool_attrs pools[] = {
        padded,
        {.algorithm = DQG_POOL_MAX, .spatial_rank = 2, .kernel = {2, 2}, .strides = {2, 2}},
        {.algorithm = DQG_POOL_MAX, .global = true},
        avg,
    };
    const int64_t xd[] = {1, 3, 8, 8}, n = 3 * 8 * 8;
    test_rng = 20261126u;
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (size_t p = 0; p < sizeof pools / sizeof *pools; p++) {
            dqg_graph *g = G();
            dqg_tensor_id x = dqg_input(g, "x", types[t], 4, xd);
            dqg_tensor_id y = dqg_pool(g, "p", x, &pools[p]);
            cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
            finalize_ok(g);
            float xf[3 * 8 * 8];
            for (int64_t i = 0; i < n; i++)
                xf[i] = rnd_unit() * 8.0f;
            xf[0] = NAN;       /* a corner: one window, or with padding */
            xf[64 + 27] = NAN; /* channel 1, inside */
            xf[64 + 28] = NAN; /* next to it */
            xf[128 + 9] = INFINITY;
            xf[128 + 50] = NAN;
            uint16_t xs[3 * 8 * 8];
            void *xv = types[t] == DQG_F32 ? (void *)xf : (void *)xs;
            if (types[t] != DQG_F32)
                dqg_dtype_encode(types[t], xf, n, xs, 0, false);
            size_t xn = dqg_tensor_byte_size(g, x), yn = dqg_tensor_byte_size(g, y);
            int64_t ne = dqg_tensor_element_count(g, y);
            void *r = malloc(yn), *o = malloc(yn);
            cr_assert_eq(run_ref_1(g, x, xv, xn, y, r, yn), DQG_OK, "%s", dqg_last_error());
            dqg_compiled *c = NULL;
            cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
            dqg_buffer bi = {.id = x, .data = xv, .size = xn},
                       bo = {.id = y, .data = o, .size = yn};
            cr_assert_eq(dqg_execute(c, &bi, 1, &bo, 1), DQG_OK, "%s", dqg_last_error());
            float rf[3 * 8 * 8], of[3 * 8 * 8];
            dqg_dtype_decode(dqg_tensor_dtype(g, y), r, 0, ne, rf);
            dqg_dtype_decode(dqg_tensor_dtype(g, y), o, 0, ne, of);
            int nans = 0;
            for (int64_t i = 0; i < ne; i++) {
                nans += isnan(rf[i]);
                if (isnan(rf[i]))
                    cr_assert(isnan(of[i]), "%s pool %zu: y[%lld] = %g, reference NaN (%s)",
                              dqg_dtype_name(types[t]), p, (long long)i, of[i],
                              dqg_compiled_partition_info(c, 0));
                else if (pools[p].algorithm == DQG_POOL_MAX)
                    cr_assert(of[i] == rf[i], "%s pool %zu: y[%lld] = %g, reference %g",
                              dqg_dtype_name(types[t]), p, (long long)i, of[i], rf[i]);
                else
                    cr_assert(of[i] == rf[i] ||
                                  fabsf(of[i] - rf[i]) <= (types[t] == DQG_F32 ? 1e-5f : 0.1f),
                              "%s pool %zu: y[%lld] = %g, reference %g", dqg_dtype_name(types[t]),
                              p, (long long)i, of[i], rf[i]);
            }
            cr_assert_geq(nans, 3, "the reference's NaN windows: %d", nans);
            free(r);
            free(o);
            dqg_compiled_destroy(c);
            dqg_graph_destroy(g);
        }
}
