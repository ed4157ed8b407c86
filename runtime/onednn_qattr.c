/* Building oneDNN attributes for fused int8 partitions. */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/onednn_pack.h"
#include "runtime/onednn_qattr.h"

static bool is_const(const dqg_graph *g, dqg_tensor_id t)
{
    return g->tensors[t].kind == DQG_TENSOR_CONSTANT;
}

/* A constant f32 operand as a oneDNN post-op source of the destination's
 * rank: 1 everywhere but the channel axis when it is per channel. Its
 * values are multiplied by `factor` (the folded quantize scale, for
 * additive operands). */
static dqg_status add_binary(dqg_qattr *q, dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                             const dqg_tensor *t, float factor, int dst_rank, int channel_axis,
                             const char *what)
{
    if (q->n_binary == DQG_QATTR_MAX_BINARY)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: too many binary post-ops", what);
    dnnl_dims_t dims;
    for (int i = 0; i < dst_rank; i++)
        dims[i] = 1;
    if (t->nelems > 1)
        dims[channel_axis] = t->nelems;
    dnnl_memory_desc_t *md = &q->binary_md[q->n_binary];
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(md, dst_rank, dims, dnnl_f32,
                                                   dst_rank == 2   ? dnnl_ab
                                                   : dst_rank == 3 ? dnnl_abc
                                                   : dst_rank == 4 ? dnnl_abcd
                                                                   : dnnl_abcde);
    int index = dnnl_post_ops_len(po);
    if (s == dnnl_success)
        s = dnnl_post_ops_append_binary(po, alg, md);
    if (s != dnnl_success)
        return dqg_dnnl_error(s, what, "binary post-op");
    float *copy = malloc((size_t)t->nelems * sizeof(float));
    if (!copy)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    for (int64_t i = 0; i < t->nelems; i++)
        copy[i] = dqg_load_float(t->dtype, t->data, i) * factor;
    q->binary_index[q->n_binary] = index;
    q->binary_data[q->n_binary++] = copy;
    return DQG_OK;
}

dqg_status dqg_qattr_build(const dqg_kernel_request *req, int dst_rank, int channel_axis,
                           int64_t channels, dqg_qattr *q, const char *what)
{
    const dqg_graph *g = req->mini;
    const dqg_partition *p = req->roles;
    memset(q, 0, sizeof *q);
    q->src_scale_arg = q->src_zp_arg = -1;
    if (dnnl_primitive_attr_create(&q->attr) != dnnl_success)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    dnnl_status_t s = dnnl_success;

    /* A following QuantizeLinear divides by its scale: folded into the
     * output scales, with every additive term and clip bound of the
     * epilogue scaled to match (exact algebra for a positive scale). oneDNN
     * then rounds to nearest even, saturates and adds the zero point. */
    float inv = 1.0f;
    if (p->q >= 0) {
        const dqg_tensor *qs = &g->tensors[g->ops[p->q].inputs[1]];
        float qscale = dqg_load_float(qs->dtype, qs->data, 0);
        if (!(qscale > 0.0f))
            return dqg_set_error(DQG_UNSUPPORTED, "%s: quantize scale %g is not positive", what,
                                 (double)qscale);
        inv = 1.0f / qscale;
    }

    /* Scales and zero points of a fused int8 partition; an f32 MatMul or
     * Convolution with an epilogue has neither. */
    if (p->src_dq >= 0) {
        const dqg_op *sdq = &g->ops[p->src_dq], *wdq = &g->ops[p->w_dq];
        /* Output scales = src scale x weight scale (per output channel). */
        const dqg_tensor *ws = &g->tensors[wdq->inputs[1]];
        bool per_channel = wdq->attrs.quant.granularity == DQG_PER_AXIS && channels > 1;
        q->n_scales = per_channel ? channels : 1;
        q->w_scales = malloc((size_t)q->n_scales * sizeof(float));
        if (!q->w_scales)
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        for (int64_t i = 0; i < q->n_scales; i++)
            q->w_scales[i] = dqg_load_float(ws->dtype, ws->data, per_channel ? i : 0) * inv;
        int mask = per_channel ? 1 << channel_axis : 0;
        dqg_tensor_id st = sdq->inputs[1];
        if (is_const(g, st)) {
            q->src_scale = dqg_load_float(g->tensors[st].dtype, g->tensors[st].data, 0);
            float *combined = malloc((size_t)q->n_scales * sizeof(float));
            if (!combined)
                return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
            for (int64_t i = 0; i < q->n_scales; i++)
                combined[i] = q->src_scale * q->w_scales[i];
            s = dnnl_primitive_attr_set_output_scales(q->attr, q->n_scales, mask, combined);
            free(combined);
        } else {
            q->src_scale_arg = dqg_kernel_arg_index(g, st);
            q->src_scale_dtype = g->tensors[st].dtype;
            /* Run-time scales are declared with one placeholder value; the mask
             * says how many arrive at execution. */
            float rt = DNNL_RUNTIME_F32_VAL;
            s = dnnl_primitive_attr_set_output_scales(q->attr, 1, mask, &rt);
        }
        if (s != dnnl_success)
            return dqg_dnnl_error(s, what, "output scales");

        /* Source zero point. */
        dqg_tensor_id zt = sdq->inputs[2];
        if (zt != DQG_NONE) {
            int32_t zp;
            if (is_const(g, zt)) {
                zp = (int32_t)dqg_load_int(g->tensors[zt].dtype, g->tensors[zt].data, 0);
                if (zp != 0)
                    s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_SRC, 1, 0, &zp);
            } else {
                q->src_zp_arg = dqg_kernel_arg_index(g, zt);
                q->src_zp_dtype = g->tensors[zt].dtype;
                zp = DNNL_RUNTIME_S32_VAL;
                s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_SRC, 1, 0, &zp);
            }
            if (s != dnnl_success)
                return dqg_dnnl_error(s, what, "source zero point");
        }
    }

    /* Epilogue: bias, post-ops, then quantization as a final scale and the
     * destination zero point. */
    dnnl_post_ops_t po = NULL;
    if (dnnl_post_ops_create(&po) != dnnl_success)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    dqg_status status = DQG_OK;
    const dqg_op *main = &g->ops[p->main];
    if (main->kind == DQG_OP_CONVOLUTION && main->inputs[2] != DQG_NONE)
        status = add_binary(q, po, dnnl_binary_add, &g->tensors[main->inputs[2]], inv, dst_rank,
                            channel_axis, what);
    if (status == DQG_OK && p->bias >= 0)
        status = add_binary(q, po, dnnl_binary_add, &g->tensors[g->ops[p->bias].inputs[1]], inv,
                            dst_rank, channel_axis, what);
    /* Scalar Add/Mul are broadcast binary post-ops rather than linear
     * eltwise ones: oneDNN 2.6's brgemm matmul drops the second linear
     * post-op of a chain. */
    for (int i = 0; i < p->n_post && status == DQG_OK; i++) {
        const dqg_op *op = &g->ops[p->post[i]];
        s = dnnl_success;
        if (op->kind == DQG_OP_RELU)
            s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
        else if (op->kind == DQG_OP_CLIP)
            s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2,
                                             op->attrs.clip.lo * inv, op->attrs.clip.hi * inv);
        else if (op->kind == DQG_OP_ADD)
            status = add_binary(q, po, dnnl_binary_add, &g->tensors[op->inputs[1]], inv, dst_rank,
                                channel_axis, what);
        else
            status = add_binary(q, po, dnnl_binary_mul, &g->tensors[op->inputs[1]], 1.0f, dst_rank,
                                channel_axis, what);
        if (status == DQG_OK && s != dnnl_success)
            status = dqg_dnnl_error(s, what, "post-op");
    }
    q->dst_dtype = DQG_F32;
    if (status == DQG_OK && p->q >= 0) {
        const dqg_op *qop = &g->ops[p->q];
        q->dst_dtype = g->tensors[qop->outputs[0]].dtype;
        if (qop->inputs[2] != DQG_NONE) {
            const dqg_tensor *qz = &g->tensors[qop->inputs[2]];
            int32_t zp = (int32_t)dqg_load_int(qz->dtype, qz->data, 0);
            if (zp != 0 && (s = dnnl_primitive_attr_set_zero_points(q->attr, DNNL_ARG_DST, 1, 0,
                                                                    &zp)) != dnnl_success)
                status = dqg_dnnl_error(s, what, "quantized destination");
        }
    }
    if (status == DQG_OK && (s = dnnl_primitive_attr_set_post_ops(q->attr, po)) != dnnl_success)
        status = dqg_dnnl_error(s, what, "post-ops");
    dnnl_post_ops_destroy(po);
    return status;
}

void dqg_qattr_free(dqg_qattr *q)
{
    if (q->attr)
        dnnl_primitive_attr_destroy(q->attr);
    free(q->w_scales);
    for (int i = 0; i < q->n_binary; i++)
        free(q->binary_data[i]);
    memset(q, 0, sizeof *q);
}

size_t dqg_qattr_scratch_size(const dqg_qattr *q)
{
    return (((size_t)q->n_scales * sizeof(float) + 63) & ~(size_t)63) + 64;
}

int dqg_qattr_args(const dqg_qattr *q, int n, int *kinds, dnnl_memory_desc_t *mds)
{
    dnnl_dims_t one = {1};
    if (q->src_scale_arg >= 0) {
        dnnl_dims_t d = {q->n_scales};
        dnnl_memory_desc_init_by_tag(&mds[n], 1, d, dnnl_f32, dnnl_a);
        kinds[n++] = DNNL_ARG_ATTR_OUTPUT_SCALES;
    }
    if (q->src_zp_arg >= 0) {
        dnnl_memory_desc_init_by_tag(&mds[n], 1, one, dnnl_s32, dnnl_a);
        kinds[n++] = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC;
    }
    for (int i = 0; i < q->n_binary; i++) {
        mds[n] = q->binary_md[i];
        kinds[n++] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(q->binary_index[i]) | DNNL_ARG_SRC_1;
    }
    return n;
}

int dqg_qattr_handles(const dqg_qattr *q, void *const *args, void *scratch, int n, void **h)
{
    float *scales = scratch;
    int32_t *zp =
        (int32_t *)((char *)scratch + (((size_t)q->n_scales * sizeof(float) + 63) & ~(size_t)63));
    if (q->src_scale_arg >= 0) {
        float s = dqg_load_float(q->src_scale_dtype, args[q->src_scale_arg], 0);
        for (int64_t i = 0; i < q->n_scales; i++)
            scales[i] = s * q->w_scales[i];
        h[n++] = scales;
    }
    if (q->src_zp_arg >= 0) {
        *zp = (int32_t)dqg_load_int(q->src_zp_dtype, args[q->src_zp_arg], 0);
        h[n++] = zp;
    }
    for (int i = 0; i < q->n_binary; i++)
        h[n++] = q->binary_data[i];
    return n;
}

dqg_status dqg_qattr_fold_weights(const dqg_graph *g, const dqg_op *wdq, int8_t **out)
{
    const dqg_tensor *w = &g->tensors[wdq->inputs[0]];
    const dqg_tensor *z = wdq->inputs[2] != DQG_NONE ? &g->tensors[wdq->inputs[2]] : NULL;
    int8_t *buf = malloc((size_t)w->nelems);
    if (!buf)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "int8 kernel: out of memory folding weights");
    dqg_quant_index ix;
    dqg_quant_index_init(&ix, w, &g->tensors[wdq->inputs[1]], &wdq->attrs.quant);
    for (int64_t i = 0; i < w->nelems; i++) {
        int64_t v = dqg_load_int(w->dtype, w->data, i);
        if (z)
            v -= dqg_load_int(z->dtype, z->data, dqg_quant_scale_index(&ix, i));
        buf[i] = (int8_t)v; /* the fusion pass checked that it fits */
    }
    *out = buf;
    return DQG_OK;
}

dqg_tensor_id dqg_partition_output(const dqg_graph *g, const dqg_partition *p)
{
    int last = p->q >= 0      ? p->q
               : p->n_post    ? p->post[p->n_post - 1]
               : p->bias >= 0 ? p->bias
                              : p->main;
    return g->ops[last].outputs[0];
}

dqg_status dqg_int8_exact_isa(const char *what)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    bool vnni = (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
                (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
    if (vnni)
        return DQG_OK;
    return dqg_set_error(DQG_UNSUPPORTED,
                         "%s: the CPU ISA oneDNN uses (0x%x) has no VNNI or AMX, and its u8 x s8 "
                         "kernels would saturate intermediate sums",
                         what, (unsigned)isa);
}

dqg_status dqg_qkernel_finish(const dqg_graph *g, const dqg_op *wdq, const_dnnl_primitive_desc_t pd,
                              const dnnl_memory_desc_t *md_w_plain,
                              const dnnl_memory_desc_t *md_src, const dnnl_memory_desc_t *md_dst,
                              const dqg_qattr *q, dqg_dnnl_prim *prim, void **w_packed,
                              size_t *bytes, const char *what)
{
    const dnnl_memory_desc_t *md_w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    int8_t *folded = NULL;
    dqg_status st = dqg_qattr_fold_weights(g, wdq, &folded);
    if (st == DQG_OK)
        st = dqg_dnnl_pack(md_w_plain, folded, md_w, w_packed, bytes, what);
    free(folded);
    if (st != DQG_OK)
        return st;
    int kinds[DQG_DNNL_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    dnnl_memory_desc_t mds[DQG_DNNL_MAX_ARGS] = {*md_src, *md_w, *md_dst};
    int n = dqg_qattr_args(q, 3, kinds, mds);
    return dqg_dnnl_prim_init(prim, pd, n, kinds, mds, what);
}
