/* canonicalize: removes ops whose results nobody uses (no consumer, not a
 * graph output), so that later passes see only live ops and single-consumer
 * checks are not fooled by dead readers; and sinks the dequantize of
 * constant weights below a Transpose/Reshape of them. */
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

static dqg_status dqg_pass_sink_weight_layout(dqg_pass_state *s);

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
    return s->options->disable_fusion ? DQG_OK : dqg_pass_sink_weight_layout(s);
}

/* The quantized weights laid out as `t` lays out their dequantized form:
 * the Transpose or Reshape applied to the constant itself, through a small
 * graph on the reference interpreter (exact for every type, 4-bit too). */
static dqg_status relayout_constant(const dqg_graph *g, const dqg_op *t, const dqg_tensor *w,
                                    void **out)
{
    dqg_graph *tmp = NULL;
    dqg_status st = dqg_graph_create(&tmp);
    if (st != DQG_OK)
        return st;
    dqg_tensor_id c = dqg_constant(tmp, "w", w->dtype, w->rank, w->dims, w->data, w->nbytes);
    const dqg_tensor *y = &g->tensors[t->outputs[0]];
    dqg_tensor_id r = t->kind == DQG_OP_TRANSPOSE
                          ? dqg_transpose(tmp, "t", c, t->attrs.transpose.perm)
                          : dqg_reshape(tmp, "t", c, y->rank, y->dims);
    dqg_output(tmp, r, "y");
    if ((st = dqg_graph_finalize(tmp)) == DQG_OK) {
        *out = malloc(w->nbytes ? w->nbytes : 1);
        dqg_buffer b = {.id = r, .data = *out, .size = w->nbytes};
        st = *out ? dqg_reference_run(tmp, NULL, 0, &b, 1)
                  : dqg_set_error(DQG_OUT_OF_MEMORY, "canonicalize: out of memory");
        if (st != DQG_OK) {
            free(*out);
            *out = NULL;
        }
    }
    dqg_graph_destroy(tmp);
    return st;
}

/* DQ(constant w) -> Transpose/Reshape becomes DQ(relaid-out constant w):
 * a dequantize commutes exactly with a permutation (a per-axis scale moves
 * with its axis) and with a reshape when the scale is per tensor. The
 * fusion passes then see the weights' dequantize directly. */
static dqg_status dqg_pass_sink_weight_layout(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op *t = &g->ops[i];
        if (t->removed || (t->kind != DQG_OP_TRANSPOSE && t->kind != DQG_OP_RESHAPE))
            continue;
        int32_t p = g->tensors[t->inputs[0]].producer;
        if (p < 0 || g->ops[p].removed || g->ops[p].kind != DQG_OP_DEQUANTIZE)
            continue;
        dqg_op dq = g->ops[p];
        bool consts = true;
        for (int k = 0; k < 3; k++)
            consts &=
                dq.inputs[k] == DQG_NONE || g->tensors[dq.inputs[k]].kind == DQG_TENSOR_CONSTANT;
        dqg_quant_attrs q = dq.attrs.quant;
        if (!consts || dqg_pass_single_consumer(g, dq.outputs[0]) != i)
            continue;
        if (q.granularity == DQG_PER_AXIS && t->kind == DQG_OP_TRANSPOSE) {
            for (int j = 0; j < g->tensors[t->outputs[0]].rank; j++)
                if (t->attrs.transpose.perm[j] == q.axis) {
                    q.axis = j;
                    break;
                }
        } else if (q.granularity != DQG_PER_TENSOR) {
            continue;
        }
        const dqg_tensor *w = &g->tensors[dq.inputs[0]];
        void *data = NULL;
        dqg_status st = relayout_constant(g, t, w, &data);
        if (st != DQG_OK)
            return st;
        const dqg_tensor *y = &g->tensors[t->outputs[0]];
        int64_t dims[DQG_MAX_RANK];
        memcpy(dims, y->dims, sizeof dims);
        char name[300];
        snprintf(name, sizeof name, "%s_%s", g->tensors[dq.inputs[0]].name, t->name);
        dqg_tensor_id nw = dqg_graph_add_constant_internal(g, name, w->dtype, y->rank, dims, data);
        free(data);
        if (nw == DQG_NONE)
            return dqg_set_error(DQG_OUT_OF_MEMORY, "canonicalize: out of memory");
        t = &g->ops[i]; /* the tensor array may have moved; ops did not */
        char tname[200];
        snprintf(tname, sizeof tname, "%s", t->name);
        const char *tkind = dqg_op_kind_name(t->kind);
        st = dqg_explain(s,
                         "canonicalized: %s '%s' applied to the constant quantized weights of "
                         "Dequantize '%s', which now follows it",
                         tkind, tname, dq.name);
        if (st != DQG_OK)
            return st;
        t->kind = DQG_OP_DEQUANTIZE;
        t->n_inputs = 3;
        t->inputs[0] = nw;
        t->inputs[1] = dq.inputs[1];
        t->inputs[2] = dq.inputs[2];
        memset(&t->attrs, 0, sizeof t->attrs);
        t->attrs.quant = q;
        g->ops[p].removed = true;
    }
    return DQG_OK;
}
