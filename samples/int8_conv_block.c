/* int8_conv_block: a ResNet-style pair of quantized convolutions —
 * DQ -> Conv 3x3 -> bias -> ReLU -> Q -> DQ -> Conv 3x3 — built once with
 * NHWC (NXC) and once with NCHW (NCX) activations. Prints what fused, and
 * checks each against the reference interpreter. */
#include <math.h>
#include <string.h>

#include "sample_util.h"

enum { N = 1, C = 32, H = 28, W = 28, O = 32 };

static dqg_tensor_id qconv(dqg_graph *g, const char *name, dqg_tensor_id x_dq, uint32_t *rng,
                           dqg_data_format fmt, dqg_tensor_id bias)
{
    static int8_t w[O * C * 9];
    static float ws[O];
    for (int i = 0; i < O * C * 9; i++)
        w[i] = (int8_t)(sample_rand(rng) % 255 - 127);
    for (int i = 0; i < O; i++)
        ws[i] = 0.001f * (float)(1 + i % 4);
    char wn[64], sn[64], dn[64];
    snprintf(wn, sizeof wn, "%s_w", name);
    snprintf(sn, sizeof sn, "%s_w_scale", name);
    snprintf(dn, sizeof dn, "%s_w_dq", name);
    int64_t wd[] = {O, C, 3, 3}, od[] = {O};
    dqg_tensor_id wq = dqg_constant(g, wn, DQG_S8, 4, wd, w, sizeof w);
    dqg_tensor_id wsc = dqg_constant(g, sn, DQG_F32, 1, od, ws, sizeof ws);
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

static void run(dqg_data_format fmt)
{
    const char *label = fmt == DQG_FORMAT_NXC ? "NHWC" : "NCHW";
    dqg_graph *g;
    CHECK(dqg_graph_create(&g));
    uint32_t rng = 99;
    int64_t xd_nhwc[] = {N, H, W, C}, xd_nchw[] = {N, C, H, W}, od[] = {O}, one = 1;
    float s_in = 0.02f, s_mid = 0.05f, bias[O];
    uint8_t z_in = 128, z_mid = 0;
    for (int i = 0; i < O; i++)
        bias[i] = 0.1f * (float)(i % 3) - 0.1f;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 4, fmt == DQG_FORMAT_NXC ? xd_nhwc : xd_nchw);
    dqg_dequantize_linear_attrs pt = {.opset = 13};
    dqg_tensor_id xs = dqg_constant(g, "x_scale", DQG_F32, 0, &one, &s_in, sizeof s_in);
    dqg_tensor_id xz = dqg_constant(g, "x_zp", DQG_U8, 0, &one, &z_in, 1);
    dqg_tensor_id xf = dqg_dequantize_linear(g, "x_dq", x, xs, xz, &pt);
    dqg_tensor_id b = dqg_constant(g, "bias", DQG_F32, 1, od, bias, sizeof bias);
    dqg_tensor_id y = dqg_relu(g, "relu1", qconv(g, "conv1", xf, &rng, fmt, b));
    dqg_tensor_id ms = dqg_constant(g, "mid_scale", DQG_F32, 0, &one, &s_mid, sizeof s_mid);
    dqg_tensor_id mz = dqg_constant(g, "mid_zp", DQG_U8, 0, &one, &z_mid, 1);
    dqg_quantize_linear_attrs qa = {.opset = 13};
    dqg_tensor_id yq = dqg_quantize_linear(g, "q1", y, ms, mz, &qa);
    dqg_tensor_id yf = dqg_dequantize_linear(g, "dq2", yq, ms, mz, &pt);
    CHECK(dqg_output(g, qconv(g, "conv2", yf, &rng, fmt, DQG_NONE), "out"));
    CHECK(dqg_graph_finalize(g));

    dqg_compiled *c;
    CHECK(dqg_compile(g, NULL, &c));
    printf("%s block:\n", label);
    print_explain(c);
    size_t n_in = (size_t)N * C * H * W, n_out = (size_t)N * O * H * W;
    uint8_t *xin = malloc(n_in);
    for (size_t i = 0; i < n_in; i++)
        xin[i] = (uint8_t)sample_rand(&rng);
    float *out = malloc(n_out * sizeof(float)), *ref = malloc(n_out * sizeof(float));
    dqg_buffer in = {.name = "x", .data = xin, .size = n_in};
    dqg_buffer ob = {.name = "out", .data = out, .size = n_out * sizeof(float)};
    dqg_buffer rb = {.name = "out", .data = ref, .size = n_out * sizeof(float)};
    double t0 = now_ms();
    CHECK(dqg_execute(c, &in, 1, &ob, 1));
    double t_exec = now_ms() - t0;
    CHECK(dqg_reference_run(g, &in, 1, &rb, 1));
    double maxdiff = 0, maxabs = 0;
    for (size_t i = 0; i < n_out; i++) {
        maxdiff = fmax(maxdiff, fabs((double)out[i] - ref[i]));
        maxabs = fmax(maxabs, fabs((double)ref[i]));
    }
    /* One quantization step of the middle tensor, times the weights' reach,
     * bounds how far a rounding difference can move an output. */
    printf("  first execute %.2f ms; largest difference from the reference %.3g (outputs up "
           "to %.3g)\n\n",
           t_exec, maxdiff, maxabs);
    free(xin);
    free(out);
    free(ref);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

int main(void)
{
    run(DQG_FORMAT_NXC);
    run(DQG_FORMAT_NCX);
    return 0;
}
