/* The reference kernel: runs a partition's ops with the reference
 * interpreter's per-op code. It is the reference backend, and the fallback
 * for op kinds that have no faster kernel yet (partition info says so).
 * The value tables (f32 and, for MatMulInteger-like results, double) and
 * the partition's internal tensors live in the caller's scratch, so
 * executions allocate nothing. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct reference_kernel {
    dqg_kernel base;
    dqg_graph *graph;   /* private copy of the partition graph */
    size_t *offset;     /* per tensor: scratch offset of an internal tensor */
    size_t *wide;       /* per tensor: scratch offset of its values in double, or 0 */
    size_t table_bytes; /* the value table at the start of scratch, then the double ones */
} reference_kernel;

static dqg_status reference_execute(dqg_kernel *k, void *const *args, void *scratch)
{
    reference_kernel *r = (reference_kernel *)k;
    const dqg_graph *g = r->graph;
    void **data = scratch;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const dqg_tensor *tt = &g->tensors[t];
        data[t] = tt->kind == DQG_TENSOR_CONSTANT ? tt->data : (char *)scratch + r->offset[t];
    }
    /* Channels-last inputs and outputs are converted to and from the
     * row-major layout the reference code computes in (scratch). */
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const dqg_tensor *t = &g->tensors[g->inputs[i]];
        data[g->inputs[i]] = args[i];
        if (t->channels_last)
            dqg_layout_convert(
                t, args[i], data[g->inputs[i]] = (char *)scratch + r->offset[g->inputs[i]], false);
    }
    for (int32_t i = 0; i < g->n_outputs; i++)
        data[g->outputs[i]] = g->tensors[g->outputs[i]].channels_last
                                  ? (char *)scratch + r->offset[g->outputs[i]]
                                  : args[g->n_inputs + i];
    double **wide = (double **)((char *)scratch + r->table_bytes);
    for (int32_t t = 0; t < g->n_tensors; t++)
        wide[t] = r->wide[t] ? (double *)((char *)scratch + r->wide[t]) : NULL;
    dqg_ref_values values = {.data = data, .wide = wide};
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op_def *def = dqg_op_def_of(g->ops[i].kind);
        dqg_status st = def->reference(g, &g->ops[i], &values);
        if (st != DQG_OK)
            return st;
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const dqg_tensor *t = &g->tensors[g->outputs[i]];
        if (t->channels_last)
            dqg_layout_convert(t, data[g->outputs[i]], args[g->n_inputs + i], true);
    }
    return DQG_OK;
}

static void reference_destroy(dqg_kernel *k)
{
    reference_kernel *r = (reference_kernel *)k;
    dqg_graph_destroy(r->graph);
    free(r->offset);
    free(r->wide);
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
    const dqg_graph *g = r->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op_def *def = dqg_op_def_of(g->ops[i].kind);
        if (!def || !def->reference) {
            reference_destroy(&r->base);
            return dqg_set_error(DQG_UNSUPPORTED, "%s '%s': no reference implementation",
                                 dqg_op_kind_name(g->ops[i].kind), g->ops[i].name);
        }
    }
    r->offset = calloc((size_t)g->n_tensors + 1, sizeof *r->offset);
    r->wide = calloc((size_t)g->n_tensors + 1, sizeof *r->wide);
    if (!r->offset || !r->wide) {
        reference_destroy(&r->base);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "reference kernel: out of memory");
    }
    /* Scratch: the value table, then every tensor produced and consumed
     * inside the partition, and a row-major copy of each channels-last
     * input and output. */
    bool *is_wide = NULL;
    if ((st = dqg_ref_wide(g, &is_wide)) != DQG_OK) {
        reference_destroy(&r->base);
        return st;
    }
    r->table_bytes = ((size_t)g->n_tensors * sizeof(void *) + 63) & ~(size_t)63;
    size_t pos = 2 * r->table_bytes;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const dqg_tensor *tt = &g->tensors[t];
        if (tt->kind == DQG_TENSOR_CONSTANT)
            r->base.bytes += tt->nbytes;
        else if ((tt->kind == DQG_TENSOR_INTERMEDIATE && !tt->is_output) || tt->channels_last) {
            r->offset[t] = pos;
            pos += (tt->nbytes + 63) & ~(size_t)63;
        }
        if (is_wide[t]) {
            r->wide[t] = pos;
            pos += ((size_t)tt->nelems * sizeof(double) + 63) & ~(size_t)63;
        }
    }
    free(is_wide);
    r->base.execute = reference_execute;
    r->base.destroy = reference_destroy;
    r->base.scratch_size = pos;
    snprintf(r->base.impl, sizeof r->base.impl, "reference");
    *out = &r->base;
    return DQG_OK;
}
