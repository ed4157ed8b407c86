/* ArgMax and ArgMin: the s64 index of the largest or smallest element
 * along one axis (ONNX opsets 1 to 13). One op kind, the direction an
 * attribute; messages name ArgMax or ArgMin. Elements compare exactly as
 * doubles (every dqgraph type converts exactly); NaN wins, first or last. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

static dqg_tensor_id arg_build(dqg_graph *g, const char *name, dqg_tensor_id x, int axis,
                               bool keepdims, bool last, bool min)
{
    const char *kind = min ? "ArgMin" : "ArgMax", *shown = dqg_op_display_name(name);
    if (!dqg_graph_can_build(g, kind, name) ||
        !dqg_graph_check_input(g, kind, name, 0, "x", x, false))
        return DQG_NONE;
    const dqg_tensor *t = &g->tensors[x];
    if (dqg_dtype_bits(t->dtype) == 4 || t->dtype == DQG_BOOL)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': input 0 (x) is %s; 4-bit and bool tensors are not "
                              "supported",
                              kind, shown, dqg_dtype_name(t->dtype));
    if (t->rank < 1 || axis < -t->rank || axis >= t->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': axis %d is outside [-%d, %d) for an input of rank %d", kind,
                              shown, axis, t->rank, t->rank, t->rank);
    if (axis < 0)
        axis += t->rank;
    int64_t dims[1][DQG_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < t->rank; d++) {
        if (d == axis && !keepdims)
            continue;
        dims[0][rank++] = d == axis ? 1 : t->dims[d];
    }
    dqg_dtype dt = DQG_S64;
    int32_t o = dqg_graph_add_op(g, DQG_OP_ARG, name, 1, &x, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.arg.axis = axis;
    g->ops[o].attrs.arg.keepdims = keepdims;
    g->ops[o].attrs.arg.last = last;
    g->ops[o].attrs.arg.min = min;
    return g->ops[o].outputs[0];
}

dqg_tensor_id dqg_argmax(dqg_graph *g, const char *name, dqg_tensor_id x, int axis, bool keepdims,
                         bool select_last)
{
    return arg_build(g, name, x, axis, keepdims, select_last, false);
}

dqg_tensor_id dqg_argmin(dqg_graph *g, const char *name, dqg_tensor_id x, int axis, bool keepdims,
                         bool select_last)
{
    return arg_build(g, name, x, axis, keepdims, select_last, true);
}

static dqg_status arg_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const void *X = v->data[op->inputs[0]];
    int64_t *Y = v->data[op->outputs[0]];
    int axis = op->attrs.arg.axis;
    bool last = op->attrs.arg.last, min = op->attrs.arg.min;
    int64_t n = x->dims[axis], inner = 1, outer = 1;
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i, best = 0;
            double bv = dqg_load_double(x->dtype, X, base);
            for (int64_t k = 1; k < n && !(isnan(bv) && !last); k++) {
                double e = dqg_load_double(x->dtype, X, base + k * inner);
                bool wins;
                if (isnan(bv))
                    wins = isnan(e); /* last NaN, with select_last */
                else if (isnan(e))
                    wins = true;
                else
                    wins = min ? (last ? e <= bv : e < bv) : (last ? e >= bv : e > bv);
                if (wins) {
                    best = k;
                    bv = e;
                }
            }
            Y[o * inner + i] = best;
        }
    return DQG_OK;
}

static void arg_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "%s axis=%d keepdims=%d select_last_index=%d",
             op->attrs.arg.min ? "min" : "max", op->attrs.arg.axis, (int)op->attrs.arg.keepdims,
             (int)op->attrs.arg.last);
}

const dqg_op_def dqg_op_def_arg = {
    .kind = DQG_OP_ARG,
    .name = "Arg",
    .reference = arg_reference,
    .format_attrs = arg_format,
};
