/* TypeCast: conversion to f32, f16 or bf16 from any float or integer type,
 * rounding once to nearest even (as oneDNN Graph's TypeCast, extended to
 * every dqgraph type on the input side), and to 8-, 16- and 32-bit integers
 * rounding to nearest even and saturating (as oneDNN's reorder; NaN gives
 * 0). The ONNX front end uses the integer targets for the exact integer
 * results of MatMulInteger, ConvInteger and integer Clip: a MatMul or
 * Convolution result that only such a cast reads is rounded once, from
 * its sum in double (dqg_ref_values.wide), not first to f32. A bool converts
 * as 0 or 1, and a conversion to bool is x != 0 (NaN is true), as ONNX's
 * Cast. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "TypeCast"

dqg_tensor_id dqg_typecast(dqg_graph *g, const char *name, dqg_tensor_id x, dqg_dtype to)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false))
        return DQG_NONE;
    if (to != DQG_F32 && to != DQG_F16 && to != DQG_BF16 && to != DQG_S8 && to != DQG_U8 &&
        to != DQG_S16 && to != DQG_U16 && to != DQG_S32 && to != DQG_U32 && to != DQG_BOOL)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': target type %s is not supported; expected f32, f16, "
                                   "bf16, s8, u8, s16, u16, s32, u32 or bool",
                              dqg_op_display_name(name), dqg_dtype_name(to));
    const dqg_tensor *t = &g->tensors[x];
    int rank = t->rank;
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[0][i] = t->dims[i];
    int32_t op = dqg_graph_add_op(g, DQG_OP_TYPECAST, name, 1, &x, 1, &to, &rank, dims);
    if (op < 0)
        return DQG_NONE;
    g->ops[op].attrs.typecast.to = to;
    return g->ops[op].outputs[0];
}

static dqg_status typecast_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    /* A MatMul or Convolution result in double (dqg_ref_wide): rounded
     * once, from the exact sum. */
    const double *wide = v->wide ? v->wide[op->inputs[0]] : NULL;
    for (int64_t i = 0; i < x->nelems; i++) {
        /* Integers go through dqg_store_int, which rounds once from the exact
         * int64: via float (f16, bf16) or via double (s64 beyond 2^53) a wide
         * integer would be rounded twice. Every float type fits in f32, so
         * those load exactly and round once on the store. */
        if (dqg_dtype_is_integer(x->dtype)) {
            dqg_store_int(y->dtype, Y, i, dqg_load_int(x->dtype, X, i));
        } else if (dqg_dtype_is_integer(y->dtype)) {
            /* Every target integer fits in double exactly; rint rounds half
             * to even in the default rounding mode. */
            double f = wide ? wide[i] : (double)dqg_load_float(x->dtype, X, i);
            double lo = (double)dqg_int_min(y->dtype), hi = (double)dqg_int_max(y->dtype);
            f = isnan(f) ? 0.0 : rint(f);
            dqg_store_int(y->dtype, Y, i, (int64_t)(f < lo ? lo : f > hi ? hi : f));
        } else
            dqg_store_float(y->dtype, Y, i, dqg_load_float(x->dtype, X, i));
    }
    return DQG_OK;
}

static void typecast_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "to=%s", dqg_dtype_name(op->attrs.typecast.to));
}

const dqg_op_def dqg_op_def_typecast = {
    .kind = DQG_OP_TYPECAST,
    .name = KIND,
    .reference = typecast_reference,
    .format_attrs = typecast_format,
};
