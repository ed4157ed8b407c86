/* Max and Min of two tensors (ONNX Max and Min, two inputs at a time):
 * NumPy broadcasting on one float or integer type. As NumPy's maximum and
 * minimum, NaN in either operand gives NaN; of two equal values (+0 and -0
 * among them) the result is the first. */
#include "graph/graph_internal.h"

dqg_tensor_id dqg_max(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b)
{
    return dqg_binary_build(g, DQG_OP_MAX, name, a, b);
}

dqg_tensor_id dqg_min(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b)
{
    return dqg_binary_build(g, DQG_OP_MIN, name, a, b);
}

static float max_f(float a, float b)
{
    return dqg_max_f(a, b);
}

static float min_f(float a, float b)
{
    return dqg_min_f(a, b);
}

/* The operands come sign-extended to 64 bits (dqg_load_int), so a signed
 * comparison orders every type dqgraph has (u32 among them). */
static uint64_t max_i(uint64_t a, uint64_t b)
{
    return (int64_t)a >= (int64_t)b ? a : b;
}

static uint64_t min_i(uint64_t a, uint64_t b)
{
    return (int64_t)a <= (int64_t)b ? a : b;
}

static dqg_status max_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    return dqg_binary_reference(g, op, v, max_f, max_i);
}

static dqg_status min_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    return dqg_binary_reference(g, op, v, min_f, min_i);
}

const dqg_op_def dqg_op_def_max = {
    .kind = DQG_OP_MAX,
    .name = "Max",
    .reference = max_reference,
};

const dqg_op_def dqg_op_def_min = {
    .kind = DQG_OP_MIN,
    .name = "Min",
    .reference = min_reference,
};
