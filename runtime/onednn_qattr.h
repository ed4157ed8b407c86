/* oneDNN attributes for a fused int8 partition (internal): output scales
 * (scale_src x scale_w, per tensor or per output channel), source and
 * destination zero points, and the epilogue as post-ops, with the constant
 * and run-time arguments each needs at execution. */
#ifndef DQG_RUNTIME_ONEDNN_QATTR_H
#define DQG_RUNTIME_ONEDNN_QATTR_H

#include "runtime/kernel.h"
#include "runtime/onednn_exec.h"

#define DQG_QATTR_MAX_BINARY 6

typedef struct dqg_qattr {
    dnnl_primitive_attr_t attr;
    /* Output scales: constant values baked in, or computed per execution
     * from the run-time source scale. */
    int64_t n_scales;
    float *w_scales;   /* per channel (or 1), owned */
    float src_scale;   /* when constant */
    int src_scale_arg; /* run-time source scale: arg index, else -1 */
    dqg_dtype src_scale_dtype;
    dqg_dtype src_zp_dtype;
    int src_zp_arg; /* run-time source zero point: arg index, else -1 */
    /* Binary post-ops: constant operands (owned) or run-time args. */
    int n_binary;
    int binary_index[DQG_QATTR_MAX_BINARY]; /* position in the post-op chain */
    void *binary_data[DQG_QATTR_MAX_BINARY];
    dnnl_memory_desc_t binary_md[DQG_QATTR_MAX_BINARY];
    dqg_dtype dst_dtype;
} dqg_qattr;

/* Fills q from the partition's roles. `dst_rank` and `channel_axis` describe
 * the oneDNN destination (logical N, C, ... for convolutions). */
dqg_status dqg_qattr_build(const dqg_kernel_request *req, int dst_rank, int channel_axis,
                           int64_t channels, dqg_qattr *q, const char *what);
void dqg_qattr_free(dqg_qattr *q);

/* Appends the run-time attribute arguments (scales, zero point, binary
 * operands) to kinds/mds; returns the new count. */
int dqg_qattr_args(const dqg_qattr *q, int n, int *kinds, dnnl_memory_desc_t *mds);
/* Fills the handles for those arguments; `scratch` holds the per-execution
 * scale array and zero point (dqg_qattr_scratch_size bytes). */
int dqg_qattr_handles(const dqg_qattr *q, void *const *args, void *scratch, int n, void **h);
size_t dqg_qattr_scratch_size(const dqg_qattr *q);

/* The tensor a fused partition produces: the Quantize's, else the last
 * post-op's, else the bias's, else the anchor's output. */
dqg_tensor_id dqg_partition_output(const dqg_graph *g, const dqg_partition *p);

/* DQG_UNSUPPORTED, naming the reason, unless oneDNN dispatches to an ISA
 * with VNNI or AMX: without them its u8 x s8 kernels add pairs of products
 * in saturating 16-bit arithmetic, which loses exactness. */
dqg_status dqg_int8_exact_isa(const char *what);

/* The common end of building an int8 kernel: folds the weight zero point,
 * packs the weights into the layout `pd` chose, and creates the primitive
 * with src, weights, dst and q's attribute arguments. */
dqg_status dqg_qkernel_finish(const dqg_graph *g, const dqg_op *wdq, const_dnnl_primitive_desc_t pd,
                              const dnnl_memory_desc_t *md_w_plain,
                              const dnnl_memory_desc_t *md_src, const dnnl_memory_desc_t *md_dst,
                              const dqg_qattr *q, dqg_dnnl_prim *prim, void **w_packed,
                              size_t *bytes, const char *what);

/* Folds the weight zero point into s8 weights: out[i] = w[i] - zp[channel]. */
dqg_status dqg_qattr_fold_weights(const dqg_graph *g, const dqg_op *wdq, int8_t **out);

#endif
