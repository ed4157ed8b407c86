/* The element-wise ops with a bool result: the comparisons (Equal, Less,
 * LessOrEqual, Greater, GreaterOrEqual) of two tensors of one numeric type,
 * and the logical functions (And, Or, Xor of two bool tensors, Not of one),
 * with NumPy broadcasting. One op kind per family, the function an
 * attribute; messages name the function ("Equal 'name': ..."). Values
 * compare exactly: floats as floats (NaN is unordered), integers as
 * integers. */
#include "graph/dtype.h"
#include "graph/graph_internal.h"

static const char *const compare_names[DQG_COMPARE_COUNT] = {
    [DQG_COMPARE_EQUAL] = "Equal",
    [DQG_COMPARE_LESS] = "Less",
    [DQG_COMPARE_LESS_EQUAL] = "LessOrEqual",
    [DQG_COMPARE_GREATER] = "Greater",
    [DQG_COMPARE_GREATER_EQUAL] = "GreaterOrEqual",
};

static const char *const logical_names[DQG_LOGICAL_COUNT] = {
    [DQG_LOGICAL_AND] = "And",
    [DQG_LOGICAL_OR] = "Or",
    [DQG_LOGICAL_XOR] = "Xor",
    [DQG_LOGICAL_NOT] = "Not",
};

const char *dqg_compare_op_name(dqg_compare_op op)
{
    return ((int)op >= 0 && op < DQG_COMPARE_COUNT) ? compare_names[op] : "Unknown";
}

const char *dqg_logical_op_name(dqg_logical_op op)
{
    return ((int)op >= 0 && op < DQG_LOGICAL_COUNT) ? logical_names[op] : "Unknown";
}

/* The numeric types every comparison takes; Equal takes bool too (last). */
static const dqg_dtype compare_types[] = {DQG_F32, DQG_F16, DQG_BF16, DQG_S8,  DQG_U8,  DQG_S16,
                                          DQG_U16, DQG_S32, DQG_U32,  DQG_S64, DQG_BOOL};
#define N_COMPARE_TYPES ((int)(sizeof compare_types / sizeof compare_types[0]))
static const dqg_dtype bool_only[] = {DQG_BOOL};

/* Adds the op: a bool output of the broadcast shape of its inputs. */
static int32_t add_bool_op(dqg_graph *g, dqg_op_kind kind, const char *shown_kind, const char *name,
                           int n, const dqg_tensor_id *in)
{
    int64_t dims[1][DQG_MAX_RANK];
    int rank = g->tensors[in[0]].rank;
    for (int i = 0; i < rank; i++)
        dims[0][i] = g->tensors[in[0]].dims[i];
    if (n == 2 && (rank = dqg_broadcast_shapes(g, shown_kind, name, &g->tensors[in[0]],
                                               &g->tensors[in[1]], dims[0])) < 0)
        return -1;
    dqg_dtype dt = DQG_BOOL;
    return dqg_graph_add_op(g, kind, name, n, in, 1, &dt, &rank, dims);
}

dqg_tensor_id dqg_compare(dqg_graph *g, const char *name, dqg_compare_op op, dqg_tensor_id a,
                          dqg_tensor_id b)
{
    if ((int)op < 0 || op >= DQG_COMPARE_COUNT) {
        if (!dqg_graph_can_build(g, "Compare", name))
            return DQG_NONE;
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Compare '%s': comparison %d is not one of dqg_compare_op (0 to %d)",
                              dqg_op_display_name(name), (int)op, DQG_COMPARE_COUNT - 1);
    }
    const char *k = compare_names[op];
    /* Equal compares bools too (ONNX Equal-11); the orderings do not. */
    int nt = op == DQG_COMPARE_EQUAL ? N_COMPARE_TYPES : N_COMPARE_TYPES - 1;
    if (!dqg_graph_can_build(g, k, name) || !dqg_graph_check_input(g, k, name, 0, "a", a, false) ||
        !dqg_graph_check_input(g, k, name, 1, "b", b, false) ||
        !dqg_check_dtype_in(g, k, name, 0, "a", a, compare_types, nt) ||
        !dqg_check_dtype_in(g, k, name, 1, "b", b, compare_types, nt) ||
        !dqg_check_same_dtype(g, k, name, a, b))
        return DQG_NONE;
    int32_t o = add_bool_op(g, DQG_OP_COMPARE, k, name, 2, (dqg_tensor_id[]){a, b});
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.compare.op = op;
    return g->ops[o].outputs[0];
}

dqg_tensor_id dqg_logical(dqg_graph *g, const char *name, dqg_logical_op op, dqg_tensor_id a,
                          dqg_tensor_id b)
{
    if ((int)op < 0 || op >= DQG_LOGICAL_COUNT) {
        if (!dqg_graph_can_build(g, "Logical", name))
            return DQG_NONE;
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Logical '%s': function %d is not one of dqg_logical_op (0 to %d)",
                              dqg_op_display_name(name), (int)op, DQG_LOGICAL_COUNT - 1);
    }
    const char *k = logical_names[op];
    bool unary = op == DQG_LOGICAL_NOT;
    if (!dqg_graph_can_build(g, k, name) || !dqg_graph_check_input(g, k, name, 0, "a", a, false))
        return DQG_NONE;
    if (unary && b != DQG_NONE)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': input 1 (b) is tensor %d; Not takes one input, so b must "
                              "be DQG_NONE",
                              k, dqg_op_display_name(name), (int)b);
    if (!dqg_check_dtype_in(g, k, name, 0, "a", a, bool_only, 1) ||
        (!unary && (!dqg_graph_check_input(g, k, name, 1, "b", b, false) ||
                    !dqg_check_dtype_in(g, k, name, 1, "b", b, bool_only, 1))))
        return DQG_NONE;
    int32_t o = add_bool_op(g, DQG_OP_LOGICAL, k, name, unary ? 1 : 2, (dqg_tensor_id[]){a, b});
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.logical.op = op;
    return g->ops[o].outputs[0];
}

/* a OP b as IEEE compares floats: every comparison with a NaN is false. */
static bool compare_f(dqg_compare_op op, float a, float b)
{
    switch (op) {
    case DQG_COMPARE_EQUAL:
        return a == b;
    case DQG_COMPARE_LESS:
        return a < b;
    case DQG_COMPARE_LESS_EQUAL:
        return a <= b;
    case DQG_COMPARE_GREATER:
        return a > b;
    case DQG_COMPARE_GREATER_EQUAL:
        return a >= b;
    case DQG_COMPARE_COUNT:
        break;
    }
    return false;
}

static bool compare_i(dqg_compare_op op, int64_t a, int64_t b)
{
    switch (op) {
    case DQG_COMPARE_EQUAL:
        return a == b;
    case DQG_COMPARE_LESS:
        return a < b;
    case DQG_COMPARE_LESS_EQUAL:
        return a <= b;
    case DQG_COMPARE_GREATER:
        return a > b;
    case DQG_COMPARE_GREATER_EQUAL:
        return a >= b;
    case DQG_COMPARE_COUNT:
        break;
    }
    return false;
}

static dqg_status compare_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const void *A = v->data[op->inputs[0]], *B = v->data[op->inputs[1]];
    uint8_t *Y = v->data[op->outputs[0]];
    dqg_compare_op c = op->attrs.compare.op;
    bool fl = dqg_dtype_is_float(a->dtype);
    for (int64_t i = 0; i < y->nelems; i++) {
        int64_t ia = dqg_broadcast_offset(a, y, i), ib = dqg_broadcast_offset(b, y, i);
        Y[i] = fl ? compare_f(c, dqg_load_float(a->dtype, A, ia), dqg_load_float(b->dtype, B, ib))
                  : compare_i(c, dqg_load_int(a->dtype, A, ia), dqg_load_int(b->dtype, B, ib));
    }
    return DQG_OK;
}

static dqg_status logical_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const uint8_t *A = v->data[op->inputs[0]];
    uint8_t *Y = v->data[op->outputs[0]];
    dqg_logical_op f = op->attrs.logical.op;
    if (f == DQG_LOGICAL_NOT) {
        for (int64_t i = 0; i < y->nelems; i++)
            Y[i] = A[i] == 0;
        return DQG_OK;
    }
    const dqg_tensor *b = &g->tensors[op->inputs[1]];
    const uint8_t *B = v->data[op->inputs[1]];
    for (int64_t i = 0; i < y->nelems; i++) {
        bool p = A[dqg_broadcast_offset(a, y, i)] != 0, q = B[dqg_broadcast_offset(b, y, i)] != 0;
        Y[i] = f == DQG_LOGICAL_AND ? (p && q) : f == DQG_LOGICAL_OR ? (p || q) : (p != q);
    }
    return DQG_OK;
}

static void compare_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "function=%s", dqg_compare_op_name(op->attrs.compare.op));
}

static void logical_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "function=%s", dqg_logical_op_name(op->attrs.logical.op));
}

const dqg_op_def dqg_op_def_compare = {
    .kind = DQG_OP_COMPARE,
    .name = "Compare",
    .reference = compare_reference,
    .format_attrs = compare_format,
};

const dqg_op_def dqg_op_def_logical = {
    .kind = DQG_OP_LOGICAL,
    .name = "Logical",
    .reference = logical_reference,
    .format_attrs = logical_format,
};
