/* GatherND, ScatterND and ScatterElements (ONNX): slices of data addressed
 * by tuples of m indices (the last dimension of `indices`), read out
 * (GatherND, with leading batch dimensions) or written in (ScatterND,
 * replacing or combining), and elements written along one axis
 * (ScatterElements, GatherElements' inverse). Whole-byte types; indices s32
 * or s64, negative ones counting from the end, checked element by element
 * (constant ones when built). */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

static const dqg_dtype index_types[] = {DQG_S32, DQG_S64};

/* Every index tuple of `ix` against the dimensions dims[first..first+m):
 * DQG_INVALID_ARGUMENT naming the element outside its axis. */
static dqg_status check_tuples(const dqg_op *op, const dqg_tensor *ix, const void *I,
                               const int64_t *dims, int first)
{
    int64_t m = ix->dims[ix->rank - 1];
    for (int64_t e = 0; e < ix->nelems; e++) {
        int64_t v = dqg_load_int(ix->dtype, I, e), dim = dims[first + e % m];
        if (v < -dim || v >= dim)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "%s '%s': input 1 (indices) element %lld is %lld, outside "
                                 "[-%lld, %lld) for axis %lld of input 0 (data)",
                                 dqg_op_kind_name(op->kind), dqg_op_display_name(op->name),
                                 (long long)e, (long long)v, (long long)dim, (long long)dim,
                                 (long long)(first + e % m));
    }
    return DQG_OK;
}

/* The shared rules: data of whole bytes, indices of rank >= 1 whose last
 * dimension m fits data past the batch dimensions. */
static bool nd_inputs(dqg_graph *g, const char *kind, const char *name, dqg_tensor_id data,
                      dqg_tensor_id indices, int batch)
{
    if (!dqg_graph_can_build(g, kind, name) ||
        !dqg_graph_check_input(g, kind, name, 0, "data", data, false) ||
        !dqg_graph_check_input(g, kind, name, 1, "indices", indices, false) ||
        !dqg_check_dtype_in(g, kind, name, 1, "indices", indices, index_types, 2))
        return false;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *d = &g->tensors[data], *ix = &g->tensors[indices];
    if (dqg_dtype_bits(d->dtype) % 8 != 0) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': input 0 (data) is %s; the 4-bit types are not supported", kind,
                       shown, dqg_dtype_name(d->dtype));
        return false;
    }
    int64_t m = ix->rank >= 1 ? ix->dims[ix->rank - 1] : 0;
    if (ix->rank < 1 || d->rank < 1 || batch < 0 || batch >= ix->rank || batch >= d->rank ||
        m < 1 || batch + m > d->rank) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': input 1 (indices) of rank %d with tuples of %lld, batch_dims %d "
                       "and data of rank %d: the tuples must address data past its batch "
                       "dimensions",
                       kind, shown, ix->rank, (long long)m, batch, d->rank);
        return false;
    }
    for (int i = 0; i < batch; i++)
        if (ix->dims[i] != d->dims[i]) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': batch dimension %d is %lld in indices and %lld in data", kind,
                           shown, i, (long long)ix->dims[i], (long long)d->dims[i]);
            return false;
        }
    if (ix->kind == DQG_TENSOR_CONSTANT && ix->data) {
        dqg_op probe = {.kind =
                            strcmp(kind, "GatherND") == 0 ? DQG_OP_GATHER_ND : DQG_OP_SCATTER_ND,
                        .name = (char *)shown};
        if (check_tuples(&probe, ix, ix->data, d->dims, batch) != DQG_OK) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s", dqg_last_error());
            return false;
        }
    }
    return true;
}

dqg_tensor_id dqg_gather_nd(dqg_graph *g, const char *name, dqg_tensor_id data,
                            dqg_tensor_id indices, int batch_dims)
{
    if (!nd_inputs(g, "GatherND", name, data, indices, batch_dims))
        return DQG_NONE;
    const dqg_tensor *d = &g->tensors[data], *ix = &g->tensors[indices];
    int64_t m = ix->dims[ix->rank - 1], dims[1][DQG_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < ix->rank - 1; i++)
        dims[0][rank++] = ix->dims[i];
    for (int i = batch_dims + (int)m; i < d->rank; i++) {
        if (rank == DQG_MAX_RANK)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "GatherND '%s': the result would have rank above %d",
                                  dqg_op_display_name(name), DQG_MAX_RANK);
        dims[0][rank++] = d->dims[i];
    }
    dqg_dtype dt = d->dtype;
    dqg_tensor_id ins[2] = {data, indices};
    int32_t o = dqg_graph_add_op(g, DQG_OP_GATHER_ND, name, 2, ins, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.gather_nd.batch_dims = batch_dims;
    return g->ops[o].outputs[0];
}

/* Offset in data (elements) of the slice tuple t (of m indices, for batch
 * position b) addresses, and the slice's length. */
static int64_t slice_offset(const dqg_tensor *d, const dqg_tensor *ix, const void *I, int batch,
                            int64_t b, int64_t t, int64_t *slice)
{
    int64_t m = ix->dims[ix->rank - 1], off = b;
    for (int64_t k = 0; k < m; k++) {
        int64_t dim = d->dims[batch + k], v = dqg_load_int(ix->dtype, I, t * m + k);
        off = off * dim + (v < 0 ? v + dim : v);
    }
    *slice = 1;
    for (int i = batch + (int)m; i < d->rank; i++)
        *slice *= d->dims[i];
    return off * *slice;
}

static dqg_status gather_nd_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *d = &g->tensors[op->inputs[0]], *ix = &g->tensors[op->inputs[1]];
    const void *D = v->data[op->inputs[0]], *I = v->data[op->inputs[1]];
    char *Y = v->data[op->outputs[0]];
    int batch = op->attrs.gather_nd.batch_dims;
    dqg_status st = check_tuples(op, ix, I, d->dims, batch);
    if (st != DQG_OK)
        return st;
    int64_t tuples = ix->nelems / ix->dims[ix->rank - 1], per_batch = tuples;
    for (int i = 0; i < batch; i++)
        per_batch /= ix->dims[i];
    size_t es = (size_t)dqg_dtype_bits(d->dtype) / 8;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t slice, off = slice_offset(d, ix, I, batch, t / per_batch, t, &slice);
        memcpy(Y + (size_t)(t * slice) * es, (const char *)D + (size_t)off * es,
               (size_t)slice * es);
    }
    return DQG_OK;
}

static void gather_nd_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "batch_dims=%d", op->attrs.gather_nd.batch_dims);
}

const dqg_op_def dqg_op_def_gather_nd = {
    .kind = DQG_OP_GATHER_ND,
    .name = "GatherND",
    .reference = gather_nd_reference,
    .format_attrs = gather_nd_format,
};

static const char *const reduction_names[] = {"none", "add", "mul", "max", "min"};

dqg_tensor_id dqg_scatter_nd(dqg_graph *g, const char *name, dqg_tensor_id data,
                             dqg_tensor_id indices, dqg_tensor_id updates,
                             dqg_scatter_reduction reduction)
{
    if (!nd_inputs(g, "ScatterND", name, data, indices, 0) ||
        !dqg_graph_check_input(g, "ScatterND", name, 2, "updates", updates, false) ||
        !dqg_check_same_dtype(g, "ScatterND", name, data, updates))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *d = &g->tensors[data], *ix = &g->tensors[indices], *u = &g->tensors[updates];
    if ((int)reduction < 0 || reduction >= DQG_SCATTER_REDUCTION_COUNT)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "ScatterND '%s': reduction %d is not one of dqg_scatter_reduction",
                              shown, (int)reduction);
    if (reduction != DQG_SCATTER_NONE && d->dtype == DQG_BOOL)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "ScatterND '%s': reduction '%s' on bool tensors", shown,
                              reduction_names[reduction]);
    /* updates: indices.shape[:-1] + data.shape[m:]. */
    int64_t m = ix->dims[ix->rank - 1], want[DQG_MAX_RANK + DQG_MAX_RANK];
    int n = 0;
    for (int i = 0; i < ix->rank - 1; i++)
        want[n++] = ix->dims[i];
    for (int i = (int)m; i < d->rank; i++)
        want[n++] = d->dims[i];
    bool ok = u->rank == n || (n == 0 && u->rank == 1 && u->dims[0] == 1);
    for (int i = 0; i < n && ok; i++)
        ok = u->dims[i] == want[i];
    if (!ok) {
        char su[DQG_DIMS_BUF], sw[DQG_DIMS_BUF];
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "ScatterND '%s': input 2 (updates) has shape %s; indices and data "
                              "need %s",
                              shown, dqg_format_dims(su, sizeof su, u->rank, u->dims),
                              n > DQG_MAX_RANK ? "a rank above 8"
                                               : dqg_format_dims(sw, sizeof sw, n, want));
    }
    dqg_tensor_id ins[3] = {data, indices, updates};
    dqg_dtype dt = d->dtype;
    int rank = d->rank;
    int64_t dims[1][DQG_MAX_RANK];
    memcpy(dims[0], d->dims, sizeof dims[0]);
    int32_t o = dqg_graph_add_op(g, DQG_OP_SCATTER_ND, name, 3, ins, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.scatter.reduction = reduction;
    return g->ops[o].outputs[0];
}

/* Y[at] = Y[at] combined with U[from] by r (integers modulo 2^bits). */
static void combine(dqg_dtype t, dqg_scatter_reduction r, void *Y, int64_t at, const void *U,
                    int64_t from)
{
    if (r == DQG_SCATTER_NONE) {
        size_t es = (size_t)dqg_dtype_bits(t) / 8;
        memcpy((char *)Y + (size_t)at * es, (const char *)U + (size_t)from * es, es);
    } else if (dqg_dtype_is_integer(t)) {
        int bits = dqg_dtype_bits(t);
        uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
        int64_t a = dqg_load_int(t, Y, at), b = dqg_load_int(t, U, from);
        uint64_t res = r == DQG_SCATTER_ADD   ? (uint64_t)a + (uint64_t)b
                       : r == DQG_SCATTER_MUL ? (uint64_t)a * (uint64_t)b
                       : r == DQG_SCATTER_MAX ? (uint64_t)(a > b ? a : b)
                                              : (uint64_t)(a < b ? a : b);
        res &= mask;
        bool neg = dqg_int_min(t) < 0 && (res >> (bits - 1));
        dqg_store_int(t, Y, at, neg ? (int64_t)(res | ~mask) : (int64_t)res);
    } else {
        float a = dqg_load_float(t, Y, at), b = dqg_load_float(t, U, from);
        float res = r == DQG_SCATTER_ADD   ? a + b
                    : r == DQG_SCATTER_MUL ? a * b
                    : r == DQG_SCATTER_MAX ? dqg_max_f(a, b)
                                           : dqg_min_f(a, b);
        dqg_store_float(t, Y, at, res);
    }
}

static dqg_status scatter_nd_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *d = &g->tensors[op->inputs[0]], *ix = &g->tensors[op->inputs[1]];
    const void *D = v->data[op->inputs[0]], *I = v->data[op->inputs[1]];
    const void *U = v->data[op->inputs[2]];
    void *Y = v->data[op->outputs[0]];
    dqg_status st = check_tuples(op, ix, I, d->dims, 0);
    if (st != DQG_OK)
        return st;
    size_t es = (size_t)dqg_dtype_bits(d->dtype) / 8;
    if (Y != D)
        memcpy(Y, D, (size_t)d->nelems * es);
    dqg_scatter_reduction r = op->attrs.scatter.reduction;
    int64_t tuples = ix->nelems / ix->dims[ix->rank - 1];
    for (int64_t t = 0; t < tuples; t++) {
        int64_t slice, off = slice_offset(d, ix, I, 0, 0, t, &slice);
        for (int64_t k = 0; k < slice; k++)
            combine(d->dtype, r, Y, off + k, U, t * slice + k);
    }
    return DQG_OK;
}

static void scatter_nd_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "reduction=%s", reduction_names[op->attrs.scatter.reduction]);
}

const dqg_op_def dqg_op_def_scatter_nd = {
    .kind = DQG_OP_SCATTER_ND,
    .name = "ScatterND",
    .reference = scatter_nd_reference,
    .format_attrs = scatter_nd_format,
};

dqg_tensor_id dqg_scatter_elements(dqg_graph *g, const char *name, dqg_tensor_id data,
                                   dqg_tensor_id indices, dqg_tensor_id updates, int axis,
                                   dqg_scatter_reduction reduction)
{
    const char *kind = "ScatterElements";
    if (!dqg_graph_can_build(g, kind, name) ||
        !dqg_graph_check_input(g, kind, name, 0, "data", data, false) ||
        !dqg_graph_check_input(g, kind, name, 1, "indices", indices, false) ||
        !dqg_graph_check_input(g, kind, name, 2, "updates", updates, false) ||
        !dqg_check_dtype_in(g, kind, name, 1, "indices", indices, index_types, 2) ||
        !dqg_check_same_dtype(g, kind, name, data, updates))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *d = &g->tensors[data], *ix = &g->tensors[indices], *u = &g->tensors[updates];
    if (dqg_dtype_bits(d->dtype) % 8 != 0 || d->rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': input 0 (data) is a %s tensor of rank %d; it must be of "
                              "whole bytes and rank >= 1",
                              kind, shown, dqg_dtype_name(d->dtype), d->rank);
    if ((int)reduction < 0 || reduction >= DQG_SCATTER_REDUCTION_COUNT ||
        (reduction != DQG_SCATTER_NONE && d->dtype == DQG_BOOL))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': reduction %d is not one of dqg_scatter_reduction for %s",
                              kind, shown, (int)reduction, dqg_dtype_name(d->dtype));
    if (axis < -d->rank || axis >= d->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': axis %d is outside [-%d, %d)",
                              kind, shown, axis, d->rank, d->rank);
    int ax = axis < 0 ? axis + d->rank : axis;
    bool ok = ix->rank == d->rank && u->rank == ix->rank;
    for (int i = 0; i < d->rank && ok; i++)
        ok = u->dims[i] == ix->dims[i] && (i == ax || ix->dims[i] <= d->dims[i]);
    if (!ok) {
        char sd[DQG_DIMS_BUF], si[DQG_DIMS_BUF], su[DQG_DIMS_BUF];
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': indices %s and updates %s must have one shape, of data's "
                              "rank and at most data's dimensions %s off axis %d",
                              kind, shown, dqg_format_dims(si, sizeof si, ix->rank, ix->dims),
                              dqg_format_dims(su, sizeof su, u->rank, u->dims),
                              dqg_format_dims(sd, sizeof sd, d->rank, d->dims), ax);
    }
    if (ix->kind == DQG_TENSOR_CONSTANT && ix->data) {
        dqg_op probe = {.kind = DQG_OP_SCATTER_ELEMENTS, .name = (char *)shown};
        probe.attrs.gather.axis = ax;
        if (dqg_gather_check_indices(&probe, ix, ix->data, d->dims[ax]) != DQG_OK)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s", dqg_last_error());
    }
    dqg_tensor_id ins[3] = {data, indices, updates};
    dqg_dtype dt = d->dtype;
    int rank = d->rank;
    int64_t dims[1][DQG_MAX_RANK];
    memcpy(dims[0], d->dims, sizeof dims[0]);
    int32_t o = dqg_graph_add_op(g, DQG_OP_SCATTER_ELEMENTS, name, 3, ins, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.scatter.reduction = reduction;
    g->ops[o].attrs.scatter.axis = ax;
    return g->ops[o].outputs[0];
}

static dqg_status scatter_elements_reference(const dqg_graph *g, const dqg_op *op,
                                             dqg_ref_values *v)
{
    const dqg_tensor *d = &g->tensors[op->inputs[0]], *ix = &g->tensors[op->inputs[1]];
    const void *D = v->data[op->inputs[0]], *I = v->data[op->inputs[1]];
    const void *U = v->data[op->inputs[2]];
    void *Y = v->data[op->outputs[0]];
    int ax = op->attrs.scatter.axis;
    int64_t dim = d->dims[ax];
    dqg_op probe = *op;
    probe.attrs.gather.axis = ax;
    dqg_status st = dqg_gather_check_indices(&probe, ix, I, dim);
    if (st != DQG_OK)
        return st;
    size_t es = (size_t)dqg_dtype_bits(d->dtype) / 8;
    if (Y != D)
        memcpy(Y, D, (size_t)d->nelems * es);
    int64_t ds[DQG_MAX_RANK];
    dqg_strides(d->rank, d->dims, ds);
    for (int64_t i = 0; i < ix->nelems; i++) {
        int64_t j = dqg_load_int(ix->dtype, I, i);
        if (j < 0)
            j += dim;
        int64_t rem = i, at = 0;
        for (int k = ix->rank - 1; k >= 0; k--) {
            int64_t c = rem % ix->dims[k];
            rem /= ix->dims[k];
            at += (k == ax ? j : c) * ds[k];
        }
        combine(d->dtype, op->attrs.scatter.reduction, Y, at, U, i);
    }
    return DQG_OK;
}

static void scatter_elements_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "axis=%d reduction=%s", op->attrs.scatter.axis,
             reduction_names[op->attrs.scatter.reduction]);
}

const dqg_op_def dqg_op_def_scatter_elements = {
    .kind = DQG_OP_SCATTER_ELEMENTS,
    .name = "ScatterElements",
    .reference = scatter_elements_reference,
    .format_attrs = scatter_elements_format,
};
