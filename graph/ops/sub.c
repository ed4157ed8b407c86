/* Sub: a - b with NumPy broadcasting on one float or integer type
 * (integers wrap around). */
#include "graph/graph_internal.h"

dqg_tensor_id dqg_sub(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b)
{
    return dqg_binary_build(g, DQG_OP_SUB, name, a, b);
}

static float sub_f(float a, float b)
{
    return a - b;
}

static uint64_t sub_i(uint64_t a, uint64_t b)
{
    return a - b;
}

static dqg_status sub_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    return dqg_binary_reference(g, op, v, sub_f, sub_i);
}

const dqg_op_def dqg_op_def_sub = {
    .kind = DQG_OP_SUB,
    .name = "Sub",
    .reference = sub_reference,
};
