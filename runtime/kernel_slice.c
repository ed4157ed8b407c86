/* Slice as copies: each row of the output (its last dimension) is one
 * memcpy when the last axis is not strided, else an element loop. Whole-byte
 * types in row-major layout; others run on the reference kernel. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct slice_kernel {
    dqg_kernel base;
    int rank;
    int64_t ydims[DQG_MAX_RANK], xstride[DQG_MAX_RANK], start[DQG_MAX_RANK], step[DQG_MAX_RANK];
    size_t es;
    int in_arg, out_arg;
    void *in_const;
} slice_kernel;

static dqg_status slice_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    slice_kernel *s = (slice_kernel *)k;
    const char *x = s->in_arg >= 0 ? args[s->in_arg] : s->in_const;
    char *y = args[s->out_arg];
    int last = s->rank - 1;
    int64_t row = s->ydims[last], rows = 1;
    for (int d = 0; d < last; d++)
        rows *= s->ydims[d];
    size_t es = s->es;
    for (int64_t r = 0; r < rows; r++) {
        int64_t rem = r, src = s->start[last] * s->xstride[last];
        for (int d = last - 1; d >= 0; d--) {
            int64_t c = rem % s->ydims[d];
            rem /= s->ydims[d];
            src += (s->start[d] + c * s->step[d]) * s->xstride[d];
        }
        char *dst = y + (size_t)(r * row) * es;
        if (s->step[last] == 1) {
            memcpy(dst, x + (size_t)src * es, (size_t)row * es);
        } else {
            int64_t st = s->step[last] * s->xstride[last];
            for (int64_t i = 0; i < row; i++)
                memcpy(dst + (size_t)i * es, x + (size_t)(src + i * st) * es, es);
        }
    }
    return DQG_OK;
}

static void slice_destroy(dqg_kernel *k)
{
    slice_kernel *s = (slice_kernel *)k;
    free(s->in_const);
    free(s);
}

dqg_status dqg_kernel_slice_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    if (dqg_dtype_bits(x->dtype) % 8 != 0 || x->channels_last || y->channels_last || x->rank == 0)
        return dqg_set_error(DQG_UNSUPPORTED, "Slice of %s%s", dqg_dtype_name(x->dtype),
                             x->channels_last || y->channels_last ? " channels-last" : "");
    slice_kernel *s = calloc(1, sizeof *s);
    if (!s)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "Slice kernel: out of memory");
    s->base.execute = slice_execute;
    s->base.destroy = slice_destroy;
    snprintf(s->base.impl, sizeof s->base.impl, "dqgraph:slice");
    s->rank = x->rank;
    s->es = (size_t)dqg_dtype_bits(x->dtype) / 8;
    int64_t stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        s->xstride[d] = stride;
        stride *= x->dims[d];
        s->ydims[d] = y->dims[d];
        s->start[d] = op->attrs.slice.start[d];
        s->step[d] = op->attrs.slice.step[d];
    }
    s->out_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    s->in_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    if (s->in_arg < 0) {
        if (!(s->in_const = malloc(x->nbytes ? x->nbytes : 1))) {
            free(s);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "Slice kernel: out of memory");
        }
        memcpy(s->in_const, x->data, x->nbytes);
        s->base.bytes = x->nbytes;
    }
    *out = &s->base;
    return DQG_OK;
}
