/* Importers of the quantization operators: DequantizeLinear, QuantizeLinear,
 * DynamicQuantizeLinear, com.amd.quark ExtendedDequantizeLinear, and the
 * integer operators MatMulInteger, ConvInteger, QLinearMatMul and
 * QLinearConv, which are imported as what they mean (dequantize -> float
 * op -> quantize, or -> exact integer result) so that the fusion passes see
 * the same pattern as in a QDQ model. */
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
        /* The int32 bias is quantized with scale x_scale * w_scale, zero point 0. */
        const onnx_tensor *sx, *sw;
        dqg_tensor_id bias;
        if ((st = onnx_input_const(c, 1, "x_scale", true, &sx)) != DQG_OK ||
            (st = onnx_input_const(c, 4, "w_scale", true, &sw)) != DQG_OK ||
            (st = onnx_input(c, 8, "B", true, &bias)) != DQG_OK)
            return st;
        if (sx->nelems != 1)
            return onnx_node_fail(c, DQG_UNSUPPORTED, "x_scale has %lld elements; expected one",
                                  (long long)sx->nelems);
        float *bs = malloc((size_t)sw->nelems * sizeof *bs);
        if (!bs)
            return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory");
        for (int64_t i = 0; i < sw->nelems; i++)
            bs[i] = (float)onnx_tensor_get(sx, 0) * (float)onnx_tensor_get(sw, i);
        int64_t n = sw->nelems;
        dqg_tensor_id bscale = onnx_add_constant(c, "bias_scale", DQG_F32, n > 1 ? 1 : 0, &n, bs);
        free(bs);
        if (bscale == DQG_NONE)
            return onnx_builder_failed(c);
        if ((st = dequantize_operand(c, "bias", bias, bscale, DQG_NONE, 0, &db)) != DQG_OK)
            return st;
    }
    dqg_tensor_id y;
    if ((st = onnx_build_conv(c, dx, dw, db, &y)) != DQG_OK)
        return st;
    return quantize_result(c, y, 6);
}

static unsigned qlinear_conv_const_inputs(int64_t opset)
{
    (void)opset;
    return (1u << 1) | (1u << 4); /* x_scale and w_scale give the bias scale */
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
};
const size_t onnx_n_quant_ops = sizeof onnx_quant_ops / sizeof onnx_quant_ops[0];
