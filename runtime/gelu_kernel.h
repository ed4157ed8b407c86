/* GELU in its erf form, y = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, in
 * place over dense f32 (internal): dqgraph's own AVX-512 pass, run after a
 * matmul whose last post-op it replaces. oneDNN 2.6's gelu_erf post-op
 * costs an int8 matmul 128x768x3072 a third of its time (0.48 -> 0.63 ms
 * on 2 threads); this pass takes a fifth of that over the same output.
 *
 * Phi(x) = 1 - h for x >= 0 and h for x < 0, with h = erfc(|x| / sqrt 2) / 2
 * from Abramowitz and Stegun's 7.1.26 (the approximation oneDNN's gelu_erf
 * uses: erfc within 1.5e-7 absolute), so GELU is within 1e-7 |x| + 2 ulp
 * of its exact value, for negative x too, where 1 + erf(x / sqrt 2) in f32
 * loses every digit. h is 0 for |x| > 9 sqrt 2, where it is under 1e-36.
 * NaN stays NaN, GELU(inf) = inf, GELU(-inf) = NaN (-inf times 0, as the
 * reference's formula gives). */
#ifndef DQG_RUNTIME_GELU_KERNEL_H
#define DQG_RUNTIME_GELU_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

/* Whether this CPU (and the DQG_MAX_ISA cap) runs the kernel. */
bool dqg_gelu_own_available(void);
/* y[i] = GELU(y[i]) for i < n (split between threads when large). */
void dqg_gelu_erf_inplace(float *y, int64_t n);

#endif
