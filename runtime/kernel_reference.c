/* The reference kernel: runs a partition's ops with the reference
 * interpreter. It is the reference backend, and the fallback for op kinds
 * that have no faster kernel yet (partition info says so). */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct reference_kernel {
    dqg_kernel base;
    dqg_graph *graph; /* private copy of the mini graph */
    int n_in, n_out;
    dqg_buffer *bufs; /* scratch binding array: filled per execution */
} reference_kernel;

static dqg_status reference_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    reference_kernel *r = (reference_kernel *)k;
    /* Each execution binds its own buffers; the array lives in the caller's
     * scratch so concurrent executions never share it. */
    dqg_buffer *b = scratch;
    for (int i = 0; i < r->n_in + r->n_out; i++) {
        dqg_tensor_id id = i < r->n_in ? r->graph->inputs[i] : r->graph->outputs[i - r->n_in];
        b[i] = (dqg_buffer){.id = id, .data = args[i], .size = r->graph->tensors[id].nbytes};
    }
    return dqg_reference_run(r->graph, b, (size_t)r->n_in, b + r->n_in, (size_t)r->n_out);
}

static void reference_destroy(dqg_kernel *k)
{
    reference_kernel *r = (reference_kernel *)k;
    dqg_graph_destroy(r->graph);
    free(r);
}

dqg_status dqg_kernel_reference_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    reference_kernel *r = calloc(1, sizeof *r);
    if (!r)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "reference kernel: out of memory");
    dqg_status st = dqg_graph_clone(req->mini, &r->graph);
    if (st != DQG_OK) {
        free(r);
        return st;
    }
    r->n_in = r->graph->n_inputs;
    r->n_out = r->graph->n_outputs;
    r->base.execute = reference_execute;
    r->base.destroy = reference_destroy;
    r->base.scratch_size = (size_t)(r->n_in + r->n_out) * sizeof(dqg_buffer);
    for (int32_t i = 0; i < r->graph->n_tensors; i++)
        if (r->graph->tensors[i].kind == DQG_TENSOR_CONSTANT)
            r->base.bytes += r->graph->tensors[i].nbytes;
    snprintf(r->base.impl, sizeof r->base.impl, "reference");
    *out = &r->base;
    return DQG_OK;
}
