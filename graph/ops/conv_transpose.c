/* ConvTranspose: the transposed convolution of ONNX (and oneDNN's
 * deconvolution), 1-D to 3-D, NCX, weights [C, M / groups, K...], with
 * strides, pads, dilations, output_padding and groups. The reference
 * gathers each output element's terms, in double, and rounds once. */
#include <stdint.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

#define KIND "ConvTranspose"

dqg_tensor_id dqg_conv_transpose(dqg_graph *g, const char *name, dqg_tensor_id src,
                                 dqg_tensor_id weights, dqg_tensor_id bias,
                                 const dqg_conv_transpose_attrs *attrs)
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
    dqg_conv_transpose_attrs a;
    memset(&a, 0, sizeof a); /* canonical bytes: the cache key reads this struct */
    int sr = attrs->spatial_rank;
    if (sr < 1 || sr > 3)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': spatial_rank %d is outside [1, 3]", shown, sr);
    a.spatial_rank = sr;
    if (attrs->groups < 0)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT, KIND " '%s': groups %lld must be >= 1",
                              shown, (long long)attrs->groups);
    a.groups = attrs->groups ? attrs->groups : 1;
    for (int i = 0; i < sr; i++) {
        int64_t s = attrs->strides[i], d = attrs->dilations[i];
        if (s < 0 || d < 0 || s > 65536 || d > 65536 || attrs->pads_begin[i] < 0 ||
            attrs->pads_end[i] < 0 || attrs->output_padding[i] < 0 ||
            attrs->pads_begin[i] > INT32_MAX || attrs->pads_end[i] > INT32_MAX ||
            attrs->output_padding[i] > INT32_MAX)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': spatial dim %d: stride %lld and dilation %lld must "
                                       "be in [1, 65536], pads %lld+%lld and output_padding %lld "
                                       "in [0, 2^31)",
                                  shown, i, (long long)s, (long long)d,
                                  (long long)attrs->pads_begin[i], (long long)attrs->pads_end[i],
                                  (long long)attrs->output_padding[i]);
        a.strides[i] = s ? s : 1;
        a.dilations[i] = d ? d : 1;
        a.pads_begin[i] = attrs->pads_begin[i];
        a.pads_end[i] = attrs->pads_end[i];
        a.output_padding[i] = attrs->output_padding[i];
    }
    const dqg_tensor *x = &g->tensors[src], *w = &g->tensors[weights];
    if (x->rank != sr + 2 || w->rank != sr + 2)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': src has rank %d and weights rank %d; spatial_rank %d "
                                   "needs %d for both",
                              shown, x->rank, w->rank, sr, sr + 2);
    int64_t C = x->dims[1];
    if (C % a.groups != 0 || w->dims[0] != C)
        return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                              KIND " '%s': input 1 (weights): dimension 0 is %lld; it must be "
                                   "src's %lld channels, divisible by groups %lld",
                              shown, (long long)w->dims[0], (long long)C, (long long)a.groups);
    int64_t M = w->dims[1] * a.groups;
    if (bias != DQG_NONE) {
        const dqg_tensor *b = &g->tensors[bias];
        if (!dqg_check_dtype_in(g, KIND, name, 2, "bias", bias, &x->dtype, 1))
            return DQG_NONE;
        if (b->rank != 1 || b->dims[0] != M)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': input 2 (bias): must be 1-D of length %lld (output "
                                       "channels)",
                                  shown, (long long)M);
    }
    int64_t out[1][DQG_MAX_RANK];
    out[0][0] = x->dims[0];
    out[0][1] = M;
    for (int i = 0; i < sr; i++) {
        /* Inputs are at most 2^40, strides and dilations 2^16, kernels 2^40:
         * the products fit in int64 but for the kernel's span. */
        int64_t X = x->dims[2 + i], K = w->dims[2 + i], span;
        if (__builtin_mul_overflow(K - 1, a.dilations[i], &span) || span > ((int64_t)1 << 50))
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': the dilated kernel at spatial dim %d is too large",
                                  shown, i);
        int64_t Y = a.strides[i] * (X - 1) + a.output_padding[i] + span + 1 - a.pads_begin[i] -
                    a.pads_end[i];
        if (Y < 1)
            return dqg_graph_fail(g, DQG_INVALID_ARGUMENT,
                                  KIND " '%s': output size at spatial dim %d would be %lld; pads "
                                       "%lld+%lld remove it all",
                                  shown, i, (long long)Y, (long long)a.pads_begin[i],
                                  (long long)a.pads_end[i]);
        out[0][2 + i] = Y;
    }
    dqg_tensor_id ins[3] = {src, weights, bias};
    dqg_dtype dt = x->dtype;
    int rank = x->rank;
    int32_t o = dqg_graph_add_op(g, DQG_OP_CONV_TRANSPOSE, name, 3, ins, 1, &dt, &rank, out);
    if (o < 0)
        return DQG_NONE;
    g->ops[o].attrs.conv_t = a;
    return g->ops[o].outputs[0];
}

static dqg_status conv_t_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v)
{
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *w = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    const dqg_tensor *b = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const void *X = v->data[op->inputs[0]], *W = v->data[op->inputs[1]];
    const void *B = b ? v->data[op->inputs[2]] : NULL;
    void *Y = v->data[op->outputs[0]];
    const dqg_conv_transpose_attrs *a = &op->attrs.conv_t;
    int sr = a->spatial_rank;
    int64_t C = x->dims[1], M = y->dims[1], cg = C / a->groups, mg = M / a->groups;
    int64_t xsp = 1, ysp = 1, ksp = 1, xd[3] = {1, 1, 1}, yd[3] = {1, 1, 1}, kd[3] = {1, 1, 1};
    int64_t s[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
    for (int i = 0; i < sr; i++) {
        xd[i] = x->dims[2 + i];
        yd[i] = y->dims[2 + i];
        kd[i] = w->dims[2 + i];
        s[i] = a->strides[i];
        dl[i] = a->dilations[i];
        pb[i] = a->pads_begin[i];
        xsp *= xd[i];
        ysp *= yd[i];
        ksp *= kd[i];
    }
    for (int64_t n = 0; n < x->dims[0]; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t grp = m / mg, mm = m % mg;
            for (int64_t o = 0; o < ysp; o++) {
                int64_t oc[3] = {o / (yd[1] * yd[2]), (o / yd[2]) % yd[1], o % yd[2]};
                double acc = b ? dqg_load_double(b->dtype, B, m) : 0.0;
                for (int64_t k = 0; k < ksp; k++) {
                    int64_t kc[3] = {k / (kd[1] * kd[2]), (k / kd[2]) % kd[1], k % kd[2]};
                    int64_t xi = 0;
                    bool hit = true;
                    for (int i = 0; i < 3 && hit; i++) {
                        /* o = i s + k d - pb: i = (o + pb - k d) / s, exactly. */
                        int64_t t = oc[i] + pb[i] - kc[i] * dl[i];
                        hit = t >= 0 && t % s[i] == 0 && t / s[i] < xd[i];
                        xi = xi * xd[i] + (hit ? t / s[i] : 0);
                    }
                    if (!hit)
                        continue;
                    for (int64_t c = 0; c < cg; c++) {
                        int64_t ch = grp * cg + c;
                        acc += dqg_load_double(x->dtype, X, (n * C + ch) * xsp + xi) *
                               dqg_load_double(w->dtype, W, (ch * mg + mm) * ksp + k);
                    }
                }
                dqg_store_float(y->dtype, Y, (n * M + m) * ysp + o, (float)acc);
            }
        }
    return DQG_OK;
}

static void conv_t_format(const dqg_op *op, char *buf, size_t size)
{
    const dqg_conv_transpose_attrs *a = &op->attrs.conv_t;
    int n = snprintf(buf, size, "groups=%lld", (long long)a->groups);
    for (int i = 0; i < a->spatial_rank && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n,
                      " stride%d=%lld dilation%d=%lld pads%d=%lld,%lld output_padding%d=%lld", i,
                      (long long)a->strides[i], i, (long long)a->dilations[i], i,
                      (long long)a->pads_begin[i], (long long)a->pads_end[i], i,
                      (long long)a->output_padding[i]);
}

const dqg_op_def dqg_op_def_conv_transpose = {
    .kind = DQG_OP_CONV_TRANSPOSE,
    .name = KIND,
    .reference = conv_t_reference,
    .format_attrs = conv_t_format,
};
