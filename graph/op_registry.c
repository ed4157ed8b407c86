/* Maps each op kind to its definition (graph/ops/<op>.c) and its name. */
#include "graph/graph_internal.h"

static const dqg_op_def *const defs[DQG_OP_KIND_COUNT] = {
    [DQG_OP_DEQUANTIZE] = &dqg_op_def_dequantize,
    [DQG_OP_QUANTIZE] = &dqg_op_def_quantize,
    [DQG_OP_DYNAMIC_QUANTIZE] = &dqg_op_def_dynamic_quantize,
    [DQG_OP_MATMUL] = &dqg_op_def_matmul,
    [DQG_OP_CONVOLUTION] = &dqg_op_def_convolution,
    [DQG_OP_BIAS_ADD] = &dqg_op_def_bias_add,
    [DQG_OP_ADD] = &dqg_op_def_add,
    [DQG_OP_MUL] = &dqg_op_def_mul,
    [DQG_OP_RELU] = &dqg_op_def_relu,
    [DQG_OP_CLIP] = &dqg_op_def_clip,
    [DQG_OP_RESHAPE] = &dqg_op_def_reshape,
    [DQG_OP_TRANSPOSE] = &dqg_op_def_transpose,
    [DQG_OP_TYPECAST] = &dqg_op_def_typecast,
    [DQG_OP_UNARY] = &dqg_op_def_unary,
    [DQG_OP_SUB] = &dqg_op_def_sub,
    [DQG_OP_DIV] = &dqg_op_def_div,
    [DQG_OP_POW] = &dqg_op_def_pow,
    [DQG_OP_SOFTMAX] = &dqg_op_def_softmax,
    [DQG_OP_CONCAT] = &dqg_op_def_concat,
    [DQG_OP_LRN] = &dqg_op_def_lrn,
    [DQG_OP_LAYER_NORM] = &dqg_op_def_layer_norm,
    [DQG_OP_REDUCE] = &dqg_op_def_reduce,
    [DQG_OP_POOL] = &dqg_op_def_pool,
    [DQG_OP_SLICE] = &dqg_op_def_slice,
    [DQG_OP_GATHER] = &dqg_op_def_gather,
    [DQG_OP_COMPARE] = &dqg_op_def_compare,
    [DQG_OP_LOGICAL] = &dqg_op_def_logical,
    [DQG_OP_WHERE] = &dqg_op_def_where,
    [DQG_OP_GATHER_ELEMENTS] = &dqg_op_def_gather_elements,
    [DQG_OP_MAX] = &dqg_op_def_max,
    [DQG_OP_MIN] = &dqg_op_def_min,
    [DQG_OP_PAD] = &dqg_op_def_pad,
    [DQG_OP_RESIZE] = &dqg_op_def_resize,
    [DQG_OP_ARG] = &dqg_op_def_arg,
    [DQG_OP_CONV_TRANSPOSE] = &dqg_op_def_conv_transpose,
};

const dqg_op_def *dqg_op_def_of(dqg_op_kind kind)
{
    return (kind >= 0 && kind < DQG_OP_KIND_COUNT) ? defs[kind] : NULL;
}

const char *dqg_op_kind_name(dqg_op_kind kind)
{
    static const char *const names[DQG_OP_KIND_COUNT] = {
        [DQG_OP_DEQUANTIZE] = "Dequantize",
        [DQG_OP_QUANTIZE] = "Quantize",
        [DQG_OP_DYNAMIC_QUANTIZE] = "DynamicQuantizeLinear",
        [DQG_OP_MATMUL] = "MatMul",
        [DQG_OP_CONVOLUTION] = "Convolution",
        [DQG_OP_BIAS_ADD] = "BiasAdd",
        [DQG_OP_ADD] = "Add",
        [DQG_OP_MUL] = "Mul",
        [DQG_OP_RELU] = "ReLU",
        [DQG_OP_CLIP] = "Clip",
        [DQG_OP_RESHAPE] = "Reshape",
        [DQG_OP_TRANSPOSE] = "Transpose",
        [DQG_OP_TYPECAST] = "TypeCast",
        [DQG_OP_UNARY] = "Unary",
        [DQG_OP_SUB] = "Sub",
        [DQG_OP_DIV] = "Div",
        [DQG_OP_POW] = "Pow",
        [DQG_OP_SOFTMAX] = "Softmax",
        [DQG_OP_CONCAT] = "Concat",
        [DQG_OP_LRN] = "LRN",
        [DQG_OP_LAYER_NORM] = "LayerNorm",
        [DQG_OP_REDUCE] = "Reduce",
        [DQG_OP_POOL] = "Pool",
        [DQG_OP_SLICE] = "Slice",
        [DQG_OP_GATHER] = "Gather",
        [DQG_OP_COMPARE] = "Compare",
        [DQG_OP_LOGICAL] = "Logical",
        [DQG_OP_WHERE] = "Where",
        [DQG_OP_GATHER_ELEMENTS] = "GatherElements",
        [DQG_OP_MAX] = "Max",
        [DQG_OP_MIN] = "Min",
        [DQG_OP_PAD] = "Pad",
        [DQG_OP_RESIZE] = "Resize",
        [DQG_OP_ARG] = "Arg",
        [DQG_OP_CONV_TRANSPOSE] = "ConvTranspose",
    };
    return (kind >= 0 && kind < DQG_OP_KIND_COUNT) ? names[kind] : "Unknown";
}
