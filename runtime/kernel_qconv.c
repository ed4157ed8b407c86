/* The fused int8 Convolution: u8/s8 activations and s8 weights (zero point
 * folded in, pre-packed once) on oneDNN's int8 convolution, with output
 * scales, source zero point, bias and epilogue as post-ops, and an optional
 * quantized u8/s8 destination. u8 weights whose w - zp leaves s8 run as
 * w - 128 with a window term as the first post-op: per output channel,
 * 128 - zp times the sum of (x - zx) over the weights' reach (the channels
 * of its group and the taps inside the image). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"
#include "runtime/qdw_kernel.h"
#include "runtime/weights.h"

/* A run-time operand of the result's shape (a residual) stored row-major
 * where the primitive reads it channels-last: reordered into scratch first. */
typedef struct qconv_operand {
    int handle; /* its position among the primitive's handles */
    size_t offset;
    dqg_dnnl_prim reorder;
} qconv_operand;

/* The window term of weights zero points that leave s8 (see above). */
typedef struct conv_window {
    float *factor; /* per output channel: 128 - zp times its output scale */
    int64_t batch, ic, oc, groups;
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3]; /* 3 spatial axes, 1 unused */
    size_t sums_offset; /* in scratch: channel sums int32 [batch][in pixels][groups] */
    bool u8;
} conv_window;

typedef struct qconv_kernel {
    dqg_kernel base;
    conv_window win; /* factor NULL: none */
    dqg_dnnl_prim prim;
    dqg_qattr q;
    dqg_qsrc src;
    int dst_arg;
    void *w_packed;
    dqg_conv_io io; /* activation reorders, in scratch after the attribute's */
    int n_operands;
    qconv_operand operand[DQG_QATTR_MAX_BINARY]; /* in scratch after the activations' */
    size_t pad_offset;                           /* the primitives' scratchpad, last in scratch */
    dqg_qdw *dw; /* dqgraph's own depthwise 3x3 kernel in the primitive's place, or NULL */
} qconv_kernel;

/* t[b, o, oc] (channels-last, the result's layout) = factor[oc] times
 * sum of (x - zx) over output pixel o's window and oc's group, from the
 * channels-last source x: channel sums per input pixel first, then the
 * taps inside the image (exact in integers). */
static void fill_window_term(const qconv_kernel *c, const void *x, int32_t zx, void *scratch)
{
    const conv_window *w = &c->win;
    const int64_t G = w->groups, cg = w->ic / G, og = w->oc / G;
    const int64_t ip = w->in[0] * w->in[1] * w->in[2], op = w->out[0] * w->out[1] * w->out[2];
    int32_t *cs = (int32_t *)((char *)scratch + w->sums_offset);
    float *t = (float *)((char *)scratch + c->q.row_term_offset);
    int threads = w->batch * (ip * w->ic + op * w->oc) >= (1 << 15) ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < w->batch * ip; i++) {
            for (int64_t g = 0; g < G; g++) {
                int32_t sum = 0;
                if (w->u8) {
                    const uint8_t *px = (const uint8_t *)x + i * w->ic + g * cg;
                    for (int64_t j = 0; j < cg; j++)
                        sum += px[j];
                } else {
                    const int8_t *px = (const int8_t *)x + i * w->ic + g * cg;
                    for (int64_t j = 0; j < cg; j++)
                        sum += px[j];
                }
                cs[i * G + g] = sum;
            }
        }
#pragma omp for schedule(static)
        for (int64_t i = 0; i < w->batch * op; i++) {
            int64_t b = i / op, o = i % op;
            int64_t o2 = o % w->out[2], o1 = o / w->out[2] % w->out[1],
                    o0 = o / w->out[2] / w->out[1];
            /* The taps inside the image, per axis: k in [lo, hi). */
            int64_t lo[3], hi[3], taps = 1;
            const int64_t oo[3] = {o0, o1, o2};
            for (int d = 0; d < 3; d++) {
                int64_t first = oo[d] * w->stride[d] - w->pad[d]; /* k = 0 */
                lo[d] = first >= 0 ? 0 : (-first + w->dil[d] - 1) / w->dil[d];
                hi[d] = first >= w->in[d] ? 0 : (w->in[d] - 1 - first) / w->dil[d] + 1;
                hi[d] = hi[d] < w->k[d] ? hi[d] : w->k[d];
                taps *= hi[d] > lo[d] ? hi[d] - lo[d] : 0;
            }
            float *ti = t + i * w->oc;
            for (int64_t g = 0; g < G; g++) {
                /* One group's window sum, kept in a register. */
                int64_t sum = 0;
                for (int64_t k0 = lo[0]; k0 < hi[0]; k0++)
                    for (int64_t k1 = lo[1]; k1 < hi[1]; k1++) {
                        int64_t p0 = o0 * w->stride[0] - w->pad[0] + k0 * w->dil[0];
                        int64_t p1 = o1 * w->stride[1] - w->pad[1] + k1 * w->dil[1];
                        const int32_t *line =
                            cs + ((b * w->in[0] + p0) * w->in[1] + p1) * w->in[2] * G + g;
                        for (int64_t k2 = lo[2]; k2 < hi[2]; k2++)
                            sum += line[(o2 * w->stride[2] - w->pad[2] + k2 * w->dil[2]) * G];
                    }
                float sg = (float)(sum - (int64_t)zx * cg * taps);
                for (int64_t j = 0; j < og; j++)
                    ti[g * og + j] = w->factor[g * og + j] * sg;
            }
        }
    }
}

static dqg_status qconv_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    qconv_kernel *c = (qconv_kernel *)k;
    void *h[DQG_DNNL_MAX_ARGS], *pad = (char *)scratch + c->pad_offset, *src;
    const void *internal[2];
    dqg_status st = dqg_qsrc_prepare(&c->src, args, scratch, &src, internal);
    if (st != DQG_OK)
        return st;
    st = dqg_conv_io_begin(&c->io, src, args[c->dst_arg], scratch, pad, &h[0], &h[2], c->base.impl);
    if (st != DQG_OK)
        return st;
    if (c->dw) {
        dqg_qdw_run(c->dw, h[0], h[2]);
        return dqg_conv_io_end(&c->io, h[2], args[c->dst_arg], pad, c->base.impl);
    }
    h[1] = c->w_packed;
    if (c->win.factor)
        fill_window_term(c, h[0], dqg_qattr_src_zp(&c->q, args, internal), scratch);
    dqg_qattr_handles(&c->q, args, internal, scratch, 3, h);
    for (int i = 0; i < c->n_operands; i++) {
        qconv_operand *o = &c->operand[i];
        void *to = (char *)scratch + o->offset, *rh[2] = {h[o->handle], to};
        if ((st = dqg_dnnl_prim_execute(&o->reorder, rh, pad, c->base.impl)) != DQG_OK)
            return st;
        h[o->handle] = to;
    }
    if ((st = dqg_dnnl_prim_execute(&c->prim, h, pad, c->base.impl)) != DQG_OK)
        return st;
    return dqg_conv_io_end(&c->io, h[2], args[c->dst_arg], pad, c->base.impl);
}

static void qconv_destroy(dqg_kernel *k)
{
    qconv_kernel *c = (qconv_kernel *)k;
    dqg_dnnl_prim_destroy(&c->prim);
    dqg_conv_io_destroy(&c->io);
    for (int i = 0; i < c->n_operands; i++)
        dqg_dnnl_prim_destroy(&c->operand[i].reorder);
    dqg_qattr_free(&c->q);
    dqg_qsrc_free(&c->src);
    dqg_qdw_destroy(c->dw);
    free(c->w_packed);
    free(c->win.factor);
    free(c);
}

/* The convolution as the known-defect rules see it. */
static dqg_prim_facts conv_facts(const dqg_conv_attrs *a, const dqg_tensor *x, const dqg_tensor *y,
                                 const dqg_tensor *w, const dqg_qattr *q)
{
    dqg_prim_facts f = {.kind = DQG_FACTS_CONV,
                        .spatial = a->spatial_rank,
                        .src_zero_point = q->src_zero_point,
                        .binary = q->n_binary > 0,
                        .per_channel_binary = q->per_channel_binary,
                        .full_binary = q->full_operand,
                        .oc_per_group = w->dims[0] / a->groups,
                        .ic_per_group = w->dims[1],
                        .groups = a->groups};
    int first = a->data_format == DQG_FORMAT_NCX ? 2 : 1;
    for (int d = 0; d < a->spatial_rank; d++) {
        f.in[d] = x->dims[first + d];
        f.out[d] = y->dims[first + d];
        f.kernel[d] = w->dims[2 + d];
        f.stride[d] = a->strides[d];
        f.dilation[d] = a->dilations[d] - 1;
        f.pad_l[d] = a->pads_begin[d];
        f.pad_r[d] = a->pads_end[d];
    }
    return f;
}

/* The reorders of run-time operands of the result's shape whose stored
 * layout is not the primitive's (a residual kept row-major, as one read
 * from a graph input). Their copies go in scratch at `base` + *bytes on,
 * and *bytes grows by their size. */
static dqg_status plan_operands(qconv_kernel *c, const dqg_kernel_request *req, size_t base,
                                size_t *bytes)
{
    const dqg_qattr *q = &c->q;
    if (dqg_req_op(req, DQG_ROLE_MAIN)->attrs.conv.data_format != DQG_FORMAT_NCX)
        return DQG_OK; /* NXC: every operand is channels-last as the result */
    int handle = 3 + (q->bias != NULL) + q->has_src_zp;
    for (int b = 0; b < q->n_binary; b++, handle++) {
        /* The result's shape and layout, in the operand's own type. */
        dnnl_memory_desc_t like_dst = c->io.dst;
        like_dst.data_type = q->binary_md[b].data_type;
        if (!dnnl_memory_desc_equal(&q->binary_md[b], &like_dst))
            continue;
        int varying = 0; /* axes of more than one value: none or one, any layout is the same */
        for (int i = 0; i < like_dst.ndims; i++)
            varying += like_dst.dims[i] > 1;
        if (varying <= 1)
            continue;
        if (!q->binary_rt[b])
            /* A constant's values are copied row-major. */
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: a constant operand of the result's shape, and a reordered "
                                 "result",
                                 c->base.impl);
        if (q->binary_ref[b].source != DQG_RT_ARG || q->binary_ref[b].arg < 0 ||
            q->binary_ref[b].arg >= req->mini->n_inputs)
            continue;
        const dqg_tensor *t = &req->mini->tensors[req->mini->inputs[q->binary_ref[b].arg]];
        dnnl_memory_desc_t stored;
        dqg_status st =
            dqg_conv_activation_md(t, DQG_FORMAT_NCX, q->binary_md[b].data_type, &stored);
        if (st != DQG_OK)
            return st;
        if (dnnl_memory_desc_equal(&stored, &q->binary_md[b]))
            continue;
        qconv_operand *o = &c->operand[c->n_operands];
        if ((st = dqg_dnnl_reorder_prim(&o->reorder, &stored, &q->binary_md[b], c->base.impl)) !=
            DQG_OK)
            return st;
        o->handle = handle;
        o->offset = base + *bytes;
        *bytes += (dnnl_memory_desc_get_size(&q->binary_md[b]) + 63) & ~(size_t)63;
        c->n_operands++;
    }
    return DQG_OK;
}

/* The window term's geometry and factors (per output channel, col[oc]
 * times its constant output scale); spatial axes right-aligned in three. */
static dqg_status window_init(qconv_kernel *c, const dqg_conv_attrs *a, const dqg_tensor *x,
                              const dqg_tensor *y, const dqg_tensor *w, const int32_t *col)
{
    conv_window *win = &c->win;
    int sr = a->spatial_rank, first = a->data_format == DQG_FORMAT_NCX ? 2 : 1;
    win->batch = x->dims[0];
    win->ic = x->dims[a->data_format == DQG_FORMAT_NCX ? 1 : sr + 1];
    win->oc = w->dims[0];
    win->groups = a->groups > 0 ? a->groups : 1;
    win->u8 = x->dtype == DQG_U8;
    for (int d = 0; d < 3; d++) {
        win->in[d] = win->out[d] = win->k[d] = win->stride[d] = win->dil[d] = 1;
        win->pad[d] = 0;
    }
    for (int d = 0; d < sr; d++) {
        int s = 3 - sr + d;
        win->in[s] = x->dims[first + d];
        win->out[s] = y->dims[first + d];
        win->k[s] = w->dims[2 + d];
        win->stride[s] = a->strides[d] > 0 ? a->strides[d] : 1;
        win->dil[s] = a->dilations[d] > 0 ? a->dilations[d] : 1;
        win->pad[s] = a->pads_begin[d];
    }
    if (!(win->factor = malloc((size_t)(win->oc ? win->oc : 1) * sizeof *win->factor)))
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", c->base.impl);
    for (int64_t n = 0; n < win->oc; n++)
        win->factor[n] = (float)col[n] * c->q.row_scale[c->q.n_scales > 1 ? n : 0];
    return DQG_OK;
}

/* The window term's scratch after *end (which moves past it): the term
 * (the result's shape, f32) and the channel sums. The
 * term and the source are read channels-last and dense. */
static dqg_status window_scratch(qconv_kernel *c, size_t *end)
{
    const conv_window *w = &c->win;
    for (int i = 0; i < 2; i++)
        if (!dqg_md_dense_channels_last(i ? &c->io.dst : &c->io.src))
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: the window term of weights zero points needs a dense "
                                 "channels-last %s",
                                 c->base.impl, i ? "result" : "source");
    size_t ip = (size_t)(w->in[0] * w->in[1] * w->in[2]),
           op = (size_t)(w->out[0] * w->out[1] * w->out[2]), b = (size_t)w->batch,
           G = (size_t)w->groups;
    size_t at = (*end + 63) & ~(size_t)63;
    c->q.row_term_offset = at;
    at += (b * op * (size_t)w->oc * sizeof(float) + 63) & ~(size_t)63;
    c->win.sums_offset = at;
    at += (b * ip * G * sizeof(int32_t) + 63) & ~(size_t)63;
    *end = at;
    return DQG_OK;
}

/* dqgraph's own kernel in the primitive's place for a depthwise 3x3
 * layer (qdw_kernel.h) of the form it takes; the primitive stays for
 * everything else. */
static dqg_status try_own_depthwise(qconv_kernel *c, const dqg_conv_attrs *a, const dqg_tensor *x,
                                    const dqg_tensor *y, const dqg_tensor *w,
                                    const dqg_prim_facts *f, const int8_t *folded)
{
    if (a->spatial_rank != 2 || w->dims[1] != 1 || a->groups != w->dims[0] || w->dims[2] != 3 ||
        w->dims[3] != 3 || f->dilation[0] != 0 || f->dilation[1] != 0 || c->win.factor ||
        c->src.quantize || c->n_operands || !dqg_md_dense_channels_last(&c->io.src) ||
        !dqg_md_dense_channels_last(&c->io.dst) || c->io.src.dims[1] != a->groups)
        return DQG_OK;
    dqg_qdw_shape s = {.n = x->dims[0],
                       .c = a->groups,
                       .h = f->in[0],
                       .w = f->in[1],
                       .oh = f->out[0],
                       .ow = f->out[1],
                       .stride_h = f->stride[0],
                       .stride_w = f->stride[1],
                       .pad_t = f->pad_l[0],
                       .pad_l = f->pad_l[1]};
    dqg_status st = dqg_qdw_create(&s, x->dtype, y->dtype, folded, &c->q, &c->dw, c->base.impl);
    if (st == DQG_UNSUPPORTED)
        return DQG_OK; /* the primitive runs it */
    if (st != DQG_OK)
        return st;
    snprintf(c->base.impl, sizeof c->base.impl, "dqgraph:avx512_vnni:int8-depthwise3x3:%ss8:%s",
             dqg_dtype_name(x->dtype), dqg_dtype_name(y->dtype));
    c->base.bytes += dqg_qdw_bytes(c->dw);
    return DQG_OK;
}

dqg_status dqg_kernel_qconv_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    if (dqg_req_op(req, DQG_ROLE_MAIN)->kind == DQG_OP_CONV_TRANSPOSE)
        return dqg_kernel_qdeconv_build(req, out);
    const dqg_graph *g = req->mini;
    const dqg_op *cv = dqg_req_op(req, DQG_ROLE_MAIN), *sdq = dqg_req_op(req, DQG_ROLE_SRC_DQ),
                 *wdq = dqg_req_op(req, DQG_ROLE_W_DQ);
    const dqg_conv_attrs *a = &cv->attrs.conv;
    /* Quantized inside the partition, the source has the layout of the f32
     * tensor it is quantized from. */
    const dqg_op *sq = dqg_req_op(req, DQG_ROLE_SRC_QUANT);
    dqg_tensor xs = g->tensors[sdq->inputs[0]];
    if (sq)
        xs.channels_last = g->tensors[sq->inputs[0]].channels_last;
    const dqg_tensor *x = &xs;
    const dqg_tensor *w = &g->tensors[wdq->inputs[0]];
    dqg_tensor_id out_id = dqg_part_result(g, req->roles);
    const dqg_tensor *y = &g->tensors[out_id];
    qconv_kernel *c = calloc(1, sizeof *c);
    if (!c)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 convolution: out of memory");
    c->base.execute = qconv_execute;
    c->base.destroy = qconv_destroy;
    snprintf(c->base.impl, sizeof c->base.impl, "onednn:conv:%ss8:%s", dqg_dtype_name(x->dtype),
             dqg_dtype_name(y->dtype));
    {
        dqg_status isa = dqg_int8_exact_isa(c->base.impl);
        if (isa != DQG_OK) {
            free(c);
            return isa;
        }
    }
    c->dst_arg = dqg_kernel_arg_index(g, out_id);
    dnnl_memory_desc_t md_x, md_w, md_w_any, md_y, md_x_use, md_y_use;
    dqg_status st;
    dnnl_primitive_desc_t pd = NULL;
    int8_t *folded = NULL;
    int32_t *col = NULL;
    int64_t *colsum = NULL;
    if ((st = dqg_conv_activation_md(x, a->data_format, dqg_dnnl_dtype(x->dtype), &md_x)) !=
            DQG_OK ||
        (st = dqg_conv_activation_md(y, a->data_format, dqg_dnnl_dtype(y->dtype), &md_y)) !=
            DQG_OK ||
        (st = dqg_conv_weights_md(w, a->groups, dnnl_s8, false, &md_w)) != DQG_OK ||
        (st = dqg_conv_weights_md(w, a->groups, dnnl_s8, true, &md_w_any)) != DQG_OK)
        goto fail;
    dqg_weights wv;
    dqg_weights_of_conv(g, wdq, &wv);
    /* oneDNN's convolution takes no weights zero point: weights that need
     * one run as codes w - 128 with the window term. */
    st = dqg_qattr_fold_weights(req, &wv, &folded, NULL, &col, c->base.impl);
    if (st != DQG_OK)
        goto fail;
    /* Without padding no output reads the source's zero point from outside
     * the image: a constant one folds into the bias (-zp * channel sums). */
    bool padded = false;
    for (int d = 0; d < a->spatial_rank; d++)
        padded |= a->pads_begin[d] != 0 || a->pads_end[d] != 0;
    if (!padded) {
        if (!(colsum = calloc((size_t)wv.N, sizeof *colsum))) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", c->base.impl);
            goto fail;
        }
        for (int64_t n = 0; n < wv.N; n++)
            for (int64_t k = 0; k < wv.K; k++)
                colsum[n] += folded[n * wv.K + k];
    }
    /* Operands of the result's shape take the primitive's layout for the
     * result (channels-last); one stored otherwise is reordered first. */
    dqg_conv_io_plan(&c->io, &md_x, &md_y, a->data_format);
    if ((st = dqg_qattr_build(req, y->rank, 1, w->dims[0], &c->io.dst, colsum, col != NULL, &c->q,
                              c->base.impl)) != DQG_OK ||
        (st = dqg_qattr_exact_integer(req, &c->q, wv.K, c->base.impl)) != DQG_OK ||
        (col && (st = window_init(c, a, x, y, w, col)) != DQG_OK))
        goto fail;
    dnnl_dims_t strides, dil, pl, pr;
    dqg_conv_params(a, strides, dil, pl, pr);
    dnnl_convolution_desc_t d;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_convolution_direct, &c->io.src, &md_w_any,
        dqg_qattr_bias_md(&c->q), &c->io.dst, strides, dil, pl, pr);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, c->base.impl, "descriptor");
        goto fail;
    }
    dqg_prim_facts facts = conv_facts(a, x, y, w, &c->q);
    if ((st = dqg_dnnl_pd_create_checked(&pd, &d, c->q.attr, &facts, c->base.impl,
                                         sizeof c->base.impl, c->base.why, sizeof c->base.why)) !=
        DQG_OK)
        goto fail;
    const char *refused = dqg_defect_refuse(&facts, c->base.impl);
    if (refused) {
        st = dqg_set_error(DQG_UNSUPPORTED, "%s: %s, with %lld groups of %lld -> %lld channels",
                           c->base.impl, refused, (long long)facts.groups,
                           (long long)facts.ic_per_group, (long long)facts.oc_per_group);
        goto fail;
    }
    size_t io_bytes = 0, attr_scratch = dqg_qattr_scratch_size(&c->q);
    {
        size_t qb;
        if ((st = dqg_qsrc_init(&c->src, req, attr_scratch, &qb)) != DQG_OK)
            goto fail;
        attr_scratch += qb;
    }
    if ((st = dqg_conv_io_finish(&c->io, pd, &md_x, &md_y, attr_scratch, &io_bytes, c->base.why,
                                 sizeof c->base.why, c->base.impl)) != DQG_OK)
        goto fail;
    if ((st = plan_operands(c, req, attr_scratch, &io_bytes)) != DQG_OK)
        goto fail;
    md_x_use = c->io.src;
    md_y_use = c->io.dst;
    if ((st = dqg_qkernel_finish(folded, pd, &md_w, &md_x_use, &md_y_use, &c->q, &c->prim,
                                 &c->w_packed, &c->base.bytes, c->base.impl)) != DQG_OK)
        goto fail;
    dqg_qattr_note(&c->q, c->base.why, sizeof c->base.why);
    if ((st = try_own_depthwise(c, a, x, y, w, &facts, folded)) != DQG_OK)
        goto fail;
    c->pad_offset = attr_scratch + io_bytes;
    if (col && (st = window_scratch(c, &c->pad_offset)) != DQG_OK)
        goto fail;
    {
        size_t pad = dqg_dnnl_scratchpad(&c->prim), io_pad = dqg_conv_io_scratchpad(&c->io);
        for (int i = 0; i < c->n_operands; i++) {
            size_t r = dqg_dnnl_scratchpad(&c->operand[i].reorder);
            io_pad = r > io_pad ? r : io_pad;
        }
        c->base.scratch_size = c->pad_offset + (pad > io_pad ? pad : io_pad);
    }
    dnnl_primitive_desc_destroy(pd);
    free(folded);
    free(col);
    free(colsum);
    *out = &c->base;
    return DQG_OK;
fail:
    free(folded);
    free(col);
    free(colsum);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    qconv_destroy(&c->base);
    return st;
}
