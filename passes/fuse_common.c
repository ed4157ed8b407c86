/* Matching shared by the int8 fusion passes: the conditions under which a
 * dequantize feeds an int8 oneDNN primitive exactly, and the epilogue that
 * oneDNN can apply as post-ops. */
#include <string.h>

#include "graph/dtype.h"
#include "passes/fuse_common.h"

static bool is_const(const dqg_graph *g, dqg_tensor_id t)
{
    return t != DQG_NONE && g->tensors[t].kind == DQG_TENSOR_CONSTANT;
}

bool dqg_fuse_check_src(const dqg_graph *g, int32_t dq, int32_t anchor, char *why, size_t n)
{
    const dqg_op *op = &g->ops[dq];
    const dqg_quant_attrs *q = &op->attrs.quant;
    dqg_dtype xt = g->tensors[op->inputs[0]].dtype;
    if (xt != DQG_U8 && xt != DQG_S8) {
        snprintf(why, n, "activations are %s; oneDNN's int8 kernels take u8 or s8",
                 dqg_dtype_name(xt));
        return false;
    }
    if (g->tensors[op->outputs[0]].dtype != DQG_F32) {
        snprintf(why, n, "the activation dequantize outputs %s, not f32",
                 dqg_dtype_name(g->tensors[op->outputs[0]].dtype));
        return false;
    }
    if (is_const(g, op->inputs[0])) {
        snprintf(why, n, "the activations are a constant");
        return false;
    }
    if (q->granularity == DQG_BLOCKED) {
        snprintf(why, n, "blocked activation scales");
        return false;
    }
    if (q->granularity != DQG_PER_TENSOR) {
        snprintf(why, n, "activation scales vary along axis %d (oneDNN applies one source scale)",
                 q->axis);
        return false;
    }
    if (dqg_pass_single_consumer(g, op->outputs[0]) != anchor) {
        snprintf(why, n, "the dequantized activations are also read elsewhere");
        return false;
    }
    return true;
}

bool dqg_fuse_check_weights(const dqg_graph *g, int32_t dq, int32_t anchor, int oc_axis, char *why,
                            size_t n)
{
    const dqg_op *op = &g->ops[dq];
    const dqg_quant_attrs *q = &op->attrs.quant;
    const dqg_tensor *w = &g->tensors[op->inputs[0]];
    if (w->dtype != DQG_S8 && w->dtype != DQG_U8) {
        snprintf(why, n, "weights are %s; oneDNN's int8 kernels take s8", dqg_dtype_name(w->dtype));
        return false;
    }
    if (!is_const(g, op->inputs[0]) || !is_const(g, op->inputs[1]) ||
        (op->inputs[2] != DQG_NONE && !is_const(g, op->inputs[2]))) {
        snprintf(why, n, "the weights, their scale or zero point are not constants");
        return false;
    }
    if (g->tensors[op->outputs[0]].dtype != DQG_F32) {
        snprintf(why, n, "the weight dequantize outputs %s, not f32",
                 dqg_dtype_name(g->tensors[op->outputs[0]].dtype));
        return false;
    }
    if (q->granularity == DQG_BLOCKED || q->granularity == DQG_ELEMENTWISE ||
        (q->granularity == DQG_PER_AXIS && q->axis != oc_axis)) {
        snprintf(why, n, "weight scales vary along the reduction dimension (%s, axis %d)",
                 q->granularity == DQG_BLOCKED       ? "blocked"
                 : q->granularity == DQG_ELEMENTWISE ? "element-wise"
                                                     : "per-axis",
                 q->axis);
        return false;
    }
    if (dqg_pass_single_consumer(g, op->outputs[0]) != anchor) {
        snprintf(why, n, "the dequantized weights are also read elsewhere");
        return false;
    }
    /* The zero point must fold into s8 weights: every w - zp in [-128, 127]. */
    if (op->inputs[2] != DQG_NONE) {
        const dqg_tensor *z = &g->tensors[op->inputs[2]];
        dqg_quant_index ix;
        dqg_quant_index_init(&ix, w, &g->tensors[op->inputs[1]], q);
        for (int64_t i = 0; i < w->nelems; i++) {
            int64_t c = dqg_quant_scale_index(&ix, i);
            int64_t v = dqg_load_int(w->dtype, w->data, i) - dqg_load_int(z->dtype, z->data, c);
            if (v < -128 || v > 127) {
                snprintf(why, n,
                         "weights zero point %lld on channel %lld does not fit s8 after folding "
                         "(w - zp = %lld)",
                         (long long)dqg_load_int(z->dtype, z->data, c), (long long)c, (long long)v);
                return false;
            }
        }
    } else if (w->dtype == DQG_U8) {
        snprintf(why, n, "u8 weights without a zero point do not fit s8");
        return false;
    }
    return true;
}

/* A constant operand that broadcasts to the output as one value or one
 * value per channel. */
static bool per_channel_const(const dqg_graph *g, dqg_tensor_id t, const dqg_tensor *out, int caxis)
{
    if (!is_const(g, t) || g->tensors[t].dtype != DQG_F32)
        return false;
    const dqg_tensor *c = &g->tensors[t];
    if (c->nelems == 1)
        return c->rank <= out->rank;
    if (c->rank > out->rank)
        return false;
    /* Right-aligned: only the channel dimension may differ from 1. */
    for (int i = 0; i < c->rank; i++) {
        int oi = i + (out->rank - c->rank);
        if (c->dims[i] != 1 && !(oi == caxis && c->dims[i] == out->dims[caxis]))
            return false;
    }
    return true;
}

void dqg_fuse_match_epilogue(const dqg_graph *g, dqg_fusion_match *m, int channel_axis,
                             bool allow_bias)
{
    m->bias = m->q = -1;
    m->n_post = 0;
    dqg_tensor_id cur = g->ops[m->main].outputs[0];
    for (;;) {
        int32_t c = dqg_pass_single_consumer(g, cur);
        if (c < 0)
            return;
        const dqg_op *op = &g->ops[c];
        const dqg_tensor *out = &g->tensors[cur];
        bool first = m->bias < 0 && m->n_post == 0;
        if (op->kind == DQG_OP_BIAS_ADD && first && allow_bias && is_const(g, op->inputs[1]) &&
            g->tensors[op->inputs[1]].dtype == DQG_F32) {
            int ca = op->attrs.bias_add.data_format == DQG_FORMAT_NCX ? 1 : out->rank - 1;
            if (ca != channel_axis)
                return;
            m->bias = c;
        } else if ((op->kind == DQG_OP_ADD || op->kind == DQG_OP_MUL) && op->inputs[0] == cur &&
                   per_channel_const(g, op->inputs[1], out, channel_axis) &&
                   m->n_post < DQG_MAX_POST_OPS) {
            if (op->kind == DQG_OP_ADD && first && allow_bias &&
                g->tensors[op->inputs[1]].nelems == out->dims[channel_axis] &&
                out->dims[channel_axis] > 1)
                m->bias = c;
            else
                m->post[m->n_post++] = c;
        } else if ((op->kind == DQG_OP_RELU || op->kind == DQG_OP_CLIP) &&
                   m->n_post < DQG_MAX_POST_OPS) {
            m->post[m->n_post++] = c;
        } else if (op->kind == DQG_OP_QUANTIZE) {
            const dqg_quant_attrs *q = &op->attrs.quant;
            dqg_dtype yt = g->tensors[op->outputs[0]].dtype;
            if (q->granularity == DQG_PER_TENSOR && (yt == DQG_U8 || yt == DQG_S8) &&
                is_const(g, op->inputs[1]) &&
                (op->inputs[2] == DQG_NONE || is_const(g, op->inputs[2])) &&
                g->tensors[op->inputs[1]].dtype == DQG_F32)
                m->q = c;
            return;
        } else {
            return;
        }
        cur = op->outputs[0];
    }
}

dqg_status dqg_fuse_commit(dqg_pass_state *s, const dqg_fusion_match *m, dqg_partition_kind kind,
                           const char *kernel)
{
    int part = dqg_pass_new_partition(s, kind);
    if (part < 0)
        return DQG_OUT_OF_MEMORY;
    int32_t ops[DQG_MAX_PART_OPS];
    int n = 0;
    ops[n++] = m->src_dq;
    ops[n++] = m->w_dq;
    ops[n++] = m->main;
    if (m->bias >= 0)
        ops[n++] = m->bias;
    for (int i = 0; i < m->n_post; i++)
        ops[n++] = m->post[i];
    if (m->q >= 0)
        ops[n++] = m->q;
    for (int i = 0; i < n; i++)
        dqg_pass_add_to_partition(s, part, ops[i]);
    dqg_partition *p = &s->parts[part];
    /* Roles by position in ops[] (kept in graph order). */
    for (int k = 0; k < p->n_ops; k++) {
        int32_t o = p->ops[k];
        if (o == m->src_dq)
            p->src_dq = k;
        else if (o == m->w_dq)
            p->w_dq = k;
        else if (o == m->main)
            p->main = k;
        else if (o == m->bias)
            p->bias = k;
        else if (o == m->q)
            p->q = k;
    }
    p->n_post = 0;
    for (int i = 0; i < m->n_post; i++)
        for (int k = 0; k < p->n_ops; k++)
            if (p->ops[k] == m->post[i])
                p->post[p->n_post++] = k;
    const dqg_graph *g = s->graph;
    char line[1024];
    size_t pos = (size_t)snprintf(line, sizeof line, "fused: ");
    for (int i = 0; i < n && pos < sizeof line; i++)
        pos += (size_t)snprintf(line + pos, sizeof line - pos, "%s%s '%s'", i ? " + " : "",
                                dqg_op_kind_name(g->ops[ops[i]].kind), g->ops[ops[i]].name);
    const dqg_op *sdq = &g->ops[m->src_dq], *wdq = &g->ops[m->w_dq];
    const dqg_quant_attrs *wq = &wdq->attrs.quant;
    dqg_dtype dst = m->q >= 0 ? g->tensors[g->ops[m->q].outputs[0]].dtype : DQG_F32;
    return dqg_explain(s, "%s -> %s (src %s%s, weights %s %s scales%s, dst %s)", line, kernel,
                       dqg_dtype_name(g->tensors[sdq->inputs[0]].dtype),
                       sdq->inputs[2] != DQG_NONE ? " with zero point" : "",
                       dqg_dtype_name(g->tensors[wdq->inputs[0]].dtype),
                       wq->granularity == DQG_PER_TENSOR ? "per-tensor" : "per-channel",
                       wdq->inputs[2] != DQG_NONE ? ", zero point folded" : "",
                       dqg_dtype_name(dst));
}
