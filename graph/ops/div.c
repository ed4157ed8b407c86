/* Div: a / b with NumPy broadcasting. Floats follow IEEE (x / 0 is an
 * infinity or NaN); integers truncate toward zero as in ONNX, and an
 * integer divisor of zero is a run-time error (ONNX leaves it undefined;
 * dqgraph refuses it rather than return a made-up value). The most
 * negative value divided by -1 wraps around to itself. */
#include "graph/dtype.h"
#include "graph/graph_internal.h"

dqg_tensor_id dqg_div(dqg_graph *g, const char *name, dqg_tensor_id a, dqg_tensor_id b)
{
    return dqg_binary_build(g, DQG_OP_DIV, name, a, b);
}

static float div_f(float a, float b)
{
    return a / b;
}

/* The operands come sign-extended to 64 bits (dqg_load_int), so a signed
 * division of the 64-bit values is exact; the result is wrapped to the
 * output's width by the caller. The divisor is never 0 here. */
static uint64_t div_i(uint64_t a, uint64_t b)
{
    int64_t x = (int64_t)a, y = (int64_t)b;
    if (y == -1)
        return (uint64_t)0 - a; /* x / -1 without the INT64_MIN overflow */
    return (uint64_t)(x / y);
}

static dqg_status div_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *b = &g->tensors[op->inputs[1]];
    if (dqg_dtype_is_integer(b->dtype)) {
        const void *B = v->data[op->inputs[1]];
        for (int64_t i = 0; i < b->nelems; i++)
            if (dqg_load_int(b->dtype, B, i) == 0)
                return dqg_set_error(DQG_INVALID_ARGUMENT,
                                     "Div '%s': input 1 (b) has a zero at element %lld; an "
                                     "integer division by zero is undefined",
                                     dqg_op_display_name(op->name), (long long)i);
    }
    return dqg_binary_reference(g, op, v, div_f, div_i);
}

const dqg_op_def dqg_op_def_div = {
    .kind = DQG_OP_DIV,
    .name = "Div",
    .reference = div_reference,
};
