/* Front door: ONNX DequantizeLinear, opsets 10, 13, 19, 21 and 23, each with
 * its own type constraints and attributes, onto the canonical DEQUANTIZE. */
#include "graph/graph_internal.h"

static int schema_version(int opset)
{
    static const int versions[] = {23, 21, 19, 13, 10};
    return dqg_onnx_schema_version(opset, versions, 5);
}

dqg_tensor_id dqg_dequantize_linear(dqg_graph *g, const char *name, dqg_tensor_id x,
                                    dqg_tensor_id scale, dqg_tensor_id zero_point,
                                    const dqg_dequantize_linear_attrs *attrs)
{
    if (!dqg_graph_can_build(g, "DequantizeLinear", name))
        return DQG_NONE;
    const char *N = dqg_op_display_name(name);
    if (!attrs)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "DequantizeLinear '%s': attrs is NULL; the opset is required", N);
    int v = schema_version(attrs->opset);
    if (v == 0 || attrs->opset > 23)
        return dqg_graph_fail(g, DQG_UNSUPPORTED,
                              "DequantizeLinear '%s': opset %d is not supported (10 to 23)", N,
                              attrs->opset);
    char L[32];
    snprintf(L, sizeof L, "DequantizeLinear-%d", v);
    if (!dqg_graph_check_input(g, L, name, 0, "x", x, false) ||
        !dqg_graph_check_input(g, L, name, 1, "x_scale", scale, false) ||
        !dqg_graph_check_input(g, L, name, 2, "x_zero_point", zero_point, true))
        return DQG_NONE;

    dqg_dtype xt[16];
    int nx = 0;
    xt[nx++] = DQG_U8;
    xt[nx++] = DQG_S8;
    xt[nx++] = DQG_S32;
    if (v >= 19) {
        xt[nx++] = DQG_F8E4M3FN;
        xt[nx++] = DQG_F8E4M3FNUZ;
        xt[nx++] = DQG_F8E5M2;
        xt[nx++] = DQG_F8E5M2FNUZ;
    }
    if (v >= 21) {
        xt[nx++] = DQG_U4;
        xt[nx++] = DQG_S4;
        xt[nx++] = DQG_U16;
        xt[nx++] = DQG_S16;
    }
    if (v >= 23)
        xt[nx++] = DQG_F4E2M1;
    static const dqg_dtype floats[] = {DQG_F32, DQG_F16, DQG_BF16};
    if (!dqg_check_dtype_in(g, L, name, 0, "x", x, xt, nx) ||
        !dqg_check_dtype_in(g, L, name, 1, "x_scale", scale, floats, v >= 19 ? 3 : 1))
        return DQG_NONE;
    dqg_dtype x_dtype = g->tensors[x].dtype;
    if (zero_point != DQG_NONE && g->tensors[zero_point].dtype != x_dtype)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': input 2 (x_zero_point): data type %s differs from x's %s; "
                              "they must be the same",
                              L, N, dqg_dtype_name(g->tensors[zero_point].dtype),
                              dqg_dtype_name(x_dtype));
    if (v < 13 && attrs->has_axis)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': axis is not an attribute before opset 13", L, N);
    if (v < 21 && attrs->block_size != 0)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': block_size is not an attribute before opset 21", L, N);
    if (v < 23 && attrs->output_dtype != DQG_DTYPE_UNDEF)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': output_dtype is not an attribute before opset 23", L, N);
    dqg_dtype out = g->tensors[scale].dtype;
    if (attrs->output_dtype != DQG_DTYPE_UNDEF) {
        if (attrs->output_dtype != DQG_F32 && attrs->output_dtype != DQG_F16 &&
            attrs->output_dtype != DQG_BF16)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': output_dtype %s is not allowed; expected f32, f16 or "
                                  "bf16",
                                  L, N, dqg_dtype_name(attrs->output_dtype));
        out = attrs->output_dtype;
    }
    dqg_quant_request r = {.label = L,
                           .name = name,
                           .x = x,
                           .scale = scale,
                           .zp = zero_point,
                           .has_axis = attrs->has_axis,
                           .axis = attrs->axis,
                           .block_size = attrs->block_size,
                           .allow_blocked = v >= 21,
                           .scalar_only = v < 13};
    dqg_quant_attrs q = {.dialect = DQG_DIALECT_ONNX, .opset = v, .out_dtype = out};
    if (!dqg_resolve_granularity(g, &r, &q))
        return DQG_NONE;
    return dqg_emit_dequantize(g, name, x, scale, zero_point, &q);
}
