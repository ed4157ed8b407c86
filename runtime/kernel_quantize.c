/* A lone QUANTIZE on a oneDNN reorder: f32 to u8/s8 with output scales
 * 1/scale (per tensor or per axis, constant) and a constant per-tensor zero
 * point as the destination zero point; oneDNN rounds to nearest even and
 * saturates. Multiplying by 1/scale instead of dividing may move a value
 * that sits exactly on a rounding boundary by one unit, the contract of
 * every quantized output outside the reference. Other cases return
 * DQG_UNSUPPORTED and run on the reference kernel. */
#include <math.h>
#include <stdlib.h>

#include "graph/dtype.h"
#include "runtime/kernel.h"
#include "runtime/onednn_exec.h"

typedef struct quantize_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    int x_arg, y_arg;
} quantize_kernel;

static dqg_status quantize_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    quantize_kernel *q = (quantize_kernel *)k;
    void *h[2] = {args[q->x_arg], args[q->y_arg]};
    return dqg_dnnl_prim_execute(&q->prim, h, q->base.impl);
}

static void quantize_destroy(dqg_kernel *k)
{
    quantize_kernel *q = (quantize_kernel *)k;
    dqg_dnnl_prim_destroy(&q->prim);
    free(q);
}

dqg_status dqg_kernel_quantize_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = &g->ops[req->roles->main];
    const dqg_quant_attrs *qa = &op->attrs.quant;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *s = &g->tensors[op->inputs[1]];
    const dqg_tensor *z = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    bool ok = x->dtype == DQG_F32 && (y->dtype == DQG_U8 || y->dtype == DQG_S8) &&
              s->kind == DQG_TENSOR_CONSTANT && (!z || z->kind == DQG_TENSOR_CONSTANT) &&
              (qa->granularity == DQG_PER_TENSOR || (qa->granularity == DQG_PER_AXIS && !z)) &&
              x->rank >= 1 && dqg_kernel_arg_index(g, op->inputs[0]) >= 0;
    if (!ok)
        return dqg_set_error(DQG_UNSUPPORTED, "no oneDNN reorder for this quantize");
    /* The reorder rounds x / scale + zp as one value: round half to even
     * then lands on the same integer as the definition's round(x / scale)
     * + zp only when zp is even. */
    int32_t zp = z ? (int32_t)dqg_load_int(z->dtype, z->data, 0) : 0;
    if (zp & 1)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "quantize zero point %d is odd (the reorder rounds after adding it)",
                             (int)zp);
    int64_t ns = qa->granularity == DQG_PER_AXIS ? x->dims[qa->axis] : 1;
    float *inv = malloc((size_t)ns * sizeof(float));
    if (!inv)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "quantize kernel: out of memory");
    for (int64_t i = 0; i < ns; i++) {
        float sv = dqg_load_float(s->dtype, s->data, i);
        /* The reorder multiplies by 1 / scale where the definition divides
         * by the scale: the same result only when 1 / scale is exact, that
         * is, for finite powers of two. Other scales take the reference
         * kernel (exact division). */
        int e;
        if (!(sv > 0.0f) || !isfinite(sv) || frexpf(sv, &e) != 0.5f || !isfinite(1.0f / sv)) {
            free(inv);
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "quantize scale %g is not a finite positive power of two",
                                 (double)sv);
        }
        inv[i] = 1.0f / sv;
    }
    quantize_kernel *q = calloc(1, sizeof *q);
    if (!q) {
        free(inv);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "quantize kernel: out of memory");
    }
    q->base.execute = quantize_execute;
    q->base.destroy = quantize_destroy;
    snprintf(q->base.impl, sizeof q->base.impl, "onednn:reorder:f32->%s", dqg_dtype_name(y->dtype));
    q->x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    q->y_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    dnnl_memory_desc_t mds[2];
    dqg_status st;
    if ((st = dqg_dnnl_md_dense(&mds[0], x->rank, x->dims, x->dtype)) != DQG_OK ||
        (st = dqg_dnnl_md_dense(&mds[1], y->rank, y->dims, y->dtype)) != DQG_OK) {
        free(inv);
        quantize_destroy(&q->base);
        return st;
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_attr_create(&attr);
    dnnl_status_t ds = dnnl_primitive_attr_set_output_scales(
        attr, ns, qa->granularity == DQG_PER_AXIS ? 1 << qa->axis : 0, inv);
    free(inv);
    if (ds == dnnl_success && zp != 0) {
        ds = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &zp);
    }
    dnnl_primitive_desc_t pd = NULL;
    if (ds == dnnl_success) {
        dnnl_engine_t eng = dqg_onednn_engine();
        ds = dnnl_reorder_primitive_desc_create(&pd, &mds[0], eng, &mds[1], eng, attr);
    }
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) {
        quantize_destroy(&q->base);
        return dqg_dnnl_error(ds, "quantize reorder", "creation");
    }
    int kinds[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    st = dqg_dnnl_prim_init(&q->prim, pd, 2, kinds, mds, q->base.impl);
    dnnl_primitive_desc_destroy(pd);
    if (st != DQG_OK) {
        quantize_destroy(&q->base);
        return st;
    }
    *out = &q->base;
    return DQG_OK;
}
