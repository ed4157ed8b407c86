/* Shared between the operator importers (internal to onnx/). */
#ifndef DQG_ONNX_OPS_H
#define DQG_ONNX_OPS_H

#include "onnx/onnx_import.h"

/* Attributes of Conv, ConvInteger and QLinearConv (NULL-terminated). */
extern const char *const onnx_conv_attr_names[];

/* Builds the node's convolution from its attributes (auto_pad, pads,
 * strides, dilations, group, kernel_shape) on float tensors x [N, C, X...]
 * and w [M, C/group, K...]; bias may be DQG_NONE. */
dqg_status onnx_build_conv(onnx_import *c, dqg_tensor_id x, dqg_tensor_id w, dqg_tensor_id bias,
                           dqg_tensor_id *out);

#endif /* DQG_ONNX_OPS_H */
