/* Dequantize on a oneDNN reorder, for what oneDNN 2.6's reorders support
 * exactly: u8/s8/s32 input to f32 or bf16, a per-tensor or per-axis f32
 * scale as output scales (baked in when constant, passed per execution
 * otherwise), a per-tensor zero point of u8/s8/s32 as source zero point.
 * Anything else returns DQG_UNSUPPORTED and runs on dqgraph's own kernels. */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/dq_kernel.h"
#include "runtime/kernel.h"
#include "runtime/onednn_exec.h"

struct dqg_dq_reorder {
    dqg_dnnl_prim prim;
    bool runtime_scale, runtime_zp;
    int64_t n_scales;
    dqg_dtype zp_dtype;
};

dqg_status dqg_dq_reorder_create(const dqg_dq_desc *d, dqg_dq_reorder **out)
{
    *out = NULL;
    const char *what = "dequantize reorder";
    bool x_ok = d->x_dtype == DQG_U8 || d->x_dtype == DQG_S8 || d->x_dtype == DQG_S32;
    bool out_ok = d->out_dtype == DQG_F32 || d->out_dtype == DQG_BF16;
    bool gran_ok = d->granularity == DQG_PER_TENSOR || d->granularity == DQG_PER_AXIS;
    bool zp_ok = d->zp_dtype == DQG_DTYPE_UNDEF ||
                 (d->granularity == DQG_PER_TENSOR &&
                  (d->zp_dtype == DQG_U8 || d->zp_dtype == DQG_S8 || d->zp_dtype == DQG_S32));
    /* s32 with a zero point: oneDNN forms x - zp in int32, which can wrap. */
    if (d->x_dtype == DQG_S32 && d->zp_dtype != DQG_DTYPE_UNDEF)
        zp_ok = false;
    if (!x_ok || !out_ok || !gran_ok || !zp_ok || d->scale_dtype != DQG_F32 || d->rank < 1)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: combination not supported by oneDNN", what);
    dqg_dq_reorder *r = calloc(1, sizeof *r);
    if (!r)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    dnnl_memory_desc_t md_x, md_y;
    dqg_status st;
    if ((st = dqg_dnnl_md_dense(&md_x, d->rank, d->dims, d->x_dtype)) != DQG_OK ||
        (st = dqg_dnnl_md_dense(&md_y, d->rank, d->dims, d->out_dtype)) != DQG_OK) {
        free(r);
        return st;
    }
    dnnl_primitive_attr_t attr = NULL;
    dqg_dnnl_attr_create(&attr);
    int mask = d->granularity == DQG_PER_AXIS ? 1 << d->axis : 0;
    r->n_scales = d->granularity == DQG_PER_AXIS ? d->dims[d->axis] : 1;
    r->runtime_scale = !d->scale_is_constant;
    r->runtime_zp = !d->scale_is_constant && d->zp_dtype != DQG_DTYPE_UNDEF;
    r->zp_dtype = d->zp_dtype;
    dnnl_status_t s;
    if (r->runtime_scale) {
        float rt = DNNL_RUNTIME_F32_VAL;
        s = dnnl_primitive_attr_set_output_scales(attr, 1, mask, &rt);
    } else {
        s = dnnl_primitive_attr_set_output_scales(attr, r->n_scales, mask, d->const_scale);
    }
    if (s == dnnl_success && d->zp_dtype != DQG_DTYPE_UNDEF) {
        int32_t zp = r->runtime_zp ? DNNL_RUNTIME_S32_VAL
                                   : (int32_t)dqg_load_int(d->zp_dtype, d->const_zp, 0);
        s = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &zp);
    }
    dnnl_primitive_desc_t pd = NULL;
    st = s == dnnl_success ? dqg_dnnl_reorder_pd(&pd, &md_x, &md_y, attr, what)
                           : dqg_dnnl_error(s, what, "reorder attributes");
    dnnl_primitive_attr_destroy(attr);
    if (st != DQG_OK) {
        free(r);
        return st;
    }
    int kinds[4] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    dnnl_memory_desc_t mds[4] = {md_x, md_y};
    int n = 2;
    dnnl_dims_t one = {1}, ns = {r->n_scales};
    if (r->runtime_scale) {
        dnnl_memory_desc_init_by_tag(&mds[n], 1, ns, dnnl_f32, dnnl_a);
        kinds[n++] = DNNL_ARG_ATTR_OUTPUT_SCALES;
    }
    if (r->runtime_zp) {
        dnnl_memory_desc_init_by_tag(&mds[n], 1, one, dnnl_s32, dnnl_a);
        kinds[n++] = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC;
    }
    st = dqg_dnnl_prim_init(&r->prim, pd, n, kinds, mds, what);
    dnnl_primitive_desc_destroy(pd);
    if (st == DQG_OK && r->prim.scratchpad_bytes) {
        /* The dequantize kernels' interface has no scratch: the own
         * kernels take the case. */
        dqg_dnnl_prim_destroy(&r->prim);
        st = dqg_set_error(DQG_UNSUPPORTED, "%s: the reorder needs a scratchpad", what);
    }
    if (st != DQG_OK) {
        free(r);
        return st;
    }
    *out = r;
    return DQG_OK;
}

dqg_status dqg_dq_reorder_run(dqg_dq_reorder *r, const void *x, const void *scale, const void *zp,
                              void *y)
{
    void *h[4] = {(void *)x, y};
    int n = 2;
    int32_t zp32 = 0;
    if (r->runtime_scale)
        h[n++] = (void *)scale;
    if (r->runtime_zp) {
        zp32 = (int32_t)dqg_load_int(r->zp_dtype, zp, 0);
        h[n++] = &zp32;
    }
    return dqg_dnnl_prim_execute(&r->prim, h, NULL, "dequantize reorder");
}

void dqg_dq_reorder_destroy(dqg_dq_reorder *r)
{
    if (!r)
        return;
    dqg_dnnl_prim_destroy(&r->prim);
    free(r);
}
