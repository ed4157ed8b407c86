/* A MatMul or Convolution whose result only a TypeCast to an integer type
 * reads: the ONNX front end's MatMulInteger and ConvInteger when their int8
 * fusion does not apply (weights at run time, u8 weights that no common
 * zero point brings into s8, a source or weights zero point with an s32
 * result, a CPU without VNNI). The operands are dequantized 8-bit
 * integers, so every product is an integer of at most 255^2, and the sums
 * are exact in f32 only below 2^24: past 258 products an f32 result rounds
 * them. Here the reduction is cut into chunks of at most 256 products (K
 * for a MatMul, a group's input channels times the window for a
 * Convolution), each an f32 matmul or convolution on oneDNN whose sums stay
 * below 2^24 and are therefore exact; the chunks are added in double and
 * the total is rounded once to the cast's type, as the reference does
 * (dqg_ref_values.wide). A chunk's operands are copied into the layouts
 * the primitive prefers where their strided views would leave oneDNN 2.6
 * only a slow implementation (A of a cut MatMul, both of a Convolution),
 * and a constant B is packed once per chunk. For operands that are not
 * small integers the result is an f32 one's, up to the chunks' roundings. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/kernel.h"
#include "runtime/onednn_layout.h"
#include "runtime/onednn_pack.h"

#define KCHUNK 256 /* 256 x 255^2 < 2^24 */

typedef struct imatmul_kernel {
    dqg_kernel base;
    dqg_dnnl_prim prim[2];   /* full chunks, the last shorter one */
    int a_arg, b_arg, y_arg; /* arg indexes; -1 = constant */
    void *a_const, *b_const; /* copies of constant operands */
    size_t b_bytes;          /* of b_const */
    /* Chunks of `chunk` along the reduced axis of length K: the operands'
     * element strides along it. */
    int64_t K, chunk, nchunks, a_kstride, b_kstride;
    int64_t nelems;                     /* of the result */
    float *bias;                        /* a convolution's, per output channel (NULL: none) */
    int64_t bias_stride, bias_channels; /* the result's channel stride, channels */
    dqg_dtype to;
    /* Operand views copied per chunk into the layouts the primitive takes
     * ([chunk kind][operand]): for a channel slice's strides oneDNN 2.6 has
     * only its reference convolution, for a cut A only its gemm matmul. */
    dqg_dnnl_prim copy[2][2];
    bool copied[2];
    size_t copy_offset[2];
    /* A MatMul's constant B, each chunk packed once into the layout its
     * primitive chose (NULL: B is read through strided views). */
    void **b_packed;
    size_t acc_offset, pad_offset; /* chunk result (f32) at 0, sums (double), scratchpad */
} imatmul_kernel;

/* One chunk's sums into the running ones (the first sets them); after the
 * last, the bias and the TypeCast: rounding half to even, saturating, NaN
 * to 0. Split over the threads: the result has M x N elements. */
static void add_chunk(const imatmul_kernel *m, const float *chunk, double *acc, bool first,
                      bool last, void *y)
{
    const int64_t n = m->nelems;
    const double lo = (double)dqg_int_min(m->to), hi = (double)dqg_int_max(m->to);
    int threads = n >= 16384 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t b = 0; b < n; b += 4096) {
        int64_t e = b + 4096 < n ? b + 4096 : n;
        if (!last) {
            for (int64_t i = b; i < e; i++)
                acc[i] = (first ? 0.0 : acc[i]) + (double)chunk[i];
            continue;
        }
        for (int64_t i = b; i < e; i++) {
            double v = (first ? 0.0 : acc[i]) + (double)chunk[i];
            if (m->bias)
                v += m->bias[(i / m->bias_stride) % m->bias_channels];
            double f = isnan(v) ? 0.0 : rint(v);
            f = f < lo ? lo : f > hi ? hi : f;
            if (m->to == DQG_S32)
                ((int32_t *)y)[i] = (int32_t)f;
            else
                dqg_store_int(m->to, y, i, (int64_t)f);
        }
    }
}

static dqg_status imatmul_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    imatmul_kernel *m = (imatmul_kernel *)k;
    const float *a = m->a_arg >= 0 ? args[m->a_arg] : m->a_const;
    const float *b = m->b_arg >= 0 ? args[m->b_arg] : m->b_const;
    float *chunk = scratch;
    double *acc = (double *)((char *)scratch + m->acc_offset);
    void *pad = (char *)scratch + m->pad_offset;
    for (int64_t c = 0; c < m->nchunks; c++) {
        int64_t k0 = c * m->chunk;
        void *h[3] = {(void *)(a + k0 * m->a_kstride),
                      m->b_packed ? m->b_packed[c] : (void *)(b + k0 * m->b_kstride), chunk};
        int kind = k0 + m->chunk <= m->K ? 0 : 1;
        dqg_status st = DQG_OK;
        for (int i = 0; i < 2 && st == DQG_OK; i++) {
            if (!m->copied[i])
                continue;
            void *rh[2] = {h[i], (char *)scratch + m->copy_offset[i]};
            st = dqg_dnnl_prim_execute(&m->copy[kind][i], rh, pad, m->base.impl);
            h[i] = rh[1];
        }
        if (st == DQG_OK)
            st = dqg_dnnl_prim_execute(&m->prim[kind], h, pad, m->base.impl);
        if (st != DQG_OK)
            return st;
        add_chunk(m, chunk, acc, c == 0, c == m->nchunks - 1, args[m->y_arg]);
    }
    return DQG_OK;
}

static void imatmul_destroy(dqg_kernel *k)
{
    imatmul_kernel *m = (imatmul_kernel *)k;
    dqg_dnnl_prim_destroy(&m->prim[0]);
    dqg_dnnl_prim_destroy(&m->prim[1]);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 2; i++)
            dqg_dnnl_prim_destroy(&m->copy[c][i]);
    if (m->b_packed)
        for (int64_t c = 0; c < m->nchunks; c++)
            free(m->b_packed[c]);
    free(m->b_packed);
    free(m->a_const);
    free(m->b_const);
    free(m->bias);
    free(m);
}

/* The primitive descriptor of a chunk of kind k; `impl` receives the
 * kernel's name with oneDNN's implementation. */
static dqg_status chunk_pd(const imatmul_kernel *m, const_dnnl_op_desc_t d, char *impl,
                           size_t impl_size, dnnl_primitive_desc_t *pd)
{
    snprintf(impl, impl_size, "%s", m->base.impl);
    return dqg_dnnl_pd_create(pd, d, NULL, impl, impl_size);
}

/* The chunk's primitive from pd on src, weights, dst `mds`; the full
 * chunks' (or the only one's) names the kernel. Destroys pd. */
static dqg_status chunk_prim(imatmul_kernel *m, dnnl_primitive_desc_t pd, int k, const char *impl,
                             const dnnl_memory_desc_t *mds)
{
    if (k == 0 || m->K < m->chunk)
        snprintf(m->base.impl, sizeof m->base.impl, "%s", impl);
    int kinds[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    dqg_status st = dqg_dnnl_prim_init(&m->prim[k], pd, 3, kinds, mds, m->base.impl);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

/* The per-chunk copy of operand i (chunk kind k) from its strided view
 * into the layout `use`; its scratch bytes go in m->copy_offset[i] (the
 * largest over the kinds) until integer_kernel_finish places it. */
static dqg_status chunk_copy(imatmul_kernel *m, int k, int i, const dnnl_memory_desc_t *view,
                             const dnnl_memory_desc_t *use)
{
    dqg_status st = dqg_dnnl_reorder_prim(&m->copy[k][i], view, use, m->base.impl);
    m->copied[i] = true;
    size_t bytes = dnnl_memory_desc_get_size(use);
    if (bytes > m->copy_offset[i])
        m->copy_offset[i] = bytes;
    return st;
}

/* A constant B (MatMul weights, Convolution weights), each chunk of kind k
 * packed once, from its view `view` into the primitive's layout `use`. */
static dqg_status pack_b_chunks(imatmul_kernel *m, int k, const dnnl_memory_desc_t *view,
                                const dnnl_memory_desc_t *use)
{
    dqg_status st = DQG_OK;
    for (int64_t c = 0; c < m->nchunks && st == DQG_OK; c++) {
        int64_t k0 = c * m->chunk;
        if ((k0 + m->chunk <= m->K ? 0 : 1) != k)
            continue;
        size_t bytes = 0;
        st = dqg_dnnl_pack(view, (const float *)m->b_const + k0 * m->b_kstride, use, false,
                           &m->b_packed[c], &bytes, m->base.impl);
        m->base.bytes += bytes;
    }
    return st;
}

/* The matmul for kc of K (chunk kind k): operand views with K cut to kc.
 * A constant B is packed, chunk by chunk, into the layout the primitive
 * chooses for it (oneDNN's brgemm takes only packed weights). */
static dqg_status matmul_chunk(imatmul_kernel *m, dnnl_memory_desc_t md_a, dnnl_memory_desc_t md_b,
                               const dnnl_memory_desc_t *md_y, int R, int64_t kc, int k)
{
    md_a.dims[R - 1] = md_a.padded_dims[R - 1] = kc;
    md_b.dims[R - 2] = md_b.padded_dims[R - 2] = kc;
    /* A's chunk is a strided view (rows K apart) whenever K is cut: for
     * those strides oneDNN 2.6 has only its gemm matmul, about half as
     * fast here as brgemm on a dense copy (the copy costs M x kc per
     * chunk, the matmul M x kc x N). */
    dnnl_memory_desc_t md_a_use = md_a;
    if (m->nchunks > 1) {
        int64_t dims[DNNL_MAX_NDIMS];
        for (int i = 0; i < R; i++)
            dims[i] = md_a.dims[i];
        dqg_status cst = dqg_dnnl_md_dense(&md_a_use, R, dims, DQG_F32);
        if (cst == DQG_OK)
            cst = chunk_copy(m, k, 0, &md_a, &md_a_use);
        if (cst != DQG_OK)
            return cst;
    }
    dnnl_memory_desc_t md_b_use = md_b;
    if (m->b_packed && dnnl_memory_desc_init_by_tag(&md_b_use, R, md_b.dims, dnnl_f32,
                                                    dnnl_format_tag_any) != dnnl_success)
        return dqg_set_error(DQG_BACKEND_ERROR, "%s: weights descriptor", m->base.impl);
    dnnl_matmul_desc_t d;
    dnnl_status_t s = dnnl_matmul_desc_init(&d, &md_a_use, &md_b_use, NULL, md_y);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, m->base.impl, "matmul descriptor");
    dnnl_primitive_desc_t pd = NULL;
    char impl[sizeof m->base.impl];
    dqg_status st = chunk_pd(m, &d, impl, sizeof impl, &pd);
    if (st != DQG_OK)
        return st;
    if (m->b_packed) {
        md_b_use = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        st = pack_b_chunks(m, k, &md_b, &md_b_use);
    }
    if (st != DQG_OK) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    dnnl_memory_desc_t mds[3] = {md_a_use, md_b_use, *md_y};
    return chunk_prim(m, pd, k, impl, mds);
}

/* The common start: the kernel, its argument indexes and copies of
 * constant operands (inputs 0 and 1 of the anchor). */
static dqg_status integer_kernel_new(const dqg_kernel_request *req, const char *kind,
                                     imatmul_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN), *cast = dqg_req_op(req, DQG_ROLE_CAST);
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    *out = NULL;
    if (!cast || req->roles->n_ops != 2 || a->dtype != DQG_F32 || b->dtype != DQG_F32 ||
        !dqg_dtype_is_integer(cast->attrs.typecast.to))
        return dqg_set_error(DQG_UNSUPPORTED,
                             "integer %s: an f32 %s and one TypeCast to an integer", kind, kind);
    imatmul_kernel *m = calloc(1, sizeof *m);
    if (!m)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "integer %s: out of memory", kind);
    m->base.execute = imatmul_execute;
    m->base.destroy = imatmul_destroy;
    m->to = cast->attrs.typecast.to;
    snprintf(m->base.impl, sizeof m->base.impl, "onednn:%s:f32:chunks%d->%s", kind, KCHUNK,
             dqg_dtype_name(m->to));
    m->a_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    m->b_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    m->y_arg = dqg_kernel_arg_index(g, cast->outputs[0]);
    m->nelems = g->tensors[cast->outputs[0]].nelems;
    for (int i = 0; i < 2; i++) {
        const dqg_tensor *t = i ? b : a;
        if ((i ? m->b_arg : m->a_arg) >= 0)
            continue;
        void *copy = malloc(t->nbytes ? t->nbytes : 1);
        if (!copy) {
            imatmul_destroy(&m->base);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "integer %s: out of memory", kind);
        }
        memcpy(copy, t->data, t->nbytes);
        *(i ? &m->b_const : &m->a_const) = copy;
        m->base.bytes += t->nbytes;
        if (i)
            m->b_bytes = t->nbytes;
    }
    *out = m;
    return DQG_OK;
}

/* A constant B's table of packed chunks (none for a run-time B). */
static dqg_status b_chunks_new(imatmul_kernel *m)
{
    if (m->b_arg >= 0)
        return DQG_OK;
    if (!(m->b_packed = calloc((size_t)m->nchunks, sizeof *m->b_packed)))
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", m->base.impl);
    return DQG_OK;
}

/* The scratch after the primitives exist, and the explain line; packed
 * chunks replace a constant B's copy. */
static void integer_kernel_finish(imatmul_kernel *m, const char *unit)
{
    if (m->b_packed) {
        m->base.bytes -= m->b_bytes;
        free(m->b_const);
        m->b_const = NULL;
    }
    size_t pad = 0, copies = 0;
    for (int k = 0; k < 2; k++) {
        if (dqg_dnnl_scratchpad(&m->prim[k]) > pad)
            pad = dqg_dnnl_scratchpad(&m->prim[k]);
        for (int i = 0; i < 2; i++)
            if (dqg_dnnl_scratchpad(&m->copy[k][i]) > pad)
                pad = dqg_dnnl_scratchpad(&m->copy[k][i]);
    }
    m->acc_offset = ((size_t)m->nelems * sizeof(float) + 63) & ~(size_t)63;
    size_t pos = m->acc_offset + (((size_t)m->nelems * sizeof(double) + 63) & ~(size_t)63);
    for (int i = 0; i < 2; i++) {
        if (!m->copied[i])
            continue;
        copies = m->copy_offset[i]; /* the copy's bytes, set by the chunk builder */
        m->copy_offset[i] = pos;
        pos += (copies + 63) & ~(size_t)63;
    }
    m->pad_offset = pos;
    m->base.scratch_size = m->pad_offset + pad;
    snprintf(m->base.why, sizeof m->base.why,
             "an integer result: %lld %s in chunks of %lld, each exact in f32, added in double",
             (long long)m->K, unit, (long long)m->chunk);
}

dqg_status dqg_kernel_imatmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *a = &g->tensors[op->inputs[0]], *b = &g->tensors[op->inputs[1]];
    imatmul_kernel *m;
    dqg_status st = integer_kernel_new(req, "matmul", &m);
    if (st != DQG_OK)
        return st;
    int ra = a->rank > 2 ? a->rank : 2, rb = b->rank > 2 ? b->rank : 2;
    int R = ra > rb ? ra : rb;
    dnnl_memory_desc_t md_a, md_b, md_y;
    if ((st = dqg_matmul_operand_md(a, NULL, true, op->attrs.matmul.transpose_a, R, dnnl_f32,
                                    &md_a)) != DQG_OK ||
        (st = dqg_matmul_operand_md(b, NULL, false, op->attrs.matmul.transpose_b, R, dnnl_f32,
                                    &md_b)) != DQG_OK)
        goto fail;
    m->K = md_a.dims[R - 1];
    m->chunk = KCHUNK;
    m->a_kstride = md_a.format_desc.blocking.strides[R - 1];
    m->b_kstride = md_b.format_desc.blocking.strides[R - 2];
    m->nchunks = (m->K + KCHUNK - 1) / KCHUNK;
    {
        int64_t yd[DNNL_MAX_NDIMS], n = 1;
        for (int i = 0; i < R - 2; i++)
            yd[i] = md_a.dims[i] > md_b.dims[i] ? md_a.dims[i] : md_b.dims[i];
        yd[R - 2] = md_a.dims[R - 2];
        yd[R - 1] = md_b.dims[R - 1];
        for (int i = 0; i < R; i++)
            n *= yd[i];
        if ((st = dqg_dnnl_md_dense(&md_y, R, yd, DQG_F32)) != DQG_OK)
            goto fail;
        if (m->K < 1 || n != m->nelems) {
            st = dqg_set_error(DQG_UNSUPPORTED, "%s: an empty reduction", m->base.impl);
            goto fail;
        }
    }
    if ((st = b_chunks_new(m)) != DQG_OK)
        goto fail;
    if ((m->K >= KCHUNK && (st = matmul_chunk(m, md_a, md_b, &md_y, R, KCHUNK, 0)) != DQG_OK) ||
        (m->K % KCHUNK && (st = matmul_chunk(m, md_a, md_b, &md_y, R, m->K % KCHUNK, 1)) != DQG_OK))
        goto fail;
    integer_kernel_finish(m, "products");
    *out = &m->base;
    return DQG_OK;
fail:
    imatmul_destroy(&m->base);
    return st;
}

/* A grouped convolution's chunk of cc input channels per group: the
 * source's slices as a view [N, G, cc, X...] of x (channels c0 .. c0 + cc
 * of every group), the primitive's source [N, G x cc, X...] (*src; plain,
 * channels-last when the result is: oneDNN 2.6 has only its reference
 * grouped convolution for other pairs), and that as the view's dims
 * (*twin), for the copy between them. */
static dqg_status group_source(const imatmul_kernel *m, const dnnl_memory_desc_t *md_x, int64_t G,
                               int64_t cc, bool channels_last, dnnl_memory_desc_t *view,
                               dnnl_memory_desc_t *src, dnnl_memory_desc_t *twin)
{
    static const dnnl_format_tag_t nxc[] = {dnnl_acb, dnnl_acdb, dnnl_acdeb},
                                   ncx[] = {dnnl_abc, dnnl_abcd, dnnl_abcde};
    int nd = md_x->ndims;
    const dnnl_dims_t *xs = &md_x->format_desc.blocking.strides;
    dnnl_dims_t vd, vs, sd, ts;
    vd[0] = md_x->dims[0];
    vd[1] = G;
    vd[2] = cc;
    vs[0] = (*xs)[0];
    vs[1] = (*xs)[1] * (md_x->dims[1] / G);
    vs[2] = (*xs)[1];
    for (int i = 2; i < nd; i++) {
        vd[i + 1] = md_x->dims[i];
        vs[i + 1] = (*xs)[i];
    }
    for (int i = 0; i < nd; i++)
        sd[i] = i == 1 ? G * cc : md_x->dims[i];
    if (nd < 3 || nd > 5 ||
        dnnl_memory_desc_init_by_strides(view, nd + 1, vd, dnnl_f32, vs) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(src, nd, sd, dnnl_f32,
                                     channels_last ? nxc[nd - 3] : ncx[nd - 3]) != dnnl_success)
        return dqg_set_error(DQG_BACKEND_ERROR, "%s: grouped source descriptors", m->base.impl);
    const dnnl_dims_t *ss = &src->format_desc.blocking.strides;
    ts[0] = (*ss)[0];
    ts[1] = cc * (*ss)[1]; /* group g's channels follow group g - 1's */
    ts[2] = (*ss)[1];
    for (int i = 2; i < nd; i++)
        ts[i + 1] = (*ss)[i];
    return dnnl_memory_desc_init_by_strides(twin, nd + 1, vd, dnnl_f32, ts) == dnnl_success
               ? DQG_OK
               : dqg_set_error(DQG_BACKEND_ERROR, "%s: grouped source descriptors", m->base.impl);
}

/* The convolution over cc input channels (per group; chunk kind k): the
 * primitive on the layouts it prefers (a grouped one's source plain, in
 * the result's layout: group_source), and copies of the operands' channel
 * slices into them.
 * The copies' sizes go in m->copy_offset until integer_kernel_finish
 * places them. */
static dqg_status conv_chunk(imatmul_kernel *m, const dqg_conv_attrs *a, dnnl_memory_desc_t md_x,
                             dnnl_memory_desc_t md_w, const dnnl_memory_desc_t *md_y, int64_t cc,
                             int k)
{
    int64_t G = a->groups;
    int wc = G > 1 ? 2 : 1; /* the weights' input-channel axis */
    md_w.dims[wc] = md_w.padded_dims[wc] = cc;
    dnnl_memory_desc_t any[2], x_twin;
    const dnnl_memory_desc_t *view[2] = {&md_x, &md_w};
    if (G > 1) {
        dnnl_memory_desc_t x_view;
        bool nxc =
            md_y->ndims > 2 && md_y->format_desc.blocking.strides[1] == 1 && md_y->dims[1] > 1;
        dqg_status gst = group_source(m, &md_x, G, cc, nxc, &x_view, &any[0], &x_twin);
        if (gst != DQG_OK)
            return gst;
        md_x = x_view;
    } else {
        md_x.dims[1] = md_x.padded_dims[1] = cc;
    }
    for (int i = G > 1 ? 1 : 0; i < 2; i++)
        if (dnnl_memory_desc_init_by_tag(&any[i], view[i]->ndims, view[i]->dims, dnnl_f32,
                                         dnnl_format_tag_any) != dnnl_success)
            return dqg_set_error(DQG_BACKEND_ERROR, "%s: descriptors", m->base.impl);
    dnnl_dims_t strides, dil, pl, pr;
    dqg_conv_params(a, strides, dil, pl, pr);
    dnnl_convolution_desc_t d;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_convolution_direct, &any[0], &any[1], NULL, md_y, strides,
        dil, pl, pr);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, m->base.impl, "convolution descriptor");
    dnnl_primitive_desc_t pd = NULL;
    char impl[sizeof m->base.impl];
    dqg_status st = chunk_pd(m, &d, impl, sizeof impl, &pd);
    if (st != DQG_OK)
        return st;
    dnnl_memory_desc_t use[2] = {*dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                                 *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0)};
    /* Constant weights are packed once; run-time operands copied per chunk
     * (a grouped source through its view's dims). */
    st = chunk_copy(m, k, 0, view[0], G > 1 ? &x_twin : &use[0]);
    if (st == DQG_OK)
        st = m->b_packed ? pack_b_chunks(m, k, view[1], &use[1])
                         : chunk_copy(m, k, 1, view[1], &use[1]);
    if (st != DQG_OK) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    dnnl_memory_desc_t mds[3] = {use[0], use[1], *md_y};
    return chunk_prim(m, pd, k, impl, mds);
}

dqg_status dqg_kernel_iconv_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN), *cast = dqg_req_op(req, DQG_ROLE_CAST);
    const dqg_conv_attrs *a = &op->attrs.conv;
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *w = &g->tensors[op->inputs[1]];
    imatmul_kernel *m;
    dqg_status st = integer_kernel_new(req, "conv", &m);
    if (st != DQG_OK)
        return st;
    int64_t window = 1;
    for (int i = 2; i < w->rank; i++)
        window *= w->dims[i];
    const dqg_tensor *bias = op->inputs[2] != DQG_NONE ? &g->tensors[op->inputs[2]] : NULL;
    if (window > KCHUNK ||
        (bias && (bias->kind != DQG_TENSOR_CONSTANT || bias->nelems != w->dims[0]))) {
        st = dqg_set_error(DQG_UNSUPPORTED, "%s: a window of more than %d or a bias", m->base.impl,
                           KCHUNK);
        goto fail;
    }
    dnnl_memory_desc_t md_x, md_w, md_y;
    if ((st = dqg_conv_activation_md(x, a->data_format, dnnl_f32, &md_x)) != DQG_OK ||
        (st = dqg_conv_weights_md(w, a->groups, dnnl_f32, false, &md_w)) != DQG_OK ||
        (st = dqg_conv_activation_md(&g->tensors[cast->outputs[0]], a->data_format, dnnl_f32,
                                     &md_y)) != DQG_OK)
        goto fail;
    /* The result in scratch as the cast's output is stored. */
    /* The reduction: the input channels of one group. */
    m->K = w->dims[1];
    m->chunk = KCHUNK / window;
    m->a_kstride = md_x.format_desc.blocking.strides[1];
    m->b_kstride = md_w.format_desc.blocking.strides[a->groups > 1 ? 2 : 1];
    m->nchunks = (m->K + m->chunk - 1) / m->chunk;
    if (bias) {
        if (!(m->bias = malloc((size_t)bias->nelems * sizeof *m->bias))) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", m->base.impl);
            goto fail;
        }
        for (int64_t i = 0; i < bias->nelems; i++)
            m->bias[i] = dqg_load_float(bias->dtype, bias->data, i);
        m->bias_stride = md_y.format_desc.blocking.strides[1];
        m->bias_channels = md_y.dims[1];
    }
    if ((st = b_chunks_new(m)) != DQG_OK)
        goto fail;
    if ((m->K >= m->chunk && (st = conv_chunk(m, a, md_x, md_w, &md_y, m->chunk, 0)) != DQG_OK) ||
        (m->K % m->chunk &&
         (st = conv_chunk(m, a, md_x, md_w, &md_y, m->K % m->chunk, 1)) != DQG_OK))
        goto fail;
    integer_kernel_finish(m, "input channels");
    *out = &m->base;
    return DQG_OK;
fail:
    imatmul_destroy(&m->base);
    return st;
}
