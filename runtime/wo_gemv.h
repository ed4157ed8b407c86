/* dqgraph's own weight-only kernel for small M (internal): f32 activations
 * times constant 4-, 8- or 16-bit integer or float weights kept at their
 * width, with per-tensor, per-channel or K-blocked scales and optional zero
 * points, and the partition's epilogue. See wo_gemv.c. */
#ifndef DQG_RUNTIME_WO_GEMV_H
#define DQG_RUNTIME_WO_GEMV_H

#include "runtime/epilogue.h"
#include "runtime/weights.h"

typedef struct dqg_wo_gemv dqg_wo_gemv;

/* Rows up to which the kernel decodes weights in registers (bound by the
 * bytes of weights it reads); above them, on AVX2 and AVX-512, it decodes
 * chunks of weights to f32 for many rows (bound by arithmetic). */
#define DQG_WO_GEMV_MAX_M 16

/* Packs the weights for x of M rows (M = 1 may pick a copy of its own);
 * DQG_UNSUPPORTED (naming the reason) for weights or a CPU it does not
 * take. `w` is not retained. */
dqg_status dqg_wo_gemv_create(const dqg_weights *w, int64_t M, dqg_wo_gemv **out, const char *what);
/* y[M, N] = epilogue(x[M, K] . W); scratch: dqg_wo_gemv_scratch(g, M)
 * bytes, 64-byte aligned. Thread-safe for distinct scratch and outputs. */
dqg_status dqg_wo_gemv_run(const dqg_wo_gemv *g, int64_t M, const float *x, float *y, void *scratch,
                           const dqg_epilogue *e, const void *const *rt);
size_t dqg_wo_gemv_scratch(const dqg_wo_gemv *g, int64_t M);
/* Bytes of packed weights, scales and zero-point terms. */
size_t dqg_wo_gemv_bytes(const dqg_wo_gemv *g);
/* The instruction set of the copy that runs ("avx512_bf16", "avx512",
 * "avx2", "scalar"). */
const char *dqg_wo_gemv_isa(const dqg_wo_gemv *g);
/* Whether the copy for many rows runs (weights decoded to f32 a chunk at
 * a time, then multiplied by blocks of rows). */
bool dqg_wo_gemv_gemm(const dqg_wo_gemv *g);
void dqg_wo_gemv_destroy(dqg_wo_gemv *g);

#endif
