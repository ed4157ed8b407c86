/* recognize: rewrites subgraphs that compute one known function into that
 * function, so the kernels and the epilogue matcher see one op:
 *   - GELU written with Erf, as BERT exporters write it:
 *       x * 0.5 * (1 + erf(x / sqrt 2))   (Div or Mul by 1/sqrt 2; the
 *       products in either order, the halving first or last)
 *     becomes Unary Gelu(x);
 *   - SiLU, x * sigmoid(x), becomes Unary Swish(x) with alpha 1;
 *   - RMS normalization, as Llama exporters write it:
 *       Mul(x / Sqrt(ReduceMean(x^2) + eps), gamma)   (the square as Pow
 *       or Mul(x, x); the division as Div, or Mul by Reciprocal or by
 *       Div(1, root); gamma of the reduced dimensions)
 *     becomes LayerNorm with its rms flag, which rounds as those ops do.
 * The op that produced the pattern's result becomes the new op; the others,
 * whose results nothing else reads, are removed. Float32 only; the
 * constants must match to 1e-6 relative. Off when fusion is off. */
#include <math.h>
#include <string.h>

#include "graph/dtype.h"
#include "passes/passes.h"

/* The value of a constant scalar (any float type), or NAN. */
static double const_scalar(const dqg_graph *g, dqg_tensor_id t)
{
    if (t == DQG_NONE)
        return NAN;
    const dqg_tensor *c = &g->tensors[t];
    if (c->kind != DQG_TENSOR_CONSTANT || c->nelems != 1 || !c->data ||
        dqg_dtype_is_integer(c->dtype))
        return NAN;
    return dqg_load_float(c->dtype, c->data, 0);
}

static bool near(double v, double want)
{
    return fabs(v - want) <= 1e-6 * fabs(want);
}

/* The live op producing t, if it is of `kind` and t has no other reader. */
static const dqg_op *sole(const dqg_pass_state *s, dqg_tensor_id t, dqg_op_kind kind,
                          int32_t *index)
{
    const dqg_graph *g = s->graph;
    int32_t p = g->tensors[t].producer;
    if (p < 0 || g->ops[p].removed || g->ops[p].kind != kind || g->tensors[t].is_output ||
        dqg_pass_single_consumer(s, t) < 0)
        return NULL;
    if (index)
        *index = p;
    return &g->ops[p];
}

static void become_unary(dqg_graph *g, int32_t i, dqg_unary_op f, dqg_tensor_id x, float alpha)
{
    dqg_op *op = &g->ops[i];
    op->kind = DQG_OP_UNARY;
    op->n_inputs = 1;
    op->inputs[0] = x;
    op->inputs[1] = DQG_NONE;
    memset(&op->attrs, 0, sizeof op->attrs);
    op->attrs.unary.op = f;
    op->attrs.unary.alpha = alpha;
}

/* x = the input of erf's argument: Div(x, sqrt 2) or Mul(x, 1/sqrt 2). */
static dqg_tensor_id erf_source(const dqg_pass_state *s, dqg_tensor_id arg, int32_t *op)
{
    const dqg_graph *g = s->graph;
    const dqg_op *d = sole(s, arg, DQG_OP_DIV, op);
    if (d && near(const_scalar(g, d->inputs[1]), sqrt(2.0)))
        return d->inputs[0];
    const dqg_op *m = sole(s, arg, DQG_OP_MUL, op);
    if (m) {
        for (int k = 0; k < 2; k++)
            if (near(const_scalar(g, m->inputs[k]), sqrt(0.5)))
                return m->inputs[1 - k];
    }
    return DQG_NONE;
}

/* A GELU ending at Mul op `i`; on success, rewrites it and returns true. */
static bool gelu_at(dqg_pass_state *s, int32_t i, int32_t *removed, int *n_removed)
{
    dqg_graph *g = s->graph;
    const dqg_op *fin = &g->ops[i];
    if (fin->n_inputs != 2 || g->tensors[fin->outputs[0]].dtype != DQG_F32)
        return false;
    /* One operand is 1 + erf(...); the other is x * 0.5, or x (then the
     * final Mul's constant 0.5 comes after: Mul(Mul(x, A), 0.5)). */
    for (int side = 0; side < 2; side++) {
        dqg_tensor_id a = fin->inputs[side], rest = fin->inputs[1 - side];
        int32_t ia, ie, id, ih = -1, im = -1;
        double half = NAN;
        dqg_tensor_id x = DQG_NONE;
        /* Last-op-is-halving form: fin = Mul(m, 0.5), m = Mul(x, A). */
        if (near(const_scalar(g, rest), 0.5)) {
            const dqg_op *m = sole(s, a, DQG_OP_MUL, &im);
            if (!m)
                continue;
            for (int k = 0; k < 2; k++) {
                dqg_tensor_id aa = m->inputs[k];
                const dqg_op *add = sole(s, aa, DQG_OP_ADD, &ia);
                if (!add)
                    continue;
                half = 0.5;
                a = aa;
                x = m->inputs[1 - k];
                break;
            }
            if (x == DQG_NONE)
                continue;
        }
        const dqg_op *add = sole(s, a, DQG_OP_ADD, &ia);
        if (!add)
            continue;
        dqg_tensor_id e = DQG_NONE;
        for (int k = 0; k < 2; k++)
            if (near(const_scalar(g, add->inputs[k]), 1.0))
                e = add->inputs[1 - k];
        const dqg_op *erf = e == DQG_NONE ? NULL : sole(s, e, DQG_OP_UNARY, &ie);
        if (!erf || erf->attrs.unary.op != DQG_UNARY_ERF)
            continue;
        dqg_tensor_id src = erf_source(s, erf->inputs[0], &id);
        if (src == DQG_NONE)
            continue;
        if (isnan(half)) {
            /* rest = x * 0.5 (either order), or rest = x and ... no: the
             * halving must be somewhere. */
            const dqg_op *h = sole(s, rest, DQG_OP_MUL, &ih);
            if (!h)
                continue;
            dqg_tensor_id hx = DQG_NONE;
            for (int k = 0; k < 2; k++)
                if (near(const_scalar(g, h->inputs[k]), 0.5))
                    hx = h->inputs[1 - k];
            if (hx != src)
                continue;
            x = src;
        } else if (x != src) {
            continue;
        }
        /* The erf argument's reader count: x also feeds the product. */
        become_unary(g, i, DQG_UNARY_GELU_ERF, x, 0.0f);
        int32_t dead[] = {id, ie, ia, im, ih};
        for (int k = 0; k < 5; k++)
            if (dead[k] >= 0) {
                g->ops[dead[k]].removed = true;
                removed[(*n_removed)++] = dead[k];
            }
        return true;
    }
    return false;
}

/* SiLU ending at Mul op `i`: Mul(x, Sigmoid(x)). */
static bool silu_at(dqg_pass_state *s, int32_t i, int32_t *removed, int *n_removed)
{
    dqg_graph *g = s->graph;
    const dqg_op *fin = &g->ops[i];
    if (fin->n_inputs != 2 || g->tensors[fin->outputs[0]].dtype != DQG_F32)
        return false;
    for (int side = 0; side < 2; side++) {
        int32_t is;
        const dqg_op *sg = sole(s, fin->inputs[side], DQG_OP_UNARY, &is);
        if (!sg || sg->attrs.unary.op != DQG_UNARY_SIGMOID ||
            sg->inputs[0] != fin->inputs[1 - side])
            continue;
        dqg_tensor_id x = fin->inputs[1 - side];
        become_unary(g, i, DQG_UNARY_SWISH, x, 1.0f);
        g->ops[is].removed = true;
        removed[(*n_removed)++] = is;
        return true;
    }
    return false;
}

/* x, when t is x^2: Pow(x, 2) (binary, or the unary form a constant
 * exponent becomes) or Mul(x, x). */
static dqg_tensor_id square_source(const dqg_pass_state *s, dqg_tensor_id t, int32_t *op)
{
    const dqg_graph *g = s->graph;
    const dqg_op *u = sole(s, t, DQG_OP_UNARY, op);
    if (u && u->attrs.unary.op == DQG_UNARY_POW && u->attrs.unary.alpha == 2.0f)
        return u->inputs[0];
    const dqg_op *p = sole(s, t, DQG_OP_POW, op);
    if (p && const_scalar(g, p->inputs[1]) == 2.0)
        return p->inputs[0];
    const dqg_op *m = sole(s, t, DQG_OP_MUL, op);
    if (m && m->inputs[0] == m->inputs[1])
        return m->inputs[0];
    return DQG_NONE;
}

/* The first reduced axis when `axes` holds every axis from it to the last
 * of a rank-`rank` tensor, else -1. */
static int trailing_axes(uint32_t axes, int rank)
{
    for (int a = 0; a < rank; a++)
        if (axes == ((1u << rank) - 1) - ((1u << a) - 1))
            return a;
    return -1;
}

/* Whether gamma multiplies x's dimensions from `axis` on, one value each,
 * without broadcasting x itself. */
static bool scale_shape(const dqg_tensor *gamma, const dqg_tensor *x, int axis)
{
    if (gamma->dtype != DQG_F32 || gamma->rank > x->rank)
        return false;
    for (int j = 0; j < gamma->rank; j++) {
        int p = x->rank - gamma->rank + j;
        if (gamma->dims[j] != (p < axis ? 1 : x->dims[p]))
            return false;
    }
    return gamma->rank >= x->rank - axis;
}

/* RMS normalization ending at Mul op `i`: Mul(n, gamma) (either order),
 * n = x / root, x * Reciprocal(root) or x * Div(1, root), root =
 * Sqrt(Add(ReduceMean(x^2, trailing axes, kept), eps)). */
static bool rms_at(dqg_pass_state *s, int32_t i, int32_t *removed, int *n_removed)
{
    dqg_graph *g = s->graph;
    const dqg_op *fin = &g->ops[i];
    if (fin->n_inputs != 2 || g->tensors[fin->outputs[0]].dtype != DQG_F32)
        return false;
    for (int side = 0; side < 2; side++) {
        dqg_tensor_id n = fin->inputs[side], gamma = fin->inputs[1 - side];
        int32_t dead[6] = {-1, -1, -1, -1, -1, -1};
        dqg_tensor_id x = DQG_NONE, root = DQG_NONE;
        bool recip = false;
        const dqg_op *d = sole(s, n, DQG_OP_DIV, &dead[0]);
        const dqg_op *m = d ? NULL : sole(s, n, DQG_OP_MUL, &dead[0]);
        if (d) {
            x = d->inputs[0];
            root = d->inputs[1];
        } else if (m) {
            recip = true;
            for (int k = 0; k < 2 && root == DQG_NONE; k++) {
                const dqg_op *r = sole(s, m->inputs[k], DQG_OP_UNARY, &dead[1]);
                if (r && r->attrs.unary.op == DQG_UNARY_RECIPROCAL) {
                    root = r->inputs[0];
                } else {
                    const dqg_op *q = sole(s, m->inputs[k], DQG_OP_DIV, &dead[1]);
                    if (q && const_scalar(g, q->inputs[0]) == 1.0 &&
                        g->tensors[q->inputs[0]].rank == 0)
                        root = q->inputs[1];
                }
                if (root != DQG_NONE)
                    x = m->inputs[1 - k];
            }
        }
        if (x == DQG_NONE)
            continue;
        const dqg_op *sq = sole(s, root, DQG_OP_UNARY, &dead[2]);
        if (!sq || sq->attrs.unary.op != DQG_UNARY_SQRT)
            continue;
        const dqg_op *add = sole(s, sq->inputs[0], DQG_OP_ADD, &dead[3]);
        if (!add)
            continue;
        double eps = NAN;
        dqg_tensor_id ms = DQG_NONE;
        for (int k = 0; k < 2; k++)
            if (g->tensors[add->inputs[k]].dtype == DQG_F32 &&
                isfinite(const_scalar(g, add->inputs[k])) &&
                const_scalar(g, add->inputs[k]) >= 0.0) {
                eps = const_scalar(g, add->inputs[k]);
                ms = add->inputs[1 - k];
            }
        const dqg_op *mean = ms == DQG_NONE ? NULL : sole(s, ms, DQG_OP_REDUCE, &dead[4]);
        if (!mean || mean->attrs.reduce.op != DQG_REDUCE_MEAN)
            continue;
        const dqg_tensor *xt = &g->tensors[x];
        int axis = trailing_axes(mean->attrs.reduce.axes, xt->rank);
        if (xt->dtype != DQG_F32 || axis < 0 || g->tensors[ms].rank != xt->rank ||
            square_source(s, mean->inputs[0], &dead[5]) != x ||
            !scale_shape(&g->tensors[gamma], xt, axis))
            continue;
        dqg_op *op = &g->ops[i];
        op->kind = DQG_OP_LAYER_NORM;
        op->n_inputs = 3;
        op->inputs[0] = x;
        op->inputs[1] = gamma;
        op->inputs[2] = DQG_NONE;
        memset(&op->attrs, 0, sizeof op->attrs);
        op->attrs.layer_norm.axis = axis;
        op->attrs.layer_norm.epsilon = (float)eps;
        op->attrs.layer_norm.rms = true;
        op->attrs.layer_norm.rms_recip = recip;
        for (int k = 0; k < 6; k++)
            if (dead[k] >= 0) {
                g->ops[dead[k]].removed = true;
                removed[(*n_removed)++] = dead[k];
            }
        return true;
    }
    return false;
}

dqg_status dqg_pass_recognize(dqg_pass_state *s)
{
    if (s->options->disable_fusion)
        return DQG_OK;
    dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op *op = &g->ops[i];
        if (op->removed || op->kind != DQG_OP_MUL)
            continue;
        int32_t removed[6];
        int n = 0;
        const char *what = NULL;
        if (gelu_at(s, i, removed, &n))
            what = "Gelu (the Erf form)";
        else if (silu_at(s, i, removed, &n))
            what = "Swish (SiLU, x * sigmoid(x))";
        else if (rms_at(s, i, removed, &n))
            what = "RMS normalization";
        if (!what)
            continue;
        dqg_status st = dqg_explain(s, "recognized: '%s' and %d ops before it compute %s: one op",
                                    op->name, n, what);
        if (st != DQG_OK)
            return st;
        /* Readers changed: later matches must see them. */
        if ((st = dqg_pass_index(s)) != DQG_OK)
            return st;
    }
    return DQG_OK;
}
