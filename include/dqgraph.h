/*
 * dqgraph — a graph compiler and runtime for quantized inference.
 *
 * This header is the whole public API. Users build an operation graph (tensors
 * are named by integer ids), finalize it, and run it, either on the reference
 * interpreter (plain C, the numerical ground truth) or, once compiled, on
 * oneDNN primitives and dqgraph's own kernels.
 *
 * Errors
 * - Every builder call returns a tensor id (>= 0) or DQG_NONE. The first error
 *   makes the graph "sticky-failed": that error is kept, every later builder
 *   call returns DQG_NONE without doing anything, and dqg_graph_finalize()
 *   reports it. Users therefore check once, at finalize.
 * - Every other function that can fail returns a dqg_status. A failing call
 *   sets a thread-local message, read with dqg_last_error(), naming the op
 *   kind, the op's name, the input and the rule, e.g. "MatMul 'fc1': inner
 *   dimensions differ: input 0 has K=64, input 1 has K=32". A failing call
 *   changes nothing the caller can see, except where its documentation says
 *   otherwise (dqg_execute's outputs).
 * - Query functions (dqg_graph_*, dqg_tensor_*, dqg_compiled_*) do not fail:
 *   for a NULL handle or an index out of range they return 0, -1, DQG_NONE,
 *   DQG_DTYPE_UNDEF, false or NULL as documented, and set no message.
 *
 * Ownership and lifetimes
 * - dqgraph never takes ownership of what the caller passes: constant data,
 *   names and attribute structs are copied before the call returns, and
 *   buffers passed to dqg_execute / dqg_reference_run are only used during
 *   the call.
 * - Handles (dqg_graph, dqg_compiled) are created by dqgraph and freed by the
 *   caller with their destroy function. A dqg_compiled does not refer to the
 *   graph it was compiled from: the graph may be destroyed right after
 *   dqg_compile.
 * - Strings returned by dqgraph are owned by it; never free them. Each
 *   function says how long its string lives: "static" strings live for the
 *   whole process; graph strings live until dqg_graph_destroy (a tensor's
 *   name also until dqg_output renames it); compiled strings live until
 *   dqg_compiled_destroy; dqg_last_error's message until the next failing
 *   call on the same thread.
 *
 * Thread safety
 * - Building a graph (builder calls, dqg_output, dqg_graph_finalize) must not
 *   run concurrently with any other call on the same graph. Different graphs
 *   may be built on different threads at once.
 * - A finalized graph is read-only: any number of threads may query, dump,
 *   compile (dqg_compile) and run (dqg_reference_run) it at once.
 * - One dqg_compiled may be executed, queried and dumped from several threads
 *   at once; only dqg_compiled_destroy must not race with other calls on it.
 * - The compiled-partition cache (dqg_cache_*) and the ONNX importer
 *   (dqgraph_onnx.h) are thread-safe; the importer keeps no global state.
 * - dqg_compile and dqg_execute use OpenMP for the kernels' threads; each
 *   calling thread has its own OpenMP team, of at most OMP_THREAD_LIMIT
 *   threads and never resized by OMP_DYNAMIC (oneDNN splits a primitive's
 *   work among the threads it was created for, so a smaller team would
 *   leave part of it undone).
 *
 * Data layout
 * - Tensors are dense and row-major (C order), the last dimension contiguous.
 * - 4-bit types (s4, u4, f4e2m1) are packed two per byte, the element with the
 *   lower index in the low nibble; a tensor of n elements takes (n + 1) / 2
 *   bytes.
 * - f16 and bf16 elements are stored as their 16-bit patterns, float8 types
 *   as one byte each, in the machine's (little-endian) byte order.
 * - bool elements take one byte each, 0 (false) or 1 (true). A bool constant
 *   holding another byte value is refused; in a bool buffer given at run
 *   time any non-zero byte reads as true. Ops that compute a bool write 0
 *   or 1; ops that move elements (Reshape, Gather, Where, ...) copy them.
 */
#ifndef DQGRAPH_H
#define DQGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header. dqg_version() gives the version of the library
 * actually linked; the two differ when a program runs against another build of
 * libdqgraph.so than it was compiled with.
 */
#define DQG_VERSION_MAJOR  0
#define DQG_VERSION_MINOR  1
#define DQG_VERSION_PATCH  0
#define DQG_VERSION_STRING "0.1.0"

/*
 * DQG_API marks the functions exported by the shared library, which is built
 * with hidden visibility: only what this header and dqgraph_onnx.h declare is
 * part of the ABI. The declarations are also enclosed in a default-visibility
 * region, so nothing declared here can be left out of the export list.
 */
#ifndef DQG_API
#if defined(__GNUC__) || defined(__clang__)
#define DQG_API __attribute__((visibility("default")))
#else
#define DQG_API
#endif
#endif
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/**
 * The version of the linked library, "MAJOR.MINOR.PATCH" (DQG_VERSION_STRING
 * of the header it was built with). The string is static: never free it.
 * Thread-safe.
 */
DQG_API const char *dqg_version(void);

/** Largest tensor rank accepted anywhere. */
#define DQG_MAX_RANK 8

/* ------------------------------------------------------------------------ */
/* Status and errors                                                         */
/* ------------------------------------------------------------------------ */

typedef enum dqg_status {
    DQG_OK = 0,
    DQG_INVALID_ARGUMENT = 1, /**< the graph, an attribute or a buffer breaks a rule */
    DQG_UNSUPPORTED = 2,      /**< valid, but not supported by dqgraph */
    DQG_OUT_OF_MEMORY = 3,
    DQG_BACKEND_ERROR = 4, /**< oneDNN refused or failed */
    DQG_IO_ERROR = 5,
    DQG_PARSE_ERROR = 6,
} dqg_status;

/** "ok", "invalid argument", "unsupported", ...; "unknown status" otherwise. Static string. */
DQG_API const char *dqg_status_name(dqg_status status);

/**
 * The message of the most recent failure on the calling thread ("" if no call
 * on this thread has failed yet). Calls that succeed leave it as it is, so
 * read it right after a call reports failure. The returned pointer is the
 * thread's own buffer: valid for the thread's lifetime, and its text is
 * replaced by the next failing call on the same thread (copy it to keep it).
 * Never NULL; never free it.
 */
DQG_API const char *dqg_last_error(void);

/* ------------------------------------------------------------------------ */
/* Data types                                                                */
/* ------------------------------------------------------------------------ */

typedef enum dqg_dtype {
    DQG_DTYPE_UNDEF = 0,
    DQG_F32,
    DQG_F16,
    DQG_BF16,
    DQG_S4,
    DQG_U4,
    DQG_S8,
    DQG_U8,
    DQG_S16,
    DQG_U16,
    DQG_S32,
    DQG_U32,
    DQG_F8E4M3FN,
    DQG_F8E4M3FNUZ,
    DQG_F8E5M2,
    DQG_F8E5M2FNUZ,
    DQG_F4E2M1,
    DQG_S64,
    DQG_BOOL, /**< one byte per element: 0 is false, 1 is true */
    DQG_DTYPE_COUNT
} dqg_dtype;

/*
 * The functions on data types are pure: thread-safe, no allocation, no error
 * message. Names are static strings.
 */

/** "f32", "s4", "f8e4m3fn", "bool", ...; "undef" for anything else. */
DQG_API const char *dqg_dtype_name(dqg_dtype dtype);
/** Parses a name returned by dqg_dtype_name; DQG_DTYPE_UNDEF if unknown or NULL. */
DQG_API dqg_dtype dqg_dtype_from_name(const char *name);
/** Bits per element: 4, 8 (bool too), 16, 32 or 64; 0 for an invalid type. */
DQG_API int dqg_dtype_bits(dqg_dtype dtype);
/**
 * Bytes taken by n elements, with 4-bit types packed two per byte; 0 for an
 * invalid type or a negative n.
 */
DQG_API size_t dqg_dtype_storage_size(dqg_dtype dtype, int64_t nelems);
/** True for f32, f16, bf16, the float8 types and f4e2m1. */
DQG_API bool dqg_dtype_is_float(dqg_dtype dtype);
/** True for s4, u4, s8, u8, s16, u16, s32, u32 and s64 (not bool). */
DQG_API bool dqg_dtype_is_integer(dqg_dtype dtype);
/** True for s4, s8, s16, s32, s64 and every float type; false otherwise. */
DQG_API bool dqg_dtype_is_signed(dqg_dtype dtype);

/**
 * Element codecs. decode reads n elements of `dtype` starting at element
 * `first` of `src` and writes them as float; encode writes n floats into
 * elements first..first+n-1 of `dst`, rounding to nearest even and, for
 * integers, saturating (bool: any non-zero value, NaN included, is true
 * and decodes as 1; float8 and float4: saturate selects the ONNX
 * saturating conversion; otherwise out-of-range values become infinity or
 * NaN as the format allows). For 32-bit integers, prefer exact conversions
 * through int64 when exactness beyond 2^24 matters. `first` lets 4-bit
 * elements start in the middle of a byte. An invalid type converts nothing.
 * The buffers are the caller's; nothing is kept.
 */
DQG_API void dqg_dtype_decode(dqg_dtype dtype, const void *src, int64_t first, int64_t n,
                              float *dst);
DQG_API void dqg_dtype_encode(dqg_dtype dtype, const float *src, int64_t n, void *dst,
                              int64_t first, bool saturate);

/* ------------------------------------------------------------------------ */
/* Graph building                                                            */
/* ------------------------------------------------------------------------ */

typedef int32_t dqg_tensor_id;
/** "no tensor": an absent optional input, or a failed builder call. */
#define DQG_NONE ((dqg_tensor_id)-1)

typedef struct dqg_graph dqg_graph;

typedef enum dqg_op_kind {
    DQG_OP_DEQUANTIZE = 0,
    DQG_OP_QUANTIZE,
    DQG_OP_DYNAMIC_QUANTIZE,
    DQG_OP_MATMUL,
    DQG_OP_CONVOLUTION,
    DQG_OP_BIAS_ADD,
    DQG_OP_ADD,
    DQG_OP_MUL,
    DQG_OP_RELU,
    DQG_OP_CLIP,
    DQG_OP_RESHAPE,
    DQG_OP_TRANSPOSE,
    DQG_OP_TYPECAST,
    DQG_OP_UNARY,
    DQG_OP_SUB,
    DQG_OP_DIV,
    DQG_OP_POW,
    DQG_OP_SOFTMAX,
    DQG_OP_CONCAT,
    DQG_OP_LRN,
    DQG_OP_LAYER_NORM,
    DQG_OP_REDUCE,
    DQG_OP_POOL,
    DQG_OP_SLICE,
    DQG_OP_GATHER,
    DQG_OP_COMPARE,
    DQG_OP_LOGICAL,
    DQG_OP_WHERE,
    DQG_OP_GATHER_ELEMENTS,
    DQG_OP_MAX,
    DQG_OP_MIN,
    DQG_OP_PAD,
    DQG_OP_RESIZE,
    DQG_OP_ARG,
    DQG_OP_CONV_TRANSPOSE,
    DQG_OP_CUMSUM,
    DQG_OP_TOPK,
    DQG_OP_GATHER_ND,
    DQG_OP_SCATTER_ND,
    DQG_OP_SCATTER_ELEMENTS,
    DQG_OP_MOD,
    DQG_OP_RNN,
    DQG_OP_KIND_COUNT
} dqg_op_kind;

/** "Dequantize", "MatMul", ...: static strings. */
DQG_API const char *dqg_op_kind_name(dqg_op_kind kind);

/**
 * Creates an empty graph in *out, owned by the caller (free it with
 * dqg_graph_destroy). Errors: DQG_INVALID_ARGUMENT (out is NULL),
 * DQG_OUT_OF_MEMORY (*out is then NULL).
 */
DQG_API dqg_status dqg_graph_create(dqg_graph **out);
/**
 * Frees the graph and everything it owns: every string and id obtained from
 * it becomes invalid. Compiled graphs made from it stay valid. NULL is
 * allowed.
 */
DQG_API void dqg_graph_destroy(dqg_graph *graph);

/*
 * Builder calls. Each adds one tensor or op to a graph that is not finalized
 * and returns the new tensor's id, or DQG_NONE on error (see "Errors" above:
 * the graph is then sticky-failed and dqg_graph_finalize returns the error).
 * `name` names the op (and its output tensor); it may be NULL, and a unique
 * name is generated. Input ids must come from the same graph. The output's
 * data type and shape are inferred at once: dqg_tensor_dtype and
 * dqg_tensor_dims answer right after the call.
 */

/**
 * A graph input with a static shape (rank 0 to DQG_MAX_RANK, every dimension
 * >= 1; `dims` may be NULL for rank 0). `name` is required and must be unique
 * among all tensors of the graph: buffers bind to inputs by it.
 */
DQG_API dqg_tensor_id dqg_input(dqg_graph *graph, const char *name, dqg_dtype dtype, int rank,
                                const int64_t *dims);

/**
 * A constant tensor; `data` holds exactly nbytes = dqg_dtype_storage_size(
 * dtype, elements) bytes (another nbytes is an error) and is copied, so the
 * caller may free it at once. `name` may be NULL (a name is generated).
 */
DQG_API dqg_tensor_id dqg_constant(dqg_graph *graph, const char *name, dqg_dtype dtype, int rank,
                                   const int64_t *dims, const void *data, size_t nbytes);

/**
 * Marks `tensor` as a graph output. `name` (may be NULL or "") renames it,
 * which invalidates a pointer returned by dqg_tensor_name for it; the new
 * name must be unique. A tensor is marked at most once. Errors as for the
 * builder calls (sticky), returned as a status.
 */
DQG_API dqg_status dqg_output(dqg_graph *graph, dqg_tensor_id tensor, const char *name);

typedef struct dqg_matmul_attrs {
    bool transpose_a; /**< swap the last two dimensions of input 0 */
    bool transpose_b; /**< swap the last two dimensions of input 1 */
} dqg_matmul_attrs;

/**
 * ONNX MatMul (NumPy matmul broadcasting; 1-D inputs are promoted and the
 * added dimension removed again) with oneDNN Graph's transpose_a/transpose_b.
 * Inputs f32, f16 or bf16 of one type; the output has that type. `attrs` may
 * be NULL.
 */
DQG_API dqg_tensor_id dqg_matmul(dqg_graph *graph, const char *name, dqg_tensor_id a,
                                 dqg_tensor_id b, const dqg_matmul_attrs *attrs);

typedef enum dqg_data_format {
    DQG_FORMAT_NCX = 0, /**< batch, channels, spatial... (NCHW) */
    DQG_FORMAT_NXC = 1, /**< batch, spatial..., channels (NHWC) */
} dqg_data_format;

typedef struct dqg_conv_attrs {
    int spatial_rank;            /**< 1, 2 or 3 */
    int64_t strides[3];          /**< >= 1; 0 means 1 */
    int64_t pads_begin[3];       /**< >= 0 */
    int64_t pads_end[3];         /**< >= 0 */
    int64_t dilations[3];        /**< >= 1; 0 means 1 */
    int64_t groups;              /**< >= 1; 0 means 1 */
    dqg_data_format data_format; /**< layout of src and dst */
} dqg_conv_attrs;

/**
 * Convolution (cross-correlation, as ONNX Conv and oneDNN). src is
 * [N, C, X...] (NCX) or [N, X..., C] (NXC); weights are always OIX
 * [O, C/groups, K...]; bias (DQG_NONE if absent) is [O]. Float types as for
 * MatMul. Output [N, O, Y...] or [N, Y..., O], with
 * Y = (X + pb + pe - ((K - 1) * d + 1)) / s + 1.
 */
DQG_API dqg_tensor_id dqg_convolution(dqg_graph *graph, const char *name, dqg_tensor_id src,
                                      dqg_tensor_id weights, dqg_tensor_id bias,
                                      const dqg_conv_attrs *attrs);

/** Attributes of dqg_conv_transpose. Zero-initialize, then set what the model sets. */
typedef struct dqg_conv_transpose_attrs {
    int spatial_rank;          /**< 1, 2 or 3 */
    int64_t strides[3];        /**< >= 1; 0 means 1 */
    int64_t pads_begin[3];     /**< >= 0: output elements dropped at the start */
    int64_t pads_end[3];       /**< >= 0: output elements dropped at the end */
    int64_t dilations[3];      /**< >= 1; 0 means 1 */
    int64_t output_padding[3]; /**< >= 0: output elements added at the end */
    int64_t groups;            /**< >= 1; 0 means 1 */
} dqg_conv_transpose_attrs;

/**
 * Transposed convolution (ONNX ConvTranspose) of src [N, C, X...] (NCX)
 * with weights [C, M / groups, K...] and optional bias [M]: each input
 * element scatters into the output, y[n, m, o] += x[n, c, i] w[c, m', k]
 * at o = i stride + k dilation - pads_begin, with
 * Y = stride (X - 1) + output_padding + (K - 1) dilation + 1 - pads_begin
 * - pads_end >= 1. Float types as for Convolution; runs on oneDNN's
 * deconvolution.
 */
DQG_API dqg_tensor_id dqg_conv_transpose(dqg_graph *graph, const char *name, dqg_tensor_id src,
                                         dqg_tensor_id weights, dqg_tensor_id bias,
                                         const dqg_conv_transpose_attrs *attrs);

/** x + bias along the channel axis (axis 1 for NCX, the last for NXC); bias is 1-D. */
DQG_API dqg_tensor_id dqg_bias_add(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                   dqg_tensor_id bias, dqg_data_format data_format);
/**
 * Element-wise a + b and a * b with NumPy broadcasting; both inputs of one
 * type: f32, f16, bf16, or an 8/16/32-bit integer, which wraps around
 * (modulo 2^bits) as in ONNX.
 */
DQG_API dqg_tensor_id dqg_add(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b);
DQG_API dqg_tensor_id dqg_mul(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b);
/** max(x, 0) element-wise; x f32, f16 or bf16; the output has x's type and shape. */
DQG_API dqg_tensor_id dqg_relu(dqg_graph *graph, const char *name, dqg_tensor_id x);
/** min(max(x, lo), hi) element-wise; lo <= hi, neither NaN; x as for ReLU. */
DQG_API dqg_tensor_id dqg_clip(dqg_graph *graph, const char *name, dqg_tensor_id x, float lo,
                               float hi);
/**
 * a - b, a / b and a ^ b element-wise with NumPy broadcasting, as dqg_add.
 * Sub takes the types of Add (integers wrap around). Div takes them too:
 * integers truncate toward zero, and an integer division by zero is an
 * error when the graph runs. Pow takes f32, f16 and bf16 only.
 */
DQG_API dqg_tensor_id dqg_sub(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b);
DQG_API dqg_tensor_id dqg_div(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b);
DQG_API dqg_tensor_id dqg_pow(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b);
/**
 * The larger and the smaller of a and b element-wise (ONNX Max and Min of two
 * inputs), with NumPy broadcasting and the types of dqg_add. NaN in either
 * operand gives NaN (as NumPy's maximum and minimum); of two equal values
 * (+0 and -0) the result is a.
 */
DQG_API dqg_tensor_id dqg_max(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b);
DQG_API dqg_tensor_id dqg_min(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b);

/** The functions of dqg_unary; alpha and beta are used where named. */
typedef enum dqg_unary_op {
    DQG_UNARY_SIGMOID = 0, /**< 1 / (1 + e^-x) */
    DQG_UNARY_TANH,
    DQG_UNARY_ERF,
    DQG_UNARY_GELU_ERF,  /**< x/2 (1 + erf(x / sqrt 2)), ONNX Gelu */
    DQG_UNARY_GELU_TANH, /**< ONNX Gelu with approximate = "tanh" */
    DQG_UNARY_NEG,       /**< -x */
    DQG_UNARY_ABS,
    DQG_UNARY_SQRT,       /**< NaN below zero */
    DQG_UNARY_RECIPROCAL, /**< 1 / x */
    DQG_UNARY_EXP,
    DQG_UNARY_LOG,          /**< NaN below zero, -inf at zero */
    DQG_UNARY_HARD_SIGMOID, /**< max(0, min(1, alpha x + beta)) */
    DQG_UNARY_HARD_SWISH,   /**< x max(0, min(1, x / 6 + 1 / 2)) */
    DQG_UNARY_LEAKY_RELU,   /**< x below zero becomes alpha x */
    DQG_UNARY_ELU,          /**< x below zero becomes alpha (e^x - 1) */
    DQG_UNARY_SWISH,        /**< x sigmoid(alpha x); alpha = 1 is SiLU */
    DQG_UNARY_POW,          /**< x ^ alpha */
    DQG_UNARY_COS,
    DQG_UNARY_SIN,
    DQG_UNARY_FLOOR,
    DQG_UNARY_CEIL,
    DQG_UNARY_ROUND,    /**< to the nearest integer, ties to even */
    DQG_UNARY_SIGN,     /**< -1, 0 or 1; NaN stays NaN */
    DQG_UNARY_SOFTPLUS, /**< log(1 + e^x) */
    DQG_UNARY_SELU,     /**< beta x above 0, else beta alpha (e^x - 1) (ONNX's gamma is beta) */
    DQG_UNARY_SOFTSIGN, /**< x / (1 + |x|) */
    DQG_UNARY_THRESHOLDED_RELU, /**< x above alpha, else 0 */
    DQG_UNARY_CELU,             /**< max(0, x) + min(0, alpha (e^(x / alpha) - 1)) */
    DQG_UNARY_MISH,             /**< x tanh(log(1 + e^x)) */
    DQG_UNARY_TAN,
    DQG_UNARY_ASIN, /**< NaN outside [-1, 1] */
    DQG_UNARY_ACOS, /**< NaN outside [-1, 1] */
    DQG_UNARY_ATAN,
    DQG_UNARY_SINH,
    DQG_UNARY_COSH,
    DQG_UNARY_ASINH,
    DQG_UNARY_ACOSH, /**< NaN below 1 */
    DQG_UNARY_ATANH, /**< NaN outside [-1, 1], infinite at -1 and 1 */
    DQG_UNARY_COUNT
} dqg_unary_op;

/**
 * y = f(x) element-wise for one of the dqg_unary_op functions; x f32, f16 or
 * bf16, y of x's type and shape, computed in float and rounded once. alpha
 * and beta must be finite where the function uses them and are ignored
 * otherwise. The compiled kernels (oneDNN's eltwise where it has the
 * function) stay within a few float32 ulps of the exact value.
 */
DQG_API dqg_tensor_id dqg_unary(dqg_graph *graph, const char *name, dqg_unary_op op,
                                dqg_tensor_id x, float alpha, float beta);
/** "Sigmoid", "Tanh", ...: static strings; "Unknown" out of range. */
DQG_API const char *dqg_unary_op_name(dqg_unary_op op);

/**
 * Softmax (or, with log, LogSoftmax) along one axis of x, as ONNX opset 13:
 * e^(x - max) / sum e^(x - max) over `axis` (negative counts from the end).
 * x f32, f16 or bf16 of rank >= 1.
 */
DQG_API dqg_tensor_id dqg_softmax(dqg_graph *graph, const char *name, dqg_tensor_id x, int axis,
                                  bool log);

/**
 * Joins n tensors (1 to 4096) of one type and rank along `axis` (negative
 * counts from the end); every other dimension must agree. Any data type.
 */
DQG_API dqg_tensor_id dqg_concat(dqg_graph *graph, const char *name, int n,
                                 const dqg_tensor_id *inputs, int axis);

/**
 * Local response normalization across channels (ONNX LRN) of an NCX
 * tensor (rank 3 to 5, f32): y = x / (bias + alpha / size * sum x^2)^beta,
 * the sum over the `size` channels around each one (size odd or even, >= 1;
 * alpha, beta and bias finite, bias > 0).
 */
DQG_API dqg_tensor_id dqg_lrn(dqg_graph *graph, const char *name, dqg_tensor_id x, int size,
                              float alpha, float beta, float bias);

/**
 * Layer normalization (ONNX LayerNormalization): over the dimensions from
 * `axis` (negative counts from the end) to the last, y = (x - mean) /
 * sqrt(variance + epsilon) * scale + bias. x f32; scale and bias (bias may
 * be DQG_NONE) f32 of shape x.shape[axis:] (or of its element count, 1-D);
 * epsilon finite and >= 0.
 */
DQG_API dqg_tensor_id dqg_layer_norm(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                     dqg_tensor_id scale, dqg_tensor_id bias, int axis,
                                     float epsilon);

/** The reductions of dqg_reduce. */
typedef enum dqg_reduce_op {
    DQG_REDUCE_SUM = 0,
    DQG_REDUCE_MEAN,
    DQG_REDUCE_MAX,
    DQG_REDUCE_MIN,
    DQG_REDUCE_PROD,
    DQG_REDUCE_COUNT
} dqg_reduce_op;

/**
 * Reduces x (f32, f16 or bf16) over the n_axes `axes` (distinct; negative
 * count from the end; n_axes 0 reduces every axis), keeping them as 1 with
 * keepdims or dropping them. Sums accumulate in double precision in the
 * reference.
 */
DQG_API dqg_tensor_id dqg_reduce(dqg_graph *graph, const char *name, dqg_reduce_op op,
                                 dqg_tensor_id x, int n_axes, const int64_t *axes, bool keepdims);

/**
 * ONNX Slice: along each of the n axes (NULL: 0 to n-1; negative count
 * from the end; distinct), elements start, start + step, ... before end
 * (steps NULL: all 1; a step is never 0, negative walks backwards). Starts
 * and ends are clamped to the dimension as ONNX does (INT64_MAX means "to
 * the end"); a slice that selects nothing is an error, as dqgraph has no
 * empty tensors. Any data type.
 */
DQG_API dqg_tensor_id dqg_slice(dqg_graph *graph, const char *name, dqg_tensor_id x, int n,
                                const int64_t *axes, const int64_t *starts, const int64_t *ends,
                                const int64_t *steps);

/**
 * ONNX Gather: y = data indexed along `axis` (negative counts from the
 * end) by every element of `indices` (s32 or s64, any shape; negative
 * values count from the end), so y's shape is data's with that axis
 * replaced by indices' shape. An index outside the axis is an error when
 * the graph runs. Any data type.
 */
DQG_API dqg_tensor_id dqg_gather(dqg_graph *graph, const char *name, dqg_tensor_id data,
                                 dqg_tensor_id indices, int axis);

/**
 * ONNX GatherElements: y has the shape of `indices` (s32 or s64, of data's
 * rank, every dimension but `axis` at most data's) and y[i...] is data at
 * i... with the coordinate on `axis` (negative counts from the end) replaced
 * by indices[i...] (negative values count from the end). An index outside
 * the axis is refused when the graph is built if `indices` is a constant,
 * else it is an error when the graph runs, naming the element. Any data
 * type but the 4-bit ones.
 */
DQG_API dqg_tensor_id dqg_gather_elements(dqg_graph *graph, const char *name, dqg_tensor_id data,
                                          dqg_tensor_id indices, int axis);

/** How dqg_pad fills the elements it adds. */
typedef enum dqg_pad_mode {
    DQG_PAD_CONSTANT = 0, /**< the value given */
    DQG_PAD_REFLECT,      /**< mirrored at the edge, the edge element not repeated */
    DQG_PAD_EDGE,         /**< the edge element repeated */
    DQG_PAD_WRAP,         /**< the elements of the other end, as if the axis repeated */
    DQG_PAD_MODE_COUNT
} dqg_pad_mode;

/**
 * ONNX Pad: x extended along each axis i by pads[i] elements before its
 * first and pads[rank + i] after its last (ONNX's order; pads NULL adds
 * nothing). A negative amount removes that many elements from that end,
 * before the other end is padded (as ONNX Runtime does). Every output
 * dimension must stay >= 1, and an axis that is padded must keep >= 1
 * element of x. REFLECT and WRAP repeat their pattern when the amount
 * exceeds the axis (as NumPy's pad). `value`, used by DQG_PAD_CONSTANT
 * only, must be representable in x's type: any value for the float types
 * (rounded to nearest even; NaN and infinities included), an integer in the
 * type's range for the integer types, 0 or 1 for bool. Any data type.
 */
DQG_API dqg_tensor_id dqg_pad(dqg_graph *graph, const char *name, dqg_tensor_id x,
                              const int64_t *pads, dqg_pad_mode mode, double value);
/** "constant", "reflect", "edge", "wrap" (ONNX's names): static strings; "unknown" out of range. */
DQG_API const char *dqg_pad_mode_name(dqg_pad_mode mode);

/** How dqg_resize computes an output element from the source (ONNX Resize's mode). */
typedef enum dqg_resize_mode {
    DQG_RESIZE_NEAREST = 0, /**< the nearest source element (any data type) */
    DQG_RESIZE_LINEAR,      /**< linear in every axis (f32, f16, bf16) */
    DQG_RESIZE_CUBIC,       /**< cubic convolution in every axis (f32, f16, bf16) */
    DQG_RESIZE_MODE_COUNT
} dqg_resize_mode;

/**
 * Where an output coordinate x lands in the source (ONNX's
 * coordinate_transformation_mode); `length` is x's size times the scale
 * when a scale is given, else the output's size.
 */
typedef enum dqg_resize_coord {
    DQG_RESIZE_HALF_PIXEL = 0,       /**< (x + 0.5) / scale - 0.5 */
    DQG_RESIZE_ASYMMETRIC,           /**< x / scale */
    DQG_RESIZE_ALIGN_CORNERS,        /**< x (in - 1) / (length - 1); 0 when length is 1 */
    DQG_RESIZE_PYTORCH_HALF_PIXEL,   /**< half_pixel, but 0 when length is at most 1 */
    DQG_RESIZE_TF_HALF_PIXEL_FOR_NN, /**< (x + 0.5) / scale */
    DQG_RESIZE_COORD_COUNT
} dqg_resize_coord;

/** How DQG_RESIZE_NEAREST rounds a source coordinate (ONNX's nearest_mode). */
typedef enum dqg_resize_nearest {
    DQG_RESIZE_ROUND_PREFER_FLOOR = 0, /**< to nearest, halves down */
    DQG_RESIZE_ROUND_PREFER_CEIL,      /**< to nearest, halves up */
    DQG_RESIZE_FLOOR,
    DQG_RESIZE_CEIL,
    DQG_RESIZE_NEAREST_COUNT
} dqg_resize_nearest;

/** Attributes of dqg_resize. Zero-initialize (ONNX's defaults), then set what the model sets. */
typedef struct dqg_resize_attrs {
    dqg_resize_mode mode;
    dqg_resize_coord coord;
    dqg_resize_nearest nearest;
    float cubic_a;        /**< the cubic's A (ONNX's default -0.75; 0 is taken as it) */
    bool exclude_outside; /**< cubic: source taps outside x weigh 0, the rest renormalized */
    /** The output's dimensions, one per axis of x, each >= 1. */
    int64_t sizes[DQG_MAX_RANK];
    /** Per axis, the scale of the coordinate transform, > 0; 0 takes sizes / x's dimension. */
    float scales[DQG_MAX_RANK];
} dqg_resize_attrs;

/**
 * ONNX Resize (opsets 11 to 19, without antialiasing, tf_crop_and_resize
 * and half_pixel_symmetric) of x to attrs->sizes: each output coordinate is
 * mapped into x by attrs->coord and the scale, then read by the mode: the
 * nearest element, or a weighted sum of 2 (linear) or 4 (cubic) elements
 * per axis, source coordinates outside x clamped to its edges (unless
 * exclude_outside); a tap of weight 0 is not read, so an axis whose
 * coordinates land on elements is copied. ONNX Upsample (nearest) is
 * asymmetric with DQG_RESIZE_FLOOR.
 */
DQG_API dqg_tensor_id dqg_resize(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                 const dqg_resize_attrs *attrs);

/**
 * ONNX ArgMax and ArgMin: the index (s64) of the largest or smallest
 * element of x along `axis` (negative counts from the end), the axis kept
 * as 1 with keepdims or dropped. Of equal elements the first wins, or the
 * last with select_last. NaN counts as larger and smaller than every
 * number (NumPy's argmax and argmin: the first NaN wins). x of any type
 * but the 4-bit ones and bool.
 */
DQG_API dqg_tensor_id dqg_argmax(dqg_graph *graph, const char *name, dqg_tensor_id x, int axis,
                                 bool keepdims, bool select_last);
DQG_API dqg_tensor_id dqg_argmin(dqg_graph *graph, const char *name, dqg_tensor_id x, int axis,
                                 bool keepdims, bool select_last);

/**
 * ONNX CumSum: the running sums of x along `axis` (negative counts from the
 * end); with `exclusive` each sum leaves out its own element, with `reverse`
 * the sums run from the end. f32, f16, bf16 (summed in double, each rounded
 * once) or an 8/16/32/64-bit integer (wrapping around, as Add).
 */
DQG_API dqg_tensor_id dqg_cumsum(dqg_graph *graph, const char *name, dqg_tensor_id x, int axis,
                                 bool exclusive, bool reverse);

/**
 * ONNX TopK: the k largest (or, without `largest`, smallest) elements of x
 * along `axis`, in order, as the result, and their s64 indices in
 * *indices (may be NULL). Equal elements keep their order; NaN counts as
 * larger than every number (as NumPy's sort). 1 <= k <= x's size on the
 * axis. x of any type but the 4-bit ones and bool. The results are sorted
 * whether or not the model asks.
 */
DQG_API dqg_tensor_id dqg_topk(dqg_graph *graph, const char *name, dqg_tensor_id x, int64_t k,
                               int axis, bool largest, dqg_tensor_id *indices);

/** The cell of a dqg_rnn op. */
typedef enum dqg_rnn_cell {
    DQG_RNN_CELL_RNN = 0, /**< ONNX RNN: H = f(X W^T + H R^T + Wb + Rb) */
    DQG_RNN_CELL_GRU,     /**< ONNX GRU: gates z, r, h */
    DQG_RNN_CELL_LSTM,    /**< ONNX LSTM: gates i, o, f, c, optional peepholes */
} dqg_rnn_cell;

typedef enum dqg_rnn_direction {
    DQG_RNN_FORWARD = 0,
    DQG_RNN_REVERSE,
    DQG_RNN_BIDIRECTIONAL, /**< forward then reverse, both in the results */
} dqg_rnn_direction;

/** The functions a dqg_rnn cell may use (ONNX's list for RNN, GRU, LSTM). */
typedef enum dqg_rnn_activation {
    DQG_RNN_ACT_DEFAULT = 0, /**< the cell's default at that position (see dqg_rnn) */
    DQG_RNN_ACT_SIGMOID,
    DQG_RNN_ACT_TANH,
    DQG_RNN_ACT_RELU,
    DQG_RNN_ACT_AFFINE,           /**< alpha x + beta */
    DQG_RNN_ACT_LEAKY_RELU,       /**< x below zero becomes alpha x */
    DQG_RNN_ACT_THRESHOLDED_RELU, /**< x above alpha, else 0 */
    DQG_RNN_ACT_SCALED_TANH,      /**< alpha tanh(beta x) */
    DQG_RNN_ACT_HARD_SIGMOID,     /**< max(0, min(1, alpha x + beta)) */
    DQG_RNN_ACT_ELU,              /**< x below zero becomes alpha (e^x - 1) */
    DQG_RNN_ACT_SOFTSIGN,         /**< x / (1 + |x|) */
    DQG_RNN_ACT_SOFTPLUS,         /**< log(1 + e^x) */
    DQG_RNN_ACT_COUNT
} dqg_rnn_activation;

typedef struct dqg_rnn_attrs {
    dqg_rnn_cell cell;
    dqg_rnn_direction direction;
    int64_t hidden_size;      /**< H, >= 1 */
    bool batch_first;         /**< ONNX layout 1: batch before sequence in x, y and the states */
    bool linear_before_reset; /**< GRU: r multiplies (H R_h^T + Rb_h), not H */
    /** > 0: each gate's input is clipped to [-clip, clip] before its
     * function; 0: no clipping. */
    float clip;
    /** Per direction (forward, or the only one, first) the cell's functions
     * in ONNX's order: RNN f; GRU f, g; LSTM f, g, h. DQG_RNN_ACT_DEFAULT
     * means Tanh for RNN's f, Sigmoid for the f of GRU and LSTM, Tanh for g
     * and h. alpha and beta (finite) are read where the function uses them. */
    dqg_rnn_activation activation[2][3];
    float alpha[2][3];
    float beta[2][3];
} dqg_rnn_attrs;

/**
 * ONNX RNN, GRU and LSTM (opsets 7, 14 and 22; layout as batch_first). With
 * T steps, batch N, input size I, H = hidden_size, D directions (2 when
 * bidirectional) and G gates (RNN 1, GRU 3, LSTM 4), in ONNX's gate order:
 * - x [T, N, I] ([N, T, I] batch first), f32, f16 or bf16; every other
 *   float input of x's type;
 * - w [D, G*H, I], r [D, G*H, H]: the input and recurrent weights;
 * - b [D, 2*G*H] (Wb then Rb), or DQG_NONE for zeros;
 * - sequence_lens [N] s32, each in [0, T], or DQG_NONE for T everywhere: a
 *   batch entry stops after its length (its later results are 0, its final
 *   state is the one after its last step; with 0 steps the initial one);
 * - initial_h [D, N, H] ([N, D, H] batch first), DQG_NONE for zeros;
 * - initial_c (LSTM only, shaped as initial_h), DQG_NONE for zeros;
 * - p [D, 3*H] (LSTM only: peepholes for i, o, f), DQG_NONE for none.
 * The result is Y [T, D, N, H] ([N, T, D, H] batch first); *y_h (may be
 * NULL) gets the final hidden state, shaped as initial_h, and *y_c (LSTM;
 * may be NULL) the final cell state. The reference computes in double and
 * rounds each result once; compiled, the common forms (the default
 * functions, or one of Tanh, Relu, Sigmoid for RNN, the same in both
 * directions; no clip; constant weights; no sequence_lens, or a constant
 * one of T everywhere) run on oneDNN's RNN primitives in f32, the rest on
 * the reference, and the partition info says which.
 */
DQG_API dqg_tensor_id dqg_rnn(dqg_graph *graph, const char *name, const dqg_rnn_attrs *attrs,
                              dqg_tensor_id x, dqg_tensor_id w, dqg_tensor_id r, dqg_tensor_id b,
                              dqg_tensor_id sequence_lens, dqg_tensor_id initial_h,
                              dqg_tensor_id initial_c, dqg_tensor_id p, dqg_tensor_id *y_h,
                              dqg_tensor_id *y_c);
/** "RNN", "GRU", "LSTM": static strings; "Unknown" out of range. */
DQG_API const char *dqg_rnn_cell_name(dqg_rnn_cell cell);
/** "Sigmoid", "Tanh", ...: ONNX's names, static strings; "Unknown" out of range. */
DQG_API const char *dqg_rnn_activation_name(dqg_rnn_activation f);

/**
 * ONNX GatherND: indices (s32 or s64, rank >= 1, its last dimension m with
 * batch_dims + m <= data's rank) picks slices of data: y has the shape
 * indices.shape[:-1] + data.shape[batch_dims + m:], and the slice at
 * position j is data[j's first batch_dims coordinates..., indices[j]...].
 * Negative indices count from the end; one outside its axis is refused
 * when the graph is built if indices is a constant, else it is an error
 * when the graph runs, naming the element. data of whole-byte types.
 */
DQG_API dqg_tensor_id dqg_gather_nd(dqg_graph *graph, const char *name, dqg_tensor_id data,
                                    dqg_tensor_id indices, int batch_dims);

/** How dqg_scatter_nd combines an update with the element it lands on. */
typedef enum dqg_scatter_reduction {
    DQG_SCATTER_NONE = 0, /**< the update replaces it */
    DQG_SCATTER_ADD,
    DQG_SCATTER_MUL,
    DQG_SCATTER_MAX,
    DQG_SCATTER_MIN,
    DQG_SCATTER_REDUCTION_COUNT
} dqg_scatter_reduction;

/**
 * ONNX ScatterND: y is data with the slices of updates (shape
 * indices.shape[:-1] + data.shape[m:], m indices' last dimension <= data's
 * rank) written at data[indices[j]...], in the order of j, combined by
 * `reduction` (integers wrap around). Indices as for dqg_gather_nd. data
 * and updates of one whole-byte type (ADD/MUL/MAX/MIN: floats and
 * integers).
 */
DQG_API dqg_tensor_id dqg_scatter_nd(dqg_graph *graph, const char *name, dqg_tensor_id data,
                                     dqg_tensor_id indices, dqg_tensor_id updates,
                                     dqg_scatter_reduction reduction);

/**
 * ONNX ScatterElements: y is data with updates[i...] written at data[i...]
 * with the coordinate on `axis` replaced by indices[i...], in order,
 * combined by `reduction`. indices (s32 or s64) and updates have one shape,
 * of data's rank and at most data's dimensions off the axis; indices are
 * checked as for dqg_gather_elements. Types as for dqg_scatter_nd.
 */
DQG_API dqg_tensor_id dqg_scatter_elements(dqg_graph *graph, const char *name, dqg_tensor_id data,
                                           dqg_tensor_id indices, dqg_tensor_id updates, int axis,
                                           dqg_scatter_reduction reduction);

/**
 * ONNX Mod with NumPy broadcasting: the remainder of a / b. With fmod (the
 * only choice for f32, f16 and bf16) its sign is a's, as C's fmod; without,
 * b's, as Python's % (integers only). An integer b of 0 is an error when
 * the graph runs. a and b of one type (the types of dqg_add).
 */
DQG_API dqg_tensor_id dqg_mod(dqg_graph *graph, const char *name, dqg_tensor_id a, dqg_tensor_id b,
                              bool fmod);

/** The comparisons of dqg_compare. */
typedef enum dqg_compare_op {
    DQG_COMPARE_EQUAL = 0,     /**< a == b (ONNX Equal) */
    DQG_COMPARE_LESS,          /**< a < b (ONNX Less) */
    DQG_COMPARE_LESS_EQUAL,    /**< a <= b (ONNX LessOrEqual) */
    DQG_COMPARE_GREATER,       /**< a > b (ONNX Greater) */
    DQG_COMPARE_GREATER_EQUAL, /**< a >= b (ONNX GreaterOrEqual) */
    DQG_COMPARE_COUNT
} dqg_compare_op;

/**
 * a OP b element-wise with NumPy broadcasting, as ONNX's comparisons: a and
 * b of one type, f32, f16, bf16, s8, u8, s16, u16, s32, u32 or s64 (and
 * bool for DQG_COMPARE_EQUAL); the output is bool of the broadcast shape.
 * Values compare exactly (integers as integers); a NaN is unequal to
 * everything and neither less nor greater.
 */
DQG_API dqg_tensor_id dqg_compare(dqg_graph *graph, const char *name, dqg_compare_op op,
                                  dqg_tensor_id a, dqg_tensor_id b);
/** "Equal", "Less", "LessOrEqual", ...: static strings; "Unknown" out of range. */
DQG_API const char *dqg_compare_op_name(dqg_compare_op op);

/** The functions of dqg_logical. */
typedef enum dqg_logical_op {
    DQG_LOGICAL_AND = 0,
    DQG_LOGICAL_OR,
    DQG_LOGICAL_XOR,
    DQG_LOGICAL_NOT, /**< takes a only: b must be DQG_NONE */
    DQG_LOGICAL_COUNT
} dqg_logical_op;

/**
 * ONNX And, Or, Xor (a and b bool, NumPy broadcasting) and Not (a bool, b
 * DQG_NONE): the output is bool of the broadcast shape (a's for Not).
 */
DQG_API dqg_tensor_id dqg_logical(dqg_graph *graph, const char *name, dqg_logical_op op,
                                  dqg_tensor_id a, dqg_tensor_id b);
/** "And", "Or", "Xor", "Not": static strings; "Unknown" out of range. */
DQG_API const char *dqg_logical_op_name(dqg_logical_op op);

/**
 * ONNX Where: condition ? x : y element-wise, the three inputs broadcast
 * together (NumPy rules) to the output's shape. condition is bool; x and y
 * have one type, any but the 4-bit ones, which the output has.
 */
DQG_API dqg_tensor_id dqg_where(dqg_graph *graph, const char *name, dqg_tensor_id condition,
                                dqg_tensor_id x, dqg_tensor_id y);

/**
 * ONNX Reshape (allowzero = 0): a 0 copies the input's dimension, one -1 is
 * inferred. Any data type.
 */
DQG_API dqg_tensor_id dqg_reshape(dqg_graph *graph, const char *name, dqg_tensor_id x, int rank,
                                  const int64_t *shape);
/** perm is a permutation of 0..rank-1; NULL reverses the dimensions. Any data type. */
DQG_API dqg_tensor_id dqg_transpose(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                    const int64_t *perm);
/**
 * Conversion to a float type (f32, f16, bf16) from any float, integer or
 * bool type, rounding to nearest even; or to s8, u8, s16, u16, s32 or u32,
 * rounding to nearest even and saturating to the type's range (NaN gives 0);
 * or to bool, x != 0 (NaN is true, as ONNX's Cast). A bool converts as 0 or 1.
 */
DQG_API dqg_tensor_id dqg_typecast(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                   dqg_dtype to);

typedef enum dqg_pool_algorithm {
    DQG_POOL_MAX = 0,             /**< largest element of the window; padding is ignored */
    DQG_POOL_AVG_INCLUDE_PAD = 1, /**< mean; padded positions count as zeros */
    DQG_POOL_AVG_EXCLUDE_PAD = 2, /**< mean over the input elements of the window only */
} dqg_pool_algorithm;

/** Attributes of dqg_pool. Zero-initialize, then set what the model sets. */
typedef struct dqg_pool_attrs {
    dqg_pool_algorithm algorithm;
    /**
     * Whole-input pooling (ONNX GlobalAveragePool/GlobalMaxPool): the window is
     * the input's spatial extent, the output's spatial dimensions are 1, and
     * every field below must stay 0.
     */
    bool global;
    int spatial_rank;      /**< 1, 2 or 3: x has rank spatial_rank + 2 */
    int64_t kernel[3];     /**< >= 1 */
    int64_t strides[3];    /**< >= 1; 0 means 1 */
    int64_t pads_begin[3]; /**< >= 0 and < kernel */
    int64_t pads_end[3];   /**< >= 0 and < kernel */
    int64_t dilations[3];  /**< >= 1; 0 means 1; above 1 only for DQG_POOL_MAX */
    bool ceil_mode;        /**< round the output size up (ONNX ceil_mode) */
} dqg_pool_attrs;

/**
 * ONNX MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool on x
 * [N, C, X...] (rank 3 to 5, NCX) of type f32, f16, bf16, u8 or s8; the
 * output has x's type and is [N, C, Y...] with, per spatial dimension,
 * span = (kernel - 1) * dilation + 1 and
 * Y = floor((X + pads_begin + pads_end - span) / stride) + 1, or with
 * ceil_mode the ceiling, less one when the last window would start past
 * X + pads_begin (each window starts inside the input or its left padding).
 * Windows that ceil_mode lets reach past pads_end are cut there: those
 * positions are never counted, not even by DQG_POOL_AVG_INCLUDE_PAD.
 *
 * Arithmetic: float averages are summed in double and rounded once to the
 * output type; u8/s8 averages are the exact mean rounded to nearest, ties
 * to even. A maximum is exact; a float NaN in the window gives NaN (the
 * compiled kernel pools a source holding NaN again on the reference's
 * code, as oneDNN's skips it). A window that holds no input element
 * (possible only with dilations) gives the type's lowest finite value. Errors (sticky): an
 * attribute outside the ranges above, a rank or type not listed, or an
 * output dimension below 1, each naming the rule and the spatial dimension.
 */
DQG_API dqg_tensor_id dqg_pool(dqg_graph *graph, const char *name, dqg_tensor_id x,
                               const dqg_pool_attrs *attrs);

/* ---- Dequantize and quantize: one front door per dialect ---------------- */

/** Attributes of ONNX DequantizeLinear. Zero-initialize, then set what the model sets. */
typedef struct dqg_dequantize_linear_attrs {
    int opset;              /**< 10, 13, 19, 21 or 23 (others map to the latest <= it) */
    bool has_axis;          /**< false: the default axis 1 */
    int64_t axis;           /**< opset 13+; negative counts from the back */
    int64_t block_size;     /**< opset 21+; 0 = not blocked */
    dqg_dtype output_dtype; /**< opset 23; DQG_DTYPE_UNDEF = the scale's type */
} dqg_dequantize_linear_attrs;

/** ONNX DequantizeLinear; zero_point may be DQG_NONE. */
DQG_API dqg_tensor_id dqg_dequantize_linear(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                            dqg_tensor_id scale, dqg_tensor_id zero_point,
                                            const dqg_dequantize_linear_attrs *attrs);

/**
 * oneDNN Graph DynamicDequantize: src s8/u8, scales f32 1-D, optional zps
 * s8/u8/s32 1-D (DQG_NONE: symmetric). qtype is "per_tensor" (also for NULL)
 * or "per_channel"; axis in [-r, r-1]. Scales and zero points are normally
 * produced at run time (graph inputs or outputs of other ops).
 */
DQG_API dqg_tensor_id dqg_dynamic_dequantize(dqg_graph *graph, const char *name, dqg_tensor_id src,
                                             dqg_tensor_id scales, dqg_tensor_id zps,
                                             const char *qtype, int64_t axis);

/**
 * oneDNN Graph DynamicQuantize: src f32, scales f32 1-D, optional zps
 * s8/u8/s32 1-D (DQG_NONE: symmetric), qtype and axis as for
 * DynamicDequantize; dst = saturate(round_half_even(src / scale) + zp) of
 * type dst_dtype (u8 or s8). Scales and zero points are normally given at
 * run time; a DynamicQuantize -> DynamicDequantize pair in front of a MatMul
 * or Convolution runs the layer in int8.
 */
DQG_API dqg_tensor_id dqg_dynamic_quantize(dqg_graph *graph, const char *name, dqg_tensor_id src,
                                           dqg_tensor_id scales, dqg_tensor_id zps,
                                           const char *qtype, int64_t axis, dqg_dtype dst_dtype);

/**
 * AMD Quark ExtendedDequantizeLinear (domain com.amd.quark): x s8, u8, s16,
 * u16, s32, u32, f16 or bf16; scale f32 (scalar or 1-D); zero point of x's
 * type or f32; output f32. `axis` is used when the scale is 1-D.
 */
DQG_API dqg_tensor_id dqg_extended_dequantize_linear(dqg_graph *graph, const char *name,
                                                     dqg_tensor_id x, dqg_tensor_id scale,
                                                     dqg_tensor_id zero_point, int64_t axis);

/**
 * DirectML DML_ELEMENT_WISE_DEQUANTIZE_LINEAR: scale and the optional zero
 * point have x's rank (1 to 8) and sizes; x s8/u8/s16/u16/s32/u32, zero point
 * of x's type; scale f32 or f16; the output has the scale's type. A zero
 * scale (undefined in DirectML) gives (x - zp) * 0.
 */
DQG_API dqg_tensor_id dqg_dml_dequantize(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                         dqg_tensor_id scale, dqg_tensor_id zero_point);

/** Attributes of ONNX QuantizeLinear. */
typedef struct dqg_quantize_linear_attrs {
    int opset; /**< 10, 13, 19 or 21 */
    bool has_axis;
    int64_t axis;
    int64_t block_size;     /**< opset 21+ */
    dqg_dtype output_dtype; /**< opset 21: used when there is no zero point; default u8 */
    bool no_saturate;       /**< opset 19+, float8 outputs only: saturate = 0 */
} dqg_quantize_linear_attrs;

/**
 * ONNX QuantizeLinear: y = saturate(round_half_even(x / scale) + zp). The
 * output type is the zero point's type (u8 when absent, unless output_dtype).
 */
DQG_API dqg_tensor_id dqg_quantize_linear(dqg_graph *graph, const char *name, dqg_tensor_id x,
                                          dqg_tensor_id scale, dqg_tensor_id zero_point,
                                          const dqg_quantize_linear_attrs *attrs);

/**
 * ONNX DynamicQuantizeLinear: x f32 -> y u8, y_scale f32 scalar, y_zero_point
 * u8 scalar. Returns y; the scale and zero point ids are written to the
 * pointers (which may be NULL).
 */
DQG_API dqg_tensor_id dqg_dynamic_quantize_linear(dqg_graph *graph, const char *name,
                                                  dqg_tensor_id x, dqg_tensor_id *y_scale,
                                                  dqg_tensor_id *y_zero_point);

/* ---- Finalize and introspection ----------------------------------------- */

/**
 * Verifies the whole graph (every output produced, every shape and type
 * inferred, graph-level rules such as constant zero points of int32 inputs)
 * and freezes it: later builder calls fail. Returns the sticky error if a
 * builder call failed, DQG_INVALID_ARGUMENT (with the rule) if verification
 * fails, DQG_OK if the graph is already finalized. An input that nothing
 * reads is a warning, not an error.
 */
DQG_API dqg_status dqg_graph_finalize(dqg_graph *graph);
/** True once dqg_graph_finalize succeeded; false for NULL. */
DQG_API bool dqg_graph_is_finalized(const dqg_graph *graph);

/**
 * Warnings of the last dqg_graph_finalize (e.g. an input nothing reads):
 * their count, and warning `index` (NULL if out of range). The strings live
 * until the graph is destroyed.
 */
DQG_API size_t dqg_graph_warning_count(const dqg_graph *graph);
DQG_API const char *dqg_graph_warning(const dqg_graph *graph, size_t index);

/*
 * Introspection of ops (0 .. dqg_graph_op_count - 1, in the order they were
 * added, which is a topological order) and tensors (ids 0 ..
 * dqg_graph_tensor_count - 1). Valid on any graph, finalized or not; they
 * only read it. Strings live until the graph is destroyed. Out-of-range
 * indexes and unknown ids give 0, -1, DQG_NONE, DQG_DTYPE_UNDEF, false or
 * NULL.
 */
DQG_API size_t dqg_graph_op_count(const dqg_graph *graph);
/** The op's kind; DQG_OP_KIND_COUNT for an index out of range. */
DQG_API dqg_op_kind dqg_graph_op_kind(const dqg_graph *graph, size_t op);
/** The op's name, as given or generated; NULL for an index out of range. */
DQG_API const char *dqg_graph_op_name(const dqg_graph *graph, size_t op);
/** Inputs of the op, absent optional ones included. */
DQG_API size_t dqg_graph_op_input_count(const dqg_graph *graph, size_t op);
/** DQG_NONE for an absent optional input. */
DQG_API dqg_tensor_id dqg_graph_op_input(const dqg_graph *graph, size_t op, size_t index);
DQG_API size_t dqg_graph_op_output_count(const dqg_graph *graph, size_t op);
DQG_API dqg_tensor_id dqg_graph_op_output(const dqg_graph *graph, size_t op, size_t index);

/** Every tensor: inputs, constants and op outputs. */
DQG_API size_t dqg_graph_tensor_count(const dqg_graph *graph);
/** Graph inputs and outputs, in the order they were declared. */
DQG_API size_t dqg_graph_input_count(const dqg_graph *graph);
DQG_API dqg_tensor_id dqg_graph_input_id(const dqg_graph *graph, size_t index);
DQG_API size_t dqg_graph_output_count(const dqg_graph *graph);
DQG_API dqg_tensor_id dqg_graph_output_id(const dqg_graph *graph, size_t index);
/** DQG_NONE if no tensor has that name (or name is NULL). */
DQG_API dqg_tensor_id dqg_graph_find_tensor(const dqg_graph *graph, const char *name);

/**
 * The tensor's name; NULL for an unknown id. Lives until the graph is
 * destroyed or dqg_output renames the tensor.
 */
DQG_API const char *dqg_tensor_name(const dqg_graph *graph, dqg_tensor_id tensor);
/** DQG_DTYPE_UNDEF for an unknown id. */
DQG_API dqg_dtype dqg_tensor_dtype(const dqg_graph *graph, dqg_tensor_id tensor);
/** -1 for an unknown id. */
DQG_API int dqg_tensor_rank(const dqg_graph *graph, dqg_tensor_id tensor);
/** Copies the dimensions into dims[DQG_MAX_RANK]; returns the rank, or -1 (unknown id, NULL dims).
 */
DQG_API int dqg_tensor_dims(const dqg_graph *graph, dqg_tensor_id tensor, int64_t *dims);
/** Product of the dimensions (1 for rank 0); -1 for an unknown id. */
DQG_API int64_t dqg_tensor_element_count(const dqg_graph *graph, dqg_tensor_id tensor);
/** Byte size of the tensor's storage (4-bit types packed); 0 for an unknown id. */
DQG_API size_t dqg_tensor_byte_size(const dqg_graph *graph, dqg_tensor_id tensor);
/** True for tensors made by dqg_constant; false for inputs, op outputs and unknown ids. */
DQG_API bool dqg_tensor_is_constant(const dqg_graph *graph, dqg_tensor_id tensor);

typedef enum dqg_dump_format {
    DQG_DUMP_TEXT = 0, /**< one line per input, constant, op and output */
    DQG_DUMP_DOT = 1,  /**< Graphviz: ops as boxes, tensors as labelled edges */
} dqg_dump_format;

/**
 * Writes the graph in the given format to `out` (the caller's stream, not
 * closed). Errors: DQG_INVALID_ARGUMENT (NULL graph or stream, unknown
 * format), DQG_IO_ERROR (the write failed).
 */
DQG_API dqg_status dqg_graph_dump(const dqg_graph *graph, dqg_dump_format format, FILE *out);

/* ------------------------------------------------------------------------ */
/* Running                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * A caller-owned buffer bound to a graph input or output, for one call of
 * dqg_execute or dqg_reference_run (nothing is kept after the call).
 *
 * Binding: by `name` when it is not NULL (as ONNX Runtime binds), else by
 * `id`, the id the builder returned (as oneDNN Graph binds). One list of
 * buffers (the inputs, or the outputs) binds all by name or all by id: a
 * nameless buffer among named ones is refused, since a zero-initialized
 * dqg_buffer has id 0, which is usually the first input, and a forgotten name
 * must not bind it. A buffer whose name, data and size are all unset is
 * refused as empty. An id must be one of the graph's inputs (outputs for the
 * output list); every input and every output is bound exactly once.
 *
 * `data` holds the tensor in dqgraph's layout (see "Data layout" above) and
 * `size` is its size in bytes: it must equal dqg_tensor_byte_size. No
 * alignment is required.
 */
typedef struct dqg_buffer {
    dqg_tensor_id id;
    const char *name;
    void *data;
    size_t size;
} dqg_buffer;

/**
 * Runs a finalized graph on the reference interpreter: plain C loops,
 * float32 arithmetic rounded as the specifications say, accumulation of
 * MatMul and Convolution in double. Every input and every output must be
 * bound exactly once (see dqg_buffer). Outputs are written only on success.
 * The graph must be finalized; it is only read, so several threads may run
 * it at once. Errors: DQG_INVALID_ARGUMENT (not finalized, a binding rule,
 * a run-time value that breaks a rule, e.g. a run-time int32 zero point that
 * is not 0), DQG_OUT_OF_MEMORY.
 */
DQG_API dqg_status dqg_reference_run(const dqg_graph *graph, const dqg_buffer *inputs,
                                     size_t n_inputs, dqg_buffer *outputs, size_t n_outputs);

/* ------------------------------------------------------------------------ */
/* Compiling and executing                                                   */
/* ------------------------------------------------------------------------ */

typedef struct dqg_compiled dqg_compiled;

typedef enum dqg_backend {
    DQG_BACKEND_ONEDNN = 0,    /**< oneDNN primitives and dqgraph's own kernels */
    DQG_BACKEND_REFERENCE = 1, /**< every partition runs the reference interpreter's code */
} dqg_backend;

typedef enum dqg_fpmath_mode {
    DQG_FPMATH_STRICT = 0, /**< float math in f32 (default) */
    /** f32 MatMul/Convolution may compute in bf16 (opt-in). A permission:
     * used where bf16 is faster than f32 (AMX; AVX512-BF16 dot products
     * issued as fast as FMAs, as on AMD Zen 4; DQG_BF16_DOT=fast asserts
     * that on any CPU with AVX512-BF16); elsewhere the graph compiles as
     * DQG_FPMATH_STRICT and the explain log says so. */
    DQG_FPMATH_BF16 = 1,
    /** Weight-only MatMuls with 4- or 8-bit integer weights may quantize
     * their f32 activations to int8 per row and K-block and use
     * integer dot products (approximate, as ONNX Runtime's MatMulNBits does
     * by default; opt-in): each activation is off by at most half its
     * block's max|x| / 127. Needs AVX512-VNNI; elsewhere, and for other
     * ops, as DQG_FPMATH_STRICT. */
    DQG_FPMATH_INT8 = 2,
} dqg_fpmath_mode;

/** The most threads a compiled graph may be given (dqg_compile_options.threads). */
#define DQG_MAX_THREADS 1024

typedef struct dqg_compile_options {
    bool disable_fusion; /**< keep every dequantize as its own partition */
    dqg_backend backend;
    int threads; /**< 0 = all cores; at most DQG_MAX_THREADS */
    dqg_fpmath_mode fpmath;
} dqg_compile_options;

/** Default options: fusion on, oneDNN backend, all cores, strict fpmath. Pure. */
DQG_API dqg_compile_options dqg_compile_options_default(void);

/**
 * Runs the pass pipeline on a copy of the finalized graph (the graph itself
 * is not changed and may be destroyed afterwards), compiles every partition
 * (through the process-wide cache) and builds the execution plan in *out,
 * owned by the caller (free it with dqg_compiled_destroy). `options` may be
 * NULL for the defaults. Thread-safe: one graph may be compiled from several
 * threads at once, and threads that miss the cache on the same partition
 * build it once. Errors: DQG_INVALID_ARGUMENT (NULL graph or out, graph not
 * finalized, an option out of range), DQG_UNSUPPORTED, DQG_BACKEND_ERROR
 * (oneDNN refused a primitive), DQG_OUT_OF_MEMORY; *out is NULL on error.
 */
DQG_API dqg_status dqg_compile(const dqg_graph *graph, const dqg_compile_options *options,
                               dqg_compiled **out);
/**
 * Frees the compiled graph: its strings become invalid; cache entries it used
 * stay in the cache. Must not race with any other call on it. NULL is allowed.
 */
DQG_API void dqg_compiled_destroy(dqg_compiled *compiled);

/**
 * Executes the plan. Buffers bind graph inputs and outputs exactly as for
 * dqg_reference_run; sizes are checked and an input may not overlap an
 * output. One dqg_compiled may be executed from several threads at once:
 * each call takes its own scratch space from a pool kept by the compiled
 * object (allocated on a thread's first concurrent use, reused afterwards),
 * so callers only need distinct output buffers. Inputs are only read.
 * Errors: DQG_INVALID_ARGUMENT (NULL compiled, a binding rule, overlapping
 * buffers, a run-time value that breaks a rule), DQG_OUT_OF_MEMORY,
 * DQG_BACKEND_ERROR. On a failure after the bindings were checked, output
 * buffers may hold partial results: their contents are unspecified.
 */
DQG_API dqg_status dqg_execute(dqg_compiled *compiled, const dqg_buffer *inputs, size_t n_inputs,
                               dqg_buffer *outputs, size_t n_outputs);

/*
 * Introspection of a compiled graph: pure reads, safe from any thread.
 * Strings live until dqg_compiled_destroy. NULL or an index out of range
 * gives 0 or NULL.
 */

/** Partitions in execution order; each runs as one kernel. */
DQG_API size_t dqg_compiled_partition_count(const dqg_compiled *compiled);
/** One-line description of partition i: ops, kernel, data types. */
DQG_API const char *dqg_compiled_partition_info(const dqg_compiled *compiled, size_t index);
/** Number of partitions that fused a dequantize into a MatMul or Convolution. */
DQG_API size_t dqg_compiled_fused_count(const dqg_compiled *compiled);
/** Bytes of intermediate buffers one execution needs (after buffer reuse). */
DQG_API size_t dqg_compiled_peak_memory(const dqg_compiled *compiled);
/** Cache hits among this compile's partitions (all of them on a whole-plan hit). */
DQG_API size_t dqg_compiled_cache_hits(const dqg_compiled *compiled);

/**
 * Writes the graph as the passes left it: DQG_DUMP_DOT draws each partition
 * as a cluster labelled with its kernel (so one picture shows the fusion);
 * DQG_DUMP_TEXT lists the partitions, then the explain log. Errors:
 * DQG_INVALID_ARGUMENT (NULL compiled or stream, unknown format),
 * DQG_IO_ERROR.
 */
DQG_API dqg_status dqg_compiled_dump(const dqg_compiled *compiled, dqg_dump_format format,
                                     FILE *out);

/**
 * The explain log: every fusion made and refused, with reasons, one line per
 * entry (index 0 .. count - 1; NULL out of range).
 */
DQG_API size_t dqg_compiled_explain_count(const dqg_compiled *compiled);
DQG_API const char *dqg_compiled_explain(const dqg_compiled *compiled, size_t index);

/* ------------------------------------------------------------------------ */
/* Compiled-partition cache                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Compiled partitions are kept in one process-wide cache keyed by XXH3-128
 * of a canonical description of the partition (op kinds, attributes, data
 * types, shapes, constant scale and zero-point values, a hash of every
 * constant weight tensor, backend, ISA, fpmath mode, dqgraph version); a hit
 * is confirmed by comparing the full description, so a hash collision never
 * returns the wrong kernel. LRU eviction; entries in use are never freed.
 * The capacity is read from DQG_CACHE_CAPACITY at first use (default 1024;
 * 0 disables the cache). Thread-safe.
 */
typedef struct dqg_cache_stats {
    uint64_t hits;        /**< partition lookups that found (or waited for) an entry */
    uint64_t misses;      /**< partition lookups that built a kernel */
    uint64_t evictions;   /**< partition entries dropped to respect the capacity */
    size_t entries;       /**< partition entries held now */
    size_t capacity;      /**< current capacity (of each of the two caches) */
    size_t bytes;         /**< memory held by the entries' kernels and constants */
    double compile_ms;    /**< time spent building kernels on misses (constant transforms
                               included) */
    uint64_t plan_hits;   /**< compiles of a graph identical to one compiled before */
    uint64_t plan_misses; /**< compiles that ran the passes */
    size_t plans;         /**< compiled graphs' plans held now */
    double passes_ms;     /**< time spent in the pass pipeline */
    double hash_ms;       /**< time spent serializing and hashing cache keys */
    /** Constant data transforms run (folds, packs, zero-point folds, relayouts of
     * weights): a compile served entirely from the caches runs none. */
    uint64_t constant_transforms;
} dqg_cache_stats;

/**
 * Copies a consistent snapshot of the counters into *stats (NULL is
 * ignored). Counters count since the process started or the last
 * dqg_cache_clear.
 */
DQG_API void dqg_cache_get_stats(dqg_cache_stats *stats);
/**
 * Sets the capacity, in entries, of the partition cache and of the cache of
 * compiled graphs' plans; shrinking evicts least-recently-used entries, 0
 * disables both and clears them. Compiled graphs already made keep working.
 */
DQG_API void dqg_cache_set_capacity(size_t capacity);
/** The current capacity (DQG_CACHE_CAPACITY or 1024 until dqg_cache_set_capacity). */
DQG_API size_t dqg_cache_capacity(void);
/** Drops every entry not in use (entries in use are freed when released) and zeroes the counters.
 */
DQG_API void dqg_cache_clear(void);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* DQGRAPH_H */
