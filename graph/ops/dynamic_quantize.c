/* ONNX DynamicQuantizeLinear: x f32 -> y u8 with a scale and zero point
 * computed from the data, exactly as the ONNX definition:
 *   x_min = min(0, min(x)), x_max = max(0, max(x))
 *   y_scale = (x_max - x_min) / 255
 *   y_zero_point = saturate(round_half_even((0 - x_min) / y_scale))
 *   y = saturate(round_half_even(x / y_scale) + y_zero_point)
 * all in float32. An all-zero input gives y_scale 0; dqgraph then defines
 * y_zero_point = 0 and y = 0 instead of dividing by zero. */
#include <math.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

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

static float rne_f(float v)
{
    float f = floorf(v), d = v - f;
    if (d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f))
        return f + 1.0f;
    return f;
}

static uint8_t sat_u8(float v)
{
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
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
        if (isnan(X[i]))
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 L " '%s': input 0 (x): element %lld is NaN; the range is "
                                   "undefined",
                                 op->name, (long long)i);
        lo = fminf(lo, X[i]);
        hi = fmaxf(hi, X[i]);
    }
    float scale = (hi - lo) / 255.0f;
    if (isinf(scale))
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             L " '%s': input 0 (x): the range [%g, %g] is not finite", op->name,
                             (double)lo, (double)hi);
    *S = scale;
    if (scale == 0.0f) {
        *Z = 0;
        for (int64_t i = 0; i < x->nelems; i++)
            Y[i] = 0;
        return DQG_OK;
    }
    uint8_t zp = sat_u8(rne_f((0.0f - lo) / scale));
    *Z = zp;
    for (int64_t i = 0; i < x->nelems; i++)
        Y[i] = sat_u8(rne_f(X[i] / scale) + (float)zp);
    return DQG_OK;
}

const dqg_op_def dqg_op_def_dynamic_quantize = {
    .kind = DQG_OP_DYNAMIC_QUANTIZE,
    .name = L,
    .reference = dynamic_quantize_reference,
};
