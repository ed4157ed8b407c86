/* dqgraph's own small-M int8 MatMul (internal): u8/s8 activations times s8
 * weights (zero point already folded in) with integer accumulation (VNNI
 * vpdpbusd where present), per-channel output scales, the source zero point
 * compensated with per-column weight sums computed once, the epilogue
 * applied in f32, and an optional quantized u8/s8 destination. Weights are
 * packed once at creation into the layout the kernel streams; work is
 * split over N between threads. It is the kernel for M from 1 to a few
 * rows, where oneDNN 2.6's brgemm does not reach the memory-bandwidth limit.
 *
 * y[m, n] = epilogue(src_scale * w_scale[n] * sum_k (x[m, k] - src_zp) * w[k, n])
 * and, for a u8/s8 destination, saturate(rne(y / dst_scale) + dst_zp),
 * computed as oneDNN does (the 1/dst_scale folded into the output scales
 * and every additive term of the epilogue scaled to match). */
#ifndef DQG_RUNTIME_QGEMV_H
#define DQG_RUNTIME_QGEMV_H

#include "graph/graph_internal.h"
#include "runtime/epilogue.h"

typedef struct dqg_qgemv_desc {
    int64_t M, K, N;
    dqg_dtype src_dtype; /* u8 or s8 */
    /* Row-major s8 [K, N], or [N, K] when nk. */
    const int8_t *w;
    bool nk;
    int64_t n_w_scales; /* 1 or N */
    const float *w_scales;
    /* Source scale and zero point: constants here, or given to each run. */
    bool src_scale_runtime, src_zp_runtime;
    float src_scale;
    int32_t src_zp;
    const dqg_epilogue *epi; /* may be NULL; copied */
    dqg_dtype dst_dtype;     /* f32, u8 or s8 */
    float dst_scale;         /* u8/s8 destination */
    int32_t dst_zp;
} dqg_qgemv_desc;

typedef struct dqg_qgemv dqg_qgemv;

/* DQG_UNSUPPORTED (with the reason) when the CPU or the case is not
 * covered; the caller then uses oneDNN. */
dqg_status dqg_qgemv_create(const dqg_qgemv_desc *d, dqg_qgemv **out);
/* x: [M, K] u8/s8, y: [M, N] of dst_dtype. src_scale/src_zp are read when
 * the desc says they are run-time. scratch: dqg_qgemv_scratch_size bytes.
 * Thread-safe for distinct scratch and outputs. */
dqg_status dqg_qgemv_run(const dqg_qgemv *k, const void *x, void *y, float src_scale,
                         int32_t src_zp, void *scratch, const void *const *rt);
size_t dqg_qgemv_scratch_size(const dqg_qgemv *k);
size_t dqg_qgemv_weight_bytes(const dqg_qgemv *k);
const char *dqg_qgemv_impl_name(const dqg_qgemv *k);
void dqg_qgemv_destroy(dqg_qgemv *k);

/* Whether the own kernel is expected to beat oneDNN for this shape on this
 * CPU (a compile-time decision, measured by bench/bench_qgemv). */
bool dqg_qgemv_preferred(int64_t M, int64_t K, int64_t N);

#endif
