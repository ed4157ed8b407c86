/* Memory descriptors shared by the f32 and int8 MatMul and Convolution
 * kernels (internal). */
#ifndef DQG_RUNTIME_ONEDNN_LAYOUT_H
#define DQG_RUNTIME_ONEDNN_LAYOUT_H

#include "graph/graph_internal.h"
#include "runtime/onednn_exec.h"

/* Activations as oneDNN's logical N, C, spatial... (NXC through strides;
 * an NCX tensor stored channels-last likewise). */
dqg_status dqg_conv_activation_md(const dqg_tensor *t, dqg_data_format f, dnnl_data_type_t dt,
                                  dnnl_memory_desc_t *md);
/* OIX weights, grouped as (G, O/G, I, X...) when groups > 1; `any` lets the
 * primitive choose the layout. */
dqg_status dqg_conv_weights_md(const dqg_tensor *w, int64_t groups, dnnl_data_type_t dt, bool any,
                               dnnl_memory_desc_t *md);
/* ConvTranspose weights [C, M/g, K...] as oneDNN's deconvolution weights
 * (M, C, K...) or, grouped, (G, M/g, C/g, K...): by strides, or `any`. */
dqg_status dqg_deconv_weights_md(const dqg_tensor *w, int64_t groups, dnnl_data_type_t dt, bool any,
                                 dnnl_memory_desc_t *md);
/* Strides, dilations (oneDNN counts from 0), left and right pads. */
void dqg_conv_params(const dqg_conv_attrs *a, dnnl_dims_t strides, dnnl_dims_t dil, dnnl_dims_t pl,
                     dnnl_dims_t pr);
/* The same for a ConvTranspose: output_padding is a negative right pad,
 * which oneDNN takes only above minus the stride (else DQG_UNSUPPORTED,
 * naming `what`). */
dqg_status dqg_deconv_params(const dqg_conv_transpose_attrs *a, dnnl_dims_t strides,
                             dnnl_dims_t dil, dnnl_dims_t pl, dnnl_dims_t pr, const char *what);

/* A MatMul operand as a rank-R matrix (batch dims right-aligned, 1 where
 * absent; a 1-D operand promoted; the transpose through strides) of type
 * `dt`, stored with element strides `strides` for t's dims (NULL: dense
 * row-major). */
dqg_status dqg_matmul_operand_md(const dqg_tensor *t, const int64_t *strides, bool is_a,
                                 bool transpose, int R, dnnl_data_type_t dt,
                                 dnnl_memory_desc_t *md);

/* Whether md is dense channels-last (N, spatial..., C in memory), of rank
 * 3 to 5. */
bool dqg_md_dense_channels_last(const dnnl_memory_desc_t *md);

/* A convolution's activations as its primitive reads and writes them:
 * channels-last, which oneDNN's fast int8 and f32 kernels take (on a
 * row-major NCX layout 2.6 falls back to gemm for f32 and refuses int8). A
 * row-major source or result is reordered per execution, in the kernel's
 * scratch. */
typedef struct dqg_conv_io {
    dnnl_memory_desc_t src, dst; /* the primitive's layouts */
    bool reorder_src, reorder_dst;
    dqg_dnnl_prim src_reorder, dst_reorder;
    size_t src_offset, dst_offset; /* of the reordered copies in scratch */
} dqg_conv_io;

/* The primitive's layouts for the user's md_x/md_y of a convolution in
 * format f; call before creating the primitive descriptor. */
void dqg_conv_io_plan(dqg_conv_io *io, const dnnl_memory_desc_t *md_x,
                      const dnnl_memory_desc_t *md_y, dqg_data_format f);
/* Once the primitive descriptor exists: the reorders where its layouts
 * differ from the user's, with their copies at `offset` in scratch.
 * Returns the scratch bytes they take in *bytes; writes into `why` what is
 * reordered (nothing when nothing is). */
dqg_status dqg_conv_io_finish(dqg_conv_io *io, const_dnnl_primitive_desc_t pd,
                              const dnnl_memory_desc_t *md_x, const dnnl_memory_desc_t *md_y,
                              size_t offset, size_t *bytes, char *why, size_t why_size,
                              const char *what);
/* Per execution: the source the primitive reads (reordered into scratch
 * when needed) and the destination it writes; then dqg_conv_io_end copies
 * a reordered result to the user's buffer. */
dqg_status dqg_conv_io_begin(dqg_conv_io *io, void *user_src, void *user_dst, void *scratch,
                             void *pad, void **src, void **dst, const char *what);
dqg_status dqg_conv_io_end(dqg_conv_io *io, void *dst, void *user_dst, void *pad, const char *what);
/* The scratchpad its reorders need (run one at a time, sharing `pad`). */
size_t dqg_conv_io_scratchpad(const dqg_conv_io *io);
void dqg_conv_io_destroy(dqg_conv_io *io);

#endif
