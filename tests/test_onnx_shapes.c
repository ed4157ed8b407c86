/* ONNX shape computations as exporters write them, folded at import, and
 * Gather as embeddings use it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum { T_FLOAT = 1, T_INT32 = 6, T_INT64 = 7 };

static dqg_status load(tm_model *m, dqg_graph **g)
{
    dqg_status st = tm_load(m, NULL, g);
    tm_free(m);
    return st;
}

/* x [2, 3, 4] reshaped to [Shape(x)[0], -1] through Shape -> Gather ->
 * Unsqueeze -> Concat, and to [Shape(x)[0] * Shape(x)[1], Shape(x)[2]]
 * through a Mul of two gathered dimensions. */
Test(onnx_shapes, shape_chains_fold_into_reshape_targets)
{
    tm_model *m = tm_new(13);
    int64_t xd[] = {2, 3, 4}, one = 1, y1d[] = {2, 12}, y2d[] = {6, 4};
    const int64_t zero = 0, i1 = 1, i2 = 2, minus1 = -1;
    tm_input(m, "x", T_FLOAT, 3, xd, NULL);
    tm_init(m, "i0", T_INT64, 0, NULL, &zero, 8);
    tm_init(m, "i1", T_INT64, 0, NULL, &i1, 8);
    tm_init(m, "i2", T_INT64, 0, NULL, &i2, 8);
    tm_init(m, "axes0", T_INT64, 1, &one, &zero, 8);
    tm_init(m, "minus1", T_INT64, 1, &one, &minus1, 8);
    tm_node(m, "Shape", NULL, "shape", "x", "s");
    tm_node(m, "Gather", NULL, "g0", "s,i0", "d0");
    tm_node(m, "Gather", NULL, "g1", "s,i1", "d1");
    tm_node(m, "Gather", NULL, "g2", "s,i2", "d2");
    tm_node(m, "Unsqueeze", NULL, "u0", "d0,axes0", "d0v");
    tm_attr_int(m, tm_node(m, "Concat", NULL, "cat", "d0v,minus1", "shape1"), "axis", 0);
    tm_node(m, "Reshape", NULL, "r1", "x,shape1", "y1");
    tm_node(m, "Mul", NULL, "mul", "d0,d1", "rows");
    tm_node(m, "Unsqueeze", NULL, "u1", "rows,axes0", "rowsv");
    tm_node(m, "Unsqueeze", NULL, "u2", "d2,axes0", "d2v");
    tm_attr_int(m, tm_node(m, "Concat", NULL, "cat2", "rowsv,d2v", "shape2"), "axis", 0);
    tm_node(m, "Reshape", NULL, "r2", "x,shape2", "y2");
    tm_output(m, "y1", T_FLOAT, 2, y1d);
    tm_output(m, "y2", T_FLOAT, 2, y2d);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    int64_t d[8];
    cr_assert_eq(dqg_tensor_dims(g, dqg_graph_output_id(g, 0), d), 2);
    cr_assert(d[0] == 2 && d[1] == 12, "y1 [%lld, %lld]", (long long)d[0], (long long)d[1]);
    cr_assert_eq(dqg_tensor_dims(g, dqg_graph_output_id(g, 1), d), 2);
    cr_assert(d[0] == 6 && d[1] == 4, "y2 [%lld, %lld]", (long long)d[0], (long long)d[1]);
    /* Only the two Reshapes are left in the graph. */
    cr_assert_eq(dqg_graph_op_count(g), 2);
    dqg_graph_destroy(g);
}

/* An embedding lookup: Gather of a constant table by run-time s64 ids,
 * compiled and on the reference; an id outside the table is an error on
 * both, naming the element. */
Test(onnx_shapes, gather_embedding_with_run_time_ids)
{
    tm_model *m = tm_new(13);
    int64_t td[] = {10, 4}, id[] = {2, 3}, yd[] = {2, 3, 4};
    float table[40];
    for (int i = 0; i < 40; i++)
        table[i] = (float)i * 0.5f;
    tm_input(m, "ids", T_INT64, 2, id, NULL);
    tm_init(m, "table", T_FLOAT, 2, td, table, sizeof table);
    tm_node(m, "Gather", NULL, "embed", "table,ids", "y");
    tm_output(m, "y", T_FLOAT, 3, yd);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    int64_t ids[6] = {0, 9, -1, 3, 3, 5};
    float ref[24], got[24];
    dqg_buffer in = {.name = "ids", .data = ids, .size = sizeof ids};
    dqg_buffer out = {.name = "y", .data = ref, .size = sizeof ref};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert(strstr(dqg_compiled_partition_info(c, 0), "dqgraph:gather"), "%s",
              dqg_compiled_partition_info(c, 0));
    out.data = got;
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    for (int k = 0; k < 6; k++)
        for (int j = 0; j < 4; j++) {
            int64_t row = ids[k] < 0 ? ids[k] + 10 : ids[k];
            cr_assert_eq(got[k * 4 + j], table[row * 4 + j], "[%d][%d]", k, j);
            cr_assert_eq(ref[k * 4 + j], table[row * 4 + j], "[%d][%d]", k, j);
        }
    ids[4] = 10;
    expect_error(dqg_execute(c, &in, 1, &out, 1), DQG_INVALID_ARGUMENT, "Gather 'embed'",
                 "element 4 is 10", "[-10, 10)");
    out.data = ref;
    expect_error(dqg_reference_run(g, &in, 1, &out, 1), DQG_INVALID_ARGUMENT, "element 4 is 10");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Rules: constant indices are checked when the graph is built; a folded
 * node whose computation fails names the node. */
Test(onnx_shapes, errors_name_the_node)
{
    tm_model *m = tm_new(13);
    int64_t td[] = {10, 4}, one = 1;
    const int64_t bad = 12;
    float table[40] = {0};
    int64_t xd[] = {1, 4};
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "table", T_FLOAT, 2, td, table, sizeof table);
    tm_init(m, "ix", T_INT64, 1, &one, &bad, 8);
    tm_node(m, "Gather", NULL, "g", "table,ix", "row");
    tm_node(m, "Add", NULL, "add", "x,row", "y");
    tm_output(m, "y", T_FLOAT, 2, xd);
    dqg_graph *g;
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "Gather", "'g'", "element 0 is 12");

    m = tm_new(13);
    int64_t sd[] = {2};
    const int64_t shp[] = {3, 5};
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "s", T_INT64, 1, sd, shp, sizeof shp);
    tm_init(m, "ix", T_INT64, 1, &one, &bad, 8);
    tm_node(m, "Gather", NULL, "gs", "s,ix", "dim");
    tm_node(m, "Reshape", NULL, "r", "x,dim", "y");
    tm_output(m, "y", T_FLOAT, 2, xd);
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "'gs'", "element 0 is 12");
}

/* Expand broadcasts both ways (x [3, 1] with shape [2, 1, 4] gives
 * [2, 3, 4]) for floats, integers and bool, exactly (-0, NaN and infinity
 * pass through), compiled and on the reference; a shape that changes
 * nothing is the input itself. */
Test(onnx_shapes, expand_broadcasts_every_type)
{
    enum { T_UINT8 = 2, T_BOOL = 9 };
    static const int types[] = {T_FLOAT, T_INT64, T_UINT8, T_BOOL};
    for (int v = 0; v < 4; v++) {
        int type = types[v];
        tm_model *m = tm_new(13);
        int64_t xd[] = {3, 1}, three = 3, yd[] = {2, 3, 4};
        const int64_t shp[] = {2, 1, 4};
        tm_input(m, "x", type, 2, xd, NULL);
        tm_init(m, "s", T_INT64, 1, &three, shp, sizeof shp);
        tm_node(m, "Expand", NULL, "e", "x,s", "y");
        tm_output(m, "y", type, 3, yd);
        dqg_graph *g;
        cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
        int64_t d[8];
        cr_assert_eq(dqg_tensor_dims(g, dqg_graph_output_id(g, 0), d), 3);
        cr_assert(d[0] == 2 && d[1] == 3 && d[2] == 4);
        float xf[3] = {-0.0f, NAN, -INFINITY};
        int64_t xi[3] = {-5, 1LL << 40, 7};
        uint8_t xb[3] = {1, 0, 1}, xu[3] = {0, 200, 255};
        void *x = v == 0 ? (void *)xf : v == 1 ? (void *)xi : v == 2 ? (void *)xu : (void *)xb;
        size_t es = v == 0 ? 4 : v == 1 ? 8 : 1;
        uint8_t ref[24 * 8], got[24 * 8];
        dqg_buffer in = {.name = "x", .data = x, .size = 3 * es};
        dqg_buffer out = {.name = "y", .data = ref, .size = 24 * es};
        cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        for (int fuse = 0; fuse < 2; fuse++) {
            dqg_compile_options o = dqg_compile_options_default();
            o.disable_fusion = !fuse;
            dqg_compiled *c;
            cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
            memset(got, 0xAA, sizeof got);
            out.data = got;
            cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
            out.data = ref;
            dqg_compiled_destroy(c);
            for (int i = 0; i < 24; i++) {
                int row = (i / 4) % 3; /* y[a][b][k] = x[b][0] */
                const uint8_t *want = (const uint8_t *)x + row * es;
                cr_assert(memcmp(got + i * es, want, es) == 0, "type %d element %d", type, i);
                cr_assert(memcmp(ref + i * es, want, es) == 0, "type %d reference %d", type, i);
            }
        }
        dqg_graph_destroy(g);
    }
    /* shape [1, 4] on x [3, 4]: the input itself, no op */
    tm_model *m = tm_new(13);
    int64_t xd[] = {3, 4}, two = 2;
    const int64_t shp[] = {1, 4};
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "s", T_INT64, 1, &two, shp, sizeof shp);
    tm_node(m, "Expand", NULL, "e", "x,s", "y");
    tm_node(m, "Relu", NULL, "r", "y", "z");
    tm_output(m, "z", T_FLOAT, 2, xd);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_graph_op_count(g), 1);
    dqg_graph_destroy(g);
}

/* Expand's errors name the node, the input and the rule. */
Test(onnx_shapes, expand_errors_name_the_rule)
{
    static const struct {
        int64_t shape[2];
        bool runtime;
        dqg_status st;
        const char *want;
    } cases[] = {
        {{2, 5}, false, DQG_INVALID_ARGUMENT, "has 3 on axis 0 where input 1 (shape) asks for 2"},
        {{-1, 4}, false, DQG_INVALID_ARGUMENT, "holds -1 at 0; dimensions must be >= 1"},
        {{0, 4}, false, DQG_UNSUPPORTED, "no empty tensors"},
        {{3, 4}, true, DQG_INVALID_ARGUMENT, "shape"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tm_model *m = tm_new(13);
        int64_t xd[] = {3, 1}, two = 2;
        tm_input(m, "x", T_FLOAT, 2, xd, NULL);
        if (cases[i].runtime)
            tm_input(m, "s", T_INT64, 1, &two, NULL);
        else
            tm_init(m, "s", T_INT64, 1, &two, cases[i].shape, sizeof cases[i].shape);
        tm_node(m, "Expand", NULL, "ex", "x,s", "y");
        tm_output(m, "y", T_FLOAT, 2, xd);
        dqg_graph *g;
        dqg_status st = load(m, &g);
        cr_assert_neq(st, DQG_OK, "case %zu loaded", i);
        if (!cases[i].runtime)
            cr_assert_eq(st, cases[i].st, "case %zu: %s", i, dqg_last_error());
        cr_assert(strstr(dqg_last_error(), "Expand") && strstr(dqg_last_error(), "'ex'") &&
                      strstr(dqg_last_error(), cases[i].want),
                  "case %zu: %s", i, dqg_last_error());
    }
}

/* RMSNormalization (opset 23) imports as its function body and compiles
 * to one op (the recognize pass): over the last axis with a [64] scale and
 * over the last two with a [5, 64] one, within 2.4e-7 relative of the
 * definition computed here in double (the ops round in f32; unfused, on
 * oneDNN's f32 reduction, 1e-6). */
Test(onnx_shapes, rms_normalization_becomes_one_op)
{
    for (int v = 0; v < 2; v++) {
        tm_model *m = tm_new(23);
        int64_t xd[] = {2, 5, 64}, sd[] = {5, 64};
        int srank = v ? 2 : 1;
        int64_t inner = v ? 320 : 64, n = 640;
        float scale[320], x[640];
        for (int i = 0; i < 320; i++)
            scale[i] = 0.5f + (float)(i % 13) * 0.07f;
        for (int i = 0; i < 640; i++)
            x[i] = sinf((float)i * 0.37f) * (1.0f + (float)(i % 5));
        tm_input(m, "x", T_FLOAT, 3, xd, NULL);
        tm_init(m, "scale", T_FLOAT, srank, v ? sd : sd + 1, scale, (size_t)inner * 4);
        Onnx__NodeProto *node = tm_node(m, "RMSNormalization", NULL, "rms", "x,scale", "y");
        tm_attr_int(m, node, "axis", v ? -2 : -1);
        tm_attr_float(m, node, "epsilon", 1e-6f);
        tm_output(m, "y", T_FLOAT, 3, xd);
        dqg_graph *g;
        cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
        float got[640];
        dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
        dqg_buffer out = {.name = "y", .data = got, .size = sizeof got};
        for (int fused = 1; fused >= 0; fused--) {
            dqg_compile_options o = dqg_compile_options_default();
            o.disable_fusion = !fused;
            dqg_compiled *c;
            cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(test_explain_mentions(c, "RMS normalization"), fused, "v %d", v);
            if (fused)
                cr_assert(dqg_compiled_partition_count(c) == 1 &&
                              strstr(dqg_compiled_partition_info(c, 0), "rms-norm"),
                          "v %d: %s", v, dqg_compiled_partition_info(c, 0));
            cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
            dqg_compiled_destroy(c);
            for (int64_t r = 0; r < n / inner; r++) {
                double ss = 0;
                for (int64_t i = 0; i < inner; i++)
                    ss += (double)x[r * inner + i] * x[r * inner + i];
                double root = sqrt(ss / (double)inner + 1e-6);
                for (int64_t i = 0; i < inner; i++) {
                    double want = x[r * inner + i] / root * scale[i];
                    /* unfused, oneDNN's reduction sums in f32: 1e-6 */
                    double tol = fused ? 2.4e-7 : 1e-6;
                    cr_assert(fabs(got[r * inner + i] - want) <= tol * fabs(want) + 1e-30,
                              "v %d fused %d y[%lld] %.9g, want %.9g", v, fused,
                              (long long)(r * inner + i), got[r * inner + i], want);
                }
            }
        }
        dqg_graph_destroy(g);
    }
}

/* Imports a normalization node `op` named `name` of an opset over x [2, 5,
 * 64] with a scale of 64, its axis attribute *axis (none when NULL) and
 * its stash_type. */
static dqg_status load_norm(const char *op, int opset, const char *name, const int64_t *axis,
                            int64_t stash, dqg_graph **g)
{
    tm_model *m = tm_new(opset);
    int64_t xd[] = {2, 5, 64}, sd = 64;
    float scale[64] = {0};
    tm_input(m, "x", T_FLOAT, 3, xd, NULL);
    tm_init(m, "scale", T_FLOAT, 1, &sd, scale, sizeof scale);
    Onnx__NodeProto *node = tm_node(m, op, NULL, name, "x,scale", "y");
    if (axis)
        tm_attr_int(m, node, "axis", *axis);
    tm_attr_int(m, node, "stash_type", stash);
    tm_output(m, "y", T_FLOAT, 3, xd);
    return load(m, g);
}

/* Its errors name the node and the rule. */
Test(onnx_shapes, rms_normalization_errors)
{
    static const struct {
        int64_t axis, stash;
        dqg_status st;
        const char *want;
    } cases[] = {
        {3, 1, DQG_INVALID_ARGUMENT, "axis 3 is outside [-3, 3) for input 0 (X) of rank 3"},
        {-1, 0, DQG_UNSUPPORTED, "stash_type 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dqg_graph *g;
        cr_assert_eq(load_norm("RMSNormalization", 23, "rn", &cases[i].axis, cases[i].stash, &g),
                     cases[i].st, "case %zu: %s", i, dqg_last_error());
        cr_assert(strstr(dqg_last_error(), "RMSNormalization") &&
                      strstr(dqg_last_error(), "'rn'") && strstr(dqg_last_error(), cases[i].want),
                  "case %zu: %s", i, dqg_last_error());
    }
}

/* LayerNormalization shares RMSNormalization's attribute rules: a
 * stash_type other than 1 is refused, naming the node and the rule. */
Test(onnx_shapes, layer_normalization_stash_type_other_than_1_is_refused)
{
    dqg_graph *g;
    cr_assert_eq(load_norm("LayerNormalization", 17, "ln", NULL, 0, &g), DQG_UNSUPPORTED, "%s",
                 dqg_last_error());
    cr_assert(strstr(dqg_last_error(), "LayerNormalization") && strstr(dqg_last_error(), "'ln'") &&
                  strstr(dqg_last_error(), "stash_type 0"),
              "%s", dqg_last_error());
}

/* x [2, 3] = 1..6 through one Pad node of `opset` with mode `mode` (NULL:
 * the default) and the pads, constant and axes given (NULL: absent), as
 * attributes before opset 11 and as constant inputs from it; the output
 * y of yd. */
static dqg_status load_pad(int opset, const char *mode, const int64_t *pads, int n_pads,
                           const float *value, const int64_t *axes, int n_axes, const int64_t *yd,
                           dqg_graph **g)
{
    tm_model *m = tm_new(opset);
    int64_t xd[] = {2, 3}, np = n_pads, na = n_axes;
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    Onnx__NodeProto *node;
    if (opset < 11) {
        node = tm_node(m, "Pad", NULL, "pad", "x", "y");
        tm_attr_ints(m, node, "pads", pads, (size_t)n_pads);
        if (value)
            tm_attr_float(m, node, "value", *value);
    } else {
        tm_init(m, "pads", T_INT64, 1, &np, pads, (size_t)n_pads * 8);
        if (value)
            tm_init(m, "cv", T_FLOAT, 0, NULL, value, 4);
        if (axes)
            tm_init(m, "axes", T_INT64, 1, &na, axes, (size_t)n_axes * 8);
        node = tm_node(m, "Pad", NULL, "pad",
                       axes ? (value ? "x,pads,cv,axes" : "x,pads,,axes")
                            : (value ? "x,pads,cv" : "x,pads"),
                       "y");
    }
    if (mode)
        tm_attr_string(m, node, "mode", mode);
    tm_output(m, "y", T_FLOAT, 2, yd);
    return load(m, g);
}

/* Runs g (x [2, 3] = 1..6) compiled and on the reference; both must give want. */
static void expect_pad(dqg_graph *g, const float *want, int n)
{
    float x[6] = {1, 2, 3, 4, 5, 6}, ref[32], got[32];
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = ref, .size = (size_t)n * sizeof(float)};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    out.data = got;
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < n; i++)
        cr_assert(ref[i] == want[i] && got[i] == want[i], "[%d]: ref %g, got %g, want %g", i,
                  ref[i], got[i], want[i]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Pad in its three forms: attributes (opset 2), constant inputs with a
 * constant (opset 13) and axes (opset 18), and mode wrap (opset 19). */
Test(onnx_shapes, pad_in_every_form)
{
    dqg_graph *g;
    const int64_t p2[] = {0, 1, 1, 0}, yd2[] = {3, 4};
    const float v = 9.0f;
    cr_assert_eq(load_pad(2, "reflect", p2, 4, NULL, NULL, 0, yd2, &g), DQG_OK, "%s",
                 dqg_last_error());
    expect_pad(g, (const float[]){2, 1, 2, 3, 5, 4, 5, 6, 2, 1, 2, 3}, 12);
    cr_assert_eq(load_pad(13, NULL, p2, 4, &v, NULL, 0, yd2, &g), DQG_OK, "%s", dqg_last_error());
    expect_pad(g, (const float[]){9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9}, 12);
    const int64_t p18[] = {2, -1}, axes[] = {-1}, yd18[] = {2, 4};
    cr_assert_eq(load_pad(18, "edge", p18, 2, NULL, axes, 1, yd18, &g), DQG_OK, "%s",
                 dqg_last_error());
    expect_pad(g, (const float[]){1, 1, 1, 2, 4, 4, 4, 5}, 8);
    const int64_t p19[] = {0, 2, 0, 1}, yd19[] = {2, 6};
    cr_assert_eq(load_pad(19, "wrap", p19, 4, NULL, NULL, 0, yd19, &g), DQG_OK, "%s",
                 dqg_last_error());
    expect_pad(g, (const float[]){2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4}, 12);
}

/* Its errors name the node and the rule. */
Test(onnx_shapes, pad_errors_name_the_rule)
{
    dqg_graph *g;
    const int64_t p[] = {0, 1, 0, 1}, three[] = {0, 1, 1}, yd[] = {2, 5}, axes2[] = {1, -1};
    expect_error(load_pad(13, "wrap", p, 4, NULL, NULL, 0, yd, &g), DQG_INVALID_ARGUMENT,
                 "Pad node", "'pad'", "mode is 'wrap'", "('wrap' from opset 19)");
    expect_error(load_pad(19, "symmetric", p, 4, NULL, NULL, 0, yd, &g), DQG_INVALID_ARGUMENT,
                 "mode is 'symmetric'");
    expect_error(load_pad(13, NULL, three, 3, NULL, NULL, 0, yd, &g), DQG_INVALID_ARGUMENT,
                 "pads has 3 values for 2 axes");
    expect_error(load_pad(18, NULL, p, 4, NULL, axes2, 2, yd, &g), DQG_INVALID_ARGUMENT,
                 "axis 1 is given twice");
    const int64_t axes_out[] = {0, 2}, axes_neg[] = {-3, 1};
    expect_error(load_pad(18, NULL, p, 4, NULL, axes_out, 2, yd, &g), DQG_INVALID_ARGUMENT,
                 "axis 2 is outside [-2, 2)");
    expect_error(load_pad(18, NULL, p, 4, NULL, axes_neg, 2, yd, &g), DQG_INVALID_ARGUMENT,
                 "axis -3 is outside [-2, 2)");
    /* A constant of another type than the data's. */
    tm_model *m = tm_new(13);
    int64_t xd[] = {2, 3}, n4 = 4;
    const int32_t cv = 1;
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "pads", T_INT64, 1, &n4, p, sizeof p);
    tm_init(m, "cv", T_INT32, 0, NULL, &cv, 4);
    tm_node(m, "Pad", NULL, "pad", "x,pads,cv", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "input 2 (constant_value) is s32",
                 "data's type, f32");
    /* Pads given at run time. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_input(m, "pads", T_INT64, 1, &n4, NULL);
    tm_node(m, "Pad", NULL, "pad", "x,pads", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    cr_assert_neq(load(m, &g), DQG_OK);
    cr_assert(strstr(dqg_last_error(), "Pad") && strstr(dqg_last_error(), "pads"), "%s",
              dqg_last_error());
}

/* Max and Min of several inputs with broadcasting, and of one (a copy);
 * on shape values they fold at import. */
Test(onnx_shapes, max_and_min_of_several_inputs)
{
    tm_model *m = tm_new(13);
    int64_t ad[] = {2, 3}, bd[] = {3}, one = 1;
    const float b[] = {2, -1, 7}, c = 3.5f;
    tm_input(m, "a", T_FLOAT, 2, ad, NULL);
    tm_init(m, "b", T_FLOAT, 1, bd, b, sizeof b);
    tm_init(m, "c", T_FLOAT, 1, &one, &c, 4);
    tm_node(m, "Max", NULL, "mx", "a,b,c", "y");
    tm_node(m, "Min", NULL, "mn", "a", "z");
    tm_output(m, "y", T_FLOAT, 2, ad);
    tm_output(m, "z", T_FLOAT, 2, ad);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6], z[6];
    dqg_buffer in = {.name = "a", .data = x, .size = sizeof x};
    dqg_buffer out[2] = {{.name = "y", .data = y, .size = sizeof y},
                         {.name = "z", .data = z, .size = sizeof z}};
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *cc;
    cr_assert_eq(dqg_compile(g, &o, &cc), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(cc, &in, 1, out, 2), DQG_OK, "%s", dqg_last_error());
    const float want[] = {3.5f, 3.5f, 7, 4, 5, 7};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(y[i], want[i], "[%d]: %g", i, y[i]);
        cr_assert_eq(z[i], x[i]);
    }
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);
    /* On constants (as a shape computation) they fold into one value. */
    m = tm_new(13);
    const int64_t s1 = 5, s2 = 3, yd[] = {3, 2};
    int64_t xd[] = {6};
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_init(m, "s1", T_INT64, 1, &one, &s1, 8);
    tm_init(m, "s2", T_INT64, 1, &one, &s2, 8);
    tm_init(m, "m1", T_INT64, 1, &one, (const int64_t[]){-1}, 8);
    tm_node(m, "Min", NULL, "mn", "s1,s2", "rows");
    tm_attr_int(m, tm_node(m, "Concat", NULL, "cat", "rows,m1", "shape"), "axis", 0);
    tm_node(m, "Reshape", NULL, "r", "x,shape", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_graph_op_count(g), 1);
    dqg_graph_destroy(g);
}

/* Resize as PyTorch exports it (opset 13): roi an empty Constant, scales
 * an initializer (sizes absent), or scales an empty initializer and sizes
 * given. x [1, 1, 1, 2] = {0, 4} doubled along the last axis, linear,
 * half_pixel: {0, 1, 3, 4}. */
Test(onnx_shapes, resize_with_empty_roi_and_scales)
{
    for (int form = 0; form < 2; form++) {
        tm_model *m = tm_new(13);
        int64_t xd[] = {1, 1, 1, 2}, yd[] = {1, 1, 1, 4}, four = 4, zero = 0;
        const float scales[] = {1, 1, 1, 2};
        const int64_t sizes[] = {1, 1, 1, 4};
        tm_input(m, "x", T_FLOAT, 4, xd, NULL);
        tm_attr_ints(m, tm_node(m, "Constant", NULL, "roi_c", "", "roi"), "value_ints", NULL, 0);
        if (form == 0) {
            tm_init(m, "scales", T_FLOAT, 1, &four, scales, sizeof scales);
            tm_attr_string(m, tm_node(m, "Resize", NULL, "rs", "x,roi,scales", "y"), "mode",
                           "linear");
        } else {
            tm_init(m, "scales", T_FLOAT, 1, &zero, NULL, 0);
            tm_init(m, "sizes", T_INT64, 1, &four, sizes, sizeof sizes);
            tm_attr_string(m, tm_node(m, "Resize", NULL, "rs", "x,roi,scales,sizes", "y"), "mode",
                           "linear");
        }
        tm_output(m, "y", T_FLOAT, 4, yd);
        dqg_graph *g;
        cr_assert_eq(load(m, &g), DQG_OK, "form %d: %s", form, dqg_last_error());
        float x[] = {0, 4}, y[4];
        dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
        dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
        dqg_compile_options o = dqg_compile_options_default();
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        const float want[] = {0, 1, 3, 4};
        for (int i = 0; i < 4; i++)
            cr_assert_eq(y[i], want[i], "form %d [%d]: %g", form, i, y[i]);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* Resize's rules, each naming the node; an empty constant read as a tensor
 * is refused, naming it. */
Test(onnx_shapes, resize_errors_name_the_rule)
{
    static const struct {
        const char *mode, *coord;
        int64_t antialias;
        bool both, short_scales;
        dqg_status st;
        const char *want;
        int64_t axes[2]; /* with short_scales: the two axes they scale ({0, 0}: none) */
    } cases[] = {
        {"area", NULL, 0, false, false, DQG_INVALID_ARGUMENT, "mode is 'area'", {0, 0}},
        {NULL,
         "tf_crop_and_resize",
         0,
         false,
         false,
         DQG_UNSUPPORTED,
         "coordinate_transformation_mode 'tf_crop_and_resize' is not supported",
         {0, 0}},
        {NULL, NULL, 1, false, false, DQG_UNSUPPORTED, "antialias is not supported", {0, 0}},
        {NULL,
         NULL,
         0,
         true,
         false,
         DQG_INVALID_ARGUMENT,
         "exactly one of scales and sizes must be given",
         {0, 0}},
        {NULL,
         NULL,
         0,
         false,
         true,
         DQG_INVALID_ARGUMENT,
         "scales has 2 values for 4 axes",
         {0, 0}},
        {NULL, NULL, 0, false, true, DQG_INVALID_ARGUMENT, "axis 2 is given twice", {-2, 2}},
        {NULL, NULL, 0, false, true, DQG_INVALID_ARGUMENT, "axis 4 is outside [-4, 4)", {2, 4}},
        {NULL, NULL, 0, false, true, DQG_INVALID_ARGUMENT, "axis -5 is outside [-4, 4)", {-5, 3}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tm_model *m = tm_new(18);
        int64_t xd[] = {1, 1, 2, 2}, yd[] = {1, 1, 4, 4}, n = cases[k].short_scales ? 2 : 4;
        const float scales[] = {1, 1, 2, 2};
        const int64_t sizes[] = {1, 1, 4, 4};
        tm_input(m, "x", T_FLOAT, 4, xd, NULL);
        tm_init(m, "scales", T_FLOAT, 1, &n, scales + (cases[k].short_scales ? 2 : 0),
                (size_t)n * 4);
        tm_init(m, "sizes", T_INT64, 1, &n, sizes, (size_t)n * 8);
        Onnx__NodeProto *node =
            tm_node(m, "Resize", NULL, "rs", cases[k].both ? "x,,scales,sizes" : "x,,scales", "y");
        if (cases[k].mode)
            tm_attr_string(m, node, "mode", cases[k].mode);
        if (cases[k].coord)
            tm_attr_string(m, node, "coordinate_transformation_mode", cases[k].coord);
        if (cases[k].antialias)
            tm_attr_int(m, node, "antialias", cases[k].antialias);
        if (cases[k].axes[0] || cases[k].axes[1])
            tm_attr_ints(m, node, "axes", cases[k].axes, 2);
        tm_output(m, "y", T_FLOAT, 4, yd);
        dqg_graph *g;
        expect_error(load(m, &g), cases[k].st, "Resize node", "'rs'", cases[k].want);
    }
    tm_model *m = tm_new(13);
    int64_t xd[] = {2}, zero = 0;
    tm_input(m, "x", T_FLOAT, 1, xd, NULL);
    tm_init(m, "e", T_FLOAT, 1, &zero, NULL, 0);
    tm_node(m, "Add", NULL, "add", "x,e", "y");
    tm_output(m, "y", T_FLOAT, 1, xd);
    dqg_graph *g;
    expect_error(load(m, &g), DQG_UNSUPPORTED, "Add", "constant 'e' is empty");
}

/* The operators imported as compositions name the rule they break. */
Test(onnx_shapes, composed_operators_name_the_rule)
{
    static const struct {
        const char *op, *attr;
        int64_t value;
        int64_t dims[4];
        const char *want;
    } cases[] = {
        {"DepthToSpace", "blocksize", 3, {1, 8, 2, 2}, "blocksize 3 does not divide"},
        {"SpaceToDepth", "blocksize", 2, {1, 8, 3, 2}, "blocksize 2 does not divide"},
        {"DepthToSpace", "blocksize", 0, {1, 8, 2, 2}, "blocksize 0"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tm_model *m = tm_new(13);
        tm_input(m, "x", T_FLOAT, 4, cases[k].dims, NULL);
        tm_attr_int(m, tm_node(m, cases[k].op, NULL, "ds", "x", "y"), cases[k].attr,
                    cases[k].value);
        tm_output(m, "y", T_FLOAT, 4, cases[k].dims);
        dqg_graph *g;
        expect_error(load(m, &g), DQG_INVALID_ARGUMENT, cases[k].op, "'ds'", cases[k].want);
    }
    /* Trilu: k a run-time input, then a rank-1 input. */
    tm_model *m = tm_new(14);
    int64_t xd[] = {3, 3}, one = 1;
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_input(m, "k", T_INT64, 0, NULL, NULL);
    tm_node(m, "Trilu", NULL, "tri", "x,k", "y");
    tm_output(m, "y", T_FLOAT, 2, xd);
    dqg_graph *g;
    expect_error(load(m, &g), DQG_UNSUPPORTED, "Trilu", "'tri'", "input 1 (k)");
    m = tm_new(14);
    tm_input(m, "x", T_FLOAT, 1, &one, NULL);
    tm_node(m, "Trilu", NULL, "tri", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, &one);
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "Trilu", "rank 1; it must be >= 2");
    /* Tile: repeats of the wrong count, and a 0. */
    for (int k = 0; k < 2; k++) {
        m = tm_new(13);
        int64_t two = 2, reps[2] = {2, 0};
        tm_input(m, "x", T_FLOAT, 2, xd, NULL);
        tm_init(m, "r", T_INT64, 1, k ? &two : &one, reps, k ? 16 : 8);
        tm_node(m, "Tile", NULL, "tile", "x,r", "y");
        tm_output(m, "y", T_FLOAT, 2, xd);
        if (k)
            expect_error(load(m, &g), DQG_UNSUPPORTED, "Tile", "'tile'", "repeats[1] is 0",
                         "no empty tensors");
        else
            expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "Tile",
                         "1 values for an input of "
                         "rank 2");
    }
    /* InstanceNormalization of a rank-2 input. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_input(m, "s", T_FLOAT, 1, &xd[1], NULL);
    tm_input(m, "b", T_FLOAT, 1, &xd[1], NULL);
    tm_node(m, "InstanceNormalization", NULL, "in", "x,s,b", "y");
    tm_output(m, "y", T_FLOAT, 2, xd);
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "InstanceNormalization", "rank 2");
    /* Celu's alpha of 0. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, &one, NULL);
    tm_attr_float(m, tm_node(m, "Celu", NULL, "ce", "x", "y"), "alpha", 0.0f);
    tm_output(m, "y", T_FLOAT, 1, &one);
    expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "Celu", "'ce'", "alpha is 0");
}

/* ConvTranspose with groups, strides, dilations, asymmetric pads and
 * output_padding, against a direct scatter written here: y[n, m, o] +=
 * x[n, c, i] w[c, m', k] at o = i s + k d - pads_begin. Compiled (its
 * first partition's kernel holding `kernel`) and on the reference, within
 * 1e-5 of the output's largest magnitude. */
static void check_conv_transpose(const int64_t s[2], const int64_t d[2], const int64_t pb[2],
                                 const int64_t pe[2], const int64_t op[2], const char *kernel)
{
    enum { N = 1, C = 4, G = 2, MG = 3, H = 4, W = 5, KH = 3, KW = 2 };
    int64_t Y[2], X[2] = {H, W}, K[2] = {KH, KW};
    for (int i = 0; i < 2; i++)
        Y[i] = s[i] * (X[i] - 1) + op[i] + (K[i] - 1) * d[i] + 1 - pb[i] - pe[i];
    test_rng = 31;
    float x[N * C * H * W], w[C * MG * KH * KW], b[G * MG];
    for (size_t i = 0; i < sizeof x / 4; i++)
        x[i] = test_uniform(-1, 1);
    for (size_t i = 0; i < sizeof w / 4; i++)
        w[i] = test_uniform(-1, 1);
    for (size_t i = 0; i < sizeof b / 4; i++)
        b[i] = test_uniform(-1, 1);
    int64_t ny = N * G * MG * Y[0] * Y[1];
    double *want = calloc((size_t)ny, sizeof *want);
    for (int m = 0; m < G * MG; m++)
        for (int64_t o = 0; o < Y[0] * Y[1]; o++)
            want[m * Y[0] * Y[1] + o] = b[m];
    for (int ch = 0; ch < C; ch++) {
        int g = ch / (C / G);
        for (int mm = 0; mm < MG; mm++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++)
                    for (int ki = 0; ki < KH; ki++)
                        for (int kj = 0; kj < KW; kj++) {
                            int64_t oi = i * s[0] + ki * d[0] - pb[0],
                                    oj = j * s[1] + kj * d[1] - pb[1];
                            if (oi < 0 || oi >= Y[0] || oj < 0 || oj >= Y[1])
                                continue;
                            int m = g * MG + mm;
                            want[(m * Y[0] + oi) * Y[1] + oj] +=
                                (double)x[(ch * H + i) * W + j] *
                                w[((ch * MG + mm) * KH + ki) * KW + kj];
                        }
    }
    tm_model *m = tm_new(13);
    int64_t xd[] = {N, C, H, W}, wd[] = {C, MG, KH, KW}, bd = G * MG,
            yd[] = {N, G * MG, Y[0], Y[1]};
    tm_input(m, "x", T_FLOAT, 4, xd, NULL);
    tm_init(m, "w", T_FLOAT, 4, wd, w, sizeof w);
    tm_init(m, "b", T_FLOAT, 1, &bd, b, sizeof b);
    Onnx__NodeProto *n = tm_node(m, "ConvTranspose", NULL, "up", "x,w,b", "y");
    tm_attr_int(m, n, "group", G);
    tm_attr_ints(m, n, "strides", s, 2);
    tm_attr_ints(m, n, "dilations", d, 2);
    tm_attr_ints(m, n, "pads", (const int64_t[]){pb[0], pb[1], pe[0], pe[1]}, 4);
    tm_attr_ints(m, n, "output_padding", op, 2);
    tm_output(m, "y", T_FLOAT, 4, yd);
    dqg_graph *gr;
    cr_assert_eq(load(m, &gr), DQG_OK, "%s", dqg_last_error());
    float *ref = malloc((size_t)ny * 4), *got = malloc((size_t)ny * 4);
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = ref, .size = (size_t)ny * 4};
    cr_assert_eq(dqg_reference_run(gr, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *cc;
    cr_assert_eq(dqg_compile(gr, &o, &cc), DQG_OK, "%s", dqg_last_error());
    cr_assert(strstr(dqg_compiled_partition_info(cc, 0), kernel), "%s",
              dqg_compiled_partition_info(cc, 0));
    out.data = got;
    cr_assert_eq(dqg_execute(cc, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    double big = 0;
    for (int64_t i = 0; i < ny; i++)
        big = fmax(big, fabs(want[i]));
    for (int64_t i = 0; i < ny; i++) {
        cr_assert(fabs(ref[i] - want[i]) <= 1e-5 * big, "[%lld] ref %g, want %g", (long long)i,
                  ref[i], want[i]);
        cr_assert(fabs(got[i] - want[i]) <= 1e-5 * big, "[%lld] got %g, want %g", (long long)i,
                  got[i], want[i]);
    }
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(gr);
    free(want);
    free(ref);
    free(got);
}

Test(onnx_shapes, conv_transpose_matches_a_direct_scatter)
{
    const int64_t s[2] = {2, 3}, d[2] = {2, 1}, pb[2] = {1, 0}, pe[2] = {2, 1}, op[2] = {1, 0};
    check_conv_transpose(s, d, pb, pe, op, "onednn:deconv:f32");
}

/* An output_padding that only the dilation allows (stride 1, dilation 2,
 * output_padding 1, no end padding) is a right padding oneDNN's
 * deconvolution refuses (it must exceed minus the stride): the reference
 * kernel takes the layer, and says why. */
Test(onnx_shapes, conv_transpose_output_padding_beyond_the_stride)
{
    const int64_t s[2] = {2, 1}, d[2] = {1, 2}, pb[2] = {0, 1}, pe[2] = {0, 0}, op[2] = {0, 1};
    check_conv_transpose(s, d, pb, pe, op,
                         "reference (onednn:deconv:f32: output_padding 1 on "
                         "spatial axis 1 reaches 1 past the end padding");
}

/* ConvTranspose's rules name the node. */
Test(onnx_shapes, conv_transpose_errors_name_the_rule)
{
    static const struct {
        int64_t group, stride, opad;
        const char *want;
    } cases[] = {
        {3, 1, 0, "group 3"},
        {1, 0, 0, "strides and dilations must be in [1, 4096]"},
        {1, 2, 2, "output_padding in [0, max(stride, dilation))"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tm_model *m = tm_new(13);
        int64_t xd[] = {1, 4, 3, 3}, wd[] = {4, 2, 3, 3}, yd[] = {1, 2, 5, 5};
        float w[4 * 2 * 9] = {0};
        tm_input(m, "x", T_FLOAT, 4, xd, NULL);
        tm_init(m, "w", T_FLOAT, 4, wd, w, sizeof w);
        Onnx__NodeProto *n = tm_node(m, "ConvTranspose", NULL, "up", "x,w", "y");
        tm_attr_int(m, n, "group", cases[k].group);
        tm_attr_ints(m, n, "strides", (const int64_t[]){cases[k].stride, 1}, 2);
        tm_attr_ints(m, n, "output_padding", (const int64_t[]){cases[k].opad, 0}, 2);
        tm_output(m, "y", T_FLOAT, 4, yd);
        dqg_graph *g;
        expect_error(load(m, &g), DQG_INVALID_ARGUMENT, "ConvTranspose", "'up'", cases[k].want);
    }
}

/* ReduceLogSumExp (log of the sum of e^x, as ONNX's reference, without the
 * max subtracted) and IsInf with each pair of its flags, on hand-worked
 * values. */
Test(onnx_shapes, reduce_log_sum_exp_and_is_inf)
{
    tm_model *m = tm_new(13);
    int64_t xd[] = {2, 3}, yd[] = {2, 1};
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_attr_ints(m, tm_node(m, "ReduceLogSumExp", NULL, "lse", "x", "y"), "axes",
                 (const int64_t[]){1}, 1);
    for (int k = 0; k < 4; k++) {
        char name[16], out[16];
        snprintf(name, sizeof name, "inf%d", k);
        snprintf(out, sizeof out, "z%d", k);
        Onnx__NodeProto *n = tm_node(m, "IsInf", NULL, name, "x", out);
        tm_attr_int(m, n, "detect_negative", k & 1);
        tm_attr_int(m, n, "detect_positive", (k >> 1) & 1);
        tm_output(m, out, 9 /* BOOL */, 2, xd);
    }
    tm_output(m, "y", T_FLOAT, 2, yd);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    float x[6] = {0, 1, 2, -INFINITY, INFINITY, NAN}, y[2];
    uint8_t z[4][6];
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out[5] = {{.name = "y", .data = y, .size = sizeof y},
                         {.name = "z0", .data = z[0], .size = 6},
                         {.name = "z1", .data = z[1], .size = 6},
                         {.name = "z2", .data = z[2], .size = 6},
                         {.name = "z3", .data = z[3], .size = 6}};
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, out, 5), DQG_OK, "%s", dqg_last_error());
    cr_assert_float_eq(y[0], (float)log(1.0 + exp(1.0) + exp(2.0)), 1e-6f, "%g", y[0]);
    cr_assert(isnan(y[1]), "%g", y[1]);
    const uint8_t want[4][6] = {
        {0, 0, 0, 0, 0, 0}, {0, 0, 0, 1, 0, 0}, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 1, 1, 0}};
    cr_assert_eq(memcmp(z, want, sizeof want), 0);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* OneHot: an index outside [-depth, depth) sets nothing (all off), a
 * negative one counts from the end; depth must be a constant. */
Test(onnx_shapes, one_hot_outside_and_negative_indices)
{
    tm_model *m = tm_new(11);
    int64_t id[] = {4}, yd[] = {4, 3}, one = 1, two = 2;
    const float depth = 3, values[] = {-1, 5};
    tm_input(m, "i", T_INT64, 1, id, NULL);
    tm_init(m, "depth", T_FLOAT, 1, &one, &depth, 4);
    tm_init(m, "values", T_FLOAT, 1, &two, values, sizeof values);
    tm_node(m, "OneHot", NULL, "oh", "i,depth,values", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    dqg_graph *g;
    cr_assert_eq(load(m, &g), DQG_OK, "%s", dqg_last_error());
    int64_t idx[] = {0, -1, 3, -4};
    float y[12];
    dqg_buffer in = {.name = "i", .data = idx, .size = sizeof idx};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    const float want[] = {5, -1, -1, -1, -1, 5, -1, -1, -1, -1, -1, -1};
    for (int k = 0; k < 12; k++)
        cr_assert_eq(y[k], want[k], "[%d]: %g", k, y[k]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    m = tm_new(11);
    tm_input(m, "i", T_INT64, 1, id, NULL);
    tm_input(m, "depth", T_FLOAT, 1, &one, NULL);
    tm_init(m, "values", T_FLOAT, 1, &two, values, sizeof values);
    tm_node(m, "OneHot", NULL, "oh", "i,depth,values", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    expect_error(load(m, &g), DQG_UNSUPPORTED, "OneHot", "'oh'", "input 1 (depth)");
}
