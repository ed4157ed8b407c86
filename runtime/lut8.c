/* The byte tables of lut8.h. */
#include "runtime/lut8.h"

#include <immintrin.h>

#include "runtime/cpu_isa.h"

bool dqg_lut8_vbmi(void)
{
    __builtin_cpu_init();
    return dqg_cpu_has(DQG_ISA_AVX512) && __builtin_cpu_supports("avx512vbmi");
}

static void lookup(const uint8_t *t, const uint8_t *x, uint8_t *y, size_t n)
{
    for (size_t b = 0; b < n; b++)
        y[b] = t[x[b]];
}

/* 64 bytes at a time: vpermi2b looks up the low 7 bits in one half of the
 * table, the top bit picks the half. The last (or only) piece of fewer than
 * 64 bytes goes through masked loads and stores (DenseNet's concat inputs
 * are 32 channels each). */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void
lookup_vbmi(const uint8_t *t, const uint8_t *x, uint8_t *y, size_t n)
{
    __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
    __m512i t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
    for (size_t b = 0; b < n; b += 64) {
        __mmask64 m = n - b >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - b)) - 1;
        __m512i i = _mm512_maskz_loadu_epi8(m, x + b);
        __m512i lo = _mm512_permutex2var_epi8(t0, i, t1), hi = _mm512_permutex2var_epi8(t2, i, t3);
        _mm512_mask_storeu_epi8(y + b, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(i), lo, hi));
    }
}

void dqg_lut8(const uint8_t *t, const uint8_t *x, uint8_t *y, size_t n, bool vbmi)
{
    if (vbmi)
        lookup_vbmi(t, x, y, n);
    else
        lookup(t, x, y, n);
}
