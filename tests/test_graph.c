/* Graph-level behaviour: the builder protocol (sticky errors), tensors and
 * names, finalize rules, introspection, printing, and the reference
 * interpreter's buffer checks. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

static dqg_graph *new_graph(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

/* x:f32[2,3] -> ReLU 'r' -> output */
static dqg_graph *relu_graph(dqg_tensor_id *x, dqg_tensor_id *y)
{
    dqg_graph *g = new_graph();
    int64_t dims[] = {2, 3};
    *x = dqg_input(g, "x", DQG_F32, 2, dims);
    *y = dqg_relu(g, "r", *x);
    cr_assert_eq(dqg_output(g, *y, "y"), DQG_OK);
    return g;
}

Test(graph, create_null_out)
{
    expect_error(dqg_graph_create(NULL), DQG_INVALID_ARGUMENT, "out is NULL");
    dqg_graph_destroy(NULL);
}

Test(graph, relu_reference_values)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    float in[6] = {-1.5f, 0.0f, 2.25f, -0.0f, NAN, -INFINITY}, out[6];
    cr_assert_eq(run_ref_1(g, x, in, sizeof in, y, out, sizeof out), DQG_OK, "%s",
                 dqg_last_error());
    cr_assert_eq(out[0], 0.0f);
    cr_assert_eq(out[1], 0.0f);
    cr_assert_eq(out[2], 2.25f);
    cr_assert(isnan(out[4]), "NaN propagates through ReLU");
    cr_assert_eq(out[5], 0.0f);
    dqg_graph_destroy(g);
}

Test(graph, null_graph_builder)
{
    int64_t d = 4;
    cr_assert_eq(dqg_input(NULL, "x", DQG_F32, 1, &d), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "graph is NULL"));
    expect_error(dqg_graph_finalize(NULL), DQG_INVALID_ARGUMENT, "graph is NULL");
}

Test(graph, input_null_name)
{
    dqg_graph *g = new_graph();
    int64_t d = 4;
    cr_assert_eq(dqg_input(g, NULL, DQG_F32, 1, &d), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Input", "name is NULL or empty");
    dqg_graph_destroy(g);
}

Test(graph, input_rank_above_8)
{
    dqg_graph *g = new_graph();
    int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    cr_assert_eq(dqg_input(g, "x", DQG_F32, 9, dims), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Input 'x'", "rank 9",
                 "outside [0, 8]");
    dqg_graph_destroy(g);
}

Test(graph, input_negative_dimension)
{
    dqg_graph *g = new_graph();
    int64_t dims[] = {2, -3};
    cr_assert_eq(dqg_input(g, "x", DQG_F32, 2, dims), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Input 'x'", "dimension 1 is -3",
                 ">= 1");
    dqg_graph_destroy(g);
}

Test(graph, input_zero_dimension)
{
    dqg_graph *g = new_graph();
    int64_t dims[] = {0};
    cr_assert_eq(dqg_input(g, "x", DQG_U8, 1, dims), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "dimension 0 is 0");
    dqg_graph_destroy(g);
}

Test(graph, element_count_overflow)
{
    dqg_graph *g = new_graph();
    int64_t dims[] = {INT64_C(1) << 32, INT64_C(1) << 32};
    cr_assert_eq(dqg_input(g, "x", DQG_F32, 2, dims), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Input 'x'", "element count",
                 "overflows");
    dqg_graph_destroy(g);
}

Test(graph, invalid_dtype)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    cr_assert_eq(dqg_input(g, "x", (dqg_dtype)99, 1, &d), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Input 'x'", "invalid data type");
    dqg_graph_destroy(g);
}

Test(graph, duplicate_input_name)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    cr_assert_neq(dqg_input(g, "x", DQG_F32, 1, &d), DQG_NONE);
    cr_assert_eq(dqg_input(g, "x", DQG_F32, 1, &d), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "duplicate name", "'x'");
    dqg_graph_destroy(g);
}

Test(graph, duplicate_op_name)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
    dqg_tensor_id a = dqg_relu(g, "act", x);
    cr_assert_neq(a, DQG_NONE);
    cr_assert_eq(dqg_relu(g, "act", a), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReLU 'act'", "duplicate name");
    dqg_graph_destroy(g);
}

Test(graph, unknown_tensor_id)
{
    dqg_graph *g = new_graph();
    cr_assert_eq(dqg_relu(g, "r", 42), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReLU 'r'", "input 0 (x)",
                 "unknown tensor id 42");
    dqg_graph_destroy(g);
}

Test(graph, wrong_dtype_for_relu)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    dqg_tensor_id x = dqg_input(g, "x", DQG_S8, 1, &d);
    cr_assert_eq(dqg_relu(g, "r", x), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReLU 'r'", "data type s8",
                 "f32, f16 or bf16");
    dqg_graph_destroy(g);
}

Test(graph, sticky_keeps_first_error)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    cr_assert_eq(dqg_relu(g, "first", 7), DQG_NONE);
    /* A later, valid call is a no-op and does not replace the error. */
    cr_assert_eq(dqg_input(g, "x", DQG_F32, 1, &d), DQG_NONE);
    cr_assert_eq(dqg_graph_tensor_count(g), 0);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "ReLU 'first'",
                 "unknown tensor id 7");
    dqg_graph_destroy(g);
}

Test(graph, constant_size_mismatch)
{
    dqg_graph *g = new_graph();
    int64_t d = 3;
    uint8_t data[2] = {1, 2};
    cr_assert_eq(dqg_constant(g, "c", DQG_S4, 1, &d, data, 1), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Constant 'c'", "1 bytes", "needs 2");
    dqg_graph_destroy(g);
}

Test(graph, constant_null_data)
{
    dqg_graph *g = new_graph();
    int64_t d = 3;
    cr_assert_eq(dqg_constant(g, "c", DQG_F32, 1, &d, NULL, 12), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Constant 'c'", "data is NULL");
    dqg_graph_destroy(g);
}

Test(graph, constant_is_copied_and_named)
{
    dqg_graph *g = new_graph();
    int64_t d = 3;
    uint8_t data[2] = {0x21, 0xF3};
    dqg_tensor_id c = dqg_constant(g, NULL, DQG_U4, 1, &d, data, 2);
    cr_assert_neq(c, DQG_NONE);
    data[0] = 0; /* the graph owns its copy */
    cr_assert(dqg_tensor_is_constant(g, c));
    cr_assert_eq(dqg_tensor_byte_size(g, c), 2);
    cr_assert_eq(dqg_tensor_element_count(g, c), 3);
    cr_assert(strncmp(dqg_tensor_name(g, c), "const_", 6) == 0);
    dqg_graph_destroy(g);
}

Test(graph, no_outputs)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    dqg_relu(g, "r", dqg_input(g, "x", DQG_F32, 1, &d));
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "has no outputs");
    dqg_graph_destroy(g);
}

Test(graph, output_never_produced)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
    cr_assert_eq(dqg_output(g, x, NULL), DQG_OK);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Output 'x'", "never produced");
    dqg_graph_destroy(g);
}

Test(graph, output_twice)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    expect_error(dqg_output(g, y, NULL), DQG_INVALID_ARGUMENT, "already an output");
    dqg_graph_destroy(g);
}

Test(graph, output_rename_collides)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
    dqg_tensor_id y = dqg_relu(g, "r", x);
    expect_error(dqg_output(g, y, "x"), DQG_INVALID_ARGUMENT, "duplicate name", "'x'");
    dqg_graph_destroy(g);
}

Test(graph, unused_input_is_warning)
{
    dqg_graph *g = new_graph();
    int64_t d = 2;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
    dqg_input(g, "spare", DQG_F32, 1, &d);
    dqg_output(g, dqg_relu(g, "r", x), NULL);
    finalize_ok(g);
    cr_assert_eq(dqg_graph_warning_count(g), 1);
    cr_assert(strstr(dqg_graph_warning(g, 0), "Input 'spare'"));
    cr_assert(strstr(dqg_graph_warning(g, 0), "unused"));
    dqg_graph_destroy(g);
}

Test(graph, build_after_finalize)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    cr_assert(dqg_graph_is_finalized(g));
    cr_assert_eq(dqg_relu(g, "late", y), DQG_NONE);
    cr_assert(strstr(dqg_last_error(), "already finalized"));
    dqg_graph_destroy(g);
}

Test(graph, introspection)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    cr_assert_eq(dqg_graph_op_count(g), 1);
    cr_assert_eq(dqg_graph_op_kind(g, 0), DQG_OP_RELU);
    cr_assert_str_eq(dqg_graph_op_name(g, 0), "r");
    cr_assert_str_eq(dqg_op_kind_name(DQG_OP_RELU), "ReLU");
    cr_assert_eq(dqg_graph_op_input_count(g, 0), 1);
    cr_assert_eq(dqg_graph_op_input(g, 0, 0), x);
    cr_assert_eq(dqg_graph_op_output(g, 0, 0), y);
    cr_assert_eq(dqg_graph_op_input(g, 0, 5), DQG_NONE);
    cr_assert_eq(dqg_graph_input_count(g), 1);
    cr_assert_eq(dqg_graph_output_id(g, 0), y);
    cr_assert_str_eq(dqg_tensor_name(g, y), "y");
    cr_assert_eq(dqg_graph_find_tensor(g, "y"), y);
    cr_assert_eq(dqg_graph_find_tensor(g, "nope"), DQG_NONE);
    int64_t dims[DQG_MAX_RANK];
    cr_assert_eq(dqg_tensor_dims(g, y, dims), 2);
    cr_assert_eq(dims[0], 2);
    cr_assert_eq(dims[1], 3);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F32);
    cr_assert_eq(dqg_tensor_rank(g, 99), -1);
    dqg_graph_destroy(g);
}

static char *dump_to_string(const dqg_graph *g, dqg_dump_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(dqg_graph_dump(g, fmt, f), DQG_OK);
    fclose(f);
    return buf;
}

Test(graph, dump_text)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    char *s = dump_to_string(g, DQG_DUMP_TEXT);
    cr_assert(strstr(s, "input  %0 x: f32[2,3]"), "%s", s);
    cr_assert(strstr(s, "op     ReLU 'r' (x) -> %1 y: f32[2,3]"), "%s", s);
    cr_assert(strstr(s, "output %1 y: f32[2,3]"), "%s", s);
    free(s);
    dqg_graph_destroy(g);
}

Test(graph, dump_dot)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    char *s = dump_to_string(g, DQG_DUMP_DOT);
    cr_assert(strncmp(s, "digraph dqgraph {", 17) == 0, "%s", s);
    cr_assert(strstr(s, "op0 [shape=box"), "%s", s);
    cr_assert(strstr(s, "t0 -> op0 [label=\"x\\nf32[2,3]\"]"), "%s", s);
    cr_assert(strstr(s, "op0 -> out0"), "%s", s);
    free(s);
    dqg_graph_destroy(g);
}

Test(reference, not_finalized)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    float in[6] = {0}, out[6];
    expect_error(run_ref_1(g, x, in, sizeof in, y, out, sizeof out), DQG_INVALID_ARGUMENT,
                 "not finalized");
    dqg_graph_destroy(g);
}

Test(reference, wrong_buffer_size)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    float in[6] = {0}, out[6];
    expect_error(run_ref_1(g, x, in, 20, y, out, sizeof out), DQG_INVALID_ARGUMENT, "'x'",
                 "20 bytes", "needs 24");
    dqg_graph_destroy(g);
}

Test(reference, missing_input)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    float out[6];
    expect_error(run_ref_1(g, DQG_NONE, NULL, 0, y, out, sizeof out), DQG_INVALID_ARGUMENT,
                 "input 'x' has no buffer");
    dqg_graph_destroy(g);
}

Test(reference, bind_by_name_and_unknown_name)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    float in[6] = {-1, 1, -2, 2, -3, 3}, out[6];
    dqg_buffer i = {.name = "x", .data = in, .size = sizeof in};
    dqg_buffer o = {.name = "y", .data = out, .size = sizeof out};
    cr_assert_eq(dqg_reference_run(g, &i, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(out[5], 3.0f);
    cr_assert_eq(out[4], 0.0f);
    dqg_buffer bad = {.name = "nope", .data = in, .size = sizeof in};
    expect_error(dqg_reference_run(g, &bad, 1, &o, 1), DQG_INVALID_ARGUMENT,
                 "no tensor named 'nope'");
    dqg_graph_destroy(g);
}

Test(reference, output_bound_as_input)
{
    dqg_tensor_id x, y;
    dqg_graph *g = relu_graph(&x, &y);
    finalize_ok(g);
    float a[6] = {0}, b[6];
    expect_error(run_ref_1(g, y, a, sizeof a, y, b, sizeof b), DQG_INVALID_ARGUMENT,
                 "not a graph input");
    dqg_graph_destroy(g);
}

Test(dtype_api, status_names)
{
    cr_assert_str_eq(dqg_status_name(DQG_OK), "ok");
    cr_assert_str_eq(dqg_status_name(DQG_UNSUPPORTED), "unsupported");
    cr_assert_str_eq(dqg_status_name(DQG_PARSE_ERROR), "parse error");
}
