/* The fused int8 Convolution: u8/s8 activations and s8 weights (zero point
 * folded in, pre-packed once) on oneDNN's int8 convolution, with output
 * scales, source zero point, bias and epilogue as post-ops, and an optional
 * quantized u8/s8 destination. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"
#include "runtime/weights.h"

/* A run-time operand of the result's shape (a residual) stored row-major
 * where the primitive reads it channels-last: reordered into scratch first. */
typedef struct qconv_operand {
    int handle; /* its position among the primitive's handles */
    size_t offset;
    dqg_dnnl_prim reorder;
} qconv_operand;

typedef struct qconv_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    dqg_qattr q;
    dqg_qsrc src;
    int dst_arg;
    void *w_packed;
    dqg_conv_io io; /* activation reorders, in scratch after the attribute's */
    int n_operands;
    qconv_operand operand[DQG_QATTR_MAX_BINARY]; /* in scratch after the activations' */
    size_t pad_offset;                           /* the primitives' scratchpad, last in scratch */
} qconv_kernel;

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
    h[1] = c->w_packed;
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
    free(c->w_packed);
    free(c);
}

/* The convolution as the known-defect rules see it. */
static dqg_prim_facts conv_facts(const dqg_conv_attrs *a, const dqg_tensor *x, const dqg_tensor *y,
                                 const dqg_tensor *w, const dqg_qattr *q)
{
    dqg_prim_facts f = {.kind = DQG_FACTS_CONV,
                        .spatial = a->spatial_rank,
                        .src_zero_point = q->src_zero_point,
                        .per_channel_binary = q->per_channel_binary,
                        .oc_per_group = w->dims[0] / a->groups};
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

dqg_status dqg_kernel_qconv_build(const dqg_kernel_request *req, dqg_kernel **out)
{
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
    if ((st = dqg_weights_fold_s8(&wv, &folded, NULL, c->base.impl)) != DQG_OK ||
        (st = dqg_weights_check_int32(&wv, folded, 0, dqg_qsrc_range(req), c->base.impl)) != DQG_OK)
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
    if ((st = dqg_qattr_build(req, y->rank, 1, w->dims[0], &c->io.dst, colsum, false, &c->q,
                              c->base.impl)) != DQG_OK ||
        (st = dqg_qattr_exact_integer(req, &c->q, wv.K, c->base.impl)) != DQG_OK)
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
    if (dqg_defect_refuse(&facts, c->base.impl)) {
        st = dqg_set_error(DQG_UNSUPPORTED,
                           "%s: oneDNN 2.6 defect C (gemm int8 convolution with a per-channel "
                           "post-op and %lld output channels per group)",
                           c->base.impl, (long long)facts.oc_per_group);
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
    c->pad_offset = attr_scratch + io_bytes;
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
    free(colsum);
    *out = &c->base;
    return DQG_OK;
fail:
    free(folded);
    free(colsum);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    qconv_destroy(&c->base);
    return st;
}
