/* Randomized differential suite for quantized element-wise graphs, with
 * fixed seeds: a random expression of Add, Mul, ReLU, Clip and unary
 * functions (Sigmoid, Tanh, GELU, HardSwish, HardSigmoid, LeakyReLU, ELU,
 * Swish, Abs, Neg, Erf; one int8 input and scalar constants make them a
 * table of its 256 codes) over
 * per-tensor dequantizes of u8/s8 graph inputs (one read twice, or by two
 * ops, at times) and constants (one value, or one per index of one axis,
 * broadcasting as ONNX does), quantized to u8 or s8; ranks 1 to 4, with
 * axes of 1. The passes make such a graph one int8 element-wise partition
 * that reads and writes int8 and computes every element as the reference
 * does, op by op in float32, so that partition's output must be
 * bit-identical to the reference interpreter's; any other plan (the float
 * path) must stay within one unit, the contract for quantized outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_common.h"

enum { MAX_INPUTS = 3 };

typedef struct expr {
    dqg_graph *g;
    int rank;
    int64_t d[4];
    int n_inputs;
    dqg_tensor_id input[MAX_INPUTS];
    dqg_tensor_id dq[MAX_INPUTS]; /* each input's dequantize, once made */
    int leaves;                   /* dequantize leaves placed */
    char what[1024];
} expr;

static void note(expr *e, const char *s)
{
    size_t n = strlen(e->what);
    snprintf(e->what + n, sizeof e->what - n, "%s", s);
}

static dqg_tensor_id scalar(dqg_graph *g, float v)
{
    int64_t one = 1;
    return dqg_constant(g, NULL, DQG_F32, 0, &one, &v, sizeof v);
}

/* A per-tensor dequantize of graph input i (made on first use; a second
 * use reads the same dequantize, which canonicalization splits). */
static dqg_tensor_id leaf_dq(expr *e)
{
    int i = (int)test_rin(0, e->n_inputs - 1);
    char buf[64];
    if (e->dq[i] == DQG_NONE || test_rin(0, 2) == 0) {
        dqg_dtype t = dqg_tensor_dtype(e->g, e->input[i]);
        int zp = t == DQG_U8 ? (int)test_rin(0, 255) : (int)test_rin(-30, 30);
        uint8_t zb = (uint8_t)zp;
        int64_t one = 1;
        dqg_dequantize_linear_attrs a = {.opset = 13};
        e->dq[i] =
            dqg_dequantize_linear(e->g, NULL, e->input[i], scalar(e->g, test_uniform(0.002f, 0.1f)),
                                  dqg_constant(e->g, NULL, t, 0, &one, &zb, 1), &a);
    }
    e->leaves++;
    snprintf(buf, sizeof buf, "DQ(x%d)", i);
    note(e, buf);
    return e->dq[i];
}

/* One value, or one per index of one axis (shaped [d_a, 1, ..., 1] so
 * that it lines up with axis a under ONNX broadcasting). */
static dqg_tensor_id leaf_const(expr *e)
{
    if (test_rin(0, 1)) {
        float v = test_uniform(-2.0f, 2.0f);
        char buf[32];
        snprintf(buf, sizeof buf, "%.3g", v);
        note(e, buf);
        return scalar(e->g, v);
    }
    int a = (int)test_rin(0, e->rank - 1);
    int64_t d[4] = {e->d[a], 1, 1, 1}, n = e->d[a];
    float v[16];
    for (int64_t i = 0; i < n; i++)
        v[i] = test_uniform(-2.0f, 2.0f);
    char buf[32];
    snprintf(buf, sizeof buf, "c[axis %d]", a);
    note(e, buf);
    return dqg_constant(e->g, NULL, DQG_F32, e->rank - a, d, v, (size_t)n * sizeof(float));
}

static dqg_tensor_id node(expr *e, int depth)
{
    int kind = (int)test_rin(0, depth <= 0 ? 1 : 6);
    if (kind == 0 || (kind == 1 && depth > 0 && e->leaves == 0))
        return leaf_dq(e);
    if (kind == 1)
        return leaf_const(e);
    dqg_graph *g = e->g;
    if (kind <= 3) {
        note(e, kind == 2 ? "Add(" : "Mul(");
        dqg_tensor_id a = node(e, depth - 1);
        note(e, ", ");
        dqg_tensor_id b = test_rin(0, 5) == 0 ? a : node(e, depth - 1);
        note(e, ")");
        return kind == 2 ? dqg_add(g, NULL, a, b) : dqg_mul(g, NULL, a, b);
    }
    if (kind == 4) {
        note(e, "Relu(");
        dqg_tensor_id a = node(e, depth - 1);
        note(e, ")");
        return dqg_relu(g, NULL, a);
    }
    if (kind == 6) {
        static const dqg_unary_op fns[] = {
            DQG_UNARY_SIGMOID,      DQG_UNARY_TANH,       DQG_UNARY_GELU_ERF, DQG_UNARY_HARD_SWISH,
            DQG_UNARY_HARD_SIGMOID, DQG_UNARY_LEAKY_RELU, DQG_UNARY_ELU,      DQG_UNARY_SWISH,
            DQG_UNARY_ABS,          DQG_UNARY_NEG,        DQG_UNARY_ERF};
        dqg_unary_op f = fns[test_rin(0, sizeof fns / sizeof *fns - 1)];
        float alpha = test_uniform(0.05f, 1.0f), beta = test_uniform(0.0f, 1.0f);
        char buf[48];
        snprintf(buf, sizeof buf, "%s(", dqg_unary_op_name(f));
        note(e, buf);
        dqg_tensor_id a = node(e, depth - 1);
        note(e, ")");
        return dqg_unary(g, NULL, f, a, alpha, beta);
    }
    float lo = test_uniform(-2.0f, 1.0f), hi = lo + test_uniform(0.05f, 3.0f);
    char buf[48];
    snprintf(buf, sizeof buf, "Clip[%.3g,%.3g](", lo, hi);
    note(e, buf);
    dqg_tensor_id a = node(e, depth - 1);
    note(e, ")");
    return dqg_clip(g, NULL, a, lo, hi);
}

/* Returns whether the compiled graph was one int8 element-wise partition. */
static bool run_case(uint32_t seed)
{
    test_rng = seed * 2654435761u + 12345u;
    expr e = {0};
    cr_assert_eq(dqg_graph_create(&e.g), DQG_OK);
    e.rank = (int)test_rin(1, 4);
    for (int i = 0; i < e.rank; i++)
        e.d[i] = test_rin(0, 2) == 0 ? 1 : test_rin(2, 16);
    e.n_inputs = (int)test_rin(1, MAX_INPUTS);
    for (int i = 0; i < e.n_inputs; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        e.input[i] = dqg_input(e.g, name, test_rin(0, 1) ? DQG_U8 : DQG_S8, e.rank, e.d);
        e.dq[i] = DQG_NONE;
    }
    dqg_tensor_id y = node(&e, (int)test_rin(1, 4));
    if (e.leaves == 0) { /* at least one run-time input */
        note(&e, " + ");
        y = dqg_add(e.g, NULL, y, leaf_dq(&e));
    }
    dqg_dtype qt = test_rin(0, 1) ? DQG_U8 : DQG_S8;
    uint8_t qz = (uint8_t)(qt == DQG_U8 ? test_rin(0, 255) : test_rin(-40, 40));
    int64_t one = 1;
    dqg_quantize_linear_attrs qa = {.opset = 13};
    y = dqg_quantize_linear(e.g, "q", y, scalar(e.g, test_uniform(0.005f, 0.2f)),
                            dqg_constant(e.g, NULL, qt, 0, &one, &qz, 1), &qa);
    cr_assert_eq(dqg_output(e.g, y, "y"), DQG_OK, "%s", dqg_last_error());
    dqg_status st = dqg_graph_finalize(e.g);
    cr_assert_eq(st, DQG_OK, "seed %u: %s: %s", seed, e.what, dqg_last_error());

    dqg_buffer in[MAX_INPUTS];
    for (int i = 0; i < e.n_inputs; i++) {
        size_t n = dqg_tensor_byte_size(e.g, e.input[i]);
        uint8_t *v = malloc(n);
        for (size_t k = 0; k < n; k++)
            v[k] = (uint8_t)test_rnd();
        in[i] = (dqg_buffer){.id = e.input[i], .data = v, .size = n};
    }
    size_t yb = dqg_tensor_byte_size(e.g, y);
    uint8_t *ref = malloc(yb), *got = malloc(yb);
    dqg_buffer o = {.id = y, .data = ref, .size = yb};
    cr_assert_eq(dqg_reference_run(e.g, in, (size_t)e.n_inputs, &o, 1), DQG_OK, "%s",
                 dqg_last_error());
    dqg_compiled *c = NULL;
    cr_assert_eq(dqg_compile(e.g, NULL, &c), DQG_OK, "seed %u: %s: %s", seed, e.what,
                 dqg_last_error());
    o.data = got;
    cr_assert_eq(dqg_execute(c, in, (size_t)e.n_inputs, &o, 1), DQG_OK, "%s", dqg_last_error());
    bool one_kernel = dqg_compiled_partition_count(c) == 1 &&
                      strstr(dqg_compiled_partition_info(c, 0), "int8 element-wise [") != NULL;
    int tol = one_kernel ? 0 : 1;
    for (size_t i = 0; i < yb; i++) {
        int a = qt == DQG_U8 ? got[i] : (int8_t)got[i], r = qt == DQG_U8 ? ref[i] : (int8_t)ref[i];
        cr_assert(abs(a - r) <= tol,
                  "seed %u: %s (rank %d, %d inputs, %s output)\n[%zu] %d, reference %d\n%s", seed,
                  e.what, e.rank, e.n_inputs, qt == DQG_U8 ? "u8" : "s8", i, a, r,
                  dqg_compiled_partition_info(c, 0));
    }
    dqg_compiled_destroy(c);
    for (int i = 0; i < e.n_inputs; i++)
        free(in[i].data);
    free(ref);
    free(got);
    dqg_graph_destroy(e.g);
    return one_kernel;
}

/* Seeds 1..20000 (DQG_ELTWISE_CASES=FIRST:COUNT runs others). */
Test(random_eltwise, quantized_expressions_match_the_reference, .timeout = 300)
{
    uint32_t first = 1, count = 20000, fused = 0;
    test_seed_range("DQG_ELTWISE_CASES", &first, &count);
    for (uint32_t s = first; s < first + count; s++)
        fused += run_case(s);
    cr_log_info("%u expressions, %u of them one int8 element-wise partition", count, fused);
    cr_assert_gt(fused, count / 4, "only %u of %u expressions became one int8 partition", fused,
                 count);
}
