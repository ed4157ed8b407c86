/* Importers of the float and layout operators: MatMul, Gemm, Conv,
 * MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, Add, Sub, Mul, Div, Relu,
 * Clip, Reshape, Transpose, Identity, Constant, Cast, Flatten,
 * Squeeze and Unsqueeze. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_ops.h"

static const char *const no_attrs[] = {NULL};

static dqg_status unary_output(onnx_import *c, dqg_tensor_id y)
{
    return y == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, y);
}

/* ---- MatMul and Gemm ------------------------------------------------------ */

static dqg_status import_matmul(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id a, b;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "A", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "B", true, &b)) != DQG_OK ||
        (st = onnx_require_float(c, 0, a)) != DQG_OK)
        return st;
    return unary_output(c, dqg_matmul(c->g, onnx_op_name(c, NULL), a, b, NULL));
}

static dqg_status import_gemm(onnx_import *c)
{
    static const char *const known[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    float alpha, beta;
    int64_t ta, tb;
    if ((st = onnx_attr_float(c, "alpha", 1.0f, &alpha)) != DQG_OK ||
        (st = onnx_attr_float(c, "beta", 1.0f, &beta)) != DQG_OK ||
        (st = onnx_attr_int(c, "transA", 0, &ta)) != DQG_OK ||
        (st = onnx_attr_int(c, "transB", 0, &tb)) != DQG_OK)
        return st;
    dqg_tensor_id a, b, bias;
    if ((st = onnx_input(c, 0, "A", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "B", true, &b)) != DQG_OK ||
        (st = onnx_input(c, 2, "C", c->node_opset < 11, &bias)) != DQG_OK ||
        (st = onnx_require_float(c, 0, a)) != DQG_OK)
        return st;
    if (dqg_tensor_rank(c->g, a) != 2 || dqg_tensor_rank(c->g, b) != 2)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "A and B must be 2-D; they have rank %d "
                              "and %d",
                              dqg_tensor_rank(c->g, a), dqg_tensor_rank(c->g, b));
    if (bias != DQG_NONE) {
        /* C must broadcast to (M, N) one way: it may not grow the result. */
        int64_t ad[2], bd[2], cd[DQG_MAX_RANK];
        dqg_tensor_dims(c->g, a, ad);
        dqg_tensor_dims(c->g, b, bd);
        int64_t mn[2] = {ta ? ad[1] : ad[0], tb ? bd[0] : bd[1]};
        int cr = dqg_tensor_dims(c->g, bias, cd);
        bool ok = cr <= 2;
        for (int i = 0; ok && i < cr; i++) {
            int64_t want = mn[2 - cr + i];
            ok = cd[i] == 1 || cd[i] == want;
        }
        if (!ok)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "input 2 (C) does not broadcast to the result's shape (%lld, "
                                  "%lld) (C of rank %d, last dimension %lld)",
                                  (long long)mn[0], (long long)mn[1], cr,
                                  (long long)(cr ? cd[cr - 1] : 1));
    }
    dqg_matmul_attrs ma = {.transpose_a = ta != 0, .transpose_b = tb != 0};
    dqg_tensor_id y = dqg_matmul(
        c->g, onnx_op_name(c, bias == DQG_NONE && alpha == 1.0f ? NULL : "matmul"), a, b, &ma);
    if (y == DQG_NONE)
        return onnx_builder_failed(c);
    dqg_dtype t = dqg_tensor_dtype(c->g, y);
    if (alpha != 1.0f) {
        dqg_tensor_id s = onnx_add_scalar(c, "alpha", t, alpha);
        y = s == DQG_NONE
                ? DQG_NONE
                : dqg_mul(c->g, onnx_op_name(c, bias == DQG_NONE ? NULL : "scaled"), y, s);
        if (y == DQG_NONE)
            return onnx_builder_failed(c);
    }
    if (bias != DQG_NONE && beta != 0.0f) {
        if (beta != 1.0f) {
            dqg_tensor_id s = onnx_add_scalar(c, "beta", t, beta);
            bias = s == DQG_NONE ? DQG_NONE : dqg_mul(c->g, onnx_op_name(c, "beta_c"), bias, s);
            if (bias == DQG_NONE)
                return onnx_builder_failed(c);
        }
        y = dqg_add(c->g, onnx_op_name(c, NULL), y, bias);
    }
    /* beta = 0: C is left out (0 * inf would be NaN), as ONNX Runtime does;
     * its shape was checked above. */
    return unary_output(c, y);
}

/* ---- Conv ------------------------------------------------------------------- */

const char *const onnx_conv_attr_names[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                            "pads",     "strides",   NULL};

/* A per-spatial-dimension ints attribute of a Conv or pooling node: `want`
 * values (2 x the spatial rank for pads) when present. `whose` names what
 * sets the spatial rank in the message. */
static dqg_status spatial_ints(onnx_import *c, const char *name, size_t want, const char *whose,
                               const int64_t **v, bool *present)
{
    size_t n;
    dqg_status st = onnx_attr_ints(c, name, v, &n, present);
    if (st == DQG_OK && *present && n != want)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "attribute '%s' has %zu values; %s has %zu spatial dimensions%s",
                              name, n, whose, strcmp(name, "pads") == 0 ? want / 2 : want,
                              strcmp(name, "pads") == 0 ? " (pads holds begins then ends)" : "");
    return st;
}

static dqg_status conv_ints(onnx_import *c, const char *name, size_t want, const int64_t **v,
                            bool *present)
{
    return spatial_ints(c, name, want, "the convolution", v, present);
}

dqg_status onnx_build_conv(onnx_import *c, dqg_tensor_id x, dqg_tensor_id w, dqg_tensor_id bias,
                           dqg_tensor_id *out)
{
    onnx_shape xs = onnx_tensor_shape(c, x), ws = onnx_tensor_shape(c, w);
    int sr = ws.rank - 2;
    if (sr < 1 || sr > 3)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "weights of rank %d: dqgraph has 1-D, 2-D and 3-D convolutions",
                              ws.rank);
    if (xs.rank != ws.rank)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "X has rank %d and W rank %d; they must "
                              "be equal",
                              xs.rank, ws.rank);
    const int64_t *strides, *pads, *dil, *ks;
    bool has_s, has_p, has_d, has_k;
    dqg_status st;
    if ((st = conv_ints(c, "strides", (size_t)sr, &strides, &has_s)) != DQG_OK ||
        (st = conv_ints(c, "pads", 2 * (size_t)sr, &pads, &has_p)) != DQG_OK ||
        (st = conv_ints(c, "dilations", (size_t)sr, &dil, &has_d)) != DQG_OK ||
        (st = conv_ints(c, "kernel_shape", (size_t)sr, &ks, &has_k)) != DQG_OK)
        return st;
    int64_t group;
    char auto_pad[32];
    if ((st = onnx_attr_int(c, "group", 1, &group)) != DQG_OK ||
        (st = onnx_attr_string(c, "auto_pad", "NOTSET", auto_pad, sizeof auto_pad)) != DQG_OK)
        return st;
    if (group < 1)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "group %lld must be >= 1", (long long)group);
    dqg_conv_attrs a = {.spatial_rank = sr, .groups = group, .data_format = DQG_FORMAT_NCX};
    for (int i = 0; i < sr; i++) {
        if (has_k && ks[i] != ws.dims[2 + i])
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "kernel_shape[%d] is %lld but W's dimension %d is %lld", i,
                                  (long long)ks[i], 2 + i, (long long)ws.dims[2 + i]);
        a.strides[i] = has_s ? strides[i] : 1;
        a.dilations[i] = has_d ? dil[i] : 1;
        if (a.strides[i] < 1 || a.dilations[i] < 1)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "strides and dilations must be >= 1 (dimension %d: %lld, %lld)",
                                  i, (long long)a.strides[i], (long long)a.dilations[i]);
        /* The limit of dqg_convolution, checked here before the auto_pad
         * arithmetic below can overflow. */
        if (a.strides[i] > INT32_MAX || a.dilations[i] > INT32_MAX)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "strides and dilations must be <= %d (dimension %d: %lld, %lld)",
                                  INT32_MAX, i, (long long)a.strides[i], (long long)a.dilations[i]);
    }
    bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0,
         same_lower = strcmp(auto_pad, "SAME_LOWER") == 0;
    if (same_upper || same_lower) {
        if (has_p)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "pads cannot be given with auto_pad %s",
                                  auto_pad);
        for (int i = 0; i < sr; i++) {
            int64_t in = xs.dims[2 + i], s = a.strides[i];
            int64_t eff;
            /* Past 2^42 the pads it needs exceed dqg_convolution's limit. */
            if (__builtin_mul_overflow(ws.dims[2 + i] - 1, a.dilations[i], &eff) ||
                eff > ((int64_t)1 << 42))
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "the dilated kernel at dimension %d is larger than any "
                                      "input",
                                      i);
            eff += 1;
            int64_t o = (in + s - 1) / s;
            int64_t total = (o - 1) * s + eff - in;
            if (total < 0)
                total = 0;
            a.pads_begin[i] = same_upper ? total / 2 : total - total / 2;
            a.pads_end[i] = total - a.pads_begin[i];
        }
    } else if (strcmp(auto_pad, "VALID") == 0 || strcmp(auto_pad, "NOTSET") == 0) {
        if (strcmp(auto_pad, "VALID") == 0 && has_p)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "pads cannot be given with auto_pad "
                                  "VALID");
        for (int i = 0; i < sr && has_p; i++) {
            a.pads_begin[i] = pads[i];
            a.pads_end[i] = pads[sr + i];
            if (pads[i] < 0 || pads[sr + i] < 0)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "pads must be >= 0");
        }
    } else {
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                              auto_pad);
    }
    *out =
        dqg_convolution(c->g, onnx_op_name(c, bias == DQG_NONE ? "conv" : "conv"), x, w, bias, &a);
    return *out == DQG_NONE ? onnx_builder_failed(c) : DQG_OK;
}

static dqg_status import_conv(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id x, w, b, y;
    if ((st = onnx_check_arity(c, 2, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, onnx_conv_attr_names)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "W", true, &w)) != DQG_OK ||
        (st = onnx_input(c, 2, "B", false, &b)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK ||
        (st = onnx_build_conv(c, x, w, b, &y)) != DQG_OK)
        return st;
    return onnx_set_output(c, 0, y);
}

/* ConvTranspose (NCX, 1-D to 3-D): pads from the attributes, or from
 * output_shape and auto_pad by ONNX's rule; an output longer than the full
 * transposed convolution pads negatively at the end, which becomes
 * output_padding. */
static dqg_status import_conv_transpose(onnx_import *c)
{
    static const char *const known[] = {"auto_pad",     "dilations",      "group",
                                        "kernel_shape", "output_padding", "output_shape",
                                        "pads",         "strides",        NULL};
    dqg_status st;
    dqg_tensor_id x, w, b;
    if ((st = onnx_check_arity(c, 2, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "W", true, &w)) != DQG_OK ||
        (st = onnx_input(c, 2, "B", false, &b)) != DQG_OK ||
        (st = onnx_require_float(c, 0, x)) != DQG_OK)
        return st;
    onnx_shape xs = onnx_tensor_shape(c, x), ws = onnx_tensor_shape(c, w);
    int sr = ws.rank - 2;
    if (sr < 1 || sr > 3 || xs.rank != ws.rank)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "X of rank %d and W of rank %d: dqgraph has 1-D, 2-D and 3-D "
                              "transposed convolutions, X and W of one rank",
                              xs.rank, ws.rank);
    const int64_t *strides, *pads, *dil, *ks, *opad, *oshape;
    bool has_s, has_p, has_d, has_k, has_op, has_os;
    if ((st = conv_ints(c, "strides", (size_t)sr, &strides, &has_s)) != DQG_OK ||
        (st = conv_ints(c, "pads", 2 * (size_t)sr, &pads, &has_p)) != DQG_OK ||
        (st = conv_ints(c, "dilations", (size_t)sr, &dil, &has_d)) != DQG_OK ||
        (st = conv_ints(c, "kernel_shape", (size_t)sr, &ks, &has_k)) != DQG_OK ||
        (st = conv_ints(c, "output_padding", (size_t)sr, &opad, &has_op)) != DQG_OK)
        return st;
    size_t n_os;
    if ((st = onnx_attr_ints(c, "output_shape", &oshape, &n_os, &has_os)) != DQG_OK)
        return st;
    /* output_shape may list the spatial dimensions or all of them. */
    if (has_os && n_os != (size_t)sr && n_os != (size_t)sr + 2)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "output_shape has %zu values for %d spatial dimensions", n_os, sr);
    const int64_t *os = has_os ? oshape + (n_os - (size_t)sr) : NULL;
    int64_t group;
    char auto_pad[32];
    if ((st = onnx_attr_int(c, "group", 1, &group)) != DQG_OK ||
        (st = onnx_attr_string(c, "auto_pad", "NOTSET", auto_pad, sizeof auto_pad)) != DQG_OK)
        return st;
    bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0,
         same_lower = strcmp(auto_pad, "SAME_LOWER") == 0;
    if (!same_upper && !same_lower && strcmp(auto_pad, "VALID") != 0 &&
        strcmp(auto_pad, "NOTSET") != 0)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                              auto_pad);
    int64_t C = xs.dims[1];
    if (group < 1 || C % group != 0 || ws.dims[0] != C)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "X has %lld channels, W's first dimension is %lld and group %lld; "
                              "W must be [C, M / group, K...] with C divisible by group",
                              (long long)C, (long long)ws.dims[0], (long long)group);
    dqg_conv_transpose_attrs a = {.spatial_rank = sr, .groups = group};
    for (int i = 0; i < sr; i++) {
        int64_t K = ws.dims[2 + i], X = xs.dims[2 + i];
        int64_t s = has_s ? strides[i] : 1, d = has_d ? dil[i] : 1, op = has_op ? opad[i] : 0;
        if (has_k && ks[i] != K)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "kernel_shape[%d] is %lld but W's dimension %d is %lld", i,
                                  (long long)ks[i], 2 + i, (long long)K);
        if (s < 1 || d < 1 || s > 4096 || d > 4096 || op < 0 || op >= (s > d ? s : d))
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "dimension %d: strides and dilations must be in [1, 4096] and "
                                  "output_padding in [0, max(stride, dilation)) (%lld, %lld, %lld)",
                                  i, (long long)s, (long long)d, (long long)op);
        int64_t span = (K - 1) * d + 1, full = s * (X - 1) + op + span, pb = 0, pe = 0;
        if (has_os || same_upper || same_lower) {
            if (has_p)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "pads cannot be given with %s",
                                      has_os ? "output_shape" : "auto_pad SAME_*");
            int64_t want = has_os ? os[i] : X * s, total = full - want;
            if (want < 1 || want > full + 4096)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "dimension %d: an output of %lld does not fit a transposed "
                                      "convolution of %lld",
                                      i, (long long)want, (long long)full);
            /* ONNX's rule, halves rounded down (a negative total, an
             * output longer than the full one, pads negatively): SAME_UPPER
             * puts the larger half at the end, SAME_LOWER and an
             * output_shape alone at the beginning. */
            int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
            pb = same_upper ? half : total - half;
            pe = total - pb;
        } else if (has_p) {
            pb = pads[i];
            pe = pads[sr + i];
            if (pb < 0 || pe < 0)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "pads must be >= 0");
        }
        if (pb < 0)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "dimension %d: output_shape %lld asks for %lld elements before "
                                  "the transposed convolution's first",
                                  i, (long long)os[i], (long long)-pb);
        if (pe < 0) { /* extra elements at the end */
            op -= pe;
            pe = 0;
        }
        a.strides[i] = s;
        a.dilations[i] = d;
        a.pads_begin[i] = pb;
        a.pads_end[i] = pe;
        a.output_padding[i] = op;
    }
    return unary_output(c, dqg_conv_transpose(c->g, onnx_op_name(c, NULL), x, w, b, &a));
}

/* ---- Pooling ---------------------------------------------------------------- */

/* The attributes of MaxPool / AveragePool at the node's opset (NULL-terminated). */
static void pool_attr_names(const onnx_import *c, bool max, const char **names)
{
    int n = 0;
    names[n++] = "auto_pad";
    names[n++] = "kernel_shape";
    names[n++] = "pads";
    names[n++] = "strides";
    if (max && c->node_opset >= 8)
        names[n++] = "storage_order";
    if (!max && c->node_opset >= 7)
        names[n++] = "count_include_pad";
    if (c->node_opset >= 10)
        names[n++] = "ceil_mode";
    if (c->node_opset >= (max ? 10 : 19))
        names[n++] = "dilations";
    names[n] = NULL;
}

static dqg_status pool_flag(onnx_import *c, const char *name, bool *out)
{
    int64_t v;
    dqg_status st = onnx_attr_int(c, name, 0, &v);
    if (st == DQG_OK && v != 0 && v != 1)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute '%s' is %lld; it must be 0 or 1",
                              name, (long long)v);
    *out = v != 0;
    return st;
}

static dqg_status pool_ints(onnx_import *c, const char *name, size_t want, const int64_t **v,
                            bool *present)
{
    return spatial_ints(c, name, want, "kernel_shape", v, present);
}

/* The input's type: floats everywhere, u8/s8 for MaxPool from opset 12. */
static dqg_status pool_input(onnx_import *c, bool max, dqg_tensor_id *x)
{
    dqg_status st = onnx_input(c, 0, "X", true, x);
    if (st != DQG_OK)
        return st;
    dqg_dtype t = dqg_tensor_dtype(c->g, *x);
    if (t == DQG_F32 || t == DQG_F16 || t == DQG_BF16)
        return DQG_OK;
    if ((t == DQG_U8 || t == DQG_S8) && max && c->node_opset >= 12)
        return DQG_OK;
    return onnx_node_fail(
        c, DQG_UNSUPPORTED, "input 0 (X) has type %s; dqgraph imports %s for f32, f16 and bf16%s",
        dqg_dtype_name(t), c->node->op_type,
        max ? (c->node_opset >= 12 ? ", u8 and s8" : " (u8 and s8 from opset 12)") : "");
}

static dqg_status import_pool(onnx_import *c)
{
    bool max = strcmp(c->node->op_type, "MaxPool") == 0;
    const char *known[12];
    pool_attr_names(c, max, known);
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, 1, 1, max && c->node_opset >= 8 ? 2 : 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if (onnx_output_value(c, 1))
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "output 1 (Indices) is not supported; dqgraph computes the pooled "
                              "values only");
    int64_t storage_order;
    if ((st = onnx_attr_int(c, "storage_order", 0, &storage_order)) != DQG_OK)
        return st;
    if (storage_order != 0)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "storage_order %lld is not supported; only 0 (row-major Indices)",
                              (long long)storage_order);
    dqg_tensor_id x, y;
    if ((st = pool_input(c, max, &x)) != DQG_OK || (st = onnx_build_pool(c, max, x, &y)) != DQG_OK)
        return st;
    return unary_output(c, y);
}

dqg_status onnx_build_pool(onnx_import *c, bool max, dqg_tensor_id x, dqg_tensor_id *out)
{
    dqg_status st;
    onnx_shape xs = onnx_tensor_shape(c, x);
    const int64_t *ks, *strides, *pads, *dil;
    size_t nk;
    bool has_k, has_s, has_p, has_d;
    if ((st = onnx_attr_ints(c, "kernel_shape", &ks, &nk, &has_k)) != DQG_OK)
        return st;
    if (!has_k)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute 'kernel_shape' is required");
    if (nk < 1 || nk > 3)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "kernel_shape has %zu values: dqgraph has 1-D, 2-D and 3-D pooling",
                              nk);
    int sr = (int)nk;
    if (xs.rank != sr + 2)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "X has rank %d; kernel_shape's %d spatial dimensions need rank %d",
                              xs.rank, sr, sr + 2);
    bool ceil_mode = false, include_pad = false;
    char auto_pad[32];
    if ((st = pool_ints(c, "strides", (size_t)sr, &strides, &has_s)) != DQG_OK ||
        (st = pool_ints(c, "pads", 2 * (size_t)sr, &pads, &has_p)) != DQG_OK ||
        (st = pool_ints(c, "dilations", (size_t)sr, &dil, &has_d)) != DQG_OK ||
        (st = pool_flag(c, "ceil_mode", &ceil_mode)) != DQG_OK ||
        (st = pool_flag(c, "count_include_pad", &include_pad)) != DQG_OK ||
        (st = onnx_attr_string(c, "auto_pad", "NOTSET", auto_pad, sizeof auto_pad)) != DQG_OK)
        return st;
    dqg_pool_attrs a = {
        .algorithm = max ? DQG_POOL_MAX
                         : (include_pad ? DQG_POOL_AVG_INCLUDE_PAD : DQG_POOL_AVG_EXCLUDE_PAD),
        .spatial_rank = sr,
        .ceil_mode = ceil_mode,
    };
    for (int i = 0; i < sr; i++) {
        a.kernel[i] = ks[i];
        a.strides[i] = has_s ? strides[i] : 1;
        a.dilations[i] = has_d ? dil[i] : 1;
        if (a.kernel[i] < 1 || a.strides[i] < 1 || a.dilations[i] < 1)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "kernel_shape, strides and dilations must be >= 1 (dimension "
                                  "%d: %lld, %lld, %lld)",
                                  i, (long long)a.kernel[i], (long long)a.strides[i],
                                  (long long)a.dilations[i]);
        /* dqg_pool's limit, checked before the auto_pad arithmetic. */
        if (a.kernel[i] > INT32_MAX || a.strides[i] > INT32_MAX || a.dilations[i] > INT32_MAX)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "kernel_shape, strides and dilations must be <= %d (dimension "
                                  "%d)",
                                  INT32_MAX, i);
        if (!max && a.dilations[i] != 1)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "dilation %lld at dimension %d: dqgraph averages undilated "
                                  "windows only",
                                  (long long)a.dilations[i], i);
    }
    bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0,
         same_lower = strcmp(auto_pad, "SAME_LOWER") == 0;
    if (same_upper || same_lower) {
        if (has_p)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "pads cannot be given with auto_pad %s",
                                  auto_pad);
        /* ONNX: output ceil(X / stride), padding split evenly, the odd
         * one at the end (SAME_UPPER) or the beginning (SAME_LOWER). */
        for (int i = 0; i < sr; i++) {
            int64_t in = xs.dims[2 + i], s = a.strides[i];
            int64_t span = (a.kernel[i] - 1) * a.dilations[i] + 1;
            int64_t o = (in + s - 1) / s;
            int64_t total = (o - 1) * s + span - in;
            if (total < 0)
                total = 0;
            a.pads_begin[i] = same_upper ? total / 2 : total - total / 2;
            a.pads_end[i] = total - a.pads_begin[i];
        }
    } else if (strcmp(auto_pad, "VALID") == 0 || strcmp(auto_pad, "NOTSET") == 0) {
        if (strcmp(auto_pad, "VALID") == 0 && has_p)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "pads cannot be given with auto_pad VALID");
        for (int i = 0; i < sr && has_p; i++) {
            a.pads_begin[i] = pads[i];
            a.pads_end[i] = pads[sr + i];
        }
    } else {
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                              auto_pad);
    }
    *out = dqg_pool(c->g, onnx_op_name(c, NULL), x, &a);
    return *out == DQG_NONE ? onnx_builder_failed(c) : DQG_OK;
}

static dqg_status import_global_pool(onnx_import *c)
{
    bool max = strcmp(c->node->op_type, "GlobalMaxPool") == 0;
    dqg_status st;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK || (st = onnx_require_float(c, 0, x)))
        return st;
    int r = dqg_tensor_rank(c->g, x);
    if (r < 3 || r > 5)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "X has rank %d: dqgraph pools inputs of rank 3 to 5 (1-D to 3-D)", r);
    dqg_pool_attrs a = {.algorithm = max ? DQG_POOL_MAX : DQG_POOL_AVG_EXCLUDE_PAD, .global = true};
    return unary_output(c, dqg_pool(c->g, onnx_op_name(c, NULL), x, &a));
}

/* ---- Element-wise ------------------------------------------------------------- */

/* Add, Sub, Mul and Div with NumPy broadcasting (opset 7+; opset 1's
 * consumed_inputs does not change the result). */
static dqg_status import_binary(onnx_import *c)
{
    static const char *const known[] = {"axis", "broadcast", "consumed_inputs", NULL};
    dqg_status st;
    dqg_tensor_id a, b;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if ((st = onnx_input(c, 0, "A", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "B", true, &b)) != DQG_OK)
        return st;
    /* Opsets 1-6: broadcast = 1 with an axis places B's dimensions at that
     * axis of A (without one, at its end, as NumPy does). */
    int64_t bc = 0, axis = -1;
    if ((st = onnx_attr_int(c, "broadcast", 0, &bc)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", -1, &axis)) != DQG_OK)
        return st;
    if (onnx_attr(c, "axis") && bc == 1) {
        onnx_shape as = onnx_tensor_shape(c, a), bs = onnx_tensor_shape(c, b);
        if (axis < 0)
            axis += as.rank;
        if (axis < 0 || axis + bs.rank > as.rank)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "axis %lld does not place B (rank %d) within A (rank %d)",
                                  (long long)axis, bs.rank, as.rank);
        int64_t d[DQG_MAX_RANK];
        int r = (int)(as.rank - axis);
        for (int i = 0; i < r; i++)
            d[i] = i < bs.rank ? bs.dims[i] : 1;
        if (r > bs.rank && (b = dqg_reshape(c->g, onnx_op_name(c, "placed"), b, r, d)) == DQG_NONE)
            return onnx_builder_failed(c);
    }
    /* Floats and integers (wrapping; Div truncates); the builders say
     * which types they take. */
    const char *name = onnx_op_name(c, NULL), *type = c->node->op_type;
    dqg_tensor_id (*build)(dqg_graph *, const char *, dqg_tensor_id, dqg_tensor_id) =
        strcmp(type, "Add") == 0   ? dqg_add
        : strcmp(type, "Sub") == 0 ? dqg_sub
        : strcmp(type, "Mul") == 0 ? dqg_mul
                                   : dqg_div;
    return unary_output(c, build(c->g, name, a, b));
}

static dqg_status import_relu(onnx_import *c)
{
    dqg_status st;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK ||
        (st = onnx_input(c, 0, "X", true, &x)) != DQG_OK || (st = onnx_require_float(c, 0, x)))
        return st;
    return unary_output(c, dqg_relu(c->g, onnx_op_name(c, NULL), x));
}

/* A bound of Clip given as an input (opset 11+): a scalar constant. */
static dqg_status clip_bound(onnx_import *c, int i, const char *what, float *v)
{
    const onnx_tensor *t;
    dqg_status st = onnx_input_const(c, i, what, false, &t);
    if (st != DQG_OK || !t)
        return st;
    if (t->nelems != 1)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) must be a scalar; it has "
                              "%lld elements",
                              i, what, (long long)t->nelems);
    *v = (float)onnx_tensor_get(t, 0);
    if (isnan(*v))
        return onnx_node_fail(c, DQG_UNSUPPORTED, "input %d (%s) is NaN", i, what);
    return DQG_OK;
}

static dqg_status import_clip(onnx_import *c)
{
    static const char *const known_old[] = {"min", "max", NULL};
    dqg_status st;
    bool old = c->node_opset < 11;
    if ((st = onnx_check_arity(c, 1, old ? 1 : 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, old ? known_old : no_attrs)) != DQG_OK)
        return st;
    float lo = -INFINITY, hi = INFINITY;
    if (old) {
        /* Clip-6's defaults are the float range, not infinities. */
        if ((st = onnx_attr_float(c, "min", -FLT_MAX, &lo)) != DQG_OK ||
            (st = onnx_attr_float(c, "max", FLT_MAX, &hi)) != DQG_OK)
            return st;
    } else if ((st = clip_bound(c, 1, "min", &lo)) != DQG_OK ||
               (st = clip_bound(c, 2, "max", &hi)) != DQG_OK) {
        return st;
    }
    if (lo > hi)
        lo = hi; /* min(max(x, lo), hi) is hi everywhere */
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "input", true, &x)) != DQG_OK)
        return st;
    dqg_dtype t = dqg_tensor_dtype(c->g, x);
    if (t == DQG_F32 || t == DQG_F16 || t == DQG_BF16)
        return unary_output(c, dqg_clip(c->g, onnx_op_name(c, NULL), x, lo, hi));
    if (t != DQG_S8 && t != DQG_U8 && t != DQG_S16 && t != DQG_U16)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "input 0 has type %s; dqgraph imports Clip for f32, f16, bf16, s8, "
                              "u8, s16 and u16",
                              dqg_dtype_name(t));
    /* Small integers are exact in f32, and so is the clipped result. */
    dqg_tensor_id f = dqg_typecast(c->g, onnx_op_name(c, "to_f32"), x, DQG_F32);
    dqg_tensor_id y = f == DQG_NONE ? DQG_NONE : dqg_clip(c->g, onnx_op_name(c, "clip"), f, lo, hi);
    return unary_output(c,
                        y == DQG_NONE ? DQG_NONE : dqg_typecast(c->g, onnx_op_name(c, NULL), y, t));
}

static dqg_status import_identity(onnx_import *c)
{
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, no_attrs)) != DQG_OK)
        return st;
    return onnx_alias_output(c, 0, 0);
}

/* x converted to t as ONNX's Cast converts it, or the refusal of a
 * conversion whose rounding or overflow dqgraph's TypeCast does otherwise. */
static dqg_status cast_to(onnx_import *c, dqg_tensor_id x, dqg_dtype t)
{
    dqg_dtype from = dqg_tensor_dtype(c->g, x);
    if (t == from)
        return onnx_alias_output(c, 0, 0);
    /* A bool converts as 0 or 1, and to bool as x != 0, exactly both ways. */
    if (dqg_dtype_is_integer(t) && !dqg_dtype_is_integer(from) && from != DQG_BOOL)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "Cast from %s to %s: ONNX truncates toward zero, dqgraph's TypeCast "
                              "rounds; only casts to f32, f16, bf16 and bool, from bool and "
                              "between integers are imported",
                              dqg_dtype_name(from), dqg_dtype_name(t));
    if (dqg_dtype_is_integer(t) && dqg_dtype_is_integer(from) &&
        (dqg_int_min(from) < dqg_int_min(t) || dqg_int_max(from) > dqg_int_max(t)))
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "Cast from %s to %s: ONNX keeps the low bits of values out of "
                              "range, dqgraph's TypeCast saturates; only widening integer casts "
                              "are imported",
                              dqg_dtype_name(from), dqg_dtype_name(t));
    return unary_output(c, dqg_typecast(c->g, onnx_op_name(c, NULL), x, t));
}

static dqg_status import_cast(onnx_import *c)
{
    static const char *const known[] = {"to", "saturate", NULL};
    dqg_status st;
    int64_t to;
    dqg_tensor_id x;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "to", 0, &to)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK)
        return st;
    dqg_dtype t = onnx_dtype_to_dqg(to);
    char b[32];
    if (t == DQG_DTYPE_UNDEF)
        return onnx_node_fail(c, DQG_UNSUPPORTED, "target type %s is not supported",
                              onnx_dtype_name(to, b, sizeof b));
    return cast_to(c, x, t);
}

/* CastLike (opset 15): a Cast to the type of its second input, whose
 * values are not read. */
static dqg_status import_cast_like(onnx_import *c)
{
    static const char *const known[] = {"saturate", NULL};
    dqg_status st;
    dqg_tensor_id x, like;
    if ((st = onnx_check_arity(c, 2, 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "target_type", true, &like)) != DQG_OK)
        return st;
    return cast_to(c, x, dqg_tensor_dtype(c->g, like));
}

/* ---- Constants ------------------------------------------------------------------ */

static dqg_status import_constant(onnx_import *c)
{
    dqg_status st;
    if ((st = onnx_check_arity(c, 0, 0, 1, 1)) != DQG_OK)
        return st;
    if (c->node->n_attribute != 1)
        return onnx_node_fail(c, DQG_PARSE_ERROR, "must have exactly one attribute; it has %zu",
                              c->node->n_attribute);
    const Onnx__AttributeProto *a = c->node->attribute[0];
    const char *name = a->name ? a->name : "";
    onnx_tensor t = {0};
    if (strcmp(name, "value") == 0) {
        if (!a->t)
            return onnx_node_fail(c, DQG_PARSE_ERROR, "attribute 'value' holds no tensor");
        char what[700];
        snprintf(what, sizeof what, "%s value", c->node->op_type);
        if ((st = onnx_tensor_decode(a->t, what, true, &c->ext, &t)) != DQG_OK) {
            char msg[1500];
            snprintf(msg, sizeof msg, "%s", dqg_last_error());
            return onnx_node_fail(c, st, "%s", msg);
        }
        return onnx_const_output(c, 0, &t);
    }
    bool scalar = strcmp(name, "value_float") == 0 || strcmp(name, "value_int") == 0;
    bool ints = strcmp(name, "value_int") == 0 || strcmp(name, "value_ints") == 0;
    if (!scalar && strcmp(name, "value_floats") != 0 && strcmp(name, "value_ints") != 0)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "attribute '%s' is not supported (value, "
                              "value_float(s) and value_int(s) are)",
                              name);
    /* An empty list is an empty tensor: readable as an absent value, never
     * a graph tensor. */
    int64_t n = scalar ? 1 : (int64_t)(ints ? a->n_ints : a->n_floats);
    t.dtype = ints ? DQG_S64 : DQG_F32;
    t.rank = scalar ? 0 : 1;
    t.dims[0] = n;
    t.nelems = n;
    t.nbytes = (size_t)n * (ints ? 8 : 4);
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    if (!t.data)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        if (ints)
            ((int64_t *)t.data)[i] = scalar ? a->i : a->ints[i];
        else
            ((float *)t.data)[i] = scalar ? a->f : a->floats[i];
    }
    return onnx_const_output(c, 0, &t);
}

/* ---- Shapes ---------------------------------------------------------------------- */

static dqg_status reshape_to(onnx_import *c, dqg_tensor_id x, int rank, const int64_t *dims)
{
    return unary_output(c, dqg_reshape(c->g, onnx_op_name(c, NULL), x, rank, dims));
}

static dqg_status import_reshape(onnx_import *c)
{
    static const char *const known[] = {"allowzero", NULL};
    static const char *const known_old[] = {"shape", NULL};
    bool old = c->node_opset < 5;
    dqg_status st;
    if ((st = onnx_check_arity(c, old ? 1 : 2, old ? 1 : 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, old ? known_old : known)) != DQG_OK)
        return st;
    int64_t dims[DQG_MAX_RANK + 1], allowzero;
    size_t n;
    if ((st = onnx_attr_int(c, "allowzero", 0, &allowzero)) != DQG_OK)
        return st;
    if (old) {
        const int64_t *v;
        bool present;
        if ((st = onnx_attr_ints(c, "shape", &v, &n, &present)) != DQG_OK)
            return st;
        if (!present)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute 'shape' is required");
        if (n > DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "shape has %zu dimensions; dqgraph's "
                                  "limit is %d",
                                  n, DQG_MAX_RANK);
        if (n)
            memcpy(dims, v, n * sizeof *v);
    } else {
        const onnx_tensor *t;
        if ((st = onnx_input_const(c, 1, "shape", true, &t)) != DQG_OK)
            return st;
        if (t->dtype != DQG_S64 || t->rank != 1)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "input 1 (shape) must be a 1-D int64 "
                                  "tensor");
        if (t->nelems > DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "shape has %lld dimensions; dqgraph's "
                                  "limit is %d",
                                  (long long)t->nelems, DQG_MAX_RANK);
        n = (size_t)t->nelems;
        memcpy(dims, t->data, n * sizeof *dims);
    }
    for (size_t i = 0; i < n && allowzero; i++)
        if (dims[i] == 0)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "allowzero = 1 with a 0 in the shape makes an empty tensor; "
                                  "dqgraph tensors have at least one element");
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    return reshape_to(c, x, (int)n, dims);
}

static unsigned reshape_const_inputs(int64_t opset)
{
    return opset >= 5 ? 1u << 1 : 0;
}

static unsigned clip_const_inputs(int64_t opset)
{
    return opset >= 11 ? (1u << 1) | (1u << 2) : 0;
}

static unsigned axes_const_inputs(int64_t opset)
{
    return opset >= 13 ? 1u << 1 : 0;
}

static dqg_status import_transpose(onnx_import *c)
{
    static const char *const known[] = {"perm", NULL};
    dqg_status st;
    dqg_tensor_id x;
    const int64_t *perm;
    size_t n;
    bool has;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_ints(c, "perm", &perm, &n, &has)) != DQG_OK ||
        (st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    if (has && (int)n != dqg_tensor_rank(c->g, x))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "perm has %zu values; the input has rank "
                              "%d",
                              n, dqg_tensor_rank(c->g, x));
    return unary_output(c, dqg_transpose(c->g, onnx_op_name(c, NULL), x, has ? perm : NULL));
}

static dqg_status import_flatten(onnx_import *c)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    dqg_tensor_id x;
    int64_t axis;
    if ((st = onnx_check_arity(c, 1, 1, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", 1, &axis)) != DQG_OK ||
        (st = onnx_input(c, 0, "input", true, &x)) != DQG_OK)
        return st;
    onnx_shape s = onnx_tensor_shape(c, x);
    if (axis < -s.rank || axis > s.rank)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is outside [-%d, %d]",
                              (long long)axis, s.rank, s.rank);
    if (axis < 0)
        axis += s.rank;
    int64_t d[2] = {1, 1};
    for (int i = 0; i < s.rank; i++)
        d[i < axis ? 0 : 1] *= s.dims[i];
    return reshape_to(c, x, 2, d);
}

/* Squeeze and Unsqueeze: axes from the attribute (opset < 13) or input 1. */
static dqg_status import_squeeze(onnx_import *c)
{
    static const char *const known_old[] = {"axes", NULL};
    int64_t axes_copy[2 * DQG_MAX_RANK];
    bool old = c->node_opset < 13;
    bool unsq = strcmp(c->node->op_type, "Unsqueeze") == 0;
    dqg_status st;
    if (!old && onnx_attr(c, "axes"))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "'axes' is given as an attribute; from opset 13 it is input 1");
    if ((st = onnx_check_arity(c, 1, old ? 1 : 2, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, old ? known_old : no_attrs)) != DQG_OK)
        return st;
    const int64_t *axes = NULL;
    size_t n = 0;
    if (old) {
        bool has_axes = false;
        if ((st = onnx_attr_ints(c, "axes", &axes, &n, &has_axes)) != DQG_OK)
            return st;
        if (unsq && !has_axes)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "attribute 'axes' is required (Unsqueeze-%lld)",
                                  (long long)c->node_opset);
    } else {
        const onnx_tensor *t;
        if ((st = onnx_input_const(c, 1, "axes", unsq, &t)) != DQG_OK)
            return st;
        if (t) {
            if (t->dtype != DQG_S64 || t->rank != 1)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "input 1 (axes) must be a 1-D int64 tensor");
            if (t->nelems > 2 * DQG_MAX_RANK)
                return onnx_node_fail(c, DQG_UNSUPPORTED, "input 1 (axes) has %lld entries",
                                      (long long)t->nelems);
            n = (size_t)t->nelems;
            /* A copy: building input 0 may release the constant behind t
             * (when data and axes are the same initializer). */
            memcpy(axes_copy, t->data, n * sizeof(int64_t));
            axes = axes_copy;
        }
    }
    dqg_tensor_id x;
    if ((st = onnx_input(c, 0, "data", true, &x)) != DQG_OK)
        return st;
    onnx_shape s = onnx_tensor_shape(c, x);
    int out_rank = unsq ? s.rank + (int)n : s.rank;
    if (unsq && out_rank > DQG_MAX_RANK)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "the result would have rank %d; dqgraph's limit "
                              "is %d",
                              out_rank, DQG_MAX_RANK);
    bool marked[DQG_MAX_RANK * 2] = {false};
    for (size_t i = 0; i < n; i++) {
        int64_t ax = axes[i];
        if (ax < -out_rank || ax >= out_rank)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is outside [-%d, %d]",
                                  (long long)ax, out_rank, out_rank - 1);
        if (ax < 0)
            ax += out_rank;
        if (marked[ax])
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "axis %lld is repeated",
                                  (long long)axes[i]);
        if (!unsq && s.dims[ax] != 1)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "axis %lld has size %lld; Squeeze removes size-1 axes only",
                                  (long long)axes[i], (long long)s.dims[ax]);
        marked[ax] = true;
    }
    int64_t d[DQG_MAX_RANK];
    int r = 0;
    if (unsq) {
        for (int i = 0, k = 0; i < out_rank; i++)
            d[r++] = marked[i] ? 1 : s.dims[k++];
    } else {
        for (int i = 0; i < s.rank; i++)
            if (!(n ? marked[i] : s.dims[i] == 1))
                d[r++] = s.dims[i];
    }
    return reshape_to(c, x, r, d);
}

const onnx_op_entry onnx_nn_ops[] = {
    {"", "MatMul", import_matmul, NULL},
    {"", "Gemm", import_gemm, NULL},
    {"", "Conv", import_conv, NULL},
    {"", "MaxPool", import_pool, NULL},
    {"", "AveragePool", import_pool, NULL},
    {"", "GlobalMaxPool", import_global_pool, NULL},
    {"", "GlobalAveragePool", import_global_pool, NULL},
    {"", "Add", import_binary, NULL},
    {"", "Mul", import_binary, NULL},
    {"", "Sub", import_binary, NULL},
    {"", "Div", import_binary, NULL},
    {"", "Relu", import_relu, NULL},
    {"", "Clip", import_clip, clip_const_inputs},
    {"", "Reshape", import_reshape, reshape_const_inputs},
    {"", "Transpose", import_transpose, NULL},
    {"", "Identity", import_identity, NULL},
    {"", "Cast", import_cast, NULL},
    {"", "CastLike", import_cast_like, NULL},
    {"", "Constant", import_constant, NULL},
    {"", "ConvTranspose", import_conv_transpose, NULL},
    {"", "Flatten", import_flatten, NULL},
    {"", "Squeeze", import_squeeze, axes_const_inputs},
    {"", "Unsqueeze", import_squeeze, axes_const_inputs},
};
const size_t onnx_n_nn_ops = sizeof onnx_nn_ops / sizeof onnx_nn_ops[0];
