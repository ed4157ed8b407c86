/* The fused int8 ConvTranspose: u8/s8 activations and s8 weights (a zero
 * point folded in, packed once) on oneDNN's int8 deconvolution, with the
 * output scales, the source zero point, the bias and the epilogue as its
 * attributes, and an optional quantized u8/s8 result. The activations are
 * read and written channels-last: on a row-major NCX layout oneDNN 2.6
 * offers only its gemm and reference int8 deconvolutions, slower than the
 * f32 one, which the kernel then leaves the layer to. */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"

typedef struct qdeconv_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    dqg_qattr q;
    int src_arg, dst_arg;
    void *w_packed;
    dqg_conv_io io;    /* activation reorders, in scratch after the attributes' */
    size_t pad_offset; /* the primitives' scratchpad, last in scratch */
} qdeconv_kernel;

static dqg_status qdeconv_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    qdeconv_kernel *c = (qdeconv_kernel *)k;
    void *h[DQG_DNNL_MAX_ARGS], *pad = (char *)scratch + c->pad_offset;
    dqg_status st = dqg_conv_io_begin(&c->io, args[c->src_arg], args[c->dst_arg], scratch, pad,
                                      &h[0], &h[2], c->base.impl);
    if (st != DQG_OK)
        return st;
    h[1] = c->w_packed;
    dqg_qattr_handles(&c->q, args, NULL, scratch, 3, h);
    if ((st = dqg_dnnl_prim_execute(&c->prim, h, pad, c->base.impl)) != DQG_OK)
        return st;
    return dqg_conv_io_end(&c->io, h[2], args[c->dst_arg], pad, c->base.impl);
}

static void qdeconv_destroy(dqg_kernel *k)
{
    qdeconv_kernel *c = (qdeconv_kernel *)k;
    dqg_dnnl_prim_destroy(&c->prim);
    dqg_conv_io_destroy(&c->io);
    dqg_qattr_free(&c->q);
    free(c->w_packed);
    free(c);
}

/* The weights [C, M/g, K...] minus their zero point (one, or one per
 * output channel along axis 1), which must leave every code in s8; and
 * every int32 sum must stay exact: at most C/g x taps products of
 * |x - zx| <= 255 and |w - zw| <= 128. */
static dqg_status fold_weights(const dqg_graph *g, const dqg_op *wdq, int64_t groups, int8_t **out,
                               const char *what)
{
    const dqg_tensor *w = &g->tensors[wdq->inputs[0]];
    const dqg_tensor *z = wdq->inputs[2] != DQG_NONE ? &g->tensors[wdq->inputs[2]] : NULL;
    int64_t mg = w->dims[1], taps = w->nelems / (w->dims[0] * mg), cg = w->dims[0] / groups;
    if ((double)cg * (double)taps * 255.0 * 128.0 >= 2147483648.0)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: %lld input channels per group times %lld taps could overflow "
                             "the int32 sums",
                             what, (long long)cg, (long long)taps);
    int8_t *f = malloc((size_t)w->nelems + 1);
    if (!f)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory folding the weights", what);
    bool per_channel = z && z->nelems > 1;
    for (int64_t i = 0; i < w->nelems; i++) {
        int64_t v = dqg_load_int(w->dtype, w->data, i);
        int64_t zp = z ? dqg_load_int(z->dtype, z->data, per_channel ? i / taps % mg : 0) : 0;
        if (v - zp < -128 || v - zp > 127) {
            free(f);
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: weight %lld minus its zero point %lld leaves s8", what,
                                 (long long)v, (long long)zp);
        }
        f[i] = (int8_t)(v - zp);
    }
    *out = f;
    return DQG_OK;
}

dqg_status dqg_kernel_qdeconv_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *ct = dqg_req_op(req, DQG_ROLE_MAIN), *sdq = dqg_req_op(req, DQG_ROLE_SRC_DQ),
                 *wdq = dqg_req_op(req, DQG_ROLE_W_DQ);
    const dqg_conv_transpose_attrs *a = &ct->attrs.conv_t;
    const dqg_tensor *x = &g->tensors[sdq->inputs[0]];
    const dqg_tensor *w = &g->tensors[wdq->inputs[0]];
    dqg_tensor_id out_id = dqg_part_result(g, req->roles);
    const dqg_tensor *y = &g->tensors[out_id];
    qdeconv_kernel *c = calloc(1, sizeof *c);
    if (!c)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 transposed convolution: out of memory");
    c->base.execute = qdeconv_execute;
    c->base.destroy = qdeconv_destroy;
    snprintf(c->base.impl, sizeof c->base.impl, "onednn:deconv:%ss8:%s", dqg_dtype_name(x->dtype),
             dqg_dtype_name(y->dtype));
    dqg_status st = dqg_int8_exact_isa(c->base.impl);
    if (st != DQG_OK) {
        free(c);
        return st;
    }
    c->src_arg = dqg_kernel_arg_index(g, sdq->inputs[0]);
    c->dst_arg = dqg_kernel_arg_index(g, out_id);
    int64_t groups = a->groups > 0 ? a->groups : 1;
    dnnl_primitive_desc_t pd = NULL;
    int8_t *folded = NULL;
    dnnl_memory_desc_t md_x, md_y, md_w, md_w_any;
    if ((st = fold_weights(g, wdq, groups, &folded, c->base.impl)) != DQG_OK ||
        (st = dqg_conv_activation_md(x, DQG_FORMAT_NCX, dqg_dnnl_dtype(x->dtype), &md_x)) !=
            DQG_OK ||
        (st = dqg_conv_activation_md(y, DQG_FORMAT_NCX, dqg_dnnl_dtype(y->dtype), &md_y)) !=
            DQG_OK ||
        (st = dqg_deconv_weights_md(w, groups, dnnl_s8, false, &md_w)) != DQG_OK ||
        (st = dqg_deconv_weights_md(w, groups, dnnl_s8, true, &md_w_any)) != DQG_OK)
        goto fail;
    dqg_conv_io_plan(&c->io, &md_x, &md_y, DQG_FORMAT_NCX);
    if ((st = dqg_qattr_build(req, y->rank, 1, y->dims[1], &c->io.dst, NULL, false, &c->q,
                              c->base.impl)) != DQG_OK)
        goto fail;
    /* The primitive would read such an operand in the result's
     * channels-last layout, whatever its own. */
    if (c->q.full_operand) {
        st = dqg_set_error(DQG_UNSUPPORTED,
                           "%s: an operand of the result's shape in the epilogue; the int8 "
                           "deconvolution reads it channels-last",
                           c->base.impl);
        goto fail;
    }
    dnnl_dims_t strides, dil, pl, pr;
    if ((st = dqg_deconv_params(a, strides, dil, pl, pr, c->base.impl)) != DQG_OK)
        goto fail;
    /* Rule K before the descriptor: the layer goes to the f32 path. */
    dqg_prim_facts facts = {.kind = DQG_FACTS_DECONV, .spatial = a->spatial_rank};
    for (int i = 0; i < a->spatial_rank; i++) {
        facts.pad_r[i] = pr[i];
        facts.kernel[i] = w->dims[2 + i];
        facts.stride[i] = strides[i];
        facts.dilation[i] = dil[i];
    }
    const char *refused = dqg_defect_refuse(&facts, c->base.impl);
    if (refused) {
        st = dqg_set_error(DQG_UNSUPPORTED, "%s: %s", c->base.impl, refused);
        goto fail;
    }
    dnnl_deconvolution_desc_t d;
    dnnl_status_t s = dnnl_dilated_deconvolution_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_deconvolution_direct, &c->io.src, &md_w_any,
        dqg_qattr_bias_md(&c->q), &c->io.dst, strides, dil, pl, pr);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, c->base.impl, "descriptor");
        goto fail;
    }
    if ((st = dqg_dnnl_pd_create(&pd, &d, c->q.attr, c->base.impl, sizeof c->base.impl)) != DQG_OK)
        goto fail;
    /* gemm_s8u8s32 and ref_int8 take seconds where the f32 kernel takes
     * milliseconds (measured 2.6 s against 0.7 ms with a zero point). */
    if (!strstr(c->base.impl, ":jit_")) {
        st = dqg_set_error(DQG_UNSUPPORTED,
                           "%s: oneDNN offers no jit int8 deconvolution here, and its others are "
                           "slower than the f32 one",
                           c->base.impl);
        goto fail;
    }
    size_t io_bytes = 0, w_bytes = 0, attr_scratch = dqg_qattr_scratch_size(&c->q);
    if ((st = dqg_conv_io_finish(&c->io, pd, &md_x, &md_y, attr_scratch, &io_bytes, c->base.why,
                                 sizeof c->base.why, c->base.impl)) != DQG_OK ||
        (st = dqg_dnnl_pack(&md_w, folded,
                            dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), true,
                            &c->w_packed, &w_bytes, c->base.impl)) != DQG_OK ||
        (st = dqg_qkernel_prim(pd, &c->io.src, &c->io.dst, &c->q, &c->prim, c->base.impl)) !=
            DQG_OK)
        goto fail;
    c->base.bytes += w_bytes;
    dqg_qattr_note(&c->q, c->base.why, sizeof c->base.why);
    c->pad_offset = (attr_scratch + io_bytes + 63) & ~(size_t)63;
    size_t pad = dqg_dnnl_scratchpad(&c->prim), io_pad = dqg_conv_io_scratchpad(&c->io);
    c->base.scratch_size = c->pad_offset + (pad > io_pad ? pad : io_pad);
    dnnl_primitive_desc_destroy(pd);
    free(folded);
    *out = &c->base;
    return DQG_OK;
fail:
    free(folded);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    qdeconv_destroy(&c->base);
    return st;
}
