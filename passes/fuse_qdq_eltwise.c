/* fuse quantized element-wise chains (and concats, see fuse_concat):
 * QuantizeLinear of a chain of
 * element-wise ops whose inputs are per-tensor dequantizes of u8/s8
 * tensors (and constants: scalars, or one value per index of one axis) --
 * a residual DQ(a) + DQ(b) -> ReLU -> Q, a DQ -> Clip -> Q, a requantize
 * DQ -> Q, DenseNet's DQ -> BatchNormalization -> ReLU -> Q, and with one
 * int8 input and scalar constants any unary function, DQ -> HardSwish -> Q
 * or SiLU's DQ(x) * Sigmoid(DQ(x)) -> Q (a table of the input's 256
 * codes) -- becomes one partition that
 * reads the int8 inputs and writes the int8 output, computing every element
 * exactly as the reference does (float32, op by op), instead of a float
 * round trip through memory. */
#include "passes/fuse_common.h"

/* A constant operand the kernel takes: one f32 value, or one per index of a
 * single axis of the chain's shape (a BatchNormalization's per-channel
 * scale and shift, shaped [C, 1, 1]), broadcasting as ONNX does. */
static bool const_operand(const dqg_graph *g, dqg_tensor_id t, dqg_tensor_id like)
{
    const dqg_tensor *c = &g->tensors[t], *o = &g->tensors[like];
    if (!dqg_fuse_is_const(g, t) || c->dtype != DQG_F32 || c->kind != DQG_TENSOR_CONSTANT)
        return false;
    return c->nelems == 1 || dqg_broadcast_axis(c, o) >= 0;
}

/* Adds the ops computing tensor t (of `nelems` elements) to m; false when t
 * is not such a chain. */
static bool visit(const dqg_pass_state *s, dqg_tensor_id t, int32_t reader, int64_t nelems,
                  dqg_fusion_match *m)
{
    const dqg_graph *g = s->graph;
    if (const_operand(g, t, g->ops[reader].outputs[0]))
        return true;
    int32_t p = g->tensors[t].producer;
    if (p < 0 || g->ops[p].removed || s->group[p] >= 0 ||
        dqg_pass_single_consumer(s, t) != reader || g->tensors[t].nelems != nelems ||
        g->tensors[t].dtype != DQG_F32)
        return false;
    if (dqg_match_has(m, p))
        return true; /* read twice by one op: Add(x, x) */
    const dqg_op *op = &g->ops[p];
    switch (op->kind) {
    case DQG_OP_DEQUANTIZE: {
        dqg_dtype xt = g->tensors[op->inputs[0]].dtype;
        return (xt == DQG_U8 || xt == DQG_S8) && dqg_fuse_const_int_params(g, op) &&
               !dqg_fuse_is_const(g, op->inputs[0]) && dqg_match_add(m, p, DQG_ROLE_SRC_DQ);
    }
    case DQG_OP_ADD:
    case DQG_OP_MUL:
        return dqg_match_add(m, p, DQG_ROLE_POST) && visit(s, op->inputs[0], p, nelems, m) &&
               visit(s, op->inputs[1], p, nelems, m);
    case DQG_OP_RELU:
    case DQG_OP_CLIP:
    case DQG_OP_UNARY:
        return dqg_match_add(m, p, DQG_ROLE_POST) && visit(s, op->inputs[0], p, nelems, m);
    default:
        return false;
    }
}

/* Q(Concat(DQ(x_1), ..., DQ(x_k))), every parameter a per-tensor constant
 * and every x an int8 tensor: quantizing is element-wise, so it commutes
 * with the concat, and each int8 input maps to its output bytes through a
 * table of its 256 codes. The partition reads the int8 inputs and writes
 * the int8 result: no float tensor in memory (ONNX Runtime's quantizer
 * gives each concat input its own scale). */
static dqg_status fuse_concat(dqg_pass_state *s, int32_t i)
{
    const dqg_graph *g = s->graph;
    const dqg_op *q = &g->ops[i];
    dqg_tensor_id t = q->inputs[0];
    int32_t c = g->tensors[t].producer;
    if (c < 0 || g->ops[c].removed || s->group[c] >= 0 || g->ops[c].kind != DQG_OP_CONCAT ||
        dqg_pass_single_consumer(s, t) != i || g->tensors[t].dtype != DQG_F32)
        return DQG_OK;
    const dqg_op *cat = &g->ops[c];
    dqg_fusion_match m = {0};
    dqg_match_add(&m, i, DQG_ROLE_MAIN);
    dqg_match_add(&m, c, DQG_ROLE_POST);
    for (int j = 0; j < cat->n_inputs; j++) {
        dqg_tensor_id x = cat->inputs[j];
        int32_t p = g->tensors[x].producer;
        if (p < 0 || g->ops[p].removed || s->group[p] >= 0 || dqg_pass_single_consumer(s, x) != c ||
            g->ops[p].kind != DQG_OP_DEQUANTIZE)
            return DQG_OK;
        const dqg_op *dq = &g->ops[p];
        dqg_dtype xt = g->tensors[dq->inputs[0]].dtype;
        if ((xt != DQG_U8 && xt != DQG_S8) || !dqg_fuse_const_int_params(g, dq) ||
            dqg_fuse_is_const(g, dq->inputs[0]))
            return DQG_OK;
        if (!dqg_match_has(&m, p) && !dqg_match_add(&m, p, DQG_ROLE_SRC_DQ))
            return DQG_OK; /* more inputs than a partition holds */
    }
    char details[160];
    snprintf(details, sizeof details, "%d int8 inputs requantized into place, dst %s",
             cat->n_inputs, dqg_dtype_name(g->tensors[q->outputs[0]].dtype));
    return dqg_fuse_commit(s, &m, DQG_PART_QCONCAT, "int8 concat", details);
}

dqg_status dqg_pass_fuse_qdq_eltwise(dqg_pass_state *s)
{
    const dqg_graph *g = s->graph;
    if (s->options->disable_fusion)
        return DQG_OK;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *q = &g->ops[i];
        if (q->removed || q->kind != DQG_OP_QUANTIZE || s->group[i] >= 0 ||
            !dqg_fuse_const_int_params(g, q))
            continue;
        dqg_dtype yt = g->tensors[q->outputs[0]].dtype;
        if (yt != DQG_U8 && yt != DQG_S8)
            continue;
        int32_t producer = g->tensors[q->inputs[0]].producer;
        if (producer >= 0 && g->ops[producer].kind == DQG_OP_CONCAT) {
            dqg_status st = fuse_concat(s, i);
            if (st != DQG_OK)
                return st;
            continue;
        }
        dqg_fusion_match m = {0};
        dqg_match_add(&m, i, DQG_ROLE_MAIN);
        if (!visit(s, q->inputs[0], i, g->tensors[q->outputs[0]].nelems, &m) ||
            dqg_match_op(&m, DQG_ROLE_SRC_DQ) < 0)
            continue;
        int n_dq = 0;
        bool unary = false, per_axis = false, one_input = true;
        dqg_tensor_id input = DQG_NONE;
        for (int k = 0; k < m.n; k++) {
            const dqg_op *o = &g->ops[m.ops[k]];
            if (m.roles[k] == DQG_ROLE_SRC_DQ) {
                n_dq++;
                one_input &= input == DQG_NONE || o->inputs[0] == input;
                input = o->inputs[0];
            }
            unary |= o->kind == DQG_OP_UNARY;
            for (int j = 0; j < o->n_inputs && m.roles[k] == DQG_ROLE_POST; j++)
                per_axis |=
                    dqg_fuse_is_const(g, o->inputs[j]) && g->tensors[o->inputs[j]].nelems > 1;
        }
        /* A unary function (Sigmoid, HardSwish, ...) only in a chain of one
         * int8 input (dequantized once, or by copies of one dequantize)
         * and scalar constants: a table of its 256 codes. */
        if (unary && (!one_input || per_axis))
            continue;
        char details[160];
        snprintf(details, sizeof details, "%d int8 input%s, %d element-wise op%s, dst %s", n_dq,
                 n_dq == 1 ? "" : "s", m.n - 1 - n_dq, m.n - 1 - n_dq == 1 ? "" : "s",
                 dqg_dtype_name(yt));
        dqg_status st = dqg_fuse_commit(s, &m, DQG_PART_QELTWISE, "int8 element-wise", details);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
