/* Convolution: cross-correlation as in ONNX Conv and oneDNN, 1-D to 3-D,
 * with strides, asymmetric pads, dilations and groups; src/dst in NCX or NXC,
 * weights always OIX [O, C/groups, K...], optional bias [O]. */
#include <stdint.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "Convolution"

/* Index of the channel and of spatial dim i in a src/dst shape. */
static int channel_axis(dqg_data_format f, int rank)
{
    return f == DQG_FORMAT_NCX ? 1 : rank - 1;
}
static int spatial_axis(dqg_data_format f, int i)
{
    return f == DQG_FORMAT_NCX ? 2 + i : 1 + i;
}

dqg_tensor_id dqg_convolution(dqg_graph *g, const char *name, dqg_tensor_id src,
                              dqg_tensor_id weights, dqg_tensor_id bias,
                              const dqg_conv_attrs *attrs)
{
    if (!dqg_graph_can_build(g, KIND, name) ||
        !dqg_graph_check_input(g, KIND, name, 0, "src", src, false) ||
        !dqg_graph_check_input(g, KIND, name, 1, "weights", weights, false) ||
        !dqg_graph_check_input(g, KIND, name, 2, "bias", bias, true) ||
        !dqg_check_float_dtype(g, KIND, name, 0, "src", src) ||
        !dqg_check_float_dtype(g, KIND, name, 1, "weights", weights) ||
        !dqg_check_same_dtype(g, KIND, name, src, weights))
        return DQG_NONE;
    const char *shown = dqg_op_display_name(name);
    if (!attrs)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': attrs is NULL", shown);
    dqg_conv_attrs a;
    memset(&a, 0, sizeof a); /* canonical bytes: the cache key reads this struct */
    int sr = attrs->spatial_rank;
    if (sr < 1 || sr > 3)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': spatial_rank %d is outside [1, 3]", shown, sr);
    if (attrs->data_format != DQG_FORMAT_NCX && attrs->data_format != DQG_FORMAT_NXC)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': data_format %d is not NCX or NXC", shown,
                              (int)attrs->data_format);
    a.spatial_rank = sr;
    a.data_format = attrs->data_format;
    a.groups = attrs->groups ? attrs->groups : 1;
    if (attrs->groups < 0)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': groups %lld must be >= 1",
                              shown, (long long)attrs->groups);
    for (int i = 0; i < sr; i++) {
        if (attrs->strides[i] < 0)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': stride %lld at spatial dim %d must be >= 1", shown,
                                  (long long)attrs->strides[i], i);
        if (attrs->dilations[i] < 0)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': dilation %lld at spatial dim %d must be >= 1", shown,
                                  (long long)attrs->dilations[i], i);
        if (attrs->pads_begin[i] < 0 || attrs->pads_end[i] < 0)
            return dqg_graph_fail(
                g, DQG_INVALID_ARGUMENT,
                KIND " '%s': negative pad at spatial dim %d (begin %lld, end %lld)", shown, i,
                (long long)attrs->pads_begin[i], (long long)attrs->pads_end[i]);
        /* oneDNN keeps these in 32-bit fields; larger values also overflow
         * the output-size arithmetic below. */
        if (attrs->strides[i] > INT32_MAX || attrs->dilations[i] > INT32_MAX ||
            attrs->pads_begin[i] > INT32_MAX || attrs->pads_end[i] > INT32_MAX)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': stride %lld, dilation %lld or pads %lld+%lld at "
                                       "spatial dim %d exceed the limit %d",
                                  shown, (long long)attrs->strides[i],
                                  (long long)attrs->dilations[i], (long long)attrs->pads_begin[i],
                                  (long long)attrs->pads_end[i], i, INT32_MAX);
        a.strides[i] = attrs->strides[i] ? attrs->strides[i] : 1;
        a.dilations[i] = attrs->dilations[i] ? attrs->dilations[i] : 1;
        a.pads_begin[i] = attrs->pads_begin[i];
        a.pads_end[i] = attrs->pads_end[i];
    }
    const dqg_tensor *x = &g->tensors[src], *w = &g->tensors[weights];
    if (x->rank != sr + 2)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 0 (src): rank %d does not match spatial_rank %d "
                                   "(expected rank %d)",
                              shown, x->rank, sr, sr + 2);
    if (w->rank != sr + 2)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 1 (weights): rank %d does not match spatial_rank "
                                   "%d (expected OIX of rank %d)",
                              shown, w->rank, sr, sr + 2);
    int64_t C = x->dims[channel_axis(a.data_format, x->rank)], O = w->dims[0];
    if (C % a.groups)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input channels %lld are not divisible by groups %lld",
                              shown, (long long)C, (long long)a.groups);
    if (O % a.groups)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': output channels %lld are not divisible by groups %lld",
                              shown, (long long)O, (long long)a.groups);
    if (w->dims[1] != C / a.groups)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 1 (weights): dimension 1 is %lld; input channels "
                                   "%lld / groups %lld need %lld",
                              shown, (long long)w->dims[1], (long long)C, (long long)a.groups,
                              (long long)(C / a.groups));
    if (bias != DQG_NONE) {
        const dqg_tensor *b = &g->tensors[bias];
        if (!dqg_check_dtype_in(g, KIND, name, 2, "bias", bias, &x->dtype, 1))
            return DQG_NONE;
        if (b->rank != 1 || b->dims[0] != O)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': input 2 (bias): must be 1-D of length %lld (output "
                                       "channels), got rank %d",
                                  shown, (long long)O, b->rank);
    }
    int64_t out[1][DQG_MAX_RANK];
    int rank = x->rank;
    out[0][0] = x->dims[0];
    out[0][channel_axis(a.data_format, rank)] = O;
    for (int i = 0; i < sr; i++) {
        int64_t X = x->dims[spatial_axis(a.data_format, i)], K = w->dims[2 + i];
        /* X and pads are at most 2^40 and 2^31 (no overflow); the dilated
         * kernel can exceed int64 and then is larger than any input. */
        int64_t span;
        int64_t padded = X + a.pads_begin[i] + a.pads_end[i];
        if (__builtin_mul_overflow(K - 1, a.dilations[i], &span))
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': the dilated kernel at spatial dim %d ((%lld - 1) * "
                                       "%lld + 1) is larger than any input",
                                  shown, i, (long long)K, (long long)a.dilations[i]);
        span += 1;
        if (padded < span)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND
                                  " '%s': output size at spatial dim %d would be 0: input %lld "
                                  "+ pads %lld+%lld is smaller than the dilated kernel %lld",
                                  shown, i, (long long)X, (long long)a.pads_begin[i],
                                  (long long)a.pads_end[i], (long long)span);
        out[0][spatial_axis(a.data_format, i)] = (padded - span) / a.strides[i] + 1;
    }
    dqg_dtype dt = x->dtype;
    int32_t op = dqg_graph_add_op(g, DQG_OP_CONVOLUTION, name, 3,
                                  (dqg_tensor_id[]){src, weights, bias}, 1, &dt, &rank, out);
    if (op < 0)
        return DQG_NONE;
    g->ops[op].attrs.conv = a;
    return g->ops[op].outputs[0];
}

/* Offset of (n, c, spatial coords) in a src/dst tensor of the given layout. */
static int64_t act_offset(const dqg_tensor *t, dqg_data_format f, int sr, int64_t n, int64_t c,
                          const int64_t *sp)
{
    int64_t idx[DQG_MAX_RANK];
    idx[0] = n;
    idx[channel_axis(f, t->rank)] = c;
    for (int i = 0; i < sr; i++)
        idx[spatial_axis(f, i)] = sp[i];
    int64_t off = 0;
    for (int i = 0; i < t->rank; i++)
        off = off * t->dims[i] + idx[i];
    return off;
}

static dqg_status conv_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_conv_attrs *a = &op->attrs.conv;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *w = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const dqg_tensor *b = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const void *X = v->data[op->inputs[0]], *W = v->data[op->inputs[1]];
    const void *B = b ? v->data[op->inputs[2]] : NULL;
    void *Y = v->data[op->outputs[0]];
    double *wide = v->wide ? v->wide[op->outputs[0]] : NULL;
    int sr = a->spatial_rank;
    int64_t N = x->dims[0], O = w->dims[0], Cg = w->dims[1], G = a->groups, Og = O / G;
    int64_t osp[3] = {1, 1, 1}, ksp[3] = {1, 1, 1}, isp[3] = {1, 1, 1};
    for (int i = 0; i < sr; i++) {
        osp[i] = y->dims[spatial_axis(a->data_format, i)];
        isp[i] = x->dims[spatial_axis(a->data_format, i)];
        ksp[i] = w->dims[2 + i];
    }
    int64_t ksize = ksp[0] * ksp[1] * ksp[2];
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++) {
            int64_t grp = o / Og;
            for (int64_t o0 = 0; o0 < osp[0]; o0++)
                for (int64_t o1 = 0; o1 < osp[1]; o1++)
                    for (int64_t o2 = 0; o2 < osp[2]; o2++) {
                        int64_t oc[3] = {o0, o1, o2};
                        double acc = B ? (double)dqg_load_float(b->dtype, B, o) : 0.0;
                        for (int64_t ci = 0; ci < Cg; ci++)
                            for (int64_t k = 0; k < ksize; k++) {
                                int64_t kc[3] = {k / (ksp[1] * ksp[2]), (k / ksp[2]) % ksp[1],
                                                 k % ksp[2]};
                                int64_t ic[3] = {0, 0, 0};
                                bool inside = true;
                                for (int i = 0; i < sr; i++) {
                                    ic[i] = oc[i] * a->strides[i] - a->pads_begin[i] +
                                            kc[i] * a->dilations[i];
                                    inside &= ic[i] >= 0 && ic[i] < isp[i];
                                }
                                if (!inside)
                                    continue;
                                int64_t xo =
                                    act_offset(x, a->data_format, sr, n, grp * Cg + ci, ic);
                                int64_t wo = (o * Cg + ci) * ksize + k;
                                acc += (double)dqg_load_float(x->dtype, X, xo) *
                                       (double)dqg_load_float(w->dtype, W, wo);
                            }
                        int64_t yo = act_offset(y, a->data_format, sr, n, o, oc);
                        dqg_store_float(y->dtype, Y, yo, (float)acc);
                        if (wide)
                            wide[yo] = acc;
                    }
        }
    return DQG_OK;
}

static void conv_format(const dqg_op *op, char *buf, size_t size)
{
    const dqg_conv_attrs *a = &op->attrs.conv;
    char s[DQG_DIMS_BUF], pb[DQG_DIMS_BUF], pe[DQG_DIMS_BUF], d[DQG_DIMS_BUF];
    snprintf(buf, size, "strides=%s pads_begin=%s pads_end=%s dilations=%s groups=%lld format=%s",
             dqg_format_dims(s, sizeof s, a->spatial_rank, a->strides),
             dqg_format_dims(pb, sizeof pb, a->spatial_rank, a->pads_begin),
             dqg_format_dims(pe, sizeof pe, a->spatial_rank, a->pads_end),
             dqg_format_dims(d, sizeof d, a->spatial_rank, a->dilations), (long long)a->groups,
             a->data_format == DQG_FORMAT_NCX ? "NCX" : "NXC");
}

const dqg_op_def dqg_op_def_convolution = {
    .kind = DQG_OP_CONVOLUTION,
    .name = KIND,
    .reference = conv_reference,
    .format_attrs = conv_format,
};
