/* ConvTranspose on oneDNN's deconvolution primitive (f32, bf16, f16), NCX
 * activations as they are, the weights [C, M/g, K...] described to oneDNN
 * as its (G, M/g, C/g, K...) by strides and, when constant, packed once
 * into the layout the primitive chose (run-time weights are reordered per
 * execution, in scratch). output_padding is a negative right padding, which
 * oneDNN's deconvolution accepts. oneDNN counts dilation from 0. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"

typedef struct deconv_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    int x_arg, w_arg, b_arg, y_arg;
    void *x_const, *b_const;
    bool has_bias;
    dqg_dnnl_weights w;
    size_t pad_offset; /* the primitives' scratchpad, after the reordered weights */
} deconv_kernel;

static dqg_status deconv_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    deconv_kernel *d = (deconv_kernel *)k;
    void *h[4], *pad = (char *)scratch + d->pad_offset;
    int n = 0;
    h[n++] = d->x_arg >= 0 ? args[d->x_arg] : d->x_const;
    dqg_status st = dqg_dnnl_weights_handle(&d->w, d->w_arg >= 0 ? args[d->w_arg] : NULL, scratch,
                                            pad, &h[n++], d->base.impl);
    if (st != DQG_OK)
        return st;
    if (d->has_bias)
        h[n++] = d->b_arg >= 0 ? args[d->b_arg] : d->b_const;
    h[n++] = args[d->y_arg];
    return dqg_dnnl_prim_execute(&d->prim, h, pad, d->base.impl);
}

static void deconv_destroy(dqg_kernel *k)
{
    deconv_kernel *d = (deconv_kernel *)k;
    dqg_dnnl_prim_destroy(&d->prim);
    dqg_dnnl_weights_free(&d->w);
    free(d->x_const);
    free(d->b_const);
    free(d);
}

dqg_status dqg_kernel_deconv_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_conv_transpose_attrs *a = &op->attrs.conv_t;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *w = &g->tensors[op->inputs[1]];
    const dqg_tensor *b = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    if (x->channels_last || y->channels_last)
        return dqg_set_error(DQG_UNSUPPORTED, "ConvTranspose on channels-last tensors");
    deconv_kernel *d = calloc(1, sizeof *d);
    if (!d)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "deconvolution kernel: out of memory");
    d->base.execute = deconv_execute;
    d->base.destroy = deconv_destroy;
    snprintf(d->base.impl, sizeof d->base.impl, "onednn:deconv:%s", dqg_dtype_name(y->dtype));
    d->x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    d->w_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    d->b_arg = b ? dqg_kernel_arg_index(g, op->inputs[2]) : -1;
    d->y_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    d->has_bias = b != NULL;
    dnnl_data_type_t dt = dqg_dnnl_dtype(x->dtype);
    dnnl_memory_desc_t md_x, md_y, md_w, md_w_any, md_b;
    dqg_status st;
    if ((st = dqg_dnnl_md_dense(&md_x, x->rank, x->dims, x->dtype)) != DQG_OK ||
        (st = dqg_dnnl_md_dense(&md_y, y->rank, y->dims, y->dtype)) != DQG_OK ||
        (st = dqg_deconv_weights_md(w, a->groups, dt, false, &md_w)) != DQG_OK ||
        (st = dqg_deconv_weights_md(w, a->groups, dt, true, &md_w_any)) != DQG_OK ||
        (b && (st = dqg_dnnl_md_dense(&md_b, 1, b->dims, b->dtype)) != DQG_OK))
        goto fail;
    dnnl_dims_t strides, dil, pl, pr;
    if ((st = dqg_deconv_params(a, strides, dil, pl, pr, d->base.impl)) != DQG_OK)
        goto fail;
    dnnl_deconvolution_desc_t desc;
    dnnl_status_t s = dnnl_dilated_deconvolution_forward_desc_init(
        &desc, dnnl_forward_inference, dnnl_deconvolution_direct, &md_x, &md_w_any,
        b ? &md_b : NULL, &md_y, strides, dil, pl, pr);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, d->base.impl, "deconvolution descriptor");
        goto fail;
    }
    dnnl_primitive_attr_t attr = NULL;
    if (dqg_dnnl_attr_create(&attr) != dnnl_success) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "deconvolution kernel: out of memory");
        goto fail;
    }
    if (req->options->fpmath == DQG_FPMATH_BF16)
        dnnl_primitive_attr_set_fpmath_mode(attr, dnnl_fpmath_mode_bf16);
    dnnl_primitive_desc_t pd = NULL;
    st = dqg_dnnl_pd_create(&pd, &desc, attr, d->base.impl, sizeof d->base.impl);
    dnnl_primitive_attr_destroy(attr);
    if (st != DQG_OK)
        goto fail;
    dnnl_memory_desc_t md_w_real = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    st = dqg_dnnl_weights_plan(&d->w, &md_w, d->w_arg < 0 ? w->data : NULL, false, &md_w_real,
                               &d->base.bytes, &d->base.scratch_size, d->base.impl);
    if (st == DQG_OK && d->x_arg < 0 && (d->x_const = malloc(x->nbytes)))
        memcpy(d->x_const, x->data, x->nbytes);
    if (st == DQG_OK && d->x_arg < 0 && !d->x_const)
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "deconvolution kernel: out of memory");
    if (st == DQG_OK && b && d->b_arg < 0 && (d->b_const = malloc(b->nbytes)))
        memcpy(d->b_const, b->data, b->nbytes);
    if (st == DQG_OK && b && d->b_arg < 0 && !d->b_const)
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "deconvolution kernel: out of memory");
    if (st == DQG_OK) {
        int kinds[4], n = 0;
        dnnl_memory_desc_t mds[4];
        kinds[n] = DNNL_ARG_SRC;
        mds[n++] = md_x;
        kinds[n] = DNNL_ARG_WEIGHTS;
        mds[n++] = md_w_real;
        if (b) {
            kinds[n] = DNNL_ARG_BIAS;
            mds[n++] = md_b;
        }
        kinds[n] = DNNL_ARG_DST;
        mds[n++] = md_y;
        st = dqg_dnnl_prim_init(&d->prim, pd, n, kinds, mds, d->base.impl);
    }
    if (st == DQG_OK) {
        size_t pad = dqg_dnnl_scratchpad(&d->prim), wpad = dqg_dnnl_scratchpad(&d->w.reorder_prim);
        d->pad_offset = (d->base.scratch_size + 63) & ~(size_t)63;
        d->base.scratch_size = d->pad_offset + (pad > wpad ? pad : wpad);
    }
    dnnl_primitive_desc_destroy(pd);
    if (st != DQG_OK)
        goto fail;
    *out = &d->base;
    return DQG_OK;
fail:
    deconv_destroy(&d->base);
    return st;
}
