/* The graph IR shared by graph/, passes/ and runtime/: tensors, ops, the
 * canonical dequantize/quantize attributes, and the per-op-kind table. */
#ifndef DQG_GRAPH_INTERNAL_H
#define DQG_GRAPH_INTERNAL_H

#include <stdarg.h>

#include "dqgraph.h"

/* Every op has room for at least this many inputs and outputs, so a pass
 * may rewrite an op in place into another kind of up to this arity.
 * Variadic ops (Concat, Sum, Split) have more. */
#define DQG_MAX_OP_INPUTS  4
#define DQG_MAX_OP_OUTPUTS 3
/* Most inputs or outputs of one op. */
#define DQG_MAX_OP_ARITY 4096

/* Largest element count of one tensor: keeps every byte size and index
 * computation far from int64/size_t overflow. */
#define DQG_MAX_ELEMENTS ((int64_t)1 << 40)

typedef enum dqg_tensor_kind {
    DQG_TENSOR_INPUT = 0,
    DQG_TENSOR_CONSTANT,
    DQG_TENSOR_INTERMEDIATE,
} dqg_tensor_kind;

typedef struct dqg_tensor {
    char *name;
    dqg_dtype dtype;
    int rank;
    int64_t dims[DQG_MAX_RANK];
    int64_t nelems;
    dqg_tensor_kind kind;
    int32_t producer;      /* op index, or -1 for inputs and constants */
    void *data;            /* constants only: dqg_dtype_storage_size bytes */
    bool borrowed;         /* data belongs to another graph (compile-time copies) */
    size_t nbytes;         /* storage size */
    uint64_t data_hash[2]; /* constants: XXH3-128 of the bytes (low, high) */
    int32_t use_count;     /* number of op inputs that read it */
    bool is_output;
    /* Compile-time copies only: the value depends on constants alone and is
     * computed when the graph is compiled (a constant-folding partition). */
    bool folded;
    /* Compile-time copies only: an activation whose logical dimensions are
     * [N, C, X...] is stored channels-last, as [N, X..., C] (rank 3 to 5). */
    bool channels_last;
} dqg_tensor;

/* Which system's front door created a DEQUANTIZE op (kept for messages and
 * explain output only; the arithmetic is the same). */
typedef enum dqg_dq_dialect {
    DQG_DIALECT_ONNX = 0,
    DQG_DIALECT_ONEDNN_DYNAMIC,
    DQG_DIALECT_QUARK,
    DQG_DIALECT_DIRECTML,
} dqg_dq_dialect;

typedef enum dqg_granularity {
    DQG_PER_TENSOR = 0, /* one scale */
    DQG_PER_AXIS,       /* 1-D scale along `axis` */
    DQG_BLOCKED,        /* scale of x's rank, blocks of block_size along `axis` */
    DQG_ELEMENTWISE,    /* scale of x's shape */
} dqg_granularity;

/* The canonical dequantize: y = (x - zp) * scale, computed in float32 and
 * rounded once to out_dtype. Inputs: 0 x, 1 scale, 2 zero point (or -1).
 * Also used by QUANTIZE: y = saturate(rne(x / scale) + zp). */
typedef struct dqg_quant_attrs {
    dqg_dq_dialect dialect;
    int opset;
    dqg_granularity granularity;
    int axis; /* normalized to [0, rank) for per-axis and blocked */
    int64_t block_size;
    dqg_dtype out_dtype;
    bool saturate; /* QUANTIZE to float8 */
} dqg_quant_attrs;

/* Normalized pooling attributes (no padding bytes: the cache key reads
 * them): strides and dilations >= 1, and a global pooling's kernel is the
 * input's spatial extent. */
typedef struct dqg_pool_params {
    int32_t algorithm; /* dqg_pool_algorithm */
    int32_t spatial_rank;
    int32_t ceil_mode;
    int32_t global;
    int64_t kernel[3], strides[3], pads_begin[3], pads_end[3], dilations[3];
    /* Integer pooling only, set by the quantized-pooling pass where the
     * quantize after it has other parameters than the dequantize before:
     * the result is saturate(rne(rq_alpha * v + rq_beta)) of the window's
     * max or mean v, computed in f32 (0 in builder-made ops). */
    int32_t requant;
    float rq_alpha, rq_beta;
    int32_t rq_pad; /* 0: keeps the struct's bytes canonical for the cache key */
} dqg_pool_params;

typedef struct dqg_op {
    dqg_op_kind kind;
    bool removed; /* dropped by a pass (graph copies only) */
    char *name;
    int n_inputs;
    dqg_tensor_id *inputs; /* DQG_NONE for absent optional ones */
    int n_outputs;
    dqg_tensor_id *outputs; /* shares the one allocation of inputs (see dqg_op_alloc_io) */
    union {
        dqg_matmul_attrs matmul;
        dqg_conv_attrs conv;             /* normalized: strides/dilations/groups >= 1 */
        dqg_conv_transpose_attrs conv_t; /* normalized likewise */
        struct {
            dqg_data_format data_format;
        } bias_add;
        struct {
            float lo, hi;
        } clip;
        struct {
            int64_t perm[DQG_MAX_RANK];
            int64_t rank;
        } transpose;
        struct {
            dqg_dtype to;
        } typecast;
        struct {
            dqg_unary_op op;
            float alpha, beta; /* 0 where op does not use them */
        } unary;
        struct {
            int axis; /* normalized to [0, rank) */
            bool log;
        } softmax;
        struct {
            int axis; /* normalized to [0, rank) */
        } concat;
        struct {
            int size;
            float alpha, beta, bias;
        } lrn;
        struct {
            int axis; /* normalized to [0, rank) */
            float epsilon;
            /* RMS normalization (internal: the recognize pass makes it of
             * Pow, ReduceMean, Add, Sqrt, Div and Mul, with the f32
             * roundings of those ops): y = x / sqrt(mean(x^2) + epsilon)
             * * scale, with no mean subtracted and no bias; rms_recip: x
             * times the reciprocal of that root instead of divided by it. */
            bool rms, rms_recip;
        } layer_norm;
        struct {
            int64_t start[DQG_MAX_RANK]; /* per axis of x, after clamping */
            int64_t step[DQG_MAX_RANK];  /* 1 on axes not sliced */
        } slice;
        struct {
            /* ONNX's pads per axis of x (negative: removed); the value
             * DQG_PAD_CONSTANT writes, as an element of x's type. */
            int64_t begin[DQG_MAX_RANK], end[DQG_MAX_RANK];
            double value;
            dqg_pad_mode mode;
        } pad;
        struct {
            int axis; /* normalized to [0, rank) */
            bool keepdims, last, min;
        } arg;
        struct {
            int axis; /* normalized to [0, rank) */
            bool exclusive, reverse;
        } cumsum;
        struct {
            int64_t k;
            int axis; /* normalized to [0, rank) */
            bool largest;
        } topk;
        struct {
            int batch_dims;
        } gather_nd;
        struct {
            dqg_scatter_reduction reduction;
            int axis; /* ScatterElements: normalized to [0, rank) */
        } scatter;    /* ScatterND and ScatterElements */
        struct {
            bool fmod;
        } mod;
        dqg_resize_attrs resize; /* cubic_a set; a scale of 0: sizes / x's dimension */
        struct {
            int axis; /* normalized to [0, rank of data) */
        } gather;     /* Gather and GatherElements */
        struct {
            dqg_compare_op op;
        } compare;
        struct {
            dqg_logical_op op;
        } logical;
        struct {
            dqg_reduce_op op;
            uint32_t axes; /* bit i: axis i of x is reduced */
            bool keepdims;
        } reduce;
        dqg_pool_params pool;
        dqg_quant_attrs quant;
        dqg_rnn_attrs rnn; /* activations resolved: no DQG_RNN_ACT_DEFAULT */
    } attrs;
} dqg_op;

struct dqg_graph {
    dqg_tensor *tensors;
    int32_t n_tensors, cap_tensors;
    dqg_op *ops;
    int32_t n_ops, cap_ops;
    dqg_tensor_id *inputs;
    int32_t n_inputs, cap_inputs;
    dqg_tensor_id *outputs;
    int32_t n_outputs, cap_outputs;
    char **warnings;
    int32_t n_warnings, cap_warnings;
    dqg_status sticky_status;  /* first builder error, DQG_OK if none */
    char sticky_message[1024]; /* its message; held inline so out of memory keeps it */
    bool finalized;
    uint32_t name_counter; /* for generated names */
    /* Hashed tensor and op names (NULL: names are searched one by one, as
     * in the small graphs of partitions). */
    struct dqg_graph_names *names;
};

/* Builds g->names for a graph assembled without the builder (a copy);
 * without memory, lookups stay linear. */
void dqg_graph_index_names(dqg_graph *g);
void dqg_graph_free_names(dqg_graph *g);

/* ---- Errors -------------------------------------------------------------- */

/* Sets the thread-local message (printf-style) and returns `status`. */
dqg_status dqg_set_error(dqg_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
dqg_status dqg_set_error_v(dqg_status status, const char *fmt, va_list ap);
void dqg_clear_error(void);

/* Builder-side failure: sets the message, makes the graph sticky-failed (if
 * it is not yet) and returns DQG_NONE. */
dqg_tensor_id dqg_graph_fail(dqg_graph *g, dqg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Builder plumbing ---------------------------------------------------- */

/* Checks that builder calls may proceed (graph non-NULL, not finalized, not
 * sticky-failed). Returns false (and, for a sticky graph, restores the sticky
 * message) when they may not. */
bool dqg_graph_can_build(dqg_graph *g, const char *op_kind, const char *name);

/* Checks that `id` names an existing tensor; on failure sets a sticky error
 * "<kind> '<name>': input <index> (<what>): unknown tensor id <id>". */
bool dqg_graph_check_input(dqg_graph *g, const char *op_kind, const char *op_name, int index,
                           const char *what, dqg_tensor_id id, bool optional);

/* Allocates op->inputs and op->outputs (one block, capacity at least
 * DQG_MAX_OP_INPUTS and DQG_MAX_OP_OUTPUTS) and copies n_in/n_out ids into
 * them (either list may be NULL: filled with DQG_NONE). Sets n_inputs and
 * n_outputs. False on out of memory. Freed with dqg_op_free_io. */
bool dqg_op_alloc_io(dqg_op *op, int n_in, const dqg_tensor_id *in, int n_out,
                     const dqg_tensor_id *out);
void dqg_op_free_io(dqg_op *op);

/* Appends an op with its inputs and creates its output tensors (dtype,
 * shape). out_names may be NULL; names are derived from the op name. Returns
 * the op index or -1 (sticky error set). */
int32_t dqg_graph_add_op(dqg_graph *g, dqg_op_kind kind, const char *name, int n_inputs,
                         const dqg_tensor_id *inputs, int n_outputs, const dqg_dtype *out_dtypes,
                         const int *out_ranks, const int64_t (*out_dims)[DQG_MAX_RANK]);

/* dqg_graph_add_op for an op with one output of its first input's type and
 * shape (element-wise ops, normalizations). */
int32_t dqg_graph_add_op_like(dqg_graph *g, dqg_op_kind kind, const char *name, int n_inputs,
                              const dqg_tensor_id *inputs);

/* The name shown in messages for an op: its given name, or "" */
static inline const char *dqg_op_display_name(const char *name)
{
    return name ? name : "";
}

static inline const dqg_tensor *dqg_graph_tensor(const dqg_graph *g, dqg_tensor_id id)
{
    return (g && id >= 0 && id < g->n_tensors) ? &g->tensors[id] : NULL;
}

/* "[2,3,4]" into buf (at least 8 * 21 + 3 bytes is always enough). */
char *dqg_format_dims(char *buf, size_t size, int rank, const int64_t *dims);
#define DQG_DIMS_BUF 200

/* Validates a shape (rank 0..8, dims >= 1, product <= DQG_MAX_ELEMENTS);
 * on failure sets a sticky error naming `who`. Returns the element count or -1. */
int64_t dqg_check_shape(dqg_graph *g, const char *who, int rank, const int64_t *dims);

/* ---- Per-op-kind table ---------------------------------------------------- */

/* Values of every tensor during a reference run, indexed by tensor id. */
typedef struct dqg_ref_values {
    void **data;
    /* A MatMul or Convolution result that only a TypeCast to an integer
     * type reads (dqg_ref_wide) is also kept here in double, before its
     * rounding to f32, and the cast rounds that once: the ONNX front end's
     * MatMulInteger and ConvInteger are exact where an f32 result would
     * have rounded the sum past 2^24. NULL (the table or an entry) where
     * there is none. */
    double **wide;
} dqg_ref_values;

/* Marks, per tensor (*out: n_tensors flags, to free), such results: made
 * by a MatMul or Convolution, not a graph output, read by one op only, a
 * TypeCast to an integer type. */
dqg_status dqg_ref_wide(const dqg_graph *g, bool **out);

typedef struct dqg_op_def {
    dqg_op_kind kind;
    const char *name; /* "MatMul" */
    /* Re-verifies an op of a built graph (finalize); NULL = nothing beyond the
     * builder's checks. */
    dqg_status (*verify)(const dqg_graph *g, const dqg_op *op);
    /* Reference compute: reads op->inputs from values, writes op->outputs.
     * Run-time rule violations (e.g. a non-zero run-time int32 zero point)
     * return an error status with a message. */
    dqg_status (*reference)(const dqg_graph *g, const dqg_op *op, dqg_ref_values *values);
    /* Appends the attributes as "k=v k=v" to buf; NULL = none. */
    void (*format_attrs)(const dqg_op *op, char *buf, size_t size);
} dqg_op_def;

const dqg_op_def *dqg_op_def_of(dqg_op_kind kind);

/* Each graph/ops/<op>.c defines one of these. */
extern const dqg_op_def dqg_op_def_dequantize;
extern const dqg_op_def dqg_op_def_quantize;
extern const dqg_op_def dqg_op_def_dynamic_quantize;
extern const dqg_op_def dqg_op_def_matmul;
extern const dqg_op_def dqg_op_def_convolution;
extern const dqg_op_def dqg_op_def_bias_add;
extern const dqg_op_def dqg_op_def_add;
extern const dqg_op_def dqg_op_def_mul;
extern const dqg_op_def dqg_op_def_relu;
extern const dqg_op_def dqg_op_def_clip;
extern const dqg_op_def dqg_op_def_reshape;
extern const dqg_op_def dqg_op_def_transpose;
extern const dqg_op_def dqg_op_def_typecast;
extern const dqg_op_def dqg_op_def_unary;
extern const dqg_op_def dqg_op_def_sub;
extern const dqg_op_def dqg_op_def_div;
extern const dqg_op_def dqg_op_def_pow;
extern const dqg_op_def dqg_op_def_softmax;
extern const dqg_op_def dqg_op_def_concat;
extern const dqg_op_def dqg_op_def_lrn;
extern const dqg_op_def dqg_op_def_layer_norm;
extern const dqg_op_def dqg_op_def_reduce;
extern const dqg_op_def dqg_op_def_pool;
extern const dqg_op_def dqg_op_def_slice;
extern const dqg_op_def dqg_op_def_rnn;
extern const dqg_op_def dqg_op_def_gather;
extern const dqg_op_def dqg_op_def_compare;
extern const dqg_op_def dqg_op_def_logical;
extern const dqg_op_def dqg_op_def_where;
extern const dqg_op_def dqg_op_def_gather_elements;
extern const dqg_op_def dqg_op_def_max;
extern const dqg_op_def dqg_op_def_min;
extern const dqg_op_def dqg_op_def_pad;
extern const dqg_op_def dqg_op_def_resize;
extern const dqg_op_def dqg_op_def_arg;
extern const dqg_op_def dqg_op_def_conv_transpose;
extern const dqg_op_def dqg_op_def_cumsum;
extern const dqg_op_def dqg_op_def_topk;
extern const dqg_op_def dqg_op_def_gather_nd;
extern const dqg_op_def dqg_op_def_scatter_nd;
extern const dqg_op_def dqg_op_def_scatter_elements;
extern const dqg_op_def dqg_op_def_mod;

/* Resize (graph/ops/resize.c): the source coordinates and weights that
 * output coordinate o of `axis` (x's size in, the output's out) reads: up
 * to 4, returned as their count (weights summing to 1; nearest: one, of
 * weight 1). */
int dqg_resize_taps(const dqg_resize_attrs *a, int axis, int64_t in, int64_t out, int64_t o,
                    int64_t *idx, double *w);

/* Pad (graph/ops/pad.c): the coordinate of x that output coordinate o of
 * an axis of size n (pads begin, end) reads, or -1 for the constant. */
int64_t dqg_pad_source(dqg_pad_mode mode, int64_t o, int64_t begin, int64_t end, int64_t n);
/* Pad's constant as one element of type dt in out[8] (zeros past it; all
 * zeros for the 4-bit types, which the reference writes nibble by nibble). */
void dqg_pad_value_bytes(const dqg_op *op, dqg_dtype dt, unsigned char *out);

/* Max and Min of two floats as the reference computes them (NaN in either
 * gives NaN; of two equal values, the first); the kernels use the same. */
static inline float dqg_max_f(float a, float b)
{
    return (a >= b || a != a) ? a : b;
}

static inline float dqg_min_f(float a, float b)
{
    return (a <= b || a != a) ? a : b;
}

/* The index checks of Gather and GatherElements, shared by the reference
 * and the kernels: every index within [-dim, dim). DQG_INVALID_ARGUMENT
 * naming the op and the element otherwise. */
dqg_status dqg_gather_check_indices(const dqg_op *op, const dqg_tensor *idx, const void *data,
                                    int64_t dim);

/* One output element of a pooling op (graph/ops/pooling.c), by ONNX's
 * rules: element (n, c, o[0..spatial_rank)) over x, whose logical NCX
 * dimensions are x->dims and whose element strides are xs (row-major or
 * channels-last), stored at element yi of Y (x's type). The reference runs
 * it for every element; the oneDNN kernel for the windows oneDNN counts
 * differently (ceil_mode's extra padding). */
void dqg_pool_element(const dqg_pool_params *a, const dqg_tensor *x, const void *X,
                      const int64_t *xs, int64_t n, int64_t c, const int64_t *o, void *Y,
                      int64_t yi);
/* Right padding that makes oneDNN's floor((X + pads_begin + pad_r - span) /
 * stride) + 1 equal the op's output size y_dim at spatial dim i: pads_end, or
 * more when ceil_mode added a window. */
int64_t dqg_pool_right_pad(const dqg_pool_params *a, int i, int64_t x_dim, int64_t y_dim);

/* ---- Copies (graph/graph_copy.c) ------------------------------------------ */

/* A deep copy of a finalized graph. With borrow_constants, constant data is
 * shared with g instead of copied (g must outlive the copy's use of it; see
 * dqg_graph_drop_borrowed). */
dqg_status dqg_graph_clone(const dqg_graph *g, dqg_graph **out);
dqg_status dqg_graph_clone_borrowing(const dqg_graph *g, dqg_graph **out);
/* Forgets borrowed constant data (the copy keeps shapes, names and hashes). */
void dqg_graph_drop_borrowed(dqg_graph *g);

/* A new finalized graph holding only ops[0..n_ops) of g (none removed): every
 * tensor they read that they do not produce becomes an input (constants stay
 * constants, their data borrowed from g), in order of first use; `outputs` become its outputs.
 * Names and attributes are kept; input_map/output_map (may be NULL) receive the ids in g of the new
 * graph's inputs and outputs, in order. */
dqg_status dqg_graph_extract(const dqg_graph *g, const int32_t *ops, int n_ops,
                             const dqg_tensor_id *outputs, int n_outputs, dqg_graph **out,
                             dqg_tensor_id *input_map, int *n_input_map);

/* Adds an intermediate tensor shaped like tensor `like`, produced by op
 * `producer`, to a graph copy during a pass (a unique name derived from
 * `name`). DQG_NONE on out of memory. */
dqg_tensor_id dqg_graph_add_intermediate_internal(dqg_graph *g, const char *name,
                                                  dqg_tensor_id like, int32_t producer);

/* ---- Buffer binding (graph/buffer_binding.c) ------------------------------ */

/* Checks caller buffers against a finalized graph's inputs and outputs (each
 * bound exactly once, by name or id, non-NULL, exact byte size, inputs bound
 * to inputs and outputs to outputs) and writes, for each buffer, the tensor
 * id it binds. `who` prefixes messages ("reference run", "execute"). */
dqg_status dqg_bind_buffers(const dqg_graph *g, const char *who, const dqg_buffer *inputs,
                            size_t n_inputs, const dqg_buffer *outputs, size_t n_outputs,
                            dqg_tensor_id *in_ids, dqg_tensor_id *out_ids);

/* DOT of a rewritten graph copy with op i drawn inside cluster group[i]
 * (labelled labels[group[i]]); removed ops are left out. */
dqg_status dqg_graph_dump_partitioned(const dqg_graph *g, const int32_t *group, int n_groups,
                                      const char *const *labels, FILE *out);

/* The int32 rule of every dialect ("an int32 input has no zero point"):
 * DQG_OK when each of the n zero points is exactly 0, else
 * DQG_INVALID_ARGUMENT naming the dialect, the op and the element (`when`:
 * "(constant)" or "(given at run time)"). Used by the reference and by the
 * compiled kernel, so both refuse the same values with the same message. */
dqg_status dqg_dequantize_check_s32_zero_point(dqg_dq_dialect dialect, const char *op_name,
                                               dqg_dtype zp_dtype, const void *zp, int64_t n,
                                               const char *when);

/* ---- Broadcasting binary ops (graph/broadcast.c), for Add and Mul -------- */

dqg_tensor_id dqg_binary_build(dqg_graph *g, dqg_op_kind kind, const char *name, dqg_tensor_id a,
                               dqg_tensor_id b);
/* The element of operand t (right-aligned to y's rank, size-1 dimensions
 * broadcast) that output element i of y reads. */
int64_t dqg_broadcast_offset(const dqg_tensor *t, const dqg_tensor *y, int64_t i);
/* The strides that read operand t (right-aligned to `rank` dimensions) over
 * a result of that rank: t's own, 0 along its size-1 (broadcast) and
 * missing dimensions. */
void dqg_broadcast_strides(const dqg_tensor *t, int rank, int64_t *strides);
/* Floats: y = fn(a, b) in float32, rounded once to the output type.
 * Integers: y = ifn(a, b) modulo 2^64, wrapped to the output type. */
dqg_status dqg_binary_reference(const dqg_graph *g, const dqg_op *op, dqg_ref_values *v,
                                float (*fn)(float, float), uint64_t (*ifn)(uint64_t, uint64_t));

/* Shared by the unary op's reference and the compiled kernels that compute
 * a function themselves (those oneDNN has not): f(x) in double precision. */
double dqg_unary_eval(dqg_unary_op op, float alpha, float beta, double x);

/* RNN ops (graph/ops/rnn.c): gates per cell (1, 3, 4), functions per
 * direction (1, 2, 3), which functions read alpha and beta, and one
 * function's value in double. */
int dqg_rnn_gates(dqg_rnn_cell cell);
int dqg_rnn_functions(dqg_rnn_cell cell);
bool dqg_rnn_activation_uses_alpha(dqg_rnn_activation f);
bool dqg_rnn_activation_uses_beta(dqg_rnn_activation f);
double dqg_rnn_activate(dqg_rnn_activation f, float alpha, float beta, double x);

/* ---- Quantization parameters (graph/quant_params.c) ----------------------- */

/* What a front door asks of the shared granularity rules. */
typedef struct dqg_quant_request {
    const char *label; /* "DequantizeLinear-21", "DynamicDequantize", ... */
    const char *name;
    dqg_tensor_id x, scale, zp;
    bool has_axis;
    int64_t axis;
    int64_t block_size;
    bool allow_blocked; /* opset 21+ */
    bool scalar_only;   /* opset 10 */
    bool elementwise;   /* DirectML: scale of x's shape */
} dqg_quant_request;

/* Decides granularity, axis and block size from the scale's shape and the
 * attributes, checking every shape rule (and the zero point's shape). On
 * failure sets a sticky error and returns false. */
bool dqg_resolve_granularity(dqg_graph *g, const dqg_quant_request *r, dqg_quant_attrs *q);

/* The axis of op's output that axis `axis` of its input becomes, for a
 * Transpose (any permutation) or a Reshape (only when the reshape keeps
 * every dimension up to and including that axis: a trailing reshape); -1
 * when it cannot be followed. */
int dqg_quant_axis_through(const dqg_graph *g, const dqg_op *op, int axis);

/* Maps an element index of x to the index of its scale (and zero point). */
typedef struct dqg_quant_index {
    dqg_granularity granularity;
    int rank, axis;
    int64_t dims[DQG_MAX_RANK];
    int64_t inner, axis_dim, block;
    int64_t scale_strides[DQG_MAX_RANK];
} dqg_quant_index;

void dqg_quant_index_init(dqg_quant_index *ix, const dqg_tensor *x, const dqg_tensor *scale,
                          const dqg_quant_attrs *q);
int64_t dqg_quant_scale_index(const dqg_quant_index *ix, int64_t i);

/* The schema version in force for a model's opset: the latest of
 * `versions` (descending) that is <= opset, or 0 when none is. */
int dqg_onnx_schema_version(int opset, const int *versions, int n);

/* Appends a DEQUANTIZE or QUANTIZE op with x's shape and q's output type. */
dqg_tensor_id dqg_emit_quant_op(dqg_graph *g, dqg_op_kind kind, const char *name, dqg_tensor_id x,
                                dqg_tensor_id scale, dqg_tensor_id zp, const dqg_quant_attrs *q);

/* Emits the canonical DEQUANTIZE op (graph/ops/dequantize.c). */
dqg_tensor_id dqg_emit_dequantize(dqg_graph *g, const char *name, dqg_tensor_id x,
                                  dqg_tensor_id scale, dqg_tensor_id zp, const dqg_quant_attrs *q);
/* Emits the canonical QUANTIZE op (graph/ops/quantize.c). */
dqg_tensor_id dqg_emit_quantize(dqg_graph *g, const char *name, dqg_tensor_id x,
                                dqg_tensor_id scale, dqg_tensor_id zp, const dqg_quant_attrs *q);

/* ---- Validation helpers shared by the op files (graph/op_checks.c) -------- */

/* Each one checks one rule and, when it is broken, sets a sticky error of the
 * form "<Kind> '<name>': input <i> (<what>): <rule>" and returns false. */
bool dqg_check_dtype_in(dqg_graph *g, const char *kind, const char *name, int index,
                        const char *what, dqg_tensor_id id, const dqg_dtype *allowed,
                        int n_allowed);
bool dqg_check_float_dtype(dqg_graph *g, const char *kind, const char *name, int index,
                           const char *what, dqg_tensor_id id); /* f32, f16, bf16 */
bool dqg_check_same_dtype(dqg_graph *g, const char *kind, const char *name, dqg_tensor_id a,
                          dqg_tensor_id b);

/* "f32, f16 or bf16" */
char *dqg_format_dtype_list(char *buf, size_t size, const dqg_dtype *list, int n);

/* The axis of `out` along which operand c of a broadcasting element-wise op
 * varies -- c's dimensions, aligned to out's last, are all 1 but one, equal
 * to out's there -- or -1 (c holds one value, or is not of that form). */
int dqg_broadcast_axis(const dqg_tensor *c, const dqg_tensor *out);
/* NumPy broadcasting of two shapes; returns the output rank or -1 (sticky
 * error naming the first incompatible dimension). */
int dqg_broadcast_shapes(dqg_graph *g, const char *kind, const char *name, const dqg_tensor *a,
                         const dqg_tensor *b, int64_t *out_dims);

/* Row-major strides of a shape (in elements). */
void dqg_strides(int rank, const int64_t *dims, int64_t *strides);
/* Strides (in elements) of t's logical dimensions in its buffer: row-major,
 * or channels-last when t->channels_last. */
void dqg_tensor_strides(const dqg_tensor *t, int64_t *strides);
/* Copies t's elements from src to dst converting between its row-major and
 * channels-last storage (to_channels_last says which way). t has whole-byte
 * elements. */
void dqg_layout_convert(const dqg_tensor *t, const void *src, void *dst, bool to_channels_last);

#endif /* DQG_GRAPH_INTERNAL_H */
