/* GELU in its erf form, y = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, in
 * place over dense f32 (internal): dqgraph's own AVX-512 pass, run after a
 * matmul whose last post-op it replaces. oneDNN 2.6's gelu_erf post-op
 * costs an int8 matmul 128x768x3072 a third of its time (0.48 -> 0.63 ms
 * on 2 threads). Over the same 128x3072 output this pass takes 0.055 ms
 * where oneDNN's eltwise primitive takes 0.125 ms; right after the matmul
 * (its result then comes from L2 or L3) it costs about 0.7 of the post-op,
 * and the BERT layer takes 0.96 of its time.
 *
 * Phi(x) = 1 - h for x >= 0 and h for x < 0, with h = erfc(|x| / sqrt 2) / 2
 * on [0, 8) from 32 polynomials of degree 5, one per quarter, which
 * interpolate h at their Chebyshev nodes (computed once, in double, from
 * libm's erfc; interpolation error under 1e-9); each lane fetches its
 * piece's coefficients with two-table permutes. GELU comes out within
 * 2e-7 |x| of its exact value (measured: 8.9e-8 |x|), for negative x too,
 * where 1 + erf(x / sqrt 2) in f32 loses every digit. h is 0 from |x| = 8
 * on, where it is under 1e-15. NaN stays NaN, GELU(inf) = inf,
 * GELU(-inf) = NaN (-inf times 0, as the reference's formula gives). */
#ifndef DQG_RUNTIME_GELU_KERNEL_H
#define DQG_RUNTIME_GELU_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

/* Whether this CPU (and the DQG_MAX_ISA cap) runs the kernel. */
bool dqg_gelu_own_available(void);
/* y[i] = GELU(y[i]) for i < n (split between threads when large). */
void dqg_gelu_erf_inplace(float *y, int64_t n);

#endif
