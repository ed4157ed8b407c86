/* Slice: a strided window of x along some of its axes, with ONNX's rules
 * for negative and out-of-range starts and ends. Any data type (4-bit
 * types element by element). */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Slice"

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

dqg_tensor_id dqg_slice(dqg_graph *g, const char *name, dqg_tensor_id x, int n, const int64_t *axes,
                        const int64_t *starts, const int64_t *ends, const int64_t *steps)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *t = &g->tensors[x];
    if (n < 0 || n > t->rank || (n > 0 && (!starts || !ends)))
        return dqg_graph_fail(
            g, DQG_INVALID_ARGUMENT, KIND " '%s': %d axes%s for an input of rank %d", shown, n,
            n > 0 && (!starts || !ends) ? " without starts or ends" : "", t->rank);
    int64_t start[DQG_MAX_RANK], step[DQG_MAX_RANK], dims[1][DQG_MAX_RANK];
    bool seen[DQG_MAX_RANK] = {false};
    for (int d = 0; d < t->rank; d++) {
        start[d] = 0;
        step[d] = 1;
        dims[0][d] = t->dims[d];
    }
    for (int i = 0; i < n; i++) {
        int64_t a = axes ? axes[i] : i;
        if (a < -t->rank || a >= t->rank)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': axis %lld is outside [-%d, %d)", shown, (long long)a,
                                  t->rank, t->rank);
        if (a < 0)
            a += t->rank;
        if (seen[a])
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': axis %lld is given twice",
                                  shown, (long long)a);
        seen[a] = true;
        int64_t dim = t->dims[a], s = starts[i], e = ends[i], st = steps ? steps[i] : 1;
        if (st == 0)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': step %d (axis %lld) is 0",
                                  shown, i, (long long)a);
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        int64_t count;
        if (st > 0) {
            s = clamp(s, 0, dim);
            e = clamp(e, 0, dim);
            count = e > s ? (e - s - 1) / st + 1 : 0;
        } else {
            s = clamp(s, 0, dim - 1);
            e = clamp(e, -1, dim - 1);
            /* -st as unsigned: st may be INT64_MIN. */
            count = s > e ? (int64_t)((uint64_t)(s - e - 1) / (0 - (uint64_t)st)) + 1 : 0;
        }
        if (count == 1)
            st = 1; /* one element: the step no longer matters (and no kernel sees 2^63) */
        if (count == 0)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': axis %lld selects no element (start %lld, end "
                                       "%lld, step %lld of %lld); dqgraph has no empty tensors",
                                  shown, (long long)a, (long long)starts[i], (long long)ends[i],
                                  (long long)st, (long long)dim);
        start[a] = s;
        step[a] = st;
        dims[0][a] = count;
    }
    dqg_dtype dt = t->dtype;
    int rank = t->rank;
    int32_t o = dqg_graph_add_op(g, DQG_OP_SLICE, name, 1, &x, 1, &dt, &rank, dims);
    if (o < 0)
        return DQG_NONE;
    memcpy(g->ops[o].attrs.slice.start, start, sizeof start);
    memcpy(g->ops[o].attrs.slice.step, step, sizeof step);
    for (int d = rank; d < DQG_MAX_RANK; d++) {
        g->ops[o].attrs.slice.start[d] = 0;
        g->ops[o].attrs.slice.step[d] = 0;
    }
    return g->ops[o].outputs[0];
}

/* Source element of output element i. */
static int64_t source_index(const dqg_op *op, const dqg_tensor *x, const dqg_tensor *y, int64_t i)
{
    int64_t src = 0, stride = 1;
    for (int d = y->rank - 1; d >= 0; d--) {
        int64_t c = i % y->dims[d];
        i /= y->dims[d];
        src += (op->attrs.slice.start[d] + c * op->attrs.slice.step[d]) * stride;
        stride *= x->dims[d];
    }
    return src;
}

static dqg_status slice_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    int bits = dqg_dtype_bits(x->dtype);
    for (int64_t i = 0; i < y->nelems; i++) {
        int64_t s = source_index(op, x, y, i);
        if (bits == 4)
            dqg_nibble_set(Y, i, dqg_nibble_get(X, s));
        else
            memcpy((char *)Y + i * (bits / 8), (const char *)X + s * (bits / 8), (size_t)bits / 8);
    }
    return DQG_OK;
}

static void slice_format(const dqg_op *op, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int d = 0; d < DQG_MAX_RANK && op->attrs.slice.step[d] != 0 && n < size; d++) {
        int w =
            snprintf(buf + n, size - n, "%sstart%d=%lld step%d=%lld", d ? " " : "", d,
                     (long long)op->attrs.slice.start[d], d, (long long)op->attrs.slice.step[d]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

const dqg_op_def dqg_op_def_slice = {
    .kind = DQG_OP_SLICE,
    .name = KIND,
    .reference = slice_reference,
    .format_attrs = slice_format,
};
