/* The normalization family: LayerNormalization over the trailing
 * dimensions from an axis. The reference accumulates mean and variance in
 * double precision (variance as the mean of squared deviations). */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "LayerNorm"

static const dqg_dtype f32_only[] = {DQG_F32};

/* scale or bias: shape x.shape[axis:], or 1-D of that many elements. */
static bool check_param(dqg_graph *g, const char *name, int index, const char *what,
                        dqg_tensor_id p, const dqg_tensor *x, int axis, int64_t inner)
{
    if (!dqg_check_dtype_in(g, KIND, name, index, what, p, f32_only, 1))
        return false;
    const dqg_tensor *t = &g->tensors[p];
    bool ok = t->rank == 1 && t->dims[0] == inner;
    if (!ok && t->rank == x->rank - axis) {
        ok = true;
        for (int i = 0; i < t->rank; i++)
            ok = ok && t->dims[i] == x->dims[axis + i];
    }
    if (!ok) {
        char b[DQG_DIMS_BUF], bx[DQG_DIMS_BUF];
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       KIND " '%s': input %d (%s) has shape %s; it must be x's dimensions from "
                            "axis %d, %s",
                       dqg_op_display_name(name), index, what,
                       dqg_format_dims(b, sizeof b, t->rank, t->dims), axis,
                       dqg_format_dims(bx, sizeof bx, x->rank - axis, x->dims + axis));
    }
    return ok;
}

dqg_tensor_id dqg_layer_norm(dqg_graph *g, const char *name, dqg_tensor_id x, dqg_tensor_id scale,
                             dqg_tensor_id bias, int axis, float epsilon)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false) ||
        !dqg_graph_check_input(g, KIND, name, 1, "scale", scale, false) ||
        !dqg_graph_check_input(g, KIND, name, 2, "bias", bias, true) ||
        !dqg_check_dtype_in(g, KIND, name, 0, "x", x, f32_only, 1))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *t = &g->tensors[x];
    if (t->rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 (x) is a scalar; it needs rank 1 or more",
                              shown);
    if (axis < -t->rank || axis >= t->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': axis %d is outside [-%d, %d) for input 0 (x) of rank %d",
                              shown, axis, t->rank, t->rank, t->rank);
    if (!isfinite(epsilon) || epsilon < 0.0f)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': epsilon is %g; it must be finite and >= 0", shown,
                              (double)epsilon);
    int ax = axis < 0 ? axis + t->rank : axis;
    int64_t inner = 1;
    for (int i = ax; i < t->rank; i++)
        inner *= t->dims[i];
    if (!check_param(g, name, 1, "scale", scale, t, ax, inner) ||
        (bias != DQG_NONE && !check_param(g, name, 2, "bias", bias, t, ax, inner)))
        return DQG_NONE;
    dqg_dtype dt = t->dtype;
    int rank = t->rank;
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[0][i] = t->dims[i];
    int32_t o = dqg_graph_add_op(g, DQG_OP_LAYER_NORM, name, 3, (dqg_tensor_id[]){x, scale, bias},
                                 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.layer_norm.axis = ax;
    g->ops[o].attrs.layer_norm.epsilon = epsilon;
    return g->ops[o].outputs[0];
}

static dqg_status layer_norm_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const float *X = v->data[op->inputs[0]], *S = v->data[op->inputs[1]];
    const float *B = op->inputs[2] == DQG_NONE ? NULL : v->data[op->inputs[2]];
    float *Y = v->data[op->outputs[0]];
    int64_t inner = 1;
    for (int i = op->attrs.layer_norm.axis; i < x->rank; i++)
        inner *= x->dims[i];
    int64_t outer = x->nelems / inner;
    if (op->attrs.layer_norm.rms) {
        /* The ops it stands for, rounding as they do: Pow's square in
         * f32, ReduceMean's sum in double, Add, Sqrt, Div (or Reciprocal
         * and Mul) and the scale's Mul in f32. */
        for (int64_t o = 0; o < outer; o++) {
            const float *xr = X + o * inner;
            double sum = 0;
            for (int64_t i = 0; i < inner; i++)
                sum += (float)((double)xr[i] * xr[i]);
            float ms = (float)(sum / (double)inner);
            float root = sqrtf(ms + op->attrs.layer_norm.epsilon), r = 1.0f / root;
            for (int64_t i = 0; i < inner; i++) {
                float n = op->attrs.layer_norm.rms_recip ? xr[i] * r : xr[i] / root;
                Y[o * inner + i] = n * S[i];
            }
        }
        return DQG_OK;
    }
    for (int64_t o = 0; o < outer; o++) {
        const float *xr = X + o * inner;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; i++)
            mean += xr[i];
        mean /= (double)inner;
        for (int64_t i = 0; i < inner; i++)
            var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)inner;
        double inv = 1.0 / sqrt(var + (double)op->attrs.layer_norm.epsilon);
        for (int64_t i = 0; i < inner; i++)
            Y[o * inner + i] = (float)((xr[i] - mean) * inv * S[i] + (B ? B[i] : 0.0));
    }
    return DQG_OK;
}

static void layer_norm_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "axis=%d epsilon=%g%s", op->attrs.layer_norm.axis,
             (double)op->attrs.layer_norm.epsilon,
             !op->attrs.layer_norm.rms        ? ""
             : op->attrs.layer_norm.rms_recip ? " rms (times the reciprocal)"
                                              : " rms");
}

const dqg_op_def dqg_op_def_layer_norm = {
    .kind = DQG_OP_LAYER_NORM,
    .name = KIND,
    .reference = layer_norm_reference,
    .format_attrs = layer_norm_format,
};
