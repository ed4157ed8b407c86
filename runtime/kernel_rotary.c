/* Rotary position embedding (DQG_PART_ROTARY): y = x cos + rotate_half(x)
 * sin along the last axis of f32 x, d = 2h, where rotate_half(x) is
 * Concat(-x[..., h:], x[..., :h]):
 *   y[j]     = x[j] cos[j]         + (-x[j + h]) sin[j]
 *   y[j + h] = x[j + h] cos[j + h] + x[j] sin[j + h]      (j < h)
 * Each product and the sum rounded to f32 as the Mul and Add ops round
 * them (the file is compiled without FMA contraction; the negation is
 * exact), so the result is the ops' bit for bit, NaN and infinities
 * included. cos and sin broadcast into x; constant ones are copied into
 * the kernel. One pass over x, rows split between threads. */
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu_isa.h"
#include "runtime/kernel.h"

typedef struct rotary_kernel {
    dqg_kernel base;
    int x_arg, y_arg, arg[2]; /* arg[0] cos, arg[1] sin: -1 for a constant */
    void *data[2];            /* the constants' copies */
    int rank;
    int64_t dims[DQG_MAX_RANK], stride[2][DQG_MAX_RANK]; /* cos and sin over x's shape */
    int64_t h, rows;
    bool avx512;
} rotary_kernel;

/* One row: x, y of 2h elements; c, s the row's cos and sin, last-axis
 * stride cs / ss (1, or 0 for one value per row). */
static void row_c(const float *x, float *y, const float *c, int64_t cs, const float *s, int64_t ss,
                  int64_t h)
{
    for (int64_t j = 0; j < h; j++) {
        float lo = x[j], hi = x[j + h];
        float a = lo * c[j * cs], b = -hi * s[j * ss];
        float e = hi * c[(j + h) * cs], f = lo * s[(j + h) * ss];
        y[j] = a + b;
        y[j + h] = e + f;
    }
}

__attribute__((target("avx512f"))) static void row_avx512(const float *x, float *y, const float *c,
                                                          const float *s, int64_t h)
{
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int64_t j = 0; j < h; j += 16) {
        __mmask16 m = h - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (h - j)) - 1);
        __m512 lo = _mm512_maskz_loadu_ps(m, x + j), hi = _mm512_maskz_loadu_ps(m, x + j + h);
        __m512 a = _mm512_mul_ps(lo, _mm512_maskz_loadu_ps(m, c + j));
        __m512 b = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(hi),
                                                                      _mm512_castps_si512(sign))),
                                 _mm512_maskz_loadu_ps(m, s + j));
        __m512 e = _mm512_mul_ps(hi, _mm512_maskz_loadu_ps(m, c + j + h));
        __m512 f = _mm512_mul_ps(lo, _mm512_maskz_loadu_ps(m, s + j + h));
        _mm512_mask_storeu_ps(y + j, m, _mm512_add_ps(a, b));
        _mm512_mask_storeu_ps(y + j + h, m, _mm512_add_ps(e, f));
    }
}

static dqg_status rotary_execute(dqg_kernel *kb, void *const *args, void *scratch)
{
    (void)scratch;
    const rotary_kernel *k = (const rotary_kernel *)kb;
    const float *x = args[k->x_arg];
    float *y = args[k->y_arg];
    const float *cs[2];
    for (int i = 0; i < 2; i++)
        cs[i] = k->arg[i] >= 0 ? (const float *)args[k->arg[i]] : (const float *)k->data[i];
    const int R = k->rank;
    const int64_t d = 2 * k->h;
    int threads = k->rows * d >= 64 * 1024 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < k->rows; r++) {
        int64_t off[2] = {0, 0}, rest = r;
        for (int a = R - 2; a >= 0; a--) {
            int64_t i = rest % k->dims[a];
            rest /= k->dims[a];
            off[0] += i * k->stride[0][a];
            off[1] += i * k->stride[1][a];
        }
        const float *c = cs[0] + off[0], *s = cs[1] + off[1];
        if (k->avx512 && k->stride[0][R - 1] == 1 && k->stride[1][R - 1] == 1)
            row_avx512(x + r * d, y + r * d, c, s, k->h);
        else
            row_c(x + r * d, y + r * d, c, k->stride[0][R - 1], s, k->stride[1][R - 1], k->h);
    }
    return DQG_OK;
}

static void rotary_destroy(dqg_kernel *kb)
{
    rotary_kernel *k = (rotary_kernel *)kb;
    free(k->data[0]);
    free(k->data[1]);
    free(k);
}

/* The op of `kind` in the mini graph whose input `in` is t (in < 0: any). */
static const dqg_op *reader(const dqg_graph *g, dqg_op_kind kind, dqg_tensor_id t)
{
    for (int32_t i = 0; i < g->n_ops; i++)
        for (int k = 0; k < g->ops[i].n_inputs; k++)
            if (g->ops[i].kind == kind && g->ops[i].inputs[k] == t)
                return &g->ops[i];
    return NULL;
}

dqg_status dqg_kernel_rotary_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *add = dqg_req_op(req, DQG_ROLE_MAIN), *cat = NULL;
    for (int32_t i = 0; i < g->n_ops && !cat; i++)
        if (g->ops[i].kind == DQG_OP_CONCAT)
            cat = &g->ops[i];
    if (!add || !cat)
        return dqg_set_error(DQG_UNSUPPORTED, "rotary embedding: partition without Add or Concat");
    /* Concat(Neg(Slice(x)), Slice(x)): x is what the first slice reads. */
    const dqg_op *neg = &g->ops[g->tensors[cat->inputs[0]].producer];
    dqg_tensor_id x = g->ops[g->tensors[neg->inputs[0]].producer].inputs[0];
    const dqg_op *ms = reader(g, DQG_OP_MUL, cat->outputs[0]);
    const dqg_op *mc = &g->ops[g->tensors[add->inputs[0]].producer];
    if (mc == ms)
        mc = &g->ops[g->tensors[add->inputs[1]].producer];
    dqg_tensor_id t[2] = {mc->inputs[0] == x ? mc->inputs[1] : mc->inputs[0],
                          ms->inputs[0] == cat->outputs[0] ? ms->inputs[1] : ms->inputs[0]};
    const dqg_tensor *xt = &g->tensors[x];
    rotary_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "rotary embedding: out of memory");
    k->base.execute = rotary_execute;
    k->base.destroy = rotary_destroy;
    k->x_arg = dqg_kernel_arg_index(g, x);
    k->y_arg = dqg_kernel_arg_index(g, add->outputs[0]);
    k->rank = xt->rank;
    k->h = xt->dims[xt->rank - 1] / 2;
    k->rows = xt->nelems / (2 * k->h);
    memcpy(k->dims, xt->dims, sizeof(int64_t) * (size_t)xt->rank);
    for (int i = 0; i < 2; i++) {
        dqg_broadcast_strides(&g->tensors[t[i]], xt->rank, k->stride[i]);
        if (!dqg_kernel_operand(g, t[i], &k->arg[i], &k->data[i], &k->base.bytes)) {
            rotary_destroy(&k->base);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "rotary embedding: out of memory");
        }
    }
    if (k->x_arg < 0) {
        rotary_destroy(&k->base);
        return dqg_set_error(DQG_UNSUPPORTED, "rotary embedding: a constant x");
    }
    k->avx512 = dqg_cpu_has(DQG_ISA_AVX512);
    snprintf(k->base.impl, sizeof k->base.impl, "dqgraph:%s:rotary-embedding",
             k->avx512 ? "avx512" : "c");
    *out = &k->base;
    return DQG_OK;
}
