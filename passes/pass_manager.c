/* The pass manager: runs the fixed pipeline on a copy of the graph and owns
 * the shared pass state (consumer index, op-to-partition groups,
 * partitions, explain log). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

dqg_status dqg_explain(dqg_pass_state *s, const char *fmt, ...)
{
    if (s->n_explain == s->cap_explain) {
        int cap = s->cap_explain ? s->cap_explain * 2 : 32;
        char **p = realloc(s->explain, (size_t)cap * sizeof *p);
        if (!p)
            return dqg_set_error(DQG_OUT_OF_MEMORY, "explain log: out of memory");
        s->explain = p;
        s->cap_explain = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "explain log: out of memory");
    s->explain[s->n_explain++] = line;
    return DQG_OK;
}

dqg_status dqg_pass_index(dqg_pass_state *s)
{
    const dqg_graph *g = s->graph;
    dqg_consumers *c = &s->cons;
    free(c->first);
    free(c->list);
    c->n_tensors = g->n_tensors;
    c->first = calloc((size_t)g->n_tensors + 2, sizeof *c->first);
    size_t edges = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (!g->ops[i].removed)
            edges += (size_t)g->ops[i].n_inputs;
    c->list = malloc((edges + 1) * sizeof *c->list);
    if (!c->first || !c->list)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "passes: out of memory");
    /* Count per tensor, prefix-sum into starts, then fill. */
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed)
            continue;
        for (int k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] != DQG_NONE)
                c->first[op->inputs[k] + 2]++;
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        c->first[t + 2] += c->first[t + 1];
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed)
            continue;
        for (int k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] != DQG_NONE)
                c->list[c->first[op->inputs[k] + 1]++] = i;
    }
    return DQG_OK;
}

int32_t dqg_pass_single_consumer(const dqg_pass_state *s, dqg_tensor_id t)
{
    const dqg_consumers *c = &s->cons;
    if (t < 0 || t >= c->n_tensors || s->graph->tensors[t].is_output)
        return -1;
    int32_t b = c->first[t], e = c->first[t + 1];
    if (b == e)
        return -1;
    /* One op, possibly reading t through several of its inputs. */
    for (int32_t k = b + 1; k < e; k++)
        if (c->list[k] != c->list[b])
            return -1;
    return c->list[b];
}

int dqg_pass_add_partition(dqg_pass_state *s, dqg_partition_kind kind, const int32_t *ops,
                           const uint8_t *roles, int n)
{
    if (n < 1 || n > DQG_MAX_PART_OPS) {
        dqg_set_error(DQG_UNSUPPORTED, "passes: a partition of %d ops", n);
        return -1;
    }
    if (s->n_parts == s->cap_parts) {
        int cap = s->cap_parts ? s->cap_parts * 2 : 32;
        dqg_partition *p = realloc(s->parts, (size_t)cap * sizeof *p);
        if (!p) {
            dqg_set_error(DQG_OUT_OF_MEMORY, "passes: out of memory");
            return -1;
        }
        s->parts = p;
        s->cap_parts = cap;
    }
    int part = s->n_parts++;
    dqg_partition *p = &s->parts[part];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    /* Insertion into graph order: ops[] is topological, and the epilogue's
     * chain order is its graph order. */
    for (int i = 0; i < n; i++) {
        int pos = p->n_ops;
        while (pos > 0 && p->ops[pos - 1] > ops[i]) {
            p->ops[pos] = p->ops[pos - 1];
            p->role[pos] = p->role[pos - 1];
            pos--;
        }
        p->ops[pos] = ops[i];
        p->role[pos] = roles[i];
        p->n_ops++;
        s->group[ops[i]] = part;
    }
    return part;
}

int dqg_part_find(const dqg_partition *p, dqg_part_role r)
{
    for (int k = 0; k < p->n_ops; k++)
        if (p->role[k] == r)
            return k;
    return -1;
}

int dqg_part_list(const dqg_partition *p, dqg_part_role r, int *pos)
{
    int n = 0;
    for (int k = 0; k < p->n_ops; k++)
        if (p->role[k] == r)
            pos[n++] = k;
    return n;
}

dqg_tensor_id dqg_part_result(const dqg_graph *g, const dqg_partition *p)
{
    /* The pattern's last op in the main chain: Q, else the last of
     * POST/BIAS/SCALE/CAST, else the anchor. Ops feeding the chain from the
     * side (DQs, SCALE_SRC, layouts) come before the anchor or are not on
     * it. A transpose of the result (Y_LAYOUT) ends the pattern. */
    int ylayout = dqg_part_find(p, DQG_ROLE_Y_LAYOUT);
    if (ylayout >= 0)
        return g->ops[p->ops[ylayout]].outputs[0];
    int last = dqg_part_find(p, DQG_ROLE_MAIN);
    for (int k = 0; k < p->n_ops; k++)
        switch (p->role[k]) {
        case DQG_ROLE_CAST:
        case DQG_ROLE_SCALE:
        case DQG_ROLE_BIAS:
        case DQG_ROLE_POST:
        case DQG_ROLE_Q:
        case DQG_ROLE_SM_PRE:
        case DQG_ROLE_SOFTMAX:
            if (k > last)
                last = k;
            break;
        default:
            break;
        }
    return g->ops[p->ops[last]].outputs[0];
}

void dqg_pass_state_free(dqg_pass_state *s)
{
    if (!s)
        return;
    dqg_graph_destroy(s->graph);
    free(s->group);
    for (int i = 0; i < s->n_parts; i++)
        free(s->parts[i].outputs);
    free(s->parts);
    for (int i = 0; i < s->n_explain; i++)
        free(s->explain[i]);
    free(s->explain);
    free(s->cons.first);
    free(s->cons.list);
    memset(s, 0, sizeof *s);
}

dqg_status dqg_run_passes(const dqg_graph *g, const dqg_compile_options *options, dqg_pass_state *s)
{
    memset(s, 0, sizeof *s);
    s->options = options;
    dqg_status st = dqg_graph_clone_borrowing(g, &s->graph);
    if (st != DQG_OK)
        return st;
    static dqg_status (*const pipeline[])(dqg_pass_state *) = {
        dqg_pass_canonicalize,  dqg_pass_recognize,        dqg_pass_fold_constants,
        dqg_pass_fold_pad,      dqg_pass_fuse_dq_matmul,   dqg_pass_fuse_dq_conv,
        dqg_pass_fuse_qdq_pool, dqg_pass_fuse_qdq_eltwise, dqg_pass_lower,
        dqg_pass_partition,     dqg_pass_choose_layouts,
    };
    for (size_t i = 0; i < sizeof pipeline / sizeof *pipeline; i++) {
        /* Canonicalize may add ops; after it the op list is fixed, and the
         * op-to-partition array is sized for it. */
        if (i == 1) {
            s->group = malloc(((size_t)s->graph->n_ops + 1) * sizeof *s->group);
            if (!s->group) {
                dqg_pass_state_free(s);
                return dqg_set_error(DQG_OUT_OF_MEMORY, "passes: out of memory");
            }
            for (int32_t k = 0; k < s->graph->n_ops; k++)
                s->group[k] = -1;
        }
        if ((st = dqg_pass_index(s)) != DQG_OK || (st = pipeline[i](s)) != DQG_OK) {
            dqg_pass_state_free(s);
            return st;
        }
    }
    return DQG_OK;
}
