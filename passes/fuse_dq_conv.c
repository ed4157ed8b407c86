/* fuse DQ into Convolution: DQ(u8/s8 activations) and DQ(constant s8
 * weights, per output channel along axis 0 of OIX) around a Convolution,
 * with its own bias or a following one and the epilogue, become one int8
 * oneDNN convolution. */
#include "passes/fuse_common.h"

dqg_status dqg_pass_fuse_dq_conv(dqg_pass_state *s)
{
    const dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed || op->kind != DQG_OP_CONVOLUTION || s->group[i] >= 0)
            continue;
        int32_t sdq = g->tensors[op->inputs[0]].producer;
        int32_t wdq = g->tensors[op->inputs[1]].producer;
        bool a_dq = sdq >= 0 && g->ops[sdq].kind == DQG_OP_DEQUANTIZE;
        bool b_dq = wdq >= 0 && g->ops[wdq].kind == DQG_OP_DEQUANTIZE;
        if (!a_dq && !b_dq)
            continue;
        char why[300] = "";
        if (s->options->disable_fusion) {
            snprintf(why, sizeof why, "fusion is disabled");
        } else if (!a_dq || !b_dq) {
            snprintf(why, sizeof why, "only the %s are dequantized",
                     a_dq ? "activations" : "weights");
        } else if (op->inputs[2] != DQG_NONE &&
                   (g->tensors[op->inputs[2]].kind != DQG_TENSOR_CONSTANT ||
                    g->tensors[op->inputs[2]].dtype != DQG_F32)) {
            snprintf(why, sizeof why, "the bias is not an f32 constant");
        } else if (dqg_fuse_check_src(g, sdq, i, why, sizeof why) &&
                   dqg_fuse_check_weights(g, wdq, i, 0, why, sizeof why)) {
            dqg_fusion_match m = {.src_dq = sdq, .w_dq = wdq, .main = i};
            const dqg_tensor *y = &g->tensors[op->outputs[0]];
            int ca = op->attrs.conv.data_format == DQG_FORMAT_NCX ? 1 : y->rank - 1;
            dqg_fuse_match_epilogue(g, &m, ca, op->inputs[2] == DQG_NONE);
            dqg_status st = dqg_fuse_commit(s, &m, DQG_PART_QCONV, "int8 convolution");
            if (st != DQG_OK)
                return st;
            continue;
        }
        dqg_status st = dqg_explain(s, "not fused: Convolution '%s': %s", op->name, why);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
