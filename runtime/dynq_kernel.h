/* ONNX DynamicQuantizeLinear as a kernel (internal): x f32 -> y u8 with
 * y_scale and y_zero_point computed from the data, bit-identical to the
 * reference interpreter (graph/ops/dynamic_quantize.c): min/max over the
 * whole tensor (the range always includes 0), then round half to even and
 * saturate. Multi-threaded; AVX-512, AVX2 and plain-C paths chosen by
 * dqg_cpu_isa(). Also used inside fused dynamic int8 partitions to quantize
 * the activations into the int8 kernel's source buffer. */
#ifndef DQG_RUNTIME_DYNQ_KERNEL_H
#define DQG_RUNTIME_DYNQ_KERNEL_H

#include "graph/graph_internal.h"

/* Quantizes n elements. Errors (with the reference's messages, naming
 * `op_name`) for the inputs the reference refuses. */
dqg_status dqg_dynq_run(const float *x, int64_t n, uint8_t *y, float *y_scale,
                        uint8_t *y_zero_point, const char *op_name);

#endif
