/* fold constants: evaluates, at compile time, every op whose inputs are all
 * constants, with the reference interpreter's code, and replaces its result
 * by a constant. A dequantize of constant weights is folded only when it is
 * weight-only (the weights feed a MatMul/Convolution whose activations are
 * not dequantized): an int8 fusion wants those weights quantized. */
#include <stdlib.h>

#include "passes/passes.h"

/* Follows a chain of single-consumer Transpose/Reshape ops from tensor t and
 * returns the op at its end (or -1), with the input slot it reads t's
 * descendant at. */
static int32_t final_consumer(const dqg_graph *g, dqg_tensor_id t, int *slot)
{
    for (;;) {
        int32_t c = dqg_pass_single_consumer(g, t);
        if (c < 0)
            return -1;
        const dqg_op *op = &g->ops[c];
        if (op->kind == DQG_OP_TRANSPOSE || op->kind == DQG_OP_RESHAPE) {
            t = op->outputs[0];
            continue;
        }
        for (int k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] == t)
                *slot = k;
        return c;
    }
}

static bool produced_by_dequantize(const dqg_graph *g, dqg_tensor_id t)
{
    int32_t p = g->tensors[t].producer;
    return p >= 0 && g->ops[p].kind == DQG_OP_DEQUANTIZE;
}

/* Whether a dequantize of constants should stay for an int8 fusion. */
static bool keep_for_int8_fusion(const dqg_graph *g, const dqg_op *dq)
{
    int slot = -1;
    int32_t c = final_consumer(g, dq->outputs[0], &slot);
    if (c < 0 || slot != 1)
        return false;
    const dqg_op *mm = &g->ops[c];
    if (mm->kind != DQG_OP_MATMUL && mm->kind != DQG_OP_CONVOLUTION)
        return false;
    /* Only weights an int8 kernel can take are worth keeping quantized. */
    dqg_dtype wt = g->tensors[dq->inputs[0]].dtype;
    return (wt == DQG_S8 || wt == DQG_U8) && produced_by_dequantize(g, mm->inputs[0]);
}

static bool foldable_kind(dqg_op_kind k)
{
    return k != DQG_OP_DYNAMIC_QUANTIZE; /* its scale is data-dependent by design; keep it */
}

static dqg_status fold_one(dqg_pass_state *s, int32_t index)
{
    dqg_graph *g = s->graph;
    dqg_graph *mini = NULL;
    dqg_op op = g->ops[index]; /* copy: g->tensors/ops may move as constants are added */
    dqg_status st = dqg_graph_extract(g, &index, 1, op.outputs, op.n_outputs, &mini, NULL, NULL);
    if (st != DQG_OK)
        return st;
    void **data = calloc((size_t)op.n_outputs, sizeof *data);
    dqg_buffer *out = calloc((size_t)op.n_outputs, sizeof *out);
    if (!data || !out) {
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "fold constants: out of memory");
        goto done;
    }
    for (int o = 0; o < op.n_outputs; o++) {
        size_t n = g->tensors[op.outputs[o]].nbytes;
        data[o] = malloc(n ? n : 1);
        if (!data[o]) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "fold constants: out of memory");
            goto done;
        }
        out[o] = (dqg_buffer){.id = mini->outputs[o], .data = data[o], .size = n};
    }
    if ((st = dqg_reference_run(mini, NULL, 0, out, (size_t)op.n_outputs)) != DQG_OK)
        goto done;
    for (int o = 0; o < op.n_outputs; o++) {
        dqg_tensor_id old = op.outputs[o];
        char name[300];
        snprintf(name, sizeof name, "%s", g->tensors[old].name);
        int rank = g->tensors[old].rank;
        int64_t dims[DQG_MAX_RANK];
        dqg_dtype dt = g->tensors[old].dtype;
        for (int i = 0; i < rank; i++)
            dims[i] = g->tensors[old].dims[i];
        dqg_tensor_id c = dqg_graph_add_constant_internal(g, name, dt, rank, dims, data[o]);
        if (c == DQG_NONE) {
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "fold constants: out of memory");
            goto done;
        }
        for (int32_t i = 0; i < g->n_ops; i++)
            for (int k = 0; k < g->ops[i].n_inputs; k++)
                if (g->ops[i].inputs[k] == old) {
                    g->ops[i].inputs[k] = c;
                    g->tensors[c].use_count++;
                }
    }
    g->ops[index].removed = true;
done:
    for (int o = 0; data && o < op.n_outputs; o++)
        free(data[o]);
    free(data);
    free(out);
    dqg_graph_destroy(mini);
    return st;
}

dqg_status dqg_pass_fold_constants(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    bool fold_dq = !s->options->disable_fusion;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const dqg_op *op = &g->ops[i];
        if (op->removed || !foldable_kind(op->kind))
            continue;
        bool all_const = true, any_output = false;
        for (int k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] != DQG_NONE && g->tensors[op->inputs[k]].kind != DQG_TENSOR_CONSTANT)
                all_const = false;
        for (int o = 0; o < op->n_outputs; o++)
            any_output |= g->tensors[op->outputs[o]].is_output;
        /* A graph output must stay the result of an op. */
        if (!all_const || any_output)
            continue;
        bool weight_only = false;
        if (op->kind == DQG_OP_DEQUANTIZE) {
            if (!fold_dq || keep_for_int8_fusion(g, op))
                continue;
            weight_only = true;
        }
        char what[400];
        const dqg_tensor *x = &g->tensors[op->inputs[0]];
        const dqg_tensor *y = &g->tensors[op->outputs[0]];
        snprintf(what, sizeof what, "%s '%s'", dqg_op_kind_name(op->kind), op->name);
        dqg_dtype xt = x->dtype, yt = y->dtype;
        size_t ybytes = y->nbytes;
        dqg_status st = fold_one(s, i);
        if (st != DQG_OK)
            return st;
        if (weight_only)
            st = dqg_explain(s,
                             "folded: %s: weight-only dequantize of constant %s weights into %s "
                             "weights (%zu bytes) kept with the compiled partition",
                             what, dqg_dtype_name(xt), dqg_dtype_name(yt), ybytes);
        else
            st = dqg_explain(s, "folded: %s: all inputs are constants", what);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
