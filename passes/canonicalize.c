/* canonicalize: removes ops whose results nobody uses (no consumer, not a
 * graph output), so that later passes see only live ops and single-consumer
 * checks are not fooled by dead readers. */
#include <stdlib.h>

#include "passes/passes.h"

static bool op_is_live(const dqg_graph *g, int32_t i, const int *readers)
{
    const dqg_op *op = &g->ops[i];
    for (int o = 0; o < op->n_outputs; o++) {
        dqg_tensor_id t = op->outputs[o];
        if (g->tensors[t].is_output || readers[t] > 0)
            return true;
    }
    return false;
}

dqg_status dqg_pass_canonicalize(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    int *readers = calloc((size_t)g->n_tensors + 1, sizeof *readers);
    if (!readers)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "canonicalize: out of memory");
    for (int32_t i = 0; i < g->n_ops; i++)
        for (int k = 0; k < g->ops[i].n_inputs; k++)
            if (g->ops[i].inputs[k] != DQG_NONE)
                readers[g->ops[i].inputs[k]]++;
    /* Reverse order: removing a consumer may make its producer dead too. */
    for (int32_t i = g->n_ops - 1; i >= 0; i--) {
        dqg_op *op = &g->ops[i];
        if (op->removed || op_is_live(g, i, readers))
            continue;
        op->removed = true;
        for (int k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] != DQG_NONE)
                readers[op->inputs[k]]--;
        dqg_status st = dqg_explain(s, "removed: %s '%s': its result is never used",
                                    dqg_op_kind_name(op->kind), op->name);
        if (st != DQG_OK) {
            free(readers);
            return st;
        }
    }
    free(readers);
    return DQG_OK;
}
