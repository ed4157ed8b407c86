/* Front door: AMD Quark ExtendedDequantizeLinear (domain com.amd.quark) —
 * x s8/u8/s16/u16/s32/u32/f16/bf16, f32 scale (scalar or 1-D per axis), a
 * zero point of x's type or f32 (the specification lists both), f32 output. */
#include "graph/graph_internal.h"

#define L "ExtendedDequantizeLinear"

dqg_tensor_id dqg_extended_dequantize_linear(dqg_graph *g, const char *name, dqg_tensor_id x,
                                             dqg_tensor_id scale, dqg_tensor_id zero_point,
                                             int64_t axis)
{
    if (!dqg_graph_can_build(g, L, name) || !dqg_graph_check_input(g, L, name, 0, "x", x, false) ||
        !dqg_graph_check_input(g, L, name, 1, "x_scale", scale, false) ||
        !dqg_graph_check_input(g, L, name, 2, "x_zero_point", zero_point, true))
        return DQG_NONE;
    static const dqg_dtype x_types[] = {DQG_S8,  DQG_U8,  DQG_S16, DQG_U16,
                                        DQG_S32, DQG_U32, DQG_F16, DQG_BF16};
    static const dqg_dtype f32[] = {DQG_F32};
    if (!dqg_check_dtype_in(g, L, name, 0, "x", x, x_types, 8) ||
        !dqg_check_dtype_in(g, L, name, 1, "x_scale", scale, f32, 1))
        return DQG_NONE;
    if (zero_point != DQG_NONE) {
        dqg_dtype zt = g->tensors[zero_point].dtype, xt = g->tensors[x].dtype;
        if (zt != xt && zt != DQG_F32)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  L " '%s': input 2 (x_zero_point): data type %s is not allowed; "
                                    "expected x's type %s or f32",
                                  dqg_op_display_name(name), dqg_dtype_name(zt),
                                  dqg_dtype_name(xt));
    }
    dqg_quant_request r = {.label = L,
                           .name = name,
                           .x = x,
                           .scale = scale,
                           .zp = zero_point,
                           .has_axis = true,
                           .axis = axis};
    dqg_quant_attrs q = {.dialect = DQG_DIALECT_QUARK, .out_dtype = DQG_F32};
    if (!dqg_resolve_granularity(g, &r, &q))
        return DQG_NONE;
    return dqg_emit_dequantize(g, name, x, scale, zero_point, &q);
}
