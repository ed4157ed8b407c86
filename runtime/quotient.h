/* x / s as the IEEE division rounds it, without a division instruction
 * (internal; shared by the quantize kernels). With r = RN(1 / s), q =
 * RN(x r) is within an ulp of x / s, so the remainder x - q s is exact (one
 * FMA) and RN(q + (x - q s) r) is RN(x / s) -- Markstein's correction --
 * for every x whose quotient is not tiny. Three FMA-unit operations where
 * a vector division issues once in ten or more cycles. Kept to scales for
 * which neither r nor the remainders of quotients from 0.5 up can leave the
 * normal range; a quotient under 0.5 rounds to 0 in a quantization either
 * way. */
#ifndef DQG_RUNTIME_QUOTIENT_H
#define DQG_RUNTIME_QUOTIENT_H

#include <immintrin.h>
#include <stdbool.h>

/* Whether s allows the correction (see above). */
static inline bool dqg_quotient_safe(float s)
{
    return s >= 0x1p-60f && s <= 0x1p60f;
}

/* RN(x / s) for r = RN(1 / s), s with dqg_quotient_safe; the quotients of
 * infinities, and those that overflow, as x r gives them (the sign of the
 * division's). */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline __m512
dqg_quotient512(__m512 x, __m512 s, __m512 r)
{
    __m512 q = _mm512_mul_ps(x, r);
    __m512 c = _mm512_fmadd_ps(_mm512_fnmadd_ps(q, s, x), r, q);
    /* 0x18: +inf or -inf */
    return _mm512_mask_mov_ps(c, _mm512_fpclass_ps_mask(q, 0x18), q);
}

__attribute__((target("avx2,fma"), always_inline)) static inline __m256
dqg_quotient256(__m256 x, __m256 s, __m256 r)
{
    __m256 q = _mm256_mul_ps(x, r);
    __m256 c = _mm256_fmadd_ps(_mm256_fnmadd_ps(q, s, x), r, q);
    __m256 inf = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), q),
                               _mm256_set1_ps(__builtin_inff()), _CMP_EQ_OQ);
    return _mm256_blendv_ps(c, q, inf);
}

#endif
