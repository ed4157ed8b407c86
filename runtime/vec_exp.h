/* e^d for d <= 0 on sixteen f32 lanes (internal), shared by the own
 * kernels that need an exponential (the softmax today). */
#ifndef DQG_RUNTIME_VEC_EXP_H
#define DQG_RUNTIME_VEC_EXP_H

#include <immintrin.h>

/* e^d for d <= 0 in the lanes of `live` (0 elsewhere): d = n ln2 + r with
 * |r| <= ln2 / 2, e^r by its Taylor polynomial of degree 6 (truncation
 * below 1.2e-7 relative), scaled by 2^n with vscalefps, which rounds
 * results below FLT_MIN to denormals as expf does: within 3 ulp of e^d over
 * [-87, 0]. Lanes with d < -104 must be left out of `live` by the caller
 * (e^-104 is under half the smallest denormal): a scalef whose result
 * underflows takes a microcode assist of a hundred cycles or more on Intel
 * cores. d is clamped at -110, so -inf gives no NaN. */
__attribute__((target("avx512f"))) static inline __m512 dqg_exp_nonpositive_mask(__m512 d,
                                                                                 __mmask16 live)
{
    d = _mm512_max_ps(d, _mm512_set1_ps(-110.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(d, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* ln 2 in two parts: n * hi is exact for |n| < 2^9. */
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), d);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(live, p, n);
}

/* The same for every lane, 0 below -104. */
__attribute__((target("avx512f"))) static inline __m512 dqg_exp_nonpositive(__m512 d)
{
    return dqg_exp_nonpositive_mask(d, _mm512_cmp_ps_mask(d, _mm512_set1_ps(-104.0f), _CMP_GE_OQ));
}

#endif
