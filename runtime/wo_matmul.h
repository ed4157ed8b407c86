/* Weight-only low-bit MatMul (internal): y[M, N] = x[M, K] . W[K, N], where
 * W is a constant quantized matrix (4-, 8- or 16-bit integers, float8,
 * float4) with its scales and zero points, dequantized inside the kernel.
 * The weights stay at their stored width: they are repacked once, at
 * creation, into the layout the kernel streams, never expanded to f32.
 *
 * Modes:
 * - EXACT: decode to f32 in registers and accumulate in f32 (small M), or
 *   decode panel by panel into f32 and run oneDNN's f32 matmul (large M).
 *   Within 1e-5 of the reference relative to the output's largest magnitude.
 * - BF16: weights decoded panel by panel into bf16, activations rounded to
 *   bf16, oneDNN's bf16 matmul (AMX or AVX512_BF16 where present). Opt-in.
 * - INT8: activations quantized per row and K-block to s8/u8 at run time,
 *   integer dot products (VNNI/AMX). Opt-in; approximate. */
#ifndef DQG_RUNTIME_WO_MATMUL_H
#define DQG_RUNTIME_WO_MATMUL_H

#include "graph/graph_internal.h"
#include "runtime/epilogue.h"

typedef enum dqg_wo_mode {
    DQG_WO_EXACT = 0,
    DQG_WO_BF16,
    DQG_WO_INT8,
} dqg_wo_mode;

typedef struct dqg_wo_desc {
    int64_t K, N;
    /* The weights in dqgraph's storage (4-bit types packed two per byte,
     * low nibble first) as a row-major [K, N] matrix, or [N, K] when nk. */
    dqg_dtype w_dtype;
    const void *w;
    bool nk;
    /* Scale (and zero point) of element (k, n): index
     *   (k / block_k) * stride_k + (n / block_n) * stride_n
     * into scale[] (zp[]). Per tensor: block_k = K, block_n = N. Per output
     * channel: block_k = K, block_n = 1. Blocked along K (DequantizeLinear-21
     * with the block axis on K): block_k = B, block_n = 1. Per input row:
     * block_k = 1, block_n = N. */
    int64_t block_k, block_n, stride_k, stride_n;
    dqg_dtype scale_dtype; /* f32, f16, bf16 */
    const void *scale;
    dqg_dtype zp_dtype; /* DQG_DTYPE_UNDEF: no zero point */
    const void *zp;
    /* Activations and output: f32, f16 or bf16 (both of this type). */
    dqg_dtype act_dtype;
    dqg_wo_mode mode;
    /* Bias and element-wise ops after the MatMul (may be NULL; copied). */
    const dqg_epilogue *epi;
    /* Rows of x the kernel will be run with (static shapes); the kernel may
     * pick its strategy from it. */
    int64_t M;
} dqg_wo_desc;

typedef struct dqg_wo_kernel dqg_wo_kernel;

/* Checks the description (DQG_UNSUPPORTED with the reason for a case the
 * kernel does not take) and packs the weights. The desc's pointers are not
 * retained. */
dqg_status dqg_wo_create(const dqg_wo_desc *d, dqg_wo_kernel **out);
/* x: [M, K] of act_dtype, y: [M, N] of act_dtype, both row-major; scratch:
 * dqg_wo_scratch_size bytes, 64-byte aligned; rt: the epilogue's run-time
 * operands. Safe to call from several threads at once with distinct
 * scratch and outputs. */
dqg_status dqg_wo_run(const dqg_wo_kernel *k, const void *x, void *y, void *scratch,
                      const void *const *rt);
size_t dqg_wo_scratch_size(const dqg_wo_kernel *k);
/* Bytes the kernel keeps for the weights, scales and zero points. */
size_t dqg_wo_weight_bytes(const dqg_wo_kernel *k);
/* e.g. "wo:avx512:s4:k-block32:exact"; names the path, weights and mode. */
const char *dqg_wo_impl_name(const dqg_wo_kernel *k);
void dqg_wo_destroy(dqg_wo_kernel *k);

#endif
