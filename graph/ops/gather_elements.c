/* GatherElements: y[i...] = data[i...] with the coordinate on one axis
 * taken from indices[i...] (ONNX GatherElements, as NumPy's
 * take_along_axis). y has the shape of indices, which has data's rank and,
 * on every other axis, at most data's dimension. Whole-byte data types;
 * indices s32 or s64, checked like Gather's. */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "GatherElements"

static const dqg_dtype index_types[] = {DQG_S32, DQG_S64};

dqg_tensor_id dqg_gather_elements(dqg_graph *g, const char *name, dqg_tensor_id data,
                                  dqg_tensor_id indices, int axis)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "data", data, false) ||
        !dqg_graph_check_input(g, KIND, name, 1, "indices", indices, false) ||
        !dqg_check_dtype_in(g, KIND, name, 1, "indices", indices, index_types, 2))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *d = &g->tensors[data], *ix = &g->tensors[indices];
    if (dqg_dtype_bits(d->dtype) % 8 != 0)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 (data): data type %s is not allowed; "
                                   "GatherElements takes types of whole bytes (not s4, u4 or "
                                   "f4e2m1)",
                              shown, dqg_dtype_name(d->dtype));
    if (d->rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 (data) is a scalar; it needs rank 1 or more",
                              shown);
    if (ix->rank != d->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 1 (indices) has rank %d; it must have data's "
                                   "rank, %d",
                              shown, ix->rank, d->rank);
    if (axis < -d->rank || axis >= d->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': axis %d is outside [-%d, %d) for input 0 (data)", shown,
                              axis, d->rank, d->rank);
    int ax = axis < 0 ? axis + d->rank : axis;
    for (int i = 0; i < d->rank; i++)
        if (i != ax && ix->dims[i] > d->dims[i]) {
            char sd[DQG_DIMS_BUF], si[DQG_DIMS_BUF];
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': input 1 (indices) of shape %s has dimension %d of "
                                       "%lld, above data's %lld (shape %s); only axis %d may be "
                                       "larger",
                                  shown, dqg_format_dims(si, sizeof si, ix->rank, ix->dims), i,
                                  (long long)ix->dims[i], (long long)d->dims[i],
                                  dqg_format_dims(sd, sizeof sd, d->rank, d->dims), ax);
        }
    /* Constant indices are checked now. */
    if (ix->kind == DQG_TENSOR_CONSTANT && ix->data) {
        dqg_op probe = {.kind = DQG_OP_GATHER_ELEMENTS, .name = (char *)shown};
        probe.attrs.gather.axis = ax;
        if (dqg_gather_check_indices(&probe, ix, ix->data, d->dims[ax]) != DQG_OK)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s", dqg_last_error());
    }
    dqg_dtype dt = d->dtype;
    int rank = ix->rank;
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[0][i] = ix->dims[i];
    int32_t o = dqg_graph_add_op(g, DQG_OP_GATHER_ELEMENTS, name, 2,
                                 (dqg_tensor_id[]){data, indices}, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.gather.axis = ax;
    return g->ops[o].outputs[0];
}

static dqg_status gather_elements_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *d = &g->tensors[op->inputs[0]], *ix = &g->tensors[op->inputs[1]];
    const char *D = v->data[op->inputs[0]];
    const void *I = v->data[op->inputs[1]];
    char *Y = v->data[op->outputs[0]];
    int ax = op->attrs.gather.axis;
    int64_t dim = d->dims[ax];
    dqg_status st = dqg_gather_check_indices(op, ix, I, dim);
    if (st != DQG_OK)
        return st;
    int64_t ds[DQG_MAX_RANK];
    dqg_strides(d->rank, d->dims, ds);
    size_t es = (size_t)dqg_dtype_bits(d->dtype) / 8;
    for (int64_t i = 0; i < ix->nelems; i++) {
        int64_t j = dqg_load_int(ix->dtype, I, i);
        if (j < 0)
            j += dim;
        int64_t rem = i, src = 0;
        for (int k = ix->rank - 1; k >= 0; k--) {
            int64_t c = rem % ix->dims[k];
            rem /= ix->dims[k];
            src += (k == ax ? j : c) * ds[k];
        }
        memcpy(Y + (size_t)i * es, D + (size_t)src * es, es);
    }
    return DQG_OK;
}

static void gather_elements_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "axis=%d", op->attrs.gather.axis);
}

const dqg_op_def dqg_op_def_gather_elements = {
    .kind = DQG_OP_GATHER_ELEMENTS,
    .name = KIND,
    .reference = gather_elements_reference,
    .format_attrs = gather_elements_format,
};
