/* Reshape, Transpose and TypeCast: reference results against hand-computed
 * values (4-bit packed data, rounding to nearest even from wide integers
 * and from f32) and the builders' rules. An unsupported TypeCast target is
 * DQG_INVALID_ARGUMENT, like every other attribute that breaks a rule. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

static dqg_graph *new_graph(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

/* Marks y as the output, finalizes and runs the reference with input x;
 * the raw output bytes land in out (out_size must be y's byte size). */
static void run_x(dqg_graph *g, dqg_tensor_id x, const void *dx, dqg_tensor_id y, void *out,
                  size_t out_size)
{
    cr_assert_neq(y, DQG_NONE, "build failed: %s", dqg_last_error());
    cr_assert_eq(dqg_output(g, y, NULL), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    cr_assert_eq(dqg_tensor_byte_size(g, y), out_size);
    dqg_status st = run_ref_1(g, x, (void *)dx, dqg_tensor_byte_size(g, x), y, out, out_size);
    cr_assert_eq(st, DQG_OK, "reference run: %s", dqg_last_error());
}

static void expect_dims(dqg_graph *g, dqg_tensor_id t, int rank, const int64_t *dims)
{
    int64_t d[DQG_MAX_RANK];
    cr_assert_eq(dqg_tensor_dims(g, t, d), rank, "rank %d, want %d", dqg_tensor_rank(g, t), rank);
    for (int i = 0; i < rank; i++)
        cr_assert_eq(d[i], dims[i], "dim %d: got %lld, want %lld", i, (long long)d[i],
                     (long long)dims[i]);
}

static void expect_bytes(const uint8_t *got, const uint8_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "byte %zu: got 0x%02x, want 0x%02x", i, got[i], want[i]);
}

static void expect_bits16(const uint16_t *got, const uint16_t *want, int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "element %d: got 0x%04x, want 0x%04x", i, got[i], want[i]);
}

/* The text dump of g (freed by the caller). */
static char *dump_text(dqg_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(dqg_graph_dump(g, DQG_DUMP_TEXT, f), DQG_OK);
    fclose(f);
    return buf;
}

/* Reshapes an f32 [2,3] input to `shape` and asserts the build fails with
 * DQG_INVALID_ARGUMENT and a message holding `key`. */
static void expect_reshape_error(int rank, const int64_t *shape, const char *key)
{
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    cr_assert_eq(dqg_reshape(g, "r", x, rank, shape), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Reshape 'r'", key);
    dqg_graph_destroy(g);
}

/* ---- Reference results ---------------------------------------------------- */

Test(shape_ops_ref, reshape_zero_and_minus_one)
{
    /* [2,3,4] with shape [0,-1]: the 0 copies 2, the -1 becomes 24 / 2. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 3, 4}, shape[] = {0, -1}, yd[] = {2, 12};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
    dqg_tensor_id y = dqg_reshape(g, "r", x, 2, shape);
    expect_dims(g, y, 2, yd);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F32);
    float X[24], out[24];
    for (int i = 0; i < 24; i++)
        X[i] = (float)i - 7.5f;
    run_x(g, x, X, y, out, sizeof out);
    cr_assert_eq(memcmp(out, X, sizeof X), 0, "a reshape keeps the bytes");
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, reshape_minus_one_first_and_zero_inside)
{
    /* [4,3,2] with [-1,0,1,2]: 0 copies dim 1 (3), the -1 is 24 / 6 = 4. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {4, 3, 2}, shape[] = {-1, 0, 1, 2}, yd[] = {4, 3, 1, 2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 3, xd);
    expect_dims(g, dqg_reshape(g, "r", x, 4, shape), 4, yd);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, reshape_to_and_from_rank0)
{
    dqg_graph *g = new_graph();
    int64_t xd[] = {1, 1}, minus_one[] = {-1}, one[] = {1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F16, 2, xd);
    dqg_tensor_id s = dqg_reshape(g, "to_scalar", x, 0, NULL);
    cr_assert_eq(dqg_tensor_rank(g, s), 0);
    dqg_tensor_id y = dqg_reshape(g, "from_scalar", s, 1, minus_one);
    expect_dims(g, y, 1, one);
    uint16_t X[] = {0xbc00}, out[1];
    run_x(g, x, X, y, out, sizeof out);
    cr_assert_eq(out[0], 0xbc00);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, reshape_s4_odd_count_keeps_packing)
{
    /* s4 [3] -> [3,1] -> [-1]: three nibbles in two bytes throughout. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {3}, s1[] = {3, 1}, s2[] = {-1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S4, 1, xd);
    dqg_tensor_id y = dqg_reshape(g, "r2", dqg_reshape(g, "r1", x, 2, s1), 1, s2);
    expect_dims(g, y, 1, xd);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_S4);
    uint8_t X[] = {0xe1, 0x03}, out[2];
    run_x(g, x, X, y, out, sizeof out);
    expect_bytes(out, X, 2);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, transpose_3d_perm)
{
    /* x [2,2,3] = 0..11, perm [0,2,1] -> y [2,3,2] with y[b][k][j] = x[b][j][k]. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 2, 3}, perm[] = {0, 2, 1}, yd[] = {2, 3, 2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
    dqg_tensor_id y = dqg_transpose(g, "t", x, perm);
    expect_dims(g, y, 3, yd);
    float X[12], out[12];
    for (int i = 0; i < 12; i++)
        X[i] = (float)i;
    run_x(g, x, X, y, out, sizeof out);
    float want[] = {0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11};
    for (int i = 0; i < 12; i++)
        cr_assert_eq(out[i], want[i], "element %d: got %g, want %g", i, (double)out[i],
                     (double)want[i]);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, transpose_null_perm_reverses_f16)
{
    /* f16 [2,3] (two-byte elements) -> [3,2]. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 3}, yd[] = {3, 2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F16, 2, xd);
    dqg_tensor_id y = dqg_transpose(g, "t", x, NULL);
    expect_dims(g, y, 2, yd);
    uint16_t X[] = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600}, out[6]; /* 1..6 */
    run_x(g, x, X, y, out, sizeof out);
    uint16_t want[] = {0x3c00, 0x4400, 0x4000, 0x4500, 0x4200, 0x4600};
    expect_bits16(out, want, 6);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, transpose_s4_nibbles)
{
    /* s4 [[1,-2,3],[-4,5,-6]] (nibbles 1,e,3,c,5,a) -> [[1,-4],[-2,5],[3,-6]]
     * (nibbles 1,c,e,5,3,a), the lower index in the low nibble. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 3}, perm[] = {1, 0}, yd[] = {3, 2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S4, 2, xd);
    dqg_tensor_id y = dqg_transpose(g, "t", x, perm);
    expect_dims(g, y, 2, yd);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_S4);
    uint8_t X[] = {0xe1, 0xc3, 0xa5}, out[3];
    run_x(g, x, X, y, out, sizeof out);
    uint8_t want[] = {0xc1, 0x5e, 0xa3};
    expect_bytes(out, want, 3);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, transpose_u4_odd_count_3d)
{
    /* u4 [3,1,1] = 7,8,9 with perm [1,2,0] -> [1,1,3], same element order;
     * the unused high nibble of the last byte stays 0. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {3, 1, 1}, perm[] = {1, 2, 0}, yd[] = {1, 1, 3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U4, 3, xd);
    dqg_tensor_id y = dqg_transpose(g, "t", x, perm);
    expect_dims(g, y, 3, yd);
    uint8_t X[] = {0x87, 0x09}, out[2];
    run_x(g, x, X, y, out, sizeof out);
    expect_bytes(out, X, 2);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, typecast_s32_to_f32_ties_to_even)
{
    /* 2^24 + 1 ties between 2^24 and 2^24 + 2: even is 2^24; -(2^24 + 3)
     * ties between -(2^24 + 2) (odd significand) and -(2^24 + 4). */
    dqg_graph *g = new_graph();
    int64_t d[] = {3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S32, 1, d);
    dqg_tensor_id y = dqg_typecast(g, "c", x, DQG_F32);
    int32_t X[] = {16777217, -16777219, INT32_MIN};
    float out[3];
    run_x(g, x, X, y, out, sizeof out);
    cr_assert_eq(out[0], 16777216.0f);
    cr_assert_eq(out[1], -16777220.0f);
    cr_assert_eq(out[2], -2147483648.0f);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, typecast_wide_integers_round_once)
{
    /* s32 2^24 + 2^16 + 1 to bf16 (ulp 2^17 there): just above the tie, so
     * 2^24 + 2^17 (0x4b81); through f32 first it would tie down to 0x4b80.
     * s64 2^60 + 2^36 + 1 to f32 (ulp 2^37): 2^60 + 2^37 (0x5d800001);
     * through double first it would tie down to 2^60. */
    dqg_graph *g = new_graph();
    int64_t d[] = {1};
    dqg_tensor_id a = dqg_input(g, "a", DQG_S32, 1, d), b = dqg_input(g, "b", DQG_S64, 1, d);
    dqg_tensor_id ya = dqg_typecast(g, "ca", a, DQG_BF16), yb = dqg_typecast(g, "cb", b, DQG_F32);
    cr_assert_eq(dqg_output(g, ya, NULL), DQG_OK);
    cr_assert_eq(dqg_output(g, yb, NULL), DQG_OK);
    finalize_ok(g);
    int32_t A[] = {16777216 + 65536 + 1};
    int64_t B[] = {(INT64_C(1) << 60) + (INT64_C(1) << 36) + 1};
    uint16_t outa[1];
    uint32_t outb[1];
    dqg_buffer in[] = {{.id = a, .data = A, .size = sizeof A},
                       {.id = b, .data = B, .size = sizeof B}};
    dqg_buffer out[] = {{.id = ya, .data = outa, .size = sizeof outa},
                        {.id = yb, .data = outb, .size = sizeof outb}};
    cr_assert_eq(dqg_reference_run(g, in, 2, out, 2), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(outa[0], 0x4b81, "got 0x%04x", outa[0]);
    cr_assert_eq(outb[0], 0x5d800001u, "got 0x%08x", outb[0]);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, typecast_f32_to_bf16_ties_to_even)
{
    /* 0x3f808000 ties between 0x3f80 (even) and 0x3f81; 0x3f818000 ties
     * between 0x3f81 and 0x3f82 (even); 0x3f808001 is above the tie. */
    dqg_graph *g = new_graph();
    int64_t d[] = {5};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id y = dqg_typecast(g, "c", x, DQG_BF16);
    uint32_t bits[] = {0x3f808000, 0x3f818000, 0x3f808001, 0xbf808000, 0x7fc00000};
    float X[5];
    memcpy(X, bits, sizeof X);
    uint16_t out[5];
    run_x(g, x, X, y, out, sizeof out);
    uint16_t want[] = {0x3f80, 0x3f82, 0x3f81, 0xbf80};
    expect_bits16(out, want, 4);
    cr_assert((out[4] & 0x7f80) == 0x7f80 && (out[4] & 0x7f) != 0, "NaN stays NaN: 0x%04x", out[4]);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, typecast_u8_to_f16)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {4};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 1, d);
    dqg_tensor_id y = dqg_typecast(g, "c", x, DQG_F16);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F16);
    uint8_t X[] = {0, 1, 255, 128};
    uint16_t out[4];
    run_x(g, x, X, y, out, sizeof out);
    uint16_t want[] = {0x0000, 0x3c00, 0x5bf8, 0x5800};
    expect_bits16(out, want, 4);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, typecast_u32_overflows_f16_to_infinity)
{
    /* 65519 is below the tie at 65520 (65504); 65520 and above go to infinity. */
    dqg_graph *g = new_graph();
    int64_t d[] = {3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U32, 1, d);
    dqg_tensor_id y = dqg_typecast(g, "c", x, DQG_F16);
    uint32_t X[] = {65519, 65520, 4000000000u};
    uint16_t out[3];
    run_x(g, x, X, y, out, sizeof out);
    uint16_t want[] = {0x7bff, 0x7c00, 0x7c00};
    expect_bits16(out, want, 3);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, typecast_small_floats_widen_exactly)
{
    /* f8e4m3fn 0x7e = 448, 0xb8 = -1, 0x01 = 2^-9 (smallest subnormal); to f16 exactly. */
    dqg_graph *g = new_graph();
    int64_t d[] = {3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F8E4M3FN, 1, d);
    dqg_tensor_id y = dqg_typecast(g, "c", x, DQG_F16);
    uint8_t X[] = {0x7e, 0xb8, 0x01};
    uint16_t out[3];
    run_x(g, x, X, y, out, sizeof out);
    uint16_t want[] = {0x5f00, 0xbc00, 0x1800};
    expect_bits16(out, want, 3);
    dqg_graph_destroy(g);
}

Test(shape_ops_ref, attrs_in_dump)
{
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 3, 4}, perm[] = {0, 2, 1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
    dqg_tensor_id y = dqg_typecast(g, "c", dqg_transpose(g, "t", x, perm), DQG_F16);
    cr_assert_eq(dqg_output(g, y, NULL), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    char *text = dump_text(g);
    cr_assert(strstr(text, "{perm=[0,2,1]}") && strstr(text, "{to=f16}"), "dump:\n%s", text);
    free(text);
    dqg_graph_destroy(g);
}

/* ---- Invalid builds --------------------------------------------------------- */

Test(shape_ops_invalid, reshape_count_mismatch)
{
    int64_t shape[] = {4, 2};
    expect_reshape_error(
        2, shape,
        "Reshape 'r': element count differs: input [2,3] has 6 elements, shape [4,2] has 8");
}

Test(shape_ops_invalid, reshape_two_minus_one)
{
    int64_t shape[] = {-1, 3, -1};
    expect_reshape_error(3, shape, "more than one -1");
}

Test(shape_ops_invalid, reshape_zero_beyond_input_rank)
{
    int64_t shape[] = {1, 6, 0};
    expect_reshape_error(3, shape, "shape[2] is 0");
    expect_reshape_error(3, shape, "input has rank 2");
}

Test(shape_ops_invalid, reshape_negative_dim)
{
    int64_t shape[] = {-2, -3};
    expect_reshape_error(2, shape, "shape[0] is -2; only -1 may be negative");
}

Test(shape_ops_invalid, reshape_minus_one_not_divisible)
{
    int64_t shape[] = {-1, 4};
    expect_reshape_error(2, shape, "cannot infer the -1");
}

Test(shape_ops_invalid, reshape_rank_9)
{
    int64_t shape[] = {1, 1, 1, 1, 1, 1, 1, 2, 3};
    expect_reshape_error(9, shape, "target rank 9 is outside [0, 8]");
    expect_reshape_error(-1, shape, "target rank -1");
}

Test(shape_ops_invalid, reshape_null_shape)
{
    expect_reshape_error(2, NULL, "shape is NULL");
}

Test(shape_ops_invalid, transpose_repeated_perm)
{
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 2, 2}, perm[] = {0, 0, 1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
    cr_assert_eq(dqg_transpose(g, "t", x, perm), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT,
                 "Transpose 't': perm [0,0,1] is not a permutation of 0..2");
    dqg_graph_destroy(g);
}

Test(shape_ops_invalid, transpose_perm_out_of_range)
{
    int64_t perms[][3] = {{0, 1, 3}, {-1, 0, 1}};
    const char *shown[] = {"perm [0,1,3]", "perm [-1,0,1]"};
    for (int i = 0; i < 2; i++) {
        dqg_graph *g = new_graph();
        int64_t xd[] = {2, 3, 4};
        dqg_tensor_id x = dqg_input(g, "x", DQG_S4, 3, xd);
        cr_assert_eq(dqg_transpose(g, "t", x, perms[i]), DQG_NONE);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Transpose 't'", shown[i],
                     "not a permutation of 0..2");
        dqg_graph_destroy(g);
    }
}

Test(shape_ops_invalid, typecast_to_4bit_or_64bit_integer)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_typecast(g, "c", x, DQG_U4), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "TypeCast 'c'",
                 "target type u4 is not supported", "f32, f16, bf16, s8");
    dqg_graph_destroy(g);
    g = new_graph();
    x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_typecast(g, "c64", x, DQG_S64), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "TypeCast 'c64'",
                 "target type s64 is not supported");
    dqg_graph_destroy(g);
}

Test(shape_ops_invalid, typecast_to_float8)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_typecast(g, "c", x, DQG_F8E5M2), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "TypeCast 'c'",
                 "target type f8e5m2 is not supported");
    dqg_graph_destroy(g);
}

Test(shape_ops_invalid, unknown_tensor_id)
{
    dqg_graph *g = new_graph();
    int64_t shape[] = {-1};
    cr_assert_eq(dqg_reshape(g, "r", 7, 1, shape), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Reshape 'r'", "input 0 (x)",
                 "unknown tensor id 7");
    dqg_graph_destroy(g);
    g = new_graph();
    cr_assert_eq(dqg_transpose(g, "t", DQG_NONE, NULL), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Transpose 't'",
                 "unknown tensor id -1");
    dqg_graph_destroy(g);
    g = new_graph();
    cr_assert_eq(dqg_typecast(g, "c", 0, DQG_F32), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "TypeCast 'c'",
                 "unknown tensor id 0");
    dqg_graph_destroy(g);
}

Test(shape_ops_invalid, null_graph)
{
    int64_t shape[] = {-1};
    cr_assert_eq(dqg_reshape(NULL, "r", 0, 1, shape), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "Reshape 'r'") && strstr(dqg_last_error(), "graph is NULL"),
              "%s", dqg_last_error());
    cr_assert_eq(dqg_transpose(NULL, "t", 0, NULL), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "Transpose 't'") &&
              strstr(dqg_last_error(), "graph is NULL"));
    cr_assert_eq(dqg_typecast(NULL, "c", 0, DQG_F32), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "TypeCast 'c'") &&
              strstr(dqg_last_error(), "graph is NULL"));
}

Test(shape_ops_invalid, null_name_in_messages_and_generated)
{
    /* A NULL name is allowed (the op gets a generated one); a failing call
     * with a NULL name still names the op kind and the rule. */
    dqg_graph *g = new_graph();
    int64_t xd[] = {2, 3}, shape[] = {3, 2}, bad[] = {5};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    cr_assert_neq(dqg_reshape(g, NULL, x, 2, shape), DQG_NONE, "%s", dqg_last_error());
    cr_assert(strncmp(dqg_graph_op_name(g, 0), "Reshape", 7) == 0, "generated name '%s'",
              dqg_graph_op_name(g, 0));
    cr_assert_eq(dqg_reshape(g, NULL, x, 1, bad), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Reshape", "element count differs");
    dqg_graph_destroy(g);
}
