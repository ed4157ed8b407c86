/* The ONNX front end on models the tests write themselves through protobuf-c:
 * the Quark operator, opset 19-23 types, blocked quantization, a QDQ MatMul
 * that must fuse, external data, TensorProto files, and every import error
 * rule with its status and message. Expected values are computed by hand
 * from the specifications. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dqgraph_onnx.h"
#include "support/model_zoo.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum {
    T_FLOAT = 1,
    T_UINT8 = 2,
    T_INT8 = 3,
    T_INT16 = 5,
    T_INT64 = 7,
    T_F8E4M3FN = 17,
    T_INT4 = 22,
    T_FLOAT4E2M1 = 23
};

static dqg_graph *load(tm_model *m, const dqg_onnx_options *opts)
{
    dqg_graph *g;
    dqg_status st = tm_load(m, opts, &g);
    cr_assert_eq(st, DQG_OK, "import: %s: %s", dqg_status_name(st), dqg_last_error());
    cr_assert(dqg_graph_is_finalized(g));
    return g;
}

static dqg_status load_status(tm_model *m, const dqg_onnx_options *opts)
{
    size_t n;
    uint8_t *bytes = tm_pack(m, &n);
    dqg_graph *g = (dqg_graph *)1;
    dqg_status st = dqg_onnx_load_memory(bytes, n, NULL, opts, &g);
    free(bytes);
    if (st == DQG_OK)
        dqg_graph_destroy(g);
    else
        cr_assert_null(g, "a failed import must leave *out NULL");
    return st;
}

/* Runs g (one input, one f32 output) on the reference interpreter and, when
 * `compiled`, with the default compile options; returns the fused count. */
static size_t run_f32(dqg_graph *g, const void *x, size_t xsize, float *y, size_t ysize,
                      bool compiled)
{
    size_t n_in = dqg_graph_input_count(g);
    dqg_buffer in = {
        .id = n_in ? dqg_graph_input_id(g, 0) : DQG_NONE, .data = (void *)x, .size = xsize};
    dqg_buffer out = {.id = dqg_graph_output_id(g, 0), .data = y, .size = ysize};
    cr_assert_eq(dqg_reference_run(g, &in, n_in, &out, 1), DQG_OK, "%s", dqg_last_error());
    if (!compiled)
        return 0;
    float *y2 = malloc(ysize);
    out.data = y2;
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, n_in, &out, 1), DQG_OK, "%s", dqg_last_error());
    size_t fused = dqg_compiled_fused_count(c);
    for (size_t i = 0; i < ysize / sizeof(float); i++)
        cr_assert(fabsf(y2[i] - y[i]) <= 1e-5f * fabsf(y[i]) + 1e-6f,
                  "compiled[%zu] = %g, reference %g", i, y2[i], y[i]);
    free(y2);
    dqg_compiled_destroy(c);
    return fused;
}

Test(onnx, quark_extended_dequantize_s16_per_axis)
{
    tm_model *m = tm_new(21);
    tm_opset(m, "com.amd.quark", 1);
    int64_t xd[] = {2, 3}, sd[] = {3};
    float scale[] = {0.5f, 0.25f, 2.0f};
    int16_t zp[] = {0, 4, -1};
    tm_input(m, "x", T_INT16, 2, xd, NULL);
    tm_init(m, "scale", T_FLOAT, 1, sd, scale, sizeof scale);
    tm_init(m, "zp", T_INT16, 1, sd, zp, sizeof zp);
    Onnx__NodeProto *n =
        tm_node(m, "ExtendedDequantizeLinear", "com.amd.quark", "edq", "x,scale,zp", "y");
    tm_attr_int(m, n, "axis", 1);
    tm_output(m, "y", T_FLOAT, 2, xd);
    dqg_graph *g = load(m, NULL);
    int16_t x[] = {-32768, 0, 32767, 100, -100, 7};
    float y[6];
    run_f32(g, x, sizeof x, y, sizeof y, true);
    const float want[] = {-16384.0f, -1.0f, 65536.0f, 50.0f, -26.0f, 16.0f};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(y[i], want[i], "y[%d] = %g, want %g", i, y[i], want[i]);
    cr_assert_str_eq(dqg_tensor_name(g, dqg_graph_output_id(g, 0)), "y");
    dqg_graph_destroy(g);
    tm_free(m);
}

Test(onnx, blocked_int4_weight_only_matmul_opset21)
{
    tm_model *m = tm_new(21);
    int64_t xd[] = {1, 4}, wd[] = {4, 2}, sd[] = {2, 2}, yd[] = {1, 2};
    /* W = [[1,-2],[3,-4],[7,-8],[0,5]], packed low nibble first. */
    const uint8_t w[] = {0xE1, 0xC3, 0x87, 0x50};
    const float scale[] = {0.5f, 1.0f, 2.0f, 0.25f};
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "w", T_INT4, 2, wd, w, sizeof w);
    tm_init(m, "w_scale", T_FLOAT, 2, sd, scale, sizeof scale);
    Onnx__NodeProto *dq = tm_node(m, "DequantizeLinear", NULL, "dq_w", "w,w_scale", "wf");
    tm_attr_int(m, dq, "axis", 0);
    tm_attr_int(m, dq, "block_size", 2);
    tm_node(m, "MatMul", NULL, "mm", "x,wf", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    dqg_graph *g = load(m, NULL);
    const float x[] = {1, 2, 3, 4};
    float y[2];
    run_f32(g, x, sizeof x, y, sizeof y, true);
    /* Dequantized W = [[0.5,-2],[1.5,-4],[14,-2],[0,1.25]]. */
    cr_assert_eq(y[0], 45.5f, "y[0] = %g", y[0]);
    cr_assert_eq(y[1], -11.0f, "y[1] = %g", y[1]);
    dqg_graph_destroy(g);
    tm_free(m);
}

Test(onnx, float8_and_float4_inputs_opset23)
{
    tm_model *m = tm_new(23);
    int64_t d4[] = {4}, d2[] = {2};
    const uint8_t f8[] = {0x38, 0x40, 0xC4, 0x7E}; /* 1, 2, -3, 448 */
    const uint8_t f4[] = {0xF2};                   /* 1, -6 */
    const float half = 0.5f, two = 2.0f;
    tm_init(m, "a", T_F8E4M3FN, 1, d4, f8, sizeof f8);
    tm_init(m, "b", T_FLOAT4E2M1, 1, d2, f4, sizeof f4);
    tm_init(m, "sa", T_FLOAT, 0, NULL, &half, 4);
    tm_init(m, "sb", T_FLOAT, 0, NULL, &two, 4);
    tm_input(m, "x", T_FLOAT, 1, d4, NULL);
    tm_node(m, "DequantizeLinear", NULL, "dqa", "a,sa", "af");
    tm_node(m, "DequantizeLinear", NULL, "dqb", "b,sb", "bf");
    tm_node(m, "Add", NULL, "add", "x,af", "y");
    tm_output(m, "y", T_FLOAT, 1, d4);
    tm_output(m, "bf", T_FLOAT, 1, d2);
    dqg_graph *g = load(m, NULL);
    const float x[] = {0, 0, 0, 0};
    float y[4], b[2];
    dqg_buffer in = {.id = dqg_graph_input_id(g, 0), .data = (void *)x, .size = sizeof x};
    dqg_buffer out[2] = {{.name = "y", .data = y, .size = sizeof y},
                         {.name = "bf", .data = b, .size = sizeof b}};
    const float want[] = {0.5f, 1.0f, -1.5f, 224.0f};
    for (int pass = 0; pass < 2; pass++) {
        memset(y, 0, sizeof y);
        memset(b, 0, sizeof b);
        if (pass == 0) {
            cr_assert_eq(dqg_reference_run(g, &in, 1, out, 2), DQG_OK, "%s", dqg_last_error());
        } else {
            dqg_compiled *c = NULL;
            cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
            cr_assert_eq(dqg_execute(c, &in, 1, out, 2), DQG_OK, "%s", dqg_last_error());
            dqg_compiled_destroy(c);
        }
        for (int i = 0; i < 4; i++)
            cr_assert_eq(y[i], want[i], "pass %d: y[%d] = %g", pass, i, y[i]);
        /* The second output is a dequantized constant, computed by an op. */
        cr_assert_eq(b[0], 2.0f, "pass %d: bf[0] = %g", pass, b[0]);
        cr_assert_eq(b[1], -12.0f, "pass %d: bf[1] = %g", pass, b[1]);
    }
    dqg_graph_destroy(g);
    tm_free(m);
}

/* x f32 -> QuantizeLinear u8 -> DequantizeLinear -> MatMul with a per-channel
 * s8 weight -> y: the QDQ pattern an ONNX Runtime quantizer writes. */
static tm_model *qdq_matmul_model(void)
{
    tm_model *m = tm_new(13);
    int64_t xd[] = {4, 8}, wd[] = {8, 6}, sd[] = {6}, yd[] = {4, 6};
    int8_t w[48];
    float ws[6];
    for (int i = 0; i < 48; i++)
        w[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < 6; i++)
        ws[i] = 0.01f * (float)(i + 1);
    const float xs = 0.05f;
    const uint8_t xzp = 128;
    tm_input(m, "x", T_FLOAT, 2, xd, NULL);
    tm_init(m, "x_scale", T_FLOAT, 0, NULL, &xs, 4);
    tm_init(m, "x_zp", T_UINT8, 0, NULL, &xzp, 1);
    tm_init(m, "w", T_INT8, 2, wd, w, sizeof w);
    tm_init(m, "w_scale", T_FLOAT, 1, sd, ws, sizeof ws);
    tm_node(m, "QuantizeLinear", NULL, "q_x", "x,x_scale,x_zp", "xq");
    tm_node(m, "DequantizeLinear", NULL, "dq_x", "xq,x_scale,x_zp", "xf");
    Onnx__NodeProto *dq = tm_node(m, "DequantizeLinear", NULL, "dq_w", "w,w_scale", "wf");
    tm_attr_int(m, dq, "axis", 1);
    tm_node(m, "MatMul", NULL, "mm", "xf,wf", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    return m;
}

Test(onnx, qdq_matmul_fuses_and_matches_reference)
{
    tm_model *m = qdq_matmul_model();
    dqg_graph *g = load(m, NULL);
    float x[32], y[24];
    for (int i = 0; i < 32; i++)
        x[i] = (float)((i * 13) % 17 - 8) * 0.37f;
    size_t fused = run_f32(g, x, sizeof x, y, sizeof y, true);
    cr_assert_geq(fused, 1, "the DQ -> MatMul pattern must fuse");
    /* y[0][0] by hand from the quantized operands. */
    double acc = 0;
    for (int k = 0; k < 8; k++) {
        float q = rintf(x[k] / 0.05f) + 128.0f;
        q = q < 0 ? 0 : q > 255 ? 255 : q;
        acc += (double)((q - 128.0f) * 0.05f) *
               (double)((float)(int8_t)((k * 6 * 37) % 255 - 127) * 0.01f);
    }
    cr_assert(fabs(y[0] - acc) < 1e-4, "y[0][0] = %g, by hand %g", y[0], acc);
    dqg_graph_destroy(g);
    tm_free(m);
}

/* A BERT-style layer's projections as ONNX Runtime's dynamic quantizer
 * writes them: one DynamicQuantizeLinear read by four MatMulInteger -> Cast
 * -> Mul -> Add chains. The quantization runs once, on its own (its result
 * has four readers); each chain becomes one int8 MatMul partition with the
 * Cast, both Muls and the bias inside; the outputs match the reference
 * within the contract's 1e-5 of their magnitude. */
Test(onnx, ort_dynamic_quantizer_projections_one_partition_per_matmul)
{
    const int64_t M = 24, H = 96, F = 160;
    tm_model *m = zoo_ort_dynamic_projections(M, H, F, 77, NULL);
    dqg_graph *g = load(m, NULL);
    tm_free(m);
    cr_assert_eq(dqg_graph_output_count(g), 4);
    float *x = malloc((size_t)(M * H) * sizeof *x);
    for (int64_t i = 0; i < M * H; i++)
        x[i] = (float)((i * 7919) % 4001) / 1000.0f - 2.0f;
    dqg_buffer in = {.name = "x", .data = x, .size = (size_t)(M * H) * sizeof *x};
    static const char *const names[] = {"q", "k", "v", "ffn"};
    float *out[2][4];
    dqg_buffer ob[2][4];
    for (int w = 0; w < 2; w++)
        for (int o = 0; o < 4; o++) {
            size_t n = (size_t)(M * (o == 3 ? F : H));
            out[w][o] = malloc(n * sizeof(float));
            ob[w][o] = (dqg_buffer){.name = names[o], .data = out[w][o], .size = n * sizeof(float)};
        }
    cr_assert_eq(dqg_reference_run(g, &in, 1, ob[0], 4), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c;
    dqg_compile_options opt = dqg_compile_options_default();
    cr_assert_eq(dqg_compile(g, &opt, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, ob[1], 4), DQG_OK, "%s", dqg_last_error());
    if (test_int8_fusion()) {
        size_t parts = dqg_compiled_partition_count(c), matmuls = 0;
        for (size_t i = 0; i < parts; i++) {
            const char *info = dqg_compiled_partition_info(c, i);
            matmuls += strncmp(info, "int8 matmul", 11) == 0;
            cr_assert(strncmp(info, "int8 matmul", 11) == 0 ||
                          strstr(info, "[DynamicQuantizeLinear 'x_dql']"),
                      "partition %zu: %s", i, info);
        }
        cr_assert_eq(matmuls, 4);
        cr_assert_eq(parts, 5);
    }
    for (int o = 0; o < 4; o++) {
        size_t n = (size_t)(M * (o == 3 ? F : H));
        double mx = 0.0;
        for (size_t i = 0; i < n; i++)
            mx = fmax(mx, fabs(out[0][o][i]));
        for (size_t i = 0; i < n; i++)
            cr_assert(fabs((double)out[1][o][i] - out[0][o][i]) <= 1e-5 * mx,
                      "%s[%zu]: %.9g, reference %.9g", names[o], i, out[1][o][i], out[0][o][i]);
    }
    for (int w = 0; w < 2; w++)
        for (int o = 0; o < 4; o++)
            free(out[w][o]);
    free(x);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

Test(onnx, gemm_and_conv_attributes)
{
    tm_model *m = tm_new(13);
    int64_t ad[] = {3, 2}, bd[] = {4, 3}, cd[] = {4}, yd[] = {2, 4};
    const float b[] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, c[] = {1, 2, 3, 4};
    tm_input(m, "a", T_FLOAT, 2, ad, NULL);
    tm_init(m, "b", T_FLOAT, 2, bd, b, sizeof b);
    tm_init(m, "c", T_FLOAT, 1, cd, c, sizeof c);
    Onnx__NodeProto *n = tm_node(m, "Gemm", NULL, "gemm", "a,b,c", "y");
    tm_attr_int(m, n, "transA", 1);
    tm_attr_int(m, n, "transB", 1);
    tm_attr_float(m, n, "alpha", 2.0f);
    tm_attr_float(m, n, "beta", -1.0f);
    tm_output(m, "y", T_FLOAT, 2, yd);
    dqg_graph *g = load(m, NULL);
    /* A' = [[1,3,5],[2,4,6]]; A'B' = [[1,3,5,9],[2,4,6,12]]; y = 2 A'B' - c. */
    const float a[] = {1, 2, 3, 4, 5, 6};
    float y[8];
    run_f32(g, a, sizeof a, y, sizeof y, true);
    const float want[] = {1, 4, 7, 14, 3, 6, 9, 20};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(y[i], want[i], "gemm y[%d] = %g, want %g", i, y[i], want[i]);
    dqg_graph_destroy(g);
    tm_free(m);

    /* Conv 1x1x3x3, kernel 2x2 of ones, stride 2, SAME_LOWER: output 2x2 with
     * the padding row and column in front. */
    m = tm_new(13);
    int64_t xd[] = {1, 1, 3, 3}, wd[] = {1, 1, 2, 2}, od[] = {1, 1, 2, 2};
    const float ones[] = {1, 1, 1, 1};
    tm_input(m, "x", T_FLOAT, 4, xd, NULL);
    tm_init(m, "w", T_FLOAT, 4, wd, ones, sizeof ones);
    n = tm_node(m, "Conv", NULL, "conv", "x,w", "y");
    tm_attr_string(m, n, "auto_pad", "SAME_LOWER");
    int64_t strides[] = {2, 2};
    tm_attr_ints(m, n, "strides", strides, 2);
    tm_output(m, "y", T_FLOAT, 4, od);
    g = load(m, NULL);
    const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    float o[4];
    run_f32(g, x, sizeof x, o, sizeof o, true);
    const float want_o[] = {1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(o[i], want_o[i], "conv y[%d] = %g, want %g", i, o[i], want_o[i]);
    dqg_graph_destroy(g);
    tm_free(m);
}

Test(onnx, matmul_integer_is_exact_int32)
{
    tm_model *m = tm_new(10);
    int64_t ad[] = {2, 3}, bd[] = {3, 2}, yd[] = {2, 2};
    const uint8_t b[] = {255, 0, 1, 2, 3, 4};
    const uint8_t azp = 10, bzp = 1;
    tm_input(m, "a", T_UINT8, 2, ad, NULL);
    tm_init(m, "b", T_UINT8, 2, bd, b, sizeof b);
    tm_init(m, "azp", T_UINT8, 0, NULL, &azp, 1);
    tm_init(m, "bzp", T_UINT8, 0, NULL, &bzp, 1);
    tm_node(m, "MatMulInteger", NULL, "mmi", "a,b,azp,bzp", "y");
    tm_output(m, "y", 6, 2, yd);
    dqg_graph *g = load(m, NULL);
    cr_assert_eq(dqg_tensor_dtype(g, dqg_graph_output_id(g, 0)), DQG_S32);
    const uint8_t a[] = {11, 12, 13, 0, 255, 7};
    int32_t y[4];
    dqg_buffer in = {.id = dqg_graph_input_id(g, 0), .data = (void *)a, .size = sizeof a};
    dqg_buffer out = {.id = dqg_graph_output_id(g, 0), .data = y, .size = sizeof y};
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    /* (A - 10) = [[1,2,3],[-10,245,-3]]; (B - 1) = [[254,-1],[0,1],[2,3]]. */
    const int32_t want[] = {1 * 254 + 0 + 3 * 2, -1 + 2 + 9, -10 * 254 + 0 - 6, 10 + 245 - 9};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(y[i], want[i], "y[%d] = %d, want %d", i, y[i], want[i]);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    tm_free(m);
}

/* MatMulInteger's and ConvInteger's int32 results are exact at any K:
 * sums of u8 x u8 products pass 2^24 (where f32 stops holding every
 * integer) from K = 259 on. Weights at run time (an attention product of a
 * dynamically quantized model), constant u8 weights (a zero point of 250
 * leaves them outside s8), constant s8 weights without a source zero point
 * (the fused int8 kernel) and with one (oneDNN's compensation would round:
 * the exact kernel), each with fusion, without it and on the reference
 * backend. */
static const dqg_compile_options integer_configs[3] = {
    {.backend = DQG_BACKEND_ONEDNN},
    {.backend = DQG_BACKEND_ONEDNN, .disable_fusion = true},
    {.backend = DQG_BACKEND_REFERENCE},
};

/* Runs m (input a, then b when it is one) and checks y[i] == want[i]. */
static void check_integer_model(tm_model *m, const void *a, size_t a_size, const void *b,
                                size_t b_size, bool runtime_b, const int64_t *want, int64_t n,
                                const char *what)
{
    int32_t *y = malloc((size_t)n * sizeof *y);
    cr_assert_not_null(y);
    for (int cfg = 0; cfg < 3; cfg++) {
        dqg_graph *g = load(m, NULL);
        dqg_buffer in[2] = {
            {.id = dqg_graph_input_id(g, 0), .data = (void *)a, .size = a_size},
            {.id = runtime_b ? dqg_graph_input_id(g, 1) : 0, .data = (void *)b, .size = b_size}};
        dqg_buffer out = {
            .id = dqg_graph_output_id(g, 0), .data = y, .size = (size_t)n * sizeof *y};
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, &integer_configs[cfg], &c), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(dqg_execute(c, in, runtime_b ? 2 : 1, &out, 1), DQG_OK, "%s",
                     dqg_last_error());
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(y[i], want[i], "%s, configuration %d: y[%lld] = %d, want %lld", what, cfg,
                         (long long)i, y[i], (long long)want[i]);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
    free(y);
}

Test(onnx, matmul_integer_stays_exact_past_2_24)
{
    enum { M = 3, K = 1031, N = 5 };
    static uint8_t a[M * K], b[K * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (uint8_t)(i % 3 ? 255 - i % 5 : 250 + i % 6);
    for (int i = 0; i < K * N; i++)
        b[i] = (uint8_t)(i % 7 ? 255 - i % 4 : 3 * (i % 11));
    for (int kind = 0; kind < 4; kind++) {
        /* 0: run-time u8 b; 1: constant u8 b; 2, 3: constant s8 b. */
        bool s8 = kind >= 2;
        const uint8_t azp = kind == 2 ? 0 : 7, bzp = kind == 1 ? 250 : 0;
        int64_t want[M * N];
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                want[i * N + j] = 0;
                for (int k = 0; k < K; k++) {
                    int64_t bv = s8 ? (int8_t)(b[k * N + j] & 0x7f) : b[k * N + j];
                    want[i * N + j] += ((int64_t)a[i * K + k] - azp) * (bv - bzp);
                }
            }
        static uint8_t bs[K * N];
        for (int i = 0; i < K * N; i++)
            bs[i] = s8 ? (uint8_t)(b[i] & 0x7f) : b[i];
        tm_model *m = tm_new(10);
        int64_t ad[] = {M, K}, bd[] = {K, N}, yd[] = {M, N};
        tm_input(m, "a", T_UINT8, 2, ad, NULL);
        if (kind == 0)
            tm_input(m, "b", T_UINT8, 2, bd, NULL);
        else
            tm_init(m, "b", s8 ? T_INT8 : T_UINT8, 2, bd, bs, sizeof bs);
        tm_init(m, "azp", T_UINT8, 0, NULL, &azp, 1);
        tm_init(m, "bzp", s8 ? T_INT8 : T_UINT8, 0, NULL, &bzp, 1);
        tm_node(m, "MatMulInteger", NULL, "mmi", "a,b,azp,bzp", "y");
        tm_output(m, "y", 6, 2, yd);
        const char *what[] = {"run-time u8 b", "constant u8 b", "constant s8 b",
                              "constant s8 b, a zero point"};
        check_integer_model(m, a, sizeof a, bs, sizeof bs, kind == 0, want, M * N, what[kind]);
        tm_free(m);
    }
}

/* MatMulInteger's zero points per row of A and per column of B (1-D), past
 * 2^24 too: run-time and constant u8 B. */
Test(onnx, matmul_integer_per_row_and_column_zero_points)
{
    enum { M = 4, K = 777, N = 3 };
    static uint8_t a[M * K], b[K * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (uint8_t)(i % 5 ? 250 + i % 6 : 9 * (i % 13));
    for (int i = 0; i < K * N; i++)
        b[i] = (uint8_t)(i % 6 ? 255 - i % 3 : 7 * (i % 17));
    const uint8_t azp[M] = {0, 3, 200, 255}, bzp[N] = {1, 128, 250};
    int64_t want[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            want[i * N + j] = 0;
            for (int k = 0; k < K; k++)
                want[i * N + j] +=
                    ((int64_t)a[i * K + k] - azp[i]) * ((int64_t)b[k * N + j] - bzp[j]);
        }
    for (int constant_b = 0; constant_b < 2; constant_b++) {
        tm_model *m = tm_new(10);
        int64_t ad[] = {M, K}, bd[] = {K, N}, yd[] = {M, N}, md = M, nd = N;
        tm_input(m, "a", T_UINT8, 2, ad, NULL);
        if (constant_b)
            tm_init(m, "b", T_UINT8, 2, bd, b, sizeof b);
        else
            tm_input(m, "b", T_UINT8, 2, bd, NULL);
        tm_init(m, "azp", T_UINT8, 1, &md, azp, sizeof azp);
        tm_init(m, "bzp", T_UINT8, 1, &nd, bzp, sizeof bzp);
        tm_node(m, "MatMulInteger", NULL, "mmi", "a,b,azp,bzp", "y");
        tm_output(m, "y", 6, 2, yd);
        check_integer_model(m, a, sizeof a, b, sizeof b, !constant_b, want, M * N,
                            constant_b ? "constant b" : "run-time b");
        tm_free(m);
    }
}

/* ConvInteger's exact result, NCHW, batch 1, square kernels of KS: x and w
 * as stored bytes (signed when their flags say so) less their zero points,
 * summed over the taps inside the image (pads hold the zero point). */
typedef struct conv_int_shape {
    int64_t groups, Cg, Og, H, W, KS, stride[2], pads[4];
} conv_int_shape;

static int64_t conv_int_out(const conv_int_shape *s, int d)
{
    int64_t in = d == 0 ? s->H : s->W;
    return (in + s->pads[d] + s->pads[d + 2] - s->KS) / s->stride[d] + 1;
}

static void conv_integer_want(const conv_int_shape *s, const uint8_t *x, bool x_signed, int64_t xzp,
                              const uint8_t *w, bool w_signed, int64_t wzp, int64_t *want)
{
    int64_t OH = conv_int_out(s, 0), OW = conv_int_out(s, 1), KS = s->KS;
    for (int64_t o = 0; o < s->groups * s->Og; o++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t acc = 0;
                for (int64_t c = 0; c < s->Cg; c++)
                    for (int64_t kh = 0; kh < KS; kh++)
                        for (int64_t kw = 0; kw < KS; kw++) {
                            int64_t ih = oh * s->stride[0] + kh - s->pads[0];
                            int64_t iw = ow * s->stride[1] + kw - s->pads[1];
                            if (ih < 0 || ih >= s->H || iw < 0 || iw >= s->W)
                                continue;
                            uint8_t xb = x[((o / s->Og * s->Cg + c) * s->H + ih) * s->W + iw];
                            uint8_t wb = w[((o * s->Cg + c) * KS + kh) * KS + kw];
                            int64_t xv = x_signed ? (int8_t)xb : xb,
                                    wv = w_signed ? (int8_t)wb : wb;
                            acc += (xv - xzp) * (wv - wzp);
                        }
                want[(o * OH + oh) * OW + ow] = acc;
            }
}

Test(onnx, conv_integer_stays_exact_past_2_24)
{
    enum { C = 80, H = 5, W = 4, O = 4, KS = 3 }; /* K = 80 x 9 = 720 */
    static uint8_t x[C * H * W], w[O * C * KS * KS];
    for (int i = 0; i < C * H * W; i++)
        x[i] = (uint8_t)(i % 4 ? 254 + i % 2 : 200 + i % 9);
    for (int i = 0; i < O * C * KS * KS; i++)
        w[i] = (uint8_t)(i % 5 ? 255 - i % 3 : 17 * (i % 7));
    for (int kind = 0; kind < 5; kind++) {
        /* 0: run-time w; 1: constant w with a zero point outside s8's
         * reach; 2, 3: constant s8 w, without and with a source zero point;
         * 4: run-time w in two groups (the reference kernel). */
        bool s8 = kind == 2 || kind == 3;
        int groups = kind == 4 ? 2 : 1, Cg = C / groups, Og = O / groups;
        const uint8_t xzp = kind == 2 ? 0 : 5, wzp = kind == 1 ? 240 : 0;
        static uint8_t ws[O * C * KS * KS];
        for (int i = 0; i < O * Cg * KS * KS; i++)
            ws[i] = s8 ? (uint8_t)(w[i] & 0x7f) : w[i];
        int64_t want[O * H * W];
        const conv_int_shape sh = {groups, Cg, Og, H, W, KS, {1, 1}, {1, 1, 1, 1}};
        conv_integer_want(&sh, x, false, xzp, ws, false, wzp, want);
        tm_model *m = tm_new(10);
        int64_t xd[] = {1, C, H, W}, wd[] = {O, Cg, KS, KS}, yd[] = {1, O, H, W};
        size_t w_size = (size_t)O * Cg * KS * KS;
        tm_input(m, "x", T_UINT8, 4, xd, NULL);
        if (kind == 0 || kind == 4)
            tm_input(m, "w", T_UINT8, 4, wd, NULL);
        else
            tm_init(m, "w", s8 ? T_INT8 : T_UINT8, 4, wd, ws, w_size);
        tm_init(m, "xzp", T_UINT8, 0, NULL, &xzp, 1);
        tm_init(m, "wzp", s8 ? T_INT8 : T_UINT8, 0, NULL, &wzp, 1);
        Onnx__NodeProto *n = tm_node(m, "ConvInteger", NULL, "ci", "x,w,xzp,wzp", "y");
        const int64_t pads[] = {1, 1, 1, 1};
        tm_attr_ints(m, n, "pads", pads, 4);
        tm_attr_int(m, n, "group", groups);
        tm_output(m, "y", 6, 4, yd);
        const char *what[] = {"run-time w", "constant u8 w", "constant s8 w",
                              "constant s8 w, a zero point", "run-time w, two groups"};
        check_integer_model(m, x, sizeof x, ws, w_size, kind == 0 || kind == 4, want, O * H * W,
                            what[kind]);
        tm_free(m);
    }
}

/* ConvInteger without zero points and s8 weights (the fused int8 kernel)
 * stays exact past 2^24 on every convolution shape: oneDNN 2.6's int8
 * convolutions pass their sums through f32 on the way to s32 (jit_int8,
 * gemm and ref_int8 always; brgconv with padding, as below; every kernel
 * of AVX2-VNNI CPUs), so such a layer runs on the exact kernels. */
Test(onnx, conv_integer_without_zero_points_stays_exact_past_2_24)
{
    static const struct {
        conv_int_shape s;
        bool s8_x;
    } cases[] = {
        {{4, 300, 3, 10, 6, 3, {2, 1}, {0, 1, 1, 2}}, false},
        {{1, 80, 4, 5, 4, 3, {1, 1}, {1, 1, 1, 1}}, false},
        {{2, 700, 2, 4, 5, 3, {1, 2}, {1, 0, 1, 1}}, true},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const conv_int_shape *sh = &cases[ci].s;
        int64_t G = sh->groups, Cg = sh->Cg, H = sh->H, W = sh->W, KS = sh->KS, C = G * Cg,
                O = G * sh->Og, OH = conv_int_out(sh, 0), OW = conv_int_out(sh, 1);
        const int64_t *st = sh->stride, *pd = sh->pads;
        uint8_t *x = malloc((size_t)(C * H * W)), *w = malloc((size_t)(O * Cg * KS * KS));
        int64_t *want = calloc((size_t)(O * OH * OW), sizeof *want);
        cr_assert(x && w && want);
        for (int64_t i = 0; i < C * H * W; i++)
            x[i] = cases[ci].s8_x ? (uint8_t)(int8_t)(i % 4 ? -128 + i % 2 : -120 + i % 9)
                                  : (uint8_t)(i % 4 ? 254 + i % 2 : 200 + i % 9);
        for (int64_t i = 0; i < O * Cg * KS * KS; i++)
            w[i] = (uint8_t)(int8_t)(i % 5 ? (cases[ci].s8_x ? -127 : 127) + i % 3 : 17 * (i % 7));
        conv_integer_want(sh, x, cases[ci].s8_x, 0, w, true, 0, want);
        tm_model *m = tm_new(10);
        int64_t xd[] = {1, C, H, W}, wd[] = {O, Cg, KS, KS}, yd[] = {1, O, OH, OW};
        tm_input(m, "x", cases[ci].s8_x ? T_INT8 : T_UINT8, 4, xd, NULL);
        tm_init(m, "w", T_INT8, 4, wd, w, (size_t)(O * Cg * KS * KS));
        Onnx__NodeProto *n = tm_node(m, "ConvInteger", NULL, "ci", "x,w", "y");
        tm_attr_ints(m, n, "pads", pd, 4);
        tm_attr_ints(m, n, "strides", st, 2);
        tm_attr_int(m, n, "group", G);
        tm_output(m, "y", 6, 4, yd);
        char what[64];
        snprintf(what, sizeof what, "case %zu", ci);
        check_integer_model(m, x, (size_t)(C * H * W), NULL, 0, false, want, O * OH * OW, what);
        tm_free(m);
        free(x);
        free(w);
        free(want);
    }
}

/* ---- Import errors ------------------------------------------------------------ */

Test(onnx, unsupported_operator_names_type_domain_opset_and_node)
{
    tm_model *m = tm_new(13);
    int64_t d[] = {4};
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "NonZero", NULL, "nz", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_UNSUPPORTED, "NonZero", "'nz'", "ai.onnx", "opset 13");
    tm_free(m);
}

Test(onnx, malformed_and_truncated_bytes_are_parse_errors)
{
    dqg_graph *g = NULL;
    const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    expect_error(dqg_onnx_load_memory(junk, sizeof junk, NULL, NULL, &g), DQG_PARSE_ERROR,
                 "ModelProto");
    cr_assert_null(g);
    tm_model *m = qdq_matmul_model();
    size_t n;
    uint8_t *bytes = tm_pack(m, &n);
    expect_error(dqg_onnx_load_memory(bytes, n / 2, NULL, NULL, &g), DQG_PARSE_ERROR,
                 "truncated or corrupt");
    cr_assert_null(g);
    dqg_onnx_options o = {.max_model_bytes = n - 1};
    expect_error(dqg_onnx_load_memory(bytes, n, NULL, &o, &g), DQG_INVALID_ARGUMENT,
                 "exceeds the limit");
    free(bytes);
    tm_free(m);
    expect_error(dqg_onnx_load_file("/nonexistent/model.onnx", NULL, &g), DQG_IO_ERROR,
                 "/nonexistent/model.onnx");
}

Test(onnx, symbolic_dimension_needs_a_value)
{
    tm_model *m = tm_new(13);
    int64_t d[] = {-1, 4};
    tm_input(m, "x", T_FLOAT, 2, d, "batch");
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "graph input 'x'", "dimension 0",
                 "'batch'");
    dqg_onnx_dim_param p = {"batch", 3};
    dqg_onnx_options o = {.dim_params = &p, .n_dim_params = 1};
    dqg_graph *g = load(m, &o);
    int64_t dims[DQG_MAX_RANK];
    cr_assert_eq(dqg_tensor_dims(g, dqg_graph_input_id(g, 0), dims), 2);
    cr_assert_eq(dims[0], 3);
    cr_assert_eq(dims[1], 4);
    dqg_graph_destroy(g);
    p.value = 0;
    expect_error(load_status(m, &o), DQG_INVALID_ARGUMENT, "'batch'", ">= 1");
    tm_free(m);
}

Test(onnx, structural_errors)
{
    int64_t d[] = {4};
    /* A cycle through names. */
    tm_model *m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "Add", NULL, "a", "x,b_out", "a_out");
    tm_node(m, "Relu", NULL, "b", "a_out", "b_out");
    tm_output(m, "a_out", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "cycle");
    tm_free(m);
    /* A value produced twice. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "Relu", NULL, "r1", "x", "y");
    tm_node(m, "Relu", NULL, "r2", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "'y' is produced twice");
    tm_free(m);
    /* An input nobody produces. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "Add", NULL, "a", "x,ghost", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "'ghost'");
    tm_free(m);
    /* A domain without an opset import. */
    m = tm_new(21);
    tm_input(m, "x", T_INT16, 1, d, NULL);
    tm_init(m, "s", T_FLOAT, 0, NULL, (float[]){1.0f}, 4);
    tm_node(m, "ExtendedDequantizeLinear", "com.amd.quark", "q", "x,s", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "com.amd.quark", "no opset");
    tm_free(m);
    /* raw_data shorter than the shape. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_init(m, "w", T_FLOAT, 1, d, (float[]){1, 2, 3}, 12);
    tm_node(m, "Add", NULL, "a", "x,w", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "initializer 'w'", "raw_data has 12 bytes",
                 "needs 16");
    tm_free(m);
    /* A declared output type that the graph does not compute. */
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_INT8, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "graph output 'y'", "INT8");
    tm_free(m);
    /* A builder rule, reported with the node: DequantizeLinear block_size before opset 21. */
    m = tm_new(19);
    int64_t wd[] = {4, 2};
    tm_init(m, "w", T_INT8, 2, wd, (int8_t[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    tm_init(m, "s", T_FLOAT, 0, NULL, (float[]){1.0f}, 4);
    Onnx__NodeProto *n = tm_node(m, "DequantizeLinear", NULL, "dq", "w,s", "y");
    tm_attr_int(m, n, "block_size", 2);
    tm_output(m, "y", T_FLOAT, 2, wd);
    expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "DequantizeLinear node 'dq'",
                 "block_size");
    tm_free(m);
}

Test(onnx, initializer_shadowing_an_input_is_a_constant)
{
    tm_model *m = tm_new(13);
    int64_t d[] = {2};
    const float w[] = {10, 20};
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_input(m, "w", T_FLOAT, 1, d, NULL);
    tm_init(m, "w", T_FLOAT, 1, d, w, sizeof w);
    tm_node(m, "Add", NULL, "a", "x,w", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    dqg_graph *g = load(m, NULL);
    cr_assert_eq(dqg_graph_input_count(g), 1, "the shadowed input is not a graph input");
    const float x[] = {1, 2};
    float y[2];
    run_f32(g, x, sizeof x, y, sizeof y, false);
    cr_assert_eq(y[0], 11.0f);
    cr_assert_eq(y[1], 22.0f);
    dqg_graph_destroy(g);
    tm_free(m);
}

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/dqg_onnx_XXXXXX";
    char *d = mkdtemp(tmpl);
    cr_assert_not_null(d);
    return strdup(d);
}

Test(onnx, external_data_is_confined_to_the_model_folder)
{
    char *dir = temp_dir();
    char path[512], wpath[512];
    snprintf(wpath, sizeof wpath, "%s/weights.bin", dir);
    const float w[] = {1.5f, -2.0f};
    FILE *f = fopen(wpath, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(w, 4, 2, f), 2);
    fclose(f);
    int64_t d[] = {2};
    const char *locations[] = {"weights.bin", "../weights.bin", "/etc/passwd"};
    for (int k = 0; k < 3; k++) {
        tm_model *m = tm_new(13);
        tm_input(m, "x", T_FLOAT, 1, d, NULL);
        tm_init_external(m, "w", T_FLOAT, 1, d, locations[k]);
        tm_node(m, "Mul", NULL, "mul", "x,w", "y");
        tm_output(m, "y", T_FLOAT, 1, d);
        snprintf(path, sizeof path, "%s/model.onnx", dir);
        cr_assert_eq(tm_write(m, path), 0);
        dqg_graph *g = NULL;
        dqg_status st = dqg_onnx_load_file(path, NULL, &g);
        if (k == 0) {
            cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
            const float x[] = {2, 3};
            float y[2];
            run_f32(g, x, sizeof x, y, sizeof y, false);
            cr_assert_eq(y[0], 3.0f);
            cr_assert_eq(y[1], -6.0f);
            dqg_graph_destroy(g);
            /* From memory without a base folder, external data is refused. */
            size_t n;
            uint8_t *bytes = tm_pack(m, &n);
            expect_error(dqg_onnx_load_memory(bytes, n, NULL, NULL, &g), DQG_UNSUPPORTED,
                         "initializer 'w'", "without a base folder");
            free(bytes);
        } else {
            expect_error(st, DQG_PARSE_ERROR, "initializer 'w'", locations[k], "refused");
            cr_assert_null(g);
        }
        tm_free(m);
    }
    unlink(path);
    unlink(wpath);
    rmdir(dir);
    free(dir);
}

Test(onnx, tensor_files_round_trip)
{
    char *dir = temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/t.pb", dir);
    int64_t dims[] = {3};
    const uint8_t s4[] = {0x7F, 0x08}; /* -1, 7, -8 */
    cr_assert_eq(dqg_tensor_file_write(path, "w4", DQG_S4, 1, dims, s4), DQG_OK, "%s",
                 dqg_last_error());
    char *name = NULL;
    dqg_dtype dt;
    int rank;
    int64_t got[DQG_MAX_RANK];
    void *data = NULL;
    size_t size;
    cr_assert_eq(dqg_tensor_file_read(path, &name, &dt, &rank, got, &data, &size), DQG_OK, "%s",
                 dqg_last_error());
    cr_assert_str_eq(name, "w4");
    cr_assert_eq(dt, DQG_S4);
    cr_assert_eq(rank, 1);
    cr_assert_eq(got[0], 3);
    cr_assert_eq(size, 2);
    cr_assert_eq(memcmp(data, s4, 2), 0);
    free(name);
    free(data);
    /* Corrupt files are parse errors; missing ones I/O errors. */
    FILE *f = fopen(path, "wb");
    fwrite("\x08\xff\xff\xff", 1, 4, f);
    fclose(f);
    expect_error(dqg_tensor_file_read(path, &name, &dt, &rank, got, &data, &size), DQG_PARSE_ERROR,
                 "t.pb");
    unlink(path);
    expect_error(dqg_tensor_file_read(path, &name, &dt, &rank, got, &data, &size), DQG_IO_ERROR,
                 "t.pb");
    rmdir(dir);
    free(dir);
}

/* One initializer feeding both inputs of Unsqueeze: the axes stay valid
 * while the data input is built (they were read after being freed). */
Test(onnx, unsqueeze_data_and_axes_from_one_initializer)
{
    tm_model *m = tm_new(13);
    int64_t d[] = {1}, yd[] = {1, 1};
    const int64_t a[] = {0};
    tm_init(m, "a", T_INT64, 1, d, a, sizeof a);
    tm_node(m, "Unsqueeze", NULL, "unsq", "a,a", "y");
    tm_output(m, "y", T_INT64, 2, yd);
    dqg_graph *g = load(m, NULL);
    dqg_tensor_id y = dqg_graph_output_id(g, 0);
    int64_t dims[DQG_MAX_RANK];
    cr_assert_eq(dqg_tensor_dims(g, y, dims), 2);
    cr_assert(dims[0] == 1 && dims[1] == 1);
    dqg_graph_destroy(g);
    tm_free(m);
}

/* Gemm with beta = 0 leaves C out: 0 * inf would make the result NaN. */
Test(onnx, gemm_beta_zero_ignores_c)
{
    tm_model *m = tm_new(13);
    int64_t ad[] = {1, 2}, bd[] = {2, 2}, cd[] = {2}, yd[] = {1, 2};
    const float b[] = {1, 0, 0, 1}, c[] = {INFINITY, NAN};
    tm_input(m, "a", T_FLOAT, 2, ad, NULL);
    tm_init(m, "b", T_FLOAT, 2, bd, b, sizeof b);
    tm_init(m, "c", T_FLOAT, 1, cd, c, sizeof c);
    Onnx__NodeProto *n = tm_node(m, "Gemm", NULL, "gemm", "a,b,c", "y");
    tm_attr_float(m, n, "beta", 0.0f);
    tm_output(m, "y", T_FLOAT, 2, yd);
    dqg_graph *g = load(m, NULL);
    const float a[] = {1, 2};
    float y[2];
    run_f32(g, a, sizeof a, y, sizeof y, true);
    cr_assert(y[0] == 1.0f && y[1] == 2.0f, "y = (%g, %g), want (1, 2)", y[0], y[1]);
    dqg_graph_destroy(g);
    tm_free(m);
}

/* Import rules with their messages: Gemm's C broadcasts one way only, Conv
 * group >= 1, Cast between integers only where no value changes (ONNX keeps
 * low bits, TypeCast saturates), Unsqueeze's axes by opset, an empty
 * auto_pad string. */
Test(onnx, gemm_conv_cast_unsqueeze_rules)
{
    tm_model *m = tm_new(13);
    int64_t ad[] = {1, 4}, bd[] = {4, 3}, cd[] = {5, 3}, yd[] = {1, 3};
    float zeros[20] = {0};
    tm_input(m, "a", T_FLOAT, 2, ad, NULL);
    tm_init(m, "b", T_FLOAT, 2, bd, zeros, 12 * 4);
    tm_init(m, "c", T_FLOAT, 2, cd, zeros, 15 * 4);
    tm_node(m, "Gemm", NULL, "gemm", "a,b,c", "y");
    tm_output(m, "y", T_FLOAT, 2, yd);
    expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "'gemm'", "input 2 (C)",
                 "does not broadcast", "(1, 3)");
    tm_free(m);

    for (int k = 0; k < 2; k++) {
        m = tm_new(13);
        int64_t xd[] = {1, 2, 3, 3}, wd[] = {2, 2, 1, 1};
        tm_input(m, "x", T_FLOAT, 4, xd, NULL);
        tm_init(m, "w", T_FLOAT, 4, wd, zeros, 4 * 4);
        Onnx__NodeProto *n = tm_node(m, "Conv", NULL, "conv", "x,w", "y");
        if (k == 0)
            tm_attr_int(m, n, "group", 0);
        else
            tm_attr_string(m, n, "auto_pad", "");
        tm_output(m, "y", T_FLOAT, -1, NULL);
        if (k == 0)
            expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "'conv'", "group 0");
        else
            expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "'conv'",
                         "auto_pad '' is not one of");
        tm_free(m);
    }

    m = tm_new(13);
    int64_t d[] = {3};
    tm_input(m, "x", T_INT16, 1, d, NULL);
    Onnx__NodeProto *n = tm_node(m, "Cast", NULL, "cast", "x", "y");
    tm_attr_int(m, n, "to", T_INT8);
    tm_output(m, "y", T_INT8, 1, d);
    expect_error(load_status(m, NULL), DQG_UNSUPPORTED, "'cast'", "from s16 to s8",
                 "keeps the low bits");
    tm_free(m);
    m = tm_new(13); /* widening is exact */
    tm_input(m, "x", T_INT8, 1, d, NULL);
    n = tm_node(m, "Cast", NULL, "cast", "x", "y");
    tm_attr_int(m, n, "to", T_INT16);
    tm_output(m, "y", T_INT16, 1, d);
    cr_assert_eq(load_status(m, NULL), DQG_OK, "%s", dqg_last_error());
    tm_free(m);

    m = tm_new(11);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "Unsqueeze", NULL, "unsq", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "'unsq'", "'axes' is required");
    tm_free(m);
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    n = tm_node(m, "Unsqueeze", NULL, "unsq", "x", "y");
    const int64_t axes[] = {0};
    tm_attr_ints(m, n, "axes", axes, 1);
    tm_output(m, "y", T_FLOAT, -1, NULL);
    expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "'unsq'",
                 "from opset 13 it is input 1");
    tm_free(m);
}

/* x [4] of type xt -> CastLike(x, like) -> y [4] of type yt, `like` a
 * one-element initializer of type lt. */
static tm_model *cast_like_model(int xt, int lt, const void *like, size_t like_bytes, int yt)
{
    int64_t d[] = {4}, one[] = {1};
    tm_model *m = tm_new(15);
    tm_input(m, "x", xt, 1, d, NULL);
    tm_init(m, "like", lt, 1, one, like, like_bytes);
    tm_node(m, "CastLike", NULL, "cl", "x,like", "y");
    tm_output(m, "y", yt, 1, d);
    return m;
}

/* CastLike converts to its second input's type (its values unread), by
 * Cast's rules: s8 to f32 exactly, the same type as an alias, a narrowing
 * integer cast or one from float to an integer refused as Cast's are. */
Test(onnx, cast_like_takes_the_type_of_its_second_input)
{
    float like_f32 = 123.0f;
    int8_t like_s8 = 0;
    tm_model *m = cast_like_model(T_INT8, T_FLOAT, &like_f32, sizeof like_f32, T_FLOAT);
    dqg_graph *g = load(m, NULL);
    cr_assert_eq(dqg_tensor_dtype(g, dqg_graph_output_id(g, 0)), DQG_F32);
    const int8_t x[] = {-128, -1, 0, 127};
    float y[4];
    run_f32(g, x, sizeof x, y, sizeof y, true);
    cr_assert(y[0] == -128.0f && y[1] == -1.0f && y[2] == 0.0f && y[3] == 127.0f,
              "y = (%g, %g, %g, %g)", y[0], y[1], y[2], y[3]);
    dqg_graph_destroy(g);
    tm_free(m);

    /* the same type: the output is the input */
    m = cast_like_model(T_FLOAT, T_FLOAT, &like_f32, sizeof like_f32, T_FLOAT);
    g = load(m, NULL);
    const float xf[] = {1.5f, -2.0f, 0.0f, 3.25f};
    run_f32(g, xf, sizeof xf, y, sizeof y, true);
    cr_assert(memcmp(y, xf, sizeof xf) == 0);
    dqg_graph_destroy(g);
    tm_free(m);

    m = cast_like_model(T_FLOAT, T_INT8, &like_s8, 1, T_INT8);
    expect_error(load_status(m, NULL), DQG_UNSUPPORTED, "'cl'", "from f32 to s8",
                 "truncates toward zero");
    tm_free(m);
    m = cast_like_model(T_INT16, T_INT8, &like_s8, 1, T_INT8);
    expect_error(load_status(m, NULL), DQG_UNSUPPORTED, "'cl'", "from s16 to s8",
                 "keeps the low bits");
    tm_free(m);
    m = tm_new(15); /* one input */
    int64_t d[] = {4};
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "CastLike", NULL, "cl", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "'cl'", "has 1 inputs; expected 2");
    tm_free(m);
}

/* Clip-6 without min/max clips to the float range (its documented
 * defaults), so infinities become +-FLT_MAX. */
Test(onnx, clip6_defaults_are_the_float_range)
{
    tm_model *m = tm_new(6);
    int64_t d[] = {3};
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "Clip", NULL, "clip", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    dqg_graph *g = load(m, NULL);
    const float x[] = {INFINITY, -INFINITY, 2.5f};
    float y[3];
    run_f32(g, x, sizeof x, y, sizeof y, true);
    cr_assert(y[0] == FLT_MAX && y[1] == -FLT_MAX && y[2] == 2.5f, "y = (%g, %g, %g)", y[0], y[1],
              y[2]);
    dqg_graph_destroy(g);
    tm_free(m);
}

/* The caller's shapes and symbol values must agree with each other; a
 * graph output that is a constant of its own name is copied under that
 * name; an output that is the input of that name, or listed twice, is
 * refused with the reason. */
Test(onnx, hints_outputs_and_names)
{
    tm_model *m = tm_new(13);
    int64_t d[] = {-1, 3};
    tm_input(m, "x", T_FLOAT, 2, d, "N");
    tm_node(m, "Relu", NULL, "relu", "x", "y");
    tm_output(m, "y", T_FLOAT, -1, NULL);
    dqg_onnx_input_hint h[2] = {{.name = "x", .rank = 2, .dims = {2, 3}},
                                {.name = "x", .rank = 2, .dims = {4, 3}}};
    dqg_onnx_options o = {.inputs = h, .n_inputs = 2};
    expect_error(load_status(m, &o), DQG_INVALID_ARGUMENT,
                 "graph input 'x' is given two shapes: [2,3] and [4,3]");
    h[1].dims[0] = 2; /* the same shape twice is fine */
    cr_assert_eq(load_status(m, &o), DQG_OK, "%s", dqg_last_error());
    dqg_onnx_dim_param p[2] = {{"N", 4}, {"N", 5}};
    dqg_onnx_options o2 = {.dim_params = p, .n_dim_params = 2};
    expect_error(load_status(m, &o2), DQG_INVALID_ARGUMENT,
                 "dimension parameter 'N' is given two values: 4 and 5");
    dqg_onnx_options o3 = {.dim_params = p, .n_dim_params = 1, .inputs = h, .n_inputs = 1};
    expect_error(load_status(m, &o3), DQG_INVALID_ARGUMENT, "dimension 0 is 'N', set to 4",
                 "says 2");
    tm_free(m);

    /* An initializer listed as a graph output under its own name. */
    m = tm_new(13);
    int64_t cd[] = {2};
    const float c[] = {1.5f, -2.0f};
    tm_init(m, "c", T_FLOAT, 1, cd, c, sizeof c);
    tm_output(m, "c", T_FLOAT, 1, cd);
    dqg_graph *g = load(m, NULL);
    cr_assert_str_eq(dqg_tensor_name(g, dqg_graph_output_id(g, 0)), "c");
    float y[2];
    run_f32(g, NULL, 0, y, sizeof y, true);
    cr_assert(y[0] == 1.5f && y[1] == -2.0f);
    dqg_graph_destroy(g);
    tm_free(m);

    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, cd, NULL);
    tm_output(m, "x", T_FLOAT, 1, cd);
    expect_error(load_status(m, NULL), DQG_UNSUPPORTED, "graph output 'x' is the graph input");
    tm_free(m);
    m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, cd, NULL);
    tm_node(m, "Relu", NULL, "relu", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, cd);
    tm_output(m, "y", T_FLOAT, 1, cd);
    expect_error(load_status(m, NULL), DQG_INVALID_ARGUMENT, "graph output 'y' is listed twice");
    tm_free(m);
}

/* The small rules of the importer, one by one. */
Test(onnx, opset_versions_beyond_int32_are_refused)
{
    tm_model *m = tm_new(13);
    tm_opset(m, "", ((int64_t)1 << 32) + 21);
    int64_t d[] = {2};
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    expect_error(load_status(m, NULL), DQG_PARSE_ERROR, "version 4294967317", "above 2^31-1");
    tm_free(m);
}

Test(onnx, unknown_data_type_is_named_once)
{
    tm_model *m = tm_new(13);
    int64_t d[] = {2};
    tm_input(m, "x", 100, 1, d, NULL);
    tm_node(m, "Relu", NULL, "r", "x", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    dqg_status st = load_status(m, NULL);
    cr_assert_neq(st, DQG_OK);
    cr_assert(strstr(dqg_last_error(), "data type 100 (unknown)"), "%s", dqg_last_error());
    cr_assert_null(strstr(dqg_last_error(), "type type"), "%s", dqg_last_error());
    tm_free(m);
}

/* External data: a key given twice takes its last value (as ONNX does);
 * offsets and lengths are digits only. */
Test(onnx, external_data_keys)
{
    char *dir = temp_dir();
    char path[512], wpath[512];
    snprintf(wpath, sizeof wpath, "%s/w2.bin", dir);
    const float w[] = {1.5f, -2.0f};
    FILE *f = fopen(wpath, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(w, 4, 2, f), 2);
    fclose(f);
    int64_t d[] = {2};
    static const char *const offsets[] = {NULL, " 0", "+0", "0x0", "0"};
    for (int k = 0; k < 5; k++) {
        tm_model *m = tm_new(13);
        tm_input(m, "x", T_FLOAT, 1, d, NULL);
        Onnx__TensorProto *t = tm_init_external(m, "w", T_FLOAT, 1, d, "missing.bin");
        Onnx__StringStringEntryProto e[3], *list[4] = {t->external_data[0], &e[0], &e[1], &e[2]};
        size_t n = 2;
        onnx__string_string_entry_proto__init(&e[0]);
        e[0].key = "location";
        e[0].value = "w2.bin"; /* the last location: the one that counts */
        if (offsets[k]) {
            onnx__string_string_entry_proto__init(&e[1]);
            e[1].key = "offset";
            e[1].value = (char *)offsets[k];
            n = 3;
        }
        t->external_data = list;
        t->n_external_data = n;
        tm_node(m, "Mul", NULL, "mul", "x,w", "y");
        tm_output(m, "y", T_FLOAT, 1, d);
        snprintf(path, sizeof path, "%s/model.onnx", dir);
        cr_assert_eq(tm_write(m, path), 0);
        dqg_graph *g = NULL;
        dqg_status st = dqg_onnx_load_file(path, NULL, &g);
        if (k == 0 || k == 4) {
            cr_assert_eq(st, DQG_OK, "offset %s: %s", offsets[k] ? offsets[k] : "none",
                         dqg_last_error());
            const float x[] = {2, 3};
            float y[2];
            run_f32(g, x, sizeof x, y, sizeof y, false);
            cr_assert_eq(y[0], 3.0f);
            cr_assert_eq(y[1], -6.0f);
            dqg_graph_destroy(g);
        } else {
            cr_assert_eq(st, DQG_PARSE_ERROR, "offset '%s': %s", offsets[k], dqg_status_name(st));
            cr_assert(strstr(dqg_last_error(), "offset"), "%s", dqg_last_error());
            cr_assert_null(g);
        }
        t->n_external_data = 1; /* the list is the test's own */
        t->external_data = list;
        tm_free(m);
    }
    unlink(wpath);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* Every unsupported operator of a model is named in one error, with its
 * domain, opset, node count and first node. */
Test(onnx, every_unsupported_operator_at_once)
{
    tm_model *m = tm_new(13);
    tm_opset(m, "com.example", 1);
    int64_t d[] = {1, 4};
    tm_input(m, "x", T_FLOAT, 2, d, NULL);
    tm_node(m, "NonZero", NULL, "nz1", "x", "a");
    tm_node(m, "Relu", NULL, "r", "a", "b");
    tm_node(m, "NonZero", NULL, "nz2", "b", "c");
    tm_node(m, "Det", NULL, "det", "c", "e");
    tm_node(m, "Fancy", "com.example", "f", "e", "y");
    tm_output(m, "y", T_FLOAT, 2, d);
    expect_error(load_status(m, NULL), DQG_UNSUPPORTED, "3 operators are not supported",
                 "NonZero: 2 nodes, the first NonZero node 'nz1' (domain 'ai.onnx', opset 13)",
                 "Det: 1 node, the first Det node 'det'",
                 "Fancy: 1 node, the first Fancy node 'f' (domain 'com.example', opset 1)");
    tm_free(m);
}
