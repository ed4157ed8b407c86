/* Quantized patterns beyond MatMul and Convolution: element-wise chains
 * between a per-tensor DequantizeLinear and a QuantizeLinear run as one int8
 * partition, bit-identical to the reference interpreter; and a
 * DequantizeLinear read by several ops is given to each of them, so each
 * can still fuse it (as quantization tools write one DequantizeLinear per
 * tensor). */
#include <math.h>
#include <stdlib.h>

#include "runtime/cpu_isa.h"
#include "test_common.h"

static dqg_tensor_id dq(dqg_graph *g, dqg_tensor_id x, dqg_dtype t)
{
    dqg_dequantize_linear_attrs a = {.opset = 13};
    float s = 0.01f + 0.001f * (float)(test_rnd() % 50);
    int z = t == DQG_U8 ? (int)(test_rnd() % 256) : (int)(test_rnd() % 41) - 20;
    return dqg_dequantize_linear(g, NULL, x, test_scalar_f32(g, s), test_scalar_8bit(g, t, z), &a);
}

/* Runs g compiled (fused) and on the reference; the int8 output is
 * bit-identical, and `want` partitions of `kind` ran. */
static void check_kind(dqg_graph *g, const char *what, const char *kind, int want)
{
    finalize_ok(g);
    size_t n_in = dqg_graph_input_count(g);
    cr_assert_leq(n_in, 8);
    dqg_buffer in[8];
    void *data[8];
    for (size_t i = 0; i < n_in; i++) {
        dqg_tensor_id t = dqg_graph_input_id(g, i);
        size_t n = dqg_tensor_byte_size(g, t);
        data[i] = malloc(n);
        for (size_t k = 0; k < n; k++)
            ((uint8_t *)data[i])[k] = (uint8_t)test_rnd();
        in[i] = (dqg_buffer){.id = t, .data = data[i], .size = n};
    }
    dqg_tensor_id y = dqg_graph_output_id(g, 0);
    size_t yb = dqg_tensor_byte_size(g, y);
    uint8_t *ref = malloc(yb), *got = malloc(yb);
    dqg_buffer o = {.id = y, .data = ref, .size = yb};
    cr_assert_eq(dqg_reference_run(g, in, n_in, &o, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    int found = 0;
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++)
        found += strstr(dqg_compiled_partition_info(c, p), kind) != NULL;
    cr_assert_eq(found, want, "%s: %d '%s' partitions", what, found, kind);
    o.data = got;
    cr_assert_eq(dqg_execute(c, in, n_in, &o, 1), DQG_OK, "%s", dqg_last_error());
    for (size_t i = 0; i < yb; i++)
        cr_assert_eq(got[i], ref[i], "%s: byte %zu: %u vs reference %u", what, i, got[i], ref[i]);
    dqg_compiled_destroy(c);
    for (size_t i = 0; i < n_in; i++)
        free(data[i]);
    free(ref);
    free(got);
    dqg_graph_destroy(g);
}

static void check(dqg_graph *g, const char *what, int want)
{
    check_kind(g, what, "int8 element-wise [", want);
}

static dqg_tensor_id quantize(dqg_graph *g, dqg_tensor_id x, dqg_dtype t)
{
    dqg_quantize_linear_attrs a = {.opset = 13};
    float s = 0.02f + 0.001f * (float)(test_rnd() % 30);
    int z = t == DQG_U8 ? (int)(test_rnd() % 256) : (int)(test_rnd() % 41) - 20;
    return dqg_quantize_linear(g, "q", x, test_scalar_f32(g, s), test_scalar_8bit(g, t, z), &a);
}

Test(qdq_patterns, residual_add_relu_requantize)
{
    test_rng = 11;
    for (int trial = 0; trial < 40; trial++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t d[] = {1 + (int64_t)(test_rnd() % 3), 5 + (int64_t)(test_rnd() % 40),
                       1 + (int64_t)(test_rnd() % 9)};
        dqg_dtype ta = test_rnd() % 2 ? DQG_U8 : DQG_S8, tb = test_rnd() % 2 ? DQG_U8 : DQG_S8;
        dqg_tensor_id a = dq(g, dqg_input(g, "a", ta, 3, d), ta);
        dqg_tensor_id b = dq(g, dqg_input(g, "b", tb, 3, d), tb);
        dqg_tensor_id t = dqg_add(g, "residual", a, b);
        switch (test_rnd() % 4) {
        case 0:
            t = dqg_relu(g, NULL, t);
            break;
        case 1:
            t = dqg_clip(g, NULL, t, 0.0f, 6.0f);
            break;
        case 2:
            t = dqg_mul(g, NULL, t, test_scalar_f32(g, 0.5f));
            break;
        default:
            break;
        }
        dqg_output(g, quantize(g, t, test_rnd() % 2 ? DQG_U8 : DQG_S8), "y");
        check(g, "residual", 1);
    }
}

Test(qdq_patterns, requantize_and_clip_between_quantize_steps)
{
    test_rng = 22;
    for (int trial = 0; trial < 20; trial++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t d[] = {70001};
        dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 1, d);
        dqg_tensor_id t = dq(g, x, DQG_U8);
        if (trial % 2)
            t = dqg_clip(g, NULL, t, -1.0f, 1.5f);
        dqg_output(g, quantize(g, t, trial % 3 ? DQG_U8 : DQG_S8), "y");
        check(g, "requantize", 1);
    }
}

/* Add(x, x): the dequantize is read twice by one op. */
Test(qdq_patterns, an_input_read_twice)
{
    test_rng = 33;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d[] = {4, 33};
    dqg_tensor_id a = dq(g, dqg_input(g, "a", DQG_S8, 2, d), DQG_S8);
    dqg_output(g, quantize(g, dqg_add(g, NULL, a, a), DQG_S8), "y");
    check(g, "x + x", 1);
}

/* A dequantized result also read elsewhere does not fuse (its float value
 * is needed), and the results still match. */
/* Finalizes and compiles g, asserts that no partition is an int8
 * element-wise one, and destroys g. */
static void no_int8_eltwise(dqg_graph *g)
{
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    for (size_t p = 0; p < dqg_compiled_partition_count(c); p++)
        cr_assert(!strstr(dqg_compiled_partition_info(c, p), "int8 element-wise ["), "%s",
                  dqg_compiled_partition_info(c, p));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(qdq_patterns, a_chain_value_read_elsewhere_stays_float)
{
    test_rng = 44;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d[] = {16};
    dqg_tensor_id a = dq(g, dqg_input(g, "a", DQG_U8, 1, d), DQG_U8);
    dqg_tensor_id r = dqg_relu(g, NULL, a);
    dqg_output(g, quantize(g, r, DQG_U8), "y");
    dqg_output(g, r, "r");
    no_int8_eltwise(g);
}

/* x_dq = DequantizeLinear(u8 input "x" [4, 16]) and w_dq =
 * DequantizeLinear(s8 constant "w" [16, N]), for a MatMul of the two. */
static void x_and_weights(dqg_graph *g, int64_t N, dqg_tensor_id *x, dqg_tensor_id *wf)
{
    int64_t xd[] = {4, 16}, wd[] = {16, N};
    int8_t w[16 * 16];
    for (int i = 0; i < 16 * N; i++)
        w[i] = (int8_t)(i % 11 - 5);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    *x = dqg_dequantize_linear(g, "x_dq", dqg_input(g, "x", DQG_U8, 2, xd),
                               test_scalar_f32(g, 0.05f), test_scalar_8bit(g, DQG_U8, 100), &a);
    *wf = dqg_dequantize_linear(g, "w_dq", dqg_constant(g, "w", DQG_S8, 2, wd, w, (size_t)(16 * N)),
                                test_scalar_f32(g, 0.01f), DQG_NONE, &a);
}

/* Finalizes and compiles g, asserting one fused partition and an explain
 * line containing `line`. */
static dqg_compiled *compile_one_fused(dqg_graph *g, const char *line)
{
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_compiled_fused_count(c), 1);
    bool explained = false;
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        explained |= strstr(dqg_compiled_explain(c, i), line) != NULL;
    cr_assert(explained, "no explain line with \"%s\"", line);
    return c;
}

/* One DequantizeLinear read by a MatMul and by an Add (as a residual):
 * canonicalization gives the MatMul its own copy, so it still fuses. */
Test(qdq_patterns, shared_dequantize_still_fuses)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id x, wf;
    x_and_weights(g, 16, &x, &wf);
    dqg_tensor_id y = dqg_add(g, "residual", dqg_matmul(g, "mm", x, wf, NULL), x);
    dqg_output(g, y, "y");
    dqg_compiled *c = compile_one_fused(g, "Dequantize 'x_dq' is computed again");
    uint8_t xv[64];
    for (int i = 0; i < 64; i++)
        xv[i] = (uint8_t)(i * 7);
    float got[64], ref[64];
    dqg_buffer in = {.name = "x", .data = xv, .size = sizeof xv};
    dqg_buffer o = {.name = "y", .data = got, .size = sizeof got};
    cr_assert_eq(dqg_execute(c, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
    o.data = ref;
    cr_assert_eq(dqg_reference_run(g, &in, 1, &o, 1), DQG_OK);
    for (int i = 0; i < 64; i++)
        cr_assert_float_eq(got[i], ref[i], 1e-5f * 8, "[%d] %g vs %g", i, got[i], ref[i]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* A DequantizeLinear whose result is also a graph output (a feature map
 * the caller reads) and the source of a MatMul: the output keeps the
 * original, the MatMul gets its own copy and still fuses; both outputs
 * match the reference. */
Test(qdq_patterns, dequantize_that_is_also_a_graph_output_still_fuses)
{
    if (!test_int8_fusion())
        cr_skip_test(TEST_NO_INT8_REASON);
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id x, wf;
    x_and_weights(g, 8, &x, &wf);
    dqg_output(g, dqg_matmul(g, "mm", x, wf, NULL), "y");
    dqg_output(g, x, "features");
    dqg_compiled *c = compile_one_fused(g, "Dequantize 'x_dq' is computed again for MatMul "
                                           "'mm': its result is also a graph output");
    uint8_t xv[64];
    for (int i = 0; i < 64; i++)
        xv[i] = (uint8_t)(i * 7);
    float got[32], ref[32], fgot[64], fref[64];
    dqg_buffer in = {.name = "x", .data = xv, .size = sizeof xv};
    dqg_buffer o[2] = {{.name = "y", .data = got, .size = sizeof got},
                       {.name = "features", .data = fgot, .size = sizeof fgot}};
    cr_assert_eq(dqg_execute(c, &in, 1, o, 2), DQG_OK, "%s", dqg_last_error());
    o[0].data = ref;
    o[1].data = fref;
    cr_assert_eq(dqg_reference_run(g, &in, 1, o, 2), DQG_OK);
    for (int i = 0; i < 32; i++)
        cr_assert_float_eq(got[i], ref[i], 1e-5f * 8, "[%d] %g vs %g", i, got[i], ref[i]);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(fgot[i], fref[i], "features[%d] %g vs %g", i, fgot[i], fref[i]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Q(Concat(DQ(x_1), ..., DQ(x_k))) with a scale and zero point per input
 * (as ONNX Runtime's quantizer writes Inception's and DenseNet's concats):
 * one int8 concat partition, bit-identical to the reference, along every
 * axis, u8 and s8 mixed, lengths around the 64-byte vector steps, and an
 * input whose parameters equal the output's (copied as it is). */
Test(qdq_patterns, concat_of_differently_quantized_inputs)
{
    test_rng = 17;
    for (int trial = 0; trial < 40; trial++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int k = 1 + (int)(test_rnd() % 5), axis = (int)(test_rnd() % 3);
        int64_t base[] = {1 + (int64_t)(test_rnd() % 2), 1 + (int64_t)(test_rnd() % 70),
                          1 + (int64_t)(test_rnd() % 9)};
        dqg_dtype yt = test_rnd() % 2 ? DQG_U8 : DQG_S8;
        float ys = 0.02f + 0.001f * (float)(test_rnd() % 30);
        int yz = yt == DQG_U8 ? (int)(test_rnd() % 256) : (int)(test_rnd() % 41) - 20;
        dqg_tensor_id in[5];
        for (int i = 0; i < k; i++) {
            int64_t d[3] = {base[0], base[1], base[2]};
            d[axis] = 1 + (int64_t)(test_rnd() % 90);
            char name[16];
            snprintf(name, sizeof name, "x%d", i);
            dqg_dtype t = i == 1 ? yt : test_rnd() % 2 ? DQG_U8 : DQG_S8;
            dqg_tensor_id x = dqg_input(g, name, t, 3, d);
            dqg_dequantize_linear_attrs a = {.opset = 13};
            if (i == 1) /* the output's own parameters: a copy */
                in[i] = dqg_dequantize_linear(g, NULL, x, test_scalar_f32(g, ys),
                                              test_scalar_8bit(g, yt, yz), &a);
            else
                in[i] = dq(g, x, t);
        }
        dqg_quantize_linear_attrs qa = {.opset = 13};
        dqg_tensor_id c = dqg_concat(g, "cat", k, in, axis);
        dqg_output(g,
                   dqg_quantize_linear(g, "q", c, test_scalar_f32(g, ys),
                                       test_scalar_8bit(g, yt, yz), &qa),
                   "y");
        check_kind(g, "concat", "int8 concat [", 1);
    }
}

/* Constants holding one value per index of one axis -- a BatchNormalization's
 * per-channel scale and shift, shaped [C, 1, 1], [1, C, 1, 1], or along
 * the last or a middle axis -- stay in the int8 element-wise partition,
 * bit-identical to the reference; a constant varying along two axes does
 * not. */
Test(qdq_patterns, per_axis_constants)
{
    test_rng = 55;
    for (int trial = 0; trial < 40; trial++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t d[] = {1 + (int64_t)(test_rnd() % 2), 2 + (int64_t)(test_rnd() % 40),
                       1 + (int64_t)(test_rnd() % 9), 2 + (int64_t)(test_rnd() % 20)};
        int axis = 1 + (int)(test_rnd() % 3);
        bool two_axes = trial % 8 == 7; /* [d1, 1, d3]: not one axis */
        int64_t cd[4] = {1, 1, 1, 1};
        int crank;
        if (two_axes) {
            crank = 3;
            cd[0] = d[1];
            cd[2] = d[3];
        } else if (test_rnd() % 2) { /* rank 4: [1, .., d[axis], .., 1] */
            crank = 4;
            cd[axis] = d[axis];
        } else { /* the trailing dims only: [C, 1, 1] for axis 1 */
            crank = 4 - axis;
            cd[0] = d[axis];
        }
        int64_t n = 1;
        for (int i = 0; i < crank; i++)
            n *= cd[i];
        float *v = malloc((size_t)n * 2 * sizeof *v);
        for (int64_t i = 0; i < 2 * n; i++)
            v[i] = 0.1f * (float)(test_rnd() % 40) - 2.0f;
        dqg_dtype xt = test_rnd() % 2 ? DQG_U8 : DQG_S8;
        dqg_tensor_id t = dq(g, dqg_input(g, "x", xt, 4, d), xt);
        t = dqg_mul(g, "scale", t, dqg_constant(g, NULL, DQG_F32, crank, cd, v, (size_t)n * 4));
        t = dqg_add(g, "shift", dqg_constant(g, NULL, DQG_F32, crank, cd, v + n, (size_t)n * 4), t);
        t = dqg_relu(g, NULL, t);
        dqg_output(g, quantize(g, t, test_rnd() % 2 ? DQG_U8 : DQG_S8), "y");
        free(v);
        check(g, two_axes ? "constants along two axes" : "per-axis constants", two_axes ? 0 : 1);
    }
}

/* A chain of 30 multiplications by scalars holds more values than the int8
 * element-wise kernel keeps: it is refused when built (before writing past
 * its tables) and the chain runs unfused, still bit-identical. */
Test(qdq_patterns, a_chain_longer_than_the_kernel_holds)
{
    test_rng = 66;
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d[] = {3, 50};
    dqg_tensor_id t = dq(g, dqg_input(g, "x", DQG_U8, 2, d), DQG_U8);
    for (int i = 0; i < 30; i++)
        t = dqg_mul(g, NULL, t, test_scalar_f32(g, i % 2 ? 1.03125f : 0.96875f));
    dqg_output(g, quantize(g, t, DQG_U8), "y");
    check(g, "30 multiplications", 0);
}

/* With AVX-512, a linear chain (each op takes the previous result and a
 * constant or the other input) runs with its values in registers; Add(x, x)
 * (one input read twice) takes the staged loop. Both stay bit-identical,
 * NaN and infinities included (ReLU and Clip keep a NaN, which quantizes to
 * 0, not to the zero point). */
Test(qdq_patterns, linear_chains_run_in_registers)
{
    test_rng = 77;
    for (int shape = 0; shape < 8; shape++) {
        /* Shapes 4..7: the same chains quantized to u8 (NaN goes to 0
         * there through the lower bound). */
        dqg_dtype yt = shape < 4 ? DQG_S8 : DQG_U8;
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t d[] = {2, 33, 5};
        dqg_tensor_id a = dq(g, dqg_input(g, "a", DQG_U8, 3, d), DQG_U8), t;
        if (shape % 4 == 1)
            t = dqg_add(g, NULL, a, a);
        else
            t = dqg_add(g, NULL, a, dq(g, dqg_input(g, "b", DQG_S8, 3, d), DQG_S8));
        /* shape 2: Inf * x is NaN where x is 0, +-Inf elsewhere; shape 3:
         * NaN everywhere. */
        float f = shape % 4 == 2 ? INFINITY : shape % 4 == 3 ? NAN : 0.75f;
        t = dqg_mul(g, NULL, t, test_scalar_f32(g, f));
        t = shape % 4 == 3 ? dqg_relu(g, NULL, t) : dqg_clip(g, NULL, t, -1.0f, 2.0f);
        dqg_output(g, quantize(g, t, yt), "y");
        finalize_ok(g);
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        const char *info = dqg_compiled_partition_info(c, 0);
        bool fast = shape % 4 != 1 && dqg_cpu_has(DQG_ISA_AVX512);
        cr_assert(strstr(info, "int8 element-wise [") &&
                      (strstr(info, ":in-registers") != NULL) == fast,
                  "shape %d: %s", shape, info);
        dqg_compiled_destroy(c);
        check(g, shape % 4 == 1 ? "Add(x, x)" : "residual", 1);
    }
}

/* Quark's dequantize takes an f32 zero point, which need not be an integer:
 * with 127.5, (x - 127.5) * s rounds to even after the quantize, which no
 * integer zero point reproduces. The int8 rewrites (element-wise chain,
 * concat, MaxPool on the int8 tensor) leave such a dequantize alone, and
 * every result stays the reference's. */
Test(qdq_patterns, a_float_zero_point_is_not_rounded)
{
    int64_t one = 1, d[] = {1, 3, 8, 8};
    const float zf = 127.5f;
    dqg_quantize_linear_attrs qa = {.opset = 13};
    for (int shape = 0; shape < 3; shape++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        const float s = 0.05f;
        dqg_tensor_id a = dqg_extended_dequantize_linear(
            g, "a", dqg_input(g, "x", DQG_U8, 4, d), test_scalar_f32(g, s),
            dqg_constant(g, "zf", DQG_F32, 0, &one, &zf, sizeof zf), 0);
        dqg_tensor_id b = shape < 2 ? dq(g, dqg_input(g, "y", DQG_U8, 4, d), DQG_U8) : DQG_NONE;
        dqg_tensor_id t;
        const char *what, *kind;
        if (shape == 0) {
            t = dqg_relu(g, NULL, dqg_add(g, NULL, a, b));
            what = "Add + ReLU";
            kind = "int8 element-wise [";
        } else if (shape == 1) {
            dqg_tensor_id in[] = {a, b};
            t = dqg_concat(g, "cat", 2, in, 1);
            what = "Concat";
            kind = "int8 concat [";
        } else {
            dqg_pool_attrs pa = {
                .algorithm = DQG_POOL_MAX, .spatial_rank = 2, .kernel = {2, 2}, .strides = {2, 2}};
            t = dqg_pool(g, "pool", a, &pa);
            what = "MaxPool";
            kind = "pool:u8";
        }
        dqg_output(g,
                   dqg_quantize_linear(g, "q", t, test_scalar_f32(g, s),
                                       test_scalar_8bit(g, DQG_U8, 128), &qa),
                   "z");
        check_kind(g, what, kind, 0);
    }
}

/* Nonlinear functions (HardSwish, GELU, Sigmoid, Tanh, SiLU written as
 * x * Sigmoid(x), twice) between an int8 Convolution or MatMul and a
 * QuantizeLinear stay in the int8 kernel: it runs them in real units and
 * divides by the quantize's scale after the last one (a scale folded into
 * the kernel's output scales would change what the function sees). One
 * partition writing u8 or s8, within one unit of the reference. */
static dqg_tensor_id nonlinear_chain(dqg_graph *g, dqg_tensor_id y, int f)
{
    switch (f) {
    case 0:
        return dqg_unary(g, NULL, DQG_UNARY_HARD_SWISH, y, 0.0f, 0.0f);
    case 1:
        return dqg_unary(g, NULL, DQG_UNARY_GELU_ERF, y, 0.0f, 0.0f);
    case 2:
        return dqg_unary(g, NULL, DQG_UNARY_SIGMOID, y, 0.0f, 0.0f);
    case 3:
        return dqg_unary(g, NULL, DQG_UNARY_TANH, y, 0.0f, 0.0f);
    default:
        for (int k = 0; k < 2; k++)
            y = dqg_mul(g, NULL, y, dqg_unary(g, NULL, DQG_UNARY_SIGMOID, y, 0.0f, 0.0f));
        return y;
    }
}

Test(qdq_patterns, nonlinear_functions_before_a_quantize_stay_in_the_int8_kernel)
{
    if (!test_int8_fusion())
        cr_skip_test(TEST_NO_INT8_REASON);
    test_rng = 77;
    for (int conv = 0; conv < 2; conv++)
        for (int f = 0; f < 5; f++)
            for (int s8 = 0; s8 < 2; s8++) {
                dqg_graph *g;
                cr_assert_eq(dqg_graph_create(&g), DQG_OK);
                /* Weights per output channel: axis 0 of OIHW, 1 of [K, N]. */
                dqg_dequantize_linear_attrs wa = {
                    .opset = 13, .has_axis = true, .axis = conv ? 0 : 1};
                int64_t xd[4] = {1, 6, 5, 7}, wd[4] = {9, 6, 3, 3}, md[2] = {5, 24},
                        mw[2] = {24, 9}, nine = 9;
                float ws[9];
                for (int i = 0; i < 9; i++)
                    ws[i] = 0.004f + 0.001f * (float)i;
                int8_t w[9 * 6 * 9];
                for (int i = 0; i < 9 * 6 * 9; i++)
                    w[i] = (int8_t)(test_rnd() % 201 - 100);
                dqg_tensor_id x = dq(g, dqg_input(g, "x", DQG_U8, conv ? 4 : 2, conv ? xd : md),
                                     DQG_U8),
                              y;
                if (conv) {
                    dqg_tensor_id wf = dqg_dequantize_linear(
                        g, NULL, dqg_constant(g, NULL, DQG_S8, 4, wd, w, sizeof w),
                        test_const_f32(g, 1, &nine, ws), DQG_NONE, &wa);
                    dqg_conv_attrs ca = {
                        .spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}};
                    y = dqg_convolution(g, "core", x, wf, DQG_NONE, &ca);
                } else {
                    dqg_tensor_id wf = dqg_dequantize_linear(
                        g, NULL, dqg_constant(g, NULL, DQG_S8, 2, mw, w, 24 * 9),
                        test_const_f32(g, 1, &nine, ws), DQG_NONE, &wa);
                    y = dqg_matmul(g, "core", x, wf, NULL);
                }
                y = nonlinear_chain(g, y, f);
                dqg_output(g, quantize(g, y, s8 ? DQG_S8 : DQG_U8), "y");
                finalize_ok(g);
                /* check_kind asserts bit-identity; one unit is the contract
                 * here (the kernel multiplies by 1 / scale), so compare
                 * by hand. */
                dqg_tensor_id xi = dqg_graph_input_id(g, 0), yi = dqg_graph_output_id(g, 0);
                size_t xb = dqg_tensor_byte_size(g, xi), yb = dqg_tensor_byte_size(g, yi);
                uint8_t *xv = malloc(xb), *ref = malloc(yb), *got = malloc(yb);
                for (size_t i = 0; i < xb; i++)
                    xv[i] = (uint8_t)test_rnd();
                dqg_buffer in = {.id = xi, .data = xv, .size = xb},
                           o = {.id = yi, .data = ref, .size = yb};
                cr_assert_eq(dqg_reference_run(g, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
                dqg_compiled *c = NULL;
                cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
                cr_assert_eq(dqg_compiled_partition_count(c), 1, "conv %d f %d: %zu partitions",
                             conv, f, dqg_compiled_partition_count(c));
                cr_assert(strstr(dqg_compiled_partition_info(c, 0),
                                 conv ? "int8 conv [" : "int8 matmul ["),
                          "%s", dqg_compiled_partition_info(c, 0));
                o.data = got;
                cr_assert_eq(dqg_execute(c, &in, 1, &o, 1), DQG_OK, "%s", dqg_last_error());
                for (size_t i = 0; i < yb; i++) {
                    int gv = s8 ? (int8_t)got[i] : got[i], rv = s8 ? (int8_t)ref[i] : ref[i];
                    cr_assert(abs(gv - rv) <= 1, "conv %d f %d s8 %d [%zu]: %d, reference %d", conv,
                              f, s8, i, gv, rv);
                }
                dqg_compiled_destroy(c);
                free(xv);
                free(ref);
                free(got);
                dqg_graph_destroy(g);
            }
}

/* DQ -> unary function(s) -> Q of one int8 input and scalar constants:
 * HardSwish (ONNX Runtime's quantized MobileNetV3 between its
 * convolutions), SiLU as DQ(x) * Sigmoid(DQ(x)) (YOLO), an Add then GELU,
 * Tanh then ReLU, u8 and s8. One int8 element-wise partition whose kernel
 * is a table of the input's 256 codes, bit-identical to the reference. A
 * unary function over two int8 inputs has no table and stays float. */
Test(qdq_patterns, unary_functions_of_one_int8_input_become_a_table)
{
    test_rng = 91;
    for (int f = 0; f < 5; f++)
        for (int s8 = 0; s8 < 2; s8++) {
            dqg_dtype t = s8 ? DQG_S8 : DQG_U8;
            dqg_graph *g;
            cr_assert_eq(dqg_graph_create(&g), DQG_OK);
            int64_t d[] = {2, 3, 77};
            dqg_tensor_id x = dq(g, dqg_input(g, "x", t, 3, d), t), y;
            if (f == 0)
                y = dqg_unary(g, NULL, DQG_UNARY_HARD_SWISH, x, 0.0f, 0.0f);
            else if (f == 1)
                y = dqg_mul(g, NULL, x, dqg_unary(g, NULL, DQG_UNARY_SIGMOID, x, 0.0f, 0.0f));
            else if (f == 2)
                y = dqg_unary(g, NULL, DQG_UNARY_GELU_ERF,
                              dqg_add(g, NULL, x, test_scalar_f32(g, 0.25f)), 0.0f, 0.0f);
            else if (f == 3)
                y = dqg_relu(g, NULL, dqg_unary(g, NULL, DQG_UNARY_TANH, x, 0.0f, 0.0f));
            else /* two inputs */
                y = dqg_unary(g, NULL, DQG_UNARY_SIGMOID,
                              dqg_add(g, NULL, x, dq(g, dqg_input(g, "x2", t, 3, d), t)), 0.0f,
                              0.0f);
            dqg_output(g, quantize(g, y, t), "y");
            if (f < 4) {
                check_kind(g, "table", ":int8-eltwise:table:", 1);
                continue;
            }
            no_int8_eltwise(g); /* the float path */
        }
}
