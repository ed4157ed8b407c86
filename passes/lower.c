/* lower leftovers: every live op that no fusion claimed becomes a partition
 * of its own, except that a leftover MatMul or Convolution takes the bias
 * and element-wise ops that follow it along as oneDNN post-ops (fusion on).
 * Dequantize and quantize ops are named in the explain log so a user sees
 * what runs unfused. */
#include "passes/fuse_common.h"

/* MatMul/Convolution + bias + element-wise ops as one f32 partition. */
static dqg_status lower_with_epilogue(dqg_pass_state *s, int32_t i, bool *done)
{
    dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    *done = false;
    if (s->options->disable_fusion || y->rank < 2)
        return DQG_OK;
    bool own_bias = op->kind == DQG_OP_CONVOLUTION && op->inputs[2] != DQG_NONE;
    /* The epilogue's operands are constants; so must the bias be. */
    if (own_bias && g->tensors[op->inputs[2]].kind != DQG_TENSOR_CONSTANT)
        return DQG_OK;
    int ca = op->kind == DQG_OP_CONVOLUTION && op->attrs.conv.data_format == DQG_FORMAT_NCX
                 ? 1
                 : y->rank - 1;
    dqg_fusion_match m = {.src_dq = -1, .w_dq = -1, .main = i};
    dqg_fuse_match_epilogue(g, &m, ca, !own_bias);
    if (m.bias < 0 && m.n_post == 0)
        return DQG_OK;
    int part = dqg_pass_new_partition(s, DQG_PART_SINGLE);
    if (part < 0)
        return DQG_OUT_OF_MEMORY;
    int32_t ops[DQG_MAX_PART_OPS];
    int n = 0;
    ops[n++] = i;
    if (m.bias >= 0)
        ops[n++] = m.bias;
    for (int k = 0; k < m.n_post; k++)
        ops[n++] = m.post[k];
    for (int k = 0; k < n; k++)
        dqg_pass_add_to_partition(s, part, ops[k]);
    dqg_partition *p = &s->parts[part];
    for (int k = 0; k < p->n_ops; k++) {
        if (p->ops[k] == i)
            p->main = k;
        else if (p->ops[k] == m.bias)
            p->bias = k;
    }
    for (int j = 0; j < m.n_post; j++)
        for (int k = 0; k < p->n_ops; k++)
            if (p->ops[k] == m.post[j])
                p->post[p->n_post++] = k;
    char line[1024];
    size_t pos = 0;
    for (int k = 0; k < n && pos < sizeof line; k++)
        pos += (size_t)snprintf(line + pos, sizeof line - pos, "%s%s '%s'", k ? " + " : "",
                                dqg_op_kind_name(g->ops[ops[k]].kind), g->ops[ops[k]].name);
    *done = true;
    return dqg_explain(s, "combined: %s -> %s %s with post-ops", line, dqg_dtype_name(y->dtype),
                       op->kind == DQG_OP_MATMUL ? "matmul" : "convolution");
}

dqg_status dqg_pass_lower(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed || s->group[i] >= 0)
            continue;
        if (op->kind == DQG_OP_MATMUL || op->kind == DQG_OP_CONVOLUTION) {
            bool done;
            dqg_status st = lower_with_epilogue(s, i, &done);
            if (st != DQG_OK)
                return st;
            if (done)
                continue;
        }
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
