/* Element-wise binary ops with NumPy broadcasting (shared by Add and Mul):
 * the builder's checks and the reference loop. */
#include "graph/dtype.h"
#include "graph/graph_internal.h"

dqg_tensor_id dqg_binary_build(dqg_graph *g, dqg_op_kind kind, const char *name, dqg_tensor_id a,
                               dqg_tensor_id b)
{
    const char *k = dqg_op_kind_name(kind);
    if (!dqg_graph_can_build(g, k, name) || !dqg_graph_check_input(g, k, name, 0, "a", a, false) ||
        !dqg_graph_check_input(g, k, name, 1, "b", b, false) ||
        !dqg_check_float_dtype(g, k, name, 0, "a", a) ||
        !dqg_check_float_dtype(g, k, name, 1, "b", b) || !dqg_check_same_dtype(g, k, name, a, b))
        return DQG_NONE;
    int64_t dims[1][DQG_MAX_RANK];
    int rank = dqg_broadcast_shapes(g, k, name, &g->tensors[a], &g->tensors[b], dims[0]);
    if (rank < 0)
        return DQG_NONE;
    dqg_dtype dt = g->tensors[a].dtype;
    int32_t op = dqg_graph_add_op(g, kind, name, 2, (dqg_tensor_id[]){a, b}, 1, &dt, &rank, dims);
    return op < 0 ? DQG_NONE : g->ops[op].outputs[0];
}

/* Offset into operand t for output element i (output shape y). */
static int64_t broadcast_offset(const dqg_tensor *t, const dqg_tensor *y, int64_t i)
{
    int64_t off = 0, stride = 1;
    for (int d = y->rank - 1; d >= 0; d--) {
        int64_t coord = i % y->dims[d];
        i /= y->dims[d];
        int td = d - (y->rank - t->rank);
        if (td >= 0) {
            if (t->dims[td] != 1)
                off += coord * stride;
            stride *= t->dims[td];
        }
    }
    return off;
}

dqg_status dqg_binary_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v,
                                float (*fn)(float, float))
{
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const void *A = v->data[op->inputs[0]], *B = v->data[op->inputs[1]];
    void *Y = v->data[op->outputs[0]];
    for (int64_t i = 0; i < y->nelems; i++) {
        float r = fn(dqg_load_float(a->dtype, A, broadcast_offset(a, y, i)),
                     dqg_load_float(b->dtype, B, broadcast_offset(b, y, i)));
        dqg_store_float(y->dtype, Y, i, r);
    }
    return DQG_OK;
}
