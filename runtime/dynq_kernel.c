/* dqgraph's DynamicQuantizeLinear kernel: a min/max pass, then a quantize
 * pass, both split between threads, each compiled for AVX-512, AVX2 and
 * plain C (chosen by dqg_cpu_isa()). Bit-identical to the reference: the
 * range and the parameters go through the same function
 * (dqg_dynamic_quantize_range), x / scale is the IEEE division's quotient
 * in every path (the vector ones compute it without dividing:
 * runtime/quotient.h), and the vector roundings are round-half-to-even like the
 * reference's. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>

#include "graph/dtype.h"
#include "graph/ops/dynamic_quantize.h"
#include "runtime/cpu_isa.h"
#include "runtime/dynq_kernel.h"
#include "runtime/quotient.h"

#define PARALLEL_MIN (64 * 1024)

/* ---- The range: min(0, min x), max(0, max x), NaN if any --------------- */

static void range_c(const float *x, int64_t n, float *lo, float *hi, bool *nan)
{
    float l = 0.0f, h = 0.0f;
    bool bad = false;
    for (int64_t i = 0; i < n; i++) {
        bad |= isnan(x[i]);
        l = x[i] < l ? x[i] : l;
        h = x[i] > h ? x[i] : h;
    }
    *lo = l;
    *hi = h;
    *nan = bad;
}

__attribute__((target("avx2,fma"))) static void range_avx2(const float *x, int64_t n, float *lo,
                                                           float *hi, bool *nan)
{
    __m256 l = _mm256_setzero_ps(), h = _mm256_setzero_ps(), u = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        u = _mm256_or_ps(u, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        l = _mm256_min_ps(l, v);
        h = _mm256_max_ps(h, v);
    }
    float lv[8], hv[8];
    _mm256_storeu_ps(lv, l);
    _mm256_storeu_ps(hv, h);
    float tl, th;
    bool tn;
    range_c(x + i, n - i, &tl, &th, &tn);
    for (int k = 0; k < 8; k++) {
        tl = lv[k] < tl ? lv[k] : tl;
        th = hv[k] > th ? hv[k] : th;
    }
    *lo = tl;
    *hi = th;
    *nan = tn || _mm256_movemask_ps(u) != 0;
}

/* Four independent minimum and maximum chains: one chain waits out the
 * latency of vminps (4 cycles) per vector, four keep up with the loads. */
__attribute__((target("avx512f"))) static void range_avx512(const float *x, int64_t n, float *lo,
                                                            float *hi, bool *nan)
{
    __m512 l = _mm512_setzero_ps(), h = _mm512_setzero_ps();
    __mmask16 u = 0;
    int64_t i = 0;
    if (n >= 64) {
        __m512 l1 = l, l2 = l, l3 = l, h1 = h, h2 = h, h3 = h;
        for (; i + 64 <= n; i += 64) {
            __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
            __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
            u |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, d, _CMP_UNORD_Q);
            l = _mm512_min_ps(l, a);
            l1 = _mm512_min_ps(l1, b);
            l2 = _mm512_min_ps(l2, c);
            l3 = _mm512_min_ps(l3, d);
            h = _mm512_max_ps(h, a);
            h1 = _mm512_max_ps(h1, b);
            h2 = _mm512_max_ps(h2, c);
            h3 = _mm512_max_ps(h3, d);
        }
        l = _mm512_min_ps(_mm512_min_ps(l, l1), _mm512_min_ps(l2, l3));
        h = _mm512_max_ps(_mm512_max_ps(h, h1), _mm512_max_ps(h2, h3));
    }
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        u |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        l = _mm512_min_ps(l, v);
        h = _mm512_max_ps(h, v);
    }
    if (i < n) {
        /* Masked-off lanes read as 0, which the range holds anyway. */
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        u |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
        l = _mm512_min_ps(l, v);
        h = _mm512_max_ps(h, v);
    }
    *lo = _mm512_reduce_min_ps(l);
    *hi = _mm512_reduce_max_ps(h);
    *nan = u != 0;
}

/* ---- Quantize: saturate(rne(x / scale) + zp) ----------------------------- */

static void quantize_c(const float *x, int64_t n, uint8_t *y, float s, float z)
{
    for (int64_t i = 0; i < n; i++) {
        float q = dqg_rne_f(x[i] / s) + z;
        y[i] = q <= 0.0f ? 0 : q >= 255.0f ? 255 : (uint8_t)q;
    }
}

__attribute__((target("avx2,fma"))) static void quantize_avx2(const float *x, int64_t n, uint8_t *y,
                                                              float s, float z)
{
    __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(z), zero = _mm256_setzero_ps(),
           top = _mm256_set1_ps(255.0f), vr = _mm256_set1_ps(1.0f / s);
    bool fast = dqg_quotient_safe(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 d = fast ? dqg_quotient256(v, vs, vr) : _mm256_div_ps(v, vs);
        __m256 q = _mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(q, vz), zero), top);
        __m256i w = _mm256_cvtps_epi32(q);
        __m128i p = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storel_epi64((__m128i *)(y + i), _mm_packus_epi16(p, p));
    }
    quantize_c(x + i, n - i, y + i, s, z);
}

__attribute__((target("avx512f,avx512dq"))) static void
quantize_avx512(const float *x, int64_t n, uint8_t *y, float s, float z)
{
    __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(z), zero = _mm512_setzero_ps(),
           top = _mm512_set1_ps(255.0f), vr = _mm512_set1_ps(1.0f / s);
    bool fast = dqg_quotient_safe(s);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __m512 d = fast ? dqg_quotient512(v, vs, vr) : _mm512_div_ps(v, vs);
        __m512 q = _mm512_roundscale_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(q, vz), zero), top);
        /* vpmovusdb to memory under a mask is slow on some cores: full
         * vectors are packed in a register and stored plainly. */
        if (m == 0xFFFF)
            _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(q)));
        else
            _mm512_mask_cvtusepi32_storeu_epi8(y + i, m, _mm512_cvtps_epi32(q));
    }
}

dqg_status dqg_dynq_run(const float *x, int64_t n, uint8_t *y, float *y_scale,
                        uint8_t *y_zero_point, const char *op_name)
{
    dqg_isa isa = dqg_cpu_isa();
    void (*range)(const float *, int64_t, float *, float *, bool *) =
        isa >= DQG_ISA_AVX512 ? range_avx512
        : isa >= DQG_ISA_AVX2 ? range_avx2
                              : range_c;
    void (*quantize)(const float *, int64_t, uint8_t *, float, float) =
        isa >= DQG_ISA_AVX512 ? quantize_avx512
        : isa >= DQG_ISA_AVX2 ? quantize_avx2
                              : quantize_c;
    int threads = n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
    float lo = 0.0f, hi = 0.0f;
    bool nan = false;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t chunk = (n + nt - 1) / nt, first = t * chunk;
        int64_t len = first >= n ? 0 : first + chunk <= n ? chunk : n - first;
        float l = 0.0f, h = 0.0f;
        bool b = false;
        if (len > 0)
            range(x + first, len, &l, &h, &b);
#pragma omp critical
        {
            lo = l < lo ? l : lo;
            hi = h > hi ? h : hi;
            nan |= b;
        }
    }
    float scale;
    uint8_t zp;
    dqg_status st =
        dqg_dynamic_quantize_range(op_name, x, n, nan ? NAN : lo, nan ? NAN : hi, &scale, &zp);
    if (st != DQG_OK)
        return st;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < threads; c++) {
        int64_t chunk = ((n + threads - 1) / threads + 63) & ~(int64_t)63, first = c * chunk;
        if (first < n)
            quantize(x + first, first + chunk <= n ? chunk : n - first, y + first, scale,
                     (float)zp);
    }
    *y_scale = scale;
    *y_zero_point = zp;
    return DQG_OK;
}
