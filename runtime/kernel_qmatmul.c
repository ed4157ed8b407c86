/* The fused int8 MatMul: u8/s8 activations x s8 weights (zero point folded
 * in; u8 weights as s8 with a common offset, oneDNN's weights zero point,
 * or with per-column zero points as w - 128 plus a row term added as the
 * first post-op; pre-packed once) on oneDNN's int8 matmul, with the
 * weights' scales (and every constant factor) as output scales, the
 * run-time factors as a scalar multiply post-op, the source zero point
 * (constant or run-time), the epilogue as post-ops and, when a Quantize
 * follows, a u8/s8 destination with its zero point. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu_isa.h"
#include "runtime/gelu_kernel.h"
#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"
#include "runtime/weights.h"

typedef struct qmatmul_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    dqg_qattr q;
    /* With a bias argument divided by the run-time scale per execution
     * (q.bias_runtime): the same matmul with the bias as a post-op, for an
     * execution whose scale leaves no finite quotient. */
    bool has_safe;
    char impl_prefix[sizeof((dqg_kernel *)0)->impl];
    dqg_dnnl_prim prim_safe;
    dqg_qattr q_safe;
    dqg_qsrc src;
    int dst_arg;
    void *w_packed;
    size_t pad_offset; /* the primitive's scratchpad, last in scratch */
    /* Per-column weights zero points (dqg_weights_fold_s8_columns): the
     * row term's factor per column, col[n] times the output scale, and the
     * source's shape as rows of K. NULL: none. */
    float *col_factor;
    int64_t rows, K, N;
    dqg_dtype src_dtype;
    int64_t dst_elems; /* of the dense result, for the own GELU (q.own_gelu) */
} qmatmul_kernel;

/* The row term: t[m, n] = col_factor[n] * sum_k (x[m, k] - zx), the sums
 * exact in integers. */
static void fill_row_term(const qmatmul_kernel *m, const void *x, int32_t zx, float *t)
{
    const int64_t K = m->K, N = m->N;
    int threads = m->rows * (K + N) >= (1 << 15) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < m->rows; r++) {
        int64_t sum = 0;
        if (m->src_dtype == DQG_U8) {
            const uint8_t *xr = (const uint8_t *)x + r * K;
            for (int64_t k = 0; k < K; k++)
                sum += xr[k];
        } else {
            const int8_t *xr = (const int8_t *)x + r * K;
            for (int64_t k = 0; k < K; k++)
                sum += xr[k];
        }
        float rs = (float)(sum - (int64_t)zx * K);
        float *tr = t + r * N;
        for (int64_t n = 0; n < N; n++)
            tr[n] = m->col_factor[n] * rs;
    }
}

static dqg_status qmatmul_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    qmatmul_kernel *m = (qmatmul_kernel *)k;
    void *h[DQG_DNNL_MAX_ARGS];
    const void *internal[2];
    dqg_status st = dqg_qsrc_prepare(&m->src, args, scratch, &h[0], internal);
    if (st != DQG_OK)
        return st;
    h[1] = m->w_packed;
    h[2] = args[m->dst_arg];
    if (m->col_factor)
        fill_row_term(m, h[0], dqg_qattr_src_zp(&m->q, args, internal),
                      (float *)((char *)scratch + m->q.row_term_offset));
    void *pad = (char *)scratch + m->pad_offset;
    if (dqg_qattr_handles(&m->q, args, internal, scratch, 3, h) < 0) {
        dqg_qattr_handles(&m->q_safe, args, internal, scratch, 3, h);
        st = dqg_dnnl_prim_execute(&m->prim_safe, h, pad, m->base.impl);
    } else {
        st = dqg_dnnl_prim_execute(&m->prim, h, pad, m->base.impl);
    }
    if (st == DQG_OK && m->q.own_gelu)
        dqg_gelu_erf_inplace(h[2], m->dst_elems);
    return st;
}

static void qmatmul_destroy(dqg_kernel *k)
{
    qmatmul_kernel *m = (qmatmul_kernel *)k;
    dqg_dnnl_prim_destroy(&m->prim);
    dqg_dnnl_prim_destroy(&m->prim_safe);
    dqg_qattr_free(&m->q);
    dqg_qattr_free(&m->q_safe);
    dqg_qsrc_free(&m->src);
    free(m->w_packed);
    free(m->col_factor);
    free(m);
}

/* With a run-time bias argument (q.bias_runtime): the descriptor of the
 * matmul with the bias as a post-op (q_safe) into *pds, when its
 * implementation reads the weights in the layout *pd does (both then run
 * on one packed copy). When it does not, that one replaces *pd and q, and
 * the bias stays a post-op. */
static dqg_status safe_pd(qmatmul_kernel *m, const dnnl_matmul_desc_t *d,
                          const dqg_prim_facts *facts, dnnl_primitive_desc_t *pd,
                          dnnl_primitive_desc_t *pds)
{
    char impl[sizeof m->base.impl], why[sizeof m->base.why];
    snprintf(impl, sizeof impl, "%s", m->impl_prefix);
    why[0] = 0;
    dnnl_matmul_desc_t ds = *d;
    memset(&ds.bias_desc, 0, sizeof ds.bias_desc);
    dqg_status st = dqg_dnnl_pd_create_checked(pds, &ds, m->q_safe.attr, facts, impl, sizeof impl,
                                               why, sizeof why);
    if (st != DQG_OK)
        return st;
    if (dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(*pd, dnnl_query_weights_md, 0),
                               dnnl_primitive_desc_query_md(*pds, dnnl_query_weights_md, 0))) {
        m->has_safe = true;
        return DQG_OK;
    }
    dnnl_primitive_desc_destroy(*pd);
    *pd = *pds;
    *pds = NULL;
    dqg_qattr_free(&m->q);
    m->q = m->q_safe;
    memset(&m->q_safe, 0, sizeof m->q_safe);
    memcpy(m->base.impl, impl, sizeof impl);
    memcpy(m->base.why, why, sizeof why);
    return DQG_OK;
}

dqg_status dqg_kernel_qmatmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *sdq = dqg_req_op(req, DQG_ROLE_SRC_DQ);
    const dqg_tensor *x = &g->tensors[sdq->inputs[0]]; /* u8/s8, the MatMul's a */
    dqg_tensor_id out_id = dqg_part_result(g, req->roles);
    const dqg_tensor *y = &g->tensors[out_id];
    qmatmul_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 matmul: out of memory");
    m->base.execute = qmatmul_execute;
    m->base.destroy = qmatmul_destroy;
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:matmul:%ss8:%s", dqg_dtype_name(x->dtype),
             dqg_dtype_name(y->dtype));
    dqg_weights w = {0};
    int8_t *folded = NULL;
    int32_t w_zp = 0, *col = NULL;
    dnnl_primitive_desc_t pd = NULL, pds = NULL;
    dqg_status st = dqg_int8_exact_isa(m->base.impl);
    if (st == DQG_OK)
        st = dqg_weights_resolve(g, req->roles, &w, m->base.impl);
    if (st == DQG_OK)
        st = dqg_qattr_fold_weights(req, &w, &folded, &w_zp, &col, m->base.impl);
    if (st != DQG_OK)
        goto fail;
    m->dst_arg = dqg_kernel_arg_index(g, out_id);
    int R = x->rank > 2 ? x->rank : 2;
    int64_t K = w.K, N = w.N;
    dnnl_memory_desc_t md_x, md_w, md_w_any, md_y;
    {
        /* The source as [batch..., M, K], dense; weights [1..., K, N] with
         * the storage's strides; the destination [batch..., M, N]. */
        dnnl_dims_t xd, xs, wd, ws, yd;
        for (int i = 0; i < R; i++)
            xd[i] = i < R - x->rank ? 1 : x->dims[i - (R - x->rank)];
        int64_t s = 1;
        for (int i = R - 1; i >= 0; i--) {
            xs[i] = s;
            s *= xd[i];
        }
        for (int i = 0; i < R; i++) {
            wd[i] = 1;
            ws[i] = K * N;
            yd[i] = xd[i];
        }
        wd[R - 2] = K;
        wd[R - 1] = N;
        ws[R - 2] = w.nk ? 1 : N;
        ws[R - 1] = w.nk ? K : 1;
        yd[R - 1] = N;
        int64_t yd64[DNNL_MAX_NDIMS];
        for (int i = 0; i < R; i++)
            yd64[i] = yd[i];
        if (dnnl_memory_desc_init_by_strides(&md_x, R, xd, dqg_dnnl_dtype(x->dtype), xs) !=
                dnnl_success ||
            dnnl_memory_desc_init_by_strides(&md_w, R, wd, dnnl_s8, ws) != dnnl_success ||
            dnnl_memory_desc_init_by_tag(&md_w_any, R, wd, dnnl_s8, dnnl_format_tag_any) !=
                dnnl_success) {
            st = dqg_set_error(DQG_BACKEND_ERROR, "%s: memory descriptors", m->base.impl);
            goto fail;
        }
        if ((st = dqg_dnnl_md_dense(&md_y, R, yd64, y->dtype)) != DQG_OK)
            goto fail;
    }
    if ((st = dqg_qattr_build_ex(req, R, R - 1, N, &md_y, NULL, col != NULL,
                                 DQG_QATTR_RUNTIME_BIAS | DQG_QATTR_OWN_GELU, &m->q,
                                 m->base.impl)) != DQG_OK ||
        (st = dqg_qattr_weights_zp(&m->q, w_zp, m->base.impl)) != DQG_OK ||
        (st = dqg_qattr_exact_integer(req, &m->q, K, m->base.impl)) != DQG_OK)
        goto fail;
    if (m->q.bias_runtime &&
        ((st = dqg_qattr_build_ex(req, R, R - 1, N, &md_y, NULL, col != NULL, DQG_QATTR_OWN_GELU,
                                  &m->q_safe, m->base.impl)) != DQG_OK ||
         (st = dqg_qattr_weights_zp(&m->q_safe, w_zp, m->base.impl)) != DQG_OK ||
         (st = dqg_qattr_exact_integer(req, &m->q_safe, K, m->base.impl)) != DQG_OK))
        goto fail;
    /* The quantized source (when quantized here) after the attribute's
     * scratch, the primitive's scratchpad last. */
    m->pad_offset = dqg_qattr_scratch_size(&m->q);
    {
        size_t qb;
        if ((st = dqg_qsrc_init(&m->src, req, m->pad_offset, &qb)) != DQG_OK)
            goto fail;
        m->pad_offset += qb;
    }
    if (col) {
        m->rows = x->nelems / (K > 0 ? K : 1);
        m->K = K;
        m->N = N;
        m->src_dtype = x->dtype;
        if (!(m->col_factor = malloc((size_t)(N ? N : 1) * sizeof *m->col_factor))) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", m->base.impl);
            goto fail;
        }
        for (int64_t n = 0; n < N; n++)
            m->col_factor[n] = (float)col[n] * m->q.row_scale[m->q.n_scales > 1 ? n : 0];
        m->q.row_term_offset = m->q_safe.row_term_offset = (m->pad_offset + 63) & ~(size_t)63;
        m->pad_offset = m->q.row_term_offset + (((size_t)(m->rows * N) * 4 + 63) & ~(size_t)63);
    }
    dnnl_matmul_desc_t d;
    dnnl_status_t s = dnnl_matmul_desc_init(&d, &md_x, &md_w_any, dqg_qattr_bias_md(&m->q), &md_y);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, m->base.impl, "descriptor");
        goto fail;
    }
    dqg_prim_facts facts = {.kind = DQG_FACTS_MATMUL, .K = K, .M = x->nelems / (K > 0 ? K : 1)};
    snprintf(m->impl_prefix, sizeof m->impl_prefix, "%s", m->base.impl);
    if ((st = dqg_dnnl_pd_create_checked(&pd, &d, m->q.attr, &facts, m->base.impl,
                                         sizeof m->base.impl, m->base.why, sizeof m->base.why)) !=
        DQG_OK)
        goto fail;
    if (m->q.bias_runtime && (st = safe_pd(m, &d, &facts, &pd, &pds)) != DQG_OK)
        goto fail;
    if ((st = dqg_qkernel_finish(folded, pd, &md_w, &md_x, &md_y, &m->q, &m->prim, &m->w_packed,
                                 &m->base.bytes, m->base.impl)) != DQG_OK)
        goto fail;
    if (m->has_safe && (st = dqg_qkernel_prim(pds, &md_x, &md_y, &m->q_safe, &m->prim_safe,
                                              m->base.impl)) != DQG_OK)
        goto fail;
    m->base.scratch_size = m->pad_offset + dqg_dnnl_scratchpad(&m->prim);
    if (m->has_safe && dqg_dnnl_scratchpad(&m->prim_safe) > dqg_dnnl_scratchpad(&m->prim))
        m->base.scratch_size = m->pad_offset + dqg_dnnl_scratchpad(&m->prim_safe);
    /* Small M (decoders, classifier heads): say what reads the weights.
     * bench_fusion's small-M table times every oneDNN implementation of
     * these shapes against the CPU's weight-read and VNNI floors. */
    if (!m->base.why[0] && facts.M <= 16) {
        if (strstr(m->base.impl, "amx"))
            snprintf(m->base.why, sizeof m->base.why, "M=%lld: AMX brgemm, kept above M = %d",
                     (long long)facts.M, DQG_AMX_MIN_M);
        else
            snprintf(m->base.why, sizeof m->base.why, "M=%lld: oneDNN's first implementation (%s)",
                     (long long)facts.M,
                     dqg_cpu_has(DQG_ISA_AMX) ? "no AMX brgemm offered" : "this CPU has no AMX");
    }
    if (m->q.own_gelu) {
        m->dst_elems = y->nelems;
        size_t len = strlen(m->base.impl);
        snprintf(m->base.impl + len, sizeof m->base.impl - len, "+own:avx512:gelu");
    }
    dqg_qattr_note(&m->q, m->base.why, sizeof m->base.why);
    dnnl_primitive_desc_destroy(pd);
    if (pds)
        dnnl_primitive_desc_destroy(pds);
    free(folded);
    free(col);
    dqg_weights_release(&w);
    *out = &m->base;
    return DQG_OK;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (pds)
        dnnl_primitive_desc_destroy(pds);
    free(folded);
    free(col);
    dqg_weights_release(&w);
    qmatmul_destroy(&m->base);
    return st;
}
