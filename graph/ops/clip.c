/* Clip: min(max(x, lo), hi) on a float tensor; NaN propagates. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Clip"

dqg_tensor_id dqg_clip(dqg_graph *g, const char *name, dqg_tensor_id x, float lo, float hi)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "x", x, false) ||
        !dqg_check_float_dtype(g, KIND, name, 0, "x", x))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    if (isnan(lo) || isnan(hi))
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': %s is NaN; min and max must not be NaN", shown,
                              isnan(lo) ? "min" : "max");
    if (lo > hi)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': min %g is greater than max %g",
                              shown, (double)lo, (double)hi);
    int32_t op = dqg_graph_add_op_like(g, DQG_OP_CLIP, name, 1, &x);
    if (op < 0)
        return DQG_NONE;
    g->ops[op].attrs.clip.lo = lo;
    g->ops[op].attrs.clip.hi = hi;
    return g->ops[op].outputs[0];
}

static dqg_status clip_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const void *X = v->data[op->inputs[0]];
    void *Y = v->data[op->outputs[0]];
    float lo = op->attrs.clip.lo, hi = op->attrs.clip.hi;
    for (int64_t i = 0; i < x->nelems; i++) {
        float f = dqg_load_float(x->dtype, X, i);
        if (f < lo)
            f = lo;
        if (f > hi)
            f = hi;
        dqg_store_float(x->dtype, Y, i, f);
    }
    return DQG_OK;
}

static void clip_format(const dqg_op *op, char *buf, size_t size)
{
    snprintf(buf, size, "min=%g max=%g", (double)op->attrs.clip.lo, (double)op->attrs.clip.hi);
}

const dqg_op_def dqg_op_def_clip = {
    .kind = DQG_OP_CLIP,
    .name = KIND,
    .reference = clip_reference,
    .format_attrs = clip_format,
};
