/* Building oneDNN attributes for fused partitions. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/cache.h"
#include "runtime/dynq_kernel.h"
#include "runtime/gelu_kernel.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"

static bool is_const(const dqg_graph *g, dqg_tensor_id t)
{
    return g->tensors[t].kind == DQG_TENSOR_CONSTANT;
}

static int op_pos(const dqg_kernel_request *req, dqg_part_role r)
{
    return dqg_part_find(req->roles, r);
}

/* A run-time value of the partition: a kernel argument, or the scale / zero
 * point the kernel computes when it quantizes its source itself. */
static dqg_rt_ref rt_ref(const dqg_kernel_request *req, dqg_tensor_id t)
{
    const dqg_graph *g = req->mini;
    int32_t p = g->tensors[t].producer;
    dqg_rt_ref r = {.source = DQG_RT_ARG, .arg = -1, .dtype = g->tensors[t].dtype};
    if (p >= 0 && req->roles->role[p] == DQG_ROLE_SRC_QUANT)
        r.source = g->ops[p].outputs[1] == t ? DQG_RT_SRC_SCALE : DQG_RT_SRC_ZP;
    else
        r.arg = dqg_kernel_arg_index(g, t);
    return r;
}

static dqg_status add_factor(dqg_qattr *q, dqg_rt_ref r, const char *what)
{
    if (q->n_factors == DQG_QATTR_MAX_FACTORS)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: too many run-time scale factors", what);
    q->factor[q->n_factors++] = r;
    return DQG_OK;
}

/* Multiplies the constant output scales by tensor t (one value, or one per
 * channel), widening them to per channel when needed. */
static dqg_status scale_by(float **sc, int64_t *n, const dqg_tensor *t, int64_t channels,
                           const char *what)
{
    if (t->nelems != 1 && t->nelems != channels)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: a scale of %lld values for %lld channels", what,
                             (long long)t->nelems, (long long)channels);
    if (t->nelems > 1 && *n == 1) {
        float *w = realloc(*sc, (size_t)channels * sizeof(float));
        if (!w)
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        for (int64_t i = 1; i < channels; i++)
            w[i] = w[0];
        *sc = w;
        *n = channels;
    }
    for (int64_t i = 0; i < *n; i++)
        (*sc)[i] *= dqg_load_float(t->dtype, t->data, t->nelems > 1 ? i : 0);
    return DQG_OK;
}

static int64_t md_elems(const dnnl_memory_desc_t *md)
{
    int64_t n = 1;
    for (int i = 0; i < md->ndims; i++)
        n *= md->dims[i];
    return n;
}

/* An operand of a binary post-op, shaped for the destination of rank
 * dst_rank: one value, one per channel, or the destination's own shape. */
static dqg_status operand_md(const dqg_tensor *t, int dst_rank, int channel_axis,
                             const dnnl_memory_desc_t *dst_md, dnnl_memory_desc_t *md,
                             const char *what)
{
    if (t->nelems > 1 && dst_md && t->nelems == md_elems(dst_md) &&
        t->nelems != dst_md->dims[channel_axis]) {
        dnnl_memory_desc_t m = *dst_md;
        m.data_type = dnnl_f32;
        *md = m;
        return DQG_OK;
    }
    dnnl_dims_t dims, strides;
    for (int i = 0; i < dst_rank; i++)
        dims[i] = 1;
    if (t->nelems > 1)
        dims[channel_axis] = t->nelems;
    int64_t s = 1;
    for (int i = dst_rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(md, dst_rank, dims, dnnl_f32, strides);
    return st == dnnl_success ? DQG_OK : dqg_dnnl_error(st, what, "binary operand descriptor");
}

/* Appends a binary post-op: a constant operand (its values times `factor`,
 * the folded quantize scale for additive operands) or a run-time one. */
static dqg_status add_binary(const dqg_kernel_request *req, dqg_qattr *q, dnnl_post_ops_t po,
                             dnnl_alg_kind_t alg, dqg_tensor_id tid, float factor, int dst_rank,
                             int channel_axis, const dnnl_memory_desc_t *dst_md, const char *what)
{
    const dqg_tensor *t = &req->mini->tensors[tid];
    if (q->n_binary == DQG_QATTR_MAX_BINARY)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: too many binary post-ops", what);
    dnnl_memory_desc_t *md = &q->binary_md[q->n_binary];
    dqg_status st = operand_md(t, dst_rank, channel_axis, dst_md, md, what);
    if (st != DQG_OK)
        return st;
    q->full_operand |= dst_md && dnnl_memory_desc_equal(md, dst_md);
    q->per_channel_binary |= t->nelems > 1;
    for (int i = 0; i < md->ndims; i++)
        q->other_axis_binary |= i != channel_axis && md->dims[i] > 1;
    int index = dnnl_post_ops_len(po);
    dnnl_status_t s = dnnl_post_ops_append_binary(po, alg, md);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, what, "binary post-op");
    int b = q->n_binary;
    q->binary_index[b] = index;
    if (is_const(req->mini, tid)) {
        float *copy = malloc((size_t)t->nelems * sizeof(float));
        if (!copy)
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        for (int64_t i = 0; i < t->nelems; i++)
            copy[i] = dqg_load_float(t->dtype, t->data, i) * factor;
        q->binary_data[b] = copy;
    } else {
        if (factor != 1.0f)
            return dqg_set_error(DQG_UNSUPPORTED, "%s: a run-time addend before a QuantizeLinear",
                                 what);
        q->binary_rt[b] = true;
        q->binary_ref[b] = rt_ref(req, tid);
    }
    q->n_binary++;
    return DQG_OK;
}

/* A binary post-op with a one-value constant operand. */
static dqg_status add_binary_scalar(dqg_qattr *q, dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                                    float value, int dst_rank, const char *what)
{
    if (q->n_binary == DQG_QATTR_MAX_BINARY)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: too many binary post-ops", what);
    int b = q->n_binary;
    dnnl_dims_t ones;
    for (int i = 0; i < dst_rank; i++)
        ones[i] = 1;
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&q->binary_md[b], dst_rank, ones, dnnl_f32,
                                                   dst_rank == 2   ? dnnl_ab
                                                   : dst_rank == 3 ? dnnl_abc
                                                   : dst_rank == 4 ? dnnl_abcd
                                                   : dst_rank == 5 ? dnnl_abcde
                                                                   : dnnl_abcdef);
    q->binary_index[b] = dnnl_post_ops_len(po);
    if (s == dnnl_success)
        s = dnnl_post_ops_append_binary(po, alg, &q->binary_md[b]);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, what, "binary post-op");
    if (!(q->binary_data[b] = malloc(sizeof(float))))
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    q->binary_data[b][0] = value;
    q->n_binary++;
    return DQG_OK;
}

/* A Clip post-op. oneDNN 2.6 defect E: a second eltwise post-op of the same
 * algorithm runs with the first's alpha and beta, so a Clip with other
 * bounds than an earlier one becomes max(lo) and min(hi) binary post-ops. */
static dqg_status add_clip(dqg_qattr *q, dnnl_post_ops_t po, float lo, float hi, int dst_rank,
                           bool *have_clip, float *first_lo, float *first_hi, const char *what)
{
    if (!*have_clip || (lo == *first_lo && hi == *first_hi)) {
        *have_clip = true;
        *first_lo = lo;
        *first_hi = hi;
        dnnl_status_t s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, lo, hi);
        return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, what, "post-op");
    }
    dqg_status st = add_binary_scalar(q, po, dnnl_binary_max, lo, dst_rank, what);
    return st == DQG_OK ? add_binary_scalar(q, po, dnnl_binary_min, hi, dst_rank, what) : st;
}
/* Whether a ReLU or Clip right before the int8 destination changes
 * nothing: oneDNN rounds to nearest even, adds the zero point and
 * saturates to [qmin, qmax], so bounds at or beyond qmin - zp and
 * qmax - zp give the same integers (a value below lo <= qmin - zp rounds
 * to at most that integer). Only for a chain whose values are finite (no
 * post-op before it), where the clamp and the saturation agree on every
 * input. */
static bool implied_by_saturation(const dqg_op *op, float inv, dqg_dtype dst, int32_t zp)
{
    double qmin = dst == DQG_U8 ? 0 : dst == DQG_S8 ? -128 : 1, qmax = dst == DQG_U8 ? 255 : 127;
    if (qmin > 0 || !(inv > 0.0f))
        return false;
    double lo = 0.0, hi = INFINITY;
    if (op->kind == DQG_OP_CLIP) {
        lo = (double)(op->attrs.clip.lo * inv);
        hi = (double)(op->attrs.clip.hi * inv);
    }
    return lo <= qmin - zp && hi >= qmax - zp;
}

/* A unary function as an eltwise post-op. The matcher puts none before a
 * Q, so the value is the real result (inv is 1). */
static dqg_status add_unary(dnnl_post_ops_t po, const dqg_op *op, float inv, const char *what)
{
    dnnl_alg_kind_t alg;
    float alpha = 0.0f;
    switch (op->attrs.unary.op) {
    case DQG_UNARY_GELU_ERF:
        alg = dnnl_eltwise_gelu_erf;
        break;
    case DQG_UNARY_GELU_TANH:
        alg = dnnl_eltwise_gelu_tanh;
        break;
    case DQG_UNARY_SIGMOID:
        alg = dnnl_eltwise_logistic;
        break;
    case DQG_UNARY_SWISH:
        alg = dnnl_eltwise_swish;
        alpha = op->attrs.unary.alpha;
        break;
    case DQG_UNARY_TANH:
        alg = dnnl_eltwise_tanh;
        break;
    case DQG_UNARY_HARD_SWISH:
        alg = dnnl_eltwise_hardswish;
        break;
    default:
        return dqg_set_error(DQG_UNSUPPORTED, "%s: %s is not a post-op", what,
                             dqg_unary_op_name(op->attrs.unary.op));
    }
    if (inv != 1.0f)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: %s before a requantization", what,
                             dqg_unary_op_name(op->attrs.unary.op));
    dnnl_status_t s = dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, 0.0f);
    return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, what, "eltwise post-op");
}

/* Makes a constant bias (one value, or one per channel) the primitive's
 * bias argument: oneDNN computes scale * (acc + bias), so each value is
 * divided by its channel's output scale (which holds the quantize's 1/scale,
 * as the additive terms' factor `inv` does). Leaves q->bias NULL when the
 * bias has another shape or a scale is zero or the quotient not finite. */
static dqg_status bias_argument(dqg_qattr *q, const dqg_tensor *t, float inv, const float *sc,
                                int64_t n_sc, int64_t channels, int rank, const int64_t *w_colsum,
                                const char *what)
{
    if (t && (t->kind != DQG_TENSOR_CONSTANT || !t->data ||
              (t->nelems != 1 && t->nelems != channels) || (n_sc != 1 && n_sc != channels)))
        return DQG_OK;
    if (channels < 1)
        return DQG_OK;
    float *b = malloc((size_t)channels * sizeof *b);
    if (!b)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    for (int64_t c = 0; c < channels; c++) {
        /* The folded zero point's compensation, exact in double. */
        double r = q->folded_zp ? -(double)q->folded_zp * (double)w_colsum[c] : 0.0;
        if (t) {
            double v = dqg_load_float(t->dtype, t->data, t->nelems == 1 ? 0 : c);
            double s = sc[n_sc == 1 ? 0 : c];
            r += v * (double)inv / s;
            if (!(s != 0.0) || !isfinite(r) || fabs(r) > 3.0e38) {
                free(b);
                return DQG_OK;
            }
        }
        b[c] = (float)r;
    }
    dnnl_dims_t dims;
    for (int i = 0; i < rank; i++)
        dims[i] = 1;
    dims[rank - 1] = channels;
    dnnl_dims_t strides;
    for (int i = 0; i < rank; i++)
        strides[i] = i == rank - 1 ? 1 : channels;
    if (dnnl_memory_desc_init_by_strides(&q->bias_md, rank, dims, dnnl_f32, strides) !=
        dnnl_success) {
        free(b);
        return DQG_OK;
    }
    q->bias = b;
    return DQG_OK;
}

static float quant_scale(const dqg_graph *g, const dqg_op *op)
{
    const dqg_tensor *t = &g->tensors[op->inputs[1]];
    return dqg_load_float(t->dtype, t->data, 0);
}

static int32_t quant_zp(const dqg_graph *g, const dqg_op *op)
{
    if (op->inputs[2] == DQG_NONE)
        return 0;
    const dqg_tensor *t = &g->tensors[op->inputs[2]];
    return (int32_t)dqg_load_int(t->dtype, t->data, 0);
}

/* The residual sum after the convolution's quantized result, in the
 * epilogue (the values are in units of Q1's scale, zero point not yet
 * added, when it starts):
 *   u = clamp(round(v), lo1 - zq1, hi1 - zq1)        Q1, less its zero point
 *   (u * sd1 / sr + (zq1 - zd1) * sd1 / sr - zr + r) * sr / s2
 *                                                    DQ, + DQ(r), into Q's units
 * then the ReLU/Clip after the sum (bounds in Q's units), and Q's zero point
 * as the destination's. The residual r is read in its own type. Every step
 * is the reference's up to float rounding of the products. */
static dqg_status add_sum(const dqg_kernel_request *req, dqg_qattr *q, dnnl_post_ops_t po,
                          int dst_rank, const dnnl_memory_desc_t *dst_md, bool *have_clip,
                          float *clip_lo, float *clip_hi, const char *what)
{
    const dqg_graph *g = req->mini;
    /* Nothing before the sum can make its values non-finite. */
    bool finite = q->n_factors == 0 && q->n_binary == 0;
    const dqg_op *q1 = dqg_req_op(req, DQG_ROLE_SUM_Q), *d1 = dqg_req_op(req, DQG_ROLE_SUM_DQ),
                 *dr = dqg_req_op(req, DQG_ROLE_SUM_SRC_DQ), *q2 = dqg_req_op(req, DQG_ROLE_Q);
    if (!q1 || !d1 || !dr || !q2 || !dst_md)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: an incomplete residual sum", what);
    float sd1 = quant_scale(g, d1), sr = quant_scale(g, dr), s2 = quant_scale(g, q2);
    int32_t zq1 = quant_zp(g, q1), zd1 = quant_zp(g, d1), zr = quant_zp(g, dr);
    if (!(sd1 > 0.0f && sd1 < 3.4e38f) || !(sr > 0.0f && sr < 3.4e38f) ||
        !(s2 > 0.0f && s2 < 3.4e38f))
        return dqg_set_error(DQG_UNSUPPORTED, "%s: a residual sum with a scale not positive", what);
    bool s8 = g->tensors[q1->outputs[0]].dtype == DQG_S8;
    float lo = (s8 ? -128.0f : 0.0f) - (float)zq1, hi = (s8 ? 127.0f : 255.0f) - (float)zq1;
    dnnl_status_t s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, what, "round post-op");
    dqg_status st = add_clip(q, po, lo, hi, dst_rank, have_clip, clip_lo, clip_hi, what);
    if (st != DQG_OK)
        return st;
    /* The chain's only linear post-op (defect E: a second would take its
     * parameters); few post-ops keep the 1x1 kernels within their
     * registers. */
    float alpha = sd1 / sr, beta = (float)(zq1 - zd1) * alpha - (float)zr;
    if ((s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, alpha, beta)) !=
        dnnl_success)
        return dqg_dnnl_error(s, what, "post-op");
    /* The residual, of the destination's shape and layout, in its type. */
    if (q->n_binary == DQG_QATTR_MAX_BINARY)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: too many binary post-ops", what);
    int b = q->n_binary;
    dqg_tensor_id rt = dr->inputs[0];
    q->binary_md[b] = *dst_md;
    q->binary_md[b].data_type = dqg_dnnl_dtype(g->tensors[rt].dtype);
    q->binary_index[b] = dnnl_post_ops_len(po);
    q->binary_rt[b] = true;
    q->binary_ref[b] = rt_ref(req, rt);
    q->n_binary++;
    q->full_operand = true;
    q->per_channel_binary = true;
    if ((s = dnnl_post_ops_append_binary(po, dnnl_binary_add, &q->binary_md[b])) != dnnl_success)
        return dqg_dnnl_error(s, what, "residual post-op");
    st = add_binary_scalar(q, po, dnnl_binary_mul, sr / s2, dst_rank, what);
    int last_post = -1;
    for (int k = 0; k < req->roles->n_ops; k++)
        if (req->roles->role[k] == DQG_ROLE_SUM_POST)
            last_post = k;
    for (int k = 0; k < req->roles->n_ops && st == DQG_OK; k++) {
        if (req->roles->role[k] != DQG_ROLE_SUM_POST)
            continue;
        const dqg_op *op = &g->ops[k];
        if (k == last_post && finite &&
            implied_by_saturation(op, 1.0f / s2, g->tensors[q2->outputs[0]].dtype,
                                  quant_zp(g, q2))) {
            q->clip_in_saturation = true;
            continue;
        }
        if (op->kind == DQG_OP_RELU) {
            if ((s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f)) !=
                dnnl_success)
                st = dqg_dnnl_error(s, what, "post-op");
        } else {
            st = add_clip(q, po, op->attrs.clip.lo / s2, op->attrs.clip.hi / s2, dst_rank,
                          have_clip, clip_lo, clip_hi, what);
        }
    }
    return st;
}

dqg_status dqg_qattr_build(const dqg_kernel_request *req, int dst_rank, int channel_axis,
                           int64_t channels, const dnnl_memory_desc_t *dst_md,
                           const int64_t *w_colsum, bool row_term, dqg_qattr *q, const char *what)
{
    return dqg_qattr_build_ex(req, dst_rank, channel_axis, channels, dst_md, w_colsum, row_term, 0,
                              q, what);
}

dqg_status dqg_qattr_build_ex(const dqg_kernel_request *req, int dst_rank, int channel_axis,
                              int64_t channels, const dnnl_memory_desc_t *dst_md,
                              const int64_t *w_colsum, bool row_term, unsigned flags, dqg_qattr *q,
                              const char *what)
{
    bool runtime_bias = flags & DQG_QATTR_RUNTIME_BIAS;
    const dqg_graph *g = req->mini;
    const dqg_partition *p = req->roles;
    memset(q, 0, sizeof *q);
    q->row_term_binary = -1;
    if (dqg_dnnl_attr_create(&q->attr) != dnnl_success)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    dnnl_status_t s = dnnl_success;
    dqg_status status = DQG_OK;

    /* A following QuantizeLinear divides by its scale: folded into the
     * output scales, with every additive term and clip bound of the
     * epilogue scaled to match (exact algebra for a positive scale). oneDNN
     * then rounds to nearest even, saturates and adds the zero point. */
    float inv = 1.0f;
    int qpos = op_pos(req, DQG_ROLE_Q);
    /* With a residual sum, the convolution's own quantize (SUM_Q) sets the
     * units of its epilogue; the final one only the destination's. */
    int sum_q = op_pos(req, DQG_ROLE_SUM_Q), inv_pos = sum_q >= 0 ? sum_q : qpos;
    if (inv_pos >= 0) {
        const dqg_tensor *qs = &g->tensors[g->ops[inv_pos].inputs[1]];
        float qscale = dqg_load_float(qs->dtype, qs->data, 0);
        if (!(qscale > 0.0f) || !(qscale < 3.4e38f))
            return dqg_set_error(DQG_UNSUPPORTED, "%s: quantize scale %g is not positive", what,
                                 (double)qscale);
        inv = 1.0f / qscale;
    }
    /* A nonlinear function (GELU, Sigmoid, HardSwish, ...) before the
     * quantize does not commute with its scale: the epilogue runs in real
     * units and a last scalar multiply by 1 / scale follows it. */
    float late_inv = 1.0f;
    const dqg_op *nonlinear = NULL;
    for (int k = 0; k < p->n_ops && !nonlinear; k++)
        if (p->role[k] == DQG_ROLE_POST && g->ops[k].kind == DQG_OP_UNARY)
            nonlinear = &g->ops[k];
    if (nonlinear && qpos >= 0) {
        if (sum_q >= 0)
            return dqg_set_error(DQG_UNSUPPORTED, "%s: %s before a residual sum's quantize", what,
                                 dqg_unary_op_name(nonlinear->attrs.unary.op));
        late_inv = inv;
        inv = 1.0f;
    }

    /* Scales and zero points of an int8 partition; an f32 MatMul or
     * Convolution with an epilogue has neither. */
    int sdq_pos = op_pos(req, DQG_ROLE_SRC_DQ);
    float *sc = NULL;
    int64_t n_sc = 1;
    if (sdq_pos >= 0) {
        const dqg_op *sdq = &g->ops[sdq_pos];
        const dqg_op *wdq = &g->ops[op_pos(req, DQG_ROLE_W_DQ)];
        if (!(sc = malloc(sizeof *sc)))
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        sc[0] = inv;
        if ((status = scale_by(&sc, &n_sc, &g->tensors[wdq->inputs[1]], channels, what)) != DQG_OK)
            goto out;
        dqg_tensor_id st = sdq->inputs[1];
        if (is_const(g, st))
            status = scale_by(&sc, &n_sc, &g->tensors[st], channels, what);
        else
            status = add_factor(q, rt_ref(req, st), what);
        if (status != DQG_OK)
            goto out;
        dqg_tensor_id zt = sdq->inputs[2];
        if (zt != DQG_NONE) {
            int32_t zp;
            if (is_const(g, zt)) {
                zp = (int32_t)dqg_load_int(g->tensors[zt].dtype, g->tensors[zt].data, 0);
                q->src_zp_value = zp;
                if (zp != 0 && w_colsum)
                    q->folded_zp = zp; /* the bias argument takes it below */
                else if (zp != 0)
                    s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_SRC, 1, 0, &zp);
                q->src_zero_point = zp != 0 && !q->folded_zp;
            } else {
                q->has_src_zp = q->src_zero_point = true;
                q->src_zp = rt_ref(req, zt);
                zp = DNNL_RUNTIME_S32_VAL;
                s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_SRC, 1, 0, &zp);
            }
            if (s != dnnl_success) {
                status = dqg_dnnl_error(s, what, "source zero point");
                goto out;
            }
        }
        /* Mul by a scale after the anchor: a run-time scalar becomes a
         * factor; x_scale * w_scale (SCALE_SRC) splits into its run-time
         * scalar and its constant part. */
        for (int k = 0; k < p->n_ops; k++) {
            if (p->role[k] != DQG_ROLE_SCALE)
                continue;
            dqg_tensor_id f = dqg_req_operand(req, &g->ops[k]);
            int32_t fp = g->tensors[f].producer;
            if (fp >= 0 && p->role[fp] == DQG_ROLE_SCALE_SRC) {
                for (int i = 0; i < 2 && status == DQG_OK; i++) {
                    dqg_tensor_id in = g->ops[fp].inputs[i];
                    status = is_const(g, in) ? scale_by(&sc, &n_sc, &g->tensors[in], channels, what)
                                             : add_factor(q, rt_ref(req, in), what);
                }
            } else {
                status = add_factor(q, rt_ref(req, f), what);
            }
            if (status != DQG_OK)
                goto out;
        }
        int mask = n_sc > 1 ? 1 << channel_axis : 0;
        s = dnnl_primitive_attr_set_output_scales(q->attr, n_sc, mask, sc);
        if (s != dnnl_success) {
            status = dqg_dnnl_error(s, what, "output scales");
            goto out;
        }
        q->n_scales = n_sc;
    }

    /* Epilogue: the run-time scale factors first (a scalar multiply), then
     * bias, post-ops, and quantization as the destination zero point. */
    dnnl_post_ops_t po = NULL;
    if (dnnl_post_ops_create(&po) != dnnl_success) {
        status = dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        goto out;
    }
    if (row_term && (!dst_md || !sc)) {
        status = dqg_set_error(DQG_UNSUPPORTED, "%s: a row term without int8 scales", what);
    } else if (row_term) {
        /* In accumulator units times the output scales, before the
         * run-time factors: s (acc + bias) + s t = s (acc + t + bias). */
        if (!(q->row_scale = malloc((size_t)n_sc * sizeof *q->row_scale))) {
            status = dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        } else {
            memcpy(q->row_scale, sc, (size_t)n_sc * sizeof *q->row_scale);
            int b = q->row_term_binary = q->n_binary++;
            q->binary_md[b] = *dst_md;
            q->binary_md[b].data_type = dnnl_f32;
            q->binary_index[b] = dnnl_post_ops_len(po);
            q->binary_rt[b] = true;
            q->binary_ref[b].arg = -3; /* the kernel's row term */
            q->full_operand = true;
            q->per_channel_binary = true; /* its factor varies by channel */
            if ((s = dnnl_post_ops_append_binary(po, dnnl_binary_add, &q->binary_md[b])) !=
                dnnl_success)
                status = dqg_dnnl_error(s, what, "row-term post-op");
        }
    }
    if (status == DQG_OK && q->n_factors > 0) {
        /* A placeholder operand shaped as one value; filled per execution. */
        dnnl_memory_desc_t *md = &q->binary_md[q->n_binary];
        dnnl_dims_t ones;
        for (int i = 0; i < dst_rank; i++)
            ones[i] = 1;
        dnnl_memory_desc_init_by_tag(md, dst_rank, ones, dnnl_f32,
                                     dst_rank == 2   ? dnnl_ab
                                     : dst_rank == 3 ? dnnl_abc
                                     : dst_rank == 4 ? dnnl_abcd
                                     : dst_rank == 5 ? dnnl_abcde
                                                     : dnnl_abcdef);
        q->binary_index[q->n_binary] = dnnl_post_ops_len(po);
        q->binary_rt[q->n_binary] = true;
        q->binary_ref[q->n_binary].arg = -2; /* the product of the factors */
        q->n_binary++;
        if ((s = dnnl_post_ops_append_binary(po, dnnl_binary_mul, md)) != dnnl_success)
            status = dqg_dnnl_error(s, what, "scale post-op");
    }
    const dqg_op *main = &g->ops[op_pos(req, DQG_ROLE_MAIN)];
    int bpos = op_pos(req, DQG_ROLE_BIAS);
    /* A (transposed) convolution's own bias is 1-D, along the channels. */
    bool conv = main->kind == DQG_OP_CONVOLUTION || main->kind == DQG_OP_CONV_TRANSPOSE;
    dqg_tensor_id bias[2] = {conv ? main->inputs[2] : DQG_NONE,
                             bpos >= 0 ? dqg_req_operand(req, &g->ops[bpos]) : DQG_NONE};
    /* The first bias becomes the primitive's bias argument when it can. */
    bool first = true;
    for (int i = 0; i < 2 && status == DQG_OK; i++) {
        if (bias[i] == DQG_NONE)
            continue;
        bool taken = false;
        if (first && sc && (q->n_factors == 0 || (runtime_bias && !q->folded_zp))) {
            status = bias_argument(q, &g->tensors[bias[i]], inv, sc, n_sc, channels,
                                   conv ? 1 : dst_rank, w_colsum, what);
            taken = q->bias != NULL;
            q->bias_runtime = taken && q->n_factors > 0;
            q->bias_len = channels;
        }
        first = false;
        if (status == DQG_OK && !taken)
            status = add_binary(req, q, po, dnnl_binary_add, bias[i], inv, dst_rank, channel_axis,
                                dst_md, what);
    }
    /* A folded zero point with no bias argument yet: its compensation
     * alone is one (in accumulator units, before any scale or factor). */
    if (status == DQG_OK && q->folded_zp && !q->bias) {
        status =
            bias_argument(q, NULL, inv, sc, n_sc, channels, conv ? 1 : dst_rank, w_colsum, what);
        if (status == DQG_OK && !q->bias) { /* none: oneDNN's zero point after all */
            int32_t zp = q->folded_zp;
            q->folded_zp = 0;
            q->src_zero_point = true;
            if ((s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_SRC, 1, 0, &zp)) !=
                dnnl_success)
                status = dqg_dnnl_error(s, what, "source zero point");
        }
    }
    /* Scalar Add/Mul are broadcast binary post-ops rather than linear
     * eltwise ones: oneDNN 2.6's brgemm matmul drops the second linear
     * post-op of a chain. */
    bool have_clip = false;
    float clip_lo = 0, clip_hi = 0;
    int last_post = -1;
    for (int k = 0; k < p->n_ops; k++)
        if (p->role[k] == DQG_ROLE_POST)
            last_post = k;
    int32_t dst_zp = 0;
    if (qpos >= 0 && g->ops[qpos].inputs[2] != DQG_NONE) {
        const dqg_tensor *qz = &g->tensors[g->ops[qpos].inputs[2]];
        dst_zp = (int32_t)dqg_load_int(qz->dtype, qz->data, 0);
    }
    for (int k = 0; k < p->n_ops && status == DQG_OK; k++) {
        if (p->role[k] != DQG_ROLE_POST)
            continue;
        const dqg_op *op = &g->ops[k];
        s = dnnl_success;
        if (k == last_post && sum_q < 0 && qpos >= 0 && dnnl_post_ops_len(po) == 0 &&
            (op->kind == DQG_OP_RELU || op->kind == DQG_OP_CLIP) &&
            implied_by_saturation(op, inv, g->tensors[dqg_part_result(g, p)].dtype, dst_zp)) {
            q->clip_in_saturation = true;
            continue;
        }
        if (k == last_post && (flags & DQG_QATTR_OWN_GELU) && qpos < 0 && sum_q < 0 &&
            op->kind == DQG_OP_UNARY && op->attrs.unary.op == DQG_UNARY_GELU_ERF &&
            g->tensors[dqg_part_result(g, p)].dtype == DQG_F32 && dqg_gelu_own_available()) {
            q->own_gelu = true;
            continue;
        }
        if (op->kind == DQG_OP_RELU)
            s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
        else if (op->kind == DQG_OP_CLIP)
            status = add_clip(q, po, op->attrs.clip.lo * inv, op->attrs.clip.hi * inv, dst_rank,
                              &have_clip, &clip_lo, &clip_hi, what);
        else if (op->kind == DQG_OP_UNARY)
            status = add_unary(po, op, inv, what);
        else if (op->kind == DQG_OP_ADD)
            status = add_binary(req, q, po, dnnl_binary_add, dqg_req_operand(req, op), inv,
                                dst_rank, channel_axis, dst_md, what);
        else if (op->kind == DQG_OP_MUL)
            status = add_binary(req, q, po, dnnl_binary_mul, dqg_req_operand(req, op), 1.0f,
                                dst_rank, channel_axis, dst_md, what);
        else if (op->kind == DQG_OP_DIV) /* (x inv) / b = (x / b) inv */
            status = add_binary(req, q, po, dnnl_binary_div, dqg_req_operand(req, op), 1.0f,
                                dst_rank, channel_axis, dst_md, what);
        else
            status = dqg_set_error(DQG_UNSUPPORTED, "%s: %s is not a post-op", what,
                                   dqg_op_kind_name(op->kind));
        if (status == DQG_OK && s != dnnl_success)
            status = dqg_dnnl_error(s, what, "post-op");
    }
    if (status == DQG_OK && late_inv != 1.0f)
        status = add_binary_scalar(q, po, dnnl_binary_mul, late_inv, dst_rank, what);
    if (status == DQG_OK && sum_q >= 0)
        status = add_sum(req, q, po, dst_rank, dst_md, &have_clip, &clip_lo, &clip_hi, what);
    q->dst_dtype = g->tensors[dqg_part_result(g, p)].dtype;
    if (status == DQG_OK && dst_zp != 0 &&
        (s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_DST, 1, 0, &dst_zp)) !=
            dnnl_success)
        status = dqg_dnnl_error(s, what, "quantized destination");
    if (status == DQG_OK && (s = dnnl_primitive_attr_set_post_ops(q->attr, po)) != dnnl_success)
        status = dqg_dnnl_error(s, what, "post-ops");
    dnnl_post_ops_destroy(po);
out:
    free(sc);
    return status;
}

dqg_status dqg_qattr_weights_zp(dqg_qattr *q, int32_t zp, const char *what)
{
    q->weights_zp = zp;
    if (zp == 0)
        return DQG_OK;
    dnnl_status_t s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_WEIGHTS, 1, 0, &zp);
    return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, what, "weights zero point");
}

dqg_status dqg_qattr_fold_weights(const dqg_kernel_request *req, const dqg_weights *w, int8_t **out,
                                  int32_t *offset, int32_t **col, const char *what)
{
    const dqg_graph *g = req->mini;
    *out = NULL;
    *col = NULL;
    if (offset)
        *offset = 0;
    dqg_status st = dqg_weights_fold_s8(w, out, offset, what);
    if (st == DQG_UNSUPPORTED) {
        const dqg_op *cast = dqg_req_op(req, DQG_ROLE_CAST);
        const dqg_tensor *y = &g->tensors[dqg_part_result(g, req->roles)];
        if (cast && dqg_dtype_is_integer(g->tensors[cast->outputs[0]].dtype) &&
            dqg_dtype_is_integer(y->dtype))
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: weights zero points that leave s8, and an integer result "
                                 "(their term would be added in f32)",
                                 what);
        st = dqg_weights_fold_s8_columns(w, out, col, what);
    }
    if (st == DQG_OK)
        st = dqg_weights_check_int32(w, *out, offset ? *offset : 0, dqg_qsrc_range(req), what);
    if (st != DQG_OK) {
        free(*out);
        free(*col);
        *out = NULL;
        *col = NULL;
    }
    return st;
}

dqg_status dqg_qattr_exact_integer(const dqg_kernel_request *req, const dqg_qattr *q, int64_t K,
                                   const char *what)
{
    if (!dqg_req_op(req, DQG_ROLE_CAST) || !dqg_dtype_is_integer(q->dst_dtype))
        return DQG_OK;
    double wmax = q->weights_zp ? 256.0 : 128.0;
    if ((double)K * (double)dqg_qsrc_range(req) * wmax < 16777216.0)
        return DQG_OK;
    /* oneDNN 2.6's int8 convolutions (jit_int8, jit_uni_int8, gemm,
     * ref_int8, and brgconv with padding or compensation) pass every sum
     * through f32 on the way to an s32 result, with or without zero
     * points; its matmuls keep integer sums unless a zero point's
     * compensation is added. */
    if (dqg_req_op(req, DQG_ROLE_MAIN)->kind == DQG_OP_CONVOLUTION)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: an integer result and K = %lld: oneDNN's int8 convolutions "
                             "round their sums past 2^24 through f32",
                             what, (long long)K);
    if (!q->src_zero_point && !q->folded_zp && !q->weights_zp)
        return DQG_OK;
    return dqg_set_error(DQG_UNSUPPORTED,
                         "%s: an integer result with a %s zero point and K = %lld: oneDNN "
                         "rounds its sums past 2^24",
                         what, q->src_zero_point || q->folded_zp ? "source" : "weights",
                         (long long)K);
}

void dqg_qattr_note(const dqg_qattr *q, char *why, size_t size)
{
    size_t used = strlen(why);
    if (q->folded_zp && used + 1 < size) {
        snprintf(why + used, size - used, "%sthe source zero point %d folded into the bias",
                 used ? "; " : "", (int)q->folded_zp);
        used = strlen(why);
    }
    if (q->row_term_binary >= 0 && used + 1 < size) {
        snprintf(why + used, size - used,
                 "%sweights zero points that leave s8: codes w - 128 in s8, and each output "
                 "channel's 128 - zp times the source's sums over the weights' reach (a "
                 "matmul's rows, a convolution's windows) as the first post-op",
                 used ? "; " : "");
        used = strlen(why);
    }
    if (q->weights_zp && used + 1 < size) {
        int c = (int)q->weights_zp;
        snprintf(why + used, size - used,
                 "%sweights stored as w - zp %c %d in s8, with %d as oneDNN's "
                 "weights zero point",
                 used ? "; " : "", c < 0 ? '-' : '+', c < 0 ? -c : c, c);
        used = strlen(why);
    }
    if (q->own_gelu && used + 1 < size) {
        snprintf(why + used, size - used,
                 "%sthe GELU as dqgraph's own pass over the result after the primitive",
                 used ? "; " : "");
        used = strlen(why);
    }
    if (q->bias_runtime && used + 1 < size) {
        snprintf(why + used, size - used,
                 "%sthe bias as the primitive's argument, divided by the run-time scale per "
                 "execution (as a post-op where the quotient leaves the normal range)",
                 used ? "; " : "");
        used = strlen(why);
    }
    if (q->clip_in_saturation && used + 1 < size)
        snprintf(why + used, size - used,
                 "%sthe final ReLU/Clip is the %s destination's saturation", used ? "; " : "",
                 dqg_dtype_name(q->dst_dtype));
}

void dqg_qattr_free(dqg_qattr *q)
{
    if (q->attr)
        dnnl_primitive_attr_destroy(q->attr);
    for (int i = 0; i < q->n_binary; i++)
        free(q->binary_data[i]);
    free(q->bias);
    free(q->row_scale);
    memset(q, 0, sizeof *q);
}

/* Scratch: the product of the run-time factors (f32), then the source zero
 * point (s32), each on its own cache line, then a run-time bias. */
size_t dqg_qattr_scratch_size(const dqg_qattr *q)
{
    return 128 + (q->bias_runtime ? ((size_t)q->bias_len * sizeof(float) + 63) & ~(size_t)63 : 0);
}

int dqg_qattr_args(const dqg_qattr *q, int n, int *kinds, dnnl_memory_desc_t *mds)
{
    dnnl_dims_t one = {1};
    if (q->bias) {
        mds[n] = q->bias_md;
        kinds[n++] = DNNL_ARG_BIAS;
    }
    if (q->has_src_zp) {
        dnnl_memory_desc_init_by_tag(&mds[n], 1, one, dnnl_s32, dnnl_a);
        kinds[n++] = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC;
    }
    for (int i = 0; i < q->n_binary; i++) {
        mds[n] = q->binary_md[i];
        kinds[n++] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(q->binary_index[i]) | DNNL_ARG_SRC_1;
    }
    return n;
}

static const void *rt_value(const dqg_rt_ref *r, void *const *args, const void *const *internal)
{
    switch (r->source) {
    case DQG_RT_SRC_SCALE:
        return internal[0];
    case DQG_RT_SRC_ZP:
        return internal[1];
    default:
        return args[r->arg];
    }
}

int dqg_qattr_handles(const dqg_qattr *q, void *const *args, const void *const *internal,
                      void *scratch, int n, void **h)
{
    float *factor = scratch;
    int32_t *zp = (int32_t *)((char *)scratch + 64);
    if (q->n_factors > 0) {
        float f = 1.0f;
        for (int i = 0; i < q->n_factors; i++)
            f *= dqg_load_float(q->factor[i].dtype, rt_value(&q->factor[i], args, internal), 0);
        *factor = f;
    }
    if (q->bias_runtime) {
        /* F s (acc + b / F) = F s acc + b (in the kernel's units). */
        float f = *factor, *b = (float *)((char *)scratch + 128);
        if (!(isfinite(f) && f != 0.0f))
            return -1;
        for (int64_t c = 0; c < q->bias_len; c++) {
            /* A quotient past the float range, or a denormal one (few
             * significant bits left), takes the post-op. */
            b[c] = q->bias[c] / f;
            if (!isfinite(b[c]) || (b[c] != 0.0f && fabsf(b[c]) < FLT_MIN))
                return -1;
        }
        h[n++] = b;
    } else if (q->bias) {
        h[n++] = q->bias;
    }
    if (q->has_src_zp) {
        *zp = (int32_t)dqg_load_int(q->src_zp.dtype, rt_value(&q->src_zp, args, internal), 0);
        h[n++] = zp;
    }
    for (int i = 0; i < q->n_binary; i++)
        h[n++] = !q->binary_rt[i]             ? q->binary_data[i]
                 : q->binary_ref[i].arg == -2 ? (void *)factor
                 : q->binary_ref[i].arg == -3 ? (void *)((char *)scratch + q->row_term_offset)
                                              : (void *)rt_value(&q->binary_ref[i], args, internal);
    return n;
}

int32_t dqg_qattr_src_zp(const dqg_qattr *q, void *const *args, const void *const *internal)
{
    if (!q->has_src_zp)
        return q->src_zp_value;
    return (int32_t)dqg_load_int(q->src_zp.dtype, rt_value(&q->src_zp, args, internal), 0);
}

dqg_status dqg_qsrc_init(dqg_qsrc *s, const dqg_kernel_request *req, size_t offset, size_t *bytes)
{
    const dqg_graph *g = req->mini;
    const dqg_op *sq = dqg_req_op(req, DQG_ROLE_SRC_QUANT);
    const dqg_op *sdq = dqg_req_op(req, DQG_ROLE_SRC_DQ);
    memset(s, 0, sizeof *s);
    *bytes = 0;
    if (!sq) {
        s->arg = dqg_kernel_arg_index(g, sdq->inputs[0]);
        return DQG_OK;
    }
    s->quantize = true;
    s->arg = dqg_kernel_arg_index(g, sq->inputs[0]);
    s->n = g->tensors[sq->inputs[0]].nelems;
    s->offset = (offset + 63) & ~(size_t)63;
    snprintf(s->op_name, sizeof s->op_name, "%s", sq->name);
    size_t end = s->offset + (((size_t)s->n + 63) & ~(size_t)63) + 64;
    if (sq->kind == DQG_OP_QUANTIZE) {
        dqg_status st = dqg_kernel_quantize_build_op(req, sq, &s->qk);
        if (st != DQG_OK)
            return st;
        s->qk_offset = end;
        end += (s->qk->scratch_size + 63) & ~(size_t)63;
    }
    *bytes = end - offset;
    return DQG_OK;
}

void dqg_qsrc_free(dqg_qsrc *s)
{
    if (s->qk)
        s->qk->destroy(s->qk);
    s->qk = NULL;
}

dqg_status dqg_qsrc_prepare(const dqg_qsrc *s, void *const *args, void *scratch, void **src,
                            const void **internal)
{
    internal[0] = internal[1] = NULL;
    if (!s->quantize) {
        *src = args[s->arg];
        return DQG_OK;
    }
    uint8_t *q = (uint8_t *)scratch + s->offset;
    *src = q;
    if (s->qk) /* scale and zero point are the partition's inputs */
        return dqg_quantize_kernel_run_into(s->qk, args, (char *)scratch + s->qk_offset, q);
    size_t n = ((size_t)s->n + 63) & ~(size_t)63;
    float *scale = (float *)(q + n);
    uint8_t *zp = q + n + 4;
    internal[0] = scale;
    internal[1] = zp;
    return dqg_dynq_run(args[s->arg], s->n, q, scale, zp, s->op_name);
}

int64_t dqg_qsrc_range(const dqg_kernel_request *req)
{
    const dqg_graph *g = req->mini;
    const dqg_op *sdq = dqg_req_op(req, DQG_ROLE_SRC_DQ);
    if (g->tensors[sdq->inputs[0]].dtype != DQG_S8)
        return 255; /* u8: x and x - zp both within [-255, 255] */
    dqg_tensor_id zt = sdq->inputs[2];
    if (zt == DQG_NONE)
        return 128;
    if (!is_const(g, zt))
        return 256;
    int64_t z = dqg_load_int(g->tensors[zt].dtype, g->tensors[zt].data, 0);
    return 128 + (z < 0 ? -z : z);
}

dqg_status dqg_int8_exact_isa(const char *what)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    bool vnni = (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
                (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
    if (vnni)
        return DQG_OK;
    return dqg_set_error(DQG_UNSUPPORTED,
                         "%s: the CPU ISA oneDNN uses (0x%x) has no VNNI or AMX, and its u8 x s8 "
                         "kernels would saturate intermediate sums",
                         what, (unsigned)isa);
}

dqg_status dqg_qkernel_finish(const int8_t *folded, const_dnnl_primitive_desc_t pd,
                              const dnnl_memory_desc_t *md_w_plain,
                              const dnnl_memory_desc_t *md_src, const dnnl_memory_desc_t *md_dst,
                              const dqg_qattr *q, dqg_dnnl_prim *prim, void **w_packed,
                              size_t *bytes, const char *what)
{
    const dnnl_memory_desc_t *md_w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
    dqg_status st =
        dqg_dnnl_pack(md_w_plain, folded, md_w, kind == dnnl_convolution, w_packed, bytes, what);
    return st == DQG_OK ? dqg_qkernel_prim(pd, md_src, md_dst, q, prim, what) : st;
}

dqg_status dqg_qkernel_prim(const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *md_src,
                            const dnnl_memory_desc_t *md_dst, const dqg_qattr *q,
                            dqg_dnnl_prim *prim, const char *what)
{
    int kinds[DQG_DNNL_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    dnnl_memory_desc_t mds[DQG_DNNL_MAX_ARGS] = {
        *md_src, *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), *md_dst};
    int n = dqg_qattr_args(q, 3, kinds, mds);
    return dqg_dnnl_prim_init(prim, pd, n, kinds, mds, what);
}
