/*
 * dqgraph ONNX front end: imports an ONNX model (ModelProto) into a finalized
 * dqgraph graph, and reads and writes single tensors as TensorProto ".pb"
 * files (the ONNX backend-test format).
 *
 * What is imported
 * - Opset imports of the default domain ("" or "ai.onnx") and of
 *   "com.amd.quark". Nodes bind to the model's opset of their domain.
 * - Initializers (raw_data and the typed fields, every dqgraph data type;
 *   4-bit types packed two per int32_data element as ONNX specifies),
 *   Constant nodes, external data (see below).
 * - Graph inputs with static shapes. A symbolic dimension (dim_param) takes
 *   its value from dqg_onnx_options.dim_params or from an input hint;
 *   otherwise the import fails naming the input and the dimension.
 * - An initializer that has the name of a graph input wins (ONNX IR >= 4: the
 *   initializer is the input's default value): the tensor is a constant and
 *   the graph has no such input.
 * - Nodes in topological order, whatever their order in the file (a cycle is
 *   a DQG_PARSE_ERROR naming a node in it).
 * - Operators: DequantizeLinear, QuantizeLinear, DynamicQuantizeLinear,
 *   com.amd.quark ExtendedDequantizeLinear, MatMul, Gemm, Conv, Add, Mul,
 *   Relu, Clip (float, and 8/16-bit integers), Reshape, Transpose, Identity,
 *   Constant, Cast (to float types, and between integers), Flatten, Squeeze,
 *   Unsqueeze, QLinearMatMul and QLinearConv (imported as dequantize -> op
 *   -> quantize), MatMulInteger and ConvInteger (dequantize with unit scale
 *   -> op -> TypeCast to int32: exact while every accumulated sum stays
 *   within 2^24 in magnitude, since the product is computed in f32), ONNX
 *   Runtime's com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid,
 *   QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool,
 *   QLinearConcat, QLinearSoftmax and QGemm (its QOperator format, imported
 *   as dequantize -> op -> quantize), and the pooling, normalization,
 *   element-wise, reduction and shape operators README.md's "ONNX import"
 *   row lists.
 * - Anything else is DQG_UNSUPPORTED with a message naming the operator, its
 *   domain, the opset and the node.
 *
 * External data (TensorProto.data_location = EXTERNAL) is read from files in
 * the model's folder (base_dir for dqg_onnx_load_memory): an absolute
 * location, a ".." component or a path that resolves outside that folder is
 * rejected, as is any external data when there is no base folder.
 *
 * Every function here is thread-safe (the importer keeps no global state),
 * reads the caller's options, paths and data only during the call, and
 * reports failures as dqgraph.h describes (a status and dqg_last_error()).
 */
#ifndef DQGRAPH_ONNX_H
#define DQGRAPH_ONNX_H

#include "dqgraph.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/** Default limit on the model size (and on external data read for it): 2 GiB. */
#define DQG_ONNX_DEFAULT_MAX_MODEL_BYTES ((uint64_t)2 << 30)
/** Models with more nodes than this (2^21) are refused with
 * DQG_INVALID_ARGUMENT unless dqg_onnx_options.max_nodes says otherwise.
 * Import and compile are linear in the node count: a chain of 10^6 nodes
 * imports in seconds and holds about 2.6 GB while it compiles. */
#define DQG_ONNX_DEFAULT_MAX_NODES ((uint64_t)1 << 21)

/** A value for a symbolic dimension (TensorShapeProto dim_param), e.g. "batch" = 8. */
typedef struct dqg_onnx_dim_param {
    const char *name;
    int64_t value; /**< >= 1 */
} dqg_onnx_dim_param;

/**
 * What the caller knows about one graph input before the import.
 * - The shape (rank >= 0) fixes symbolic or unknown dimensions; static
 *   dimensions of the model must agree with it. rank < 0: no shape.
 * - The value (data != NULL; dtype, shape and size as for a dqgraph buffer)
 *   is used only when an operator needs the input's value while the graph is
 *   built (Reshape's shape, Clip's bounds from opset 11, ...): the input is
 *   then frozen, i.e. it becomes a constant holding this value and is no
 *   longer an input of the graph. Otherwise the data is ignored.
 */
typedef struct dqg_onnx_input_hint {
    const char *name; /**< graph input name; NULL: the input at position `index` */
    size_t index;     /**< position among the graph inputs that are not initializers */
    int rank;
    int64_t dims[DQG_MAX_RANK];
    dqg_dtype dtype;  /**< the value's type (must be the input's); unused without data */
    const void *data; /**< NULL: shape only */
    size_t size;      /**< bytes at data */
} dqg_onnx_input_hint;

/** Import options; zero-initialized (or NULL) means the defaults. */
typedef struct dqg_onnx_options {
    const dqg_onnx_dim_param *dim_params;
    size_t n_dim_params;
    const dqg_onnx_input_hint *inputs;
    size_t n_inputs;
    uint64_t max_model_bytes; /**< 0: DQG_ONNX_DEFAULT_MAX_MODEL_BYTES */
    uint64_t max_nodes;       /**< 0: DQG_ONNX_DEFAULT_MAX_NODES */
} dqg_onnx_options;

/**
 * Imports the ONNX model file at `path` into a new, finalized graph (*out,
 * owned by the caller: free it with dqg_graph_destroy; NULL on failure).
 * Graph inputs and outputs keep the model's names and order. External data
 * is looked up next to the file. `opts` may be NULL. Errors:
 * DQG_IO_ERROR (unreadable file), DQG_PARSE_ERROR (not a valid ModelProto,
 * or the model breaks an ONNX rule), DQG_UNSUPPORTED, DQG_INVALID_ARGUMENT
 * (a builder rejected a node; the message names the node).
 */
DQG_API dqg_status dqg_onnx_load_file(const char *path, const dqg_onnx_options *opts,
                                      dqg_graph **out);

/**
 * As dqg_onnx_load_file for a serialized ModelProto of `size` bytes at
 * `data` (the caller's; not kept); base_dir may be NULL (no external data).
 */
DQG_API dqg_status dqg_onnx_load_memory(const void *data, size_t size, const char *base_dir,
                                        const dqg_onnx_options *opts, dqg_graph **out);

/**
 * Reads a TensorProto file (raw_data or the typed fields). *name_out
 * (malloc'd: free() it; NULL when the tensor has no name; name_out may be
 * NULL), *dtype_out, *rank_out and dims_out[DQG_MAX_RANK] describe the
 * tensor; *data_out (malloc'd: free() it) holds *size_out bytes in dqgraph's
 * storage layout (4-bit types packed). Files above
 * DQG_ONNX_DEFAULT_MAX_MODEL_BYTES are refused. On failure nothing is left
 * allocated. Errors: DQG_INVALID_ARGUMENT (a required pointer is NULL),
 * DQG_IO_ERROR, DQG_PARSE_ERROR, DQG_UNSUPPORTED (a data type or rank
 * dqgraph lacks), DQG_OUT_OF_MEMORY.
 */
DQG_API dqg_status dqg_tensor_file_read(const char *path, char **name_out, dqg_dtype *dtype_out,
                                        int *rank_out, int64_t *dims_out, void **data_out,
                                        size_t *size_out);

/**
 * Writes a TensorProto file with raw_data holding dqg_dtype_storage_size(
 * dtype, elements) bytes from `data`. `name` may be NULL. Errors:
 * DQG_INVALID_ARGUMENT (a NULL argument, an invalid type or shape),
 * DQG_IO_ERROR.
 */
DQG_API dqg_status dqg_tensor_file_write(const char *path, const char *name, dqg_dtype dtype,
                                         int rank, const int64_t *dims, const void *data);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* DQGRAPH_ONNX_H */
