/* ONNX DynamicQuantizeLinear's parameters from a range (internal), shared
 * by the reference op and the runtime's kernel so both refuse the same
 * inputs with the same message. */
#ifndef DQG_GRAPH_OPS_DYNAMIC_QUANTIZE_H
#define DQG_GRAPH_OPS_DYNAMIC_QUANTIZE_H

#include "dqgraph.h"

/* From lo = min(0, min(x)) and hi = max(0, max(x)) (NaN when x holds a
 * NaN): y_scale = (hi == lo ? 1 : hi - lo) / 255 and y_zero_point =
 * saturate(round_half_even(-lo / y_scale)), in float32. A NaN range, or a
 * scale that is not finite, is refused naming the op and the first NaN of
 * x[0..n). */
dqg_status dqg_dynamic_quantize_range(const char *op_name, const float *x, int64_t n, float lo,
                                      float hi, float *scale, uint8_t *zero_point);

#endif
