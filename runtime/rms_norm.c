/* RMS normalization (LayerNorm with its rms flag, which the recognize pass
 * makes of Pow, ReduceMean, Add, Sqrt, Div and Mul): each row of the
 * trailing dimensions divided by the root of its mean square plus epsilon
 * (or multiplied by that root's reciprocal) and by the scale. It rounds as
 * the ops it replaces do -- each square in f32, their sum in double, the
 * mean, the root, the quotient and the product in f32 -- so that it agrees
 * with the reference of those ops to the order of the double sum. One pass
 * for the sum and one for the result, over rows split between threads;
 * AVX-512, or plain C. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu_isa.h"
#include "runtime/kernel.h"

/* Below this many elements the rows run on one thread. */
#define PARALLEL_MIN (32 * 1024)

typedef struct rms_kernel {
    dqg_kernel base;
    int64_t rows, inner;
    float epsilon;
    bool recip, avx512;
    int x_arg, y_arg, scale_arg; /* scale_arg -1: the constant copy */
    float *scale;
} rms_kernel;

/* The divisor of a row from its sum of squares (the root), as the ops
 * round it: the mean to f32, plus epsilon, the square root. */
static float row_root(double sum, int64_t inner, float epsilon)
{
    float ms = (float)(sum / (double)inner);
    return sqrtf(ms + epsilon);
}

static void row_c(const float *x, const float *s, float *y, int64_t n, float epsilon, bool recip)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    float root = row_root(sum, n, epsilon), r = 1.0f / root;
    for (int64_t i = 0; i < n; i++)
        y[i] = (recip ? x[i] * r : x[i] / root) * s[i];
}

__attribute__((target("avx512f,avx512dq"))) static void
row_avx512(const float *x, const float *s, float *y, int64_t n, float epsilon, bool recip)
{
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __m512 q = _mm512_mul_ps(v, v); /* the square, rounded to f32 as Pow's */
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(q)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(q, 1)));
    }
    float root = row_root(_mm512_reduce_add_pd(_mm512_add_pd(a0, a1)), n, epsilon);
    __m512 vroot = _mm512_set1_ps(root), vr = _mm512_set1_ps(1.0f / root);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        v = recip ? _mm512_mul_ps(v, vr) : _mm512_div_ps(v, vroot);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, s + i)));
    }
}

static dqg_status rms_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    const rms_kernel *r = (const rms_kernel *)k;
    const float *x = args[r->x_arg], *s = r->scale_arg >= 0 ? args[r->scale_arg] : r->scale;
    float *y = args[r->y_arg];
    int threads = r->rows > 1 && r->rows * r->inner >= PARALLEL_MIN ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < r->rows; i++) {
        const float *xr = x + i * r->inner;
        float *yr = y + i * r->inner;
        if (r->avx512)
            row_avx512(xr, s, yr, r->inner, r->epsilon, r->recip);
        else
            row_c(xr, s, yr, r->inner, r->epsilon, r->recip);
    }
    return DQG_OK;
}

static void rms_destroy(dqg_kernel *k)
{
    rms_kernel *r = (rms_kernel *)k;
    free(r->scale);
    free(r);
}

dqg_status dqg_kernel_rms_norm_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *sc = &g->tensors[op->inputs[1]];
    rms_kernel *r = calloc(1, sizeof *r);
    if (!r)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "RMS normalization kernel: out of memory");
    r->base.execute = rms_execute;
    r->base.destroy = rms_destroy;
    r->inner = 1;
    for (int i = op->attrs.layer_norm.axis; i < x->rank; i++)
        r->inner *= x->dims[i];
    r->rows = r->inner ? x->nelems / r->inner : 0;
    r->epsilon = op->attrs.layer_norm.epsilon;
    r->recip = op->attrs.layer_norm.rms_recip;
    r->avx512 = dqg_cpu_has(DQG_ISA_AVX512);
    r->x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    r->y_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    r->scale_arg = dqg_kernel_arg_index(g, op->inputs[1]);
    if (r->scale_arg < 0) {
        if (!(r->scale = malloc(sc->nbytes ? sc->nbytes : 1))) {
            free(r);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "RMS normalization kernel: out of memory");
        }
        memcpy(r->scale, sc->data, sc->nbytes);
        r->base.bytes = sc->nbytes;
    }
    snprintf(r->base.impl, sizeof r->base.impl, "%s",
             r->avx512 ? "own:avx512:rms-norm" : "own:rms-norm");
    *out = &r->base;
    return DQG_OK;
}
