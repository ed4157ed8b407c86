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
    if (g->names)
        dqg_graph_index_names(c);
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

/* Tensor ids of the source graph -> ids in the extract: a small hash map,
 * so that extracting a partition costs its own size, not the graph's. */
typedef struct id_map {
    int32_t *key, *val;
    size_t mask;
} id_map;

static bool id_map_init(id_map *m, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap <<= 1;
    m->key = malloc(cap * sizeof *m->key);
    m->val = malloc(cap * sizeof *m->val);
    m->mask = cap - 1;
    if (!m->key || !m->val)
        return false;
    for (size_t i = 0; i < cap; i++)
        m->key[i] = -1;
    return true;
}

static size_t id_map_slot(const id_map *m, int32_t k)
{
    size_t i = ((uint32_t)k * 2654435761u) & m->mask;
    while (m->key[i] != -1 && m->key[i] != k)
        i = (i + 1) & m->mask;
    return i;
}

static dqg_tensor_id id_map_get(const id_map *m, int32_t k)
{
    size_t i = id_map_slot(m, k);
    return m->key[i] == k ? m->val[i] : DQG_NONE;
}

static void id_map_set(id_map *m, int32_t k, dqg_tensor_id v)
{
    size_t i = id_map_slot(m, k);
    m->key[i] = k;
    m->val[i] = v;
}

static void id_map_free(id_map *m)
{
    free(m->key);
    free(m->val);
}

dqg_status dqg_graph_extract(const dqg_graph *g, const int32_t *ops, int n_ops,
                             const dqg_tensor_id *outputs, int n_outputs, dqg_graph **out,
                             dqg_tensor_id *input_map, int *n_input_map)
{
    *out = NULL;
    int cap = 1 + n_outputs;
    for (int k = 0; k < n_ops; k++)
        cap += g->ops[ops[k]].n_inputs + g->ops[ops[k]].n_outputs;
    id_map map;
    bool mapped = id_map_init(&map, (size_t)cap);
    dqg_graph *c = calloc(1, sizeof *c);
    if (!mapped || !c) {
        id_map_free(&map);
        return oom(c);
    }
    c->tensors = calloc((size_t)cap, sizeof *c->tensors);
    c->ops = calloc((size_t)n_ops + 1, sizeof *c->ops);
    c->inputs = calloc((size_t)cap, sizeof *c->inputs);
    c->outputs = calloc((size_t)n_outputs + 1, sizeof *c->outputs);
    if (!c->tensors || !c->ops || !c->inputs || !c->outputs) {
        id_map_free(&map);
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
            dqg_tensor_id mt = id_map_get(&map, t);
            if (mt == DQG_NONE) {
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
                mt = c->n_tensors++;
                id_map_set(&map, t, mt);
            }
            op->inputs[i] = mt;
            c->tensors[mt].use_count++;
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
            id_map_set(&map, t, c->n_tensors);
            op->outputs[o] = c->n_tensors++;
        }
    }
    for (int k = 0; k < n_outputs; k++) {
        dqg_tensor_id t = id_map_get(&map, outputs[k]);
        if (t == DQG_NONE || c->tensors[t].producer < 0) {
            id_map_free(&map);
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
    id_map_free(&map);
    *out = c;
    return DQG_OK;
fail:
    id_map_free(&map);
    return oom(c);
}
