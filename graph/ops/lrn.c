/* LRN: local response normalization across channels, as ONNX defines it:
 * y[c] = x[c] / (bias + alpha / size * sum of x[i]^2 for i in
 * [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)])^beta, on an NCX
 * f32 tensor of rank 3 to 5. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "LRN"

static const dqg_dtype f32_only[] = {DQG_F32};

dqg_tensor_id dqg_lrn(dqg_graph *g, const char *name, dqg_tensor_id x, int size, float alpha,
                      float beta, float bias)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false) ||
        !dqg_check_dtype_in(g, KIND, name, 0, "x", x, f32_only, 1))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    const dqg_tensor *t = &g->tensors[x];
    if (t->rank < 3 || t->rank > 5)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 (x) has rank %d; it must be NCX of rank 3 to 5",
                              shown, t->rank);
    if (size < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': size %d; it must be >= 1",
                              shown, size);
    if (!isfinite(alpha) || !isfinite(beta) || !isfinite(bias))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': alpha %g, beta %g, bias %g; all must be finite", shown,
                              (double)alpha, (double)beta, (double)bias);
    if (!(bias > 0.0f))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': bias %g; it must be > 0 (the base of a power)", shown,
                              (double)bias);
    int32_t o = dqg_graph_add_op_like(g, DQG_OP_LRN, name, 1, &x);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.lrn.size = size;
    g->ops[o].attrs.lrn.alpha = alpha;
    g->ops[o].attrs.lrn.beta = beta;
    g->ops[o].attrs.lrn.bias = bias;
    return g->ops[o].outputs[0];
}

static dqg_status lrn_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const float *X = v->data[op->inputs[0]];
    float *Y = v->data[op->outputs[0]];
    int64_t n = x->dims[0], c = x->dims[1], sp = 1;
    for (int i = 2; i < x->rank; i++)
        sp *= x->dims[i];
    int size = op->attrs.lrn.size;
    int64_t lo = (size - 1) / 2, hi = size / 2; /* floor and ceil of (size - 1) / 2 */
    double a = (double)op->attrs.lrn.alpha / size, b = op->attrs.lrn.beta, k = op->attrs.lrn.bias;
    for (int64_t in = 0; in < n; in++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t s = 0; s < sp; s++) {
                double sum = 0.0;
                for (int64_t j = ch - lo; j <= ch + hi; j++)
                    if (j >= 0 && j < c) {
                        double f = X[(in * c + j) * sp + s];
                        sum += f * f;
                    }
                int64_t i = (in * c + ch) * sp + s;
                Y[i] = (float)(X[i] / pow(k + a * sum, b));
            }
    return DQG_OK;
}

static void lrn_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "size=%d alpha=%g beta=%g bias=%g", op->attrs.lrn.size,
             (double)op->attrs.lrn.alpha, (double)op->attrs.lrn.beta, (double)op->attrs.lrn.bias);
}

const dqg_op_def dqg_op_def_lrn = {
    .kind = DQG_OP_LRN,
    .name = KIND,
    .reference = lrn_reference,
    .format_attrs = lrn_format,
};
