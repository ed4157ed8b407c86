/* The dequantize and quantize front doors on the reference interpreter:
 * the specification's worked examples, every dialect and data type against
 * values computed from the definition, and the quantizers' rounding. */
#include <math.h>

#include "test_common.h"

static dqg_graph *G(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

static dqg_tensor_id scalar_f32(dqg_graph *g, float v)
{
    int64_t one = 1;
    return dqg_constant(g, NULL, DQG_F32, 0, &one, &v, sizeof v);
}

/* Runs a one-input graph whose output y is f32 and compares exactly. */
static void expect_f32(dqg_graph *g, dqg_tensor_id x, const void *xd, dqg_tensor_id y,
                       const float *want, int n)
{
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    float out[128];
    cr_assert_eq(dqg_tensor_element_count(g, y), n);
    dqg_status st =
        run_ref_1(g, x, (void *)xd, dqg_tensor_byte_size(g, x), y, out, (size_t)n * sizeof(float));
    cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < n; i++) {
        if (isnan(want[i]))
            cr_assert(isnan(out[i]), "element %d: got %g, want NaN", i, out[i]);
        else
            cr_assert(out[i] == want[i], "element %d: got %.9g, want %.9g", i, out[i], want[i]);
    }
    dqg_graph_destroy(g);
}

Test(dequantize, onnx_worked_example_per_tensor)
{
    /* test_dequantizelinear */
    dqg_graph *g = G();
    int64_t d = 4, one = 1;
    uint8_t xv[] = {0, 3, 128, 255}, zp = 128;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 1, &d);
    dqg_tensor_id z = dqg_constant(g, "zp", DQG_U8, 0, &one, &zp, 1);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    float want[] = {-256, -250, 0, 254};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, scalar_f32(g, 2), z, &a), want, 4);
}

Test(dequantize, onnx_worked_example_axis)
{
    /* test_dequantizelinear_axis: x [1,3,3,2], per-axis along axis 1 */
    dqg_graph *g = G();
    int64_t xd[] = {1, 3, 3, 2}, three = 3;
    uint8_t xv[] = {3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102};
    float sc[] = {2, 4, 5};
    uint8_t zp[] = {84, 24, 196};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, xd);
    dqg_tensor_id s = dqg_constant(g, "s", DQG_F32, 1, &three, sc, sizeof sc);
    dqg_tensor_id z = dqg_constant(g, "zp", DQG_U8, 1, &three, zp, 3);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    float want[18];
    for (int i = 0; i < 18; i++)
        want[i] = ((float)xv[i] - (float)zp[i / 6]) * sc[i / 6];
    /* spot values from the specification's formula */
    cr_assert_eq(want[0], -162);
    cr_assert_eq(want[17], -470);
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, s, z, &a), want, 18);
}

Test(dequantize, negative_axis_and_s8)
{
    dqg_graph *g = G();
    int64_t xd[] = {2, 3}, three = 3;
    int8_t xv[] = {-128, 0, 127, 5, -5, 1};
    float sc[] = {0.5f, 0.25f, 2};
    int8_t zp[] = {-1, 0, 1};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S8, 2, xd);
    dqg_tensor_id s = dqg_constant(g, "s", DQG_F32, 1, &three, sc, sizeof sc);
    dqg_tensor_id z = dqg_constant(g, "zp", DQG_S8, 1, &three, zp, 3);
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = true, .axis = -1};
    float want[] = {-63.5f, 0, 252, 3, -1.25f, 0};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, s, z, &a), want, 6);
}

Test(dequantize, blocked_s4_odd_count)
{
    /* x s4 [5, 1], scale [2, 1] along axis 0 with block 3 (range [3, 4]) */
    dqg_graph *g = G();
    int64_t xd[] = {5, 1}, sd[] = {2, 1};
    /* values 1, -2, 7, -8, 3 -> nibbles 1, E, 7, 8, 3 */
    uint8_t xv[] = {0xE1, 0x87, 0x03};
    float sc[] = {0.5f, 3};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S4, 2, xd);
    dqg_tensor_id s = dqg_constant(g, "s", DQG_F32, 2, sd, sc, sizeof sc);
    dqg_dequantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = 0, .block_size = 3};
    float want[] = {0.5f, -1, 3.5f, -24, 9};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, s, DQG_NONE, &a), want, 5);
}

Test(dequantize, blocked_u4_with_zero_point)
{
    dqg_graph *g = G();
    int64_t xd[] = {1, 4}, sd[] = {1, 2};
    uint8_t xv[] = {0x20, 0xF8}; /* 0, 2, 8, 15 */
    float sc[] = {1, 2};
    uint8_t zp[] = {0x81}; /* 1, 8 */
    dqg_tensor_id x = dqg_input(g, "x", DQG_U4, 2, xd);
    dqg_tensor_id s = dqg_constant(g, "s", DQG_F32, 2, sd, sc, sizeof sc);
    dqg_tensor_id z = dqg_constant(g, "z", DQG_U4, 2, sd, zp, 1);
    dqg_dequantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = 1, .block_size = 2};
    float want[] = {-1, 1, 0, 14};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, s, z, &a), want, 4);
}

Test(dequantize, float8_inputs)
{
    /* One code per format, decoded from the format definition. */
    struct {
        dqg_dtype t;
        uint8_t code;
        float value;
    } cases[] = {
        {DQG_F8E4M3FN, 0x38, 1.0f},   /* 0.0111.000 = 2^0 */
        {DQG_F8E4M3FN, 0x7E, 448.0f}, /* max */
        {DQG_F8E4M3FN, 0x7F, NAN},    /* S.1111.111 */
        {DQG_F8E4M3FNUZ, 0x40, 1.0f}, /* bias 8 */
        {DQG_F8E4M3FNUZ, 0x80, NAN},  /* the only NaN */
        {DQG_F8E5M2, 0x3C, 1.0f},     /* bias 15 */
        {DQG_F8E5M2, 0x7C, INFINITY}, /* IEEE-like infinity */
        {DQG_F8E5M2FNUZ, 0x40, 1.0f}, /* bias 16 */
        {DQG_F8E5M2FNUZ, 0x01, 0x1p-17f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dqg_graph *g = G();
        int64_t d = 1;
        dqg_tensor_id x = dqg_input(g, "x", cases[i].t, 1, &d);
        dqg_dequantize_linear_attrs a = {.opset = 19};
        float want =
            isinf(cases[i].value) || isnan(cases[i].value) ? cases[i].value : cases[i].value * 2.0f;
        expect_f32(g, x, &cases[i].code,
                   dqg_dequantize_linear(g, "dq", x, scalar_f32(g, 2), DQG_NONE, &a), &want, 1);
    }
}

Test(dequantize, f4e2m1_opset23)
{
    dqg_graph *g = G();
    int64_t d = 4;
    uint8_t xv[] = {0x31, 0xF7}; /* 0.5, 1.5, 6, -6 */
    dqg_tensor_id x = dqg_input(g, "x", DQG_F4E2M1, 1, &d);
    dqg_dequantize_linear_attrs a = {.opset = 23};
    float want[] = {0.5f, 1.5f, 6, -6};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, scalar_f32(g, 1), DQG_NONE, &a), want,
               4);
}

Test(dequantize, u16_to_f16_output_dtype)
{
    /* opset 23: f32 scale, f16 output; 65535 * 1 = 65535 rounds to 65536
     * in f16 (beyond 65504 -> inf? 65535 rounds to nearest even 65536 = inf). */
    dqg_graph *g = G();
    int64_t d = 3;
    uint16_t xv[] = {1, 2049, 65535};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U16, 1, &d);
    dqg_dequantize_linear_attrs a = {.opset = 23, .output_dtype = DQG_F16};
    dqg_tensor_id y = dqg_dequantize_linear(g, "dq", x, scalar_f32(g, 1), DQG_NONE, &a);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F16);
    dqg_output(g, y, "y");
    finalize_ok(g);
    uint16_t out[3];
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, out, sizeof out), DQG_OK);
    cr_assert_eq(out[0], 0x3C00); /* 1.0 */
    cr_assert_eq(out[1], 0x6800); /* 2049 -> 2048 (tie to even) */
    cr_assert_eq(out[2], 0x7C00); /* 65535 -> +inf */
    dqg_graph_destroy(g);
}

Test(dequantize, bf16_scale_sets_output_type)
{
    dqg_graph *g = G();
    int64_t d = 2, one = 1;
    uint8_t xv[] = {3, 4};
    uint16_t s = 0x3F00; /* bf16 0.5 */
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 1, &d);
    dqg_tensor_id sc = dqg_constant(g, "s", DQG_BF16, 0, &one, &s, 2);
    dqg_dequantize_linear_attrs a = {.opset = 19};
    dqg_tensor_id y = dqg_dequantize_linear(g, "dq", x, sc, DQG_NONE, &a);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_BF16);
    dqg_output(g, y, "y");
    finalize_ok(g);
    uint16_t out[2];
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, out, sizeof out), DQG_OK);
    cr_assert_eq(out[0], 0x3FC0); /* 1.5 */
    cr_assert_eq(out[1], 0x4000); /* 2.0 */
    dqg_graph_destroy(g);
}

Test(dequantize, int32_exact_difference)
{
    /* 2^31-1 with scale 1: one rounding to f32 gives 2^31. */
    dqg_graph *g = G();
    int64_t d = 2;
    int32_t xv[] = {2147483647, -16777217};
    dqg_tensor_id x = dqg_input(g, "x", DQG_S32, 1, &d);
    dqg_dequantize_linear_attrs a = {.opset = 10};
    float want[] = {2147483648.0f, -16777216.0f};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, scalar_f32(g, 1), DQG_NONE, &a), want,
               2);
}

Test(dequantize, zero_and_nan_scale)
{
    dqg_graph *g = G();
    int64_t d = 2;
    uint8_t xv[] = {7, 0};
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 1, &d);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    float want0[] = {0, 0};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, scalar_f32(g, 0), DQG_NONE, &a), want0,
               2);
    g = G();
    x = dqg_input(g, "x", DQG_U8, 1, &d);
    float wantn[] = {NAN, NAN};
    expect_f32(g, x, xv, dqg_dequantize_linear(g, "dq", x, scalar_f32(g, NAN), DQG_NONE, &a), wantn,
               2);
}

Test(dequantize, quark_wide_and_float_inputs)
{
    int64_t d = 2, one = 1;
    /* s16 with an s16 zero point */
    dqg_graph *g = G();
    int16_t xs[] = {-32768, 32767}, zs = -2;
    dqg_tensor_id x = dqg_input(g, "x", DQG_S16, 1, &d);
    dqg_tensor_id z = dqg_constant(g, "z", DQG_S16, 0, &one, &zs, 2);
    float w1[] = {-32766 * 0.5f, 32769 * 0.5f};
    expect_f32(g, x, xs, dqg_extended_dequantize_linear(g, "q", x, scalar_f32(g, 0.5f), z, 1), w1,
               2);
    /* u32 with an f32 zero point (exact in double, one rounding) */
    g = G();
    uint32_t xu[] = {4294967295u, 3};
    float zf = 1.5f;
    x = dqg_input(g, "x", DQG_U32, 1, &d);
    z = dqg_constant(g, "z", DQG_F32, 0, &one, &zf, 4);
    float w2[] = {4294967296.0f, 1.5f};
    expect_f32(g, x, xu, dqg_extended_dequantize_linear(g, "q", x, scalar_f32(g, 1), z, 1), w2, 2);
    /* f16 input */
    g = G();
    uint16_t xh[] = {0x3C00, 0xC000}; /* 1, -2 */
    x = dqg_input(g, "x", DQG_F16, 1, &d);
    float w3[] = {3, -6};
    expect_f32(g, x, xh, dqg_extended_dequantize_linear(g, "q", x, scalar_f32(g, 3), DQG_NONE, 1),
               w3, 2);
    /* bf16 input, per-axis */
    g = G();
    int64_t xd[] = {2, 2}, two = 2;
    uint16_t xb[] = {0x3F80, 0x4000, 0x4040, 0x4080}; /* 1, 2, 3, 4 */
    float sc[] = {10, 100};
    x = dqg_input(g, "x", DQG_BF16, 2, xd);
    dqg_tensor_id s = dqg_constant(g, "s", DQG_F32, 1, &two, sc, sizeof sc);
    float w4[] = {10, 200, 30, 400};
    expect_f32(g, x, xb, dqg_extended_dequantize_linear(g, "q", x, s, DQG_NONE, -1), w4, 4);
}

Test(dequantize, directml_elementwise_s16_to_f16)
{
    dqg_graph *g = G();
    int64_t d[] = {2, 2};
    int16_t xv[] = {10, -10, 300, 0}, zv[] = {0, 2, -100, 0};
    uint16_t sv[] = {0x3800, 0x3C00, 0x4000, 0x0000}; /* 0.5, 1, 2, 0 */
    dqg_tensor_id x = dqg_input(g, "x", DQG_S16, 2, d);
    dqg_tensor_id s = dqg_constant(g, "s", DQG_F16, 2, d, sv, sizeof sv);
    dqg_tensor_id z = dqg_constant(g, "z", DQG_S16, 2, d, zv, sizeof zv);
    dqg_tensor_id y = dqg_dml_dequantize(g, "dml", x, s, z);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_F16);
    dqg_output(g, y, "y");
    finalize_ok(g);
    uint16_t out[4];
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, out, sizeof out), DQG_OK);
    cr_assert_eq(out[0], 0x4500); /* 5 */
    cr_assert_eq(out[1], 0xCA00); /* -12 = -1.5 * 2^3 */
    cr_assert_eq(out[2], 0x6240); /* 800 = 1.5625 * 2^9 */
    cr_assert_eq(out[3], 0x0000); /* zero scale: (0 - 0) * 0 */
    dqg_graph_destroy(g);
}

Test(dequantize, onednn_dynamic_runtime_scales)
{
    dqg_graph *g = G();
    int64_t xd[] = {2, 3}, three = 3;
    dqg_tensor_id x = dqg_input(g, "x", DQG_S8, 2, xd);
    dqg_tensor_id s = dqg_input(g, "scales", DQG_F32, 1, &three);
    dqg_tensor_id z = dqg_input(g, "zps", DQG_S32, 1, &three);
    dqg_tensor_id y = dqg_dynamic_dequantize(g, "ddq", x, s, z, "per_channel", 1);
    dqg_output(g, y, "y");
    finalize_ok(g);
    int8_t xv[] = {1, 2, 3, -1, -2, -3};
    float sv[] = {1, 10, 100}, out[6];
    int32_t zv[] = {1, 0, -1};
    dqg_buffer in[] = {{.name = "x", .data = xv, .size = 6},
                       {.name = "scales", .data = sv, .size = 12},
                       {.name = "zps", .data = zv, .size = 12}};
    dqg_buffer o = {.name = "y", .data = out, .size = sizeof out};
    cr_assert_eq(dqg_reference_run(g, in, 3, &o, 1), DQG_OK, "%s", dqg_last_error());
    float want[] = {0, 20, 400, -2, -20, -200};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out[i], want[i], "element %d: %g", i, out[i]);
    dqg_graph_destroy(g);
}

Test(dequantize, int32_runtime_zero_point_rejected_when_run)
{
    dqg_graph *g = G();
    int64_t d = 2, one = 1;
    dqg_tensor_id x = dqg_input(g, "x", DQG_S32, 1, &d);
    dqg_tensor_id z = dqg_input(g, "zp", DQG_S32, 0, &one);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    dqg_output(g, dqg_dequantize_linear(g, "dq", x, scalar_f32(g, 1), z, &a), "y");
    finalize_ok(g);
    int32_t xv[] = {1, 2}, zv = 5;
    float out[2];
    dqg_buffer in[] = {{.name = "x", .data = xv, .size = 8},
                       {.name = "zp", .data = &zv, .size = 4}};
    dqg_buffer o = {.name = "y", .data = out, .size = 8};
    expect_error(dqg_reference_run(g, in, 2, &o, 1), DQG_INVALID_ARGUMENT, "'dq'",
                 "input 2 (zero point)", "is 5", "int32 input has no zero point");
    zv = 0;
    cr_assert_eq(dqg_reference_run(g, in, 2, &o, 1), DQG_OK);
    dqg_graph_destroy(g);
}

Test(quantize, round_half_to_even_and_saturate)
{
    dqg_graph *g = G();
    int64_t d = 8, one = 1;
    float xv[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300, -300, NAN};
    int8_t zp = 0;
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
    dqg_tensor_id z = dqg_constant(g, "z", DQG_S8, 0, &one, &zp, 1);
    dqg_quantize_linear_attrs a = {.opset = 13};
    dqg_tensor_id y = dqg_quantize_linear(g, "q", x, scalar_f32(g, 1), z, &a);
    dqg_output(g, y, "y");
    finalize_ok(g);
    int8_t out[8];
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, out, sizeof out), DQG_OK);
    int8_t want[] = {0, 2, 2, 0, -2, 127, -128, 0};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(out[i], want[i], "element %d: %d", i, out[i]);
    dqg_graph_destroy(g);
}

Test(quantize, u8_default_and_u4_s16_outputs)
{
    int64_t d = 3, one = 1;
    float xv[] = {-1, 7.4f, 40};
    dqg_graph *g = G();
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
    dqg_quantize_linear_attrs a = {.opset = 10};
    dqg_tensor_id y = dqg_quantize_linear(g, "q", x, scalar_f32(g, 0.5f), DQG_NONE, &a);
    cr_assert_eq(dqg_tensor_dtype(g, y), DQG_U8);
    dqg_output(g, y, "y");
    finalize_ok(g);
    uint8_t o8[3];
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, o8, 3), DQG_OK);
    cr_assert(o8[0] == 0 && o8[1] == 15 && o8[2] == 80);
    dqg_graph_destroy(g);

    g = G();
    x = dqg_input(g, "x", DQG_F32, 1, &d);
    uint8_t z4 = 0x08;
    dqg_tensor_id z = dqg_constant(g, "z", DQG_U4, 0, &one, &z4, 1);
    dqg_quantize_linear_attrs a21 = {.opset = 21};
    y = dqg_quantize_linear(g, "q", x, scalar_f32(g, 1), z, &a21);
    dqg_output(g, y, "y");
    finalize_ok(g);
    uint8_t o4[2];
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, o4, 2), DQG_OK);
    /* -1+8 = 7, 7+8 = 15, 40+8 -> 15 (saturated) */
    cr_assert_eq(o4[0], 0xF7);
    cr_assert_eq(o4[1] & 0x0F, 0x0F);
    dqg_graph_destroy(g);
}

Test(quantize, float8_saturate_and_not)
{
    int64_t d = 2, one = 1;
    float xv[] = {1000, -1};
    for (int sat = 0; sat < 2; sat++) {
        dqg_graph *g = G();
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
        uint8_t z0 = 0;
        dqg_tensor_id z = dqg_constant(g, "z", DQG_F8E4M3FN, 0, &one, &z0, 1);
        dqg_quantize_linear_attrs a = {.opset = 19, .no_saturate = !sat};
        dqg_tensor_id y = dqg_quantize_linear(g, "q", x, scalar_f32(g, 1), z, &a);
        dqg_output(g, y, "y");
        finalize_ok(g);
        uint8_t out[2];
        cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, out, 2), DQG_OK);
        cr_assert_eq(out[0], sat ? 0x7E : 0x7F, "saturate=%d: 0x%02x", sat, out[0]);
        cr_assert_eq(out[1], 0xB8);
        dqg_graph_destroy(g);
    }
}

Test(quantize, per_axis_and_blocked)
{
    dqg_graph *g = G();
    int64_t xd[] = {2, 4}, sd[] = {2, 2}, two = 2;
    float xv[] = {1, 2, 3, 4, 5, 6, 7, 8}, sc[] = {1, 2, 4, 8};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 2, xd);
    dqg_tensor_id s = dqg_constant(g, "s", DQG_F32, 2, sd, sc, sizeof sc);
    dqg_quantize_linear_attrs a = {.opset = 21, .has_axis = true, .axis = 1, .block_size = 2};
    dqg_tensor_id y = dqg_quantize_linear(g, "q", x, s, DQG_NONE, &a);
    dqg_output(g, y, "y");
    finalize_ok(g);
    uint8_t out[8];
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, out, 8), DQG_OK);
    /* row 0: /1,/1,/2,/2 -> 1,2,2(1.5),2; row 1: /4,/4,/8,/8 -> 1(1.25),2(1.5),1(0.875),1 */
    uint8_t want[] = {1, 2, 2, 2, 1, 2, 1, 1};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(out[i], want[i], "element %d: %d", i, out[i]);
    dqg_graph_destroy(g);
    g = G();
    x = dqg_input(g, "x", DQG_F32, 2, xd);
    float ps[] = {2, 4};
    s = dqg_constant(g, "s", DQG_F32, 1, &two, ps, sizeof ps);
    dqg_quantize_linear_attrs pa = {.opset = 13, .has_axis = true, .axis = 0};
    y = dqg_quantize_linear(g, "q", x, s, DQG_NONE, &pa);
    dqg_output(g, y, "y");
    finalize_ok(g);
    cr_assert_eq(run_ref_1(g, x, xv, sizeof xv, y, out, 8), DQG_OK);
    uint8_t want2[] = {0, 1, 2, 2,
                       1, 2, 2, 2}; /* 0.5->0, 1, 1.5->2, 2; 1.25->1, 1.5->2, 1.75->2, 2 */
    for (int i = 0; i < 8; i++)
        cr_assert_eq(out[i], want2[i], "element %d: %d", i, out[i]);
    dqg_graph_destroy(g);
}

Test(quantize, dynamic_quantize_linear_onnx_vector)
{
    dqg_graph *g = G();
    int64_t d = 6;
    float xv[] = {0, 2, -3, -2.5f, 1.34f, 0.5f};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, &d);
    dqg_tensor_id s, z;
    dqg_tensor_id y = dqg_dynamic_quantize_linear(g, "dql", x, &s, &z);
    dqg_output(g, y, "y");
    dqg_output(g, s, "y_scale");
    dqg_output(g, z, "y_zero_point");
    finalize_ok(g);
    uint8_t yo[6], zo;
    float so;
    dqg_buffer in = {.name = "x", .data = xv, .size = sizeof xv};
    dqg_buffer out[] = {{.name = "y", .data = yo, .size = 6},
                        {.name = "y_scale", .data = &so, .size = 4},
                        {.name = "y_zero_point", .data = &zo, .size = 1}};
    cr_assert_eq(dqg_reference_run(g, &in, 1, out, 3), DQG_OK, "%s", dqg_last_error());
    /* ONNX backend test: y_scale = 5/255, zp = 153 */
    cr_assert_eq(so, 5.0f / 255.0f);
    cr_assert_eq(zo, 153);
    uint8_t want[] = {153, 255, 0, 26, 221, 179};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(yo[i], want[i], "element %d: %d", i, yo[i]);
    dqg_graph_destroy(g);
}
