/* Front doors: oneDNN Graph DynamicDequantize (s8/u8 src -> f32) and
 * DynamicQuantize (f32 src -> s8/u8), both with f32 scales and optional
 * s8/u8/s32 zero points given as tensors (normally produced at run time),
 * qtype per_tensor or per_channel. No zero point means symmetric. They map
 * onto the canonical DEQUANTIZE and QUANTIZE. */
#include <string.h>

#include "graph/graph_internal.h"

/* The rules both front doors share: scales f32 1-D, zps s8/u8/s32 1-D or
 * absent, qtype, axis, and the element counts. Fills q's granularity and
 * axis. */
static bool check_params(dqg_graph *g, const char *L, const char *name, dqg_tensor_id src,
                         dqg_tensor_id scales, dqg_tensor_id zps, const char *qtype, int64_t axis,
                         dqg_quant_attrs *q)
{
    const char *N = dqg_op_display_name(name);
    static const dqg_dtype scale_types[] = {DQG_F32}, zp_types[] = {DQG_S8, DQG_U8, DQG_S32};
    if (!dqg_check_dtype_in(g, L, name, 1, "scales", scales, scale_types, 1) ||
        (zps != DQG_NONE && !dqg_check_dtype_in(g, L, name, 2, "zps", zps, zp_types, 3)))
        return false;
    bool per_channel;
    if (!qtype || strcmp(qtype, "per_tensor") == 0)
        per_channel = false;
    else if (strcmp(qtype, "per_channel") == 0)
        per_channel = true;
    else {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': qtype '%s' is not per_tensor or per_channel", L, N, qtype);
        return false;
    }
    const dqg_tensor *x = &g->tensors[src], *s = &g->tensors[scales];
    if (s->rank != 1) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': input 1 (scales): must be 1-D, got rank %d", L, N, s->rank);
        return false;
    }
    if (zps != DQG_NONE && g->tensors[zps].rank != 1) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': input 2 (zps): must be 1-D, got rank %d",
                       L, N, g->tensors[zps].rank);
        return false;
    }
    if (axis < -x->rank || axis >= x->rank) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': axis %lld is outside [%d, %d]", L, N,
                       (long long)axis, -x->rank, x->rank - 1);
        return false;
    }
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    int64_t want = per_channel ? x->dims[a] : 1;
    if (s->dims[0] != want) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': input 1 (scales): %s needs %lld element%s, got %lld", L, N,
                       per_channel ? "per_channel" : "per_tensor", (long long)want,
                       want == 1 ? "" : "s", (long long)s->dims[0]);
        return false;
    }
    if (zps != DQG_NONE && g->tensors[zps].dims[0] != want) {
        dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                       "%s '%s': input 2 (zps): %s needs %lld element%s, got %lld", L, N,
                       per_channel ? "per_channel" : "per_tensor", (long long)want,
                       want == 1 ? "" : "s", (long long)g->tensors[zps].dims[0]);
        return false;
    }
    q->dialect = DQG_DIALECT_ONEDNN_DYNAMIC;
    q->granularity = per_channel ? DQG_PER_AXIS : DQG_PER_TENSOR;
    q->axis = per_channel ? a : 0;
    return true;
}

dqg_tensor_id dqg_dynamic_dequantize(dqg_graph *g, const char *name, dqg_tensor_id src,
                                     dqg_tensor_id scales, dqg_tensor_id zps, const char *qtype,
                                     int64_t axis)
{
    static const char L[] = "DynamicDequantize";
    if (!dqg_graph_can_build(g, L, name) ||
        !dqg_graph_check_input(g, L, name, 0, "src", src, false) ||
        !dqg_graph_check_input(g, L, name, 1, "scales", scales, false) ||
        !dqg_graph_check_input(g, L, name, 2, "zps", zps, true))
        return DQG_NONE;
    static const dqg_dtype src_types[] = {DQG_S8, DQG_U8};
    dqg_quant_attrs q = {.out_dtype = DQG_F32};
    if (!dqg_check_dtype_in(g, L, name, 0, "src", src, src_types, 2) ||
        !check_params(g, L, name, src, scales, zps, qtype, axis, &q))
        return DQG_NONE;
    return dqg_emit_dequantize(g, name, src, scales, zps, &q);
}

dqg_tensor_id dqg_dynamic_quantize(dqg_graph *g, const char *name, dqg_tensor_id src,
                                   dqg_tensor_id scales, dqg_tensor_id zps, const char *qtype,
                                   int64_t axis, dqg_dtype dst_dtype)
{
    static const char L[] = "DynamicQuantize";
    if (!dqg_graph_can_build(g, L, name) ||
        !dqg_graph_check_input(g, L, name, 0, "src", src, false) ||
        !dqg_graph_check_input(g, L, name, 1, "scales", scales, false) ||
        !dqg_graph_check_input(g, L, name, 2, "zps", zps, true))
        return DQG_NONE;
    static const dqg_dtype src_types[] = {DQG_F32};
    if (dst_dtype != DQG_U8 && dst_dtype != DQG_S8)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, "%s '%s': dst_dtype %s is not u8 or s8", L,
                              dqg_op_display_name(name), dqg_dtype_name(dst_dtype));
    dqg_quant_attrs q = {.out_dtype = dst_dtype, .saturate = true};
    if (!dqg_check_dtype_in(g, L, name, 0, "src", src, src_types, 1) ||
        !check_params(g, L, name, src, scales, zps, qtype, axis, &q))
        return DQG_NONE;
    return dqg_emit_quantize(g, name, src, scales, zps, &q);
}
