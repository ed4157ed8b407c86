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
/* Strides, dilations (oneDNN counts from 0), left and right pads. */
void dqg_conv_params(const dqg_conv_attrs *a, dnnl_dims_t strides, dnnl_dims_t dil, dnnl_dims_t pl,
                     dnnl_dims_t pr);

/* A MatMul operand as a rank-R matrix (batch dims right-aligned, 1 where
 * absent; a 1-D operand promoted; the transpose through strides), stored as
 * dense row-major data of type `dt`. */
dqg_status dqg_matmul_operand_md(const dqg_tensor *t, bool is_a, bool transpose, int R,
                                 dnnl_data_type_t dt, dnnl_memory_desc_t *md);

#endif
