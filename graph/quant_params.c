/* Shared by the dequantize and quantize front doors: resolving the
 * granularity (per-tensor, per-axis, blocked, element-wise) from the scale's
 * shape, the attributes' range rules, and the scale index of an element. */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

bool dqg_resolve_granularity(dqg_graph *g, const dqg_quant_request *r, dqg_quant_attrs *q)
{
    const dqg_tensor *x = &g->tensors[r->x], *s = &g->tensors[r->scale];
    const char *L = r->label, *N = dqg_op_display_name(r->name);
    char sx[DQG_DIMS_BUF], ss[DQG_DIMS_BUF];
    dqg_format_dims(sx, sizeof sx, x->rank, x->dims);
    dqg_format_dims(ss, sizeof ss, s->rank, s->dims);
    int64_t axis = r->has_axis ? r->axis : 1;
    bool per_tensor = s->rank == 0 || (s->rank == 1 && s->dims[0] == 1 && r->block_size == 0);
    q->block_size = 0;
    if (r->elementwise) {
        if (s->rank != x->rank || memcmp(s->dims, x->dims, sizeof(int64_t) * (size_t)x->rank)) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': input 1 (scale): shape %s differs from x's shape %s; the "
                           "element-wise form needs identical sizes",
                           L, N, ss, sx);
            return false;
        }
        q->granularity = DQG_ELEMENTWISE;
        q->axis = 0;
    } else if (r->block_size != 0) {
        if (!r->allow_blocked) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': block_size is not an attribute "
                           "before opset 21",
                           L, N);
            return false;
        }
        if (r->block_size < 0) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': block_size %lld must be positive", L,
                           N, (long long)r->block_size);
            return false;
        }
        if (s->rank != x->rank) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': input 1 (scale): blocked quantization needs a scale of x's "
                           "rank %d, got shape %s",
                           L, N, x->rank, ss);
            return false;
        }
        if (axis < -x->rank || axis >= x->rank) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': axis %lld is outside [%d, %d]", L, N,
                           (long long)axis, -x->rank, x->rank - 1);
            return false;
        }
        int a = (int)(axis < 0 ? axis + x->rank : axis);
        for (int i = 0; i < x->rank; i++)
            if (i != a && s->dims[i] != x->dims[i]) {
                dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                               "%s '%s': input 1 (scale): shape %s must equal x's shape %s "
                               "except on axis %d (dimension %d differs)",
                               L, N, ss, sx, a, i);
                return false;
            }
        int64_t D = x->dims[a], S = s->dims[a], B = r->block_size;
        int64_t lo = (D + S - 1) / S;
        int64_t hi = S == 1 ? INT64_MAX : (D + S - 2) / (S - 1) - 1;
        if (B < lo || B > hi) {
            if (S == 1)
                dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                               "%s '%s': block_size %lld is below %lld for axis %d (dim %lld, "
                               "scale dim 1)",
                               L, N, (long long)B, (long long)lo, a, (long long)D);
            else
                dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                               "%s '%s': block_size %lld is outside [%lld, %lld] for axis %d (dim "
                               "%lld, scale dim %lld)",
                               L, N, (long long)B, (long long)lo, (long long)hi, a, (long long)D,
                               (long long)S);
            return false;
        }
        q->granularity = DQG_BLOCKED;
        q->axis = a;
        q->block_size = B;
    } else if (per_tensor) {
        q->granularity = DQG_PER_TENSOR;
        q->axis = 0;
    } else if (s->rank == 1) {
        if (r->scalar_only) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': input 1 (scale): must be a scalar (per-tensor) before opset "
                           "13, got shape %s",
                           L, N, ss);
            return false;
        }
        if (axis < -x->rank || axis >= x->rank) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': axis %lld is outside [%d, %d]", L, N,
                           (long long)axis, -x->rank, x->rank - 1);
            return false;
        }
        int a = (int)(axis < 0 ? axis + x->rank : axis);
        if (s->dims[0] != x->dims[a]) {
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': input 1 (scale): per-axis length %lld differs from x's "
                           "dimension %lld on axis %d",
                           L, N, (long long)s->dims[0], (long long)x->dims[a], a);
            return false;
        }
        q->granularity = DQG_PER_AXIS;
        q->axis = a;
    } else {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': input 1 (scale): shape %s is neither a scalar, a 1-D per-axis "
                       "scale%s",
                       L, N, ss, r->allow_blocked ? ", nor a blocked scale (block_size is 0)" : "");
        return false;
    }
    if (r->zp != DQG_NONE) {
        const dqg_tensor *z = &g->tensors[r->zp];
        if (z->rank != s->rank || memcmp(z->dims, s->dims, sizeof(int64_t) * (size_t)s->rank)) {
            char sz[DQG_DIMS_BUF];
            dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                           "%s '%s': input 2 (zero point): shape %s differs from the scale's "
                           "shape %s",
                           L, N, dqg_format_dims(sz, sizeof sz, z->rank, z->dims), ss);
            return false;
        }
    }
    return true;
}

void dqg_quant_index_init(dqg_quant_index *ix, const dqg_tensor *x, const dqg_tensor *scale,
                          const dqg_quant_attrs *q)
{
    memset(ix, 0, sizeof *ix);
    ix->granularity = q->granularity;
    ix->rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        ix->dims[i] = x->dims[i];
    int64_t inner = 1;
    for (int i = q->axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    ix->inner = inner;
    ix->axis_dim = x->rank ? x->dims[q->axis] : 1;
    ix->axis = q->axis;
    ix->block = q->block_size;
    if (q->granularity == DQG_BLOCKED)
        dqg_strides(scale->rank, scale->dims, ix->scale_strides);
}

int64_t dqg_quant_scale_index(const dqg_quant_index *ix, int64_t i)
{
    switch (ix->granularity) {
    case DQG_PER_TENSOR:
        return 0;
    case DQG_PER_AXIS:
        return (i / ix->inner) % ix->axis_dim;
    case DQG_ELEMENTWISE:
        return i;
    case DQG_BLOCKED: {
        int64_t s = 0;
        for (int d = ix->rank - 1; d >= 0; d--) {
            int64_t c = i % ix->dims[d];
            i /= ix->dims[d];
            if (d == ix->axis)
                c /= ix->block;
            s += c * ix->scale_strides[d];
        }
        return s;
    }
    }
    return 0;
}

int dqg_onnx_schema_version(int opset, const int *versions, int n)
{
    for (int i = 0; i < n; i++)
        if (opset >= versions[i])
            return versions[i];
    return 0;
}

dqg_tensor_id dqg_emit_quant_op(dqg_graph *g, dqg_op_kind kind, const char *name, dqg_tensor_id x,
                                dqg_tensor_id scale, dqg_tensor_id zp, const dqg_quant_attrs *q)
{
    const dqg_tensor *t = &g->tensors[x];
    int rank = t->rank;
    int64_t dims[1][DQG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[0][i] = t->dims[i];
    dqg_dtype out = q->out_dtype;
    int32_t op =
        dqg_graph_add_op(g, kind, name, 3, (dqg_tensor_id[]){x, scale, zp}, 1, &out, &rank, dims);
    if (op < 0)
        return DQG_NONE;
    g->ops[op].attrs.quant = *q;
    return g->ops[op].outputs[0];
}

int dqg_quant_axis_through(const dqg_graph *g, const dqg_op *op, int axis)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    if (axis < 0 || axis >= x->rank)
        return -1;
    if (op->kind == DQG_OP_TRANSPOSE) {
        for (int j = 0; j < y->rank; j++)
            if (op->attrs.transpose.perm[j] == axis)
                return j;
        return -1;
    }
    if (op->kind == DQG_OP_RESHAPE) {
        /* Row-major order is kept: the axis survives when every dimension
         * up to it is unchanged (the rest only regroups the inner block). */
        if (y->rank <= axis)
            return -1;
        for (int i = 0; i <= axis; i++)
            if (x->dims[i] != y->dims[i])
                return -1;
        return axis;
    }
    return -1;
}
