/* Layout choice: activations between row-major (NCHW) convolutions are
 * stored channels-last, so only the convolutions at the graph's edges
 * reorder; element-wise ops, quantize/dequantize and residual adds in
 * between follow the layout; results match the reference interpreter. */
#include <math.h>
#include <stdlib.h>

#include "test_common.h"

static dqg_tensor_id qconv(dqg_graph *g, const char *name, dqg_tensor_id x, int64_t cin,
                           int64_t cout, bool relu, uint32_t seed)
{
    int64_t wd[] = {cout, cin, 3, 3}, one = 1;
    int8_t *w = malloc((size_t)(cout * cin * 9));
    for (int64_t i = 0; i < cout * cin * 9; i++) {
        seed = seed * 1103515245u + 12345u;
        w[i] = (int8_t)((int)(seed >> 24) - 128);
    }
    float ws = 0.002f, s = 0.05f, b[64];
    for (int i = 0; i < cout; i++)
        b[i] = 0.01f * (float)(i % 7) - 0.03f;
    uint8_t z = 128;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id sc = test_const_f32(g, 0, &one, &s),
                  zp = dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1);
    dqg_tensor_id xf = dqg_dequantize_linear(g, NULL, x, sc, zp, &da);
    dqg_tensor_id wf = dqg_dequantize_linear(
        g, NULL, dqg_constant(g, NULL, DQG_S8, 4, wd, w, (size_t)(cout * cin * 9)),
        test_const_f32(g, 0, &one, &ws), DQG_NONE, &da);
    dqg_conv_attrs a = {.spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    dqg_tensor_id y = dqg_convolution(g, name, xf, wf, test_const_f32(g, 1, &cout, b), &a);
    if (relu)
        y = dqg_relu(g, NULL, y);
    free(w);
    return dqg_quantize_linear(g, NULL, y, sc, zp, &qa);
}

/* x u8 [1, 8, 10, 10] -> conv -> conv -> Add(residual) -> conv -> DQ -> y. */
static dqg_graph *residual_net(void)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 8, 10, 10}, one = 1;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
    dqg_tensor_id a = qconv(g, "c1", x, 8, 16, true, 1);
    dqg_tensor_id b = qconv(g, "c2", a, 16, 16, true, 2);
    float s = 0.05f;
    uint8_t z = 128;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id sc = test_const_f32(g, 0, &one, &s),
                  zp = dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1);
    dqg_tensor_id sum = dqg_add(g, "residual", dqg_dequantize_linear(g, NULL, a, sc, zp, &da),
                                dqg_dequantize_linear(g, NULL, b, sc, zp, &da));
    dqg_tensor_id q = dqg_quantize_linear(g, NULL, sum, sc, zp, &qa);
    dqg_tensor_id c = qconv(g, "c3", q, 16, 8, false, 3);
    dqg_output(g, dqg_dequantize_linear(g, "out_dq", c, sc, zp, &da), "y");
    finalize_ok(g);
    return g;
}

static void run(const dqg_graph *g, const dqg_compile_options *o, float *y, char *log, size_t n)
{
    uint8_t x[800];
    for (int i = 0; i < 800; i++)
        x[i] = (uint8_t)(i * 37 + 11);
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = y, .size = 800 * sizeof(float)};
    if (!o) {
        cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        return;
    }
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, o, &c), DQG_OK, "%s", dqg_last_error());
    log[0] = 0;
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++) {
        strncat(log, dqg_compiled_explain(c, i), n - strlen(log) - 2);
        strncat(log, "\n", n - strlen(log) - 1);
    }
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled_destroy(c);
}

static int count(const char *log, const char *what)
{
    int n = 0;
    for (const char *p = log; (p = strstr(p, what)); p++)
        n++;
    return n;
}

Test(layout, convolutions_between_convolutions_do_not_reorder)
{
    dqg_graph *g = residual_net();
    float ref[800], fused[800], unfused[800];
    static char log[16384];
    run(g, NULL, ref, NULL, 0);
    dqg_compile_options o = dqg_compile_options_default();
    run(g, &o, fused, log, sizeof log);
    cr_assert(strstr(log, "stored channels-last"), "%s", log);
    /* Only the first convolution (row-major input) and the last (row-major
     * output) reorder, int8 (with VNNI or AMX) or f32 (without). */
    cr_assert(strstr(log, "Convolution 'c1'") && strstr(log, "reorders its source"), "%s", log);
    cr_assert_eq(count(log, "reorders its"), 2, "%s", log);
    if (test_int8_fusion()) {
        cr_assert_eq(count(log, "-> int8 convolution"), 3, "%s", log);
        cr_assert(strstr(log, "(100.0%) run in int8 kernels"), "%s", log);
    } else {
        cr_assert(strstr(log, TEST_NO_INT8_REASON), "%s", log);
    }
    cr_assert(!strstr(log, "'c2' -> ") || !strstr(strstr(log, "'c2' -> "), "c2' -> onednn"), "%s",
              log);
    o.disable_fusion = true;
    run(g, &o, unfused, log, sizeof log);
    /* Quantized activations: the dequantized output is within one unit
     * (scale 0.05) of the reference. */
    for (int i = 0; i < 800; i++) {
        cr_assert(fabsf(fused[i] - ref[i]) <= 0.05f + 1e-6f, "fused [%d] %g vs %g", i, fused[i],
                  ref[i]);
        cr_assert(fabsf(unfused[i] - ref[i]) <= 0.05f + 1e-6f, "unfused [%d] %g vs %g", i,
                  unfused[i], ref[i]);
    }
    dqg_graph_destroy(g);
}

/* The reference backend keeps every tensor row-major. */
Test(layout, reference_backend_keeps_row_major)
{
    dqg_graph *g = residual_net();
    float ref[800], out[800];
    static char log[16384];
    run(g, NULL, ref, NULL, 0);
    dqg_compile_options o = dqg_compile_options_default();
    o.backend = DQG_BACKEND_REFERENCE;
    run(g, &o, out, log, sizeof log);
    cr_assert(!strstr(log, "channels-last"), "%s", log);
    cr_assert_arr_eq(out, ref, sizeof ref);
    dqg_graph_destroy(g);
}

/* Two convolutions joined by a Concat along the channels (a fire module, an
 * inception block) feed a third: the concat runs channels-last, on its
 * dequantized inputs and quantized result as ONNX Runtime's quantizer
 * writes them, and only the edge convolutions reorder. */
Test(layout, channel_concat_between_convolutions_does_not_reorder)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 8, 10, 10}, one = 1;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
    dqg_tensor_id a = qconv(g, "c1", x, 8, 8, true, 1);
    dqg_tensor_id b = qconv(g, "c2", a, 8, 4, true, 2);
    dqg_tensor_id c = qconv(g, "c3", a, 8, 4, true, 3);
    float s = 0.05f;
    uint8_t z = 128;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id sc = test_const_f32(g, 0, &one, &s),
                  zp = dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1);
    dqg_tensor_id parts[] = {dqg_dequantize_linear(g, NULL, b, sc, zp, &da),
                             dqg_dequantize_linear(g, NULL, c, sc, zp, &da)};
    dqg_tensor_id cat =
        dqg_quantize_linear(g, NULL, dqg_concat(g, "cat", 2, parts, 1), sc, zp, &qa);
    dqg_tensor_id d = qconv(g, "c4", cat, 8, 8, false, 4);
    dqg_output(g, dqg_dequantize_linear(g, "out_dq", d, sc, zp, &da), "y");
    finalize_ok(g);
    float ref[800], fused[800];
    static char log[16384];
    run(g, NULL, ref, NULL, 0);
    dqg_compile_options o = dqg_compile_options_default();
    run(g, &o, fused, log, sizeof log);
    cr_assert(strstr(log, "stored channels-last"), "%s", log);
    cr_assert_eq(count(log, "reorders its"), 2, "%s", log);
    for (int i = 0; i < 800; i++)
        cr_assert(fabsf(fused[i] - ref[i]) <= 0.05f + 1e-6f, "fused [%d] %g vs %g", i, fused[i],
                  ref[i]);
    dqg_graph_destroy(g);
}

/* DenseNet's pre-activation between two convolutions: DQ -> per-channel
 * Mul and Add (a BatchNormalization, constants shaped [C, 1, 1]) -> ReLU ->
 * Q runs as one int8 element-wise partition on the channels-last tensor,
 * each element taking its own channel's constants; within one unit of the
 * reference (a constant of the wrong channel moves values by many). */
Test(layout, per_channel_batchnorm_between_convolutions)
{
    enum { C = 16 };
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, 8, 10, 10}, cd[] = {C, 1, 1}, one = 1;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
    dqg_tensor_id a = qconv(g, "c1", x, 8, C, false, 1);
    float s = 0.05f, scale[C], shift[C];
    for (int i = 0; i < C; i++) {
        scale[i] = 0.25f + 0.125f * (float)i;
        shift[i] = 0.4f * (float)(i % 5) - 0.8f;
    }
    uint8_t z = 128;
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id sc = test_const_f32(g, 0, &one, &s),
                  zp = dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1);
    dqg_tensor_id t = dqg_dequantize_linear(g, NULL, a, sc, zp, &da);
    t = dqg_mul(g, "bn_scale", t, test_const_f32(g, 3, cd, scale));
    t = dqg_add(g, "bn_shift", t, test_const_f32(g, 3, cd, shift));
    t = dqg_quantize_linear(g, NULL, dqg_relu(g, "bn_relu", t), sc, zp, &qa);
    dqg_tensor_id c = qconv(g, "c2", t, C, 8, false, 2);
    dqg_output(g, dqg_dequantize_linear(g, "out_dq", c, sc, zp, &da), "y");
    finalize_ok(g);
    float ref[800], fused[800];
    static char log[16384];
    run(g, NULL, ref, NULL, 0);
    dqg_compile_options o = dqg_compile_options_default();
    run(g, &o, fused, log, sizeof log);
    cr_assert(strstr(log, "stored channels-last"), "%s", log);
    cr_assert_eq(count(log, "reorders its"), 2, "%s", log);
    dqg_compiled *cc = NULL;
    cr_assert_eq(dqg_compile(g, &o, &cc), DQG_OK, "%s", dqg_last_error());
    int per_axis = 0;
    for (size_t p = 0; p < dqg_compiled_partition_count(cc); p++)
        per_axis += strstr(dqg_compiled_partition_info(cc, p), "per-axis-constants") != NULL;
    cr_assert_eq(per_axis, 1, "per-axis int8 element-wise partitions: %d", per_axis);
    dqg_compiled_destroy(cc);
    for (int i = 0; i < 800; i++)
        cr_assert(fabsf(fused[i] - ref[i]) <= 0.05f + 1e-6f, "fused [%d] %g vs %g", i, fused[i],
                  ref[i]);
    dqg_graph_destroy(g);
}

/* A convolution whose bias is computed when the graph compiles (a folded
 * Mul of two constants), followed by a ReLU and another convolution (so
 * its output is stored channels-last): with the ReLU as a post-op the bias
 * joined the chain as a run-time operand and the result was wrong; it
 * stays the convolution's own bias now. Exact against the reference up to
 * f32 rounding. */
Test(layout, conv_with_a_folded_bias_and_post_ops)
{
    enum { C = 6, O = 5, H = 7 };
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t xd[] = {1, C, H, H}, wd[] = {O, C, 3, 3}, w2d[] = {O, O, 1, 1}, bd[] = {O};
    float w[O * C * 9], w2[O * O], b1[O], b2[O];
    for (int i = 0; i < O * C * 9; i++)
        w[i] = sinf((float)i) * 0.3f;
    for (int i = 0; i < O * O; i++)
        w2[i] = cosf((float)i) * 0.5f;
    for (int i = 0; i < O; i++) {
        b1[i] = (float)(i + 1) * 0.25f;
        b2[i] = (float)(O - i) * 0.5f;
    }
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd);
    dqg_tensor_id bias = dqg_mul(g, "bias", dqg_constant(g, "b1", DQG_F32, 1, bd, b1, sizeof b1),
                                 dqg_constant(g, "b2", DQG_F32, 1, bd, b2, sizeof b2));
    dqg_conv_attrs a = {.spatial_rank = 2, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    dqg_tensor_id y =
        dqg_convolution(g, "c1", x, dqg_constant(g, "w", DQG_F32, 4, wd, w, sizeof w), bias, &a);
    y = dqg_relu(g, "r", y);
    dqg_conv_attrs a2 = {.spatial_rank = 2};
    y = dqg_convolution(g, "c2", y, dqg_constant(g, "w2", DQG_F32, 4, w2d, w2, sizeof w2), DQG_NONE,
                        &a2);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
    cr_assert_eq(dqg_graph_finalize(g), DQG_OK, "%s", dqg_last_error());
    float xv[C * H * H], ref[O * H * H], got[O * H * H];
    for (int i = 0; i < C * H * H; i++)
        xv[i] = cosf((float)i * 0.7f);
    dqg_buffer in = {.name = "x", .data = xv, .size = sizeof xv};
    dqg_buffer out = {.name = "y", .data = ref, .size = sizeof ref};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    out.data = got;
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    double mx = 0;
    for (int i = 0; i < O * H * H; i++)
        mx = fmax(mx, fabs(ref[i]));
    for (int i = 0; i < O * H * H; i++)
        cr_assert(fabs((double)got[i] - ref[i]) <= 1e-5 * mx, "y[%d]: %g, reference %g", i, got[i],
                  ref[i]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* An f32 image input quantized before the first convolution: the quantize
 * writes its u8 result channels-last itself (3 or 4 channels; its impl
 * says to-channels-last), so no convolution reorders its source, only the
 * last one its result; 2 images of 9 x 11 pixels (a block of 64 and a
 * tail of 35, 16 at a time and one by one), ties, NaN and values beyond
 * the range. Five channels keep the row-major quantize and the first
 * convolution's reorder. Within one unit (0.05) of the reference. */
Test(layout, an_image_input_is_quantized_into_channels_last)
{
    for (int64_t C = 3; C <= 5; C++) {
        dqg_graph *g;
        cr_assert_eq(dqg_graph_create(&g), DQG_OK);
        int64_t xd[] = {2, C, 9, 11}, one = 1, n = 2 * C * 99;
        float s = 0.05f;
        uint8_t z = 128;
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 4, xd);
        dqg_quantize_linear_attrs qa = {.opset = 13};
        dqg_tensor_id q = dqg_quantize_linear(g, "quantize_x", x, test_const_f32(g, 0, &one, &s),
                                              dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1), &qa);
        dqg_tensor_id c = qconv(g, "c2", qconv(g, "c1", q, C, 16, true, 4), 16, 8, false, 5);
        dqg_dequantize_linear_attrs da = {.opset = 13};
        dqg_output(g,
                   dqg_dequantize_linear(g, "out_dq", c, test_const_f32(g, 0, &one, &s),
                                         dqg_constant(g, NULL, DQG_U8, 0, &one, &z, 1), &da),
                   "y");
        finalize_ok(g);
        float *xv = malloc((size_t)n * sizeof *xv), ref[2 * 8 * 99], got[2 * 8 * 99];
        for (int64_t i = 0; i < n; i++)
            xv[i] = i % 17 == 0   ? NAN
                    : i % 13 == 0 ? (float)(i % 5) * 20.0f - 40.0f
                    : i % 7 == 0  ? 0.05f * ((float)(i % 9) + 0.5f)
                                  : sinf((float)i) * 3.0f;
        dqg_buffer in = {.name = "x", .data = xv, .size = (size_t)n * sizeof *xv};
        dqg_buffer out = {.name = "y", .data = ref, .size = sizeof ref};
        cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        dqg_compiled *cc = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &cc), DQG_OK, "%s", dqg_last_error());
        static char log[16384];
        log[0] = 0;
        for (size_t i = 0; i < dqg_compiled_explain_count(cc); i++) {
            strncat(log, dqg_compiled_explain(cc, i), sizeof log - strlen(log) - 2);
            strncat(log, "\n", sizeof log - strlen(log) - 1);
        }
        bool to_cl = false;
        for (size_t i = 0; i < dqg_compiled_partition_count(cc); i++)
            to_cl |= strstr(dqg_compiled_partition_info(cc, i), "to-channels-last") != NULL;
        cr_assert_eq(to_cl, C <= 4, "C %lld", (long long)C);
        cr_assert_eq(count(log, "reorders its"), C <= 4 ? 1 : 2, "C %lld:\n%s", (long long)C, log);
        out.data = got;
        cr_assert_eq(dqg_execute(cc, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        for (int i = 0; i < 2 * 8 * 99; i++)
            cr_assert(fabsf(got[i] - ref[i]) <= 0.05f + 1e-6f, "C %lld [%d] %g vs %g", (long long)C,
                      i, got[i], ref[i]);
        dqg_compiled_destroy(cc);
        dqg_graph_destroy(g);
        free(xv);
    }
}
