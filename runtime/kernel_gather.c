/* Gather as copies: for each slice before the axis and each index, one
 * contiguous run of the dimensions after it; GatherElements as one copy per
 * index. Whole-byte types in row-major layout; run-time indices checked on
 * every execution, with the reference's message (constant ones once, when
 * the kernel is built). */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "runtime/kernel.h"

typedef struct gather_kernel {
    dqg_kernel base;
    dqg_op op; /* name and attributes, for messages */
    dqg_tensor idx;
    int64_t outer, dim, inner;
    size_t es;
    int arg[2], out_arg;
    void *cdata[2]; /* constant data or indices */
} gather_kernel;

static dqg_status gather_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    gather_kernel *g = (gather_kernel *)k;
    const char *d = g->arg[0] >= 0 ? args[g->arg[0]] : g->cdata[0];
    const void *ix = g->arg[1] >= 0 ? args[g->arg[1]] : g->cdata[1];
    char *y = args[g->out_arg];
    /* Constant indices were checked when the kernel was built. */
    dqg_status st = g->arg[1] >= 0 ? dqg_gather_check_indices(&g->op, &g->idx, ix, g->dim) : DQG_OK;
    if (st != DQG_OK)
        return st;
    size_t run = (size_t)g->inner * g->es;
    for (int64_t o = 0; o < g->outer; o++)
        for (int64_t i = 0; i < g->idx.nelems; i++) {
            int64_t j = dqg_load_int(g->idx.dtype, ix, i);
            if (j < 0)
                j += g->dim;
            memcpy(y, d + (size_t)(o * g->dim + j) * run, run);
            y += run;
        }
    return DQG_OK;
}

static void gather_destroy(dqg_kernel *k)
{
    gather_kernel *g = (gather_kernel *)k;
    free(g->cdata[0]);
    free(g->cdata[1]);
    free(g->op.name);
    free(g);
}

/* The common end of building either kernel: inputs 0 (data) and 1
 * (indices) of op become kernel arguments or copies of their constant
 * values the kernel owns (counted in *bytes), and constant indices (given,
 * or computed when the graph compiles) are checked once, here, against an
 * axis of `dim`. `own` is the kernel's copy of op (its name copied). */
static dqg_status bind_inputs(const dqg_graph *mg, const dqg_op *op, const dqg_op *own,
                              const dqg_tensor *idx, int64_t dim, int arg[2], void *cdata[2],
                              size_t *bytes, const char *what)
{
    if (op->name && !own->name)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", what);
    for (int i = 0; i < 2; i++) {
        const dqg_tensor *t = &mg->tensors[op->inputs[i]];
        arg[i] = dqg_kernel_arg_index(mg, op->inputs[i]);
        if (arg[i] >= 0)
            continue;
        if (!(cdata[i] = malloc(t->nbytes ? t->nbytes : 1)))
            return dqg_set_error(DQG_OUT_OF_MEMORY, "%s kernel: out of memory", what);
        memcpy(cdata[i], t->data, t->nbytes);
        *bytes += t->nbytes;
    }
    return arg[1] < 0 ? dqg_gather_check_indices(own, idx, cdata[1], dim) : DQG_OK;
}

dqg_status dqg_kernel_gather_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *mg = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *d = &mg->tensors[op->inputs[0]], *ix = &mg->tensors[op->inputs[1]];
    const dqg_tensor *y = &mg->tensors[op->outputs[0]];
    if (dqg_dtype_bits(d->dtype) % 8 != 0 || d->channels_last || y->channels_last)
        return dqg_set_error(DQG_UNSUPPORTED, "Gather of %s%s", dqg_dtype_name(d->dtype),
                             d->channels_last || y->channels_last ? " channels-last" : "");
    gather_kernel *g = calloc(1, sizeof *g);
    if (!g)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "Gather kernel: out of memory");
    g->base.execute = gather_execute;
    g->base.destroy = gather_destroy;
    snprintf(g->base.impl, sizeof g->base.impl, "dqgraph:gather");
    g->op.kind = op->kind;
    g->op.attrs = op->attrs;
    g->op.name = op->name ? strdup(op->name) : NULL;
    g->idx = *ix;
    g->idx.name = NULL;
    g->idx.data = NULL;
    int ax = op->attrs.gather.axis;
    g->dim = d->dims[ax];
    g->outer = g->inner = 1;
    for (int i = 0; i < ax; i++)
        g->outer *= d->dims[i];
    for (int i = ax + 1; i < d->rank; i++)
        g->inner *= d->dims[i];
    g->es = (size_t)dqg_dtype_bits(d->dtype) / 8;
    g->out_arg = dqg_kernel_arg_index(mg, op->outputs[0]);
    dqg_status st =
        bind_inputs(mg, op, &g->op, &g->idx, g->dim, g->arg, g->cdata, &g->base.bytes, "Gather");
    if (st != DQG_OK) {
        gather_destroy(&g->base);
        return st;
    }
    *out = &g->base;
    return DQG_OK;
}

/* ---- GatherElements ---------------------------------------------------------- */

/* One element per index: the output walks indices' shape, and each element
 * is read from data at the same coordinates except on the axis. */
typedef struct gather_elements_kernel {
    dqg_kernel base;
    dqg_op op; /* name and attributes, for messages */
    dqg_tensor idx;
    int rank, axis;
    int64_t dim;                   /* data's dimension on the axis */
    int64_t dstride[DQG_MAX_RANK]; /* data's strides, in elements */
    size_t es;
    int arg[2], out_arg;
    void *cdata[2];
} gather_elements_kernel;

static dqg_status gather_elements_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    gather_elements_kernel *g = (gather_elements_kernel *)k;
    const char *d = g->arg[0] >= 0 ? args[g->arg[0]] : g->cdata[0];
    const void *ix = g->arg[1] >= 0 ? args[g->arg[1]] : g->cdata[1];
    char *y = args[g->out_arg];
    dqg_status st = g->arg[1] >= 0 ? dqg_gather_check_indices(&g->op, &g->idx, ix, g->dim) : DQG_OK;
    if (st != DQG_OK)
        return st;
    const int64_t *dims = g->idx.dims;
    int last = g->rank - 1, ax = g->axis;
    int64_t coord[DQG_MAX_RANK] = {0}, base = 0; /* base: data offset without the axis */
    size_t es = g->es;
    bool s64 = g->idx.dtype == DQG_S64;
    for (int64_t i = 0; i < g->idx.nelems; i++) {
        int64_t j;
        if (s64) {
            memcpy(&j, (const char *)ix + (size_t)i * 8, 8);
        } else {
            int32_t v;
            memcpy(&v, (const char *)ix + (size_t)i * 4, 4);
            j = v;
        }
        if (j < 0)
            j += g->dim;
        memcpy(y + (size_t)i * es, d + (size_t)(base + j * g->dstride[ax]) * es, es);
        for (int a = last; a >= 0; a--) {
            if (a != ax)
                base += g->dstride[a];
            if (++coord[a] < dims[a])
                break;
            if (a != ax)
                base -= g->dstride[a] * dims[a];
            coord[a] = 0;
        }
    }
    return DQG_OK;
}

static void gather_elements_destroy(dqg_kernel *k)
{
    gather_elements_kernel *g = (gather_elements_kernel *)k;
    free(g->cdata[0]);
    free(g->cdata[1]);
    free(g->op.name);
    free(g);
}

dqg_status dqg_kernel_gather_elements_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *mg = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *d = &mg->tensors[op->inputs[0]], *ix = &mg->tensors[op->inputs[1]];
    const dqg_tensor *y = &mg->tensors[op->outputs[0]];
    if (d->channels_last || ix->channels_last || y->channels_last)
        return dqg_set_error(DQG_UNSUPPORTED, "GatherElements of channels-last tensors");
    gather_elements_kernel *g = calloc(1, sizeof *g);
    if (!g)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "GatherElements kernel: out of memory");
    g->base.execute = gather_elements_execute;
    g->base.destroy = gather_elements_destroy;
    snprintf(g->base.impl, sizeof g->base.impl, "dqgraph:gather_elements");
    g->op.kind = op->kind;
    g->op.attrs = op->attrs;
    g->op.name = op->name ? strdup(op->name) : NULL;
    g->idx = *ix;
    g->idx.name = NULL;
    g->idx.data = NULL;
    g->rank = d->rank;
    g->axis = op->attrs.gather.axis;
    g->dim = d->dims[g->axis];
    dqg_strides(d->rank, d->dims, g->dstride);
    g->es = (size_t)dqg_dtype_bits(d->dtype) / 8;
    g->out_arg = dqg_kernel_arg_index(mg, op->outputs[0]);
    dqg_status st = bind_inputs(mg, op, &g->op, &g->idx, g->dim, g->arg, g->cdata, &g->base.bytes,
                                "GatherElements");
    if (st != DQG_OK) {
        gather_elements_destroy(&g->base);
        return st;
    }
    *out = &g->base;
    return DQG_OK;
}
