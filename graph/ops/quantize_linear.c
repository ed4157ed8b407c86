/* Front door: ONNX QuantizeLinear, opsets 10, 13, 19 and 21, onto the
 * canonical QUANTIZE. The output type is the zero point's type (u8 when
 * there is none, or output_dtype from opset 21). */
#include "graph/graph_internal.h"

static int schema_version(int opset)
{
    static const int versions[] = {21, 19, 13, 10};
    return dqg_onnx_schema_version(opset, versions, 4);
}

dqg_tensor_id dqg_quantize_linear(dqg_graph *g, const char *name, dqg_tensor_id x,
                                  dqg_tensor_id scale, dqg_tensor_id zero_point,
                                  const dqg_quantize_linear_attrs *attrs)
{
    if (!dqg_graph_can_build(g, "QuantizeLinear", name))
        return DQG_NONE;
    const char *N = dqg_op_display_name(name);
    if (!attrs)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "QuantizeLinear '%s': attrs is NULL; the opset is required", N);
    int v = schema_version(attrs->opset);
    if (v == 0 || attrs->opset > 23)
        return dqg_graph_fail(g, DQG_UNSUPPORTED,
                              "QuantizeLinear '%s': opset %d is not supported (10 to 21)", N,
                              attrs->opset);
    char L[32];
    snprintf(L, sizeof L, "QuantizeLinear-%d", v);
    if (!dqg_graph_check_input(g, L, name, 0, "x", x, false) ||
        !dqg_graph_check_input(g, L, name, 1, "y_scale", scale, false) ||
        !dqg_graph_check_input(g, L, name, 2, "y_zero_point", zero_point, true))
        return DQG_NONE;
    static const dqg_dtype floats[] = {DQG_F32, DQG_F16, DQG_BF16};
    int nf = v >= 19 ? 3 : 1;
    if (!dqg_check_dtype_in(g, L, name, 0, "x", x, floats, nf) ||
        !dqg_check_dtype_in(g, L, name, 1, "y_scale", scale, floats, nf))
        return DQG_NONE;
    if (v >= 19 && g->tensors[scale].dtype != g->tensors[x].dtype)
        return dqg_graph_fail(
            g, DQG_INVALID_ARGUMENT, "%s '%s': input 1 (y_scale): data type %s differs from x's %s",
            L, N, dqg_dtype_name(g->tensors[scale].dtype), dqg_dtype_name(g->tensors[x].dtype));
    dqg_dtype yt[12];
    int ny = 0;
    yt[ny++] = DQG_U8;
    yt[ny++] = DQG_S8;
    if (v >= 19) {
        yt[ny++] = DQG_F8E4M3FN;
        yt[ny++] = DQG_F8E4M3FNUZ;
        yt[ny++] = DQG_F8E5M2;
        yt[ny++] = DQG_F8E5M2FNUZ;
    }
    if (v >= 21) {
        yt[ny++] = DQG_U16;
        yt[ny++] = DQG_S16;
        yt[ny++] = DQG_U4;
        yt[ny++] = DQG_S4;
    }
    if (v < 13 && attrs->has_axis)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': axis is not an attribute before opset 13", L, N);
    if (v < 21 && attrs->block_size != 0)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': block_size is not an attribute before opset 21", L, N);
    if (v < 21 && attrs->output_dtype != DQG_DTYPE_UNDEF)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': output_dtype is not an attribute before opset 21", L, N);
    if (v < 19 && attrs->no_saturate)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': saturate is not an attribute before opset 19", L, N);
    dqg_dtype out;
    if (zero_point != DQG_NONE) {
        if (!dqg_check_dtype_in(g, L, name, 2, "y_zero_point", zero_point, yt, ny))
            return DQG_NONE;
        out = g->tensors[zero_point].dtype;
        if (attrs->output_dtype != DQG_DTYPE_UNDEF && attrs->output_dtype != out)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': output_dtype %s differs from the zero point's type %s",
                                  L, N, dqg_dtype_name(attrs->output_dtype), dqg_dtype_name(out));
    } else {
        out = attrs->output_dtype != DQG_DTYPE_UNDEF ? attrs->output_dtype : DQG_U8;
        bool ok = false;
        for (int i = 0; i < ny; i++)
            ok |= yt[i] == out;
        if (!ok)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  "%s '%s': output_dtype %s is not allowed in this opset", L, N,
                                  dqg_dtype_name(out));
    }
    bool is_f8 =
        out == DQG_F8E4M3FN || out == DQG_F8E4M3FNUZ || out == DQG_F8E5M2 || out == DQG_F8E5M2FNUZ;
    if (attrs->no_saturate && !is_f8)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              "%s '%s': saturate=0 applies to float8 outputs only, not %s", L, N,
                              dqg_dtype_name(out));
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
    dqg_quant_attrs q = {
        .dialect = DQG_DIALECT_ONNX, .opset = v, .out_dtype = out, .saturate = !attrs->no_saturate};
    if (!dqg_resolve_granularity(g, &r, &q))
        return DQG_NONE;
    return dqg_emit_quantize(g, name, x, scale, zero_point, &q);
}
