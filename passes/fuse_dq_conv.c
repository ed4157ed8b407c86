/* fuse DQ into Convolution: DQ(u8/s8 activations) and DQ(constant s8/u8
 * weights, one scale or one per output channel along axis 0 of OIX)
 * around a Convolution, with its own bias or a following one and the
 * epilogue, become one int8 convolution partition; the activations' scale
 * and zero point may be constants or arrive at run time. A ConvTranspose
 * between constant-parameter dequantizes becomes one int8 transposed
 * convolution the same way. */
#include <string.h>

#include "passes/fuse_common.h"

/* Whether op i's operands fit an int8 kernel (else `why` says what does
 * not). A ConvTranspose runs on oneDNN's int8 deconvolution with what it
 * takes: constant per-tensor activation parameters, and weights
 * [C, M/g, K...] with one scale or, ungrouped, one per output channel
 * (axis 1). */
static bool match_int8(const dqg_pass_state *s, int32_t i, dqg_fusion_match *m, char *why, size_t n)
{
    const dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    bool transposed = op->kind == DQG_OP_CONV_TRANSPOSE;
    if (op->inputs[2] != DQG_NONE &&
        (!dqg_fuse_is_const(g, op->inputs[2]) || g->tensors[op->inputs[2]].dtype != DQG_F32)) {
        snprintf(why, n, "the bias is not an f32 constant");
        return false;
    }
    if (!dqg_fuse_match_src(s, i, m, why, n))
        return false;
    if (transposed && !dqg_fuse_const_int_params(g, &g->ops[dqg_match_op(m, DQG_ROLE_SRC_DQ)])) {
        snprintf(why, n, "the activations' scale or zero point arrives at run time");
        return false;
    }
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
    /* The output channels: axis 0 of OIX, axis 1 of [C, M/g, K...]. */
    int out_axis = transposed ? 1 : 0;
    if (q->granularity == DQG_PER_TENSOR ||
        (q->granularity == DQG_PER_AXIS && q->axis == out_axis &&
         (!transposed || op->attrs.conv_t.groups <= 1)))
        return true;
    if (q->granularity == DQG_PER_AXIS && q->axis == out_axis)
        snprintf(why, n, "grouped, with weight scales per output channel of a group");
    else
        snprintf(why, n, "weight scales vary along the reduction dimension (%s, axis %d)",
                 q->granularity == DQG_BLOCKED       ? "blocked"
                 : q->granularity == DQG_ELEMENTWISE ? "element-wise"
                                                     : "per-axis",
                 q->axis);
    return false;
}

/* The op reading t (once, alone, unclaimed), or -1. */
static int32_t next_op(const dqg_pass_state *s, dqg_tensor_id t)
{
    int32_t c = dqg_pass_single_consumer(s, t);
    return c >= 0 && !s->graph->ops[c].removed && s->group[c] < 0 ? c : -1;
}

/* A per-tensor dequantize of run-time u8/s8 data with constant parameters. */
static bool int8_dq(const dqg_graph *g, int32_t d)
{
    if (d < 0 || g->ops[d].kind != DQG_OP_DEQUANTIZE || !dqg_fuse_const_int_params(g, &g->ops[d]))
        return false;
    dqg_dtype t = g->tensors[g->ops[d].inputs[0]].dtype;
    return (t == DQG_U8 || t == DQG_S8) && !dqg_fuse_is_const(g, g->ops[d].inputs[0]);
}

/* A residual connection after the quantized result (ResNet, MobileNetV2):
 * Q1 -> DQ -> Add(DQ(r)) [-> ReLU/Clip] -> Q2, with r of the result's
 * shape, joins the convolution, which then adds the residual in its
 * epilogue instead of writing Q1's result for a separate pass. */
static void match_residual(const dqg_pass_state *s, dqg_fusion_match *m)
{
    const dqg_graph *g = s->graph;
    /* Not for grouped convolutions (ShuffleNet): oneDNN 2.6's AVX-512 int8
     * kernels cannot generate them with the residual's post-ops, and the
     * AVX2 one left is slower than the separate sum. */
    if (g->ops[dqg_match_op(m, DQG_ROLE_MAIN)].attrs.conv.groups != 1)
        return;
    int k1 = -1;
    for (int k = 0; k < m->n; k++)
        if (m->roles[k] == DQG_ROLE_Q)
            k1 = k;
    if (k1 < 0)
        return;
    const dqg_op *q1 = &g->ops[m->ops[k1]];
    int32_t d1 = next_op(s, q1->outputs[0]);
    if (!int8_dq(g, d1))
        return;
    int32_t add = next_op(s, g->ops[d1].outputs[0]);
    if (add < 0 || g->ops[add].kind != DQG_OP_ADD || g->ops[add].inputs[0] == g->ops[add].inputs[1])
        return;
    const dqg_op *a = &g->ops[add];
    dqg_tensor_id other = a->inputs[0] == g->ops[d1].outputs[0] ? a->inputs[1] : a->inputs[0];
    int32_t d2 = g->tensors[other].producer;
    /* r has the result's shape exactly (its storage is read in the
     * result's layout). */
    const dqg_tensor *rt = &g->tensors[other], *yt1 = &g->tensors[q1->outputs[0]];
    if (!int8_dq(g, d2) || next_op(s, other) != add || rt->rank != yt1->rank ||
        memcmp(rt->dims, yt1->dims, (size_t)rt->rank * sizeof *rt->dims) != 0 ||
        g->tensors[a->outputs[0]].nelems != yt1->nelems)
        return;
    int32_t post[2];
    int n_post = 0;
    dqg_tensor_id cur = a->outputs[0];
    int32_t c = next_op(s, cur);
    while (c >= 0 && n_post < 2 &&
           (g->ops[c].kind == DQG_OP_RELU || g->ops[c].kind == DQG_OP_CLIP) &&
           g->tensors[g->ops[c].outputs[0]].dtype == DQG_F32) {
        post[n_post++] = c;
        cur = g->ops[c].outputs[0];
        c = next_op(s, cur);
    }
    if (c < 0 || g->ops[c].kind != DQG_OP_QUANTIZE)
        return;
    const dqg_op *q2 = &g->ops[c];
    dqg_dtype yt = g->tensors[q2->outputs[0]].dtype;
    if (q2->attrs.quant.granularity != DQG_PER_TENSOR || (yt != DQG_U8 && yt != DQG_S8) ||
        !dqg_fuse_const_int_params(g, q2) || m->n + 4 + n_post > DQG_MAX_PART_OPS)
        return;
    m->roles[k1] = DQG_ROLE_SUM_Q;
    dqg_match_add(m, d1, DQG_ROLE_SUM_DQ);
    dqg_match_add(m, d2, DQG_ROLE_SUM_SRC_DQ);
    dqg_match_add(m, add, DQG_ROLE_SUM);
    for (int i = 0; i < n_post; i++)
        dqg_match_add(m, post[i], DQG_ROLE_SUM_POST);
    dqg_match_add(m, c, DQG_ROLE_Q);
}

dqg_status dqg_pass_fuse_dq_conv(dqg_pass_state *s)
{
    const dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        bool transposed = op->kind == DQG_OP_CONV_TRANSPOSE;
        if (op->removed || (op->kind != DQG_OP_CONVOLUTION && !transposed) || s->group[i] >= 0)
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
            /* A ConvTranspose is NCX; its epilogue takes a bias, element-wise
             * ops and the quantize of its result. */
            dqg_epilogue_rules r = {
                .channel_axis =
                    transposed || op->attrs.conv.data_format == DQG_FORMAT_NCX ? 1 : y->rank - 1,
                .allow_bias = op->inputs[2] == DQG_NONE,
                .integer_result = !transposed && op->inputs[2] == DQG_NONE &&
                                  dqg_fuse_unit_scale(g, s_dq) && dqg_fuse_unit_scale(g, w_dq),
                .allow_scale = !transposed,
                .allow_q = true};
            dqg_fuse_match_epilogue(s, &m, &r);
            if (!transposed) {
                match_residual(s, &m);
                dqg_fuse_absorb_src_quant(s, &m);
            }
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
            dqg_status st = dqg_fuse_commit(
                s, &m, DQG_PART_QCONV,
                transposed ? "int8 transposed convolution" : "int8 convolution", details);
            if (st != DQG_OK)
                return st;
            continue;
        }
        dqg_status st =
            dqg_explain(s, "not fused: %s '%s': %s", dqg_op_kind_name(op->kind), op->name, why);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
