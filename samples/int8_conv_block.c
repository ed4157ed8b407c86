/* int8_conv_block: a ResNet-style pair of quantized convolutions —
 * DQ -> Conv 3x3 -> bias -> ReLU -> Q -> DQ -> Conv 3x3 — built once with
 * NHWC (NXC) and once with NCHW (NCX) activations. Prints what fused, and
 * checks each convolution against the reference interpreter on the input it
 * was given, within the numerical contract: the u8 tensor between them
 * within one unit, the f32 output within 1e-5 of the largest magnitude.
 * Exits 1 if a check fails. */
#include <math.h>
#include <string.h>

#include "sample_util.h"

enum { N = 1, C = 32, H = 28, W = 28, O = 32 };

typedef struct conv_weights {
    int8_t w[O * C * 9];
    float scale[O];
} conv_weights;

static void make_weights(conv_weights *cw, uint32_t *rng)
{
    for (int i = 0; i < O * C * 9; i++)
        cw->w[i] = (int8_t)(sample_rand(rng) % 255 - 127);
    for (int i = 0; i < O; i++)
        cw->scale[i] = 0.001f * (float)(1 + i % 4);
}

static dqg_tensor_id qconv(dqg_graph *g, const char *name, dqg_tensor_id x_dq,
                           const conv_weights *cw, dqg_data_format fmt, dqg_tensor_id bias)
{
    char wn[64], sn[64], dn[64];
    snprintf(wn, sizeof wn, "%s_w", name);
    snprintf(sn, sizeof sn, "%s_w_scale", name);
    snprintf(dn, sizeof dn, "%s_w_dq", name);
    int64_t wd[] = {O, C, 3, 3}, od[] = {O};
    dqg_tensor_id wq = dqg_constant(g, wn, DQG_S8, 4, wd, cw->w, sizeof cw->w);
    dqg_tensor_id wsc = dqg_constant(g, sn, DQG_F32, 1, od, cw->scale, sizeof cw->scale);
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = true, .axis = 0};
    dqg_tensor_id wf = dqg_dequantize_linear(g, dn, wq, wsc, DQG_NONE, &a);
    dqg_conv_attrs ca = {.spatial_rank = 2,
                         .strides = {1, 1},
                         .pads_begin = {1, 1},
                         .pads_end = {1, 1},
                         .dilations = {1, 1},
                         .groups = 1,
                         .data_format = fmt};
    return dqg_convolution(g, name, x_dq, wf, bias, &ca);
}

static const float S_IN = 0.02f, S_MID = 0.05f;
static const uint8_t Z_IN = 128, Z_MID = 0;

/* DQ(u8 input named `in`, scale, zero point) -> conv `name`. */
static dqg_tensor_id dq_conv(dqg_graph *g, const char *in, const char *name, float s, uint8_t z,
                             const conv_weights *cw, dqg_data_format fmt, dqg_tensor_id bias)
{
    int64_t nhwc[] = {N, H, W, C}, nchw[] = {N, C, H, W};
    char sn[64], zn[64], dn[64];
    snprintf(sn, sizeof sn, "%s_scale", in);
    snprintf(zn, sizeof zn, "%s_zp", in);
    snprintf(dn, sizeof dn, "%s_dq", in);
    dqg_tensor_id x = dqg_input(g, in, DQG_U8, 4, fmt == DQG_FORMAT_NXC ? nhwc : nchw);
    dqg_dequantize_linear_attrs pt = {.opset = 13};
    dqg_tensor_id xs = dqg_constant(g, sn, DQG_F32, 0, NULL, &s, sizeof s);
    dqg_tensor_id xz = dqg_constant(g, zn, DQG_U8, 0, NULL, &z, 1);
    return qconv(g, name, dqg_dequantize_linear(g, dn, x, xs, xz, &pt), cw, fmt, bias);
}

static bool run(dqg_data_format fmt, const conv_weights *cw1, const conv_weights *cw2,
                const float *bias)
{
    const char *label = fmt == DQG_FORMAT_NXC ? "NHWC" : "NCHW";
    int64_t od[] = {O};
    /* The block; the u8 tensor between the convolutions is an output too,
     * so that the second convolution can be checked on its actual input. */
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    dqg_tensor_id b = dqg_constant(g, "bias", DQG_F32, 1, od, bias, O * sizeof(float));
    dqg_tensor_id y = dqg_relu(g, "relu1", dq_conv(g, "x", "conv1", S_IN, Z_IN, cw1, fmt, b));
    dqg_tensor_id ms = dqg_constant(g, "mid_scale", DQG_F32, 0, NULL, &S_MID, sizeof S_MID);
    dqg_tensor_id mz = dqg_constant(g, "mid_zp", DQG_U8, 0, NULL, &Z_MID, 1);
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id mid = dqg_quantize_linear(g, "q1", y, ms, mz, &qa);
    dqg_dequantize_linear_attrs pt = {.opset = 13};
    dqg_tensor_id mf = dqg_dequantize_linear(g, "dq2", mid, ms, mz, &pt);
    CHECK(dqg_output(g, qconv(g, "conv2", mf, cw2, fmt, DQG_NONE), "out"));
    CHECK(dqg_output(g, mid, "mid"));
    CHECK(dqg_graph_finalize(g));
    /* The second convolution alone: its reference. */
    dqg_graph *g2;
    CHECK(dqg_graph_create(&g2));
    CHECK(dqg_output(g2, dq_conv(g2, "mid", "conv2", S_MID, Z_MID, cw2, fmt, DQG_NONE), "out"));
    CHECK(dqg_graph_finalize(g2));

    dqg_compiled *c;
    CHECK(dqg_compile(g, NULL, &c));
    printf("%s block:\n", label);
    print_explain(c);
    size_t n_in = (size_t)N * C * H * W, n_out = (size_t)N * O * H * W;
    uint32_t rng = 99;
    uint8_t *xin = malloc(n_in), *mid_got = malloc(n_in), *mid_ref = malloc(n_in);
    for (size_t i = 0; i < n_in; i++)
        xin[i] = (uint8_t)sample_rand(&rng);
    float *out = malloc(n_out * sizeof(float)), *ref = malloc(n_out * sizeof(float));
    dqg_buffer in = {.name = "x", .data = xin, .size = n_in};
    dqg_buffer ob[2] = {{.name = "out", .data = out, .size = n_out * sizeof(float)},
                        {.name = "mid", .data = mid_got, .size = n_in}};
    double t0 = now_ms();
    CHECK(dqg_execute(c, &in, 1, ob, 2));
    double t_exec = now_ms() - t0;
    /* conv1 on x: the whole block's reference gives its u8 output. */
    dqg_buffer rb[2] = {{.name = "out", .data = ref, .size = n_out * sizeof(float)},
                        {.name = "mid", .data = mid_ref, .size = n_in}};
    CHECK(dqg_reference_run(g, &in, 1, rb, 2));
    int mid_diff = 0;
    for (size_t i = 0; i < n_in; i++)
        if (abs((int)mid_got[i] - (int)mid_ref[i]) > mid_diff)
            mid_diff = abs((int)mid_got[i] - (int)mid_ref[i]);
    /* conv2 on the u8 tensor the compiled block gave it. */
    dqg_buffer in2 = {.name = "mid", .data = mid_got, .size = n_in};
    dqg_buffer rb2 = {.name = "out", .data = ref, .size = n_out * sizeof(float)};
    CHECK(dqg_reference_run(g2, &in2, 1, &rb2, 1));
    double maxdiff = 0, maxabs = 0;
    for (size_t i = 0; i < n_out; i++) {
        maxdiff = fmax(maxdiff, fabs((double)out[i] - ref[i]));
        maxabs = fmax(maxabs, fabs((double)ref[i]));
    }
    bool ok = mid_diff <= 1 && maxdiff <= 1e-5 * maxabs;
    printf("  first execute %.2f ms\n  conv1 (u8): largest difference from the reference %d unit "
           "(bound 1)\n  conv2 (f32): largest difference %.3g, outputs up to %.3g (bound %.3g)\n"
           "  %s\n\n",
           t_exec, mid_diff, maxdiff, maxabs, 1e-5 * maxabs, ok ? "OK" : "MISMATCH");
    free(xin);
    free(mid_got);
    free(mid_ref);
    free(out);
    free(ref);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    dqg_graph_destroy(g2);
    return ok;
}

int main(void)
{
    static conv_weights cw1, cw2;
    uint32_t rng = 7;
    make_weights(&cw1, &rng);
    make_weights(&cw2, &rng);
    float bias[O];
    for (int i = 0; i < O; i++)
        bias[i] = 0.1f * (float)(i % 3) - 0.1f;
    bool ok = run(DQG_FORMAT_NXC, &cw1, &cw2, bias);
    ok = run(DQG_FORMAT_NCX, &cw1, &cw2, bias) && ok;
    return ok ? 0 : 1;
}
