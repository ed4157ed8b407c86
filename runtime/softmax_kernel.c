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
 * Below -104 the result is 0 (e^-104 is under half the smallest denormal)
 * and is not computed: a scalef whose result underflows takes a microcode
 * assist of a hundred cycles or more on Intel cores, which made an
 * attention softmax with a -10000 mask on an eighth of each row half again
 * as slow. Clamping at -110 keeps -inf out of the reduction. */
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
    __mmask16 live = _mm512_cmp_ps_mask(d, _mm512_set1_ps(-104.0f), _CMP_GE_OQ);
    return _mm512_maskz_scalef_ps(live, p, n);
}

static inline __mmask16 lanes(int64_t left)
{
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* The pre-ops on elements k.. of row r (lanes l of v). */
__attribute__((target("avx512f"))) static inline __m512
apply_pre(__m512 v, int64_t r, int64_t k, __mmask16 l, const dqg_softmax_pre *pre, int n_pre)
{
    for (int i = 0; i < n_pre; i++) {
        const dqg_softmax_pre *p = &pre[i];
        const float *b = p->operand + (p->row_period ? r % p->row_period : r) * p->row_step;
        __m512 w = p->col_step ? _mm512_maskz_loadu_ps(l, b + k) : _mm512_set1_ps(b[0]);
        v = p->kind == DQG_SOFTMAX_PRE_ADD   ? _mm512_add_ps(v, w)
            : p->kind == DQG_SOFTMAX_PRE_MUL ? _mm512_mul_ps(v, w)
                                             : _mm512_div_ps(v, w);
    }
    return v;
}

/* Softmax of G consecutive rows of x into y (rows r.. of n elements); with
 * pre-ops, in place (x == y): the pass that finds the maximum applies them
 * and stores their result. A row of 128 is too short to hide the latency of
 * its reductions and of the exponential's polynomial: the G rows' chains
 * run side by side. */
__attribute__((target("avx512f"), always_inline)) static inline void
rows_avx512(const float *x, float *y, int64_t n, bool log_softmax, const dqg_softmax_pre *pre,
            int n_pre, int64_t r, const int G)
{
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    __m512 vmax[4], vm[4], vsum[4];
    __mmask16 unordered[4];
    bool special[4];
    for (int j = 0; j < G; j++) {
        vmax[j] = neg_inf;
        unordered[j] = 0;
    }
    for (int64_t k = 0; k < n; k += 16) {
        __mmask16 l = lanes(n - k);
        for (int j = 0; j < G; j++) {
            __m512 v;
            if (n_pre) {
                v = apply_pre(_mm512_maskz_loadu_ps(l, y + j * n + k), r + j, k, l, pre, n_pre);
                _mm512_mask_storeu_ps(y + j * n + k, l, v);
                v = _mm512_mask_mov_ps(neg_inf, l, v);
            } else {
                v = _mm512_mask_loadu_ps(neg_inf, l, x + j * n + k);
            }
            unordered[j] |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            vmax[j] = _mm512_max_ps(vmax[j], v);
        }
    }
    for (int j = 0; j < G; j++) {
        float m = _mm512_reduce_max_ps(vmax[j]);
        special[j] = unordered[j] || isinf(m);
        if (special[j])
            row_reference(DQG_F32, x + j * n, y + j * n, 0, n, 1, log_softmax);
        vm[j] = _mm512_set1_ps(special[j] ? 0.0f : m);
        vsum[j] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < n; k += 16) {
        __mmask16 l = lanes(n - k);
        for (int j = 0; j < G; j++) {
            if (special[j])
                continue;
            __m512 e =
                exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(l, x + j * n + k), vm[j]));
            vsum[j] = _mm512_mask_add_ps(vsum[j], l, vsum[j], e);
            if (!log_softmax)
                _mm512_mask_storeu_ps(y + j * n + k, l, e);
        }
    }
    __m512 fin[4];
    for (int j = 0; j < G; j++) {
        float sum = _mm512_reduce_add_ps(vsum[j]);
        /* (x - max) - log(sum): the sum is at least 1 (the maximum's e^0). */
        fin[j] = _mm512_set1_ps(special[j] ? 0.0f : log_softmax ? logf(sum) : 1.0f / sum);
    }
    for (int64_t k = 0; k < n; k += 16) {
        __mmask16 l = lanes(n - k);
        for (int j = 0; j < G; j++) {
            if (special[j])
                continue;
            __m512 v =
                log_softmax
                    ? _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(l, x + j * n + k), vm[j]),
                                    fin[j])
                    : _mm512_mul_ps(_mm512_maskz_loadu_ps(l, y + j * n + k), fin[j]);
            _mm512_mask_storeu_ps(y + j * n + k, l, v);
        }
    }
}

/* Rows first..last of x into y, four at a time. */
__attribute__((target("avx512f"))) static void run_rows(const float *x, float *y, int64_t n,
                                                        bool log_softmax,
                                                        const dqg_softmax_pre *pre, int n_pre,
                                                        int64_t first, int64_t last)
{
    int64_t r = first;
    for (; r + 4 <= last; r += 4)
        rows_avx512(x + r * n, y + r * n, n, log_softmax, pre, n_pre, r, 4);
    for (; r < last; r++)
        rows_avx512(x + r * n, y + r * n, n, log_softmax, pre, n_pre, r, 1);
}

/* One pre-op on a row: a loop per kind and operand shape, so that each
 * vectorizes. */
static void pre_row(float *restrict row, int64_t n, dqg_softmax_pre_kind kind,
                    const float *restrict b, bool one)
{
    if (one) {
        const float c = b[0];
        if (kind == DQG_SOFTMAX_PRE_ADD)
            for (int64_t k = 0; k < n; k++)
                row[k] += c;
        else if (kind == DQG_SOFTMAX_PRE_MUL)
            for (int64_t k = 0; k < n; k++)
                row[k] *= c;
        else
            for (int64_t k = 0; k < n; k++)
                row[k] /= c;
    } else if (kind == DQG_SOFTMAX_PRE_ADD) {
        for (int64_t k = 0; k < n; k++)
            row[k] += b[k];
    } else if (kind == DQG_SOFTMAX_PRE_MUL) {
        for (int64_t k = 0; k < n; k++)
            row[k] *= b[k];
    } else {
        for (int64_t k = 0; k < n; k++)
            row[k] /= b[k];
    }
}

void dqg_softmax_pre_apply(float *x, int64_t rows, int64_t n, const dqg_softmax_pre *pre, int n_pre)
{
    int threads = rows > 1 && rows * n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++)
        for (int i = 0; i < n_pre; i++)
            pre_row(x + r * n, n, pre[i].kind,
                    pre[i].operand +
                        (pre[i].row_period ? r % pre[i].row_period : r) * pre[i].row_step,
                    pre[i].col_step == 0);
}

static void rows_split(int64_t rows, int64_t *first, int64_t *last)
{
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = rows / nt, extra = rows % nt;
    *first = t * per + (t < extra ? t : extra);
    *last = *first + per + (t < extra ? 1 : 0);
}

void dqg_softmax_rows_pre(float *y, int64_t rows, int64_t n, const dqg_softmax_pre *given,
                          int n_pre, bool log_softmax)
{
    /* A division by one power of two is the multiplication by its
     * reciprocal, when that is a float: both round the same exact value
     * (and a vector division costs a dozen multiplications). */
    dqg_softmax_pre pre[DQG_SOFTMAX_MAX_PRE];
    float recip[DQG_SOFTMAX_MAX_PRE];
    for (int i = 0; i < n_pre; i++) {
        pre[i] = given[i];
        int e;
        float d = pre[i].kind == DQG_SOFTMAX_PRE_DIV && pre[i].col_step == 0 && pre[i].row_step == 0
                      ? pre[i].operand[0]
                      : 0.0f;
        if (isfinite(d) && d != 0.0f && fabsf(frexpf(d, &e)) == 0.5f && 1 - e >= -149 &&
            1 - e <= 127) {
            recip[i] = ldexpf(d < 0 ? -1.0f : 1.0f, 1 - e);
            pre[i].kind = DQG_SOFTMAX_PRE_MUL;
            pre[i].operand = &recip[i];
        }
    }
    int threads = rows > 1 && rows * n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
    {
        int64_t first, last;
        rows_split(rows, &first, &last);
        run_rows(y, y, n, log_softmax, pre, n_pre, first, last);
    }
}

void dqg_softmax_rows(const float *x, float *y, int64_t rows, int64_t n, bool log_softmax)
{
    int threads = rows > 1 && rows * n >= PARALLEL_MIN ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
    {
        int64_t first, last;
        rows_split(rows, &first, &last);
        run_rows(x, y, n, log_softmax, NULL, 0, first, last);
    }
}
