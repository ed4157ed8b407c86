/* A MatMul whose result only a TypeCast to an integer type reads: the ONNX
 * front end's MatMulInteger (and QLinearMatMul-like graphs) when its int8
 * fusion does not apply (weights at run time, u8 weights whose zero point
 * leaves the s8 range, a CPU without VNNI). Its operands are dequantized
 * 8-bit integers, so every product is an integer of at most 255^2, and the
 * sums are exact in f32 only below 2^24: past K = 258 an f32 matmul rounds
 * them. Here K is cut into chunks of 256, each an f32 matmul on oneDNN
 * (strided views of the operands, no copies) whose sums stay below 2^24
 * and are therefore exact; the chunks are added in double and the total
 * is rounded once to the cast's type, as the reference does
 * (dqg_ref_values.wide). For operands that are not small integers the
 * result is an f32 matmul's, up to the chunks' roundings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/kernel.h"
#include "runtime/onednn_layout.h"

#define KCHUNK 256 /* 256 x 255^2 < 2^24 */

typedef struct imatmul_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim[2];                    /* full chunks, the last shorter one */
    int a_arg, b_arg, y_arg;                  /* arg indexes; -1 = constant */
    void *a_const, *b_const;                  /* copies of constant operands */
    int64_t K, nchunks, a_kstride, b_kstride; /* element strides along K */
    int64_t nelems;                           /* of the result */
    dqg_dtype to;
    size_t acc_offset, pad_offset; /* chunk result (f32) at 0, sums (double), scratchpad */
} imatmul_kernel;

static dqg_status imatmul_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    imatmul_kernel *m = (imatmul_kernel *)k;
    const float *a = m->a_arg >= 0 ? args[m->a_arg] : m->a_const;
    const float *b = m->b_arg >= 0 ? args[m->b_arg] : m->b_const;
    float *chunk = scratch;
    double *acc = (double *)((char *)scratch + m->acc_offset);
    void *pad = (char *)scratch + m->pad_offset;
    for (int64_t c = 0; c < m->nchunks; c++) {
        int64_t k0 = c * KCHUNK;
        void *h[3] = {(void *)(a + k0 * m->a_kstride), (void *)(b + k0 * m->b_kstride), chunk};
        dqg_dnnl_prim *p = &m->prim[k0 + KCHUNK <= m->K ? 0 : 1];
        dqg_status st = dqg_dnnl_prim_execute(p, h, pad, m->base.impl);
        if (st != DQG_OK)
            return st;
        if (c == 0)
            for (int64_t i = 0; i < m->nelems; i++)
                acc[i] = chunk[i];
        else
            for (int64_t i = 0; i < m->nelems; i++)
                acc[i] += chunk[i];
    }
    /* The TypeCast: rounding half to even, saturating, NaN to 0. */
    void *y = args[m->y_arg];
    double lo = (double)dqg_int_min(m->to), hi = (double)dqg_int_max(m->to);
    for (int64_t i = 0; i < m->nelems; i++) {
        double f = isnan(acc[i]) ? 0.0 : rint(acc[i]);
        dqg_store_int(m->to, y, i, (int64_t)(f < lo ? lo : f > hi ? hi : f));
    }
    return DQG_OK;
}

static void imatmul_destroy(dqg_kernel *k)
{
    imatmul_kernel *m = (imatmul_kernel *)k;
    dqg_dnnl_prim_destroy(&m->prim[0]);
    dqg_dnnl_prim_destroy(&m->prim[1]);
    free(m->a_const);
    free(m->b_const);
    free(m);
}

/* The chunk primitive for Kc of K: operand views with K cut to Kc. */
static dqg_status chunk_prim(imatmul_kernel *m, dnnl_memory_desc_t md_a, dnnl_memory_desc_t md_b,
                             const dnnl_memory_desc_t *md_y, int R, int64_t kc, dqg_dnnl_prim *p)
{
    md_a.dims[R - 1] = md_a.padded_dims[R - 1] = kc;
    md_b.dims[R - 2] = md_b.padded_dims[R - 2] = kc;
    dnnl_matmul_desc_t d;
    dnnl_status_t s = dnnl_matmul_desc_init(&d, &md_a, &md_b, NULL, md_y);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, m->base.impl, "matmul descriptor");
    dnnl_primitive_desc_t pd = NULL;
    char impl[sizeof m->base.impl];
    snprintf(impl, sizeof impl, "%s", m->base.impl);
    dqg_status st = dqg_dnnl_pd_create(&pd, &d, NULL, impl, sizeof impl);
    if (st != DQG_OK)
        return st;
    if (kc == KCHUNK || m->K < KCHUNK)
        snprintf(m->base.impl, sizeof m->base.impl, "%s", impl);
    int kinds[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    dnnl_memory_desc_t mds[3] = {md_a, md_b, *md_y};
    st = dqg_dnnl_prim_init(p, pd, 3, kinds, mds, m->base.impl);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

dqg_status dqg_kernel_imatmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN), *cast = dqg_req_op(req, DQG_ROLE_CAST);
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    if (!cast || req->roles->n_ops != 2 || a->dtype != DQG_F32 || b->dtype != DQG_F32 ||
        !dqg_dtype_is_integer(cast->attrs.typecast.to))
        return dqg_set_error(DQG_UNSUPPORTED,
                             "integer matmul: an f32 MatMul and one TypeCast to an integer");
    imatmul_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "integer matmul: out of memory");
    m->base.execute = imatmul_execute;
    m->base.destroy = imatmul_destroy;
    m->to = cast->attrs.typecast.to;
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:matmul:f32:k-chunks%d->%s", KCHUNK,
             dqg_dtype_name(m->to));
    m->a_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    m->b_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    m->y_arg = dqg_kernel_arg_index(g, cast->outputs[0]);
    dqg_status st = DQG_OK;
    for (int i = 0; i < 2; i++) {
        const dqg_tensor *t = i ? b : a;
        if ((i ? m->b_arg : m->a_arg) >= 0)
            continue;
        void *copy = malloc(t->nbytes ? t->nbytes : 1);
        if (!copy) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "integer matmul: out of memory");
            goto fail;
        }
        memcpy(copy, t->data, t->nbytes);
        *(i ? &m->b_const : &m->a_const) = copy;
        m->base.bytes += t->nbytes;
    }
    int ra = a->rank > 2 ? a->rank : 2, rb = b->rank > 2 ? b->rank : 2;
    int R = ra > rb ? ra : rb;
    dnnl_memory_desc_t md_a, md_b, md_y;
    if ((st = dqg_matmul_operand_md(a, NULL, true, op->attrs.matmul.transpose_a, R, dnnl_f32,
                                    &md_a)) != DQG_OK ||
        (st = dqg_matmul_operand_md(b, NULL, false, op->attrs.matmul.transpose_b, R, dnnl_f32,
                                    &md_b)) != DQG_OK)
        goto fail;
    m->K = md_a.dims[R - 1];
    m->a_kstride = md_a.format_desc.blocking.strides[R - 1];
    m->b_kstride = md_b.format_desc.blocking.strides[R - 2];
    m->nchunks = m->K > 0 ? (m->K + KCHUNK - 1) / KCHUNK : 0;
    {
        int64_t yd[DNNL_MAX_NDIMS];
        for (int i = 0; i < R - 2; i++)
            yd[i] = md_a.dims[i] > md_b.dims[i] ? md_a.dims[i] : md_b.dims[i];
        yd[R - 2] = md_a.dims[R - 2];
        yd[R - 1] = md_b.dims[R - 1];
        if ((st = dqg_dnnl_md_dense(&md_y, R, yd, DQG_F32)) != DQG_OK)
            goto fail;
        m->nelems = 1;
        for (int i = 0; i < R; i++)
            m->nelems *= yd[i];
    }
    if (m->K < 1 || m->nelems != g->tensors[cast->outputs[0]].nelems) {
        st = dqg_set_error(DQG_UNSUPPORTED, "%s: an empty reduction", m->base.impl);
        goto fail;
    }
    if (m->K >= KCHUNK && (st = chunk_prim(m, md_a, md_b, &md_y, R, KCHUNK, &m->prim[0])) != DQG_OK)
        goto fail;
    if (m->K % KCHUNK &&
        (st = chunk_prim(m, md_a, md_b, &md_y, R, m->K % KCHUNK, &m->prim[1])) != DQG_OK)
        goto fail;
    size_t pad = dqg_dnnl_scratchpad(&m->prim[0]);
    if (dqg_dnnl_scratchpad(&m->prim[1]) > pad)
        pad = dqg_dnnl_scratchpad(&m->prim[1]);
    m->acc_offset = ((size_t)m->nelems * sizeof(float) + 63) & ~(size_t)63;
    m->pad_offset = m->acc_offset + (((size_t)m->nelems * sizeof(double) + 63) & ~(size_t)63);
    m->base.scratch_size = m->pad_offset + pad;
    snprintf(m->base.why, sizeof m->base.why,
             "an integer result: K = %lld in chunks of %d, each exact in f32, added in double",
             (long long)m->K, KCHUNK);
    *out = &m->base;
    return DQG_OK;
fail:
    imatmul_destroy(&m->base);
    return st;
}
