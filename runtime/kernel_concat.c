/* Concat as copies: for each slice of the dimensions before the axis, every
 * input's contiguous chunk goes to its place in the output row. Whole-byte
 * types only (4-bit ones run on the reference kernel). Constant inputs are
 * read from the kernel's own copy. Channels-last tensors joined along the
 * channels are joined along their last stored axis. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct concat_kernel {
    dqg_kernel base;
    int n;
    int *arg;          /* per input: its arg index, or -1 for a constant */
    const void **data; /* per input: the constant's copy */
    size_t *chunk;     /* per input: bytes per outer slice */
    size_t row;        /* output bytes per outer slice */
    int64_t outer;
    int out_arg;
} concat_kernel;

static dqg_status concat_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    (void)scratch;
    concat_kernel *c = (concat_kernel *)k;
    char *y = args[c->out_arg];
    size_t at = 0;
    for (int i = 0; i < c->n; i++) {
        const char *x = c->arg[i] >= 0 ? args[c->arg[i]] : c->data[i];
        size_t chunk = c->chunk[i];
        for (int64_t o = 0; o < c->outer; o++)
            memcpy(y + (size_t)o * c->row + at, x + (size_t)o * chunk, chunk);
        at += chunk;
    }
    return DQG_OK;
}

static void concat_destroy(dqg_kernel *k)
{
    concat_kernel *c = (concat_kernel *)k;
    if (c->data)
        for (int i = 0; i < c->n; i++)
            free((void *)c->data[i]);
    free(c->data);
    free(c->arg);
    free(c->chunk);
    free(c);
}

/* The dimensions in memory order: [N, X..., C] for a channels-last tensor. */
static void stored_dims(const dqg_tensor *t, int64_t *d)
{
    for (int i = 0; i < t->rank; i++)
        d[i] = t->dims[i];
    if (t->channels_last) {
        for (int i = 1; i + 1 < t->rank; i++)
            d[i] = t->dims[i + 1];
        d[t->rank - 1] = t->dims[1];
    }
}

dqg_status dqg_kernel_concat_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    const dqg_tensor *y = &g->tensors[op->outputs[0]];
    if (dqg_dtype_bits(y->dtype) % 8 != 0)
        return dqg_set_error(DQG_UNSUPPORTED, "Concat of %s elements", dqg_dtype_name(y->dtype));
    /* Channels-last tensors, all of them, joined along the channels: the
     * same copies along the last stored axis, [N, X..., C]. */
    bool cl = y->channels_last;
    for (int i = 0; i < op->n_inputs; i++)
        if (g->tensors[op->inputs[i]].channels_last != cl)
            return dqg_set_error(DQG_UNSUPPORTED, "Concat of tensors in different layouts");
    if (cl && op->attrs.concat.axis != 1)
        return dqg_set_error(DQG_UNSUPPORTED, "Concat of channels-last tensors along axis %d",
                             op->attrs.concat.axis);
    concat_kernel *c = calloc(1, sizeof *c);
    if (!c)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "Concat kernel: out of memory");
    c->base.execute = concat_execute;
    c->base.destroy = concat_destroy;
    snprintf(c->base.impl, sizeof c->base.impl, "dqgraph:concat");
    c->n = op->n_inputs;
    c->arg = calloc((size_t)c->n, sizeof *c->arg);
    c->data = calloc((size_t)c->n, sizeof *c->data);
    c->chunk = calloc((size_t)c->n, sizeof *c->chunk);
    if (!c->arg || !c->data || !c->chunk) {
        concat_destroy(&c->base);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "Concat kernel: out of memory");
    }
    int ax = cl ? y->rank - 1 : op->attrs.concat.axis;
    int64_t yd[DQG_MAX_RANK];
    stored_dims(y, yd);
    size_t es = (size_t)dqg_dtype_bits(y->dtype) / 8;
    int64_t inner = 1;
    c->outer = 1;
    for (int d = 0; d < ax; d++)
        c->outer *= yd[d];
    for (int d = ax + 1; d < y->rank; d++)
        inner *= yd[d];
    c->row = (size_t)(yd[ax] * inner) * es;
    c->out_arg = dqg_kernel_arg_index(g, op->outputs[0]);
    for (int i = 0; i < c->n; i++) {
        const dqg_tensor *t = &g->tensors[op->inputs[i]];
        int64_t td[DQG_MAX_RANK];
        stored_dims(t, td);
        c->chunk[i] = (size_t)(td[ax] * inner) * es;
        c->arg[i] = dqg_kernel_arg_index(g, op->inputs[i]);
        if (c->arg[i] < 0) {
            void *d = malloc(t->nbytes ? t->nbytes : 1);
            if (!d) {
                concat_destroy(&c->base);
                return dqg_set_error(DQG_OUT_OF_MEMORY, "Concat kernel: out of memory");
            }
            memcpy(d, t->data, t->nbytes);
            c->data[i] = d;
            c->base.bytes += t->nbytes;
        }
    }
    *out = &c->base;
    return DQG_OK;
}
