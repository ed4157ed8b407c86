/* Convolution on oneDNN's convolution primitive (f32/bf16/f16), NCX or NXC
 * activations, groups through 5-D/6-D grouped weights, constant weights and
 * bias pre-packed once. oneDNN counts dilation from 0 (dqgraph from 1). */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"

typedef struct conv_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    int x_arg, w_arg, b_arg, y_arg;
    bool has_bias; /* passed as oneDNN's bias (no epilogue) */
    void *x_const, *b_const;
    dqg_qattr post; /* with an epilogue: bias and element-wise ops as post-ops */
    /* Run-time weights in plain OIX are reordered per execution into the
     * layout the primitive chose, in the caller's scratch. */
    dqg_dnnl_weights w;
    dqg_conv_io io;    /* activation reorders, in scratch after the weights' */
    size_t pad_offset; /* the primitives' scratchpad, last in scratch */
} conv_kernel;

static dqg_status conv_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    conv_kernel *c = (conv_kernel *)k;
    void *h[DQG_DNNL_MAX_ARGS], *dst, *pad = (char *)scratch + c->pad_offset;
    int n = 0;
    dqg_status st = dqg_conv_io_begin(&c->io, c->x_arg >= 0 ? args[c->x_arg] : c->x_const,
                                      args[c->y_arg], scratch, pad, &h[n++], &dst, c->base.impl);
    if (st != DQG_OK)
        return st;
    st = dqg_dnnl_weights_handle(&c->w, c->w_arg >= 0 ? args[c->w_arg] : NULL, scratch, pad,
                                 &h[n++], c->base.impl);
    if (st != DQG_OK)
        return st;
    if (c->has_bias)
        h[n++] = c->b_arg >= 0 ? args[c->b_arg] : c->b_const;
    h[n++] = dst;
    dqg_qattr_handles(&c->post, args, NULL, scratch, n, h);
    if ((st = dqg_dnnl_prim_execute(&c->prim, h, pad, c->base.impl)) != DQG_OK)
        return st;
    return dqg_conv_io_end(&c->io, dst, args[c->y_arg], pad, c->base.impl);
}

static void conv_destroy(dqg_kernel *k)
{
    conv_kernel *c = (conv_kernel *)k;
    dqg_dnnl_prim_destroy(&c->prim);
    dqg_dnnl_weights_free(&c->w);
    dqg_conv_io_destroy(&c->io);
    dqg_qattr_free(&c->post);
    free(c->x_const);
    free(c->b_const);
    free(c);
}

/* oneDNN describes activations logically as N, C, spatial... whatever the
 * memory layout; NXC is expressed through strides. */
dqg_status dqg_conv_activation_md(const dqg_tensor *t, dqg_data_format f, dnnl_data_type_t dt,
                                  dnnl_memory_desc_t *md)
{
    int r = t->rank;
    dnnl_dims_t dims, strides;
    int64_t st[DQG_MAX_RANK];
    dqg_tensor_strides(t, st);
    if (f == DQG_FORMAT_NCX) {
        for (int i = 0; i < r; i++) {
            dims[i] = t->dims[i];
            strides[i] = st[i];
        }
    } else {
        dims[0] = t->dims[0];
        strides[0] = st[0];
        dims[1] = t->dims[r - 1];
        strides[1] = st[r - 1];
        for (int i = 2; i < r; i++) {
            dims[i] = t->dims[i - 1];
            strides[i] = st[i - 1];
        }
    }
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(md, r, dims, dt, strides);
    return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, "convolution", "activation descriptor");
}

/* Weights OIX as oneDNN's (G, O/G, I, X...) when grouped. */
dqg_status dqg_conv_weights_md(const dqg_tensor *w, int64_t groups, dnnl_data_type_t dt, bool any,
                               dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims;
    int r = 0;
    if (groups > 1) {
        dims[r++] = groups;
        dims[r++] = w->dims[0] / groups;
    } else {
        dims[r++] = w->dims[0];
    }
    for (int i = 1; i < w->rank; i++)
        dims[r++] = w->dims[i];
    dnnl_status_t s;
    if (any) {
        s = dnnl_memory_desc_init_by_tag(md, r, dims, dt, dnnl_format_tag_any);
    } else {
        dnnl_dims_t strides;
        int64_t acc = 1;
        for (int i = r - 1; i >= 0; i--) {
            strides[i] = acc;
            acc *= dims[i];
        }
        s = dnnl_memory_desc_init_by_strides(md, r, dims, dt, strides);
    }
    return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, "convolution", "weights descriptor");
}

/* ConvTranspose weights [C, M/g, K...] as oneDNN's logical (M, C, K...) or, grouped,
 * (G, M/g, C/g, K...): by strides (plain), or any layout. */
dqg_status dqg_deconv_weights_md(const dqg_tensor *w, int64_t groups, dnnl_data_type_t dt, bool any,
                                 dnnl_memory_desc_t *md)
{
    int sr = w->rank - 2, r = 0;
    int64_t C = w->dims[0], mg = w->dims[1], ksp = 1;
    for (int i = 0; i < sr; i++)
        ksp *= w->dims[2 + i];
    dnnl_dims_t dims, strides;
    if (groups > 1) {
        dims[r] = groups;
        strides[r++] = (C / groups) * mg * ksp;
    }
    dims[r] = mg;
    strides[r++] = ksp;
    dims[r] = C / groups;
    strides[r++] = mg * ksp;
    int64_t acc = 1;
    for (int i = sr - 1; i >= 0; i--) {
        dims[r + i] = w->dims[2 + i];
        strides[r + i] = acc;
        acc *= w->dims[2 + i];
    }
    r += sr;
    dnnl_status_t s = any ? dnnl_memory_desc_init_by_tag(md, r, dims, dt, dnnl_format_tag_any)
                          : dnnl_memory_desc_init_by_strides(md, r, dims, dt, strides);
    return s == dnnl_success ? DQG_OK : dqg_dnnl_error(s, "deconvolution", "weights descriptor");
}

void dqg_conv_params(const dqg_conv_attrs *a, dnnl_dims_t strides, dnnl_dims_t dil, dnnl_dims_t pl,
                     dnnl_dims_t pr)
{
    for (int i = 0; i < a->spatial_rank; i++) {
        strides[i] = a->strides[i];
        dil[i] = a->dilations[i] - 1;
        pl[i] = a->pads_begin[i];
        pr[i] = a->pads_end[i];
    }
}

dqg_status dqg_deconv_params(const dqg_conv_transpose_attrs *a, dnnl_dims_t strides,
                             dnnl_dims_t dil, dnnl_dims_t pl, dnnl_dims_t pr, const char *what)
{
    for (int i = 0; i < a->spatial_rank; i++) {
        strides[i] = a->strides[i];
        dil[i] = a->dilations[i] - 1;
        pl[i] = a->pads_begin[i];
        pr[i] = a->pads_end[i] - a->output_padding[i];
        /* oneDNN checks right padding + stride > 0: an output_padding
         * that only a dilation allows (stride 1, dilation 2, 1) is not
         * expressible. */
        if (pr[i] + strides[i] <= 0)
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: output_padding %lld on spatial axis %d reaches %lld past the "
                                 "end padding, with stride %lld; oneDNN's deconvolution takes "
                                 "less than the stride",
                                 what, (long long)a->output_padding[i], i, (long long)-pr[i],
                                 (long long)strides[i]);
    }
    return DQG_OK;
}

dqg_status dqg_kernel_conv_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    if (dqg_req_op(req, DQG_ROLE_CAST))
        return dqg_kernel_iconv_build(req, out);
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_conv_attrs *a = &op->attrs.conv;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *w = &g->tensors[op->inputs[1]];
    /* With an epilogue the convolution's own (constant) bias joins the
     * post-op chain, ahead of the rest, instead of oneDNN's bias argument. */
    bool epilogue = req->roles->n_ops > 1;
    const dqg_tensor *b =
        op->inputs[2] != DQG_NONE && !epilogue ? &g->tensors[op->inputs[2]] : NULL;
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    conv_kernel *c = calloc(1, sizeof *c);
    if (!c)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "conv kernel: out of memory");
    c->base.execute = conv_execute;
    c->base.destroy = conv_destroy;
    snprintf(c->base.impl, sizeof c->base.impl, "onednn:conv:%s", dqg_dtype_name(y->dtype));
    c->x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    c->w_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    c->b_arg = b ? dqg_kernel_arg_index(g, op->inputs[2]) : -1;
    c->y_arg = dqg_kernel_arg_index(g, dqg_part_result(g, req->roles));
    c->has_bias = b != NULL;
    dnnl_data_type_t dt = dqg_dnnl_dtype(x->dtype);
    dnnl_memory_desc_t md_x, md_w, md_w_any, md_b, md_y;
    dqg_status st;
    bool pack = c->w_arg < 0;
    /* Let the primitive choose its weight layout either way: constant
     * weights are packed now, run-time ones reordered per execution. */
    if ((st = dqg_conv_activation_md(x, a->data_format, dt, &md_x)) != DQG_OK ||
        (st = dqg_conv_activation_md(y, a->data_format, dt, &md_y)) != DQG_OK ||
        (st = dqg_conv_weights_md(w, a->groups, dt, false, &md_w)) != DQG_OK ||
        (st = dqg_conv_weights_md(w, a->groups, dt, true, &md_w_any)) != DQG_OK)
        goto fail;
    if (b && (st = dqg_dnnl_md_dense(&md_b, 1, b->dims, b->dtype)) != DQG_OK)
        goto fail;
    dnnl_dims_t strides, dil, pl, pr;
    dqg_conv_params(a, strides, dil, pl, pr);
    dqg_conv_io_plan(&c->io, &md_x, &md_y, a->data_format);
    dnnl_convolution_desc_t d;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_convolution_direct, &c->io.src, &md_w_any,
        b ? &md_b : NULL, &c->io.dst, strides, dil, pl, pr);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, c->base.impl, "convolution descriptor");
        goto fail;
    }
    /* The attributes carry the epilogue (if any) and the fpmath mode. */
    if (epilogue) {
        if ((st = dqg_qattr_build(req, y->rank, 1, w->dims[0], &md_y, NULL, false, &c->post,
                                  c->base.impl)) != DQG_OK)
            goto fail;
    } else if (dqg_dnnl_attr_create(&c->post.attr) != dnnl_success) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "conv kernel: out of memory");
        goto fail;
    }
    if (req->options->fpmath == DQG_FPMATH_BF16)
        dnnl_primitive_attr_set_fpmath_mode(c->post.attr, dnnl_fpmath_mode_bf16);
    dnnl_primitive_desc_t pd = NULL;
    /* The destination is channels-last (dqg_conv_io_plan) for rule F. */
    dqg_prim_facts facts = {.kind = DQG_FACTS_CONV,
                            .other_axis_binary = c->post.other_axis_binary,
                            .full_binary = c->post.full_operand,
                            .dst_channels_last = true};
    st = dqg_dnnl_pd_create_checked(&pd, &d, c->post.attr, &facts, c->base.impl,
                                    sizeof c->base.impl, c->base.why, sizeof c->base.why);
    if (st != DQG_OK)
        goto fail;
    dnnl_memory_desc_t md_w_real = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    st = dqg_dnnl_weights_plan(&c->w, &md_w, pack ? w->data : NULL, true, &md_w_real,
                               &c->base.bytes, &c->base.scratch_size, c->base.impl);
    if (st == DQG_OK) {
        size_t io_bytes = 0;
        st = dqg_conv_io_finish(&c->io, pd, &md_x, &md_y, c->base.scratch_size, &io_bytes,
                                c->base.why, sizeof c->base.why, c->base.impl);
        c->base.scratch_size += io_bytes;
        if (st == DQG_OK && c->io.reorder_dst && c->post.full_operand)
            st = dqg_set_error(DQG_UNSUPPORTED,
                               "%s: an operand of the result's shape, and a reordered result",
                               c->base.impl);
    }
    if (st == DQG_OK && c->x_arg < 0 && !(c->x_const = malloc(x->nbytes)))
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "conv kernel: out of memory");
    if (st == DQG_OK && c->x_arg < 0)
        memcpy(c->x_const, x->data, x->nbytes);
    if (st == DQG_OK && b && c->b_arg < 0 && !(c->b_const = malloc(b->nbytes)))
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "conv kernel: out of memory");
    if (st == DQG_OK && b && c->b_arg < 0)
        memcpy(c->b_const, b->data, b->nbytes);
    if (st == DQG_OK) {
        int kinds[DQG_DNNL_MAX_ARGS], n = 0;
        dnnl_memory_desc_t mds[DQG_DNNL_MAX_ARGS];
        kinds[n] = DNNL_ARG_SRC;
        mds[n++] = c->io.src;
        kinds[n] = DNNL_ARG_WEIGHTS;
        mds[n++] = md_w_real;
        if (b) {
            kinds[n] = DNNL_ARG_BIAS;
            mds[n++] = md_b;
        }
        kinds[n] = DNNL_ARG_DST;
        mds[n++] = c->io.dst;
        n = dqg_qattr_args(&c->post, n, kinds, mds);
        st = dqg_dnnl_prim_init(&c->prim, pd, n, kinds, mds, c->base.impl);
    }
    if (st == DQG_OK) {
        /* The primitives run one after another: one scratchpad, last. */
        size_t pad = dqg_dnnl_scratchpad(&c->prim);
        size_t others[] = {dqg_dnnl_scratchpad(&c->w.reorder_prim), dqg_conv_io_scratchpad(&c->io)};
        for (int i = 0; i < 2; i++)
            pad = others[i] > pad ? others[i] : pad;
        c->pad_offset = (c->base.scratch_size + 63) & ~(size_t)63;
        c->base.scratch_size = c->pad_offset + pad;
    }
    dnnl_primitive_desc_destroy(pd);
    if (st != DQG_OK)
        goto fail;
    *out = &c->base;
    return DQG_OK;
fail:
    conv_destroy(&c->base);
    return st;
}
