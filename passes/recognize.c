/* recognize: rewrites subgraphs that compute one known function into that
 * function, so the kernels and the epilogue matcher see one op:
 *   - GELU written with Erf, as BERT exporters write it:
 *       x * 0.5 * (1 + erf(x / sqrt 2))   (Div or Mul by 1/sqrt 2; the
 *       products in either order, the halving first or last)
 *     becomes Unary Gelu(x);
 *   - SiLU, x * sigmoid(x), becomes Unary Swish(x) with alpha 1.
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

dqg_status dqg_pass_recognize(dqg_pass_state *s)
{
    if (s->options->disable_fusion)
        return DQG_OK;
    dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op *op = &g->ops[i];
        if (op->removed || op->kind != DQG_OP_MUL)
            continue;
        int32_t removed[5];
        int n = 0;
        const char *what = NULL;
        if (gelu_at(s, i, removed, &n))
            what = "Gelu (the Erf form)";
        else if (silu_at(s, i, removed, &n))
            what = "Swish (SiLU, x * sigmoid(x))";
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
