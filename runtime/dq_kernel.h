/* Dequantize kernels (internal): y = (x - zp) * scale for every input type
 * and granularity, either on a oneDNN reorder (u8/s8/s32 to f32 or bf16,
 * per-tensor or per-axis scales, per-tensor zero point) or on dqgraph's own
 * kernels, vectorized per ISA and bit-exact with the reference interpreter. */
#ifndef DQG_RUNTIME_DQ_KERNEL_H
#define DQG_RUNTIME_DQ_KERNEL_H

#include "graph/graph_internal.h"

typedef struct dqg_dq_desc {
    dqg_dtype x_dtype, scale_dtype, zp_dtype; /* zp_dtype DQG_DTYPE_UNDEF: no zero point */
    dqg_dtype out_dtype;
    dqg_granularity granularity;
    int rank;
    int64_t dims[DQG_MAX_RANK];
    int axis;
    int64_t block_size;
    /* When both are constant their values are baked in at creation. */
    bool scale_is_constant;
    const void *const_scale, *const_zp;
} dqg_dq_desc;

enum {
    DQG_DQ_IMPL_AUTO = 0, /* own AVX-512 kernel; else oneDNN where it applies; else own */
    DQG_DQ_IMPL_ONEDNN,
    DQG_DQ_IMPL_OWN, /* the best own kernel for this CPU */
    DQG_DQ_IMPL_OWN_AVX512,
    DQG_DQ_IMPL_OWN_AVX2,
    DQG_DQ_IMPL_OWN_SCALAR,
};

typedef struct dqg_dq_kernel dqg_dq_kernel;

/* DQG_UNSUPPORTED when the forced implementation cannot run the case (no
 * oneDNN support, or the CPU lacks the ISA). */
dqg_status dqg_dq_kernel_create(const dqg_dq_desc *d, int impl, dqg_dq_kernel **out);
/* scale and zp are read only when they are not constant. */
dqg_status dqg_dq_kernel_run(dqg_dq_kernel *k, const void *x, const void *scale, const void *zp,
                             void *y);
const char *dqg_dq_kernel_impl_name(const dqg_dq_kernel *k);
void dqg_dq_kernel_destroy(dqg_dq_kernel *k);

/* The oneDNN reorder path (runtime/dq_reorder.c). */
typedef struct dqg_dq_reorder dqg_dq_reorder;
dqg_status dqg_dq_reorder_create(const dqg_dq_desc *d, dqg_dq_reorder **out);
dqg_status dqg_dq_reorder_run(dqg_dq_reorder *r, const void *x, const void *scale, const void *zp,
                              void *y);
void dqg_dq_reorder_destroy(dqg_dq_reorder *r);

#endif
