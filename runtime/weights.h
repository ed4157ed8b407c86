/* The constant weights of a fused MatMul partition as the kernel sees them
 * (internal): the quantized matrix behind the partition's weight
 * dequantize and its Transpose/Reshape ops, as a K x N matrix stored
 * row-major as [K, N] or [N, K], with the scale and zero point of every
 * element. A 2-D transpose only flips the storage flag and a reshape only
 * renames dimensions, so no data is copied; other layouts are applied to
 * the quantized constant once (per-tensor and per-axis scales only). */
#ifndef DQG_RUNTIME_WEIGHTS_H
#define DQG_RUNTIME_WEIGHTS_H

#include "runtime/kernel.h"

typedef struct dqg_weights {
    dqg_dtype dtype;
    int64_t K, N;
    bool nk; /* storage is [N, K]; else [K, N] */
    const void *data;
    void *owned; /* data, when the layout had to be applied */
    const dqg_tensor *scale, *zp;
    /* Scale (and zero point) of element (k, n):
     * (k / block_k) * stride_k + (n / block_n) * stride_n. */
    int64_t block_k, block_n, stride_k, stride_n;
    dqg_granularity granularity;
} dqg_weights;

/* Resolves the weights of partition p (mini graph g) for its MatMul. */
dqg_status dqg_weights_resolve(const dqg_graph *g, const dqg_partition *p, dqg_weights *w,
                               const char *what);
/* The weights of a convolution's weight dequantize: OIX [O, C/g, K...] is
 * an [N = O, K = C/g x K...] matrix stored [N, K]. */
void dqg_weights_of_conv(const dqg_graph *g, const dqg_op *wdq, dqg_weights *w);
void dqg_weights_release(dqg_weights *w);

/* The storage of a weight-only kernel's panels: `wbytes` of packed codes
 * and `sbytes` per scale table (the zero-point table only when `with_zs`),
 * zeroed and 64-byte aligned. On failure all three are NULL, nothing is
 * kept, and the error names `what`. */
dqg_status dqg_weights_panels_alloc(size_t wbytes, size_t sbytes, bool with_zs, uint8_t **codes,
                                    float **scale, float **zs, const char *what);
/* The scales of columns n0 .. n0 + nn - 1 of one panel, per K-block of
 * `block` (n_blocks of them): scale[b * width + j] = s * mult and, when zs
 * is not NULL, zs[b * width + j] = s * (zero point + offset). */
void dqg_weights_panel_scales(const dqg_weights *w, int64_t n0, int64_t nn, int64_t block,
                              int64_t n_blocks, int width, float mult, float offset, float *scale,
                              float *zs);

static inline int64_t dqg_weights_scale_index(const dqg_weights *w, int64_t k, int64_t n)
{
    return (k / w->block_k) * w->stride_k + (n / w->block_n) * w->stride_n;
}

/* Index of element (k, n) in the storage. */
static inline int64_t dqg_weights_index(const dqg_weights *w, int64_t k, int64_t n)
{
    return w->nk ? n * w->K + k : k * w->N + n;
}

/* The weights with their zero point folded in, as s8 in the same storage
 * layout. With `offset` NULL every w - zp must lie in [-128, 127]. With
 * it, w - zp may span any 256 consecutive integers (u8 weights with any
 * zero point): the result is then w - zp + *offset, and the kernel
 * multiplies it less *offset (oneDNN's weights zero point); *offset is 0
 * when the values fit as they are. DQG_UNSUPPORTED, naming the channel,
 * otherwise. */
dqg_status dqg_weights_fold_s8(const dqg_weights *w, int8_t **out, int32_t *offset,
                               const char *what);

/* For zero points no common offset brings into s8 (u8 weights with
 * per-channel zero points spread over more than 0 .. 255 - max(w - zp)):
 * the codes as s8 (u8 less 128) in the same storage layout, and per
 * output column n the integer col[n] with w - zp = folded + col[n] (128 -
 * zp or -zp). The kernel adds col[n] times the row sums of the source (less
 * its zero point) to the s8 product. Per-tensor and per-channel zero
 * points only; DQG_UNSUPPORTED otherwise. */
dqg_status dqg_weights_fold_s8_columns(const dqg_weights *w, int8_t **out, int32_t **col,
                                       const char *what);

/* Whether an int8 kernel's int32 accumulators give the true sums for
 * every source: the largest output channel's sum of |folded weight|,
 * times `src_range` (the largest |x| or |x - zp| the source holds), must
 * stay within 2^31 - 1. Integer arithmetic wraps, so a result that fits
 * is exact whatever the order of the additions; one that does not fit
 * comes out wrapped, where the graph's float arithmetic has no such
 * limit. DQG_UNSUPPORTED, naming the channel and its sum, otherwise (the
 * fused kernel is then refused and the layer runs unfused in f32). The
 * kernel's weights are folded - offset (dqg_weights_fold_s8). */
dqg_status dqg_weights_check_int32(const dqg_weights *w, const int8_t *folded, int32_t offset,
                                   int64_t src_range, const char *what);

#endif
