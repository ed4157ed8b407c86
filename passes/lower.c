/* lower leftovers: every live op that no fusion claimed becomes a partition
 * of its own: a constant-folding partition when it computes from constants
 * alone (dequantize ops of constant weights that nothing fused included,
 * unless fusion is off); an f32 MatMul or Convolution together with the
 * bias and element-wise ops that follow it (oneDNN post-ops), or with the
 * integer cast that alone reads it (MatMulInteger, ConvInteger: exact,
 * fusion or not); a rotary embedding's seven ops (fusion on); or a single op. Dequantize and
 * quantize ops that run at execution are named in the explain log so a user sees what runs unfused.
 */
#include <string.h>

#include "passes/fuse_common.h"

/* A Transpose of rank >= 2 that no partition claimed, with a run-time
 * input. */
static bool free_transpose(const dqg_pass_state *s, int32_t t)
{
    const dqg_graph *g = s->graph;
    if (t < 0 || g->ops[t].removed || g->ops[t].kind != DQG_OP_TRANSPOSE || s->group[t] >= 0)
        return false;
    const dqg_tensor *x = &g->tensors[g->ops[t].inputs[0]];
    return x->rank >= 2 && !dqg_fuse_is_const(g, g->ops[t].inputs[0]);
}

/* The transposes around a run-time f32 MatMul: of an operand that only
 * the MatMul reads (A_LAYOUT, B_LAYOUT), and of the result when only the
 * transpose reads it (Y_LAYOUT). oneDNN's matmul reads and writes strided
 * operands, so the kernel takes them as strides instead of copies
 * (attention heads: Reshape -> Transpose -> MatMul -> Transpose). */
static void match_layouts(const dqg_pass_state *s, dqg_fusion_match *m, int32_t i, bool result)
{
    const dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    if (!result) {
        if (op->inputs[0] == op->inputs[1])
            return;
        for (int k = 0; k < 2; k++) {
            int32_t t = g->tensors[op->inputs[k]].producer;
            if (free_transpose(s, t) && dqg_pass_single_consumer(s, op->inputs[k]) == i)
                dqg_match_add(m, t, k == 0 ? DQG_ROLE_A_LAYOUT : DQG_ROLE_B_LAYOUT);
        }
        return;
    }
    if (g->tensors[op->inputs[0]].rank < 2 || g->tensors[op->inputs[1]].rank < 2)
        return;
    int32_t t = dqg_pass_single_consumer(s, dqg_match_result(g, m));
    if (free_transpose(s, t) && !dqg_match_has(m, t))
        dqg_match_add(m, t, DQG_ROLE_Y_LAYOUT);
}

/* The operand of binary op `op` on the chain value `cur` when the softmax
 * kernel can apply the op to each row and the epilogue could not take it:
 * an f32 operand that repeats over the leading axes, such as a causal mask
 * [S, S] on the scores of every head [heads, S, S] (row r reads its row r
 * % S). DQG_NONE otherwise. */
static dqg_tensor_id periodic_operand(const dqg_graph *g, const dqg_op *op, dqg_tensor_id cur)
{
    if ((op->kind != DQG_OP_ADD && op->kind != DQG_OP_MUL && op->kind != DQG_OP_DIV) ||
        (op->kind == DQG_OP_DIV && op->inputs[0] != cur))
        return DQG_NONE;
    dqg_tensor_id b = op->inputs[0] == cur ? op->inputs[1] : op->inputs[0];
    const dqg_tensor *x = &g->tensors[cur], *bt = &g->tensors[b], *y = &g->tensors[op->outputs[0]];
    if (b == cur || bt->dtype != DQG_F32 || y->dtype != DQG_F32 || y->nelems != x->nelems ||
        bt->rank > x->rank)
        return DQG_NONE;
    if (bt->nelems == 1) /* one value (after a periodic op, which the epilogue left) */
        return b;
    bool leading = true; /* still among the operand's leading 1s */
    for (int j = 0; j < bt->rank; j++) {
        int64_t d = bt->dims[j], xd = x->dims[x->rank - bt->rank + j];
        if (leading && d == 1 && xd != 1)
            continue;
        leading = false;
        if (d != xd)
            return DQG_NONE;
    }
    return b;
}

/* The Softmax over the last axis that alone reads an f32 MatMul's chain
 * (attention scores) joins its partition, and the binary ops at the end of
 * the chain (x / sqrt(d) + mask) become its SM_PRE ops: the softmax applies
 * them to each row in its first pass, where as oneDNN 2.6 post-ops a
 * broadcast mask alone cost the matmul a third of its time (128x128 scores
 * of 12 heads: 0.13 against 0.085 ms). So do binary ops between the
 * epilogue and the softmax whose operand the epilogue does not take but
 * the softmax can (periodic_operand: a causal mask [S, S] over [heads, S,
 * S]). Not with a transposed result. */
static bool match_softmax(const dqg_pass_state *s, dqg_fusion_match *m)
{
    const dqg_graph *g = s->graph;
    dqg_tensor_id cur = dqg_match_result(g, m);
    int32_t c = dqg_pass_single_consumer(s, cur);
    /* Ops after the epilogue whose operand only the softmax can apply
     * (periodic_operand), when the softmax follows them. */
    int32_t rows_ops[4];
    int n_rows_ops = 0;
    dqg_tensor_id after = cur;
    while (c >= 0 && s->group[c] < 0 && n_rows_ops < 4 && !g->ops[c].removed &&
           periodic_operand(g, &g->ops[c], after) != DQG_NONE) {
        rows_ops[n_rows_ops++] = c;
        after = g->ops[c].outputs[0];
        c = dqg_pass_single_consumer(s, after);
    }
    if (c < 0 || s->group[c] >= 0 || g->ops[c].kind != DQG_OP_SOFTMAX)
        return false;
    const dqg_tensor *x = &g->tensors[cur], *y = &g->tensors[g->ops[c].outputs[0]];
    if (x->dtype != DQG_F32 || y->dtype != DQG_F32 || x->rank < 2 || x->channels_last ||
        y->channels_last || g->ops[c].attrs.softmax.axis != x->rank - 1)
        return false;
    if (m->n + n_rows_ops + 1 > DQG_MAX_PART_OPS)
        return false; /* all of them or none */
    for (int k = 0; k < n_rows_ops; k++)
        dqg_match_add(m, rows_ops[k], DQG_ROLE_SM_PRE);
    dqg_match_add(m, c, DQG_ROLE_SOFTMAX);
    /* Back from the epilogue's result (the softmax's input, or the first
     * op taken above) over the chain's trailing binary ops. */
    for (;;) {
        int32_t p = g->tensors[cur].producer;
        int k = 0;
        while (k < m->n && m->ops[k] != p)
            k++;
        if (k == m->n || m->roles[k] != DQG_ROLE_POST)
            break;
        const dqg_op *op = &g->ops[p];
        if (op->kind != DQG_OP_ADD && op->kind != DQG_OP_MUL && op->kind != DQG_OP_DIV)
            break;
        m->roles[k] = DQG_ROLE_SM_PRE;
        /* The chain's value is the input another op of the match made. */
        int32_t p0 = g->tensors[op->inputs[0]].producer;
        cur = p0 >= 0 && dqg_match_has(m, p0) ? op->inputs[0] : op->inputs[1];
    }
    return true;
}

/* Whether op is a Slice of x along its last axis only, taking the upper
 * (hi) or lower half of an even last dimension. */
static bool half_slice(const dqg_graph *g, int32_t p, dqg_tensor_id x, bool hi)
{
    if (p < 0 || g->ops[p].removed || g->ops[p].kind != DQG_OP_SLICE || g->ops[p].inputs[0] != x)
        return false;
    const dqg_op *op = &g->ops[p];
    const dqg_tensor *xt = &g->tensors[x], *yt = &g->tensors[op->outputs[0]];
    int r = xt->rank;
    if (r < 1 || yt->rank != r || xt->dims[r - 1] < 2 || xt->dims[r - 1] % 2)
        return false;
    for (int i = 0; i + 1 < r; i++)
        if (op->attrs.slice.start[i] != 0 || op->attrs.slice.step[i] != 1 ||
            yt->dims[i] != xt->dims[i])
            return false;
    int64_t h = xt->dims[r - 1] / 2;
    return op->attrs.slice.step[r - 1] == 1 && yt->dims[r - 1] == h &&
           op->attrs.slice.start[r - 1] == (hi ? h : 0);
}

/* The op making t, when it is a free op of `kind` whose result only `reader` reads. */
static int32_t free_producer(const dqg_pass_state *s, dqg_tensor_id t, dqg_op_kind kind,
                             int32_t reader)
{
    const dqg_graph *g = s->graph;
    int32_t p = g->tensors[t].producer;
    if (p < 0 || g->ops[p].removed || s->group[p] >= 0 || g->ops[p].kind != kind ||
        dqg_pass_single_consumer(s, t) != reader)
        return -1;
    return p;
}

/* Whether f32 tensor b broadcasts into x's shape (x's shape unchanged). */
static bool broadcasts_into(const dqg_tensor *b, const dqg_tensor *x)
{
    if (b->dtype != DQG_F32 || b->channels_last || b->rank > x->rank)
        return false;
    for (int i = 0; i < b->rank; i++) {
        int64_t d = b->dims[b->rank - 1 - i];
        if (d != 1 && d != x->dims[x->rank - 1 - i])
            return false;
    }
    return true;
}

/* Rotary position embedding as exporters write it (rotate_half):
 * y = x * cos + Concat(-x[..., h:], x[..., :h]) * sin along the last axis
 * of an f32 x with d = 2h, cos and sin broadcasting into x. The seven ops
 * become one partition: one pass over x (runtime/kernel_rotary.c) with
 * the ops' roundings (two products and their sum; the negation is
 * exact), where they were seven partitions and four tensors in memory. */
static dqg_status lower_rotary(dqg_pass_state *s, int32_t i)
{
    const dqg_graph *g = s->graph;
    const dqg_op *add = &g->ops[i];
    const dqg_tensor *y = &g->tensors[add->outputs[0]];
    if (y->dtype != DQG_F32 || y->channels_last || y->rank < 1)
        return DQG_OK;
    for (int o = 0; o < 2; o++) {
        int32_t ms = free_producer(s, add->inputs[o], DQG_OP_MUL, i);
        int32_t mc = free_producer(s, add->inputs[1 - o], DQG_OP_MUL, i);
        if (ms < 0 || mc < 0)
            continue;
        int32_t cat = -1, neg, hi, lo;
        dqg_tensor_id sin = DQG_NONE, cos = DQG_NONE, x;
        for (int k = 0; k < 2 && cat < 0; k++) {
            cat = free_producer(s, g->ops[ms].inputs[k], DQG_OP_CONCAT, ms);
            sin = g->ops[ms].inputs[1 - k];
        }
        /* (sin is not the rotated x itself: Mul(cat, cat)) */
        if (cat < 0 || sin == g->ops[cat].outputs[0] || g->ops[cat].n_inputs != 2 ||
            g->ops[cat].attrs.concat.axis != y->rank - 1 ||
            (neg = free_producer(s, g->ops[cat].inputs[0], DQG_OP_UNARY, cat)) < 0 ||
            g->ops[neg].attrs.unary.op != DQG_UNARY_NEG)
            continue;
        hi = g->tensors[g->ops[neg].inputs[0]].producer;
        lo = g->tensors[g->ops[cat].inputs[1]].producer;
        x = hi >= 0 ? g->ops[hi].inputs[0] : DQG_NONE;
        /* (x computed from constants: the slices fold instead) */
        if (x == DQG_NONE || g->tensors[x].kind == DQG_TENSOR_CONSTANT || g->tensors[x].folded ||
            !half_slice(g, hi, x, true) || !half_slice(g, lo, x, false) || s->group[hi] >= 0 ||
            s->group[lo] >= 0 || dqg_pass_single_consumer(s, g->ops[neg].inputs[0]) != neg ||
            dqg_pass_single_consumer(s, g->ops[cat].inputs[1]) != cat)
            continue;
        const dqg_op *m = &g->ops[mc];
        cos = m->inputs[0] == x ? m->inputs[1] : m->inputs[1] == x ? m->inputs[0] : DQG_NONE;
        const dqg_tensor *xt = &g->tensors[x];
        if (cos == DQG_NONE || xt->dtype != DQG_F32 || xt->channels_last || xt->rank != y->rank ||
            memcmp(xt->dims, y->dims, sizeof(int64_t) * (size_t)y->rank) != 0 ||
            !broadcasts_into(&g->tensors[cos], xt) || !broadcasts_into(&g->tensors[sin], xt))
            continue;
        int32_t ops[7] = {i, mc, ms, cat, neg, hi, lo};
        uint8_t roles[7] = {DQG_ROLE_MAIN, DQG_ROLE_POST, DQG_ROLE_POST, DQG_ROLE_POST,
                            DQG_ROLE_POST, DQG_ROLE_POST, DQG_ROLE_POST};
        if (dqg_pass_add_partition(s, DQG_PART_ROTARY, ops, roles, 7) < 0)
            return DQG_OUT_OF_MEMORY;
        return dqg_explain(
            s,
            "combined: Slice '%s' + Slice '%s' + Unary '%s' + Concat '%s' + Mul '%s' "
            "+ Mul '%s' + Add '%s' -> rotary embedding, x cos + rotate_half(x) sin "
            "in one pass",
            g->ops[hi].name, g->ops[lo].name, g->ops[neg].name, g->ops[cat].name, g->ops[mc].name,
            g->ops[ms].name, add->name);
    }
    return DQG_OK;
}

/* MatMul/Convolution i with the integer cast c of its result as one
 * partition, with or without fusion: the kernel rounds the exact sum once
 * to the integer, where the f32 result between them would have rounded it
 * past 2^24 (the reference keeps it in double: dqg_ref_values.wide). */
static dqg_status lower_integer_result(dqg_pass_state *s, int32_t i, int32_t c)
{
    const dqg_graph *g = s->graph;
    int32_t ops[2] = {i, c};
    uint8_t roles[2] = {DQG_ROLE_MAIN, DQG_ROLE_CAST};
    if (dqg_pass_add_partition(s, DQG_PART_SINGLE, ops, roles, 2) < 0)
        return DQG_OUT_OF_MEMORY;
    return dqg_explain(s, "combined: %s '%s' + TypeCast '%s' -> exact %s result",
                       dqg_op_kind_name(g->ops[i].kind), g->ops[i].name, g->ops[c].name,
                       dqg_dtype_name(g->ops[c].attrs.typecast.to));
}

/* MatMul/Convolution + bias + element-wise ops as one f32 partition, a
 * MatMul with the transposes of its operands and result; one whose result
 * an integer cast alone reads, with that cast. */
static dqg_status lower_with_epilogue(dqg_pass_state *s, int32_t i, bool *done)
{
    dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    int32_t cast = dqg_fuse_integer_cast(s, i);
    *done = cast >= 0;
    if (cast >= 0)
        return lower_integer_result(s, i, cast);
    if (s->options->disable_fusion || y->rank < 2)
        return DQG_OK;
    bool own_bias = op->kind == DQG_OP_CONVOLUTION && op->inputs[2] != DQG_NONE;
    /* The epilogue's operands are constants; so must the bias be, and a
     * constant of the graph: a bias computed when the graph compiles (a
     * folded partition's result) reached the post-op chain as a run-time
     * operand and gave wrong results with the convolution's output stored
     * channels-last (test layout/conv_with_a_folded_bias_and_post_ops).
     * Such a bias stays oneDNN's bias argument, the element-wise ops run
     * after the convolution. */
    if (own_bias && g->tensors[op->inputs[2]].kind != DQG_TENSOR_CONSTANT)
        return DQG_OK;
    dqg_epilogue_rules r = {.channel_axis = op->kind == DQG_OP_CONVOLUTION &&
                                                    op->attrs.conv.data_format == DQG_FORMAT_NCX
                                                ? 1
                                                : y->rank - 1,
                            .allow_bias = !own_bias};
    dqg_fusion_match m = {0};
    dqg_match_add(&m, i, DQG_ROLE_MAIN);
    bool matmul = op->kind == DQG_OP_MATMUL;
    if (matmul)
        match_layouts(s, &m, i, false);
    dqg_fuse_match_epilogue(s, &m, &r);
    bool softmax = matmul && match_softmax(s, &m);
    if (matmul && !softmax)
        match_layouts(s, &m, i, true);
    if (m.n == 1)
        return DQG_OK;
    if (dqg_pass_add_partition(s, DQG_PART_SINGLE, m.ops, m.roles, m.n) < 0)
        return DQG_OUT_OF_MEMORY;
    char line[1024];
    size_t pos = 0;
    for (int k = 0; k < m.n && pos < sizeof line; k++)
        pos += (size_t)snprintf(line + pos, sizeof line - pos, "%s%s '%s'", k ? " + " : "",
                                dqg_op_kind_name(g->ops[m.ops[k]].kind), g->ops[m.ops[k]].name);
    *done = true;
    bool layouts = dqg_match_op(&m, DQG_ROLE_A_LAYOUT) >= 0 ||
                   dqg_match_op(&m, DQG_ROLE_B_LAYOUT) >= 0 ||
                   dqg_match_op(&m, DQG_ROLE_Y_LAYOUT) >= 0;
    bool post = false, pre = false;
    for (int k = 0; k < m.n; k++) {
        post |= m.roles[k] == DQG_ROLE_BIAS || m.roles[k] == DQG_ROLE_POST;
        pre |= m.roles[k] == DQG_ROLE_SM_PRE;
    }
    const char *sm = !softmax ? ""
                     : pre    ? ", then its softmax (with the ops before it) on each row"
                              : ", then its softmax on each row";
    return dqg_explain(
        s, "combined: %s -> %s %s%s%s%s", line, dqg_dtype_name(y->dtype),
        matmul ? "matmul" : "convolution", post ? " with post-ops" : "",
        layouts ? (post ? ", transposes as strides" : " with transposes as strides") : "", sm);
}

static const char *granularity_name(dqg_granularity g)
{
    static const char *names[] = {"per-tensor", "per-axis", "blocked", "element-wise"};
    return g <= DQG_ELEMENTWISE ? names[g] : "?";
}

static dqg_status lower_constant(dqg_pass_state *s, int32_t i)
{
    dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    uint8_t role = DQG_ROLE_MAIN;
    if (dqg_pass_add_partition(s, DQG_PART_CONST, &i, &role, 1) < 0)
        return DQG_OUT_OF_MEMORY;
    for (int o = 0; o < op->n_outputs; o++)
        g->tensors[op->outputs[o]].folded = true;
    if (op->kind != DQG_OP_DEQUANTIZE)
        return DQG_OK; /* the fold pass explained it */
    return dqg_explain(s,
                       "folded: Dequantize '%s': dequantize of constant %s weights into %s "
                       "(%zu bytes), computed once when compiled",
                       op->name, dqg_dtype_name(g->tensors[op->inputs[0]].dtype),
                       dqg_dtype_name(g->tensors[op->outputs[0]].dtype),
                       g->tensors[op->outputs[0]].nbytes);
}

dqg_status dqg_pass_lower(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    /* MatMuls first: they claim the transposes that come before them. */
    for (int32_t i = 0; i < g->n_ops; i++) {
        bool too_large, done;
        if (g->ops[i].removed || s->group[i] >= 0 || g->ops[i].kind != DQG_OP_MATMUL ||
            dqg_pass_foldable(s, i, &too_large))
            continue;
        dqg_status st = lower_with_epilogue(s, i, &done);
        if (st != DQG_OK)
            return st;
    }
    /* Then the rotary embeddings, which claim the element-wise ops and
     * slices around an Add. */
    for (int32_t i = 0; i < g->n_ops && !s->options->disable_fusion; i++) {
        if (g->ops[i].removed || s->group[i] >= 0 || g->ops[i].kind != DQG_OP_ADD)
            continue;
        dqg_status st = lower_rotary(s, i);
        if (st != DQG_OK)
            return st;
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed || s->group[i] >= 0)
            continue;
        bool too_large;
        if ((op->kind != DQG_OP_DEQUANTIZE || !s->options->disable_fusion) &&
            dqg_pass_foldable(s, i, &too_large)) {
            dqg_status st = lower_constant(s, i);
            if (st != DQG_OK)
                return st;
            continue;
        }
        if (op->kind == DQG_OP_CONVOLUTION) { /* a MatMul had its turn above */
            bool done;
            dqg_status st = lower_with_epilogue(s, i, &done);
            if (st != DQG_OK)
                return st;
            if (done)
                continue;
        }
        uint8_t role = DQG_ROLE_MAIN;
        if (dqg_pass_add_partition(s, DQG_PART_SINGLE, &i, &role, 1) < 0)
            return DQG_OUT_OF_MEMORY;
        if (op->kind == DQG_OP_DEQUANTIZE || op->kind == DQG_OP_QUANTIZE) {
            dqg_status st =
                dqg_explain(s, "lowered: %s '%s' (%s -> %s, %s) runs as its own partition",
                            dqg_op_kind_name(op->kind), op->name,
                            dqg_dtype_name(g->tensors[op->inputs[0]].dtype),
                            dqg_dtype_name(g->tensors[op->outputs[0]].dtype),
                            granularity_name(op->attrs.quant.granularity));
            if (st != DQG_OK)
                return st;
        }
    }
    return DQG_OK;
}

dqg_status dqg_pass_split(dqg_pass_state *s, int part)
{
    dqg_graph *g = s->graph;
    dqg_partition p = s->parts[part];
    free(p.outputs);
    s->parts[part] = s->parts[--s->n_parts];
    for (int k = 0; k < p.n_ops; k++)
        s->group[p.ops[k]] = -1;
    int cast_at = dqg_part_find(&p, DQG_ROLE_CAST);
    if (cast_at >= 0) {
        /* An integer result keeps its cast with the anchor. */
        int32_t i = p.ops[dqg_part_find(&p, DQG_ROLE_MAIN)];
        if (dqg_fuse_integer_cast(s, i) == p.ops[cast_at]) {
            dqg_status st = lower_integer_result(s, i, p.ops[cast_at]);
            if (st != DQG_OK)
                return st;
        }
    } else if (p.kind == DQG_PART_QMATMUL) {
        /* The weights and the anchor still make a weight-only MatMul over
         * the dequantized activations; the epilogue joins it only when it
         * follows the anchor directly. */
        bool direct = dqg_part_find(&p, DQG_ROLE_CAST) < 0 && dqg_part_find(&p, DQG_ROLE_SCALE) < 0;
        dqg_fusion_match m = {0};
        for (int k = 0; k < p.n_ops; k++) {
            dqg_part_role r = p.role[k];
            if (r == DQG_ROLE_W_DQ || r == DQG_ROLE_W_LAYOUT || r == DQG_ROLE_MAIN ||
                (direct && (r == DQG_ROLE_BIAS || r == DQG_ROLE_POST)))
                dqg_match_add(&m, p.ops[k], r);
        }
        if (dqg_pass_add_partition(s, DQG_PART_WO_MATMUL, m.ops, m.roles, m.n) < 0)
            return DQG_OUT_OF_MEMORY;
        const dqg_op *mm = &g->ops[dqg_match_op(&m, DQG_ROLE_MAIN)];
        dqg_status st = dqg_explain(s, "fallback: MatMul '%s' -> weight-only matmul", mm->name);
        if (st != DQG_OK)
            return st;
    }
    for (int k = 0; k < p.n_ops; k++) {
        int32_t i = p.ops[k];
        if (s->group[i] >= 0)
            continue;
        bool too_large;
        dqg_status st = DQG_OK;
        if (dqg_pass_foldable(s, i, &too_large)) {
            st = lower_constant(s, i);
        } else {
            uint8_t role = DQG_ROLE_MAIN;
            if (dqg_pass_add_partition(s, DQG_PART_SINGLE, &i, &role, 1) < 0)
                st = DQG_OUT_OF_MEMORY;
        }
        if (st != DQG_OK)
            return st;
    }
    dqg_status st = dqg_pass_partition(s);
    return st == DQG_OK ? dqg_pass_choose_layouts(s) : st;
}
