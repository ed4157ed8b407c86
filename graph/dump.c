/* Printing a graph: a readable text dump and Graphviz DOT (ops as boxes,
 * graph inputs/constants/outputs as ellipses, tensors as labelled edges). */
#include <string.h>

#include "graph/graph_internal.h"

static const char *tensor_type(const dqg_tensor *t, char *buf, size_t size)
{
    char dims[DQG_DIMS_BUF];
    snprintf(buf, size, "%s%s", dqg_dtype_name(t->dtype),
             dqg_format_dims(dims, sizeof dims, t->rank, t->dims));
    return buf;
}

static void op_attrs(const dqg_op *op, char *buf, size_t size)
{
    buf[0] = '\0';
    const dqg_op_def *def = dqg_op_def_of(op->kind);
    if (def && def->format_attrs)
        def->format_attrs(op, buf, size);
}

static void dump_text(const dqg_graph *g, FILE *out)
{
    int32_t n_const = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        n_const += g->tensors[i].kind == DQG_TENSOR_CONSTANT;
    fprintf(out, "graph: %d inputs, %d constants, %d ops, %d outputs%s\n", (int)g->n_inputs,
            (int)n_const, (int)g->n_ops, (int)g->n_outputs, g->finalized ? "" : " (not finalized)");
    char ty[DQG_DIMS_BUF + 16], attrs[512];
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const dqg_tensor *t = &g->tensors[g->inputs[i]];
        fprintf(out, "input  %%%d %s: %s\n", (int)g->inputs[i], t->name,
                tensor_type(t, ty, sizeof ty));
    }
    for (int32_t i = 0; i < g->n_tensors; i++) {
        const dqg_tensor *t = &g->tensors[i];
        if (t->kind == DQG_TENSOR_CONSTANT)
            fprintf(out, "const  %%%d %s: %s\n", (int)i, t->name, tensor_type(t, ty, sizeof ty));
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        fprintf(out, "op     %s '%s' (", dqg_op_kind_name(op->kind), op->name);
        for (int k = 0; k < op->n_inputs; k++)
            fprintf(out, k ? ", %s" : "%s",
                    op->inputs[k] == DQG_NONE ? "-" : g->tensors[op->inputs[k]].name);
        fprintf(out, ") ->");
        for (int k = 0; k < op->n_outputs; k++) {
            const dqg_tensor *t = &g->tensors[op->outputs[k]];
            fprintf(out, "%s %%%d %s: %s", k ? "," : "", (int)op->outputs[k], t->name,
                    tensor_type(t, ty, sizeof ty));
        }
        op_attrs(op, attrs, sizeof attrs);
        fprintf(out, attrs[0] ? "  {%s}\n" : "\n", attrs);
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const dqg_tensor *t = &g->tensors[g->outputs[i]];
        fprintf(out, "output %%%d %s: %s\n", (int)g->outputs[i], t->name,
                tensor_type(t, ty, sizeof ty));
    }
}

/* DOT string literal contents: escape quotes and backslashes. */
static void dot_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/* Whether a live op reads tensor t (graph copies keep folded-away constants). */
static bool tensor_is_read(const dqg_graph *g, dqg_tensor_id t)
{
    for (int32_t i = 0; i < g->n_ops; i++)
        for (int k = 0; !g->ops[i].removed && k < g->ops[i].n_inputs; k++)
            if (g->ops[i].inputs[k] == t)
                return true;
    return g->tensors[t].kind == DQG_TENSOR_INPUT;
}

static void dump_dot(const dqg_graph *g, const int32_t *group, int n_groups,
                     const char *const *labels, FILE *out)
{
    char ty[DQG_DIMS_BUF + 16], attrs[512];
    fprintf(out, "digraph dqgraph {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n"
                 "  edge [fontname=\"Helvetica\", fontsize=10];\n");
    for (int32_t i = 0; i < g->n_tensors; i++) {
        const dqg_tensor *t = &g->tensors[i];
        if (t->kind == DQG_TENSOR_INTERMEDIATE || !tensor_is_read(g, i))
            continue;
        fprintf(out, "  t%d [shape=ellipse, style=%s, label=\"", (int)i,
                t->kind == DQG_TENSOR_INPUT ? "solid" : "dashed");
        dot_escaped(out, t->name);
        fprintf(out, "\\n%s\"];\n", tensor_type(t, ty, sizeof ty));
    }
    /* Ops; with a partitioning, each partition is a cluster, and ops in no
     * partition (folded into constants when compiled) stand outside. */
    for (int p = -1; p < (group ? n_groups : 0); p++) {
        if (p >= 0) {
            fprintf(out, "  subgraph cluster_%d {\n  style=filled; color=\"#dde8f5\"; label=\"", p);
            dot_escaped(out, labels[p]);
            fprintf(out, "\";\n");
        }
        for (int32_t i = 0; i < g->n_ops; i++) {
            const dqg_op *op = &g->ops[i];
            if (op->removed || (p >= 0 && group[i] != p) || (p < 0 && group && group[i] >= 0))
                continue;
            fprintf(out,
                    "  op%d [shape=box, style=\"rounded,filled\", fillcolor=white, label=\"%s\\n",
                    (int)i, dqg_op_kind_name(op->kind));
            dot_escaped(out, op->name);
            op_attrs(op, attrs, sizeof attrs);
            if (attrs[0]) {
                fprintf(out, "\\n");
                dot_escaped(out, attrs);
            }
            fprintf(out, "\"];\n");
        }
        if (p >= 0)
            fprintf(out, "  }\n");
    }
    /* Edges: from the producer (op or source ellipse) to each consumer. */
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed)
            continue;
        for (int k = 0; k < op->n_inputs; k++) {
            dqg_tensor_id id = op->inputs[k];
            if (id == DQG_NONE)
                continue;
            const dqg_tensor *t = &g->tensors[id];
            if (t->producer >= 0)
                fprintf(out, "  op%d -> op%d [label=\"", (int)t->producer, (int)i);
            else
                fprintf(out, "  t%d -> op%d [label=\"", (int)id, (int)i);
            dot_escaped(out, t->name);
            fprintf(out, "\\n%s\"];\n", tensor_type(t, ty, sizeof ty));
        }
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const dqg_tensor *t = &g->tensors[g->outputs[i]];
        fprintf(out, "  out%d [shape=ellipse, style=bold, label=\"", (int)i);
        dot_escaped(out, t->name);
        fprintf(out, "\"];\n");
        if (t->producer >= 0)
            fprintf(out, "  op%d -> out%d [label=\"%s\"];\n", (int)t->producer, (int)i,
                    tensor_type(t, ty, sizeof ty));
        else
            fprintf(out, "  t%d -> out%d;\n", (int)g->outputs[i], (int)i);
    }
    fprintf(out, "}\n");
}

dqg_status dqg_graph_dump(const dqg_graph *g, dqg_dump_format format, FILE *out)
{
    if (!g || !out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_graph_dump: graph or file is NULL");
    if (format == DQG_DUMP_TEXT)
        dump_text(g, out);
    else if (format == DQG_DUMP_DOT)
        dump_dot(g, NULL, 0, NULL, out);
    else
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_graph_dump: unknown format %d",
                             (int)format);
    if (ferror(out))
        return dqg_set_error(DQG_IO_ERROR, "dqg_graph_dump: write failed");
    return DQG_OK;
}

dqg_status dqg_graph_dump_partitioned(const dqg_graph *g, const int32_t *group, int n_groups,
                                      const char *const *labels, FILE *out)
{
    dump_dot(g, group, n_groups, labels, out);
    if (ferror(out))
        return dqg_set_error(DQG_IO_ERROR, "dqg_compiled_dump: write failed");
    return DQG_OK;
}
