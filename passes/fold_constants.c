/* fold constants: marks every op whose inputs are all constants (or values
 * marked before it) as computed once, when the graph is compiled. Nothing
 * is computed here: the runtime evaluates each marked op as a
 * constant-folding partition on a cache miss and keeps the result in the
 * cache entry, so a second compile neither recomputes nor rehashes it.
 * Dequantize ops are left to the fusion passes, which may keep their
 * constant weights quantized; the lowering pass folds the ones nothing
 * fused -- except the dequantize of a constant s32 tensor, a bias as ONNX
 * Runtime's static quantizer writes it (scale x_scale * w_scale, zero point
 * 0): no int8 kernel reads s32 values, and folding it here lets the fusion
 * passes see the f32 constant bias they fuse. A result much larger than its
 * inputs (a broadcast) is not folded: the op runs at execution instead of
 * holding gigabytes. */
#include "passes/passes.h"

/* Largest folded result relative to the op's inputs, and below which any
 * result may be folded. */
#define FOLD_MAX_GROWTH 8
#define FOLD_FREE_BYTES ((size_t)1 << 20)

bool dqg_pass_foldable(const dqg_pass_state *s, int32_t i, bool *too_large)
{
    const dqg_graph *g = s->graph;
    const dqg_op *op = &g->ops[i];
    *too_large = false;
    /* DynamicQuantizeLinear's scale is data-dependent by design: keep it. */
    if (op->removed || op->kind == DQG_OP_DYNAMIC_QUANTIZE)
        return false;
    size_t in_bytes = 0, out_bytes = 0;
    for (int k = 0; k < op->n_inputs; k++) {
        dqg_tensor_id t = op->inputs[k];
        if (t == DQG_NONE)
            continue;
        if (g->tensors[t].kind != DQG_TENSOR_CONSTANT && !g->tensors[t].folded)
            return false;
        in_bytes += g->tensors[t].nbytes;
    }
    for (int o = 0; o < op->n_outputs; o++) {
        /* A graph output must stay the result of an op. */
        if (g->tensors[op->outputs[o]].is_output)
            return false;
        out_bytes += g->tensors[op->outputs[o]].nbytes;
    }
    if (out_bytes > FOLD_FREE_BYTES && out_bytes / FOLD_MAX_GROWTH > in_bytes) {
        *too_large = true;
        return false;
    }
    return true;
}

dqg_status dqg_pass_fold_constants(dqg_pass_state *s)
{
    dqg_graph *g = s->graph;
    for (int32_t i = 0; i < g->n_ops; i++) {
        dqg_op *op = &g->ops[i];
        bool too_large;
        bool s32_dq = op->kind == DQG_OP_DEQUANTIZE && !s->options->disable_fusion &&
                      g->tensors[op->inputs[0]].dtype == DQG_S32;
        if ((op->kind == DQG_OP_DEQUANTIZE && !s32_dq) || !dqg_pass_foldable(s, i, &too_large)) {
            if (!op->removed && op->kind != DQG_OP_DEQUANTIZE && too_large) {
                dqg_status st = dqg_explain(s,
                                            "not folded: %s '%s': its constant result would be "
                                            "much larger than its inputs; it runs at execution",
                                            dqg_op_kind_name(op->kind), op->name);
                if (st != DQG_OK)
                    return st;
            }
            continue;
        }
        for (int o = 0; o < op->n_outputs; o++)
            g->tensors[op->outputs[o]].folded = true;
        dqg_status st = dqg_explain(s, "folded: %s '%s': all inputs are constants",
                                    dqg_op_kind_name(op->kind), op->name);
        if (st != DQG_OK)
            return st;
    }
    return DQG_OK;
}
