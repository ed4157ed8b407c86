/* fuse DQ into MatMul: DQ(u8/s8 activations) and DQ(constant s8 weights)
 * around a MatMul, with its epilogue, become one int8 oneDNN matmul. Every
 * MatMul fed by a dequantize that cannot fuse is named with the reason. */
#include "passes/fuse_common.h"

static bool from_dequantize(const dqg_graph *g, dqg_tensor_id t)
{
    int32_t p = g->tensors[t].producer;
    return p >= 0 && g->ops[p].kind == DQG_OP_DEQUANTIZE && !g->ops[p].removed;
}

dqg_status dqg_pass_fuse_dq_matmul(dqg_pass_state *s)
{
    const dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed || op->kind != DQG_OP_MATMUL || s->group[i] >= 0)
            continue;
        bool a_dq = from_dequantize(g, op->inputs[0]), b_dq = from_dequantize(g, op->inputs[1]);
        if (!a_dq && !b_dq)
            continue;
        char why[300] = "";
        const dqg_tensor *b = &g->tensors[op->inputs[1]];
        if (s->options->disable_fusion) {
            snprintf(why, sizeof why, "fusion is disabled");
        } else if (!a_dq || !b_dq) {
            snprintf(why, sizeof why, "only the %s are dequantized",
                     a_dq ? "activations" : "weights");
        } else if (b->rank != 2) {
            snprintf(why, sizeof why, "the weights have rank %d; the int8 kernel takes 2-D weights",
                     b->rank);
        } else if (g->tensors[op->inputs[0]].rank < 2) {
            snprintf(why, sizeof why, "1-D activations");
        } else {
            int32_t sdq = g->tensors[op->inputs[0]].producer;
            int32_t wdq = b->producer;
            /* Output channels are the weights' last dimension, or the first
             * when they are transposed. */
            int oc_axis = op->attrs.matmul.transpose_b ? 0 : 1;
            if (dqg_fuse_check_src(g, sdq, i, why, sizeof why) &&
                dqg_fuse_check_weights(g, wdq, i, oc_axis, why, sizeof why)) {
                dqg_fusion_match m = {.src_dq = sdq, .w_dq = wdq, .main = i};
                dqg_fuse_match_epilogue(g, &m, g->tensors[op->outputs[0]].rank - 1, true);
                dqg_status st = dqg_fuse_commit(s, &m, DQG_PART_QMATMUL, "int8 matmul");
                if (st != DQG_OK)
                    return st;
                continue;
            }
        }
        dqg_status st = dqg_explain(s, "not fused: MatMul '%s': %s", op->name, why);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
