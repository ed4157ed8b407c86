/* MatMul on oneDNN's matmul primitive in f32/bf16/f16 (bf16 math for f32
 * only under the opt-in fpmath mode). Batch broadcasting and the
 * transposes are expressed as shapes and strides; constant weights are
 * pre-packed once into the layout the primitive prefers; a following bias
 * and element-wise ops in the partition become post-ops. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"

typedef struct matmul_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    int a_arg, b_arg, y_arg; /* arg indexes; -1 = constant */
    void *a_const, *b_packed;
    dqg_qattr post; /* the epilogue's post-ops and their arguments */
    /* bf16 math (fpmath bf16): run-time f32 operands are converted per
     * execution into scratch, after the attribute scratch. */
    dqg_dnnl_prim cvt[2];
    bool convert[2];
    size_t cvt_offset[2];
    size_t pad_offset; /* the primitives' scratchpad, last in scratch */
} matmul_kernel;

static dqg_status matmul_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    matmul_kernel *m = (matmul_kernel *)k;
    void *pad = (char *)scratch + m->pad_offset;
    void *h[DQG_DNNL_MAX_ARGS] = {m->a_arg >= 0 ? args[m->a_arg] : m->a_const,
                                  m->b_arg >= 0 ? args[m->b_arg] : m->b_packed, args[m->y_arg]};
    for (int i = 0; i < 2; i++) {
        if (!m->convert[i])
            continue;
        void *to = (char *)scratch + m->cvt_offset[i];
        void *rh[2] = {h[i], to};
        dqg_status st = dqg_dnnl_prim_execute(&m->cvt[i], rh, pad, m->base.impl);
        if (st != DQG_OK)
            return st;
        h[i] = to;
    }
    dqg_qattr_handles(&m->post, args, NULL, scratch, 3, h);
    return dqg_dnnl_prim_execute(&m->prim, h, pad, m->base.impl);
}

static void matmul_destroy(dqg_kernel *k)
{
    matmul_kernel *m = (matmul_kernel *)k;
    dqg_dnnl_prim_destroy(&m->prim);
    dqg_dnnl_prim_destroy(&m->cvt[0]);
    dqg_dnnl_prim_destroy(&m->cvt[1]);
    dqg_qattr_free(&m->post);
    free(m->a_const);
    free(m->b_packed);
    free(m);
}

/* bf16 math: the f32 operand described by *md becomes a bf16 one. A
 * run-time operand gets a conversion (a oneDNN reorder) into scratch at
 * `offset`; a constant one is converted when it is packed. */
static dqg_status to_bf16(matmul_kernel *m, int i, bool runtime, dnnl_memory_desc_t *md,
                          size_t *offset)
{
    dnnl_memory_desc_t bf;
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&bf, md->ndims, md->dims, dnnl_bf16,
                                                       md->format_desc.blocking.strides);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, m->base.impl, "bf16 operand");
    if (runtime) {
        dnnl_primitive_desc_t pd = NULL;
        dqg_status st = dqg_dnnl_reorder_pd(&pd, md, &bf, NULL, m->base.impl);
        if (st != DQG_OK)
            return st;
        int kinds[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
        dnnl_memory_desc_t mds[2] = {*md, bf};
        st = dqg_dnnl_prim_init(&m->cvt[i], pd, 2, kinds, mds, m->base.impl);
        dnnl_primitive_desc_destroy(pd);
        if (st != DQG_OK)
            return st;
        m->convert[i] = true;
        m->cvt_offset[i] = *offset;
        *offset += (dnnl_memory_desc_get_size(&bf) + 63) & ~(size_t)63;
    }
    *md = bf;
    return DQG_OK;
}

/* Builds the descriptor of a MatMul operand as a matrix of rank R: batch
 * dims right-aligned (1 where absent), the last two (rows, cols) swapped
 * through strides when transposed. */
dqg_status dqg_matmul_operand_md(const dqg_tensor *t, bool is_a, bool transpose, int R,
                                 dnnl_data_type_t dt, dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    int64_t rows, cols;
    if (t->rank == 1) {
        rows = is_a ? 1 : t->dims[0];
        cols = is_a ? t->dims[0] : 1;
        transpose = false;
    } else {
        rows = t->dims[t->rank - (transpose ? 1 : 2)];
        cols = t->dims[t->rank - (transpose ? 2 : 1)];
    }
    int tb = t->rank > 2 ? t->rank - 2 : 0;
    for (int i = 0; i < R - 2; i++) {
        int ti = i - (R - 2 - tb);
        dims[i] = ti >= 0 ? t->dims[ti] : 1;
    }
    dims[R - 2] = rows;
    dims[R - 1] = cols;
    /* Storage: the stored (untransposed) matrix is dense row-major. */
    int64_t stored_cols = transpose ? rows : cols;
    strides[R - 2] = transpose ? 1 : stored_cols;
    strides[R - 1] = transpose ? stored_cols : 1;
    int64_t s = rows * cols;
    for (int i = R - 3; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(md, R, dims, dt, strides);
    return st == dnnl_success ? DQG_OK : dqg_dnnl_error(st, "matmul operand", "descriptor");
}

dqg_status dqg_kernel_matmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    matmul_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "matmul kernel: out of memory");
    m->base.execute = matmul_execute;
    m->base.destroy = matmul_destroy;
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:matmul:%s", dqg_dtype_name(y->dtype));
    m->a_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    m->b_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    /* With an epilogue, the partition's result is its last op's output
     * (of the MatMul's type and shape). */
    m->y_arg = dqg_kernel_arg_index(g, dqg_part_result(g, req->roles));
    int ra = a->rank > 2 ? a->rank : 2, rb = b->rank > 2 ? b->rank : 2;
    int R = ra > rb ? ra : rb;
    dnnl_memory_desc_t md_a, md_b, md_b_any, md_y;
    dqg_status st;
    if ((st = dqg_matmul_operand_md(a, true, op->attrs.matmul.transpose_a, R,
                                    dqg_dnnl_dtype(a->dtype), &md_a)) != DQG_OK ||
        (st = dqg_matmul_operand_md(b, false, op->attrs.matmul.transpose_b, R,
                                    dqg_dnnl_dtype(b->dtype), &md_b)) != DQG_OK)
        goto fail;
    {
        /* The output as [batch..., M, N], dense. */
        dnnl_dims_t yd;
        for (int i = 0; i < R - 2; i++)
            yd[i] = md_a.dims[i] > md_b.dims[i] ? md_a.dims[i] : md_b.dims[i];
        yd[R - 2] = md_a.dims[R - 2];
        yd[R - 1] = md_b.dims[R - 1];
        int64_t yd64[DNNL_MAX_NDIMS];
        for (int i = 0; i < R; i++)
            yd64[i] = yd[i];
        if ((st = dqg_dnnl_md_dense(&md_y, R, yd64, y->dtype)) != DQG_OK)
            goto fail;
    }
    /* The attributes carry the epilogue (if any). */
    if ((st = dqg_qattr_build(req, R, R - 1, md_b.dims[R - 1], &md_y, &m->post, m->base.impl)) !=
        DQG_OK)
        goto fail;
    size_t scratch = dqg_qattr_scratch_size(&m->post);
    bool pack = m->b_arg < 0;
    /* fpmath bf16: oneDNN 2.6 ignores its fpmath attribute for matmul (it
     * stays on the f32 kernel), so the operands become bf16 themselves:
     * constant weights once, when packed; run-time operands per execution.
     * The result and the epilogue stay f32. */
    dnnl_memory_desc_t md_b_f32 = md_b;
    if (req->options->fpmath == DQG_FPMATH_BF16 && a->dtype == DQG_F32 && b->dtype == DQG_F32 &&
        ((st = to_bf16(m, 0, true, &md_a, &scratch)) != DQG_OK ||
         (st = to_bf16(m, 1, !pack, &md_b, &scratch)) != DQG_OK))
        goto fail;
    md_b_any = md_b;
    if (pack) {
        dnnl_status_t s = dnnl_memory_desc_init_by_tag(&md_b_any, R, md_b.dims, md_b.data_type,
                                                       dnnl_format_tag_any);
        if (s != dnnl_success) {
            st = dqg_dnnl_error(s, m->base.impl, "weights descriptor");
            goto fail;
        }
    }
    dnnl_matmul_desc_t d;
    dnnl_status_t s = dnnl_matmul_desc_init(&d, &md_a, &md_b_any, NULL, &md_y);
    if (s != dnnl_success) {
        st = dqg_dnnl_error(s, m->base.impl, "matmul descriptor");
        goto fail;
    }
    dnnl_primitive_desc_t pd = NULL;
    st = dqg_dnnl_pd_create(&pd, &d, m->post.attr, m->base.impl, sizeof m->base.impl);
    if (st != DQG_OK)
        goto fail;
    dnnl_memory_desc_t md_b_real = md_b;
    if (pack) {
        md_b_real = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        size_t bytes = 0;
        st = dqg_dnnl_pack(&md_b_f32, b->data, &md_b_real, &m->b_packed, &bytes, m->base.impl);
        m->base.bytes += bytes;
    }
    if (st == DQG_OK && m->a_arg < 0) {
        m->a_const = malloc(a->nbytes);
        if (!m->a_const)
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "matmul kernel: out of memory");
        else
            memcpy(m->a_const, a->data, a->nbytes);
        m->base.bytes += a->nbytes;
    }
    if (st == DQG_OK) {
        int kinds[DQG_DNNL_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
        dnnl_memory_desc_t mds[DQG_DNNL_MAX_ARGS] = {md_a, md_b_real, md_y};
        int n = dqg_qattr_args(&m->post, 3, kinds, mds);
        st = dqg_dnnl_prim_init(&m->prim, pd, n, kinds, mds, m->base.impl);
        size_t pad = dqg_dnnl_scratchpad(&m->prim);
        for (int i = 0; i < 2; i++)
            if (dqg_dnnl_scratchpad(&m->cvt[i]) > pad)
                pad = dqg_dnnl_scratchpad(&m->cvt[i]);
        m->pad_offset = scratch;
        m->base.scratch_size = scratch + pad;
    }
    dnnl_primitive_desc_destroy(pd);
    if (st != DQG_OK)
        goto fail;
    *out = &m->base;
    return DQG_OK;
fail:
    matmul_destroy(&m->base);
    return st;
}
