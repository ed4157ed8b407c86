/* The own kernels' epilogue: op by op over a strip of one output row. The
 * loops over a strip are simple enough for the compiler to vectorize; the
 * transcendental ops call libm, as the reference interpreter does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "runtime/epilogue.h"

dqg_status dqg_epilogue_copy(dqg_epilogue *dst, const dqg_epilogue *src, int64_t N)
{
    memset(dst, 0, sizeof *dst);
    if (!src)
        return DQG_OK;
    for (int i = 0; i < src->n; i++) {
        dst->ops[i] = src->ops[i];
        dst->ops[i].values = NULL;
        if (!src->ops[i].values)
            continue;
        int64_t n = src->ops[i].shape == DQG_EPI_PER_N ? N : 1;
        dst->ops[i].values = malloc((size_t)n * sizeof(float));
        if (!dst->ops[i].values) {
            dst->n = i;
            dqg_epilogue_free(dst);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "epilogue: out of memory");
        }
        memcpy(dst->ops[i].values, src->ops[i].values, (size_t)n * sizeof(float));
    }
    dst->n = src->n;
    return DQG_OK;
}

void dqg_epilogue_free(dqg_epilogue *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->ops[i].values);
    memset(e, 0, sizeof *e);
}

/* The operand of ADD/MUL for this strip: a pointer with a stride of 1
 * (PER_N, FULL) or 0 (SCALAR). */
static const float *operand(const dqg_epi_op *op, int64_t m, int64_t n0, int64_t N,
                            const void *const *rt, int64_t *stride)
{
    *stride = op->shape == DQG_EPI_SCALAR ? 0 : 1;
    const float *base = op->values ? op->values : (const float *)rt[op->rt_arg];
    if (op->shape == DQG_EPI_PER_N)
        return base + n0;
    if (op->shape == DQG_EPI_FULL)
        return base + m * N + n0;
    return base;
}

void dqg_epilogue_apply(const dqg_epilogue *e, float *y, int64_t m, int64_t n0, int64_t n,
                        int64_t N, const void *const *rt)
{
    if (!e)
        return;
    for (int k = 0; k < e->n; k++) {
        const dqg_epi_op *op = &e->ops[k];
        float a = op->alpha, b = op->beta;
        int64_t s;
        switch (op->kind) {
        case DQG_EPI_ADD: {
            const float *v = operand(op, m, n0, N, rt, &s);
            for (int64_t i = 0; i < n; i++)
                y[i] = y[i] + v[i * s];
            break;
        }
        case DQG_EPI_MUL: {
            const float *v = operand(op, m, n0, N, rt, &s);
            for (int64_t i = 0; i < n; i++)
                y[i] = y[i] * v[i * s];
            break;
        }
        case DQG_EPI_DIV: {
            const float *v = operand(op, m, n0, N, rt, &s);
            for (int64_t i = 0; i < n; i++)
                y[i] = y[i] / v[i * s];
            break;
        }
        /* ReLU and Clip as the reference writes them: NaN fails every
         * comparison and passes through (fmaxf/fminf would drop it). */
        case DQG_EPI_RELU:
            for (int64_t i = 0; i < n; i++)
                y[i] = y[i] < 0.0f ? 0.0f : y[i];
            break;
        case DQG_EPI_CLIP:
            for (int64_t i = 0; i < n; i++) {
                float v = y[i] < a ? a : y[i];
                y[i] = v > b ? b : v;
            }
            break;
        case DQG_EPI_GELU_ERF:
            for (int64_t i = 0; i < n; i++)
                y[i] = 0.5f * y[i] * (1.0f + erff(y[i] * 0.70710678118654752f));
            break;
        case DQG_EPI_GELU_TANH:
            for (int64_t i = 0; i < n; i++) {
                float x = y[i];
                y[i] =
                    0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
            }
            break;
        case DQG_EPI_SIGMOID:
            for (int64_t i = 0; i < n; i++)
                y[i] = 1.0f / (1.0f + expf(-y[i]));
            break;
        case DQG_EPI_SWISH:
            for (int64_t i = 0; i < n; i++)
                y[i] = y[i] / (1.0f + expf(-a * y[i]));
            break;
        case DQG_EPI_TANH:
            for (int64_t i = 0; i < n; i++)
                y[i] = tanhf(y[i]);
            break;
        case DQG_EPI_HARD_SWISH:
            for (int64_t i = 0; i < n; i++)
                y[i] = y[i] * fmaxf(0.0f, fminf(1.0f, y[i] / 6.0f + 0.5f));
            break;
        }
    }
}
