/* ONNX MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool import:
 * auto_pad SAME_UPPER, SAME_LOWER and VALID, count_include_pad, ceil_mode,
 * dilations, u8 MaxPool, a QDQ MaxPool that runs in int8, and every import
 * rule with its status and message. Expected values are computed by hand
 * from the specification. */
#include <math.h>
#include <stdlib.h>

#include "dqgraph_onnx.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3 };

static dqg_graph *load(tm_model *m)
{
    dqg_graph *g;
    dqg_status st = tm_load(m, NULL, &g);
    cr_assert_eq(st, DQG_OK, "import: %s: %s", dqg_status_name(st), dqg_last_error());
    return g;
}

static dqg_status load_status(tm_model *m)
{
    dqg_graph *g;
    dqg_status st = tm_load(m, NULL, &g);
    dqg_graph_destroy(g);
    return st;
}

/* Runs the one-input, one-output graph on the reference and compiled, and
 * checks both against `want` (exact: every expected value is a float the
 * pooling computes exactly, or within 1e-6 for thirds). */
static void expect_values(dqg_graph *g, const void *x, size_t xsize, const float *want, int n)
{
    dqg_tensor_id yid = dqg_graph_output_id(g, 0);
    cr_assert_eq(dqg_tensor_element_count(g, yid), n);
    float y[64];
    dqg_buffer in = {.id = dqg_graph_input_id(g, 0), .data = (void *)x, .size = xsize};
    dqg_buffer out = {.id = yid, .data = y, .size = (size_t)n * sizeof(float)};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < n; i++)
        cr_assert_float_eq(y[i], want[i], 1e-6, "reference y[%d] = %g, want %g", i, y[i], want[i]);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < n; i++)
        cr_assert_float_eq(y[i], want[i], 1e-6, "compiled y[%d] = %g, want %g", i, y[i], want[i]);
    dqg_compiled_destroy(c);
}

/* x [1, 1, 3, 3] = 1..9 through one pooling node with a 2x2 window. */
static tm_model *pool_model(int64_t opset, const char *op, const char *auto_pad,
                            int64_t include_pad)
{
    tm_model *m = tm_new(opset);
    int64_t xd[] = {1, 1, 3, 3}, k[] = {2, 2};
    tm_input(m, "x", T_FLOAT, 4, xd, NULL);
    Onnx__NodeProto *n = tm_node(m, op, NULL, "pool", "x", "y");
    tm_attr_ints(m, n, "kernel_shape", k, 2);
    if (auto_pad)
        tm_attr_string(m, n, "auto_pad", auto_pad);
    if (include_pad >= 0)
        tm_attr_int(m, n, "count_include_pad", include_pad);
    tm_output(m, "y", T_FLOAT, -1, NULL);
    return m;
}

static const float nine[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

Test(onnx_pool, maxpool_auto_pad)
{
    /* SAME_UPPER pads after (windows [r, r+1]), SAME_LOWER before
     * ([r-1, r]), VALID not at all. */
    tm_model *m = pool_model(12, "MaxPool", "SAME_UPPER", -1);
    dqg_graph *g = load(m);
    expect_values(g, nine, sizeof nine, (const float[]){5, 6, 6, 8, 9, 9, 8, 9, 9}, 9);
    dqg_graph_destroy(g);
    tm_free(m);
    m = pool_model(12, "MaxPool", "SAME_LOWER", -1);
    g = load(m);
    expect_values(g, nine, sizeof nine, nine, 9);
    dqg_graph_destroy(g);
    tm_free(m);
    m = pool_model(12, "MaxPool", "VALID", -1);
    g = load(m);
    expect_values(g, nine, sizeof nine, (const float[]){5, 6, 8, 9}, 4);
    dqg_graph_destroy(g);
    tm_free(m);
}

Test(onnx_pool, averagepool_same_upper_count_include_pad_both_ways)
{
    tm_model *m = pool_model(11, "AveragePool", "SAME_UPPER", -1);
    dqg_graph *g = load(m);
    expect_values(g, nine, sizeof nine, (const float[]){3, 4, 4.5f, 6, 7, 7.5f, 7.5f, 8.5f, 9}, 9);
    dqg_graph_destroy(g);
    tm_free(m);
    m = pool_model(11, "AveragePool", "SAME_UPPER", 1);
    g = load(m);
    expect_values(g, nine, sizeof nine,
                  (const float[]){3, 4, 2.25f, 6, 7, 3.75f, 3.75f, 4.25f, 2.25f}, 9);
    dqg_graph_destroy(g);
    tm_free(m);
    /* SAME_LOWER: the padding row and column come first. */
    m = pool_model(11, "AveragePool", "SAME_LOWER", 1);
    g = load(m);
    expect_values(g, nine, sizeof nine,
                  (const float[]){0.25f, 0.75f, 1.25f, 1.25f, 3, 4, 2.75f, 6, 7}, 9);
    dqg_graph_destroy(g);
    tm_free(m);
}

Test(onnx_pool, ceil_mode_pads_strides_dilations)
{
    /* MaxPool-12 on x [1, 1, 6] = 1..6: window 3, stride 2, pads 1 and 1,
     * ceil_mode: 4 windows starting at -1, 1, 3, 5. */
    tm_model *m = tm_new(12);
    int64_t xd[] = {1, 1, 6}, k[] = {3}, s[] = {2}, p[] = {1, 1};
    tm_input(m, "x", T_FLOAT, 3, xd, NULL);
    Onnx__NodeProto *n = tm_node(m, "AveragePool", NULL, "pool", "x", "y");
    tm_attr_ints(m, n, "kernel_shape", k, 1);
    tm_attr_ints(m, n, "strides", s, 1);
    tm_attr_ints(m, n, "pads", p, 2);
    tm_attr_int(m, n, "ceil_mode", 1);
    tm_attr_int(m, n, "count_include_pad", 1);
    tm_output(m, "y", T_FLOAT, -1, NULL);
    dqg_graph *g = load(m);
    const float x6[] = {1, 2, 3, 4, 5, 6};
    expect_values(g, x6, sizeof x6, (const float[]){1, 3, 5, 3}, 4);
    dqg_graph_destroy(g);
    tm_free(m);
    /* MaxPool-12 with dilation 2 on x [1, 1, 8]. */
    m = tm_new(12);
    int64_t xd8[] = {1, 1, 8}, k2[] = {2}, d2[] = {2};
    tm_input(m, "x", T_FLOAT, 3, xd8, NULL);
    n = tm_node(m, "MaxPool", NULL, "pool", "x", "y");
    tm_attr_ints(m, n, "kernel_shape", k2, 1);
    tm_attr_ints(m, n, "dilations", d2, 1);
    tm_attr_int(m, n, "storage_order", 0);
    tm_output(m, "y", T_FLOAT, -1, NULL);
    g = load(m);
    const float x8[] = {3, 1, 4, 1, 5, 9, 2, 6};
    expect_values(g, x8, sizeof x8, (const float[]){4, 1, 5, 9, 5, 9}, 6);
    dqg_graph_destroy(g);
    tm_free(m);
}

Test(onnx_pool, global_pools)
{
    int64_t xd[] = {1, 2, 2, 2};
    const float x[] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int k = 0; k < 2; k++) {
        tm_model *m = tm_new(13);
        tm_input(m, "x", T_FLOAT, 4, xd, NULL);
        tm_node(m, k ? "GlobalMaxPool" : "GlobalAveragePool", NULL, "gp", "x", "y");
        tm_output(m, "y", T_FLOAT, -1, NULL);
        dqg_graph *g = load(m);
        int64_t yd[DQG_MAX_RANK];
        cr_assert_eq(dqg_tensor_dims(g, dqg_graph_output_id(g, 0), yd), 4);
        cr_assert(yd[0] == 1 && yd[1] == 2 && yd[2] == 1 && yd[3] == 1);
        expect_values(g, x, sizeof x, k ? (const float[]){4, 8} : (const float[]){2.5f, 6.5f}, 2);
        dqg_graph_destroy(g);
        tm_free(m);
    }
}

Test(onnx_pool, maxpool_u8_from_opset_12)
{
    tm_model *m = tm_new(12);
    int64_t xd[] = {1, 1, 2, 3}, k[] = {2, 2};
    tm_input(m, "x", T_UINT8, 4, xd, NULL);
    Onnx__NodeProto *n = tm_node(m, "MaxPool", NULL, "pool", "x", "y");
    tm_attr_ints(m, n, "kernel_shape", k, 2);
    tm_output(m, "y", T_UINT8, -1, NULL);
    dqg_graph *g = load(m);
    const uint8_t x[] = {1, 250, 3, 4, 5, 6};
    uint8_t y[2];
    dqg_buffer in = {.id = dqg_graph_input_id(g, 0), .data = (void *)x, .size = sizeof x};
    dqg_buffer out = {.id = dqg_graph_output_id(g, 0), .data = y, .size = sizeof y};
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert(y[0] == 250 && y[1] == 250, "y = %d %d", y[0], y[1]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    tm_free(m);
    m = tm_new(11);
    tm_input(m, "x", T_INT8, 4, xd, NULL);
    n = tm_node(m, "MaxPool", NULL, "pool", "x", "y");
    tm_attr_ints(m, n, "kernel_shape", k, 2);
    tm_output(m, "y", T_INT8, -1, NULL);
    expect_error(load_status(m), DQG_UNSUPPORTED, "'pool'", "s8", "u8 and s8 from opset 12");
    tm_free(m);
}

Test(onnx_pool, qdq_maxpool_runs_in_int8)
{
    /* DequantizeLinear -> MaxPool -> QuantizeLinear with one scale and zero
     * point: one u8 pooling, exact. */
    tm_model *m = tm_new(13);
    int64_t xd[] = {1, 3, 7, 7}, k[] = {3, 3}, s[] = {2, 2}, p[] = {1, 1, 1, 1};
    const float scale = 0.0235f;
    const uint8_t zp = 120;
    tm_input(m, "x", T_UINT8, 4, xd, NULL);
    tm_init(m, "s", T_FLOAT, 0, NULL, &scale, 4);
    tm_init(m, "z", T_UINT8, 0, NULL, &zp, 1);
    tm_node(m, "DequantizeLinear", NULL, "dq", "x,s,z", "xf");
    Onnx__NodeProto *n = tm_node(m, "MaxPool", NULL, "pool", "xf", "pf");
    tm_attr_ints(m, n, "kernel_shape", k, 2);
    tm_attr_ints(m, n, "strides", s, 2);
    tm_attr_ints(m, n, "pads", p, 4);
    tm_node(m, "QuantizeLinear", NULL, "q", "pf,s,z", "y");
    tm_output(m, "y", T_UINT8, -1, NULL);
    dqg_graph *g = load(m);
    uint8_t x[147], r[48], o[48];
    for (int i = 0; i < 147; i++)
        x[i] = (uint8_t)(i * 37 + 11);
    dqg_buffer in = {.id = dqg_graph_input_id(g, 0), .data = x, .size = sizeof x};
    dqg_buffer out = {.id = dqg_graph_output_id(g, 0), .data = r, .size = sizeof r};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_compiled_partition_count(c), 1);
    bool fused = false;
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        fused |= strstr(dqg_compiled_explain(c, i), "u8 max pooling") != NULL;
    cr_assert(fused);
    out.data = o;
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert_arr_eq(o, r, sizeof r);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    tm_free(m);
}

/* A model with input x [1, 1, 4, 4] and output y, for rule_node. */
static tm_model *rule_model(int64_t opset)
{
    tm_model *m = tm_new(opset);
    int64_t xd[] = {1, 1, 4, 4};
    tm_input(m, "x", T_FLOAT, 4, xd, NULL);
    tm_output(m, "y", T_FLOAT, -1, NULL);
    return m;
}

/* A pooling node 'pool' reading x, with a 2x2 window when `kernel`. */
static Onnx__NodeProto *rule_node(tm_model *m, const char *op, const char *outputs, bool kernel)
{
    Onnx__NodeProto *n = tm_node(m, op, NULL, "pool", "x", outputs);
    int64_t k[] = {2, 2};
    if (kernel)
        tm_attr_ints(m, n, "kernel_shape", k, 2);
    return n;
}

Test(onnx_pool, import_rules)
{
    int64_t two1[] = {2, 1}, pads_big[] = {2, 0, 0, 0}, pads1[] = {1, 1, 1, 1}, k1[] = {2};

    tm_model *m = rule_model(12);
    tm_attr_int(m, rule_node(m, "MaxPool", "y", true), "storage_order", 1);
    expect_error(load_status(m), DQG_UNSUPPORTED, "MaxPool", "'pool'", "storage_order 1", "only 0");
    tm_free(m);

    m = rule_model(12);
    rule_node(m, "MaxPool", "y,idx", true);
    expect_error(load_status(m), DQG_UNSUPPORTED, "output 1 (Indices) is not supported");
    tm_free(m);

    m = rule_model(12);
    tm_attr_int(m, rule_node(m, "MaxPool", "y", true), "foo", 1);
    expect_error(load_status(m), DQG_UNSUPPORTED, "attribute 'foo' is not supported");
    tm_free(m);

    /* ceil_mode and dilations came with MaxPool-10, storage_order with 8. */
    m = rule_model(8);
    tm_attr_int(m, rule_node(m, "MaxPool", "y", true), "ceil_mode", 1);
    expect_error(load_status(m), DQG_UNSUPPORTED, "opset 8", "attribute 'ceil_mode'");
    tm_free(m);

    m = rule_model(7);
    tm_attr_int(m, rule_node(m, "MaxPool", "y", true), "storage_order", 0);
    expect_error(load_status(m), DQG_UNSUPPORTED, "attribute 'storage_order'");
    tm_free(m);

    /* AveragePool takes dilations from opset 19, and only 1. */
    m = rule_model(18);
    tm_attr_ints(m, rule_node(m, "AveragePool", "y", true), "dilations", two1, 2);
    expect_error(load_status(m), DQG_UNSUPPORTED, "attribute 'dilations'");
    tm_free(m);

    m = rule_model(19);
    tm_attr_ints(m, rule_node(m, "AveragePool", "y", true), "dilations", two1, 2);
    expect_error(load_status(m), DQG_UNSUPPORTED, "dilation 2 at dimension 0",
                 "undilated windows only");
    tm_free(m);

    m = rule_model(6);
    tm_attr_int(m, rule_node(m, "AveragePool", "y", true), "count_include_pad", 1);
    expect_error(load_status(m), DQG_UNSUPPORTED, "attribute 'count_include_pad'");
    tm_free(m);

    m = rule_model(12);
    tm_attr_int(m, rule_node(m, "AveragePool", "y", true), "count_include_pad", 2);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "count_include_pad' is 2");
    tm_free(m);

    m = rule_model(12);
    rule_node(m, "MaxPool", "y", false);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'kernel_shape' is required");
    tm_free(m);

    m = rule_model(12);
    tm_attr_ints(m, rule_node(m, "MaxPool", "y", false), "kernel_shape", k1, 1);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "X has rank 4",
                 "1 spatial dimensions need rank 3");
    tm_free(m);

    m = rule_model(12);
    tm_attr_ints(m, rule_node(m, "MaxPool", "y", true), "strides", k1, 1);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'strides' has 1 values");
    tm_free(m);

    m = rule_model(12);
    Onnx__NodeProto *n = rule_node(m, "MaxPool", "y", true);
    tm_attr_string(m, n, "auto_pad", "SAME_UPPER");
    tm_attr_ints(m, n, "pads", pads1, 4);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "pads cannot be given with auto_pad");
    tm_free(m);

    m = rule_model(12);
    tm_attr_string(m, rule_node(m, "MaxPool", "y", true), "auto_pad", "SAME");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "auto_pad 'SAME' is not one of");
    tm_free(m);

    /* The builder's rules come through with the node named. */
    m = rule_model(12);
    tm_attr_ints(m, rule_node(m, "MaxPool", "y", true), "pads", pads_big, 4);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'pool'", "smaller than the kernel 2");
    tm_free(m);

    m = rule_model(13);
    tm_attr_int(m, rule_node(m, "GlobalAveragePool", "y", false), "keepdims", 1);
    expect_error(load_status(m), DQG_UNSUPPORTED, "attribute 'keepdims' is not supported");
    tm_free(m);

    m = tm_new(13);
    int64_t xd2[] = {3, 4};
    tm_input(m, "x", T_FLOAT, 2, xd2, NULL);
    tm_node(m, "GlobalMaxPool", NULL, "pool", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    expect_error(load_status(m), DQG_UNSUPPORTED, "X has rank 2", "rank 3 to 5");
    tm_free(m);
}
