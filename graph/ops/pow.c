/* Pow: a ^ b with NumPy broadcasting on f32, f16 or bf16 (powf: a negative
 * base with a non-integer exponent gives NaN). A constant scalar exponent
 * is better written as dqg_unary(DQG_UNARY_POW), which has a fast kernel. */
#include <math.h>

#include "graph/graph_internal.h"

static const dqg_dtype float_types[] = {DQG_F32, DQG_F16, DQG_BF16};

dqg_tensor_id dqg_pow(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b)
{
    if (!dqg_graph_can_build(g, "Pow", name) ||
        !dqg_graph_check_input(g, "Pow", name, 0, "a", a, false) ||
        !dqg_graph_check_input(g, "Pow", name, 1, "b", b, false) ||
        !dqg_check_dtype_in(g, "Pow", name, 0, "a", a, float_types, 3) ||
        !dqg_check_dtype_in(g, "Pow", name, 1, "b", b, float_types, 3))
        return DQG_NONE;
    return dqg_binary_build(g, DQG_OP_POW, name, a, b);
}

static float pow_f(float a, float b)
{
    return (float)pow((double)a, (double)b);
}

static uint64_t pow_i(uint64_t a, uint64_t b)
{
    (void)b;
    return a; /* never called: Pow takes floats only */
}

static dqg_status pow_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    return dqg_binary_reference(g, op, v, pow_f, pow_i);
}

const dqg_op_def dqg_op_def_pow = {
    .kind = DQG_OP_POW,
    .name = "Pow",
    .reference = pow_reference,
};
