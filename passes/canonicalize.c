/* canonicalize: removes ops whose results nobody uses (no consumer, not a
 * graph output), so that later passes see only live ops and single-consumer
 * checks are not fooled by dead readers; and gives every reader of a
 * dequantize its own copy of it. Quantization tools write one
 * DequantizeLinear for a tensor read by several ops (a block's input read
 * by a convolution and by the residual Add), or read by an op and by the
 * caller (a feature map that is also a graph output); a fused kernel
 * computes its source's dequantize itself, so each reader needs one it can
 * own. */
#include <stdlib.h>
#include <string.h>

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

/* Inserts, right before each reader of a shared dequantize but the first
 * (every reader, when the dequantize's result is also a graph output, which
 * keeps the original), a copy of that dequantize whose result only this
 * reader reads; ops stay in topological order. */
static dqg_status split_shared_dequantize(dqg_pass_state *s, const int *readers)
{
    dqg_graph *g = s->graph;
    int32_t n = g->n_ops, n_tensors = g->n_tensors, extra = 0;
    for (int32_t i = 0; i < n; i++) {
        const dqg_op *op = &g->ops[i];
        if (!op->removed && op->kind == DQG_OP_DEQUANTIZE) {
            dqg_tensor_id t = op->outputs[0];
            int own = g->tensors[t].is_output ? 0 : 1; /* readers that keep the original */
            extra += readers[t] > own ? readers[t] - own : 0;
        }
    }
    if (extra == 0)
        return DQG_OK;
    dqg_op *ops = calloc((size_t)(n + extra), sizeof *ops);
    int32_t *moved = malloc(((size_t)n + 1) * sizeof *moved);
    int32_t *kept_by = malloc(((size_t)n_tensors + 1) * sizeof *kept_by);
    bool *is_copy = calloc((size_t)(n + extra), sizeof *is_copy);
    if (!ops || !moved || !kept_by || !is_copy) {
        free(ops);
        free(moved);
        free(kept_by);
        free(is_copy);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "canonicalize: out of memory");
    }
    /* -1: no reader has kept the original yet; -2: a graph output keeps it. */
    for (int32_t t = 0; t < n_tensors; t++)
        kept_by[t] = g->tensors[t].is_output ? -2 : -1;
    dqg_status st = DQG_OK;
    int32_t j = 0;
    for (int32_t i = 0; i < n && st == DQG_OK; i++) {
        dqg_op *op = &g->ops[i];
        for (int k = 0; k < op->n_inputs && !op->removed && st == DQG_OK; k++) {
            dqg_tensor_id t = op->inputs[k];
            int32_t p = t == DQG_NONE || t >= n_tensors ? -1 : g->tensors[t].producer;
            if (p < 0 || g->ops[p].kind != DQG_OP_DEQUANTIZE ||
                readers[t] < (g->tensors[t].is_output ? 1 : 2) || kept_by[t] == i)
                continue;
            if (kept_by[t] == -1) {
                kept_by[t] = i; /* the first reader keeps the original */
                continue;
            }
            const dqg_op *dq = &g->ops[p];
            dqg_op *c = &ops[j];
            *c = *dq;
            c->inputs = c->outputs = NULL;
            char name[300];
            snprintf(name, sizeof name, "%s/for_%s", dq->name, op->name);
            c->name = strdup(name);
            dqg_tensor_id nt = dqg_graph_add_intermediate_internal(g, name, t, j);
            if (!c->name || nt == DQG_NONE ||
                !dqg_op_alloc_io(c, dq->n_inputs, dq->inputs, 1, &nt)) {
                free(c->name);
                c->name = NULL;
                st = dqg_set_error(DQG_OUT_OF_MEMORY, "canonicalize: out of memory");
                break;
            }
            is_copy[j++] = true;
            int uses = 0;
            for (int m = k; m < op->n_inputs; m++)
                if (op->inputs[m] == t) {
                    op->inputs[m] = nt;
                    uses++;
                }
            g->tensors[nt].use_count = uses;
            g->tensors[t].use_count -= uses;
            st = dqg_explain(s, "canonicalized: Dequantize '%s' is computed again for %s '%s'%s",
                             dq->name, dqg_op_kind_name(op->kind), op->name,
                             g->tensors[t].is_output ? ": its result is also a graph output"
                                                     : ", which reads it with other ops");
        }
        moved[i] = j;
        ops[j++] = *op;
    }
    if (st == DQG_OK) {
        /* The originals' producers point into the new array (the copies'
         * already do). */
        for (int32_t t = 0; t < n_tensors; t++)
            if (g->tensors[t].producer >= 0)
                g->tensors[t].producer = moved[g->tensors[t].producer];
        free(g->ops);
        g->ops = ops;
        g->n_ops = j;
        g->cap_ops = n + extra;
    } else {
        /* The copies made so far are dropped (the originals stay in g->ops;
         * the caller frees the graph). */
        for (int32_t k = 0; k < j; k++)
            if (is_copy[k]) {
                free(ops[k].name);
                dqg_op_free_io(&ops[k]);
            }
        free(ops);
    }
    free(moved);
    free(kept_by);
    free(is_copy);
    return st;
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
    /* Readers as distinct ops, for the split. */
    for (int32_t t = 0; t < g->n_tensors; t++)
        readers[t] = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        for (int k = 0; k < op->n_inputs && !op->removed; k++) {
            bool again = false;
            for (int m = 0; m < k; m++)
                again |= op->inputs[m] == op->inputs[k];
            if (op->inputs[k] != DQG_NONE && !again)
                readers[op->inputs[k]]++;
        }
    }
    dqg_status st = s->options->disable_fusion ? DQG_OK : split_shared_dequantize(s, readers);
    free(readers);
    return st;
}
