/* The pass manager: runs the fixed pipeline on a copy of the graph and owns
 * the shared pass state (op-to-partition groups, partitions, explain log). */
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

int dqg_pass_new_partition(dqg_pass_state *s, dqg_partition_kind kind)
{
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
    dqg_partition *p = &s->parts[s->n_parts];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->src_dq = p->w_dq = p->main = p->bias = p->q = -1;
    return s->n_parts++;
}

int dqg_pass_add_to_partition(dqg_pass_state *s, int part, int32_t op)
{
    dqg_partition *p = &s->parts[part];
    if (p->n_ops == DQG_MAX_PART_OPS)
        return -1;
    /* Keep ops[] in graph order; roles already assigned are shifted along. */
    int pos = p->n_ops;
    while (pos > 0 && p->ops[pos - 1] > op)
        pos--;
    for (int k = p->n_ops; k > pos; k--)
        p->ops[k] = p->ops[k - 1];
    p->ops[pos] = op;
    p->n_ops++;
    int *roles[] = {&p->src_dq, &p->w_dq, &p->main, &p->bias, &p->q};
    for (size_t r = 0; r < sizeof roles / sizeof *roles; r++)
        if (*roles[r] >= pos)
            (*roles[r])++;
    for (int k = 0; k < p->n_post; k++)
        if (p->post[k] >= pos)
            p->post[k]++;
    s->group[op] = part;
    return pos;
}

int32_t dqg_pass_single_consumer(const dqg_graph *g, dqg_tensor_id t)
{
    if (g->tensors[t].is_output)
        return -1;
    int32_t found = -1;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed)
            continue;
        for (int k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] == t) {
                if (found >= 0 && found != i)
                    return -1;
                found = i;
            }
    }
    return found;
}

void dqg_pass_state_free(dqg_pass_state *s)
{
    if (!s)
        return;
    dqg_graph_destroy(s->graph);
    free(s->group);
    free(s->parts);
    for (int i = 0; i < s->n_explain; i++)
        free(s->explain[i]);
    free(s->explain);
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
        dqg_pass_canonicalize, dqg_pass_fold_constants, dqg_pass_fuse_dq_matmul,
        dqg_pass_fuse_dq_conv, dqg_pass_lower,          dqg_pass_partition,
    };
    for (size_t i = 0; i < sizeof pipeline / sizeof *pipeline; i++) {
        /* Folding adds constants but never ops, so the group array sized
         * here stays valid for every pass. */
        if (!s->group) {
            s->group = malloc(((size_t)s->graph->n_ops + 1) * sizeof *s->group);
            if (!s->group) {
                dqg_pass_state_free(s);
                return dqg_set_error(DQG_OUT_OF_MEMORY, "passes: out of memory");
            }
            for (int32_t k = 0; k < s->graph->n_ops; k++)
                s->group[k] = -1;
        }
        if ((st = pipeline[i](s)) != DQG_OK) {
            dqg_pass_state_free(s);
            return st;
        }
    }
    return DQG_OK;
}
