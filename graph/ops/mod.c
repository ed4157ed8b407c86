/* Mod: the remainder of a / b with NumPy broadcasting (ONNX Mod). With
 * fmod its sign is a's (C's fmod; floats take only this); without, b's
 * (Python's %, integers). An integer divisor of 0 is refused when the graph
 * runs, as Div's; the most negative value mod -1 is 0. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

dqg_tensor_id dqg_mod(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b, bool fmod)
{
    if (!dqg_graph_can_build(g, "Mod", name) ||
        !dqg_graph_check_input(g, "Mod", name, 0, "a", a, false))
        return DQG_NONE;
    if (!fmod && !dqg_dtype_is_integer(g->tensors[a].dtype))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "Mod '%s': input 0 (a) is %s; floats take fmod = 1 only",
                              dqg_op_display_name(name), dqg_dtype_name(g->tensors[a].dtype));
    dqg_tensor_id y = dqg_binary_build(g, DQG_OP_MOD, name, a, b);
    if (y != DQG_NONE)
        g->ops[g->tensors[y].producer].attrs.mod.fmod = fmod;
    return y;
}

static dqg_status mod_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const void *A = v->data[op->inputs[0]], *B = v->data[op->inputs[1]];
    void *Y = v->data[op->outputs[0]];
    bool fm = op->attrs.mod.fmod;
    for (int64_t i = 0; i < y->nelems; i++) {
        int64_t ia = dqg_broadcast_offset(a, y, i), ib = dqg_broadcast_offset(b, y, i);
        if (!dqg_dtype_is_integer(y->dtype)) {
            float r = fmodf(dqg_load_float(a->dtype, A, ia), dqg_load_float(b->dtype, B, ib));
            dqg_store_float(y->dtype, Y, i, r);
            continue;
        }
        int64_t x = dqg_load_int(a->dtype, A, ia), d = dqg_load_int(b->dtype, B, ib);
        if (d == 0)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "Mod '%s': input 1 (b) has a zero at element %lld; an integer "
                                 "remainder of a division by zero is undefined",
                                 dqg_op_display_name(op->name), (long long)ib);
        int64_t r = d == -1 ? 0 : x % d; /* INT64_MIN % -1 overflows in C */
        if (!fm && r != 0 && ((r < 0) != (d < 0)))
            r += d;
        dqg_store_int(y->dtype, Y, i, r);
    }
    return DQG_OK;
}

static void mod_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "fmod=%d", (int)op->attrs.mod.fmod);
}

const dqg_op_def dqg_op_def_mod = {
    .kind = DQG_OP_MOD,
    .name = "Mod",
    .reference = mod_reference,
    .format_attrs = mod_format,
};
