/* ReLU: y = max(x, 0) on a float tensor; NaN propagates. */
#include "graph/dtype.h"
#include "graph/graph_internal.h"

dqg_tensor_id dqg_relu(dqg_graph *g, const char *name, dqg_tensor_id x)
{
    if (!dqg_graph_can_build(g, "ReLU", name) ||
        !dqg_graph_check_input(g, "ReLU", name, 0, "x", x, false) ||
        !dqg_check_float_dtype(g, "ReLU", name, 0, "x", x))
        return DQG_NONE;
    int32_t op = dqg_graph_add_op_like(g, DQG_OP_RELU, name, 1, &x);
    return op < 0 ? DQG_NONE : g->ops[op].outputs[0];
}

static dqg_status relu_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const void *src = v->data[op->inputs[0]];
    void *dst = v->data[op->outputs[0]];
    for (int64_t i = 0; i < x->nelems; i++) {
        float f = dqg_load_float(x->dtype, src, i);
        dqg_store_float(x->dtype, dst, i, f < 0.0f ? 0.0f : f);
    }
    return DQG_OK;
}

const dqg_op_def dqg_op_def_relu = {
    .kind = DQG_OP_RELU,
    .name = "ReLU",
    .reference = relu_reference,
};
