/* choose layouts: decides, once for the whole graph, which activations are
 * stored channels-last. oneDNN's fast convolutions (int8 always, f32 often)
 * want channels-last activations; a row-major graph (NCHW, as ONNX writes
 * it) otherwise pays a reorder into and out of every convolution. Graph
 * inputs and outputs stay row-major: the convolutions at the edges reorder,
 * except after the quantize of an image input, which writes its result in
 * the layout the convolution wants.
 *
 * Activations are grouped into classes that must share a layout: the
 * inputs and output of a layout-agnostic partition (element-wise ops, a
 * per-tensor quantize or dequantize, a concat along the channels, an LRN)
 * are one class. A class goes
 * channels-last when a convolution reads or writes it and no member is
 * read or written by a partition that needs row-major data (anything that
 * indexes the layout: reshapes, matmuls, per-axis quantization...). A
 * pooling takes either layout on each side and constrains neither. Kernels
 * read each tensor's layout from its flag; a kernel that cannot (the
 * reference fallback) converts at its boundary, so a choice is never wrong,
 * only slower. */
#include <stdlib.h>

#include "passes/passes.h"

/* A tensor whose row-major and channels-last bytes differ and that may be
 * laid out by the pass: an intermediate of rank 3-5 with whole-byte
 * elements and some spatial extent. */
static bool movable(const dqg_graph *g, dqg_tensor_id t)
{
    const dqg_tensor *x = &g->tensors[t];
    if (x->rank < 3 || x->rank > 5 || dqg_dtype_bits(x->dtype) < 8)
        return false;
    int64_t spatial = 1;
    for (int i = 2; i < x->rank; i++)
        spatial *= x->dims[i];
    return spatial > 1 && x->dims[1] > 1;
}

static bool layout_free(const dqg_graph *g, dqg_tensor_id t)
{
    const dqg_tensor *x = &g->tensors[t];
    if (x->rank < 3)
        return true;
    int64_t spatial = 1;
    for (int i = 2; i < x->rank; i++)
        spatial *= x->dims[i];
    return spatial == 1 || x->dims[1] == 1;
}

static bool candidate(const dqg_graph *g, dqg_tensor_id t)
{
    const dqg_tensor *x = &g->tensors[t];
    return x->kind == DQG_TENSOR_INTERMEDIATE && !x->is_output && !x->folded && movable(g, t);
}

typedef struct layout_state {
    int32_t *parent;
    bool *plain; /* a member must be row-major (per class root after merging) */
    bool *conv;  /* a convolution reads or writes a member */
} layout_state;

static int32_t find(layout_state *L, int32_t t)
{
    while (L->parent[t] != t)
        t = L->parent[t] = L->parent[L->parent[t]];
    return t;
}

static void unite(layout_state *L, int32_t a, int32_t b)
{
    a = find(L, a);
    b = find(L, b);
    if (a != b)
        L->parent[b] = a;
}

/* Records tensor t as read or written by a partition: `need_plain` when
 * that partition indexes its layout, `conv` when it is a convolution. */
static void touch(const dqg_graph *g, layout_state *L, dqg_tensor_id t, bool need_plain, bool conv)
{
    if (t == DQG_NONE || layout_free(g, t))
        return;
    if (!candidate(g, t))
        need_plain = true; /* graph inputs, outputs and constants are row-major */
    L->plain[t] |= need_plain;
    L->conv[t] |= conv;
}

static bool agnostic_op(const dqg_graph *g, const dqg_op *op)
{
    switch (op->kind) {
    case DQG_OP_RELU:
    case DQG_OP_CLIP:
    case DQG_OP_TYPECAST:
    case DQG_OP_ADD:
    case DQG_OP_MUL:
    case DQG_OP_SUB:
    case DQG_OP_DIV:
    case DQG_OP_UNARY:
    case DQG_OP_BIAS_ADD:
        return true;
    case DQG_OP_DEQUANTIZE:
    case DQG_OP_QUANTIZE:
        return op->attrs.quant.granularity == DQG_PER_TENSOR;
    case DQG_OP_DYNAMIC_QUANTIZE:
        return true;
    case DQG_OP_LRN: /* its kernel works in either layout, the same on both sides */
        return true;
    default:
        (void)g;
        return false;
    }
}

/* The tensors a partition reads from outside itself or writes for others. */
static int boundary(const dqg_pass_state *s, int p, dqg_tensor_id *in, int cap)
{
    const dqg_graph *g = s->graph;
    const dqg_partition *part = &s->parts[p];
    int n = 0;
    for (int k = 0; k < part->n_ops; k++) {
        const dqg_op *op = &g->ops[part->ops[k]];
        for (int i = 0; i < op->n_inputs && n < cap; i++) {
            dqg_tensor_id t = op->inputs[i];
            if (t == DQG_NONE)
                continue;
            int32_t pr = g->tensors[t].producer;
            if (pr < 0 || s->group[pr] != p)
                in[n++] = t;
        }
    }
    return n;
}

/* Whether an op of the partition's epilogue (a bias or element-wise
 * operand, the residual's dequantize) reads t: it then reads t in the
 * result's layout, even when t is the convolution's source too. */
static bool epilogue_reads(const dqg_graph *g, const dqg_partition *part, dqg_tensor_id t)
{
    for (int k = 0; k < part->n_ops; k++) {
        dqg_part_role r = part->role[k];
        if (r != DQG_ROLE_BIAS && r != DQG_ROLE_POST && r != DQG_ROLE_SUM_SRC_DQ)
            continue;
        const dqg_op *op = &g->ops[part->ops[k]];
        for (int i = 0; i < op->n_inputs; i++)
            if (op->inputs[i] == t)
                return true;
    }
    return false;
}

static void visit_partition(const dqg_pass_state *s, layout_state *L, int p)
{
    const dqg_graph *g = s->graph;
    const dqg_partition *part = &s->parts[p];
    const dqg_op *main = &g->ops[part->ops[dqg_part_find(part, DQG_ROLE_MAIN)]];
    /* Every op of a partition reads at most three outside tensors (a
     * dequantize: its source, scale and zero point), but a concat reads
     * one per input. */
    enum { MAX_IN = 3 * DQG_MAX_PART_OPS + 8 };
    dqg_tensor_id ins[MAX_IN];
    int n_in = boundary(s, p, ins, MAX_IN);
    /* An int8 ConvTranspose reads and writes channels-last as a
     * convolution does (oneDNN 2.6 offers only gemm and reference int8
     * deconvolutions on NCX); the f32 one keeps NCX. */
    bool conv =
        (main->kind == DQG_OP_CONVOLUTION && main->attrs.conv.data_format == DQG_FORMAT_NCX) ||
        (main->kind == DQG_OP_CONV_TRANSPOSE && part->kind == DQG_PART_QCONV);
    if (conv) {
        /* The convolution's source and result take either layout; an
         * operand of the result's shape (a residual Add) shares the
         * result's. Everything else it reads is a constant. */
        dqg_tensor_id result = dqg_part_result(g, part);
        int sdq = dqg_part_find(part, DQG_ROLE_SRC_DQ),
            sq = dqg_part_find(part, DQG_ROLE_SRC_QUANT);
        dqg_tensor_id src = sq >= 0    ? g->ops[part->ops[sq]].inputs[0]
                            : sdq >= 0 ? g->ops[part->ops[sdq]].inputs[0]
                                       : main->inputs[0];
        for (int i = 0; i < n_in; i++) {
            dqg_tensor_id t = ins[i];
            if (t == src && !epilogue_reads(g, part, t)) {
                touch(g, L, t, false, true);
            } else if (movable(g, t) && g->tensors[t].nelems == g->tensors[result].nelems) {
                touch(g, L, t, false, true);
                if (candidate(g, t) && candidate(g, result)) {
                    unite(L, t, result);
                } else {
                    /* The kernel reads it in the result's layout: a
                     * row-major operand (a graph input, an output) keeps
                     * the result row-major too. */
                    L->plain[t] = true;
                    L->plain[result] = true;
                }
            } else {
                touch(g, L, t, true, false);
            }
        }
        touch(g, L, result, false, true);
        for (int o = 0; o < part->n_outputs; o++)
            if (part->outputs[o] != result)
                touch(g, L, part->outputs[o], true, false);
        return;
    }
    /* A lone per-tensor QuantizeLinear of a row-major image (a graph
     * input of at most 4 channels, as networks take pictures) writes its
     * result in whichever layout that result's class takes: the quantize
     * kernel transposes as it goes, where a channels-last first
     * convolution would otherwise reorder the quantized image on its own
     * pass. */
    if (main->kind == DQG_OP_QUANTIZE && part->kind == DQG_PART_SINGLE && part->n_ops == 1 &&
        main->attrs.quant.granularity == DQG_PER_TENSOR && !candidate(g, main->inputs[0]) &&
        movable(g, main->inputs[0]) && g->tensors[main->inputs[0]].dims[1] <= 4 &&
        dqg_dtype_bits(g->tensors[main->outputs[0]].dtype) == 8) {
        touch(g, L, main->inputs[0], true, false);
        touch(g, L, main->outputs[0], false, false);
        return;
    }
    if (main->kind == DQG_OP_POOL && part->n_ops == 1) {
        /* The pooling kernel reads and writes either layout; it follows
         * its neighbours (int8 pooling stays int8, in their layout). */
        for (int i = 0; i < n_in; i++)
            touch(g, L, ins[i], false, false);
        for (int o = 0; o < part->n_outputs; o++)
            touch(g, L, part->outputs[o], false, false);
        return;
    }
    /* A concat along the channels runs in either layout when its inputs
     * and result share it: one class, as element-wise operands. */
    const dqg_op *cat = main;
    if (part->kind == DQG_PART_QCONCAT)
        cat = &g->ops[part->ops[dqg_part_find(part, DQG_ROLE_POST)]];
    bool channel_concat =
        ((part->kind == DQG_PART_SINGLE && part->n_ops == 1) || part->kind == DQG_PART_QCONCAT) &&
        cat->kind == DQG_OP_CONCAT && cat->attrs.concat.axis == 1;
    /* Element-wise partitions (a single element-wise op, or a quantized
     * element-wise chain) keep their operands' and result's layout. */
    bool agnostic = (part->kind == DQG_PART_SINGLE && part->n_ops == 1 && agnostic_op(g, main)) ||
                    part->kind == DQG_PART_QELTWISE || channel_concat;
    dqg_tensor_id first = DQG_NONE;
    for (int i = 0; i < n_in + part->n_outputs; i++) {
        dqg_tensor_id t = i < n_in ? ins[i] : part->outputs[i - n_in];
        if (layout_free(g, t))
            continue;
        touch(g, L, t, !agnostic, false);
        if (!agnostic)
            continue;
        /* Operands of the element-wise shape share one layout; a broadcast
         * operand with spatial extent indexes it. */
        if (!channel_concat && g->tensors[t].nelems != g->tensors[dqg_part_result(g, part)].nelems)
            L->plain[t] = true;
        else if (candidate(g, t)) {
            if (first == DQG_NONE)
                first = t;
            else
                unite(L, first, t);
        } else {
            L->plain[t] = true;
            if (first != DQG_NONE)
                L->plain[first] = true;
            else
                first = t; /* a non-candidate fixes the class row-major */
        }
    }
}

dqg_status dqg_pass_choose_layouts(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    for (int32_t t = 0; t < g->n_tensors; t++)
        g->tensors[t].channels_last = false;
    if (s->options->backend == DQG_BACKEND_REFERENCE)
        return DQG_OK;
    layout_state L = {
        .parent = malloc(((size_t)g->n_tensors + 1) * sizeof *L.parent),
        .plain = calloc((size_t)g->n_tensors + 1, sizeof *L.plain),
        .conv = calloc((size_t)g->n_tensors + 1, sizeof *L.conv),
    };
    if (!L.parent || !L.plain || !L.conv) {
        free(L.parent);
        free(L.plain);
        free(L.conv);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "choose layouts: out of memory");
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        L.parent[t] = t;
    for (int p = 0; p < s->n_parts; p++)
        visit_partition(s, &L, p);
    /* Per class: row-major if any member must be, channels-last if a
     * convolution touches one. */
    bool *cls_plain = calloc((size_t)g->n_tensors + 1, sizeof *cls_plain);
    bool *cls_conv = calloc((size_t)g->n_tensors + 1, sizeof *cls_conv);
    int n_cl = 0;
    dqg_status st = DQG_OK;
    if (!cls_plain || !cls_conv) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "choose layouts: out of memory");
        goto done;
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t r = find(&L, t);
        cls_plain[r] |= L.plain[t] || !candidate(g, t);
        cls_conv[r] |= L.conv[t];
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t r = find(&L, t);
        if (candidate(g, t) && !cls_plain[r] && cls_conv[r]) {
            g->tensors[t].channels_last = true;
            n_cl++;
        }
    }
    if (n_cl)
        st = dqg_explain(s,
                         "layout: %d activation tensor%s stored channels-last, so the "
                         "convolutions and the ops between them run without reorders",
                         n_cl, n_cl == 1 ? "" : "s");
done:
    free(cls_plain);
    free(cls_conv);
    free(L.parent);
    free(L.plain);
    free(L.conv);
    return st;
}
