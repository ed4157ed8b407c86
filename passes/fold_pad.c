/* fold_pad: a Pad of zeros on the spatial axes in front of a Convolution
 * becomes the convolution's own padding, so the padded copy is never
 * written (converted TensorFlow models pad explicitly before strided
 * convolutions). Two forms:
 *
 *   Pad(x, constant 0) -> Convolution(src)
 *     the convolution reads x, its pads grown by the Pad's: exact, a
 *     padded element of a convolution is a 0.
 *
 *   DQ1(a) -> Pad(c) -> Q -> DQ2 -> Convolution(src)   (QDQ, as quantizers
 *     write a Pad between two quantized ops)
 *     with DQ1, Q and DQ2 one u8/s8 type, one constant scale and zero point
 *     each, all equal, and Q(c) the zero point: Q(DQ1(a)) is a, so DQ2 of
 *     the padded tensor is DQ1(a) padded with DQ2(Q(c)) = 0; the
 *     convolution reads DQ1's result, which the int8 fusion then takes.
 *
 * Only non-negative amounts on the spatial axes qualify (a crop, or padding
 * of the batch or channel axis, stays a Pad). Runs before the fusions, on
 * the compile-time copy; not with fusion disabled. */
#include <math.h>
#include <string.h>

#include "graph/dtype.h"
#include "passes/fuse_common.h"

/* Whether dequantize/quantize ops a and b have one u8/s8 type, one
 * constant positive normal scale and zero point each, and equal ones. */
static bool same_params(const dqg_graph *g, const dqg_op *a, const dqg_op *b)
{
    if (!dqg_fuse_const_int_params(g, a) || !dqg_fuse_const_int_params(g, b))
        return false;
    dqg_dtype ta = a->kind == DQG_OP_DEQUANTIZE ? g->tensors[a->inputs[0]].dtype
                                                : g->tensors[a->outputs[0]].dtype;
    dqg_dtype tb = b->kind == DQG_OP_DEQUANTIZE ? g->tensors[b->inputs[0]].dtype
                                                : g->tensors[b->outputs[0]].dtype;
    float sa = dqg_fuse_scale(g, a), sb = dqg_fuse_scale(g, b);
    return (ta == DQG_U8 || ta == DQG_S8) && ta == tb && sa > 0.0f && isnormal(sa) && sa <= 1e30f &&
           memcmp(&sa, &sb, sizeof sa) == 0 &&
           dqg_fuse_zero_point(g, a) == dqg_fuse_zero_point(g, b);
}

/* Whether the Pad adds nothing but non-negative amounts on conv's spatial
 * axes. */
static bool spatial_only(const dqg_graph *g, const dqg_op *pad, const dqg_op *conv)
{
    const dqg_tensor *x = &g->tensors[pad->inputs[0]];
    int first = conv->attrs.conv.data_format == DQG_FORMAT_NCX ? 2 : 1;
    int sr = conv->attrs.conv.spatial_rank;
    for (int d = 0; d < x->rank; d++) {
        int64_t b = pad->attrs.pad.begin[d], e = pad->attrs.pad.end[d];
        if (b < 0 || e < 0)
            return false;
        if ((d < first || d >= first + sr) && (b || e))
            return false;
    }
    return x->rank == sr + 2;
}

dqg_status dqg_pass_fold_pad(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    if (s->options->disable_fusion)
        return DQG_OK;
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op *pad = &g->ops[i];
        if (pad->removed || pad->kind != DQG_OP_PAD || s->group[i] >= 0 ||
            pad->attrs.pad.mode != DQG_PAD_CONSTANT)
            continue;
        int32_t c = dqg_pass_single_consumer(s, pad->outputs[0]);
        if (c < 0)
            continue;
        /* The float form: Pad -> Convolution. */
        int32_t q = -1, dq2 = -1, dq1 = -1;
        if (g->ops[c].kind != DQG_OP_CONVOLUTION) {
            /* The QDQ form: DQ1 -> Pad -> Q -> DQ2 -> Convolution. */
            q = c;
            dq2 = g->ops[q].kind == DQG_OP_QUANTIZE
                      ? dqg_pass_single_consumer(s, g->ops[q].outputs[0])
                      : -1;
            c = dq2 >= 0 && g->ops[dq2].kind == DQG_OP_DEQUANTIZE
                    ? dqg_pass_single_consumer(s, g->ops[dq2].outputs[0])
                    : -1;
            dq1 = g->tensors[pad->inputs[0]].producer;
            if (c < 0 || dq1 < 0 || g->ops[dq1].removed || s->group[dq1] >= 0 ||
                g->ops[dq1].kind != DQG_OP_DEQUANTIZE || s->group[q] >= 0 || s->group[dq2] >= 0 ||
                dqg_pass_single_consumer(s, pad->inputs[0]) != i)
                continue;
        }
        dqg_op *conv = &g->ops[c];
        if (conv->kind != DQG_OP_CONVOLUTION || conv->removed || s->group[c] >= 0 ||
            !spatial_only(g, pad, conv))
            continue;
        dqg_tensor_id src = q < 0 ? pad->outputs[0] : g->ops[dq2].outputs[0];
        if (conv->inputs[0] != src || conv->inputs[1] == src || conv->inputs[2] == src)
            continue;
        const char *why = NULL;
        int64_t qc = 0;
        if (q < 0) {
            if (!dqg_dtype_is_float(g->tensors[src].dtype) || pad->attrs.pad.value != 0.0)
                why = "the constant is not a float 0";
        } else if (!same_params(g, &g->ops[dq1], &g->ops[q]) ||
                   !same_params(g, &g->ops[q], &g->ops[dq2])) {
            why = "the dequantizes and the quantize around it differ in type, scale or zero "
                  "point";
        } else if ((qc = dqg_fuse_quantized(g, &g->ops[q], pad->attrs.pad.value)) !=
                   dqg_fuse_zero_point(g, &g->ops[q])) {
            why = "the constant does not quantize to the zero point";
        }
        if (why) {
            dqg_status st = dqg_explain(s, "not folded: Pad '%s' into Convolution '%s': %s",
                                        pad->name, conv->name, why);
            if (st != DQG_OK)
                return st;
            continue;
        }
        int first = conv->attrs.conv.data_format == DQG_FORMAT_NCX ? 2 : 1;
        for (int k = 0; k < conv->attrs.conv.spatial_rank; k++) {
            conv->attrs.conv.pads_begin[k] += pad->attrs.pad.begin[first + k];
            conv->attrs.conv.pads_end[k] += pad->attrs.pad.end[first + k];
        }
        pad->removed = true;
        if (q < 0) {
            conv->inputs[0] = pad->inputs[0];
        } else {
            conv->inputs[0] = g->ops[dq1].outputs[0];
            g->ops[q].removed = g->ops[dq2].removed = true;
        }
        dqg_status st =
            dqg_explain(s,
                        q < 0 ? "folded: Pad '%s' into Convolution '%s''s padding (exact: its "
                                "constant is 0)"
                              : "folded: Pad '%s' (between Dequantize and Quantize of equal "
                                "parameters) into Convolution '%s''s padding (exact: its "
                                "constant quantizes to the zero point)",
                        pad->name, conv->name);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
