/* The element-wise epilogue of dqgraph's own matmul kernels (internal): the
 * bias and element-wise ops that follow a MatMul inside one partition,
 * applied to a strip of an output row while it is still in registers or L1.
 * It mirrors the post-ops the oneDNN kernels take, so one partition
 * description can feed either kind of kernel. All arithmetic is float32, op
 * by op in order, as the reference interpreter computes it. */
#ifndef DQG_RUNTIME_EPILOGUE_H
#define DQG_RUNTIME_EPILOGUE_H

#include <stdint.h>

#include "dqgraph.h"

#define DQG_EPI_MAX 8

typedef enum dqg_epi_kind {
    DQG_EPI_ADD = 0,  /* y = y + b */
    DQG_EPI_MUL,      /* y = y * b */
    DQG_EPI_RELU,     /* y = max(y, 0) */
    DQG_EPI_CLIP,     /* y = min(max(y, alpha), beta) */
    DQG_EPI_GELU_ERF, /* y = 0.5 y (1 + erf(y / sqrt 2)) */
    DQG_EPI_GELU_TANH,
    DQG_EPI_SIGMOID, /* y = 1 / (1 + exp(-y)) */
    DQG_EPI_SWISH,   /* y = y * sigmoid(alpha * y) */
    DQG_EPI_TANH,
    DQG_EPI_DIV,        /* y = y / b */
    DQG_EPI_HARD_SWISH, /* y = y max(0, min(1, y / 6 + 1 / 2)) */
} dqg_epi_kind;

/* Shape of the operand b of ADD, MUL and DIV, relative to the [M, N] output. */
typedef enum dqg_epi_shape {
    DQG_EPI_SCALAR = 0, /* one value */
    DQG_EPI_PER_N,      /* one value per output column (channel) */
    DQG_EPI_FULL,       /* a run-time f32 [M, N] tensor, row-major */
} dqg_epi_shape;

typedef struct dqg_epi_op {
    dqg_epi_kind kind;
    float alpha, beta;
    dqg_epi_shape shape;
    /* Constant operand: 1 (SCALAR) or N (PER_N) floats, owned by the
     * epilogue once copied with dqg_epilogue_copy. NULL when the operand
     * arrives at run time. */
    float *values;
    /* Run-time operand (values == NULL): index into the `rt` array given to
     * dqg_epilogue_apply; a SCALAR run-time operand is one f32, a FULL one
     * an f32 [M, N] tensor. */
    int rt_arg;
} dqg_epi_op;

typedef struct dqg_epilogue {
    int n;
    dqg_epi_op ops[DQG_EPI_MAX];
} dqg_epilogue;

/* Deep copy (constant operands duplicated; N values for PER_N). */
dqg_status dqg_epilogue_copy(dqg_epilogue *dst, const dqg_epilogue *src, int64_t N);
void dqg_epilogue_free(dqg_epilogue *e);

/* Applies the epilogue to y[0..n), which holds row m, columns n0..n0+n-1
 * of an [M, N] output. rt holds the run-time operands (may be NULL when
 * there are none). */
void dqg_epilogue_apply(const dqg_epilogue *e, float *y, int64_t m, int64_t n0, int64_t n,
                        int64_t N, const void *const *rt);

#endif
