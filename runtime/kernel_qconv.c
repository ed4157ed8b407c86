/* The fused int8 Convolution: u8/s8 activations and s8 weights (zero point
 * folded in, pre-packed once) on oneDNN's int8 convolution, with output
 * scales, source zero point, bias and epilogue as post-ops, and an optional
 * quantized u8/s8 destination. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"
#include "runtime/weights.h"

typedef struct qconv_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    dqg_qattr q;
    int src_arg, dst_arg;
    void *w_packed;
    /* oneDNN's int8 kernels want channels-last activations: NCX src and dst
     * are reordered per execution into and out of the chosen layouts, in
     * scratch after the attribute scratch. */
    bool reorder_src, reorder_dst;
    dqg_dnnl_prim src_reorder, dst_reorder;
    size_t attr_scratch, src_bytes;
} qconv_kernel;

static dqg_status qconv_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    qconv_kernel *c = (qconv_kernel *)k;
    void *h[DQG_DNNL_MAX_ARGS];
    char *tmp = (char *)scratch + c->attr_scratch;
    h[0] = args[c->src_arg];
    if (c->reorder_src) {
        void *rh[2] = {args[c->src_arg], tmp};
        dqg_status st = dqg_dnnl_prim_execute(&c->src_reorder, rh, c->base.impl);
        if (st != DQG_OK)
            return st;
        h[0] = tmp;
    }
    h[1] = c->w_packed;
    h[2] = c->reorder_dst ? tmp + c->src_bytes : args[c->dst_arg];
    const void *internal[2] = {NULL, NULL};
    dqg_qattr_handles(&c->q, args, internal, scratch, 3, h);
    dqg_status st = dqg_dnnl_prim_execute(&c->prim, h, c->base.impl);
    if (st == DQG_OK && c->reorder_dst) {
        void *rh[2] = {h[2], args[c->dst_arg]};
        st = dqg_dnnl_prim_execute(&c->dst_reorder, rh, c->base.impl);
    }
    return st;
}

static void qconv_destroy(dqg_kernel *k)
{
    qconv_kernel *c = (qconv_kernel *)k;
    dqg_dnnl_prim_destroy(&c->prim);
    dqg_dnnl_prim_destroy(&c->src_reorder);
    dqg_dnnl_prim_destroy(&c->dst_reorder);
    dqg_qattr_free(&c->q);
    free(c->w_packed);
    free(c);
}

static dqg_status make_reorder(dqg_dnnl_prim *r, const dnnl_memory_desc_t *from,
                               const dnnl_memory_desc_t *to, const char *what)
{
    dnnl_engine_t eng = dqg_onednn_engine();
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, from, eng, to, eng, NULL);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, what, "activation reorder");
    int kinds[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    dnnl_memory_desc_t mds[2] = {*from, *to};
    dqg_status st = dqg_dnnl_prim_init(r, pd, 2, kinds, mds, what);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

dqg_status dqg_kernel_qconv_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *cv = dqg_req_op(req, DQG_ROLE_MAIN), *sdq = dqg_req_op(req, DQG_ROLE_SRC_DQ),
                 *wdq = dqg_req_op(req, DQG_ROLE_W_DQ);
    const dqg_conv_attrs *a = &cv->attrs.conv;
    const dqg_tensor *x = &g->tensors[sdq->inputs[0]];
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
    c->src_arg = dqg_kernel_arg_index(g, sdq->inputs[0]);
    c->dst_arg = dqg_kernel_arg_index(g, out_id);
    dnnl_memory_desc_t md_x, md_w, md_w_any, md_y, md_x_use, md_y_use;
    dqg_status st;
    dnnl_primitive_desc_t pd = NULL;
    int8_t *folded = NULL;
    if ((st = dqg_conv_activation_md(x, a->data_format, dqg_dnnl_dtype(x->dtype), &md_x)) !=
            DQG_OK ||
        (st = dqg_conv_activation_md(y, a->data_format, dqg_dnnl_dtype(y->dtype), &md_y)) !=
            DQG_OK ||
        (st = dqg_conv_weights_md(w, a->groups, dnnl_s8, false, &md_w)) != DQG_OK ||
        (st = dqg_conv_weights_md(w, a->groups, dnnl_s8, true, &md_w_any)) != DQG_OK)
        goto fail;
    dqg_weights wv;
    dqg_weights_of_conv(g, wdq, &wv);
    if ((st = dqg_weights_fold_s8(&wv, &folded, c->base.impl)) != DQG_OK)
        goto fail;
    if ((st = dqg_qattr_build(req, y->rank, 1, w->dims[0], &md_y, &c->q, c->base.impl)) != DQG_OK)
        goto fail;
    dnnl_dims_t strides, dil, pl, pr;
    dqg_conv_params(a, strides, dil, pl, pr);
    md_x_use = md_x;
    md_y_use = md_y;
    if (a->data_format == DQG_FORMAT_NCX) {
        /* oneDNN's jit int8 kernels take channels-last activations only;
         * NCX is reordered per execution (see execute). */
        dnnl_format_tag_t tag = md_x.ndims == 3   ? dnnl_acb
                                : md_x.ndims == 4 ? dnnl_acdb
                                                  : dnnl_acdeb;
        dnnl_memory_desc_init_by_tag(&md_x_use, md_x.ndims, md_x.dims, md_x.data_type, tag);
        dnnl_memory_desc_init_by_tag(&md_y_use, md_y.ndims, md_y.dims, md_y.data_type, tag);
    }
    dnnl_convolution_desc_t d;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_convolution_direct, &md_x_use, &md_w_any, NULL, &md_y_use,
        strides, dil, pl, pr);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, c->base.impl, "descriptor");
        goto fail;
    }
    if ((st = dqg_dnnl_pd_create(&pd, &d, c->q.attr, c->base.impl, sizeof c->base.impl)) != DQG_OK)
        goto fail;
    md_x_use = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    md_y_use = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    c->attr_scratch = dqg_qattr_scratch_size(&c->q);
    if (!dnnl_memory_desc_equal(&md_x, &md_x_use)) {
        if ((st = make_reorder(&c->src_reorder, &md_x, &md_x_use, c->base.impl)) != DQG_OK)
            goto fail;
        c->reorder_src = true;
        c->src_bytes = (dnnl_memory_desc_get_size(&md_x_use) + 63) & ~(size_t)63;
    }
    if (!dnnl_memory_desc_equal(&md_y, &md_y_use)) {
        if ((st = make_reorder(&c->dst_reorder, &md_y_use, &md_y, c->base.impl)) != DQG_OK)
            goto fail;
        c->reorder_dst = true;
    }
    if (c->reorder_src || c->reorder_dst)
        snprintf(c->base.why, sizeof c->base.why, "reorders its %s to and from channels-last",
                 c->reorder_src && c->reorder_dst ? "source and result"
                 : c->reorder_src                 ? "source"
                                                  : "result");
    if ((st = dqg_qkernel_finish(folded, pd, &md_w, &md_x_use, &md_y_use, &c->q, &c->prim,
                                 &c->w_packed, &c->base.bytes, c->base.impl)) != DQG_OK)
        goto fail;
    c->base.scratch_size =
        c->attr_scratch + c->src_bytes +
        (c->reorder_dst ? (dnnl_memory_desc_get_size(&md_y_use) + 63) & ~(size_t)63 : 0);
    dnnl_primitive_desc_destroy(pd);
    free(folded);
    *out = &c->base;
    return DQG_OK;
fail:
    free(folded);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    qconv_destroy(&c->base);
    return st;
}
