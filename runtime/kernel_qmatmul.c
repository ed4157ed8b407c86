/* The fused int8 MatMul: u8/s8 activations x s8 weights (zero point folded
 * in, pre-packed once) on oneDNN's int8 matmul, with output scales, source
 * zero point, the epilogue as post-ops and, when a Quantize follows, a u8/s8
 * destination with its zero point. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"

typedef struct qmatmul_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    dqg_qattr q;
    int src_arg, dst_arg;
    void *w_packed;
} qmatmul_kernel;

static dqg_status qmatmul_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    qmatmul_kernel *m = (qmatmul_kernel *)k;
    void *h[DQG_DNNL_MAX_ARGS];
    h[0] = args[m->src_arg];
    h[1] = m->w_packed;
    h[2] = args[m->dst_arg];
    int n = dqg_qattr_handles(&m->q, args, scratch, 3, h);
    (void)n;
    return dqg_dnnl_prim_execute(&m->prim, h, m->base.impl);
}

static void qmatmul_destroy(dqg_kernel *k)
{
    qmatmul_kernel *m = (qmatmul_kernel *)k;
    dqg_dnnl_prim_destroy(&m->prim);
    dqg_qattr_free(&m->q);
    free(m->w_packed);
    free(m);
}

dqg_status dqg_kernel_qmatmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_partition *p = req->roles;
    const dqg_op *mm = &g->ops[p->main], *sdq = &g->ops[p->src_dq], *wdq = &g->ops[p->w_dq];
    const dqg_tensor *x = &g->tensors[sdq->inputs[0]]; /* u8/s8, the MatMul's a */
    const dqg_tensor *w = &g->tensors[wdq->inputs[0]];
    dqg_tensor_id out_id = dqg_partition_output(g, p);
    const dqg_tensor *y = &g->tensors[out_id];
    qmatmul_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 matmul: out of memory");
    m->base.execute = qmatmul_execute;
    m->base.destroy = qmatmul_destroy;
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:matmul:%s%s:%s", dqg_dtype_name(x->dtype),
             "s8", dqg_dtype_name(y->dtype));
    {
        dqg_status isa = dqg_int8_exact_isa(m->base.impl);
        if (isa != DQG_OK) {
            free(m);
            return isa;
        }
    }
    m->src_arg = dqg_kernel_arg_index(g, sdq->inputs[0]);
    m->dst_arg = dqg_kernel_arg_index(g, out_id);
    int R = x->rank > 2 ? x->rank : 2;
    int64_t N = mm->attrs.matmul.transpose_b ? w->dims[0] : w->dims[1];
    dnnl_memory_desc_t md_x, md_w, md_w_any, md_y;
    dqg_status st;
    dnnl_primitive_desc_t pd = NULL;
    if ((st = dqg_matmul_operand_md(x, true, mm->attrs.matmul.transpose_a, R,
                                    dqg_dnnl_dtype(x->dtype), &md_x)) != DQG_OK ||
        (st = dqg_matmul_operand_md(w, false, mm->attrs.matmul.transpose_b, R, dnnl_s8, &md_w)) !=
            DQG_OK)
        goto fail;
    {
        dnnl_dims_t yd;
        int64_t yd64[DNNL_MAX_NDIMS];
        for (int i = 0; i < R; i++)
            yd[i] = md_x.dims[i];
        yd[R - 1] = N;
        for (int i = 0; i < R; i++)
            yd64[i] = yd[i];
        if ((st = dqg_dnnl_md_dense(&md_y, R, yd64, y->dtype)) != DQG_OK)
            goto fail;
    }
    if (dnnl_memory_desc_init_by_tag(&md_w_any, R, md_w.dims, dnnl_s8, dnnl_format_tag_any) !=
        dnnl_success) {
        st = dqg_set_error(DQG_BACKEND_ERROR, "%s: weights descriptor", m->base.impl);
        goto fail;
    }
    if ((st = dqg_qattr_build(req, R, R - 1, N, &m->q, m->base.impl)) != DQG_OK)
        goto fail;
    dnnl_matmul_desc_t d;
    dnnl_status_t s = dnnl_matmul_desc_init(&d, &md_x, &md_w_any, NULL, &md_y);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, m->base.impl, "descriptor");
        goto fail;
    }
    if ((st = dqg_dnnl_pd_create(&pd, &d, m->q.attr, m->base.impl, sizeof m->base.impl)) != DQG_OK)
        goto fail;
    if ((st = dqg_qkernel_finish(g, wdq, pd, &md_w, &md_x, &md_y, &m->q, &m->prim, &m->w_packed,
                                 &m->base.bytes, m->base.impl)) != DQG_OK)
        goto fail;
    m->base.scratch_size = dqg_qattr_scratch_size(&m->q);
    dnnl_primitive_desc_destroy(pd);
    *out = &m->base;
    return DQG_OK;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    qmatmul_destroy(&m->base);
    return st;
}
