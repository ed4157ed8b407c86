/* MatMul on oneDNN's matmul primitive in f32/bf16/f16 (bf16 math for f32
 * only under the opt-in fpmath mode). Batch broadcasting and the
 * transposes are expressed as shapes and strides; constant weights are
 * pre-packed once into the layout the primitive prefers; a following bias
 * and element-wise ops in the partition become post-ops. */
#include <stdlib.h>
#include <string.h>

#include "runtime/gelu_kernel.h"
#include "runtime/kernel.h"
#include "runtime/onednn_defects.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"
#include "runtime/softmax_kernel.h"

#define MAX_PRE DQG_SOFTMAX_MAX_PRE

/* A Softmax over the result's rows that follows the matmul in its partition
 * (attention scores), with the binary ops it applies first (SM_PRE). */
typedef struct softmax_stage {
    bool on, log;
    bool own; /* dqgraph's AVX-512 softmax, in place; else oneDNN's */
    int64_t rows, n;
    int n_pre;
    dqg_softmax_pre pre[MAX_PRE];
    int pre_arg[MAX_PRE]; /* the operand's arg index; -1: owned constant */
    float *pre_const[MAX_PRE];
    /* oneDNN's softmax (no AVX-512): from the scores in scratch at
     * x_offset to the output, then the rows with special values redone. */
    dqg_dnnl_prim prim;
    size_t x_offset;
} softmax_stage;

typedef struct matmul_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim;
    int a_arg, b_arg, y_arg; /* arg indexes; -1 = constant */
    void *a_const, *b_packed;
    dqg_qattr post; /* the epilogue's post-ops and their arguments */
    /* Per-execution copies into scratch, after the attribute scratch:
     * run-time f32 operands converted to bf16 (fpmath bf16), or strided
     * operands (transposes planned as strides) made dense where oneDNN
     * offers only its reference matmul for their strides; cvt[2] copies
     * the result out after the matmul. */
    dqg_dnnl_prim cvt[3];
    bool convert[3];
    size_t cvt_offset[3];
    size_t pad_offset; /* the primitives' scratchpad, last in scratch */
    softmax_stage sm;
    int64_t y_elems; /* of the result, for the own GELU (post.own_gelu) */
} matmul_kernel;

static dqg_status softmax_execute(matmul_kernel *m, void *const *args, float *scores, float *y,
                                  void *pad)
{
    softmax_stage *sm = &m->sm;
    dqg_softmax_pre pre[MAX_PRE];
    for (int i = 0; i < sm->n_pre; i++) {
        pre[i] = sm->pre[i];
        pre[i].operand = sm->pre_arg[i] >= 0 ? args[sm->pre_arg[i]] : sm->pre_const[i];
    }
    if (sm->own) {
        dqg_softmax_rows_pre(y, sm->rows, sm->n, pre, sm->n_pre, sm->log);
        return DQG_OK;
    }
    dqg_softmax_pre_apply(scores, sm->rows, sm->n, pre, sm->n_pre);
    void *h[2] = {scores, y};
    dqg_status st = dqg_dnnl_prim_execute(&sm->prim, h, pad, m->base.impl);
    if (st == DQG_OK)
        dqg_softmax_special_rows(DQG_F32, scores, y, sm->rows, sm->n, 1, sm->log);
    return st;
}

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
    void *y = h[2];
    if (m->convert[2])
        h[2] = (char *)scratch + m->cvt_offset[2];
    if (m->sm.on && !m->sm.own)
        h[2] = (char *)scratch + m->sm.x_offset;
    dqg_qattr_handles(&m->post, args, NULL, scratch, 3, h);
    dqg_status st = dqg_dnnl_prim_execute(&m->prim, h, pad, m->base.impl);
    if (st == DQG_OK && m->sm.on)
        return softmax_execute(m, args, h[2], y, pad);
    if (st == DQG_OK && m->convert[2]) {
        void *rh[2] = {h[2], y};
        st = dqg_dnnl_prim_execute(&m->cvt[2], rh, pad, m->base.impl);
    }
    /* The result is the output tensor, dense (in whatever order the
     * matmul wrote it): the GELU goes over all of it. */
    if (st == DQG_OK && m->post.own_gelu)
        dqg_gelu_erf_inplace(y, m->y_elems);
    return st;
}

static void matmul_destroy(dqg_kernel *k)
{
    matmul_kernel *m = (matmul_kernel *)k;
    dqg_dnnl_prim_destroy(&m->prim);
    dqg_dnnl_prim_destroy(&m->cvt[0]);
    dqg_dnnl_prim_destroy(&m->cvt[1]);
    dqg_dnnl_prim_destroy(&m->cvt[2]);
    dqg_dnnl_prim_destroy(&m->sm.prim);
    for (int i = 0; i < m->sm.n_pre; i++)
        free(m->sm.pre_const[i]);
    dqg_qattr_free(&m->post);
    free(m->a_const);
    free(m->b_packed);
    free(m);
}

/* A per-execution reorder of operand i (A, B: before the matmul, into
 * scratch at *offset; the result, i = 2: after it, out of scratch), from
 * `from` to `to`; the scratch side is `to` before, `from` after. */
static dqg_status add_copy(matmul_kernel *m, int i, const dnnl_memory_desc_t *from,
                           const dnnl_memory_desc_t *to, size_t *offset)
{
    dqg_status st = dqg_dnnl_reorder_prim(&m->cvt[i], from, to, m->base.impl);
    if (st != DQG_OK)
        return st;
    m->convert[i] = true;
    m->cvt_offset[i] = *offset;
    *offset += (dnnl_memory_desc_get_size(i < 2 ? to : from) + 63) & ~(size_t)63;
    return DQG_OK;
}

/* bf16 math: the f32 operand described by *md becomes a bf16 one. A
 * run-time operand gets a conversion (a oneDNN reorder) into scratch at
 * `offset`, dense when `dense` (a strided view), else in the operand's
 * layout; a constant one is converted when it is packed. */
static dqg_status to_bf16(matmul_kernel *m, int i, bool runtime, bool dense, dnnl_memory_desc_t *md,
                          size_t *offset)
{
    dnnl_memory_desc_t bf;
    dnnl_dims_t strides;
    int64_t n = 1;
    for (int d = md->ndims - 1; d >= 0; d--) {
        strides[d] = dense ? n : md->format_desc.blocking.strides[d];
        n *= md->dims[d];
    }
    dnnl_status_t s =
        dnnl_memory_desc_init_by_strides(&bf, md->ndims, md->dims, dnnl_bf16, strides);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, m->base.impl, "bf16 operand");
    if (runtime) {
        dqg_status st = add_copy(m, i, md, &bf, offset);
        if (st != DQG_OK)
            return st;
    }
    *md = bf;
    return DQG_OK;
}

/* A dimension of 1 is never stepped along, so any stride is right for it;
 * oneDNN's kernels still derive their leading dimensions from those
 * strides (a [1, 3] result with strides (1, 1), a transposed [3, 1], failed
 * to execute on its gemm matmul). Such a dimension takes the stride a
 * dense layout would give it from the dimension after it. */
static void size_one_strides(int R, const dnnl_dims_t dims, dnnl_dims_t strides)
{
    for (int i = R - 1; i >= 0; i--)
        if (dims[i] == 1)
            strides[i] = i == R - 1 ? 1 : strides[i + 1] * dims[i + 1];
}

/* Builds the descriptor of a MatMul operand as a matrix of rank R: batch
 * dims right-aligned (1 where absent), the last two (rows, cols) swapped
 * through strides when transposed. */
dqg_status dqg_matmul_operand_md(const dqg_tensor *t, const int64_t *tstrides, bool is_a,
                                 bool transpose, int R, dnnl_data_type_t dt, dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    int64_t dense[DQG_MAX_RANK];
    if (!tstrides || t->rank == 1) {
        int64_t s = 1;
        for (int i = t->rank - 1; i >= 0; i--) {
            dense[i] = s;
            s *= t->dims[i];
        }
        tstrides = dense;
    }
    if (t->rank == 1) {
        dims[R - 2] = is_a ? 1 : t->dims[0];
        dims[R - 1] = is_a ? t->dims[0] : 1;
        strides[R - 2] = is_a ? t->dims[0] : 1;
        strides[R - 1] = 1;
    } else {
        int ri = t->rank - (transpose ? 1 : 2), ci = t->rank - (transpose ? 2 : 1);
        dims[R - 2] = t->dims[ri];
        dims[R - 1] = t->dims[ci];
        strides[R - 2] = tstrides[ri];
        strides[R - 1] = tstrides[ci];
    }
    /* Batch dims take t's strides; absent ones (size 1) lie past its
     * extent, as in a dense layout. */
    int64_t extent = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] * tstrides[i] > extent)
            extent = t->dims[i] * tstrides[i];
    int tb = t->rank > 2 ? t->rank - 2 : 0;
    for (int i = 0; i < R - 2; i++) {
        int ti = i - (R - 2 - tb);
        dims[i] = ti >= 0 ? t->dims[ti] : 1;
        strides[i] = ti >= 0 ? tstrides[ti] : extent;
    }
    size_one_strides(R, dims, strides);
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(md, R, dims, dt, strides);
    return st == dnnl_success ? DQG_OK : dqg_dnnl_error(st, "matmul operand", "descriptor");
}

/* The element strides, for the dims of a Transpose's result, of reading
 * them from its (dense) input: a transposed view instead of a copy. */
static void transpose_view(const dqg_graph *g, const dqg_op *t, int64_t *strides)
{
    const dqg_tensor *x = &g->tensors[t->inputs[0]];
    int64_t dense[DQG_MAX_RANK], s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        dense[i] = s;
        s *= x->dims[i];
    }
    for (int i = 0; i < x->rank; i++)
        strides[i] = dense[t->attrs.transpose.perm[i]];
}

/* The strides, for the dims of a Transpose's input, of writing them where
 * its (dense) result keeps them. */
static void transpose_store(const dqg_graph *g, const dqg_op *t, int64_t *strides)
{
    const dqg_tensor *y = &g->tensors[t->outputs[0]];
    int64_t s = 1;
    for (int j = y->rank - 1; j >= 0; j--) {
        strides[t->attrs.transpose.perm[j]] = s;
        s *= y->dims[j];
    }
}

/* An operand's copy between its strided layout and a dense one in
 * scratch: before the matmul for A and B (i = 0, 1), after it for the
 * result (i = 2). */
static dqg_status dense_copy(matmul_kernel *m, int i, dnnl_memory_desc_t *md, size_t *offset)
{
    int64_t dims[DNNL_MAX_NDIMS];
    for (int d = 0; d < md->ndims; d++)
        dims[d] = md->dims[d];
    dnnl_memory_desc_t dense;
    dqg_status st = dqg_dnnl_md_dense(&dense, md->ndims, dims, DQG_F32);
    if (st != DQG_OK)
        return st;
    dense.data_type = md->data_type;
    if ((st = add_copy(m, i, i < 2 ? md : &dense, i < 2 ? &dense : md, offset)) != DQG_OK)
        return st;
    *md = dense;
    return DQG_OK;
}

/* The softmax stage over the dense result md_y (rows of its last dim): its
 * pre-ops' operands, and oneDNN's softmax with a copy of the scores in
 * scratch at *scratch where dqgraph's own kernel does not run. */
static dqg_status softmax_build(matmul_kernel *m, const dqg_kernel_request *req,
                                const dnnl_memory_desc_t *md_y, size_t *scratch)
{
    const dqg_graph *g = req->mini;
    softmax_stage *sm = &m->sm;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_SOFTMAX);
    int R = md_y->ndims;
    sm->on = true;
    sm->log = op->attrs.softmax.log;
    sm->n = md_y->dims[R - 1];
    sm->rows = 1;
    for (int i = 0; i < R - 1; i++)
        sm->rows *= md_y->dims[i];
    for (int k = 0; k < req->roles->n_ops; k++) {
        if (req->roles->role[k] != DQG_ROLE_SM_PRE)
            continue;
        const dqg_op *p = &g->ops[k];
        const dqg_tensor *b = &g->tensors[dqg_req_operand(req, p)];
        if (sm->n_pre == MAX_PRE || b->dtype != DQG_F32)
            return dqg_set_error(DQG_UNSUPPORTED, "%s: %s '%s' before the softmax", m->base.impl,
                                 dqg_op_kind_name(p->kind), p->name);
        dqg_softmax_pre *q = &sm->pre[sm->n_pre];
        q->kind = p->kind == DQG_OP_ADD   ? DQG_SOFTMAX_PRE_ADD
                  : p->kind == DQG_OP_MUL ? DQG_SOFTMAX_PRE_MUL
                                          : DQG_SOFTMAX_PRE_DIV;
        /* One value, one per column, or one per element (the epilogue's
         * operand shapes along the last axis). */
        if (b->nelems == 1) {
            q->row_step = q->col_step = 0;
        } else if (b->nelems == sm->n && b->dims[b->rank - 1] == sm->n) {
            q->row_step = 0;
            q->col_step = 1;
        } else if (b->nelems == sm->rows * sm->n && b->dims[b->rank - 1] == sm->n) {
            q->row_step = sm->n;
            q->col_step = 1;
        } else if (b->dims[b->rank - 1] == sm->n && sm->rows % (b->nelems / sm->n) == 0 &&
                   b->nelems % sm->n == 0) {
            /* rows of its own repeated over the leading axes (the match
             * checked the shapes): row r reads row r % P */
            q->row_step = sm->n;
            q->col_step = 1;
            q->row_period = b->nelems / sm->n;
        } else {
            return dqg_set_error(DQG_UNSUPPORTED, "%s: operand of %s '%s' before the softmax",
                                 m->base.impl, dqg_op_kind_name(p->kind), p->name);
        }
        sm->pre_arg[sm->n_pre] = dqg_kernel_arg_index(g, dqg_req_operand(req, p));
        if (sm->pre_arg[sm->n_pre] < 0) {
            float *c = malloc(b->nbytes);
            if (!c)
                return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", m->base.impl);
            memcpy(c, b->data, b->nbytes);
            sm->pre_const[sm->n_pre] = c;
            m->base.bytes += b->nbytes;
        }
        sm->n_pre++;
    }
    sm->own = dqg_softmax_own_available();
    size_t len = strlen(m->base.impl);
    snprintf(m->base.impl + len, sizeof m->base.impl - len, "+%s",
             sm->own ? (sm->log ? "own:avx512:logsoftmax" : "own:avx512:softmax")
                     : (sm->log ? "logsoftmax" : "softmax"));
    if (sm->own)
        return DQG_OK;
    dnnl_memory_desc_t md;
    int64_t dims[2] = {sm->rows, sm->n};
    dqg_status st = dqg_dnnl_md_dense(&md, 2, dims, DQG_F32);
    if (st != DQG_OK)
        return st;
    dnnl_softmax_desc_t d;
    dnnl_status_t s = sm->log
                          ? dnnl_logsoftmax_forward_desc_init(&d, dnnl_forward_inference, &md, 1)
                          : dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md, 1);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, m->base.impl, "softmax descriptor");
    dnnl_primitive_desc_t pd;
    if ((st = dqg_dnnl_pd_create(&pd, &d, NULL, m->base.impl, sizeof m->base.impl)) != DQG_OK)
        return st;
    int kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    dnnl_memory_desc_t mds[2] = {md, md};
    st = dqg_dnnl_prim_init(&sm->prim, pd, 2, kinds, mds, m->base.impl);
    dnnl_primitive_desc_destroy(pd);
    sm->x_offset = *scratch;
    *scratch += ((size_t)(sm->rows * sm->n) * sizeof(float) + 63) & ~(size_t)63;
    return st;
}

dqg_status dqg_kernel_matmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    if (dqg_req_op(req, DQG_ROLE_CAST))
        return dqg_kernel_imatmul_build(req, out);
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    /* Transposes planned as strides: of A, of B, of the result. */
    const dqg_op *lay[3] = {dqg_req_op(req, DQG_ROLE_A_LAYOUT), dqg_req_op(req, DQG_ROLE_B_LAYOUT),
                            dqg_req_op(req, DQG_ROLE_Y_LAYOUT)};
    dnnl_dims_t view[3];
    for (int i = 0; i < 2; i++)
        if (lay[i])
            transpose_view(g, lay[i], view[i]);
    if (lay[2])
        transpose_store(g, lay[2], view[2]);
    matmul_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "matmul kernel: out of memory");
    m->base.execute = matmul_execute;
    m->base.destroy = matmul_destroy;
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:matmul:%s", dqg_dtype_name(y->dtype));
    m->a_arg = dqg_kernel_arg_index(g, lay[0] ? lay[0]->inputs[0] : op->inputs[0]);
    m->b_arg = dqg_kernel_arg_index(g, lay[1] ? lay[1]->inputs[0] : op->inputs[1]);
    /* With an epilogue, the partition's result is its last op's output
     * (of the MatMul's type and shape). */
    m->y_arg = dqg_kernel_arg_index(g, dqg_part_result(g, req->roles));
    int ra = a->rank > 2 ? a->rank : 2, rb = b->rank > 2 ? b->rank : 2;
    int R = ra > rb ? ra : rb;
    /* oneDNN 2.6's brgemm matmul reads transposed attention heads (acbd,
     * adbc) only as rank-4 operands; at rank 3 it leaves them to gemm. */
    if (R == 3 && (lay[0] || lay[1] || lay[2]))
        R = 4;
    dnnl_memory_desc_t md_a, md_b, md_b_any, md_y, md_y_store;
    dqg_status st;
    if ((st = dqg_matmul_operand_md(a, lay[0] ? view[0] : NULL, true, op->attrs.matmul.transpose_a,
                                    R, dqg_dnnl_dtype(a->dtype), &md_a)) != DQG_OK ||
        (st = dqg_matmul_operand_md(b, lay[1] ? view[1] : NULL, false, op->attrs.matmul.transpose_b,
                                    R, dqg_dnnl_dtype(b->dtype), &md_b)) != DQG_OK)
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
        /* Both operands have rank >= 2 when the result is transposed: its
         * dims are the result's. */
        md_y_store = md_y;
        dnnl_dims_t ys;
        int lead = R - y->rank;
        for (int i = R - 1; i >= 0; i--)
            ys[i] = i >= lead ? view[2][i - lead] : y->nelems;
        size_one_strides(R, md_y.dims, ys);
        if (lay[2] && dnnl_memory_desc_init_by_strides(&md_y_store, R, md_y.dims, md_y.data_type,
                                                       ys) != dnnl_success) {
            st = dqg_set_error(DQG_UNSUPPORTED, "%s: transposed result descriptor", m->base.impl);
            goto fail;
        }
    }
    /* The attributes carry the epilogue (if any); an operand of the
     * result's shape is dense in it even when the result is strided. */
    if ((st = dqg_qattr_build_ex(req, R, R - 1, md_b.dims[R - 1], &md_y, NULL, false,
                                 dqg_req_op(req, DQG_ROLE_SOFTMAX) ? 0 : DQG_QATTR_OWN_GELU,
                                 &m->post, m->base.impl)) != DQG_OK)
        goto fail;
    size_t scratch = dqg_qattr_scratch_size(&m->post);
    bool pack = m->b_arg < 0;
    /* fpmath bf16: oneDNN 2.6 ignores its fpmath attribute for matmul (it
     * stays on the f32 kernel), so the operands become bf16 themselves:
     * constant weights once, when packed; run-time operands per execution.
     * The result and the epilogue stay f32. */
    dnnl_memory_desc_t md_b_f32 = md_b;
    if (req->options->fpmath == DQG_FPMATH_BF16 && a->dtype == DQG_F32 && b->dtype == DQG_F32 &&
        ((st = to_bf16(m, 0, true, lay[0] != NULL, &md_a, &scratch)) != DQG_OK ||
         (st = to_bf16(m, 1, !pack, lay[1] != NULL, &md_b, &scratch)) != DQG_OK))
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
    char prefix[sizeof m->base.impl];
    memcpy(prefix, m->base.impl, sizeof prefix);
    dnnl_primitive_desc_t pd = NULL;
    for (int attempt = 0;; attempt++) {
        dnnl_matmul_desc_t d;
        dnnl_status_t s = dnnl_matmul_desc_init(&d, &md_a, &md_b_any, NULL, &md_y_store);
        if (s != dnnl_success) {
            st = dqg_dnnl_error(s, m->base.impl, "matmul descriptor");
            goto fail;
        }
        st = dqg_dnnl_pd_create(&pd, &d, m->post.attr, m->base.impl, sizeof m->base.impl);
        if (st != DQG_OK)
            goto fail;
        bool strided = (lay[0] && !m->convert[0]) || (lay[1] && !m->convert[1]) || lay[2];
        if (!strided || attempt > 0)
            break;
        if (lay[2] && dqg_defect_dense_result(m->base.impl, m->post.per_channel_binary, R)) {
            /* Rule G: the result is written dense and transposed after;
             * the operands keep their strides. */
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            memcpy(m->base.impl, prefix, sizeof prefix);
            if ((st = dense_copy(m, 2, &md_y_store, &scratch)) != DQG_OK)
                goto fail;
            snprintf(m->base.why, sizeof m->base.why, "%s",
                     "transposes planned as strides, the result's copied: oneDNN 2.6 defect G "
                     "(matmul with a transposed result and a per-channel operand)");
            continue;
        }
        if (!strstr(m->base.impl, ":ref")) {
            snprintf(m->base.why, sizeof m->base.why, "%s", "transposes planned as strides");
            break;
        }
        /* oneDNN offers only its reference matmul for these strides: the
         * transposes are copies again, inside the kernel. */
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        memcpy(m->base.impl, prefix, sizeof prefix);
        if ((lay[0] && !m->convert[0] && (st = dense_copy(m, 0, &md_a, &scratch)) != DQG_OK) ||
            (lay[1] && !m->convert[1] && (st = dense_copy(m, 1, &md_b, &scratch)) != DQG_OK) ||
            (lay[2] && (st = dense_copy(m, 2, &md_y_store, &scratch)) != DQG_OK))
            goto fail;
        md_b_any = md_b;
        snprintf(m->base.why, sizeof m->base.why, "%s",
                 "transposes copied: oneDNN 2.6 offers only its reference matmul for their "
                 "strides");
    }
    dnnl_memory_desc_t md_b_real = md_b;
    if (pack) {
        md_b_real = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        size_t bytes = 0;
        st = dqg_dnnl_pack(&md_b_f32, b->data, &md_b_real, false, &m->b_packed, &bytes,
                           m->base.impl);
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
    if (st == DQG_OK && dqg_req_op(req, DQG_ROLE_SOFTMAX))
        st = softmax_build(m, req, &md_y, &scratch);
    if (st == DQG_OK) {
        int kinds[DQG_DNNL_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
        dnnl_memory_desc_t mds[DQG_DNNL_MAX_ARGS] = {md_a, md_b_real, md_y_store};
        int n = dqg_qattr_args(&m->post, 3, kinds, mds);
        st = dqg_dnnl_prim_init(&m->prim, pd, n, kinds, mds, m->base.impl);
        size_t pad = dqg_dnnl_scratchpad(&m->prim);
        for (int i = 0; i < 3; i++)
            if (dqg_dnnl_scratchpad(&m->cvt[i]) > pad)
                pad = dqg_dnnl_scratchpad(&m->cvt[i]);
        if (dqg_dnnl_scratchpad(&m->sm.prim) > pad)
            pad = dqg_dnnl_scratchpad(&m->sm.prim);
        m->pad_offset = scratch;
        m->base.scratch_size = scratch + pad;
    }
    dnnl_primitive_desc_destroy(pd);
    if (st != DQG_OK)
        goto fail;
    if (m->post.own_gelu) {
        m->y_elems = g->tensors[dqg_part_result(g, req->roles)].nelems;
        size_t len = strlen(m->base.impl);
        snprintf(m->base.impl + len, sizeof m->base.impl - len, "+own:avx512:gelu");
    }
    *out = &m->base;
    return DQG_OK;
fail:
    matmul_destroy(&m->base);
    return st;
}
