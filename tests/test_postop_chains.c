/* Randomized differential suite for the element-wise chains that follow a
 * MatMul or a Convolution, with fixed seeds. Each case is one core layer
 * (f32 MatMul, batched or not; int8 QDQ MatMul; weight-only int4 MatMul;
 * f32 and int8 QDQ Convolution) followed by up to six random ops: Add, Sub,
 * Mul and Div with a scalar, a per-channel, a per-row or a full constant
 * operand (either side), a residual graph input, unary functions (ReLU,
 * Clip, Sigmoid, Tanh, GELU in both forms, LeakyReLU, ELU, HardSwish,
 * HardSigmoid, Swish, Abs, Neg) and x * Sigmoid(x); sometimes a final
 * QuantizeLinear. The passes turn what they can into oneDNN post-ops or
 * the own kernels' epilogues; the compiled result must match the
 * reference interpreter.
 *
 * The bound: each stage of the chain (the core's result, then every op's)
 * is within 1e-5 of its own largest magnitude (for the core, of its
 * largest sum of |products|, which bounds float accumulation however the
 * products cancel: a 1 x 75 x 1 int4 product of -0.00506 came out 1e-7
 * off), and an error entering a
 * later op grows at most by that op's Lipschitz constant (1 for Add, Sub,
 * ReLU, Clip, Tanh; |c| for Mul; 1 / min |c| for Div; 1.13 for GELU, 1.5
 * for HardSwish, ...). So the final error is at most 1e-5 times the largest
 * of (stage magnitude x the product of the constants after it); the stage
 * magnitudes come from a reference run of the same graph with every stage
 * made an output. A quantized result may differ by that bound in units of
 * its scale, rounded up, plus the one unit of the contract. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_common.h"

enum {
    CORE_MM_F32,
    CORE_MM_INT8,
    CORE_MM_INT4,
    CORE_MM_RUNTIME, /* both operands graph inputs, as attention's */
    CORE_MM_HEADS,   /* both graph inputs through Reshape/Transpose, as attention heads */
    CORE_CONV_F32,
    CORE_CONV_INT8,
    CORE_COUNT
};
enum { MAX_STAGES = 16, MAX_INPUTS = 4 };

/* What a case built: its stages (tensors whose magnitudes bound the
 * error), each stage's Lipschitz constant of the rest of the chain, its
 * runtime inputs, and a description. */
typedef struct chain {
    dqg_graph *g;
    int core;
    int rank;
    int64_t d[4];
    int channel_axis; /* of the core's result */
    int n_stages;
    dqg_tensor_id stage[MAX_STAGES];
    double lip[MAX_STAGES]; /* the constant of the op that produced stage k (stage 0: 1) */
    int n_inputs;
    dqg_tensor_id input[MAX_INPUTS];
    char input_name[MAX_INPUTS][16];
    dqg_tensor_id y;
    bool quantized;
    /* With mark_all: the core computed on |x| and |w|, whose largest value
     * bounds the core's float rounding (its sums of |products|). */
    bool mark_all;
    dqg_tensor_id abs_core;
    char what[512];
} chain;

static void note(chain *c, const char *fmt, const char *s)
{
    size_t n = strlen(c->what);
    snprintf(c->what + n, sizeof c->what - n, fmt, s);
}

static int64_t numel(const chain *c)
{
    int64_t n = 1;
    for (int i = 0; i < c->rank; i++)
        n *= c->d[i];
    return n;
}

static dqg_tensor_id scalar(dqg_graph *g, float v)
{
    int64_t one = 1;
    return dqg_constant(g, NULL, DQG_F32, 0, &one, &v, sizeof v);
}

/* Uniform in [lo, hi]; `both_signs` also flips each value's sign at
 * random (divisors away from 0). */
static dqg_tensor_id const_f32(dqg_graph *g, int rank, const int64_t *d, float lo, float hi,
                               bool both_signs)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = test_uniform(lo, hi);
        if (both_signs && test_rin(0, 1))
            v[i] = -v[i];
    }
    dqg_tensor_id t = dqg_constant(g, NULL, DQG_F32, rank, d, v, (size_t)n * sizeof *v);
    free(v);
    return t;
}

static dqg_tensor_id const_i8(dqg_graph *g, dqg_dtype t, int rank, const int64_t *d, int lo, int hi)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    size_t bytes = dqg_dtype_storage_size(t, n);
    uint8_t *v = calloc(bytes, 1);
    for (int64_t i = 0; i < n; i++) {
        int q = (int)test_rin(lo, hi);
        if (t == DQG_S4)
            v[i / 2] |= (uint8_t)((q & 15) << (4 * (i % 2)));
        else
            v[i] = (uint8_t)q;
    }
    dqg_tensor_id id = dqg_constant(g, NULL, t, rank, d, v, bytes);
    free(v);
    return id;
}

static dqg_tensor_id add_input(chain *c, const char *name, dqg_dtype t, int rank, const int64_t *d)
{
    dqg_tensor_id id = dqg_input(c->g, name, t, rank, d);
    snprintf(c->input_name[c->n_inputs], sizeof c->input_name[0], "%s", name);
    c->input[c->n_inputs++] = id;
    return id;
}

static dqg_tensor_id absolute(chain *c, dqg_tensor_id t)
{
    return dqg_unary(c->g, NULL, DQG_UNARY_ABS, t, 0.0f, 0.0f);
}

static void stage(chain *c, dqg_tensor_id t, double lip)
{
    c->stage[c->n_stages] = t;
    c->lip[c->n_stages++] = lip;
    c->y = t;
}

/* An int8 core's operands: DequantizeLinear of a u8 graph input "x" (one
 * scale and zero point) and of constant s8 weights, scaled per channel
 * along `waxis` -- with `u8_ok` a third of the time u8 weights over their
 * whole range with one zero point or one per channel (a MatMul's common
 * offset or row term, a convolution's window term). The random draws happen one
 * statement at a time, so a seed makes the same case whichever order a
 * compiler evaluates arguments in. */
static void int8_operands(chain *c, int xrank, const int64_t *xd, int wrank, const int64_t *wd,
                          int waxis, bool u8_ok, dqg_tensor_id *x, dqg_tensor_id *w)
{
    dqg_graph *g = c->g;
    int64_t one = 1;
    dqg_dequantize_linear_attrs da = {.opset = 13},
                                wa = {.opset = 13, .has_axis = true, .axis = waxis};
    dqg_tensor_id in = add_input(c, "x", DQG_U8, xrank, xd);
    uint8_t zp = (uint8_t)test_rin(0, 255);
    dqg_tensor_id s = scalar(g, test_uniform(0.005f, 0.05f));
    *x = dqg_dequantize_linear(g, NULL, in, s, dqg_constant(g, NULL, DQG_U8, 0, &one, &zp, 1), &da);
    if (u8_ok && test_rin(0, 2) == 0) {
        bool per_channel = test_rin(0, 1);
        int64_t nz = per_channel ? wd[waxis] : 1;
        dqg_tensor_id q = const_i8(g, DQG_U8, wrank, wd, 0, 255);
        dqg_tensor_id ws = const_f32(g, 1, &wd[waxis], 0.001f, 0.02f, false);
        if (!per_channel)
            ws = scalar(g, test_uniform(0.001f, 0.02f));
        dqg_tensor_id z = const_i8(g, DQG_U8, per_channel ? 1 : 0, &nz, 0, 255);
        note(c, "u8 weights, %s zero points: ", per_channel ? "per-channel" : "one of");
        dqg_dequantize_linear_attrs ua = wa;
        ua.has_axis = per_channel;
        *w = dqg_dequantize_linear(g, NULL, q, ws, z, &ua);
        return;
    }
    dqg_tensor_id q = const_i8(g, DQG_S8, wrank, wd, -127, 127);
    dqg_tensor_id ws = const_f32(g, 1, &wd[waxis], 0.001f, 0.02f, false);
    *w = dqg_dequantize_linear(g, NULL, q, ws, DQG_NONE, &wa);
}

/* A graph input that becomes the tensor of `logical` dims (rank r)
 * through a random Transpose (or none), or for rank 4 sometimes through
 * attention's Reshape [b0, M, b1 * K] -> [b0, M, b1, K] -> Transpose(0, 2,
 * 1, 3). */
static dqg_tensor_id permuted_input(chain *c, const char *name, int r, const int64_t *logical)
{
    dqg_graph *g = c->g;
    char buf[96];
    if (r == 4 && test_rin(0, 2) == 0) {
        int64_t xd[3] = {logical[0], logical[2], logical[1] * logical[3]},
                rd[4] = {logical[0], logical[2], logical[1], logical[3]}, perm[4] = {0, 2, 1, 3};
        dqg_tensor_id x = add_input(c, name, DQG_F32, 3, xd);
        snprintf(buf, sizeof buf, " %s: Reshape+Transpose(0,2,1,3)", name);
        note(c, "%s", buf);
        return dqg_transpose(g, NULL, dqg_reshape(g, NULL, x, 4, rd), perm);
    }
    int64_t perm[4] = {0, 1, 2, 3}, xd[4];
    if (test_rin(0, 2) != 0)
        for (int i = r - 1; i > 0; i--) {
            int j = (int)test_rin(0, i);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    bool identity = true;
    for (int i = 0; i < r; i++) {
        xd[perm[i]] = logical[i];
        identity &= perm[i] == i;
    }
    dqg_tensor_id x = add_input(c, name, DQG_F32, r, xd);
    if (identity)
        return x;
    snprintf(buf, sizeof buf, " %s: Transpose(%lld,%lld,%lld%s%s)", name, (long long)perm[0],
             (long long)perm[1], (long long)perm[2], r == 4 ? "," : "",
             r == 4 ? (const char *[]){"0", "1", "2", "3"}[perm[3]] : "");
    note(c, "%s", buf);
    return dqg_transpose(g, NULL, x, perm);
}

/* The core layer: its result is stage 0. */
static void core(chain *c)
{
    dqg_graph *g = c->g;
    dqg_matmul_attrs ma = {0};
    char buf[160];
    if (c->core == CORE_MM_HEADS) {
        /* [.., M, K] x [.., K, N], batch dims of B 1 where broadcast. */
        int r = (int)test_rin(3, 4);
        int64_t ad[4], bd[4];
        for (int i = 0; i < r - 2; i++) {
            ad[i] = test_rin(1, 4);
            bd[i] = test_rin(0, 3) == 0 ? 1 : ad[i];
        }
        ad[r - 2] = test_rin(1, 24);
        ad[r - 1] = bd[r - 2] = test_rin(1, 40);
        bd[r - 1] = test_rin(1, 30);
        snprintf(buf, sizeof buf, "heads MatMul rank %d M=%lld K=%lld N=%lld", r,
                 (long long)ad[r - 2], (long long)ad[r - 1], (long long)bd[r - 1]);
        note(c, "%s", buf);
        dqg_tensor_id a = permuted_input(c, "x", r, ad), b = permuted_input(c, "w", r, bd);
        c->rank = r;
        for (int i = 0; i < r - 2; i++)
            c->d[i] = ad[i];
        c->d[r - 2] = ad[r - 2];
        c->d[r - 1] = bd[r - 1];
        c->channel_axis = r - 1;
        stage(c, dqg_matmul(g, "core", a, b, NULL), 1.0);
        if (c->mark_all)
            c->abs_core = dqg_matmul(g, NULL, absolute(c, a), absolute(c, b), NULL);
        return;
    }
    if (c->core <= CORE_MM_RUNTIME) {
        int64_t B = test_rin(0, 3) == 0 ? test_rin(1, 3) : 0, M = test_rin(1, 40),
                K = test_rin(1, 80), N = test_rin(1, 70);
        if (c->core == CORE_MM_INT4)
            K = test_rin(1, 4) * 32 -
                test_rin(0, 1) * test_rin(1, 31); /* blocks of 32, the last cut */
        int r = 0;
        if (B)
            c->d[r++] = B;
        c->d[r++] = M;
        c->d[r++] = N;
        c->rank = r;
        c->channel_axis = r - 1;
        int64_t xd[3] = {B, M, K}, wd[2] = {K, N};
        const int64_t *xs = B ? xd : xd + 1;
        dqg_tensor_id x, w;
        if (c->core == CORE_MM_INT8) {
            int8_operands(c, r, xs, 2, wd, 1, true, &x, &w);
        } else if (c->core == CORE_MM_INT4) {
            x = add_input(c, "x", DQG_F32, r, xs);
            int64_t sd[2] = {(K + 31) / 32, N};
            dqg_dequantize_linear_attrs wa = {
                .opset = 21, .has_axis = true, .axis = 0, .block_size = 32};
            dqg_tensor_id q = const_i8(g, DQG_S4, 2, wd, -8, 7);
            w = dqg_dequantize_linear(g, NULL, q, const_f32(g, 2, sd, 0.01f, 0.1f, false), DQG_NONE,
                                      &wa);
        } else if (c->core == CORE_MM_RUNTIME) {
            /* [B, K, N], [1, K, N] or [K, N], maybe stored transposed. */
            x = add_input(c, "x", DQG_F32, r, xs);
            int64_t bd[3] = {B ? (test_rin(0, 1) ? B : 1) : 0, K, N};
            bool plain = !B || test_rin(0, 2) == 0;
            ma.transpose_b = test_rin(0, 1) != 0;
            if (ma.transpose_b) {
                bd[1] = N;
                bd[2] = K;
            }
            w = add_input(c, "w", DQG_F32, plain ? 2 : 3, plain ? bd + 1 : bd);
        } else {
            x = add_input(c, "x", DQG_F32, r, xs);
            w = const_f32(g, 2, wd, -0.3f, 0.3f, false);
        }
        snprintf(buf, sizeof buf, "%s MatMul B=%lld M=%lld K=%lld N=%lld%s",
                 c->core == CORE_MM_F32       ? "f32"
                 : c->core == CORE_MM_INT8    ? "int8"
                 : c->core == CORE_MM_RUNTIME ? "run-time f32"
                                              : "int4 weight-only",
                 (long long)B, (long long)M, (long long)K, (long long)N,
                 ma.transpose_b ? " transpose_b" : "");
        note(c, "%s", buf);
        stage(c, dqg_matmul(g, "core", x, w, &ma), 1.0);
        if (c->mark_all)
            c->abs_core = dqg_matmul(g, NULL, absolute(c, x), absolute(c, w), &ma);
        return;
    }
    /* Channels-first or -last; plain, grouped or depthwise; stride 1 or 2. */
    bool nxc = test_rin(0, 2) == 0;
    int64_t C = test_rin(1, 20), H = test_rin(1, 9), W = test_rin(1, 9), O = test_rin(1, 40),
            k = test_rin(0, 1) ? 3 : 1, stride = test_rin(1, 2), groups = 1;
    int kind = (int)test_rin(0, 3);
    if (kind == 0) {
        groups = C;
        O = C * test_rin(1, 2);
    } else if (kind == 1 && C % 2 == 0) {
        groups = C % 3 == 0 ? 3 : 2;
        O = groups * test_rin(1, 6);
    }
    int64_t Ho = (H + 2 * (k / 2) - k) / stride + 1, Wo = (W + 2 * (k / 2) - k) / stride + 1;
    int64_t xd[4] = {1, nxc ? H : C, nxc ? W : H, nxc ? C : W}, wd[4] = {O, C / groups, k, k};
    c->rank = 4;
    c->d[0] = 1;
    c->d[1] = nxc ? Ho : O;
    c->d[2] = nxc ? Wo : Ho;
    c->d[3] = nxc ? O : Wo;
    c->channel_axis = nxc ? 3 : 1;
    dqg_tensor_id x, w;
    if (c->core == CORE_CONV_INT8) {
        int8_operands(c, 4, xd, 4, wd, 0, true, &x, &w);
    } else {
        x = add_input(c, "x", DQG_F32, 4, xd);
        w = const_f32(g, 4, wd, -0.3f, 0.3f, false);
    }
    dqg_conv_attrs a = {.spatial_rank = 2,
                        .strides = {stride, stride},
                        .pads_begin = {k / 2, k / 2},
                        .pads_end = {k / 2, k / 2},
                        .groups = groups,
                        .data_format = nxc ? DQG_FORMAT_NXC : DQG_FORMAT_NCX};
    snprintf(
        buf, sizeof buf, "%s %s Conv C=%lld H=%lld W=%lld O=%lld k=%lld stride=%lld groups=%lld",
        c->core == CORE_CONV_F32 ? "f32" : "int8", nxc ? "NXC" : "NCX", (long long)C, (long long)H,
        (long long)W, (long long)O, (long long)k, (long long)stride, (long long)groups);
    note(c, "%s", buf);
    stage(c, dqg_convolution(g, "core", x, w, DQG_NONE, &a), 1.0);
    if (c->mark_all)
        c->abs_core = dqg_convolution(g, NULL, absolute(c, x), absolute(c, w), DQG_NONE, &a);
}

/* An operand for a binary op: scalar, per channel (varying along the
 * core's channel axis: [N] for a MatMul, [O, 1, 1] or [O] for a
 * Convolution), per row (along the axis before the last, or the last when
 * that is the channel), the full shape as a constant, or the full shape as
 * a graph input. Trailing axes of 1 keep ONNX broadcasting aligned. */
static dqg_tensor_id operand(chain *c, float lo, float hi, const char **kind)
{
    dqg_graph *g = c->g;
    int64_t d[4] = {1, 1, 1, 1};
    int axis = -1;
    switch (test_rin(0, 4)) {
    case 0:
        *kind = "scalar";
        return const_f32(g, 0, d, lo, hi, lo > 0.0f);
    case 1:
        *kind = "per-channel";
        axis = c->channel_axis;
        break;
    case 2:
        *kind = "per-row";
        axis = c->channel_axis == c->rank - 1 ? c->rank - 2 : c->rank - 1;
        break;
    case 4: /* a graph input while there are some left (not for divisors) */
        if (c->n_inputs < MAX_INPUTS && lo <= 0.0f) {
            *kind = "residual input";
            char name[16];
            snprintf(name, sizeof name, "r%d", c->n_inputs & 7);
            return add_input(c, name, DQG_F32, c->rank, c->d);
        }
        break;
    default:
        break;
    }
    if (axis < 0) {
        *kind = "full";
        return const_f32(g, c->rank, c->d, lo, hi, lo > 0.0f);
    }
    d[0] = c->d[axis];
    return const_f32(g, c->rank - axis, d, lo, hi, lo > 0.0f);
}

static void post_op(chain *c)
{
    dqg_graph *g = c->g;
    dqg_tensor_id y = c->y, t;
    const char *kind = "";
    char buf[96];
    int op = (int)test_rin(0, 9);
    if (op <= 3) {
        bool swap = test_rin(0, 1) != 0;
        static const char *const names[] = {"Add", "Sub", "Mul", "Div"};
        double lip = 1.0;
        if (op == 3) { /* divisors in [0.5, 2] of either sign */
            t = dqg_div(g, NULL, y, operand(c, 0.5f, 2.0f, &kind));
            lip = 2.0;
            swap = false;
        } else if (op == 2) {
            dqg_tensor_id o = operand(c, -2.0f, 2.0f, &kind);
            t = swap ? dqg_mul(g, NULL, o, y) : dqg_mul(g, NULL, y, o);
            lip = 2.0;
        } else {
            dqg_tensor_id o = operand(c, -2.0f, 2.0f, &kind);
            if (op == 0)
                t = swap ? dqg_add(g, NULL, o, y) : dqg_add(g, NULL, y, o);
            else
                t = swap ? dqg_sub(g, NULL, o, y) : dqg_sub(g, NULL, y, o);
        }
        snprintf(buf, sizeof buf, " -> %s(%s %s)", names[op], kind, swap ? "first" : "second");
        note(c, "%s", buf);
        stage(c, t, lip);
        return;
    }
    if (op == 4) {
        float lo = test_uniform(-3.0f, 1.0f), hi = lo + test_uniform(0.1f, 4.0f);
        snprintf(buf, sizeof buf, " -> Clip(%.3g, %.3g)", lo, hi);
        note(c, "%s", buf);
        stage(c, dqg_clip(g, NULL, y, lo, hi), 1.0);
        return;
    }
    if (op == 5) {
        note(c, "%s", " -> x*Sigmoid(x)");
        stage(c, dqg_mul(g, NULL, y, dqg_unary(g, NULL, DQG_UNARY_SIGMOID, y, 0.0f, 0.0f)), 1.1);
        return;
    }
    if (op == 6) {
        note(c, "%s", " -> Relu");
        stage(c, dqg_relu(g, NULL, y), 1.0);
        return;
    }
    static const struct {
        dqg_unary_op op;
        double lip;
    } un[] = {
        {DQG_UNARY_SIGMOID, 0.25},   {DQG_UNARY_TANH, 1.0},         {DQG_UNARY_GELU_ERF, 1.13},
        {DQG_UNARY_GELU_TANH, 1.13}, {DQG_UNARY_LEAKY_RELU, 1.0},   {DQG_UNARY_ELU, 1.0},
        {DQG_UNARY_HARD_SWISH, 1.5}, {DQG_UNARY_HARD_SIGMOID, 0.5}, {DQG_UNARY_SWISH, 1.1 * 1.5},
        {DQG_UNARY_ABS, 1.0},        {DQG_UNARY_NEG, 1.0}};
    int u = (int)test_rin(0, sizeof un / sizeof *un - 1);
    float alpha = un[u].op == DQG_UNARY_LEAKY_RELU ? test_uniform(0.01f, 0.9f)
                  : un[u].op == DQG_UNARY_ELU      ? test_uniform(0.1f, 1.0f)
                  : un[u].op == DQG_UNARY_SWISH    ? test_uniform(0.5f, 1.5f)
                                                   : 0.2f;
    float beta = 0.5f;
    snprintf(buf, sizeof buf, " -> %s(%.3g)", dqg_unary_op_name(un[u].op), alpha);
    note(c, "%s", buf);
    stage(c, dqg_unary(g, NULL, un[u].op, y, alpha, beta), un[u].lip);
}

/* Builds case `seed`; `mark_all` makes every stage an output (for the
 * magnitudes), `qscale` > 0 ends with QuantizeLinear(qscale, qzp). */
static void build(chain *c, uint32_t seed, bool mark_all, float qscale, uint8_t qzp)
{
    memset(c, 0, sizeof *c);
    test_rng = seed * 2654435761u + 0x9e3779b9u;
    cr_assert_eq(dqg_graph_create(&c->g), DQG_OK);
    c->mark_all = mark_all;
    c->core = (int)(seed % CORE_COUNT);
    core(c);
    for (int n = (int)test_rin(0, 6); n > 0; n--)
        post_op(c);
    /* Attention's tail: Softmax over the last axis, and the result's
     * Transpose back (0, 2, 1, 3) or reversed. */
    if (c->core == CORE_MM_HEADS || c->core == CORE_MM_RUNTIME) {
        if (test_rin(0, 1)) {
            note(c, "%s", " -> Softmax");
            stage(c, dqg_softmax(c->g, NULL, c->y, -1, false), 2.0);
        }
        if (test_rin(0, 1) && c->rank >= 3) {
            int64_t p4[4] = {0, 2, 1, 3}, p3[3] = {1, 0, 2};
            note(c, "%s", " -> Transpose");
            stage(c, dqg_transpose(c->g, NULL, c->y, c->rank == 4 ? p4 : p3), 1.0);
        }
    }
    c->quantized = test_rin(0, 2) == 0;
    if (mark_all) {
        for (int k = 0; k < c->n_stages; k++) {
            char name[16];
            snprintf(name, sizeof name, "stage%d", k);
            cr_assert_eq(dqg_output(c->g, c->stage[k], name), DQG_OK, "%s", dqg_last_error());
        }
        cr_assert_eq(dqg_output(c->g, c->abs_core, "abs_core"), DQG_OK, "%s", dqg_last_error());
    } else {
        dqg_tensor_id y = c->y;
        if (c->quantized && qscale > 0.0f) {
            dqg_quantize_linear_attrs qa = {.opset = 13};
            int64_t one = 1;
            y = dqg_quantize_linear(c->g, "q", y, scalar(c->g, qscale),
                                    dqg_constant(c->g, NULL, DQG_U8, 0, &one, &qzp, 1), &qa);
            note(c, "%s", " -> QuantizeLinear");
        }
        c->y = y;
        cr_assert_eq(dqg_output(c->g, y, "y"), DQG_OK, "%s", dqg_last_error());
    }
    dqg_status st = dqg_graph_finalize(c->g);
    cr_assert_eq(st, DQG_OK, "seed %u: %s: %s", seed, c->what, dqg_last_error());
}

/* Seeded data for every graph input of c. */
static dqg_buffer *inputs(const chain *c, uint32_t seed)
{
    dqg_buffer *in = calloc((size_t)c->n_inputs, sizeof *in);
    uint32_t save = test_rng;
    test_rng = seed * 747796405u + 1;
    for (int i = 0; i < c->n_inputs; i++) {
        dqg_tensor_id t = c->input[i];
        size_t n = dqg_tensor_byte_size(c->g, t);
        uint8_t *v = malloc(n);
        if (dqg_tensor_dtype(c->g, t) == DQG_F32)
            for (size_t k = 0; k < n / 4; k++)
                ((float *)v)[k] = test_uniform(-1.5f, 1.5f);
        else
            for (size_t k = 0; k < n; k++)
                v[k] = (uint8_t)test_rnd();
        in[i] = (dqg_buffer){.name = c->input_name[i], .data = v, .size = n};
    }
    test_rng = save;
    return in;
}

static void free_inputs(dqg_buffer *in, int n)
{
    for (int i = 0; i < n; i++)
        free(in[i].data);
    free(in);
}

/* One case: returns the worst error over its bound. */
static double run_case(uint32_t seed)
{
    /* The stage magnitudes, from the reference with every stage an output. */
    chain m;
    build(&m, seed, true, 0.0f, 0);
    dqg_buffer *in = inputs(&m, seed);
    dqg_buffer out[MAX_STAGES + 1];
    for (int k = 0; k <= m.n_stages; k++) {
        dqg_tensor_id t = k < m.n_stages ? m.stage[k] : m.abs_core;
        size_t n = dqg_tensor_byte_size(m.g, t);
        out[k] = (dqg_buffer){.id = t, .data = malloc(n), .size = n};
    }
    cr_assert_eq(dqg_reference_run(m.g, in, (size_t)m.n_inputs, out, (size_t)m.n_stages + 1),
                 DQG_OK, "seed %u: %s", seed, dqg_last_error());
    double bound = 0.0, lo = 0.0, hi = 0.0, abs_core = 0.0;
    for (size_t i = 0; i < out[m.n_stages].size / 4; i++)
        abs_core = fmax(abs_core, ((float *)out[m.n_stages].data)[i]);
    free(out[m.n_stages].data);
    for (int k = 0; k < m.n_stages; k++) {
        double mag = k == 0 ? abs_core : 0.0, after = 1.0;
        for (size_t i = 0; i < out[k].size / 4; i++)
            mag = fmax(mag, fabs(((float *)out[k].data)[i]));
        for (int j = k + 1; j < m.n_stages; j++)
            after *= m.lip[j];
        bound = fmax(bound, 1e-5 * mag * after);
        if (k == m.n_stages - 1)
            for (size_t i = 0; i < out[k].size / 4; i++) {
                lo = fmin(lo, ((float *)out[k].data)[i]);
                hi = fmax(hi, ((float *)out[k].data)[i]);
            }
        free(out[k].data);
    }
    bound = fmax(bound, 1e-30);
    float qscale = hi > lo ? (float)((hi - lo) / 255.0) : 1.0f;
    uint8_t qzp = (uint8_t)fmin(fmax(round(-lo / qscale), 0.0), 255.0);
    dqg_graph_destroy(m.g);

    chain c;
    build(&c, seed, false, qscale, qzp);
    int64_t n = numel(&c);
    size_t bytes = dqg_tensor_byte_size(c.g, c.y);
    void *ref = malloc(bytes), *got = malloc(bytes);
    dqg_buffer o = {.id = c.y, .data = ref, .size = bytes};
    cr_assert_eq(dqg_reference_run(c.g, in, (size_t)c.n_inputs, &o, 1), DQG_OK, "seed %u: %s", seed,
                 dqg_last_error());
    dqg_compiled *cc = NULL;
    cr_assert_eq(dqg_compile(c.g, NULL, &cc), DQG_OK, "seed %u: %s: %s", seed, c.what,
                 dqg_last_error());
    o.data = got;
    char parts[2048] = "";
    for (size_t p = 0; p < dqg_compiled_partition_count(cc); p++) {
        strncat(parts, "\n  ", sizeof parts - strlen(parts) - 1);
        strncat(parts, dqg_compiled_partition_info(cc, p), sizeof parts - strlen(parts) - 1);
    }
    double worst = 0.0;
    bool q = dqg_tensor_dtype(c.g, c.y) == DQG_U8;
    double units = q ? 1.0 + ceil(bound / qscale) : 0.0;
    /* DQG_POSTOP_REPEATS=R runs each compiled case R times (a kernel that
     * races between its threads is wrong only now and then). */
    const char *rep = getenv("DQG_POSTOP_REPEATS");
    int repeats = rep && atoi(rep) > 0 ? atoi(rep) : 1;
    for (int run = 0; run < repeats; run++) {
        memset(got, 0xff, bytes);
        cr_assert_eq(dqg_execute(cc, in, (size_t)c.n_inputs, &o, 1), DQG_OK, "seed %u: %s", seed,
                     dqg_last_error());
        for (int64_t i = 0; i < n; i++) {
            double a = q ? ((uint8_t *)got)[i] : ((float *)got)[i];
            double r = q ? ((uint8_t *)ref)[i] : ((float *)ref)[i];
            double e = fabs(a - r) / (q ? units : bound);
            worst = fmax(worst, e);
            cr_assert(
                e <= 1.0,
                "seed %u, run %d: %s\n[%lld] %.9g, reference %.9g (bound %.3g%s)\npartitions:%s",
                seed, run, c.what, (long long)i, a, r, q ? units : bound, q ? " units" : "", parts);
        }
    }
    dqg_compiled_destroy(cc);
    free(ref);
    free(got);
    free_inputs(in, c.n_inputs);
    dqg_graph_destroy(c.g);
    return worst;
}

/* Seeds 1..2000 (DQG_POSTOP_CASES=FIRST:COUNT runs others). */
Test(postop_chains, compiled_matches_the_reference, .timeout = 300)
{
    uint32_t first = 1, count = 2000;
    test_seed_range("DQG_POSTOP_CASES", &first, &count);
    double worst = 0.0;
    for (uint32_t s = first; s < first + count; s++)
        worst = fmax(worst, run_case(s));
    cr_log_info("%u cases: worst error %.3f of its bound", count, worst);
}
