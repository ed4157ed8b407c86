/* ONNX DynamicQuantizeLinear: x f32 -> y u8 with a scale and zero point
 * computed from the data, exactly as the ONNX definition:
 *   x_min = min(0, min(x)), x_max = max(0, max(x))
 *   y_scale = (x_max - x_min) / 255
 *   y_zero_point = saturate(round_half_even((0 - x_min) / y_scale))
 *   y = saturate(round_half_even(x / y_scale) + y_zero_point)
 * all in float32, rounding half to even. An all-zero input (x_max ==
 * x_min) has y_scale = 1 / 255, as ONNX's reference and ONNX Runtime
 * define it. NaN, or a range too wide for a finite scale, is refused. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"
#include "graph/ops/dynamic_quantize.h"

#define L "DynamicQuantizeLinear"

dqg_tensor_id dqg_dynamic_quantize_linear(dqg_graph *g, const char *name, dqg_tensor_id x,
                                          dqg_tensor_id *y_scale, dqg_tensor_id *y_zero_point)
{
    if (y_scale)
        *y_scale = DQG_NONE;
    if (y_zero_point)
        *y_zero_point = DQG_NONE;
    static const dqg_dtype f32[] = {DQG_F32};
    if (!dqg_graph_can_build(g, L, name) || !dqg_graph_check_input(g, L, name, 0, "x", x, false) ||
        !dqg_check_dtype_in(g, L, name, 0, "x", x, f32, 1))
        return DQG_NONE;
    const dqg_tensor *t = &g->tensors[x];
    dqg_dtype dts[3] = {DQG_U8, DQG_F32, DQG_U8};
    int ranks[3] = {t->rank, 0, 0};
    int64_t dims[3][DQG_MAX_RANK] = {{0}};
    for (int i = 0; i < t->rank; i++)
        dims[0][i] = t->dims[i];
    int32_t op = dqg_graph_add_op(g, DQG_OP_DYNAMIC_QUANTIZE, name, 1, &x, 3, dts, ranks, dims);
    if (op < 0)
        return DQG_NONE;
    if (y_scale)
        *y_scale = g->ops[op].outputs[1];
    if (y_zero_point)
        *y_zero_point = g->ops[op].outputs[2];
    return g->ops[op].outputs[0];
}

dqg_status dqg_dynamic_quantize_range(const char *op_name, const float *x, int64_t n, float lo,
                                      float hi, float *scale, uint8_t *zero_point)
{
    if (isnan(lo) || isnan(hi)) {
        int64_t i = 0;
        while (i < n && !isnan(x[i]))
            i++;
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             L " '%s': input 0 (x): element %lld is NaN; the range is undefined",
                             op_name, (long long)i);
    }
    float s = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    if (isinf(s))
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             L " '%s': input 0 (x): the range [%g, %g] is not finite", op_name,
                             (double)lo, (double)hi);
    if (s == 0.0f)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             L " '%s': input 0 (x): the range [%g, %g] is too narrow: its width / "
                               "255 underflows to a zero scale",
                             op_name, (double)lo, (double)hi);
    float z = dqg_rne_f((0.0f - lo) / s);
    *scale = s;
    *zero_point = z <= 0.0f ? 0 : z >= 255.0f ? 255 : (uint8_t)z;
    return DQG_OK;
}

static dqg_status dynamic_quantize_reference(const dqg_graph *g, const dqg_op *op,
                                             dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const float *X = v->data[op->inputs[0]];
    uint8_t *Y = v->data[op->outputs[0]];
    float *S = v->data[op->outputs[1]];
    uint8_t *Z = v->data[op->outputs[2]];
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < x->nelems; i++) {
        /* fminf/fmaxf skip NaN; a NaN poisons the range instead. */
        lo = isnan(X[i]) || isnan(lo) ? NAN : fminf(lo, X[i]);
        hi = isnan(X[i]) || isnan(hi) ? NAN : fmaxf(hi, X[i]);
    }
    float scale;
    uint8_t zp;
    dqg_status st = dqg_dynamic_quantize_range(op->name, X, x->nelems, lo, hi, &scale, &zp);
    if (st != DQG_OK)
        return st;
    *S = scale;
    *Z = zp;
    for (int64_t i = 0; i < x->nelems; i++) {
        float q = dqg_rne_f(X[i] / scale) + (float)zp;
        Y[i] = q <= 0.0f ? 0 : q >= 255.0f ? 255 : (uint8_t)q;
    }
    return DQG_OK;
}

const dqg_op_def dqg_op_def_dynamic_quantize = {
    .kind = DQG_OP_DYNAMIC_QUANTIZE,
    .name = L,
    .reference = dynamic_quantize_reference,
};
