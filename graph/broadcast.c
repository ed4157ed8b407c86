/* Element-wise binary ops with NumPy broadcasting (shared by Add and Mul):
 * the builder's checks and the reference loop. */
#include "graph/dtype.h"
#include "graph/graph_internal.h"

/* Floats, and the 8/16/32/64-bit integers (which wrap around, as in
 * ONNX; s64 is the type of shape computations). */
static const dqg_dtype binary_types[] = {DQG_F32, DQG_F16, DQG_BF16, DQG_U8,  DQG_S8,
                                         DQG_U16, DQG_S16, DQG_U32,  DQG_S32, DQG_S64};
#define N_BINARY_TYPES ((int)(sizeof binary_types / sizeof binary_types[0]))

dqg_tensor_id dqg_binary_build(dqg_graph *g, dqg_op_kind kind, const char *name, dqg_tensor_id a,
                               dqg_tensor_id b)
{
    const char *k = dqg_op_kind_name(kind);
    if (!dqg_graph_can_build(g, k, name) || !dqg_graph_check_input(g, k, name, 0, "a", a, false) ||
        !dqg_graph_check_input(g, k, name, 1, "b", b, false) ||
        !dqg_check_dtype_in(g, k, name, 0, "a", a, binary_types, N_BINARY_TYPES) ||
        !dqg_check_dtype_in(g, k, name, 1, "b", b, binary_types, N_BINARY_TYPES) ||
        !dqg_check_same_dtype(g, k, name, a, b))
        return DQG_NONE;
    int64_t dims[1][DQG_MAX_RANK];
    int rank = dqg_broadcast_shapes(g, k, name, &g->tensors[a], &g->tensors[b], dims[0]);
    if (rank < 0)
        return DQG_NONE;
    dqg_dtype dt = g->tensors[a].dtype;
    int32_t op = dqg_graph_add_op(g, kind, name, 2, (dqg_tensor_id[]){a, b}, 1, &dt, &rank, dims);
    return op < 0 ? DQG_NONE : g->ops[op].outputs[0];
}

int64_t dqg_broadcast_offset(const dqg_tensor *t, const dqg_tensor *y, int64_t i)
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

void dqg_broadcast_strides(const dqg_tensor *t, int rank, int64_t *strides)
{
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int td = d - (rank - t->rank);
        int64_t dim = td >= 0 ? t->dims[td] : 1;
        strides[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
}

dqg_status dqg_binary_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v,
                                float (*fn)(float, float), uint64_t (*ifn)(uint64_t, uint64_t))
{
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const void *A = v->data[op->inputs[0]], *B = v->data[op->inputs[1]];
    void *Y = v->data[op->outputs[0]];
    if (dqg_dtype_is_integer(y->dtype)) {
        /* Modulo 2^64, then modulo 2^bits: the two's-complement wraparound. */
        int bits = dqg_dtype_bits(y->dtype);
        uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
        bool sgn = dqg_int_min(y->dtype) < 0;
        for (int64_t i = 0; i < y->nelems; i++) {
            uint64_t r = ifn((uint64_t)dqg_load_int(a->dtype, A, dqg_broadcast_offset(a, y, i)),
                             (uint64_t)dqg_load_int(b->dtype, B, dqg_broadcast_offset(b, y, i))) &
                         mask;
            int64_t s = sgn && (r >> (bits - 1)) ? (int64_t)(r | ~mask) : (int64_t)r;
            dqg_store_int(y->dtype, Y, i, s);
        }
        return DQG_OK;
    }
    for (int64_t i = 0; i < y->nelems; i++) {
        float r = fn(dqg_load_float(a->dtype, A, dqg_broadcast_offset(a, y, i)),
                     dqg_load_float(b->dtype, B, dqg_broadcast_offset(b, y, i)));
        dqg_store_float(y->dtype, Y, i, r);
    }
    return DQG_OK;
}

int dqg_broadcast_axis(const dqg_tensor *c, const dqg_tensor *out)
{
    if (c->rank > out->rank || c->nelems <= 1)
        return -1;
    int axis = -1;
    for (int i = 0; i < c->rank; i++) {
        int oi = i + (out->rank - c->rank);
        if (c->dims[i] == 1)
            continue;
        if (axis >= 0 || c->dims[i] != out->dims[oi])
            return -1;
        axis = oi;
    }
    return axis;
}
