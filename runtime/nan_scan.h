/* Finding NaN and infinity in float data fast (internal): the kernels that
 * run on oneDNN but must propagate NaN as the reference does look for one
 * first and repair their output only when they find it. */
#ifndef DQG_RUNTIME_NAN_SCAN_H
#define DQG_RUNTIME_NAN_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "dqgraph.h"

/* Whether any of the n values (f32, bf16 or f16) is a NaN or, with
 * `or_inf`, an infinity. AVX-512 where the CPU has it, else plain C. */
bool dqg_has_nonfinite(dqg_dtype dt, const void *x, int64_t n, bool or_inf);

#endif
