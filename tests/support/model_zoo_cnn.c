/* The convolutional networks of model_zoo.h, written as ONNX Runtime's
 * static quantizer writes them (QDQ format, opset 13): u8 asymmetric
 * per-tensor activations, s8 symmetric per-output-channel weights, int32
 * biases behind a DequantizeLinear of scale x_scale * w_scale, and a Q -> DQ
 * pair on the graph input and on the inputs and outputs of the quantized
 * operators (Conv, Gemm, Add, Concat, the pools; Flatten, Reshape and
 * Transpose and MaxPool keep their input's parameters). An activation after
 * a Conv or an Add stays float up to the next QuantizeLinear.
 *
 * Every network is described once and written twice: first in float, with
 * every tensor the quantizer would quantize made a graph output, which
 * dqgraph runs on one seeded input to record each tensor's range (the
 * calibration ONNX Runtime's quantizer does); then in QDQ form with the
 * scales and zero points of those ranges. Both writings draw the same
 * weights from the same seeded stream. Weights are He-normal with a
 * log-normal spread across output channels, as batch normalization folded
 * into a convolution leaves them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "model_zoo.h"

enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6, T_INT64 = 7 };
enum { NAME = 64 };

/* A tensor of the network being written: its name, shape, and whether it is
 * the output of a DequantizeLinear (with that quantization's parameters). */
typedef struct cv {
    char n[NAME];
    int rank;
    int64_t d[5];
    bool q;
    float s;
    int z; /* u8, or s8 with o->s8_activations */
} cv;

typedef struct cnn {
    tm_model *m;
    bool qdq; /* the second writing: quantized, with calibrated ranges */
    uint32_t seed;
    int id;
    bool relu6_bounds; /* the Clip bounds' initializers exist */
    uint32_t topo;     /* a random network's shape: its own stream, so both writings agree */
    int n_extra;       /* a random network's feature maps that are also graph outputs */
    /* Quantization points, in the order the network makes them: their
     * tensors (float writing) and calibrated ranges (QDQ writing). */
    int n_qp, cap_qp;
    char (*qp_name)[NAME];
    int64_t *qp_size;
    float *lo, *hi;
    const zoo_cnn_options *o;
} cnn;

/* ---- Seeded numbers ------------------------------------------------------ */

static uint32_t next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static float unit(uint32_t *s)
{
    return ((float)(next(s) >> 8) + 0.5f) / (float)(1u << 24);
}

static float gauss(uint32_t *s)
{
    float u = unit(s), v = unit(s);
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

/* ---- Writing helpers ----------------------------------------------------- */

static int64_t numel(const cv *x)
{
    int64_t n = 1;
    for (int i = 0; i < x->rank; i++)
        n *= x->d[i];
    return n;
}

static void fresh(cnn *b, char *out, const char *base)
{
    snprintf(out, NAME, "%s%d", base, b->id++);
}

/* The concatenation of the NULL-terminated strings into out[cap]. */
static void cat(char *out, size_t cap, ...)
{
    va_list ap;
    va_start(ap, cap);
    size_t len = 0;
    for (const char *p; (p = va_arg(ap, const char *)) != NULL;) {
        size_t n = strlen(p);
        if (len + n >= cap)
            abort(); /* names are short: a longer one is a bug here */
        memcpy(out + len, p, n);
        len += n;
    }
    out[len] = '\0';
    va_end(ap);
}

static void scalar_f32(cnn *b, const char *name, float v)
{
    tm_init(b->m, name, T_FLOAT, 0, NULL, &v, sizeof v);
}

/* Q -> DQ of x with the given parameters. */
static cv qdq(cnn *b, cv x, float s, int z)
{
    char sn[NAME + 8], zn[NAME + 8], qn[NAME + 8], in[2 * NAME + 16];
    cat(sn, sizeof sn, x.n, "_scale", NULL);
    cat(zn, sizeof zn, x.n, "_zp", NULL);
    cat(qn, sizeof qn, x.n, "_q", NULL);
    scalar_f32(b, sn, s);
    uint8_t zb = (uint8_t)z;
    tm_init(b->m, zn, b->o->s8_activations ? T_INT8 : T_UINT8, 0, NULL, &zb, 1);
    cat(in, sizeof in, x.n, ",", sn, ",", zn, NULL);
    char node[NAME + 8];
    cat(node, sizeof node, x.n, "_QuantizeLinear", NULL);
    tm_node(b->m, "QuantizeLinear", "", node, in, qn);
    cv y = x;
    cat(y.n, NAME, x.n, "_dq", NULL);
    cat(in, sizeof in, qn, ",", sn, ",", zn, NULL);
    cat(node, sizeof node, x.n, "_DequantizeLinear", NULL);
    tm_node(b->m, "DequantizeLinear", "", node, in, y.n);
    y.q = true;
    y.s = s;
    y.z = z;
    return y;
}

/* x quantized with its own calibrated parameters (a quantization point). */
static cv quant(cnn *b, cv x)
{
    if (x.q)
        return x;
    int k = b->n_qp++;
    if (!b->qdq) {
        if (k == b->cap_qp) {
            b->cap_qp = b->cap_qp ? 2 * b->cap_qp : 64;
            b->qp_name = realloc(b->qp_name, (size_t)b->cap_qp * sizeof *b->qp_name);
            b->qp_size = realloc(b->qp_size, (size_t)b->cap_qp * sizeof *b->qp_size);
            if (!b->qp_name || !b->qp_size)
                abort();
        }
        memcpy(b->qp_name[k], x.n, NAME);
        b->qp_size[k] = numel(&x);
        if (strcmp(x.n, "input") != 0)
            tm_output(b->m, x.n, T_FLOAT, x.rank, x.d);
        x.q = true;
        return x;
    }
    /* ONNX Runtime's asymmetric parameters: the range widened to hold 0,
     * mapped onto 0..255 (u8) or -128..127 (s8). */
    float lo = fminf(b->lo[k], 0.0f), hi = fmaxf(b->hi[k], 0.0f);
    float s = hi > lo ? (hi - lo) / 255.0f : 1.0f, qmin = b->o->s8_activations ? -128.0f : 0.0f;
    float z = roundf(qmin - lo / s);
    return qdq(b, x, s, (int)fminf(fmaxf(z, qmin), qmin + 255.0f));
}

/* The result of an operator that moves quantized values without changing
 * them (MaxPool, Flatten, Reshape, Transpose): quantized with its input's
 * parameters. */
static cv requant_as(cnn *b, cv y, const cv *x)
{
    if (!b->qdq) {
        y.q = true;
        return y;
    }
    return qdq(b, y, x->s, x->z);
}

static void set_ints2(cnn *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    int64_t a[] = {v, v};
    tm_attr_ints(b->m, n, name, a, 2);
}

static void set_pads(cnn *b, Onnx__NodeProto *n, int64_t p)
{
    int64_t a[] = {p, p, p, p};
    tm_attr_ints(b->m, n, "pads", a, 4);
}

/* ACT_HARD_SWISH is ONNX Runtime's form: the convolution's result is
 * quantized before the HardSwish (its quantizer fuses only ReLU and Clip
 * into a Conv); ACT_HARD_SWISH_FUSED quantizes only after it, as tools
 * that fuse HardSwish write it. */
enum act { ACT_NONE, ACT_RELU, ACT_RELU6, ACT_HARD_SWISH, ACT_HARD_SWISH_FUSED };

static cv activate(cnn *b, cv x, int act)
{
    if (act == ACT_NONE)
        return x;
    cv y = x;
    char node[NAME];
    if (act == ACT_RELU) {
        cat(y.n, NAME, x.n, "_relu", NULL);
        cat(node, NAME, x.n, "_Relu", NULL);
        tm_node(b->m, "Relu", "", node, x.n, y.n);
    } else if (act == ACT_HARD_SWISH || act == ACT_HARD_SWISH_FUSED) {
        if (act == ACT_HARD_SWISH)
            x = quant(b, x);
        cat(y.n, NAME, x.n, "_hswish", NULL);
        cat(node, NAME, x.n, "_HardSwish", NULL);
        tm_node(b->m, "HardSwish", "", node, x.n, y.n);
    } else {
        if (!b->relu6_bounds) {
            scalar_f32(b, "relu6_min", 0.0f);
            scalar_f32(b, "relu6_max", 6.0f);
            b->relu6_bounds = true;
        }
        char in[2 * NAME];
        cat(y.n, NAME, x.n, "_clip", NULL);
        cat(node, NAME, x.n, "_Clip", NULL);
        cat(in, sizeof in, x.n, ",relu6_min,relu6_max", NULL);
        tm_node(b->m, "Clip", "", node, in, y.n);
    }
    return y;
}

/* [cout][cin][taps] elements of `size` bytes rewritten as [cin][cout][taps]
 * (a ConvTranspose's weight layout). */
static void to_transposed(void *buf, size_t size, int64_t cout, int64_t cin, int64_t taps)
{
    size_t n = (size_t)(cout * cin * taps) * size;
    char *t = malloc(n ? n : 1);
    if (!t)
        abort();
    for (int64_t o = 0; o < cout; o++)
        for (int64_t i = 0; i < cin; i++)
            memcpy(t + (size_t)((i * cout + o) * taps) * size,
                   (char *)buf + (size_t)((o * cin + i) * taps) * size, (size_t)taps * size);
    memcpy(buf, t, n);
    free(t);
}

/* Weights [cout, per_out] (He-normal times a per-channel spread) and bias
 * [cout], as float initializers or as ONNX Runtime quantizes them for an
 * input of scale xs: s8 symmetric per output channel (axis 0; one scale
 * for all with o->per_tensor_weights) and int32 of scale xs * w_scale.
 * `transposed`: wd is a ConvTranspose's [cin, cout, taps...], its output
 * channels on axis 1. Writes the names of the tensors to read. */
static void weights(cnn *b, const char *base, int rank, const int64_t *wd, bool transposed,
                    float xs, float gain, char *wname, char *bname)
{
    int oc_axis = transposed ? 1 : 0;
    int64_t cout = wd[oc_axis], per = 1;
    for (int i = 0; i < rank; i++)
        per *= i == oc_axis ? 1 : wd[i];
    int64_t cin = transposed ? wd[0] : 1, taps = per / cin;
    float *w = malloc((size_t)(cout * per) * sizeof *w),
          *bias = malloc((size_t)cout * sizeof *bias);
    if (!w || !bias)
        abort();
    float std = gain * sqrtf(2.0f / (float)per);
    for (int64_t c = 0; c < cout; c++) {
        float spread = expf(0.25f * gauss(&b->seed));
        for (int64_t i = 0; i < per; i++)
            w[c * per + i] = std * spread * gauss(&b->seed);
        bias[c] = 0.1f * gauss(&b->seed);
    }
    char n[3][NAME + 16];
    if (!b->qdq) {
        cat(wname, NAME + 16, base, "_W", NULL);
        cat(bname, NAME + 16, base, "_B", NULL);
        if (transposed)
            to_transposed(w, sizeof *w, cout, cin, taps);
        tm_init(b->m, wname, T_FLOAT, rank, wd, w, (size_t)(cout * per) * sizeof *w);
        tm_init(b->m, bname, T_FLOAT, 1, &cout, bias, (size_t)cout * sizeof *bias);
        free(w);
        free(bias);
        return;
    }
    int8_t *wq = malloc((size_t)(cout * per)), *wz = calloc((size_t)cout, 1);
    int32_t *bq = malloc((size_t)cout * sizeof *bq), *bz = calloc((size_t)cout, sizeof *bz);
    float *ws = malloc((size_t)cout * sizeof *ws), *bs = malloc((size_t)cout * sizeof *bs);
    if (!wq || !wz || !bq || !bz || !ws || !bs)
        abort();
    bool pt = b->o->per_tensor_weights, u8w = b->o->u8_weights;
    float all = 0.0f, all_lo = 0.0f, all_hi = 0.0f;
    for (int64_t i = 0; pt && i < cout * per; i++) {
        all = fmaxf(all, fabsf(w[i]));
        all_lo = fminf(all_lo, w[i]);
        all_hi = fmaxf(all_hi, w[i]);
    }
    for (int64_t c = 0; c < cout; c++) {
        float mx = all, lo = all_lo, hi = all_hi;
        for (int64_t i = 0; !pt && i < per; i++) {
            mx = fmaxf(mx, fabsf(w[c * per + i]));
            lo = fminf(lo, w[c * per + i]);
            hi = fmaxf(hi, w[c * per + i]);
        }
        if (u8w) {
            /* QUInt8: asymmetric over [min(w, 0), max(w, 0)] */
            ws[c] = hi > lo ? (hi - lo) / 255.0f : 1.0f;
            int z = (int)fminf(fmaxf(roundf(-lo / ws[c]), 0.0f), 255.0f);
            wz[c] = (int8_t)(uint8_t)z;
            for (int64_t i = 0; i < per; i++)
                wq[c * per + i] = (int8_t)(uint8_t)fminf(
                    fmaxf(roundf(w[c * per + i] / ws[c]) + (float)z, 0.0f), 255.0f);
        } else {
            ws[c] = mx > 0.0f ? mx / 127.0f : 1.0f;
            for (int64_t i = 0; i < per; i++)
                wq[c * per + i] =
                    (int8_t)fminf(fmaxf(roundf(w[c * per + i] / ws[c]), -127.0f), 127.0f);
        }
        bs[c] = xs * ws[c];
        bq[c] = (int32_t)lrint((double)bias[c] / (double)bs[c]);
    }
    cat(n[0], sizeof n[0], base, "_W_quantized", NULL);
    cat(n[1], sizeof n[1], base, "_W_scale", NULL);
    cat(n[2], sizeof n[2], base, "_W_zero_point", NULL);
    /* Per tensor: scalar parameters (rank 0, of which the first channel's
     * values are the ones). */
    int prank = pt ? 0 : 1;
    int64_t pn = pt ? 1 : cout;
    if (transposed)
        to_transposed(wq, 1, cout, cin, taps);
    tm_init(b->m, n[0], u8w ? T_UINT8 : T_INT8, rank, wd, wq, (size_t)(cout * per));
    tm_init(b->m, n[1], T_FLOAT, prank, &cout, ws, (size_t)pn * sizeof *ws);
    tm_init(b->m, n[2], u8w ? T_UINT8 : T_INT8, prank, &cout, wz, (size_t)pn);
    char in[3 * NAME + 64], node[NAME + 32];
    cat(in, sizeof in, n[0], ",", n[1], ",", n[2], NULL);
    cat(wname, NAME + 16, base, "_W_dq", NULL);
    cat(node, sizeof node, base, "_W_DequantizeLinear", NULL);
    Onnx__NodeProto *wdq = tm_node(b->m, "DequantizeLinear", "", node, in, wname);
    if (!pt)
        tm_attr_int(b->m, wdq, "axis", oc_axis);
    cat(n[0], sizeof n[0], base, "_B_quantized", NULL);
    cat(n[1], sizeof n[1], base, "_B_scale", NULL);
    cat(n[2], sizeof n[2], base, "_B_zero_point", NULL);
    tm_init(b->m, n[0], T_INT32, 1, &cout, bq, (size_t)cout * sizeof *bq);
    tm_init(b->m, n[1], T_FLOAT, prank, &cout, bs, (size_t)pn * sizeof *bs);
    tm_init(b->m, n[2], T_INT32, prank, &cout, bz, (size_t)pn * sizeof *bz);
    cat(in, sizeof in, n[0], ",", n[1], ",", n[2], NULL);
    cat(bname, NAME + 16, base, "_B_dq", NULL);
    cat(node, sizeof node, base, "_B_DequantizeLinear", NULL);
    Onnx__NodeProto *bdq = tm_node(b->m, "DequantizeLinear", "", node, in, bname);
    if (!pt)
        tm_attr_int(b->m, bdq, "axis", 0);
    free(w);
    free(bias);
    free(wq);
    free(wz);
    free(bq);
    free(bz);
    free(ws);
    free(bs);
}

/* ---- Layers -------------------------------------------------------------- */

/* Conv (batch normalization folded in) -> activation, quantized. `gain`
 * scales the He-normal weights (below 1 for the last convolution of a
 * residual branch, whose sum with the shortcut would otherwise grow). */
static cv conv(cnn *b, cv x, int64_t cout, int64_t k, int64_t stride, int64_t pad, int64_t groups,
               int act, float gain)
{
    x = quant(b, x);
    char base[NAME], wn[NAME + 16], bn[NAME + 16], in[3 * NAME + 48];
    fresh(b, base, "conv");
    int64_t wd[] = {cout, x.d[1] / groups, k, k};
    weights(b, base, 4, wd, false, x.s, act == ACT_NONE ? gain * 0.7071f : gain, wn, bn);
    cat(in, sizeof in, x.n, ",", wn, ",", bn, NULL);
    Onnx__NodeProto *n = tm_node(b->m, "Conv", "", base, in, base);
    set_ints2(b, n, "kernel_shape", k);
    set_ints2(b, n, "strides", stride);
    set_pads(b, n, pad);
    if (groups > 1)
        tm_attr_int(b->m, n, "group", groups);
    cv y = {.rank = 4,
            .d = {x.d[0], cout, (x.d[2] + 2 * pad - k) / stride + 1,
                  (x.d[3] + 2 * pad - k) / stride + 1}};
    memcpy(y.n, base, NAME);
    return quant(b, activate(b, y, act));
}

/* Gemm (transB = 1: weights [N, K], quantized along axis 0) -> activation. */
static cv gemm(cnn *b, cv x, int64_t nout, int act)
{
    x = quant(b, x);
    char base[NAME], wn[NAME + 16], bn[NAME + 16], in[3 * NAME + 48];
    fresh(b, base, "gemm");
    int64_t wd[] = {nout, x.d[1]};
    weights(b, base, 2, wd, false, x.s, act == ACT_NONE ? 0.7071f : 1.0f, wn, bn);
    cat(in, sizeof in, x.n, ",", wn, ",", bn, NULL);
    tm_attr_int(b->m, tm_node(b->m, "Gemm", "", base, in, base), "transB", 1);
    cv y = {.rank = 2, .d = {x.d[0], nout}};
    memcpy(y.n, base, NAME);
    return quant(b, activate(b, y, act));
}

/* ConvTranspose k x k, stride k (a decoder's upsampling) -> activation,
 * quantized; weights per output channel along axis 1. */
static cv deconv(cnn *b, cv x, int64_t cout, int64_t k, int act)
{
    x = quant(b, x);
    char base[NAME], wn[NAME + 16], bn[NAME + 16], in[3 * NAME + 48];
    fresh(b, base, "deconv");
    int64_t wd[] = {x.d[1], cout, k, k};
    /* Each output sees x.d[1] of the products (one tap per input), not
     * x.d[1] k k: He-normal over the inputs that reach it. */
    weights(b, base, 4, wd, true, x.s, (float)k, wn, bn);
    cat(in, sizeof in, x.n, ",", wn, ",", bn, NULL);
    Onnx__NodeProto *n = tm_node(b->m, "ConvTranspose", "", base, in, base);
    set_ints2(b, n, "kernel_shape", k);
    set_ints2(b, n, "strides", k);
    cv y = {.rank = 4, .d = {x.d[0], cout, x.d[2] * k, x.d[3] * k}};
    memcpy(y.n, base, NAME);
    return quant(b, activate(b, y, act));
}

/* op(x, r) -> activation, quantized; the result has x's shape (r the
 * same, or broadcast over it). */
static cv binary(cnn *b, const char *op, const char *base, cv x, cv r, int act)
{
    x = quant(b, x);
    r = quant(b, r);
    cv y = x;
    y.q = false;
    char in[2 * NAME + 2];
    fresh(b, y.n, base);
    cat(in, sizeof in, x.n, ",", r.n, NULL);
    tm_node(b->m, op, "", y.n, in, y.n);
    return quant(b, activate(b, y, act));
}

static cv add(cnn *b, cv x, cv r, int act)
{
    return binary(b, "Add", "add", x, r, act);
}

static cv concat(cnn *b, cv *xs, int n, int act)
{
    char *in = malloc((size_t)n * (NAME + 1) + 1);
    if (!in)
        abort();
    in[0] = '\0';
    cv y = xs[0];
    y.q = false;
    y.d[1] = 0;
    for (int i = 0; i < n; i++) {
        xs[i] = quant(b, xs[i]);
        strcat(in, i ? "," : "");
        strcat(in, xs[i].n);
        y.d[1] += xs[i].d[1];
    }
    fresh(b, y.n, "concat");
    tm_attr_int(b->m, tm_node(b->m, "Concat", "", y.n, in, y.n), "axis", 1);
    free(in);
    return quant(b, activate(b, y, act));
}

static cv pool(cnn *b, cv x, bool max, int64_t k, int64_t stride, int64_t pad)
{
    x = quant(b, x);
    cv y = x;
    y.q = false;
    fresh(b, y.n, max ? "maxpool" : "avgpool");
    Onnx__NodeProto *n = tm_node(b->m, max ? "MaxPool" : "AveragePool", "", y.n, x.n, y.n);
    set_ints2(b, n, "kernel_shape", k);
    set_ints2(b, n, "strides", stride);
    set_pads(b, n, pad);
    if (!max && pad)
        tm_attr_int(b->m, n, "count_include_pad", 1);
    y.d[2] = (x.d[2] + 2 * pad - k) / stride + 1;
    y.d[3] = (x.d[3] + 2 * pad - k) / stride + 1;
    return max ? requant_as(b, y, &x) : quant(b, y);
}

/* GlobalAveragePool: [N, C, 1, 1]. */
static cv gap(cnn *b, cv x)
{
    x = quant(b, x);
    cv y = x;
    y.q = false;
    fresh(b, y.n, "gap");
    tm_node(b->m, "GlobalAveragePool", "", y.n, x.n, y.n);
    y.d[2] = y.d[3] = 1;
    return quant(b, y);
}

/* A unary op of its own (Sigmoid, HardSigmoid), quantized in and out. */
static cv unary(cnn *b, cv x, const char *op, const char *base)
{
    x = quant(b, x);
    cv y = x;
    y.q = false;
    fresh(b, y.n, base);
    Onnx__NodeProto *n = tm_node(b->m, op, "", y.n, x.n, y.n);
    if (strcmp(op, "HardSigmoid") == 0) /* PyTorch's hardsigmoid */
        tm_attr_float(b->m, n, "alpha", 1.0f / 6.0f);
    return quant(b, y);
}

/* x * s, s broadcast over x's shape (an [N, C, 1, 1] gate). */
static cv mul(cnn *b, cv x, cv s)
{
    return binary(b, "Mul", "mul", x, s, ACT_NONE);
}

/* Squeeze-and-excitation (EfficientNet's with Sigmoid, MobileNetV3's
 * with HardSigmoid): x times gate(Conv(ReLU(Conv(GlobalAveragePool(x))))),
 * per channel, squeezed to r channels. */
static cv squeeze_excite(cnn *b, cv x, int64_t r, const char *gate)
{
    cv s = conv(b, gap(b, x), r, 1, 1, 0, 1, ACT_RELU, 1.0f);
    s = conv(b, s, x.d[1], 1, 1, 0, 1, ACT_NONE, 1.0f);
    return mul(b, x, unary(b, s, gate, "gate"));
}

/* GlobalAveragePool -> Flatten: [N, C]. */
static cv gap_flatten(cnn *b, cv x)
{
    cv y = gap(b, x);
    cv f = {.rank = 2, .d = {y.d[0], y.d[1]}};
    fresh(b, f.n, "flatten");
    tm_attr_int(b->m, tm_node(b->m, "Flatten", "", f.n, y.n, f.n), "axis", 1);
    return requant_as(b, f, &y);
}

static cv flatten(cnn *b, cv x)
{
    x = quant(b, x);
    cv f = {.rank = 2, .d = {x.d[0], numel(&x) / x.d[0]}};
    fresh(b, f.n, "flatten");
    tm_attr_int(b->m, tm_node(b->m, "Flatten", "", f.n, x.n, f.n), "axis", 1);
    return requant_as(b, f, &x);
}

/* Standalone BatchNormalization (not after a Conv, so not folded) -> Relu. */
static cv bn_relu(cnn *b, cv x)
{
    int64_t c = x.d[1];
    char base[NAME], n[4][NAME + 8], in[5 * NAME + 48];
    fresh(b, base, "bn");
    float *p = malloc((size_t)(4 * c) * sizeof *p);
    if (!p)
        abort();
    for (int64_t i = 0; i < c; i++) {
        p[i] = 0.5f + unit(&b->seed);                /* scale */
        p[c + i] = 0.1f * gauss(&b->seed);           /* B */
        p[2 * c + i] = 0.2f * gauss(&b->seed);       /* mean */
        p[3 * c + i] = 0.5f + 1.5f * unit(&b->seed); /* var */
    }
    static const char *const what[] = {"scale", "B", "mean", "var"};
    for (int i = 0; i < 4; i++) {
        cat(n[i], sizeof n[i], base, "_", what[i], NULL);
        tm_init(b->m, n[i], T_FLOAT, 1, &c, p + i * c, (size_t)c * sizeof *p);
    }
    free(p);
    cat(in, sizeof in, x.n, ",", n[0], ",", n[1], ",", n[2], ",", n[3], NULL);
    cv y = x;
    y.q = false;
    memcpy(y.n, base, NAME);
    tm_node(b->m, "BatchNormalization", "", base, in, base);
    return quant(b, activate(b, y, ACT_RELU));
}

static cv lrn(cnn *b, cv x)
{
    cv y = x;
    y.q = false;
    fresh(b, y.n, "lrn");
    Onnx__NodeProto *n = tm_node(b->m, "LRN", "", y.n, x.n, y.n);
    tm_attr_int(b->m, n, "size", 5);
    tm_attr_float(b->m, n, "alpha", 1e-4f);
    tm_attr_float(b->m, n, "beta", 0.75f);
    tm_attr_float(b->m, n, "bias", 1.0f);
    return quant(b, y);
}

static cv reshape(cnn *b, cv x, int rank, const int64_t *d)
{
    x = quant(b, x);
    cv y = {.rank = rank};
    memcpy(y.d, d, (size_t)rank * sizeof *d);
    char sn[NAME + 8], in[2 * NAME + 16];
    fresh(b, y.n, "reshape");
    cat(sn, sizeof sn, y.n, "_shape", NULL);
    int64_t r = rank;
    tm_init(b->m, sn, T_INT64, 1, &r, d, (size_t)rank * sizeof *d);
    cat(in, sizeof in, x.n, ",", sn, NULL);
    tm_node(b->m, "Reshape", "", y.n, in, y.n);
    return requant_as(b, y, &x);
}

static cv transpose(cnn *b, cv x, const int64_t *perm)
{
    x = quant(b, x);
    cv y = x;
    for (int i = 0; i < x.rank; i++)
        y.d[i] = x.d[perm[i]];
    fresh(b, y.n, "transpose");
    tm_attr_ints(b->m, tm_node(b->m, "Transpose", "", y.n, x.n, y.n), "perm", perm, (size_t)x.rank);
    return requant_as(b, y, &x);
}

/* ---- Networks ------------------------------------------------------------- */

static int64_t classes(const cnn *b)
{
    return b->o->classes > 0 ? b->o->classes : 1000;
}

static cv resnet50(cnn *b, cv x)
{
    static const int64_t width[] = {64, 128, 256, 512}, depth[] = {3, 4, 6, 3};
    x = conv(b, x, 64, 7, 2, 3, 1, ACT_RELU, 1.0f);
    x = pool(b, x, true, 3, 2, 1);
    for (int s = 0; s < 4; s++)
        for (int64_t i = 0; i < (b->o->reduced ? 1 : depth[s]); i++) {
            int64_t stride = i == 0 && s > 0 ? 2 : 1, w = width[s];
            cv r = i == 0 ? conv(b, x, 4 * w, 1, stride, 0, 1, ACT_NONE, 1.0f) : x;
            cv y = conv(b, x, w, 1, 1, 0, 1, ACT_RELU, 1.0f);
            y = conv(b, y, w, 3, stride, 1, 1, ACT_RELU, 1.0f);
            y = conv(b, y, 4 * w, 1, 1, 0, 1, ACT_NONE, 0.5f);
            x = add(b, y, r, ACT_RELU);
        }
    return gemm(b, gap_flatten(b, x), classes(b), ACT_NONE);
}

static cv vgg19(cnn *b, cv x)
{
    static const int64_t width[] = {64, 128, 256, 512, 512}, depth[] = {2, 2, 4, 4, 4};
    for (int s = 0; s < 5; s++) {
        for (int64_t i = 0; i < (b->o->reduced ? 1 : depth[s]); i++)
            x = conv(b, x, width[s], 3, 1, 1, 1, ACT_RELU, 1.0f);
        x = pool(b, x, true, 2, 2, 0);
    }
    int64_t fc = b->o->reduced ? 256 : 4096;
    x = gemm(b, flatten(b, x), fc, ACT_RELU);
    x = gemm(b, x, fc, ACT_RELU);
    return gemm(b, x, classes(b), ACT_NONE);
}

static cv inception(cnn *b, cv x, int64_t c1, int64_t r3, int64_t c3, int64_t r5, int64_t c5,
                    int64_t cp)
{
    cv br[4];
    br[0] = conv(b, x, c1, 1, 1, 0, 1, ACT_RELU, 1.0f);
    br[1] = conv(b, conv(b, x, r3, 1, 1, 0, 1, ACT_RELU, 1.0f), c3, 3, 1, 1, 1, ACT_RELU, 1.0f);
    br[2] = conv(b, conv(b, x, r5, 1, 1, 0, 1, ACT_RELU, 1.0f), c5, 5, 1, 2, 1, ACT_RELU, 1.0f);
    br[3] = conv(b, pool(b, x, true, 3, 1, 1), cp, 1, 1, 0, 1, ACT_RELU, 1.0f);
    return concat(b, br, 4, ACT_NONE);
}

static cv inception_v1(cnn *b, cv x)
{
    static const int64_t mod[9][6] = {{64, 96, 128, 16, 32, 32},     {128, 128, 192, 32, 96, 64},
                                      {192, 96, 208, 16, 48, 64},    {160, 112, 224, 24, 64, 64},
                                      {128, 128, 256, 24, 64, 64},   {112, 144, 288, 32, 64, 64},
                                      {256, 160, 320, 32, 128, 128}, {256, 160, 320, 32, 128, 128},
                                      {384, 192, 384, 48, 128, 128}};
    x = conv(b, x, 64, 7, 2, 3, 1, ACT_RELU, 1.0f);
    x = lrn(b, pool(b, x, true, 3, 2, 1));
    x = conv(b, x, 64, 1, 1, 0, 1, ACT_RELU, 1.0f);
    x = conv(b, x, 192, 3, 1, 1, 1, ACT_RELU, 1.0f);
    x = pool(b, lrn(b, x), true, 3, 2, 1);
    for (int i = 0; i < 9; i++) {
        /* Reduced: the first module of each stage. */
        if (!b->o->reduced || i == 0 || i == 2 || i == 7)
            x = inception(b, x, mod[i][0], mod[i][1], mod[i][2], mod[i][3], mod[i][4], mod[i][5]);
        if (i == 1 || i == 6)
            x = pool(b, x, true, 3, 2, 1);
    }
    return gemm(b, gap_flatten(b, x), classes(b), ACT_NONE);
}

/* One module of Inception v2 (BN-Inception, Ioffe and Szegedy 2015, its
 * batch normalizations folded into the convolutions): a 1x1 branch, a 3x3
 * one after a 1x1 reduction, two 3x3 after another, and a 3x3 pool (average
 * or max, stride 1) with a 1x1 projection. */
static cv inception_bn(cnn *b, cv x, int64_t c1, int64_t r3, int64_t c3, int64_t rd, int64_t cd,
                       bool max_pool, int64_t cp)
{
    cv br[4];
    br[0] = conv(b, x, c1, 1, 1, 0, 1, ACT_RELU, 1.0f);
    br[1] = conv(b, conv(b, x, r3, 1, 1, 0, 1, ACT_RELU, 1.0f), c3, 3, 1, 1, 1, ACT_RELU, 1.0f);
    br[2] = conv(b, conv(b, x, rd, 1, 1, 0, 1, ACT_RELU, 1.0f), cd, 3, 1, 1, 1, ACT_RELU, 1.0f);
    br[2] = conv(b, br[2], cd, 3, 1, 1, 1, ACT_RELU, 1.0f);
    br[3] = conv(b, pool(b, x, max_pool, 3, 1, 1), cp, 1, 1, 0, 1, ACT_RELU, 1.0f);
    return concat(b, br, 4, ACT_NONE);
}

/* Its stride-2 modules (3c, 4e): the two 3x3 branches end with stride 2,
 * and a 3x3 max pool of stride 2 passes the input through. */
static cv inception_bn_reduce(cnn *b, cv x, int64_t r3, int64_t c3, int64_t rd, int64_t cd)
{
    cv br[3];
    br[0] = conv(b, conv(b, x, r3, 1, 1, 0, 1, ACT_RELU, 1.0f), c3, 3, 2, 1, 1, ACT_RELU, 1.0f);
    br[1] = conv(b, conv(b, x, rd, 1, 1, 0, 1, ACT_RELU, 1.0f), cd, 3, 1, 1, 1, ACT_RELU, 1.0f);
    br[1] = conv(b, br[1], cd, 3, 2, 1, 1, ACT_RELU, 1.0f);
    br[2] = pool(b, x, true, 3, 2, 1);
    return concat(b, br, 3, ACT_NONE);
}

/* Inception v2 as in the paper's table: 3a, 3b, 3c (stride 2), 4a .. 4e
 * (4e stride 2), 5a and 5b (whose pool branch is a max pool). */
static cv inception_v2(cnn *b, cv x)
{
    /* c1, r3, c3, rd, cd, max pool, cp; c1 < 0: a stride-2 module */
    static const int64_t mod[10][7] = {
        {64, 64, 64, 64, 96, 0, 32},       {64, 64, 96, 64, 96, 0, 64},
        {-1, 128, 160, 64, 96, 0, 0},      {224, 64, 96, 96, 128, 0, 128},
        {192, 96, 128, 96, 128, 0, 128},   {160, 128, 160, 128, 160, 0, 96},
        {96, 128, 192, 160, 192, 0, 96},   {-1, 128, 192, 192, 256, 0, 0},
        {352, 192, 320, 160, 224, 0, 128}, {352, 192, 320, 192, 224, 1, 128}};
    x = conv(b, x, 64, 7, 2, 3, 1, ACT_RELU, 1.0f);
    x = pool(b, x, true, 3, 2, 1);
    x = conv(b, x, 64, 1, 1, 0, 1, ACT_RELU, 1.0f);
    x = conv(b, x, 192, 3, 1, 1, 1, ACT_RELU, 1.0f);
    x = pool(b, x, true, 3, 2, 1);
    for (int i = 0; i < 10; i++) {
        const int64_t *m = mod[i];
        /* Reduced: 3a, both stride-2 modules, 4a and 5b. */
        if (b->o->reduced && i != 0 && i != 2 && i != 3 && i != 7 && i != 9)
            continue;
        x = m[0] < 0 ? inception_bn_reduce(b, x, m[1], m[2], m[3], m[4])
                     : inception_bn(b, x, m[0], m[1], m[2], m[3], m[4], m[5] != 0, m[6]);
    }
    return gemm(b, gap_flatten(b, x), classes(b), ACT_NONE);
}

static cv densenet121(cnn *b, cv x)
{
    static const int depth[] = {6, 12, 24, 16};
    const int64_t growth = 32;
    x = conv(b, x, 64, 7, 2, 3, 1, ACT_RELU, 1.0f);
    x = pool(b, x, true, 3, 2, 1);
    cv feats[64];
    for (int s = 0; s < 4; s++) {
        int n = 0, layers = b->o->reduced ? 2 : depth[s];
        feats[n++] = x;
        for (int l = 0; l < layers; l++) {
            cv in = n == 1 ? feats[0] : concat(b, feats, n, ACT_NONE);
            cv y = conv(b, bn_relu(b, in), 4 * growth, 1, 1, 0, 1, ACT_RELU, 1.0f);
            feats[n++] = conv(b, y, growth, 3, 1, 1, 1, ACT_NONE, 1.0f);
        }
        x = concat(b, feats, n, ACT_NONE);
        if (s < 3) {
            x = conv(b, bn_relu(b, x), x.d[1] / 2, 1, 1, 0, 1, ACT_NONE, 1.0f);
            x = pool(b, x, false, 2, 2, 0);
        }
    }
    return gemm(b, gap_flatten(b, bn_relu(b, x)), classes(b), ACT_NONE);
}

static cv fire(cnn *b, cv x, int64_t sq, int64_t ex)
{
    x = conv(b, x, sq, 1, 1, 0, 1, ACT_RELU, 1.0f);
    cv br[2] = {conv(b, x, ex, 1, 1, 0, 1, ACT_RELU, 1.0f),
                conv(b, x, ex, 3, 1, 1, 1, ACT_RELU, 1.0f)};
    return concat(b, br, 2, ACT_NONE);
}

static cv squeezenet11(cnn *b, cv x)
{
    x = conv(b, x, 64, 3, 2, 0, 1, ACT_RELU, 1.0f);
    x = pool(b, x, true, 3, 2, 0);
    x = fire(b, fire(b, x, 16, 64), 16, 64);
    x = pool(b, x, true, 3, 2, 0);
    x = fire(b, fire(b, x, 32, 128), 32, 128);
    x = pool(b, x, true, 3, 2, 0);
    x = fire(b, fire(b, x, 48, 192), 48, 192);
    x = fire(b, fire(b, x, 64, 256), 64, 256);
    x = conv(b, x, classes(b), 1, 1, 0, 1, ACT_RELU, 1.0f);
    return gap_flatten(b, x);
}

static cv shuffle(cnn *b, cv x, int64_t g)
{
    int64_t c = x.d[1], h = x.d[2], w = x.d[3];
    int64_t n = x.d[0], d5[] = {n, g, c / g, h, w}, perm[] = {0, 2, 1, 3, 4}, d4[] = {n, c, h, w};
    return reshape(b, transpose(b, reshape(b, x, 5, d5), perm), 4, d4);
}

static cv shufflenet_v1(cnn *b, cv x)
{
    const int64_t g = 3;
    static const int64_t out[] = {240, 480, 960}, depth[] = {4, 8, 4};
    x = conv(b, x, 24, 3, 2, 1, 1, ACT_RELU, 1.0f);
    x = pool(b, x, true, 3, 2, 1);
    for (int s = 0; s < 3; s++)
        for (int64_t i = 0; i < (b->o->reduced ? 2 : depth[s]); i++) {
            bool down = i == 0;
            int64_t mid = out[s] / 4, o = down ? out[s] - x.d[1] : out[s];
            cv y = conv(b, x, mid, 1, 1, 0, s == 0 && i == 0 ? 1 : g, ACT_RELU, 1.0f);
            y = shuffle(b, y, g);
            y = conv(b, y, mid, 3, down ? 2 : 1, 1, mid, ACT_NONE, 1.0f);
            y = conv(b, y, o, 1, 1, 0, g, ACT_NONE, 0.5f);
            if (down) {
                cv br[2] = {pool(b, x, false, 3, 2, 1), y};
                x = concat(b, br, 2, ACT_RELU);
            } else {
                x = add(b, y, x, ACT_RELU);
            }
        }
    return gemm(b, gap_flatten(b, x), classes(b), ACT_NONE);
}

static cv alexnet(cnn *b, cv x)
{
    int64_t fc = b->o->reduced ? 256 : 4096;
    x = conv(b, x, 96, 11, 4, 2, 1, ACT_RELU, 1.0f);
    x = pool(b, lrn(b, x), true, 3, 2, 0);
    x = conv(b, x, 256, 5, 1, 2, 2, ACT_RELU, 1.0f);
    x = pool(b, lrn(b, x), true, 3, 2, 0);
    x = conv(b, x, 384, 3, 1, 1, 1, ACT_RELU, 1.0f);
    x = conv(b, x, 384, 3, 1, 1, 2, ACT_RELU, 1.0f);
    x = conv(b, x, 256, 3, 1, 1, 2, ACT_RELU, 1.0f);
    x = pool(b, x, true, 3, 2, 0);
    x = gemm(b, flatten(b, x), fc, ACT_RELU);
    x = gemm(b, x, fc, ACT_RELU);
    return gemm(b, x, classes(b), ACT_NONE);
}

/* A compact U-Net for segmentation: three levels of two 3x3 convolutions
 * and a max pool, a bottleneck, and three decoder levels of a 2x2 stride-2
 * ConvTranspose, a Concat with the encoder's map of that size and a 3x3
 * convolution; per-pixel logits from a 1x1 convolution, [N, classes, H, W]. */
static cv unet(cnn *b, cv x)
{
    cv skip[3];
    int64_t width = 32;
    for (int level = 0; level < 3; level++, width *= 2) {
        x = conv(b, x, width, 3, 1, 1, 1, ACT_RELU, 1.0f);
        skip[level] = x = conv(b, x, width, 3, 1, 1, 1, ACT_RELU, 1.0f);
        x = pool(b, x, true, 2, 2, 0);
    }
    x = conv(b, x, width, 3, 1, 1, 1, ACT_RELU, 1.0f);
    x = conv(b, x, width, 3, 1, 1, 1, ACT_RELU, 1.0f);
    for (int level = 2; level >= 0; level--) {
        width /= 2;
        cv both[2] = {deconv(b, x, width, 2, ACT_RELU), skip[level]};
        x = concat(b, both, 2, ACT_NONE);
        x = conv(b, x, width, 3, 1, 1, 1, ACT_RELU, 1.0f);
    }
    return conv(b, x, classes(b), 1, 1, 0, 1, ACT_NONE, 1.0f);
}

static cv mobilenet_v2(cnn *b, cv x)
{
    static const int64_t cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                      {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    x = conv(b, x, 32, 3, 2, 1, 1, ACT_RELU6, 1.0f);
    for (int s = 0; s < 7; s++)
        for (int64_t i = 0; i < (b->o->reduced ? (cfg[s][2] > 1 ? 2 : 1) : cfg[s][2]); i++) {
            int64_t stride = i == 0 ? cfg[s][3] : 1, hid = x.d[1] * cfg[s][0];
            cv y = cfg[s][0] == 1 ? x : conv(b, x, hid, 1, 1, 0, 1, ACT_RELU6, 1.0f);
            y = conv(b, y, hid, 3, stride, 1, hid, ACT_RELU6, 1.0f);
            y = conv(b, y, cfg[s][1], 1, 1, 0, 1, ACT_NONE, 0.5f);
            x = stride == 1 && x.d[1] == cfg[s][1] ? add(b, y, x, ACT_NONE) : y;
        }
    x = conv(b, x, 1280, 1, 1, 0, 1, ACT_RELU6, 1.0f);
    return gemm(b, gap_flatten(b, x), classes(b), ACT_NONE);
}

/* MobileNetV3-Large (torchvision's): inverted residuals with ReLU or
 * HardSwish, squeeze-and-excitation gates with HardSigmoid. */
static int64_t divisible8(double v)
{
    int64_t r = (int64_t)(v + 4.0) / 8 * 8;
    r = r < 8 ? 8 : r;
    return (double)r < 0.9 * v ? r + 8 : r;
}

static cv mobilenet_v3(cnn *b, cv x)
{
    /* kernel, expanded, out, SE, HardSwish, stride */
    static const int64_t cfg[15][6] = {
        {3, 16, 16, 0, 0, 1},   {3, 64, 24, 0, 0, 2},   {3, 72, 24, 0, 0, 1},
        {5, 72, 40, 1, 0, 2},   {5, 120, 40, 1, 0, 1},  {5, 120, 40, 1, 0, 1},
        {3, 240, 80, 0, 1, 2},  {3, 200, 80, 0, 1, 1},  {3, 184, 80, 0, 1, 1},
        {3, 184, 80, 0, 1, 1},  {3, 480, 112, 1, 1, 1}, {3, 672, 112, 1, 1, 1},
        {5, 672, 160, 1, 1, 2}, {5, 960, 160, 1, 1, 1}, {5, 960, 160, 1, 1, 1}};
    x = conv(b, x, 16, 3, 2, 1, 1, ACT_HARD_SWISH, 1.0f);
    for (int i = 0; i < 15; i++) {
        const int64_t *c = cfg[i];
        int act = c[4] ? ACT_HARD_SWISH : ACT_RELU;
        cv y = c[1] == x.d[1] ? x : conv(b, x, c[1], 1, 1, 0, 1, act, 1.0f);
        y = conv(b, y, c[1], c[0], c[5], c[0] / 2, c[1], act, 1.0f);
        if (c[3])
            y = squeeze_excite(b, y, divisible8((double)c[1] / 4.0), "HardSigmoid");
        y = conv(b, y, c[2], 1, 1, 0, 1, ACT_NONE, 0.5f);
        x = c[5] == 1 && x.d[1] == c[2] ? add(b, y, x, ACT_NONE) : y;
    }
    x = conv(b, x, 960, 1, 1, 0, 1, ACT_HARD_SWISH, 1.0f);
    x = gap_flatten(b, x);
    x = gemm(b, x, b->o->reduced ? 256 : 1280, ACT_HARD_SWISH);
    return gemm(b, x, classes(b), ACT_NONE);
}

/* ---- A random network ---------------------------------------------------- */

static int64_t pick(cnn *b, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next(&b->topo) % (uint32_t)(hi - lo + 1));
}

/* Sometimes also a graph output (the QDQ writing's dequantized tensor): a
 * value read both inside the graph and by the caller. */
static cv maybe_output(cnn *b, cv x)
{
    if (pick(b, 0, 4) == 0 && b->n_extra < 4) {
        b->n_extra++;
        if (b->qdq)
            tm_output(b->m, x.n, T_FLOAT, x.rank, x.d);
    }
    return x;
}

/* A kernel size and padding that fit a side of h. */
static void window(cnn *b, int64_t h, int64_t kmax, int64_t *k, int64_t *pad)
{
    *k = pick(b, 1, kmax);
    *pad = pick(b, 0, *k / 2);
    if (h + 2 * *pad < *k) {
        *k = 1;
        *pad = 0;
    }
}

static cv random_conv(cnn *b, cv x)
{
    int64_t c = x.d[1], k, pad, stride = pick(b, 1, 2), groups = 1, cout = pick(b, 2, 40);
    window(b, x.d[2], 5, &k, &pad);
    switch (pick(b, 0, 3)) {
    case 0: /* depthwise, channel multiplier 1 or 2 */
        groups = c;
        cout = c * pick(b, 1, 2);
        break;
    case 1: /* grouped */
        for (int64_t g = 4; g >= 2; g--)
            if (c % g == 0) {
                groups = g;
                cout = g * pick(b, 1, 10);
                break;
            }
        break;
    default:
        break;
    }
    return conv(b, x, cout, k, stride, pad, groups, (int)pick(b, 0, 4), 1.0f);
}

/* The tensors of the same batch, height and width as x among live[n]. */
static int same_plane(const cv *live, int n, const cv *x, cv *out)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (live[i].d[2] == x->d[2] && live[i].d[3] == x->d[3])
            out[m++] = live[i];
    return m;
}

/* Random layers over a pool of live feature maps, each reading one or more
 * of them: convolutions (plain, grouped, depthwise; ReLU, ReLU6, HardSwish
 * or no activation), pools, residual adds, channel concatenations (also of
 * a tensor with itself), batch normalization, LRN, squeeze-and-excitation
 * gates and channel shuffles; some feature maps are also graph outputs. The head is a Gemm after a
 * global pool or a flatten, or a final 1x1 convolution whose feature map is the output. */
static cv random_net(cnn *b, cv x)
{
    enum { LIVE = 6 };
    cv live[LIVE], same[LIVE + 1];
    int n = 0;
    live[n++] = maybe_output(b, random_conv(b, x));
    for (int l = 0, layers = (int)pick(b, 3, 12); l < layers; l++) {
        cv a = live[pick(b, 0, n - 1)], y;
        int64_t c = a.d[1];
        switch (pick(b, 0, 9)) {
        case 0:
        case 1:
        case 2:
            y = random_conv(b, a);
            break;
        case 3: {
            int64_t k, pad;
            window(b, a.d[2], 3, &k, &pad);
            bool max = pick(b, 0, 1) != 0;
            y = pool(b, a, max, k, pick(b, 1, 2), pad);
            break;
        }
        case 4: {
            /* Another live map of a's shape, a itself, or a convolution of a. */
            int m = same_plane(live, n, &a, same);
            cv r = same[pick(b, 0, m - 1)];
            if (r.d[1] != c || pick(b, 0, 1)) {
                int64_t k = 1 + 2 * pick(b, 0, 1);
                if (a.d[2] + k - 1 < k)
                    k = 1;
                r = conv(b, a, c, k, 1, k / 2, 1, ACT_NONE, 0.5f);
            }
            y = add(b, r, a, (int)pick(b, 0, 2));
            break;
        }
        case 5: {
            int m = same_plane(live, n, &a, same), k = (int)pick(b, 1, 2);
            cv xs[3] = {a};
            for (int i = 0; i < k; i++)
                xs[1 + i] = same[pick(b, 0, m - 1)];
            y = concat(b, xs, 1 + k, pick(b, 0, 2) == 0 ? ACT_RELU : ACT_NONE);
            break;
        }
        case 6:
            y = bn_relu(b, a);
            break;
        case 7:
            y = lrn(b, a);
            break;
        case 8:
            y = squeeze_excite(b, a, c / 4 > 0 ? c / 4 : 1, "Sigmoid");
            break;
        default:
            y = c % 3 == 0 ? shuffle(b, a, 3) : c % 2 == 0 ? shuffle(b, a, 2) : bn_relu(b, a);
            break;
        }
        y = maybe_output(b, y);
        if (n < LIVE)
            live[n++] = y;
        else
            live[pick(b, 0, LIVE - 1)] = y;
    }
    cv y = live[n - 1];
    switch (pick(b, 0, 2)) {
    case 0:
        return gemm(b, gap_flatten(b, y), classes(b), ACT_NONE);
    case 1:
        if (numel(&y) <= 4096)
            return gemm(b, flatten(b, y), classes(b), ACT_NONE);
        return conv(b, y, classes(b), 1, 1, 0, 1, ACT_NONE, 1.0f);
    default:
        return conv(b, y, pick(b, 2, 16), 1, 1, 0, 1, ACT_NONE, 1.0f);
    }
}

/* ---- Writing and calibration ---------------------------------------------- */

/* Opset 13, as ONNX Runtime's quantizer writes; 14 where HardSwish (new
 * in 14) is used. */
static const struct {
    const char *name;
    cv (*body)(cnn *, cv);
    int opset;
} nets[ZOO_CNN_COUNT] = {
    [ZOO_RESNET50] = {"resnet50", resnet50},
    [ZOO_VGG19] = {"vgg19", vgg19},
    [ZOO_INCEPTION_V1] = {"inception_v1", inception_v1},
    [ZOO_DENSENET121] = {"densenet121", densenet121},
    [ZOO_SQUEEZENET11] = {"squeezenet1_1", squeezenet11},
    [ZOO_SHUFFLENET_V1] = {"shufflenet_v1", shufflenet_v1},
    [ZOO_ALEXNET] = {"alexnet", alexnet},
    [ZOO_MOBILENET_V2] = {"mobilenet_v2", mobilenet_v2},
    [ZOO_MOBILENET_V3] = {"mobilenet_v3_large", mobilenet_v3, 14},
    [ZOO_INCEPTION_V2] = {"inception_v2", inception_v2},
    [ZOO_UNET] = {"unet", unet},
};

const char *zoo_cnn_name(zoo_cnn_net net)
{
    return net >= 0 && net < ZOO_CNN_COUNT ? nets[net].name : NULL;
}

static tm_model *write_net(cnn *b, cv (*body)(cnn *, cv), int opset)
{
    b->m = tm_new(opset);
    b->seed = b->o->seed ? b->o->seed : 1;
    b->topo = b->seed * 2654435761u + 0x9e3779b9u;
    b->id = 0;
    b->n_qp = 0;
    b->n_extra = 0;
    b->relu6_bounds = false;
    int64_t s = b->o->size > 0 ? b->o->size : 224;
    cv x = {.n = "input", .rank = 4, .d = {b->o->batch > 0 ? b->o->batch : 1, 3, s, s}};
    tm_input(b->m, "input", T_FLOAT, 4, x.d, NULL);
    cv y = body(b, x);
    if (b->qdq)
        tm_output(b->m, y.n, T_FLOAT, y.rank, y.d);
    return b->m;
}

int64_t zoo_cnn_input_elems(const zoo_cnn_options *o)
{
    int64_t s = o->size > 0 ? o->size : 224;
    return (o->batch > 0 ? o->batch : 1) * 3 * s * s;
}

void zoo_cnn_input(const zoo_cnn_options *o, uint32_t seed, float *x)
{
    uint32_t st = seed ? seed : 1;
    for (int64_t i = 0; i < zoo_cnn_input_elems(o); i++)
        x[i] = 4.0f * unit(&st) - 2.0f;
}

/* Runs the float network on one input and records every quantization
 * point's range. */
static int calibrate(cnn *b, tm_model *fm)
{
    size_t nbytes;
    uint8_t *bytes = tm_pack(fm, &nbytes);
    dqg_graph *g = NULL;
    dqg_compiled *c = NULL;
    dqg_status st = dqg_onnx_load_memory(bytes, nbytes, NULL, NULL, &g);
    free(bytes);
    if (st == DQG_OK)
        st = dqg_compile(g, NULL, &c);
    int64_t nx = zoo_cnn_input_elems(b->o);
    float *x = malloc((size_t)nx * sizeof *x);
    dqg_buffer *out = calloc((size_t)b->n_qp, sizeof *out);
    b->lo = calloc((size_t)b->n_qp, sizeof *b->lo);
    b->hi = calloc((size_t)b->n_qp, sizeof *b->hi);
    if (!x || !out || !b->lo || !b->hi)
        abort();
    zoo_cnn_input(b->o, b->o->seed + 1000, x);
    int n_out = 0;
    for (int k = 0; k < b->n_qp; k++) {
        if (strcmp(b->qp_name[k], "input") == 0)
            continue;
        size_t size = (size_t)b->qp_size[k] * sizeof(float);
        out[n_out++] = (dqg_buffer){.name = b->qp_name[k], .data = malloc(size), .size = size};
        if (!out[n_out - 1].data)
            abort();
    }
    dqg_buffer in = {.name = "input", .data = x, .size = (size_t)nx * sizeof *x};
    if (st == DQG_OK)
        st = dqg_execute(c, &in, 1, out, (size_t)n_out);
    if (st != DQG_OK)
        fprintf(stderr, "zoo_cnn: calibration: %s: %s\n", dqg_status_name(st), dqg_last_error());
    for (int k = 0, o = 0; st == DQG_OK && k < b->n_qp; k++) {
        const float *v = x;
        int64_t n = nx;
        if (strcmp(b->qp_name[k], "input") != 0) {
            v = out[o].data;
            n = b->qp_size[k];
            o++;
        }
        float lo = v[0], hi = v[0];
        for (int64_t i = 1; i < n; i++) {
            lo = fminf(lo, v[i]);
            hi = fmaxf(hi, v[i]);
        }
        b->lo[k] = lo;
        b->hi[k] = hi;
    }
    for (int i = 0; i < n_out; i++)
        free(out[i].data);
    free(out);
    free(x);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
    return st == DQG_OK ? 0 : 1;
}

static tm_model *build(cv (*body)(cnn *, cv), int opset, const zoo_cnn_options *o,
                       double *logit_absmax)
{
    cnn b = {.o = o};
    tm_model *fm = write_net(&b, body, opset);
    int n_qp = b.n_qp;
    int rc = calibrate(&b, fm);
    tm_free(fm);
    tm_model *m = NULL;
    if (rc == 0) {
        b.qdq = true;
        m = write_net(&b, body, opset);
        if (b.n_qp != n_qp)
            abort();      /* the two writings must make the same quantization points */
        if (logit_absmax) /* the last quantization point is the logits' */
            *logit_absmax = fmax(fabs(b.lo[n_qp - 1]), fabs(b.hi[n_qp - 1]));
    }
    free(b.qp_name);
    free(b.qp_size);
    free(b.lo);
    free(b.hi);
    return m;
}

tm_model *zoo_cnn(zoo_cnn_net net, const zoo_cnn_options *o, double *logit_absmax)
{
    if (net < 0 || net >= ZOO_CNN_COUNT)
        return NULL;
    return build(nets[net].body, nets[net].opset ? nets[net].opset : 13, o, logit_absmax);
}

tm_model *zoo_cnn_random(const zoo_cnn_options *o)
{
    return build(random_net, 14, o, NULL);
}
