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
/* An element-wise op applied to a row before its softmax: the scale and
 * the mask of attention scores (x / sqrt(d) + mask), moved out of the
 * matmul that made them. The operand holds one value (row_step = col_step
 * = 0), one value per column shared by every row (row_step 0, col_step 1)
 * or one per element (row_step n, col_step 1); with row_period P > 0, row
 * r reads the operand's row r % P (a causal mask [S, S] over the scores
 * of every head, [heads, S, S]). */
typedef enum dqg_softmax_pre_kind {
    DQG_SOFTMAX_PRE_ADD,
    DQG_SOFTMAX_PRE_MUL,
    DQG_SOFTMAX_PRE_DIV, /* x / operand */
} dqg_softmax_pre_kind;

#define DQG_SOFTMAX_MAX_PRE 8

typedef struct dqg_softmax_pre {
    dqg_softmax_pre_kind kind;
    const float *operand;
    int64_t row_step, col_step;
    int64_t row_period; /* 0: none */
} dqg_softmax_pre;

/* Applies pre[0..n_pre) in order to rows x[r][0..n), r < rows, in place,
 * each op rounded to f32 as the separate ops would (rows split between
 * threads). */
void dqg_softmax_pre_apply(float *x, int64_t rows, int64_t n, const dqg_softmax_pre *pre,
                           int n_pre);
/* In place: y[r] = softmax (or log-softmax) of pre[n_pre-1](...pre[0](y[r]))
 * for r < rows, n_pre <= DQG_SOFTMAX_MAX_PRE, on dqgraph's own kernel
 * (dqg_softmax_own_available()). A row holding a NaN or an infinity after the pre-ops takes the
 * reference's formula. */
void dqg_softmax_rows_pre(float *y, int64_t rows, int64_t n, const dqg_softmax_pre *pre, int n_pre,
                          bool log);
/* After oneDNN's softmax (which gives 0 where the reference gives NaN):
 * rewrites with the reference's formula every row of x[outer][n][inner]
 * (f32, bf16 or f16) along n that holds a NaN or an infinity. x and y must
 * not overlap. */
void dqg_softmax_special_rows(dqg_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                              int64_t inner, bool log);

#endif
