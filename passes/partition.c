/* partition: fixes each partition's externally visible outputs (tensors
 * read by another partition, or graph outputs) and orders the partitions so
 * that producers come first. Linear in the size of the graph. */
#include <stdlib.h>

#include "passes/passes.h"

static int last_op(const dqg_partition *p)
{
    return p->ops[p->n_ops - 1];
}

static int by_last_op(const void *a, const void *b)
{
    int x = last_op(a), y = last_op(b);
    return (x > y) - (x < y);
}

dqg_status dqg_pass_partition(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    const dqg_consumers *c = &s->cons;
    /* Partition order by last op is topological: a partition's results are
     * produced by its last op or earlier, and every reader comes later. */
    qsort(s->parts, (size_t)s->n_parts, sizeof *s->parts, by_last_op);
    for (int p = 0; p < s->n_parts; p++)
        for (int k = 0; k < s->parts[p].n_ops; k++)
            s->group[s->parts[p].ops[k]] = p;
    for (int p = 0; p < s->n_parts; p++) {
        dqg_partition *part = &s->parts[p];
        int cap = 0;
        for (int k = 0; k < part->n_ops; k++)
            cap += g->ops[part->ops[k]].n_outputs;
        free(part->outputs);
        part->n_outputs = 0;
        part->outputs = malloc((size_t)cap * sizeof *part->outputs);
        if (!part->outputs)
            return dqg_set_error(DQG_OUT_OF_MEMORY, "partition: out of memory");
        for (int k = 0; k < part->n_ops; k++) {
            const dqg_op *op = &g->ops[part->ops[k]];
            for (int o = 0; o < op->n_outputs; o++) {
                dqg_tensor_id t = op->outputs[o];
                bool visible = g->tensors[t].is_output;
                for (int32_t e = c->first[t]; e < c->first[t + 1] && !visible; e++)
                    visible = s->group[c->list[e]] != p;
                if (visible)
                    part->outputs[part->n_outputs++] = t;
            }
        }
    }
    return DQG_OK;
}
