/* The canonical QUANTIZE op (ONNX QuantizeLinear):
 * integer outputs: y = saturate(round_half_even(x / scale) + zero_point);
 * float8 outputs:  y = convert(x / scale + zero_point), saturating unless
 * the op says otherwise. x / scale is computed in float32. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

dqg_tensor_id dqg_emit_quantize(dqg_graph *g, const char *name, dqg_tensor_id x,
                                dqg_tensor_id scale, dqg_tensor_id zp, const dqg_quant_attrs *q)
{
    return dqg_emit_quant_op(g, DQG_OP_QUANTIZE, name, x, scale, zp, q);
}

/* Round half to even, independent of the current rounding mode. */
static double rne(double v)
{
    double f = floor(v), d = v - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
        return f + 1.0;
    return f;
}

static dqg_status quantize_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *s = &g->tensors[op->inputs[1]];
    const dqg_tensor *z = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const void *X = v->data[op->inputs[0]], *S = v->data[op->inputs[1]];
    const void *Z = z ? v->data[op->inputs[2]] : NULL;
    void *Y = v->data[op->outputs[0]];
    dqg_quant_index ix;
    dqg_quant_index_init(&ix, x, s, &op->attrs.quant);
    bool int_out = dqg_dtype_is_integer(y->dtype);
    int64_t lo = int_out ? dqg_int_min(y->dtype) : 0, hi = int_out ? dqg_int_max(y->dtype) : 0;
    for (int64_t i = 0; i < x->nelems; i++) {
        int64_t si = dqg_quant_scale_index(&ix, i);
        float q = dqg_load_float(x->dtype, X, i) / dqg_load_float(s->dtype, S, si);
        if (int_out) {
            double r;
            if (isnan(q))
                r = 0; /* NaN has no integer value; ONNX Runtime produces 0 (+ zero point) */
            else
                r = rne((double)q) + (z ? (double)dqg_load_int(z->dtype, Z, si) : 0.0);
            int64_t iv = r <= (double)lo ? lo : r >= (double)hi ? hi : (int64_t)r;
            dqg_store_int(y->dtype, Y, i, iv);
        } else {
            float zf = z ? dqg_load_float(z->dtype, Z, si) : 0.0f;
            float r = q + zf;
            if (y->dtype == DQG_F4E2M1 || y->dtype == DQG_F8E4M3FN || y->dtype == DQG_F8E4M3FNUZ ||
                y->dtype == DQG_F8E5M2 || y->dtype == DQG_F8E5M2FNUZ) {
                uint8_t code = y->dtype == DQG_F4E2M1
                                   ? dqg_f32_to_f4e2m1(r)
                                   : dqg_f32_to_f8(y->dtype, r, op->attrs.quant.saturate);
                if (y->dtype == DQG_F4E2M1)
                    dqg_nibble_set(Y, i, code);
                else
                    ((uint8_t *)Y)[i] = code;
            } else {
                dqg_store_float(y->dtype, Y, i, r);
            }
        }
    }
    return DQG_OK;
}

static void quantize_format(const dqg_op *op, char *buf, size_t size)
{
    static const char *gran[] = {"per_tensor", "per_axis", "blocked", "elementwise"};
    const dqg_quant_attrs *q = &op->attrs.quant;
    snprintf(buf, size, "%s axis=%d block_size=%lld to=%s%s", gran[q->granularity], q->axis,
             (long long)q->block_size, dqg_dtype_name(q->out_dtype),
             q->saturate ? "" : " saturate=0");
}

const dqg_op_def dqg_op_def_quantize = {
    .kind = DQG_OP_QUANTIZE,
    .name = "Quantize",
    .reference = quantize_reference,
    .format_attrs = quantize_format,
};
