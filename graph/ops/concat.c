/* Concat: n tensors of one type and rank joined along one axis; every other
 * dimension agrees. Any data type (4-bit types element by element). */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Concat"

dqg_tensor_id dqg_concat(dqg_graph *g, const char *name, int n, const dqg_tensor_id *inputs,
                         int axis)
{
    if (!dqg_graph_can_build(g, KIND, name))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    if (n < 1 || n > DQG_MAX_OP_ARITY || !inputs)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': %d inputs%s; it takes 1 to %d",
                              shown, n, inputs ? "" : " (NULL list)", DQG_MAX_OP_ARITY);
    for (int i = 0; i < n; i++)
        if (!dqg_graph_check_input(g, KIND, name, i, "input", inputs[i], false))
            return DQG_NONE;
    const dqg_tensor *t0 = &g->tensors[inputs[0]];
    int rank = t0->rank;
    if (rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 is a scalar; it needs rank 1 or more", shown);
    if (axis < -rank || axis >= rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': axis %d is outside [-%d, %d) for inputs of rank %d",
                              shown, axis, rank, rank, rank);
    int ax = axis < 0 ? axis + rank : axis;
    int64_t dims[1][DQG_MAX_RANK];
    memcpy(dims[0], t0->dims, sizeof t0->dims);
    dims[0][ax] = 0;
    for (int i = 0; i < n; i++) {
        const dqg_tensor *t = &g->tensors[inputs[i]];
        char b0[DQG_DIMS_BUF], bi[DQG_DIMS_BUF];
        if (t->dtype != t0->dtype)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': input %d is %s but input 0 is %s; all inputs "
                                       "have one data type",
                                  shown, i, dqg_dtype_name(t->dtype), dqg_dtype_name(t0->dtype));
        if (t->rank != rank)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': input %d has rank %d but input 0 has rank %d", shown,
                                  i, t->rank, rank);
        for (int d = 0; d < rank; d++)
            if (d != ax && t->dims[d] != t0->dims[d])
                return dqg_graph_fail(
                    g, DQG_INVALID_ARGUMENT,
                    KIND " '%s': input %d has shape %s and input 0 %s; they may differ only "
                         "on axis %d",
                    shown, i, dqg_format_dims(bi, sizeof bi, rank, t->dims),
                    dqg_format_dims(b0, sizeof b0, rank, t0->dims), ax);
        dims[0][ax] += t->dims[ax];
    }
    if (dqg_check_shape(g, KIND, rank, dims[0]) < 0)
        return DQG_NONE;
    dqg_dtype dt = t0->dtype;
    int32_t o = dqg_graph_add_op(g, DQG_OP_CONCAT, name, n, inputs, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.concat.axis = ax;
    return g->ops[o].outputs[0];
}

static dqg_status concat_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    int ax = op->attrs.concat.axis;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++)
        outer *= y->dims[d];
    for (int d = ax + 1; d < y->rank; d++)
        inner *= y->dims[d];
    int bits = dqg_dtype_bits(y->dtype);
    void *Y = v->data[op->outputs[0]];
    int64_t at = 0; /* elements of the axis written so far */
    for (int i = 0; i < op->n_inputs; i++) {
        const dqg_tensor *t = &g->tensors[op->inputs[i]];
        const void *X = v->data[op->inputs[i]];
        int64_t chunk = t->dims[ax] * inner, row = y->dims[ax] * inner;
        for (int64_t o = 0; o < outer; o++) {
            int64_t src = o * chunk, dst = o * row + at * inner;
            if (bits == 4) {
                for (int64_t k = 0; k < chunk; k++)
                    dqg_nibble_set(Y, dst + k, dqg_nibble_get(X, src + k));
            } else {
                size_t es = (size_t)bits / 8;
                memcpy((char *)Y + (size_t)dst * es, (const char *)X + (size_t)src * es,
                       (size_t)chunk * es);
            }
        }
        at += t->dims[ax];
    }
    return DQG_OK;
}

static void concat_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "axis=%d", op->attrs.concat.axis);
}

const dqg_op_def dqg_op_def_concat = {
    .kind = DQG_OP_CONCAT,
    .name = KIND,
    .reference = concat_reference,
    .format_attrs = concat_format,
};
