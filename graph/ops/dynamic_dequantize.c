/* Front door: oneDNN Graph DynamicDequantize — s8/u8 src, f32 scales and
 * optional s8/u8/s32 zero points given as tensors (normally produced at run
 * time), qtype per_tensor or per_channel. No zero point means symmetric. */
#include <string.h>

#include "graph/graph_internal.h"

#define L "DynamicDequantize"

dqg_tensor_id dqg_dynamic_dequantize(dqg_graph *g, const char *name, dqg_tensor_id src,
                                     dqg_tensor_id scales, dqg_tensor_id zps, const char *qtype,
                                     int64_t axis)
{
    if (!dqg_graph_can_build(g, L, name) ||
        !dqg_graph_check_input(g, L, name, 0, "src", src, false) ||
        !dqg_graph_check_input(g, L, name, 1, "scales", scales, false) ||
        !dqg_graph_check_input(g, L, name, 2, "zps", zps, true))
        return DQG_NONE;
    const char *N = dqg_op_display_name(name);
    static const dqg_dtype src_types[] = {DQG_S8, DQG_U8}, scale_types[] = {DQG_F32},
                           zp_types[] = {DQG_S8, DQG_U8, DQG_S32};
    if (!dqg_check_dtype_in(g, L, name, 0, "src", src, src_types, 2) ||
        !dqg_check_dtype_in(g, L, name, 1, "scales", scales, scale_types, 1) ||
        (zps != DQG_NONE && !dqg_check_dtype_in(g, L, name, 2, "zps", zps, zp_types, 3)))
        return DQG_NONE;
    bool per_channel;
    if (!qtype || strcmp(qtype, "per_tensor") == 0)
        per_channel = false;
    else if (strcmp(qtype, "per_channel") == 0)
        per_channel = true;
    else
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              L " '%s': qtype '%s' is not per_tensor or per_channel", N, qtype);
    const dqg_tensor *x = &g->tensors[src], *s = &g->tensors[scales];
    if (s->rank != 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              L " '%s': input 1 (scales): must be 1-D, got rank %d", N, s->rank);
    if (zps != DQG_NONE && g->tensors[zps].rank != 1)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              L " '%s': input 2 (zps): must be 1-D, got rank %d", N,
                              g->tensors[zps].rank);
    if (axis < -x->rank || axis >= x->rank)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, L " '%s': axis %lld is outside [%d, %d]", N,
                              (long long)axis, -x->rank, x->rank - 1);
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    int64_t want = per_channel ? x->dims[a] : 1;
    if (s->dims[0] != want)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              L " '%s': input 1 (scales): %s needs %lld element%s, got %lld", N,
                              per_channel ? "per_channel" : "per_tensor", (long long)want,
                              want == 1 ? "" : "s", (long long)s->dims[0]);
    if (zps != DQG_NONE && g->tensors[zps].dims[0] != want)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              L " '%s': input 2 (zps): %s needs %lld element%s, got %lld", N,
                              per_channel ? "per_channel" : "per_tensor", (long long)want,
                              want == 1 ? "" : "s", (long long)g->tensors[zps].dims[0]);
    dqg_quant_attrs q = {.dialect = DQG_DIALECT_ONEDNN_DYNAMIC,
                         .granularity = per_channel ? DQG_PER_AXIS : DQG_PER_TENSOR,
                         .axis = per_channel ? a : 0,
                         .out_dtype = DQG_F32};
    return dqg_emit_dequantize(g, name, src, scales, zps, &q);
}
