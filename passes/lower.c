/* lower leftovers: every live op that no fusion claimed becomes a partition
 * of its own; dequantize and quantize ops are named in the explain log so a
 * user sees what will run unfused. */
#include "passes/passes.h"

dqg_status dqg_pass_lower(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed || s->group[i] >= 0)
            continue;
        int part = dqg_pass_new_partition(s, DQG_PART_SINGLE);
        if (part < 0)
            return DQG_OUT_OF_MEMORY;
        s->parts[part].main = dqg_pass_add_to_partition(s, part, i);
        if (op->kind == DQG_OP_DEQUANTIZE || op->kind == DQG_OP_QUANTIZE) {
            const dqg_quant_attrs *q = &op->attrs.quant;
            static const char *gran[] = {"per-tensor", "per-axis", "blocked", "element-wise"};
            dqg_status st =
                dqg_explain(s, "lowered: %s '%s' (%s -> %s, %s) runs as its own partition",
                            dqg_op_kind_name(op->kind), op->name,
                            dqg_dtype_name(g->tensors[op->inputs[0]].dtype),
                            dqg_dtype_name(g->tensors[op->outputs[0]].dtype),
                            q->granularity <= DQG_ELEMENTWISE ? gran[q->granularity] : "?");
            if (st != DQG_OK)
                return st;
        }
    }
    return DQG_OK;
}
