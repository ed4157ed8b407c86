/* Resize. Nearest: a gather through one index table per axis, row by row,
 * for any whole-byte type. Linear and cubic on f32: one pass per axis whose
 * taps are not a copy (the axes that shrink first, then those that grow),
 * each output element the weighted sum of its taps along that axis, the
 * inner axes' elements contiguous so the sum runs over whole rows; the
 * passes between x and y go through two scratch buffers. The weights are
 * the reference's (dqg_resize_taps), rounded to f32, and the sums run in
 * f32, axis by axis where the reference sums the tensor product in double:
 * within a few f32 roundings of it. Rows split between threads. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct resize_axis {
    int64_t in, out;
    int64_t *idx; /* out x 4: the taps' source indices */
    float *w;     /* out x 4: their weights */
    uint8_t *n;   /* out: the taps' count */
    bool copy;    /* out == in and every output reads its own element */
} resize_axis;

typedef struct resize_kernel {
    dqg_kernel base;
    int rank;
    bool nearest;
    size_t es;
    resize_axis ax[DQG_MAX_RANK];
    int order[DQG_MAX_RANK], n_passes; /* the axes interpolated, in pass order */
    int64_t xstride[DQG_MAX_RANK];
    int in_arg, out_arg;
    void *in_const;
    size_t scratch_half; /* bytes of each of the two scratch buffers */
    int64_t ynelems;
} resize_kernel;

static int threads_for(int64_t bytes)
{
    return bytes >= (256 << 10) ? omp_get_max_threads() : 1;
}

static void nearest_run(const resize_kernel *r, const char *x, char *y)
{
    int last = r->rank - 1;
    const resize_axis *la = &r->ax[last];
    int64_t row = la->out, rows = r->ynelems / row;
    size_t es = r->es;
#pragma omp parallel for num_threads(threads_for(r->ynelems *(int64_t)es)) schedule(static)
    for (int64_t q = 0; q < rows; q++) {
        int64_t rem = q, src = 0;
        for (int d = last - 1; d >= 0; d--) {
            int64_t c = rem % r->ax[d].out;
            rem /= r->ax[d].out;
            src += r->ax[d].idx[c * 4] * r->xstride[d];
        }
        const char *xr = x + (size_t)src * es;
        char *yr = y + (size_t)(q * row) * es;
        switch (es) {
        case 1:
            for (int64_t j = 0; j < row; j++)
                yr[j] = xr[la->idx[j * 4]];
            break;
        case 2:
            for (int64_t j = 0; j < row; j++)
                ((uint16_t *)yr)[j] = ((const uint16_t *)xr)[la->idx[j * 4]];
            break;
        case 4:
            for (int64_t j = 0; j < row; j++)
                ((uint32_t *)yr)[j] = ((const uint32_t *)xr)[la->idx[j * 4]];
            break;
        default:
            for (int64_t j = 0; j < row; j++)
                memcpy(yr + (size_t)j * es, xr + (size_t)la->idx[j * 4] * es, es);
            break;
        }
    }
}

/* One linear/cubic pass along axis a of a tensor with dimensions dims
 * (dims[a] = the axis' input size): src -> dst, dst's axis a of size out. */
static void axis_pass(const resize_axis *a, const int64_t *dims, int rank, int axis,
                      const float *src, float *dst)
{
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= dims[d];
    for (int d = axis + 1; d < rank; d++)
        inner *= dims[d];
    int64_t rows = outer * a->out;
#pragma omp parallel for num_threads(threads_for(rows *inner * 4)) schedule(static)
    for (int64_t q = 0; q < rows; q++) {
        int64_t o = q / a->out, j = q % a->out;
        const float *s0 = src + (size_t)(o * a->in) * (size_t)inner;
        float *yr = dst + (size_t)q * (size_t)inner;
        const int64_t *ix = a->idx + j * 4;
        const float *w = a->w + j * 4;
        int n = a->n[j];
        if (inner == 1) {
            float acc = 0.0f;
            for (int t = 0; t < n; t++)
                acc += w[t] * s0[ix[t]];
            yr[0] = acc;
            continue;
        }
        const float *p0 = s0 + (size_t)ix[0] * (size_t)inner;
        for (int64_t k = 0; k < inner; k++)
            yr[k] = w[0] * p0[k];
        for (int t = 1; t < n; t++) {
            const float *pt = s0 + (size_t)ix[t] * (size_t)inner;
            float wt = w[t];
            for (int64_t k = 0; k < inner; k++)
                yr[k] += wt * pt[k];
        }
    }
}

static dqg_status resize_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    resize_kernel *r = (resize_kernel *)k;
    const char *x = r->in_arg >= 0 ? args[r->in_arg] : r->in_const;
    char *y = args[r->out_arg];
    if (r->nearest) {
        nearest_run(r, x, y);
        return DQG_OK;
    }
    if (r->n_passes == 0) {
        memcpy(y, x, (size_t)r->ynelems * sizeof(float));
        return DQG_OK;
    }
    int64_t dims[DQG_MAX_RANK];
    for (int d = 0; d < r->rank; d++)
        dims[d] = r->ax[d].in;
    const float *src = (const float *)x;
    float *bufs[2] = {(float *)scratch, (float *)((char *)scratch + r->scratch_half)};
    for (int p = 0; p < r->n_passes; p++) {
        int a = r->order[p];
        float *dst = p == r->n_passes - 1 ? (float *)y : bufs[p % 2];
        axis_pass(&r->ax[a], dims, r->rank, a, src, dst);
        dims[a] = r->ax[a].out;
        src = dst;
    }
    return DQG_OK;
}

static void resize_destroy(dqg_kernel *k)
{
    resize_kernel *r = (resize_kernel *)k;
    for (int d = 0; d < DQG_MAX_RANK; d++) {
        free(r->ax[d].idx);
        free(r->ax[d].w);
        free(r->ax[d].n);
    }
    free(r->in_const);
    free(r);
}

dqg_status dqg_kernel_resize_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *x = &g->tensors[op->inputs[0]], *y = &g->tensors[op->outputs[0]];
    const dqg_resize_attrs *a = &op->attrs.resize;
    bool nearest = a->mode == DQG_RESIZE_NEAREST;
    if ((nearest && dqg_dtype_bits(x->dtype) % 8 != 0) || (!nearest && x->dtype != DQG_F32) ||
        x->channels_last || y->channels_last)
        return dqg_set_error(DQG_UNSUPPORTED, "Resize of %s%s", dqg_dtype_name(x->dtype),
                             x->channels_last || y->channels_last ? " channels-last" : "");
    resize_kernel *r = calloc(1, sizeof *r);
    if (!r)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "Resize kernel: out of memory");
    r->base.execute = resize_execute;
    r->base.destroy = resize_destroy;
    r->rank = x->rank;
    r->nearest = nearest;
    r->es = (size_t)dqg_dtype_bits(x->dtype) / 8;
    r->ynelems = y->nelems;
    int64_t s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        r->xstride[d] = s;
        s *= x->dims[d];
    }
    for (int d = 0; d < x->rank; d++) {
        resize_axis *ax = &r->ax[d];
        ax->in = x->dims[d];
        ax->out = y->dims[d];
        ax->idx = malloc((size_t)ax->out * 4 * sizeof *ax->idx);
        ax->w = malloc((size_t)ax->out * 4 * sizeof *ax->w);
        ax->n = malloc((size_t)ax->out);
        if (!ax->idx || !ax->w || !ax->n) {
            resize_destroy(&r->base);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "Resize kernel: out of memory");
        }
        ax->copy = ax->out == ax->in;
        for (int64_t j = 0; j < ax->out; j++) {
            int64_t idx[4];
            double w[4];
            int n = dqg_resize_taps(a, d, ax->in, ax->out, j, idx, w);
            ax->n[j] = (uint8_t)n;
            for (int t = 0; t < 4; t++) {
                ax->idx[j * 4 + t] = t < n ? idx[t] : 0;
                ax->w[j * 4 + t] = t < n ? (float)w[t] : 0.0f;
            }
            ax->copy &= n == 1 && idx[0] == j && w[0] == 1.0;
        }
    }
    if (!nearest) {
        /* Passes: the axes that shrink first, then the others; scratch for
         * the tensors between them. */
        for (int shrink = 1; shrink >= 0; shrink--)
            for (int d = 0; d < x->rank; d++)
                if (!r->ax[d].copy && (r->ax[d].out < r->ax[d].in) == (shrink == 1))
                    r->order[r->n_passes++] = d;
        int64_t dims[DQG_MAX_RANK], biggest = 0;
        for (int d = 0; d < x->rank; d++)
            dims[d] = x->dims[d];
        for (int p = 0; p + 1 < r->n_passes; p++) {
            dims[r->order[p]] = r->ax[r->order[p]].out;
            int64_t n = 1;
            for (int d = 0; d < x->rank; d++)
                n *= dims[d];
            biggest = n > biggest ? n : biggest;
        }
        r->scratch_half = ((size_t)biggest * sizeof(float) + 63) & ~(size_t)63;
        r->base.scratch_size = 2 * r->scratch_half;
    }
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    snprintf(r->base.impl, sizeof r->base.impl, "dqgraph:resize:%s%s", modes[a->mode],
             nearest            ? ""
             : r->n_passes == 1 ? ":1-pass"
                                : ":separable");
    r->out_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    r->in_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    if (r->in_arg < 0) {
        if (!(r->in_const = malloc(x->nbytes ? x->nbytes : 1))) {
            resize_destroy(&r->base);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "Resize kernel: out of memory");
        }
        memcpy(r->in_const, x->data, x->nbytes);
        r->base.bytes = x->nbytes;
    }
    *out = &r->base;
    return DQG_OK;
}
