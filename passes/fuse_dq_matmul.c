/* fuse DQ into MatMul: an int8 pattern -- DQ(u8/s8 activations) and
 * DQ(constant s8/u8 weights) around a MatMul, with its epilogue -- becomes
 * one int8 matmul partition, whether the activations' scale and zero point
 * are constants or arrive at run time (dynamic quantization, also the
 * DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul form). Float
 * activations with constant low-bit weights become a weight-only
 * partition, whose kernel keeps the weights at their stored width. Every
 * MatMul fed by a dequantize that does not fuse is named with the reason. */
#include "passes/fuse_common.h"

static const char *granularity_name(dqg_granularity g)
{
    static const char *names[] = {"per-tensor", "per-axis", "blocked", "element-wise"};
    return g <= DQG_ELEMENTWISE ? names[g] : "?";
}

/* The int8 pattern; false (with the reason) when it does not apply. */
static bool match_int8(const dqg_pass_state *s, int32_t i, dqg_fusion_match *m, char *why, size_t n)
{
    const dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    if (g->tensors[op->inputs[0]].rank < 2) {
        snprintf(why, n, "1-D activations");
        return false;
    }
    /* The kernel reads the source as rows of K (its row sums too). */
    if (op->attrs.matmul.transpose_a) {
        snprintf(why, n, "the activations are transposed (transpose_a)");
        return false;
    }
    if (!dqg_fuse_match_src(s, i, m, why, n))
        return false;
    int32_t wdq = dqg_fuse_match_weights(s, i, 1, m, why, n);
    if (wdq < 0)
        return false;
    const dqg_tensor *b = &g->tensors[op->inputs[1]];
    if (!dqg_fuse_check_int8_weights(g, wdq, why, n))
        return false;
    if (b->rank != 2) {
        snprintf(why, n, "the weights have rank %d; the int8 kernel takes 2-D weights", b->rank);
        return false;
    }
    /* Output channels are the weights' last dimension, or the first when
     * they are transposed. */
    int oc_axis = op->attrs.matmul.transpose_b ? 0 : 1;
    int axis = dqg_fuse_weight_axis(g, m);
    const dqg_quant_attrs *q = &g->ops[wdq].attrs.quant;
    if (axis == -2 || (axis >= 0 && (axis != oc_axis || q->granularity != DQG_PER_AXIS))) {
        snprintf(why, n, "weight scales vary along the reduction dimension (%s, axis %d)",
                 granularity_name(q->granularity), q->axis);
        return false;
    }
    return true;
}

/* The weight-only pattern: float activations, a dequantize of constant
 * weights as the MatMul's 2-D second operand. */
static bool match_weight_only(const dqg_pass_state *s, int32_t i, dqg_fusion_match *m, char *why,
                              size_t n)
{
    const dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    int32_t wdq = dqg_fuse_match_weights(s, i, 1, m, why, n);
    if (wdq < 0)
        return false;
    if (g->tensors[op->inputs[1]].rank != 2) {
        snprintf(why, n, "the weights have rank %d; the weight-only kernel takes 2-D weights",
                 g->tensors[op->inputs[1]].rank);
        return false;
    }
    if (g->tensors[op->inputs[0]].rank < 1) {
        snprintf(why, n, "scalar activations");
        return false;
    }
    if (dqg_fuse_integer_cast(s, i) >= 0) {
        snprintf(why, n, "an integer result (MatMulInteger), exact only in int8 or K chunks");
        return false;
    }
    if (dqg_fuse_weight_axis(g, m) == -2 &&
        g->ops[wdq].attrs.quant.granularity != DQG_ELEMENTWISE) {
        snprintf(why, n, "the weights' quantization axis does not survive their reshape");
        return false;
    }
    return true;
}

static dqg_status commit_int8(dqg_pass_state *s, int32_t i, dqg_fusion_match *m)
{
    const dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    int32_t sdq = dqg_match_op(m, DQG_ROLE_SRC_DQ), wdq = dqg_match_op(m, DQG_ROLE_W_DQ);
    dqg_epilogue_rules r = {.channel_axis = g->tensors[op->outputs[0]].rank - 1,
                            .allow_bias = true,
                            .integer_result =
                                dqg_fuse_unit_scale(g, sdq) && dqg_fuse_unit_scale(g, wdq),
                            .allow_scale = true,
                            .allow_q = true};
    dqg_fuse_match_epilogue(s, m, &r);
    dqg_fuse_absorb_src_quant(s, m);
    const dqg_op *s_op = &g->ops[sdq], *w_op = &g->ops[wdq];
    bool dynamic = !dqg_fuse_is_const(g, s_op->inputs[1]) ||
                   (s_op->inputs[2] != DQG_NONE && !dqg_fuse_is_const(g, s_op->inputs[2])) ||
                   dqg_match_op(m, DQG_ROLE_SCALE) >= 0;
    char details[400];
    snprintf(details, sizeof details, "src %s%s%s, weights %s %s scales%s, dst %s%s",
             dqg_dtype_name(g->tensors[s_op->inputs[0]].dtype),
             s_op->inputs[2] != DQG_NONE ? " with zero point" : "",
             dqg_match_op(m, DQG_ROLE_SRC_QUANT) >= 0 ? " quantized in the kernel"
             : dynamic                                ? " with run-time scale"
                                                      : "",
             dqg_dtype_name(g->tensors[w_op->inputs[0]].dtype),
             w_op->attrs.quant.granularity == DQG_PER_TENSOR ? "per-tensor" : "per-channel",
             w_op->inputs[2] != DQG_NONE ? ", zero point folded" : "",
             dqg_dtype_name(g->tensors[dqg_match_result(g, m)].dtype),
             dqg_match_op(m, DQG_ROLE_CAST) >= 0 ? ", integer casts folded" : "");
    return dqg_fuse_commit(s, m, DQG_PART_QMATMUL, "int8 matmul", details);
}

static dqg_status commit_weight_only(dqg_pass_state *s, int32_t i, dqg_fusion_match *m)
{
    const dqg_graph *g = s->graph;
    dqg_epilogue_rules r = {.channel_axis = g->tensors[g->ops[i].outputs[0]].rank - 1,
                            .allow_bias = true};
    dqg_fuse_match_epilogue(s, m, &r);
    const dqg_op *w_op = &g->ops[dqg_match_op(m, DQG_ROLE_W_DQ)];
    const dqg_quant_attrs *q = &w_op->attrs.quant;
    char details[300];
    int pos = snprintf(details, sizeof details, "weights %s %s",
                       dqg_dtype_name(g->tensors[w_op->inputs[0]].dtype),
                       granularity_name(q->granularity));
    if (q->granularity == DQG_BLOCKED)
        pos += snprintf(details + pos, sizeof details - (size_t)pos, " (blocks of %lld)",
                        (long long)q->block_size);
    snprintf(details + pos, sizeof details - (size_t)pos, "%s, activations %s",
             w_op->inputs[2] != DQG_NONE ? " with zero point" : "",
             dqg_dtype_name(g->tensors[g->ops[i].inputs[0]].dtype));
    return dqg_fuse_commit(s, m, DQG_PART_WO_MATMUL, "weight-only matmul", details);
}

static bool from_dequantize(const dqg_graph *g, dqg_tensor_id t)
{
    int32_t p = g->tensors[t].producer;
    return p >= 0 && !g->ops[p].removed && g->ops[p].kind == DQG_OP_DEQUANTIZE;
}

dqg_status dqg_pass_fuse_dq_matmul(dqg_pass_state *s)
{
    const dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed || op->kind != DQG_OP_MATMUL || s->group[i] >= 0)
            continue;
        bool a_dq = from_dequantize(g, op->inputs[0]);
        dqg_fusion_match m = {0};
        dqg_match_add(&m, i, DQG_ROLE_MAIN);
        char why[300] = "", wo_why[300] = "";
        if (s->options->disable_fusion) {
            if (a_dq || from_dequantize(g, op->inputs[1]))
                snprintf(why, sizeof why, "fusion is disabled");
        } else if (a_dq && match_int8(s, i, &m, why, sizeof why)) {
            dqg_status st = commit_int8(s, i, &m);
            if (st != DQG_OK)
                return st;
            continue;
        } else {
            dqg_fusion_match w = {0};
            dqg_match_add(&w, i, DQG_ROLE_MAIN);
            if (match_weight_only(s, i, &w, wo_why, sizeof wo_why)) {
                dqg_status st = DQG_OK;
                if (a_dq)
                    st = dqg_explain(s, "not fused into int8: MatMul '%s': %s", op->name, why);
                if (st == DQG_OK)
                    st = commit_weight_only(s, i, &w);
                if (st != DQG_OK)
                    return st;
                continue;
            }
            if (!a_dq && !from_dequantize(g, op->inputs[1]))
                continue;
            if (!a_dq)
                snprintf(why, sizeof why, "%s", wo_why);
            else if (!from_dequantize(g, op->inputs[1]))
                snprintf(why, sizeof why, "only the activations are dequantized");
        }
        if (!*why)
            continue;
        dqg_status st = dqg_explain(s, "not fused: MatMul '%s': %s", op->name, why);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
