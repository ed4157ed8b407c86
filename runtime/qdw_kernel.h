/* dqgraph's own int8 depthwise 3x3 convolution (internal): u8/s8
 * channels-last activations, s8 weights, one output channel per input
 * channel, on AVX-512 VNNI dot products. Each dot product takes one
 * channel's three taps of a kernel column, the three input rows' bytes
 * interleaved once per input column and shared by the outputs that read
 * it; oneDNN 2.6's int8 depthwise kernels multiply one tap at a time.
 *
 * It computes what the oneDNN primitive of the same attribute computes,
 * bit for bit: the exact integer sum of (x - zp) * w, then in f32 the bias
 * (accumulator units), the output scale, the ReLU/Clip post-ops, the
 * destination zero point, saturation and rounding to nearest even. It
 * takes only attributes of that form (dqg_qdw_create says why not). */
#ifndef DQG_RUNTIME_QDW_KERNEL_H
#define DQG_RUNTIME_QDW_KERNEL_H

#include "runtime/kernel.h"
#include "runtime/onednn_qattr.h"

typedef struct dqg_qdw dqg_qdw;

/* The layer: batch n, channels c, input h x w, output oh x ow, strides,
 * padding at the top and left (the bottom and right follow from the
 * sizes). */
typedef struct dqg_qdw_shape {
    int64_t n, c, h, w, oh, ow, stride_h, stride_w, pad_t, pad_l;
} dqg_qdw_shape;

/* Plans the kernel for `s`, the folded s8 weights (c x 3 x 3, not
 * retained) and q's attribute; DQG_UNSUPPORTED (with the reason as the
 * error message) for a CPU, type or attribute it does not take. */
dqg_status dqg_qdw_create(const dqg_qdw_shape *s, dqg_dtype x_type, dqg_dtype y_type,
                          const int8_t *w, const dqg_qattr *q, dqg_qdw **out, const char *what);
/* y = conv(x), both dense channels-last. Thread-safe. */
void dqg_qdw_run(const dqg_qdw *d, const void *x, void *y);
size_t dqg_qdw_bytes(const dqg_qdw *d);
void dqg_qdw_destroy(dqg_qdw *d);

#endif
