/* Importers of the quantization operators: DequantizeLinear, QuantizeLinear,
 * DynamicQuantizeLinear, com.amd.quark ExtendedDequantizeLinear, the
 * integer operators MatMulInteger, ConvInteger, QLinearMatMul and
 * QLinearConv, and ONNX Runtime's com.microsoft operators of its QOperator
 * format (QLinearAdd/Mul/Sigmoid/LeakyRelu/AveragePool/GlobalAveragePool/
 * Concat/Softmax, QGemm). Each is imported as what it means (dequantize ->
 * float op -> quantize, or -> exact integer result) so that the fusion
 * passes see the same pattern as in a QDQ model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import.h"
#include "onnx/onnx_ops.h"

/* ONNX output_dtype / to attribute onto a dqgraph type. */
static dqg_status attr_dtype(onnx_import *c, const char *name, dqg_dtype *out)
{
    int64_t t;
    dqg_status st = onnx_attr_int(c, name, 0, &t);
    *out = DQG_DTYPE_UNDEF;
    if (st != DQG_OK || t == 0)
        return st;
    *out = onnx_dtype_to_dqg(t);
    if (*out == DQG_DTYPE_UNDEF) {
        char b[32];
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "attribute '%s' names type %s, which dqgraph "
                              "does not have",
                              name, onnx_dtype_name(t, b, sizeof b));
    }
    return DQG_OK;
}

/* A scale that is a constant of the model must be finite and non-zero: the
 * builders would compute NaN, infinities or zeros from it as the
 * specifications' arithmetic says, but no quantizer writes such a scale, so
 * in a model file it means corruption. Run-time scales are not checked. */
static dqg_status check_const_scale(onnx_import *c, int i, const char *what)
{
    if (!onnx_input_is_const(c, i))
        return DQG_OK;
    const onnx_tensor *t;
    dqg_status st = onnx_input_const(c, i, what, true, &t);
    if (st != DQG_OK)
        return st;
    if (!dqg_dtype_is_float(t->dtype))
        return DQG_OK; /* the builder reports the type */
    for (int64_t k = 0; k < t->nelems; k++) {
        double v = onnx_tensor_get(t, k);
        if (!isfinite(v) || v == 0.0)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "input %d (%s) element %lld is %s; a model's constant scales "
                                  "must be finite and non-zero",
                                  i, what, (long long)k,
                                  isnan(v)   ? "NaN"
                                  : isinf(v) ? (v > 0 ? "inf" : "-inf")
                                             : "0");
    }
    return DQG_OK;
}

static dqg_status import_dequantize_linear(onnx_import *c)
{
    static const char *const known[] = {"axis", "block_size", "output_dtype", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    dqg_dequantize_linear_attrs a = {.opset = (int)c->node_opset};
    a.has_axis = onnx_attr(c, "axis") != NULL;
    if ((st = onnx_attr_int(c, "axis", 1, &a.axis)) != DQG_OK ||
        (st = onnx_attr_int(c, "block_size", 0, &a.block_size)) != DQG_OK ||
        (st = attr_dtype(c, "output_dtype", &a.output_dtype)) != DQG_OK)
        return st;
    dqg_tensor_id x, s, zp;
    if ((st = check_const_scale(c, 1, "x_scale")) != DQG_OK ||
        (st = onnx_input(c, 0, "x", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "x_scale", true, &s)) != DQG_OK ||
        (st = onnx_input(c, 2, "x_zero_point", false, &zp)) != DQG_OK)
        return st;
    dqg_tensor_id y = dqg_dequantize_linear(c->g, onnx_op_name(c, NULL), x, s, zp, &a);
    return y == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, y);
}

static dqg_status import_quantize_linear(onnx_import *c)
{
    static const char *const known[] = {"axis", "block_size", "output_dtype", "saturate", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    dqg_quantize_linear_attrs a = {.opset = (int)c->node_opset};
    int64_t saturate;
    a.has_axis = onnx_attr(c, "axis") != NULL;
    if ((st = onnx_attr_int(c, "axis", 1, &a.axis)) != DQG_OK ||
        (st = onnx_attr_int(c, "block_size", 0, &a.block_size)) != DQG_OK ||
        (st = attr_dtype(c, "output_dtype", &a.output_dtype)) != DQG_OK ||
        (st = onnx_attr_int(c, "saturate", 1, &saturate)) != DQG_OK)
        return st;
    a.no_saturate = saturate == 0;
    dqg_tensor_id x, s, zp;
    if ((st = check_const_scale(c, 1, "y_scale")) != DQG_OK ||
        (st = onnx_input(c, 0, "x", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "y_scale", true, &s)) != DQG_OK ||
        (st = onnx_input(c, 2, "y_zero_point", false, &zp)) != DQG_OK)
        return st;
    dqg_tensor_id y = dqg_quantize_linear(c->g, onnx_op_name(c, NULL), x, s, zp, &a);
    return y == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, y);
}

static dqg_status import_dynamic_quantize_linear(onnx_import *c)
{
    static const char *const known[] = {NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, 1, 1, 3)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    dqg_tensor_id x, s = DQG_NONE, zp = DQG_NONE;
    if ((st = onnx_input(c, 0, "x", true, &x)) != DQG_OK)
        return st;
    dqg_tensor_id y = dqg_dynamic_quantize_linear(c->g, onnx_op_name(c, NULL), x, &s, &zp);
    if (y == DQG_NONE)
        return onnx_builder_failed(c);
    onnx_set_output(c, 0, y);
    onnx_set_output(c, 1, s);
    return onnx_set_output(c, 2, zp);
}

static dqg_status import_extended_dequantize_linear(onnx_import *c)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 3, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    int64_t axis;
    if ((st = onnx_attr_int(c, "axis", 1, &axis)) != DQG_OK)
        return st;
    dqg_tensor_id x, s, zp;
    if ((st = check_const_scale(c, 1, "x_scale")) != DQG_OK ||
        (st = onnx_input(c, 0, "x", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "x_scale", true, &s)) != DQG_OK ||
        (st = onnx_input(c, 2, "x_zero_point", false, &zp)) != DQG_OK)
        return st;
    dqg_tensor_id y = dqg_extended_dequantize_linear(c->g, onnx_op_name(c, NULL), x, s, zp, axis);
    return y == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, y);
}

/* ---- Integer operators ------------------------------------------------------ */

/* Dequantizes integer input `x` of the node with scale `scale` (or 1 when
 * DQG_NONE) and zero point `zp` (may be DQG_NONE). A 1-D scale or zero point
 * of more than one element applies along `axis`. */
static dqg_status dequantize_operand(onnx_import *c, const char *what, dqg_tensor_id x,
                                     dqg_tensor_id scale, dqg_tensor_id zp, int64_t axis,
                                     dqg_tensor_id *out)
{
    char suffix[64];
    if (scale == DQG_NONE) {
        /* Unit scale with the zero point's shape (scalar or 1-D). */
        onnx_shape zs = zp != DQG_NONE ? onnx_tensor_shape(c, zp) : (onnx_shape){0};
        int64_t n = zp != DQG_NONE ? zs.nelems : 1;
        float *ones = malloc((size_t)n * sizeof *ones);
        if (!ones)
            return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
        for (int64_t i = 0; i < n; i++)
            ones[i] = 1.0f;
        snprintf(suffix, sizeof suffix, "%s_unit_scale", what);
        scale = onnx_add_constant(c, suffix, DQG_F32, zp != DQG_NONE ? zs.rank : 0, zs.dims, ones);
        free(ones);
        if (scale == DQG_NONE)
            return onnx_builder_failed(c);
    }
    onnx_shape ss = onnx_tensor_shape(c, scale);
    if (zp != DQG_NONE) {
        onnx_shape zs = onnx_tensor_shape(c, zp);
        if (zs.nelems == 1 && ss.nelems == 1 && zs.rank != 0) {
            /* A [1] zero point: per-tensor. */
            snprintf(suffix, sizeof suffix, "%s_zero_point", what);
            zp = dqg_reshape(c->g, onnx_op_name(c, suffix), zp, 0, NULL);
            if (zp == DQG_NONE)
                return onnx_builder_failed(c);
        }
    }
    if (ss.nelems == 1 && ss.rank != 0) {
        snprintf(suffix, sizeof suffix, "%s_scale", what);
        scale = dqg_reshape(c->g, onnx_op_name(c, suffix), scale, 0, NULL);
        if (scale == DQG_NONE)
            return onnx_builder_failed(c);
        ss = onnx_tensor_shape(c, scale);
    }
    dqg_dequantize_linear_attrs a = {.opset = 13, .has_axis = ss.rank > 0, .axis = axis};
    snprintf(suffix, sizeof suffix, "dequantize_%s", what);
    *out = dqg_dequantize_linear(c->g, onnx_op_name(c, suffix), x, scale, zp, &a);
    return *out == DQG_NONE ? onnx_builder_failed(c) : DQG_OK;
}

/* The f32 result of an integer MatMul or Convolution, cast to s32 exactly. */
static dqg_status integer_result(onnx_import *c, dqg_tensor_id y)
{
    dqg_tensor_id r = dqg_typecast(c->g, onnx_op_name(c, "to_int32"), y, DQG_S32);
    return r == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, r);
}

static dqg_status import_matmul_integer(onnx_import *c)
{
    static const char *const known[] = {NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 4, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    dqg_tensor_id a, b, azp, bzp, da, db;
    if ((st = onnx_input(c, 0, "A", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "B", true, &b)) != DQG_OK ||
        (st = onnx_input(c, 2, "a_zero_point", false, &azp)) != DQG_OK ||
        (st = onnx_input(c, 3, "b_zero_point", false, &bzp)) != DQG_OK)
        return st;
    int ra = dqg_tensor_rank(c->g, a), rb = dqg_tensor_rank(c->g, b);
    if (ra < 2 || rb < 2)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "inputs of rank %d and %d: dqgraph imports MatMulInteger for rank 2 "
                              "and above",
                              ra, rb);
    /* a_zero_point per row (axis -2 of A), b_zero_point per column (-1 of B). */
    if ((st = dequantize_operand(c, "A", a, DQG_NONE, azp, ra - 2, &da)) != DQG_OK ||
        (st = dequantize_operand(c, "B", b, DQG_NONE, bzp, rb - 1, &db)) != DQG_OK)
        return st;
    dqg_tensor_id y = dqg_matmul(c->g, onnx_op_name(c, "matmul"), da, db, NULL);
    return y == DQG_NONE ? onnx_builder_failed(c) : integer_result(c, y);
}

static dqg_status import_conv_integer(onnx_import *c)
{
    dqg_status st;
    if ((st = onnx_check_arity(c, 2, 4, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, onnx_conv_attr_names)) != DQG_OK)
        return st;
    dqg_tensor_id x, w, xzp, wzp, dx, dw;
    if ((st = onnx_input(c, 0, "x", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "w", true, &w)) != DQG_OK ||
        (st = onnx_input(c, 2, "x_zero_point", false, &xzp)) != DQG_OK ||
        (st = onnx_input(c, 3, "w_zero_point", false, &wzp)) != DQG_OK)
        return st;
    if ((st = dequantize_operand(c, "x", x, DQG_NONE, xzp, 1, &dx)) != DQG_OK ||
        (st = dequantize_operand(c, "w", w, DQG_NONE, wzp, 0, &dw)) != DQG_OK)
        return st;
    dqg_tensor_id y;
    if ((st = onnx_build_conv(c, dx, dw, DQG_NONE, &y)) != DQG_OK)
        return st;
    return integer_result(c, y);
}

/* The float result y of a QLinear op, quantized with inputs ys and yzp. */
static dqg_status quantize_result(onnx_import *c, dqg_tensor_id y, int ys_index)
{
    dqg_status st;
    dqg_tensor_id ys, yzp;
    if ((st = onnx_input(c, ys_index, "y_scale", true, &ys)) != DQG_OK ||
        (st = onnx_input(c, ys_index + 1, "y_zero_point", false, &yzp)) != DQG_OK)
        return st;
    if (dqg_tensor_element_count(c->g, ys) != 1)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "y_scale has %lld elements; dqgraph imports a "
                              "per-tensor y_scale only",
                              (long long)dqg_tensor_element_count(c->g, ys));
    if (dqg_tensor_rank(c->g, ys) != 0) {
        ys = dqg_reshape(c->g, onnx_op_name(c, "y_scale"), ys, 0, NULL);
        if (ys == DQG_NONE)
            return onnx_builder_failed(c);
    }
    if (yzp != DQG_NONE && dqg_tensor_rank(c->g, yzp) != 0) {
        yzp = dqg_reshape(c->g, onnx_op_name(c, "y_zero_point"), yzp, 0, NULL);
        if (yzp == DQG_NONE)
            return onnx_builder_failed(c);
    }
    dqg_quantize_linear_attrs a = {.opset = 13};
    dqg_tensor_id q = dqg_quantize_linear(c->g, onnx_op_name(c, "quantize"), y, ys, yzp, &a);
    return q == DQG_NONE ? onnx_builder_failed(c) : onnx_set_output(c, 0, q);
}

static dqg_status import_qlinear_matmul(onnx_import *c)
{
    static const char *const known[] = {NULL};
    dqg_status st;
    if ((st = onnx_check_arity(c, 8, 8, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    dqg_tensor_id a, as, azp, b, bs, bzp, da, db;
    if ((st = check_const_scale(c, 1, "a_scale")) != DQG_OK ||
        (st = check_const_scale(c, 4, "b_scale")) != DQG_OK ||
        (st = check_const_scale(c, 6, "y_scale")) != DQG_OK ||
        (st = onnx_input(c, 0, "a", true, &a)) != DQG_OK ||
        (st = onnx_input(c, 1, "a_scale", true, &as)) != DQG_OK ||
        (st = onnx_input(c, 2, "a_zero_point", false, &azp)) != DQG_OK ||
        (st = onnx_input(c, 3, "b", true, &b)) != DQG_OK ||
        (st = onnx_input(c, 4, "b_scale", true, &bs)) != DQG_OK ||
        (st = onnx_input(c, 5, "b_zero_point", false, &bzp)) != DQG_OK)
        return st;
    int ra = dqg_tensor_rank(c->g, a), rb = dqg_tensor_rank(c->g, b);
    if (ra < 2 || rb < 2)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "inputs of rank %d and %d: dqgraph imports QLinearMatMul for rank 2 "
                              "and above",
                              ra, rb);
    if ((st = dequantize_operand(c, "a", a, as, azp, ra - 2, &da)) != DQG_OK ||
        (st = dequantize_operand(c, "b", b, bs, bzp, rb - 1, &db)) != DQG_OK)
        return st;
    dqg_tensor_id y = dqg_matmul(c->g, onnx_op_name(c, "matmul"), da, db, NULL);
    return y == DQG_NONE ? onnx_builder_failed(c) : quantize_result(c, y, 6);
}

/* The int32 bias of a QLinear operator as f32: dequantized with scale
 * input 1 * input 4 (the two operands' scales, named `names`; one value, or
 * one per element of the second along `axis`) and zero point 0. Both
 * scales must be constants. */
static dqg_status int32_bias(onnx_import *c, dqg_tensor_id bias, const char *const names[2],
                             const char *what, int64_t axis, dqg_tensor_id *out)
{
    const onnx_tensor *ta, *tb;
    dqg_status st;
    if ((st = onnx_input_const(c, 1, names[0], true, &ta)) != DQG_OK ||
        (st = onnx_input_const(c, 4, names[1], true, &tb)) != DQG_OK)
        return st;
    if (ta->nelems != 1)
        return onnx_node_fail(c, DQG_UNSUPPORTED, "%s has %lld elements; expected one", names[0],
                              (long long)ta->nelems);
    float *bs = malloc((size_t)tb->nelems * sizeof *bs);
    if (!bs)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < tb->nelems; i++)
        bs[i] = (float)onnx_tensor_get(ta, 0) * (float)onnx_tensor_get(tb, i);
    int64_t n = tb->nelems;
    char suffix[48];
    snprintf(suffix, sizeof suffix, "%s_scale", what);
    dqg_tensor_id bscale = onnx_add_constant(c, suffix, DQG_F32, n > 1 ? 1 : 0, &n, bs);
    free(bs);
    if (bscale == DQG_NONE)
        return onnx_builder_failed(c);
    return dequantize_operand(c, what, bias, bscale, DQG_NONE, axis, out);
}

static dqg_status import_qlinear_conv(onnx_import *c)
{
    dqg_status st;
    if ((st = onnx_check_arity(c, 8, 9, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, onnx_conv_attr_names)) != DQG_OK)
        return st;
    dqg_tensor_id x, xs, xzp, w, ws, wzp, dx, dw, db = DQG_NONE;
    if ((st = check_const_scale(c, 1, "x_scale")) != DQG_OK ||
        (st = check_const_scale(c, 4, "w_scale")) != DQG_OK ||
        (st = check_const_scale(c, 6, "y_scale")) != DQG_OK ||
        (st = onnx_input(c, 0, "x", true, &x)) != DQG_OK ||
        (st = onnx_input(c, 1, "x_scale", true, &xs)) != DQG_OK ||
        (st = onnx_input(c, 2, "x_zero_point", false, &xzp)) != DQG_OK ||
        (st = onnx_input(c, 3, "w", true, &w)) != DQG_OK ||
        (st = onnx_input(c, 4, "w_scale", true, &ws)) != DQG_OK ||
        (st = onnx_input(c, 5, "w_zero_point", false, &wzp)) != DQG_OK)
        return st;
    if ((st = dequantize_operand(c, "x", x, xs, xzp, 1, &dx)) != DQG_OK ||
        (st = dequantize_operand(c, "w", w, ws, wzp, 0, &dw)) != DQG_OK)
        return st;
    if (onnx_input_name(c, 8)) {
        dqg_tensor_id bias;
        if ((st = onnx_input(c, 8, "B", true, &bias)) != DQG_OK ||
            (st = int32_bias(c, bias, (const char *const[]){"x_scale", "w_scale"}, "bias", 0,
                             &db)) != DQG_OK)
            return st;
    }
    dqg_tensor_id y;
    if ((st = onnx_build_conv(c, dx, dw, db, &y)) != DQG_OK)
        return st;
    return quantize_result(c, y, 6);
}

/* ---- ONNX Runtime's quantized operators (com.microsoft, QOperator format) ---- */

/* Input xi of the node, a u8/s8 tensor, with its per-tensor scale (input
 * xi + 1) and optional zero point (xi + 2), dequantized. */
static dqg_status dq_input(onnx_import *c, int xi, const char *what, dqg_tensor_id *out)
{
    dqg_status st;
    dqg_tensor_id x, s, zp;
    char sname[48], zname[48];
    snprintf(sname, sizeof sname, "%s_scale", what);
    snprintf(zname, sizeof zname, "%s_zero_point", what);
    if ((st = check_const_scale(c, xi + 1, sname)) != DQG_OK ||
        (st = onnx_input(c, xi, what, true, &x)) != DQG_OK ||
        (st = onnx_input(c, xi + 1, sname, true, &s)) != DQG_OK ||
        (st = onnx_input(c, xi + 2, zname, false, &zp)) != DQG_OK)
        return st;
    dqg_dtype t = dqg_tensor_dtype(c->g, x);
    if (t != DQG_U8 && t != DQG_S8)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input %d (%s) has type %s; %s takes u8 or s8", xi, what,
                              dqg_dtype_name(t), c->node->op_type);
    int64_t n = dqg_tensor_element_count(c->g, s);
    if (n != 1)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "input %d (%s) has %lld elements; dqgraph imports %s with a "
                              "per-tensor scale",
                              xi + 1, sname, (long long)n, c->node->op_type);
    return dequantize_operand(c, what, x, s, zp, 0, out);
}

/* min_in to max_in inputs, where optional zero points may sit between
 * required inputs (the importers check each required one by name). */
static dqg_status contrib_arity(onnx_import *c, int min_in, int max_in)
{
    dqg_status st = onnx_check_arity(c, 1, max_in, 1, 1);
    if (st == DQG_OK && (int)c->node->n_input < min_in)
        return onnx_node_fail(c, DQG_PARSE_ERROR, "has %zu inputs; expected %d to %d",
                              c->node->n_input, min_in, max_in);
    return st;
}

/* Attribute channels_last (QLinearAveragePool, QLinearGlobalAveragePool):
 * dqgraph pools NCX tensors. */
static dqg_status require_ncx(onnx_import *c)
{
    int64_t cl;
    dqg_status st = onnx_attr_int(c, "channels_last", 0, &cl);
    if (st == DQG_OK && cl != 0)
        return onnx_node_fail(c, DQG_UNSUPPORTED,
                              "channels_last %lld: dqgraph imports %s on N x C x D... tensors "
                              "(channels_last 0) only",
                              (long long)cl, c->node->op_type);
    return st;
}

/* QLinearAdd, QLinearMul: A, A_scale, A_zero_point, B, B_scale,
 * B_zero_point, C_scale, C_zero_point. */
static dqg_status import_qlinear_binary(onnx_import *c)
{
    static const char *const known[] = {NULL};
    dqg_status st;
    dqg_tensor_id a, b;
    if ((st = contrib_arity(c, 7, 8)) != DQG_OK || (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = dq_input(c, 0, "A", &a)) != DQG_OK || (st = dq_input(c, 3, "B", &b)) != DQG_OK ||
        (st = check_const_scale(c, 6, "C_scale")) != DQG_OK)
        return st;
    bool add = strcmp(c->node->op_type, "QLinearAdd") == 0;
    dqg_tensor_id y = (add ? dqg_add : dqg_mul)(c->g, onnx_op_name(c, add ? "add" : "mul"), a, b);
    return y == DQG_NONE ? onnx_builder_failed(c) : quantize_result(c, y, 6);
}

/* QLinearSigmoid, QLinearLeakyRelu (alpha): X, X_scale, X_zero_point,
 * Y_scale, Y_zero_point. */
static dqg_status import_qlinear_unary(onnx_import *c)
{
    static const char *const sigmoid[] = {NULL}, *const leaky[] = {"alpha", NULL};
    bool is_leaky = strcmp(c->node->op_type, "QLinearLeakyRelu") == 0;
    dqg_status st;
    float alpha = 0.0f;
    dqg_tensor_id x;
    if ((st = contrib_arity(c, 4, 5)) != DQG_OK ||
        (st = onnx_check_attrs(c, is_leaky ? leaky : sigmoid)) != DQG_OK ||
        (is_leaky && (st = onnx_attr_float(c, "alpha", 0.01f, &alpha)) != DQG_OK) ||
        (st = dq_input(c, 0, "X", &x)) != DQG_OK ||
        (st = check_const_scale(c, 3, "Y_scale")) != DQG_OK)
        return st;
    dqg_tensor_id y =
        dqg_unary(c->g, onnx_op_name(c, is_leaky ? "leaky_relu" : "sigmoid"),
                  is_leaky ? DQG_UNARY_LEAKY_RELU : DQG_UNARY_SIGMOID, x, alpha, 0.0f);
    return y == DQG_NONE ? onnx_builder_failed(c) : quantize_result(c, y, 3);
}

/* QLinearGlobalAveragePool (X, x_scale, x_zero_point, y_scale,
 * y_zero_point) and QLinearAveragePool (the same, zero points optional,
 * with AveragePool's attributes). */
static dqg_status import_qlinear_pool(onnx_import *c)
{
    static const char *const global_attrs[] = {"channels_last", NULL};
    static const char *const pool_attrs[] = {
        "auto_pad",     "ceil_mode", "channels_last", "count_include_pad",
        "kernel_shape", "pads",      "strides",       NULL};
    bool global = strcmp(c->node->op_type, "QLinearGlobalAveragePool") == 0;
    dqg_status st;
    dqg_tensor_id x, y;
    if ((st = contrib_arity(c, global ? 5 : 4, 5)) != DQG_OK ||
        (st = onnx_check_attrs(c, global ? global_attrs : pool_attrs)) != DQG_OK ||
        (st = require_ncx(c)) != DQG_OK || (st = dq_input(c, 0, "X", &x)) != DQG_OK ||
        (st = check_const_scale(c, 3, "y_scale")) != DQG_OK)
        return st;
    if (global) {
        int r = dqg_tensor_rank(c->g, x);
        if (r < 3 || r > 5)
            return onnx_node_fail(c, DQG_UNSUPPORTED,
                                  "X has rank %d: dqgraph pools inputs of rank 3 to 5 (1-D to 3-D)",
                                  r);
        dqg_pool_attrs a = {.algorithm = DQG_POOL_AVG_EXCLUDE_PAD, .global = true};
        y = dqg_pool(c->g, onnx_op_name(c, "pool"), x, &a);
        if (y == DQG_NONE)
            return onnx_builder_failed(c);
    } else if ((st = onnx_build_pool(c, false, x, &y)) != DQG_OK) {
        return st;
    }
    return quantize_result(c, y, 3);
}

/* QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)
 * per input. */
static dqg_status import_qlinear_concat(onnx_import *c)
{
    static const char *const known[] = {"axis", NULL};
    dqg_status st;
    int64_t axis;
    if ((st = onnx_check_arity(c, 5, 2 + 3 * DQG_ONNX_MAX_VARIADIC, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if (!onnx_attr(c, "axis"))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute 'axis' is required");
    if ((st = onnx_attr_int(c, "axis", 0, &axis)) != DQG_OK ||
        (st = check_const_scale(c, 0, "Y_scale")) != DQG_OK)
        return st;
    int n_in = (int)c->node->n_input;
    if ((n_in - 2) % 3 != 0)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "has %d inputs; after Y_scale and Y_zero_point they must come in "
                              "triples (X, X_scale, X_zero_point)",
                              n_in);
    int n = (n_in - 2) / 3;
    dqg_tensor_id *xs = malloc((size_t)n * sizeof *xs);
    if (!xs)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for %d inputs", n);
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "X%d", i);
        if ((st = dq_input(c, 2 + 3 * i, what, &xs[i])) != DQG_OK) {
            free(xs);
            return st;
        }
    }
    if (axis < INT32_MIN || axis > INT32_MAX)
        axis = INT32_MAX; /* the builder names the range */
    dqg_tensor_id y = dqg_concat(c->g, onnx_op_name(c, "concat"), n, xs, (int)axis);
    free(xs);
    return y == DQG_NONE ? onnx_builder_failed(c) : quantize_result(c, y, 0);
}

/* QLinearSoftmax: X, X_scale, x_zero_point, y_scale, y_zero_point; axis,
 * and opset (the Softmax it stands for: below 13, the dimensions from axis
 * on form one row). */
static dqg_status import_qlinear_softmax(onnx_import *c)
{
    static const char *const known[] = {"axis", "opset", NULL};
    dqg_status st;
    int64_t axis, opset;
    dqg_tensor_id x, y;
    if ((st = contrib_arity(c, 5, 5)) != DQG_OK || (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if (!onnx_attr(c, "opset"))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "attribute 'opset' is required");
    if ((st = onnx_attr_int(c, "opset", 0, &opset)) != DQG_OK ||
        (st = onnx_attr_int(c, "axis", -1, &axis)) != DQG_OK ||
        (st = dq_input(c, 0, "X", &x)) != DQG_OK ||
        (st = check_const_scale(c, 3, "y_scale")) != DQG_OK ||
        (st = onnx_build_softmax(c, x, axis, opset < 13, false, &y)) != DQG_OK)
        return st;
    return quantize_result(c, y, 3);
}

/* QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point (per tensor
 * or per column of B), C (int32, scale a_scale * b_scale), y_scale,
 * y_zero_point (both absent: an f32 result); alpha, transA, transB:
 * y = alpha (A B + C). */
static dqg_status import_qgemm(onnx_import *c)
{
    static const char *const known[] = {"alpha", "transA", "transB", NULL};
    dqg_status st;
    float alpha;
    int64_t ta, tb;
    if ((st = contrib_arity(c, 6, 9)) != DQG_OK || (st = onnx_check_attrs(c, known)) != DQG_OK ||
        (st = onnx_attr_float(c, "alpha", 1.0f, &alpha)) != DQG_OK ||
        (st = onnx_attr_int(c, "transA", 0, &ta)) != DQG_OK ||
        (st = onnx_attr_int(c, "transB", 0, &tb)) != DQG_OK)
        return st;
    bool quantized = onnx_input_name(c, 7) != NULL;
    if (quantized != (onnx_input_name(c, 8) != NULL))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "y_scale and y_zero_point must be given together (a quantized "
                              "result) or both left out (an f32 result)");
    dqg_tensor_id a, b, bs, bzp, db, bias = DQG_NONE;
    if ((st = dq_input(c, 0, "A", &a)) != DQG_OK ||
        (st = check_const_scale(c, 4, "b_scale")) != DQG_OK ||
        (st = onnx_input(c, 3, "B", true, &b)) != DQG_OK ||
        (st = onnx_input(c, 4, "b_scale", true, &bs)) != DQG_OK ||
        (st = onnx_input(c, 5, "b_zero_point", false, &bzp)) != DQG_OK ||
        (quantized && (st = check_const_scale(c, 7, "y_scale")) != DQG_OK))
        return st;
    if (dqg_tensor_rank(c->g, a) != 2 || dqg_tensor_rank(c->g, b) != 2)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "A and B must be 2-D; they have rank %d and %d",
                              dqg_tensor_rank(c->g, a), dqg_tensor_rank(c->g, b));
    dqg_dtype bt = dqg_tensor_dtype(c->g, b);
    if (bt != DQG_U8 && bt != DQG_S8)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "input 3 (B) has type %s; QGemm takes u8 or s8", dqg_dtype_name(bt));
    /* A per-column scale runs along N: axis 0 of B [N, K] (transB), else 1. */
    if ((st = dequantize_operand(c, "B", b, bs, bzp, tb ? 0 : 1, &db)) != DQG_OK)
        return st;
    if (onnx_input_name(c, 6)) {
        /* The int32 bias, of scale a_scale * b_scale (per column of B:
         * along C's last axis). */
        if ((st = onnx_input(c, 6, "C", true, &bias)) != DQG_OK)
            return st;
        if (dqg_tensor_dtype(c->g, bias) != DQG_S32)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "input 6 (C) has type %s; QGemm takes s32",
                                  dqg_dtype_name(dqg_tensor_dtype(c->g, bias)));
        int cr = dqg_tensor_rank(c->g, bias);
        if ((st = int32_bias(c, bias, (const char *const[]){"a_scale", "b_scale"}, "C",
                             cr > 0 ? cr - 1 : 0, &bias)) != DQG_OK)
            return st;
    }
    /* alpha scales the bias too: ONNX Runtime adds C to the integer
     * product and multiplies the sum by alpha a_scale b_scale. */
    dqg_matmul_attrs ma = {.transpose_a = ta != 0, .transpose_b = tb != 0};
    dqg_tensor_id y = dqg_matmul(c->g, onnx_op_name(c, "matmul"), a, db, &ma);
    if (y != DQG_NONE && bias != DQG_NONE)
        y = dqg_add(c->g, onnx_op_name(c, "bias"), y, bias);
    if (y != DQG_NONE && alpha != 1.0f) {
        dqg_tensor_id s = onnx_add_scalar(c, "alpha", DQG_F32, alpha);
        y = s == DQG_NONE ? DQG_NONE : dqg_mul(c->g, onnx_op_name(c, "alpha_scaled"), y, s);
    }
    if (y == DQG_NONE)
        return onnx_builder_failed(c);
    return quantized ? quantize_result(c, y, 7) : onnx_set_output(c, 0, y);
}

static unsigned qlinear_conv_const_inputs(int64_t opset)
{
    (void)opset;
    return (1u << 1) | (1u << 4); /* x_scale and w_scale give the bias scale */
}

static unsigned qgemm_const_inputs(int64_t opset)
{
    (void)opset;
    return (1u << 1) | (1u << 4); /* a_scale and b_scale give C's scale */
}

const onnx_op_entry onnx_quant_ops[] = {
    {"", "DequantizeLinear", import_dequantize_linear, NULL},
    {"", "QuantizeLinear", import_quantize_linear, NULL},
    {"", "DynamicQuantizeLinear", import_dynamic_quantize_linear, NULL},
    {"com.amd.quark", "ExtendedDequantizeLinear", import_extended_dequantize_linear, NULL},
    {"", "MatMulInteger", import_matmul_integer, NULL},
    {"", "ConvInteger", import_conv_integer, NULL},
    {"", "QLinearMatMul", import_qlinear_matmul, NULL},
    {"", "QLinearConv", import_qlinear_conv, qlinear_conv_const_inputs},
    {"com.microsoft", "QLinearAdd", import_qlinear_binary, NULL},
    {"com.microsoft", "QLinearMul", import_qlinear_binary, NULL},
    {"com.microsoft", "QLinearSigmoid", import_qlinear_unary, NULL},
    {"com.microsoft", "QLinearLeakyRelu", import_qlinear_unary, NULL},
    {"com.microsoft", "QLinearAveragePool", import_qlinear_pool, NULL},
    {"com.microsoft", "QLinearGlobalAveragePool", import_qlinear_pool, NULL},
    {"com.microsoft", "QLinearConcat", import_qlinear_concat, NULL},
    {"com.microsoft", "QLinearSoftmax", import_qlinear_softmax, NULL},
    {"com.microsoft", "QGemm", import_qgemm, qgemm_const_inputs},
};
const size_t onnx_n_quant_ops = sizeof onnx_quant_ops / sizeof onnx_quant_ops[0];
