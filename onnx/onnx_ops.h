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

/* Builds the node's MaxPool (max) or AveragePool on float x from its
 * attributes (auto_pad, pads, strides, dilations, ceil_mode,
 * count_include_pad, kernel_shape), which the caller has checked by name. */
dqg_status onnx_build_pool(onnx_import *c, bool max, dqg_tensor_id x, dqg_tensor_id *out);

/* Softmax (log: LogSoftmax) of x along `axis`; `flatten` gives the
 * opset-1..12 meaning (the dimensions from axis on as one row). */
dqg_status onnx_build_softmax(onnx_import *c, dqg_tensor_id x, int64_t axis, bool flatten, bool log,
                              dqg_tensor_id *out);

/* Einsum (onnx/ops_einsum.c). */
dqg_status onnx_import_einsum(onnx_import *c);

#endif /* DQG_ONNX_OPS_H */
