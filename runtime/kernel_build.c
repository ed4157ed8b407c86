/* Chooses the kernel for a partition: by backend, partition kind and op kind,
 * falling back to the reference kernel for a single op that no faster kernel
 * supports (the reason is kept in the kernel's impl string). */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

dqg_status dqg_kernel_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    const dqg_partition *p = req->roles;
    if (p->kind == DQG_PART_CONST)
        return dqg_kernel_const_build(req, out);
    if (req->options->backend == DQG_BACKEND_REFERENCE)
        return dqg_kernel_reference_build(req, out);
    dqg_status st;
    switch (p->kind) {
    case DQG_PART_QMATMUL:
        return dqg_kernel_qmatmul_build(req, out);
    case DQG_PART_QCONV:
        return dqg_kernel_qconv_build(req, out);
    case DQG_PART_WO_MATMUL:
        return dqg_kernel_wo_matmul_build(req, out);
    case DQG_PART_QELTWISE:
        return dqg_kernel_qeltwise_build(req, out);
    case DQG_PART_QCONCAT:
        return dqg_kernel_qconcat_build(req, out);
    case DQG_PART_ROTARY:
        return dqg_kernel_rotary_build(req, out);
    case DQG_PART_SINGLE:
    case DQG_PART_CONST:
        break;
    }
    switch (dqg_req_op(req, DQG_ROLE_MAIN)->kind) {
    case DQG_OP_DEQUANTIZE:
        st = dqg_kernel_dequantize_build(req, out);
        break;
    case DQG_OP_QUANTIZE:
        st = dqg_kernel_quantize_build(req, out);
        break;
    case DQG_OP_DYNAMIC_QUANTIZE:
        st = dqg_kernel_dynamic_quantize_build(req, out);
        break;
    case DQG_OP_MATMUL:
        st = dqg_kernel_matmul_build(req, out);
        break;
    case DQG_OP_CONVOLUTION:
        st = dqg_kernel_conv_build(req, out);
        break;
    case DQG_OP_POOL:
        st = dqg_kernel_pool_build(req, out);
        break;
    case DQG_OP_RELU:
    case DQG_OP_CLIP:
    case DQG_OP_ADD:
    case DQG_OP_MUL:
    case DQG_OP_BIAS_ADD:
    case DQG_OP_RESHAPE:
    case DQG_OP_TRANSPOSE:
    case DQG_OP_TYPECAST:
    case DQG_OP_UNARY:
    case DQG_OP_SUB:
    case DQG_OP_DIV:
    case DQG_OP_MAX:
    case DQG_OP_MIN:
    case DQG_OP_SOFTMAX:
    case DQG_OP_LRN:
        st = dqg_kernel_eltwise_build(req, out);
        break;
    case DQG_OP_LAYER_NORM:
    case DQG_OP_REDUCE:
        st = dqg_kernel_norm_build(req, out);
        break;
    case DQG_OP_SLICE:
        st = dqg_kernel_slice_build(req, out);
        break;
    case DQG_OP_PAD:
        st = dqg_kernel_pad_build(req, out);
        break;
    case DQG_OP_RESIZE:
        st = dqg_kernel_resize_build(req, out);
        break;
    case DQG_OP_CONV_TRANSPOSE:
        st = dqg_kernel_deconv_build(req, out);
        break;
    case DQG_OP_GATHER:
        st = dqg_kernel_gather_build(req, out);
        break;
    case DQG_OP_GATHER_ELEMENTS:
        st = dqg_kernel_gather_elements_build(req, out);
        break;
    case DQG_OP_COMPARE:
    case DQG_OP_LOGICAL:
    case DQG_OP_WHERE:
        st = dqg_kernel_select_build(req, out);
        break;
    case DQG_OP_CONCAT:
        st = dqg_kernel_concat_build(req, out);
        break;
    case DQG_OP_RNN:
        st = dqg_kernel_rnn_build(req, out);
        break;
    default:
        st = DQG_UNSUPPORTED;
        dqg_set_error(st, "no dedicated kernel");
        break;
    }
    if (st != DQG_UNSUPPORTED)
        return st;
    char reason[120];
    snprintf(reason, sizeof reason, "%s", dqg_last_error());
    st = dqg_kernel_reference_build(req, out);
    if (st == DQG_OK)
        snprintf((*out)->impl, sizeof(*out)->impl, "reference (%s)", reason);
    return st;
}

int dqg_kernel_arg_index(const dqg_graph *mini, dqg_tensor_id t)
{
    for (int32_t i = 0; i < mini->n_inputs; i++)
        if (mini->inputs[i] == t)
            return i;
    for (int32_t i = 0; i < mini->n_outputs; i++)
        if (mini->outputs[i] == t)
            return mini->n_inputs + i;
    return -1;
}

bool dqg_kernel_operand(const dqg_graph *mini, dqg_tensor_id t, int *arg, void **copy,
                        size_t *bytes)
{
    *copy = NULL;
    if ((*arg = dqg_kernel_arg_index(mini, t)) >= 0)
        return true;
    const dqg_tensor *c = &mini->tensors[t];
    if (!(*copy = malloc(c->nbytes ? c->nbytes : 1)))
        return false;
    memcpy(*copy, c->data, c->nbytes);
    *bytes += c->nbytes;
    return true;
}
