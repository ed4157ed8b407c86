/* Front door: DirectML DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC —
 * scale and the optional zero point have x's rank (1 to 8) and sizes (the
 * caller broadcasts); x s8/u8/s16/u16/s32/u32 with a zero point of its type;
 * scale f32 or f16, and the output has the scale's type. DirectML leaves a
 * zero scale undefined; here it gives (x - zp) * 0. */
#include "graph/graph_internal.h"

#define L "DML_ELEMENT_WISE_DEQUANTIZE_LINEAR"

dqg_tensor_id dqg_dml_dequantize(dqg_graph *g, const char *name, dqg_tensor_id x,
                                 dqg_tensor_id scale, dqg_tensor_id zero_point)
{
    if (!dqg_graph_can_build(g, L, name) ||
        !dqg_graph_check_input(g, L, name, 0, "InputTensor", x, false) ||
        !dqg_graph_check_input(g, L, name, 1, "ScaleTensor", scale, false) ||
        !dqg_graph_check_input(g, L, name, 2, "ZeroPointTensor", zero_point, true))
        return DQG_NONE;
    static const dqg_dtype x_types[] = {DQG_S8, DQG_U8, DQG_S16, DQG_U16, DQG_S32, DQG_U32};
    static const dqg_dtype s_types[] = {DQG_F32, DQG_F16};
    if (!dqg_check_dtype_in(g, L, name, 0, "InputTensor", x, x_types, 6) ||
        !dqg_check_dtype_in(g, L, name, 1, "ScaleTensor", scale, s_types, 2))
        return DQG_NONE;
    const char *N = dqg_op_display_name(name);
    const dqg_tensor *t = &g->tensors[x];
    if (t->rank < 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              L " '%s': input 0 (InputTensor): rank %d is outside [1, 8]", N,
                              t->rank);
    if (zero_point != DQG_NONE && g->tensors[zero_point].dtype != t->dtype)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              L " '%s': input 2 (ZeroPointTensor): data type %s differs from "
                                "InputTensor's %s; they must be the same",
                              N, dqg_dtype_name(g->tensors[zero_point].dtype),
                              dqg_dtype_name(t->dtype));
    dqg_quant_request r = {
        .label = L, .name = name, .x = x, .scale = scale, .zp = zero_point, .elementwise = true};
    dqg_quant_attrs q = {.dialect = DQG_DIALECT_DIRECTML, .out_dtype = g->tensors[scale].dtype};
    if (!dqg_resolve_granularity(g, &r, &q))
        return DQG_NONE;
    return dqg_emit_dequantize(g, name, x, scale, zero_point, &q);
}
