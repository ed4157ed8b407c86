/* fuse DQ into Convolution: DQ(u8/s8 activations) and DQ(constant s8/u8
 * weights, one scale or one per output channel along axis 0 of OIX)
 * around a Convolution, with its own bias or a following one and the
 * epilogue, become one int8 convolution partition; the activations' scale
 * and zero point may be constants or arrive at run time. */
#include "passes/fuse_common.h"

static bool match_int8(const dqg_pass_state *s, int32_t i, dqg_fusion_match *m, char *why, size_t n)
{
    const dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    if (op->inputs[2] != DQG_NONE &&
        (!dqg_fuse_is_const(g, op->inputs[2]) || g->tensors[op->inputs[2]].dtype != DQG_F32)) {
        snprintf(why, n, "the bias is not an f32 constant");
        return false;
    }
    if (!dqg_fuse_match_src(s, i, m, why, n))
        return false;
    int32_t wdq = dqg_fuse_match_weights(s, i, 1, m, why, n);
    if (wdq < 0)
        return false;
    if (dqg_match_op(m, DQG_ROLE_W_LAYOUT) >= 0) {
        snprintf(why, n, "the weights pass through a Transpose or Reshape");
        return false;
    }
    const dqg_quant_attrs *q = &g->ops[wdq].attrs.quant;
    if (!dqg_fuse_check_int8_weights(g, wdq, why, n))
        return false;
    if (q->granularity == DQG_BLOCKED || q->granularity == DQG_ELEMENTWISE ||
        (q->granularity == DQG_PER_AXIS && q->axis != 0)) {
        snprintf(why, n, "weight scales vary along the reduction dimension (%s, axis %d)",
                 q->granularity == DQG_BLOCKED       ? "blocked"
                 : q->granularity == DQG_ELEMENTWISE ? "element-wise"
                                                     : "per-axis",
                 q->axis);
        return false;
    }
    return true;
}

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
        dqg_fusion_match m = {0};
        dqg_match_add(&m, i, DQG_ROLE_MAIN);
        if (s->options->disable_fusion) {
            snprintf(why, sizeof why, "fusion is disabled");
        } else if (!a_dq || !b_dq) {
            snprintf(why, sizeof why, "only the %s are dequantized",
                     a_dq ? "activations" : "weights");
        } else if (match_int8(s, i, &m, why, sizeof why)) {
            const dqg_tensor *y = &g->tensors[op->outputs[0]];
            int32_t s_dq = dqg_match_op(&m, DQG_ROLE_SRC_DQ),
                    w_dq = dqg_match_op(&m, DQG_ROLE_W_DQ);
            dqg_epilogue_rules r = {
                .channel_axis = op->attrs.conv.data_format == DQG_FORMAT_NCX ? 1 : y->rank - 1,
                .allow_bias = op->inputs[2] == DQG_NONE,
                .integer_result = op->inputs[2] == DQG_NONE && dqg_fuse_unit_scale(g, s_dq) &&
                                  dqg_fuse_unit_scale(g, w_dq),
                .allow_scale = true,
                .allow_q = true};
            dqg_fuse_match_epilogue(s, &m, &r);
            dqg_fuse_absorb_src_quant(s, &m);
            const dqg_op *so = &g->ops[s_dq], *wo = &g->ops[w_dq];
            char details[300];
            snprintf(details, sizeof details, "src %s%s%s, weights %s %s scales%s, dst %s",
                     dqg_dtype_name(g->tensors[so->inputs[0]].dtype),
                     so->inputs[2] != DQG_NONE ? " with zero point" : "",
                     dqg_fuse_is_const(g, so->inputs[1]) ? "" : " with run-time scale",
                     dqg_dtype_name(g->tensors[wo->inputs[0]].dtype),
                     wo->attrs.quant.granularity == DQG_PER_TENSOR ? "per-tensor" : "per-channel",
                     wo->inputs[2] != DQG_NONE ? ", zero point folded" : "",
                     dqg_dtype_name(g->tensors[dqg_match_result(g, &m)].dtype));
            dqg_status st = dqg_fuse_commit(s, &m, DQG_PART_QCONV, "int8 convolution", details);
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
