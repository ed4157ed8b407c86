/* Copies of graphs: a deep clone for the passes to rewrite, and the
 * extraction of a group of ops as a stand-alone graph (what the runtime
 * compiles and what the cache key describes). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static dqg_status oom(dqg_graph *partial)
{
    dqg_graph_destroy(partial);
    return dqg_set_error(DQG_OUT_OF_MEMORY, "graph copy: out of memory");
}

/* Copies tensor `src` into slot `dst`: the name always, constant data
 * unless `borrow` (then the pointer is shared and marked borrowed). */
static bool copy_tensor(dqg_tensor *dst, const dqg_tensor *src, bool borrow)
{
    *dst = *src;
    dst->name = dup_str(src->name);
    dst->data = NULL;
    dst->borrowed = false;
    if (!dst->name)
        return false;
    if (src->data && borrow) {
        dst->data = src->data;
        dst->borrowed = true;
    } else if (src->data) {
        dst->data = malloc(src->nbytes ? src->nbytes : 1);
        if (!dst->data)
            return false;
        memcpy(dst->data, src->data, src->nbytes);
    }
    return true;
}

static dqg_status clone(const dqg_graph *g, dqg_graph **out, bool borrow)
{
    dqg_graph *c = calloc(1, sizeof *c);
    if (!c)
        return oom(NULL);
    int32_t nt = g->n_tensors, no = g->n_ops;
    c->tensors = calloc((size_t)nt + 1, sizeof *c->tensors);
    c->ops = calloc((size_t)no + 1, sizeof *c->ops);
    c->inputs = calloc((size_t)g->n_inputs + 1, sizeof *c->inputs);
    c->outputs = calloc((size_t)g->n_outputs + 1, sizeof *c->outputs);
    if (!c->tensors || !c->ops || !c->inputs || !c->outputs)
        return oom(c);
    c->cap_tensors = nt + 1;
    c->cap_ops = no + 1;
    c->cap_inputs = g->n_inputs + 1;
    c->cap_outputs = g->n_outputs + 1;
    for (int32_t i = 0; i < nt; i++) {
        c->n_tensors = i + 1; /* so destroy frees what was copied */
        if (!copy_tensor(&c->tensors[i], &g->tensors[i], borrow))
            return oom(c);
    }
    for (int32_t i = 0; i < no; i++) {
        const dqg_op *src = &g->ops[i];
        c->ops[i] = *src;
        c->ops[i].inputs = c->ops[i].outputs = NULL;
        c->ops[i].name = dup_str(src->name);
        c->n_ops = i + 1;
        if (!c->ops[i].name ||
            !dqg_op_alloc_io(&c->ops[i], src->n_inputs, src->inputs, src->n_outputs, src->outputs))
            return oom(c);
    }
    /* A graph without inputs (all constants) may have no inputs array. */
    if (g->n_inputs)
        memcpy(c->inputs, g->inputs, (size_t)g->n_inputs * sizeof *c->inputs);
    if (g->n_outputs)
        memcpy(c->outputs, g->outputs, (size_t)g->n_outputs * sizeof *c->outputs);
    c->n_inputs = g->n_inputs;
    c->n_outputs = g->n_outputs;
    c->name_counter = g->name_counter;
    c->finalized = g->finalized;
    *out = c;
    return DQG_OK;
}

dqg_status dqg_graph_clone(const dqg_graph *g, dqg_graph **out)
{
    return clone(g, out, false);
}

dqg_status dqg_graph_clone_borrowing(const dqg_graph *g, dqg_graph **out)
{
    return clone(g, out, true);
}

void dqg_graph_drop_borrowed(dqg_graph *g)
{
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].borrowed) {
            g->tensors[i].data = NULL;
            g->tensors[i].borrowed = false;
        }
}

dqg_status dqg_graph_extract(const dqg_graph *g, const int32_t *ops, int n_ops,
                             const dqg_tensor_id *outputs, int n_outputs, dqg_graph **out,
                             dqg_tensor_id *input_map, int *n_input_map)
{
    *out = NULL;
    int cap = 1 + n_outputs;
    for (int k = 0; k < n_ops; k++)
        cap += g->ops[ops[k]].n_inputs + g->ops[ops[k]].n_outputs;
    dqg_tensor_id *map = malloc((size_t)g->n_tensors * sizeof *map);
    dqg_graph *c = calloc(1, sizeof *c);
    if (!map || !c) {
        free(map);
        return oom(c);
    }
    for (int32_t i = 0; i < g->n_tensors; i++)
        map[i] = DQG_NONE;
    c->tensors = calloc((size_t)cap, sizeof *c->tensors);
    c->ops = calloc((size_t)n_ops + 1, sizeof *c->ops);
    c->inputs = calloc((size_t)cap, sizeof *c->inputs);
    c->outputs = calloc((size_t)n_outputs + 1, sizeof *c->outputs);
    if (!c->tensors || !c->ops || !c->inputs || !c->outputs) {
        free(map);
        return oom(c);
    }
    c->cap_tensors = c->cap_inputs = cap;
    c->cap_ops = n_ops + 1;
    c->cap_outputs = n_outputs + 1;
    int n_in = 0;
    for (int k = 0; k < n_ops; k++) {
        const dqg_op *src = &g->ops[ops[k]];
        dqg_op *op = &c->ops[c->n_ops];
        *op = *src;
        op->inputs = op->outputs = NULL;
        op->name = dup_str(src->name);
        c->n_ops++;
        if (!op->name ||
            !dqg_op_alloc_io(op, src->n_inputs, src->inputs, src->n_outputs, src->outputs))
            goto fail;
        for (int i = 0; i < src->n_inputs; i++) {
            dqg_tensor_id t = src->inputs[i];
            if (t == DQG_NONE)
                continue;
            if (map[t] == DQG_NONE) {
                dqg_tensor *nt = &c->tensors[c->n_tensors];
                if (!copy_tensor(nt, &g->tensors[t], true)) {
                    c->n_tensors++;
                    goto fail;
                }
                nt->use_count = 0;
                nt->is_output = false;
                nt->producer = -1;
                if (nt->kind != DQG_TENSOR_CONSTANT) {
                    nt->kind = DQG_TENSOR_INPUT;
                    c->inputs[c->n_inputs++] = c->n_tensors;
                    if (input_map)
                        input_map[n_in] = t;
                    n_in++;
                }
                map[t] = c->n_tensors++;
            }
            op->inputs[i] = map[t];
            c->tensors[map[t]].use_count++;
        }
        for (int o = 0; o < src->n_outputs; o++) {
            dqg_tensor_id t = src->outputs[o];
            dqg_tensor *nt = &c->tensors[c->n_tensors];
            if (!copy_tensor(nt, &g->tensors[t], true)) {
                c->n_tensors++;
                goto fail;
            }
            nt->use_count = 0;
            nt->is_output = false;
            nt->producer = c->n_ops - 1;
            nt->kind = DQG_TENSOR_INTERMEDIATE;
            map[t] = c->n_tensors++;
            op->outputs[o] = map[t];
        }
    }
    for (int k = 0; k < n_outputs; k++) {
        dqg_tensor_id t = map[outputs[k]];
        if (t == DQG_NONE || c->tensors[t].producer < 0) {
            free(map);
            dqg_graph_destroy(c);
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "graph extract: output '%s' is not produced by the ops",
                                 g->tensors[outputs[k]].name);
        }
        c->tensors[t].is_output = true;
        c->outputs[c->n_outputs++] = t;
    }
    if (n_input_map)
        *n_input_map = n_in;
    c->finalized = true;
    free(map);
    *out = c;
    return DQG_OK;
fail:
    free(map);
    return oom(c);
}
