/* Pad as row copies: each output row (the last dimension) is the constant
 * when an outer coordinate falls outside x in constant mode; otherwise one
 * memcpy of the kept part of x's row, with the elements before and after it
 * filled by the mode. Rows split between threads when there is enough to
 * copy. Whole-byte types in row-major layout; 4-bit types run on the
 * reference kernel. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct pad_kernel {
    dqg_kernel base;
    int rank;
    dqg_pad_mode mode;
    int64_t xdims[DQG_MAX_RANK], ydims[DQG_MAX_RANK], xstride[DQG_MAX_RANK];
    int64_t begin[DQG_MAX_RANK], end[DQG_MAX_RANK];
    size_t es;
    unsigned char fill[8];
    int in_arg, out_arg;
    void *in_const;
    /* The last axis: output positions [head, head + body) copy x's row from
     * element `from`; the others are filled by the mode. */
    int64_t head, body, from;
    int threads;
} pad_kernel;

static void fill_elems(char *dst, const unsigned char *v, size_t es, int64_t n)
{
    if (n <= 0)
        return;
    bool zero = true;
    for (size_t b = 0; b < es; b++)
        zero &= v[b] == 0;
    if (zero || es == 1) {
        memset(dst, v[0], (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + (size_t)i * es, v, es);
}

static void pad_row(const pad_kernel *p, const char *x, char *y, int64_t r)
{
    int last = p->rank - 1;
    size_t es = p->es;
    int64_t row = p->ydims[last], src = 0, rem = r;
    for (int d = last - 1; d >= 0; d--) {
        int64_t c = rem % p->ydims[d];
        rem /= p->ydims[d];
        int64_t s = dqg_pad_source(p->mode, c, p->begin[d], p->end[d], p->xdims[d]);
        if (s < 0) {
            fill_elems(y, p->fill, es, row);
            return;
        }
        src += s * p->xstride[d];
    }
    const char *xr = x + (size_t)src * es;
    memcpy(y + (size_t)p->head * es, xr + (size_t)p->from * es, (size_t)p->body * es);
    if (p->mode == DQG_PAD_CONSTANT) {
        fill_elems(y, p->fill, es, p->head);
        fill_elems(y + (size_t)(p->head + p->body) * es, p->fill, es, row - p->head - p->body);
        return;
    }
    for (int64_t o = 0; o < row; o++) {
        if (o == p->head) {
            o += p->body - 1;
            continue;
        }
        int64_t s = dqg_pad_source(p->mode, o, p->begin[last], p->end[last], p->xdims[last]);
        memcpy(y + (size_t)o * es, xr + (size_t)s * es, es);
    }
}

static dqg_status pad_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    pad_kernel *p = (pad_kernel *)k;
    const char *x = p->in_arg >= 0 ? args[p->in_arg] : p->in_const;
    char *y = args[p->out_arg];
    int last = p->rank - 1;
    int64_t row = p->ydims[last], rows = 1;
    for (int d = 0; d < last; d++)
        rows *= p->ydims[d];
    size_t rb = (size_t)row * p->es;
#pragma omp parallel for num_threads(p->threads) schedule(static)
    for (int64_t r = 0; r < rows; r++)
        pad_row(p, x, y + (size_t)r * rb, r);
    return DQG_OK;
}

static void pad_destroy(dqg_kernel *k)
{
    pad_kernel *p = (pad_kernel *)k;
    free(p->in_const);
    free(p);
}

dqg_status dqg_kernel_pad_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    if (dqg_dtype_bits(x->dtype) % 8 != 0 || x->channels_last || y->channels_last || x->rank == 0)
        return dqg_set_error(DQG_UNSUPPORTED, "Pad of %s%s", dqg_dtype_name(x->dtype),
                             x->channels_last || y->channels_last ? " channels-last" : "");
    pad_kernel *p = calloc(1, sizeof *p);
    if (!p)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "Pad kernel: out of memory");
    p->base.execute = pad_execute;
    p->base.destroy = pad_destroy;
    snprintf(p->base.impl, sizeof p->base.impl, "dqgraph:pad:%s",
             dqg_pad_mode_name(op->attrs.pad.mode));
    p->rank = x->rank;
    p->mode = op->attrs.pad.mode;
    p->es = (size_t)dqg_dtype_bits(x->dtype) / 8;
    dqg_pad_value_bytes(op, x->dtype, p->fill);
    int64_t stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        p->xstride[d] = stride;
        stride *= x->dims[d];
        p->xdims[d] = x->dims[d];
        p->ydims[d] = y->dims[d];
        p->begin[d] = op->attrs.pad.begin[d];
        p->end[d] = op->attrs.pad.end[d];
    }
    int last = x->rank - 1;
    int64_t b = p->begin[last], e = p->end[last];
    p->head = b > 0 ? b : 0;
    p->from = b < 0 ? -b : 0;
    p->body = x->dims[last] - p->from - (e < 0 ? -e : 0);
    /* An OpenMP team costs more than copying under about 256 KiB. */
    p->threads = y->nbytes >= ((size_t)256 << 10) ? omp_get_max_threads() : 1;
    p->out_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    p->in_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    if (p->in_arg < 0) {
        if (!(p->in_const = malloc(x->nbytes ? x->nbytes : 1))) {
            free(p);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "Pad kernel: out of memory");
        }
        memcpy(p->in_const, x->data, x->nbytes);
        p->base.bytes = x->nbytes;
    }
    *out = &p->base;
    return DQG_OK;
}
