/* The bool type and the ops around it: comparisons, logical functions,
 * Where and GatherElements. Hand-worked values (broadcasting included),
 * every builder rule, bool refused where it makes no sense, the compiled
 * kernels against the reference, and ONNX import. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum { T_FLOAT = 1, T_INT32 = 6, T_INT64 = 7, T_BOOL = 9 };

/* Runs a finalized graph with its inputs bound in order on the reference,
 * compiled (fused and unfused) and on the reference backend, and asserts
 * that all four give the same bytes for the single output, left in `out`. */
static void run_all(dqg_graph *g, void *const *in, const size_t *in_size, void *out,
                    size_t out_size)
{
    size_t n = dqg_graph_input_count(g);
    dqg_buffer ib[4];
    for (size_t i = 0; i < n; i++)
        ib[i] = (dqg_buffer){.id = dqg_graph_input_id(g, i), .data = in[i], .size = in_size[i]};
    dqg_buffer ob = {.id = dqg_graph_output_id(g, 0), .data = out, .size = out_size};
    cr_assert_eq(dqg_reference_run(g, ib, n, &ob, 1), DQG_OK, "%s", dqg_last_error());
    unsigned char *got = malloc(out_size);
    for (int mode = 0; mode < 3; mode++) {
        dqg_compile_options o = dqg_compile_options_default();
        o.disable_fusion = mode == 1;
        o.backend = mode == 2 ? DQG_BACKEND_REFERENCE : DQG_BACKEND_ONEDNN;
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        memset(got, 0xA5, out_size);
        ob.data = got;
        cr_assert_eq(dqg_execute(c, ib, n, &ob, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert(memcmp(got, out, out_size) == 0, "mode %d differs from the reference", mode);
        dqg_compiled_destroy(c);
    }
    free(got);
}

/* The implementation the (single) partition of a compiled graph chose. */
static void expect_impl(dqg_graph *g, const char *impl)
{
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_compiled_partition_count(c), 1);
    cr_assert(strstr(dqg_compiled_partition_info(c, 0), impl), "%s",
              dqg_compiled_partition_info(c, 0));
    dqg_compiled_destroy(c);
}

/* ---- Comparisons ----------------------------------------------------------- */

/* a [2, 3] against b [3] for every comparison, NaN included. */
Test(compare, hand_worked_values_with_broadcasting)
{
    static const dqg_compare_op ops[] = {DQG_COMPARE_EQUAL, DQG_COMPARE_LESS,
                                         DQG_COMPARE_LESS_EQUAL, DQG_COMPARE_GREATER,
                                         DQG_COMPARE_GREATER_EQUAL};
    const float a[6] = {1, 2, 3, NAN, -0.0f, 5}, b[3] = {2, 2, NAN};
    /* a row 0: 1 ? 2, 2 ? 2, 3 ? NaN; row 1: NaN ? 2, -0 ? 2, 5 ? NaN */
    static const uint8_t want[5][6] = {
        {0, 1, 0, 0, 0, 0}, /* == */
        {1, 0, 0, 0, 1, 0}, /* <  */
        {1, 1, 0, 0, 1, 0}, /* <= */
        {0, 0, 0, 0, 0, 0}, /* >  */
        {0, 1, 0, 0, 0, 0}, /* >= */
    };
    for (int k = 0; k < 5; k++) {
        dqg_graph *g;
        dqg_graph_create(&g);
        int64_t ad[] = {2, 3}, bd[] = {3};
        dqg_tensor_id x = dqg_input(g, "a", DQG_F32, 2, ad), y = dqg_input(g, "b", DQG_F32, 1, bd);
        dqg_tensor_id z = dqg_compare(g, "cmp", ops[k], x, y);
        cr_assert_eq(dqg_tensor_dtype(g, z), DQG_BOOL);
        dqg_output(g, z, "z");
        finalize_ok(g);
        uint8_t out[6];
        run_all(g, (void *[]){(void *)a, (void *)b}, (size_t[]){sizeof a, sizeof b}, out,
                sizeof out);
        cr_assert_arr_eq(out, want[k], 6, "%s", dqg_compare_op_name(ops[k]));
        if (k == 0)
            expect_impl(g, "dqgraph:compare");
        dqg_graph_destroy(g);
    }
}

/* Integers compare as integers: s64 values 2^53 + 1 and 2^53 are equal as
 * doubles but not here; u32 above 2^31 is not negative. The first operand
 * broadcasts ([1] against [3]). */
Test(compare, integers_compare_exactly)
{
    dqg_graph *g;
    dqg_graph_create(&g);
    int64_t one = 1, three = 3;
    dqg_tensor_id a = dqg_input(g, "a", DQG_S64, 1, &one),
                  b = dqg_input(g, "b", DQG_S64, 1, &three);
    dqg_output(g, dqg_compare(g, "lt", DQG_COMPARE_LESS, a, b), "z");
    finalize_ok(g);
    int64_t av[1] = {(INT64_C(1) << 53)}, bv[3] = {(INT64_C(1) << 53) + 1, INT64_C(1) << 53, -1};
    uint8_t out[3];
    run_all(g, (void *[]){av, bv}, (size_t[]){sizeof av, sizeof bv}, out, sizeof out);
    const uint8_t want[] = {1, 0, 0};
    cr_assert_arr_eq(out, want, 3);
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    a = dqg_input(g, "a", DQG_U32, 1, &three);
    b = dqg_constant(g, "b", DQG_U32, 0, NULL, (uint32_t[]){7}, 4);
    dqg_output(g, dqg_compare(g, "gt", DQG_COMPARE_GREATER, a, b), "z");
    finalize_ok(g);
    uint32_t uv[3] = {0x80000000u, 7, 6};
    run_all(g, (void *[]){uv}, (size_t[]){sizeof uv}, out, sizeof out);
    const uint8_t want_u[] = {1, 0, 0};
    cr_assert_arr_eq(out, want_u, 3);
    dqg_graph_destroy(g);
}

/* Every type a comparison takes, compiled against the reference on random
 * values with both operands broadcasting ([4, 1, 3] against [5, 1]). */
Test(compare, every_type_compiled_as_the_reference)
{
    static const dqg_dtype types[] = {DQG_F32, DQG_F16, DQG_BF16, DQG_S8,  DQG_U8,  DQG_S16,
                                      DQG_U16, DQG_S32, DQG_U32,  DQG_S64, DQG_BOOL};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int op = 0; op < DQG_COMPARE_COUNT; op++) {
            if (types[t] == DQG_BOOL && op != DQG_COMPARE_EQUAL)
                continue;
            dqg_graph *g;
            dqg_graph_create(&g);
            int64_t ad[] = {4, 1, 3}, bd[] = {5, 1};
            dqg_tensor_id a = dqg_input(g, "a", types[t], 3, ad);
            dqg_tensor_id b = dqg_input(g, "b", types[t], 2, bd);
            dqg_output(g, dqg_compare(g, "c", (dqg_compare_op)op, a, b), "z");
            finalize_ok(g);
            size_t es = (size_t)dqg_dtype_bits(types[t]) / 8;
            unsigned char av[12 * 8], bv[5 * 8];
            /* Few distinct values, so that equality happens. */
            for (size_t i = 0; i < sizeof av; i++)
                av[i] = (unsigned char)(test_rnd() % 3);
            for (size_t i = 0; i < sizeof bv; i++)
                bv[i] = (unsigned char)(test_rnd() % 3);
            if (types[t] == DQG_F32 || types[t] == DQG_F16 || types[t] == DQG_BF16) {
                float fa[12], fb[5];
                for (int i = 0; i < 12; i++)
                    fa[i] = (float)(test_rnd() % 5) - 2.0f;
                for (int i = 0; i < 5; i++)
                    fb[i] = (float)(test_rnd() % 5) - 2.0f;
                fa[3] = NAN;
                dqg_dtype_encode(types[t], fa, 12, av, 0, true);
                dqg_dtype_encode(types[t], fb, 5, bv, 0, true);
            }
            uint8_t out[60];
            run_all(g, (void *[]){av, bv}, (size_t[]){12 * es, 5 * es}, out, sizeof out);
            for (int i = 0; i < 60; i++)
                cr_assert(out[i] <= 1);
            dqg_graph_destroy(g);
        }
}

Test(compare, rules)
{
    dqg_graph *g;
    int64_t d2[] = {2, 3}, d3[] = {4};
    dqg_graph_create(&g);
    dqg_tensor_id a = dqg_input(g, "a", DQG_F32, 2, d2);
    cr_assert_eq(dqg_compare(g, "c", (dqg_compare_op)9, a, a), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Compare 'c'", "comparison 9");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    a = dqg_input(g, "a", DQG_F32, 2, d2);
    dqg_tensor_id i = dqg_input(g, "i", DQG_S32, 2, d2);
    cr_assert_eq(dqg_compare(g, "eq", DQG_COMPARE_EQUAL, a, i), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Equal 'eq'", "different data types",
                 "f32", "s32");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    a = dqg_input(g, "a", DQG_F32, 2, d2);
    dqg_tensor_id b = dqg_input(g, "b", DQG_F32, 1, d3);
    cr_assert_eq(dqg_compare(g, "lt", DQG_COMPARE_LESS, a, b), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Less 'lt'", "do not broadcast",
                 "[2,3]", "[4]");
    dqg_graph_destroy(g);

    /* bool is compared by Equal only; 4-bit types and float8 not at all. */
    dqg_graph_create(&g);
    dqg_tensor_id p = dqg_input(g, "p", DQG_BOOL, 2, d2);
    cr_assert_neq(dqg_compare(g, "eq", DQG_COMPARE_EQUAL, p, p), DQG_NONE);
    cr_assert_eq(dqg_compare(g, "gt", DQG_COMPARE_GREATER, p, p), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Greater 'gt'", "input 0 (a)",
                 "data type bool is not allowed");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    dqg_tensor_id q = dqg_input(g, "q", DQG_S4, 2, d2);
    cr_assert_eq(dqg_compare(g, "ge", DQG_COMPARE_GREATER_EQUAL, q, q), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GreaterOrEqual 'ge'",
                 "data type s4 is not allowed");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    a = dqg_input(g, "a", DQG_F32, 2, d2);
    cr_assert_eq(dqg_compare(g, "le", DQG_COMPARE_LESS_EQUAL, a, 77), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "LessOrEqual 'le'", "input 1 (b)",
                 "unknown tensor id 77");
    dqg_graph_destroy(g);

    cr_assert_str_eq(dqg_compare_op_name(DQG_COMPARE_GREATER_EQUAL), "GreaterOrEqual");
    cr_assert_str_eq(dqg_compare_op_name(DQG_COMPARE_COUNT), "Unknown");
}

/* ---- Logical functions --------------------------------------------------------- */

Test(logical, hand_worked_values_with_broadcasting)
{
    /* a [2, 2] against b [2]: a = [[0, 1], [1, 1]], b = [0, 1]; a byte 2 in
     * an input reads as true. */
    const uint8_t a[4] = {0, 1, 2, 1}, b[2] = {0, 1};
    static const uint8_t want[3][4] = {{0, 1, 0, 1}, {0, 1, 1, 1}, {0, 0, 1, 0}};
    for (int op = DQG_LOGICAL_AND; op <= DQG_LOGICAL_XOR; op++) {
        dqg_graph *g;
        dqg_graph_create(&g);
        int64_t ad[] = {2, 2}, bd[] = {2};
        dqg_tensor_id x = dqg_input(g, "a", DQG_BOOL, 2, ad),
                      y = dqg_input(g, "b", DQG_BOOL, 1, bd);
        dqg_output(g, dqg_logical(g, "l", (dqg_logical_op)op, x, y), "z");
        finalize_ok(g);
        uint8_t out[4];
        run_all(g, (void *[]){(void *)a, (void *)b}, (size_t[]){4, 2}, out, 4);
        cr_assert_arr_eq(out, want[op], 4, "%s", dqg_logical_op_name((dqg_logical_op)op));
        dqg_graph_destroy(g);
    }
    dqg_graph *g;
    dqg_graph_create(&g);
    int64_t ad[] = {2, 2};
    dqg_tensor_id x = dqg_input(g, "a", DQG_BOOL, 2, ad);
    dqg_output(g, dqg_logical(g, "not", DQG_LOGICAL_NOT, x, DQG_NONE), "z");
    finalize_ok(g);
    uint8_t out[4];
    run_all(g, (void *[]){(void *)a}, (size_t[]){4}, out, 4);
    const uint8_t want_not[] = {1, 0, 0, 0};
    cr_assert_arr_eq(out, want_not, 4);
    expect_impl(g, "dqgraph:logical");
    dqg_graph_destroy(g);
}

Test(logical, rules)
{
    dqg_graph *g;
    int64_t d[] = {3};
    dqg_graph_create(&g);
    dqg_tensor_id f = dqg_input(g, "f", DQG_F32, 1, d);
    cr_assert_eq(dqg_logical(g, "and", DQG_LOGICAL_AND, f, f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "And 'and'", "input 0 (a)",
                 "data type f32 is not allowed", "expected bool");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    dqg_tensor_id p = dqg_input(g, "p", DQG_BOOL, 1, d);
    cr_assert_eq(dqg_logical(g, "not", DQG_LOGICAL_NOT, p, p), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Not 'not'", "input 1 (b)",
                 "must be DQG_NONE");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    p = dqg_input(g, "p", DQG_BOOL, 1, d);
    cr_assert_eq(dqg_logical(g, "or", DQG_LOGICAL_OR, p, DQG_NONE), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Or 'or'", "input 1 (b)",
                 "unknown tensor id -1");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    p = dqg_input(g, "p", DQG_BOOL, 1, d);
    cr_assert_eq(dqg_logical(g, "x", DQG_LOGICAL_COUNT, p, p), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Logical 'x'", "function 4");
    dqg_graph_destroy(g);
}

/* ---- Where ---------------------------------------------------------------------- */

/* condition [2, 1], x [1, 3], y a scalar: all three broadcast to [2, 3]. */
Test(where, hand_worked_values_three_way_broadcast)
{
    dqg_graph *g;
    dqg_graph_create(&g);
    int64_t cd[] = {2, 1}, xd[] = {1, 3};
    dqg_tensor_id c = dqg_input(g, "c", DQG_BOOL, 2, cd), x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_tensor_id y = dqg_constant(g, "y", DQG_F32, 0, NULL, (float[]){-1.0f}, 4);
    dqg_tensor_id w = dqg_where(g, "w", c, x, y);
    int64_t wd[8];
    cr_assert_eq(dqg_tensor_dims(g, w, wd), 2);
    cr_assert(wd[0] == 2 && wd[1] == 3);
    dqg_output(g, w, "z");
    finalize_ok(g);
    const uint8_t cv[2] = {1, 0};
    const float xv[3] = {10, 20, 30};
    float out[6];
    run_all(g, (void *[]){(void *)cv, (void *)xv}, (size_t[]){2, 12}, out, sizeof out);
    const float want[6] = {10, 20, 30, -1, -1, -1};
    cr_assert_arr_eq(out, want, sizeof want);
    expect_impl(g, "dqgraph:where");
    dqg_graph_destroy(g);
}

/* Every element size Where copies (1, 2, 4 and 8 bytes), compiled as the
 * reference on random data with the condition broadcast along rows. */
Test(where, every_element_size_compiled_as_the_reference)
{
    static const dqg_dtype types[] = {DQG_BOOL, DQG_U8, DQG_F16, DQG_BF16, DQG_S32, DQG_S64};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        dqg_graph *g;
        dqg_graph_create(&g);
        int64_t cd[] = {3, 1, 5}, xd[] = {4, 5}, yd[] = {3, 4, 1};
        dqg_tensor_id c = dqg_input(g, "c", DQG_BOOL, 3, cd);
        dqg_tensor_id x = dqg_input(g, "x", types[t], 2, xd);
        dqg_tensor_id y = dqg_input(g, "y", types[t], 3, yd);
        dqg_output(g, dqg_where(g, "w", c, x, y), "z");
        finalize_ok(g);
        size_t es = (size_t)dqg_dtype_bits(types[t]) / 8;
        uint8_t cv[15], xv[20 * 8], yv[12 * 8], out[60 * 8];
        for (int i = 0; i < 15; i++)
            cv[i] = (uint8_t)(test_rnd() % 2);
        for (size_t i = 0; i < sizeof xv; i++)
            xv[i] = (uint8_t)(types[t] == DQG_BOOL ? test_rnd() % 2 : test_rnd());
        for (size_t i = 0; i < sizeof yv; i++)
            yv[i] = (uint8_t)(types[t] == DQG_BOOL ? test_rnd() % 2 : test_rnd());
        run_all(g, (void *[]){cv, xv, yv}, (size_t[]){15, 20 * es, 12 * es}, out, 60 * es);
        /* Spot check against the definition: element (i, j, k). */
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 5; k++) {
                    const uint8_t *src = cv[i * 5 + k] ? xv + (size_t)(j * 5 + k) * es
                                                       : yv + (size_t)(i * 4 + j) * es;
                    cr_assert(memcmp(out + (size_t)((i * 4 + j) * 5 + k) * es, src, es) == 0,
                              "%s (%d, %d, %d)", dqg_dtype_name(types[t]), i, j, k);
                }
        dqg_graph_destroy(g);
    }
}

Test(where, rules)
{
    dqg_graph *g;
    int64_t d[] = {2, 3}, d4[] = {4, 1}, one = 1;
    dqg_graph_create(&g);
    dqg_tensor_id f = dqg_input(g, "f", DQG_F32, 2, d);
    cr_assert_eq(dqg_where(g, "w", f, f, f), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Where 'w'", "input 0 (condition)",
                 "data type f32 is not allowed", "expected bool");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    dqg_tensor_id c = dqg_input(g, "c", DQG_BOOL, 2, d);
    f = dqg_input(g, "f", DQG_F32, 2, d);
    dqg_tensor_id h = dqg_input(g, "h", DQG_F16, 2, d);
    cr_assert_eq(dqg_where(g, "w", c, f, h), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Where 'w'",
                 "inputs 1 (x) and 2 (y) have different data types: f32 and f16");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    c = dqg_input(g, "c", DQG_BOOL, 2, d);
    f = dqg_input(g, "f", DQG_F32, 2, d4);
    dqg_tensor_id s = dqg_input(g, "s", DQG_F32, 1, &one);
    cr_assert_eq(dqg_where(g, "w", c, f, s), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Where 'w'",
                 "shapes [2,3] (condition), [4,1] (x) and [1] (y) do not broadcast",
                 "dimension 2 (from the back) is 2, 4 and 1");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    c = dqg_input(g, "c", DQG_BOOL, 2, d);
    dqg_tensor_id q = dqg_input(g, "q", DQG_U4, 2, d);
    cr_assert_eq(dqg_where(g, "w", c, q, q), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Where 'w'", "input 1 (x)",
                 "data type u4 is not allowed");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    c = dqg_input(g, "c", DQG_BOOL, 2, d);
    cr_assert_eq(dqg_where(g, "w", c, c, DQG_NONE), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Where 'w'", "input 2 (y)",
                 "unknown tensor id -1");
    dqg_graph_destroy(g);
}

/* ---- GatherElements --------------------------------------------------------------- */

/* ONNX's examples: axis 1 on [[1, 2], [3, 4]] with [[0, 0], [1, 0]] gives
 * [[1, 1], [4, 3]]; axis 0 on a 3x3 with indices [[1, 2, 0], [2, 0, 0]]
 * gives [[4, 8, 3], [7, 2, 3]]. Negative indices and axis count from the
 * end; indices may be smaller than data on the other axes. */
Test(gather_elements, hand_worked_values)
{
    dqg_graph *g;
    dqg_graph_create(&g);
    int64_t dd[] = {2, 2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, dd), ix = dqg_input(g, "ix", DQG_S64, 2, dd);
    dqg_output(g, dqg_gather_elements(g, "ge", x, ix, -1), "y");
    finalize_ok(g);
    const float xv[] = {1, 2, 3, 4};
    int64_t iv[] = {0, 0, 1, -2};
    float out[4];
    run_all(g, (void *[]){(void *)xv, iv}, (size_t[]){sizeof xv, sizeof iv}, out, sizeof out);
    const float want[] = {1, 1, 4, 3};
    cr_assert_arr_eq(out, want, sizeof want);
    expect_impl(g, "dqgraph:gather_elements");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    int64_t d3[] = {3, 3}, i2[] = {2, 2};
    x = dqg_input(g, "x", DQG_S32, 2, d3);
    ix = dqg_input(g, "ix", DQG_S32, 2, i2);
    dqg_output(g, dqg_gather_elements(g, "ge", x, ix, 0), "y");
    finalize_ok(g);
    const int32_t xi[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int32_t ii[] = {1, 2, 2, -3};
    int32_t oi[4];
    run_all(g, (void *[]){(void *)xi, ii}, (size_t[]){sizeof xi, sizeof ii}, oi, sizeof oi);
    /* y[0][0] = x[1][0], y[0][1] = x[2][1], y[1][0] = x[2][0], y[1][1] = x[0][1] */
    const int32_t want_i[] = {4, 8, 7, 2};
    cr_assert_arr_eq(oi, want_i, sizeof want_i);
    dqg_graph_destroy(g);
}

/* Random shapes and axes of rank 1 to 4, compiled as the reference. */
Test(gather_elements, random_cases_compiled_as_the_reference)
{
    for (int trial = 0; trial < 40; trial++) {
        int rank = 1 + (int)(test_rnd() % 4), axis = (int)(test_rnd() % (unsigned)rank);
        int64_t dd[4], id[4], n = 1, m = 1;
        for (int i = 0; i < rank; i++) {
            dd[i] = 1 + test_rnd() % 4;
            id[i] = i == axis ? 1 + test_rnd() % 5 : 1 + (int64_t)(test_rnd() % (uint32_t)dd[i]);
            n *= dd[i];
            m *= id[i];
        }
        dqg_graph *g;
        dqg_graph_create(&g);
        dqg_dtype it = trial % 2 ? DQG_S32 : DQG_S64;
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, rank, dd),
                      ix = dqg_input(g, "ix", it, rank, id);
        dqg_output(g, dqg_gather_elements(g, "ge", x, ix, axis - (trial % 3 == 0 ? rank : 0)), "y");
        finalize_ok(g);
        float xv[256], out[1024];
        int64_t i64[1024];
        int32_t i32[1024];
        for (int64_t i = 0; i < n; i++)
            xv[i] = (float)i;
        for (int64_t i = 0; i < m; i++) {
            int64_t v = (int64_t)(test_rnd() % (uint32_t)(2 * dd[axis])) - dd[axis];
            i64[i] = v;
            i32[i] = (int32_t)v;
        }
        void *iv = it == DQG_S64 ? (void *)i64 : (void *)i32;
        run_all(g, (void *[]){xv, iv},
                (size_t[]){(size_t)n * 4, (size_t)m * (it == DQG_S64 ? 8 : 4)}, out, (size_t)m * 4);
        dqg_graph_destroy(g);
    }
}

/* An index outside the axis: refused when the graph is built for constant
 * indices, an error naming the element when it runs otherwise (reference
 * and compiled alike), and when the graph compiles for folded ones. */
Test(gather_elements, indices_outside_the_axis)
{
    dqg_graph *g;
    int64_t dd[] = {2, 3}, id[] = {1, 3};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, dd);
    const int64_t bad[] = {0, 3, 1};
    dqg_tensor_id c = dqg_constant(g, "ix", DQG_S64, 2, id, bad, sizeof bad);
    cr_assert_eq(dqg_gather_elements(g, "ge", x, c, 1), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "input 1 (indices) element 1 is 3, outside [-3, 3) for axis 1");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, dd);
    dqg_tensor_id ix = dqg_input(g, "ix", DQG_S32, 2, id);
    dqg_output(g, dqg_gather_elements(g, "ge", x, ix, 1), "y");
    finalize_ok(g);
    float xv[6] = {0}, out[3];
    int32_t iv[3] = {0, -4, 1};
    dqg_buffer in[2] = {{.name = "x", .data = xv, .size = sizeof xv},
                        {.name = "ix", .data = iv, .size = sizeof iv}};
    dqg_buffer ob = {.name = "y", .data = out, .size = sizeof out};
    expect_error(dqg_reference_run(g, in, 2, &ob, 1), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "element 1 is -4", "[-3, 3)");
    dqg_compiled *cc;
    cr_assert_eq(dqg_compile(g, NULL, &cc), DQG_OK, "%s", dqg_last_error());
    expect_error(dqg_execute(cc, in, 2, &ob, 1), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "element 1 is -4");
    iv[1] = 2;
    cr_assert_eq(dqg_execute(cc, in, 2, &ob, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);

    /* Indices computed from constants when the graph compiles. */
    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, dd);
    const int32_t a[] = {1, 2, 0}, b[] = {0, 5, 0};
    ix = dqg_add(g, "ix", dqg_constant(g, "a", DQG_S32, 2, id, a, sizeof a),
                 dqg_constant(g, "b", DQG_S32, 2, id, b, sizeof b));
    dqg_output(g, dqg_gather_elements(g, "ge", x, ix, 1), "y");
    finalize_ok(g);
    cc = NULL;
    expect_error(dqg_compile(g, NULL, &cc), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "element 1 is 7");
    cr_assert_null(cc);
    dqg_graph_destroy(g);
}

Test(gather_elements, rules)
{
    dqg_graph *g;
    int64_t dd[] = {2, 3}, d1[] = {6}, big[] = {3, 3};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, dd), f = dqg_input(g, "f", DQG_F32, 2, dd);
    cr_assert_eq(dqg_gather_elements(g, "ge", x, f, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "input 1 (indices)", "data type f32 is not allowed", "s32 or s64");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, dd);
    dqg_tensor_id i1 = dqg_input(g, "i", DQG_S64, 1, d1);
    cr_assert_eq(dqg_gather_elements(g, "ge", x, i1, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "input 1 (indices) has rank 1; it must have data's rank, 2");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, dd);
    dqg_tensor_id i = dqg_input(g, "i", DQG_S64, 2, dd);
    cr_assert_eq(dqg_gather_elements(g, "ge", x, i, 2), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "axis 2 is outside [-2, 2)");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, dd);
    i = dqg_input(g, "i", DQG_S64, 2, big);
    cr_assert_eq(dqg_gather_elements(g, "ge", x, i, 1), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "dimension 0 of 3, above data's 2", "only axis 1 may be larger");
    dqg_graph_destroy(g);

    /* ... while the axis itself may be any size. */
    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_F32, 2, dd);
    i = dqg_input(g, "i", DQG_S64, 2, big);
    cr_assert_neq(dqg_gather_elements(g, "ge", x, i, 0), DQG_NONE, "%s", dqg_last_error());
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    dqg_tensor_id s = dqg_input(g, "s", DQG_F32, 0, NULL),
                  si = dqg_input(g, "si", DQG_S64, 0, NULL);
    cr_assert_eq(dqg_gather_elements(g, "ge", s, si, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "input 0 (data) is a scalar");
    dqg_graph_destroy(g);

    dqg_graph_create(&g);
    x = dqg_input(g, "x", DQG_S4, 2, dd);
    i = dqg_input(g, "i", DQG_S64, 2, dd);
    cr_assert_eq(dqg_gather_elements(g, "ge", x, i, 0), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "GatherElements 'ge'",
                 "input 0 (data): data type s4 is not allowed");
    dqg_graph_destroy(g);
}

/* ---- bool as a data type ------------------------------------------------------------ */

/* Constants hold 0 or 1; TypeCast converts both ways; copies move bools. */
Test(bool_type, constants_casts_and_copies)
{
    dqg_graph *g;
    int64_t d[] = {4};
    dqg_graph_create(&g);
    cr_assert_eq(dqg_constant(g, "c", DQG_BOOL, 1, d, (uint8_t[]){0, 1, 2, 1}, 4), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Constant 'c'",
                 "bool element 2 is 2; a bool is 0 or 1");
    dqg_graph_destroy(g);

    /* f32 -> bool -> f32, and bool -> s32 through a Reshape. */
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    dqg_tensor_id b = dqg_typecast(g, "tobool", x, DQG_BOOL);
    cr_assert_eq(dqg_tensor_dtype(g, b), DQG_BOOL);
    int64_t r[] = {2, 2};
    dqg_tensor_id t = dqg_transpose(g, "t", dqg_reshape(g, "r", b, 2, r), NULL);
    dqg_output(g, dqg_typecast(g, "tof32", t, DQG_F32), "y");
    finalize_ok(g);
    const float xv[4] = {0.0f, -2.5f, NAN, -0.0f};
    float out[4];
    run_all(g, (void *[]){(void *)xv}, (size_t[]){sizeof xv}, out, sizeof out);
    const float want[4] = {0, 1, 1, 0}; /* transposed [[0, 1], [1, 0]] */
    cr_assert_arr_eq(out, want, sizeof want);
    dqg_graph_destroy(g);
}

/* Every op whose types are listed refuses bool, naming the op, the input
 * and the rule. */
Test(bool_type, refused_where_it_makes_no_sense)
{
    int64_t d2[] = {2, 2}, d4[] = {1, 1, 2, 2}, one = 1;
    struct {
        const char *what;
        const char *keys[3];
    } cases[] = {
        {"add", {"Add 'op'", "input 0 (a)", "data type bool is not allowed"}},
        {"matmul", {"MatMul 'op'", "bool", NULL}},
        {"conv", {"Convolution 'op'", "bool", NULL}},
        {"relu", {"ReLU 'op'", "bool", NULL}},
        {"sigmoid", {"Sigmoid 'op'", "input 0 (x)", "bool"}},
        {"softmax", {"Softmax 'op'", "bool", NULL}},
        {"reduce", {"'op'", "bool", NULL}},
        {"pool", {"'op'", "bool", NULL}},
        {"dequantize", {"DequantizeLinear", "'op'", "bool"}},
        {"quantize", {"QuantizeLinear", "'op'", "bool"}},
        {"pow", {"Pow 'op'", "bool", NULL}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g;
        dqg_graph_create(&g);
        const char *w = cases[k].what;
        dqg_tensor_id b = dqg_input(g, "b", DQG_BOOL, 2, d2);
        dqg_tensor_id b4 = dqg_input(g, "b4", DQG_BOOL, 4, d4);
        dqg_tensor_id s = dqg_constant(g, "s", DQG_F32, 0, NULL, (float[]){1.0f}, 4);
        dqg_tensor_id y = DQG_NONE;
        if (!strcmp(w, "add"))
            y = dqg_add(g, "op", b, b);
        else if (!strcmp(w, "matmul"))
            y = dqg_matmul(g, "op", b, b, NULL);
        else if (!strcmp(w, "conv")) {
            dqg_conv_attrs a = {.spatial_rank = 2};
            y = dqg_convolution(g, "op", b4, b4, DQG_NONE, &a);
        } else if (!strcmp(w, "relu"))
            y = dqg_relu(g, "op", b);
        else if (!strcmp(w, "sigmoid"))
            y = dqg_unary(g, "op", DQG_UNARY_SIGMOID, b, 0, 0);
        else if (!strcmp(w, "softmax"))
            y = dqg_softmax(g, "op", b, -1, false);
        else if (!strcmp(w, "reduce"))
            y = dqg_reduce(g, "op", DQG_REDUCE_SUM, b, 0, NULL, true);
        else if (!strcmp(w, "pool")) {
            dqg_pool_attrs a = {.global = true};
            y = dqg_pool(g, "op", b4, &a);
        } else if (!strcmp(w, "dequantize")) {
            dqg_dequantize_linear_attrs a = {.opset = 21};
            y = dqg_dequantize_linear(g, "op", b, s, DQG_NONE, &a);
        } else if (!strcmp(w, "quantize")) {
            dqg_quantize_linear_attrs a = {.opset = 21};
            y = dqg_quantize_linear(g, "op", b, s, DQG_NONE, &a);
        } else if (!strcmp(w, "pow"))
            y = dqg_pow(g, "op", b, b);
        (void)one;
        cr_assert_eq(y, DQG_NONE, "%s accepted bool", w);
        dqg_status st = dqg_graph_finalize(g);
        cr_assert_eq(st, DQG_INVALID_ARGUMENT, "%s: %s", w, dqg_last_error());
        for (int i = 0; i < 3 && cases[k].keys[i]; i++)
            cr_assert(strstr(dqg_last_error(), cases[k].keys[i]), "%s: \"%s\" lacks \"%s\"", w,
                      dqg_last_error(), cases[k].keys[i]);
        dqg_graph_destroy(g);
    }
}

/* The text and DOT dumps name each op and its function. */
Test(bool_type, dumps_name_the_ops)
{
    dqg_graph *g;
    int64_t d[] = {2, 2};
    dqg_graph_create(&g);
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, d), z = dqg_input(g, "z", DQG_F32, 2, d);
    dqg_tensor_id m = dqg_compare(g, "mask", DQG_COMPARE_LESS_EQUAL, x, z);
    dqg_tensor_id n = dqg_logical(g, "inv", DQG_LOGICAL_NOT, m, DQG_NONE);
    dqg_output(g, dqg_where(g, "sel", n, x, z), "y");
    finalize_ok(g);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(dqg_graph_dump(g, DQG_DUMP_TEXT, f), DQG_OK);
    cr_assert_eq(dqg_graph_dump(g, DQG_DUMP_DOT, f), DQG_OK);
    fclose(f);
    cr_assert(strstr(buf, "function=LessOrEqual"), "%s", buf);
    cr_assert(strstr(buf, "function=Not"), "%s", buf);
    cr_assert(strstr(buf, "Where"), "%s", buf);
    cr_assert(strstr(buf, "bool"), "%s", buf);
    free(buf);
    dqg_graph_destroy(g);
}

/* ---- ONNX ------------------------------------------------------------------------------ */

static dqg_status load(tm_model *m, dqg_graph **g)
{
    dqg_status st = tm_load(m, NULL, g);
    tm_free(m);
    return st;
}

/* An attention-mask computation: keep = Not(Equal(ids, 0)) And
 * (pos < limit); y = Where(keep, x, -inf) ... then GatherElements picks per
 * row. A BOOL graph input, a BOOL initializer and a Cast to BOOL. */
Test(onnx_compare, mask_where_and_gather_elements)
{
    tm_model *m = tm_new(16);
    int64_t d[] = {2, 3}, one = 1;
    const int64_t zero = 0;
    const float neg = -100.0f;
    const uint8_t flags[3] = {1, 1, 0};
    const int64_t pick[2] = {2, 0};
    int64_t pd[] = {2, 1};
    tm_input(m, "x", T_FLOAT, 2, d, NULL);
    tm_input(m, "ids", T_INT64, 2, d, NULL);
    tm_input(m, "allow", T_BOOL, 2, d, NULL);
    tm_init(m, "zero", T_INT64, 1, &one, &zero, 8);
    tm_init(m, "neg", T_FLOAT, 0, NULL, &neg, 4);
    tm_init(m, "flags", T_BOOL, 1, (int64_t[]){3}, flags, 3);
    tm_init(m, "pick", T_INT64, 2, pd, pick, sizeof pick);
    tm_node(m, "Equal", NULL, "eq", "ids,zero", "pad");
    tm_node(m, "Not", NULL, "not", "pad", "real");
    tm_node(m, "And", NULL, "and", "real,allow", "keep0");
    tm_node(m, "Or", NULL, "or", "keep0,flags", "keep");
    tm_node(m, "Where", NULL, "where", "keep,x,neg", "masked");
    tm_attr_int(m, tm_node(m, "GatherElements", NULL, "ge", "masked,pick", "y"), "axis", 1);
    tm_attr_int(m, tm_node(m, "Cast", NULL, "cast", "x", "xb"), "to", T_BOOL);
    tm_node(m, "Less", NULL, "lt", "x,neg", "below");
    tm_node(m, "Xor", NULL, "xor", "xb,below", "z");
    tm_output(m, "y", T_FLOAT, 2, pd);
    tm_output(m, "z", T_BOOL, 2, d);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_tensor_dtype(g, dqg_graph_find_tensor(g, "allow")), DQG_BOOL);
    float x[6] = {1, 2, 3, -200, 0, 6};
    int64_t ids[6] = {5, 0, 7, 0, 9, 9};
    uint8_t allow[6] = {1, 1, 1, 0, 1, 1};
    dqg_buffer in[3] = {{.name = "x", .data = x, .size = sizeof x},
                        {.name = "ids", .data = ids, .size = sizeof ids},
                        {.name = "allow", .data = allow, .size = sizeof allow}};
    /* keep = (ids != 0 && allow) || flags:
     *   row 0: (1,0,1)&(1,1,1) | (1,1,0) = 1, 1, 1
     *   row 1: (0,1,1)&(0,1,1) | (1,1,0) = 1, 1, 1 ... so masked = x; then
     *   y = [masked[0][2], masked[1][0]] = [3, -200]
     * z = bool(x) xor (x < -100): (1,1,1,1,0,1) xor (0,0,0,1,0,0). */
    float y[2], yc[2];
    uint8_t z[6], zc[6];
    dqg_buffer out[2] = {{.name = "y", .data = y, .size = sizeof y},
                         {.name = "z", .data = z, .size = sizeof z}};
    cr_assert_eq(dqg_reference_run(g, in, 3, out, 2), DQG_OK, "%s", dqg_last_error());
    cr_assert(y[0] == 3.0f && y[1] == -200.0f, "y = %g %g", (double)y[0], (double)y[1]);
    const uint8_t want_z[6] = {1, 1, 1, 0, 0, 1};
    cr_assert_arr_eq(z, want_z, 6);
    /* Now with a pad: ids[1][0] = 0 and flags off there. */
    ids[0] = 0;
    allow[2] = 0;
    cr_assert_eq(dqg_reference_run(g, in, 3, out, 2), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    out[0].data = yc;
    out[1].data = zc;
    cr_assert_eq(dqg_execute(c, in, 3, out, 2), DQG_OK, "%s", dqg_last_error());
    cr_assert_arr_eq(yc, y, sizeof y);
    cr_assert_arr_eq(zc, z, sizeof z);
    /* masked[0][2]: ids 7, allow 0, flags 0 -> -100. */
    cr_assert(y[0] == -100.0f && y[1] == -200.0f, "y = %g %g", (double)y[0], (double)y[1]);
    /* Each op on a kernel of its own; the casts of bools, like the other
     * casts oneDNN's reorder cannot make, on the reference kernel. */
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++) {
        const char *info = dqg_compiled_partition_info(c, p);
        cr_assert(!strstr(info, "reference (") || strstr(info, "TypeCast"), "%s", info);
    }
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* A shape computed with Equal and Where on constants (a 0 in a target
 * shape replaced by the input's dimension) is computed at import. */
Test(onnx_compare, where_on_constant_shapes_folds_at_import)
{
    tm_model *m = tm_new(13);
    int64_t xd[] = {2, 6}, two = 2, yd[] = {2, 2, 3};
    const int64_t target[2] = {0, 3}, zero = 0, minus1 = -1, ax0 = 0;
    int64_t one = 1;
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "target", T_INT64, 1, &two, target, sizeof target);
    tm_init(m, "zero", T_INT64, 0, NULL, &zero, 8);
    tm_init(m, "minus1", T_INT64, 0, NULL, &minus1, 8);
    tm_init(m, "ax0", T_INT64, 1, &one, &ax0, 8);
    tm_node(m, "Equal", NULL, "iszero", "target,zero", "z");
    tm_node(m, "Where", NULL, "fill", "z,minus1,target", "t");
    tm_node(m, "Shape", NULL, "shape", "x", "s");
    tm_node(m, "Gather", NULL, "g0", "s,zero", "d0");
    tm_node(m, "Unsqueeze", NULL, "u", "d0,ax0", "d0v");
    tm_attr_int(m, tm_node(m, "Concat", NULL, "cat", "d0v,t", "shape3"), "axis", 0);
    tm_node(m, "Reshape", NULL, "r", "x,shape3", "y");
    tm_output(m, "y", T_FLOAT, 3, yd);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    int64_t d[8];
    cr_assert_eq(dqg_tensor_dims(g, dqg_graph_output_id(g, 0), d), 3);
    cr_assert(d[0] == 2 && d[1] == 2 && d[2] == 3, "[%lld, %lld, %lld]", (long long)d[0],
              (long long)d[1], (long long)d[2]);
    cr_assert_eq(dqg_graph_op_count(g), 1);
    dqg_graph_destroy(g);
}

/* Import errors name the node and the rule. */
Test(onnx_compare, errors_name_the_node)
{
    int64_t d[] = {2, 2};
    tm_model *m = tm_new(13);
    tm_input(m, "a", T_FLOAT, 2, d, NULL);
    tm_input(m, "b", T_INT32, 2, d, NULL);
    tm_node(m, "Greater", NULL, "gt", "a,b", "y");
    tm_output(m, "y", T_BOOL, 2, d);
    dqg_graph *g;
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "'gt'", "different data types");

    m = tm_new(13);
    tm_input(m, "c", T_FLOAT, 2, d, NULL);
    tm_input(m, "x", T_FLOAT, 2, d, NULL);
    tm_node(m, "Where", NULL, "w", "c,x,x", "y");
    tm_output(m, "y", T_FLOAT, 2, d);
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "'w'", "input 0 (condition)", "f32");

    m = tm_new(6);
    tm_input(m, "a", T_FLOAT, 2, d, NULL);
    Onnx__NodeProto *n = tm_node(m, "Less", NULL, "old", "a,a", "y");
    tm_attr_int(m, n, "broadcast", 1);
    tm_output(m, "y", T_BOOL, 2, d);
    expect_error(load(m, &g), DQG_UNSUPPORTED, "'old'", "legacy broadcast");

    m = tm_new(13);
    int64_t id[] = {2, 2};
    tm_input(m, "a", T_FLOAT, 2, d, NULL);
    const int64_t bad[4] = {0, 1, 2, 0};
    tm_init(m, "ix", T_INT64, 2, id, bad, sizeof bad);
    tm_attr_int(m, tm_node(m, "GatherElements", NULL, "ge", "a,ix", "y"), "axis", 0);
    tm_output(m, "y", T_FLOAT, 2, d);
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "GatherElements", "'ge'", "element 2 is 2");
}

/* A bool tensor file round-trips; any non-zero ONNX byte reads as true. */
Test(onnx_compare, bool_tensor_files)
{
    char path[] = "/tmp/dqg_bool_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    int64_t d[] = {5};
    const uint8_t v[5] = {1, 0, 0, 1, 1};
    cr_assert_eq(dqg_tensor_file_write(path, "mask", DQG_BOOL, 1, d, v), DQG_OK, "%s",
                 dqg_last_error());
    char *name = NULL;
    dqg_dtype dt;
    int rank;
    int64_t dims[8];
    void *data = NULL;
    size_t size;
    cr_assert_eq(dqg_tensor_file_read(path, &name, &dt, &rank, dims, &data, &size), DQG_OK, "%s",
                 dqg_last_error());
    cr_assert_eq(dt, DQG_BOOL);
    cr_assert_eq(size, 5);
    cr_assert_arr_eq(data, v, 5);
    cr_assert_str_eq(name, "mask");
    free(name);
    free(data);
    unlink(path);

    /* A BOOL initializer with a byte 7 is true. */
    tm_model *m = tm_new(13);
    const uint8_t raw[2] = {7, 0};
    tm_input(m, "x", T_FLOAT, 1, (int64_t[]){2}, NULL);
    tm_input(m, "z", T_FLOAT, 1, (int64_t[]){2}, NULL);
    tm_init(m, "c", T_BOOL, 1, (int64_t[]){2}, raw, 2);
    tm_node(m, "Where", NULL, "w", "c,x,z", "y");
    tm_output(m, "y", T_FLOAT, 1, (int64_t[]){2});
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    float x[2] = {1, 2}, z[2] = {3, 4}, y[2];
    dqg_buffer in[2] = {{.name = "x", .data = x, .size = sizeof x},
                        {.name = "z", .data = z, .size = sizeof z}};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
    cr_assert_eq(dqg_reference_run(g, in, 2, &out, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert(y[0] == 1.0f && y[1] == 4.0f, "%g %g", (double)y[0], (double)y[1]);
    dqg_graph_destroy(g);
}
