/* Physical layouts of activations in compiled graphs: row-major, or
 * channels-last for a logical [N, C, X...] tensor (stored [N, X..., C]),
 * chosen by the layout pass so that convolutions, pooling and the ops
 * between them run without reorders. */
#include <string.h>

#include "graph/dtype.h"
#include "graph/graph_internal.h"

void dqg_tensor_strides(const dqg_tensor *t, int64_t *strides)
{
    if (!t->channels_last || t->rank < 3) {
        dqg_strides(t->rank, t->dims, strides);
        return;
    }
    int64_t s = 1;
    strides[1] = s;
    s *= t->dims[1];
    for (int i = t->rank - 1; i >= 2; i--) {
        strides[i] = s;
        s *= t->dims[i];
    }
    strides[0] = s;
}

void dqg_layout_convert(const dqg_tensor *t, const void *src, void *dst, bool to_channels_last)
{
    size_t es = (size_t)dqg_dtype_bits(t->dtype) / 8;
    int64_t N = t->dims[0], C = t->dims[1], X = t->nelems / (N * C);
    const unsigned char *s = src;
    unsigned char *d = dst;
    /* Row-major element (n, c, x) is at (n*C + c)*X + x; channels-last at
     * (n*X + x)*C + c. */
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t x = 0; x < X; x++) {
                int64_t rm = (n * C + c) * X + x, cl = (n * X + x) * C + c;
                if (to_channels_last)
                    memcpy(d + (size_t)cl * es, s + (size_t)rm * es, es);
                else
                    memcpy(d + (size_t)rm * es, s + (size_t)cl * es, es);
            }
}
