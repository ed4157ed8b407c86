/* A DynamicQuantizeLinear partition on dqgraph's kernel (dynq_kernel.c).
 * Outputs the graph does not read (a scale or zero point nobody uses) are
 * written into scratch. */
#include <stdlib.h>
#include <string.h>

#include "runtime/dynq_kernel.h"
#include "runtime/kernel.h"

typedef struct dynq_kernel {
    dqg_kernel base;
    int x_arg, out_arg[3]; /* -1: x is a constant (x_const); outputs into scratch */
    void *x_const;
    int64_t n;
    char name[128];
} dynq_kernel;

static dqg_status dynq_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    const dynq_kernel *d = (const dynq_kernel *)k;
    /* Scratch: scale, zero point, then y. */
    void *out[3] = {(char *)scratch + 64, scratch, (char *)scratch + 4};
    for (int o = 0; o < 3; o++)
        if (d->out_arg[o] >= 0)
            out[o] = args[d->out_arg[o]];
    const float *x = d->x_arg >= 0 ? args[d->x_arg] : d->x_const;
    return dqg_dynq_run(x, d->n, out[0], out[1], out[2], d->name);
}

static void dynq_destroy(dqg_kernel *k)
{
    free(((dynq_kernel *)k)->x_const);
    free(k);
}

dqg_status dqg_kernel_dynamic_quantize_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_graph *g = req->mini;
    const dqg_op *op = dqg_req_op(req, DQG_ROLE_MAIN);
    dynq_kernel *d = calloc(1, sizeof *d);
    if (!d)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "DynamicQuantizeLinear kernel: out of memory");
    d->base.execute = dynq_execute;
    d->base.destroy = dynq_destroy;
    d->x_arg = dqg_kernel_arg_index(g, op->inputs[0]);
    d->n = g->tensors[op->inputs[0]].nelems;
    if (d->x_arg < 0) {
        /* A constant source (a partition that was not folded): the
         * kernel keeps its own copy. */
        const dqg_tensor *x = &g->tensors[op->inputs[0]];
        if (!(d->x_const = malloc(x->nbytes ? x->nbytes : 1))) {
            free(d);
            return dqg_set_error(DQG_OUT_OF_MEMORY, "DynamicQuantizeLinear kernel: out of memory");
        }
        memcpy(d->x_const, x->data, x->nbytes);
        d->base.bytes = x->nbytes;
    }
    for (int o = 0; o < 3; o++)
        d->out_arg[o] = dqg_kernel_arg_index(g, op->outputs[o]);
    d->base.scratch_size = 64 + (d->out_arg[0] < 0 ? (size_t)d->n : 0);
    snprintf(d->name, sizeof d->name, "%s", op->name);
    snprintf(d->base.impl, sizeof d->base.impl, "own:dynamic-quantize");
    *out = &d->base;
    return DQG_OK;
}
