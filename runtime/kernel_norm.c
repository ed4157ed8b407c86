/* Layer normalization and reductions on oneDNN's primitives: the layer
 * normalization over the trailing block seen as a matrix [outer, inner]
 * with scale (and shift), the reductions with the reduced axes kept as 1
 * (the output's bytes are the same whether or not they are dropped). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/kernel.h"
#include "runtime/nan_scan.h"
#include "runtime/onednn_exec.h"

typedef struct norm_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    int n;         /* primitive arguments given at execution */
    int arg[4];    /* per argument: an arg index, or -1 for a constant */
    void *data[4]; /* constants' copies */
    /* Max/Min: oneDNN's reduction skips NaN where the reference propagates
     * it; the outputs a NaN reduces into are set to NaN afterwards. */
    bool nan_patch;
    dqg_dtype dtype;
    int rank;
    int64_t xdims[DQG_MAX_RANK], ystrides[DQG_MAX_RANK];
    int64_t nelems;
} norm_kernel;

/* Every output whose reduction window holds a NaN becomes that NaN. */
static void patch_nans(const norm_kernel *m, const void *x, void *y)
{
    if (!dqg_has_nonfinite(m->dtype, x, m->nelems, false))
        return;
    for (int64_t i = 0; i < m->nelems; i++) {
        float f = dqg_load_float(m->dtype, x, i);
        if (!isnan(f))
            continue;
        int64_t rest = i, o = 0;
        for (int d = m->rank - 1; d >= 0; d--) {
            o += (rest % m->xdims[d]) * m->ystrides[d]; /* 0 on reduced axes */
            rest /= m->xdims[d];
        }
        if (!isnan(dqg_load_float(m->dtype, y, o)))
            dqg_store_float(m->dtype, y, o, f);
    }
}

static dqg_status norm_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    norm_kernel *m = (norm_kernel *)k;
    void *h[4];
    for (int i = 0; i < m->n; i++)
        h[i] = m->arg[i] >= 0 ? args[m->arg[i]] : m->data[i];
    dqg_status st = dqg_dnnl_prim_execute(&m->prim, h, scratch, m->base.impl);
    if (st == DQG_OK && m->nan_patch)
        patch_nans(m, h[0], h[1]);
    return st;
}

static void norm_destroy(dqg_kernel *k)
{
    norm_kernel *m = (norm_kernel *)k;
    dqg_dnnl_prim_destroy(&m->prim);
    for (int i = 0; i < 4; i++)
        free(m->data[i]);
    free(m);
}

/* Argument i is tensor t of the partition graph. */
static dqg_status bind(norm_kernel *m, const dqg_graph *g, int i, dqg_tensor_id t)
{
    m->arg[i] = dqg_kernel_arg_index(g, t);
    if (m->arg[i] >= 0)
        return DQG_OK;
    const dqg_tensor *c = &g->tensors[t];
    if (!(m->data[i] = malloc(c->nbytes ? c->nbytes : 1)))
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", m->base.impl);
    memcpy(m->data[i], c->data, c->nbytes);
    m->base.bytes += c->nbytes;
    return DQG_OK;
}

dqg_status dqg_kernel_norm_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    if (x->channels_last || y->channels_last)
        return dqg_set_error(DQG_UNSUPPORTED, "%s of a channels-last tensor",
                             dqg_op_kind_name(op->kind));
    if (op->kind == DQG_OP_LAYER_NORM && op->attrs.layer_norm.rms)
        return dqg_kernel_rms_norm_build(req, out);
    norm_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "kernel: out of memory");
    m->base.execute = norm_execute;
    m->base.destroy = norm_destroy;
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:%s", dqg_op_kind_name(op->kind));
    dnnl_memory_desc_t mds[4];
    int kinds[4];
    dqg_status st = DQG_OK;
    dnnl_status_t s;
    union {
        dnnl_layer_normalization_desc_t lnorm;
        dnnl_reduction_desc_t reduction;
    } d;
    if (op->kind == DQG_OP_LAYER_NORM) {
        int64_t inner = 1;
        for (int i = op->attrs.layer_norm.axis; i < x->rank; i++)
            inner *= x->dims[i];
        int64_t md2[2] = {x->nelems / inner, inner};
        bool shift = op->inputs[2] != DQG_NONE;
        if ((st = dqg_dnnl_md_dense(&mds[0], 2, md2, DQG_F32)) != DQG_OK ||
            (st = dqg_dnnl_md_dense(&mds[2], 1, &inner, DQG_F32)) != DQG_OK)
            goto fail;
        mds[1] = mds[0];
        mds[3] = mds[2];
        kinds[0] = DNNL_ARG_SRC;
        kinds[1] = DNNL_ARG_DST;
        kinds[2] = DNNL_ARG_SCALE;
        kinds[3] = DNNL_ARG_SHIFT;
        m->n = shift ? 4 : 3;
        s = dnnl_layer_normalization_forward_desc_init(
            &d.lnorm, dnnl_forward_inference, &mds[0], NULL, op->attrs.layer_norm.epsilon,
            dnnl_use_scale | (shift ? dnnl_use_shift : 0));
        if ((st = bind(m, g, 0, op->inputs[0])) != DQG_OK ||
            (st = bind(m, g, 1, op->outputs[0])) != DQG_OK ||
            (st = bind(m, g, 2, op->inputs[1])) != DQG_OK ||
            (shift && (st = bind(m, g, 3, op->inputs[2])) != DQG_OK))
            goto fail;
    } else {
        static const dnnl_alg_kind_t algs[DQG_REDUCE_COUNT] = {
            [DQG_REDUCE_SUM] = dnnl_reduction_sum,  [DQG_REDUCE_MEAN] = dnnl_reduction_mean,
            [DQG_REDUCE_MAX] = dnnl_reduction_max,  [DQG_REDUCE_MIN] = dnnl_reduction_min,
            [DQG_REDUCE_PROD] = dnnl_reduction_mul,
        };
        int64_t yd[DQG_MAX_RANK];
        for (int i = 0; i < x->rank; i++)
            yd[i] = (op->attrs.reduce.axes & (1u << i)) ? 1 : x->dims[i];
        if (x->rank == 0) {
            st = dqg_set_error(DQG_UNSUPPORTED, "a reduction of a scalar");
            goto fail;
        }
        if ((st = dqg_dnnl_md_dense(&mds[0], x->rank, x->dims, x->dtype)) != DQG_OK ||
            (st = dqg_dnnl_md_dense(&mds[1], x->rank, yd, y->dtype)) != DQG_OK)
            goto fail;
        kinds[0] = DNNL_ARG_SRC;
        kinds[1] = DNNL_ARG_DST;
        m->n = 2;
        if (x->nelems == y->nelems) {
            /* Only dimensions of 1 reduced: every result is its one source
             * value, and oneDNN's reduction refuses a result of the
             * source's shape. A copy. */
            if ((st = bind(m, g, 0, op->inputs[0])) != DQG_OK ||
                (st = bind(m, g, 1, op->outputs[0])) != DQG_OK ||
                (st = dqg_dnnl_reorder_prim(&m->prim, &mds[0], &mds[1], m->base.impl)) != DQG_OK)
                goto fail;
            size_t len = strlen(m->base.impl);
            snprintf(m->base.impl + len, sizeof m->base.impl - len, ":copy");
            m->base.scratch_size = dqg_dnnl_scratchpad(&m->prim);
            *out = &m->base;
            return DQG_OK;
        }
        if (op->attrs.reduce.op == DQG_REDUCE_MAX || op->attrs.reduce.op == DQG_REDUCE_MIN) {
            m->nan_patch = true;
            m->dtype = x->dtype;
            m->rank = x->rank;
            m->nelems = x->nelems;
            int64_t stride = 1;
            for (int i = x->rank - 1; i >= 0; i--) {
                m->xdims[i] = x->dims[i];
                m->ystrides[i] = yd[i] == 1 && x->dims[i] != 1 ? 0 : stride;
                stride *= yd[i];
            }
        }
        s = dnnl_reduction_desc_init(&d.reduction, algs[op->attrs.reduce.op], &mds[0], &mds[1],
                                     0.0f, 0.0f);
        if ((st = bind(m, g, 0, op->inputs[0])) != DQG_OK ||
            (st = bind(m, g, 1, op->outputs[0])) != DQG_OK)
            goto fail;
    }
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, m->base.impl, "descriptor");
        goto fail;
    }
    dnnl_primitive_desc_t pd = NULL;
    if ((st = dqg_dnnl_pd_create(&pd, &d, NULL, m->base.impl, sizeof m->base.impl)) != DQG_OK)
        goto fail;
    st = dqg_dnnl_prim_init(&m->prim, pd, m->n, kinds, mds, m->base.impl);
    dnnl_primitive_desc_destroy(pd);
    if (st != DQG_OK)
        goto fail;
    m->base.scratch_size = dqg_dnnl_scratchpad(&m->prim);
    *out = &m->base;
    return DQG_OK;
fail:
    norm_destroy(&m->base);
    return st;
}
