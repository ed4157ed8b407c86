/* The reduction family: Sum, Mean, Max, Min and Prod over a set of axes,
 * keeping them as 1 or dropping them. The reference accumulates in double
 * precision; Max and Min propagate NaN. */
#include <math.h>
#include <stdlib.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

static const char *const reduce_names[DQG_REDUCE_COUNT] = {
    [DQG_REDUCE_SUM] = "ReduceSum",   [DQG_REDUCE_MEAN] = "ReduceMean",
    [DQG_REDUCE_MAX] = "ReduceMax",   [DQG_REDUCE_MIN] = "ReduceMin",
    [DQG_REDUCE_PROD] = "ReduceProd",
};

dqg_tensor_id dqg_reduce(dqg_graph *g, const char *name, dqg_reduce_op op, dqg_tensor_id x,
                         int n_axes, const int64_t *axes, bool keepdims)
{
    const char *shown = dqg_op_display_name(name);
    if ((int)op < 0 || op >= DQG_REDUCE_COUNT) {
        if (!dqg_graph_can_build(g, "Reduce", name))
            return DQG_NONE;
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Reduce '%s': reduction %d is not one of dqg_reduce_op (0 to %d)",
                              shown, (int)op, DQG_REDUCE_COUNT - 1);
    }
    const char *kind = reduce_names[op];
    if (!dqg_graph_can_build(g, kind, name) ||
        !dqg_graph_check_input(g, kind, name, 0, "x", x, false) ||
        !dqg_check_float_dtype(g, kind, name, 0, "x", x))
        return DQG_NONE;
    const dqg_tensor *t = &g->tensors[x];
    if (n_axes < 0 || n_axes > t->rank || (n_axes > 0 && !axes))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': %d axes%s for an input of rank %d",
                              kind, shown, n_axes, n_axes > 0 && !axes ? " (NULL list)" : "",
                              t->rank);
    uint32_t mask = 0;
    for (int i = 0; i < n_axes; i++) {
        int64_t a = axes[i];
        if (a < -t->rank || a >= t->rank)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': axis %lld is outside [-%d, %d)", kind, shown,
                                  (long long)a, t->rank, t->rank);
        if (a < 0)
            a += t->rank;
        if (mask & (1u << a))
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': axis %lld is given twice",
                                  kind, shown, (long long)a);
        mask |= 1u << a;
    }
    if (n_axes == 0)
        mask = t->rank ? (1u << t->rank) - 1 : 0;
    int64_t dims[1][DQG_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < t->rank; i++) {
        if (!(mask & (1u << i)))
            dims[0][rank++] = t->dims[i];
        else if (keepdims)
            dims[0][rank++] = 1;
    }
    dqg_dtype dt = t->dtype;
    int32_t o = dqg_graph_add_op(g, DQG_OP_REDUCE, name, 1, &x, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.reduce.op = op;
    g->ops[o].attrs.reduce.axes = mask;
    g->ops[o].attrs.reduce.keepdims = keepdims;
    return g->ops[o].outputs[0];
}

static dqg_status reduce_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    uint32_t mask = op->attrs.reduce.axes;
    dqg_reduce_op r = op->attrs.reduce.op;
    int64_t count = y->nelems ? x->nelems / y->nelems : 1;
    double *acc = calloc((size_t)y->nelems, sizeof *acc);
    if (!acc)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s '%s': out of memory", reduce_names[r],
                             dqg_op_display_name(op->name));
    for (int64_t j = 0; j < y->nelems; j++)
        acc[j] = r == DQG_REDUCE_MAX    ? -INFINITY
                 : r == DQG_REDUCE_MIN  ? INFINITY
                 : r == DQG_REDUCE_PROD ? 1.0
                                        : 0.0;
    /* Output index of each input element: its coordinates with the reduced
     * ones dropped (keepdims only inserts 1s, which do not change it). */
    for (int64_t i = 0; i < x->nelems; i++) {
        int64_t rem = i, j = 0, stride = 1;
        for (int d = x->rank - 1; d >= 0; d--) {
            int64_t c = rem % x->dims[d];
            rem /= x->dims[d];
            if (!(mask & (1u << d))) {
                j += c * stride;
                stride *= x->dims[d];
            }
        }
        double f = dqg_load_float(x->dtype, X, i);
        switch (r) {
        case DQG_REDUCE_MAX:
            acc[j] = isnan(f) || f > acc[j] ? f : acc[j];
            break;
        case DQG_REDUCE_MIN:
            acc[j] = isnan(f) || f < acc[j] ? f : acc[j];
            break;
        case DQG_REDUCE_PROD:
            acc[j] *= f;
            break;
        default:
            acc[j] += f;
            break;
        }
    }
    for (int64_t j = 0; j < y->nelems; j++) {
        double a = r == DQG_REDUCE_MEAN ? acc[j] / (double)count : acc[j];
        dqg_store_float(y->dtype, Y, j, (float)a);
    }
    free(acc);
    return DQG_OK;
}

static void reduce_format(const dqg_op *op, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s axes=", reduce_names[op->attrs.reduce.op]);
    for (int i = 0; i < DQG_MAX_RANK && n > 0 && (size_t)n < size; i++)
        if (op->attrs.reduce.axes & (1u << i))
            n += snprintf(buf + n, size - (size_t)n, "%d,", i);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n - 1, size - (size_t)n + 1, " keepdims=%d", op->attrs.reduce.keepdims);
}

const dqg_op_def dqg_op_def_reduce = {
    .kind = DQG_OP_REDUCE,
    .name = "Reduce",
    .reference = reduce_reference,
    .format_attrs = reduce_format,
};
