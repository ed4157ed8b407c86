/* Bugs found by fuzzing (fuzz/), each pinned by a test that states the
 * expected result; the raw inputs that found them are replayed as well
 * (tests/corpus/fuzz/, ctest fuzz_regression/...). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dqgraph_onnx.h"
#include "onnx.pb-c.h"
#include "support/onnx_model.h"
#include "test_common.h"

static dqg_graph *G(void)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    return g;
}

/* A graph of constants only (no graph input) compiles and runs: its copy
 * for the passes once passed a NULL inputs array to memcpy. */
Test(fuzz_regressions, graph_without_inputs)
{
    dqg_graph *g = G();
    int64_t d = 4, one = 1;
    int8_t x[4] = {-128, -1, 0, 127};
    float s = 0.5f;
    dqg_dequantize_linear_attrs a = {.opset = 13};
    dqg_tensor_id y =
        dqg_dequantize_linear(g, "dq", dqg_constant(g, "x", DQG_S8, 1, &d, x, 4),
                              dqg_constant(g, "s", DQG_F32, 0, &one, &s, 4), DQG_NONE, &a);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    for (int backend = 0; backend < 2; backend++) {
        dqg_compile_options o = dqg_compile_options_default();
        o.backend = backend ? DQG_BACKEND_REFERENCE : DQG_BACKEND_ONEDNN;
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        float got[4] = {0};
        dqg_buffer out = {.id = y, .data = got, .size = sizeof got};
        cr_assert_eq(dqg_execute(c, NULL, 0, &out, 1), DQG_OK, "%s", dqg_last_error());
        const float want[4] = {-64.0f, -0.5f, 0.0f, 63.5f};
        for (int i = 0; i < 4; i++)
            cr_assert_eq(got[i], want[i], "backend %d element %d: %g", backend, i, got[i]);
        dqg_compiled_destroy(c);
    }
    dqg_graph_destroy(g);
}

/* Convolution attributes whose arithmetic overflowed int64: a clear error
 * naming the op and the limit instead. */
Test(fuzz_regressions, convolution_huge_attributes)
{
    struct {
        int64_t stride, dilation, pad;
        const char *key;
    } cases[] = {
        {1, INT64_MAX / 2, 0, "exceed the limit"},
        {INT64_MAX, 1, 0, "exceed the limit"},
        {1, 1, INT64_MAX - 3, "exceed the limit"},
        {1, INT32_MAX, 0, "larger than any input"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dqg_graph *g = G();
        int64_t xd[] = {1, 1, 8}, wd[] = {1, 1, (int64_t)1 << 33};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 3, xd);
        /* A huge kernel only for the overflowing product; an input otherwise. */
        if (k != 3)
            wd[2] = 3;
        dqg_tensor_id w = dqg_input(g, "w", DQG_F32, 3, wd);
        dqg_conv_attrs a = {.spatial_rank = 1,
                            .strides = {cases[k].stride},
                            .dilations = {cases[k].dilation},
                            .pads_begin = {cases[k].pad},
                            .pads_end = {cases[k].pad}};
        cr_assert_eq(dqg_convolution(g, "conv", x, w, DQG_NONE, &a), DQG_NONE, "case %zu", k);
        expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "Convolution 'conv'",
                     cases[k].key);
        dqg_graph_destroy(g);
    }
}

/* Runs g's single output on the oneDNN backend (dqgraph's own dequantize
 * kernels on this path) and on the reference interpreter. */
static void run_both(dqg_graph *g, dqg_buffer *in, size_t n_in, dqg_tensor_id y, float *got,
                     float *ref, size_t n)
{
    finalize_ok(g);
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    dqg_buffer o1 = {.id = y, .data = got, .size = n * sizeof(float)};
    dqg_buffer o2 = {.id = y, .data = ref, .size = n * sizeof(float)};
    cr_assert_eq(dqg_execute(c, in, n_in, &o1, 1), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_reference_run(g, in, n_in, &o2, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled_destroy(c);
}

/* DynamicDequantize of s8 with s32 or u8 zero points per channel along the
 * last axis: the AVX-512 row kernel read the zero points as s8, and s32
 * zero points beyond 2^24 were rounded to float before the subtraction.
 * Expected: (x - zp) exact, rounded once to f32, times the scale. */
Test(fuzz_regressions, dynamic_dequantize_wide_or_mixed_zero_points)
{
    enum { R = 3, D = 37 };
    for (int zt = 0; zt < 2; zt++) {
        dqg_dtype zdt = zt ? DQG_U8 : DQG_S32;
        dqg_graph *g = G();
        int64_t xd[] = {R, D}, sd = D;
        dqg_tensor_id x = dqg_input(g, "x", DQG_S8, 2, xd);
        dqg_tensor_id s = dqg_input(g, "s", DQG_F32, 1, &sd);
        dqg_tensor_id z = dqg_input(g, "z", zdt, 1, &sd);
        dqg_tensor_id y = dqg_dynamic_dequantize(g, "ddq", x, s, z, "per_channel", 1);
        dqg_output(g, y, "y");
        int8_t xv[R * D];
        float sv[D];
        int32_t z32[D];
        uint8_t z8[D];
        for (int i = 0; i < R * D; i++)
            xv[i] = (int8_t)(i * 37 - 100);
        for (int j = 0; j < D; j++) {
            sv[j] = j % 3 ? 0.25f : 1.0f;
            z32[j] = (j & 1 ? -1 : 1) * ((1 << 24) + 1 + 2 * j); /* odd: not a float */
            z8[j] = (uint8_t)(128 + j * 3);
        }
        dqg_buffer in[3] = {
            {.id = x, .data = xv, .size = sizeof xv},
            {.id = s, .data = sv, .size = sizeof sv},
            {.id = z, .data = zt ? (void *)z8 : (void *)z32, .size = zt ? sizeof z8 : sizeof z32}};
        float got[R * D], ref[R * D];
        run_both(g, in, 3, y, got, ref, R * D);
        for (int i = 0; i < R * D; i++) {
            int j = i % D;
            int64_t zp = zt ? z8[j] : z32[j];
            float want = (float)((int64_t)xv[i] - zp) * sv[j];
            cr_assert_eq(ref[i], want, "zp %s element %d: reference %.9g, want %.9g",
                         dqg_dtype_name(zdt), i, ref[i], want);
            cr_assert_eq(got[i], want, "zp %s element %d: compiled %.9g, want %.9g",
                         dqg_dtype_name(zdt), i, got[i], want);
        }
        dqg_graph_destroy(g);
    }
}

/* Quark ExtendedDequantizeLinear of u8 with f32 zero points per channel
 * along the last axis: the row kernel read the f32 zero points' bytes as
 * u8. Expected: (x - zp) rounded once to f32, times the scale. */
Test(fuzz_regressions, quark_float_zero_point_last_axis)
{
    enum { R = 2, D = 33 };
    dqg_graph *g = G();
    int64_t xd[] = {R, D}, sd = D;
    float sv[D], zv[D];
    for (int j = 0; j < D; j++) {
        sv[j] = 0.125f * (float)(j + 1);
        zv[j] = 100.25f - 3.5f * (float)j;
    }
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 2, xd);
    dqg_tensor_id y = dqg_extended_dequantize_linear(
        g, "edq", x, dqg_constant(g, "s", DQG_F32, 1, &sd, sv, sizeof sv),
        dqg_constant(g, "z", DQG_F32, 1, &sd, zv, sizeof zv), 1);
    dqg_output(g, y, "y");
    uint8_t xv[R * D];
    for (int i = 0; i < R * D; i++)
        xv[i] = (uint8_t)(i * 29 + 7);
    dqg_buffer in = {.id = x, .data = xv, .size = sizeof xv};
    float got[R * D], ref[R * D];
    run_both(g, &in, 1, y, got, ref, R * D);
    for (int i = 0; i < R * D; i++) {
        int j = i % D;
        float want = (float)((double)xv[i] - (double)zv[j]) * sv[j];
        cr_assert_eq(ref[i], want, "element %d: reference %.9g, want %.9g", i, ref[i], want);
        cr_assert_eq(got[i], want, "element %d: compiled %.9g, want %.9g", i, got[i], want);
    }
    dqg_graph_destroy(g);
}

/* Quark s32 input with a run-time f32 zero point: "int32 has no zero point"
 * is checked on the exact value by the compiled kernel as by the reference
 * (0.3 and NaN used to pass as 0 after rounding). */
Test(fuzz_regressions, quark_s32_runtime_float_zero_point)
{
    const float bad[] = {0.3f, NAN, -0.0f};
    for (int k = 0; k < 3; k++) {
        dqg_graph *g = G();
        int64_t d = 4, one = 1;
        float s = 2.0f;
        dqg_tensor_id x = dqg_input(g, "x", DQG_S32, 1, &d);
        dqg_tensor_id z = dqg_input(g, "z", DQG_F32, 0, &one);
        dqg_tensor_id y = dqg_extended_dequantize_linear(
            g, "edq", x, dqg_constant(g, "s", DQG_F32, 0, &one, &s, 4), z, 0);
        dqg_output(g, y, "y");
        finalize_ok(g);
        int32_t xv[4] = {-7, 0, 3, 1 << 30};
        float zv = bad[k];
        dqg_buffer in[2] = {{.id = x, .data = xv, .size = sizeof xv},
                            {.id = z, .data = &zv, .size = 4}};
        float got[4];
        dqg_buffer out = {.id = y, .data = got, .size = sizeof got};
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        dqg_status st = dqg_execute(c, in, 2, &out, 1);
        char compiled_msg[512];
        snprintf(compiled_msg, sizeof compiled_msg, "%s", dqg_last_error());
        dqg_status rst = dqg_reference_run(g, in, 2, &out, 1);
        if (k < 2) {
            cr_assert_eq(st, DQG_INVALID_ARGUMENT, "%s", compiled_msg);
            expect_error(rst, DQG_INVALID_ARGUMENT, "ExtendedDequantizeLinear 'edq'",
                         "input 2 (zero point)", "(given at run time)",
                         "an int32 input has no zero point");
            /* One rule, one message, whichever path runs the op. */
            cr_assert_str_eq(compiled_msg, dqg_last_error());
        } else { /* -0 is zero */
            cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(rst, DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(got[3], 2.0f * (float)(1 << 30));
        }
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}

/* A tensor file (.pb) that claims 2^40 bytes of external data: refused
 * before anything is allocated (it used to allocate the claim first). */
Test(fuzz_regressions, tensor_file_external_data_refused_before_allocation)
{
    Onnx__TensorProto t;
    onnx__tensor_proto__init(&t);
    int64_t dims[] = {(int64_t)1 << 19, (int64_t)1 << 19};
    t.n_dims = 2;
    t.dims = dims;
    t.has_data_type = 1;
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t.has_data_location = 1;
    t.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto loc;
    onnx__string_string_entry_proto__init(&loc);
    loc.key = "location";
    loc.value = "weights.bin";
    Onnx__StringStringEntryProto *entries[] = {&loc};
    t.n_external_data = 1;
    t.external_data = entries;
    size_t n = onnx__tensor_proto__get_packed_size(&t);
    uint8_t *buf = malloc(n);
    cr_assert(buf);
    onnx__tensor_proto__pack(&t, buf);
    char path[] = "/tmp/dqg_fuzz_regression_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, buf, n), (ssize_t)n);
    close(fd);
    free(buf);
    char *name = NULL;
    dqg_dtype dt;
    int rank;
    int64_t d[DQG_MAX_RANK];
    void *data = NULL;
    size_t size = 0;
    dqg_status st = dqg_tensor_file_read(path, &name, &dt, &rank, d, &data, &size);
    unlink(path);
    expect_error(st, DQG_UNSUPPORTED, "external data ('weights.bin')", "tensor file");
    cr_assert_null(data);
    cr_assert_null(name);
}

/* DynamicQuantizeLinear of a constant that is not folded (fusion off) ran
 * its kernel on args[-1]; the kernel now keeps the constant. */
Test(fuzz_regressions, dynamic_quantize_linear_of_a_constant)
{
    dqg_graph *g = G();
    int64_t d[] = {4};
    const float v[] = {-1.0f, 0.0f, 0.5f, 2.0f};
    dqg_tensor_id x = dqg_constant(g, "c", DQG_F32, 1, d, v, sizeof v), s, z;
    dqg_tensor_id y = dqg_dynamic_quantize_linear(g, "dql", x, &s, &z);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK);
    cr_assert_eq(dqg_output(g, s, "s"), DQG_OK);
    finalize_ok(g);
    for (int fuse = 0; fuse < 2; fuse++) {
        dqg_compile_options o = dqg_compile_options_default();
        o.disable_fusion = !fuse;
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        uint8_t yq[4];
        float sc;
        dqg_buffer out[2] = {{.name = "y", .data = yq, .size = sizeof yq},
                             {.name = "s", .data = &sc, .size = sizeof sc}};
        cr_assert_eq(dqg_execute(c, NULL, 0, out, 2), DQG_OK, "%s", dqg_last_error());
        /* Range [-1, 2]: scale 3/255, zero point round(255 / 3) = 85; 0.5 / scale
         * = 42.5 rounds half to even to 42. */
        cr_assert_float_eq(sc, 3.0f / 255.0f, 1e-9);
        const uint8_t want[] = {0, 85, 127, 255};
        cr_assert_arr_eq(yq, want, 4, "fuse %d: %u %u %u %u", fuse, yq[0], yq[1], yq[2], yq[3]);
        dqg_compiled_destroy(c);
    }
    dqg_graph_destroy(g);
}

/* DynamicQuantizeLinear of values whose range is a few subnormals: the
 * scale (width / 255) underflowed to 0 and the zero point became 0 / 0,
 * cast to u8. It is an error naming the range, on both paths. */
Test(fuzz_regressions, dynamic_quantize_linear_of_a_subnormal_range)
{
    dqg_graph *g = G();
    int64_t d[] = {2};
    dqg_tensor_id x = dqg_input(g, "x", DQG_F32, 1, d);
    cr_assert_eq(dqg_output(g, dqg_dynamic_quantize_linear(g, "dql", x, NULL, NULL), "y"), DQG_OK);
    finalize_ok(g);
    const float v[] = {0.0f, 1e-44f};
    uint8_t y[2];
    dqg_buffer in = {.name = "x", .data = (void *)v, .size = sizeof v};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
    expect_error(dqg_reference_run(g, &in, 1, &out, 1), DQG_INVALID_ARGUMENT, "'dql'",
                 "too narrow");
    dqg_compile_options o = dqg_compile_options_default();
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
    expect_error(dqg_execute(c, &in, 1, &out, 1), DQG_INVALID_ARGUMENT, "'dql'", "too narrow");
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* Reshape-1 (opset < 5) without its shape attribute copied from a NULL
 * attribute array (UBSan: memcpy of a null pointer); it is now refused
 * naming the attribute. */
Test(fuzz_regressions, reshape1_without_shape_is_refused)
{
    tm_model *m = tm_new(2);
    int64_t d[] = {2, 3};
    tm_input(m, "a", 1, 2, d, NULL);
    tm_node(m, "Reshape", NULL, "r", "a", "b");
    tm_output(m, "b", 0, -1, NULL);
    dqg_graph *g;
    dqg_status st = tm_load(m, NULL, &g);
    tm_free(m);
    expect_error(st, DQG_INVALID_ARGUMENT, "Reshape", "'r'", "attribute 'shape' is required");
    cr_assert_null(g);
}

/* DQ(u8, scale 1e30) -> AveragePool -> Q(u8, scale 1e-30): fused, the
 * requantization factor 1e60 overflowed f32, and infinity times a zero
 * mean gave NaN, cast to an integer (UBSan) where the float path
 * saturates. The pair is no longer requantized in one step: every path
 * gives the saturated values. */
Test(fuzz_regressions, average_pool_requantization_that_overflows_f32)
{
    dqg_graph *g = G();
    int64_t d[] = {1, 1, 2, 2}, one = 1;
    float sx = 1e30f, sy = 1e-30f;
    uint8_t zx = 3, zy = 7;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, d);
    dqg_dequantize_linear_attrs da = {.opset = 13};
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id xf =
        dqg_dequantize_linear(g, "dq", x, dqg_constant(g, NULL, DQG_F32, 0, &one, &sx, 4),
                              dqg_constant(g, NULL, DQG_U8, 0, &one, &zx, 1), &da);
    dqg_pool_attrs pa = {
        .spatial_rank = 2, .kernel = {2, 2}, .algorithm = DQG_POOL_AVG_EXCLUDE_PAD};
    dqg_tensor_id p = dqg_pool(g, "avg", xf, &pa);
    dqg_tensor_id y =
        dqg_quantize_linear(g, "q", p, dqg_constant(g, NULL, DQG_F32, 0, &one, &sy, 4),
                            dqg_constant(g, NULL, DQG_U8, 0, &one, &zy, 1), &qa);
    cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
    finalize_ok(g);
    /* means (x - 3) of 0, +0.5 and -0.25 (times 1e30, over 1e-30) */
    const uint8_t cases[3][4] = {{3, 3, 3, 3}, {3, 3, 4, 4}, {3, 3, 3, 2}};
    const uint8_t want[3] = {7, 255, 0};
    for (int fuse = 0; fuse < 2; fuse++) {
        dqg_compile_options o = dqg_compile_options_default();
        o.disable_fusion = !fuse;
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s", dqg_last_error());
        for (int k = 0; k < 3; k++) {
            uint8_t r = 0, v = 0;
            dqg_buffer in = {.name = "x", .data = (void *)cases[k], .size = 4};
            dqg_buffer out = {.name = "y", .data = &v, .size = 1};
            cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
            out.data = &r;
            cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(v, want[k], "fuse %d case %d: %u, want %u", fuse, k, v, want[k]);
            cr_assert_eq(r, want[k], "reference case %d: %u, want %u", k, r, want[k]);
        }
        dqg_compiled_destroy(c);
    }
    dqg_graph_destroy(g);
}

/* fuzz_builder: a constant Pad of an f4e2m1 tensor with the value +inf
 * converted the value to an integer (undefined for inf) and wrote its low
 * four bits. The constant is f4e2m1's code of the value, saturating as a
 * cast does: +inf pads with 6 (code 7), -1e9 with -6 (code 15), 1.5 with
 * code 3; compiled and on the reference. */
Test(fuzz_regressions, pad_of_f4e2m1_writes_the_constant_code)
{
    const double values[] = {INFINITY, -1e9, 1.5};
    const uint8_t codes[] = {0x7, 0xF, 0x3};
    for (int k = 0; k < 3; k++) {
        dqg_graph *g = G();
        int64_t d = 4, pads[] = {1, 1};
        dqg_tensor_id x = dqg_input(g, "x", DQG_F4E2M1, 1, &d);
        dqg_tensor_id y = dqg_pad(g, "pad", x, pads, DQG_PAD_CONSTANT, values[k]);
        cr_assert_eq(dqg_output(g, y, "y"), DQG_OK, "%s", dqg_last_error());
        finalize_ok(g);
        const uint8_t xv[2] = {0x21, 0x43}; /* codes 1, 2, 3, 4 */
        uint8_t want[3] = {(uint8_t)(codes[k] | 0x10), 0x32, (uint8_t)(0x04 | codes[k] << 4)};
        uint8_t ref[3] = {0}, got[3] = {0};
        dqg_buffer in = {.name = "x", .data = (void *)xv, .size = 2};
        dqg_buffer out = {.name = "y", .data = ref, .size = 3};
        cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
        out.data = got;
        cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(ref[i], want[i], "value %g byte %d: reference %02x, want %02x", values[k],
                         i, ref[i], want[i]);
            cr_assert_eq(got[i], want[i], "value %g byte %d: %02x, want %02x", values[k], i, got[i],
                         want[i]);
        }
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
}
