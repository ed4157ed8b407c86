/* Add: a + b with NumPy broadcasting on one float or integer type
 * (integers wrap around). */
#include "graph/graph_internal.h"

dqg_tensor_id dqg_add(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b)
{
    return dqg_binary_build(g, DQG_OP_ADD, name, a, b);
}

static float add_f(float a, float b)
{
    return a + b;
}

static uint64_t add_i(uint64_t a, uint64_t b)
{
    return a + b;
}

static dqg_status add_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    return dqg_binary_reference(g, op, v, add_f, add_i);
}

const dqg_op_def dqg_op_def_add = {
    .kind = DQG_OP_ADD,
    .name = "Add",
    .reference = add_reference,
};
