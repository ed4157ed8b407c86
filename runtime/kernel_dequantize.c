/* The kernel for a lone DEQUANTIZE partition: translates the canonical op
 * into a dequantize descriptor (constant scales and zero points baked in)
 * and runs a oneDNN reorder or dqgraph's own kernel, whichever
 * runtime/dq_kernel.c selects. An int32 input's run-time zero point must be
 * zero (the specifications' rule); it is checked at execution. */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/dq_kernel.h"
#include "runtime/kernel.h"

typedef struct dequantize_kernel {
    dqg_kernel base;
    dqg_dq_kernel *dq;
    void *const_x, *const_scale, *const_zp; /* owned copies when constant */
    int x_arg, scale_arg, zp_arg, y_arg;    /* argument indexes; -1 = constant */
    bool check_zp_zero;                     /* s32 input with a run-time zero point */
    dqg_dtype zp_dtype;
    dqg_dq_dialect dialect;
    int64_t zp_count;
    char op_name[200];
} dequantize_kernel;

static dqg_status dequantize_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    dequantize_kernel *d = (dequantize_kernel *)k;
    const void *x = d->x_arg >= 0 ? args[d->x_arg] : d->const_x;
    const void *scale = d->scale_arg >= 0 ? args[d->scale_arg] : d->const_scale;
    const void *zp = d->zp_arg >= 0 ? args[d->zp_arg] : d->const_zp;
    if (d->check_zp_zero) {
        dqg_status st = dqg_dequantize_check_s32_zero_point(d->dialect, d->op_name, d->zp_dtype, zp,
                                                            d->zp_count, "(given at run time)");
        if (st != DQG_OK)
            return st;
    }
    return dqg_dq_kernel_run(d->dq, x, scale, zp, args[d->y_arg]);
}

static void dequantize_destroy(dqg_kernel *k)
{
    dequantize_kernel *d = (dequantize_kernel *)k;
    dqg_dq_kernel_destroy(d->dq);
    free(d->const_x);
    free(d->const_scale);
    free(d->const_zp);
    free(d);
}

static void *copy_bytes(const void *p, size_t n)
{
    void *c = malloc(n ? n : 1);
    if (c)
        memcpy(c, p, n);
    return c;
}

dqg_status dqg_kernel_dequantize_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_quant_attrs *q = &op->attrs.quant;
    const dqg_tensor *x = &g->tensors[op->inputs[0]];
    const dqg_tensor *s = &g->tensors[op->inputs[1]];
    const dqg_tensor *z = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    dequantize_kernel *d = calloc(1, sizeof *d);
    if (!d)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
    d->base.execute = dequantize_execute;
    d->base.destroy = dequantize_destroy;
    snprintf(d->op_name, sizeof d->op_name, "%s", op->name);
    d->x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    d->scale_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    d->zp_arg = z ? dqg_kernel_arg_index(g, op->inputs[2]) : -1;
    d->y_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    /* Constant weights dequantized at run time (fusion off): keep a copy. */
    if (d->x_arg < 0 && !(d->const_x = copy_bytes(x->data, x->nbytes))) {
        dequantize_destroy(&d->base);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
    }
    dqg_dq_desc desc = {
        .x_dtype = x->dtype,
        .scale_dtype = s->dtype,
        .zp_dtype = z ? z->dtype : DQG_DTYPE_UNDEF,
        .out_dtype = y->dtype,
        .granularity = q->granularity,
        .rank = x->rank,
        .axis = q->axis,
        .block_size = q->block_size,
        .scale_is_constant = d->scale_arg < 0 && d->zp_arg < 0,
    };
    for (int i = 0; i < x->rank; i++)
        desc.dims[i] = x->dims[i];
    dqg_status st = DQG_OK;
    if (desc.scale_is_constant) {
        d->const_scale = copy_bytes(s->data, s->nbytes);
        d->const_zp = z ? copy_bytes(z->data, z->nbytes) : NULL;
        if (!d->const_scale || (z && !d->const_zp))
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
        desc.const_scale = d->const_scale;
        desc.const_zp = d->const_zp;
        d->base.bytes = s->nbytes + (z ? z->nbytes : 0);
    } else {
        /* Mixed constant and run-time parameters: pass the constant one as
         * an argument-like pointer the kernel keeps. */
        if (d->scale_arg < 0 && !(d->const_scale = copy_bytes(s->data, s->nbytes)))
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
        if (z && d->zp_arg < 0 && !(d->const_zp = copy_bytes(z->data, z->nbytes)))
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
    }
    if (z && x->dtype == DQG_S32 && d->zp_arg >= 0) {
        d->check_zp_zero = true;
        d->zp_dtype = z->dtype;
        d->dialect = q->dialect;
        d->zp_count = z->nelems;
    }
    if (st == DQG_OK)
        st = dqg_dq_kernel_create(&desc, DQG_DQ_IMPL_AUTO, &d->dq);
    if (st != DQG_OK) {
        dequantize_destroy(&d->base);
        return st;
    }
    snprintf(d->base.impl, sizeof d->base.impl, "%s", dqg_dq_kernel_impl_name(d->dq));
    *out = &d->base;
    return DQG_OK;
}
