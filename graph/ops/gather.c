/* Gather: slices of data along one axis, chosen by an index tensor. Any
 * data type (4-bit types element by element); indices s32 or s64. */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Gather"

static const dqg_dtype index_types[] = {DQG_S32, DQG_S64};

dqg_tensor_id dqg_gather(dqg_graph *g, const char *name, dqg_tensor_id data, dqg_tensor_id indices,
                         int axis)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "data", data, false) ||
        !dqg_graph_check_input(g, KIND, name, 1, "indices", indices, false) ||
        !dqg_check_dtype_in(g, KIND, name, 1, "indices", indices, index_types, 2))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *d = &g->tensors[data], *ix = &g->tensors[indices];
    if (d->rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 (data) is a scalar; it needs rank 1 or more",
                              shown);
    if (axis < -d->rank || axis >= d->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': axis %d is outside [-%d, %d) for input 0 (data)", shown,
                              axis, d->rank, d->rank);
    int ax = axis < 0 ? axis + d->rank : axis;
    int rank = d->rank - 1 + ix->rank;
    if (rank > DQG_MAX_RANK)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': the result would have rank %d; dqgraph's limit is %d",
                              shown, rank, DQG_MAX_RANK);
    int64_t dims[1][DQG_MAX_RANK];
    int r = 0;
    for (int i = 0; i < ax; i++)
        dims[0][r++] = d->dims[i];
    for (int i = 0; i < ix->rank; i++)
        dims[0][r++] = ix->dims[i];
    for (int i = ax + 1; i < d->rank; i++)
        dims[0][r++] = d->dims[i];
    if (dqg_check_shape(g, KIND, rank, dims[0]) < 0)
        return DQG_NONE;
    /* Constant indices are checked now. */
    if (ix->kind == DQG_TENSOR_CONSTANT && ix->data) {
        dqg_op probe = {.kind = DQG_OP_GATHER, .name = (char *)shown};
        if (dqg_gather_check_indices(&probe, ix, ix->data, d->dims[ax]) != DQG_OK)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s", dqg_last_error());
    }
    dqg_dtype dt = d->dtype;
    int32_t o = dqg_graph_add_op(g, DQG_OP_GATHER, name, 2, (dqg_tensor_id[]){data, indices}, 1,
                                 &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.gather.axis = ax;
    return g->ops[o].outputs[0];
}

dqg_status dqg_gather_check_indices(const dqg_op *op, const dqg_tensor *idx, const void *data,
                                    int64_t dim)
{
    for (int64_t i = 0; i < idx->nelems; i++) {
        int64_t v = dqg_load_int(idx->dtype, data, i);
        if (v < -dim || v >= dim)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "%s '%s': input 1 (indices) element %lld is %lld, outside "
                                 "[-%lld, %lld) for axis %d",
                                 dqg_op_kind_name(op->kind), dqg_op_display_name(op->name),
                                 (long long)i, (long long)v, (long long)dim, (long long)dim,
                                 op->attrs.gather.axis);
    }
    return DQG_OK;
}

static dqg_status gather_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *d = &g->tensors[op->inputs[0]], *ix = &g->tensors[op->inputs[1]];
    const void *D = v->data[op->inputs[0]], *I = v->data[op->inputs[1]];
    void *Y = v->data[op->outputs[0]];
    int ax = op->attrs.gather.axis;
    int64_t dim = d->dims[ax], outer = 1, inner = 1;
    dqg_status st = dqg_gather_check_indices(op, ix, I, dim);
    if (st != DQG_OK)
        return st;
    for (int i = 0; i < ax; i++)
        outer *= d->dims[i];
    for (int i = ax + 1; i < d->rank; i++)
        inner *= d->dims[i];
    int bits = dqg_dtype_bits(d->dtype);
    int64_t y = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < ix->nelems; k++) {
            int64_t j = dqg_load_int(ix->dtype, I, k);
            if (j < 0)
                j += dim;
            int64_t src = (o * dim + j) * inner;
            if (bits == 4) {
                for (int64_t e = 0; e < inner; e++)
                    dqg_nibble_set(Y, y + e, dqg_nibble_get(D, src + e));
            } else {
                size_t es = (size_t)bits / 8;
                memcpy((char *)Y + (size_t)y * es, (const char *)D + (size_t)src * es,
                       (size_t)inner * es);
            }
            y += inner;
        }
    return DQG_OK;
}

static void gather_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "axis=%d", op->attrs.gather.axis);
}

const dqg_op_def dqg_op_def_gather = {
    .kind = DQG_OP_GATHER,
    .name = KIND,
    .reference = gather_reference,
    .format_attrs = gather_format,
};
