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
    dqg_graph *g;
    dqg_status st = tm_load(m, NULL, &g);
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

/* ---- Every fused convolution on its own ---------------------------------- */

static const Onnx__NodeProto *producer_of(const Onnx__GraphProto *g, const char *t)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t o = 0; o < g->node[i]->n_output; o++)
            if (strcmp(g->node[i]->output[o], t) == 0)
                return g->node[i];
    return NULL;
}

/* The one node reading t, or NULL when there are none or several. */
static const Onnx__NodeProto *only_reader(const Onnx__GraphProto *g, const char *t)
{
    const Onnx__NodeProto *r = NULL;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (strcmp(g->node[i]->input[k], t) == 0) {
                if (r)
                    return NULL;
                r = g->node[i];
            }
    return r;
}

static const Onnx__TensorProto *initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (strcmp(g->initializer[i]->name, name) == 0)
            return g->initializer[i];
    return NULL;
}

/* One convolution as the quantizer wrote it: DQ(u8 input), DQ(weights),
 * DQ(bias) -> Conv -> [Relu | Clip | HardSwish] -> Q(u8 output). */
typedef struct conv_layer {
    const Onnx__NodeProto *nodes[6];
    int n;
    const char *in, *out;
} conv_layer;

static bool find_layer(const Onnx__GraphProto *g, const Onnx__NodeProto *c, conv_layer *l)
{
    l->n = 0;
    for (int k = 0; k < 3; k++) {
        const Onnx__NodeProto *dq = producer_of(g, c->input[k]);
        if (!dq || strcmp(dq->op_type, "DequantizeLinear") != 0)
            return false;
        l->nodes[l->n++] = dq;
    }
    l->in = l->nodes[0]->input[0];
    l->nodes[l->n++] = c;
    const Onnx__NodeProto *n = only_reader(g, c->output[0]);
    if (n && (strcmp(n->op_type, "Relu") == 0 || strcmp(n->op_type, "Clip") == 0 ||
              strcmp(n->op_type, "HardSwish") == 0)) {
        l->nodes[l->n++] = n;
        n = only_reader(g, n->output[0]);
    }
    if (!n || strcmp(n->op_type, "QuantizeLinear") != 0)
        return false;
    l->nodes[l->n++] = n;
    l->out = n->output[0];
    return true;
}

typedef struct named_values {
    int n;
    const char *name[1024];
    uint8_t *data[1024];
    int64_t dims[1024][4];
    int64_t count[1024];
} named_values;

static int value_index(const named_values *v, const char *name)
{
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->name[i], name) == 0)
            return i;
    return -1;
}

/* Feeds every fused convolution (and transposed convolution) of the QDQ
 * model m the reference's u8 (s8 with `s8`) input of that layer and
 * compares its output with the reference's: within one unit, the contract
 * for quantized outputs. */
static void check_layers(const char *net, tm_model *m, const float *x, size_t xsize, bool s8)
{
    const int qtype = s8 ? 3 : 2; /* ONNX INT8, UINT8 */
    Onnx__GraphProto *G = tm_graph(m);
    static conv_layer layers[512];
    int n_layers = 0;
    static named_values v;
    v.n = 0;
    for (size_t i = 0; i < G->n_node; i++) {
        if (strcmp(G->node[i]->op_type, "Conv") != 0 &&
            strcmp(G->node[i]->op_type, "ConvTranspose") != 0)
            continue;
        cr_assert_lt(n_layers, 512);
        cr_assert(find_layer(G, G->node[i], &layers[n_layers]),
                  "%s: Conv '%s' is not DQ -> Conv -> Q", net, G->node[i]->name);
        const char *ends[] = {layers[n_layers].in, layers[n_layers].out};
        for (int e = 0; e < 2; e++)
            if (value_index(&v, ends[e]) < 0) {
                cr_assert_lt(v.n, 1024);
                v.name[v.n++] = ends[e];
            }
        n_layers++;
    }
    /* The reference run, with every layer's input and output made a graph
     * output. The input of the first layer is a graph input's Q: also an
     * intermediate. */
    size_t n_out0 = G->n_output;
    for (int i = 0; i < v.n; i++)
        tm_output(m, v.name[i], qtype, -1, NULL);
    dqg_graph *g = load(m);
    dqg_buffer *out = calloc(G->n_output, sizeof *out);
    for (size_t o = 0; o < G->n_output; o++) {
        dqg_tensor_id t = dqg_graph_find_tensor(g, G->output[o]->name);
        size_t size = dqg_tensor_byte_size(g, t);
        out[o] = (dqg_buffer){.name = G->output[o]->name, .data = malloc(size), .size = size};
        if (o >= n_out0) {
            int k = (int)(o - n_out0);
            v.data[k] = out[o].data;
            v.count[k] = (int64_t)size;
            cr_assert_eq(dqg_tensor_rank(g, t), 4);
            dqg_tensor_dims(g, t, v.dims[k]);
        }
    }
    dqg_buffer in = {.name = "input", .data = (void *)x, .size = xsize};
    cr_assert_eq(dqg_reference_run(g, &in, 1, out, G->n_output), DQG_OK, "%s", dqg_last_error());
    dqg_graph_destroy(g);
    int64_t exact = 0, all = 0;
    for (int l = 0; l < n_layers; l++) {
        const conv_layer *L = &layers[l];
        int vi = value_index(&v, L->in), vo = value_index(&v, L->out);
        tm_model *sub = tm_new(13);
        tm_input(sub, L->in, qtype, 4, v.dims[vi], NULL);
        for (int k = 0; k < L->n; k++) {
            for (size_t j = 0; j < L->nodes[k]->n_input; j++) {
                const Onnx__TensorProto *t = initializer(G, L->nodes[k]->input[j]);
                if (t && !initializer(tm_graph(sub), t->name))
                    tm_init(sub, t->name, t->data_type, (int)t->n_dims, t->dims, t->raw_data.data,
                            t->raw_data.len);
            }
            tm_copy_node(sub, L->nodes[k]);
        }
        tm_output(sub, L->out, qtype, 4, v.dims[vo]);
        dqg_graph *sg = load(sub);
        tm_free(sub);
        dqg_compiled *c;
        cr_assert_eq(dqg_compile(sg, NULL, &c), DQG_OK, "%s", dqg_last_error());
        /* At AVX2-VNNI a depthwise layer with a binary post-op (a
         * u8 weights' window term) runs in f32 (defect I), and only there. */
        bool refused = test_explain_mentions(c, "oneDNN 2.6 defect I");
        cr_assert(!refused || test_avx2_vnni(), "%s: Conv '%s': defect I above AVX2-VNNI", net,
                  L->nodes[3]->name);
        if (test_int8_fusion() && !refused) {
            cr_assert_eq(dqg_compiled_partition_count(c), 1, "%s: Conv '%s': %zu partitions", net,
                         L->nodes[3]->name, dqg_compiled_partition_count(c));
            cr_assert(strncmp(dqg_compiled_partition_info(c, 0), "int8 conv", 9) == 0, "%s: %s",
                      net, dqg_compiled_partition_info(c, 0));
        }
        uint8_t *y = malloc((size_t)v.count[vo]);
        dqg_buffer si = {.name = L->in, .data = v.data[vi], .size = (size_t)v.count[vi]};
        dqg_buffer so = {.name = L->out, .data = y, .size = (size_t)v.count[vo]};
        cr_assert_eq(dqg_execute(c, &si, 1, &so, 1), DQG_OK, "%s", dqg_last_error());
        for (int64_t i = 0; i < v.count[vo]; i++) {
            int a = s8 ? (int8_t)y[i] : y[i], r = s8 ? (int8_t)v.data[vo][i] : v.data[vo][i];
            int d = abs(a - r);
            cr_assert(d <= 1, "%s: Conv '%s' output %lld: %d, reference %d", net, L->nodes[3]->name,
                      (long long)i, a, r);
            exact += d == 0;
        }
        all += v.count[vo];
        free(y);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(sg);
    }
    cr_log_info("%s: %d (transposed) convolutions alone: %.4f%% of %lld outputs exact, the rest "
                "one unit off",
                net, n_layers, 100.0 * (double)exact / (double)all, (long long)all);
    for (size_t o = 0; o < G->n_output; o++)
        free(out[o].data);
    free(out);
}

static void check_net(zoo_cnn_net net, const zoo_cnn_options *o)
{
    const char *name = zoo_cnn_name(net);
    tm_model *m = zoo_cnn(net, o, NULL);
    cr_assert_not_null(m, "%s: cannot be written", name);
    dqg_graph *g = load(m);
    /* A segmentation network's logits are per pixel: [1, classes, s, s]. */
    bool seg = net == ZOO_UNET;
    int64_t s = o->size, k = o->classes * (seg ? s * s : 1);
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
    if (seg) {
        /* Each pixel's class: the same in at least 95% of the pixels. */
        int64_t same = 0, px = s * s;
        for (int64_t p = 0; p < px; p++) {
            int64_t a = 0, r = 0;
            for (int64_t cl = 1; cl < o->classes; cl++) {
                a = y[cl * px + p] > y[a * px + p] ? cl : a;
                r = ref[cl * px + p] > ref[r * px + p] ? cl : r;
            }
            same += a == r || y[r * px + p] == y[a * px + p];
        }
        cr_assert_geq(same, px * 95 / 100, "%s: %lld of %lld pixels of the same class", name,
                      (long long)same, (long long)px);
    } else {
        cr_assert_eq(argmax(y, k), argmax(ref, k), "%s: top-1 %d, reference %d", name, argmax(y, k),
                     argmax(ref, k));
    }
    double macs = 0.0, share = int8_mac_share(c, &macs);
    cr_assert(share >= 0.0, "%s: the explain log has no MACs line", name);
    if (test_int8_fusion())
        cr_assert(share >= 0.95, "%s: %.2f%% of %.4g MACs in int8 kernels", name, 100.0 * share,
                  macs);
    cr_log_info("%s: cosine %.6f, top-1 %d, %zu partitions, %.2f%% of %.4g MACs in int8", name,
                cosine, argmax(y, k), dqg_compiled_partition_count(c), 100.0 * share, macs);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    check_layers(name, m, x, (size_t)(3 * s * s) * sizeof *x, o->s8_activations);
    tm_free(m);
    free(x);
    free(ref);
    free(y);
}

/* Runs g's input "x" on the reference interpreter into ref and compiled
 * into y (output "y" of yb bytes); returns the compiled graph. */
static dqg_compiled *run_both(dqg_graph *g, void *x, size_t xb, void *ref, void *y, size_t yb)
{
    dqg_buffer in = {.name = "x", .data = x, .size = xb};
    dqg_buffer out = {.name = "y", .data = ref, .size = yb};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *cc;
    cr_assert_eq(dqg_compile(g, NULL, &cc), DQG_OK, "%s", dqg_last_error());
    out.data = y;
    cr_assert_eq(dqg_execute(cc, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    return cc;
}

/* The initializers of one QDQ layer as ONNX Runtime writes them: x and y
 * scales and u8 zero points (xs, xz, ys, yz), s8 weights w of shape wd
 * (rank 4) with n per-channel scales ws and zero points 0 (wz), and an
 * s32 bias b with scales bs and zero points 0 (bz). */
static void layer_inits(tm_model *m, float xs, uint8_t xz, float ys, uint8_t yz, const int64_t *wd,
                        const int8_t *w, int64_t n, const float *ws, const int32_t *b,
                        const float *bs)
{
    enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6 };
    int8_t wz[64] = {0};
    int32_t bz[64] = {0};
    cr_assert_leq(n, 64);
    tm_init(m, "xs", T_FLOAT, 0, NULL, &xs, sizeof xs);
    tm_init(m, "xz", T_UINT8, 0, NULL, &xz, 1);
    tm_init(m, "ys", T_FLOAT, 0, NULL, &ys, sizeof ys);
    tm_init(m, "yz", T_UINT8, 0, NULL, &yz, 1);
    tm_init(m, "w", T_INT8, 4, wd, w, (size_t)(wd[0] * wd[1] * wd[2] * wd[3]));
    tm_init(m, "ws", T_FLOAT, 1, &n, ws, (size_t)n * sizeof *ws);
    tm_init(m, "wz", T_INT8, 1, &n, wz, (size_t)n);
    tm_init(m, "b", T_INT32, 1, &n, b, (size_t)n * sizeof *b);
    tm_init(m, "bs", T_FLOAT, 1, &n, bs, (size_t)n * sizeof *bs);
    tm_init(m, "bz", T_INT32, 1, &n, bz, (size_t)n * sizeof *bz);
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
    int8_t w[108], gw[54], gwz[2] = {0};
    int32_t b[3] = {100, -200, 300}, gb[2] = {-50, 70}, gbz[2] = {0};
    for (int i = 0; i < 108; i++)
        w[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < 54; i++)
        gw[i] = (int8_t)((i * 53) % 255 - 127);
    for (int i = 0; i < 3; i++)
        bs[i] = xs * ws[i];
    for (int i = 0; i < 2; i++)
        gbs[i] = ys * gs[i];
    layer_inits(m, xs, xz, ys, yz, wd, w, od[0], ws, b, bs);
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
    dqg_compiled *cc = run_both(g, x, sizeof x, ref, y, sizeof ref);
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

/* A channel shuffle as ONNX Runtime's quantizer writes it, each of
 * Reshape, Transpose, Reshape between a DQ and a Q of the same parameters,
 * runs on the u8 tensor: three data-movement partitions and no dequantize,
 * bit-identical to the reference. */
/* A decoder's upsampling as ONNX Runtime's QDQ quantizer writes it: u8
 * activations, s8 weights per output channel (ConvTranspose's axis 1), an
 * s32 bias behind its DequantizeLinear, a Relu, and the quantize of the
 * result. It runs as one int8 transposed convolution, within one unit of
 * the reference interpreter's quantized result. */
Test(cnn_zoo, qdq_conv_transpose_runs_in_int8)
{
    enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6, C = 8, M = 6 };
    tm_model *m = tm_new(13);
    int64_t xd[] = {1, C, 5, 5}, wd[] = {C, M, 2, 2}, od[] = {M}, yd[] = {1, M, 10, 10};
    tm_input(m, "x", T_UINT8, 4, xd, NULL);
    float xs = 0.03f, ys = 0.04f, ws[M], bs[M];
    uint8_t xz = 0, yz = 0;
    int8_t w[C * M * 4];
    int32_t b[M];
    for (int i = 0; i < C * M * 4; i++)
        w[i] = (int8_t)((i * 41) % 255 - 127);
    for (int i = 0; i < M; i++) {
        ws[i] = 0.004f + 0.001f * (float)i;
        bs[i] = xs * ws[i];
        b[i] = (i * 977) % 2001 - 1000;
    }
    layer_inits(m, xs, xz, ys, yz, wd, w, od[0], ws, b, bs);
    tm_node(m, "DequantizeLinear", "", "x_dq", "x,xs,xz", "xf");
    tm_attr_int(m, tm_node(m, "DequantizeLinear", "", "w_dq", "w,ws,wz", "wf"), "axis", 1);
    tm_attr_int(m, tm_node(m, "DequantizeLinear", "", "b_dq", "b,bs,bz", "bf"), "axis", 0);
    Onnx__NodeProto *ct = tm_node(m, "ConvTranspose", "", "up", "xf,wf,bf", "c");
    int64_t two[] = {2, 2};
    tm_attr_ints(m, ct, "strides", two, 2);
    tm_attr_ints(m, ct, "kernel_shape", two, 2);
    tm_node(m, "Relu", "", "relu", "c", "r");
    tm_node(m, "QuantizeLinear", "", "r_q", "r,ys,yz", "y");
    tm_output(m, "y", T_UINT8, 4, yd);
    dqg_graph *g = load(m);
    tm_free(m);
    uint8_t x[C * 25], ref[M * 100], y[M * 100];
    for (int i = 0; i < C * 25; i++)
        x[i] = (uint8_t)((i * 29) % 256);
    dqg_compiled *cc = run_both(g, x, sizeof x, ref, y, sizeof ref);
    int nonzero = 0;
    for (int i = 0; i < M * 100; i++) {
        cr_assert_leq(abs((int)y[i] - (int)ref[i]), 1, "y[%d] = %d, reference %d", i, y[i], ref[i]);
        nonzero += ref[i] != 0;
    }
    cr_assert_gt(nonzero, M * 20, "a result of mostly zeros tests little");
    if (test_int8_fusion()) {
        cr_assert_eq(dqg_compiled_partition_count(cc), 1);
        const char *info = dqg_compiled_partition_info(cc, 0);
        cr_assert(strstr(info, "ConvTranspose 'up' + ReLU 'relu'") &&
                      strstr(info, "onednn:deconv:u8s8:u8:jit_"),
                  "%s", info);
    }
    dqg_compiled_destroy(cc);
    dqg_graph_destroy(g);
}

Test(cnn_zoo, channel_shuffle_stays_u8)
{
    enum { T_FLOAT = 1, T_UINT8 = 2, T_INT64 = 7 };
    tm_model *m = tm_new(13);
    int64_t xd[] = {1, 6, 2, 2}, five = 5, four = 4, s5[] = {1, 3, 2, 2, 2}, s4[] = {1, 6, 2, 2},
            perm[] = {0, 2, 1, 3, 4};
    float sc = 0.05f;
    uint8_t zp = 10;
    tm_input(m, "x", T_UINT8, 4, xd, NULL);
    tm_init(m, "s", T_FLOAT, 0, NULL, &sc, sizeof sc);
    tm_init(m, "z", T_UINT8, 0, NULL, &zp, 1);
    tm_init(m, "shape5", T_INT64, 1, &five, s5, sizeof s5);
    tm_init(m, "shape4", T_INT64, 1, &four, s4, sizeof s4);
    tm_node(m, "DequantizeLinear", "", "dq0", "x,s,z", "a");
    tm_node(m, "Reshape", "", "r0", "a,shape5", "b");
    tm_node(m, "QuantizeLinear", "", "q1", "b,s,z", "bq");
    tm_node(m, "DequantizeLinear", "", "dq1", "bq,s,z", "bf");
    tm_attr_ints(m, tm_node(m, "Transpose", "", "t", "bf", "c"), "perm", perm, 5);
    tm_node(m, "QuantizeLinear", "", "q2", "c,s,z", "cq");
    tm_node(m, "DequantizeLinear", "", "dq2", "cq,s,z", "cf");
    tm_node(m, "Reshape", "", "r1", "cf,shape4", "d");
    tm_node(m, "QuantizeLinear", "", "q3", "d,s,z", "y");
    tm_output(m, "y", T_UINT8, 4, xd);
    dqg_graph *g = load(m);
    tm_free(m);
    uint8_t x[24], ref[24], y[24];
    for (int i = 0; i < 24; i++)
        x[i] = (uint8_t)(i * 11);
    dqg_buffer in = {.name = "x", .data = x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = ref, .size = sizeof ref};
    cr_assert_eq(dqg_reference_run(g, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    out.data = y;
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    for (int i = 0; i < 24; i++) {
        cr_assert_eq(y[i], ref[i], "y[%d] = %d, reference %d", i, y[i], ref[i]);
        /* Channel j of the result is channel (j % 3) * 2 + j / 3 of x. */
        int ch = i / 4, from = (ch % 3) * 2 + ch / 3;
        cr_assert_eq(y[i], x[from * 4 + i % 4]);
    }
    cr_assert_eq(dqg_compiled_partition_count(c), 3);
    for (size_t i = 0; i < 3; i++)
        cr_assert(!strstr(dqg_compiled_partition_info(c, i), "Dequantize"), "%s",
                  dqg_compiled_partition_info(c, i));
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

static void net_test(zoo_cnn_net net, int64_t size, bool reduced)
{
    zoo_cnn_options o = {.size = size, .classes = 100, .reduced = reduced, .seed = 11};
    check_net(net, &o);
}

Test(cnn_zoo, resnet50, .timeout = 120)
{
    net_test(ZOO_RESNET50, 32, false);
}

/* ONNX Runtime's other quantizer settings: s8 activations
 * (activation_type=QInt8) and one weight scale per tensor
 * (per_channel=False), on the networks with residual Adds and depthwise
 * convolutions. */
Test(cnn_zoo, s8_activations_and_per_tensor_weights, .timeout = 120)
{
    zoo_cnn_options o = {.size = 32,
                         .classes = 100,
                         .reduced = true,
                         .seed = 11,
                         .s8_activations = true,
                         .per_tensor_weights = true};
    check_net(ZOO_RESNET50, &o);
    check_net(ZOO_MOBILENET_V2, &o);
    o.per_tensor_weights = false;
    check_net(ZOO_SHUFFLENET_V1, &o);
}

/* ONNX Runtime's weight_type=QUInt8: asymmetric u8 weights whose w - zp
 * leaves s8, per channel and per tensor. They stay in int8 kernels:
 * convolutions as codes w - 128 plus each channel's 128 - zp times the
 * source's window sums, Gemms with a common offset or their row term. */
Test(cnn_zoo, u8_weights_with_asymmetric_zero_points, .timeout = 120)
{
    zoo_cnn_options o = {
        .size = 32, .classes = 100, .reduced = true, .seed = 11, .u8_weights = true};
    check_net(ZOO_RESNET50, &o);
    check_net(ZOO_MOBILENET_V2, &o);
    o.per_tensor_weights = true;
    check_net(ZOO_RESNET50, &o);
    check_net(ZOO_SHUFFLENET_V1, &o);
}

/* A U-Net: ConvTranspose upsampling into Concats with the encoder's maps,
 * every multiply-add in int8 (the transposed convolutions too). */
Test(cnn_zoo, unet, .timeout = 120)
{
    zoo_cnn_options o = {.size = 32, .classes = 5, .seed = 11};
    check_net(ZOO_UNET, &o);
}

Test(cnn_zoo, vgg19, .timeout = 120)
{
    net_test(ZOO_VGG19, 32, true);
}

Test(cnn_zoo, inception_v1, .timeout = 120)
{
    net_test(ZOO_INCEPTION_V1, 32, false);
}

/* BN-Inception: padded average pools (count_include_pad) before 1x1
 * projections, and stride-2 modules whose max pool passes the input
 * through into the Concat with its own parameters. */
Test(cnn_zoo, inception_v2, .timeout = 120)
{
    net_test(ZOO_INCEPTION_V2, 32, false);
}

Test(cnn_zoo, densenet121, .timeout = 120)
{
    net_test(ZOO_DENSENET121, 32, true);
}

Test(cnn_zoo, squeezenet1_1, .timeout = 120)
{
    net_test(ZOO_SQUEEZENET11, 64, false);
}

Test(cnn_zoo, shufflenet_v1, .timeout = 120)
{
    net_test(ZOO_SHUFFLENET_V1, 32, false);
}

Test(cnn_zoo, alexnet, .timeout = 120)
{
    net_test(ZOO_ALEXNET, 64, true);
}

Test(cnn_zoo, mobilenet_v2, .timeout = 120)
{
    net_test(ZOO_MOBILENET_V2, 32, false);
}

Test(cnn_zoo, mobilenet_v3_large, .timeout = 120)
{
    net_test(ZOO_MOBILENET_V3, 32, false);
}

/* The same networks in ONNX Runtime's QOperator form (QLinearConv, QGemm
 * and the com.microsoft QLinearAdd, QLinearConcat,
 * QLinearGlobalAveragePool, QLinearAveragePool; pooling and reshapes on
 * the quantized tensors): the import gives the fusion passes the same
 * work, so the compiled logits match the QDQ model's compiled logits
 * (cosine >= 0.9999, the same top-1) with as large a share of the
 * multiply-adds in int8, and the rewrite really took out the QDQ pairs. */
static void qoperator_net(zoo_cnn_net net, int64_t size, bool reduced)
{
    zoo_cnn_options o = {.size = size, .classes = 100, .reduced = reduced, .seed = 11};
    const char *name = zoo_cnn_name(net);
    tm_model *m[2] = {zoo_cnn(net, &o, NULL), zoo_cnn(net, &o, NULL)};
    cr_assert(m[0] && m[1], "%s: cannot be written", name);
    size_t dq_before = 0, dq_after = 0, contrib = 0;
    const Onnx__GraphProto *g0 = tm_graph(m[1]);
    for (size_t i = 0; i < g0->n_node; i++)
        dq_before += strcmp(g0->node[i]->op_type, "DequantizeLinear") == 0;
    zoo_to_qoperator(m[1]);
    const Onnx__GraphProto *g1 = tm_graph(m[1]);
    for (size_t i = 0; i < g1->n_node; i++) {
        dq_after += strcmp(g1->node[i]->op_type, "DequantizeLinear") == 0;
        contrib += g1->node[i]->domain && strcmp(g1->node[i]->domain, "com.microsoft") == 0;
    }
    cr_assert(dq_after * 4 < dq_before, "%s: %zu of %zu dequantizes left", name, dq_after,
              dq_before);
    int64_t s = o.size, k = o.classes;
    float *x = malloc((size_t)(3 * s * s) * sizeof *x), *y[2];
    zoo_cnn_input(&o, 7, x);
    double share[2];
    for (int v = 0; v < 2; v++) {
        dqg_graph *g = load(m[v]);
        y[v] = malloc((size_t)k * sizeof *y[v]);
        dqg_buffer in = {
            .id = dqg_graph_input_id(g, 0), .data = x, .size = (size_t)(3 * s * s) * sizeof *x};
        dqg_buffer out = {
            .id = dqg_graph_output_id(g, 0), .data = y[v], .size = (size_t)k * sizeof *y[v]};
        dqg_compiled *c = NULL;
        cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: %s", name, dqg_last_error());
        cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
        double macs;
        share[v] = int8_mac_share(c, &macs);
        dqg_compiled_destroy(c);
        dqg_graph_destroy(g);
    }
    double dot = 0.0, n0 = 0.0, n1 = 0.0;
    for (int64_t i = 0; i < k; i++) {
        dot += (double)y[0][i] * y[1][i];
        n0 += (double)y[0][i] * y[0][i];
        n1 += (double)y[1][i] * y[1][i];
    }
    double cosine = dot / sqrt(n0 * n1 + 1e-30);
    cr_assert(cosine >= 0.9999, "%s: QOperator vs QDQ cosine %.6f", name, cosine);
    cr_assert_eq(argmax(y[1], k), argmax(y[0], k), "%s: top-1 differs", name);
    cr_assert(share[1] >= share[0] - 1e-9, "%s: int8 share %.4f, QDQ %.4f", name, share[1],
              share[0]);
    cr_log_info("%s in QOperator form: %zu com.microsoft nodes, %zu of %zu dequantizes left, "
                "cosine %.6f, %.2f%% of MACs in int8",
                name, contrib, dq_after, dq_before, cosine, 100.0 * share[1]);
    for (int v = 0; v < 2; v++) {
        free(y[v]);
        tm_free(m[v]);
    }
    free(x);
}

Test(cnn_zoo, qoperator_forms_match_the_qdq_networks, .timeout = 240)
{
    qoperator_net(ZOO_RESNET50, 32, false);
    qoperator_net(ZOO_VGG19, 32, true);
    qoperator_net(ZOO_INCEPTION_V1, 32, false);
    qoperator_net(ZOO_INCEPTION_V2, 32, true);
    qoperator_net(ZOO_DENSENET121, 32, true);
    qoperator_net(ZOO_SQUEEZENET11, 64, false);
    qoperator_net(ZOO_SHUFFLENET_V1, 32, false);
    qoperator_net(ZOO_ALEXNET, 64, true);
    qoperator_net(ZOO_MOBILENET_V2, 32, false);
}

/* ---- Random networks ------------------------------------------------------- */

/* The L2 norm of got - want over want's; when want is all zeros, 0 if
 * got's norm is at most zero_tol, else infinity. */
static double rel_l2(const float *got, const float *want, size_t count, double zero_tol)
{
    double e = 0.0, n = 0.0;
    for (size_t k = 0; k < count; k++) {
        e += ((double)got[k] - want[k]) * ((double)got[k] - want[k]);
        n += (double)want[k] * want[k];
    }
    if (n == 0.0)
        return sqrt(e) <= zero_tol ? 0.0 : INFINITY;
    return sqrt(e / n);
}

/* A seeded random network (model_zoo.h's zoo_cnn_random: random
 * convolutions, pools, residual Adds, Concats, BatchNormalization, LRN and
 * shuffles over several live feature maps, some of them graph outputs) on a
 * random input size from 5 to 24, in QDQ form and in ONNX Runtime's
 * QOperator form (whose compiled outputs must match the QDQ form's within
 * 1e-4 relative L2): every output of the compiled QDQ graph within
 * a relative L2 error of 0.05 of the reference's (the one-unit differences
 * of the fused layers travel: 0.0113 at worst over seeds 1..6000, while a
 * misplaced layout or parameter gives errors of the order of the values
 * themselves), and every fused convolution exact to one unit on its own
 * (check_layers). Returns the largest relative error. */
static double random_net(uint32_t seed)
{
    /* Every third network with s8 activations, every fifth with weights
     * quantized per tensor, every seventh with u8 weights (QUInt8). */
    zoo_cnn_options o = {.size = 5 + (int64_t)(seed * 7 % 20),
                         .classes = 10,
                         .seed = seed,
                         .s8_activations = seed % 3 == 0,
                         .per_tensor_weights = seed % 5 == 0,
                         .u8_weights = seed % 7 == 3,
                         .batch = seed % 4 == 0 ? 1 + seed % 3 : 1};
    char name[32];
    snprintf(name, sizeof name, "random net %u", seed);
    tm_model *m = zoo_cnn_random(&o);
    cr_assert_not_null(m, "%s: cannot be written", name);
    dqg_graph *g = load(m);
    int64_t s = o.size, nx = zoo_cnn_input_elems(&o);
    float *x = malloc((size_t)nx * sizeof *x);
    zoo_cnn_input(&o, 7, x);
    dqg_buffer in = {.id = dqg_graph_input_id(g, 0), .data = x, .size = (size_t)nx * sizeof *x};
    size_t n_out = dqg_graph_output_count(g);
    dqg_buffer *ref = calloc(n_out, sizeof *ref), *y = calloc(n_out, sizeof *y);
    for (size_t i = 0; i < n_out; i++) {
        dqg_tensor_id t = dqg_graph_output_id(g, i);
        size_t size = dqg_tensor_byte_size(g, t);
        ref[i] = (dqg_buffer){.id = t, .data = malloc(size), .size = size};
        y[i] = (dqg_buffer){.id = t, .data = malloc(size), .size = size};
    }
    cr_assert_eq(dqg_reference_run(g, &in, 1, ref, n_out), DQG_OK, "%s: %s", name,
                 dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s: %s", name, dqg_last_error());
    cr_assert_eq(dqg_execute(c, &in, 1, y, n_out), DQG_OK, "%s: %s", name, dqg_last_error());
    double worst = 0.0;
    for (size_t i = 0; i < n_out; i++) {
        double rel = rel_l2(y[i].data, ref[i].data, ref[i].size / sizeof(float), 1e-3);
        worst = fmax(worst, rel);
        cr_assert(rel <= 0.05, "%s: output '%s' relative error %.4f (seed %u, size %lld)", name,
                  dqg_tensor_name(g, ref[i].id), rel, seed, (long long)s);
    }
    /* The same network in ONNX Runtime's QOperator form gives the QDQ
     * form's compiled outputs. */
    tm_model *qm = zoo_cnn_random(&o);
    zoo_to_qoperator(qm);
    /* A network none of whose groups has a form the converter rewrites
     * (a HardSwish between each convolution and its quantize, say) keeps
     * its QDQ form, and the comparison below is then of the same graph. */
    size_t qlinear = 0;
    for (size_t i = 0; i < tm_graph(qm)->n_node; i++)
        qlinear += strncmp(tm_graph(qm)->node[i]->op_type, "QLinear", 7) == 0;
    if (qlinear == 0)
        cr_log_info("%s: no QLinear operator in the QOperator form", name);
    dqg_graph *qg = load(qm);
    tm_free(qm);
    cr_assert_eq(dqg_graph_output_count(qg), n_out);
    dqg_compiled *qc = NULL;
    cr_assert_eq(dqg_compile(qg, NULL, &qc), DQG_OK, "%s QOperator: %s", name, dqg_last_error());
    dqg_buffer qin = {.id = dqg_graph_input_id(qg, 0), .data = x, .size = in.size};
    for (size_t i = 0; i < n_out; i++) /* the reference's buffers, by name */
        ref[i] = (dqg_buffer){
            .name = dqg_tensor_name(g, y[i].id), .data = ref[i].data, .size = ref[i].size};
    cr_assert_eq(dqg_execute(qc, &qin, 1, ref, n_out), DQG_OK, "%s QOperator: %s", name,
                 dqg_last_error());
    for (size_t i = 0; i < n_out; i++) {
        double rel = rel_l2(ref[i].data, y[i].data, ref[i].size / sizeof(float), 0.0);
        cr_assert(rel <= 1e-4, "%s: output '%s' of the QOperator form: relative error %.3g", name,
                  ref[i].name, rel);
        free(ref[i].data);
        free(y[i].data);
    }
    dqg_compiled_destroy(qc);
    dqg_graph_destroy(qg);
    double macs = 0.0, share = int8_mac_share(c, &macs);
    cr_log_info("%s: %zu outputs, worst relative error %.4f, %zu partitions, %.1f%% of MACs in "
                "int8",
                name, n_out, worst, dqg_compiled_partition_count(c), 100.0 * share);
    free(ref);
    free(y);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    check_layers(name, m, x, (size_t)nx * sizeof *x, o.s8_activations);
    tm_free(m);
    free(x);
    return worst;
}

/* Seeds 1..200; DQG_RANDOM_NETS=FIRST:COUNT runs others (a longer search). */
Test(cnn_zoo, random_networks_match_the_reference, .timeout = 300)
{
    uint32_t first = 1, n = 200;
    test_seed_range("DQG_RANDOM_NETS", &first, &n);
    double worst = 0.0;
    for (uint32_t seed = first; seed < first + n; seed++)
        worst = fmax(worst, random_net(seed));
    cr_log_info("%u random networks: worst relative error %.4f", n, worst);
}
