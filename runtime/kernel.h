/* Kernels (internal): what a compiled partition runs. A kernel is built
 * from a stand-alone graph holding just the partition's ops (its inputs are
 * the partition's non-constant inputs, its constants are baked in), and owns
 * everything it needs, so the cache may share it between graphs. */
#ifndef DQG_RUNTIME_KERNEL_H
#define DQG_RUNTIME_KERNEL_H

#include "graph/graph_internal.h"
#include "passes/passes.h"

typedef struct dqg_kernel dqg_kernel;

struct dqg_kernel {
    char impl[160]; /* e.g. "onednn:matmul:u8s8f32:brg_avx512" */
    /* Why this implementation, when there was a choice ("M=1: bandwidth-bound,
     * own kernel"); shown in the explain log. Empty otherwise. */
    char why[200];
    /* args: the mini graph's inputs in order, then its outputs in order. */
    dqg_status (*execute)(dqg_kernel *k, void *const *args, void *scratch);
    void (*destroy)(dqg_kernel *k);
    size_t scratch_size; /* bytes of scratch the caller provides per execution */
    bool in_place_ok;    /* may write its output over its first input (same size) */
    size_t bytes;        /* memory held (pre-packed constants and the like) */
};

/* What a kernel builder receives. `roles` is the partition with ops[] indexes
 * renumbered for `mini` (ops[k] == k). */
typedef struct dqg_kernel_request {
    const dqg_graph *mini;
    const dqg_partition *roles;
    const dqg_compile_options *options;
} dqg_kernel_request;

/* The op of the request's mini graph with role r (the first), or NULL. */
static inline const dqg_op *dqg_req_op(const dqg_kernel_request *req, dqg_part_role r)
{
    int k = dqg_part_find(req->roles, r);
    return k >= 0 ? &req->mini->ops[k] : NULL;
}

/* Whether tensor t of the request's mini graph is made by the partition's
 * main chain (the anchor or an op after it), as opposed to an operand from
 * outside or a side input. */
static inline bool dqg_req_on_chain(const dqg_kernel_request *req, dqg_tensor_id t)
{
    int32_t p = req->mini->tensors[t].producer;
    if (p < 0)
        return false;
    dqg_part_role r = (dqg_part_role)req->roles->role[p];
    return r == DQG_ROLE_MAIN || r == DQG_ROLE_CAST || r == DQG_ROLE_SCALE || r == DQG_ROLE_BIAS ||
           r == DQG_ROLE_POST || r == DQG_ROLE_SM_PRE;
}

/* The operand of a binary chain op that is not the chain's value. */
static inline dqg_tensor_id dqg_req_operand(const dqg_kernel_request *req, const dqg_op *op)
{
    return dqg_req_on_chain(req, op->inputs[0]) ? op->inputs[1] : op->inputs[0];
}

/* Builds the kernel for a request, choosing by partition kind, op kind and
 * backend. */
dqg_status dqg_kernel_build(const dqg_kernel_request *req, dqg_kernel **out);

/* Where tensor t of a mini graph comes from at execution: its index in the
 * kernel's args (inputs, then outputs), or -1 for a constant. */
int dqg_kernel_arg_index(const dqg_graph *mini, dqg_tensor_id t);
/* Where a kernel reads tensor t of its mini graph: *arg, its index in the
 * args, or for a constant -1 and *copy, a copy of its data that the kernel
 * owns (its size added to *bytes). False without memory for the copy. */
bool dqg_kernel_operand(const dqg_graph *mini, dqg_tensor_id t, int *arg, void **copy,
                        size_t *bytes);

/* Kernel families (one file each). Each returns DQG_UNSUPPORTED (with a
 * message) when it cannot handle the request, so the caller may fall back. */
dqg_status dqg_kernel_reference_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_dequantize_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_matmul_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_conv_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_pool_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_qmatmul_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_qconv_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_eltwise_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_concat_build(const dqg_kernel_request *req, dqg_kernel **out);
/* Q(Concat(DQ(x_i))): each int8 input mapped through a 256-entry table
 * (its dequantize then the quantize, computed by the reference) into its
 * place in the int8 output. */
dqg_status dqg_kernel_qconcat_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_slice_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_pad_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_resize_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_deconv_build(const dqg_kernel_request *req, dqg_kernel **out);
/* An int8 ConvTranspose partition (DQG_PART_QCONV around a ConvTranspose). */
dqg_status dqg_kernel_qdeconv_build(const dqg_kernel_request *req, dqg_kernel **out);
/* x cos + rotate_half(x) sin (DQG_PART_ROTARY) in one pass, AVX-512 or C. */
dqg_status dqg_kernel_rotary_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_gather_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_gather_elements_build(const dqg_kernel_request *req, dqg_kernel **out);
/* Compare, Logical and Where: broadcasting loops of dqgraph's own. */
dqg_status dqg_kernel_select_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_norm_build(const dqg_kernel_request *req, dqg_kernel **out);
/* RNN, GRU and LSTM on oneDNN's RNN primitives (runtime/kernel_rnn.c). */
dqg_status dqg_kernel_rnn_build(const dqg_kernel_request *req, dqg_kernel **out);
/* LayerNorm with its rms flag: dqgraph's own kernel (runtime/rms_norm.c). */
dqg_status dqg_kernel_rms_norm_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_quantize_build(const dqg_kernel_request *req, dqg_kernel **out);
/* The same kernel for one QUANTIZE op of a larger partition, and a run of
 * it into `y` (its own result may be internal to the partition). */
dqg_status dqg_kernel_quantize_build_op(const dqg_kernel_request *req, const dqg_op *op,
                                        dqg_kernel **out);
dqg_status dqg_quantize_kernel_run_into(const dqg_kernel *k, void *const *args, void *scratch,
                                        void *y);
dqg_status dqg_kernel_wo_matmul_build(const dqg_kernel_request *req, dqg_kernel **out);
/* An f32 MatMul or Convolution with the TypeCast to an integer type that
 * alone reads its result (MatMulInteger, ConvInteger unfused): the
 * reduction in chunks whose sums f32 holds exactly (kernel_integer.c). */
dqg_status dqg_kernel_imatmul_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_iconv_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_const_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_qeltwise_build(const dqg_kernel_request *req, dqg_kernel **out);
dqg_status dqg_kernel_dynamic_quantize_build(const dqg_kernel_request *req, dqg_kernel **out);

/* A constant-folding partition's results, in the order of its mini graph's
 * outputs (runtime/kernel_const.c). */
typedef struct dqg_const_result {
    const void *data;
    uint64_t hash[2]; /* XXH3-128, low and high */
} dqg_const_result;
const dqg_const_result *dqg_kernel_const_result(const dqg_kernel *k, int output);

/* The CPU engine shared by every oneDNN kernel (created once). Returned as
 * void * to keep oneDNN types out of this header. To run a primitive, use
 * runtime/onednn_exec.h (per-primitive pool of stream/memory slots, safe for
 * concurrent executions, no allocation after warm-up). */
void *dqg_onednn_engine(void);

#endif
