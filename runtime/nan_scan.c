/* NaN and infinity scans (runtime/nan_scan.h). */
#include <immintrin.h>
#include <omp.h>

#include "runtime/cpu_isa.h"
#include "runtime/nan_scan.h"

/* A value's bits past its sign, against the exponent's all-ones pattern:
 * above it is NaN, equal to it an infinity. */
static bool scan_c(const void *x, int64_t n, bool wide, uint32_t inf, bool or_inf)
{
    uint32_t lim = or_inf ? inf - 1 : inf, bad = 0;
    if (wide) {
        const uint32_t *u = x;
        for (int64_t i = 0; i < n; i++)
            bad |= (u[i] & 0x7fffffffu) > lim;
    } else {
        const uint16_t *h = x;
        for (int64_t i = 0; i < n; i++)
            bad |= (uint32_t)(h[i] & 0x7fffu) > lim;
    }
    return bad != 0;
}

__attribute__((target("avx512f,avx512bw"))) static bool
scan_avx512(const void *x, int64_t n, bool wide, uint32_t inf, bool or_inf)
{
    uint32_t lim = or_inf ? inf - 1 : inf;
    int64_t per = wide ? 16 : 32, i = 0;
    __mmask64 bad = 0;
    if (wide) {
        const __m512i m = _mm512_set1_epi32(0x7fffffff), l = _mm512_set1_epi32((int)lim);
        for (; i + per <= n; i += per)
            bad |= _mm512_cmpgt_epu32_mask(
                _mm512_and_si512(_mm512_loadu_si512((const uint32_t *)x + i), m), l);
    } else {
        const __m512i m = _mm512_set1_epi16(0x7fff), l = _mm512_set1_epi16((short)lim);
        for (; i + per <= n; i += per)
            bad |= _mm512_cmpgt_epu16_mask(
                _mm512_and_si512(_mm512_loadu_si512((const uint16_t *)x + i), m), l);
    }
    return bad != 0 || scan_c((const char *)x + i * (wide ? 4 : 2), n - i, wide, inf, or_inf);
}

/* Below this many values one thread scans. */
#define PARALLEL_MIN (256 * 1024)

bool dqg_has_nonfinite(dqg_dtype dt, const void *x, int64_t n, bool or_inf)
{
    bool wide = dt == DQG_F32;
    uint32_t inf = wide ? 0x7f800000u : dt == DQG_BF16 ? 0x7f80u : 0x7c00u;
    bool (*scan)(const void *, int64_t, bool, uint32_t, bool) =
        dqg_cpu_has(DQG_ISA_AVX512) ? scan_avx512 : scan_c;
    if (n < PARALLEL_MIN)
        return scan(x, n, wide, inf, or_inf);
    int found = 0;
    size_t es = wide ? 4 : 2;
#pragma omp parallel reduction(| : found)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t per = (n + nt - 1) / nt, first = t * per;
        int64_t len = first >= n ? 0 : first + per <= n ? per : n - first;
        if (len > 0)
            found |= scan((const char *)x + (size_t)first * es, len, wide, inf, or_inf);
    }
    return found != 0;
}
