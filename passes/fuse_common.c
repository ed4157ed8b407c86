/* Matching shared by the fusion passes: the conditions under which the ops
 * around a MatMul or Convolution can run as one kernel, and the epilogue
 * that kernel can apply. */
#include <math.h>
#include <string.h>

#include "graph/dtype.h"
#include "passes/fuse_common.h"

bool dqg_match_add(dqg_fusion_match *m, int32_t op, dqg_part_role role)
{
    if (m->n == DQG_MAX_PART_OPS)
        return false;
    m->ops[m->n] = op;
    m->roles[m->n++] = (uint8_t)role;
    return true;
}

int32_t dqg_match_op(const dqg_fusion_match *m, dqg_part_role role)
{
    for (int i = 0; i < m->n; i++)
        if (m->roles[i] == role)
            return m->ops[i];
    return -1;
}

bool dqg_match_has(const dqg_fusion_match *m, int32_t op)
{
    for (int i = 0; i < m->n; i++)
        if (m->ops[i] == op)
            return true;
    return false;
}

dqg_tensor_id dqg_match_result(const dqg_graph *g, const dqg_fusion_match *m)
{
    int32_t last = dqg_match_op(m, DQG_ROLE_MAIN);
    for (int i = 0; i < m->n; i++) {
        dqg_part_role r = m->roles[i];
        bool chain = r == DQG_ROLE_CAST || r == DQG_ROLE_SCALE || r == DQG_ROLE_BIAS ||
                     r == DQG_ROLE_POST || r == DQG_ROLE_Q || r == DQG_ROLE_SM_PRE ||
                     r == DQG_ROLE_SOFTMAX;
        if (chain && m->ops[i] > last)
            last = m->ops[i];
    }
    return g->ops[last].outputs[0];
}

bool dqg_fuse_is_const(const dqg_graph *g, dqg_tensor_id t)
{
    return t != DQG_NONE && (g->tensors[t].kind == DQG_TENSOR_CONSTANT || g->tensors[t].folded);
}

static int32_t producer(const dqg_graph *g, dqg_tensor_id t)
{
    int32_t p = t == DQG_NONE ? -1 : g->tensors[t].producer;
    return p >= 0 && !g->ops[p].removed ? p : -1;
}

bool dqg_fuse_match_src(const dqg_pass_state *s, int32_t anchor, dqg_fusion_match *m, char *why,
                        size_t n)
{
    const dqg_graph *g = s->graph;
    int32_t dq = producer(g, g->ops[anchor].inputs[0]);
    if (dq < 0 || g->ops[dq].kind != DQG_OP_DEQUANTIZE) {
        snprintf(why, n, "the activations are not dequantized");
        return false;
    }
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
    if (dqg_fuse_is_const(g, op->inputs[0])) {
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
    if (g->tensors[op->inputs[1]].dtype != DQG_F32) {
        snprintf(why, n, "the activation scale is %s, not f32",
                 dqg_dtype_name(g->tensors[op->inputs[1]].dtype));
        return false;
    }
    if (op->inputs[2] != DQG_NONE) {
        dqg_dtype zt = g->tensors[op->inputs[2]].dtype;
        if (zt != DQG_U8 && zt != DQG_S8 && zt != DQG_S32) {
            snprintf(why, n, "the activation zero point is %s", dqg_dtype_name(zt));
            return false;
        }
    }
    if (dqg_pass_single_consumer(s, op->outputs[0]) != anchor) {
        snprintf(why, n, "the dequantized activations are also read elsewhere");
        return false;
    }
    return dqg_match_add(m, dq, DQG_ROLE_SRC_DQ);
}

int32_t dqg_fuse_match_weights(const dqg_pass_state *s, int32_t anchor, int slot,
                               dqg_fusion_match *m, char *why, size_t n)
{
    const dqg_graph *g = s->graph;
    int32_t layout[8];
    int n_layout = 0;
    int32_t reader = anchor;
    dqg_tensor_id t = g->ops[anchor].inputs[slot];
    for (;;) {
        int32_t p = producer(g, t);
        if (p < 0) {
            snprintf(why, n, "the weights are not dequantized");
            return -1;
        }
        if (dqg_pass_single_consumer(s, t) != reader) {
            snprintf(why, n, "the dequantized weights are also read elsewhere");
            return -1;
        }
        const dqg_op *op = &g->ops[p];
        if (op->kind == DQG_OP_DEQUANTIZE) {
            for (int k = 0; k < 3; k++)
                if (op->inputs[k] != DQG_NONE && !dqg_fuse_is_const(g, op->inputs[k])) {
                    snprintf(why, n, "the weights, their scale or zero point are not constants");
                    return -1;
                }
            if (!dqg_match_add(m, p, DQG_ROLE_W_DQ))
                return -1;
            for (int i = n_layout - 1; i >= 0; i--)
                if (!dqg_match_add(m, layout[i], DQG_ROLE_W_LAYOUT))
                    return -1;
            return p;
        }
        if ((op->kind != DQG_OP_TRANSPOSE && op->kind != DQG_OP_RESHAPE) ||
            n_layout == (int)(sizeof layout / sizeof *layout)) {
            snprintf(why, n, "the weights are not dequantized");
            return -1;
        }
        layout[n_layout++] = p;
        reader = p;
        t = op->inputs[0];
    }
}

bool dqg_fuse_check_int8_weights(const dqg_graph *g, int32_t wdq, char *why, size_t n)
{
    const dqg_op *w = &g->ops[wdq];
    dqg_dtype wt = g->tensors[w->inputs[0]].dtype;
    if (wt != DQG_S8 && wt != DQG_U8) {
        snprintf(why, n, "weights are %s; oneDNN's int8 kernels take s8", dqg_dtype_name(wt));
        return false;
    }
    if (g->tensors[w->outputs[0]].dtype != DQG_F32) {
        snprintf(why, n, "the weight dequantize outputs %s, not f32",
                 dqg_dtype_name(g->tensors[w->outputs[0]].dtype));
        return false;
    }
    if (wt == DQG_U8 && w->inputs[2] == DQG_NONE) {
        snprintf(why, n, "u8 weights without a zero point do not fit s8");
        return false;
    }
    return true;
}

int dqg_fuse_weight_axis(const dqg_graph *g, const dqg_fusion_match *m)
{
    int32_t dq = dqg_match_op(m, DQG_ROLE_W_DQ);
    const dqg_quant_attrs *q = &g->ops[dq].attrs.quant;
    if (q->granularity == DQG_PER_TENSOR)
        return -1;
    if (q->granularity == DQG_ELEMENTWISE)
        return -2;
    int axis = q->axis;
    /* Layout ops were added from the dequantize towards the anchor. */
    for (int i = 0; i < m->n && axis >= 0; i++)
        if (m->roles[i] == DQG_ROLE_W_LAYOUT)
            axis = dqg_quant_axis_through(g, &g->ops[m->ops[i]], axis);
    return axis >= 0 ? axis : -2;
}

bool dqg_fuse_unit_scale(const dqg_graph *g, int32_t dq)
{
    const dqg_tensor *sc = &g->tensors[g->ops[dq].inputs[1]];
    if (sc->kind != DQG_TENSOR_CONSTANT || !sc->data)
        return false;
    for (int64_t i = 0; i < sc->nelems; i++)
        if (dqg_load_float(sc->dtype, sc->data, i) != 1.0f)
            return false;
    return true;
}

/* How an operand of Add/Mul broadcasts onto the output: 0 not usable, 1 one
 * value, 2 one value per channel, 3 the output's own shape. */
static int operand_shape(const dqg_graph *g, dqg_tensor_id t, const dqg_tensor *out, int caxis)
{
    const dqg_tensor *c = &g->tensors[t];
    if (c->dtype != DQG_F32 || c->rank > out->rank)
        return 0;
    if (c->nelems == 1)
        return 1;
    bool per_channel = true, full = c->rank == out->rank;
    for (int i = 0; i < c->rank; i++) {
        int oi = i + (out->rank - c->rank);
        if (c->dims[i] != 1 && !(oi == caxis && c->dims[i] == out->dims[caxis]))
            per_channel = false;
        if (c->dims[i] != out->dims[oi])
            full = false;
    }
    return per_channel ? 2 : full ? 3 : 0;
}

/* The operand of binary op `op` other than `cur`, or DQG_NONE when cur is
 * not one of its inputs exactly once. */
static dqg_tensor_id other_operand(const dqg_op *op, dqg_tensor_id cur)
{
    if (op->n_inputs != 2 || (op->inputs[0] == cur) == (op->inputs[1] == cur))
        return DQG_NONE;
    return op->inputs[0] == cur ? op->inputs[1] : op->inputs[0];
}

/* A run-time f32 scalar (not constant). */
static bool runtime_scalar(const dqg_graph *g, dqg_tensor_id t)
{
    return !dqg_fuse_is_const(g, t) && g->tensors[t].nelems == 1 && g->tensors[t].dtype == DQG_F32;
}

/* Mul(a, b) making a scale from a run-time scalar and constants: the
 * SCALE_SRC of an ORT dynamic-quantizer pattern (x_scale * w_scale). */
static bool scale_source(const dqg_pass_state *s, dqg_tensor_id f, int32_t reader,
                         const dqg_tensor *out, int caxis)
{
    const dqg_graph *g = s->graph;
    int32_t p = producer(g, f);
    if (p < 0 || g->ops[p].kind != DQG_OP_MUL || dqg_pass_single_consumer(s, f) != reader)
        return false;
    const dqg_op *op = &g->ops[p];
    dqg_tensor_id a = op->inputs[0], b = op->inputs[1];
    if (runtime_scalar(g, b)) {
        dqg_tensor_id tmp = a;
        a = b;
        b = tmp;
    }
    int shape = dqg_fuse_is_const(g, b) ? operand_shape(g, b, out, caxis) : 0;
    return runtime_scalar(g, a) && (shape == 1 || shape == 2) &&
           operand_shape(g, f, out, caxis) == shape;
}

/* ReLU and Clip, which commute with a positive output scale (so a Q after
 * them folds into the kernel's scales), and the unary functions oneDNN has
 * as eltwise post-ops, which do not (a Q after them divides by its scale
 * after the last post-op: runtime/onednn_qattr.c). */
static bool is_eltwise_post(const dqg_op *op)
{
    if (op->kind == DQG_OP_RELU || op->kind == DQG_OP_CLIP)
        return true;
    if (op->kind != DQG_OP_UNARY)
        return false;
    switch (op->attrs.unary.op) {
    case DQG_UNARY_GELU_ERF:
    case DQG_UNARY_GELU_TANH:
    case DQG_UNARY_SIGMOID:
    case DQG_UNARY_SWISH:
    case DQG_UNARY_TANH:
    case DQG_UNARY_HARD_SWISH:
        return true;
    default:
        return false;
    }
}

void dqg_fuse_match_epilogue(const dqg_pass_state *s, dqg_fusion_match *m,
                             const dqg_epilogue_rules *r)
{
    const dqg_graph *g = s->graph;
    int32_t main = dqg_match_op(m, DQG_ROLE_MAIN);
    dqg_tensor_id cur = g->ops[main].outputs[0];
    bool have_bias = false, in_s32 = false, front = true;
    bool have_swish = false;
    float swish_alpha = 0.0f;
    int n_post = 0;
    for (;;) {
        int32_t c = dqg_pass_single_consumer(s, cur);
        /* An op another partition already took (a Mul of two matmuls'
         * results, claimed by the first) ends the chain. */
        if (c < 0 || (s->group && s->group[c] >= 0))
            return;
        const dqg_op *op = &g->ops[c];
        const dqg_tensor *out = &g->tensors[cur];
        if (op->kind == DQG_OP_TYPECAST && r->integer_result && front) {
            /* s32 first (exact: the accumulator is an integer), then f32. */
            dqg_dtype to = op->attrs.typecast.to;
            if (!((to == DQG_S32 && !in_s32 && out->dtype == DQG_F32) ||
                  (to == DQG_F32 && in_s32)) ||
                !dqg_match_add(m, c, DQG_ROLE_CAST))
                return;
            in_s32 = to == DQG_S32;
            cur = op->outputs[0];
            continue;
        }
        if (in_s32)
            return; /* only the cast back to f32 may follow an s32 result */
        if (op->kind == DQG_OP_MUL && r->allow_scale && front) {
            dqg_tensor_id f = other_operand(op, cur);
            if (f != DQG_NONE && scale_source(s, f, c, out, r->channel_axis)) {
                if (!dqg_match_add(m, c, DQG_ROLE_SCALE) ||
                    !dqg_match_add(m, g->tensors[f].producer, DQG_ROLE_SCALE_SRC))
                    return;
                cur = op->outputs[0];
                continue;
            }
            if (f != DQG_NONE && runtime_scalar(g, f)) {
                if (!dqg_match_add(m, c, DQG_ROLE_SCALE))
                    return;
                cur = op->outputs[0];
                continue;
            }
        }
        if (op->kind == DQG_OP_BIAS_ADD && !have_bias && n_post == 0 && r->allow_bias &&
            op->inputs[0] == cur && dqg_fuse_is_const(g, op->inputs[1]) &&
            g->tensors[op->inputs[1]].dtype == DQG_F32) {
            int ca = op->attrs.bias_add.data_format == DQG_FORMAT_NCX ? 1 : out->rank - 1;
            if (ca != r->channel_axis || !dqg_match_add(m, c, DQG_ROLE_BIAS))
                return;
            have_bias = true;
        } else if ((op->kind == DQG_OP_ADD || op->kind == DQG_OP_MUL ||
                    (op->kind == DQG_OP_DIV && op->inputs[0] == cur)) &&
                   g->tensors[op->outputs[0]].dtype == DQG_F32 && n_post < DQG_MAX_POST_OPS) {
            /* Div only with the chain as the dividend. */
            dqg_tensor_id b = other_operand(op, cur);
            int shape = b == DQG_NONE ? 0 : operand_shape(g, b, out, r->channel_axis);
            if (shape == 0)
                return;
            /* A per-channel constant Add right after the anchor is its bias. */
            bool bias = op->kind == DQG_OP_ADD && !have_bias && n_post == 0 && r->allow_bias &&
                        shape == 2 && dqg_fuse_is_const(g, b) && out->dims[r->channel_axis] > 1;
            if (!dqg_match_add(m, c, bias ? DQG_ROLE_BIAS : DQG_ROLE_POST))
                return;
            have_bias |= bias;
            n_post += !bias;
        } else if (is_eltwise_post(op) && n_post < DQG_MAX_POST_OPS &&
                   g->tensors[op->outputs[0]].dtype == DQG_F32) {
            /* oneDNN 2.6 runs a second eltwise post-op of one algorithm with
             * the first one's parameters (defect E): a Swish whose alpha
             * differs from an earlier one's ends the chain. (Clip has its
             * own rule in the kernel; the other functions take none.) */
            if (op->kind == DQG_OP_UNARY && op->attrs.unary.op == DQG_UNARY_SWISH) {
                if (have_swish && op->attrs.unary.alpha != swish_alpha)
                    return;
                have_swish = true;
                swish_alpha = op->attrs.unary.alpha;
            }
            if (!dqg_match_add(m, c, DQG_ROLE_POST))
                return;
            n_post++;
        } else if (op->kind == DQG_OP_QUANTIZE && r->allow_q) {
            const dqg_quant_attrs *q = &op->attrs.quant;
            dqg_dtype yt = g->tensors[op->outputs[0]].dtype;
            if (q->granularity == DQG_PER_TENSOR && (yt == DQG_U8 || yt == DQG_S8) &&
                g->tensors[op->inputs[1]].kind == DQG_TENSOR_CONSTANT &&
                g->tensors[op->inputs[1]].dtype == DQG_F32 &&
                (op->inputs[2] == DQG_NONE ||
                 g->tensors[op->inputs[2]].kind == DQG_TENSOR_CONSTANT))
                dqg_match_add(m, c, DQG_ROLE_Q);
            return;
        } else {
            return;
        }
        front = false;
        cur = op->outputs[0];
    }
}

void dqg_fuse_absorb_src_quant(const dqg_pass_state *s, dqg_fusion_match *m)
{
    const dqg_graph *g = s->graph;
    int32_t sdq = dqg_match_op(m, DQG_ROLE_SRC_DQ);
    if (sdq < 0)
        return;
    int32_t d = producer(g, g->ops[sdq].inputs[0]);
    if (d < 0)
        return;
    const dqg_op *q = &g->ops[d];
    /* DynamicQuantizeLinear, or a per-tensor Quantize of f32 to u8/s8 with
     * a run-time scale (oneDNN Graph's DynamicQuantize). One with a constant
     * scale is left to the op before it, whose epilogue it can end (an int8
     * result instead of f32 written and read again). */
    if (s->group[d] >= 0)
        return;
    bool quantize =
        q->kind == DQG_OP_QUANTIZE && q->attrs.quant.granularity == DQG_PER_TENSOR &&
        !dqg_fuse_is_const(g, q->inputs[1]) && g->tensors[q->inputs[0]].dtype == DQG_F32 &&
        g->tensors[q->inputs[1]].dtype == DQG_F32 &&
        (g->tensors[q->outputs[0]].dtype == DQG_U8 || g->tensors[q->outputs[0]].dtype == DQG_S8);
    if (q->kind != DQG_OP_DYNAMIC_QUANTIZE && !quantize)
        return;
    /* Everything it produces must be read inside the match only. */
    const dqg_consumers *c = &s->cons;
    for (int o = 0; o < g->ops[d].n_outputs; o++) {
        dqg_tensor_id t = g->ops[d].outputs[o];
        if (g->tensors[t].is_output)
            return;
        for (int32_t k = c->first[t]; k < c->first[t + 1]; k++)
            if (!dqg_match_has(m, c->list[k]))
                return;
    }
    dqg_match_add(m, d, DQG_ROLE_SRC_QUANT);
}

dqg_status dqg_fuse_commit(dqg_pass_state *s, const dqg_fusion_match *m, dqg_partition_kind kind,
                           const char *kernel, const char *details)
{
    if (dqg_pass_add_partition(s, kind, m->ops, m->roles, m->n) < 0)
        return DQG_OUT_OF_MEMORY;
    /* The ops in pattern order: source side, weights, anchor, epilogue. */
    static const dqg_part_role order[] = {
        DQG_ROLE_SRC_QUANT,  DQG_ROLE_SRC_DQ, DQG_ROLE_W_DQ,      DQG_ROLE_W_LAYOUT,
        DQG_ROLE_MAIN,       DQG_ROLE_CAST,   DQG_ROLE_SCALE_SRC, DQG_ROLE_SCALE,
        DQG_ROLE_BIAS,       DQG_ROLE_POST,   DQG_ROLE_SUM_Q,     DQG_ROLE_SUM_DQ,
        DQG_ROLE_SUM_SRC_DQ, DQG_ROLE_SUM,    DQG_ROLE_SUM_POST,  DQG_ROLE_Q};
    const dqg_graph *g = s->graph;
    char line[1536];
    size_t pos = (size_t)snprintf(line, sizeof line, "fused: ");
    bool first = true;
    for (size_t r = 0; r < sizeof order / sizeof *order; r++)
        for (int i = 0; i < m->n && pos < sizeof line; i++)
            if (m->roles[i] == order[r]) {
                const dqg_op *op = &g->ops[m->ops[i]];
                pos += (size_t)snprintf(line + pos, sizeof line - pos, "%s%s '%s'",
                                        first ? "" : " + ", dqg_op_kind_name(op->kind), op->name);
                first = false;
            }
    return dqg_explain(s, "%s -> %s (%s)", line, kernel, details);
}

bool dqg_fuse_const_int_params(const dqg_graph *g, const dqg_op *op)
{
    dqg_tensor_id z = op->inputs[2];
    dqg_dtype side =
        g->tensors[op->kind == DQG_OP_DEQUANTIZE ? op->inputs[0] : op->outputs[0]].dtype;
    return op->attrs.quant.granularity == DQG_PER_TENSOR &&
           g->tensors[op->inputs[1]].kind == DQG_TENSOR_CONSTANT &&
           g->tensors[op->inputs[1]].dtype == DQG_F32 &&
           (z == DQG_NONE ||
            (g->tensors[z].kind == DQG_TENSOR_CONSTANT && g->tensors[z].dtype == side));
}

float dqg_fuse_scale(const dqg_graph *g, const dqg_op *op)
{
    return dqg_load_float(DQG_F32, g->tensors[op->inputs[1]].data, 0);
}

int64_t dqg_fuse_zero_point(const dqg_graph *g, const dqg_op *op)
{
    dqg_tensor_id z = op->inputs[2];
    return z == DQG_NONE ? 0 : dqg_load_int(g->tensors[z].dtype, g->tensors[z].data, 0);
}

int64_t dqg_fuse_quantized(const dqg_graph *g, const dqg_op *q, double v)
{
    float x = (float)v / dqg_fuse_scale(g, q);
    if (isnan(x))
        return 0;
    dqg_dtype t = g->tensors[q->outputs[0]].dtype;
    double r = (double)dqg_rne_f(x) + (double)dqg_fuse_zero_point(g, q);
    int64_t lo = dqg_int_min(t), hi = dqg_int_max(t);
    return r <= (double)lo ? lo : r >= (double)hi ? hi : (int64_t)r;
}

int32_t dqg_fuse_integer_cast(const dqg_pass_state *s, int32_t i)
{
    const dqg_graph *g = s->graph;
    int32_t c = dqg_pass_single_consumer(s, g->ops[i].outputs[0]);
    if (c < 0 || (s->group && s->group[c] >= 0) || g->ops[c].kind != DQG_OP_TYPECAST ||
        !dqg_dtype_is_integer(g->ops[c].attrs.typecast.to))
        return -1;
    return c;
}
