/* Add, Mul, ReLU and Clip: reference results against hand-computed values
 * (broadcasting, rounding of f16/bf16 results, NaN and infinities) and the
 * builders' rules, each broken build checked for its status and message. */
#include <math.h>
#include <stdlib.h>

#include "graph/dtype.h"
#include "test_common.h"

static dqg_graph *new_graph(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

/* Marks y as the output, finalizes and runs the reference with inputs a and
 * (unless DQG_NONE) b; the raw output bytes land in out. */
static void run_ab(dqg_graph *g, dqg_tensor_id a, const void *da, dqg_tensor_id b, const void *db,
                   dqg_tensor_id y, void *out, size_t out_size)
{
    cr_assert_neq(y, DQG_NONE, "build failed: %s", dqg_last_error());
    cr_assert_eq(dqg_output(g, y, NULL), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    cr_assert_eq(dqg_tensor_byte_size(g, y), out_size);
    dqg_buffer in[2] = {{.id = a, .data = (void *)da, .size = dqg_tensor_byte_size(g, a)},
                        {.id = b, .data = (void *)db, .size = dqg_tensor_byte_size(g, b)}};
    dqg_buffer o = {.id = y, .data = out, .size = out_size};
    dqg_status st = dqg_reference_run(g, in, b == DQG_NONE ? 1 : 2, &o, 1);
    cr_assert_eq(st, DQG_OK, "reference run: %s", dqg_last_error());
}

static void expect_floats(const float *got, const float *want, int n)
{
    for (int i = 0; i < n; i++) {
        if (isnan(want[i]))
            cr_assert(isnan(got[i]), "element %d: got %g, want NaN", i, (double)got[i]);
        else
            cr_assert_eq(got[i], want[i], "element %d: got %.9g, want %.9g", i, (double)got[i],
                         (double)want[i]);
    }
}

static void expect_bits16(const uint16_t *got, const uint16_t *want, int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "element %d: got 0x%04x, want 0x%04x", i, got[i], want[i]);
}

static void expect_dims(dqg_graph *g, dqg_tensor_id t, int rank, const int64_t *dims)
{
    int64_t d[DQG_MAX_RANK];
    cr_assert_eq(dqg_tensor_rank(g, t), rank);
    cr_assert_eq(dqg_tensor_dims(g, t, d), rank);
    for (int i = 0; i < rank; i++)
        cr_assert_eq(d[i], dims[i], "dim %d: got %lld, want %lld", i, (long long)d[i],
                     (long long)dims[i]);
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

/* ---- Reference results ---------------------------------------------------- */

Test(elementwise_ref, add_row_broadcast)
{
    dqg_graph *g = new_graph();
    int64_t ad[] = {2, 3}, bd[] = {3};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 1, bd);
    dqg_tensor_id y = dqg_add(g, "add", a, b);
    expect_dims(g, y, 2, ad);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F32);
    float A[] = {1, 2, 3, 4, 5, 6}, B[] = {10, 20, 30}, out[6];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    float want[] = {11, 22, 33, 14, 25, 36};
    expect_floats(out, want, 6);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, add_broadcast_is_symmetric)
{
    /* [3] + [2,3]: the smaller operand may come first. */
    dqg_graph *g = new_graph();
    int64_t ad[] = {3}, bd[] = {2, 3};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, ad), b = dqg_input(g, "b", DQG_F32, 2, bd);
    dqg_tensor_id y = dqg_add(g, "add", a, b);
    expect_dims(g, y, 2, bd);
    float A[] = {-1, 0, 1}, B[] = {1, 2, 3, 4, 5, 6}, out[6];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    float want[] = {0, 2, 4, 3, 5, 7};
    expect_floats(out, want, 6);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, mul_outer_broadcast)
{
    /* [2,1] * [1,3] -> [2,3]: both operands are stretched. */
    dqg_graph *g = new_graph();
    int64_t ad[] = {2, 1}, bd[] = {1, 3}, yd[] = {2, 3};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 2, bd);
    dqg_tensor_id y = dqg_mul(g, "mul", a, b);
    expect_dims(g, y, 2, yd);
    float A[] = {2, -3}, B[] = {1, 10, 100}, out[6];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    float want[] = {2, 20, 200, -3, -30, -300};
    expect_floats(out, want, 6);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, mul_rank3_middle_broadcast)
{
    /* [2,1,2] * [3,1] -> [2,3,2] */
    dqg_graph *g = new_graph();
    int64_t ad[] = {2, 1, 2}, bd[] = {3, 1}, yd[] = {2, 3, 2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 3, ad), b = dqg_input(g, "b", DQG_F32, 2, bd);
    dqg_tensor_id y = dqg_mul(g, "mul", a, b);
    expect_dims(g, y, 3, yd);
    float A[] = {1, 2, 3, 4}, B[] = {1, 10, 100}, out[12];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    float want[] = {1, 2, 10, 20, 100, 200, 3, 4, 30, 40, 300, 400};
    expect_floats(out, want, 12);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, add_scalar_rank0)
{
    dqg_graph *g = new_graph();
    int64_t ad[] = {2, 2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), s = dqg_input(g, "s", DQG_F32, 0, NULL);
    dqg_tensor_id y = dqg_add(g, "add", s, a);
    expect_dims(g, y, 2, ad);
    float A[] = {1, -2, 0.25f, 8}, S[] = {0.5f}, out[4];
    run_ab(g, a, A, s, S, y, out, sizeof out);
    float want[] = {1.5f, -1.5f, 0.75f, 8.5f};
    expect_floats(out, want, 4);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, mul_both_rank0)
{
    dqg_graph *g = new_graph();
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 0, NULL), b = dqg_input(g, "b", DQG_F32, 0, NULL);
    dqg_tensor_id y = dqg_mul(g, "mul", a, b);
    cr_assert_eq(dqg_tensor_rank(g, y), 0);
    cr_assert_eq(dqg_tensor_element_count(g, y), 1);
    float A[] = {-1.5f}, B[] = {4}, out[1];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    cr_assert_eq(out[0], -6.0f);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, add_f16_rounds_once_to_nearest_even)
{
    /* 1 + 2^-11 is the tie between 1 and 1 + 2^-10: even is 1 (0x3c00).
     * 1 + 3*2^-11 ties between 0x3c01 and 0x3c02: even is 0x3c02.
     * 65504 + 16 = 65520 ties between 65504 (odd) and 2^16: infinity. */
    dqg_graph *g = new_graph();
    int64_t d[] = {3};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F16, 1, d), b = dqg_input(g, "b", DQG_F16, 1, d);
    dqg_tensor_id y = dqg_add(g, "add", a, b);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F16);
    uint16_t A[] = {0x3c00, 0x3c00, 0x7bff}, B[] = {0x1000, 0x1600, 0x4c00}, out[3];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    uint16_t want[] = {0x3c00, 0x3c02, 0x7c00};
    expect_bits16(out, want, 3);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, mul_bf16_rounds_once)
{
    /* 1.0078125^2 = 1.01568603515625 -> nearest bf16 1.015625 (0x3f82);
     * -2 * 3 = -6 (0xc0c0) exactly. */
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_BF16, 1, d), b = dqg_input(g, "b", DQG_BF16, 1, d);
    dqg_tensor_id y = dqg_mul(g, "mul", a, b);
    uint16_t A[] = {0x3f81, 0xc000}, B[] = {0x3f81, 0x4040}, out[2];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    uint16_t want[] = {0x3f82, 0xc0c0};
    expect_bits16(out, want, 2);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, add_mul_nan_and_infinity)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {4};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, d), b = dqg_input(g, "b", DQG_F32, 1, d);
    dqg_tensor_id y = dqg_mul(g, "mul", dqg_add(g, "add", a, b), b);
    float A[] = {NAN, INFINITY, 1, -2}, B[] = {1, -INFINITY, INFINITY, 0}, out[4];
    run_ab(g, a, A, b, B, y, out, sizeof out);
    /* (NaN+1)*1, (inf-inf)*-inf, (1+inf)*inf, (-2+0)*0 = -0 */
    float want[] = {NAN, NAN, INFINITY, 0};
    expect_floats(out, want, 4);
    cr_assert(signbit(out[3]), "(-2 + 0) * 0 is -0");
    dqg_graph_destroy(g);
}

Test(elementwise_ref, relu_negative_nan_and_zero)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {7};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id y = dqg_relu(g, "relu", x);
    float X[] = {-1, 0, 2.5f, NAN, -0.0f, -INFINITY, INFINITY}, out[7];
    run_ab(g, x, X, DQG_NONE, NULL, y, out, sizeof out);
    /* -0 compares equal to 0; its sign is not pinned here. */
    float want[] = {0, 0, 2.5f, NAN, 0, 0, INFINITY};
    expect_floats(out, want, 7);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, relu_f16)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F16, 1, d);
    dqg_tensor_id y = dqg_relu(g, "relu", x);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F16);
    uint16_t X[] = {0xbc00 /* -1 */, 0x3555 /* 0.333 */, 0x7e00 /* NaN */}, out[3];
    run_ab(g, x, X, DQG_NONE, NULL, y, out, sizeof out);
    cr_assert_eq(out[0], 0x0000);
    cr_assert_eq(out[1], 0x3555);
    cr_assert((out[2] & 0x7c00) == 0x7c00 && (out[2] & 0x03ff) != 0, "NaN stays NaN: 0x%04x",
              out[2]);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, clip_values_nan_and_infinity)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {7};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id y = dqg_clip(g, "c", x, 0, 6);
    float X[] = {-3, 0.5f, 7, NAN, 6, -INFINITY, INFINITY}, out[7];
    run_ab(g, x, X, DQG_NONE, NULL, y, out, sizeof out);
    float want[] = {0, 0.5f, 6, NAN, 6, 0, 6};
    expect_floats(out, want, 7);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, clip_equal_bounds_and_infinite_bounds)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id y1 = dqg_clip(g, "c1", x, 2, 2);
    dqg_tensor_id y = dqg_add(g, "add", y1, dqg_clip(g, "c2", x, -INFINITY, 0));
    float X[] = {-5, 2, 9}, out[3];
    run_ab(g, x, X, DQG_NONE, NULL, y, out, sizeof out);
    float want[] = {2 - 5, 2 + 0, 2 + 0};
    expect_floats(out, want, 3);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, clip_bf16_bound_rounds_to_type)
{
    /* hi = 0.1 is not a bf16 value: a clipped element becomes bf16(0.1) =
     * 0x3dcd; an element already below stays as it is. */
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_BF16, 1, d);
    dqg_tensor_id y = dqg_clip(g, "c", x, -1, 0.1f);
    uint16_t X[] = {0x3f80 /* 1 */, 0x3d80 /* 0.0625 */}, out[2];
    run_ab(g, x, X, DQG_NONE, NULL, y, out, sizeof out);
    uint16_t want[] = {0x3dcd, 0x3d80};
    expect_bits16(out, want, 2);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, clip_attrs_in_dump)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_output(g, dqg_clip(g, "c", x, 0, 6), NULL), DQG_OK);
    finalize_ok(g);
    char *text = dump_text(g);
    cr_assert(strstr(text, "Clip 'c'") && strstr(text, "{min=0 max=6}"), "dump:\n%s", text);
    free(text);
    dqg_graph_destroy(g);
}

Test(elementwise_ref, null_name_is_generated)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, d);
    dqg_tensor_id y1 = dqg_add(g, NULL, a, a), y2 = dqg_add(g, NULL, y1, a);
    cr_assert_neq(y1, DQG_NONE, "%s", dqg_last_error());
    cr_assert_neq(y2, DQG_NONE, "%s", dqg_last_error());
    const char *n0 = dqg_graph_op_name(g, 0), *n1 = dqg_graph_op_name(g, 1);
    cr_assert(n0 && n1 && *n0 && *n1);
    cr_assert_str_neq(n0, n1);
    cr_assert(strncmp(n0, "Add", 3) == 0, "generated name '%s'", n0);
    float A[] = {1, 2}, out[2];
    run_ab(g, a, A, DQG_NONE, NULL, y2, out, sizeof out);
    float want[] = {3, 6};
    expect_floats(out, want, 2);
    dqg_graph_destroy(g);
}

/* ---- Invalid builds --------------------------------------------------------- */

Test(elementwise_invalid, add_bad_broadcast)
{
    dqg_graph *g = new_graph();
    int64_t ad[] = {2, 3}, bd[] = {4};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, ad), b = dqg_input(g, "b", DQG_F32, 1, bd);
    cr_assert_eq(dqg_add(g, "add", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Add 'add'", "[2,3]", "[4]",
                 "do not broadcast");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, mul_bad_broadcast_inner)
{
    /* [2,3,4] * [3,1,4]: trailing dims fit, the leading ones (2 vs 3) do not. */
    dqg_graph *g = new_graph();
    int64_t ad[] = {2, 3, 4}, bd[] = {3, 1, 4};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 3, ad), b = dqg_input(g, "b", DQG_F32, 3, bd);
    cr_assert_eq(dqg_mul(g, "m", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Mul 'm'", "do not broadcast",
                 "2 and 3");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, add_dtype_mismatch)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, d), b = dqg_input(g, "b", DQG_F16, 1, d);
    cr_assert_eq(dqg_add(g, "add", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Add 'add'", "different data types",
                 "f32", "f16");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, add_4bit_input)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_S4, 1, d), b = dqg_input(g, "b", DQG_S4, 1, d);
    cr_assert_eq(dqg_add(g, "add", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Add 'add'", "input 0 (a)",
                 "data type s4 is not allowed", "f32", "u8", "s32");
    dqg_graph_destroy(g);
}

/* Integer Add and Mul wrap around modulo 2^bits, as in ONNX (NumPy), on
 * the reference interpreter and on both backends (the oneDNN backend runs
 * them on the reference kernel: oneDNN's binary would saturate). */
Test(elementwise_ref, add_mul_integers_wrap_around)
{
    struct {
        dqg_dtype t;
        bool mul;
        int64_t a[3], b[3], want[3];
    } cases[] = {
        {DQG_U8, false, {200, 255, 7}, {100, 1, 8}, {44, 0, 15}},
        {DQG_S8, false, {100, -128, -5}, {100, -1, 3}, {-56, 127, -2}},
        {DQG_S8, true, {-128, 16, -3}, {-1, 16, 5}, {-128, 0, -15}},
        {DQG_U16, true, {65535, 300, 2}, {65535, 300, 3}, {1, 24464, 6}},
        {DQG_S16, false, {32767, -32768, 1}, {1, -1, -1}, {-32768, 32767, 0}},
        {DQG_S32, false, {INT32_MAX, INT32_MIN, -7}, {1, -1, 7}, {INT32_MIN, INT32_MAX, 0}},
        {DQG_U32, true, {UINT32_MAX, 65536, 3}, {UINT32_MAX, 65536, 4}, {1, 0, 12}},
        {DQG_S32, true, {INT32_MIN, 65536, -46341}, {-1, 65536, 46341}, {INT32_MIN, 0, 2147479015}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g = new_graph();
        int64_t d[] = {3};
        dqg_dtype t = cases[k].t;
        dqg_tensor_id a = dqg_input(g, "a", t, 1, d), b = dqg_input(g, "b", t, 1, d);
        dqg_tensor_id y = cases[k].mul ? dqg_mul(g, "m", a, b) : dqg_add(g, "m", a, b);
        uint8_t da[12], db[12], out[12], got[12];
        for (int i = 0; i < 3; i++) {
            dqg_store_int(t, da, i, cases[k].a[i]);
            dqg_store_int(t, db, i, cases[k].b[i]);
        }
        size_t size = dqg_dtype_storage_size(t, 3);
        run_ab(g, a, da, b, db, y, out, size);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(dqg_load_int(t, out, i), cases[k].want[i], "case %zu element %d: %lld", k,
                         i, (long long)dqg_load_int(t, out, i));
        for (int backend = 0; backend < 2; backend++) {
            dqg_compile_options o = dqg_compile_options_default();
            o.backend = backend ? DQG_BACKEND_REFERENCE : DQG_BACKEND_ONEDNN;
            dqg_compiled *c = NULL;
            cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
            dqg_buffer in[2] = {{.id = a, .data = da, .size = size},
                                {.id = b, .data = db, .size = size}};
            dqg_buffer ob = {.id = y, .data = got, .size = size};
            cr_assert_eq(dqg_execute(c, in, 2, &ob, 1), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(memcmp(got, out, size), 0, "case %zu backend %d", k, backend);
            dqg_compiled_destroy(c);
        }
        dqg_graph_destroy(g);
    }
}

Test(elementwise_invalid, mul_float8_second_input)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, d), b = dqg_input(g, "b", DQG_F8E4M3FN, 1, d);
    cr_assert_eq(dqg_mul(g, "m", a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Mul 'm'", "input 1 (b)",
                 "data type f8e4m3fn");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, add_unknown_tensor_id)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, d);
    cr_assert_eq(dqg_add(g, "add", a, 42), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Add 'add'", "input 1 (b)",
                 "unknown tensor id 42");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, relu_none_input)
{
    dqg_graph *g = new_graph();
    cr_assert_eq(dqg_relu(g, "r", DQG_NONE), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReLU 'r'", "input 0 (x)",
                 "unknown tensor id -1");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, relu_integer_input)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S8, 1, d);
    cr_assert_eq(dqg_relu(g, "r", x), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReLU 'r'", "data type s8");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, clip_min_greater_than_max)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2, 3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d);
    cr_assert_eq(dqg_clip(g, "c", x, 6, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT,
                 "Clip 'c': min 6 is greater than max 0");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, clip_nan_bound)
{
    float bounds[][2] = {{NAN, 1}, {0, NAN}};
    const char *which[] = {"min is NaN", "max is NaN"};
    for (int i = 0; i < 2; i++) {
        dqg_graph *g = new_graph();
        int64_t d[] = {2};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
        cr_assert_eq(dqg_clip(g, "c", x, bounds[i][0], bounds[i][1]), DQG_NONE);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Clip 'c'", which[i]);
        dqg_graph_destroy(g);
    }
}

Test(elementwise_invalid, clip_integer_input)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 1, d);
    cr_assert_eq(dqg_clip(g, "c", x, 0, 6), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Clip 'c'", "input 0 (x)",
                 "data type u8");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, null_graph)
{
    cr_assert_eq(dqg_add(NULL, "add", 0, 1), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "Add 'add'") && strstr(dqg_last_error(), "graph is NULL"),
              "%s", dqg_last_error());
    cr_assert_eq(dqg_mul(NULL, NULL, 0, 1), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "Mul") && strstr(dqg_last_error(), "graph is NULL"));
    cr_assert_eq(dqg_clip(NULL, "c", 0, 0, 1), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "Clip 'c'") && strstr(dqg_last_error(), "graph is NULL"));
    cr_assert_eq(dqg_relu(NULL, "r", 0), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "ReLU 'r'") && strstr(dqg_last_error(), "graph is NULL"));
}

Test(elementwise_invalid, first_error_is_sticky)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2}, e[] = {3};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, d), b = dqg_input(g, "b", DQG_F32, 1, e);
    cr_assert_eq(dqg_add(g, "first", a, b), DQG_NONE);
    /* A later, valid call does nothing and the first error is what finalize reports. */
    cr_assert_eq(dqg_mul(g, "second", a, a), DQG_NONE);
    cr_assert_eq(dqg_graph_op_count(g), 0);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Add 'first'", "do not broadcast");
    dqg_graph_destroy(g);
}

Test(elementwise_invalid, duplicate_op_name)
{
    dqg_graph *g = new_graph();
    int64_t d[] = {2};
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 1, d);
    cr_assert_neq(dqg_add(g, "op", a, a), DQG_NONE);
    cr_assert_eq(dqg_clip(g, "op", a, 0, 1), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Clip 'op'", "duplicate name");
    dqg_graph_destroy(g);
}
