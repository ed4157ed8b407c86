/* dqgraph's own GELU (erf form) over dense f32 (runtime/gelu_kernel.h). */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>

#include "runtime/cpu_isa.h"
#include "runtime/gelu_kernel.h"

/* Below this many elements the pass runs on one thread. */
#define PARALLEL_MIN (32 * 1024)

/* h(u) = erfc(u / sqrt 2) / 2 on [0, 8) as 32 pieces of width 1/4, each a
 * polynomial of degree 5 in w = 4u - i - 1/2 (piece i, w in [-1/2, 1/2)):
 * coef[j][i] multiplies w^j. */
#define PIECES 32
#define DEGREE 5
static float coef[DEGREE + 1][PIECES] __attribute__((aligned(64)));
static pthread_once_t coef_once = PTHREAD_ONCE_INIT;

static double h_exact(double u)
{
    return 0.5 * erfc(u / sqrt(2.0));
}

/* Each piece interpolates h at the Chebyshev nodes of its interval
 * (Vandermonde system solved in double): the interpolation error is under
 * max|h^(6)| (1/8)^6 / (2^5 6!) < 1e-9 there, far below f32's rounding. */
static void coef_init(void)
{
    const int n = DEGREE + 1;
    for (int i = 0; i < PIECES; i++) {
        double a[DEGREE + 1][DEGREE + 2];
        for (int k = 0; k < n; k++) {
            double w = 0.5 * cos((2 * k + 1) * M_PI / (2 * n));
            double p = 1.0;
            for (int j = 0; j < n; j++, p *= w)
                a[k][j] = p;
            a[k][n] = h_exact((i + 0.5 + w) / 4.0);
        }
        for (int c = 0; c < n; c++) {
            int piv = c;
            for (int r = c + 1; r < n; r++)
                if (fabs(a[r][c]) > fabs(a[piv][c]))
                    piv = r;
            for (int j = 0; j <= n; j++) {
                double t = a[c][j];
                a[c][j] = a[piv][j];
                a[piv][j] = t;
            }
            for (int r = 0; r < n; r++) {
                if (r == c)
                    continue;
                double f = a[r][c] / a[c][c];
                for (int j = c; j <= n; j++)
                    a[r][j] -= f * a[c][j];
            }
        }
        for (int j = 0; j < n; j++)
            coef[j][i] = (float)(a[j][n] / a[j][j]);
    }
}

bool dqg_gelu_own_available(void)
{
    return dqg_cpu_has(DQG_ISA_AVX512);
}

typedef struct tables {
    __m512 lo[DEGREE + 1], hi[DEGREE + 1];
} tables;

/* x Phi(x) on sixteen lanes: the piece's coefficients come from six
 * two-table permutes (the shuffle port), the rest is sixteen arithmetic,
 * conversion and compare operations. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 gelu16(__m512 x,
                                                                              const tables *t)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 s = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(4.0f));
    /* Past the last piece (|x| >= 8, inf) h is 0: erfc(8 / sqrt 2) / 2 is
     * 6e-16. A NaN lane computes on (and stays NaN). */
    __mmask16 live = _mm512_cmp_ps_mask(s, _mm512_set1_ps((float)PIECES), _CMP_NGE_UQ);
    __m512i i = _mm512_cvttps_epi32(s);
    __m512 w = _mm512_sub_ps(_mm512_sub_ps(s, _mm512_cvtepi32_ps(i)), _mm512_set1_ps(0.5f));
    __m512 h = _mm512_permutex2var_ps(t->lo[DEGREE], i, t->hi[DEGREE]);
    for (int j = DEGREE - 1; j > 0; j--)
        h = _mm512_fmadd_ps(h, w, _mm512_permutex2var_ps(t->lo[j], i, t->hi[j]));
    h = _mm512_maskz_fmadd_ps(live, h, w, _mm512_permutex2var_ps(t->lo[0], i, t->hi[0]));
    __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_mul_ps(x, _mm512_mask_sub_ps(h, pos, one, h));
}

__attribute__((target("avx512f"))) static void gelu_run(float *y, int64_t n)
{
    tables t;
    for (int j = 0; j <= DEGREE; j++) {
        t.lo[j] = _mm512_load_ps(&coef[j][0]);
        t.hi[j] = _mm512_load_ps(&coef[j][16]);
    }
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512 a = gelu16(_mm512_loadu_ps(y + i), &t), b = gelu16(_mm512_loadu_ps(y + i + 16), &t);
        __m512 c = gelu16(_mm512_loadu_ps(y + i + 32), &t);
        __m512 e = gelu16(_mm512_loadu_ps(y + i + 48), &t);
        _mm512_storeu_ps(y + i, a);
        _mm512_storeu_ps(y + i + 16, b);
        _mm512_storeu_ps(y + i + 32, c);
        _mm512_storeu_ps(y + i + 48, e);
    }
    for (; i < n; i += 16) {
        __mmask16 l = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, l, gelu16(_mm512_maskz_loadu_ps(l, y + i), &t));
    }
}

void dqg_gelu_erf_inplace(float *y, int64_t n)
{
    pthread_once(&coef_once, coef_init);
    int threads = n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
    if (threads <= 1) {
        gelu_run(y, n);
        return;
    }
    /* Contiguous runs of whole cache lines per thread. */
#pragma omp parallel num_threads(threads)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t per = ((n + nt - 1) / nt + 15) & ~(int64_t)15;
        int64_t lo = per * id, hi = lo + per < n ? lo + per : n;
        if (lo < hi)
            gelu_run(y + lo, hi - lo);
    }
}
