/* Softmax and LogSoftmax along one axis (ONNX opset 13 semantics):
 * y = e^(x - max) / sum e^(x - max), or its logarithm, over the axis, with
 * the sum accumulated in double precision by the reference. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

dqg_tensor_id dqg_softmax(dqg_graph *g, const char *name, dqg_tensor_id x, int axis, bool log)
{
    const char *kind = log ? "LogSoftmax" : "Softmax";
    if (!dqg_graph_can_build(g, kind, name) ||
        !dqg_graph_check_input(g, kind, name, 0, "x", x, false) ||
        !dqg_check_float_dtype(g, kind, name, 0, "x", x))
        return DQG_NONE;
    const dqg_tensor *t = &g->tensors[x];
    if (t->rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': input 0 (x) is a scalar; it needs rank 1 or more", kind,
                              dqg_op_display_name(name));
    if (axis < -t->rank || axis >= t->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': axis %d is outside [-%d, %d) for input 0 (x) of rank %d",
                              kind, dqg_op_display_name(name), axis, t->rank, t->rank, t->rank);
    int rank = t->rank; /* t moves when the op's output is added */
    int32_t o = dqg_graph_add_op_like(g, DQG_OP_SOFTMAX, name, 1, &x);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.softmax.axis = axis < 0 ? axis + rank : axis;
    g->ops[o].attrs.softmax.log = log;
    return g->ops[o].outputs[0];
}

static dqg_status softmax_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    int axis = op->attrs.softmax.axis;
    int64_t outer = 1, inner = 1, n = x->dims[axis];
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * n * inner + in;
            float m = -INFINITY;
            for (int64_t k = 0; k < n; k++) {
                float f = dqg_load_float(x->dtype, X, base + k * inner);
                if (f > m || isnan(f))
                    m = isnan(m) ? m : f;
            }
            double sum = 0.0;
            for (int64_t k = 0; k < n; k++)
                sum += exp((double)dqg_load_float(x->dtype, X, base + k * inner) - (double)m);
            for (int64_t k = 0; k < n; k++) {
                double d = (double)dqg_load_float(x->dtype, X, base + k * inner) - (double)m;
                double r = op->attrs.softmax.log ? d - log(sum) : exp(d) / sum;
                dqg_store_float(x->dtype, Y, base + k * inner, (float)r);
            }
        }
    return DQG_OK;
}

static void softmax_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "axis=%d%s", op->attrs.softmax.axis, op->attrs.softmax.log ? " log" : "");
}

const dqg_op_def dqg_op_def_softmax = {
    .kind = DQG_OP_SOFTMAX,
    .name = "Softmax",
    .reference = softmax_reference,
    .format_attrs = softmax_format,
};
