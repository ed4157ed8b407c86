/* dqgraph's own softmax over contiguous f32 rows (runtime/softmax_kernel.h). */
#include <immintrin.h>
#include <math.h>
#include <omp.h>

#include "graph/dtype.h"
#include "runtime/cpu_isa.h"
#include "runtime/nan_scan.h"
#include "runtime/softmax_kernel.h"

/* Below this many elements the rows run on one thread. */
#define PARALLEL_MIN (32 * 1024)

bool dqg_softmax_own_available(void)
{
    return dqg_cpu_has(DQG_ISA_AVX512);
}

/* The reference's formula (graph/ops/softmax.c) along one row of n
 * elements `inner` apart from element `base`, through the reference's own
 * loads and stores, for rows that hold a NaN or an infinity: the maximum
 * propagates NaN, the sum runs in double. */
static void row_reference(dqg_dtype dt, const void *x, void *y, int64_t base, int64_t n,
                          int64_t inner, bool log_softmax)
{
    float m = -INFINITY;
    for (int64_t k = 0; k < n; k++) {
        float f = dqg_load_float(dt, x, base + k * inner);
        if (f > m || isnan(f))
            m = isnan(m) ? m : f;
    }
    double sum = 0.0;
    for (int64_t k = 0; k < n; k++)
        sum += exp((double)dqg_load_float(dt, x, base + k * inner) - (double)m);
    for (int64_t k = 0; k < n; k++) {
        double d = (double)dqg_load_float(dt, x, base + k * inner) - (double)m;
        dqg_store_float(dt, y, base + k * inner,
                        (float)(log_softmax ? d - log(sum) : exp(d) / sum));
    }
}

void dqg_softmax_special_rows(dqg_dtype dt, const void *x, void *y, int64_t outer, int64_t n,
                              int64_t inner, bool log_softmax)
{
    size_t es = dt == DQG_F32 ? 4 : 2;
    for (int64_t o = 0; o < outer; o++) {
        const char *xo = (const char *)x + (size_t)(o * n * inner) * es;
        if (!dqg_has_nonfinite(dt, xo, n * inner, true))
            continue;
        for (int64_t i = 0; i < inner; i++) {
            bool bad = false;
            for (int64_t k = 0; k < n && !bad; k++)
                bad = !isfinite(dqg_load_float(dt, x, o * n * inner + k * inner + i));
            if (bad)
                row_reference(dt, x, y, o * n * inner + i, n, inner, log_softmax);
        }
    }
}

/* e^d for d <= 0 (d - max of a row): d = n ln2 + r with |r| <= ln2 / 2,
 * e^r by its Taylor polynomial of degree 6 (truncation below 1.2e-7
 * relative), scaled by 2^n with vscalefps, which rounds results below
 * FLT_MIN to denormals as expf does: within 3 ulp of e^d over [-87, 0].
 * Below -110 the result is 0 (e^-104 is already under the smallest
 * denormal); clamping there also keeps -inf out of the reduction. */
__attribute__((target("avx512f"))) static inline __m512 exp_nonpositive(__m512 d)
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
    return _mm512_scalef_ps(p, n);
}

static inline __mmask16 lanes(int64_t left)
{
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

__attribute__((target("avx512f"))) static void row_avx512(const float *x, float *y, int64_t n,
                                                          bool log_softmax)
{
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    __m512 vmax = neg_inf;
    __mmask16 unordered = 0;
    for (int64_t k = 0; k < n; k += 16) {
        __m512 v = _mm512_mask_loadu_ps(neg_inf, lanes(n - k), x + k);
        unordered |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        vmax = _mm512_max_ps(vmax, v);
    }
    float m = _mm512_reduce_max_ps(vmax);
    if (unordered || isinf(m)) {
        row_reference(DQG_F32, x, y, 0, n, 1, log_softmax);
        return;
    }
    __m512 vm = _mm512_set1_ps(m), vsum = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += 16) {
        __mmask16 l = lanes(n - k);
        __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(l, x + k), vm));
        vsum = _mm512_mask_add_ps(vsum, l, vsum, e);
        if (!log_softmax)
            _mm512_mask_storeu_ps(y + k, l, e);
    }
    float sum = _mm512_reduce_add_ps(vsum);
    if (log_softmax) {
        /* (x - max) - log(sum): the sum is at least 1 (the maximum's e^0). */
        __m512 lse = _mm512_set1_ps(logf(sum));
        for (int64_t k = 0; k < n; k += 16) {
            __mmask16 l = lanes(n - k);
            __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(l, x + k), vm);
            _mm512_mask_storeu_ps(y + k, l, _mm512_sub_ps(d, lse));
        }
        return;
    }
    __m512 inv = _mm512_set1_ps(1.0f / sum);
    for (int64_t k = 0; k < n; k += 16) {
        __mmask16 l = lanes(n - k);
        _mm512_mask_storeu_ps(y + k, l, _mm512_mul_ps(_mm512_maskz_loadu_ps(l, y + k), inv));
    }
}

void dqg_softmax_rows(const float *x, float *y, int64_t rows, int64_t n, bool log_softmax)
{
    int threads = rows > 1 && rows * n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t per = rows / nt, extra = rows % nt;
        int64_t first = t * per + (t < extra ? t : extra);
        int64_t last = first + per + (t < extra ? 1 : 0);
        for (int64_t r = first; r < last; r++)
            row_avx512(x + r * n, y + r * n, n, log_softmax);
    }
}
