/* CumSum and TopK (ONNX): running sums along an axis, and the k largest or
 * smallest elements along an axis with their indices. The references are
 * allocation-free: CumSum sums in double (integers modulo 2^64, wrapped to
 * the type), TopK selects element by element in a total order (value, NaN
 * above every number, then index). */
#include <math.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

/* Outer, axis and inner extents of x around `axis`. */
static void extents(const dqg_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        *inner *= x->dims[d];
    *n = x->dims[axis];
}

static bool axis_ok(dqg_graph *g, const char *kind, const char *name, const dqg_tensor *t,
                    int *axis)
{
    if (t->rank < 1 || *axis < -t->rank || *axis >= t->rank) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': axis %d is outside [-%d, %d) for an input of rank %d", kind,
                       dqg_op_display_name(name), *axis, t->rank, t->rank, t->rank);
        return false;
    }
    if (*axis < 0)
        *axis += t->rank;
    return true;
}

static const dqg_dtype cumsum_types[] = {DQG_F32, DQG_F16, DQG_BF16, DQG_S8,  DQG_U8,
                                         DQG_S16, DQG_U16, DQG_S32,  DQG_U32, DQG_S64};

dqg_tensor_id dqg_cumsum(dqg_graph *g, const char *name, dqg_tensor_id x, int axis, bool exclusive,
                         bool reverse)
{
    if (!dqg_graph_can_build(g, "CumSum", name) ||
        !dqg_graph_check_input(g, "CumSum", name, 0, "x", x, false) ||
        !dqg_check_dtype_in(g, "CumSum", name, 0, "x", x, cumsum_types,
                            (int)(sizeof cumsum_types / sizeof cumsum_types[0])) ||
        !axis_ok(g, "CumSum", name, &g->tensors[x], &axis))
        return DQG_NONE;
    int32_t o = dqg_graph_add_op_like(g, DQG_OP_CUMSUM, name, 1, &x);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.cumsum.axis = axis;
    g->ops[o].attrs.cumsum.exclusive = exclusive;
    g->ops[o].attrs.cumsum.reverse = reverse;
    return g->ops[o].outputs[0];
}

static dqg_status cumsum_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    int64_t outer, n, inner;
    extents(x, op->attrs.cumsum.axis, &outer, &n, &inner);
    bool integer = dqg_dtype_is_integer(x->dtype), excl = op->attrs.cumsum.exclusive;
    int bits = dqg_dtype_bits(x->dtype);
    uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    bool sgn = dqg_int_min(x->dtype) < 0 && integer;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = 0.0;
            uint64_t iacc = 0;
            for (int64_t s = 0; s < n; s++) {
                int64_t k = op->attrs.cumsum.reverse ? n - 1 - s : s;
                int64_t at = (o * n + k) * inner + i;
                if (integer) {
                    uint64_t e = (uint64_t)dqg_load_int(x->dtype, X, at);
                    if (!excl)
                        iacc += e;
                    uint64_t r = iacc & mask;
                    dqg_store_int(x->dtype, Y, at,
                                  sgn && (r >> (bits - 1)) ? (int64_t)(r | ~mask) : (int64_t)r);
                    if (excl)
                        iacc += e;
                } else {
                    double e = dqg_load_double(x->dtype, X, at);
                    if (!excl)
                        acc += e;
                    dqg_store_float(x->dtype, Y, at, (float)acc);
                    if (excl)
                        acc += e;
                }
            }
        }
    return DQG_OK;
}

static void cumsum_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "axis=%d exclusive=%d reverse=%d", op->attrs.cumsum.axis,
             (int)op->attrs.cumsum.exclusive, (int)op->attrs.cumsum.reverse);
}

const dqg_op_def dqg_op_def_cumsum = {
    .kind = DQG_OP_CUMSUM,
    .name = "CumSum",
    .reference = cumsum_reference,
    .format_attrs = cumsum_format,
};

dqg_tensor_id dqg_topk(dqg_graph *g, const char *name, dqg_tensor_id x, int64_t k, int axis,
                       bool largest, dqg_tensor_id *indices)
{
    if (indices)
        *indices = DQG_NONE;
    if (!dqg_graph_can_build(g, "TopK", name) ||
        !dqg_graph_check_input(g, "TopK", name, 0, "x", x, false))
        return DQG_NONE;
    const dqg_tensor *t = &g->tensors[x];
    if (dqg_dtype_bits(t->dtype) == 4 || t->dtype == DQG_BOOL)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "TopK '%s': input 0 (x) is %s; 4-bit and bool tensors are not "
                              "supported",
                              dqg_op_display_name(name), dqg_dtype_name(t->dtype));
    if (!axis_ok(g, "TopK", name, t, &axis))
        return DQG_NONE;
    if (k < 1 || k > t->dims[axis])
        return dqg_graph_fail(
            g, DQG_INVALID_ARGUMENT, "TopK '%s': k %lld is outside [1, %lld], the size of axis %d",
            dqg_op_display_name(name), (long long)k, (long long)t->dims[axis], axis);
    int64_t dims[2][DQG_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        dims[0][d] = dims[1][d] = d == axis ? k : t->dims[d];
    dqg_dtype dt[2] = {t->dtype, DQG_S64};
    int ranks[2] = {t->rank, t->rank};
    int32_t o = dqg_graph_add_op(g, DQG_OP_TOPK, name, 1, &x, 2, dt, ranks, dims);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.topk.k = k;
    g->ops[o].attrs.topk.axis = axis;
    g->ops[o].attrs.topk.largest = largest;
    if (indices)
        *indices = g->ops[o].outputs[1];
    return g->ops[o].outputs[0];
}

/* Whether (a, ia) comes before (b, ib): the larger value (the smaller,
 * without `largest`), NaN above every number, equal values by index. */
static bool before(double a, int64_t ia, double b, int64_t ib, bool largest)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) {
        if (na && nb)
            return ia < ib;
        return largest ? na : nb;
    }
    if (a != b)
        return largest ? a > b : a < b;
    return ia < ib;
}

static dqg_status topk_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    int64_t *I = v->data[op->outputs[1]];
    int64_t outer, n, inner, k = op->attrs.topk.k;
    extents(x, op->attrs.topk.axis, &outer, &n, &inner);
    bool largest = op->attrs.topk.largest;
    size_t es = (size_t)dqg_dtype_bits(x->dtype) / 8;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double prev = 0.0;
            int64_t prev_i = -1;
            for (int64_t j = 0; j < k; j++) {
                /* The first element after the previous pick in the order. */
                int64_t best = -1;
                double bv = 0.0;
                for (int64_t e = 0; e < n; e++) {
                    double ve = dqg_load_double(x->dtype, X, (o * n + e) * inner + i);
                    if (prev_i >= 0 && !before(prev, prev_i, ve, e, largest))
                        continue;
                    if (best < 0 || before(ve, e, bv, best, largest)) {
                        best = e;
                        bv = ve;
                    }
                }
                int64_t at = (o * k + j) * inner + i;
                memcpy((char *)Y + (size_t)at * es,
                       (const char *)X + (size_t)((o * n + best) * inner + i) * es, es);
                I[at] = best;
                prev = bv;
                prev_i = best;
            }
        }
    return DQG_OK;
}

static void topk_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "k=%lld axis=%d largest=%d", (long long)op->attrs.topk.k,
             op->attrs.topk.axis, (int)op->attrs.topk.largest);
}

const dqg_op_def dqg_op_def_topk = {
    .kind = DQG_OP_TOPK,
    .name = "TopK",
    .reference = topk_reference,
    .format_attrs = topk_format,
};
