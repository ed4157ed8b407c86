/* Real quantized CNNs end to end: the model zoo's networks, written as ONNX
 * Runtime's static quantizer writes them and calibrated, are imported,
 * compiled with fusion, run, and compared with the reference interpreter
 * running the same QDQ graph: cosine similarity of the logits >= 0.99 and
 * the same top-1 class. At least 95% of the multiply-accumulates must run
 * in int8 kernels. Every fused convolution is then checked on its own: fed
 * the reference's quantized input, its quantized output is within one unit
 * of the reference's (the numerical contract), which a whole-network
 * comparison cannot show since one-unit differences travel through the
 * layers. Small inputs (32x32, 64x64 for AlexNet) and fewer blocks keep
 * the suite fast; the full networks at 224x224 are in the benchmarks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dqgraph_onnx.h"
#include "support/model_zoo.h"
#include "support/onnx_model.h"
#include "test_common.h"

static dqg_graph *load(tm_model *m)
{
    size_t n;
    uint8_t *bytes = tm_pack(m, &n);
    dqg_graph *g = NULL;
    dqg_status st = dqg_onnx_load_memory(bytes, n, NULL, NULL, &g);
    free(bytes);
    cr_assert_eq(st, DQG_OK, "import: %s: %s", dqg_status_name(st), dqg_last_error());
    return g;
}

static int argmax(const float *v, int64_t n)
{
    int best = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = (int)i;
    return best;
}

/* The share of MACs in int8 kernels, from the explain log's "MACs: A of B
 * (P%) run in int8 kernels" line; -1 when there is none. */
static double int8_mac_share(const dqg_compiled *c, double *total)
{
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++) {
        double a, b;
        if (sscanf(dqg_compiled_explain(c, i), "MACs: %lf of %lf", &a, &b) == 2) {
            *total = b;
            return a / b;
        }
    }
    return -1.0;
}

static void check_net(zoo_cnn_net net, const zoo_cnn_options *o)
{
    const char *name = zoo_cnn_name(net);
    tm_model *m = zoo_cnn(net, o, NULL);
    cr_assert_not_null(m, "%s: cannot be written", name);
    dqg_graph *g = load(m);
    tm_free(m);
    int64_t s = o->size, k = o->classes;
    float *x = malloc((size_t)(3 * s * s) * sizeof *x), *ref = malloc((size_t)k * sizeof *ref),
          *y = malloc((size_t)k * sizeof *y);
    zoo_cnn_input(o, 7, x);
    dqg_buffer in = {.name = "input", .data = x, .size = (size_t)(3 * s * s) * sizeof *x};
    dqg_buffer out = {
        .id = dqg_graph_output_id(g, 0), .data = ref, .size = (size_t)k * sizeof *ref};
    cr_assert_eq(dqg_graph_output_count(g), 1);
    cr_assert_eq(dqg_tensor_element_count(g, out.id), k);
    in.name = NULL;
    in.id = dqg_graph_input_id(g, 0);
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: %s", name, dqg_last_error());
    out.data = y;
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    double dot = 0.0, nr = 0.0, ny = 0.0;
    for (int64_t i = 0; i < k; i++) {
        dot += (double)ref[i] * y[i];
        nr += (double)ref[i] * ref[i];
        ny += (double)y[i] * y[i];
    }
    double cosine = dot / sqrt(nr * ny + 1e-30);
    cr_assert(nr > 0.0, "%s: the reference logits are all zero", name);
    cr_assert(cosine >= 0.99, "%s: cosine similarity %.5f", name, cosine);
    cr_assert_eq(argmax(y, k), argmax(ref, k), "%s: top-1 %d, reference %d", name, argmax(y, k),
                 argmax(ref, k));
    double macs = 0.0, share = int8_mac_share(c, &macs);
    cr_assert(share >= 0.0, "%s: the explain log has no MACs line", name);
    if (test_int8_fusion())
        cr_assert(share >= 0.95, "%s: %.2f%% of %.4g MACs in int8 kernels", name, 100.0 * share,
                  macs);
    cr_log_info("%s: cosine %.6f, top-1 %d, %zu partitions, %.2f%% of %.4g MACs in int8", name,
                cosine, argmax(y, k), dqg_compiled_partition_count(c), 100.0 * share, macs);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    free(x);
    free(ref);
    free(y);
}

/* ONNX Runtime's quantized bias, DequantizeLinear(s32 constant, x_scale *
 * w_scale, zero point 0), is folded before the fusion passes look at it:
 * the Conv becomes one int8 convolution with that bias and its Relu, and
 * the Gemm one int8 matmul. */
Test(cnn_zoo, s32_bias_dequantize_fuses_into_conv_and_gemm)
{
    enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6 };
    tm_model *m = tm_new(13);
    int64_t xd[] = {1, 4, 5, 5}, wd[] = {3, 4, 3, 3}, od[] = {3}, gd[] = {2, 27}, yd[] = {1, 2};
    int64_t two = 2, shape[] = {1, 27};
    tm_input(m, "x", T_FLOAT, 4, xd, NULL);
    float xs = 0.02f, ys = 0.05f, ws[3] = {0.01f, 0.02f, 0.015f}, bs[3], gs[2] = {0.01f, 0.03f},
          gbs[2];
    uint8_t xz = 128, yz = 0;
    int8_t w[108], gw[54], wz[3] = {0}, gwz[2] = {0};
    int32_t b[3] = {100, -200, 300}, bz[3] = {0}, gb[2] = {-50, 70}, gbz[2] = {0};
    for (int i = 0; i < 108; i++)
        w[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < 54; i++)
        gw[i] = (int8_t)((i * 53) % 255 - 127);
    for (int i = 0; i < 3; i++)
        bs[i] = xs * ws[i];
    for (int i = 0; i < 2; i++)
        gbs[i] = ys * gs[i];
    tm_init(m, "xs", T_FLOAT, 0, NULL, &xs, sizeof xs);
    tm_init(m, "xz", T_UINT8, 0, NULL, &xz, 1);
    tm_init(m, "ys", T_FLOAT, 0, NULL, &ys, sizeof ys);
    tm_init(m, "yz", T_UINT8, 0, NULL, &yz, 1);
    tm_init(m, "w", T_INT8, 4, wd, w, sizeof w);
    tm_init(m, "ws", T_FLOAT, 1, od, ws, sizeof ws);
    tm_init(m, "wz", T_INT8, 1, od, wz, sizeof wz);
    tm_init(m, "b", T_INT32, 1, od, b, sizeof b);
    tm_init(m, "bs", T_FLOAT, 1, od, bs, sizeof bs);
    tm_init(m, "bz", T_INT32, 1, od, bz, sizeof bz);
    tm_init(m, "gw", T_INT8, 2, gd, gw, sizeof gw);
    tm_init(m, "gs", T_FLOAT, 1, &two, gs, sizeof gs);
    tm_init(m, "gwz", T_INT8, 1, &two, gwz, sizeof gwz);
    tm_init(m, "gb", T_INT32, 1, &two, gb, sizeof gb);
    tm_init(m, "gbs", T_FLOAT, 1, &two, gbs, sizeof gbs);
    tm_init(m, "gbz", T_INT32, 1, &two, gbz, sizeof gbz);
    tm_init(m, "shape", 7, 1, &two, shape, sizeof shape);
    tm_node(m, "QuantizeLinear", "", "x_q", "x,xs,xz", "xq");
    tm_node(m, "DequantizeLinear", "", "x_dq", "xq,xs,xz", "xf");
    tm_attr_int(m, tm_node(m, "DequantizeLinear", "", "w_dq", "w,ws,wz", "wf"), "axis", 0);
    tm_attr_int(m, tm_node(m, "DequantizeLinear", "", "b_dq", "b,bs,bz", "bf"), "axis", 0);
    Onnx__NodeProto *c = tm_node(m, "Conv", "", "conv", "xf,wf,bf", "c");
    int64_t k[] = {3, 3}, pads[] = {0, 0, 0, 0};
    tm_attr_ints(m, c, "kernel_shape", k, 2);
    tm_attr_ints(m, c, "pads", pads, 4);
    tm_node(m, "Relu", "", "relu", "c", "r");
    tm_node(m, "QuantizeLinear", "", "r_q", "r,ys,yz", "rq");
    tm_node(m, "DequantizeLinear", "", "r_dq", "rq,ys,yz", "rf");
    tm_node(m, "Reshape", "", "flatten", "rf,shape", "f");
    tm_node(m, "QuantizeLinear", "", "f_q", "f,ys,yz", "fq");
    tm_node(m, "DequantizeLinear", "", "f_dq", "fq,ys,yz", "ff");
    tm_attr_int(m, tm_node(m, "DequantizeLinear", "", "gw_dq", "gw,gs,gwz", "gwf"), "axis", 0);
    tm_attr_int(m, tm_node(m, "DequantizeLinear", "", "gb_dq", "gb,gbs,gbz", "gbf"), "axis", 0);
    tm_attr_int(m, tm_node(m, "Gemm", "", "gemm", "ff,gwf,gbf", "y"), "transB", 1);
    tm_output(m, "y", T_FLOAT, 2, yd);
    dqg_graph *g = load(m);
    tm_free(m);
    float x[100], ref[2], y[2];
    for (int i = 0; i < 100; i++)
        x[i] = (float)((i * 13) % 17 - 8) * 0.2f;
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = ref, .size = sizeof ref};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *cc;
    cr_assert_eq(dqg_compile(g, NULL, &cc), DQG_OK, "%s", dqg_last_error());
    out.data = y;
    cr_assert_eq(dqg_execute(cc, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    /* The Relu's quantized output may differ by one unit (the contract),
     * which the Gemm weighs by its column of weights. */
    for (int i = 0; i < 2; i++) {
        double step = 0.0;
        for (int j = 0; j < 27; j++)
            step += fabs((double)gw[i * 27 + j]) * gs[i] * ys;
        cr_assert(fabs((double)y[i] - ref[i]) <= step + 1e-5 * fabs(ref[i]),
                  "y[%d] = %g, reference %g", i, y[i], ref[i]);
    }
    bool folded = false;
    for (size_t i = 0; i < dqg_compiled_explain_count(cc); i++)
        folded |= strstr(dqg_compiled_explain(cc, i), "folded: Dequantize 'b_dq'") != NULL;
    cr_assert(folded, "the bias dequantize is folded");
    if (test_int8_fusion()) {
        int conv = 0, gemm = 0;
        for (size_t i = 0; i < dqg_compiled_partition_count(cc); i++) {
            const char *info = dqg_compiled_partition_info(cc, i);
            conv += strncmp(info, "int8 conv", 9) == 0 && strstr(info, "ReLU 'relu'");
            gemm += strncmp(info, "int8 matmul", 11) == 0;
        }
        cr_assert(conv == 1 && gemm == 1, "one int8 conv with its Relu (%d), one int8 matmul (%d)",
                  conv, gemm);
    }
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);
}

#define NET_TEST(id, net, sz, red)                                                                 \
    Test(cnn_zoo, id, .timeout = 120)                                                              \
    {                                                                                              \
        zoo_cnn_options o = {.size = (sz), .classes = 100, .reduced = (red), .seed = 11};          \
        check_net(net, &o);                                                                        \
    }

NET_TEST(resnet50, ZOO_RESNET50, 32, false)
NET_TEST(vgg19, ZOO_VGG19, 32, true)
NET_TEST(inception_v1, ZOO_INCEPTION_V1, 32, false)
NET_TEST(densenet121, ZOO_DENSENET121, 32, false)
NET_TEST(squeezenet1_1, ZOO_SQUEEZENET11, 64, false)
NET_TEST(shufflenet_v1, ZOO_SHUFFLENET_V1, 32, false)
NET_TEST(alexnet, ZOO_ALEXNET, 64, true)
NET_TEST(mobilenet_v2, ZOO_MOBILENET_V2, 32, false)
