/* The weight-only MatMul partition: float activations times constant
 * quantized weights (behind their dequantize and any Transpose/Reshape),
 * with the bias and element-wise ops that follow. The weights are
 * dequantized once, when the kernel is built, into f32 that oneDNN's matmul
 * packs in its own layout. */
#include <stdlib.h>
#include <string.h>

#include "runtime/cache.h"
#include "runtime/kernel.h"

/* The MatMul's second operand, computed from the constants behind it. */
static dqg_status expand_weights(const dqg_kernel_request *req, void **out)
{
    const dqg_graph *g = req->mini;
    const dqg_partition *p = req->roles;
    int32_t ops[DQG_MAX_PART_OPS];
    int n = 0;
    for (int k = 0; k < p->n_ops; k++)
        if (p->role[k] == DQG_ROLE_W_DQ || p->role[k] == DQG_ROLE_W_LAYOUT)
            ops[n++] = k;
    dqg_tensor_id b = dqg_req_op(req, DQG_ROLE_MAIN)->inputs[1];
    dqg_graph *sub = NULL;
    dqg_status st = dqg_graph_extract(g, ops, n, &b, 1, &sub, NULL, NULL);
    if (st != DQG_OK)
        return st;
    size_t bytes = g->tensors[b].nbytes;
    void *data = malloc(bytes ? bytes : 1);
    if (!data) {
        dqg_graph_destroy(sub);
        return dqg_set_error(DQG_OUT_OF_MEMORY,
                             "weight-only matmul: out of memory for %zu bytes of weights", bytes);
    }
    dqg_buffer o = {.id = sub->outputs[0], .data = data, .size = bytes};
    st = dqg_reference_run(sub, NULL, 0, &o, 1);
    dqg_graph_destroy(sub);
    if (st != DQG_OK) {
        free(data);
        return st;
    }
    dqg_cache_count_constant_transform();
    *out = data;
    return DQG_OK;
}

/* The f32 path: the MatMul with its expanded weights as a constant, on the
 * f32 matmul kernel (which packs them and applies the epilogue). */
static dqg_status build_expanded(const dqg_kernel_request *req, dqg_kernel **out)
{
    void *w = NULL;
    dqg_status st = expand_weights(req, &w);
    if (st != DQG_OK)
        return st;
    dqg_graph *mini = NULL;
    if ((st = dqg_graph_clone_borrowing(req->mini, &mini)) != DQG_OK) {
        free(w);
        return st;
    }
    dqg_tensor *b = &mini->tensors[dqg_req_op(req, DQG_ROLE_MAIN)->inputs[1]];
    b->kind = DQG_TENSOR_CONSTANT;
    b->data = w;
    b->borrowed = true;
    dqg_kernel_request sub = *req;
    sub.mini = mini;
    st = dqg_kernel_matmul_build(&sub, out);
    dqg_graph_destroy(mini);
    free(w);
    return st;
}

dqg_status dqg_kernel_wo_matmul_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    dqg_status st = build_expanded(req, out);
    if (st == DQG_OK) {
        const dqg_op *dq = dqg_req_op(req, DQG_ROLE_W_DQ);
        snprintf((*out)->why, sizeof(*out)->why,
                 "%s weights dequantized once into f32 for oneDNN's matmul",
                 dqg_dtype_name(req->mini->tensors[dq->inputs[0]].dtype));
    }
    return st;
}
