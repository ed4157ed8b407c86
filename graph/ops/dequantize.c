/* The canonical DEQUANTIZE op every front door produces:
 * y = (x - zero_point) * scale, with x - zero_point formed exactly and
 * rounded once to float32, multiplied by the scale in float32, and rounded
 * once to the output type (round to nearest even). */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

static const char *const dialect_names[] = {"DequantizeLinear", "DynamicDequantize",
                                            "ExtendedDequantizeLinear", "DML_DequantizeLinear"};

dqg_tensor_id dqg_emit_dequantize(dqg_graph *g, const char *name, dqg_tensor_id x,
                                  dqg_tensor_id scale, dqg_tensor_id zp, const dqg_quant_attrs *q)
{
    return dqg_emit_quant_op(g, DQG_OP_DEQUANTIZE, name, x, scale, zp, q);
}

/* The int32 rule ("int32 has no zero point"): a constant zero point of an
 * s32 input must be all zeros. The check runs at finalize, when constants
 * are known; a run-time zero point is checked when the graph runs. */
static bool s32_zero_point_rule_applies(const dqg_graph *g, const dqg_op *op)
{
    return op->inputs[2] != DQG_NONE && g->tensors[op->inputs[0]].dtype == DQG_S32;
}

dqg_status dqg_dequantize_check_s32_zero_point(dqg_dq_dialect dialect, const char *op_name,
                                               dqg_dtype zp_dtype, const void *zp, int64_t n,
                                               const char *when)
{
    for (int64_t i = 0; i < n; i++) {
        /* Exactly 0: a float zero point of 0.3 or NaN is refused, not rounded. */
        double v = dqg_load_double(zp_dtype, zp, i);
        if (v != 0)
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "%s '%s': input 2 (zero point): element %lld is %g %s; an int32 "
                                 "input has no zero point (it must be absent or 0)",
                                 dialect_names[dialect], op_name, (long long)i, v, when);
    }
    return DQG_OK;
}

static dqg_status first_nonzero(const dqg_graph *g, const dqg_op *op, const void *zp,
                                const char *when)
{
    const dqg_tensor *z = &g->tensors[op->inputs[2]];
    return dqg_dequantize_check_s32_zero_point(op->attrs.quant.dialect, op->name, z->dtype, zp,
                                               z->nelems, when);
}

static dqg_status dequantize_verify(const dqg_graph *g, const dqg_op *op)
{
    if (!s32_zero_point_rule_applies(g, op))
        return DQG_OK;
    const dqg_tensor *z = &g->tensors[op->inputs[2]];
    if (z->kind != DQG_TENSOR_CONSTANT)
        return DQG_OK;
    return first_nonzero(g, op, z->data, "(constant)");
}

static dqg_status dequantize_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *s = &g->tensors[op->inputs[1]];
    const dqg_tensor *z = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]], *S = v->data[op->inputs[1]];
    const void *Z = z ? v->data[op->inputs[2]] : NULL;
    void *Y = v->data[op->outputs[0]];
    if (s32_zero_point_rule_applies(g, op) && z->kind != DQG_TENSOR_CONSTANT) {
        dqg_status st = first_nonzero(g, op, Z, "(given at run time)");
        if (st != DQG_OK)
            return st;
    }
    dqg_quant_index ix;
    dqg_quant_index_init(&ix, x, s, &op->attrs.quant);
    bool int_x = dqg_dtype_is_integer(x->dtype);
    bool int_z = z && dqg_dtype_is_integer(z->dtype);
    for (int64_t i = 0; i < x->nelems; i++) {
        int64_t si = dqg_quant_scale_index(&ix, i);
        float diff;
        if (int_x && (!z || int_z)) {
            /* Exact in int64, then one rounding to float32. */
            diff = (float)(dqg_load_int(x->dtype, X, i) - (z ? dqg_load_int(z->dtype, Z, si) : 0));
        } else if (int_x) {
            /* Integer x with a float zero point (Quark): exact in double. */
            diff = (float)((double)dqg_load_int(x->dtype, X, i) - dqg_load_double(z->dtype, Z, si));
        } else {
            diff = dqg_load_float(x->dtype, X, i) - (z ? dqg_load_float(z->dtype, Z, si) : 0.0f);
        }
        float r = diff * dqg_load_float(s->dtype, S, si);
        dqg_store_float(y->dtype, Y, i, r);
    }
    return DQG_OK;
}

static void dequantize_format(const dqg_op *op, char *buf, size_t size)
{
    static const char *gran[] = {"per_tensor", "per_axis", "blocked", "elementwise"};
    const dqg_quant_attrs *q = &op->attrs.quant;
    int n = snprintf(buf, size, "%s %s", dialect_names[q->dialect], gran[q->granularity]);
    if (n > 0 && (size_t)n < size &&
        (q->granularity == DQG_PER_AXIS || q->granularity == DQG_BLOCKED))
        n += snprintf(buf + n, size - (size_t)n, " axis=%d", q->axis);
    if (n > 0 && (size_t)n < size && q->granularity == DQG_BLOCKED)
        snprintf(buf + n, size - (size_t)n, " block_size=%lld", (long long)q->block_size);
}

const dqg_op_def dqg_op_def_dequantize = {
    .kind = DQG_OP_DEQUANTIZE,
    .name = "Dequantize",
    .verify = dequantize_verify,
    .reference = dequantize_reference,
    .format_attrs = dequantize_format,
};
