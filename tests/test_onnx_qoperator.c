/* ONNX Runtime's QOperator format: the com.microsoft operators QLinearAdd,
 * QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool,
 * QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax and QGemm. Each
 * model is checked against its QDQ twin (DequantizeLinear -> the float
 * operator -> QuantizeLinear, which is what the contrib operator is
 * defined as): the reference interpreter must give the same bytes for
 * both, the compiled QOperator model the same bytes as the compiled twin,
 * and the compiled model within one step of the reference. Hand-computed
 * values pin a few results to the definitions, a small network shows the
 * fusion passes see through the format, and every import rule is tested
 * with its status and message. */
#include <math.h>
#include <stdlib.h>

#include "dqgraph_onnx.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6 };

static dqg_status load_graph(tm_model *m, dqg_graph **g)
{
    return tm_load(m, NULL, g);
}

static dqg_graph *load(tm_model *m)
{
    dqg_graph *g = NULL;
    dqg_status st = load_graph(m, &g);
    cr_assert_eq(st, DQG_OK, "import: %s: %s", dqg_status_name(st), dqg_last_error());
    return g;
}

static dqg_status load_status(tm_model *m)
{
    dqg_graph *g = NULL;
    dqg_status st = load_graph(m, &g);
    dqg_graph_destroy(g);
    return st;
}

static void f32_init(tm_model *m, const char *name, float v)
{
    tm_init(m, name, T_FLOAT, 0, NULL, &v, sizeof v);
}

static void u8_init(tm_model *m, const char *name, uint8_t v)
{
    tm_init(m, name, T_UINT8, 0, NULL, &v, 1);
}

/* A QOperator model and its QDQ twin: both read graph inputs of u8 and
 * write one output "y". */
typedef struct twin {
    tm_model *qop, *qdq;
    bool s8; /* the quantized tensors are s8 (else u8) */
} twin;

static twin twin_new(int64_t opset)
{
    twin t = {tm_new(opset), tm_new(opset), false};
    tm_opset(t.qop, "com.microsoft", 1);
    return t;
}

static void twin_free(twin *t)
{
    tm_free(t->qop);
    tm_free(t->qdq);
}

/* The same u8 input (and the same initializers) in both models. */
static void twin_input(twin *t, const char *name, int rank, const int64_t *d)
{
    tm_input(t->qop, name, t->s8 ? T_INT8 : T_UINT8, rank, d, NULL);
    tm_input(t->qdq, name, t->s8 ? T_INT8 : T_UINT8, rank, d, NULL);
}

static void twin_params(twin *t, const char *s, float sv, const char *z, uint8_t zv)
{
    tm_model *ms[2] = {t->qop, t->qdq};
    for (int i = 0; i < 2; i++) {
        f32_init(ms[i], s, sv);
        tm_init(ms[i], z, t->s8 ? T_INT8 : T_UINT8, 0, NULL, &zv, 1);
    }
}

/* Runs g (one output of n bytes) on the reference and compiled with the
 * given inputs; returns the compiled object (for the explain log). */
static dqg_compiled *run_both(dqg_graph *g, const uint8_t *const *xs, const size_t *sizes, int n_in,
                              void *ref, void *got, size_t n)
{
    dqg_buffer in[4];
    for (int i = 0; i < n_in; i++)
        in[i] =
            (dqg_buffer){.id = dqg_graph_input_id(g, i), .data = (void *)xs[i], .size = sizes[i]};
    dqg_tensor_id y = dqg_graph_output_id(g, 0);
    cr_assert_eq(dqg_tensor_byte_size(g, y), n);
    dqg_buffer r = {.id = y, .data = ref, .size = n}, o = {.id = y, .data = got, .size = n};
    cr_assert_eq(dqg_reference_run(g, in, (size_t)n_in, &r, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(g, NULL, &c), DQG_OK, "%s", dqg_last_error());
    cr_assert_eq(dqg_execute(c, in, (size_t)n_in, &o, 1), DQG_OK, "%s", dqg_last_error());
    return c;
}

static void fill(uint8_t *x, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (uint8_t)(seed >> 24);
    }
}

/* Both models of t on the same seeded inputs: the QOperator model's
 * reference and compiled bytes equal the twin's, and the compiled ones lie
 * within one step of the reference. Returns the QOperator model's compiled
 * object. */
static dqg_compiled *check_twin(twin *t, const char *what, int n_in, const size_t *sizes,
                                size_t n_out)
{
    uint8_t *xs[4];
    for (int i = 0; i < n_in; i++) {
        xs[i] = malloc(sizes[i]);
        fill(xs[i], sizes[i], 77u + (uint32_t)i);
    }
    uint8_t *r1 = malloc(n_out), *o1 = malloc(n_out), *r2 = malloc(n_out), *o2 = malloc(n_out);
    dqg_graph *g1 = load(t->qop), *g2 = load(t->qdq);
    dqg_compiled *c1 = run_both(g1, (const uint8_t *const *)xs, sizes, n_in, r1, o1, n_out);
    dqg_compiled *c2 = run_both(g2, (const uint8_t *const *)xs, sizes, n_in, r2, o2, n_out);
    for (size_t i = 0; i < n_out; i++) {
        cr_assert_eq(r1[i], r2[i], "%s: reference byte %zu: %d, the QDQ twin's %d", what, i, r1[i],
                     r2[i]);
        cr_assert_eq(o1[i], o2[i], "%s: compiled byte %zu: %d, the QDQ twin's %d", what, i, o1[i],
                     o2[i]);
        int o = t->s8 ? (int8_t)o1[i] : o1[i], r = t->s8 ? (int8_t)r1[i] : r1[i];
        cr_assert(abs(o - r) <= 1, "%s: compiled element %zu: %d, reference %d", what, i, o, r);
    }
    for (int i = 0; i < n_in; i++)
        free(xs[i]);
    free(r1);
    free(o1);
    free(r2);
    free(o2);
    dqg_compiled_destroy(c2);
    dqg_graph_destroy(g1);
    dqg_graph_destroy(g2);
    return c1;
}

static bool explain_has(const dqg_compiled *c, const char *text)
{
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        if (strstr(dqg_compiled_explain(c, i), text))
            return true;
    return false;
}

Test(onnx_qoperator, binary_and_unary_operators_are_their_qdq_forms)
{
    static const char *const ops[] = {"Add", "Mul", "Sigmoid", "LeakyRelu"};
    for (int k = 0; k < 8; k++) {
        bool binary = k % 4 < 2;
        twin t = twin_new(13);
        t.s8 = k >= 4; /* the zero points below read as s8: -128, 3, 120 or 0 */
        int64_t ad[] = {1, 3, 4, 4}, bd[] = {1, 3, 1, 1};
        twin_input(&t, "a", 4, ad);
        if (binary)
            twin_input(&t, "b", 4, bd);
        twin_params(&t, "as", 0.05f, "az", 128);
        twin_params(&t, "bs", 0.1f, "bz", 3);
        twin_params(&t, "ys", binary ? 0.07f : 0.004f, "yz", binary ? 120 : 0);
        char qname[32];
        snprintf(qname, sizeof qname, "QLinear%s", ops[k % 4]);
        Onnx__NodeProto *n = tm_node(t.qop, qname, "com.microsoft", "op",
                                     binary ? "a,as,az,b,bs,bz,ys,yz" : "a,as,az,ys,yz", "y");
        tm_node(t.qdq, "DequantizeLinear", NULL, "dqa", "a,as,az", "fa");
        if (binary)
            tm_node(t.qdq, "DequantizeLinear", NULL, "dqb", "b,bs,bz", "fb");
        Onnx__NodeProto *f = tm_node(t.qdq, ops[k % 4], NULL, "f", binary ? "fa,fb" : "fa", "fy");
        if (k % 4 == 3) {
            tm_attr_float(t.qop, n, "alpha", 0.2f);
            tm_attr_float(t.qdq, f, "alpha", 0.2f);
        }
        tm_node(t.qdq, "QuantizeLinear", NULL, "q", "fy,ys,yz", "y");
        tm_output(t.qop, "y", t.s8 ? T_INT8 : T_UINT8, -1, NULL);
        tm_output(t.qdq, "y", t.s8 ? T_INT8 : T_UINT8, -1, NULL);
        size_t sizes[] = {48, 3};
        char what[48];
        snprintf(what, sizeof what, "%s, %s", qname, t.s8 ? "s8" : "u8");
        dqg_compiled_destroy(check_twin(&t, what, binary ? 2 : 1, sizes, 48));
        twin_free(&t);
    }
}

/* C = round((A_scale (A - A_zp) + B_scale (B - B_zp)) / C_scale) + C_zp
 * by hand: (10 - 2) 0.5 + 4 0.25 = 5 -> 6; (20 - 2) 0.5 + 6 0.25 = 10.5,
 * rounded to even 10, -> 11. */
Test(onnx_qoperator, qlinear_add_by_hand)
{
    tm_model *m = tm_new(13);
    tm_opset(m, "com.microsoft", 1);
    int64_t d[] = {2};
    tm_input(m, "a", T_UINT8, 1, d, NULL);
    tm_input(m, "b", T_UINT8, 1, d, NULL);
    f32_init(m, "as", 0.5f);
    u8_init(m, "az", 2);
    f32_init(m, "bs", 0.25f);
    f32_init(m, "cs", 1.0f);
    u8_init(m, "cz", 1);
    tm_node(m, "QLinearAdd", "com.microsoft", "add", "a,as,az,b,bs,,cs,cz", "y");
    tm_output(m, "y", T_UINT8, -1, NULL);
    dqg_graph *g = load(m);
    const uint8_t a[] = {10, 20}, b[] = {4, 6};
    const uint8_t *xs[] = {a, b};
    size_t sizes[] = {2, 2};
    uint8_t r[2], o[2];
    dqg_compiled_destroy(run_both(g, xs, sizes, 2, r, o, 2));
    cr_assert_eq(r[0], 6);
    cr_assert_eq(r[1], 11);
    cr_assert_arr_eq(o, r, 2);
    dqg_graph_destroy(g);
    tm_free(m);
}

Test(onnx_qoperator, pooling_concat_and_softmax_are_their_qdq_forms)
{
    for (int k = 0; k < 5; k++) {
        /* 0: QLinearGlobalAveragePool, 1: QLinearAveragePool with padding
         * and ceil_mode, 2: QLinearConcat, 3 and 4: QLinearSoftmax at opset
         * 13 (last axis) and 12 (axis 1: the rest of the tensor is a row). */
        int64_t opset = k == 4 ? 12 : 13;
        twin t = twin_new(opset);
        int64_t ad[] = {1, 3, 5, 5}, bd[] = {1, 2, 5, 5};
        twin_input(&t, "a", 4, ad);
        if (k == 2)
            twin_input(&t, "b", 4, bd);
        twin_params(&t, "as", 0.05f, "az", 128);
        twin_params(&t, "bs", 0.1f, "bz", 3);
        twin_params(&t, "ys", k >= 3 ? 1.0f / 256 : 0.06f, "yz", k >= 3 ? 0 : 110);
        size_t n_out = 0;
        const char *what = NULL;
        if (k <= 1) {
            what = k ? "QLinearAveragePool" : "QLinearGlobalAveragePool";
            Onnx__NodeProto *n = tm_node(t.qop, what, "com.microsoft", "op", "a,as,az,ys,yz", "y");
            tm_node(t.qdq, "DequantizeLinear", NULL, "dqa", "a,as,az", "fa");
            Onnx__NodeProto *f =
                tm_node(t.qdq, k ? "AveragePool" : "GlobalAveragePool", NULL, "f", "fa", "fy");
            if (k) {
                int64_t ks[] = {3, 3}, st[] = {2, 2}, p[] = {1, 1, 1, 1};
                Onnx__NodeProto *both[] = {n, f};
                tm_model *ms[] = {t.qop, t.qdq};
                for (int i = 0; i < 2; i++) {
                    tm_attr_ints(ms[i], both[i], "kernel_shape", ks, 2);
                    tm_attr_ints(ms[i], both[i], "strides", st, 2);
                    tm_attr_ints(ms[i], both[i], "pads", p, 4);
                    tm_attr_int(ms[i], both[i], "ceil_mode", 1);
                }
            }
            n_out = k ? 3 * 3 * 3 : 3;
        } else if (k == 2) {
            what = "QLinearConcat";
            Onnx__NodeProto *n =
                tm_node(t.qop, what, "com.microsoft", "op", "ys,yz,a,as,az,b,bs,bz", "y");
            tm_attr_int(t.qop, n, "axis", 1);
            tm_node(t.qdq, "DequantizeLinear", NULL, "dqa", "a,as,az", "fa");
            tm_node(t.qdq, "DequantizeLinear", NULL, "dqb", "b,bs,bz", "fb");
            Onnx__NodeProto *f = tm_node(t.qdq, "Concat", NULL, "f", "fa,fb", "fy");
            tm_attr_int(t.qdq, f, "axis", 1);
            n_out = 5 * 25;
        } else {
            what = "QLinearSoftmax";
            Onnx__NodeProto *n = tm_node(t.qop, what, "com.microsoft", "op", "a,as,az,ys,yz", "y");
            tm_attr_int(t.qop, n, "opset", opset);
            tm_node(t.qdq, "DequantizeLinear", NULL, "dqa", "a,as,az", "fa");
            Onnx__NodeProto *f = tm_node(t.qdq, "Softmax", NULL, "f", "fa", "fy");
            if (k == 4) {
                tm_attr_int(t.qop, n, "axis", 1);
                tm_attr_int(t.qdq, f, "axis", 1);
            }
            n_out = 75;
        }
        tm_node(t.qdq, "QuantizeLinear", NULL, "q", "fy,ys,yz", "y");
        tm_output(t.qop, "y", T_UINT8, -1, NULL);
        tm_output(t.qdq, "y", T_UINT8, -1, NULL);
        size_t sizes[] = {75, 50};
        dqg_compiled *c = check_twin(&t, what, k == 2 ? 2 : 1, sizes, n_out);
        if (test_int8_fusion() && k == 0)
            cr_assert(explain_has(c, "u8 average pooling"), "%s: not pooled in u8", what);
        dqg_compiled_destroy(c);
        twin_free(&t);
    }
}

/* QGemm against its QDQ twin, y = alpha (A B + C) with C's scale
 * a_scale b_scale: per-tensor and per-column b_scale, transB, alpha, an
 * int32 bias, and a quantized or f32 result. */
Test(onnx_qoperator, qgemm_is_its_qdq_form)
{
    for (int k = 0; k < 4; k++) {
        bool per_col = k & 1, quantized = k < 2, trans_b = k == 1 || k == 2;
        float alpha = k == 3 ? 1.5f : 1.0f;
        const int64_t M = 3, K = 16, N = 8;
        twin t = twin_new(13);
        int64_t ad[] = {M, K}, wd[2] = {trans_b ? N : K, trans_b ? K : N}, nd[] = {N};
        twin_input(&t, "a", 2, ad);
        twin_params(&t, "as", 0.05f, "az", 128);
        twin_params(&t, "ys", 0.2f, "yz", 100);
        int8_t w[128], bz[8] = {0};
        int32_t bias[8];
        float bs[8], cs[8];
        for (int i = 0; i < 128; i++)
            w[i] = (int8_t)((i * 37) % 255 - 127);
        for (int i = 0; i < 8; i++) {
            bias[i] = (i - 4) * 300;
            bs[i] = per_col ? 0.01f + 0.002f * (float)i : 0.01f;
            cs[i] = 0.05f * bs[i];
        }
        tm_model *ms[] = {t.qop, t.qdq};
        for (int i = 0; i < 2; i++) {
            tm_init(ms[i], "w", T_INT8, 2, wd, w, sizeof w);
            tm_init(ms[i], "bs", T_FLOAT, per_col ? 1 : 0, nd, bs, per_col ? sizeof bs : 4);
            tm_init(ms[i], "bz", T_INT8, per_col ? 1 : 0, nd, bz, per_col ? 8 : 1);
            tm_init(ms[i], "c", T_INT32, 1, nd, bias, sizeof bias);
        }
        tm_init(t.qdq, "cs", T_FLOAT, per_col ? 1 : 0, nd, cs, per_col ? sizeof cs : 4);
        Onnx__NodeProto *n =
            tm_node(t.qop, "QGemm", "com.microsoft", "gemm",
                    quantized ? "a,as,az,w,bs,bz,c,ys,yz" : "a,as,az,w,bs,bz,c", "y");
        tm_node(t.qdq, "DequantizeLinear", NULL, "dqa", "a,as,az", "fa");
        Onnx__NodeProto *dw = tm_node(t.qdq, "DequantizeLinear", NULL, "dqw", "w,bs,bz", "fw");
        Onnx__NodeProto *dc = tm_node(t.qdq, "DequantizeLinear", NULL, "dqc", "c,cs", "fc");
        if (per_col) {
            tm_attr_int(t.qdq, dw, "axis", trans_b ? 0 : 1);
            tm_attr_int(t.qdq, dc, "axis", 0);
        }
        /* Gemm's alpha scales A B only; C carries alpha in its beta. */
        Onnx__NodeProto *f = tm_node(t.qdq, "Gemm", NULL, "f", "fa,fw,fc", quantized ? "fy" : "y");
        tm_attr_float(t.qdq, f, "alpha", alpha);
        tm_attr_float(t.qdq, f, "beta", alpha);
        if (trans_b) {
            tm_attr_int(t.qop, n, "transB", 1);
            tm_attr_int(t.qdq, f, "transB", 1);
        }
        if (alpha != 1.0f)
            tm_attr_float(t.qop, n, "alpha", alpha);
        if (quantized)
            tm_node(t.qdq, "QuantizeLinear", NULL, "q", "fy,ys,yz", "y");
        tm_output(t.qop, "y", quantized ? T_UINT8 : T_FLOAT, -1, NULL);
        tm_output(t.qdq, "y", quantized ? T_UINT8 : T_FLOAT, -1, NULL);
        char what[32];
        snprintf(what, sizeof what, "QGemm case %d", k);
        size_t sizes[] = {(size_t)(M * K)};
        if (quantized) {
            dqg_compiled *c = check_twin(&t, what, 1, sizes, (size_t)(M * N));
            if (test_int8_fusion())
                cr_assert_eq(strncmp(dqg_compiled_partition_info(c, 0), "int8 matmul", 11), 0,
                             "%s: %s", what, dqg_compiled_partition_info(c, 0));
            dqg_compiled_destroy(c);
        } else {
            /* f32 results: both models within 1e-5 of the reference's
             * largest magnitude. */
            uint8_t x[48];
            fill(x, sizeof x, 77u);
            const uint8_t *xs[] = {x};
            float r1[24], o1[24], r2[24], o2[24];
            dqg_graph *g1 = load(t.qop), *g2 = load(t.qdq);
            dqg_compiled_destroy(run_both(g1, xs, sizes, 1, r1, o1, sizeof r1));
            dqg_compiled_destroy(run_both(g2, xs, sizes, 1, r2, o2, sizeof r2));
            float big = 0;
            for (int i = 0; i < 24; i++)
                big = fabsf(r2[i]) > big ? fabsf(r2[i]) : big;
            for (int i = 0; i < 24; i++) {
                cr_assert_float_eq(r1[i], r2[i], 1e-5f * big, "%s: reference %d", what, i);
                cr_assert_float_eq(o1[i], r2[i], 1e-5f * big, "%s: compiled %d", what, i);
            }
            dqg_graph_destroy(g1);
            dqg_graph_destroy(g2);
        }
        twin_free(&t);
    }
}

/* A residual block written as ONNX Runtime's QOperator format writes it:
 * QuantizeLinear, two QLinearConvs, QLinearAdd with the block's input,
 * QLinearGlobalAveragePool, Flatten, QGemm to f32. Its QDQ twin gives the
 * same outputs, and the int8 work runs fused (the explain log's share of
 * multiply-adds in int8 kernels). */
Test(onnx_qoperator, a_residual_network_in_qoperator_format_runs_in_int8)
{
    const int64_t C = 16, H = 8;
    tm_model *m = tm_new(13);
    tm_opset(m, "com.microsoft", 1);
    int64_t xd[] = {1, C, H, H}, wd[] = {C, C, 3, 3}, cd[] = {C}, gd[] = {10, C}, nd[] = {10};
    tm_input(m, "x", T_FLOAT, 4, xd, NULL);
    f32_init(m, "xs", 0.03f);
    u8_init(m, "xz", 128);
    int8_t w1[16 * 16 * 9], w2[16 * 16 * 9], g[160], wz[16] = {0};
    int32_t b[16], gb[10];
    float ws[16];
    for (int i = 0; i < 16 * 16 * 9; i++) {
        w1[i] = (int8_t)((i * 29) % 61 - 30);
        w2[i] = (int8_t)((i * 17) % 53 - 26);
    }
    for (int i = 0; i < 160; i++)
        g[i] = (int8_t)((i * 13) % 91 - 45);
    for (int i = 0; i < 16; i++) {
        b[i] = (i - 8) * 50;
        ws[i] = 0.004f + 0.0003f * (float)i;
    }
    for (int i = 0; i < 10; i++)
        gb[i] = i * 100 - 400;
    tm_init(m, "w1", T_INT8, 4, wd, w1, sizeof w1);
    tm_init(m, "w2", T_INT8, 4, wd, w2, sizeof w2);
    tm_init(m, "ws", T_FLOAT, 1, cd, ws, sizeof ws);
    tm_init(m, "wz", T_INT8, 1, cd, wz, sizeof wz);
    tm_init(m, "b", T_INT32, 1, cd, b, sizeof b);
    f32_init(m, "h1s", 0.02f);
    u8_init(m, "h1z", 0);
    f32_init(m, "h2s", 0.04f);
    u8_init(m, "h2z", 120);
    f32_init(m, "rs", 0.05f);
    u8_init(m, "rz", 100);
    f32_init(m, "ps", 0.02f);
    u8_init(m, "pz", 90);
    tm_init(m, "g", T_INT8, 2, gd, g, sizeof g);
    f32_init(m, "gs", 0.05f);
    int8_t gz = 0;
    tm_init(m, "gz", T_INT8, 0, NULL, &gz, 1);
    tm_init(m, "gb", T_INT32, 1, nd, gb, sizeof gb);
    int64_t pads[] = {1, 1, 1, 1}, flat[] = {1, C};
    tm_init(m, "shape", 7 /* INT64 */, 1, (int64_t[]){2}, flat, sizeof flat);
    tm_node(m, "QuantizeLinear", NULL, "qx", "x,xs,xz", "xq");
    Onnx__NodeProto *c1 =
        tm_node(m, "QLinearConv", NULL, "conv1", "xq,xs,xz,w1,ws,wz,h1s,h1z,b", "h1");
    tm_attr_ints(m, c1, "pads", pads, 4);
    Onnx__NodeProto *c2 =
        tm_node(m, "QLinearConv", NULL, "conv2", "h1,h1s,h1z,w2,ws,wz,h2s,h2z,b", "h2");
    tm_attr_ints(m, c2, "pads", pads, 4);
    tm_node(m, "QLinearAdd", "com.microsoft", "add", "h2,h2s,h2z,xq,xs,xz,rs,rz", "r");
    tm_node(m, "QLinearGlobalAveragePool", "com.microsoft", "gap", "r,rs,rz,ps,pz", "p");
    tm_node(m, "Reshape", NULL, "flat", "p,shape", "pf");
    Onnx__NodeProto *qg = tm_node(m, "QGemm", "com.microsoft", "fc", "pf,ps,pz,g,gs,gz,gb", "y");
    tm_attr_int(m, qg, "transB", 1);
    tm_output(m, "y", T_FLOAT, -1, NULL);
    dqg_graph *gr = load(m);
    float x[16 * 64], r[10], o[10];
    for (int i = 0; i < 16 * 64; i++)
        x[i] = 2.0f * sinf(0.37f * (float)i);
    dqg_buffer in = {.id = dqg_graph_input_id(gr, 0), .data = x, .size = sizeof x};
    dqg_buffer out = {.id = dqg_graph_output_id(gr, 0), .data = r, .size = sizeof r};
    cr_assert_eq(dqg_reference_run(gr, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(gr, NULL, &c), DQG_OK, "%s", dqg_last_error());
    out.data = o;
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    /* Within one step of the pooled activations' scale, through the
     * classifier: |dy| <= 0.02 * sum |g| * 0.05 per logit, and the
     * logits reach well past it. */
    float big = 0;
    for (int i = 0; i < 10; i++) {
        float bound = 0;
        for (int k = 0; k < 16; k++)
            bound += 0.02f * 0.05f * fabsf((float)g[i * 16 + k]);
        cr_assert(fabsf(o[i] - r[i]) <= bound + 1e-4f, "logit %d: %g, reference %g (bound %g)", i,
                  o[i], r[i], bound);
        big = fabsf(r[i]) > big ? fabsf(r[i]) : big;
    }
    cr_assert(big > 1.0f, "degenerate logits (largest %g)", big);
    if (test_int8_fusion()) {
        cr_assert(explain_has(c, "MACs: "), "no MAC line");
        bool all_int8 = false;
        for (size_t i = 0; i < dqg_compiled_explain_count(c); i++) {
            const char *l = dqg_compiled_explain(c, i);
            if (strstr(l, "MACs: ") && strstr(l, "(100.0%)"))
                all_int8 = true;
        }
        for (size_t i = 0; !all_int8 && i < dqg_compiled_explain_count(c); i++)
            fprintf(stderr, "%s\n", dqg_compiled_explain(c, i));
        cr_assert(all_int8, "not every multiply-add ran in int8");
    }
    dqg_compiled_destroy(c);
    dqg_graph_destroy(gr);
    tm_free(m);
}

/* ---- Import rules -------------------------------------------------------------------------- */

/* A model with u8 inputs a and b [1, 2, 2, 2], scalar parameters s (0.5)
 * and z (3), and output y, for one com.microsoft node. */
static tm_model *rule_model(void)
{
    tm_model *m = tm_new(13);
    tm_opset(m, "com.microsoft", 1);
    int64_t d[] = {1, 2, 2, 2};
    tm_input(m, "a", T_UINT8, 4, d, NULL);
    tm_input(m, "b", T_UINT8, 4, d, NULL);
    f32_init(m, "s", 0.5f);
    u8_init(m, "z", 3);
    float two[2] = {0.5f, 0.25f};
    tm_init(m, "s2", T_FLOAT, 1, (int64_t[]){2}, two, sizeof two);
    float zero = 0.0f;
    f32_init(m, "s0", zero);
    tm_init(m, "f", T_FLOAT, 4, d, (float[8]){0}, 32);
    tm_output(m, "y", 0, -1, NULL);
    return m;
}

static Onnx__NodeProto *rule_node(tm_model *m, const char *op, const char *inputs)
{
    return tm_node(m, op, "com.microsoft", "n", inputs, "y");
}

Test(onnx_qoperator, import_rules)
{
    tm_model *m = rule_model();
    rule_node(m, "QLinearAdd", "a,s,z,b,s");
    expect_error(load_status(m), DQG_PARSE_ERROR, "'n'", "QLinearAdd", "inputs");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QLinearAdd", "f,s,,b,s,z,s,z");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "input 0 (A)", "f32", "u8 or s8");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QLinearMul", "a,s2,z,b,s,z,s,z");
    expect_error(load_status(m), DQG_UNSUPPORTED, "'n'", "input 1 (A_scale)", "2 elements",
                 "per-tensor");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QLinearAdd", "a,s,z,b,s0,z,s,z");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "B_scale", "is 0");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QLinearSigmoid", "a,s,z,s2,z");
    expect_error(load_status(m), DQG_UNSUPPORTED, "'n'", "y_scale has 2 elements");
    tm_free(m);

    m = rule_model();
    Onnx__NodeProto *n = rule_node(m, "QLinearGlobalAveragePool", "a,s,z,s,z");
    tm_attr_int(m, n, "channels_last", 1);
    expect_error(load_status(m), DQG_UNSUPPORTED, "'n'", "channels_last 1");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QLinearGlobalAveragePool", "a,s,z,s");
    expect_error(load_status(m), DQG_PARSE_ERROR, "'n'", "inputs");
    tm_free(m);

    m = rule_model();
    n = rule_node(m, "QLinearAveragePool", "a,s,z,s,z");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "kernel_shape", "required");
    tm_free(m);

    m = rule_model();
    n = rule_node(m, "QLinearAveragePool", "a,s,z,s,z");
    tm_attr_ints(m, n, "kernel_shape", (int64_t[]){2, 2}, 2);
    tm_attr_ints(m, n, "dilations", (int64_t[]){2, 2}, 2);
    expect_error(load_status(m), DQG_UNSUPPORTED, "'n'", "'dilations'", "not supported");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QLinearConcat", "s,z,a,s,z,b,s,z");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "'axis' is required");
    tm_free(m);

    m = rule_model();
    n = rule_node(m, "QLinearConcat", "s,z,a,s,z,b,s");
    tm_attr_int(m, n, "axis", 1);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "has 7 inputs", "triples");
    tm_free(m);

    m = rule_model();
    n = rule_node(m, "QLinearConcat", "s,,a,s,z,b,s,z");
    tm_attr_int(m, n, "axis", 1);
    expect_error(load_status(m), DQG_PARSE_ERROR, "'n'", "input 1 is required but empty");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QLinearSoftmax", "a,s,z,s,z");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "'opset' is required");
    tm_free(m);

    m = rule_model();
    n = rule_node(m, "QLinearSoftmax", "a,s,z,s,z");
    tm_attr_int(m, n, "opset", 13);
    tm_attr_int(m, n, "axis", 4);
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "axis 4 is outside");
    tm_free(m);

    m = rule_model();
    n = rule_node(m, "QLinearLeakyRelu", "a,s,z,s,z");
    tm_attr_float(m, n, "beta", 1.0f);
    expect_error(load_status(m), DQG_UNSUPPORTED, "'n'", "'beta'", "not supported");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QGemm", "a,s,z,b,s,z,,s");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "y_scale and y_zero_point",
                 "together");
    tm_free(m);

    m = rule_model();
    rule_node(m, "QGemm", "a,s,z,b,s,z");
    expect_error(load_status(m), DQG_INVALID_ARGUMENT, "'n'", "2-D", "rank 4 and 4");
    tm_free(m);

    /* A com.microsoft operator dqgraph does not import is named with its
     * domain. */
    m = rule_model();
    rule_node(m, "QLinearWhere", "a,s,z,b,s,z,s,z");
    expect_error(load_status(m), DQG_UNSUPPORTED, "QLinearWhere", "com.microsoft");
    tm_free(m);
}
