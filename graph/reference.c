/* The reference interpreter: runs a finalized graph op by op in creation
 * order (which is a topological order: an op can only read tensors that
 * existed when it was added), with each op's plain-C reference compute. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

dqg_status dqg_reference_run(const dqg_graph *g, const dqg_buffer *inputs, size_t n_inputs,
                             dqg_buffer *outputs, size_t n_outputs)
{
    if (!g)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "reference run: graph is NULL");
    if (!g->finalized)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "reference run: graph is not finalized; call dqg_graph_finalize()");
    if ((n_inputs && !inputs) || (n_outputs && !outputs))
        return dqg_set_error(DQG_INVALID_ARGUMENT, "reference run: buffer array is NULL");

    dqg_status st = DQG_OK;
    bool *is_wide = NULL;
    dqg_tensor_id *in_ids = calloc(n_inputs + 1, sizeof *in_ids);
    dqg_tensor_id *out_ids = calloc(n_outputs + 1, sizeof *out_ids);
    void **data = calloc((size_t)g->n_tensors, sizeof *data);
    double **wide = calloc((size_t)g->n_tensors + 1, sizeof *wide);
    bool *owned = calloc((size_t)g->n_tensors, sizeof *owned);
    if (!in_ids || !out_ids || !data || !wide || !owned) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "reference run: out of memory");
        goto done;
    }
    if ((st = dqg_bind_buffers(g, "reference run", inputs, n_inputs, outputs, n_outputs, in_ids,
                               out_ids)) != DQG_OK ||
        (st = dqg_ref_wide(g, &is_wide)) != DQG_OK)
        goto done;

    /* Inputs and constants are read in place; every op output (graph outputs
     * included) gets its own zeroed buffer, copied out only on success. */
    for (size_t i = 0; i < n_inputs; i++)
        data[in_ids[i]] = inputs[i].data;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const dqg_tensor *tt = &g->tensors[t];
        if (tt->kind == DQG_TENSOR_CONSTANT) {
            data[t] = tt->data;
        } else if (tt->kind == DQG_TENSOR_INTERMEDIATE) {
            data[t] = calloc(1, tt->nbytes ? tt->nbytes : 1);
            if (!data[t]) {
                st = dqg_set_error(DQG_OUT_OF_MEMORY,
                                   "reference run: out of memory for tensor '%s' (%zu bytes)",
                                   tt->name, tt->nbytes);
                goto done;
            }
            owned[t] = true;
            if (is_wide[t] &&
                !(wide[t] = malloc((size_t)(tt->nelems ? tt->nelems : 1) * sizeof(double)))) {
                st = dqg_set_error(DQG_OUT_OF_MEMORY,
                                   "reference run: out of memory for tensor '%s' in double",
                                   tt->name);
                goto done;
            }
        }
    }
    dqg_ref_values values = {.data = data, .wide = wide};
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op_def *def = dqg_op_def_of(g->ops[i].kind);
        if (!def || !def->reference) {
            st = dqg_set_error(DQG_UNSUPPORTED, "%s '%s': no reference implementation",
                               dqg_op_kind_name(g->ops[i].kind), g->ops[i].name);
            goto done;
        }
        if ((st = def->reference(g, &g->ops[i], &values)) != DQG_OK)
            goto done;
    }
    for (size_t i = 0; i < n_outputs; i++)
        memcpy(outputs[i].data, data[out_ids[i]], outputs[i].size);

done:
    if (data && owned)
        for (int32_t t = 0; t < g->n_tensors; t++)
            if (owned[t])
                free(data[t]);
    if (wide)
        for (int32_t t = 0; t < g->n_tensors; t++)
            free(wide[t]);
    free(wide);
    free(is_wide);
    free(owned);
    free(data);
    free(in_ids);
    free(out_ids);
    return st;
}

dqg_status dqg_ref_wide(const dqg_graph *g, bool **out)
{
    /* The one reader of each tensor: -1 none yet, -2 several. */
    int32_t *reader = malloc(((size_t)g->n_tensors + 1) * sizeof *reader);
    bool *wide = calloc((size_t)g->n_tensors + 1, sizeof *wide);
    *out = NULL;
    if (!reader || !wide) {
        free(reader);
        free(wide);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "reference run: out of memory");
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        reader[t] = -1;
    for (int32_t i = 0; i < g->n_ops; i++)
        for (int k = 0; k < g->ops[i].n_inputs; k++) {
            dqg_tensor_id t = g->ops[i].inputs[k];
            if (t >= 0)
                reader[t] = reader[t] == -1 ? i : -2;
        }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const dqg_tensor *tt = &g->tensors[t];
        int32_t r = reader[t];
        if (tt->producer < 0 || tt->is_output || r < 0)
            continue;
        dqg_op_kind pk = g->ops[tt->producer].kind;
        wide[t] = (pk == DQG_OP_MATMUL || pk == DQG_OP_CONVOLUTION) &&
                  g->ops[r].kind == DQG_OP_TYPECAST &&
                  dqg_dtype_is_integer(g->ops[r].attrs.typecast.to);
    }
    free(reader);
    *out = wide;
    return DQG_OK;
}
