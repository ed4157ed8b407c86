/* Softmax and LogSoftmax over contiguous rows of f32 (internal): the last
 * axis, or an axis after which every dimension is 1. dqgraph's own AVX-512
 * kernel, used where oneDNN 2.6's softmax is slower: each row is read in
 * three short passes that stay in L1 (max, exponentials and their sum,
 * scale), the exponential is a degree-6 polynomial after range reduction
 * (within 3 ulp of e^x), rows are split between threads in contiguous
 * runs. A row holding a NaN or an infinity takes the reference's formula
 * element by element, so the special values come out as the reference's. */
#ifndef DQG_RUNTIME_SOFTMAX_KERNEL_H
#define DQG_RUNTIME_SOFTMAX_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "dqgraph.h"

/* Whether this CPU (and the DQG_MAX_ISA cap) runs the kernel. */
bool dqg_softmax_own_available(void);
/* y[r][k] = softmax (or log-softmax) of x[r][0..n) for r < rows. */
void dqg_softmax_rows(const float *x, float *y, int64_t rows, int64_t n, bool log);
/* After oneDNN's softmax (which gives 0 where the reference gives NaN):
 * rewrites with the reference's formula every row of x[outer][n][inner]
 * (f32, bf16 or f16) along n that holds a NaN or an infinity. x and y must
 * not overlap. */
void dqg_softmax_special_rows(dqg_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                              int64_t inner, bool log);

#endif
